/* fakecuda: streams and events. Every stream is a worker thread that runs
 * its queue in order, asynchronously to the caller, so work still queued
 * when a program (or spillway) unmaps memory really touches unmapped memory.
 * The legacy default stream keeps CUDA's rules: its work starts after all
 * earlier work of the blocking streams of its context, and their later work
 * starts after it. Dependencies are (stream, sequence number) pairs.
 *
 * Here streams and their API; each stream's worker and queue are
 * stream_queue.c's, events event.c's, the unmap hazard check
 * unmap_check.c's, all on one state (stream_state.h). */
#include <stdlib.h>

#include "tests/fakecuda/graph.h"
#include "tests/fakecuda/stream_state.h"

#define PT_MAX 8
static _Thread_local struct {
    struct CUctx_st *ctx;
    struct CUstream_st *s;
} per_thread[PT_MAX];

/* fakecuda_reuse_streams: cuStreamCreate gives a destroyed stream's handle
 * back, as the driver may (its handles are its freed memory). */
static bool reuse_handles;

FC_EXPORT int fakecuda_reuse_streams(int on)
{
    pthread_mutex_lock(&fc_stream_lock);
    reuse_handles = on != 0;
    pthread_mutex_unlock(&fc_stream_lock);
    return 0;
}

/* A destroyed user stream made anew in ctx once its worker is gone; NULL
 * when reuse is off or none is destroyed. Its counters keep counting, so
 * a dependency on its old work (an event) stays met. */
static struct CUstream_st *stream_reused(struct CUctx_st *ctx, unsigned flags, int prio)
{
    pthread_mutex_lock(&fc_stream_lock);
    struct CUstream_st *s = fc_streams;
    while (reuse_handles && s && !(s->kind == FC_STREAM_USER && s->destroyed))
        s = s->next;
    if (!reuse_handles || !s) {
        pthread_mutex_unlock(&fc_stream_lock);
        return NULL;
    }
    while (!s->exited)
        pthread_cond_wait(&fc_stream_progress, &fc_stream_lock);
    s->ctx = ctx;
    s->flags = flags;
    s->priority = prio;
    s->capturing = false;
    s->destroyed = s->exited = false;
    if (fc_stream_start_worker(s) != 0) {
        s->destroyed = s->exited = true;
        s = NULL;
    }
    pthread_mutex_unlock(&fc_stream_lock);
    return s;
}

/* Creates a stream and its worker; NULL when out of resources. */
static struct CUstream_st *stream_new(struct CUctx_st *ctx, unsigned flags, int prio,
                                      enum fc_stream_kind kind)
{
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->magic = FC_MAGIC_STREAM;
    pthread_cond_init(&s->wake, NULL);
    s->ctx = ctx;
    s->flags = flags;
    s->priority = prio;
    s->kind = kind;
    if (fc_stream_start_worker(s) != 0) {
        pthread_cond_destroy(&s->wake);
        free(s);
        return NULL;
    }
    pthread_mutex_lock(&fc_stream_lock);
    s->next = fc_streams;
    fc_streams = s;
    pthread_mutex_unlock(&fc_stream_lock);
    return s;
}

static bool stream_known(struct CUstream_st *s)
{
    for (struct CUstream_st *t = fc_streams; t; t = t->next)
        if (t == s)
            return !t->destroyed;
    return false;
}

static struct CUstream_st *legacy_of(struct CUctx_st *ctx)
{
    pthread_mutex_lock(&fc_stream_lock);
    struct CUstream_st *s = ctx->legacy;
    pthread_mutex_unlock(&fc_stream_lock);
    if (s)
        return s;
    struct CUstream_st *n = stream_new(ctx, 0, 0, FC_STREAM_LEGACY);
    if (!n)
        return NULL;
    pthread_mutex_lock(&fc_stream_lock);
    if (!ctx->legacy)
        ctx->legacy = n;
    else
        n->destroyed = true; /* lost a race: retire the spare */
    s = ctx->legacy;
    kick(n);
    pthread_mutex_unlock(&fc_stream_lock);
    return s;
}

static struct CUstream_st *per_thread_of(struct CUctx_st *ctx)
{
    int free_slot = -1;
    for (int i = 0; i < PT_MAX; i++) {
        if (per_thread[i].ctx == ctx) {
            pthread_mutex_lock(&fc_stream_lock);
            bool gone = per_thread[i].s->destroyed; /* its context was reset */
            pthread_mutex_unlock(&fc_stream_lock);
            if (!gone)
                return per_thread[i].s;
            per_thread[i].ctx = NULL;
        }
        if (!per_thread[i].ctx && free_slot < 0)
            free_slot = i;
    }
    if (free_slot < 0)
        return NULL;
    struct CUstream_st *s = stream_new(ctx, 0, 0, FC_STREAM_PER_THREAD);
    if (s) {
        per_thread[free_slot].ctx = ctx;
        per_thread[free_slot].s = s;
    }
    return s;
}

