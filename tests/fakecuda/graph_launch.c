/* fakecuda: an executable graph's launch and upload. A launch is one
 * operation on its stream that runs the nodes in the executable graph's
 * order, so the launch is ordered with the stream's other work, and events
 * and syncs see it whole. A launch runs a snapshot taken at the call:
 * later parameter changes (cuGraphExecKernelNodeSetParams,
 * cuGraphExecUpdate) and cuGraphExecDestroy leave launches already queued
 * alone, as documented.
 *
 * An event record node records its event at the launch, complete when the
 * whole launch is (never earlier than on a GPU); a wait node waits, on the
 * stream's worker, for the event's record as it is when the node runs. A
 * launch into a capturing stream becomes a child graph node. */
#include <stdio.h>
#include <stdlib.h>

#include "tests/fakecuda/graph.h"

/* ---- running nodes -------------------------------------------------------- */

static void run_graph(const struct CUgraph_st *g);

/* A WHILE whose body never clears its value would spin for ever, as on a
 * GPU: stopped loudly instead (tests are small). */
#define FC_WHILE_MAX_ITERATIONS (1u << 24)

static void run_conditional(const struct CUgraphNode_st *n)
{
    const struct fc_cond_handle *h = n->u.cond.handle;
    unsigned v = fc_cond_value(h);
    switch (n->u.cond.type) {
    case CU_GRAPH_COND_TYPE_IF:
        if (v)
            run_graph(n->u.cond.body[0]);
        else if (n->u.cond.size == 2)
            run_graph(n->u.cond.body[1]);
        break;
    case CU_GRAPH_COND_TYPE_WHILE:
        for (unsigned i = 0; fc_cond_value(h); i++) {
            if (i == FC_WHILE_MAX_ITERATIONS) {
                fprintf(stderr, "fakecuda: a conditional WHILE node ran %u times without its "
                                "value going to 0\n", i);
                abort();
            }
            run_graph(n->u.cond.body[0]);
        }
        break;
    case CU_GRAPH_COND_TYPE_SWITCH:
        if (v < n->u.cond.size)
            run_graph(n->u.cond.body[v]);
        break;
    default:
        break;
    }
}

void fc_node_run(const struct CUgraphNode_st *n)
{
    if (n->disabled)
        return;
    struct fc_dep d;
    switch (n->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        fc_kernel_call_run(&n->u.kernel);
        break;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        fc_copy3d_run(&n->u.copy.p);
        break;
    case CU_GRAPH_NODE_TYPE_MEMSET:
        fc_memset2d_run(&n->u.set.p);
        break;
    case CU_GRAPH_NODE_TYPE_HOST:
        n->u.host.fn(n->u.host.userData);
        break;
    case CU_GRAPH_NODE_TYPE_GRAPH:
        run_graph(n->u.child);
        break;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        if (fc_event_dep(n->u.event, &d))
            fc_dep_wait(&d);
        break;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        fc_gmem_mark(n->u.alloc.mem->ptr, true);
        break;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        fc_gmem_mark(n->u.free_ptr, false);
        break;
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
        run_conditional(n);
        break;
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        fc_memops_run(n->u.memop.ops, n->u.memop.count);
        break;
    default: /* empty nodes; record nodes did their part at the launch */
        break;
    }
}

/* A child graph, in an order of its own (it was checked for cycles when
 * its parent was instantiated). */
static void run_graph(const struct CUgraph_st *g)
{
    size_t n;
    CUresult err;
    struct CUgraphNode_st **order = fc_graph_order((struct CUgraph_st *)g, &n, &err);
    if (!order && g->nnodes)
        abort(); /* as fc_stream_enqueue: tests are small */
    for (size_t i = 0; i < n; i++)
        fc_node_run(order[i]);
    free(order);
}

/* A launch's own copy of the nodes, in order. */
struct snapshot {
    size_t n;
    struct CUgraphNode_st nodes[];
};

static void snapshot_free(struct snapshot *s, size_t upto)
{
    for (size_t i = 0; i < upto; i++) {
        struct CUgraphNode_st *n = &s->nodes[i];
        if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
            pthread_mutex_lock(&fc_lock);
            n->u.alloc.mem->inflight--;
            pthread_mutex_unlock(&fc_lock);
        }
        fc_node_payload_free(n);
    }
    free(s);
}

static void run_snapshot(void *arg)
{
    struct snapshot *s = arg;
    fc_cond_launch_reset(s->nodes, s->n); /* "at the beginning of each graph execution" */
    for (size_t i = 0; i < s->n; i++)
        fc_node_run(&s->nodes[i]);
    fc_graph_lock(); /* a child graph's copy is freed under the lock */
    snapshot_free(s, s->n);
    fc_graph_unlock();
}

/* Under the graph lock. */
static struct snapshot *snapshot_of(struct CUgraphExec_st *x)
{
    struct snapshot *s = calloc(1, sizeof *s + x->n * sizeof s->nodes[0]);
    if (!s)
        return NULL;
    for (size_t i = 0; i < x->n; i++) {
        struct CUgraphNode_st *n = &s->nodes[i];
        n->type = x->order[i]->type;
        n->disabled = x->order[i]->disabled;
        if (fc_node_payload_copy(n, x->order[i]) != CUDA_SUCCESS) {
            snapshot_free(s, i);
            return NULL;
        }
        if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) { /* in use until run: trim keeps it */
            pthread_mutex_lock(&fc_lock);
            n->u.alloc.mem->inflight++;
            pthread_mutex_unlock(&fc_lock);
        }
        s->n = i + 1;
    }
    return s;
}

