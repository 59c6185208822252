/* Conformance: graphs built by hand and by capture. Kernel, memcpy, memset,
 * host, child-graph and event nodes; edges and their order; instantiation
 * (a cycle is refused); a launch is one operation in stream order; an
 * executable graph takes new kernel arguments and updates from a graph of
 * the same shape, and a child graph node another child graph;
 * cuGraphKernelNodeGetParams hands back the arguments as given, the
 * pointer values a library (spillway) reads, also inside the graph a child
 * graph node embeds.
 *
 * One suite in three files: here a graph built by hand, bad nodes and
 * edges, an event record node and a long captured chain; an executable
 * graph's launch, arguments and updates (graph_executable.c) and child
 * graphs (graph_children.c), sharing graph_rig.h. */
#include <string.h>

#include <stdio.h>

#include "tests/unit/driver/graph_rig.h"

static void CUDA_CB count_call(void *arg)
{
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

static CUDA_MEMCPY3D linear_copy(void *dst_host, CUdeviceptr dst_dev, const void *src_host,
                                 CUdeviceptr src_dev, size_t n)
{
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = src_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    c.srcHost = src_host;
    c.srcDevice = src_dev;
    c.dstMemoryType = dst_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    c.dstHost = dst_host;
    c.dstDevice = dst_dev;
    c.WidthInBytes = n;
    c.Height = c.Depth = 1;
    return c;
}

/* a_graph_built_by_hand's graph, in a chain: copy in, add 5, memset the
 * first 16 words, copy out, a host call. Its phases share this state; they
 * run in the test's order, which is the order of the driver calls. */
struct hand {
    size_t n;
    unsigned *in, *out;
    CUdeviceptr p;
    CUgraph g;
    CUgraphNode copy_in, add, set, copy_out, host;
    struct kargs a;
    CUgraphExec x;
    CUstream s;
};

/* The host node's counter, at file scope as it was inside the test: the node
 * is given its address, and hand_check_params reads that address back. */
static int hand_calls;

static void hand_alloc(struct hand *h)
{
    hand_calls = 0;
    h->n = 4096;
    CU_OK(cuMemAllocHost((void **)&h->in, h->n * 4));
    CU_OK(cuMemAllocHost((void **)&h->out, h->n * 4));
    for (size_t i = 0; i < h->n; i++)
        h->in[i] = 3;
    CU_OK(cuMemAlloc(&h->p, h->n * 4));
}

static void hand_build(struct hand *h)
{
    CU_ERR(cuGraphCreate(&h->g, 1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphCreate(&h->g, 0));
    CUDA_MEMCPY3D c = linear_copy(NULL, h->p, h->in, 0, h->n * 4);
    CU_OK(cuGraphAddMemcpyNode(&h->copy_in, h->g, NULL, 0, &c, test_ctx));
    CUDA_KERNEL_NODE_PARAMS kp = kernel_params(k.add_u32, &h->a, h->p, 5, h->n);
    CU_OK(cuGraphAddKernelNode(&h->add, h->g, &h->copy_in, 1, &kp));
    h->a.v = 1000; /* the node copied its arguments */
    CUDA_MEMSET_NODE_PARAMS ms;
    memset(&ms, 0, sizeof ms);
    ms.dst = h->p;
    ms.value = 77;
    ms.elementSize = 4;
    ms.width = 16;
    ms.height = 1;
    CU_OK(cuGraphAddMemsetNode(&h->set, h->g, &h->add, 1, &ms, test_ctx));
    c = linear_copy(h->out, 0, NULL, h->p, h->n * 4);
    CU_OK(cuGraphAddMemcpyNode(&h->copy_out, h->g, &h->set, 1, &c, test_ctx));
    CUDA_HOST_NODE_PARAMS hp = {count_call, &hand_calls};
    CU_OK(cuGraphAddHostNode(&h->host, h->g, &h->copy_out, 1, &hp));
}

static void hand_check_topology(const struct hand *h)
{
    CUgraphNode nodes[7];
    size_t count = 7;
    CU_OK(cuGraphGetNodes(h->g, nodes, &count));
    ck_assert_uint_eq(count, 5);
    /* In no order cuda.h promises: each node once. */
    const CUgraphNode built[5] = {h->copy_in, h->add, h->set, h->copy_out, h->host};
    for (int i = 0; i < 5; i++) {
        int seen = 0;
        for (int j = 0; j < 5; j++)
            seen += nodes[j] == built[i];
        ck_assert_int_eq(seen, 1);
    }
    ck_assert_ptr_null(nodes[5]); /* "the remaining entries ... set to NULL" */
    ck_assert_ptr_null(nodes[6]);
    count = 3;
    CU_OK(cuGraphGetRootNodes(h->g, nodes, &count));
    ck_assert_uint_eq(count, 1);
    ck_assert_ptr_eq(nodes[0], h->copy_in);
    CUgraphNode from[4], to[4];
    count = 4;
    CU_OK(cuGraphGetEdges(h->g, from, to, NULL, &count));
    ck_assert_uint_eq(count, 4);
    /* The chain's four edges, in any order. */
    const CUgraphNode chain[5] = {h->copy_in, h->add, h->set, h->copy_out, h->host};
    for (int i = 0; i < 4; i++) {
        int seen = 0;
        for (int j = 0; j < 4; j++)
            seen += from[j] == chain[i] && to[j] == chain[i + 1];
        ck_assert_int_eq(seen, 1);
    }
}

static void hand_check_params(const struct hand *h)
{
    /* The kernel's arguments as given: a library can read the pointers. */
    CUDA_KERNEL_NODE_PARAMS got;
    memset(&got, 0, sizeof got);
    CU_OK(cuGraphKernelNodeGetParams(h->add, &got));
    ck_assert_ptr_eq(got.func, k.add_u32);
    ck_assert_uint_eq(got.gridDimX, 16);
    ck_assert_uint_eq(got.blockDimX, 128);
    ck_assert_ptr_nonnull(got.kernelParams);
    ck_assert_ptr_null(got.extra);
    ck_assert_uint_eq(*(CUdeviceptr *)got.kernelParams[0], h->p);
    ck_assert_uint_eq(*(unsigned *)got.kernelParams[1], 5);
    ck_assert_uint_eq(*(unsigned long long *)got.kernelParams[2], h->n);
    CU_ERR(cuGraphKernelNodeGetParams(h->set, &got), CUDA_ERROR_INVALID_VALUE); /* not a kernel node */
    CUDA_MEMSET_NODE_PARAMS msg;
    CU_OK(cuGraphMemsetNodeGetParams(h->set, &msg));
    ck_assert_uint_eq(msg.value, 77);
    CUDA_MEMCPY3D cg;
    CU_OK(cuGraphMemcpyNodeGetParams(h->copy_out, &cg));
    ck_assert_ptr_eq(cg.dstHost, h->out);
    /* Parameters set before instantiation are what the graph runs. */
    msg.value = 78;
    CU_OK(cuGraphMemsetNodeSetParams(h->set, &msg));
    CU_ERR(cuGraphMemsetNodeSetParams(h->copy_out, &msg), CUDA_ERROR_INVALID_VALUE); /* not a memset node */
    memset(&msg, 0, sizeof msg);
    CU_OK(cuGraphMemsetNodeGetParams(h->set, &msg));
    ck_assert_uint_eq(msg.value, 78);
    CU_OK(cuGraphMemcpyNodeSetParams(h->copy_out, &cg));
    CUDA_HOST_NODE_PARAMS hg;
    CU_OK(cuGraphHostNodeGetParams(h->host, &hg));
    ck_assert(hg.fn == count_call && hg.userData == &hand_calls);
    CU_OK(cuGraphHostNodeSetParams(h->host, &hg));
}

static void hand_launch_twice(struct hand *h)
{
    CU_OK(cuGraphInstantiate(&h->x, h->g, 0));
    CU_OK(cuStreamCreate(&h->s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphLaunch(h->x, h->s));
    CU_OK(cuStreamSynchronize(h->s));
    ck_assert_int_eq(hand_calls, 1);
    ck_assert_uint_eq(h->out[0], 78);
    ck_assert_uint_eq(h->out[15], 78);
    ck_assert_uint_eq(h->out[16], 8);
    ck_assert_uint_eq(h->out[h->n - 1], 8);
    for (size_t i = 0; i < h->n; i++) /* each launch reads the host memory again */
        h->in[i] = 10;
    CU_OK(cuGraphLaunch(h->x, h->s));
    CU_OK(cuStreamSynchronize(h->s));
    ck_assert_int_eq(hand_calls, 2);
    ck_assert_uint_eq(h->out[h->n - 1], 15);
}

static void hand_free(struct hand *h)
{
    CU_OK(cuGraphExecDestroy(h->x));
    CU_OK(cuGraphDestroy(h->g));
    CU_OK(cuStreamDestroy(h->s));
    CU_OK(cuMemFree(h->p));
    CU_OK(cuMemFreeHost(h->in));
    CU_OK(cuMemFreeHost(h->out));
}

START_TEST(a_graph_built_by_hand)
{
    struct hand h;
    hand_alloc(&h);
    hand_build(&h);
    hand_check_topology(&h);
    hand_check_params(&h);
    hand_launch_twice(&h);
    hand_free(&h);
}
END_TEST

START_TEST(bad_nodes_and_edges)
{
    CUgraph g, other;
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphCreate(&other, 0));
    CUgraphNode a, b, c, foreign;
    CU_OK(cuGraphAddEmptyNode(&a, g, NULL, 0));
    CU_OK(cuGraphAddEmptyNode(&foreign, other, NULL, 0));
    CU_ERR(cuGraphAddEmptyNode(&b, g, &foreign, 1), CUDA_ERROR_INVALID_VALUE);
    /* The same dependency twice: refused (fakecuda), or, if the driver
     * takes it, the node is dropped again so the counts below hold. */
    CUgraphNode twice[2] = {a, a};
    CUresult dup = cuGraphAddEmptyNode(&b, g, twice, 2);
    printf("a dependency given twice: %d\n", (int)dup);
    if (dup == CUDA_SUCCESS)
        CU_OK(cuGraphDestroyNode(b));
    else
        ck_assert_int_eq(dup, CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphAddEmptyNode(&b, g, &a, 1));
    CU_OK(cuGraphAddEmptyNode(&c, g, &b, 1));
    CU_ERR(cuGraphAddDependencies(g, &a, &b, NULL, 1), CUDA_ERROR_INVALID_VALUE); /* exists */
    CUDA_HOST_NODE_PARAMS none = {NULL, NULL};
    CUgraphNode h;
    CU_ERR(cuGraphAddHostNode(&h, g, NULL, 0, &none), CUDA_ERROR_INVALID_VALUE);
    struct kargs ka;
    CUDA_KERNEL_NODE_PARAMS kp = kernel_params(k.fill_u32, &ka, 0, 0, 0);
    void *extra[] = {CU_LAUNCH_PARAM_END};
    kp.extra = extra; /* both kernelParams and extra */
    CU_ERR(cuGraphAddKernelNode(&h, g, NULL, 0, &kp), CUDA_ERROR_INVALID_VALUE);
    size_t n = 0;
    CU_OK(cuGraphGetNodes(g, NULL, &n));
    ck_assert_uint_eq(n, 3); /* nothing of the refused ones */

    /* A cycle is never instantiated: refused when built, or at the
     * instantiation (fakecuda builds it; which the driver does, printed). */
    CUgraphExec x;
    CUresult cyc = cuGraphAddDependencies(g, &c, &a, NULL, 1);
    printf("a cycle's edge: %d\n", (int)cyc);
    if (cyc == CUDA_SUCCESS) {
        ck_assert_int_ne(cuGraphInstantiate(&x, g, 0), CUDA_SUCCESS);
        CU_OK(cuGraphRemoveDependencies(g, &c, &a, NULL, 1));
    }
    CU_ERR(cuGraphRemoveDependencies(g, &c, &a, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphExecDestroy(x));
    size_t deps = 0;
    CU_OK(cuGraphNodeGetDependencies(c, NULL, NULL, &deps));
    ck_assert_uint_eq(deps, 1);
    CU_OK(cuGraphDestroyNode(b));
    CU_OK(cuGraphNodeGetDependencies(c, NULL, NULL, &deps));
    ck_assert_uint_eq(deps, 0);
    CU_OK(cuGraphGetNodes(g, NULL, &n));
    ck_assert_uint_eq(n, 2);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuGraphDestroy(other));
}
END_TEST

/* An event record node: the event completes with the launch. */
START_TEST(event_record_node)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent e;
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr flag_dev = f.dev;
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    void *args[] = {&flag_dev};
    kp.func = k.wait_flag;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = args;
    CUgraphNode wait, rec;
    CU_OK(cuGraphAddKernelNode(&wait, g, NULL, 0, &kp));
    CU_OK(cuGraphAddEventRecordNode(&rec, g, &wait, 1, e));
    CUevent got;
    CU_OK(cuGraphEventRecordNodeGetEvent(rec, &got));
    ck_assert_ptr_eq(got, e);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    expect_event_pending(e);
    flag_release(&f);
    CU_OK(cuEventSynchronize(e));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuEventDestroy(e));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A graph of the size real programs capture: thousands of nodes in a chain
 * instantiate and launch quickly, in order. */
START_TEST(a_long_captured_chain)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4));
    CU_OK(cuMemsetD32(p, 0, 1));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 2000; i++)
        CU_OK(launch_u32(k.add_u32, p, 1, 1, s));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 4000, 1);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_graph");
    TCase *tc = tcase_create("graph");
    tcase_add_checked_fixture(tc, setup, driver_teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, a_graph_built_by_hand);
    tcase_add_test(tc, bad_nodes_and_edges);
    graph_executable_tests(tc);
    graph_children_tests(tc);
    tcase_add_test(tc, event_record_node);
    tcase_add_test(tc, a_long_captured_chain);
    suite_add_tcase(s, tc);
    return s;
}
