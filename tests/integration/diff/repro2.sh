#!/bin/sh
# Issue 11 (2), concurrency with spill on: 8 threads keep half the limit
# (64 MiB) live, allocating and freeing by every API; with spill on and
# 1 GiB of host memory allowed nothing may be refused, in any of 20 runs.
# On 04f325f 5 to 8 of the 20 runs refuse an allocation at 24-37 MiB live
# (a thread's spill frees device pages that another thread takes first),
# stated as "no host memory".
set -eu
. "$(dirname "$0")/lib.sh"

runs() {
    bad=0
    for seed in $(seq 1 20); do
        if under 1 64 1G --seed "$seed" --threads 8 --ops 1000 --live 0.5 --alloc-apis all \
            --data-apis none --mem-frac 1 --expect-refusals 0 >"$work/out"; then
            echo "seed $seed: $(grep -E '^  allocations:' "$work/out" | sed 's/;.*//')"
        else
            bad=$((bad + 1))
            grep -vE '^diffgen: (unexplained|wrong)' "$work/out" | sed "s/^/seed $seed: /"
        fi
    done
    echo "$bad of 20 runs refused something"
    [ "$bad" -eq 0 ]
}

check "8 threads, half the limit live, spill on, 20 seeds: 0 refusals" runs
finish
