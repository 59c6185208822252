/* Batch memory operation graph nodes under spillway (cuGraphAddBatchMemOpNode,
 * its setters, and the type through cuGraphAddNode and the generic
 * setters) against fakecuda, whose nodes write and wait at every launch
 * what they were given when added:
 *
 *  - an operation whose value lies in a freed pool allocation, or whose 4
 *    or 8 bytes run past an allocation's end, is refused with
 *    CUDA_ERROR_INVALID_VALUE by every call that adds a node or gives it
 *    parameters, as a copy into that range is (the pool's pages around it
 *    are mapped: the driver alone would accept it and write, at every
 *    launch, into whatever the pool put there since); the node keeps its
 *    parameters and launches write nothing else;
 *  - a valid node launches and writes its values, and a buffer it names
 *    that was squeezed out of the device is filled back before each
 *    launch, named by the graph's node, by the executable graph's setters
 *    or by an update (shim/graphs.c reads the node's operations);
 *  - stream memory operations captured from a stream (a batch memory
 *    operation node each, as the driver makes them: tests/gpu/README.md,
 *    item 22) are read the same way: a buffer they name, squeezed out
 *    before the capture and before every launch, is back on the device
 *    for each launch, the captured wait sees its content and the writes
 *    land.
 *
 * Run by graph_memops.sh: one 256 MiB device, a 64 MiB limit. */
#include "tests/integration/shim/rig.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT (64 * MiB)
#define BUF (4 * MiB)

/* CUDA 12.2's cuGraphAddNode, without edge data: cuda.h maps the name to
 * 12.3's _v2. */
#undef cuGraphAddNode
CUresult CUDAAPI cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                size_t numDependencies, CUgraphNodeParams *nodeParams);

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

static CUDA_BATCH_MEM_OP_NODE_PARAMS params(CUstreamBatchMemOpParams *ops, unsigned n, CUcontext ctx)
{
    return (CUDA_BATCH_MEM_OP_NODE_PARAMS){.ctx = ctx, .count = n, .paramArray = ops};
}

static CUgraphNodeParams generic(const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    CUgraphNodeParams g;
    memset(&g, 0, sizeof g);
    g.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
    g.memOp.ctx = p->ctx;
    g.memOp.count = p->count;
    g.memOp.paramArray = p->paramArray;
    return g;
}

static size_t nodes_of(CUgraph g)
{
    size_t n = 0;
    CU_OK(cuGraphGetNodes(g, NULL, &n));
    return n;
}

/* Every call that takes a node's operations refuses bad (node, a valid
 * node of g; x, an executable graph of g), adds nothing and leaves node's
 * parameters as they were (its first operation's address, at). */
static void refused_everywhere(CUgraph g, CUgraphNode node, CUgraphExec x, CUdeviceptr at,
                               const CUDA_BATCH_MEM_OP_NODE_PARAMS *bad, const char *what)
{
    size_t before = nodes_of(g);
    CUgraphNode n;
    CUgraphNodeParams gp = generic(bad);
    ck_assert_msg(cuGraphAddBatchMemOpNode(&n, g, NULL, 0, bad) == CUDA_ERROR_INVALID_VALUE,
                  "cuGraphAddBatchMemOpNode: %s", what);
    ck_assert_msg(cuGraphAddNode_v2(&n, g, NULL, NULL, 0, &gp) == CUDA_ERROR_INVALID_VALUE,
                  "cuGraphAddNode_v2: %s", what);
    ck_assert_msg(cuGraphAddNode(&n, g, NULL, 0, &gp) == CUDA_ERROR_INVALID_VALUE, "cuGraphAddNode: %s", what);
    ck_assert_uint_eq(nodes_of(g), before);
    ck_assert_msg(cuGraphBatchMemOpNodeSetParams(node, bad) == CUDA_ERROR_INVALID_VALUE,
                  "cuGraphBatchMemOpNodeSetParams: %s", what);
    ck_assert_msg(cuGraphNodeSetParams(node, &gp) == CUDA_ERROR_INVALID_VALUE, "cuGraphNodeSetParams: %s", what);
    ck_assert_msg(cuGraphExecBatchMemOpNodeSetParams(x, node, bad) == CUDA_ERROR_INVALID_VALUE,
                  "cuGraphExecBatchMemOpNodeSetParams: %s", what);
    ck_assert_msg(cuGraphExecNodeSetParams(x, node, &gp) == CUDA_ERROR_INVALID_VALUE,
                  "cuGraphExecNodeSetParams: %s", what);
    CUDA_BATCH_MEM_OP_NODE_PARAMS got;
    CU_OK(cuGraphBatchMemOpNodeGetParams(node, &got));
    ck_assert_uint_eq(got.paramArray[0].writeValue.address, at);
}

