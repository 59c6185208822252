#!/bin/sh
# bench-oversub, small (in make test): the benchmark runs to its end and its
# last line says what the README's table says — the no-thrash rule keeps
# the moves within issue 13's 10% of the excess, demand paging does not.
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
# Demand paging thrashes from the start: 5 steps of warm-up show it.
line=$("$B/bench/oversub_bench" --limit-pages 64 --warmup 40 --steps 10 --demand-warmup 5 | tail -1)
echo "$line"
rule=$(echo "$line" | sed -E 's/.*worst rule share = ([0-9.]+)%.*/\1/')
lru=$(echo "$line" | sed -E 's/.*worst demand-paging share = ([0-9.]+)%.*/\1/')
awk -v r="$rule" -v l="$lru" 'BEGIN { exit !(r <= 10 && l >= 100) }' || {
    echo "oversub_smoke: rule share $rule% (want <= 10), demand paging $lru% (want >= 100)" >&2
    exit 1
}
