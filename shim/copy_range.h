/* The ranges a copy descriptor, a set or a stream memory operation names
 * in pool memory, checked outside a submission (copy2d.c, as its handlers
 * check theirs): for graph nodes, which the driver checks when they are
 * added or given parameters and then runs unchecked at every launch
 * (graph_nodes.c, graphs.c). */
#ifndef SPILLWAY_SHIM_COPY_RANGE_H
#define SPILLWAY_SHIM_COPY_RANGE_H
#include <cuda.h>
#include <stddef.h>

/* CUDA_ERROR_INVALID_VALUE when a device or unified side of c (NULL:
 * CUDA_SUCCESS, the driver's to refuse) reaches past the pool allocation
 * it starts in, or starts in a freed one (pool_range.h); the bytes from
 * the first one the offsets reach to the end of the last row. */
CUresult spw_copy3d_range_check(const CUDA_MEMCPY3D *c);

/* The same for a set of height rows of width elements of elem bytes,
 * pitch bytes apart, from dst. */
CUresult spw_set2d_range_check(CUdeviceptr dst, size_t pitch, size_t width, size_t height, size_t elem);

/* The same for a memset node's parameters (NULL: CUDA_SUCCESS). */
CUresult spw_memset_node_range_check(const CUDA_MEMSET_NODE_PARAMS *p);

/* The same for the values of count stream memory operations (a batch
 * memory operation node's; ops NULL: CUDA_SUCCESS), 4 or 8 bytes each
 * (spw_memop_sides, gate_use.h). */
CUresult spw_memops_range_check(const CUstreamBatchMemOpParams *ops, unsigned count);

/* The same for a copy, set or batch memory operation node given by CUDA
 * 12.2's parameters of any type (NULL or another type: CUDA_SUCCESS). */
CUresult spw_node_params_range_check(const CUgraphNodeParams *p);
#endif
