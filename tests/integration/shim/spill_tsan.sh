#!/bin/sh
# The spill suite's main case (test_spill.c and the files it gathers,
# spill_*.c: spill, fill from copies and every launch kind, the launch/spill
# race, a reset) for `make tsan`. TSan slows fakecuda's kernels past the 500
# ms a move waits for the device to quiesce, which turns each expected spill
# into host pages and fails the suite's counts; a patience of 20 s keeps the
# moves, and each test's own timeout is scaled as much. (spill.sh, in make
# test, runs it as users do.)
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_spill SPW_TEST_PATIENCE_MS=20000 CK_TIMEOUT_MULTIPLIER=4
