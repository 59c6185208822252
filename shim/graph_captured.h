/* Captured allocations whose graph never runs them (graph_captured.c). */
#ifndef SPILLWAY_SHIM_GRAPH_CAPTURED_H
#define SPILLWAY_SHIM_GRAPH_CAPTURED_H
#include <cuda.h>
#include <stdint.h>

/* An allocation p captured into a graph (cuMemAllocAsync on stream, being
 * captured; per_thread: through a _ptsz entry point), about to be counted
 * under key p: uncounted again if its capture ends without a graph, or its
 * graph and executable graph go without ever running it. */
void spw_graph_captured(CUdeviceptr p, CUstream stream, int per_thread);
#endif
