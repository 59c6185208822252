#!/bin/sh
# The pool suite (test_pool.c) against fakecuda: two 256 MiB devices, a
# 64 MiB limit; with preallocation on (spill on) and off (spill off: the hard
# cap), without spillway (the same
# answers: tests of the "both" case) and with SPILLWAY_DISABLE=1.
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
run() {
    echo "-- pool suite: $*"
    env FAKECUDA_DEVICES=2 FAKECUDA_MEM=256M SPILLWAY_MEM_LIMIT=64M SPILLWAY_LOG=error \
        SPILLWAY_STATS_DIR="$stats" "$@" "$B/tests/integration/pool_suite"
}
run LD_PRELOAD="$B/libspillway.so" SPILLWAY_PREALLOCATE=1
run LD_PRELOAD="$B/libspillway.so" SPILLWAY_PREALLOCATE=0 SPILLWAY_SPILL=0
run SPILLWAY_PREALLOCATE=1
run LD_PRELOAD="$B/libspillway.so" SPILLWAY_DISABLE=1
