/* fakecuda: executable graphs. Instantiation copies the graph and fixes an
 * order that respects every edge (a cycle is refused); a launch is one
 * operation on its stream that runs the nodes in that order, so the launch
 * is ordered with the stream's other work, and events and syncs see it
 * whole. A launch runs a snapshot taken at the call: later parameter
 * changes (cuGraphExecKernelNodeSetParams, cuGraphExecUpdate) and
 * cuGraphExecDestroy leave launches already queued alone, as documented.
 *
 * An event record node records its event at the launch, complete when the
 * whole launch is (never earlier than on a GPU); a wait node waits, on the
 * stream's worker, for the event's record as it is when the node runs. A
 * launch into a capturing stream becomes a child graph node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/internal.h"

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

static struct CUgraphExec_st *execs; /* under the graph lock */

static bool exec_known(struct CUgraphExec_st *x)
{
    for (struct CUgraphExec_st *e = execs; e; e = e->next)
        if (e == x)
            return true;
    return false;
}

FC_EXPORT size_t fakecuda_live_graph_execs(void)
{
    size_t n = 0;
    fc_graph_lock();
    for (struct CUgraphExec_st *x = execs; x; x = x->next)
        n++;
    fc_graph_unlock();
    return n;
}

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
        if (n->type == CU_GRAPH_NODE_TYPE_KERNEL)
            fc_kernel_call_free(&n->u.kernel);
        else if (n->type == CU_GRAPH_NODE_TYPE_GRAPH)
            fc_graph_free(n->u.child);
        else if (n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
            for (unsigned b = 0; b < n->u.cond.size; b++)
                fc_graph_free(n->u.cond.body[b]);
            free(n->u.cond.body);
        } else if (n->type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP) {
            fc_memop_node_free(&n->u.memop);
        } else if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
            pthread_mutex_lock(&fc_lock);
            n->u.alloc.mem->inflight--;
            pthread_mutex_unlock(&fc_lock);
            fc_gmem_unref(n->u.alloc.mem);
        }
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

/* ---- instantiation -------------------------------------------------------- */

#define INSTANTIATE_FLAGS                                                                     \
    (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |   \
     CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

/* Checks every child graph for a cycle too (a child's cycle is the parent's). */
static CUresult acyclic(struct CUgraph_st *g)
{
    size_t n;
    CUresult err;
    struct CUgraphNode_st **order = fc_graph_order(g, &n, &err);
    free(order);
    for (struct CUgraphNode_st *x = g->head; x && err == CUDA_SUCCESS; x = x->next) {
        if (x->type == CU_GRAPH_NODE_TYPE_GRAPH)
            err = acyclic(x->u.child);
        for (unsigned b = 0; x->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && b < x->u.cond.size; b++)
            if (err == CUDA_SUCCESS)
                err = acyclic(x->u.cond.body[b]);
    }
    return err;
}

/* Whether g has memory alloc or free nodes (a child graph moved into it
 * brings its own). */
static bool has_memory_nodes(const struct CUgraph_st *g)
{
    for (const struct CUgraphNode_st *n = g->head; n; n = n->next)
        if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || n->type == CU_GRAPH_NODE_TYPE_MEM_FREE ||
            (n->type == CU_GRAPH_NODE_TYPE_GRAPH && has_memory_nodes(n->u.child)))
            return true;
    return false;
}

void fc_exec_graph_gone_locked(const struct CUgraph_st *g)
{
    for (struct CUgraphExec_st *x = execs; x; x = x->next)
        if (x->mem_src == g)
            x->mem_src = NULL;
}

/* "If hGraph contains any allocation or free nodes, there can be at most
 * one executable graph in existence for that graph at a time. An attempt
 * to instantiate a second executable graph before destroying the first
 * with cuGraphExecDestroy will result in an error" (cuGraphInstantiate);
 * of a graph with conditional nodes, "only one instantiation of the graph
 * may exist at any point in time" (CU_GRAPH_NODE_TYPE_CONDITIONAL).
 * The reference names no code: INVALID_VALUE here, the tests assert only
 * the failure. */
