/* Graph nodes that copy or set (cuGraphAddMemcpyNode,
 * cuGraphAddMemsetNode and their SetParams). The driver checks a node's
 * ranges when it is added or given parameters, and a launch of the graph
 * runs it unchecked; in pool memory, whose pages around an allocation are
 * mapped, it would accept a range past the allocation's end and write over
 * the neighbours at every launch. So their ranges are checked first, as a
 * copy's (copy_range.h); the executable graph's own setters do the same
 * (graphs.c). */
#include "shim/copy_range.h"
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
