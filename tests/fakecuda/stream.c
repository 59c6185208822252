/* fakecuda: streams and events. Every stream is a worker thread that runs
 * its queue in order, asynchronously to the caller, so work still queued
 * when a program (or spillway) unmaps memory really touches unmapped memory.
 * The legacy default stream keeps CUDA's rules: its work starts after all
 * earlier work of the blocking streams of its context, and their later work
 * starts after it. Dependencies are (stream, sequence number) pairs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/graph.h"
#include "tests/fakecuda/internal.h"

struct fc_op {
    struct fc_op *next;
    uint64_t seq;
    fc_op_fn fn;
    void *arg;
    size_t ndeps;
    struct fc_dep deps[];
};

struct CUstream_st {
    uint32_t magic;
    struct CUctx_st *ctx;
    unsigned flags;
    int priority;
    enum fc_stream_kind kind;
    bool destroyed;
    bool exited;    /* its worker is gone (destroyed, queue done) */
    bool capturing; /* fakecuda_set_capturing: a status only, without capture's rules */
    bool blocked;   /* its worker waits for another stream's work (deps_met) */
    pthread_cond_t wake; /* its worker's: new work, destroyed, or a dep met */
    struct fc_op *head, *tail;
    uint64_t submitted, completed;
    struct CUstream_st *next;
};

struct CUevent_st {
    uint32_t magic;
    unsigned flags;
    struct CUctx_st *ctx; /* current at its creation: it records only there */
    struct CUstream_st *stream; /* NULL until recorded */
    uint64_t seq;
    struct CUevent_st *next;
};

/* One lock for all stream state: simple, and tests are small. Stream
 * structs are never freed, so a dependency or an event can always look at
 * a stream's counters. Each worker sleeps on its stream's own condition and
 * the host's waits on `progress`: a broadcast that woke every worker and
 * waiter at every step cost each step a context switch per stream (a third
 * of a spilling run's time on a virtual machine). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t progress = PTHREAD_COND_INITIALIZER;
static struct CUstream_st *streams;
static struct CUevent_st *events;

/* ---- unmap hazards (FAKECUDA_CHECK_UNMAP=1) ----
 * On a GPU, unmapping memory that a queued or running copy still uses
 * faults the copy and kills the context (docs/design.md, "The remap
 * hazard"). Here the copy's worker would fault only if it has not run
 * yet: a race. With the check on, every
 * copy and set is remembered until the host has seen it complete (a wait
 * returned, or a query answered "done", after it completed), and unmapping
 * memory one of the others still uses stops the process with a message:
 * the hazard is caught whether or not the worker was fast. */
struct tracked {
    struct CUstream_st *s;
    uint64_t seq;
    uintptr_t base[2];
    size_t size[2];
    struct tracked *next;
};

bool fc_check_unmap;
static struct tracked *tracked; /* under lock */

__attribute__((constructor)) static void check_unmap_environment(void)
{
    const char *v = getenv("FAKECUDA_CHECK_UNMAP");
    fc_check_unmap = v && *v && strcmp(v, "0") != 0;
}

FC_EXPORT int fakecuda_check_unmap(int on)
{
    bool was = fc_check_unmap;
    fc_check_unmap = on != 0;
    return was;
}

void fc_track_op(struct CUstream_st *s, uint64_t seq, uintptr_t a, size_t an, uintptr_t b,
                 size_t bn)
{
    struct tracked *t = malloc(sizeof *t);
    if (!t)
        abort(); /* as fc_stream_enqueue: tests are small */
    *t = (struct tracked){s, seq, {a, b}, {an, bn}, NULL};
    pthread_mutex_lock(&lock);
    t->next = tracked;
    tracked = t;
    pthread_mutex_unlock(&lock);
}

/* Under lock: the host now knows that everything complete is complete. */
static void host_saw_locked(void)
{
    for (struct tracked **pp = &tracked; *pp;) {
        struct tracked *t = *pp;
        if (t->s->completed >= t->seq) {
            *pp = t->next;
            free(t);
        } else {
            pp = &t->next;
        }
    }
}

static bool overlap(uintptr_t a, size_t an, uintptr_t b, size_t bn)
{
    return an && bn && a < b + bn && b < a + an;
}