/* Under the graph lock: what a launch records, at the launch (the record
 * nodes of g and of its children). */
static void record_events(const struct CUgraph_st *g, struct CUstream_st *s, uint64_t seq)
{
    for (const struct CUgraphNode_st *n = g->head; n; n = n->next)
        if (n->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD && !n->disabled)
            fc_event_set(n->u.event, s, seq);
        else if (n->type == CU_GRAPH_NODE_TYPE_GRAPH)
            record_events(n->u.child, s, seq);
}

/* What a launch's copy, set and batch memory operation nodes use (those
 * of its child graphs too),
 * for the unmap hazard check: noted like the copies and sets a stream
 * runs, so that unmapping a page they use before the host saw the launch
 * complete stops the process. */
struct uses {
    struct fc_use *u;
    size_t n, cap;
};

static void use_add(struct uses *l, struct fc_use u)
{
    if (!u.size[0] && !u.size[1])
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        struct fc_use *g = realloc(l->u, cap * sizeof *g);
        if (!g)
            abort(); /* as fc_stream_enqueue: tests are small */
        l->u = g;
        l->cap = cap;
    }
    l->u[l->n++] = u;
}

/* Under the graph lock. */
static void uses_of(const struct CUgraphNode_st *x, struct uses *l)
{
    if (x->disabled)
        return;
    if (x->type == CU_GRAPH_NODE_TYPE_MEMCPY)
        use_add(l, fc_copy3d_use(&x->u.copy.p));
    else if (x->type == CU_GRAPH_NODE_TYPE_MEMSET)
        use_add(l, fc_memset2d_use(&x->u.set.p));
    else if (x->type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP)
        for (unsigned i = 0; i < x->u.memop.count; i++)
            use_add(l, fc_memop_use(&x->u.memop.ops[i]));
    else if (x->type == CU_GRAPH_NODE_TYPE_GRAPH)
        for (const struct CUgraphNode_st *c = x->u.child->head; c; c = c->next)
            uses_of(c, l);
    else if (x->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) /* each body, as if it ran */
        for (unsigned b = 0; b < x->u.cond.size; b++)
            for (const struct CUgraphNode_st *c = x->u.cond.body[b]->head; c; c = c->next)
                uses_of(c, l);
}

/* ---- launch ---------------------------------------------------------------- */

/* Under the graph lock: x's allocations backed by the graph pool. */
static CUresult map_graph(struct CUgraphExec_st *x)
{
    pthread_mutex_lock(&fc_lock);
    CUresult r = fc_gmem_map_graph_locked(x->g);
    pthread_mutex_unlock(&fc_lock);
    return r;
}

static CUresult launch(CUgraphExec x, CUstream h, bool ptsz)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    bool known = fc_exec_known(x);
    fc_graph_unlock();
    if (!known)
        return CUDA_ERROR_INVALID_VALUE;
    bool capturing;
    if ((r = fc_capture_enter(s, &capturing)) != CUDA_SUCCESS)
        return r;
    if (capturing) { /* the graph as a child of the one being captured */
        fc_graph_lock();
        struct CUgraphNode_st *n = fc_exec_known(x) ? fc_node_new(CU_GRAPH_NODE_TYPE_GRAPH) : NULL;
        if (n && !(n->u.child = fc_graph_clone(x->g, true))) {
            fc_node_free(n);
            n = NULL;
        }
        fc_graph_unlock();
        return fc_capture_add(s, n);
    }
    fc_graph_lock();
    struct snapshot *snap = NULL;
    if (!fc_exec_known(x)) /* destroyed meanwhile */
        r = CUDA_ERROR_INVALID_VALUE;
    else if ((r = map_graph(x)) == CUDA_SUCCESS && !(snap = snapshot_of(x)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    fc_graph_unlock();
    if (r != CUDA_SUCCESS)
        return r;
    struct uses used = {NULL, 0, 0};
    if (fc_check_unmap) { /* from the snapshot, which the launch frees once run */
        fc_graph_lock();
        for (size_t i = 0; i < snap->n; i++)
            uses_of(&snap->nodes[i], &used);
        fc_graph_unlock();
    }
    uint64_t seq = fc_stream_enqueue(s, run_snapshot, snap, NULL);
    for (size_t i = 0; i < used.n; i++)
        fc_track_op(s, seq, used.u[i].base[0], used.u[i].size[0], used.u[i].base[1],
                    used.u[i].size[1]);
    free(used.u);
    fc_graph_lock();
    if (fc_exec_known(x))
        record_events(x->g, s, seq);
    fc_graph_unlock();
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuGraphLaunch(CUgraphExec x, CUstream h) { FC_FAULT(cuGraphLaunch); return launch(x, h, false); }
FC_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream h) { FC_FAULT(cuGraphLaunch); return launch(x, h, true); }

/* An upload prepares a launch: the physical memory of the graph's
 * allocations is reserved then, as at a first launch. */
CUresult fc_exec_upload(CUgraphExec x, CUstream h, bool ptsz)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    r = fc_exec_known(x) ? map_graph(x) : CUDA_ERROR_INVALID_VALUE;
    fc_graph_unlock();
    return r;
}

FC_EXPORT CUresult cuGraphUpload(CUgraphExec x, CUstream h) { FC_FAULT(cuGraphUpload); return fc_exec_upload(x, h, false); }
FC_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec x, CUstream h) { FC_FAULT(cuGraphUpload); return fc_exec_upload(x, h, true); }
