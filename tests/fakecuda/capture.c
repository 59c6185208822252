/* fakecuda: stream capture. Work put on a capturing stream becomes a node of
 * the capture's graph instead of running; cuStreamEndCapture hands the graph
 * over. The rules are the driver's, because what spillway must never do
 * during a program's capture is exactly what breaks it on a GPU:
 *
 *  - Synchronizing or querying a capturing stream, or cuCtxSynchronize while
 *    any stream of the context captures, fails with
 *    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, in
 *    every capture mode: the programming guide ("it is invalid to synchronize
 *    or query ... a broader handle which encompasses an active stream
 *    capture, such as a device or context handle"), cuCtxRecordEvent's note,
 *    and measured behaviour (ROCm PRs 4508 and 8338 on NVIDIA GPUs: a device
 *    sync invalidates a capture on its own device only; TensorRT issue 2888:
 *    in thread-local mode too).
 *  - The legacy stream, while a blocking stream of its context captures:
 *    work, waits, syncs and synchronous calls fail with
 *    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidate those captures;
 *    cuStreamIsCapturing and cuStreamGetCaptureInfo answer IMPLICIT without
 *    invalidating (their documentation says so).
 *  - Potentially unsafe calls follow the thread's capture mode
 *    (cuThreadExchangeStreamCaptureMode): GLOBAL (the default) forbids them
 *    while this thread has a non-relaxed capture or any thread a GLOBAL one;
 *    THREAD_LOCAL only while this thread has a non-relaxed capture; RELAXED
 *    never. Forbidden: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the
 *    captures that forbade it are invalidated. Which calls are potentially
 *    unsafe the driver does not list; fakecuda takes those known to be
 *    refused: allocation and free of device and pinned host memory (the
 *    documented cudaMalloc example; PyTorch's allocator switches to relaxed
 *    mode around them), synchronous copies and sets, cuEventQuery and
 *    cuEventSynchronize (PyTorch's NCCL watchdog switches to thread-local
 *    mode around them), and module and library unloads (Warp's capture
 *    failures).
 *  - Events recorded on a capturing stream are captured: a wait on one from
 *    another stream forks that stream into the capture, a wait back joins
 *    it; a query or synchronize of one fails with CUDA_ERROR_CAPTURED_EVENT
 *    until the event is recorded again outside a capture. A capturing
 *    stream waiting for an event recorded outside fails with
 *    CUDA_ERROR_STREAM_CAPTURE_ISOLATION unless the wait is
 *    CU_EVENT_WAIT_EXTERNAL (a wait node).
 *
 * Argument errors do not invalidate a capture; the end of a capture whose
 * forks were not joined fails with CUDA_ERROR_STREAM_CAPTURE_UNJOINED. A
 * capture that only restricts (an invalidated one) no longer forbids unsafe
 * calls: a failed capture must not make the whole process fail. */
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/graph.h"
#include "tests/fakecuda/internal.h"

struct capture {
    unsigned long long id;
    CUstreamCaptureMode mode;
    pthread_t thread;
    struct CUstream_st *origin;
    struct CUgraph_st *graph;
    bool user_graph;   /* cuStreamBeginCaptureToGraph: the program's graph */
    bool invalidated;
    struct capture *next;
};

/* A stream in a capture: the origin, or one forked in by an event. deps:
 * the nodes its next node depends on. */
struct member {
    struct CUstream_st *s;
    struct capture *cap;
    struct CUgraphNode_st **deps;
    CUgraphEdgeData *edata; /* all zero, as many as deps (cuStreamGetCaptureInfo_v3) */
    size_t ndeps, depcap;
    struct member *next;
};

/* An event last recorded on a capturing stream: the nodes it stands for,
 * while its capture lasts (cap NULL after). */
