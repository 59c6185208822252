#!/bin/sh
# Batch memory operation graph nodes under spillway (test_graph_memops.c)
# against fakecuda: one 256 MiB device, a 64 MiB limit, the unmap hazard
# check on (a page unmapped under a queued launch fails the run).
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_graph_memops FAKECUDA_CHECK_UNMAP=1
