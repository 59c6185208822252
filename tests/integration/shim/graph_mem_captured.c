/* The graph memory suite (test_graph_mem.c): a captured allocation counts
 * from its capture for as long as a graph may still run it. One never
 * run, or only uploaded, goes with its graphs; one that ran, or that a
 * replay made again, is the program's until it frees it; a launch the
 * driver refuses runs nothing; a lost capture leaves nothing counted. */
#include "tests/integration/shim/graph_mem_rig.h"

/* Nothing of a capture's allocation counts once its graphs went. */
static void expect_free_as_before(size_t before)
{
    ck_assert_msg(free_now() == before, "free %zu MiB before the capture, %zu after its graphs went",
                  before >> 20, free_now() >> 20);
}

/* The program frees its captured allocation t: once the graph pool is
 * trimmed, the device is as free as before the capture. */
static void freed_back_to(CUdeviceptr t, CUstream s, size_t before)
{
    CU_OK(cuMemFreeAsync(t, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuDeviceGraphMemTrim(0));
    ck_assert_uint_eq(free_now(), before);
}

/* A launch of e the driver refuses (fakecuda's injected fault). */
static void launch_refused(CUgraphExec e, CUstream s)
{
    ck_assert_int_eq(fakecuda_fault_config("cuGraphLaunch:1", NULL, 0), 0);
    ck_assert_int_eq(cuGraphLaunch(e, s), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    ck_assert_int_eq(fakecuda_fault_config(NULL, NULL, 0), 0);
}

/* A captured allocation whose graph never runs never had memory: once its
 * graph and executable graph are gone (a warm-up capture thrown away, a
 * graph instantiated and never launched), nothing of it counts. */
START_TEST(a_captured_allocation_never_run_goes_with_its_graphs)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    ck_assert_uint_eq(free_now() + GBYTES, before); /* counted from its capture */
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(reserved(), 0);
    ck_assert_msg(free_now() == before, "free %zu MiB before the capture, %zu after its graph went",
                  before >> 20, free_now() >> 20);

    g = capture_alloc(s, &t); /* instantiated, never launched: the executable graph holds it */
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(free_now() + GBYTES, before);
    CU_OK(cuGraphExecDestroy(e));
    expect_free_as_before(before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* One that ran is live after its graphs go, until the program frees it. */
START_TEST(a_captured_allocation_that_ran_outlives_its_graphs)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(free_now() + GBYTES, before);
    CU_OK(cuDeviceGraphMemTrim(0)); /* live: kept */
    ck_assert_uint_ge(reserved(), GBYTES);
    ck_assert_uint_eq(free_now() + GBYTES, before);
    unsigned word = 0;
    CU_OK(cuMemcpyDtoH(&word, t + GBYTES - sizeof word, sizeof word));
    ck_assert_uint_eq(word, 3u); /* the graph's data, still there */
    freed_back_to(t, s, before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A graph allocation a replay made again (its capture's count went with
 * the program's first free) is live through a trim; once the program frees
 * it, its memory is idle, and an allocation at the limit trims it rather
 * than spill the pool's data (PyTorch's cudaMallocAsync backend frees each
 * replay's outputs this way). */
START_TEST(a_replays_allocation_freed_after_a_trim_is_trimmed_at_the_limit)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuMemFreeAsync(t, s)); /* counted until here as captured */
    CU_OK(cuGraphLaunch(e, s)); /* live again: the graph pool's */
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuDeviceGraphMemTrim(0)); /* live: kept */
    ck_assert_uint_ge(reserved(), GBYTES);
    CU_OK(cuMemFreeAsync(t, s)); /* idle from now on */
    CU_OK(cuStreamSynchronize(s));
    CUdeviceptr big = rig_filled(LIMIT - GBYTES - 4 * MiB, 12);
    uint64_t spilled = rig_pool(0).spill_bytes;
    CUdeviceptr more;
    CU_OK(cuMemAlloc(&more, GBYTES)); /* room only once the graph pool's idle memory goes */
    ck_assert_msg(reserved() == 0 && rig_pool(0).spill_bytes == spilled,
                  "graph pool: %llu MiB reserved; %llu MiB of the pool's data spilled",
                  (unsigned long long)(reserved() >> 20),
                  (unsigned long long)((rig_pool(0).spill_bytes - spilled) >> 20));
    rig_expect_pattern(big, LIMIT - GBYTES - 4 * MiB, 12, "the data the pool held");
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(more));
    CU_OK(cuMemFree(big));
    CU_OK(cuDeviceGraphMemTrim(0));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* An upload maps a graph's memory but starts no allocation: its lifetime
 * "begins when GPU execution reaches the allocating graph node". A graph
 * uploaded and never launched leaves its captured allocation nothing to
 * free: once its graphs go and the driver's pool is trimmed, nothing of it
 * counts. */
START_TEST(a_captured_allocation_only_uploaded_goes_with_its_graphs)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphUpload(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_ge(reserved(), GBYTES);
    graphs_gone_and_trimmed(e, g);
    ck_assert_uint_eq(reserved(), 0);
    expect_free_as_before(before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* The first launch after an upload is not due (the upload settled it):
 * one the driver refuses ran nothing, and leaves the allocation to go with
 * its graphs; the launch after it that goes through runs it. */
START_TEST(a_refused_launch_after_an_upload_runs_nothing)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphUpload(e, s));
    CU_OK(cuStreamSynchronize(s));
    launch_refused(e, s);
    CU_OK(cuStreamSynchronize(s));
    graphs_gone_and_trimmed(e, g);
    ck_assert_uint_eq(reserved(), 0);
    expect_free_as_before(before);

    g = capture_alloc(s, &t); /* refused, then launched: it ran */
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphUpload(e, s));
    launch_refused(e, s);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(free_now() + GBYTES, before); /* live: the program's to free */
    unsigned word = 0;
    CU_OK(cuMemcpyDtoH(&word, t, sizeof word));
    ck_assert_uint_eq(word, 3u);
    freed_back_to(t, s, before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A first launch the driver refuses ran nothing either. */
START_TEST(a_refused_first_launch_runs_nothing)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    launch_refused(e, s);
    graphs_gone_and_trimmed(e, g);
    expect_free_as_before(before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* An executable graph whose nodes could not be read at its instantiation
 * (the driver's listing failed, or memory for it ran out) may still hold
 * and run a captured allocation: when its graph goes, that allocation must
 * stay counted, not be taken for one no graph can run. */
START_TEST(a_graph_unread_at_instantiation_keeps_its_captured_allocation_counted)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CUdeviceptr t;
    CUgraph g = capture_alloc(s, &t);
    CUgraphExec e;
    ck_assert_int_eq(fakecuda_fault_config("cuGraphGetNodes:1-", NULL, 0), 0);
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    ck_assert_int_eq(fakecuda_fault_config(NULL, NULL, 0), 0);
    CU_OK(cuGraphDestroy(g));
    ck_assert_msg(free_now() + GBYTES == before,
                  "free %zu MiB before the capture, %zu with its executable graph alive",
                  before >> 20, free_now() >> 20);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    ck_assert_uint_eq(free_now() + GBYTES, before); /* live: the program's to free */
    freed_back_to(t, s, before);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(an_invalidated_capture_leaves_nothing_counted)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t before = free_now();
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr t = 0;
    CU_OK(cuMemAllocAsync(&t, GBYTES, s));
    ck_assert_int_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g = NULL;
    ck_assert_int_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ck_assert_msg(free_now() == before, "free %zu MiB before, %zu after", before >> 20, free_now() >> 20);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

void graph_mem_captured_tests(TCase *tc)
{
    tcase_add_test(tc, a_captured_allocation_never_run_goes_with_its_graphs);
    tcase_add_test(tc, a_captured_allocation_that_ran_outlives_its_graphs);
    tcase_add_test(tc, a_replays_allocation_freed_after_a_trim_is_trimmed_at_the_limit);
    tcase_add_test(tc, a_captured_allocation_only_uploaded_goes_with_its_graphs);
    tcase_add_test(tc, a_refused_launch_after_an_upload_runs_nothing);
    tcase_add_test(tc, a_refused_first_launch_runs_nothing);
    tcase_add_test(tc, a_graph_unread_at_instantiation_keeps_its_captured_allocation_counted);
    tcase_add_test(tc, an_invalidated_capture_leaves_nothing_counted);
}
