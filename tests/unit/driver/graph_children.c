/* The driver graph suite (test_graph.c): child graphs. Clones, a launch
 * into a capture, the graph a child graph node embeds read back, and an
 * executable graph's child graph set anew. */
#include "tests/unit/driver/graph_rig.h"

START_TEST(child_graphs_clones_and_launch_into_a_capture)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CUgraph child = capture_fill_add(s, p, 4), parent, clone;
    CU_OK(cuGraphCreate(&parent, 0));
    CUgraphNode node, found;
    CU_OK(cuGraphAddChildGraphNode(&node, parent, NULL, 0, child));
    CU_OK(cuGraphClone(&clone, parent));
    CU_OK(cuGraphNodeFindInClone(&found, node, clone));
    ck_assert_ptr_ne(found, node);
    CUgraphNodeType type;
    CU_OK(cuGraphNodeGetType(found, &type));
    ck_assert_int_eq(type, CU_GRAPH_NODE_TYPE_GRAPH);
    CU_OK(cuGraphDestroy(child)); /* the node has a copy of its own */
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, clone, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 5, 1024);
    /* Launched into a capture, a graph becomes a node of the captured one. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(launch_u32(k.add_u32, p, 100, 1024, s));
    CUgraph outer;
    CU_OK(cuStreamEndCapture(s, &outer));
    CUgraphNode nodes[2];
    size_t n = 2;
    CU_OK(cuGraphGetNodes(outer, nodes, &n));
    ck_assert_uint_eq(n, 2);
    /* A child graph node and a kernel node, in no order cuda.h promises. */
    CUgraphNodeType t1;
    CU_OK(cuGraphNodeGetType(nodes[0], &type));
    CU_OK(cuGraphNodeGetType(nodes[1], &t1));
    ck_assert((type == CU_GRAPH_NODE_TYPE_GRAPH && t1 == CU_GRAPH_NODE_TYPE_KERNEL) ||
              (t1 == CU_GRAPH_NODE_TYPE_GRAPH && type == CU_GRAPH_NODE_TYPE_KERNEL));
    expect_u32(p, 5, 1024); /* not run by the capture */
    CUgraphExec y;
    CU_OK(cuGraphInstantiate(&y, outer, 0));
    CU_OK(cuGraphLaunch(y, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 105, 1024);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphExecDestroy(y));
    CU_OK(cuGraphDestroy(parent));
    CU_OK(cuGraphDestroy(clone));
    CU_OK(cuGraphDestroy(outer));
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* The graph a child graph node embeds is the node's own (a copy of the
 * one given), read back like any graph: its nodes and their parameters,
 * what a library (spillway) reads of an executable graph's children. An
 * executable graph's copy of the node takes another child graph of the
 * same shape, by its own call or by cuGraphExecNodeSetParams; the
 * program's node keeps its graph. */
START_TEST(child_graph_read_back_and_set_in_an_executable_graph)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p, q;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemAlloc(&q, 4096));
    CUgraph c1 = capture_fill_add(s, p, 10), c2 = capture_fill_add(s, q, 20), parent, embedded;
    CU_OK(cuGraphCreate(&parent, 0));
    CUgraphNode node, nodes[2];
    CU_OK(cuGraphAddChildGraphNode(&node, parent, NULL, 0, c1));
    CU_OK(cuGraphChildGraphNodeGetGraph(node, &embedded));
    ck_assert_ptr_ne(embedded, c1);
    size_t n = 0;
    CU_OK(cuGraphGetNodes(embedded, NULL, &n));
    ck_assert_uint_eq(n, 2);
    CU_OK(cuGraphGetNodes(embedded, nodes, &n));
    CUgraphNodeType type;
    CU_OK(cuGraphNodeGetType(nodes[0], &type));
    ck_assert_int_eq(type, CU_GRAPH_NODE_TYPE_KERNEL);
    CUDA_KERNEL_NODE_PARAMS got;
    CU_OK(cuGraphKernelNodeGetParams(nodes[0], &got));
    ck_assert_uint_eq(*(CUdeviceptr *)got.kernelParams[0], p);
    CU_ERR(cuGraphChildGraphNodeGetGraph(nodes[0], &embedded), CUDA_ERROR_INVALID_VALUE);

    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, parent, 0));
    CU_OK(cuGraphExecChildGraphNodeSetParams(x, node, c2));
    CU_OK(cuMemsetD32Async(p, 0, 1024, s));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(q, 21, 1024);
    expect_u32(p, 0, 1024);
    CU_OK(cuGraphChildGraphNodeGetGraph(node, &embedded));
    CU_OK(cuGraphGetNodes(embedded, nodes, &n));
    CU_OK(cuGraphKernelNodeGetParams(nodes[0], &got));
    ck_assert_uint_eq(*(CUdeviceptr *)got.kernelParams[0], p);

    CUgraphNodeParams np;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_GRAPH;
    np.graph.graph = c1;
    CU_OK(cuGraphExecNodeSetParams(x, node, &np));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 11, 1024);

    /* Another shape (one node more), or the parameters of another type. */
    CUgraph c3;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(launch_u32(k.fill_u32, q, 1, 1024, s));
    CU_OK(launch_u32(k.add_u32, q, 1, 1024, s));
    CU_OK(launch_u32(k.add_u32, q, 1, 1024, s));
    CU_OK(cuStreamEndCapture(s, &c3));
    CU_ERR(cuGraphExecChildGraphNodeSetParams(x, node, c3), CUDA_ERROR_INVALID_VALUE);
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_MEMSET;
    np.memset.dst = q;
    np.memset.value = 3;
    np.memset.elementSize = 4;
    np.memset.width = 1024;
    np.memset.height = 1;
    ck_assert_int_ne(cuGraphExecNodeSetParams(x, node, &np), CUDA_SUCCESS);
    CU_OK(cuMemsetD32Async(p, 0, 1024, s));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 11, 1024);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(parent));
    CU_OK(cuGraphDestroy(c1));
    CU_OK(cuGraphDestroy(c2));
    CU_OK(cuGraphDestroy(c3));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(q));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

void graph_children_tests(TCase *tc)
{
    tcase_add_test(tc, child_graphs_clones_and_launch_into_a_capture);
    tcase_add_test(tc, child_graph_read_back_and_set_in_an_executable_graph);
}
