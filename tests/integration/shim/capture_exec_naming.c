/* The capture suite (test_capture.c): every way an executable graph comes
 * to name a buffer (a node's parameters set in it, an update, a child
 * graph, an instantiation with parameters, the ABIs before CUDA 12) has
 * its replays fill that buffer back. */
#include "tests/integration/shim/capture_rig.h"

#include <string.h>

/* ---- every way an executable graph gets its buffers ---------------------------- */

/* What a graph of one node does to buffer p: a kernel step, a set, a copy
 * out, or a child graph holding a kernel step. */
enum node_kind { KERNEL, MEMSET, MEMCPY, CHILD };

struct one_node {
    CUgraph g;
    CUgraphNode node;
    CUdeviceptr p;   /* the buffer its parameters name */
    size_t n;        /* the kernel's arguments */
    unsigned k;
    void *args[3];
    CUDA_KERNEL_NODE_PARAMS kp;
    CUDA_MEMSET_NODE_PARAMS mp;
    CUDA_MEMCPY3D cp;
    CUgraph child;
};

static void *sink; /* pinned host memory the copies go to */

static void one_node_make(struct one_node *o, enum node_kind kind, CUfunction step, CUdeviceptr p)
{
    memset(o, 0, sizeof *o);
    o->p = p;
    o->n = BUF / 4;
    o->k = 7;
    o->args[0] = &o->p;
    o->args[1] = &o->n;
    o->args[2] = &o->k;
    o->kp = (CUDA_KERNEL_NODE_PARAMS){.func = step, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                      .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
                                      .kernelParams = o->args};
    o->mp = (CUDA_MEMSET_NODE_PARAMS){.dst = p, .value = 0x77777777u, .elementSize = 4,
                                      .width = BUF / 4, .height = 1};
    o->cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    o->cp.srcDevice = p;
    o->cp.dstMemoryType = CU_MEMORYTYPE_HOST;
    o->cp.dstHost = sink;
    o->cp.WidthInBytes = BUF;
    o->cp.Height = o->cp.Depth = 1;
    CU_OK(cuGraphCreate(&o->g, 0));
    if (kind == KERNEL) {
        CU_OK(cuGraphAddKernelNode(&o->node, o->g, NULL, 0, &o->kp));
    } else if (kind == MEMSET) {
        CU_OK(cuGraphAddMemsetNode(&o->node, o->g, NULL, 0, &o->mp, ctx));
    } else if (kind == MEMCPY) {
        CU_OK(cuGraphAddMemcpyNode(&o->node, o->g, NULL, 0, &o->cp, ctx));
    } else {
        CUgraphNode inner;
        CU_OK(cuGraphCreate(&o->child, 0));
        CU_OK(cuGraphAddKernelNode(&inner, o->child, NULL, 0, &o->kp));
        CU_OK(cuGraphAddChildGraphNode(&o->node, o->g, NULL, 0, o->child));
    }
}

static void one_node_free(struct one_node *o)
{
    CU_OK(cuGraphDestroy(o->g));
    if (o->child)
        CU_OK(cuGraphDestroy(o->child));
}

enum how {
    EXEC_KERNEL_SET, EXEC_NODE_SET, EXEC_UPDATE, EXEC_MEMSET_SET, EXEC_MEMCPY_SET,
    EXEC_CHILD_SET, INSTANTIATED_WITH_PARAMS,
    /* The ABIs runtimes before CUDA 12 ask cuGetProcAddress for. */
    EXEC_KERNEL_SET_V1, EXEC_UPDATE_V1, INSTANTIATED_V1, INSTANTIATED_V2
};

/* CUDA 10.0/11.0's instantiate (error node and log), 10.2's update (error
 * node and result), 10.1's kernel node set (the parameters without kern
 * and ctx). */
typedef CUresult (*instantiate_v1_fn)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
typedef CUresult (*update_v1_fn)(CUgraphExec, CUgraph, CUgraphNode *, CUgraphExecUpdateResult *);
typedef CUresult (*kernel_set_v1_fn)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v1 *);

