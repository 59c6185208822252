#!/bin/sh
# The path suite (test_paths.c) under spillway against fakecuda: one
# 256 MiB device, a 64 MiB limit, stats published into a scratch directory.
# It checks the byte cap, so spill is off (spill.sh covers spill).
set -eu
. "$(dirname "$0")/suite.sh"
suite_run shim_paths SPILLWAY_SPILL=0
# Told twice the limit (needs spill): the runtime's figures rewritten once.
suite_run shim_paths SPILLWAY_OVERSUBSCRIBE=2 SPILLWAY_HOST_LIMIT=256M CK_RUN_CASE=told
# SPILLWAY_LOG=debug says, for each lookup, who answers it: the lines a
# launch that goes around the work gate is diagnosed from (issue 10).
log=$(suite_run shim_paths SPILLWAY_SPILL=0 SPILLWAY_LOG=debug CK_RUN_CASE=resolution 2>&1)
for want in "cuGetProcAddress(\"cuLaunchKernel\", 12000, 0x2): spillway's handler" \
            "cuGetProcAddress(\"cuStreamQuery\", 12000, 0x2): the driver's own" \
            "dlsym(\"cuMemAllocAsync_ptsz\"): spillway's handler"; do
    if ! printf '%s\n' "$log" | grep -qF "spillway: $want"; then
        echo "paths.sh: the debug log lacks: $want" >&2
        exit 1
    fi
done
# A driver newer than spillway, with a newer ABI of a hooked function: the
# driver's own function is handed out for it.
suite_run shim_paths SPILLWAY_SPILL=0 CK_RUN_CASE=resolution FAKECUDA_PROC_FUTURE=1
# A driver that answers lookups with entry points it does not export: the
# handler is chosen by name and version, and the log says so.
log=$(suite_run shim_paths SPILLWAY_SPILL=0 SPILLWAY_LOG=debug CK_RUN_CASE=resolution \
    FAKECUDA_PROC_ENTRY=internal 2>&1)
want="cuGetProcAddress(\"cuLaunchKernel\", 12000, 0x2): spillway's handler, by name and version"
if ! printf '%s\n' "$log" | grep -qF "spillway: $want"; then
    echo "paths.sh: the debug log lacks: $want" >&2
    exit 1
fi