/* One valid node writing 32 bits at p: its graph, the node, an executable
 * graph of it. */
struct one {
    CUgraph g;
    CUgraphNode node;
    CUgraphExec x;
    CUstreamBatchMemOpParams op;
};

static void one_make(struct one *o, CUdeviceptr p, CUcontext ctx)
{
    o->op = write_op(p, 0x600d, false);
    CUDA_BATCH_MEM_OP_NODE_PARAMS np = params(&o->op, 1, ctx);
    CU_OK(cuGraphCreate(&o->g, 0));
    CU_OK(cuGraphAddBatchMemOpNode(&o->node, o->g, NULL, 0, &np));
    CU_OK(cuGraphInstantiateWithFlags(&o->x, o->g, 0));
}

static void one_free(struct one *o)
{
    CU_OK(cuGraphExecDestroy(o->x));
    CU_OK(cuGraphDestroy(o->g));
}

static uint32_t word_at(CUdeviceptr p)
{
    uint32_t w;
    CU_OK(cuMemcpyDtoH(&w, p, sizeof w));
    return w;
}

/* A pool allocation freed (its neighbour keeps the page mapped): a write
 * or a wait there is refused, alone or as a node's second operation; the
 * valid node's launch writes its own word only, and an allocation made
 * since (which the pool may place in the freed block) is untouched. */
START_TEST(operations_on_freed_pool_memory_are_refused)
{
    CUcontext ctx = rig_setup(0);
    CUdeviceptr gone, kept;
    CU_OK(cuMemAlloc(&gone, MiB));
    CU_OK(cuMemAlloc(&kept, MiB));
    CU_OK(cuMemsetD32(kept, 0, MiB / 4));
    CU_OK(cuMemFree(gone));
    struct one o;
    one_make(&o, kept, ctx);
    CUstreamBatchMemOpParams w32 = write_op(gone, 1, false), w64 = write_op(gone + 8, 2, true);
    CUstreamBatchMemOpParams wait;
    memset(&wait, 0, sizeof wait);
    wait.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    wait.waitValue.address = gone;
    wait.waitValue.value = 1;
    CUstreamBatchMemOpParams second[2] = {write_op(kept + 64, 3, false), write_op(gone, 4, false)};
    CUDA_BATCH_MEM_OP_NODE_PARAMS p32 = params(&w32, 1, ctx), p64 = params(&w64, 1, ctx),
                                  pwait = params(&wait, 1, ctx), psecond = params(second, 2, ctx);
    refused_everywhere(o.g, o.node, o.x, kept, &p32, "a 32-bit write to freed memory");
    refused_everywhere(o.g, o.node, o.x, kept, &p64, "a 64-bit write to freed memory");
    refused_everywhere(o.g, o.node, o.x, kept, &pwait, "a wait on freed memory");
    refused_everywhere(o.g, o.node, o.x, kept, &psecond, "a second operation on freed memory");

    CU_OK(cuCtxSynchronize()); /* the freed block is the pool's to hand out again */
    CUdeviceptr again;
    CU_OK(cuMemAlloc(&again, MiB));
    CU_OK(cuMemsetD32(again, 0x77777777u, MiB / 4));
    CU_OK(cuGraphLaunch(o.x, NULL));
    CU_OK(cuCtxSynchronize());
    ck_assert_uint_eq(word_at(kept), 0x600d);
    ck_assert_uint_eq(word_at(kept + 64), 0);
    uint32_t *back = malloc(MiB);
    ck_assert_ptr_nonnull(back);
    CU_OK(cuMemcpyDtoH(back, again, MiB));
    for (size_t i = 0; i < MiB / 4; i++)
        ck_assert_msg(back[i] == 0x77777777u, "word %zu of the allocation made since: %#x", i, back[i]);
    free(back);
    one_free(&o);
    CU_OK(cuMemFree(again));
    CU_OK(cuMemFree(kept));
}
END_TEST

/* An allocation of 4101 bytes: a 32-bit value at 4100 and a 64-bit one at
 * 4096 run past its end (into the pool's next bytes), a 32-bit one at
 * 4096 and a 64-bit one at 4088 do not: each operation's own width is
 * what is checked. */
