#!/bin/sh
# The work-gate suite (test_gates.c) under spillway against fakecuda: two
# 64 MiB devices, a 16 MiB limit (gates_rig.h's sizes are made for it:
# fresh memory is what costs most here), and fakecuda aborting on an unmap under
# in-flight work (FAKECUDA_CHECK_UNMAP: the context-killing hazard). Then on
# a CUDA 12.7 driver, whose streams tell their device only through their
# context (no cuStreamGetDevice): work on another device's stream is gated
# and synced on that device all the same. Moves wait up to 5 s for the
# device (SPW_TEST_PATIENCE_MS; 500 ms by default): the suite keeps 300 ms
# kernels in flight across its moves, and a loaded machine must not push
# them past the deadline (the spill would then give host pages instead,
# by design, and the checks that it spilled would fail).
set -eu
. "$(dirname "$0")/suite.sh"
# The two side by side: each sleeps through its 300 ms kernels more than
# it computes (23 s in a row, about half of it CPU); the 12.7 run's output
# after the other's.
suite_run shim_gates FAKECUDA_DEVICES=2 FAKECUDA_MEM=64M SPILLWAY_MEM_LIMIT=16M FAKECUDA_CHECK_UNMAP=1 \
    SPW_TEST_PATIENCE_MS=5000 LD_LIBRARY_PATH="$B/fakecuda/12.7" >"$stats/12.7.out" 2>&1 &
old_driver=$!
rc=0
suite_run shim_gates FAKECUDA_DEVICES=2 FAKECUDA_MEM=64M SPILLWAY_MEM_LIMIT=16M FAKECUDA_CHECK_UNMAP=1 \
    SPW_TEST_PATIENCE_MS=5000 || rc=$?
wait "$old_driver" || rc=$?
cat "$stats/12.7.out"
# A driver whose cuGetProcAddress answers entry points it does not export:
# each prefetch, discard, attachment and callback still comes back as
# spillway's handler of the same ABI, chosen by name and version
# (hooks.def's versions).
suite_run shim_gates FAKECUDA_DEVICES=2 FAKECUDA_MEM=64M SPILLWAY_MEM_LIMIT=16M FAKECUDA_PROC_ENTRY=internal \
    CK_RUN_CASE=reach || rc=$?
# A thread that gave up waiting for a sync (a 200 ms patience against a
# 1 s kernel) leaves no context of its own for the next sync to use.
suite_run shim_gates FAKECUDA_DEVICES=2 FAKECUDA_MEM=64M SPILLWAY_MEM_LIMIT=16M FAKECUDA_CHECK_UNMAP=1 \
    SPW_TEST_PATIENCE_MS=200 SPW_GATES_PATIENCE=1 || rc=$?
exit "$rc"
