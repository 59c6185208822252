#!/bin/sh
# The launch-count suite (test_launches.c) under spillway against fakecuda:
# two 256 MiB devices, a 64 MiB limit, stats in a scratch directory; spill
# on (launches pass the work gate) and off (they forward untouched): both
# count. Then with a driver whose cuGetProcAddress answers entry points it
# does not export (FAKECUDA_PROC_ENTRY=internal): spillway's handlers are
# chosen by name, version and flags, and every launch still counts. With one
# device, spill off: counting a launch asks the driver nothing; with two,
# launching again on a known stream asks nothing, and a destroyed stream's
# handle made another device's stream counts there. Then on
# a CUDA 12.7 driver (no cuStreamGetDevice): a launch on another device's
# stream still counts on that device, spill on and off.
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_launches FAKECUDA_DEVICES=2
suite_run shim_launches FAKECUDA_DEVICES=2 SPILLWAY_SPILL=0
suite_run shim_launches FAKECUDA_DEVICES=2 FAKECUDA_PROC_ENTRY=internal
suite_run shim_launches FAKECUDA_DEVICES=1 SPILLWAY_SPILL=0
suite_run shim_launches FAKECUDA_DEVICES=2 LD_LIBRARY_PATH="$B/fakecuda/12.7"
suite_run shim_launches FAKECUDA_DEVICES=2 SPILLWAY_SPILL=0 LD_LIBRARY_PATH="$B/fakecuda/12.7"
