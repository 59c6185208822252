/* Conformance: CUDA 12.2's entry points for a node of any type
 * (cuGraphAddNode, 12.3's with edge data, cuGraphNodeSetParams). A graph
 * made through them runs as one made by each type's own call; a node's
 * parameters read back with the type's own getter are what was given; a
 * copy or set node that runs past its allocation is refused when it is
 * added or given parameters, by either way of making it (spillway checks
 * the same ranges in its pool before the driver: shim/graph_nodes.c).
 * Batch memory operation nodes (CUDA 11.7's own calls and cuGraphAddNode)
 * write at a launch what they were given, which they copied. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/driver/common.h"

static struct test_kernels k;

static void setup(void)
{
    driver_setup();
    kernels_load(&k);
}

static void CUDA_CB count_call(void *arg)
{
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

static CUgraphNodeParams copy_node(void *dst_host, CUdeviceptr dst_dev, const void *src_host,
                                   CUdeviceptr src_dev, size_t n)
{
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_MEMCPY;
    p.memcpy.copyCtx = test_ctx;
    CUDA_MEMCPY3D *c = &p.memcpy.copyParams;
    c->srcMemoryType = src_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    c->srcHost = src_host;
    c->srcDevice = src_dev;
    c->dstMemoryType = dst_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    c->dstHost = dst_host;
    c->dstDevice = dst_dev;
    c->WidthInBytes = n;
    c->Height = c->Depth = 1;
    return p;
}

static CUgraphNodeParams set_node(CUdeviceptr dst, unsigned value, size_t words)
{
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_MEMSET;
    p.memset.dst = dst;
    p.memset.value = value;
    p.memset.elementSize = 4;
    p.memset.width = words;
    p.memset.height = 1;
    p.memset.ctx = test_ctx;
    return p;
}

/* A chain like test_graph.c's graph built by hand, every node through
 * cuGraphAddNode: copy in, add 5 (kernel), set the first 16 words, an
 * empty node, a child graph that adds 1 to the last word's block, copy
 * out, a host call; then new parameters through cuGraphNodeSetParams. */
