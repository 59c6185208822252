/* The invariant a move rests on (README "Spill", "Safety"): a page is
 * remapped only after a sync point that covers all work that may touch it,
 * and every submission passes the work gate. Each test queues work that
 * reads a pool buffer of device 0 behind a 300 ms kernel, then makes
 * device 0 spill that buffer: fakecuda (FAKECUDA_CHECK_UNMAP) aborts on an
 * unmap under that work, which on a GPU kills the context.
 *
 * One suite in four files: here the devices that reach device 0's pool
 * (peers, copies on another device's stream, batches, graphs), then
 * contexts the program created (gates_own_contexts.c), every entry point
 * of a submission (gates_entry_points.c) and gates.sh's run with a short
 * patience (gates_patience.c), sharing gates_rig.h. */
#include "tests/integration/shim/gates_rig.h"

#include <stdlib.h>
#include <string.h>

/* Device 1 reads device 0's pool on a stream of its own, given access to
 * it (cuCtxEnablePeerAccess) or not (a copy only); give_dev1_a_pool says
 * whether device 1 ever allocated through spillway. Without a pool it had
 * no syncer, and a move skipped its sync; without peer access it was not
 * among the devices that reach device 0's pages. */
static void device1_reads_device0(int give_dev1_a_pool, int peer_access)
{
    CUcontext c0 = setup(0), c1 = setup(1);
    CU_OK(cuCtxSetCurrent(c1));
    if (peer_access)
        CU_OK(cuCtxEnablePeerAccess(c0, 0));
    if (give_dev1_a_pool) {
        CUdeviceptr y;
        CU_OK(cuMemAlloc(&y, 1 * MiB));
    }
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr b = filled(BUF, 7);
    CU_OK(cuCtxSynchronize()); /* the fill done: another device reads b */
    CU_OK(cuCtxSetCurrent(c1));
    CUstream s1;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    void *host;
    CU_OK(cuMemAllocHost(&host, BUF));
    sleep_on(s1, 300);
    CU_OK(cuMemcpyDtoHAsync(host, b, BUF, s1));
    spill_device0(c0);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuStreamSynchronize(s1));
    uint32_t *want = rig_expected(BUF, 7);
    ck_assert(memcmp(host, want, BUF) == 0);
    free(want);
    rig_expect_pattern(b, BUF, 7, "the spilled buffer");
}

START_TEST(a_peer_without_a_pool_is_synced_before_a_move) { device1_reads_device0(0, 1); }
END_TEST
START_TEST(a_peer_with_a_pool_is_synced_before_a_move) { device1_reads_device0(1, 1); }
END_TEST
START_TEST(a_device_that_copied_without_peer_access_is_synced_before_a_move) { device1_reads_device0(1, 0); }
END_TEST
START_TEST(a_device_without_a_pool_that_copied_is_synced_before_a_move) { device1_reads_device0(0, 0); }
END_TEST

/* A copy may be queued on a stream of another device than the current
 * context's (CUDA programming guide, "Stream and Event Behavior": "a
 * memory copy will succeed even if it is issued to a stream that is not
 * associated to the current device"). Device 0 current, device 1's
 * stream, device 0's pool buffer: the work runs on device 1, which must be
 * gated and synced before the buffer moves, by every way of naming the
 * buffer (a typed copy, cuMemcpyAsync, a 2D copy, a peer copy). */
enum other_stream_way { OS_DTOH, OS_UNIFIED, OS_2D, OS_PEER };

static void copy_on_another_devices_stream(enum other_stream_way way)
{
    CUcontext c0 = setup(0), c1 = setup(1);
    CU_OK(cuCtxSetCurrent(c1));
    CUdeviceptr y; /* device 1's pool (and syncer): a peer copy's destination */
    CU_OK(cuMemAlloc(&y, way == OS_PEER ? BUF : 1 * MiB));
    CUstream s1;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    void *host;
    CU_OK(cuMemAllocHost(&host, BUF));
    sleep_on(s1, 300);
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr b = filled(BUF, 6);
    /* The fill's copy may still be in flight when cuMemcpyHtoD returns, and
     * s1 (another device's, non-blocking) is not ordered after it: under
     * load the copy below read b before it was filled. */
    CU_OK(cuCtxSynchronize());
    switch (way) {
    case OS_DTOH:
        CU_OK(cuMemcpyDtoHAsync(host, b, BUF, s1));
        break;
    case OS_UNIFIED:
        CU_OK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)host, b, BUF, s1));
        break;
    case OS_2D: {
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = b;
        c.srcPitch = BUF / 8;
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = host;
        c.dstPitch = BUF / 8;
        c.WidthInBytes = BUF / 8;
        c.Height = 8;
        CU_OK(cuMemcpy2DAsync(&c, s1));
        break;
    }
    case OS_PEER:
        CU_OK(cuMemcpyPeerAsync(y, c1, b, c0, BUF, s1));
        break;
    }
    spill_device0(c0);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuStreamSynchronize(s1));
    if (way == OS_PEER)
        CU_OK(cuMemcpyDtoH(host, y, BUF));
    uint32_t *want = rig_expected(BUF, 6);
    ck_assert(memcmp(host, want, BUF) == 0);
    free(want);
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuCtxSetCurrent(c0));
    rig_expect_pattern(b, BUF, 6, "the spilled buffer");
}

