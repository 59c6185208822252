#!/bin/sh
# Stream capture and graphs under spillway (test_capture.c) against
# fakecuda: one 256 MiB device, a 64 MiB limit, stats in a scratch
# directory, the unmap hazard check on (a page unmapped under queued work
# fails the run).
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_capture FAKECUDA_CHECK_UNMAP=1
