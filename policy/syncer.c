/* Device syncs that the caller can stop waiting for.
 *
 * A cuCtxSynchronize waits for every piece of work queued on the device,
 * and some work waits for work the program has yet to submit: half of a
 * collective on device 0 waits for its other half on device 1, which the
 * thread now allocating will launch once the allocation returns (issue 12
 * reproduced the deadlock). So policy/ never syncs on the program's thread:
 * each device has a thread that runs the syncs asked of it, and a caller
 * waits for its answer only until a deadline, then goes on without it (an
 * allocation is then backed by host pages, a fill waits for a later turn).
 *
 * A sync answers an asker only if it began after the ask: work queued
 * before the ask is then covered. Each sync also marks the pending frees it
 * covers (freeq.c's epochs). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "policy/internal.h"

/* The device's overdue bit (sw_policy.overdue), set and cleared only under
 * s->m: the mutex orders them, so a clear never undoes a later set. Relaxed:
 * the bit publishes no data, it only tells an operation that could do
 * without the device not to wait for it (sw_back_off). A stale set bit
 * makes one more allocation take host pages, a stale clear makes one wait
 * a patience as before: neither moves a page, and every move still closes
 * the gates and syncs (sw_quiesce). */
static void set_overdue(sw_syncer *s, uint64_t gen)
{
    if (s->done >= gen)
        return; /* answered as the wait timed out */
    if (gen > s->overdue)
        s->overdue = gen;
    atomic_fetch_or_explicit(&s->pol->overdue, 1ull << s->dev, memory_order_relaxed);
}

static void clear_overdue(sw_syncer *s)
{
    s->overdue = 0;
    atomic_fetch_and_explicit(&s->pol->overdue, ~(1ull << s->dev), memory_order_relaxed);
}

static void *syncer_main(void *arg)
{
    sw_syncer *s = arg;
    sw_policy *p = s->pol;
    const sw_backend *be = &p->be;
    if (be->thread_start)
        be->thread_start(be->ctx);
    pthread_mutex_lock(&s->m);
    for (;;) {
        while (s->asked == s->done && !s->stop)
            pthread_cond_wait(&s->ask, &s->m);
        if (s->stop)
            break;
        uint64_t gen = s->asked;
        void *tokens[SW_SYNC_TOKENS];
        size_t ntokens = s->ntokens;
        for (size_t i = 0; i < ntokens; i++)
            tokens[i] = s->tokens[i];
        s->ntokens = 0;
        s->busy = true;
        if (ntokens == SW_SYNC_TOKENS)
            pthread_cond_broadcast(&s->answered); /* askers waiting for room */
        pthread_mutex_unlock(&s->m);
        uint64_t ticket = sw_sync_begin(p, s->dev);
        CUresult r = CUDA_SUCCESS;
        /* A capture begun since the request was made: a sync now would
         * invalidate it (the askers see NOT_READY, as when they ask while
         * one runs). */
        if (be->capturing && be->capturing(be->ctx))
            r = CUDA_ERROR_NOT_READY;
        for (size_t i = 0; i < ntokens && r == CUDA_SUCCESS; i++)
            r = be->sync_context(be->ctx, s->dev, tokens[i]);
        if (r == CUDA_SUCCESS)
            r = be->synchronize(be->ctx, s->dev);
        /* A capture begun after the check above: the driver refused the
         * sync for it (and invalidated it). The askers go on as when the
         * device is busy; the capture's error is the program's, not an
         * allocation's. */
        if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
            r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
            r = CUDA_ERROR_NOT_READY;
        if (r == CUDA_SUCCESS) {
            sw_sync_end(p, s->dev, ticket);
            /* Counted on the device whether or not it has a pool (its
             * counters outlive a later set-up, as pass-through counts do). */
            sw_device *d = &p->dev[s->dev];
            sw_figure_add(&d->c, &d->c.syncs, 1);
        }
        pthread_mutex_lock(&s->m);
        s->busy = false;
        s->done = gen;
        s->result = r;
        if (s->overdue && s->overdue <= gen)
            clear_overdue(s);
        pthread_cond_broadcast(&s->answered);
    }
    s->running = false;
    if (s->overdue)
        clear_overdue(s);
    pthread_cond_broadcast(&s->answered);
    pthread_mutex_unlock(&s->m);
    return NULL;
}

int sw_syncer_init(sw_syncer *s, sw_policy *p, int dev)
{
    *s = (sw_syncer){.pol = p, .dev = dev};
    if (pthread_mutex_init(&s->m, NULL) || pthread_cond_init(&s->ask, NULL))
        return -1;
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int r = pthread_cond_init(&s->answered, &a);
    pthread_condattr_destroy(&a);
    return r ? -1 : 0;
}

