#!/bin/sh
# Issue 11 (1), fragmentation with spill off: one thread keeps about 32 MiB
# live under a 64 MiB limit, 20,000 cuMemAlloc/cuMemFree of 4 KiB-8 MiB
# (log-uniform), then of 4 KiB-1 MiB (uniform). The driver alone with a
# 64 MiB device refuses nothing; spillway must refuse nothing either, and
# is compared with the driver alone op by op.
# On 04f325f: 485 and 1007 refusals, the first at 25.3 MiB live (size-class
# slabs each took a whole 2 MiB page).
set -eu
. "$(dirname "$0")/lib.sh"

one() {
    args="--ops 20000 --live 0.5 --dist $1 --min $2 --max $3 --alloc-apis alloc --data-apis none"
    args="$args --mem-frac 1 --cross-free 0 --init 0.25 --expect-refusals 0"
    # shellcheck disable=SC2086
    alone 64 $args --trace "$work/$1.trace" && under 0 64 1G $args --baseline "$work/$1.trace"
}

# The two side by side (one thread each: one core each), the second's
# output after the first's.
check_beside uniform "uniform 4 KiB-1 MiB, spill off: 0 refusals" one uniform 4K 1M
check "log-uniform 4 KiB-8 MiB, spill off: 0 refusals" one log 4K 8M
check_joined uniform
finish
