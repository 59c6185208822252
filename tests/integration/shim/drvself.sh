#!/bin/sh
# drvself.c under spillway, with the spy driver as SPILLWAY_DRIVER.
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
exec env LD_PRELOAD="$B/libspillway.so" SPILLWAY_DRIVER="$B/tests/unit/shim/libspydriver.so" \
    SPILLWAY_STATS=0 "$B/tests/integration/shim_drvself"
