/* The fake backend's streams (fakebackend.h): simulated work, in flight
 * until its stream completes, and the syncs that complete it. */
#include "tests/unit/policy/fakebackend_state.h"

#include <stdlib.h>

/* ---- streams and work ---------------------------------------------------- */

stream_state *fb_stream_of(fake_backend *fb, CUstream s)
{
    for (int i = 0; i < fb->nstreams; i++)
        if (fb->streams[i].s == s)
            return &fb->streams[i];
    if (fb->nstreams == MAX_STREAMS)
        abort();
    stream_state *st = &fb->streams[fb->nstreams++];
    st->s = s;
    st->issued = st->completed = 0;
    return st;
}

static void purge_work(fake_backend *fb)
{
    int n = 0;
    for (int i = 0; i < fb->nworks; i++)
        if (fb->works[i].seq > fb_stream_of(fb, fb->works[i].s)->completed)
            fb->works[n++] = fb->works[i];
    fb->nworks = n;
}

void fake_launch(fake_backend *fb, CUstream s, CUdeviceptr ptr, size_t size)
{
    pthread_mutex_lock(&fb->lock);
    if (fb->nworks == MAX_WORK)
        purge_work(fb);
    if (fb->nworks == MAX_WORK)
        abort();
    stream_state *st = fb_stream_of(fb, s);
    fb->works[fb->nworks++] = (work){s, ++st->issued, ptr, size};
    pthread_mutex_unlock(&fb->lock);
}

void fake_complete(fake_backend *fb, CUstream s)
{
    pthread_mutex_lock(&fb->lock);
    stream_state *st = fb_stream_of(fb, s);
    st->completed = st->issued;
    purge_work(fb);
    pthread_mutex_unlock(&fb->lock);
}

bool fb_inflight(fake_backend *fb, CUdeviceptr ptr, size_t size, CUstream except,
                 bool use_except)
{
    for (int i = 0; i < fb->nworks; i++) {
        work *w = &fb->works[i];
        if (use_except && w->s == except)
            continue;
        if (w->seq <= fb_stream_of(fb, w->s)->completed)
            continue;
        if (w->ptr < ptr + size && ptr < w->ptr + w->size)
            return true;
    }
    return false;
}

bool fake_conflict(fake_backend *fb, CUdeviceptr ptr, size_t size, CUstream s)
{
    pthread_mutex_lock(&fb->lock);
    bool c = fb_inflight(fb, ptr, size, s, true);
    pthread_mutex_unlock(&fb->lock);
    return c;
}

static CUresult b_synchronize(void *ctx, int dev)
{
    fake_backend *fb = ctx;
    (void)dev;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    while (fb->sync_held) /* in-flight work waiting for work not yet submitted */
        pthread_cond_wait(&fb->sync_release, &fb->lock);
    if (!fb_injected(fb, "synchronize", &r)) {
        for (int i = 0; i < fb->nstreams; i++)
            fb->streams[i].completed = fb->streams[i].issued;
        fb->nworks = 0;
        fb->st.syncs++;
    }
    void (*fn)(void *) = fb_hook_due(fb, "synchronize");
    pthread_mutex_unlock(&fb->lock);
    if (fn)
        fn(fb->on_arg);
    return r;
}

static CUresult b_stream_create(void *ctx, int dev, CUstream *out)
{
    fake_backend *fb = ctx;
    (void)dev;
    pthread_mutex_lock(&fb->lock);
    *out = (CUstream)(uintptr_t)(0x5000 + ++fb->nmovers);
    pthread_mutex_unlock(&fb->lock);
    return CUDA_SUCCESS;
}

/* Completes the work of one stream only (the mover's own copies). */
static CUresult b_stream_sync(void *ctx, int dev, CUstream s)
{
    fake_backend *fb = ctx;
    (void)dev;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    if (!fb_injected(fb, "stream_sync", &r)) {
        stream_state *st = fb_stream_of(fb, s);
        st->completed = st->issued;
        purge_work(fb);
    }
    void (*fn)(void *) = fb_hook_due(fb, "stream_sync");
    pthread_mutex_unlock(&fb->lock);
    if (fn)
        fn(fb->on_arg);
    return r;
}

static CUresult b_stream_destroy(void *ctx, int dev, CUstream s)
{
    (void)ctx;
    (void)dev;
    (void)s;
    return CUDA_SUCCESS;
}

void fake_hold_sync(fake_backend *fb, bool held)
{
    pthread_mutex_lock(&fb->lock);
    fb->sync_held = held;
    pthread_cond_broadcast(&fb->sync_release);
    pthread_mutex_unlock(&fb->lock);
}

void fb_work_ops(sw_backend *ops)
{
    ops->synchronize = b_synchronize;
    ops->stream_create = b_stream_create;
    ops->stream_sync = b_stream_sync;
    ops->stream_destroy = b_stream_destroy;
}
