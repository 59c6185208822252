#!/bin/sh
# 2D and 3D copies into moving pages (test_spill2d.c), under spillway against
# fakecuda: one 256 MiB device, a 64 MiB limit, stats in a scratch
# directory, the unmap hazard check on (a page unmapped under queued work
# fails the run).
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
env LD_PRELOAD="$B/libspillway.so" FAKECUDA_DEVICES=1 FAKECUDA_MEM=256M FAKECUDA_CHECK_UNMAP=1 \
    SPILLWAY_MEM_LIMIT=64M SPILLWAY_LOG=error SPILLWAY_STATS_DIR="$stats" \
    "$B/tests/integration/shim_spill2d"
