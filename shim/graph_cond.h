/* Conditional graph nodes' bodies, learnt when a node is made (graph_cond.c). */
#ifndef SPILLWAY_SHIM_GRAPH_COND_H
#define SPILLWAY_SHIM_GRAPH_COND_H
#include <cuda.h>
#include <stddef.h>

/* A conditional node was made in graph (cuGraphAddNode): its bodies,
 * p->phGraph_out[0 .. p->size), are recorded. Without memory they are not
 * (walked as none: gated, not kept hot). */
void spw_graph_cond_made(CUgraphNode node, CUgraph graph, const CUDA_CONDITIONAL_NODE_PARAMS *p);

/* The recorded bodies of node, a copy the caller frees (*n of them), or
 * NULL (*n 0) for a node with no record. */
CUgraph *spw_graph_cond_bodies(CUgraphNode node, unsigned *n);

/* The records that go with a graph (cuGraphDestroy: the nodes of g, and of
 * their bodies, recursively) or a node (cuGraphDestroyNode: node and the
 * nodes of its bodies), taken out before the driver is called: no walk
 * finds a body the driver may be freeing. Given back if the driver
 * refused (spw_graph_cond_put_back), dropped if it did (_drop). */
struct spw_cond;
struct spw_cond *spw_graph_cond_take_graph(CUgraph g);
struct spw_cond *spw_graph_cond_take_node(CUgraphNode node);
void spw_graph_cond_put_back(struct spw_cond *taken);
void spw_graph_cond_drop(struct spw_cond *taken);
/* After the driver's answer r to the destroy: dropped, or put back. */
void spw_graph_cond_settle(struct spw_cond *taken, CUresult r);

/* The records held now (spillway_graph_conditionals, for tests). */
size_t spw_graph_cond_count(void);
#endif