START_TEST(every_type_through_cuGraphAddNode)
{
    const size_t n = 4096;
    unsigned *in, *out;
    CU_OK(cuMemAllocHost((void **)&in, n * 4));
    CU_OK(cuMemAllocHost((void **)&out, n * 4));
    for (size_t i = 0; i < n; i++)
        in[i] = 3;
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, n * 4));
    CUgraph g, child;
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphCreate(&child, 0));

    CUgraphNode copy_in, add, set, empty, sub, copy_out, host, tail;
    CUgraphNodeParams cp = copy_node(NULL, p, in, 0, n * 4);
    CU_OK(cuGraphAddNode(&copy_in, g, NULL, NULL, 0, &cp));

    CUdeviceptr kp_ptr = p;
    unsigned kp_v = 5;
    unsigned long long kp_n = n;
    void *args[] = {&kp_ptr, &kp_v, &kp_n};
    CUgraphNodeParams kn;
    memset(&kn, 0, sizeof kn);
    kn.type = CU_GRAPH_NODE_TYPE_KERNEL;
    kn.kernel.func = k.add_u32;
    kn.kernel.gridDimX = 16;
    kn.kernel.gridDimY = kn.kernel.gridDimZ = 1;
    kn.kernel.blockDimX = 128;
    kn.kernel.blockDimY = kn.kernel.blockDimZ = 1;
    kn.kernel.kernelParams = args;
    CU_OK(cuGraphAddNode(&add, g, &copy_in, NULL, 1, &kn));
    kp_v = 1000; /* the node copied its arguments */

    CUgraphNodeParams sp = set_node(p, 77, 16);
    CU_OK(cuGraphAddNode(&set, g, &add, NULL, 1, &sp));

    CUgraphNodeParams en;
    memset(&en, 0, sizeof en);
    en.type = CU_GRAPH_NODE_TYPE_EMPTY;
    CUgraphEdgeData edge;
    memset(&edge, 0, sizeof edge); /* the default edge, given explicitly */
    CU_OK(cuGraphAddNode(&empty, g, &set, &edge, 1, &en));

    /* The child graph: a set of the last 16 words to 9. */
    CUgraphNode child_set;
    CUgraphNodeParams csp = set_node(p + (n - 16) * 4, 9, 16);
    CU_OK(cuGraphAddNode(&child_set, child, NULL, NULL, 0, &csp));
    CUgraphNodeParams gn;
    memset(&gn, 0, sizeof gn);
    gn.type = CU_GRAPH_NODE_TYPE_GRAPH;
    gn.graph.graph = child;
    gn.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE;
    CU_OK(cuGraphAddNode(&sub, g, &empty, NULL, 1, &gn));

    CUgraphNodeParams op = copy_node(out, 0, NULL, p, n * 4);
    CU_OK(cuGraphAddNode(&copy_out, g, &sub, NULL, 1, &op));

    int calls = 0;
    CUgraphNodeParams hn;
    memset(&hn, 0, sizeof hn);
    hn.type = CU_GRAPH_NODE_TYPE_HOST;
    hn.host.fn = count_call;
    hn.host.userData = &calls;
    CU_OK(cuGraphAddNode(&host, g, &copy_out, NULL, 1, &hn));

    /* Types as made, read back by each type's own call. */
    CUgraphNodeType t;
    CU_OK(cuGraphNodeGetType(add, &t));
    ck_assert_int_eq(t, CU_GRAPH_NODE_TYPE_KERNEL);
    CU_OK(cuGraphNodeGetType(sub, &t));
    ck_assert_int_eq(t, CU_GRAPH_NODE_TYPE_GRAPH);
    CU_OK(cuGraphNodeGetType(empty, &t));
    ck_assert_int_eq(t, CU_GRAPH_NODE_TYPE_EMPTY);
    CUDA_KERNEL_NODE_PARAMS got;
    memset(&got, 0, sizeof got);
    CU_OK(cuGraphKernelNodeGetParams(add, &got));
    ck_assert_ptr_eq(got.func, k.add_u32);
    ck_assert_uint_eq(*(CUdeviceptr *)got.kernelParams[0], p);
    ck_assert_uint_eq(*(unsigned *)got.kernelParams[1], 5);
    CUDA_MEMSET_NODE_PARAMS msg;
    CU_OK(cuGraphMemsetNodeGetParams(set, &msg));
    ck_assert_uint_eq(msg.value, 77);
    ck_assert_uint_eq(msg.dst, p);
    CUDA_MEMCPY3D cg;
    CU_OK(cuGraphMemcpyNodeGetParams(copy_out, &cg));
    ck_assert_ptr_eq(cg.dstHost, out);
    size_t count = 0;
    CU_OK(cuGraphGetNodes(g, NULL, &count));
    ck_assert_uint_eq(count, 7);

    /* A node of another type's parameters, and an unknown type: refused,
     * nothing added. */
    CU_ERR(cuGraphNodeSetParams(set, &cp), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphNodeSetParams(add, &sp), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddNode(&tail, g, NULL, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuGraphGetNodes(g, NULL, &count));
    ck_assert_uint_eq(count, 7);

    CUgraphExec x;
    CUstream s;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(calls, 1);
    ck_assert_uint_eq(out[0], 77);
    ck_assert_uint_eq(out[15], 77);
    ck_assert_uint_eq(out[16], 8);
    ck_assert_uint_eq(out[n - 17], 8);
    ck_assert_uint_eq(out[n - 1], 9);
    CU_OK(cuGraphExecDestroy(x));

    /* New parameters before the next instantiation are what it runs. */
    sp.memset.value = 78;
    CU_OK(cuGraphNodeSetParams(set, &sp));
    CU_OK(cuGraphMemsetNodeGetParams(set, &msg));
    ck_assert_uint_eq(msg.value, 78);
    kp_v = 6;
    CU_OK(cuGraphNodeSetParams(add, &kn));
    CU_OK(cuGraphNodeSetParams(copy_out, &op));
    CU_OK(cuGraphNodeSetParams(host, &hn));
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_int_eq(calls, 2);
    ck_assert_uint_eq(out[0], 78);
    ck_assert_uint_eq(out[16], 9);
    ck_assert_uint_eq(out[n - 1], 9);

    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuGraphDestroy(child));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFreeHost(in));
    CU_OK(cuMemFreeHost(out));
}
END_TEST

/* A graph allocation made through cuGraphAddNode comes back in the
 * parameters ("out parameters ... such as nodeParams->alloc.dptr") and is
 * freed by a free node made the same way. */