struct captured_event {
    CUevent e;
    struct capture *cap;
    struct CUgraphNode_st **nodes;
    size_t n;
    struct captured_event *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct capture *captures;
static struct member *members;
static struct captured_event *cevents;
/* Counts for the fast paths: with none, no call takes the lock. */
static _Atomic size_t nmembers, nevents;
static unsigned long long next_id = 1;
static _Thread_local CUstreamCaptureMode thread_mode; /* 0: GLOBAL, the default */

static bool none(void)
{
    return atomic_load(&nmembers) == 0 && atomic_load(&nevents) == 0;
}

static struct member *member_of(struct CUstream_st *s)
{
    for (struct member *m = members; m; m = m->next)
        if (m->s == s)
            return m;
    return NULL;
}

static struct captured_event *cevent_of(CUevent e)
{
    for (struct captured_event *c = cevents; c; c = c->next)
        if (c->e == e)
            return c;
    return NULL;
}

static bool reserve(struct member *m, size_t n)
{
    if (n <= m->depcap)
        return true;
    size_t cap = n < 8 ? 8 : n * 2;
    struct CUgraphNode_st **d = realloc(m->deps, cap * sizeof *d);
    if (!d)
        return false;
    m->deps = d;
    CUgraphEdgeData *e = realloc(m->edata, cap * sizeof *e);
    if (!e)
        return false;
    memset(e, 0, cap * sizeof *e);
    m->edata = e;
    m->depcap = cap;
    return true;
}

static bool set_deps(struct member *m, struct CUgraphNode_st *const *nodes, size_t n)
{
    if (!reserve(m, n))
        return false;
    if (n)
        memcpy(m->deps, nodes, n * sizeof *nodes);
    m->ndeps = n;
    return true;
}

static bool add_deps(struct member *m, struct CUgraphNode_st *const *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool have = false;
        for (size_t j = 0; j < m->ndeps && !have; j++)
            have = m->deps[j] == nodes[i];
        if (have)
            continue;
        if (!reserve(m, m->ndeps + 1))
            return false;
        m->deps[m->ndeps++] = nodes[i];
    }
    return true;
}

static struct member *member_new(struct CUstream_st *s, struct capture *c)
{
    struct member *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->s = s;
    m->cap = c;
    m->next = members;
    members = m;
    atomic_fetch_add(&nmembers, 1);
    return m;
}

/* Under lock: the blocking streams of s's context that capture, for the
 * legacy stream s. invalidate: make them pay for the attempt. */
static bool legacy_conflict(struct CUstream_st *s, bool invalidate)
{
    if (!fc_stream_is_legacy(s))
        return false;
    bool found = false;
    for (struct member *m = members; m; m = m->next)
        if (fc_stream_ctx(m->s) == fc_stream_ctx(s) && fc_stream_is_blocking(m->s)) {
            found = true;
            if (invalidate)
                m->cap->invalidated = true;
        }
    return found;
}

/* Under lock: whether the thread's mode forbids a potentially unsafe call
 * now, invalidating the captures that forbid it. */
