#!/bin/sh
# Legacy IPC of pool memory (test_ipc.c): an exporter and the importer it
# exec's, both under spillway against fakecuda, spill on under a 64 MiB
# limit. The importer outlives the exporter (it checks a dead exporter's
# handle) and reports through a file; then, with spillway disabled, what
# the driver answers reaches the program; with SPILLWAY_IPC=0, pool memory
# is not exportable (one warning). test_ipc_peer.c: a peer that lies, an
# export of more pages than one message carries (a 1 GiB device, spill
# off, pages made on demand), an export waiting out a stream capture.
set -eu
. "$(dirname "$0")/suite.sh"
res=$stats/ipc.result
SUITE_TIMEOUT=120 suite_run shim_ipc SPW_IPC_RESULT="$res"
i=0
while [ ! -s "$res" ] && [ $i -lt 100 ]; do
    sleep 0.2
    i=$((i + 1))
done
if [ "$(cat "$res" 2>/dev/null)" != ok ]; then
    echo "FAIL: the importer did not finish"
    exit 1
fi
echo "importer: passed"
SUITE_TIMEOUT=60 suite_run shim_ipc SPILLWAY_DISABLE=1 SPW_IPC_ONLY=passthrough
SUITE_TIMEOUT=60 suite_says_once "exports with SPILLWAY_IPC=0" "pool pages are not exportable (SPILLWAY_IPC=0" \
    shim_ipc SPILLWAY_LOG=warn SPILLWAY_IPC=0 SPW_IPC_ONLY=off
SUITE_TIMEOUT=60 suite_run shim_ipc_peer SPW_IPC_PEER=liar
SUITE_TIMEOUT=60 suite_run shim_ipc_peer SPW_IPC_PEER=many FAKECUDA_MEM=1G SPILLWAY_MEM_LIMIT=800M \
    SPILLWAY_PREALLOCATE=0 SPILLWAY_SPILL=0
SUITE_TIMEOUT=60 suite_run shim_ipc_peer SPW_IPC_PEER=capture
SUITE_TIMEOUT=60 suite_run shim_ipc_peer SPW_IPC_PEER=neighbour
gone=$stats/gone.result
SUITE_TIMEOUT=60 suite_run shim_ipc_peer SPW_IPC_PEER=gone SPW_IPC_RESULT="$gone"
i=0
while [ ! -s "$gone" ] && [ $i -lt 100 ]; do
    sleep 0.2
    i=$((i + 1))
done
if [ "$(cat "$gone" 2>/dev/null)" != ok ]; then
    echo "FAIL: the importer of a gone exporter did not finish"
    exit 1
fi
echo "gone exporter: refused at once"