START_TEST(allocation_nodes_through_cuGraphAddNode)
{
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    CUgraphNodeParams an;
    memset(&an, 0, sizeof an);
    an.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    an.alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    an.alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    an.alloc.poolProps.location.id = 0;
    an.alloc.bytesize = 1 * MiB;
    CUgraphNode alloc, set, free_node;
    CU_OK(cuGraphAddNode(&alloc, g, NULL, NULL, 0, &an));
    ck_assert_uint_ne(an.alloc.dptr, 0);
    CUDA_MEM_ALLOC_NODE_PARAMS ag;
    CU_OK(cuGraphMemAllocNodeGetParams(alloc, &ag));
    ck_assert_uint_eq(ag.dptr, an.alloc.dptr);
    ck_assert_uint_eq(ag.bytesize, 1 * MiB);
    CUgraphNodeParams sp = set_node(an.alloc.dptr, 5, 1024);
    CU_OK(cuGraphAddNode(&set, g, &alloc, NULL, 1, &sp));
    CUgraphNodeParams fn;
    memset(&fn, 0, sizeof fn);
    fn.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
    fn.free.dptr = an.alloc.dptr;
    CU_OK(cuGraphAddNode(&free_node, g, &set, NULL, 1, &fn));
    CUdeviceptr freed = 0;
    CU_OK(cuGraphMemFreeNodeGetParams(free_node, &freed));
    ck_assert_uint_eq(freed, an.alloc.dptr);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, 0));
    CU_OK(cuStreamSynchronize(0));
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
}
END_TEST

/* One byte past the end cuMemGetAddressRange reports: refused when the
 * node is added or given parameters, by the type's own call and by
 * CUDA 12.2's; up to the end: accepted. A refused new parameter leaves the
 * node's. */
START_TEST(copy_and_set_nodes_past_an_allocation_are_refused)
{
    CUdeviceptr p, base;
    size_t size;
    CU_OK(cuMemAlloc(&p, 4096 + 3));
    CU_OK(cuMemGetAddressRange(&base, &size, p));
    printf("copy_and_set_nodes_past: cuMemAlloc(4099) reports %zu bytes\n", size);
    unsigned char *host = calloc(1, size + 1);
    ck_assert_ptr_nonnull(host);
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    CUgraphNode a, b;

    CUgraphNodeParams cp = copy_node(NULL, p, host, 0, size + 1);
    CU_ERR(cuGraphAddNode(&a, g, NULL, NULL, 0, &cp), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGraphAddMemcpyNode(&a, g, NULL, 0, &cp.memcpy.copyParams, test_ctx), CUDA_ERROR_INVALID_VALUE);
    cp = copy_node(host, 0, NULL, p + 1, size);
    CU_ERR(cuGraphAddNode(&a, g, NULL, NULL, 0, &cp), CUDA_ERROR_INVALID_VALUE);
    CUgraphNodeParams sp = set_node(p, 0, 0);
    sp.memset.elementSize = 1;
    sp.memset.width = size + 1;
    CU_ERR(cuGraphAddNode(&b, g, NULL, NULL, 0, &sp), CUDA_ERROR_INVALID_VALUE);
    size_t count = 1;
    CU_OK(cuGraphGetNodes(g, NULL, &count));
    ck_assert_uint_eq(count, 0);

    cp = copy_node(NULL, p, host, 0, size);
    CU_OK(cuGraphAddNode(&a, g, NULL, NULL, 0, &cp));
    sp.memset.width = size;
    CU_OK(cuGraphAddNode(&b, g, NULL, NULL, 0, &sp));
    CUgraphNodeParams past = copy_node(NULL, p + 1, host, 0, size);
    CU_ERR(cuGraphNodeSetParams(a, &past), CUDA_ERROR_INVALID_VALUE);
    CUgraphNodeParams set_past = sp;
    set_past.memset.dst = p + 1;
    CU_ERR(cuGraphNodeSetParams(b, &set_past), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY3D cg;
    CU_OK(cuGraphMemcpyNodeGetParams(a, &cg));
    ck_assert_uint_eq(cg.dstDevice, p);
    ck_assert_uint_eq(cg.WidthInBytes, size);
    CUDA_MEMSET_NODE_PARAMS msg;
    CU_OK(cuGraphMemsetNodeGetParams(b, &msg));
    ck_assert_uint_eq(msg.dst, p);

    CU_OK(cuGraphDestroy(g));
    free(host);
    CU_OK(cuMemFree(p));
}
END_TEST

/* ---- batch memory operation nodes ------------------------------------------ */

static CUstreamBatchMemOpParams write_op(CUdeviceptr a, uint64_t v, bool wide)
{
    CUstreamBatchMemOpParams op;
    memset(&op, 0, sizeof op);
    op.writeValue.operation = wide ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
    op.writeValue.address = a;
    if (wide)
        op.writeValue.value64 = v;
    else
        op.writeValue.value = (cuuint32_t)v;
    return op;
}

/* The 32-bit word at p and the 64-bit one at p + 8. */
static void expect_written(CUdeviceptr p, uint32_t w32, uint64_t w64)
{
    unsigned char back[16];
    CU_OK(cuMemcpyDtoH(back, p, sizeof back));
    uint32_t got32;
    uint64_t got64;
    memcpy(&got32, back, 4);
    memcpy(&got64, back + 8, 8);
    ck_assert_uint_eq(got32, w32);
    ck_assert_uint_eq(got64, w64);
}

static void launch_and_wait(CUgraph g, CUstream s)
{
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(x));
}

