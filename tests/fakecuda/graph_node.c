/* fakecuda: CUDA 12.2's one entry point for adding a node of any type
 * (cuGraphAddNode, and 12.3's _v2 with edge data) and for giving a node new
 * parameters (cuGraphNodeSetParams). Each type is the type's own call
 * (graph_types.c, graph_alloc.c, graph_memop.c), so both ways of making a
 * node check and behave alike, as the driver documents them. What fakecuda
 * does not model answers CUDA_ERROR_NOT_SUPPORTED, one of the calls'
 * documented errors: external semaphore nodes (it has none of their own
 * calls either), new parameters for a conditional node (graph_cond.c has
 * the nodes), a child graph moved into its parent
 * (CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE, CUDA 12.9), and new events for
 * event nodes. Edge data is accepted and ignored, as
 * cuGraphAddDependencies_v2 does here. */
#include <string.h>

#include "tests/fakecuda/graph.h"

#undef cuGraphAddNode
CUresult CUDAAPI cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                size_t numDependencies, CUgraphNodeParams *nodeParams);

/* "All unused bytes - that is, reserved0 and all bytes past the utilized
 * union member - must be set to zero": the reserved fields are checked. */
bool fc_node_params_clear(const CUgraphNodeParams *p)
{
    return !p->reserved0[0] && !p->reserved0[1] && !p->reserved0[2] && !p->reserved2;
}

CUDA_KERNEL_NODE_PARAMS fc_kernel_params_of(const CUgraphNodeParams *p)
{
    CUDA_KERNEL_NODE_PARAMS k;
    memset(&k, 0, sizeof k);
    k.func = p->kernel.func;
    k.gridDimX = p->kernel.gridDimX;
    k.gridDimY = p->kernel.gridDimY;
    k.gridDimZ = p->kernel.gridDimZ;
    k.blockDimX = p->kernel.blockDimX;
    k.blockDimY = p->kernel.blockDimY;
    k.blockDimZ = p->kernel.blockDimZ;
    k.sharedMemBytes = p->kernel.sharedMemBytes;
    k.kernelParams = p->kernel.kernelParams;
    k.extra = p->kernel.extra;
    k.kern = p->kernel.kern;
    k.ctx = p->kernel.ctx;
    return k;
}

CUDA_MEMSET_NODE_PARAMS fc_memset_params_of(const CUgraphNodeParams *p)
{
    return (CUDA_MEMSET_NODE_PARAMS){.dst = p->memset.dst, .pitch = p->memset.pitch,
                                     .value = p->memset.value, .elementSize = p->memset.elementSize,
                                     .width = p->memset.width, .height = p->memset.height};
}

/* CUDA 12.2's _v2 of the parameters: the same fields as the type's own. */
CUDA_BATCH_MEM_OP_NODE_PARAMS fc_memop_params_of(const CUgraphNodeParams *p)
{
    return (CUDA_BATCH_MEM_OP_NODE_PARAMS){.ctx = p->memOp.ctx, .count = p->memOp.count,
                                           .paramArray = p->memOp.paramArray, .flags = p->memOp.flags};
}

