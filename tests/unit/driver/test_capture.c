/* Conformance: stream capture. Work on a capturing stream is recorded, not
 * run; the capture modes decide which calls a capture forbids; a sync of a
 * capturing stream or of its context, or the legacy stream while a blocking
 * stream captures, invalidates the capture, which then ends with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph. These are the rules
 * spillway must never break on a program's behalf (tests/fakecuda/capture.c
 * says where each comes from). Every check here holds on the real driver
 * too, except those marked fakecuda only.
 *
 * One suite in seven files: here the basics of a capture (what it records,
 * the errors of its begin and end, a capture into a graph, the old status
 * marker); then what invalidates or refuses a capture
 * (capture_invalidation.c), other threads (capture_threads.c), events
 * (capture_events.c), the memory nodes a capture makes
 * (capture_memory_nodes.c) and spillway's own threads during a capture
 * (capture_relaxed_work.c), sharing capture_rig.h. */
#include <string.h>

#include "tests/unit/driver/capture_rig.h"

static void CUDA_CB count_call(void *arg)
{
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

START_TEST(captured_work_runs_only_when_launched)
{
    static int calls;
    calls = 0;
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemsetD32(p, 1, 1024));
    CU_OK(cuCtxSynchronize());
    unsigned *back; /* pinned: a captured copy to pageable memory is not asked of the driver */
    CU_OK(cuMemAllocHost((void **)&back, 4096));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CU_OK(launch_u32(k.fill_u32, p, 7, 1024, s));
    CU_OK(launch_u32(k.add_u32, p, 3, 1024, s));
    CU_OK(cuMemsetD32Async(p, 9, 16, s));
    CU_OK(cuMemcpyDtoHAsync(back, p, 4096, s));
    CU_OK(cuLaunchHostFunc(s, count_call, &calls));
    CUstreamCaptureStatus st;
    cuuint64_t id = 0;
    CUgraph live = NULL;
    const CUgraphNode *deps = NULL;
    size_t ndeps = 0;
    CU_OK(cuStreamGetCaptureInfo(s, &st, &id, &live, &deps, NULL, &ndeps));
    ck_assert_int_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    ck_assert(id != 0 && live != NULL && ndeps == 1);
    CUgraphNodeType type;
    CU_OK(cuGraphNodeGetType(deps[0], &type)); /* the host node, the last captured */
    ck_assert_int_eq(type, CU_GRAPH_NODE_TYPE_HOST);
    CUgraph g = NULL;
    CU_OK(cuStreamEndCapture(s, &g));
    ck_assert_ptr_eq(g, live);
    ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    ck_assert_int_eq(__atomic_load_n(&calls, __ATOMIC_SEQ_CST), 0);
    expect_u32(p, 1, 1024); /* nothing ran */
    size_t n = 0;
    CU_OK(cuGraphGetNodes(g, NULL, &n));
    ck_assert_uint_eq(n, 5);
    /* Two kernels, a memset, a copy, a host function: in no order cuda.h
     * promises. */
    int kernels = 0, memsets = 0, copies = 0, hosts = 0;
    CUgraphNode nodes[5];
    CU_OK(cuGraphGetNodes(g, nodes, &n));
    for (size_t i = 0; i < 5; i++) {
        CU_OK(cuGraphNodeGetType(nodes[i], &type));
        kernels += type == CU_GRAPH_NODE_TYPE_KERNEL;
        memsets += type == CU_GRAPH_NODE_TYPE_MEMSET;
        copies += type == CU_GRAPH_NODE_TYPE_MEMCPY;
        hosts += type == CU_GRAPH_NODE_TYPE_HOST;
    }
    ck_assert(kernels == 2 && memsets == 1 && copies == 1 && hosts == 1);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    for (int round = 1; round <= 2; round++) {
        memset(back, 0, 4096);
        CU_OK(cuGraphLaunch(x, s));
        CU_OK(cuStreamSynchronize(s));
        ck_assert_int_eq(calls, round);
        ck_assert_uint_eq(back[0], 9);
        ck_assert_uint_eq(back[15], 9);
        ck_assert_uint_eq(back[16], 10);
        ck_assert_uint_eq(back[1023], 10);
    }
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFreeHost(back));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(begin_and_end_errors)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUgraph g;
    /* The legacy stream cannot capture; cuda.h lists INVALID_VALUE for
     * cuStreamBeginCapture, the error's own text fits UNSUPPORTED. */
    CUresult legacy = cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL);
    ck_assert(legacy == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || legacy == CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuStreamBeginCapture(s, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_ERR(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    CU_ERR(cuStreamEndCapture(s, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMemsetD32Async(3, 1, 1, s), CUDA_ERROR_INVALID_VALUE);
    (void)still_capturing(s, CU_STREAM_CAPTURE_MODE_GLOBAL, "an argument error");
    CU_OK(cuStreamEndCapture(s, &g));
    size_t n = 7;
    CU_OK(cuGraphGetNodes(g, NULL, &n));
    ck_assert_uint_eq(n, 0);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* Capture into a graph of the program's, after one of its nodes. */
START_TEST(capture_into_an_existing_graph)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    CUgraphNode first;
    CU_OK(cuGraphAddEmptyNode(&first, g, NULL, 0));
    CU_OK(cuStreamBeginCaptureToGraph(s, g, &first, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(launch_u32(k.fill_u32, p, 8, 1024, s));
    CUgraph got = NULL;
    CU_OK(cuStreamEndCapture(s, &got));
    ck_assert_ptr_eq(got, g);
    CUgraphNode nodes[2], deps[1];
    size_t n = 2, nd = 1;
    CU_OK(cuGraphGetNodes(g, nodes, &n));
    ck_assert_uint_eq(n, 2);
    ck_assert(nodes[0] == first || nodes[1] == first);
    CUgraphNode captured = nodes[0] == first ? nodes[1] : nodes[0];
    CU_OK(cuGraphNodeGetDependencies(captured, deps, NULL, &nd));
    ck_assert(nd == 1 && deps[0] == first);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 8, 1024);
    CU_OK(cuGraphExecDestroy(x));
    /* fakecuda only: the graph may not go while a capture adds to it (the
     * driver forbids it without saying how it answers) */
    if (fakecuda_present()) {
        CU_OK(cuStreamBeginCaptureToGraph(s, g, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CU_ERR(cuGraphDestroy(g), CUDA_ERROR_ILLEGAL_STATE);
        CU_OK(cuStreamEndCapture(s, &got));
    }
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* fakecuda only: the old status-only marker still answers as before. */
START_TEST(status_marker_still_answers)
{
    if (!fakecuda_present())
        return;
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    ck_assert_int_eq(fakecuda_set_capturing(s, 1), 0);
    ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    ck_assert_int_eq(fakecuda_set_capturing(s, 0), 0);
    ck_assert_int_eq(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_capture");
    TCase *tc = tcase_create("capture");
    tcase_add_checked_fixture(tc, setup, driver_teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, captured_work_runs_only_when_launched);
    tcase_add_test(tc, begin_and_end_errors);
    capture_invalidation_tests(tc);
    capture_thread_tests(tc);
    capture_event_tests(tc);
    capture_memory_node_tests(tc);
    tcase_add_test(tc, capture_into_an_existing_graph);
    tcase_add_test(tc, status_marker_still_answers);
    capture_relaxed_work_tests(tc);
    suite_add_tcase(s, tc);
    return s;
}