/* A 32- and a 64-bit write into cuMemAlloc memory: "the paramArray inside
 * nodeParams is copied" (the caller's array changed after the call changes
 * nothing), the getter's array is the node's own, the launch writes both
 * values; new parameters by cuGraphBatchMemOpNodeSetParams, and by
 * cuGraphExecBatchMemOpNodeSetParams ("addresses ... values" of writes may
 * change there; the graph's node stays as it was). 64-bit operations where
 * the device has them (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS). */
START_TEST(batch_memop_node_writes_its_values)
{
    int wide = 0;
    CU_OK(cuDeviceGetAttribute(&wide, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0));
    printf("batch_memop_node: 64-bit memory operations %s\n", wide ? "supported" : "not supported: 32-bit only");
    const uint64_t v64 = wide ? 0x0123456789abcdefull : 0;
    CUdeviceptr p, q;
    CU_OK(cuMemAlloc(&p, 64));
    CU_OK(cuMemAlloc(&q, 64));
    CU_OK(cuMemsetD8(p, 0, 64));
    CU_OK(cuMemsetD8(q, 0, 64));
    /* A set of device memory may still run when the call returns, on the
     * legacy stream, which the non-blocking stream below does not wait
     * for: done before any launch writes. */
    CU_OK(cuCtxSynchronize());
    CUstreamBatchMemOpParams ops[2] = {write_op(p, 0xa5a5a5a5u, false), write_op(p + 8, v64, true)};
    CUDA_BATCH_MEM_OP_NODE_PARAMS np = {.ctx = test_ctx, .count = wide ? 2 : 1, .paramArray = ops, .flags = 0};
    CUgraph g;
    CUgraphNode node;
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphAddBatchMemOpNode(&node, g, NULL, 0, &np));
    ops[0].writeValue.value = 1; /* copied: the node keeps what it was given */
    CUgraphNodeType t;
    CU_OK(cuGraphNodeGetType(node, &t));
    ck_assert_int_eq(t, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
    CUDA_BATCH_MEM_OP_NODE_PARAMS got;
    memset(&got, 0, sizeof got);
    CU_OK(cuGraphBatchMemOpNodeGetParams(node, &got));
    ck_assert_ptr_eq(got.ctx, test_ctx);
    ck_assert_uint_eq(got.count, np.count);
    ck_assert_ptr_nonnull(got.paramArray);
    ck_assert_ptr_ne(got.paramArray, ops);
    ck_assert_int_eq(got.paramArray[0].operation, CU_STREAM_MEM_OP_WRITE_VALUE_32);
    ck_assert_uint_eq(got.paramArray[0].writeValue.address, p);
    ck_assert_uint_eq(got.paramArray[0].writeValue.value, 0xa5a5a5a5u);
    if (wide) {
        ck_assert_int_eq(got.paramArray[1].operation, CU_STREAM_MEM_OP_WRITE_VALUE_64);
        ck_assert_uint_eq(got.paramArray[1].writeValue.address, p + 8);
        ck_assert_uint_eq(got.paramArray[1].writeValue.value64, v64);
    }
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    launch_and_wait(g, s);
    expect_written(p, 0xa5a5a5a5u, v64);

    /* New values for the graph's node: the next instantiation writes them. */
    ops[0].writeValue.value = 0x5a5a5a5au;
    ops[1].writeValue.value64 = wide ? ~v64 : 0;
    CU_OK(cuGraphBatchMemOpNodeSetParams(node, &np));
    CU_OK(cuGraphBatchMemOpNodeGetParams(node, &got));
    ck_assert_uint_eq(got.paramArray[0].writeValue.value, 0x5a5a5a5au);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_written(p, 0x5a5a5a5au, wide ? ~v64 : 0);

    /* The executable graph's node pointed at q: its launches write there. */
    CUstreamBatchMemOpParams to_q[2] = {write_op(q, 7, false), write_op(q + 8, wide ? 8 : 0, true)};
    CUDA_BATCH_MEM_OP_NODE_PARAMS nq = np;
    nq.paramArray = to_q;
    CU_OK(cuGraphExecBatchMemOpNodeSetParams(x, node, &nq));
    CU_OK(cuMemsetD8(p, 0, 64));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    expect_written(q, 7, wide ? 8 : 0);
    expect_written(p, 0, 0);
    CU_OK(cuGraphBatchMemOpNodeGetParams(node, &got));
    ck_assert_uint_eq(got.paramArray[0].writeValue.address, p);

    /* A clone's node has the operations, in an array of its own. */
    CUgraph c;
    CUgraphNode cn;
    CU_OK(cuGraphClone(&c, g));
    CU_OK(cuGraphNodeFindInClone(&cn, node, c));
    CUDA_BATCH_MEM_OP_NODE_PARAMS cg;
    CU_OK(cuGraphBatchMemOpNodeGetParams(cn, &cg));
    CU_OK(cuGraphBatchMemOpNodeGetParams(node, &got));
    ck_assert_uint_eq(cg.count, got.count);
    ck_assert_ptr_ne(cg.paramArray, got.paramArray);
    ck_assert_uint_eq(cg.paramArray[0].writeValue.value, 0x5a5a5a5au);
    CU_OK(cuGraphDestroy(c));

    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(q));
}
END_TEST

