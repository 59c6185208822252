/* Conformance: conditional graph nodes (CUDA 12.3's IF and WHILE, 12.8's
 * IF with an else body and SWITCH), made by cuGraphAddNode with a handle of
 * cuGraphConditionalHandleCreate. Only what needs no device code setting
 * the value (cudaGraphSetConditional needs libcudadevrt, which the test
 * kernels are built without): the handle's default, applied at each launch
 * (CU_GRAPH_COND_ASSIGN_DEFAULT), picks the body. An IF runs body 0 when
 * it is non-zero, body 1 (of two) when it is zero; a SWITCH runs body n
 * only, none for n >= size; a WHILE of 0 never runs its body. The bodies
 * are the driver's graphs, written to phGraph_out, read back with
 * cuGraphGetNodes; a node type the reference does not allow in a body (a
 * host node) is refused, when it is added or at instantiation (the
 * reference does not say which: tests/gpu/README.md). A graph with
 * conditional nodes cannot be cloned or embedded as a child graph, and has
 * one executable graph at a time. spillway reads the bodies' nodes
 * (shim/graph_cond.c); tests/integration/shim/test_capture.c runs a WHILE
 * whose value a kernel sets, on fakecuda. */
#include <string.h>

#include "tests/unit/driver/common.h"

static struct test_kernels k;

static void setup(void)
{
    driver_setup();
    kernels_load(&k);
}

enum { WORDS = 1024 };

/* A conditional node of g: type, size bodies, a handle of default def
 * applied at every launch. */
static CUgraphNode cond_node(CUgraph g, CUgraphConditionalNodeType type, unsigned size, unsigned def,
                             CUgraph **bodies)
{
    CUgraphConditionalHandle h;
    CU_OK(cuGraphConditionalHandleCreate(&h, g, test_ctx, def, CU_GRAPH_COND_ASSIGN_DEFAULT));
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = size;
    p.conditional.ctx = test_ctx;
    CUgraphNode n;
    CU_OK(cuGraphAddNode(&n, g, NULL, NULL, 0, &p));
    ck_assert_ptr_nonnull(p.conditional.phGraph_out);
    for (unsigned i = 0; i < size; i++)
        ck_assert_ptr_nonnull(p.conditional.phGraph_out[i]);
    *bodies = p.conditional.phGraph_out;
    return n;
}

/* Into body: a set of words [at, at + n) to v, then a kernel adding 1. */
static void set_then_add(CUgraph body, CUdeviceptr p, size_t at, size_t n, unsigned v)
{
    CUDA_MEMSET_NODE_PARAMS m = {.dst = p + at * 4, .value = v, .elementSize = 4, .width = n, .height = 1};
    CUgraphNode set, add;
    CU_OK(cuGraphAddMemsetNode(&set, body, NULL, 0, &m, test_ctx));
    static CUdeviceptr kp;
    static unsigned kv = 1;
    static unsigned long long kn;
    kp = p + at * 4;
    kn = n;
    void *args[] = {&kp, &kv, &kn};
    CUDA_KERNEL_NODE_PARAMS kk = {.func = k.add_u32, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1, .kernelParams = args};
    CU_OK(cuGraphAddKernelNode(&add, body, &set, 1, &kk));
}

/* Instantiates and launches g once over words set to 1 first; the words after. */
static void run_once(CUgraph g, CUdeviceptr p, unsigned *out)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemsetD32Async(p, 1, WORDS, s));
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuMemcpyDtoHAsync(out, p, WORDS * 4, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuStreamDestroy(s));
}

/* An IF of default def with size bodies: body 0 sets words [0, 16) to 7
 * and adds 1, body 1 the same to words [16, 32) with 9. */
static void if_node(unsigned def, unsigned size, unsigned expect0, unsigned expect16)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, WORDS * 4));
    CUgraph g, *body;
    CU_OK(cuGraphCreate(&g, 0));
    CUgraphNode n = cond_node(g, CU_GRAPH_COND_TYPE_IF, size, def, &body);
    CUgraphNodeType t;
    CU_OK(cuGraphNodeGetType(n, &t));
    ck_assert_int_eq(t, CU_GRAPH_NODE_TYPE_CONDITIONAL);
    set_then_add(body[0], p, 0, 16, 7);
    if (size == 2)
        set_then_add(body[1], p, 16, 16, 9);
    unsigned out[WORDS];
    run_once(g, p, out);
    ck_assert_uint_eq(out[0], expect0);
    ck_assert_uint_eq(out[15], expect0);
    ck_assert_uint_eq(out[16], expect16);
    ck_assert_uint_eq(out[31], expect16);
    ck_assert_uint_eq(out[32], 1);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(p));
}

