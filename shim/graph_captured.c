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
 * for the rest of the process (an upload maps its memory but starts no
 * allocation: not a run). One that ran (a launch went through) stays
 * counted until the program frees it, as before: graph destruction "does
 * not automatically free any live graph-allocated memory". A graph's alloc nodes are its own (the driver neither clones a
 * graph with memory nodes nor embeds it as a child graph; at most one
 * executable graph exists for it at a time), so the holders are the graph
 * and the executable graphs graphs.c records.
 *
 * A capture that ends without a graph (the driver invalidated it) leaves
 * no node: its allocations are uncounted at the end (each is noted with
 * its capture's id). */
#include "shim/graph_captured.h"

#include "shim/capture.h"
#include "shim/graph_cond.h"
#include "shim/graph_walk.h"
#include "shim/handler.h"
#include "shim/log.h"

#include <pthread.h>
#include <stdlib.h>

#define BUCKETS 256

struct captured {
    CUdeviceptr p;
    cuuint64_t capture; /* its capture's id until it gave a graph, else 0 */
    CUstream stream;    /* the stream it was captured on, to ask about it */
    int per_thread;
    /* The noting thread's token when stream is its per-thread default
     * stream (that handle names another stream in each thread): only that
     * thread can ask about the capture; NULL otherwise. */
    const void *thread;
    bool ran;  /* an executable graph with its node was launched */
    bool gone; /* the graph with its node was destroyed */
    struct captured *next;
};

static struct captured *buckets[BUCKETS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned entries; /* while none, a destroy looks nothing up */
static _Thread_local char this_thread; /* its address names the thread */
/* Held shared by each captured allocation from before its capture's id is
 * read to its count (spw_graph_captures_hold), exclusively by each end of
 * a capture from before its driver call to its capture_gave_graph or
 * capture_lost. An allocation the driver captured is thus noted with the
 * id of its capture, read while it was going, before that capture ends:
 * read after the driver's call, the id would be 0 once another thread
 * invalidated the capture (taken as a graph's, it would stay counted for
 * good); noted after the end, under the id of a capture that gave a graph
 * (uncounted by a later loss while the graph holds it) or that was lost
 * (counted until another loss); counted after capture_lost took it, the
 * uncount would find nothing and the count come after, for good. */
static pthread_rwlock_t ending = PTHREAD_RWLOCK_INITIALIZER;

/* Whether stream (per_thread: through a _ptsz entry point) is the calling
 * thread's per-thread default stream. */
static bool per_thread_stream(CUstream stream, int per_thread)
{
    return stream == CU_STREAM_PER_THREAD || (per_thread && !stream);
}

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

/* The id of stream's capture, 0 when it captures nothing or the driver
 * cannot say. */
static cuuint64_t capture_id(CUstream stream, int per_thread)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    if (per_thread && !stream)
        stream = CU_STREAM_PER_THREAD;
    if (!spw_drv.cuStreamGetCaptureInfo_v2 ||
        spw_drv.cuStreamGetCaptureInfo_v2(stream, &st, &id, NULL, NULL, NULL) != CUDA_SUCCESS ||
        st == CU_STREAM_CAPTURE_STATUS_NONE)
        return 0;
    return id;
}

cuuint64_t spw_graph_captures_hold(CUstream stream, int per_thread)
{
    pthread_rwlock_rdlock(&ending);
    return capture_id(stream, per_thread);
}

void spw_graph_captures_release(void)
{
    pthread_rwlock_unlock(&ending);
}

void spw_graph_captured(CUdeviceptr p, cuuint64_t id, CUstream stream, int per_thread)
{
    pthread_mutex_lock(&lock);
    struct captured *c = find(p, NULL);
    if (!c && (c = calloc(1, sizeof *c)) != NULL) {
        struct captured **b = slot_of(p);
        c->p = p;
        c->next = *b;
        *b = c;
        atomic_fetch_add_explicit(&entries, 1, memory_order_relaxed);
    }
    if (c) { /* a new node at an address a freed allocation had */
        c->ran = c->gone = false;
        c->capture = id;
        c->stream = stream;
        c->per_thread = per_thread;
        c->thread = per_thread_stream(stream, per_thread) ? &this_thread : NULL;
    } else {
        spw_warn("no memory to note the captured allocation 0x%llx: should its graph never run "
                 "it, it stays counted", (unsigned long long)p);
    }
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

static void alloc_node(CUgraphNode node, CUgraphNodeType t, void *arg)
{
    struct ptrs *l = arg;
    CUDA_MEM_ALLOC_NODE_PARAMS a;
    if (t != CU_GRAPH_NODE_TYPE_MEM_ALLOC || !spw_drv.cuGraphMemAllocNodeGetParams ||
        spw_drv.cuGraphMemAllocNodeGetParams(node, &a) != CUDA_SUCCESS)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        CUdeviceptr *grown = realloc(l->p, cap * sizeof *grown);
        if (!grown)
            return;
        l->p = grown;
        l->cap = cap;
    }
    l->p[l->n++] = a.dptr;
}

/* The addresses of g's alloc nodes (its child graphs' too), read before
 * the driver destroys it. Without memory some are missed: they stay
 * counted. */
static void alloc_nodes(CUgraph g, struct ptrs *l)
{
    spw_graph_walk(g, 0, alloc_node, l);
}

/* The graph's conditional nodes' records (graph_cond.c) are taken out
 * first: no walk may hand the driver a body it is freeing. Put back if it
 * refused. */
static CUresult destroy(CUresult (*real)(CUgraph), CUgraph hGraph)
{
    struct spw_cond *conds = spw_graph_cond_take_graph(hGraph);
    CUresult r = real(hGraph);
    spw_graph_cond_settle(conds, r);
    return r;
}

CUresult spw_h_graph_destroy(CUgraph hGraph)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_destroy);
    if (!atomic_load_explicit(&entries, memory_order_relaxed) || spw_disabled())
        return destroy(real, hGraph);
    struct ptrs l = {NULL, 0, 0};
    alloc_nodes(hGraph, &l);
    CUresult r = destroy(real, hGraph);
    if (r == CUDA_SUCCESS)
        settle_all(l.p, l.n, false, true);
    free(l.p);
    return r;
}

