#!/bin/sh
# The copy suite (test_copies.c) under spillway against fakecuda: two
# 256 MiB devices, a 64 MiB limit, stats in a scratch directory. Then the
# paths again on devices without a pool (a limit below one 2 MiB page: every
# allocation passes through and cuMemcpy asks the driver), and the runtime
# case with a runtime that reaches the driver behind spillway's back.
set -eu
. "$(dirname "$0")/suite.sh"
run() { suite_run shim_copies FAKECUDA_DEVICES=2 "$@"; }
run
run SPILLWAY_MEM_LIMIT=1M SPW_COPIES_ONLY=paths
run FAKECUDART_BYPASS=1 SPW_COPIES_ONLY=runtime
