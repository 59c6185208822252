/* Captured allocations whose graph never runs them (graph_captured.c). */
#ifndef SPILLWAY_SHIM_GRAPH_CAPTURED_H
#define SPILLWAY_SHIM_GRAPH_CAPTURED_H
#include <cuda.h>
#include <stdint.h>

/* An allocation captured into a graph (cuMemAllocAsync during a capture),
 * just counted under key p: uncounted again if its graph and executable
 * graph go without ever running it. */
void spw_graph_captured(uint64_t p);
#endif
