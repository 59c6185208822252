/* Visiting every node of a graph, its child graphs' nodes included: what
 * the executable graphs' records (graphs.c) and the captured allocations'
 * (graph_captured.c) both read from a graph. */
#ifndef SPILLWAY_SHIM_GRAPH_WALK_H
#define SPILLWAY_SHIM_GRAPH_WALK_H
#include <cuda.h>
#include <stdbool.h>

/* Child graphs and conditional bodies inside each other, as deep as a
 * walk follows them. */
#define SPW_GRAPH_MAX_DEPTH 8

/* Calls visit for each node of g whose type the driver tells, and walks
 * into each child graph node and each conditional node's bodies (as
 * graph_cond.c recorded them) after visiting it, down to
 * SPW_GRAPH_MAX_DEPTH levels below depth. Nodes the driver cannot list,
 * or memory to list them, are skipped: the caller's record then misses
 * them (each caller says what that costs), and false is returned. */
bool spw_graph_walk(CUgraph g, int depth,
                    void (*visit)(CUgraphNode node, CUgraphNodeType type, void *arg), void *arg);
#endif
