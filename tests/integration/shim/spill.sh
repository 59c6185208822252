#!/bin/sh
# The spill suite (test_spill.c) under spillway against fakecuda: one
# 256 MiB device, a 64 MiB limit, stats in a scratch directory. Then the
# byte cap with spill off, spill bounded by SPILLWAY_HOST_LIMIT, and a
# driver that refuses every pinned host page (every cuMemCreate after the
# pool's 32 device pages): out of memory past the limit, the data held
# intact, and the refusal reported once. And a driver that refuses every
# spill copy: host pages past the limit, no error, reported once.
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_spill
suite_run shim_spill SPILLWAY_SPILL=0 SPW_SPILL_ONLY=off
suite_run shim_spill SPILLWAY_HOST_LIMIT=16M SPW_SPILL_ONLY=host_limit
suite_says_once "refused host pages" "the driver refused a pinned host page" shim_spill \
    FAKECUDA_FAIL=cuMemCreate:33- SPILLWAY_LOG=warn SPW_SPILL_ONLY=host_refused
suite_says_once "refused spill moves" "the driver refused a spill step" shim_spill \
    FAKECUDA_FAIL=cuMemcpyDtoDAsync:1- SPILLWAY_LOG=warn SPW_SPILL_ONLY=move_refused
