#!/bin/sh
# The spill suite (test_spill.c) under spillway against fakecuda: one
# 256 MiB device, a 64 MiB limit, stats in a scratch directory. Then the
# byte cap with spill off, and spill bounded by SPILLWAY_HOST_LIMIT.
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_spill
suite_run shim_spill SPILLWAY_SPILL=0 SPW_SPILL_ONLY=off
suite_run shim_spill SPILLWAY_HOST_LIMIT=16M SPW_SPILL_ONLY=host_limit
