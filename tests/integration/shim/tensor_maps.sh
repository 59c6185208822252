#!/bin/sh
# TMA descriptors under spill (test_tensor_maps.c) against fakecuda, whose
# descriptors hold their address in no word: one 256 MiB device, a 64 MiB
# limit, spill on (launches scan their arguments only then), the unmap
# hazard check on. Moves wait up to 5 s for the device
# (SPW_TEST_PATIENCE_MS; 500 ms by default): under make tsan the race
# case's kernels run slowly, and a squeeze that timed out would give host
# pages instead of spilling, by design, failing the checks that it did.
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_tensor_maps FAKECUDA_CHECK_UNMAP=1 SPW_TEST_PATIENCE_MS=5000
