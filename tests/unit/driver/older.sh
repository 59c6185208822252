#!/usr/bin/env bash
# fakecuda as a CUDA 12.7 driver (build/fakecuda/12.7, tests/fakecuda/module.mk):
# the conformance cases that hold on any driver version, on that one.
set -eu
B=${SPW_TEST_BUILD:?run through scripts/run-tests.sh}
LD_LIBRARY_PATH=$B/fakecuda/12.7 CK_RUN_CASE=older "$B/tests/unit/driver_procaddr"
