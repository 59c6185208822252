/* fakecuda: changing an executable graph: its nodes' parameters (each
 * type's cuGraphExec*NodeSetParams, CUDA 12.2's cuGraphExecNodeSetParams),
 * nodes enabled and disabled, and cuGraphExecUpdate. Launches already
 * queued keep what they had (graph_launch.c). */
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/graph.h"

/* ---- changing an executable graph ----------------------------------------- */

/* Under the graph lock. */
struct CUgraphNode_st *fc_exec_node(struct CUgraphExec_st *x, CUgraphNode n, int type)
{
    if (!fc_exec_known(x))
        return NULL;
    for (struct CUgraphNode_st *c = x->g->head; c; c = c->next)
        if (c->orig == n && (type < 0 || c->type == (CUgraphNodeType)type))
            return c;
    return NULL;
}

static CUresult exec_kernel_set(CUgraphExec x, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, CU_GRAPH_NODE_TYPE_KERNEL);
    r = c ? fc_kernel_node_set(c, p) : CUDA_ERROR_INVALID_VALUE;
    fc_graph_unlock();
    return r;
}

#undef cuGraphExecKernelNodeSetParams
FC_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec x, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphExecKernelNodeSetParams);
    return exec_kernel_set(x, n, p);
}

FC_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec x, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    FC_FAULT(cuGraphExecKernelNodeSetParams);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS q = fc_kernel_params_from_v1(p);
    return exec_kernel_set(x, n, &q);
}

/* A memcpy node keeps its memory types; a 2D memset its shape. */
static bool copy_compatible(const CUDA_MEMCPY3D *a, const CUDA_MEMCPY3D *b)
{
    return a->srcMemoryType == b->srcMemoryType && a->dstMemoryType == b->dstMemoryType;
}

static bool set_compatible(const CUDA_MEMSET_NODE_PARAMS *a, const CUDA_MEMSET_NODE_PARAMS *b)
{
    if (a->height <= 1 && b->height <= 1)
        return a->elementSize == b->elementSize;
    return a->elementSize == b->elementSize && a->width == b->width && a->height == b->height &&
           a->pitch == b->pitch;
}

static CUresult exec_copy_set(CUgraphExec x, CUgraphNode n, const CUDA_MEMCPY3D *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fc_copy3d_check(p);
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, CU_GRAPH_NODE_TYPE_MEMCPY);
    r = c && copy_compatible(&c->u.copy.p, p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        c->u.copy.p = *p;
    fc_graph_unlock();
    return r;
}

FC_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec x, CUgraphNode n, const CUDA_MEMCPY3D *p,
                                                  CUcontext ctx)
{
    FC_FAULT(cuGraphExecMemcpyNodeSetParams);
    (void)ctx;
    return exec_copy_set(x, n, p);
}

static CUresult exec_set_set(CUgraphExec x, CUgraphNode n, const CUDA_MEMSET_NODE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fc_memset2d_check(p);
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, CU_GRAPH_NODE_TYPE_MEMSET);
    r = c && set_compatible(&c->u.set.p, p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        c->u.set.p = *p;
    fc_graph_unlock();
    return r;
}

FC_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec x, CUgraphNode n,
                                                  const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    FC_FAULT(cuGraphExecMemsetNodeSetParams);
    (void)ctx;
    return exec_set_set(x, n, p);
}

static CUresult exec_host_set(CUgraphExec x, CUgraphNode n, const CUDA_HOST_NODE_PARAMS *p)
{
    if (!p || !p->fn)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, CU_GRAPH_NODE_TYPE_HOST);
    if (c)
        c->u.host = *p;
    fc_graph_unlock();
    return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuGraphExecHostNodeSetParams(CUgraphExec x, CUgraphNode n, const CUDA_HOST_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphExecHostNodeSetParams);
    return exec_host_set(x, n, p);
}

