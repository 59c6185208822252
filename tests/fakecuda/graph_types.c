/* fakecuda: each node type's own calls (the add, and the parameters'
 * getter and setter) for kernel, memcpy, memset, host, empty, child graph,
 * conditional and event nodes. Memory allocation and free nodes are
 * graph_alloc.c's, batch memory operation nodes graph_memop.c's;
 * cuGraphAddNode and cuGraphNodeSetParams (graph_node.c) reach each type
 * through its own call here. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/graph.h"

/* Both node-parameter ABIs: v1 lacks kern and ctx. */
static CUresult kernel_node(struct CUgraphNode_st **out, const CUDA_KERNEL_NODE_PARAMS *p)
{
    *out = NULL;
    if (!p || (p->kernelParams && p->extra)) /* "both ... non-NULL": INVALID_VALUE */
        return CUDA_ERROR_INVALID_VALUE;
    CUfunction f = p->func ? p->func : (CUfunction)(void *)p->kern;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_KERNEL);
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = fc_kernel_call_init(&n->u.kernel, f, (fakecuda_dim3){p->gridDimX, p->gridDimY, p->gridDimZ},
                                     (fakecuda_dim3){p->blockDimX, p->blockDimY, p->blockDimZ},
                                     p->sharedMemBytes, p->kernelParams, p->extra);
    if (r != CUDA_SUCCESS) {
        n->type = CU_GRAPH_NODE_TYPE_EMPTY; /* nothing of its own: no lock needed */
        fc_node_free(n);
        return r == CUDA_ERROR_INVALID_HANDLE ? CUDA_ERROR_INVALID_VALUE : r;
    }
    n->u.kernel.kern = p->func ? NULL : p->kern;
    n->u.kernel.ctx = p->ctx;
    *out = n;
    return CUDA_SUCCESS;
}

CUDA_KERNEL_NODE_PARAMS fc_kernel_params_from_v1(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    CUDA_KERNEL_NODE_PARAMS q;
    memset(&q, 0, sizeof q);
    q.func = p->func;
    q.gridDimX = p->gridDimX;
    q.gridDimY = p->gridDimY;
    q.gridDimZ = p->gridDimZ;
    q.blockDimX = p->blockDimX;
    q.blockDimY = p->blockDimY;
    q.blockDimZ = p->blockDimZ;
    q.sharedMemBytes = p->sharedMemBytes;
    q.kernelParams = p->kernelParams;
    q.extra = p->extra;
    return q;
}

#undef cuGraphAddKernelNode
#undef cuGraphKernelNodeGetParams
#undef cuGraphKernelNodeSetParams

static CUresult add_kernel_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *n;
    if ((r = kernel_node(&n, p)) != CUDA_SUCCESS)
        return r;
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                           size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphAddKernelNode);
    return add_kernel_node(out, g, deps, ndeps, p);
}

FC_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                        size_t ndeps, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    FC_FAULT(cuGraphAddKernelNode);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS q = fc_kernel_params_from_v1(p);
    return add_kernel_node(out, g, deps, ndeps, &q);
}

/* Under glock. */
struct CUgraphNode_st *fc_node_of(CUgraphNode n, CUgraphNodeType type)
{
    return fc_node_known(n) && n->type == type ? n : NULL;
}

/* The Get/SetParams of nodes whose parameters are one plain struct: copies
 * size bytes out of (or into) the member at offset off of a known node of
 * that type, under the graph lock; INVALID_VALUE for another node, as the
 * driver. */
CUresult fc_node_copy(CUgraphNode hNode, CUgraphNodeType type, size_t off, void *buf, size_t size,
                      bool set)
{
    if (!buf)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *n = fc_node_of(hNode, type);
    if (n && set)
        memcpy((char *)n + off, buf, size);
    else if (n)
        memcpy(buf, (const char *)n + off, size);
    fc_graph_unlock();
    return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult kernel_get(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *n = fc_node_of(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    if (n) {
        const struct fc_kernel_call *k = &n->u.kernel;
        memset(p, 0, sizeof *p);
        p->func = k->kern ? NULL : k->func;
        p->kern = k->kern;
        p->ctx = k->ctx;
        p->gridDimX = k->grid.x;
        p->gridDimY = k->grid.y;
        p->gridDimZ = k->grid.z;
        p->blockDimX = k->block.x;
        p->blockDimY = k->block.y;
        p->blockDimZ = k->block.z;
        p->sharedMemBytes = k->shmem;
        /* Node-owned, valid until the node changes or goes, as documented. */
        p->kernelParams = k->via_extra ? NULL : (void **)k->params;
        p->extra = k->via_extra ? (void **)k->extra : NULL;
    }
    fc_graph_unlock();
    return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphKernelNodeGetParams);
    return kernel_get(n, p);
}

FC_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    FC_FAULT(cuGraphKernelNodeGetParams);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS q;
    CUresult r = kernel_get(n, &q);
    if (r == CUDA_SUCCESS) {
        memset(p, 0, sizeof *p);
        p->func = q.func ? q.func : (CUfunction)(void *)q.kern;
        p->gridDimX = q.gridDimX;
        p->gridDimY = q.gridDimY;
        p->gridDimZ = q.gridDimZ;
        p->blockDimX = q.blockDimX;
        p->blockDimY = q.blockDimY;
        p->blockDimZ = q.blockDimZ;
        p->sharedMemBytes = q.sharedMemBytes;
        p->kernelParams = q.kernelParams;
        p->extra = q.extra;
    }
    return r;
}

