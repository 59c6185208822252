/* The contexts the program made that have had work (contexts.h). Noted
 * rarely (a thread's first work in a context), read by the device syncers
 * before a move: one lock. A syncer marks the context it is syncing busy
 * and drops the lock for the sync, so a cuCtxDestroy of that context waits
 * for the sync to end before the driver destroys it (and never pushes a
 * destroyed handle). */
#include "shim/contexts.h"

#include "policy/policy.h"
#include "shim/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

struct kept {
    CUcontext ctx;
    int dev;
    bool busy;     /* a sync of it is under way, the lock dropped */
    bool dying;    /* the driver is destroying it (spw_contexts_gone) */
    uint64_t swept; /* the last sweep that took it */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;
static struct kept *kept;
static size_t nkept, cap;
static uint64_t sweeps;
static _Atomic uint64_t generation = 1;

uint64_t spw_contexts_generation(void)
{
    return atomic_load_explicit(&generation, memory_order_acquire);
}

static void next_generation(void)
{
    atomic_fetch_add_explicit(&generation, 1, memory_order_acq_rel);
}

/* c's entry, the live one or the one being destroyed (a handle the
 * driver hands out again once the destroy returned may be noted before
 * spw_contexts_destroyed drops the old entry). */
static struct kept *find_as(CUcontext c, bool dying)
{
    for (size_t i = 0; i < nkept; i++)
        if (kept[i].ctx == c && kept[i].dying == dying)
            return &kept[i];
    return NULL;
}

static struct kept *find(CUcontext c)
{
    return find_as(c, false);
}

void spw_contexts_add(CUcontext c, int dev)
{
    pthread_mutex_lock(&lock);
    if (!find(c)) {
        if (nkept == cap) {
            size_t n = cap ? 2 * cap : 8;
            struct kept *k = realloc(kept, n * sizeof *k);
            if (!k) {
                pthread_mutex_unlock(&lock);
                spw_error("out of memory noting a context of device %d: its work is not waited "
                          "for before a move",
                          dev);
                return;
            }
            kept = k;
            cap = n;
        }
        kept[nkept++] = (struct kept){.ctx = c, .dev = dev};
        spw_debug("context %p of device %d has work: the device's syncs cover it", (void *)c, dev);
    }
    pthread_mutex_unlock(&lock);
}

/* Under the lock; e not busy. */
static void drop(struct kept *e)
{
    *e = kept[--nkept];
    next_generation();
}

void spw_contexts_gone(CUcontext c)
{
    pthread_mutex_lock(&lock);
    struct kept *e;
    while ((e = find(c)) && e->busy)
        pthread_cond_wait(&idle, &lock);
    if (e)
        e->dying = true;
    next_generation(); /* a thread may remember c as a primary context */
    pthread_mutex_unlock(&lock);
}

void spw_contexts_destroyed(CUcontext c, bool destroyed)
{
    pthread_mutex_lock(&lock);
    struct kept *e = find_as(c, true);
    if (e && destroyed)
        drop(e);
    else if (e)
        e->dying = false; /* still a context, its work still to sync */
    pthread_cond_broadcast(&idle);
    pthread_mutex_unlock(&lock);
}

int spw_contexts_kept(int dev)
{
    int n = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nkept && !n; i++)
        n = kept[i].dev == dev;
    pthread_mutex_unlock(&lock);
    return n;
}

void spw_contexts_stream_gone(void)
{
    next_generation();
}

/* A refusal after which the context runs no more work: a handle that is
 * no longer a context, or an error that ends the context. */
static bool ended(CUresult r)
{
    return r == CUDA_ERROR_INVALID_CONTEXT || sw_error_ends_context(r);
}

CUresult spw_contexts_sync(int dev, CUresult (*sync)(CUcontext))
{
    CUresult first = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    /* Each of dev's contexts once in this sweep, found again by handle
     * after each sync (the list changes while the lock is dropped). One
     * that another sync has busy is waited for and synced again: that sync
     * may have begun before the work this one must cover. One the driver
     * is destroying is waited for, never made current: the destroy waits
     * for its work, as a sync would (a sweep that skipped it would let a
     * block freed under that work be handed out while it runs). */
    uint64_t sweep = ++sweeps;
    for (;;) {
        struct kept *e = NULL;
        bool wait = false;
        for (size_t i = 0; i < nkept && !e; i++) {
            if (kept[i].dev != dev || kept[i].swept == sweep)
                continue;
            if (kept[i].busy || kept[i].dying)
                wait = true;
            else
                e = &kept[i];
        }
        if (!e && !wait)
            break;
        if (!e) {
            pthread_cond_wait(&idle, &lock);
            continue;
        }
        CUcontext c = e->ctx;
        e->busy = true;
        e->swept = sweep;
        pthread_mutex_unlock(&lock);
        CUresult r = sync(c);
        pthread_mutex_lock(&lock);
        e = find(c); /* still kept: a destroy waits while it is busy */
        e->busy = false;
        pthread_cond_broadcast(&idle);
        if (r != CUDA_SUCCESS && ended(r)) {
            spw_debug("context %p of device %d ended (error %d): no longer synced", (void *)c,
                      dev, (int)r);
            drop(e);
        } else if (r != CUDA_SUCCESS && first == CUDA_SUCCESS) {
            first = r;
        }
    }
    pthread_mutex_unlock(&lock);
    return first;
}