void fc_unmap_check(uintptr_t addr, size_t size)
{
    pthread_mutex_lock(&lock);
    for (struct tracked *t = tracked; t; t = t->next)
        for (int i = 0; i < 2; i++)
            if (overlap(addr, size, t->base[i], t->size[i])) {
                fprintf(stderr,
                        "fakecuda: HAZARD: cuMemUnmap(%#lx, %zu) while work %llu of stream %p "
                        "uses [%#lx, +%zu) and the host has not seen it complete: on a GPU "
                        "the unmap faults that work and kills the context\n",
                        (unsigned long)addr, size, (unsigned long long)t->seq, (void *)t->s,
                        (unsigned long)t->base[i], t->size[i]);
                abort();
            }
    pthread_mutex_unlock(&lock);
}

#define PT_MAX 8
static _Thread_local struct {
    struct CUctx_st *ctx;
    struct CUstream_st *s;
} per_thread[PT_MAX];

static bool blocking(const struct CUstream_st *s)
{
    return !(s->flags & CU_STREAM_NON_BLOCKING);
}

static bool deps_met(const struct fc_op *op)
{
    for (size_t i = 0; i < op->ndeps; i++)
        if (op->deps[i].stream->completed < op->deps[i].seq)
            return false;
    return true;
}

/* Under lock: s completed work or exited. The host's waits look again, and
 * so does every worker waiting for another stream's work. */
static void progressed(struct CUstream_st *s)
{
    pthread_cond_broadcast(&progress);
    for (struct CUstream_st *t = streams; t; t = t->next)
        if (t->blocked && t != s)
            pthread_cond_signal(&t->wake);
}

/* Under lock: s has new work or is destroyed. */
static void kick(struct CUstream_st *s)
{
    pthread_cond_signal(&s->wake);
}

static void *worker(void *arg)
{
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        struct fc_op *op = s->head;
        if (op && deps_met(op)) {
            s->head = op->next;
            if (!s->head)
                s->tail = NULL;
            pthread_mutex_unlock(&lock);
            if (op->fn)
                op->fn(op->arg);
            pthread_mutex_lock(&lock);
            s->completed = op->seq;
            free(op);
            progressed(s);
            continue;
        }
        if (!op && s->destroyed) {
            s->exited = true;
            progressed(s);
            break;
        }
        s->blocked = op != NULL;
        pthread_cond_wait(&s->wake, &lock);
        s->blocked = false;
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void *worker(void *arg);

/* fakecuda_reuse_streams: cuStreamCreate gives a destroyed stream's handle
 * back, as the driver may (its handles are its freed memory). */
static bool reuse_handles;

FC_EXPORT int fakecuda_reuse_streams(int on)
{
    pthread_mutex_lock(&lock);
    reuse_handles = on != 0;
    pthread_mutex_unlock(&lock);
    return 0;
}

static int start_worker(struct CUstream_st *s)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 << 10);
    int err = pthread_create(&t, &attr, worker, s);
    pthread_attr_destroy(&attr);
    return err;
}

/* A destroyed user stream made anew in ctx once its worker is gone; NULL
 * when reuse is off or none is destroyed. Its counters keep counting, so
 * a dependency on its old work (an event) stays met. */