/* The same node through cuGraphAddNode and cuGraphNodeSetParams, and the
 * batch's order at a launch ("enqueued in the order they appear in the
 * array"): a wait on a host flag holds the write after it until the host
 * sets the flag. What the driver answers for an operation on pageable host
 * memory, and for a node of 256 operations (a stream batch "must be less
 * than 256"), is printed, not asserted: the reference states neither for
 * a node (tests/gpu/README.md). */
START_TEST(batch_memop_node_through_cuGraphAddNode)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 64));
    CU_OK(cuMemsetD8(p, 0, 64));
    struct flag f;
    flag_new(&f);
    CUstreamBatchMemOpParams ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    ops[0].waitValue.address = f.dev;
    ops[0].waitValue.value = 1;
    ops[0].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    ops[1] = write_op(p, 0x600d, false);
    CUgraphNodeParams np;
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
    np.memOp.ctx = test_ctx;
    np.memOp.count = 2;
    np.memOp.paramArray = ops;
    CUgraph g;
    CUgraphNode node;
    CU_OK(cuGraphCreate(&g, 0));
    CU_OK(cuGraphAddNode(&node, g, NULL, NULL, 0, &np));
    CUgraphNodeType t;
    CU_OK(cuGraphNodeGetType(node, &t));
    ck_assert_int_eq(t, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
    ops[1].writeValue.value = 0x600e;
    CU_OK(cuGraphNodeSetParams(node, &np));
    CUDA_BATCH_MEM_OP_NODE_PARAMS got;
    CU_OK(cuGraphBatchMemOpNodeGetParams(node, &got));
    ck_assert_uint_eq(got.count, 2);
    ck_assert_int_eq(got.paramArray[0].operation, CU_STREAM_MEM_OP_WAIT_VALUE_32);
    ck_assert_uint_eq(got.paramArray[1].writeValue.value, 0x600e);

    CUgraphExec x;
    CUstream s;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuGraphLaunch(x, s));
    expect_stream_pending(s);
    expect_u32(p, 0, 1);
    flag_release(&f);
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 0x600e, 1);

    static char pageable[64];
    CUstreamBatchMemOpParams host_op = write_op((CUdeviceptr)(uintptr_t)pageable, 1, false);
    CUDA_BATCH_MEM_OP_NODE_PARAMS hp = {.ctx = test_ctx, .count = 1, .paramArray = &host_op};
    CUgraphNode other;
    printf("batch_memop_node: an operation on pageable host memory: %d\n",
           (int)cuGraphAddBatchMemOpNode(&other, g, NULL, 0, &hp));
    CUstreamBatchMemOpParams many[256];
    for (int i = 0; i < 256; i++)
        many[i] = write_op(p, (uint64_t)i, false);
    CUDA_BATCH_MEM_OP_NODE_PARAMS mp = {.ctx = test_ctx, .count = 256, .paramArray = many};
    printf("batch_memop_node: a node of 256 operations: %d\n", (int)cuGraphAddBatchMemOpNode(&other, g, NULL, 0, &mp));

    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost((void *)f.host));
    CU_OK(cuMemFree(p));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_graph_node");
    TCase *tc = tcase_create("graph_node");
    tcase_add_checked_fixture(tc, setup, driver_teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, every_type_through_cuGraphAddNode);
    tcase_add_test(tc, allocation_nodes_through_cuGraphAddNode);
    tcase_add_test(tc, copy_and_set_nodes_past_an_allocation_are_refused);
    tcase_add_test(tc, batch_memop_node_writes_its_values);
    tcase_add_test(tc, batch_memop_node_through_cuGraphAddNode);
    suite_add_tcase(s, tc);
    return s;
}
