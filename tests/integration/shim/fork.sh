#!/bin/sh
# The fork suite (test_fork.c, issue 12 item 9) under spillway against
# fakecuda: one 256 MiB device, a 64 MiB limit, stats in a scratch
# directory. One case per process, each under a timeout: a deadlock in a
# parent or a child fails the case instead of hanging make test.
set -eu
. "$(dirname "$0")/suite.sh"
for case in exit cuda crowd exec before; do
    SUITE_TIMEOUT=60 suite_run shim_fork SPW_TEST_FORK_ONLY=$case
done
