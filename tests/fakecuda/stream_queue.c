/* fakecuda: each stream's worker and queue. A worker thread runs its
 * stream's queue in order, asynchronously to the caller; work waits for
 * its dependencies, (stream, sequence number) pairs, the legacy default
 * stream's implicit ones included; the host waits for work, one stream's
 * or a whole context's or device's. */
#include <stdlib.h>

#include "tests/fakecuda/stream_state.h"

pthread_mutex_t fc_stream_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t fc_stream_progress = PTHREAD_COND_INITIALIZER;
struct CUstream_st *fc_streams;
struct CUevent_st *fc_events;

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
    pthread_cond_broadcast(&fc_stream_progress);
    for (struct CUstream_st *t = fc_streams; t; t = t->next)
        if (t->blocked && t != s)
            pthread_cond_signal(&t->wake);
}

static void *worker(void *arg)
{
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&fc_stream_lock);
    for (;;) {
        struct fc_op *op = s->head;
        if (op && deps_met(op)) {
            s->head = op->next;
            if (!s->head)
                s->tail = NULL;
            pthread_mutex_unlock(&fc_stream_lock);
            if (op->fn)
                op->fn(op->arg);
            pthread_mutex_lock(&fc_stream_lock);
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
        pthread_cond_wait(&s->wake, &fc_stream_lock);
        s->blocked = false;
    }
    pthread_mutex_unlock(&fc_stream_lock);
    return NULL;
}

int fc_stream_start_worker(struct CUstream_st *s)
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

/* Under lock: the implicit dependencies of new work on s. */
static size_t implicit_deps(struct CUstream_st *s, struct fc_dep *deps, size_t max)
{
    size_t n = 0;
    if (s->kind == FC_STREAM_LEGACY) {
        for (struct CUstream_st *t = fc_streams; t && n < max; t = t->next)
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
    for (struct CUstream_st *t = fc_streams; t; t = t->next)
        n++;
    return n;
}

uint64_t fc_stream_enqueue(struct CUstream_st *s, fc_op_fn fn, void *arg, const struct fc_dep *extra)
{
    pthread_mutex_lock(&fc_stream_lock);
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
    pthread_mutex_unlock(&fc_stream_lock);
    return seq; /* not op->seq: the worker may already have run and freed op */
}

void fc_stream_wait(struct CUstream_st *s, uint64_t seq)
{
    pthread_mutex_lock(&fc_stream_lock);
    while (s->completed < seq)
        pthread_cond_wait(&fc_stream_progress, &fc_stream_lock);
    fc_host_saw_locked();
    pthread_mutex_unlock(&fc_stream_lock);
}

void fc_dep_wait(const struct fc_dep *d)
{
    pthread_mutex_lock(&fc_stream_lock);
    while (d->stream->completed < d->seq)
        pthread_cond_wait(&fc_stream_progress, &fc_stream_lock);
    pthread_mutex_unlock(&fc_stream_lock);
}

/* Waits for everything queued so far on the matching streams. Work queued
 * meanwhile by other threads is not waited for, as with the real driver. */
static void drain_where(struct CUctx_st *ctx, int dev)
{
    pthread_mutex_lock(&fc_stream_lock);
    size_t n = stream_count();
    struct fc_dep *todo = malloc((n + 1) * sizeof *todo);
    size_t k = 0;
    for (struct CUstream_st *t = fc_streams; t && todo; t = t->next)
        if ((ctx ? t->ctx == ctx : dev < 0 || t->ctx->dev == dev) && t->submitted > t->completed)
            todo[k++] = (struct fc_dep){t, t->submitted};
    for (size_t i = 0; i < k; i++)
        while (todo[i].stream->completed < todo[i].seq)
            pthread_cond_wait(&fc_stream_progress, &fc_stream_lock);
    fc_host_saw_locked();
    pthread_mutex_unlock(&fc_stream_lock);
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
