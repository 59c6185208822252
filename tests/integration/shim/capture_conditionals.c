/* The capture suite (test_capture.c): conditional nodes' bodies. The
 * buffers their kernels name are filled back at a launch, their records
 * live as long as their nodes, and a body a capture filled is read. */
#include "tests/integration/shim/capture_rig.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* ---- conditional nodes' bodies ------------------------------------------------ */

void fakecuda_cond_kernel_register(void); /* tests/unit/driver/kernels.c */

static size_t conditionals(void)
{
    size_t (*get)(void) = (size_t (*)(void))dlsym(RTLD_DEFAULT, "spillway_graph_conditionals");
    ck_assert_ptr_nonnull(get);
    return get();
}

/* A conditional node of g on a new handle of default def (applied at each
 * launch); its bodies in *body. */
static CUgraphNode cond_node(CUgraph g, CUgraphConditionalNodeType type, unsigned def,
                             CUgraphConditionalHandle *h, CUgraph **body)
{
    CU_OK(cuGraphConditionalHandleCreate(h, g, ctx, def, CU_GRAPH_COND_ASSIGN_DEFAULT));
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = *h;
    p.conditional.type = type;
    p.conditional.size = 1;
    p.conditional.ctx = ctx;
    CUgraphNode n;
    CU_OK(cuGraphAddNode(&n, g, NULL, NULL, 0, &p));
    *body = p.conditional.phGraph_out;
    return n;
}

/* A WHILE loop of a graph (XLA's while loops in command buffers): its
 * body steps a buffer, then a kernel counts the iteration and sets the
 * loop's value (what cudaGraphSetConditional does on a GPU) to go on
 * until the third. Squeezed out before each launch, the buffer is filled
 * back by the launch: the body's kernel names it, and spillway walks the
 * bodies it recorded when the node was made (without that, every
 * iteration would read it over the bus). */
START_TEST(a_while_loops_buffer_is_filled_back_at_replay)
{
    ctx = rig_setup(0);
    fakecuda_cond_kernel_register();
    CUfunction step = rig_kernel("step_u32"), count = rig_kernel("cond_count");
    CUdeviceptr b = rig_filled(BUF, 610);
    unsigned *counter;
    CU_OK(cuMemAllocHost((void **)&counter, sizeof *counter));
    size_t before = conditionals();
    CUgraph g, *body;
    CUgraphConditionalHandle h;
    CU_OK(cuGraphCreate(&g, 0));
    cond_node(g, CU_GRAPH_COND_TYPE_WHILE, 1, &h, &body);
    ck_assert_uint_eq(conditionals(), before + 1);
    size_t words = BUF / 4;
    unsigned k = 3, limit = 3;
    void *step_args[] = {&b, &words, &k};
    CUDA_KERNEL_NODE_PARAMS sp = {.func = step, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .kernelParams = step_args};
    void *count_args[] = {&h, &counter, &limit};
    CUDA_KERNEL_NODE_PARAMS cp = sp;
    cp.func = count;
    cp.kernelParams = count_args;
    CUgraphNode s_node, c_node;
    CU_OK(cuGraphAddKernelNode(&s_node, body[0], NULL, 0, &sp));
    CU_OK(cuGraphAddKernelNode(&c_node, body[0], &s_node, 1, &cp));
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    uint32_t *want = rig_expected(BUF, 610);
    for (int r = 0; r < 3; r++) {
        *counter = 0;
        rig_squeeze(LIMIT - 2 * MiB);
        ck_assert_msg(rig_resident(b, BUF, 0) < BUF, "replay %d: nothing spilled", r);
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        ck_assert_uint_eq(*counter, limit); /* the default again at each launch: 3 iterations */
        ck_assert_msg(rig_resident(b, BUF, 0) == BUF,
                      "replay %d: %zu of %zu bytes of the loop body's buffer on the device", r,
                      rig_resident(b, BUF, 0), BUF);
        for (size_t j = 0; j < words; j++)
            for (unsigned i = 0; i < limit; i++)
                want[j] = rig_step(want[j], k);
    }
    rig_expect_words(b, want, BUF, "the loop body's buffer");
    free(want);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(conditionals(), before); /* the record went with the graph */
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost(counter));
    CU_OK(cuMemFree(b));
}
END_TEST