/* Started on first use: a program that never spills never has it. */
static CUresult start(sw_syncer *s)
{
    if (s->running)
        return CUDA_SUCCESS;
    if (pthread_create(&s->thread, NULL, syncer_main, s))
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->running = true;
    return CUDA_SUCCESS;
}

static CUresult syncer_wait(sw_syncer *s, uint64_t deadline_ns)
{
    const sw_backend *be = &s->pol->be;
    if (be->capturing && be->capturing(be->ctx))
        return CUDA_ERROR_NOT_READY; /* a sync would invalidate the capture */
    pthread_mutex_lock(&s->m);
    CUresult r = start(s);
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&s->m);
        return r;
    }
    /* The asker's own context, if the program uses one besides the
     * primary: its work counts too, and synchronize does not cover it. A
     * context that finds no room waits for the syncer to take the ones
     * there (at its next sync's start): answered without its context, the
     * asker would take work still running there for done. */
    struct timespec ts = {(time_t)(deadline_ns / 1000000000ull),
                          (long)(deadline_ns % 1000000000ull)};
    void *token = be->sync_token ? be->sync_token(be->ctx, s->dev) : NULL;
    while (token && be->sync_context) {
        size_t i = 0;
        while (i < s->ntokens && s->tokens[i] != token)
            i++;
        if (i < s->ntokens)
            break;
        if (s->ntokens < SW_SYNC_TOKENS) {
            s->tokens[s->ntokens++] = token;
            break;
        }
        int waited = !s->running                ? ETIMEDOUT
                     : deadline_ns == UINT64_MAX ? pthread_cond_wait(&s->answered, &s->m)
                                                 : pthread_cond_timedwait(&s->answered, &s->m, &ts);
        if (waited) {
            pthread_mutex_unlock(&s->m);
            sw_figure_add(&s->pol->dev[s->dev].c, &s->pol->dev[s->dev].c.wait_timeouts, 1);
            return CUDA_ERROR_NOT_READY;
        }
    }
    uint64_t mine = ++s->asked;
    pthread_cond_signal(&s->ask);
    while (s->done < mine && s->running) {
        if (deadline_ns == UINT64_MAX) {
            pthread_cond_wait(&s->answered, &s->m);
        } else if (pthread_cond_timedwait(&s->answered, &s->m, &ts)) {
            set_overdue(s, mine);
            pthread_mutex_unlock(&s->m);
            sw_figure_add(&s->pol->dev[s->dev].c, &s->pol->dev[s->dev].c.wait_timeouts, 1);
            return CUDA_ERROR_NOT_READY;
        }
    }
    r = s->done >= mine ? s->result : CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&s->m);
    return r;
}

CUresult sw_sync_device(sw_policy *p, int dev, uint64_t deadline_ns)
{
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES)
        return CUDA_ERROR_INVALID_VALUE;
    return syncer_wait(&p->syncer[dev], deadline_ns);
}

void sw_syncer_destroy(sw_syncer *s)
{
    pthread_mutex_lock(&s->m);
    bool running = s->running;
    s->stop = true;
    pthread_cond_signal(&s->ask);
    pthread_mutex_unlock(&s->m);
    /* A sync stuck on work that never completes would hang the join: only
     * teardown waits, and teardown synchronizes first anyway. */
    if (running)
        pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->m);
    pthread_cond_destroy(&s->ask);
    pthread_cond_destroy(&s->answered);
}

uint64_t sw_deadline(const sw_device *d)
{
    return sw_now_ns() + d->cfg.quiesce_wait_ns;
}

/* One deadline per operation rather than skipping a wait after one timed
 * out: it also bounds a sync answered just before its deadline followed by
 * a quiesce that would have waited a whole patience more. */
uint64_t sw_deadline_of(const sw_device *d, uint64_t *by)
{
    if (!by)
        return sw_deadline(d);
    if (!*by)
        *by = sw_deadline(d);
    return *by;
}

/* Sync tickets: a sync that began after ticket t was taken covers every
 * free queued before t (freeq.c reads q.covered). */
uint64_t sw_sync_begin(sw_policy *p, int dev)
{
    sw_device *d = sw_dev(p, dev);
    if (!d)
        return 0;
    return atomic_fetch_add_explicit(&d->q.epoch, 1, memory_order_acq_rel);
}

void sw_sync_end(sw_policy *p, int dev, uint64_t ticket)
{
    sw_device *d = sw_dev(p, dev);
    if (!d)
        return;
    uint64_t cur = atomic_load_explicit(&d->q.covered, memory_order_relaxed);
    while (cur < ticket && !atomic_compare_exchange_weak_explicit(
                               &d->q.covered, &cur, ticket, memory_order_acq_rel,
                               memory_order_relaxed))
        ;
}