/* Kernel, memcpy and memset nodes may be disabled (the driver's list). */
FC_EXPORT CUresult cuGraphNodeSetEnabled(CUgraphExec x, CUgraphNode n, unsigned int isEnabled)
{
    FC_FAULT(cuGraphNodeSetEnabled);
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, -1);
    bool ok = c && (c->type == CU_GRAPH_NODE_TYPE_KERNEL || c->type == CU_GRAPH_NODE_TYPE_MEMCPY ||
                    c->type == CU_GRAPH_NODE_TYPE_MEMSET);
    if (ok)
        c->disabled = !isEnabled;
    fc_graph_unlock();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuGraphNodeGetEnabled(CUgraphExec x, CUgraphNode n, unsigned int *isEnabled)
{
    FC_FAULT(cuGraphNodeGetEnabled);
    if (!isEnabled)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, -1);
    bool ok = c && (c->type == CU_GRAPH_NODE_TYPE_KERNEL || c->type == CU_GRAPH_NODE_TYPE_MEMCPY ||
                    c->type == CU_GRAPH_NODE_TYPE_MEMSET);
    if (ok)
        *isEnabled = !c->disabled;
    fc_graph_unlock();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- update ---------------------------------------------------------------- */

/* Under the graph lock: whether g can update x's graph xg (x's own, or
 * the copy of a child graph in it), pairing nodes in the order they were
 * added (how a re-capture of the same work pairs with the first); the
 * result as cuGraphExecUpdate reports it. */
static CUgraphExecUpdateResult compare(struct CUgraph_st *xg, struct CUgraph_st *g,
                                       CUgraphNode *err_node, CUgraphNode *err_from)
{
    *err_node = *err_from = NULL;
    if (xg->nnodes != g->nnodes)
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    fc_graph_number(xg);
    fc_graph_number(g);
    for (struct CUgraphNode_st *a = xg->head, *b = g->head; a && b; a = a->next, b = b->next) {
        if (a->type != b->type) {
            *err_node = b;
            return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
        }
        if (a->ndeps != b->ndeps) {
            *err_node = b;
            return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        }
        for (size_t j = 0; j < a->ndeps; j++)
            if (a->deps[j]->idx != b->deps[j]->idx) {
                *err_node = b;
                *err_from = b->deps[j];
                return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
            }
        bool ok = true;
        if (a->type == CU_GRAPH_NODE_TYPE_MEMCPY)
            ok = copy_compatible(&a->u.copy.p, &b->u.copy.p);
        else if (a->type == CU_GRAPH_NODE_TYPE_MEMSET)
            ok = set_compatible(&a->u.set.p, &b->u.set.p);
        else if (a->type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP)
            ok = fc_memop_node_compatible(&a->u.memop, &b->u.memop);
        else if (a->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || a->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
            ok = a->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ? a->u.alloc.mem == b->u.alloc.mem
                                                          : a->u.free_ptr == b->u.free_ptr;
        if (a->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) { /* not modelled: its bodies' update */
            *err_node = b;
            return CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
        }
        if (!ok) {
            *err_node = b;
            return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
        }
    }
    return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

static CUresult update(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!info)
        return CUDA_ERROR_INVALID_VALUE;
    memset(info, 0, sizeof *info);
    fc_graph_lock();
    if (!fc_exec_known(x) || !fc_graph_known(g)) {
        fc_graph_unlock();
        info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
        return CUDA_ERROR_INVALID_VALUE;
    }
    info->result = compare(x->g, g, &info->errorNode, &info->errorFromNode);
    if (info->result != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
        fc_graph_unlock();
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    /* Copy every payload first, so that running out of memory changes nothing. */
    struct CUgraphNode_st *fresh = calloc(g->nnodes + 1, sizeof *fresh);
    size_t done = 0;
    r = fresh ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    for (struct CUgraphNode_st *b = g->head; b && r == CUDA_SUCCESS; b = b->next, done++) {
        fresh[done].type = b->type;
        r = fc_node_payload_copy(&fresh[done], b);
    }
    size_t i = 0;
    for (struct CUgraphNode_st *a = x->g->head; a && r == CUDA_SUCCESS; a = a->next, i++) {
        struct CUgraphNode_st old = *a;
        a->u = fresh[i].u;
        if (a->type == CU_GRAPH_NODE_TYPE_KERNEL)
            fc_kernel_call_rebase(&a->u.kernel);
        fresh[i].u = old.u; /* the old payload goes below */
    }
    for (size_t k = 0; k < done; k++) {
        struct CUgraphNode_st *n = &fresh[k];
        if (r != CUDA_SUCCESS && k == done - 1)
            break; /* the copy that failed has nothing to free */
        fc_node_payload_free(n); /* a conditional node's bodies too */
    }
    free(fresh);
    fc_graph_unlock();
    if (r != CUDA_SUCCESS)
        info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
    return r;
}

#undef cuGraphExecUpdate
FC_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    FC_FAULT(cuGraphExecUpdate);
    return update(x, g, info);
}

/* The CUDA 10.2 ABI: the error node and the result apart. */
FC_EXPORT CUresult cuGraphExecUpdate(CUgraphExec x, CUgraph g, CUgraphNode *err_node,
                                     CUgraphExecUpdateResult *result)
{
    FC_FAULT(cuGraphExecUpdate);
    if (!err_node || !result)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphExecUpdateResultInfo info;
    CUresult r = update(x, g, &info);
    *err_node = info.errorNode;
    *result = info.result;
    return r;
}

/* ---- child graphs, and any node by its type ---------------------------------- */

/* "The topology of childGraph, as well as the node insertion order, must
 * match that of the graph contained in hNode" (cuGraphExecUpdate's
 * restrictions): x's copy of the child becomes a copy of childGraph;
 * launches already queued keep theirs. */
static CUresult exec_child_set(CUgraphExec x, CUgraphNode n, CUgraph child)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, CU_GRAPH_NODE_TYPE_GRAPH);
    CUgraphNode err_node, err_from;
    struct CUgraph_st *copy = NULL;
    if (!c || (!fc_graph_known(child) && !fc_graph_embedded(child)) ||
        compare(c->u.child, child, &err_node, &err_from) != CU_GRAPH_EXEC_UPDATE_SUCCESS)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!(copy = fc_graph_clone(child, true)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        fc_graph_free(c->u.child);
        c->u.child = copy;
    }
    fc_graph_unlock();
    return r;
}

