#!/bin/sh
# Issue 11 (4), the right reason: each refusal must name its cause.
#  - a 1 TiB request by every allocation API: larger than the limit
#    ("limit" is accepted too with spill off);
#  - the runs of (2) and (3) with 1 GiB of host memory allowed: whatever
#    they refuse must not be blamed on the host limit (--judge reasons: only
#    the reasons fail the check here; repro2.sh and repro3.sh judge the rest);
#  - a host limit that does run out (128 MiB): refusals name the host limit
#    and come only once the limit and the host limit are used up.
# On 04f325f 4 of the 6 checks fail: every refusal with spill on says
# "spill found no host memory within SPILLWAY_HOST_LIMIT" (the 1 TiB
# request too), and a refused cuMemCreate says nothing at all.
set -eu
. "$(dirname "$0")/lib.sh"

huge() {
    under "$1" 64 1G --big 1T --ops 1 --data-apis none --mem-frac 1 --expect-refusals 5
}

# At the limit rather than half of it: more refusals to judge on 04f325f.
concurrency() {
    for seed in 1 2 3; do
        if ! under 1 64 1G --seed "$seed" --threads 8 --ops 1000 --live 1 --alloc-apis all \
            --data-apis none --mem-frac 1 --judge reasons >"$work/out"; then
            grep -vE '^diffgen: unexplained' "$work/out"
            return 1
        fi
    done
}

fill="--ops 200 --live 5 --dist fixed --min 2M --alloc-apis alloc --data-apis none --mem-frac 1"
check "1 TiB by every API, spill on: too-large" huge 1
check "1 TiB by every API, spill off: limit or too-large" huge 0
check "the concurrency of (2): no refusal blamed on a host limit far away" concurrency
# shellcheck disable=SC2086
check "2 MiB blocks of (3): no refusal blamed on a host limit far away" \
    under 1 64 1G $fill --judge reasons
check "the scattered frees of (3): no refusal blamed on a host limit far away" \
    under 1 64 1G --scatter --live 5 --ops 1 --judge reasons
# shellcheck disable=SC2086
check "2 MiB blocks against a 128 MiB host limit: host-limit, and only past limit + host limit" \
    under 1 64 128M $fill
finish