CUresult fc_stream_resolve(CUstream h, bool ptds, struct CUstream_st **out)
{
    struct CUctx_st *ctx;
    CUresult r = fc_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!h)
        h = ptds ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    struct CUstream_st *s;
    if (h == CU_STREAM_LEGACY)
        s = legacy_of(ctx);
    else if (h == CU_STREAM_PER_THREAD)
        s = per_thread_of(ctx);
    else {
        pthread_mutex_lock(&fc_stream_lock);
        s = stream_known(h) ? h : NULL;
        pthread_mutex_unlock(&fc_stream_lock);
        if (!s)
            return CUDA_ERROR_INVALID_HANDLE;
    }
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = s;
    return CUDA_SUCCESS;
}

int fc_stream_device(struct CUstream_st *s)
{
    return s->ctx->dev;
}

struct CUctx_st *fc_stream_ctx(struct CUstream_st *s)
{
    return s->ctx;
}

bool fc_stream_is_blocking(struct CUstream_st *s)
{
    return s->kind != FC_STREAM_LEGACY && blocking(s);
}

bool fc_stream_is_legacy(struct CUstream_st *s)
{
    return s->kind == FC_STREAM_LEGACY;
}

bool fc_stream_marked_capturing(struct CUstream_st *s)
{
    pthread_mutex_lock(&fc_stream_lock);
    bool on = s->capturing;
    pthread_mutex_unlock(&fc_stream_lock);
    return on;
}

/* A primary context's reset or a context's destroy: its streams (user, legacy, per-thread) and
 * events are destroyed; the legacy and per-thread streams are made anew on
 * next use. The context's work is finished, so each worker exits at once. */
void fc_ctx_end_streams(struct CUctx_st *ctx)
{
    struct CUevent_st *gone = NULL;
    pthread_mutex_lock(&fc_stream_lock);
    for (struct CUstream_st *s = fc_streams; s; s = s->next)
        if (s->ctx == ctx) {
            s->destroyed = true;
            kick(s);
        }
    ctx->legacy = NULL;
    for (struct CUevent_st **pp = &fc_events; *pp;) {
        struct CUevent_st *e = *pp;
        if (e->ctx == ctx) {
            *pp = e->next;
            e->next = gone;
            gone = e;
        } else {
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&fc_stream_lock);
    while (gone) {
        struct CUevent_st *e = gone;
        gone = e->next;
        fc_capture_event_forget(e);
        free(e);
    }
}

/* ---- the stream API ---- */

static CUresult stream_create(CUstream *ph, unsigned flags, int prio)
{
    struct CUctx_st *ctx;
    CUresult r = fc_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = stream_reused(ctx, flags, prio);
    if (!s && !(s = stream_new(ctx, flags, prio, FC_STREAM_USER)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ph = s;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int flags)
{
    FC_FAULT(cuStreamCreate);
    return stream_create(phStream, flags, 0);
}

FC_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    FC_FAULT(cuStreamCreateWithPriority);
    return stream_create(phStream, flags, priority);
}

FC_EXPORT CUresult cuStreamDestroy(CUstream h)
{
    FC_FAULT(cuStreamDestroy);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_stream_lock);
    bool ok = h && stream_known(h) && h->kind == FC_STREAM_USER;
    if (ok) {
        h->destroyed = true; /* its worker finishes the queue, then exits */
        kick(h);
    }
    pthread_mutex_unlock(&fc_stream_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult stream_synchronize(CUstream h, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r == CUDA_SUCCESS)
        r = fc_capture_wait_stream(s);
    if (r != CUDA_SUCCESS)
        return r;
    /* A marker picks up the legacy stream's implicit dependencies. */
    fc_stream_wait(s, fc_stream_enqueue(s, NULL, NULL, NULL));
    return CUDA_SUCCESS;
}

static CUresult stream_query(CUstream h, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r == CUDA_SUCCESS)
        r = fc_capture_wait_stream(s);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_stream_lock);
    r = s->completed >= s->submitted ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    if (r == CUDA_SUCCESS)
        fc_host_saw_locked();
    pthread_mutex_unlock(&fc_stream_lock);
    return r;
}