/* Replaces a kernel node's parameters (graph or executable graph node). */
CUresult fc_kernel_node_set(struct CUgraphNode_st *n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    struct CUgraphNode_st *x;
    CUresult r = kernel_node(&x, p);
    if (r != CUDA_SUCCESS)
        return r;
    fc_kernel_call_free(&n->u.kernel);
    n->u.kernel = x->u.kernel; /* moved: the node's arrays must point at it */
    fc_kernel_call_rebase(&n->u.kernel);
    x->type = CU_GRAPH_NODE_TYPE_EMPTY;
    fc_node_free(x);
    return CUDA_SUCCESS;
}

static CUresult kernel_set(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *n = fc_node_of(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    r = n ? fc_kernel_node_set(n, p) : CUDA_ERROR_INVALID_VALUE;
    fc_graph_unlock();
    return r;
}

FC_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphKernelNodeSetParams);
    return kernel_set(n, p);
}

FC_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    FC_FAULT(cuGraphKernelNodeSetParams);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS q = fc_kernel_params_from_v1(p);
    return kernel_set(n, &q);
}

FC_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                        size_t ndeps, const CUDA_MEMCPY3D *p, CUcontext ctx)
{
    FC_FAULT(cuGraphAddMemcpyNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = fc_copy3d_check(p)) != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEMCPY);
    if (n) {
        n->u.copy.p = *p;
        n->u.copy.ctx = ctx;
    }
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *p)
{
    FC_FAULT(cuGraphMemcpyNodeGetParams);
    return FC_NODE_GET(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, u.copy.p, p);
}

FC_EXPORT CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *p)
{
    FC_FAULT(cuGraphMemcpyNodeSetParams);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fc_copy3d_check(p);
    if (r != CUDA_SUCCESS)
        return r;
    return FC_NODE_SET(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, u.copy.p, p);
}

FC_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                        size_t ndeps, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    FC_FAULT(cuGraphAddMemsetNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx && !fc_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((r = fc_memset2d_check(p)) != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEMSET);
    if (n) {
        n->u.set.p = *p;
        n->u.set.ctx = ctx;
    }
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphMemsetNodeGetParams);
    return FC_NODE_GET(hNode, CU_GRAPH_NODE_TYPE_MEMSET, u.set.p, p);
}

FC_EXPORT CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphMemsetNodeSetParams);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fc_memset2d_check(p);
    if (r != CUDA_SUCCESS)
        return r;
    return FC_NODE_SET(hNode, CU_GRAPH_NODE_TYPE_MEMSET, u.set.p, p);
}

FC_EXPORT CUresult cuGraphAddHostNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                      size_t ndeps, const CUDA_HOST_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphAddHostNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p || !p->fn)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_HOST);
    if (n)
        n->u.host = *p;
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphHostNodeGetParams);
    return FC_NODE_GET(hNode, CU_GRAPH_NODE_TYPE_HOST, u.host, p);
}

FC_EXPORT CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphHostNodeSetParams);
    if (!p || !p->fn)
        return CUDA_ERROR_INVALID_VALUE;
    return FC_NODE_SET(hNode, CU_GRAPH_NODE_TYPE_HOST, u.host, p);
}