START_TEST(operations_past_an_allocation_are_refused)
{
    CUcontext ctx = rig_setup(0);
    const size_t size = 4096 + 5;
    CUdeviceptr p, next;
    CU_OK(cuMemAlloc(&p, size));
    CU_OK(cuMemAlloc(&next, 4096));
    CU_OK(cuMemsetD8(p, 0, size));
    CU_OK(cuMemsetD8(next, 0, 4096));
    struct one o;
    one_make(&o, p, ctx);
    CUstreamBatchMemOpParams w32 = write_op(p + 4100, 1, false), w64 = write_op(p + 4096, 2, true);
    CUstreamBatchMemOpParams second[2] = {write_op(p + 4, 3, false), write_op(p + 4096, 4, true)};
    CUDA_BATCH_MEM_OP_NODE_PARAMS p32 = params(&w32, 1, ctx), p64 = params(&w64, 1, ctx),
                                  psecond = params(second, 2, ctx);
    refused_everywhere(o.g, o.node, o.x, p, &p32, "a 32-bit write past the end");
    refused_everywhere(o.g, o.node, o.x, p, &p64, "a 64-bit write past the end");
    refused_everywhere(o.g, o.node, o.x, p, &psecond, "a second operation past the end");

    /* Up to the end: accepted, and the launch writes them in order. */
    CUstreamBatchMemOpParams last[3] = {write_op(p + 4096, 0x1234, false), write_op(p + 4092, 0x4321, false),
                                        write_op(p + 4088, 0x55aa, true)};
    CUDA_BATCH_MEM_OP_NODE_PARAMS plast = params(last, 3, ctx);
    CUgraphNode n;
    CU_OK(cuGraphAddBatchMemOpNode(&n, o.g, &o.node, 1, &plast));
    CUgraphExec x;
    CU_OK(cuGraphInstantiateWithFlags(&x, o.g, 0));
    CU_OK(cuGraphLaunch(x, NULL));
    CU_OK(cuCtxSynchronize());
    uint64_t w;
    CU_OK(cuMemcpyDtoH(&w, p + 4088, sizeof w));
    ck_assert_uint_eq(w, 0x55aa); /* the 64-bit write came after the 32-bit one at 4092 */
    ck_assert_uint_eq(word_at(p + 4096), 0x1234);
    ck_assert_uint_eq(word_at(p), 0x600d);
    unsigned char tail[4096];
    CU_OK(cuMemcpyDtoH(tail, next, sizeof tail));
    for (size_t i = 0; i < sizeof tail; i++)
        ck_assert_msg(tail[i] == 0, "byte %zu of the next allocation: %#x", i, tail[i]);
    CU_OK(cuGraphExecDestroy(x));
    one_free(&o);
    CU_OK(cuMemFree(next));
    CU_OK(cuMemFree(p));
}
END_TEST

/* The operations of a node naming buffer b: a 32-bit value at its start,
 * a 64-bit one at its end. */
static void ops_naming(CUstreamBatchMemOpParams ops[2], CUdeviceptr b)
{
    ops[0] = write_op(b, 0xa0a0a0a0u, false);
    ops[1] = write_op(b + BUF - 8, 0x0102030405060708ull, true);
}

enum way { BY_THE_NODE, EXEC_MEMOP_SET, EXEC_NODE_SET, EXEC_UPDATE };
static const char *const way_name[] = {"the graph's node", "cuGraphExecBatchMemOpNodeSetParams",
                                       "cuGraphExecNodeSetParams", "cuGraphExecUpdate"};

/* However an executable graph came to name buffer c by a batch memory
 * operation node (its graph's node, either executable graph setter, an
 * update from a graph whose node names c), c squeezed out of the device
 * before each launch is back on it after, with the node's values written
 * and the rest as it was. Fresh buffers each way: one used by many
 * launches would be hotter than a new one, which a fill would then leave
 * on the host (policy/fill.c). */