static CUresult one_exec_at_a_time(const struct CUgraph_st *g, bool *mem)
{
    *mem = has_memory_nodes(g) || fc_graph_has_conditionals(g);
    if (*mem)
        for (struct CUgraphExec_st *x = execs; x; x = x->next)
            if (x->mem_src == g)
                return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
    bool mem = false;
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || (flags & ~(unsigned long long)INSTANTIATE_FLAGS))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fc_graph_lock();
    if (!fc_graph_known(g))
        r = CUDA_ERROR_INVALID_VALUE;
    else if ((r = one_exec_at_a_time(g, &mem)) != CUDA_SUCCESS)
        ;
    else if ((r = acyclic(g)) == CUDA_SUCCESS && !(x->g = fc_graph_clone(g, true)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && !(x->order = fc_graph_order(x->g, &x->n, &r)) && x->g->nnodes)
        r = r != CUDA_SUCCESS ? r : CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        x->magic = FC_MAGIC_EXEC;
        x->flags = flags;
        x->mem_src = mem ? g : NULL;
        x->next = execs;
        execs = x;
        *out = x;
    } else {
        if (x->g)
            fc_graph_free(x->g);
        free(x->order);
        free(x);
    }
    fc_graph_unlock();
    return r;
}

#undef cuGraphInstantiate
FC_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
    FC_FAULT(cuGraphInstantiate);
    return instantiate(out, g, flags);
}

/* The CUDA 10 and 11 ABIs: an error node and a log instead of flags. */
static CUresult instantiate_logged(CUgraphExec *out, CUgraph g, CUgraphNode *err_node, char *log,
                                   size_t log_size)
{
    CUresult r = instantiate(out, g, 0);
    if (err_node)
        *err_node = NULL;
    if (log && log_size)
        log[0] = '\0';
    return r;
}

FC_EXPORT CUresult cuGraphInstantiate(CUgraphExec *out, CUgraph g, CUgraphNode *e, char *log, size_t n)
{
    FC_FAULT(cuGraphInstantiate);
    return instantiate_logged(out, g, e, log, n);
}

FC_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *out, CUgraph g, CUgraphNode *e, char *log, size_t n)
{
    FC_FAULT(cuGraphInstantiate);
    return instantiate_logged(out, g, e, log, n);
}

static CUresult upload(CUgraphExec x, CUstream h, bool ptsz);
static CUresult exec_destroy(CUgraphExec x);

static CUresult instantiate_with_params(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p,
                                        bool ptsz)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) {
        struct CUstream_st *s; /* the upload stream must be one */
        CUresult r = fc_stream_resolve(p->hUploadStream, ptsz, &s);
        if (r != CUDA_SUCCESS)
            return r;
    }
    CUresult r = instantiate(out, g, p->flags);
    /* "Automatically upload the graph after instantiation": its memory is
     * reserved now, as cuGraphUpload reserves it; an upload that fails
     * leaves no executable graph behind. */
    if (r == CUDA_SUCCESS && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) &&
        (r = upload(*out, p->hUploadStream, ptsz)) != CUDA_SUCCESS)
        exec_destroy(*out);
    p->hErrNode_out = NULL;
    p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}

FC_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    FC_FAULT(cuGraphInstantiateWithParams);
    return instantiate_with_params(out, g, p, false);
}

FC_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    FC_FAULT(cuGraphInstantiateWithParams);
    return instantiate_with_params(out, g, p, true);
}

FC_EXPORT CUresult cuGraphExecGetFlags(CUgraphExec x, cuuint64_t *flags)
{
    FC_FAULT(cuGraphExecGetFlags);
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    bool known = exec_known(x);
    if (known)
        *flags = x->flags;
    fc_graph_unlock();
    return known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult exec_destroy(CUgraphExec x)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    bool known = exec_known(x);
    if (known) {
        for (struct CUgraphExec_st **pp = &execs; *pp; pp = &(*pp)->next)
            if (*pp == x) {
                *pp = x->next;
                break;
            }
        fc_graph_free(x->g);
        free(x->order);
        x->magic = 0;
        free(x);
    }
    fc_graph_unlock();
    return known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuGraphExecDestroy(CUgraphExec x)
{
    FC_FAULT(cuGraphExecDestroy);
    return exec_destroy(x);
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
    bool known = exec_known(x);
    fc_graph_unlock();
    if (!known)
        return CUDA_ERROR_INVALID_VALUE;
    bool capturing;
    if ((r = fc_capture_enter(s, &capturing)) != CUDA_SUCCESS)
        return r;
    if (capturing) { /* the graph as a child of the one being captured */
        fc_graph_lock();
        struct CUgraphNode_st *n = exec_known(x) ? fc_node_new(CU_GRAPH_NODE_TYPE_GRAPH) : NULL;
        if (n && !(n->u.child = fc_graph_clone(x->g, true))) {
            fc_node_free(n);
            n = NULL;
        }
        fc_graph_unlock();
        return fc_capture_add(s, n);
    }
    fc_graph_lock();
    struct snapshot *snap = NULL;
    if (!exec_known(x)) /* destroyed meanwhile */
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
    if (exec_known(x))
        record_events(x->g, s, seq);
    fc_graph_unlock();
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuGraphLaunch(CUgraphExec x, CUstream h) { FC_FAULT(cuGraphLaunch); return launch(x, h, false); }
FC_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream h) { FC_FAULT(cuGraphLaunch); return launch(x, h, true); }

/* An upload prepares a launch: the physical memory of the graph's
 * allocations is reserved then, as at a first launch. */
static CUresult upload(CUgraphExec x, CUstream h, bool ptsz)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    r = exec_known(x) ? map_graph(x) : CUDA_ERROR_INVALID_VALUE;
    fc_graph_unlock();
    return r;
}