static struct CUstream_st *stream_reused(struct CUctx_st *ctx, unsigned flags, int prio)
{
    pthread_mutex_lock(&lock);
    struct CUstream_st *s = streams;
    while (reuse_handles && s && !(s->kind == FC_STREAM_USER && s->destroyed))
        s = s->next;
    if (!reuse_handles || !s) {
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    while (!s->exited)
        pthread_cond_wait(&progress, &lock);
    s->ctx = ctx;
    s->flags = flags;
    s->priority = prio;
    s->capturing = false;
    s->destroyed = s->exited = false;
    if (start_worker(s) != 0) {
        s->destroyed = s->exited = true;
        s = NULL;
    }
    pthread_mutex_unlock(&lock);
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
    if (start_worker(s) != 0) {
        pthread_cond_destroy(&s->wake);
        free(s);
        return NULL;
    }
    pthread_mutex_lock(&lock);
    s->next = streams;
    streams = s;
    pthread_mutex_unlock(&lock);
    return s;
}

static bool stream_known(struct CUstream_st *s)
{
    for (struct CUstream_st *t = streams; t; t = t->next)
        if (t == s)
            return !t->destroyed;
    return false;
}

static struct CUstream_st *legacy_of(struct CUctx_st *ctx)
{
    pthread_mutex_lock(&lock);
    struct CUstream_st *s = ctx->legacy;
    pthread_mutex_unlock(&lock);
    if (s)
        return s;
    struct CUstream_st *n = stream_new(ctx, 0, 0, FC_STREAM_LEGACY);
    if (!n)
        return NULL;
    pthread_mutex_lock(&lock);
    if (!ctx->legacy)
        ctx->legacy = n;
    else
        n->destroyed = true; /* lost a race: retire the spare */
    s = ctx->legacy;
    kick(n);
    pthread_mutex_unlock(&lock);
    return s;
}

static struct CUstream_st *per_thread_of(struct CUctx_st *ctx)
{
    int free_slot = -1;
    for (int i = 0; i < PT_MAX; i++) {
        if (per_thread[i].ctx == ctx) {
            pthread_mutex_lock(&lock);
            bool gone = per_thread[i].s->destroyed; /* its context was reset */
            pthread_mutex_unlock(&lock);
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
        pthread_mutex_lock(&lock);
        s = stream_known(h) ? h : NULL;
        pthread_mutex_unlock(&lock);
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
    pthread_mutex_lock(&lock);
    bool on = s->capturing;
    pthread_mutex_unlock(&lock);
    return on;
}

/* Under lock: the implicit dependencies of new work on s. */
static size_t implicit_deps(struct CUstream_st *s, struct fc_dep *deps, size_t max)
{
    size_t n = 0;
    if (s->kind == FC_STREAM_LEGACY) {
        for (struct CUstream_st *t = streams; t && n < max; t = t->next)
            if (t != s && t->ctx == s->ctx && blocking(t) && t->submitted > t->completed)
                deps[n++] = (struct fc_dep){t, t->submitted};
    } else if (blocking(s)) {
        struct CUstream_st *l = s->ctx->legacy;
        if (l && l->submitted > l->completed)
            deps[n++] = (struct fc_dep){l, l->submitted};
    }
    return n;
}

static size_t stream_count(void)
{
    size_t n = 0;
    for (struct CUstream_st *t = streams; t; t = t->next)
        n++;
    return n;
}

uint64_t fc_stream_enqueue(struct CUstream_st *s, fc_op_fn fn, void *arg, const struct fc_dep *extra)
{
    pthread_mutex_lock(&lock);
    size_t max = stream_count() + 1;
    struct fc_op *op = malloc(sizeof *op + max * sizeof op->deps[0]);
    if (!op)
        abort(); /* the emulation cannot report this faithfully; tests are small */
    op->next = NULL;
    op->fn = fn;
    op->arg = arg;
    op->ndeps = implicit_deps(s, op->deps, max - 1);
    if (extra && extra->stream->completed < extra->seq)
        op->deps[op->ndeps++] = *extra;
    uint64_t seq = op->seq = ++s->submitted;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    kick(s);
    pthread_mutex_unlock(&lock);
    return seq; /* not op->seq: the worker may already have run and freed op */
}

void fc_stream_wait(struct CUstream_st *s, uint64_t seq)
{
    pthread_mutex_lock(&lock);
    while (s->completed < seq)
        pthread_cond_wait(&progress, &lock);
    host_saw_locked();
    pthread_mutex_unlock(&lock);
}

void fc_dep_wait(const struct fc_dep *d)
{
    pthread_mutex_lock(&lock);
    while (d->stream->completed < d->seq)
        pthread_cond_wait(&progress, &lock);
    pthread_mutex_unlock(&lock);
}

/* Waits for everything queued so far on the matching streams. Work queued
 * meanwhile by other threads is not waited for, as with the real driver. */
static void drain_where(struct CUctx_st *ctx, int dev)
{
    pthread_mutex_lock(&lock);
    size_t n = stream_count();
    struct fc_dep *todo = malloc((n + 1) * sizeof *todo);
    size_t k = 0;
    for (struct CUstream_st *t = streams; t && todo; t = t->next)
        if ((ctx ? t->ctx == ctx : dev < 0 || t->ctx->dev == dev) && t->submitted > t->completed)
            todo[k++] = (struct fc_dep){t, t->submitted};
    for (size_t i = 0; i < k; i++)
        while (todo[i].stream->completed < todo[i].seq)
            pthread_cond_wait(&progress, &lock);
    host_saw_locked();
    pthread_mutex_unlock(&lock);
    free(todo);
}

void fc_ctx_drain(struct CUctx_st *ctx)
{
    drain_where(ctx, -1);
}

void fc_device_drain(int dev)
{
    drain_where(NULL, dev);
}

/* A primary context's reset or a context's destroy: its streams (user, legacy, per-thread) and
 * events are destroyed; the legacy and per-thread streams are made anew on
 * next use. The context's work is finished, so each worker exits at once. */
void fc_ctx_end_streams(struct CUctx_st *ctx)
{
    struct CUevent_st *gone = NULL;
    pthread_mutex_lock(&lock);
    for (struct CUstream_st *s = streams; s; s = s->next)
        if (s->ctx == ctx) {
            s->destroyed = true;
            kick(s);
        }
    ctx->legacy = NULL;
    for (struct CUevent_st **pp = &events; *pp;) {
        struct CUevent_st *e = *pp;
        if (e->ctx == ctx) {
            *pp = e->next;
            e->next = gone;
            gone = e;
        } else {
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&lock);
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
    pthread_mutex_lock(&lock);
    bool ok = h && stream_known(h) && h->kind == FC_STREAM_USER;
    if (ok) {
        h->destroyed = true; /* its worker finishes the queue, then exits */
        kick(h);
    }
    pthread_mutex_unlock(&lock);
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
    pthread_mutex_lock(&lock);
    r = s->completed >= s->submitted ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    if (r == CUDA_SUCCESS)
        host_saw_locked();
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult event_known(CUevent e)
{
    pthread_mutex_lock(&lock);
    bool ok = false;
    for (struct CUevent_st *x = events; x && !ok; x = x->next)
        ok = x == e;
    pthread_mutex_unlock(&lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult fc_event_check(CUevent e)
{
    return event_known(e);
}

bool fc_event_dep(CUevent e, struct fc_dep *d)
{
    pthread_mutex_lock(&lock);
    *d = (struct fc_dep){e->stream, e->seq};
    pthread_mutex_unlock(&lock);
    return d->stream != NULL;
}

void fc_event_set(CUevent e, struct CUstream_st *s, uint64_t seq)
{
    pthread_mutex_lock(&lock);
    e->stream = s;
    e->seq = seq;
    pthread_mutex_unlock(&lock);
}

static CUresult stream_wait_event(CUstream h, CUevent e, unsigned flags, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = event_known(e)) != CUDA_SUCCESS)
        return r;
    bool done;
    if ((r = fc_capture_event_wait(s, e, flags, &done)) != CUDA_SUCCESS || done)
        return r;
    pthread_mutex_lock(&lock);
    struct fc_dep d = {e->stream, e->seq};
    pthread_mutex_unlock(&lock);
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

size_t fc_live_events(void)
{
    size_t n = 0;
    pthread_mutex_lock(&lock);
    for (struct CUevent_st *e = events; e; e = e->next)
        n++;
    pthread_mutex_unlock(&lock);
    return n;
}

size_t fc_live_user_streams(void)
{
    size_t n = 0;
    pthread_mutex_lock(&lock);
    for (struct CUstream_st *s = streams; s; s = s->next)
        n += s->kind == FC_STREAM_USER && !s->destroyed;
    pthread_mutex_unlock(&lock);
    return n;
}

FC_EXPORT int fakecuda_stream_live(void *stream)
{
    pthread_mutex_lock(&lock);
    bool live = false;
    for (struct CUstream_st *s = streams; s && !live; s = s->next)
        live = s == stream && s->kind == FC_STREAM_USER && !s->destroyed;
    pthread_mutex_unlock(&lock);
    return live;
}

FC_EXPORT int fakecuda_set_capturing(void *stream, int capturing)
{
    struct CUstream_st *s;
    if (fc_stream_resolve((CUstream)stream, false, &s) != CUDA_SUCCESS)
        return -1;
    pthread_mutex_lock(&lock);
    s->capturing = capturing != 0;
    pthread_mutex_unlock(&lock);
    return 0;
}

/* ---- events ---- */

FC_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int flags)
{
    FC_FAULT(cuEventCreate);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    struct CUctx_st *ctx;
    if ((r = fc_current_ctx(&ctx)) != CUDA_SUCCESS)
        return r;
    if (!phEvent || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                        CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->magic = FC_MAGIC_EVENT;
    e->flags = flags;
    e->ctx = ctx;
    pthread_mutex_lock(&lock);
    e->next = events;
    events = e;
    pthread_mutex_unlock(&lock);
    *phEvent = e;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuEventDestroy(CUevent e)
{
    FC_FAULT(cuEventDestroy);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&lock);
    struct CUevent_st **pp = &events;
    while (*pp && *pp != e)
        pp = &(*pp)->next;
    bool found = e && *pp;
    if (found)
        *pp = e->next;
    pthread_mutex_unlock(&lock);
    if (!found)
        return CUDA_ERROR_INVALID_HANDLE;
    fc_capture_event_forget(e);
    free(e);
    return CUDA_SUCCESS;
}

static CUresult event_record(CUevent e, CUstream h, unsigned flags, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = event_known(e)) != CUDA_SUCCESS)
        return r;
    /* "hEvent and hStream must be from the same context otherwise
     * CUDA_ERROR_INVALID_HANDLE is returned" */
    if (e->ctx != s->ctx)
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    bool done;
    if ((r = fc_capture_event_record(e, s, flags, &done)) != CUDA_SUCCESS || done)
        return r;
    if (flags & CU_EVENT_RECORD_EXTERNAL) /* "invalid outside of stream capture" */
        return CUDA_ERROR_INVALID_VALUE;
    fc_capture_event_forget(e);
    uint64_t seq = fc_stream_enqueue(s, NULL, NULL, NULL);
    pthread_mutex_lock(&lock);
    e->stream = s;
    e->seq = seq;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuEventQuery(CUevent e)
{
    FC_FAULT(cuEventQuery);
    CUresult r = fc_initialized();
    if (r == CUDA_SUCCESS)
        r = event_known(e);
    if (r == CUDA_SUCCESS)
        r = fc_capture_event_use(e);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&lock);
    r = !e->stream || e->stream->completed >= e->seq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    if (r == CUDA_SUCCESS)
        host_saw_locked();
    pthread_mutex_unlock(&lock);
    return r;
}

FC_EXPORT CUresult cuEventSynchronize(CUevent e)
{
    FC_FAULT(cuEventSynchronize);
    CUresult r = fc_initialized();
    if (r == CUDA_SUCCESS)
        r = event_known(e);
    if (r == CUDA_SUCCESS)
        r = fc_capture_event_use(e);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&lock);
    struct CUstream_st *s = e->stream;
    uint64_t seq = e->seq;
    pthread_mutex_unlock(&lock);
    if (s)
        fc_stream_wait(s, seq);
    return CUDA_SUCCESS;
}

/* ---- entry points: legacy and per-thread (_ptsz) forms ---- */

FC_EXPORT CUresult cuStreamSynchronize(CUstream h) { FC_FAULT(cuStreamSynchronize); return stream_synchronize(h, false); }
FC_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream h) { FC_FAULT(cuStreamSynchronize); return stream_synchronize(h, true); }
FC_EXPORT CUresult cuStreamQuery(CUstream h) { FC_FAULT(cuStreamQuery); return stream_query(h, false); }
FC_EXPORT CUresult cuStreamQuery_ptsz(CUstream h) { FC_FAULT(cuStreamQuery); return stream_query(h, true); }
FC_EXPORT CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int f) { FC_FAULT(cuStreamWaitEvent); return stream_wait_event(h, e, f, false); }
FC_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int f) { FC_FAULT(cuStreamWaitEvent); return stream_wait_event(h, e, f, true); }
FC_EXPORT CUresult cuEventRecord(CUevent e, CUstream h) { FC_FAULT(cuEventRecord); return event_record(e, h, 0, false); }
FC_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream h) { FC_FAULT(cuEventRecord); return event_record(e, h, 0, true); }
FC_EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream h, unsigned int f) { FC_FAULT(cuEventRecordWithFlags); return event_record(e, h, f, false); }
FC_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream h, unsigned int f) { FC_FAULT(cuEventRecordWithFlags); return event_record(e, h, f, true); }
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