static CUresult stream_wait_event(CUstream h, CUevent e, unsigned flags, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = fc_event_check(e)) != CUDA_SUCCESS)
        return r;
    bool done;
    if ((r = fc_capture_event_wait(s, e, flags, &done)) != CUDA_SUCCESS || done)
        return r;
    pthread_mutex_lock(&fc_stream_lock);
    struct fc_dep d = {e->stream, e->seq};
    pthread_mutex_unlock(&fc_stream_lock);
    fc_stream_enqueue(s, NULL, NULL, d.stream ? &d : NULL);
    return CUDA_SUCCESS;
}

struct host_fn {
    CUhostFn fn;
    void *data;
};

static void run_host_fn(void *arg)
{
    struct host_fn *h = arg;
    h->fn(h->data);
    free(h);
}

static CUresult launch_host_func(CUstream h, CUhostFn fn, void *data, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    bool capturing;
    if ((r = fc_capture_enter(s, &capturing)) != CUDA_SUCCESS)
        return r;
    if (capturing) {
        struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_HOST);
        if (n)
            n->u.host = (CUDA_HOST_NODE_PARAMS){fn, data};
        return fc_capture_add(s, n);
    }
    struct host_fn *a = malloc(sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *a = (struct host_fn){fn, data};
    fc_stream_enqueue(s, run_host_fn, a, NULL);
    return CUDA_SUCCESS;
}

/* cuStreamAddCallback (CUDA 5.0): a host function like cuLaunchHostFunc's,
 * called with the stream as named and the stream's status (always
 * CUDA_SUCCESS: fakecuda has no device errors). Flags are reserved (0).
 * "Not supported with cuStreamBeginCapture": on a capturing stream it is
 * refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the capture
 * invalidated, as fakecuda refuses what a capture cannot hold (the
 * reference names neither code nor effect). */
struct stream_callback {
    CUstreamCallback fn;
    CUstream named;
    void *data;
};

static void run_callback(void *arg)
{
    struct stream_callback *c = arg;
    c->fn(c->named, CUDA_SUCCESS, c->data);
    free(c);
}

static CUresult stream_add_callback(CUstream h, CUstreamCallback fn, void *data, unsigned flags, bool ptsz)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!fn || flags)
        return CUDA_ERROR_INVALID_VALUE;
    bool capturing;
    if ((r = fc_capture_enter(s, &capturing)) != CUDA_SUCCESS)
        return r;
    if (capturing)
        return fc_capture_refuse(s);
    struct stream_callback *c = malloc(sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *c = (struct stream_callback){fn, h, data};
    fc_stream_enqueue(s, run_callback, c, NULL);
    return CUDA_SUCCESS;
}

/* The checks every stream getter makes: a known stream, somewhere to write. */
static CUresult resolve_for_query(CUstream h, bool ptds, const void *out, struct CUstream_st **s)
{
    CUresult r = fc_stream_resolve(h, ptds, s);
    return r == CUDA_SUCCESS && !out ? CUDA_ERROR_INVALID_VALUE : r;
}

static CUresult stream_get_flags(CUstream h, unsigned *flags, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = resolve_for_query(h, ptds, flags, &s);
    if (r == CUDA_SUCCESS)
        *flags = s->flags;
    return r;
}

static CUresult stream_get_ctx(CUstream h, CUcontext *pctx, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = resolve_for_query(h, ptds, pctx, &s);
    if (r == CUDA_SUCCESS)
        *pctx = s->ctx;
    return r;
}

static CUresult stream_get_device(CUstream h, CUdevice *dev, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = resolve_for_query(h, ptds, dev, &s);
    if (r == CUDA_SUCCESS)
        *dev = s->ctx->dev;
    return r;
}

size_t fc_live_user_streams(void)
{
    size_t n = 0;
    pthread_mutex_lock(&fc_stream_lock);
    for (struct CUstream_st *s = fc_streams; s; s = s->next)
        n += s->kind == FC_STREAM_USER && !s->destroyed;
    pthread_mutex_unlock(&fc_stream_lock);
    return n;
}

FC_EXPORT int fakecuda_stream_live(void *stream)
{
    pthread_mutex_lock(&fc_stream_lock);
    bool live = false;
    for (struct CUstream_st *s = fc_streams; s && !live; s = s->next)
        live = s == stream && s->kind == FC_STREAM_USER && !s->destroyed;
    pthread_mutex_unlock(&fc_stream_lock);
    return live;
}

FC_EXPORT int fakecuda_set_capturing(void *stream, int capturing)
{
    struct CUstream_st *s;
    if (fc_stream_resolve((CUstream)stream, false, &s) != CUDA_SUCCESS)
        return -1;
    pthread_mutex_lock(&fc_stream_lock);
    s->capturing = capturing != 0;
    pthread_mutex_unlock(&fc_stream_lock);
    return 0;
}

/* ---- entry points: legacy and per-thread (_ptsz) forms ---- */

