#!/bin/sh
# TMA descriptors under spill (test_tensor_maps.c) against fakecuda, whose
# descriptors hold their address in no word: one 256 MiB device, a 64 MiB
# limit, spill on (launches scan their arguments only then), the unmap
# hazard check on.
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_tensor_maps FAKECUDA_CHECK_UNMAP=1
