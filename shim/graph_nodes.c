/* Graph nodes that copy, set or write and wait for values
 * (cuGraphAddMemcpyNode, cuGraphAddMemsetNode, CUDA 11.7's
 * cuGraphAddBatchMemOpNode and their SetParams, or CUDA 12.2's
 * cuGraphAddNode and cuGraphNodeSetParams for a node of these types). The
 * driver checks a node's ranges when it is added or given parameters (a
 * batch memory operation node's, if at all, as its reference does not
 * say), and a launch of the graph runs it unchecked; in pool memory, whose
 * pages around an allocation are mapped, it would accept a range past the
 * allocation's end, or in a freed one, and write over whatever is there at
 * every launch. So their ranges are checked first, as a copy's
 * (copy_range.h), a batch's operations as cuStreamBatchMemOp's
 * (spw_memop_sides); the executable graph's own setters do the same
 * (graphs.c). A conditional node made by cuGraphAddNode has its bodies
 * recorded (graph_cond.c). */
#include "shim/copy_range.h"
#include "shim/gate_use.h"
#include "shim/graph_cond.h"
#include "shim/handler.h"

CUresult spw_h_graph_add_memcpy_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                     size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_add_memcpy_node);
    CUresult r = spw_copy3d_range_check(copyParams);
    return r != CUDA_SUCCESS ? r : real(phGraphNode, hGraph, dependencies, numDependencies, copyParams, ctx);
}

CUresult spw_h_graph_memcpy_node_set_params(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_memcpy_node_set_params);
    CUresult r = spw_copy3d_range_check(nodeParams);
    return r != CUDA_SUCCESS ? r : real(hNode, nodeParams);
}

CUresult spw_h_graph_add_memset_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                     size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                     CUcontext ctx)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_add_memset_node);
    CUresult r = spw_memset_node_range_check(memsetParams);
    return r != CUDA_SUCCESS ? r : real(phGraphNode, hGraph, dependencies, numDependencies, memsetParams, ctx);
}

CUresult spw_h_graph_memset_node_set_params(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_memset_node_set_params);
    CUresult r = spw_memset_node_range_check(nodeParams);
    return r != CUDA_SUCCESS ? r : real(hNode, nodeParams);
}

CUresult spw_memops_range_check(const CUstreamBatchMemOpParams *ops, unsigned count)
{
    spw_sides s;
    spw_sides_init(&s);
    spw_memop_sides(&s, ops, count);
    return s.refused;
}

CUresult spw_h_graph_add_batch_mem_op_node(CUgraphNode *phGraphNode, CUgraph hGraph,
                                           const CUgraphNode *dependencies, size_t numDependencies,
                                           const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_add_batch_mem_op_node);
    CUresult r = nodeParams ? spw_memops_range_check(nodeParams->paramArray, nodeParams->count) : CUDA_SUCCESS;
    return r != CUDA_SUCCESS ? r : real(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

CUresult spw_h_graph_batch_mem_op_node_set_params(CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS *nodeParams)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_batch_mem_op_node_set_params);
    CUresult r = nodeParams ? spw_memops_range_check(nodeParams->paramArray, nodeParams->count) : CUDA_SUCCESS;
    return r != CUDA_SUCCESS ? r : real(hNode, nodeParams);
}

CUresult spw_node_params_range_check(const CUgraphNodeParams *p)
{
    if (p && p->type == CU_GRAPH_NODE_TYPE_MEMCPY)
        return spw_copy3d_range_check(&p->memcpy.copyParams);
    if (p && p->type == CU_GRAPH_NODE_TYPE_MEMSET)
        return spw_set2d_range_check(p->memset.dst, p->memset.pitch, p->memset.width, p->memset.height,
                                     p->memset.elementSize);
    if (p && p->type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP)
        return spw_memops_range_check(p->memOp.paramArray, p->memOp.count);
    return CUDA_SUCCESS;
}

/* A conditional node made: its bodies, which nothing reads back, are
 * recorded (graph_cond.c). */
static void made(CUresult r, const CUgraphNode *node, CUgraph graph, const CUgraphNodeParams *p)
{
    if (r == CUDA_SUCCESS && node && p && p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
        spw_graph_cond_made(*node, graph, &p->conditional);
}

CUresult spw_h_graph_add_node_v1(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                 size_t numDependencies, CUgraphNodeParams *nodeParams)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_add_node_v1);
    CUresult r = spw_node_params_range_check(nodeParams);
    if (r == CUDA_SUCCESS)
        made(r = real(phGraphNode, hGraph, dependencies, numDependencies, nodeParams), phGraphNode, hGraph,
             nodeParams);
    return r;
}

CUresult spw_h_graph_add_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                              const CUgraphEdgeData *dependencyData, size_t numDependencies,
                              CUgraphNodeParams *nodeParams)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_add_node);
    CUresult r = spw_node_params_range_check(nodeParams);
    if (r == CUDA_SUCCESS)
        made(r = real(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams),
             phGraphNode, hGraph, nodeParams);
    return r;
}

CUresult spw_h_graph_node_set_params(CUgraphNode hNode, CUgraphNodeParams *nodeParams)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_node_set_params);
    CUresult r = spw_node_params_range_check(nodeParams);
    return r != CUDA_SUCCESS ? r : real(hNode, nodeParams);
}
