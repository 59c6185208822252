#!/bin/sh
# The differential run of issue 11: 10^5 random operations (4 threads, 2
# streams each, every allocation API, copies, memsets, launches, syncs), on
# the driver alone with a 64 MiB device and under spillway with a 64 MiB
# limit: with spill off spillway may refuse only what the live bytes
# explain (within the allowance), with spill on (1.5 x the limit live)
# only what the 1 GiB host limit explains; every byte read back is checked.
# DIFF_OPS, DIFF_THREADS, DIFF_SEED change the run (soak.sh: 10^6, 8).
set -eu
. "$(dirname "$0")/lib.sh"

ops=${DIFF_OPS:-100000}
threads=${DIFF_THREADS:-4}
common="--seed ${DIFF_SEED:-1} --threads $threads --ops $ops --dist log --min 4K --max 4M"
# cheap data operations: the CI host has two cores (README.md: "Cost")
common="$common --init 0.2 --op-max 64K --verify-window 32K"

# The spill-on run needs no baseline: it runs beside the other two (each
# keeps about one core of the two busy), its output shown after theirs.
# shellcheck disable=SC2086
check_beside spill_on "spillway, spill on, 64 MiB limit, 1 GiB host limit, 1.5 x live" \
    under 1 64 1G $common --live 1.5
# shellcheck disable=SC2086
check "driver alone, 64 MiB device, 0.6 x live" alone 64 $common --live 0.6 --trace "$work/alone.trace"
# Pages on demand: what fakecuda lends then is what the pool needed.
# shellcheck disable=SC2086
DIFF_ENV=SPILLWAY_PREALLOCATE=0 check "spillway, spill off, 64 MiB limit, 0.6 x live" \
    under 0 64 1G $common --live 0.6 --baseline "$work/alone.trace"
check_joined spill_on
finish
