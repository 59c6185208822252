#!/bin/sh
# The spill suite (test_spill.c) under spillway against fakecuda: one
# 256 MiB device, a 64 MiB limit, stats in a scratch directory. Then the
# byte cap with spill off, and spill bounded by SPILLWAY_HOST_LIMIT.
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
run() {
    env LD_PRELOAD="$B/libspillway.so" FAKECUDA_DEVICES=1 FAKECUDA_MEM=256M \
        SPILLWAY_MEM_LIMIT=64M SPILLWAY_LOG=error SPILLWAY_STATS_DIR="$stats" "$@" \
        "$B/tests/integration/shim_spill"
}
run
run SPILLWAY_SPILL=0 SPW_SPILL_ONLY=off
run SPILLWAY_HOST_LIMIT=16M SPW_SPILL_ONLY=host_limit