START_TEST(a_copy_on_another_devices_stream_is_synced_before_a_move) { copy_on_another_devices_stream(OS_DTOH); }
END_TEST
START_TEST(a_unified_copy_on_another_devices_stream_is_synced_before_a_move) { copy_on_another_devices_stream(OS_UNIFIED); }
END_TEST
START_TEST(a_2d_copy_on_another_devices_stream_is_synced_before_a_move) { copy_on_another_devices_stream(OS_2D); }
END_TEST
START_TEST(a_peer_copy_on_another_devices_stream_is_synced_before_a_move) { copy_on_another_devices_stream(OS_PEER); }
END_TEST

/* A batch copy names more pointers than the sides a submission touches
 * (SPW_MAX_SIDES, 64): the copy past them reads device 1's pool on device
 * 0's stream, without peer access. Device 1 must count among the devices
 * that reach its pages all the same, so that its move syncs device 0. */
START_TEST(a_batch_past_the_touched_sides_is_synced_before_a_move)
{
    if (!rig_driver_has(12080))
        return; /* no cuMemcpyBatchAsync */
    CUcontext c0 = setup(0), c1 = setup(1);
    CUdeviceptr b1 = filled(BUF, 8); /* device 1's pool (c1 current) */
    CU_OK(cuCtxSynchronize()); /* the fill done: device 0 reads b1 */
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr y;
    CU_OK(cuMemAlloc(&y, 1 * MiB)); /* device 0's pool (and syncer) */
    CUstream s0;
    CU_OK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    enum { N = 40 };
    void *host, *small;
    CU_OK(cuMemAllocHost(&host, BUF));
    CU_OK(cuMemAllocHost(&small, 2 * N * 64));
    CUdeviceptr dsts[N], srcs[N];
    size_t sizes[N], idx = 0;
    for (unsigned i = 0; i < N - 1; i++) { /* host to host: two sides each */
        dsts[i] = (CUdeviceptr)(uintptr_t)small + 2 * i * 64;
        srcs[i] = (CUdeviceptr)(uintptr_t)small + (2 * i + 1) * 64;
        sizes[i] = 64;
    }
    dsts[N - 1] = (CUdeviceptr)(uintptr_t)host;
    srcs[N - 1] = b1;
    sizes[N - 1] = BUF;
    CUmemcpyAttributes at = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    sleep_on(s0, 300);
    CU_OK(cuMemcpyBatchAsync(dsts, srcs, sizes, N, &at, &idx, 1, s0));
    CU_OK(cuCtxSetCurrent(c1));
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, PAST_BUF)); /* past device 1's limit: b1 spills */
    ck_assert_uint_gt(rig_pool(1).spill_bytes, 0);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuStreamSynchronize(s0));
    uint32_t *want = rig_expected(BUF, 8);
    ck_assert(memcmp(host, want, BUF) == 0);
    free(want);
    CU_OK(cuStreamDestroy(s0));
    CU_OK(cuCtxSetCurrent(c1));
    rig_expect_pattern(b1, BUF, 8, "the spilled buffer");
}
END_TEST

/* The same for a program mapping on device 0's pool pages (cuMemCreate,
 * as JAX's arena), which lies in no pool arena: a copy of it queued on
 * device 1's stream, device 1 given no access (fakecuda copies without it), runs on
 * device 1, so a move of its pages must sync device 1 as for a pool
 * block's (copy_on_another_devices_stream). */
