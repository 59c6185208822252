/* fakecuda internals: graphs, their nodes and executable graphs, shared by
 * the graph files (graph*.c) and the calls that make a node for a capture
 * (capture.c, copy.c, launch.c, ...). */
#ifndef FAKECUDA_GRAPH_H
#define FAKECUDA_GRAPH_H
#include "tests/fakecuda/internal.h"

/* ---- graphs: the object (graph.c), its nodes and edges
 * (graph_topology.c), each node type's calls (graph_types.c, graph_alloc.c,
 * graph_memop.c, graph_node.c, graph_cond.c); executable graphs
 * (graph_exec.c), their launch (graph_launch.c) and changes
 * (graph_exec_update.c) ---- */

/* A graph allocation: owned by every graph object that has a node of it
 * (the graph, its clones, their executable graphs); released with the last. */
struct fc_gmem {
    CUdeviceptr ptr;
    size_t size;   /* page-rounded: what its physical memory takes */
    int dev;
    int refs;      /* under fc_lock, as the rest */
    bool mapped;   /* physical memory from the device's graph pool behind it */
    bool live;     /* allocated by a launch and not freed since */
    int inflight;  /* launches queued or running that name it */
    struct fc_gmem *next; /* every graph allocation, for trim */
};

/* A batch memory operation node's parameters (graph_memop.c). */
struct fc_memop_node {
    CUstreamBatchMemOpParams *ops; /* owned, count of them */
    unsigned count, flags;
    CUcontext ctx;
};

struct CUgraphNode_st {
    uint32_t magic;
    CUgraphNodeType type;
    struct CUgraph_st *graph;
    struct CUgraphNode_st *next;    /* the graph's nodes, in the order added */
    struct CUgraphNode_st **deps;   /* incoming edges, in the order added */
    size_t ndeps, depcap;
    struct CUgraphNode_st *orig;    /* in a copy (clone, executable graph): its original */
    bool disabled;                  /* cuGraphNodeSetEnabled in an executable graph */
    size_t idx;                     /* scratch, under the graph lock: fc_graph_number */
    union {
        struct fc_kernel_call kernel;
        struct {
            CUDA_MEMCPY3D p;
            CUcontext ctx;
        } copy;
        struct {
            CUDA_MEMSET_NODE_PARAMS p;
            CUcontext ctx;
        } set;
        CUDA_HOST_NODE_PARAMS host;
        struct CUgraph_st *child;   /* owned */
        CUevent event;
        struct {
            struct fc_gmem *mem;
            CUDA_MEM_ALLOC_NODE_PARAMS p; /* accessDescs not kept */
        } alloc;
        CUdeviceptr free_ptr;
        struct {                    /* a conditional node (graph_types.c, graph_cond.c) */
            struct fc_cond_handle *handle;
            CUgraphConditionalNodeType type;
            unsigned size;
            struct CUgraph_st **body; /* owned, size of them: phGraph_out */
        } cond;
        struct fc_memop_node memop;
    } u;
};

struct CUgraph_st {
    uint32_t magic;
    struct CUgraphNode_st *head, *tail;
    size_t nnodes;
    bool internal;                  /* a child graph or an executable graph's copy */
    struct CUgraphNode_st *owner;   /* a conditional node's body: that node */
    int captures;                   /* captures into it under way: it may not go */
    struct CUgraph_st *next;        /* live graphs, for validation */
};

/* All under the graph lock (fc_graph_lock / unlock). */
void fc_graph_lock(void);
void fc_graph_unlock(void);
bool fc_graph_known(struct CUgraph_st *g);
bool fc_node_known(struct CUgraphNode_st *n);
/* g is the graph a child graph node of a known graph embeds. */
bool fc_graph_embedded(struct CUgraph_st *g);
struct CUgraph_st *fc_graph_new(bool internal);
/* g is a known graph or a conditional node's body in one (recursively):
 * the program may add nodes to it. */
bool fc_graph_open(struct CUgraph_st *g);
/* g has conditional nodes (not counting those in their bodies). */
bool fc_graph_has_conditionals(const struct CUgraph_st *g);
/* g has memory allocation or free nodes (its child graphs' too), which
 * cuGraphClone and cuGraphAddChildGraphNode refuse (graph_alloc.c). */
