/* The driver's graph memory pool under spillway: what a graph's memory
 * alloc nodes reserve at its first launch stays the driver's after the
 * graph frees it (until cuDeviceGraphMemTrim), and counts against the
 * limit like any memory outside the pool:
 *  - cuMemGetInfo's free drops by it after the launch, the stats show it
 *    as pass-through memory, replays add nothing, and the program's trim
 *    gives it back;
 *  - an allocation that needs those bytes has the driver's idle graph
 *    memory trimmed rather than spilling or passing the limit;
 *  - a captured allocation still live is counted once, not once captured
 *    and again when the graph pool backs it, and stays counted after the
 *    program frees it while the graph pool keeps it.
 *
 * One suite in four files: here what launches count and what an
 * allocation at the limit trims, then captured allocations' lifetime
 * (graph_mem_captured.c), what is lost around them (graph_mem_lost.c) and
 * replays (graph_mem_replays.c), sharing graph_mem_rig.h.
 *
 * Run by graph_mem.sh: two 256 MiB devices, a 64 MiB limit each. */
#include "tests/integration/shim/graph_mem_rig.h"

START_TEST(a_launch_counts_what_the_graph_pool_reserves)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUgraph g;
    CUgraphExec e = alloc_set_free(&g);
    CUdeviceptr one;
    CU_OK(cuMemAlloc(&one, MiB)); /* the stats segment is published */
    CU_OK(cuMemFree(one));
    size_t before = free_now();
    uint64_t pass = rig_stat(0, SPW_C_PASS_CAPTURE);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    size_t after = free_now();
    ck_assert_msg(after + GBYTES <= before, "free %zu MiB before the launch, %zu after", before >> 20,
                  after >> 20);
    ck_assert_uint_ge(rig_stat(0, SPW_C_PASS_CAPTURE), pass + GBYTES);
    for (int i = 0; i < 3; i++) /* replays reuse it */
        CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(free_now(), after);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(free_now(), after); /* still the driver's after the graph went */
    CU_OK(cuDeviceGraphMemTrim(0));
    ck_assert_uint_eq(reserved(), 0);
    ck_assert_uint_eq(free_now(), before);
    ck_assert_uint_eq(rig_stat(0, SPW_C_PASS_CAPTURE), pass);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD uploads at the instantiation: the
 * graph pool reserves then, before any launch, and it counts from then. */
START_TEST(an_instantiate_with_upload_counts_what_the_graph_pool_reserves)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUgraph g;
    alloc_set_free_graph(&g);
    CUdeviceptr one;
    CU_OK(cuMemAlloc(&one, MiB)); /* the stats segment is published */
    CU_OK(cuMemFree(one));
    size_t before = free_now();
    uint64_t pass = rig_stat(0, SPW_C_PASS_CAPTURE);
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, .hUploadStream = s};
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithParams(&e, g, &ip));
    ck_assert_int_eq(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    size_t after = free_now();
    ck_assert_msg(after + GBYTES <= before, "free %zu MiB before the instantiation, %zu after",
                  before >> 20, after >> 20);
    ck_assert_uint_ge(rig_stat(0, SPW_C_PASS_CAPTURE), pass + GBYTES);
    CU_OK(cuGraphLaunch(e, s)); /* uploaded: the launch reserves nothing more */
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(free_now(), after);
    graphs_gone_and_trimmed(e, g);
    ck_assert_uint_eq(reserved(), 0);
    ck_assert_uint_eq(free_now(), before);
    ck_assert_uint_eq(rig_stat(0, SPW_C_PASS_CAPTURE), pass);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(an_allocation_at_the_limit_trims_idle_graph_memory)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr big = rig_filled(LIMIT - GBYTES - 4 * MiB, 11);
    CUgraph g;
    CUgraphExec e = alloc_set_free(&g);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    uint64_t spilled = rig_pool(0).spill_bytes;
    CUdeviceptr more;
    CU_OK(cuMemAlloc(&more, GBYTES)); /* room only once the graph pool's idle memory goes */
    ck_assert_uint_eq(reserved(), 0);
    ck_assert_uint_eq(rig_pool(0).spill_bytes, spilled);
    ck_assert_msg(fakecuda_device_bytes_used(0) <= LIMIT, "the device holds %zu MiB, the limit is %d",
                  fakecuda_device_bytes_used(0) >> 20, (int)(LIMIT >> 20));
    CU_OK(cuGraphLaunch(e, s)); /* maps it again: the pool gives back room (spilling) */
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    ck_assert_msg(fakecuda_device_bytes_used(0) <= LIMIT, "the device holds %zu MiB, the limit is %d",
                  fakecuda_device_bytes_used(0) >> 20, (int)(LIMIT >> 20));
    rig_expect_pattern(big, LIMIT - GBYTES - 4 * MiB, 11, "the data the pool held");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(more));
    CU_OK(cuMemFree(big));
    CU_OK(cuDeviceGraphMemTrim(0));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* The same for a VMM handle the pool serves (cuMemCreate: PyTorch's
 * expandable segments): the graph pool's idle memory goes first, the
 * program's data stays on the device. */
START_TEST(a_handle_at_the_limit_trims_idle_graph_memory)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr big = rig_filled(LIMIT - GBYTES - 4 * MiB, 12);
    CUgraph g;
    CUgraphExec e = alloc_set_free(&g);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    uint64_t spilled = rig_pool(0).spill_bytes;
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, GBYTES, &prop, 0)); /* room only once the idle graph memory goes */
    ck_assert_uint_eq(reserved(), 0);
    ck_assert_uint_eq(rig_pool(0).spill_bytes, spilled);
    ck_assert_msg(fakecuda_device_bytes_used(0) <= LIMIT, "the device holds %zu MiB, the limit is %d",
                  fakecuda_device_bytes_used(0) >> 20, (int)(LIMIT >> 20));
    rig_expect_pattern(big, LIMIT - GBYTES - 4 * MiB, 12, "the data the pool held");
    CU_OK(cuMemRelease(h));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(big));
    CU_OK(cuDeviceGraphMemTrim(0));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(a_live_captured_allocation_counts_once)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr t = 0;
    CU_OK(cuMemAllocAsync(&t, GBYTES, s)); /* outlives the graph: the program frees it */
    CU_OK(cuMemsetD32Async(t, 3u, GBYTES / 4, s));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    ck_assert_uint_eq(free_now() + GBYTES, before); /* counted from its capture */
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    ck_assert_uint_eq(free_now() + GBYTES, before); /* backed now: still once */
    CU_OK(cuMemFreeAsync(t, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    ck_assert_uint_eq(free_now() + GBYTES, before); /* freed, still the graph pool's */
    graphs_gone_and_trimmed(e, g);
    ck_assert_uint_eq(free_now(), before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_graph_mem");
    TCase *tc = tcase_create("graph_mem");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_launch_counts_what_the_graph_pool_reserves);
    tcase_add_test(tc, an_instantiate_with_upload_counts_what_the_graph_pool_reserves);
    tcase_add_test(tc, an_allocation_at_the_limit_trims_idle_graph_memory);
    tcase_add_test(tc, a_handle_at_the_limit_trims_idle_graph_memory);
    tcase_add_test(tc, a_live_captured_allocation_counts_once);
    graph_mem_captured_tests(tc);
    graph_mem_lost_tests(tc);
    graph_mem_replay_tests(tc);
    suite_add_tcase(s, tc);
    return s;
}
