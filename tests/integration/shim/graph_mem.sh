#!/bin/sh
# The driver's graph memory pool counted against the limit under spillway
# (test_graph_mem.c) against fakecuda: two 256 MiB devices (one graph's
# alloc nodes on both), a 64 MiB limit each.
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_graph_mem FAKECUDA_DEVICES=2 FAKECUDA_CHECK_UNMAP=1
