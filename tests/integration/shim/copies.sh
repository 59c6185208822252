#!/bin/sh
# The copy suite (test_copies.c) under spillway against fakecuda: two
# 256 MiB devices, a 64 MiB limit, stats in a scratch directory. Then the
# paths again on devices without a pool (a limit below one 2 MiB page: every
# allocation passes through and cuMemcpy asks the driver), and the runtime
# case with a runtime that reaches the driver behind spillway's back.
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
run() {
    env LD_PRELOAD="$B/libspillway.so" FAKECUDA_DEVICES=2 FAKECUDA_MEM=256M \
        SPILLWAY_MEM_LIMIT=64M SPILLWAY_LOG=error SPILLWAY_STATS_DIR="$stats" "$@" \
        "$B/tests/integration/shim_copies"
}
run
run SPILLWAY_MEM_LIMIT=1M SPW_COPIES_ONLY=paths
run FAKECUDART_BYPASS=1 SPW_COPIES_ONLY=runtime