START_TEST(a_program_mappings_copy_on_another_devices_stream_is_synced_before_a_move)
{
    CUcontext c0 = setup(0), c1 = setup(1);
    CU_OK(cuCtxSetCurrent(c1));
    CUdeviceptr y; /* device 1's pool (and syncer) */
    CU_OK(cuMemAlloc(&y, 1 * MiB));
    CUstream s1;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    void *host;
    CU_OK(cuMemAllocHost(&host, BUF));
    CU_OK(cuCtxSetCurrent(c0));
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemAddressReserve(&va, BUF, 0, 0, 0));
    CU_OK(cuMemCreate(&h, BUF, &prop, 0));
    CU_OK(cuMemMap(va, BUF, 0, h, 0));
    CUmemAccessDesc a = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                         .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va, BUF, &a, 1));
    uint32_t *want = rig_expected(BUF, 9);
    CU_OK(cuMemcpyHtoD(va, want, BUF));
    CU_OK(cuCtxSynchronize()); /* the fill done: device 1 reads va */
    CU_OK(cuCtxSetCurrent(c1));
    sleep_on(s1, 300);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuMemcpyDtoHAsync(host, va, BUF, s1));
    spill_device0(c0);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuStreamSynchronize(s1));
    ck_assert(memcmp(host, want, BUF) == 0);
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuCtxSetCurrent(c0));
    rig_expect_words(va, want, BUF, "the spilled mapping");
    free(want);
}
END_TEST

/* ---- a graph launched on another device's stream --------------------------- */

/* A graph of device 1 (its copy node in device 1's context) whose copy
 * reads device 0's pool without peer access, launched on a stream of
 * device 1 while device 0's context is current (one thread driving
 * several devices): the copy runs on device 1, so a move of its pages
 * must sync device 1 too, as for a copy queued there
 * (device1_reads_device0). */
START_TEST(a_graph_on_another_devices_stream_is_synced_before_a_move)
{
    CUcontext c0 = setup(0), c1 = setup(1);
    CU_OK(cuCtxSetCurrent(c1));
    CUdeviceptr y;
    CU_OK(cuMemAlloc(&y, 1 * MiB));
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr b = filled(BUF, 8);
    CU_OK(cuCtxSynchronize()); /* the fill done: device 1 reads b */
    void *host;
    CU_OK(cuMemAllocHost(&host, BUF));
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = b;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = host;
    c.WidthInBytes = BUF;
    c.Height = 1;
    c.Depth = 1;
    CUgraphNode node;
    CU_OK(cuGraphAddMemcpyNode(&node, g, NULL, 0, &c, c1));
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuCtxSetCurrent(c1));
    CUstream s1;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    sleep_on(s1, 300);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuGraphLaunch(e, s1));
    spill_device0(c0);
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuStreamSynchronize(s1));
    uint32_t *want = rig_expected(BUF, 8);
    ck_assert(memcmp(host, want, BUF) == 0);
    free(want);
    rig_expect_pattern(b, BUF, 8, "the spilled buffer");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_gates");
    TCase *tc;
    if (getenv("SPW_GATES_PATIENCE")) {
        tc = tcase_create("patience");
        gates_patience_tests(tc);
        suite_add_tcase(s, tc);
        return s;
    }
    tc = tcase_create("gates");
    tcase_set_timeout(tc, 60);
    /* Also run alone against a driver whose lookups answer entry points it
     * does not export (gates.sh): the handlers then come by name and
     * version, hooks.def's. */
    TCase *reach = tcase_create("reach");
    tcase_add_test(tc, a_peer_without_a_pool_is_synced_before_a_move);
    tcase_add_test(tc, a_peer_with_a_pool_is_synced_before_a_move);
    tcase_add_test(tc, a_device_that_copied_without_peer_access_is_synced_before_a_move);
    tcase_add_test(tc, a_device_without_a_pool_that_copied_is_synced_before_a_move);
    tcase_add_test(tc, a_copy_on_another_devices_stream_is_synced_before_a_move);
    tcase_add_test(tc, a_unified_copy_on_another_devices_stream_is_synced_before_a_move);
    tcase_add_test(tc, a_2d_copy_on_another_devices_stream_is_synced_before_a_move);
    tcase_add_test(tc, a_peer_copy_on_another_devices_stream_is_synced_before_a_move);
    tcase_add_test(tc, a_batch_past_the_touched_sides_is_synced_before_a_move);
    gates_own_context_tests(tc);
    gates_entry_point_tests(tc, reach);
    tcase_add_test(tc, a_graph_on_another_devices_stream_is_synced_before_a_move);
    tcase_add_test(tc, a_program_mappings_copy_on_another_devices_stream_is_synced_before_a_move);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, reach);
    return s;
}