/* A conditional node's record goes with it (graph_cond.c), the records of
 * the nodes in its bodies too; put back if the driver refused. */
CUresult spw_h_graph_destroy_node(CUgraphNode hNode)
{
    SPW_REAL_OR_RETURN(real, spw_h_graph_destroy_node);
    struct spw_cond *conds = spw_graph_cond_take_node(hNode);
    CUresult r = real(hNode);
    spw_graph_cond_settle(conds, r);
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

/* Under lock: c's entry goes, its address onto l (without room it stays,
 * counted). */
static bool take_locked(struct captured **pp, struct ptrs *l)
{
    struct captured *c = *pp;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        CUdeviceptr *grown = realloc(l->p, cap * sizeof *grown);
        if (!grown)
            return false;
        l->p = grown;
        l->cap = cap;
    }
    l->p[l->n++] = c->p;
    *pp = c->next;
    free(c);
    atomic_fetch_sub_explicit(&entries, 1, memory_order_relaxed);
    return true;
}

/* Capture id gave a graph: its allocations are that graph's now (gone at
 * its destroy). */
static void capture_gave_graph(cuuint64_t id)
{
    pthread_mutex_lock(&lock);
    for (size_t b = 0; b < BUCKETS; b++)
        for (struct captured *c = buckets[b]; c; c = c->next)
            if (c->capture == id)
                c->capture = 0;
    pthread_mutex_unlock(&lock);
}

/* A capture closed without a graph. Its id cannot be asked once the
 * driver invalidated it (only an active capture's is valid), so every
 * allocation still noted with a capture is checked: one whose stream no
 * longer captures under that id belongs to a capture that is over or
 * invalidated, which leaves no node: its address onto *l, to uncount.
 * Under ending, held exclusively: no end that gives a graph is between its
 * driver call and capture_gave_graph meanwhile (its capture, over by then,
 * would pass for lost here). */
static void capture_lost(struct ptrs *l)
{
    struct pending {
        CUdeviceptr p;
        CUstream stream;
        int per_thread;
        cuuint64_t capture;
    } *v = NULL;
    /* Another thread's per-thread stream cannot be asked from here (the
     * handle would name this thread's): its capture is that thread's to
     * end, and its own end settles it. */
    size_t n = 0, cap = 0;
    pthread_mutex_lock(&lock);
    for (size_t b = 0; b < BUCKETS; b++)
        for (struct captured *c = buckets[b]; c; c = c->next) {
            if (!c->capture || (c->thread && c->thread != &this_thread))
                continue;
            if (n == cap) {
                size_t want = cap ? 2 * cap : 8;
                struct pending *grown = realloc(v, want * sizeof *grown);
                if (!grown)
                    break; /* the rest stay counted */
                v = grown;
                cap = want;
            }
            v[n++] = (struct pending){c->p, c->stream, c->per_thread, c->capture};
        }
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < n; i++) {
        if (capture_id(v[i].stream, v[i].per_thread) == v[i].capture)
            continue; /* its capture goes on */
        pthread_mutex_lock(&lock);
        struct captured **pp, *c = find(v[i].p, &pp);
        if (c && c->capture == v[i].capture)
            take_locked(pp, l);
        pthread_mutex_unlock(&lock);
    }
    free(v);
}

static CUresult end_capture(CUresult (*real)(CUstream, CUgraph *), int per_thread, CUstream stream,
                            CUgraph *graph)
{
    bool was = spw_capture_in(stream, per_thread);
    if (was) /* the captured allocations under way are noted and counted */
        pthread_rwlock_wrlock(&ending);
    bool noted = was && atomic_load_explicit(&entries, memory_order_relaxed);
    cuuint64_t id = noted ? capture_id(stream, per_thread) : 0; /* 0: invalidated */
    CUresult r = real(stream, graph);
    spw_capture_ended(stream, per_thread, was, r);
    if (noted && r == CUDA_SUCCESS && id)
        capture_gave_graph(id);
    struct ptrs lost = {NULL, 0, 0};
    if (noted && r != CUDA_SUCCESS && !spw_capture_in(stream, per_thread))
        capture_lost(&lost); /* closed without a graph (an end refused
                              * before touching the capture leaves it going) */
    if (was)
        pthread_rwlock_unlock(&ending);
    for (size_t i = 0; i < lost.n; i++)
        uncount(lost.p[i]);
    free(lost.p);
    return r;
}

CUresult spw_h_stream_end_capture(CUstream hStream, CUgraph *phGraph)
{
    SPW_REAL_OR_RETURN(real, spw_h_stream_end_capture);
    return end_capture(real, 0, hStream, phGraph);
}

CUresult spw_h_stream_end_capture_pt(CUstream hStream, CUgraph *phGraph)
{
    SPW_REAL_OR_RETURN(real, spw_h_stream_end_capture_pt);
    return end_capture(real, 1, hStream, phGraph);
}