FC_EXPORT CUresult cuGraphUpload(CUgraphExec x, CUstream h) { FC_FAULT(cuGraphUpload); return upload(x, h, false); }
FC_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec x, CUstream h) { FC_FAULT(cuGraphUpload); return upload(x, h, true); }

/* ---- changing an executable graph ----------------------------------------- */

/* Under the graph lock. */
struct CUgraphNode_st *fc_exec_node(struct CUgraphExec_st *x, CUgraphNode n, int type)
{
    if (!exec_known(x))
        return NULL;
    for (struct CUgraphNode_st *c = x->g->head; c; c = c->next)
        if (c->orig == n && (type < 0 || c->type == (CUgraphNodeType)type))
            return c;
    return NULL;
}

CUresult fc_kernel_node_set(struct CUgraphNode_st *n, const CUDA_KERNEL_NODE_PARAMS *p);

static CUresult exec_kernel_set(CUgraphExec x, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, CU_GRAPH_NODE_TYPE_KERNEL);
    r = c ? fc_kernel_node_set(c, p) : CUDA_ERROR_INVALID_VALUE;
    fc_graph_unlock();
    return r;
}

#undef cuGraphExecKernelNodeSetParams
FC_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec x, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphExecKernelNodeSetParams);
    return exec_kernel_set(x, n, p);
}

FC_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec x, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    FC_FAULT(cuGraphExecKernelNodeSetParams);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS q;
    memset(&q, 0, sizeof q);
    q.func = p->func;
    q.gridDimX = p->gridDimX;
    q.gridDimY = p->gridDimY;
    q.gridDimZ = p->gridDimZ;
    q.blockDimX = p->blockDimX;
    q.blockDimY = p->blockDimY;
    q.blockDimZ = p->blockDimZ;
    q.sharedMemBytes = p->sharedMemBytes;
    q.kernelParams = p->kernelParams;
    q.extra = p->extra;
    return exec_kernel_set(x, n, &q);
}

/* A memcpy node keeps its memory types; a 2D memset its shape. */
static bool copy_compatible(const CUDA_MEMCPY3D *a, const CUDA_MEMCPY3D *b)
{
    return a->srcMemoryType == b->srcMemoryType && a->dstMemoryType == b->dstMemoryType;
}

static bool set_compatible(const CUDA_MEMSET_NODE_PARAMS *a, const CUDA_MEMSET_NODE_PARAMS *b)
{
    if (a->height <= 1 && b->height <= 1)
        return a->elementSize == b->elementSize;
    return a->elementSize == b->elementSize && a->width == b->width && a->height == b->height &&
           a->pitch == b->pitch;
}

static CUresult exec_copy_set(CUgraphExec x, CUgraphNode n, const CUDA_MEMCPY3D *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fc_copy3d_check(p);
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, CU_GRAPH_NODE_TYPE_MEMCPY);
    r = c && copy_compatible(&c->u.copy.p, p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        c->u.copy.p = *p;
    fc_graph_unlock();
    return r;
}

FC_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec x, CUgraphNode n, const CUDA_MEMCPY3D *p,
                                                  CUcontext ctx)
{
    FC_FAULT(cuGraphExecMemcpyNodeSetParams);
    (void)ctx;
    return exec_copy_set(x, n, p);
}

static CUresult exec_set_set(CUgraphExec x, CUgraphNode n, const CUDA_MEMSET_NODE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fc_memset2d_check(p);
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, CU_GRAPH_NODE_TYPE_MEMSET);
    r = c && set_compatible(&c->u.set.p, p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        c->u.set.p = *p;
    fc_graph_unlock();
    return r;
}

FC_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec x, CUgraphNode n,
                                                  const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    FC_FAULT(cuGraphExecMemsetNodeSetParams);
    (void)ctx;
    return exec_set_set(x, n, p);
}