/* The node, by the type's own call; alloc.dptr is written back. */
static CUresult add_typed(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                          CUgraphNodeParams *p)
{
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        CUDA_KERNEL_NODE_PARAMS k = fc_kernel_params_of(p);
        return cuGraphAddKernelNode_v2(out, g, deps, ndeps, &k);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        if (p->memcpy.flags || p->memcpy.reserved)
            return CUDA_ERROR_INVALID_VALUE;
        return cuGraphAddMemcpyNode(out, g, deps, ndeps, &p->memcpy.copyParams, p->memcpy.copyCtx);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
        CUDA_MEMSET_NODE_PARAMS m = fc_memset_params_of(p);
        return cuGraphAddMemsetNode(out, g, deps, ndeps, &m, p->memset.ctx);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
        CUDA_HOST_NODE_PARAMS h = {.fn = p->host.fn, .userData = p->host.userData};
        return cuGraphAddHostNode(out, g, deps, ndeps, &h);
    }
    case CU_GRAPH_NODE_TYPE_GRAPH:
        if (p->graph.ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE)
            return CUDA_ERROR_NOT_SUPPORTED;
        if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE)
            return CUDA_ERROR_INVALID_VALUE;
        return cuGraphAddChildGraphNode(out, g, deps, ndeps, p->graph.graph);
    case CU_GRAPH_NODE_TYPE_EMPTY:
        return cuGraphAddEmptyNode(out, g, deps, ndeps);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        return cuGraphAddEventRecordNode(out, g, deps, ndeps, p->eventRecord.event);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        return cuGraphAddEventWaitNode(out, g, deps, ndeps, p->eventWait.event);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
        CUDA_MEM_ALLOC_NODE_PARAMS a = {.poolProps = p->alloc.poolProps,
                                        .accessDescs = p->alloc.accessDescs,
                                        .accessDescCount = p->alloc.accessDescCount,
                                        .bytesize = p->alloc.bytesize};
        CUresult r = cuGraphAddMemAllocNode(out, g, deps, ndeps, &a);
        if (r == CUDA_SUCCESS)
            p->alloc.dptr = a.dptr;
        return r;
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        return cuGraphAddMemFreeNode(out, g, deps, ndeps, p->free.dptr);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
        return fc_graph_add_conditional(out, g, deps, ndeps, &p->conditional);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: {
        CUDA_BATCH_MEM_OP_NODE_PARAMS m = fc_memop_params_of(p);
        return cuGraphAddBatchMemOpNode(out, g, deps, ndeps, &m);
    }
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

static CUresult add_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                         CUgraphNodeParams *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p || !fc_node_params_clear(p))
        return CUDA_ERROR_INVALID_VALUE;
    return add_typed(out, g, deps, ndeps, p);
}

FC_EXPORT CUresult cuGraphAddNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                  CUgraphNodeParams *p)
{
    FC_FAULT(cuGraphAddNode);
    return add_node(out, g, deps, ndeps, p);
}

FC_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                     const CUgraphEdgeData *edata, size_t ndeps, CUgraphNodeParams *p)
{
    FC_FAULT(cuGraphAddNode);
    (void)edata;
    return add_node(out, g, deps, ndeps, p);
}

/* "The node type specified by nodeParams->type must match the type of
 * hNode"; allocation and free nodes cannot be changed. */
FC_EXPORT CUresult cuGraphNodeSetParams(CUgraphNode n, CUgraphNodeParams *p)
{
    FC_FAULT(cuGraphNodeSetParams);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    CUgraphNodeType t;
    if (!p || !fc_node_params_clear(p) || cuGraphNodeGetType(n, &t) != CUDA_SUCCESS || t != p->type)
        return CUDA_ERROR_INVALID_VALUE;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        CUDA_KERNEL_NODE_PARAMS k = fc_kernel_params_of(p);
        return cuGraphKernelNodeSetParams_v2(n, &k);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        if (p->memcpy.flags || p->memcpy.reserved)
            return CUDA_ERROR_INVALID_VALUE;
        return cuGraphMemcpyNodeSetParams(n, &p->memcpy.copyParams);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
        CUDA_MEMSET_NODE_PARAMS m = fc_memset_params_of(p);
        return cuGraphMemsetNodeSetParams(n, &m);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
        CUDA_HOST_NODE_PARAMS h = {.fn = p->host.fn, .userData = p->host.userData};
        return cuGraphHostNodeSetParams(n, &h);
    }
    case CU_GRAPH_NODE_TYPE_EMPTY:
        return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: {
        CUDA_BATCH_MEM_OP_NODE_PARAMS m = fc_memop_params_of(p);
        return cuGraphBatchMemOpNodeSetParams(n, &m);
    }
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        return CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}
