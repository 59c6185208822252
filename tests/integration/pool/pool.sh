#!/bin/sh
# The pool suites (test_*.c) against fakecuda: two 256 MiB devices, a
# 64 MiB limit; with preallocation on (spill on) and off (spill off: the hard
# cap), without spillway (the same
# answers: tests of the "both" case) and with SPILLWAY_DISABLE=1.
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
# One suite per test_<topic>.c, as module.mk builds them; SPW_TEST_POOL_SUITES
# names a few (make tsan: the threaded ones, within run-tests.sh's 300 s).
SUITES=${SPW_TEST_POOL_SUITES:-$(cd "$(dirname "$0")" && ls test_*.c | sed 's/^test_//; s/\.c$//')}
# Every suite runs, a failed one too; the status says whether any failed.
run() {
    echo "-- pool suites: $*"
    r=0
    for s in $SUITES; do
        env FAKECUDA_DEVICES=2 FAKECUDA_MEM=256M SPILLWAY_MEM_LIMIT=64M SPILLWAY_LOG=error \
            SPILLWAY_STATS_DIR="$stats" "$@" "$B/tests/integration/pool_$s" || r=1
    done
    return $r
}
# Two lanes of two runs each, side by side (a run keeps about one of the
# two cores busy: 45 s in a row, under 30 s so); the output in this order,
# whatever failed (set -e stopped at the first failure before, and the
# trap removed the outputs unread: a failing check showed as a bare exit 1).
rc=0
{ r=0
  run LD_PRELOAD="$B/libspillway.so" SPILLWAY_PREALLOCATE=1 >"$stats/1.out" 2>&1 || r=1
  run SPILLWAY_PREALLOCATE=1 >"$stats/3.out" 2>&1 || r=1
  exit $r; } &
lane=$!
run LD_PRELOAD="$B/libspillway.so" SPILLWAY_PREALLOCATE=0 SPILLWAY_SPILL=0 >"$stats/2.out" 2>&1 || rc=1
run LD_PRELOAD="$B/libspillway.so" SPILLWAY_DISABLE=1 >"$stats/4.out" 2>&1 || rc=1
wait "$lane" || rc=1
cat "$stats/1.out" "$stats/2.out" "$stats/3.out" "$stats/4.out"
exit $rc
