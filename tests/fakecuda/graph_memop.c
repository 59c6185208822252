/* fakecuda: batch memory operation nodes (CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
 * CUDA 11.7: cuGraphAddBatchMemOpNode, its getter and setter, and the
 * executable graph's setter; cuGraphAddNode and the generic setters reach
 * them through graph_node.c and graph_exec_update.c; a capture of stream
 * memory operations makes them too, memops.c). As the reference
 * describes them:
 *
 *  - their operations are cuStreamBatchMemOp's ("See cuStreamBatchMemOp
 *    ... for what these nodes can do"), checked as that call checks them
 *    (memops.c) when the node is added or given parameters; the reference
 *    names no rule of the node's own, so a batch's apply: fewer than 256
 *    operations, and the node's flags 0 as the batch's must be;
 *  - paramArray "is copied and therefore it can be freed after the call
 *    returns"; the getter hands back the node's copy ("owned by the node
 *    ... valid until the node is destroyed or its parameters are
 *    modified");
 *  - a launch runs them in order on its stream: writes stored, waits held
 *    until their condition holds, as a stream's (memops.c);
 *  - an executable graph's node takes new addresses, values and wait
 *    conditions, nothing else ("the context, count or type of operations
 *    ... may not be modified"), and its graph's node stays as it was.
 *
 * A context given must be a live one (the reference names no code for
 * another: INVALID_VALUE, one it lists); none given is the current one. */
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/graph.h"

/* p checked and copied into *m, which owns the copy. */
static CUresult take(const CUDA_BATCH_MEM_OP_NODE_PARAMS *p, struct fc_memop_node *m)
{
    if (!p || p->flags != 0 || (p->ctx && !fc_ctx_valid(p->ctx)))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fc_memops_check(p->paramArray, p->count);
    if (r != CUDA_SUCCESS)
        return r;
    struct fc_memop_node in = {p->paramArray, p->count, p->flags, p->ctx ? p->ctx : fc_ctx_top()};
    return fc_memop_node_copy(m, &in);
}

CUresult fc_memop_node_copy(struct fc_memop_node *dst, const struct fc_memop_node *src)
{
    *dst = *src;
    dst->ops = malloc(src->count * sizeof *dst->ops);
    if (!dst->ops) {
        dst->count = 0; /* nothing of its own to free */
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(dst->ops, src->ops, src->count * sizeof *dst->ops);
    return CUDA_SUCCESS;
}

void fc_memop_node_free(struct fc_memop_node *m)
{
    free(m->ops);
    m->ops = NULL;
    m->count = 0;
}

static bool is_wait(CUstreamBatchMemOpType t)
{
    return t == CU_STREAM_MEM_OP_WAIT_VALUE_32 || t == CU_STREAM_MEM_OP_WAIT_VALUE_64;
}

/* "op.waitValue.flags bits corresponding to wait type (i.e.
 * CU_STREAM_WAIT_VALUE_FLUSH bit cannot be modified)"; a write's flags are
 * not among what may change. */
bool fc_memop_node_compatible(const struct fc_memop_node *a, const struct fc_memop_node *b)
{
    if (a->count != b->count || a->ctx != b->ctx || a->flags != b->flags)
        return false;
    for (unsigned i = 0; i < a->count; i++) {
        const CUstreamBatchMemOpParams *x = &a->ops[i], *y = &b->ops[i];
        if (x->operation != y->operation)
            return false;
        if (is_wait(x->operation) ? (x->waitValue.flags ^ y->waitValue.flags) & CU_STREAM_WAIT_VALUE_FLUSH
                                  : x->writeValue.flags != y->writeValue.flags)
            return false;
    }
    return true;
}

FC_EXPORT CUresult cuGraphAddBatchMemOpNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                            size_t ndeps, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphAddBatchMemOpNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    struct fc_memop_node m;
    if ((r = take(p, &m)) != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
    if (n)
        n->u.memop = m;
    else
        fc_memop_node_free(&m);
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphBatchMemOpNodeGetParams(CUgraphNode hNode, CUDA_BATCH_MEM_OP_NODE_PARAMS *out)
{
    FC_FAULT(cuGraphBatchMemOpNodeGetParams);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *n = fc_node_of(hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
    if (n)
        *out = (CUDA_BATCH_MEM_OP_NODE_PARAMS){.ctx = n->u.memop.ctx, .count = n->u.memop.count,
                                               .paramArray = n->u.memop.ops, .flags = n->u.memop.flags};
    fc_graph_unlock();
    return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Node hNode (x's copy of it, or the graph's own when x is NULL) takes p's
 * operations, an executable graph's only those it may take; its old ones
 * are freed. */
static CUresult replace(struct CUgraphExec_st *x, CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    struct fc_memop_node m;
    if ((r = take(p, &m)) != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *n = x ? fc_exec_node(x, hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP)
                                 : fc_node_of(hNode, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
    bool ok = n && (!x || fc_memop_node_compatible(&n->u.memop, &m));
    if (ok) {
        struct fc_memop_node old = n->u.memop;
        n->u.memop = m;
        m = old;
    }
    fc_graph_unlock();
    fc_memop_node_free(&m);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuGraphBatchMemOpNodeSetParams(CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphBatchMemOpNodeSetParams);
    return replace(NULL, hNode, p);
}

/* "hNode is also not modified by this call": the executable graph's copy
 * of it is. */
FC_EXPORT CUresult cuGraphExecBatchMemOpNodeSetParams(CUgraphExec x, CUgraphNode hNode,
                                                      const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphExecBatchMemOpNodeSetParams);
    if (!x)
        return CUDA_ERROR_INVALID_VALUE;
    return replace(x, hNode, p);
}