static void *old_abi(const char *name, int version)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    CU_OK(cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    ck_assert_ptr_nonnull(fn);
    return fn;
}

static const struct way {
    enum node_kind kind;
    enum how how;
    const char *name;
} ways[] = {
    {KERNEL, EXEC_KERNEL_SET, "cuGraphExecKernelNodeSetParams"},
    {KERNEL, EXEC_NODE_SET, "cuGraphExecNodeSetParams (kernel)"},
    {KERNEL, EXEC_UPDATE, "cuGraphExecUpdate (kernel)"},
    {MEMSET, EXEC_MEMSET_SET, "cuGraphExecMemsetNodeSetParams"},
    {MEMSET, EXEC_NODE_SET, "cuGraphExecNodeSetParams (memset)"},
    {MEMCPY, EXEC_MEMCPY_SET, "cuGraphExecMemcpyNodeSetParams"},
    {MEMCPY, EXEC_NODE_SET, "cuGraphExecNodeSetParams (memcpy)"},
    {CHILD, EXEC_CHILD_SET, "cuGraphExecChildGraphNodeSetParams"},
    {CHILD, EXEC_NODE_SET, "cuGraphExecNodeSetParams (child graph)"},
    {CHILD, EXEC_UPDATE, "cuGraphExecUpdate (child graph)"},
    {CHILD, INSTANTIATED_WITH_PARAMS, "cuGraphInstantiateWithParams (child graph)"},
    {MEMCPY, INSTANTIATED_WITH_PARAMS, "cuGraphInstantiateWithParams (memcpy)"},
    {KERNEL, EXEC_KERNEL_SET_V1, "cuGraphExecKernelNodeSetParams (CUDA 10.1)"},
    {KERNEL, EXEC_UPDATE_V1, "cuGraphExecUpdate (CUDA 10.2)"},
    {CHILD, EXEC_UPDATE_V1, "cuGraphExecUpdate (CUDA 10.2, child graph)"},
    {MEMCPY, INSTANTIATED_V1, "cuGraphInstantiate (CUDA 10.0)"},
    {KERNEL, INSTANTIATED_V2, "cuGraphInstantiate (CUDA 11.0)"},
};

/* An executable graph of graph a (naming buffer a) made to name buffer c
 * instead, the way w says (or instantiated from c's graph). */