FC_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps)
{
    FC_FAULT(cuGraphAddEmptyNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    return fc_graph_add_node(out, g, deps, ndeps, fc_node_new(CU_GRAPH_NODE_TYPE_EMPTY));
}

/* The node keeps a copy of the child graph: the program may destroy its own. */
FC_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                            size_t ndeps, CUgraph child)
{
    FC_FAULT(cuGraphAddChildGraphNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *n = NULL;
    if (!fc_graph_known(child) || child == g || fc_graph_has_mem_nodes(child) ||
        fc_graph_has_conditionals(child)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if ((n = fc_node_new(CU_GRAPH_NODE_TYPE_GRAPH)) != NULL &&
               !(n->u.child = fc_graph_clone(child, true))) {
        fc_node_free(n);
        n = NULL;
    }
    fc_graph_unlock();
    return r != CUDA_SUCCESS ? r : fc_graph_add_node(out, g, deps, ndeps, n);
}

/* A conditional node: the handle one created for g or a graph g is a
 * body of (recursively: "associated with a conditional node in this graph
 * or one of its children"), for ctx ("must match context used to create
 * the handle"); size 1 for WHILE, 1 or 2 for IF, any above 0 for SWITCH.
 * Its bodies are empty graphs the node owns, written to phGraph_out (the
 * node's own array, valid as long as the node). */
CUresult fc_graph_add_conditional(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                  CUDA_CONDITIONAL_NODE_PARAMS *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    bool size_ok = p->type == CU_GRAPH_COND_TYPE_WHILE    ? p->size == 1
                   : p->type == CU_GRAPH_COND_TYPE_IF     ? p->size == 1 || p->size == 2
                   : p->type == CU_GRAPH_COND_TYPE_SWITCH ? p->size > 0
                                                          : false;
    struct fc_cond_handle *h = fc_cond_handle_of(p->handle);
    CUcontext ctx = p->ctx ? p->ctx : fc_ctx_top();
    if (!size_ok || !h || ctx != fc_cond_handle_ctx(h))
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    bool ok = fc_graph_open(g);
    bool mine = false;
    for (struct CUgraph_st *a = ok ? g : NULL; a && !mine; a = a->owner ? a->owner->graph : NULL)
        mine = a == fc_cond_handle_graph(h);
    struct CUgraphNode_st *n = ok && mine ? fc_node_new(CU_GRAPH_NODE_TYPE_CONDITIONAL) : NULL;
    if (n) {
        n->u.cond.handle = h;
        n->u.cond.type = p->type;
        n->u.cond.body = calloc(p->size, sizeof *n->u.cond.body);
        for (unsigned b = 0; n->u.cond.body && b < p->size; b++) {
            if (!(n->u.cond.body[b] = fc_graph_new(true)))
                break;
            n->u.cond.body[b]->owner = n;
            n->u.cond.size = b + 1; /* what fc_node_payload_free frees */
        }
        r = n->u.cond.size == p->size ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (n && r != CUDA_SUCCESS) {
        fc_node_free(n);
        n = NULL;
    }
    fc_graph_unlock();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ok || !mine)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraph *body = n ? n->u.cond.body : NULL;
    if ((r = fc_graph_add_node(out, g, deps, ndeps, n)) == CUDA_SUCCESS)
        p->phGraph_out = body;
    return r;
}

/* The node's own graph, not a copy: what the program reads of it (its
 * nodes, their parameters, its edges) is the node's. fakecuda lets only
 * those queries and parameter changes through on it, not new nodes. */
FC_EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph)
{
    FC_FAULT(cuGraphChildGraphNodeGetGraph);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!phGraph)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *n = fc_node_of(hNode, CU_GRAPH_NODE_TYPE_GRAPH);
    if (n)
        *phGraph = n->u.child;
    fc_graph_unlock();
    return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult add_event_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                               CUevent e, CUgraphNodeType type)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (fc_event_check(e) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *n = fc_node_new(type);
    if (n)
        n->u.event = e;
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                             size_t ndeps, CUevent e)
{
    FC_FAULT(cuGraphAddEventRecordNode);
    return add_event_node(out, g, deps, ndeps, e, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

FC_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                           size_t ndeps, CUevent e)
{
    FC_FAULT(cuGraphAddEventWaitNode);
    return add_event_node(out, g, deps, ndeps, e, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

static CUresult event_of(CUgraphNode hNode, CUgraphNodeType type, CUevent *e)
{
    return FC_NODE_GET(hNode, type, u.event, e);
}

FC_EXPORT CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode n, CUevent *e)
{
    FC_FAULT(cuGraphEventRecordNodeGetEvent);
    return event_of(n, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e);
}

FC_EXPORT CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode n, CUevent *e)
{
    FC_FAULT(cuGraphEventWaitNodeGetEvent);
    return event_of(n, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e);
}
