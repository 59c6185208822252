#!/bin/sh
# 2D and 3D copies into moving pages (test_spill2d.c), under spillway against
# fakecuda: one 256 MiB device, a 64 MiB limit, stats in a scratch
# directory, the unmap hazard check on (a page unmapped under queued work
# fails the run).
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_spill2d FAKECUDA_CHECK_UNMAP=1
