/* Captured allocations of graphs that never run them. An allocation
 * captured into a graph (cuMemAllocAsync during a capture) is counted from
 * its capture to its free (alloc_async.c), as the graph pool backs it from
 * the graph's first launch. A graph that never runs it never gives it any
 * memory: the allocation's lifetime "begins when GPU execution reaches the
 * allocating graph node" (programming guide, "Graph Memory Nodes"), and
 * the program cannot free it. Once both the graph that holds its node and
 * the executable graph instantiated from it are destroyed (a warm-up
 * capture thrown away, a graph instantiated and never launched), nothing
 * can run it: it is uncounted then, or it would hold its bytes of the limit
 * for the rest of the process. One that ran (a launch or upload went
 * through) stays counted until the program frees it, as before: graph
 * destruction "does not automatically free any live graph-allocated
 * memory". A graph's alloc nodes are its own (the driver neither clones a
 * graph with memory nodes nor embeds it as a child graph; at most one
 * executable graph exists for it at a time), so the holders are the graph
 * and the executable graphs graphs.c records.
 *
 * Not seen: a capture the driver invalidates (cuStreamEndCapture fails,
 * no graph): its allocations stay counted. */
#include "shim/graph_captured.h"

#include "shim/handler.h"
#include "shim/log.h"

#include <pthread.h>
#include <stdlib.h>

#define BUCKETS 256
#define MAX_DEPTH 8 /* child graphs inside child graphs */

struct captured {
    CUdeviceptr p;
    bool ran;  /* an executable graph with its node was launched or uploaded */
    bool gone; /* the graph with its node was destroyed */
    struct captured *next;
};

