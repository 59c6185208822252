/* The driver graph suite (test_graph.c): an executable graph. Its launch
 * is one operation in stream order; it takes new kernel arguments, and
 * updates from a graph of the same shape. */
#include "tests/unit/driver/graph_rig.h"

/* A launch waits for earlier work on its stream, and later work for it. */
START_TEST(a_launch_is_one_operation_in_stream_order)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemsetD32(p, 0, 1024));
    CU_OK(cuCtxSynchronize());
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    struct kargs a;
    CUDA_KERNEL_NODE_PARAMS kp = kernel_params(k.add_u32, &a, p, 2, 1024);
    CUgraphNode node;
    CU_OK(cuGraphAddKernelNode(&node, g, NULL, 0, &kp));
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphDestroy(g)); /* the executable graph does not need it */
    CUevent e;
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    stream_block(&k, &f, s);
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(launch_u32(k.add_u32, p, 10, 1024, s));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuEventRecord(e, s));
    CU_OK(cuGraphExecDestroy(x)); /* launches already made still run */
    expect_event_pending(e);
    flag_release(&f);
    CU_OK(cuEventSynchronize(e));
    expect_u32(p, 14, 1024);
    CU_OK(cuEventDestroy(e));
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(executable_graph_takes_new_kernel_arguments)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p, q;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemAlloc(&q, 4096));
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    struct kargs a;
    CUDA_KERNEL_NODE_PARAMS kp = kernel_params(k.fill_u32, &a, p, 1, 1024);
    CUgraphNode node;
    CU_OK(cuGraphAddKernelNode(&node, g, NULL, 0, &kp));
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    struct kargs b;
    CUDA_KERNEL_NODE_PARAMS kq = kernel_params(k.fill_u32, &b, q, 2, 1024);
    CU_OK(cuGraphExecKernelNodeSetParams(x, node, &kq));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(q, 2, 1024);
    /* the graph itself keeps what it had */
    CUDA_KERNEL_NODE_PARAMS got;
    CU_OK(cuGraphKernelNodeGetParams(node, &got));
    ck_assert_uint_eq(*(CUdeviceptr *)got.kernelParams[0], p);
    /* a node the executable graph does not have */
    CUgraphNode later;
    CU_OK(cuGraphAddKernelNode(&later, g, NULL, 0, &kp));
    CU_ERR(cuGraphExecKernelNodeSetParams(x, later, &kq), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(q));
    CU_OK(cuStreamDestroy(s));
}
END_TEST


START_TEST(exec_update_from_a_graph_of_the_same_shape)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p, q;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemAlloc(&q, 4096));
    CUgraph g1 = capture_fill_add(s, p, 10), g2 = capture_fill_add(s, q, 20);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g1, 0));
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0xff, sizeof info);
    CU_OK(cuGraphExecUpdate(x, g2, &info));
    ck_assert_int_eq(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(q, 21, 1024);

    /* Another shape: one node more. */
    CUgraph g3;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(launch_u32(k.fill_u32, p, 1, 1024, s));
    CU_OK(launch_u32(k.add_u32, p, 1, 1024, s));
    CU_OK(launch_u32(k.add_u32, p, 1, 1024, s));
    CU_OK(cuStreamEndCapture(s, &g3));
    CU_ERR(cuGraphExecUpdate(x, g3, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    ck_assert_int_eq(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    ck_assert_ptr_null(info.errorNode);
    /* Same count, another kind of node. */
    CUgraph g4;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(launch_u32(k.fill_u32, p, 1, 1024, s));
    CU_OK(cuMemsetD32Async(p, 1, 1024, s));
    CU_OK(cuStreamEndCapture(s, &g4));
    CU_ERR(cuGraphExecUpdate(x, g4, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    ck_assert_int_eq(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
    ck_assert_ptr_nonnull(info.errorNode);
    /* a failed update changed nothing */
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(q, 21, 1024);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g1));
    CU_OK(cuGraphDestroy(g2));
    CU_OK(cuGraphDestroy(g3));
    CU_OK(cuGraphDestroy(g4));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(q));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

void graph_executable_tests(TCase *tc)
{
    tcase_add_test(tc, a_launch_is_one_operation_in_stream_order);
    tcase_add_test(tc, executable_graph_takes_new_kernel_arguments);
    tcase_add_test(tc, exec_update_from_a_graph_of_the_same_shape);
}