START_TEST(an_if_of_one_runs_its_body) { if_node(1, 1, 8, 1); }
END_TEST
START_TEST(an_if_of_zero_does_not_run_its_body) { if_node(0, 1, 1, 1); }
END_TEST
START_TEST(an_if_else_of_zero_runs_its_second_body) { if_node(0, 2, 1, 10); }
END_TEST
START_TEST(an_if_else_of_one_runs_its_first_body) { if_node(5, 2, 8, 1); }
END_TEST

/* A SWITCH of 3 bodies, body i setting words [16i, 16i + 16) to 100 + i
 * and adding 1: a default of n runs body n only, none at n >= 3. */
static void switch_node(unsigned def)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, WORDS * 4));
    CUgraph g, *body;
    CU_OK(cuGraphCreate(&g, 0));
    cond_node(g, CU_GRAPH_COND_TYPE_SWITCH, 3, def, &body);
    for (unsigned i = 0; i < 3; i++)
        set_then_add(body[i], p, 16 * i, 16, 100 + i);
    unsigned out[WORDS];
    run_once(g, p, out);
    for (unsigned i = 0; i < 3; i++) {
        unsigned want = i == def ? 101 + i : 1;
        ck_assert_uint_eq(out[16 * i], want);
        ck_assert_uint_eq(out[16 * i + 15], want);
    }
    ck_assert_uint_eq(out[48], 1);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(p));
}

START_TEST(a_switch_runs_the_body_of_its_value) { switch_node(1); }
END_TEST
START_TEST(a_switch_runs_its_last_body) { switch_node(2); }
END_TEST
START_TEST(a_switch_past_its_bodies_runs_none) { switch_node(3); }
END_TEST

/* A WHILE of 0: its body (which would set words) never runs; the nodes
 * around it do, in order. */
START_TEST(a_while_of_zero_never_runs_its_body)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, WORDS * 4));
    CUgraph g, *body;
    CU_OK(cuGraphCreate(&g, 0));
    CUgraphNode w = cond_node(g, CU_GRAPH_COND_TYPE_WHILE, 1, 0, &body);
    set_then_add(body[0], p, 0, 16, 7);
    CUDA_MEMSET_NODE_PARAMS m = {.dst = p + 64 * 4, .value = 3, .elementSize = 4, .width = 16, .height = 1};
    CUgraphNode after;
    CU_OK(cuGraphAddMemsetNode(&after, g, &w, 1, &m, test_ctx));
    unsigned out[WORDS];
    run_once(g, p, out);
    ck_assert_uint_eq(out[0], 1);
    ck_assert_uint_eq(out[15], 1);
    ck_assert_uint_eq(out[64], 3);
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(p));
}
END_TEST

/* The bodies are graphs of their own: their nodes read back, in each. */
START_TEST(bodies_read_back)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, WORDS * 4));
    CUgraph g, *body;
    CU_OK(cuGraphCreate(&g, 0));
    cond_node(g, CU_GRAPH_COND_TYPE_SWITCH, 2, 0, &body);
    ck_assert_ptr_ne(body[0], body[1]);
    set_then_add(body[1], p, 0, 16, 7);
    CUgraphNode e;
    CU_OK(cuGraphAddEmptyNode(&e, body[0], NULL, 0));
    CUgraphNode nodes[4];
    size_t n = 4;
    CU_OK(cuGraphGetNodes(body[0], nodes, &n));
    ck_assert_uint_eq(n, 1);
    ck_assert_ptr_eq(nodes[0], e);
    n = 4;
    CU_OK(cuGraphGetNodes(body[1], nodes, &n));
    ck_assert_uint_eq(n, 2);
    CUgraphNodeType t0, t1;
    CU_OK(cuGraphNodeGetType(nodes[0], &t0));
    CU_OK(cuGraphNodeGetType(nodes[1], &t1));
    ck_assert((t0 == CU_GRAPH_NODE_TYPE_MEMSET && t1 == CU_GRAPH_NODE_TYPE_KERNEL) ||
              (t0 == CU_GRAPH_NODE_TYPE_KERNEL && t1 == CU_GRAPH_NODE_TYPE_MEMSET));
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    CU_OK(cuGraphKernelNodeGetParams(t0 == CU_GRAPH_NODE_TYPE_KERNEL ? nodes[0] : nodes[1], &kp));
    ck_assert_ptr_eq(kp.func, k.add_u32);
    ck_assert_uint_eq(*(CUdeviceptr *)kp.kernelParams[0], p);
    n = 4;
    CU_OK(cuGraphGetNodes(g, nodes, &n));
    ck_assert_uint_eq(n, 1); /* the bodies' nodes are not g's */
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(p));
}
END_TEST

