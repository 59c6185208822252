#!/bin/sh
# Program VMM under spillway against fakecuda: expandable-segments-style
# growth with shareable handles, and exports (test_expandable.c); what
# pointer attributes say of pool memory (test_ptrattr.c). One
# 256 MiB device, a 64 MiB limit, stats in a scratch directory, the unmap
# hazard check on.
set -eu
B=${SPW_TEST_BUILD:-$(pwd)/build}
stats=$(mktemp -d)
trap 'rm -rf "$stats"' EXIT
for suite in shim_expandable shim_ptrattr; do
    env LD_PRELOAD="$B/libspillway.so" FAKECUDA_DEVICES=1 FAKECUDA_MEM=256M FAKECUDA_CHECK_UNMAP=1 \
        SPILLWAY_MEM_LIMIT=64M SPILLWAY_LOG=error SPILLWAY_STATS_DIR="$stats" \
        "$B/tests/integration/$suite"
done