static CUgraphExec exec_naming(const struct way *w, struct one_node *a, struct one_node *c, CUstream s)
{
    CUgraphExec e;
    if (w->how == INSTANTIATED_WITH_PARAMS) {
        CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                            .hUploadStream = s};
        CU_OK(cuGraphInstantiateWithParams(&e, c->g, &ip));
        return e;
    }
    if (w->how == INSTANTIATED_V1 || w->how == INSTANTIATED_V2) {
        instantiate_v1_fn inst =
            (instantiate_v1_fn)old_abi("cuGraphInstantiate", w->how == INSTANTIATED_V1 ? 10000 : 11000);
        CUgraphNode err = NULL;
        char log[64];
        CU_OK(inst(&e, c->g, &err, log, sizeof log));
        return e;
    }
    CU_OK(cuGraphInstantiateWithFlags(&e, a->g, 0));
    CUgraphNodeParams np;
    memset(&np, 0, sizeof np);
    CUgraphExecUpdateResultInfo info;
    switch (w->how) {
    case EXEC_KERNEL_SET:
        CU_OK(cuGraphExecKernelNodeSetParams(e, a->node, &c->kp));
        break;
    case EXEC_MEMSET_SET:
        CU_OK(cuGraphExecMemsetNodeSetParams(e, a->node, &c->mp, ctx));
        break;
    case EXEC_MEMCPY_SET:
        CU_OK(cuGraphExecMemcpyNodeSetParams(e, a->node, &c->cp, ctx));
        break;
    case EXEC_CHILD_SET:
        CU_OK(cuGraphExecChildGraphNodeSetParams(e, a->node, c->child));
        break;
    case EXEC_UPDATE:
        CU_OK(cuGraphExecUpdate(e, c->g, &info));
        break;
    case EXEC_KERNEL_SET_V1: {
        CUDA_KERNEL_NODE_PARAMS_v1 k1 = {
            .func = c->kp.func, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
            .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .kernelParams = c->kp.kernelParams};
        CU_OK(((kernel_set_v1_fn)old_abi("cuGraphExecKernelNodeSetParams", 10010))(e, a->node, &k1));
        break;
    }
    case EXEC_UPDATE_V1: {
        CUgraphNode err = NULL;
        CUgraphExecUpdateResult res;
        CU_OK(((update_v1_fn)old_abi("cuGraphExecUpdate", 10020))(e, c->g, &err, &res));
        break;
    }
    case EXEC_NODE_SET:
        if (w->kind == KERNEL) {
            np.type = CU_GRAPH_NODE_TYPE_KERNEL;
            np.kernel.func = c->kp.func;
            np.kernel.gridDimX = np.kernel.gridDimY = np.kernel.gridDimZ = 1;
            np.kernel.blockDimX = np.kernel.blockDimY = np.kernel.blockDimZ = 1;
            np.kernel.kernelParams = c->kp.kernelParams;
        } else if (w->kind == MEMSET) {
            np.type = CU_GRAPH_NODE_TYPE_MEMSET;
            np.memset.dst = c->mp.dst;
            np.memset.value = c->mp.value;
            np.memset.elementSize = c->mp.elementSize;
            np.memset.width = c->mp.width;
            np.memset.height = c->mp.height;
            np.memset.ctx = ctx;
        } else if (w->kind == MEMCPY) {
            np.type = CU_GRAPH_NODE_TYPE_MEMCPY;
            np.memcpy.copyCtx = ctx;
            np.memcpy.copyParams = c->cp;
        } else {
            np.type = CU_GRAPH_NODE_TYPE_GRAPH;
            np.graph.graph = c->child;
        }
        CU_OK(cuGraphExecNodeSetParams(e, a->node, &np));
        break;
    default:
        break;
    }
    return e;
}

/* However an executable graph came to name a buffer (a node's parameters
 * set in it, an update, a child graph, a child graph set in it, an
 * instantiation with parameters), its replays fill that buffer back. */
START_TEST(every_way_of_naming_a_buffer_fills_it_at_replay)
{
    ctx = rig_setup(0);
    CUfunction step = rig_kernel("step_u32");
    CU_OK(cuMemAllocHost(&sink, BUF));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        const struct way *w = &ways[i];
        CUdeviceptr a = rig_filled(BUF, 600), c = rig_filled(BUF, 601);
        struct one_node ga, gc;
        one_node_make(&ga, w->kind, step, a);
        one_node_make(&gc, w->kind, step, c);
        CUgraphExec e = exec_naming(w, &ga, &gc, s);
        for (int r = 0; r < 3; r++) {
            rig_squeeze(LIMIT - 2 * MiB);
            ck_assert_msg(rig_resident(c, BUF, 0) < BUF, "%s: nothing spilled", w->name);
            CU_OK(cuGraphLaunch(e, s));
            CU_OK(cuStreamSynchronize(s));
            ck_assert_msg(rig_resident(c, BUF, 0) == BUF,
                          "%s, replay %d: %zu of %zu bytes of the buffer it names on the device",
                          w->name, r, rig_resident(c, BUF, 0), BUF);
        }
        rig_expect_pattern(a, BUF, 600, "the buffer the graph named first");
        if (w->kind == MEMCPY)
            rig_expect_pattern(c, BUF, 601, "the buffer copied out");
        CU_OK(cuGraphExecDestroy(e));
        one_node_free(&ga);
        one_node_free(&gc);
        CU_OK(cuMemFree(a));
        CU_OK(cuMemFree(c));
        CU_OK(cuCtxSynchronize());
    }
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost(sink));
}
END_TEST

void capture_exec_naming_tests(TCase *tc)
{
    tcase_add_test(tc, every_way_of_naming_a_buffer_fills_it_at_replay);
}