bool fc_graph_has_mem_nodes(const struct CUgraph_st *g);
/* A capture adds to a body of conditional node n (or to a body in one of
 * them): the node may not go (cuGraphDestroyNode), nor its graph. */
bool fc_node_body_captured(const struct CUgraphNode_st *n);
/* CUDA 12.2's node parameters (graph_node.c): whether the reserved fields
 * are zero, as the reference requires, and a kernel or memset member as
 * the type's own parameters. */
bool fc_node_params_clear(const CUgraphNodeParams *p);
CUDA_KERNEL_NODE_PARAMS fc_kernel_params_of(const CUgraphNodeParams *p);
CUDA_MEMSET_NODE_PARAMS fc_memset_params_of(const CUgraphNodeParams *p);
CUDA_BATCH_MEM_OP_NODE_PARAMS fc_memop_params_of(const CUgraphNodeParams *p);
/* Batch memory operation nodes (graph_memop.c): a payload's copy and
 * release, and whether an executable graph's node may take b's operations
 * in place of a's (what cuGraphExecBatchMemOpNodeSetParams may change). */
CUresult fc_memop_node_copy(struct fc_memop_node *dst, const struct fc_memop_node *src);
void fc_memop_node_free(struct fc_memop_node *m);
bool fc_memop_node_compatible(const struct fc_memop_node *a, const struct fc_memop_node *b);

/* cuGraphAddNode of a conditional node: its bodies made, written to
 * p->phGraph_out (graph_types.c). */
CUresult fc_graph_add_conditional(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                  CUDA_CONDITIONAL_NODE_PARAMS *p);
void fc_graph_free(struct CUgraph_st *g);
/* g is destroyed: no executable graph was instantiated from it any more. */
void fc_exec_graph_gone_locked(const struct CUgraph_st *g);
/* A detached node of that type (zeroed payload), or NULL. */
struct CUgraphNode_st *fc_node_new(CUgraphNodeType type);
void fc_node_free(struct CUgraphNode_st *n);
/* Adds n to g after deps (each a node of g): INVALID_VALUE for a bad or
 * repeated dependency (n is then the caller's), OUT_OF_MEMORY. */
CUresult fc_graph_add(struct CUgraph_st *g, struct CUgraphNode_st *n,
                      struct CUgraphNode_st *const *deps, size_t ndeps);
/* Appends d to n's dependencies, unchecked; false: out of memory. */
bool fc_node_dep_push(struct CUgraphNode_st *n, struct CUgraphNode_st *d);
/* What every cuGraphAdd*Node does with the node it built (NULL: out of
 * memory): the checks, then *out = n, g's; or n freed. Takes the lock. */
CUresult fc_graph_add_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                           struct CUgraphNode_st *n);
/* n if it is a known node of that type, else NULL. */
struct CUgraphNode_st *fc_node_of(CUgraphNode n, CUgraphNodeType type);
/* The Get/SetParams of nodes whose parameters are one plain struct
 * (graph_types.c): FC_NODE_GET(h, type, member, out) copies the member of
 * known node h of that type to *out, FC_NODE_SET from *in; INVALID_VALUE
 * for another node. Takes the lock. */
CUresult fc_node_copy(CUgraphNode hNode, CUgraphNodeType type, size_t off, void *buf, size_t size,
                      bool set);
/* The pointer comparison makes the compiler check that the member has the
 * caller's type, as the assignments these replace did. */
#define FC_NODE_MEMBER_IS(member, ptr) ((void)sizeof(&((struct CUgraphNode_st *)0)->member == (ptr)))
#define FC_NODE_GET(h, type, member, out)                                                   \
    (FC_NODE_MEMBER_IS(member, out),                                                        \
     fc_node_copy(h, type, offsetof(struct CUgraphNode_st, member), out, sizeof *(out), false))
#define FC_NODE_SET(h, type, member, in)                                                    \
    (FC_NODE_MEMBER_IS(member, in),                                                         \
     fc_node_copy(h, type, offsetof(struct CUgraphNode_st, member), (void *)(in), sizeof *(in), true))
/* Replaces a kernel node's parameters (a graph's node or an executable
 * graph's copy of one), under the lock (graph_types.c). */