static void CUDA_CB noop(void *arg)
{
    (void)arg;
}

/* "Allowed node types are kernel nodes, empty nodes, child graphs,
 * memsets, memcopies, and conditionals": a host node in a body is
 * refused, when added or when the graph is instantiated. */
START_TEST(a_host_node_in_a_body_is_refused)
{
    CUgraph g, *body;
    CU_OK(cuGraphCreate(&g, 0));
    cond_node(g, CU_GRAPH_COND_TYPE_IF, 1, 1, &body);
    CUDA_HOST_NODE_PARAMS hp = {.fn = noop, .userData = NULL};
    CUgraphNode hn;
    CUresult added = cuGraphAddHostNode(&hn, body[0], NULL, 0, &hp);
    if (added == CUDA_SUCCESS) {
        CUgraphExec x;
        ck_assert_int_ne(cuGraphInstantiate(&x, g, 0), CUDA_SUCCESS);
    }
    CU_OK(cuGraphDestroy(g));
}
END_TEST

/* "The graph cannot be used in a child node. Only one instantiation of
 * the graph may exist at any point in time. The graph cannot be cloned." */
START_TEST(a_graph_with_a_conditional_is_not_cloned_embedded_or_instantiated_twice)
{
    CUgraph g, *body, parent, clone;
    CU_OK(cuGraphCreate(&g, 0));
    cond_node(g, CU_GRAPH_COND_TYPE_IF, 1, 1, &body);
    CUgraphNode e, child;
    CU_OK(cuGraphAddEmptyNode(&e, body[0], NULL, 0));
    ck_assert_int_ne(cuGraphClone(&clone, g), CUDA_SUCCESS);
    CU_OK(cuGraphCreate(&parent, 0));
    ck_assert_int_ne(cuGraphAddChildGraphNode(&child, parent, NULL, 0, g), CUDA_SUCCESS);
    CUgraphExec x, y;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    ck_assert_int_ne(cuGraphInstantiate(&y, g, 0), CUDA_SUCCESS);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphInstantiate(&y, g, 0));
    CU_OK(cuGraphExecDestroy(y));
    CU_OK(cuGraphDestroy(parent));
    CU_OK(cuGraphDestroy(g));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_graph_cond");
    TCase *tc = tcase_create("graph_cond");
    tcase_add_checked_fixture(tc, setup, driver_teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, an_if_of_one_runs_its_body);
    tcase_add_test(tc, an_if_of_zero_does_not_run_its_body);
    tcase_add_test(tc, an_if_else_of_zero_runs_its_second_body);
    tcase_add_test(tc, an_if_else_of_one_runs_its_first_body);
    tcase_add_test(tc, a_switch_runs_the_body_of_its_value);
    tcase_add_test(tc, a_switch_runs_its_last_body);
    tcase_add_test(tc, a_switch_past_its_bodies_runs_none);
    tcase_add_test(tc, a_while_of_zero_never_runs_its_body);
    tcase_add_test(tc, bodies_read_back);
    tcase_add_test(tc, a_host_node_in_a_body_is_refused);
    tcase_add_test(tc, a_graph_with_a_conditional_is_not_cloned_embedded_or_instantiated_twice);
    suite_add_tcase(s, tc);
    return s;
}
