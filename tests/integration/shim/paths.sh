#!/bin/sh
# The path suite (test_paths.c) under spillway against fakecuda: one
# 256 MiB device, a 64 MiB limit, stats published into a scratch directory.
# It checks the byte cap, so spill is off (spill.sh covers spill).
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
env LD_PRELOAD="$B/libspillway.so" FAKECUDA_DEVICES=1 FAKECUDA_MEM=256M \
    SPILLWAY_MEM_LIMIT=64M SPILLWAY_SPILL=0 SPILLWAY_LOG=error SPILLWAY_STATS_DIR="$stats" \
    "$B/tests/integration/shim_paths"