FC_EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec x, CUgraphNode n, CUgraph child)
{
    FC_FAULT(cuGraphExecChildGraphNodeSetParams);
    return exec_child_set(x, n, child);
}

/* CUDA 12.2's one entry point for every type, as the type's own call.
 * Memory allocation and free nodes: "API unsupported". Event and external
 * semaphore nodes, which fakecuda's executable graphs cannot change,
 * answer NOT_SUPPORTED, one of the call's documented errors. */
FC_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec x, CUgraphNode n, CUgraphNodeParams *p)
{
    FC_FAULT(cuGraphExecNodeSetParams);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p || !fc_node_params_clear(p))
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, -1);
    bool same = c && c->type == p->type;
    fc_graph_unlock();
    if (!same)
        return CUDA_ERROR_INVALID_VALUE;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        CUDA_KERNEL_NODE_PARAMS k = fc_kernel_params_of(p);
        return exec_kernel_set(x, n, &k);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        if (p->memcpy.flags || p->memcpy.reserved)
            return CUDA_ERROR_INVALID_VALUE;
        return exec_copy_set(x, n, &p->memcpy.copyParams);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
        CUDA_MEMSET_NODE_PARAMS m = fc_memset_params_of(p);
        return exec_set_set(x, n, &m);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
        CUDA_HOST_NODE_PARAMS h = {.fn = p->host.fn, .userData = p->host.userData};
        return exec_host_set(x, n, &h);
    }
    case CU_GRAPH_NODE_TYPE_GRAPH:
        return exec_child_set(x, n, p->graph.graph);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: {
        CUDA_BATCH_MEM_OP_NODE_PARAMS m = fc_memop_params_of(p);
        return cuGraphExecBatchMemOpNodeSetParams(x, n, &m);
    }
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        return CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}