/* The CUDA 10.0 kernel node parameters (no kern, no ctx) as today's. */
CUDA_KERNEL_NODE_PARAMS fc_kernel_params_from_v1(const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult fc_kernel_node_set(struct CUgraphNode_st *n, const CUDA_KERNEL_NODE_PARAMS *p);

struct CUgraphExec_st {
    uint32_t magic;
    struct CUgraph_st *g;            /* a private copy: nodes point at the originals */
    struct CUgraphNode_st **order;
    size_t n;
    unsigned long long flags;
    /* The graph it was instantiated from while that graph lives and has
     * memory or conditional nodes: at most one executable graph of it at a
     * time. */
    const struct CUgraph_st *mem_src;
    struct CUgraphExec_st *next;
};

/* x is a live executable graph (graph_exec.c). */
bool fc_exec_known(struct CUgraphExec_st *x);
/* cuGraphUpload (graph_launch.c): the physical memory of x's allocations
 * reserved; ptsz as a _ptsz entry point names the NULL stream. Takes the
 * lock. */
CUresult fc_exec_upload(CUgraphExec x, CUstream h, bool ptsz);
/* x's copy of the program's node n, of that type (-1: any); NULL if x is
 * no executable graph or has none. */
struct CUgraphNode_st *fc_exec_node(struct CUgraphExec_st *x, CUgraphNode n, int type);
/* A deep copy (nodes, edges, payloads; copies point at their originals). */
struct CUgraph_st *fc_graph_clone(struct CUgraph_st *g, bool internal);
/* Copies a node's payload (a kernel's arguments, a child graph); frees
 * one (what a node owns beyond itself). */
CUresult fc_node_payload_copy(struct CUgraphNode_st *dst, const struct CUgraphNode_st *src);
void fc_node_payload_free(struct CUgraphNode_st *n);
/* Numbers g's nodes 0.. in the order added (their idx). */
void fc_graph_number(struct CUgraph_st *g);
/* The nodes in an order that respects every edge; NULL with *n = 0 for a
 * cycle (INVALID_VALUE) or no memory. */
struct CUgraphNode_st **fc_graph_order(struct CUgraph_st *g, size_t *n, CUresult *err);
/* Conditional nodes (graph_cond.c): handles live until the process ends
 * (an executable graph's copy of a node keeps using its handle after the
 * graph goes). fc_cond_handle_of: the handle, if it is one, under the
 * graph lock; its graph is the one it was created for. */
struct fc_cond_handle;
struct fc_cond_handle *fc_cond_handle_of(CUgraphConditionalHandle h);
struct CUgraph_st *fc_cond_handle_graph(const struct fc_cond_handle *h);
CUcontext fc_cond_handle_ctx(const struct fc_cond_handle *h);
/* A launch begins: the handles with CU_GRAPH_COND_ASSIGN_DEFAULT of the
 * conditional nodes among n[0..count) (their bodies' too) take their
 * default value. Then a node's value, read when it runs. */
void fc_cond_launch_reset(const struct CUgraphNode_st *n, size_t count);
unsigned fc_cond_value(const struct fc_cond_handle *h);
/* Runs what a node does, on a stream's worker (graph_launch.c). */
void fc_node_run(const struct CUgraphNode_st *n);
/* Graph allocations (graph_alloc.c): a new one (charged, registered), a
 * reference more, one less (the last releases it); a node's effect when it
 * runs. */
CUresult fc_gmem_new(int dev, size_t size, struct fc_gmem **out);
void fc_gmem_ref(struct fc_gmem *m);
void fc_gmem_unref(struct fc_gmem *m);
void fc_gmem_drop_locked(struct fc_gmem *m); /* under fc_lock: frees m */
void fc_gmem_mark(CUdeviceptr ptr, bool live);
/* graph_mem.c, all under fc_lock. Physical memory for every allocation
 * node of g (and its children) not backed yet, from the device's graph
 * pool, the pool growing as needed: OUT_OF_MEMORY when the device has not
 * enough. Called at a launch and an upload, under the graph lock too. */
CUresult fc_gmem_map_graph_locked(const struct CUgraph_st *g);
void fc_gmem_list_locked(struct fc_gmem *m, bool add);
void fc_gmem_live_locked(struct fc_gmem *m, bool live);

#endif
