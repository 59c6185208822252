#!/bin/sh
# Legacy IPC of pool memory (test_ipc.c): an exporter and the importer it
# exec's, both under spillway against fakecuda, spill on under a 64 MiB
# limit. The importer outlives the exporter (it checks a dead exporter's
# handle) and reports through a file; then, with spillway disabled, what
# the driver answers reaches the program; with SPILLWAY_IPC=0, pool memory
# is not exportable (one warning). test_ipc_peer.c: a peer that lies, an
# export of more pages than one message carries (a 1 GiB device, spill
# off, pages made on demand), an export waiting out a stream capture, a
# handle made up for an exported allocation's neighbour, an exporter gone
# while a child it forked lives on.
set -eu
. "$(dirname "$0")/suite.sh"
# importer_passed FILE WHAT: an importer that outlives its exporter says
# "ok" in FILE within 20 s.
importer_passed() {
    i=0
    while [ ! -s "$1" ] && [ $i -lt 100 ]; do
        sleep 0.2
        i=$((i + 1))
    done
    if [ "$(cat "$1" 2>/dev/null)" != ok ]; then
        echo "FAIL: the importer $2 did not finish"
        exit 1
    fi
    echo "importer $2: passed"
}
res=$stats/ipc.result
SUITE_TIMEOUT=120 suite_run shim_ipc SPW_IPC_RESULT="$res"
importer_passed "$res" "of the main case"
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
importer_passed "$gone" "of a gone exporter (refused at once)"
