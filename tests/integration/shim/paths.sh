#!/bin/sh
# The path suite (test_paths.c) under spillway against fakecuda: one
# 256 MiB device, a 64 MiB limit, stats published into a scratch directory.
# It checks the byte cap, so spill is off (spill.sh covers spill).
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_paths SPILLWAY_SPILL=0