FC_EXPORT CUresult cuStreamSynchronize(CUstream h) { FC_FAULT(cuStreamSynchronize); return stream_synchronize(h, false); }
FC_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream h) { FC_FAULT(cuStreamSynchronize); return stream_synchronize(h, true); }
FC_EXPORT CUresult cuStreamQuery(CUstream h) { FC_FAULT(cuStreamQuery); return stream_query(h, false); }
FC_EXPORT CUresult cuStreamQuery_ptsz(CUstream h) { FC_FAULT(cuStreamQuery); return stream_query(h, true); }
FC_EXPORT CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int f) { FC_FAULT(cuStreamWaitEvent); return stream_wait_event(h, e, f, false); }
FC_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int f) { FC_FAULT(cuStreamWaitEvent); return stream_wait_event(h, e, f, true); }
FC_EXPORT CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void *d) { FC_FAULT(cuLaunchHostFunc); return launch_host_func(h, fn, d, false); }
FC_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void *d) { FC_FAULT(cuLaunchHostFunc); return launch_host_func(h, fn, d, true); }
/* CUDA 13.2's, with a CUhostTaskSyncMode: how the thread that runs host
 * tasks waits for the next (0 blocking, 1 spin-wait), which changes nothing
 * fakecuda's stream threads do; another value is refused. */
static CUresult launch_host_func_v2(CUstream h, CUhostFn fn, void *d, unsigned mode, bool ptsz)
{
    return mode > 1 ? CUDA_ERROR_INVALID_VALUE : launch_host_func(h, fn, d, ptsz);
}
FC_EXPORT CUresult cuLaunchHostFunc_v2(CUstream h, CUhostFn fn, void *d, unsigned m) { FC_FAULT(cuLaunchHostFunc_v2); return launch_host_func_v2(h, fn, d, m, false); }
FC_EXPORT CUresult cuLaunchHostFunc_v2_ptsz(CUstream h, CUhostFn fn, void *d, unsigned m) { FC_FAULT(cuLaunchHostFunc_v2); return launch_host_func_v2(h, fn, d, m, true); }
FC_EXPORT CUresult cuStreamAddCallback(CUstream h, CUstreamCallback fn, void *d, unsigned int f) { FC_FAULT(cuStreamAddCallback); return stream_add_callback(h, fn, d, f, false); }
FC_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream h, CUstreamCallback fn, void *d, unsigned int f) { FC_FAULT(cuStreamAddCallback); return stream_add_callback(h, fn, d, f, true); }
FC_EXPORT CUresult cuStreamGetFlags(CUstream h, unsigned int *f) { FC_FAULT(cuStreamGetFlags); return stream_get_flags(h, f, false); }
FC_EXPORT CUresult cuStreamGetFlags_ptsz(CUstream h, unsigned int *f) { FC_FAULT(cuStreamGetFlags); return stream_get_flags(h, f, true); }
FC_EXPORT CUresult cuStreamGetCtx(CUstream h, CUcontext *c) { FC_FAULT(cuStreamGetCtx); return stream_get_ctx(h, c, false); }
FC_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream h, CUcontext *c) { FC_FAULT(cuStreamGetCtx); return stream_get_ctx(h, c, true); }
/* CUDA 12.5's: fakecuda has no green contexts, so every stream's is NULL. */
static CUresult stream_get_ctx_v2(CUstream h, CUcontext *c, CUgreenCtx *g, bool ptds)
{
    if (!c || !g)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = stream_get_ctx(h, c, ptds);
    if (r == CUDA_SUCCESS)
        *g = NULL;
    return r;
}
FC_EXPORT CUresult cuStreamGetCtx_v2(CUstream h, CUcontext *c, CUgreenCtx *g) { FC_FAULT(cuStreamGetCtx); return stream_get_ctx_v2(h, c, g, false); }
FC_EXPORT CUresult cuStreamGetCtx_v2_ptsz(CUstream h, CUcontext *c, CUgreenCtx *g) { FC_FAULT(cuStreamGetCtx); return stream_get_ctx_v2(h, c, g, true); }
FC_EXPORT CUresult cuStreamGetDevice(CUstream h, CUdevice *d) { FC_FAULT(cuStreamGetDevice); return stream_get_device(h, d, false); }
FC_EXPORT CUresult cuStreamGetDevice_ptsz(CUstream h, CUdevice *d) { FC_FAULT(cuStreamGetDevice); return stream_get_device(h, d, true); }

/* CUDA 2.0's ABI, which the _v2 superseded in 4.0: still exported and
 * served to older callers, the same call. */
#undef cuStreamDestroy
FC_EXPORT CUresult cuStreamDestroy(CUstream h) { return cuStreamDestroy_v2(h); }
