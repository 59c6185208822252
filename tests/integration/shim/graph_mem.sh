#!/bin/sh
# The driver's graph memory pool counted against the limit under spillway
# (test_graph_mem.c) against fakecuda: one 256 MiB device, a 64 MiB limit.
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_graph_mem FAKECUDA_CHECK_UNMAP=1
