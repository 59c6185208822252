#!/bin/sh
# A collective across two devices while device 0 must move pages
# (test_collective.c), under spillway against fakecuda: two 256 MiB
# devices, a 64 MiB limit on each, the unmap hazard check on, and the
# collective's timeout at 8 s: a half that times out is what would hang a
# GPU.
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_collective FAKECUDA_DEVICES=2 FAKECUDA_CHECK_UNMAP=1 FAKECUDA_COLLECTIVE_TIMEOUT_MS=8000