START_TEST(a_nodes_buffer_is_filled_back_at_launch)
{
    CUcontext ctx = rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (enum way w = BY_THE_NODE; w <= EXEC_UPDATE; w++) {
        CUdeviceptr a = rig_filled(BUF, 700), c = rig_filled(BUF, 701);
        CUstreamBatchMemOpParams ops[2], to_c[2];
        ops_naming(ops, w == BY_THE_NODE ? c : a);
        ops_naming(to_c, c);
        CUDA_BATCH_MEM_OP_NODE_PARAMS np = params(ops, 2, ctx), nc = params(to_c, 2, ctx);
        CUgraph g, gc;
        CUgraphNode node, node_c;
        CU_OK(cuGraphCreate(&g, 0));
        CU_OK(cuGraphAddBatchMemOpNode(&node, g, NULL, 0, &np));
        CU_OK(cuGraphCreate(&gc, 0));
        CU_OK(cuGraphAddBatchMemOpNode(&node_c, gc, NULL, 0, &nc));
        CUgraphExec x;
        CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
        CUgraphNodeParams gp = generic(&nc);
        CUgraphExecUpdateResultInfo info;
        if (w == EXEC_MEMOP_SET)
            CU_OK(cuGraphExecBatchMemOpNodeSetParams(x, node, &nc));
        else if (w == EXEC_NODE_SET)
            CU_OK(cuGraphExecNodeSetParams(x, node, &gp));
        else if (w == EXEC_UPDATE)
            CU_OK(cuGraphExecUpdate(x, gc, &info));
        for (int r = 0; r < 3; r++) {
            rig_squeeze(LIMIT - 2 * MiB);
            ck_assert_msg(rig_resident(c, BUF, 0) < BUF, "%s: nothing spilled", way_name[w]);
            CU_OK(cuGraphLaunch(x, s));
            CU_OK(cuStreamSynchronize(s));
            ck_assert_msg(rig_resident(c, BUF, 0) == BUF, "%s, launch %d: %zu of %zu bytes on the device",
                          way_name[w], r, rig_resident(c, BUF, 0), (size_t)BUF);
        }
        uint32_t *want = rig_expected(BUF, 701);
        want[0] = 0xa0a0a0a0u;
        uint64_t end = 0x0102030405060708ull;
        memcpy(&want[BUF / 4 - 2], &end, sizeof end);
        rig_expect_words(c, want, BUF, "the buffer the node wrote");
        free(want);
        if (w != BY_THE_NODE)
            rig_expect_pattern(a, BUF, 700, "the buffer the node named first");
        CU_OK(cuGraphExecDestroy(x));
        CU_OK(cuGraphDestroy(g));
        CU_OK(cuGraphDestroy(gc));
        CU_OK(cuMemFree(a));
        CU_OK(cuMemFree(c));
        CU_OK(cuCtxSynchronize());
    }
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* Captured, not added: a wait on a word of buffer c (its own content, EQ:
 * a launch that read anything else would never finish), a 32-bit write
 * at its start and a batch of one 64-bit write at its end, on a capturing
 * stream, with c squeezed out of the device before the capture (the
 * operations' fills wait for the capture's end: nothing may move during
 * one) and again before each launch. Every launch finds c on the device
 * and the captured writes land, the rest of c as it was. */
START_TEST(captured_operations_fill_their_buffer_back)
{
    rig_setup(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr c = rig_filled(BUF, 702);
    const size_t mid = BUF / 2;
    const uint32_t seen = rig_pattern(mid / 4, 702);
    CUstreamBatchMemOpParams end = write_op(c + BUF - 8, 0x0102030405060708ull, true);
    rig_squeeze(LIMIT - 2 * MiB);
    ck_assert_msg(rig_resident(c, BUF, 0) < BUF, "nothing spilled before the capture");
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamWaitValue32(s, c + mid, seen, CU_STREAM_WAIT_VALUE_EQ));
    CU_OK(cuStreamWriteValue32(s, c, 0xa0a0a0a0u, CU_STREAM_WRITE_VALUE_DEFAULT));
    CU_OK(cuStreamBatchMemOp(s, 1, &end, 0));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    ck_assert_uint_eq(nodes_of(g), 3);
    CUgraphExec x;
    CU_OK(cuGraphInstantiateWithFlags(&x, g, 0));
    for (int r = 0; r < 3; r++) {
        if (r) {
            rig_squeeze(LIMIT - 2 * MiB);
            ck_assert_msg(rig_resident(c, BUF, 0) < BUF, "launch %d: nothing spilled", r);
        }
        CU_OK(cuGraphLaunch(x, s));
        CU_OK(cuStreamSynchronize(s));
        ck_assert_msg(rig_resident(c, BUF, 0) == BUF, "launch %d: %zu of %zu bytes on the device", r,
                      rig_resident(c, BUF, 0), (size_t)BUF);
    }
    uint32_t *want = rig_expected(BUF, 702);
    want[0] = 0xa0a0a0a0u;
    uint64_t last = 0x0102030405060708ull;
    memcpy(&want[BUF / 4 - 2], &last, sizeof last);
    rig_expect_words(c, want, BUF, "the buffer the captured operations wrote");
    free(want);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(c));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_graph_memops");
    TCase *tc = tcase_create("graph_memops");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, operations_on_freed_pool_memory_are_refused);
    tcase_add_test(tc, operations_past_an_allocation_are_refused);
    tcase_add_test(tc, a_nodes_buffer_is_filled_back_at_launch);
    tcase_add_test(tc, captured_operations_fill_their_buffer_back);
    suite_add_tcase(s, tc);
    return s;
}