static CUresult exec_host_set(CUgraphExec x, CUgraphNode n, const CUDA_HOST_NODE_PARAMS *p)
{
    if (!p || !p->fn)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, CU_GRAPH_NODE_TYPE_HOST);
    if (c)
        c->u.host = *p;
    fc_graph_unlock();
    return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuGraphExecHostNodeSetParams(CUgraphExec x, CUgraphNode n, const CUDA_HOST_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphExecHostNodeSetParams);
    return exec_host_set(x, n, p);
}

/* Kernel, memcpy and memset nodes may be disabled (the driver's list). */
FC_EXPORT CUresult cuGraphNodeSetEnabled(CUgraphExec x, CUgraphNode n, unsigned int isEnabled)
{
    FC_FAULT(cuGraphNodeSetEnabled);
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, -1);
    bool ok = c && (c->type == CU_GRAPH_NODE_TYPE_KERNEL || c->type == CU_GRAPH_NODE_TYPE_MEMCPY ||
                    c->type == CU_GRAPH_NODE_TYPE_MEMSET);
    if (ok)
        c->disabled = !isEnabled;
    fc_graph_unlock();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuGraphNodeGetEnabled(CUgraphExec x, CUgraphNode n, unsigned int *isEnabled)
{
    FC_FAULT(cuGraphNodeGetEnabled);
    if (!isEnabled)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, -1);
    bool ok = c && (c->type == CU_GRAPH_NODE_TYPE_KERNEL || c->type == CU_GRAPH_NODE_TYPE_MEMCPY ||
                    c->type == CU_GRAPH_NODE_TYPE_MEMSET);
    if (ok)
        *isEnabled = !c->disabled;
    fc_graph_unlock();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- update ---------------------------------------------------------------- */

/* Under the graph lock: whether g can update x's graph xg (x's own, or
 * the copy of a child graph in it), pairing nodes in the order they were
 * added (how a re-capture of the same work pairs with the first); the
 * result as cuGraphExecUpdate reports it. */
