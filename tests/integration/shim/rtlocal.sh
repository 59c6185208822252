#!/bin/sh
# rtlocal.c under spillway against fakecuda (runtime only in a local scope);
# it checks the byte cap, so spill is off.
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
exec env LD_PRELOAD="$B/libspillway.so" SPW_TEST_BUILD="$B" FAKECUDA_DEVICES=1 FAKECUDA_MEM=256M \
    SPILLWAY_MEM_LIMIT=64M SPILLWAY_SPILL=0 SPILLWAY_LOG=error SPILLWAY_STATS=0 "$B/tests/integration/shim_rtlocal"
