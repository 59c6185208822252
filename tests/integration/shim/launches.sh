#!/bin/sh
# The launch-count suite (test_launches.c) under spillway against fakecuda:
# two 256 MiB devices, a 64 MiB limit, stats in a scratch directory; spill
# on (launches pass the work gate) and off (they forward untouched): both
# count.
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
run() {
    env LD_PRELOAD="$B/libspillway.so" FAKECUDA_DEVICES=2 FAKECUDA_MEM=256M \
        SPILLWAY_MEM_LIMIT=64M SPILLWAY_LOG=error SPILLWAY_STATS_DIR="$stats" "$@" \
        "$B/tests/integration/shim_launches"
}
run
run SPILLWAY_SPILL=0