static CUgraphExecUpdateResult compare(struct CUgraph_st *xg, struct CUgraph_st *g,
                                       CUgraphNode *err_node, CUgraphNode *err_from)
{
    *err_node = *err_from = NULL;
    if (xg->nnodes != g->nnodes)
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    fc_graph_number(xg);
    fc_graph_number(g);
    for (struct CUgraphNode_st *a = xg->head, *b = g->head; a && b; a = a->next, b = b->next) {
        if (a->type != b->type) {
            *err_node = b;
            return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
        }
        if (a->ndeps != b->ndeps) {
            *err_node = b;
            return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        }
        for (size_t j = 0; j < a->ndeps; j++)
            if (a->deps[j]->idx != b->deps[j]->idx) {
                *err_node = b;
                *err_from = b->deps[j];
                return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
            }
        bool ok = true;
        if (a->type == CU_GRAPH_NODE_TYPE_MEMCPY)
            ok = copy_compatible(&a->u.copy.p, &b->u.copy.p);
        else if (a->type == CU_GRAPH_NODE_TYPE_MEMSET)
            ok = set_compatible(&a->u.set.p, &b->u.set.p);
        else if (a->type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP)
            ok = fc_memop_node_compatible(&a->u.memop, &b->u.memop);
        else if (a->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || a->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
            ok = a->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ? a->u.alloc.mem == b->u.alloc.mem
                                                          : a->u.free_ptr == b->u.free_ptr;
        if (a->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) { /* not modelled: its bodies' update */
            *err_node = b;
            return CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
        }
        if (!ok) {
            *err_node = b;
            return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
        }
    }
    return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

static CUresult update(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!info)
        return CUDA_ERROR_INVALID_VALUE;
    memset(info, 0, sizeof *info);
    fc_graph_lock();
    if (!exec_known(x) || !fc_graph_known(g)) {
        fc_graph_unlock();
        info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
        return CUDA_ERROR_INVALID_VALUE;
    }
    info->result = compare(x->g, g, &info->errorNode, &info->errorFromNode);
    if (info->result != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
        fc_graph_unlock();
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    /* Copy every payload first, so that running out of memory changes nothing. */
    struct CUgraphNode_st *fresh = calloc(g->nnodes + 1, sizeof *fresh);
    size_t done = 0;
    r = fresh ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    for (struct CUgraphNode_st *b = g->head; b && r == CUDA_SUCCESS; b = b->next, done++) {
        fresh[done].type = b->type;
        r = fc_node_payload_copy(&fresh[done], b);
    }
    size_t i = 0;
    for (struct CUgraphNode_st *a = x->g->head; a && r == CUDA_SUCCESS; a = a->next, i++) {
        struct CUgraphNode_st old = *a;
        a->u = fresh[i].u;
        if (a->type == CU_GRAPH_NODE_TYPE_KERNEL)
            fc_kernel_call_rebase(&a->u.kernel);
        fresh[i].u = old.u; /* the old payload goes below */
    }
    for (size_t k = 0; k < done; k++) {
        struct CUgraphNode_st *n = &fresh[k];
        if (r != CUDA_SUCCESS && k == done - 1)
            break; /* the copy that failed has nothing to free */
        if (n->type == CU_GRAPH_NODE_TYPE_KERNEL)
            fc_kernel_call_free(&n->u.kernel);
        else if (n->type == CU_GRAPH_NODE_TYPE_GRAPH)
            fc_graph_free(n->u.child);
        else if (n->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
            fc_gmem_unref(n->u.alloc.mem);
        else if (n->type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP)
            fc_memop_node_free(&n->u.memop);
    }
    free(fresh);
    fc_graph_unlock();
    if (r != CUDA_SUCCESS)
        info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
    return r;
}

#undef cuGraphExecUpdate
FC_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    FC_FAULT(cuGraphExecUpdate);
    return update(x, g, info);
}

/* The CUDA 10.2 ABI: the error node and the result apart. */
FC_EXPORT CUresult cuGraphExecUpdate(CUgraphExec x, CUgraph g, CUgraphNode *err_node,
                                     CUgraphExecUpdateResult *result)
{
    FC_FAULT(cuGraphExecUpdate);
    if (!err_node || !result)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphExecUpdateResultInfo info;
    CUresult r = update(x, g, &info);
    *err_node = info.errorNode;
    *result = info.result;
    return r;
}

/* ---- child graphs, and any node by its type ---------------------------------- */

/* "The topology of childGraph, as well as the node insertion order, must
 * match that of the graph contained in hNode" (cuGraphExecUpdate's
 * restrictions): x's copy of the child becomes a copy of childGraph;
 * launches already queued keep theirs. */
static CUresult exec_child_set(CUgraphExec x, CUgraphNode n, CUgraph child)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, CU_GRAPH_NODE_TYPE_GRAPH);
    CUgraphNode err_node, err_from;
    struct CUgraph_st *copy = NULL;
    if (!c || (!fc_graph_known(child) && !fc_graph_embedded(child)) ||
        compare(c->u.child, child, &err_node, &err_from) != CU_GRAPH_EXEC_UPDATE_SUCCESS)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!(copy = fc_graph_clone(child, true)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        fc_graph_free(c->u.child);
        c->u.child = copy;
    }
    fc_graph_unlock();
    return r;
}

FC_EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec x, CUgraphNode n, CUgraph child)
{
    FC_FAULT(cuGraphExecChildGraphNodeSetParams);
    return exec_child_set(x, n, child);
}

/* CUDA 12.2's one entry point for every type, as the type's own call.
 * Memory allocation and free nodes: "API unsupported". Event and external
 * semaphore nodes, which fakecuda's executable graphs cannot change,
 * answer NOT_SUPPORTED, one of the call's documented errors. */
FC_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec x, CUgraphNode n, CUgraphNodeParams *p)
{
    FC_FAULT(cuGraphExecNodeSetParams);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p || !fc_node_params_clear(p))
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *c = fc_exec_node(x, n, -1);
    bool same = c && c->type == p->type;
    fc_graph_unlock();
    if (!same)
        return CUDA_ERROR_INVALID_VALUE;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        CUDA_KERNEL_NODE_PARAMS k = fc_kernel_params_of(p);
        return exec_kernel_set(x, n, &k);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        if (p->memcpy.flags || p->memcpy.reserved)
            return CUDA_ERROR_INVALID_VALUE;
        return exec_copy_set(x, n, &p->memcpy.copyParams);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
        CUDA_MEMSET_NODE_PARAMS m = fc_memset_params_of(p);
        return exec_set_set(x, n, &m);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
        CUDA_HOST_NODE_PARAMS h = {.fn = p->host.fn, .userData = p->host.userData};
        return exec_host_set(x, n, &h);
    }
    case CU_GRAPH_NODE_TYPE_GRAPH:
        return exec_child_set(x, n, p->graph.graph);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: {
        CUDA_BATCH_MEM_OP_NODE_PARAMS m = fc_memop_params_of(p);
        return cuGraphExecBatchMemOpNodeSetParams(x, n, &m);
    }
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        return CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}