/* A record lives as long as its node: a node destroyed takes its record
 * and those of the conditional nodes in its bodies along, a graph
 * destroyed those of all of its own; a refused destroy keeps them. A graph
 * made after, whose nodes may sit at the freed addresses, runs with no
 * stale body walked. */
START_TEST(conditional_records_go_with_their_nodes)
{
    ctx = rig_setup(0);
    CUfunction step = rig_kernel("step_u32");
    size_t before = conditionals();
    CUgraph g, *outer, *inner;
    CUgraphConditionalHandle h1, h2;
    CU_OK(cuGraphCreate(&g, 0));
    CUgraphNode n = cond_node(g, CU_GRAPH_COND_TYPE_IF, 1, &h1, &outer);
    cond_node(outer[0], CU_GRAPH_COND_TYPE_WHILE, 0, &h2, &inner);
    ck_assert_uint_eq(conditionals(), before + 2);
    ck_assert_int_ne(cuGraphDestroyNode(NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(conditionals(), before + 2);
    CU_OK(cuGraphDestroyNode(n));
    ck_assert_uint_eq(conditionals(), before);
    n = cond_node(g, CU_GRAPH_COND_TYPE_IF, 1, &h1, &outer);
    cond_node(outer[0], CU_GRAPH_COND_TYPE_SWITCH, 0, &h2, &inner);
    ck_assert_uint_eq(conditionals(), before + 2);
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(conditionals(), before);

    CUdeviceptr c = rig_filled(BUF, 611);
    size_t words = BUF / 4;
    unsigned k = 5;
    void *args[] = {&c, &words, &k};
    CUDA_KERNEL_NODE_PARAMS kp = {.func = step, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .kernelParams = args};
    CU_OK(cuGraphCreate(&g, 0));
    CUgraphNode kn;
    CU_OK(cuGraphAddKernelNode(&kn, g, NULL, 0, &kp));
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    CU_OK(cuGraphLaunch(e, NULL));
    CU_OK(cuCtxSynchronize());
    uint32_t *want = rig_expected(BUF, 611);
    for (size_t j = 0; j < words; j++)
        want[j] = rig_step(want[j], k);
    rig_expect_words(c, want, BUF, "a later graph's buffer");
    free(want);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(c));
}
END_TEST

/* A body filled by a capture (cuStreamBeginCaptureToGraph, through
 * spillway's capture hooks) runs what was captured, and the buffer its
 * kernel names is filled back at the launch. While the capture adds to
 * the body, the driver refuses to destroy the graph (a capture's graph
 * may not go): the records stay, and go with the graph after. */
START_TEST(a_body_filled_by_a_capture_is_read)
{
    ctx = rig_setup(0);
    CUfunction step = rig_kernel("step_u32");
    CUdeviceptr c = rig_filled(BUF, 612);
    size_t before = conditionals();
    CUgraph g, *body;
    CUgraphConditionalHandle h;
    CU_OK(cuGraphCreate(&g, 0));
    cond_node(g, CU_GRAPH_COND_TYPE_IF, 1, &h, &body);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamBeginCaptureToGraph(s, body[0], NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    ck_assert_int_ne(cuGraphDestroy(g), CUDA_SUCCESS);
    ck_assert_uint_eq(conditionals(), before + 1);
    launch_step(step, s, c, 4);
    CUgraph got;
    CU_OK(cuStreamEndCapture(s, &got));
    ck_assert_ptr_eq(got, body[0]);
    CUgraphExec e;
    CU_OK(cuGraphInstantiateWithFlags(&e, g, 0));
    rig_squeeze(LIMIT - 2 * MiB);
    ck_assert_uint_lt(rig_resident(c, BUF, 0), BUF);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(rig_resident(c, BUF, 0), BUF);
    uint32_t *want = rig_expected(BUF, 612);
    for (size_t j = 0; j < BUF / 4; j++)
        want[j] = rig_step(want[j], 4);
    rig_expect_words(c, want, BUF, "the captured body's buffer");
    free(want);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    ck_assert_uint_eq(conditionals(), before);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(c));
}
END_TEST

void capture_conditional_tests(TCase *tc)
{
    tcase_add_test(tc, a_while_loops_buffer_is_filled_back_at_replay);
    tcase_add_test(tc, conditional_records_go_with_their_nodes);
    tcase_add_test(tc, a_body_filled_by_a_capture_is_read);
}
