#!/bin/sh
# The work-gate suite (test_gates.c) under spillway against fakecuda: two
# 256 MiB devices, a 64 MiB limit, and fakecuda aborting on an unmap under
# in-flight work (FAKECUDA_CHECK_UNMAP: the context-killing hazard).
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_gates FAKECUDA_DEVICES=2 FAKECUDA_CHECK_UNMAP=1
