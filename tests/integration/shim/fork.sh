#!/bin/sh
# The fork suite (test_fork.c, issue 12 item 9) under spillway against
# fakecuda: one 256 MiB device, a 64 MiB limit, stats in a scratch
# directory. One case per process, each under a timeout: a deadlock in a
# parent or a child fails the case instead of hanging make test.
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
for case in exit cuda crowd exec before; do
    env LD_PRELOAD="$B/libspillway.so" FAKECUDA_DEVICES=1 FAKECUDA_MEM=256M \
        SPILLWAY_MEM_LIMIT=64M SPILLWAY_LOG=error SPILLWAY_STATS_DIR="$stats" \
        SPW_TEST_FORK_ONLY=$case timeout 60 "$B/tests/integration/shim_fork"
done
