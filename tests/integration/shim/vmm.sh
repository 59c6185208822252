#!/bin/sh
# Program VMM under spillway against fakecuda: expandable-segments-style
# growth with shareable handles, and exports (test_expandable.c); what
# pointer attributes say of pool memory (test_ptrattr.c); NCCL's NVLS
# buffers bound to a multicast object (test_multicast.c). One
# 256 MiB device, a 64 MiB limit, stats in a scratch directory, the unmap
# hazard check on.
set -eu
. "$(dirname "$0")/suite.sh"
for suite in shim_expandable shim_ptrattr shim_multicast; do
    suite_run "$suite" FAKECUDA_CHECK_UNMAP=1
done
