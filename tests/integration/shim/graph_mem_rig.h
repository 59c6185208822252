/* What the graph memory suite (test_graph_mem.c and graph_mem_*.c)
 * shares: its sizes, the device's free memory and its graph pool's
 * reservation, the graphs its tests allocate in. Run by graph_mem.sh. */
#ifndef SPILLWAY_TESTS_GRAPH_MEM_RIG_H
#define SPILLWAY_TESTS_GRAPH_MEM_RIG_H
#include "tests/integration/shim/rig.h"

#define LIMIT (64 * MiB)
#define GBYTES (16 * MiB)

/* cuMemGetInfo's free. */
size_t free_now(void);
/* Device 0's graph pool's reserved memory (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT). */
uint64_t reserved(void);
/* An executable graph and its graph destroyed, the driver's graph pool
 * trimmed. */
void graphs_gone_and_trimmed(CUgraphExec e, CUgraph g);
/* A graph that allocates GBYTES, sets them and frees them. */
void alloc_set_free_graph(CUgraph *g);
/* That graph, instantiated. */
CUgraphExec alloc_set_free(CUgraph *g);
/* A graph capturing cuMemAllocAsync: t, GBYTES, outliving the graph. */
CUgraph capture_alloc(CUstream s, CUdeviceptr *t);

/* The suite's tests beyond test_graph_mem.c's, each file's added to tc in
 * its order. */
void graph_mem_captured_tests(TCase *tc); /* graph_mem_captured.c */
void graph_mem_lost_tests(TCase *tc);     /* graph_mem_lost.c */
void graph_mem_replay_tests(TCase *tc);   /* graph_mem_replays.c */
#endif