static struct captured *buckets[BUCKETS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned entries; /* while none, a destroy looks nothing up */

static struct captured **slot_of(CUdeviceptr p)
{
    size_t h = (size_t)((p >> 8) * 0x9E3779B97F4A7C15ull >> 56);
    return &buckets[h % BUCKETS];
}

/* Under lock: the entry of p, and in *where the link to it. */
static struct captured *find(CUdeviceptr p, struct captured ***where)
{
    for (struct captured **pp = slot_of(p); *pp; pp = &(*pp)->next)
        if ((*pp)->p == p) {
            if (where)
                *where = pp;
            return *pp;
        }
    return NULL;
}

void spw_graph_captured(uint64_t key)
{
    CUdeviceptr p = (CUdeviceptr)key;
    pthread_mutex_lock(&lock);
    struct captured *c = find(p, NULL);
    if (!c && (c = calloc(1, sizeof *c)) != NULL) {
        struct captured **b = slot_of(p);
        c->p = p;
        c->next = *b;
        *b = c;
        atomic_fetch_add_explicit(&entries, 1, memory_order_relaxed);
    }
    if (c) /* a new node at an address a freed allocation had */
        c->ran = c->gone = false;
    else
        spw_warn("no memory to note the captured allocation 0x%llx: should its graph never run "
                 "it, it stays counted", (unsigned long long)p);
    pthread_mutex_unlock(&lock);
}

/* Under lock: whether p is settled for good (no graph or executable graph
 * holds its node, or none ever will), its entry dropped; *unused: it never
 * ran, so its count goes. */
static bool settle_locked(CUdeviceptr p, bool ran, bool gone, bool *unused)
{
    struct captured **pp, *c = find(p, &pp);
    *unused = false;
    if (!c)
        return false;
    c->ran |= ran;
    c->gone |= gone;
    if (!c->gone || spw_graph_allocs_held(p))
        return false;
    *unused = !c->ran;
    *pp = c->next;
    free(c);
    atomic_fetch_sub_explicit(&entries, 1, memory_order_relaxed);
    return true;
}

/* p's count goes: its memory never existed. Not if the program freed it
 * (the count went then) or it is not a captured allocation. */
static void uncount(CUdeviceptr p)
{
    int dev, why;
    uint64_t bytes;
    if (spw_account_forget_pt(SPW_KIND_DEVPTR, p, &dev, &bytes, &why) != 0)
        return;
    if (why != SW_PT_CAPTURE) {
        spw_account_restore_pt(SPW_KIND_DEVPTR, p, dev, bytes, why);
        return;
    }
    spw_debug("the captured allocation 0x%llx (%llu bytes) on device %d never ran and no graph "
              "holds it: uncounted", (unsigned long long)p, (unsigned long long)bytes, dev);
    spw_release_passthrough(dev, bytes, why);
    spw_graph_mem_settle(dev);
}

static void settle_all(const CUdeviceptr *p, size_t n, bool ran, bool gone)
{
    for (size_t i = 0; i < n; i++) {
        bool unused;
        pthread_mutex_lock(&lock);
        settle_locked(p[i], ran, gone, &unused);
        pthread_mutex_unlock(&lock);
        if (unused)
            uncount(p[i]);
    }
}

struct ptrs {
    CUdeviceptr *p;
    size_t n, cap;
};

/* The addresses of g's alloc nodes (its child graphs' too), read before
 * the driver destroys it. Without memory some are missed: they stay
 * counted. */
static void alloc_nodes(CUgraph g, struct ptrs *l, int depth)
{
    size_t n = 0;
    if (!spw_drv.cuGraphGetNodes || spw_drv.cuGraphGetNodes(g, NULL, &n) != CUDA_SUCCESS || !n)
        return;
    CUgraphNode *nodes = malloc(n * sizeof *nodes);
    if (!nodes || spw_drv.cuGraphGetNodes(g, nodes, &n) != CUDA_SUCCESS) {
        free(nodes);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType t;
        if (!spw_drv.cuGraphNodeGetType || spw_drv.cuGraphNodeGetType(nodes[i], &t) != CUDA_SUCCESS)
            continue;
        CUDA_MEM_ALLOC_NODE_PARAMS a;
        CUgraph child;
        if (t == CU_GRAPH_NODE_TYPE_MEM_ALLOC && spw_drv.cuGraphMemAllocNodeGetParams &&
            spw_drv.cuGraphMemAllocNodeGetParams(nodes[i], &a) == CUDA_SUCCESS) {
            if (l->n == l->cap) {
                size_t cap = l->cap ? 2 * l->cap : 8;
                CUdeviceptr *grown = realloc(l->p, cap * sizeof *grown);
                if (!grown)
                    continue;
                l->p = grown;
                l->cap = cap;
            }
            l->p[l->n++] = a.dptr;
        } else if (t == CU_GRAPH_NODE_TYPE_GRAPH && depth < MAX_DEPTH &&
                   spw_drv.cuGraphChildGraphNodeGetGraph &&
                   spw_drv.cuGraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS) {
            alloc_nodes(child, l, depth + 1);
        }
    }
    free(nodes);
}

CUresult spw_h_graph_destroy(CUgraph hGraph)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_destroy);
    if (!atomic_load_explicit(&entries, memory_order_relaxed) || spw_disabled())
        return real(hGraph);
    struct ptrs l = {NULL, 0, 0};
    alloc_nodes(hGraph, &l, 0);
    CUresult r = real(hGraph);
    if (r == CUDA_SUCCESS)
        settle_all(l.p, l.n, false, true);
    free(l.p);
    return r;
}

CUresult spw_h_graph_exec_destroy(CUgraphExec hGraphExec)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_exec_destroy);
    /* Forgotten first: once the driver destroyed it, another thread's
     * instantiate may get the same handle and record it, which a forget
     * after would drop (its replays would go unfilled). The driver refuses
     * only a handle that is no graph's. */
    CUdeviceptr *allocs;
    bool ran;
    size_t n = spw_graph_forget(hGraphExec, &allocs, &ran);
    CUresult r = real(hGraphExec);
    if (n && atomic_load_explicit(&entries, memory_order_relaxed))
        settle_all(allocs, n, ran, false);
    free(allocs);
    return r;
}