static bool prohibited(void)
{
    if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return false;
    pthread_t self = pthread_self();
    bool bad = false;
    for (struct capture *c = captures; c; c = c->next) {
        if (c->invalidated)
            continue;
        bool mine = pthread_equal(c->thread, self);
        if ((mine && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
            (!mine && thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
             c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            c->invalidated = true;
            bad = true;
        }
    }
    return bad;
}

/* ---- what other entry points ask ---------------------------------------- */

CUresult fc_capture_enter(struct CUstream_st *s, bool *capturing)
{
    *capturing = false;
    if (atomic_load(&nmembers) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct member *m = member_of(s);
    if (m && !m->cap->invalidated) {
        *capturing = true;
        return CUDA_SUCCESS; /* the lock stays held until fc_capture_add */
    }
    CUresult r = m ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                 : legacy_conflict(s, true) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
                                            : CUDA_SUCCESS;
    pthread_mutex_unlock(&lock);
    return r;
}

/* Under lock: n joins m's capture after m's dependencies and becomes them. */
static CUresult append(struct member *m, struct CUgraphNode_st *n)
{
    fc_graph_lock();
    CUresult r = fc_graph_add(m->cap->graph, n, m->deps, m->ndeps);
    fc_graph_unlock();
    if (r != CUDA_SUCCESS)
        return r;
    return set_deps(m, &n, 1) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult fc_capture_add(struct CUstream_st *s, struct CUgraphNode_st *n)
{
    struct member *m = member_of(s);
    CUresult r = !n ? CUDA_ERROR_OUT_OF_MEMORY : append(m, n);
    pthread_mutex_unlock(&lock);
    if (r != CUDA_SUCCESS && n && !n->graph) {
        fc_graph_lock();
        fc_node_free(n);
        fc_graph_unlock();
    }
    return r;
}

CUresult fc_capture_refuse(struct CUstream_st *s)
{
    struct member *m = member_of(s);
    m->cap->invalidated = true;
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

struct CUgraph_st *fc_capture_graph(struct CUstream_st *s)
{
    struct member *m = member_of(s);
    return m ? m->cap->graph : NULL;
}

CUresult fc_capture_wait_stream(struct CUstream_st *s)
{
    if (atomic_load(&nmembers) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct member *m = member_of(s);
    CUresult r = CUDA_SUCCESS;
    if (m) {
        m->cap->invalidated = true;
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else if (legacy_conflict(s, true)) {
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult fc_capture_unsafe_call(void)
{
    if (atomic_load(&nmembers) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    bool bad = prohibited();
    pthread_mutex_unlock(&lock);
    return bad ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult fc_capture_sync_call(struct CUstream_st *s)
{
    CUresult r = fc_capture_wait_stream(s);
    return r != CUDA_SUCCESS ? r : fc_capture_unsafe_call();
}

CUresult fc_capture_ctx_sync(struct CUctx_st *ctx)
{
    if (atomic_load(&nmembers) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    bool bad = false;
    for (struct member *m = members; m; m = m->next)
        if (fc_stream_ctx(m->s) == ctx) {
            m->cap->invalidated = true;
            bad = true;
        }
    pthread_mutex_unlock(&lock);
    return bad ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

/* ---- events --------------------------------------------------------------- */

/* Under lock: a node for an event (CU_EVENT_RECORD_EXTERNAL, a wait node). */
static CUresult event_node(struct member *m, CUgraphNodeType type, CUevent e)
{
    fc_graph_lock();
    struct CUgraphNode_st *n = fc_node_new(type);
    fc_graph_unlock();
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    n->u.event = e;
    CUresult r = append(m, n);
    if (r != CUDA_SUCCESS && !n->graph) {
        fc_graph_lock();
        fc_node_free(n);
        fc_graph_unlock();
    }
    return r;
}

CUresult fc_capture_event_record(CUevent e, struct CUstream_st *s, unsigned flags, bool *done)
{
    *done = false;
    if (atomic_load(&nmembers) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct member *m = member_of(s);
    CUresult r = CUDA_SUCCESS;
    if (m) {
        *done = true;
        if (m->cap->invalidated) {
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else if (flags & CU_EVENT_RECORD_EXTERNAL) {
            r = event_node(m, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e);
        } else {
            struct captured_event *c = cevent_of(e);
            struct CUgraphNode_st **nodes = malloc((m->ndeps + 1) * sizeof *nodes);
            if (!c && nodes && (c = calloc(1, sizeof *c)) != NULL) {
                c->e = e;
                c->next = cevents;
                cevents = c;
                atomic_fetch_add(&nevents, 1);
            }
            if (!c || !nodes) {
                free(nodes);
                r = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                if (m->ndeps)
                    memcpy(nodes, m->deps, m->ndeps * sizeof *nodes);
                free(c->nodes);
                c->nodes = nodes;
                c->n = m->ndeps;
                c->cap = m->cap;
            }
        }
    } else if (legacy_conflict(s, true)) {
        *done = true;
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult fc_capture_event_wait(struct CUstream_st *s, CUevent e, unsigned flags, bool *done)
{
    *done = false;
    if (none())
        return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct member *m = member_of(s);
    struct captured_event *c = cevent_of(e);
    CUresult r = CUDA_SUCCESS;
    struct fc_dep d;
    if (m && m->cap->invalidated) {
        *done = true;
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else if (!m && legacy_conflict(s, true)) {
        *done = true;
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    } else if (c) {
        *done = true;
        if (!c->cap) { /* its capture is over: it stands for no work there is */
            if (m)
                m->cap->invalidated = true;
            r = m ? CUDA_ERROR_STREAM_CAPTURE_ISOLATION : CUDA_ERROR_CAPTURED_EVENT;
        } else if (m && m->cap != c->cap) {
            m->cap->invalidated = c->cap->invalidated = true;
            r = CUDA_ERROR_STREAM_CAPTURE_MERGE;
        } else if (m) { /* a join */
            r = add_deps(m, c->nodes, c->n) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        } else if (fc_stream_is_legacy(s)) { /* the legacy stream is never captured */
            c->cap->invalidated = true;
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        } else { /* a fork: s joins the capture */
            struct member *f = member_new(s, c->cap);
            r = f && set_deps(f, c->nodes, c->n) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        }
    } else if (m && fc_event_dep(e, &d)) {
        *done = true;
        if (flags & CU_EVENT_WAIT_EXTERNAL) {
            r = event_node(m, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e);
        } else {
            m->cap->invalidated = true;
            r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
        }
    } else if (m) {
        *done = true; /* never recorded: it stands for no work, nothing to wait for */
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult fc_capture_event_use(CUevent e)
{
    if (none())
        return CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct captured_event *c = cevent_of(e);
    CUresult r = CUDA_SUCCESS;
    if (c) {
        if (c->cap)
            c->cap->invalidated = true;
        r = CUDA_ERROR_CAPTURED_EVENT;
    } else if (prohibited()) {
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

void fc_capture_event_forget(CUevent e)
{
    if (atomic_load(&nevents) == 0)
        return;
    pthread_mutex_lock(&lock);
    for (struct captured_event **pp = &cevents; *pp; pp = &(*pp)->next)
        if ((*pp)->e == e) {
            struct captured_event *c = *pp;
            *pp = c->next;
            free(c->nodes);
            free(c);
            atomic_fetch_sub(&nevents, 1);
            break;
        }
    pthread_mutex_unlock(&lock);
}

/* ---- begin and end -------------------------------------------------------- */

static CUresult begin(CUstream h, bool ptsz, struct CUgraph_st *g, const CUgraphNode *deps,
                      size_t ndeps, CUstreamCaptureMode mode)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED || (ndeps && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    if (fc_stream_is_legacy(s)) /* "Capture may not be initiated if stream is CU_STREAM_LEGACY" */
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    pthread_mutex_lock(&lock);
    fc_graph_lock();
    bool ok = !g || fc_graph_open(g); /* a conditional node's body too */
    for (size_t i = 0; ok && i < ndeps; i++)
        ok = fc_node_known(deps[i]) && deps[i]->graph == g;
    fc_graph_unlock();
    if (!ok) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (member_of(s)) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    struct capture *c = calloc(1, sizeof *c);
    if (c) {
        fc_graph_lock();
        c->graph = g ? g : fc_graph_new(false);
        if (c->graph)
            c->graph->captures++; /* the program may not destroy it meanwhile */
        fc_graph_unlock();
    }
    struct member *m = c && c->graph ? member_new(s, c) : NULL;
    if (!m || !set_deps(m, deps, ndeps)) {
        if (m) { /* undo member_new */
            members = m->next;
            atomic_fetch_sub(&nmembers, 1);
            free(m->deps);
            free(m->edata);
            free(m);
        }
        if (c && c->graph) {
            fc_graph_lock();
            c->graph->captures--;
            if (!g)
                fc_graph_free(c->graph);
            fc_graph_unlock();
        }
        free(c);
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c->id = next_id++;
    c->mode = mode;
    c->thread = pthread_self();
    c->origin = s;
    c->user_graph = g != NULL;
    c->next = captures;
    captures = c;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* Under lock: whether every stream forked into c was joined back, that is
 * whether all their dependencies precede the origin's (are the origin's
 * dependencies or their ancestors). */
static bool joined(struct capture *c)
{
    struct member *o = member_of(c->origin);
    fc_graph_lock();
    struct CUgraph_st *g = c->graph;
    fc_graph_number(g);
    bool *seen = calloc(g->nnodes + 1, sizeof *seen);
    struct CUgraphNode_st **todo = malloc((g->nnodes + 1) * sizeof *todo);
    bool ok = true;
    if (seen && todo) {
        size_t n = 0;
        for (size_t i = 0; i < o->ndeps; i++)
            if (!seen[o->deps[i]->idx]) {
                seen[o->deps[i]->idx] = true;
                todo[n++] = o->deps[i];
            }
        while (n > 0) {
            struct CUgraphNode_st *x = todo[--n];
            for (size_t j = 0; j < x->ndeps; j++)
                if (!seen[x->deps[j]->idx]) {
                    seen[x->deps[j]->idx] = true;
                    todo[n++] = x->deps[j];
                }
        }
        for (struct member *m = members; m && ok; m = m->next)
            if (m->cap == c && m != o)
                for (size_t i = 0; i < m->ndeps && ok; i++)
                    ok = seen[m->deps[i]->idx];
    } /* else: cannot tell, and fakecuda's want of memory must not fail a capture */
    fc_graph_unlock();
    free(seen);
    free(todo);
    return ok;
}

/* Under lock: every stream of c out of capture, its events forgotten. */
static void finish(struct capture *c)
{
    for (struct member **pp = &members; *pp;) {
        struct member *m = *pp;
        if (m->cap == c) {
            *pp = m->next;
            free(m->deps);
            free(m->edata);
            free(m);
            atomic_fetch_sub(&nmembers, 1);
        } else {
            pp = &m->next;
        }
    }
    for (struct captured_event *e = cevents; e; e = e->next)
        if (e->cap == c) {
            e->cap = NULL;
            free(e->nodes);
            e->nodes = NULL;
            e->n = 0;
        }
    for (struct capture **pp = &captures; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
}

static CUresult end(CUstream h, CUgraph *out, bool ptsz)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct member *m = member_of(s);
    struct capture *c = m ? m->cap : NULL;
    if (!c)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (c->origin != s)
        r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    else if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(c->thread, pthread_self()))
        r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    if (r != CUDA_SUCCESS) { /* the capture goes on */
        pthread_mutex_unlock(&lock);
        return r;
    }
    r = c->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
        : !joined(c)   ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED
                       : CUDA_SUCCESS;
    finish(c);
    fc_graph_lock();
    c->graph->captures--;
    if (r != CUDA_SUCCESS && !c->user_graph)
        fc_graph_free(c->graph);
    fc_graph_unlock();
    pthread_mutex_unlock(&lock);
    *out = r == CUDA_SUCCESS ? c->graph : NULL;
    free(c);
    return r;
}

/* ---- status --------------------------------------------------------------- */

/* The status of s; *m its membership (lock held by the caller). */
static CUresult status_of(struct CUstream_st *s, CUstreamCaptureStatus *st, struct member **mp)
{
    struct member *m = member_of(s);
    *mp = m;
    if (m)
        *st = m->cap->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    else if (legacy_conflict(s, false))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    else
        *st = fc_stream_marked_capturing(s) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                            : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}

static CUresult is_capturing(CUstream h, CUstreamCaptureStatus *st, bool ptsz)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    struct member *m;
    pthread_mutex_lock(&lock);
    r = status_of(s, st, &m);
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult get_info(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *graph,
                         const CUgraphNode **deps, const CUgraphEdgeData **edata, size_t *n,
                         bool ptsz)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!st || (edata && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    struct member *m;
    pthread_mutex_lock(&lock);
    r = status_of(s, st, &m);
    if (r == CUDA_SUCCESS && *st == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        /* The arrays stay valid until the stream's next call, as documented. */
        if (id)
            *id = m ? m->cap->id : 0;
        if (graph)
            *graph = m ? m->cap->graph : NULL;
        if (deps)
            *deps = m ? (const CUgraphNode *)m->deps : NULL;
        if (edata)
            *edata = m ? m->edata : NULL;
        if (n)
            *n = m ? m->ndeps : 0;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult update_deps(CUstream h, CUgraphNode *deps, const CUgraphEdgeData *edata, size_t n,
                            unsigned flags, bool ptsz)
{
    (void)edata; /* fakecuda's edges carry no data */
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES || (n && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct member *m = member_of(s);
    if (!m) {
        r = CUDA_ERROR_ILLEGAL_STATE;
    } else if (m->cap->invalidated) {
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else {
        fc_graph_lock();
        for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++)
            if (!fc_node_known(deps[i]) || deps[i]->graph != m->cap->graph)
                r = CUDA_ERROR_INVALID_VALUE;
        fc_graph_unlock();
        if (r == CUDA_SUCCESS) {
            bool ok = flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES ? set_deps(m, deps, n)
                                                                  : add_deps(m, deps, n);
            r = ok ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

FC_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    FC_FAULT(cuThreadExchangeStreamCaptureMode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode was = thread_mode;
    thread_mode = *mode;
    *mode = was;
    return CUDA_SUCCESS;
}

/* ---- entry points --------------------------------------------------------- */

/* cuda.h maps these names to their newest ABI; the old ABIs are exported
 * too, for programs and runtimes built against older headers. */
#undef cuStreamBeginCapture
#undef cuStreamGetCaptureInfo
#undef cuStreamUpdateCaptureDependencies
#undef cuStreamEndCapture
#undef cuStreamIsCapturing
#undef cuStreamBeginCaptureToGraph

#define GLOBAL CU_STREAM_CAPTURE_MODE_GLOBAL
FC_EXPORT CUresult cuStreamBeginCapture(CUstream h) { FC_FAULT(cuStreamBeginCapture); return begin(h, false, NULL, NULL, 0, GLOBAL); }
FC_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream h) { FC_FAULT(cuStreamBeginCapture); return begin(h, true, NULL, NULL, 0, GLOBAL); }
FC_EXPORT CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode m) { FC_FAULT(cuStreamBeginCapture); return begin(h, false, NULL, NULL, 0, m); }
FC_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode m) { FC_FAULT(cuStreamBeginCapture); return begin(h, true, NULL, NULL, 0, m); }

/* The edge data of the dependencies is ignored: fakecuda's edges are plain. */
FC_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream h, CUgraph g, const CUgraphNode *d, const CUgraphEdgeData *e, size_t n, CUstreamCaptureMode m)
{
    FC_FAULT(cuStreamBeginCaptureToGraph);
    (void)e;
    return g ? begin(h, false, g, d, n, m) : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream h, CUgraph g, const CUgraphNode *d, const CUgraphEdgeData *e, size_t n, CUstreamCaptureMode m)
{
    FC_FAULT(cuStreamBeginCaptureToGraph);
    (void)e;
    return g ? begin(h, true, g, d, n, m) : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuStreamEndCapture(CUstream h, CUgraph *g) { FC_FAULT(cuStreamEndCapture); return end(h, g, false); }
FC_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph *g) { FC_FAULT(cuStreamEndCapture); return end(h, g, true); }
FC_EXPORT CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *s) { FC_FAULT(cuStreamIsCapturing); return is_capturing(h, s, false); }
FC_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus *s) { FC_FAULT(cuStreamIsCapturing); return is_capturing(h, s, true); }

FC_EXPORT CUresult cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id) { FC_FAULT(cuStreamGetCaptureInfo); return get_info(h, st, id, NULL, NULL, NULL, NULL, false); }
FC_EXPORT CUresult cuStreamGetCaptureInfo_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id) { FC_FAULT(cuStreamGetCaptureInfo); return get_info(h, st, id, NULL, NULL, NULL, NULL, true); }
FC_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g, const CUgraphNode **d, size_t *n) { FC_FAULT(cuStreamGetCaptureInfo); return get_info(h, st, id, g, d, NULL, n, false); }
FC_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g, const CUgraphNode **d, size_t *n) { FC_FAULT(cuStreamGetCaptureInfo); return get_info(h, st, id, g, d, NULL, n, true); }
FC_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g, const CUgraphNode **d, const CUgraphEdgeData **e, size_t *n) { FC_FAULT(cuStreamGetCaptureInfo); return get_info(h, st, id, g, d, e, n, false); }
FC_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g, const CUgraphNode **d, const CUgraphEdgeData **e, size_t *n) { FC_FAULT(cuStreamGetCaptureInfo); return get_info(h, st, id, g, d, e, n, true); }

FC_EXPORT CUresult cuStreamUpdateCaptureDependencies(CUstream h, CUgraphNode *d, size_t n, unsigned int f) { FC_FAULT(cuStreamUpdateCaptureDependencies); return update_deps(h, d, NULL, n, f, false); }
FC_EXPORT CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream h, CUgraphNode *d, size_t n, unsigned int f) { FC_FAULT(cuStreamUpdateCaptureDependencies); return update_deps(h, d, NULL, n, f, true); }
FC_EXPORT CUresult cuStreamUpdateCaptureDependencies_v2(CUstream h, CUgraphNode *d, const CUgraphEdgeData *e, size_t n, unsigned int f) { FC_FAULT(cuStreamUpdateCaptureDependencies); return update_deps(h, d, e, n, f, false); }
FC_EXPORT CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream h, CUgraphNode *d, const CUgraphEdgeData *e, size_t n, unsigned int f) { FC_FAULT(cuStreamUpdateCaptureDependencies); return update_deps(h, d, e, n, f, true); }
