/* The fake backend's events (fakebackend.h): made in the context set
 * last, complete with their stream, gone with a reset of their context. */
#include "tests/unit/policy/fakebackend_state.h"

#include <stdio.h>
#include <stdlib.h>

static CUresult b_event_create(void *ctx, int dev, CUevent *ev, void **where)
{
    fake_backend *fb = ctx;
    (void)dev;
    fake_event *e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&fb->lock);
    fb->st.ev_create++;
    e->where = *where = fb->cur_ctx;
    e->next = fb->events;
    fb->events = e;
    pthread_mutex_unlock(&fb->lock);
    *ev = (CUevent)e;
    return CUDA_SUCCESS;
}

/* An event of a reset context named again: the driver's handle is gone
 * (INVALID_HANDLE), or reused for another event of the program's. Lock held. */
static bool event_dead(fake_backend *fb, fake_event *e, const char *call)
{
    if (!e->dead)
        return false;
    char what[96];
    snprintf(what, sizeof what, "%s of an event whose context was reset (%%#llx)", call);
    fb_violate(fb, what, (unsigned long long)(uintptr_t)e);
    return true;
}

static CUresult b_event_record(void *ctx, CUevent ev, CUstream stream)
{
    fake_backend *fb = ctx;
    fake_event *e = (fake_event *)ev;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    if (event_dead(fb, e, "event_record"))
        r = CUDA_ERROR_INVALID_HANDLE;
    else if (!fb_injected(fb, "event_record", &r)) {
        e->s = stream;
        e->seq = fb_stream_of(fb, stream)->issued;
        fb->st.ev_record++;
    }
    pthread_mutex_unlock(&fb->lock);
    return r;
}

static CUresult b_event_query(void *ctx, CUevent ev)
{
    fake_backend *fb = ctx;
    fake_event *e = (fake_event *)ev;
    pthread_mutex_lock(&fb->lock);
    fb->st.ev_query++;
    bool dead = event_dead(fb, e, "event_query");
    bool done = !dead && fb_stream_of(fb, e->s)->completed >= e->seq;
    pthread_mutex_unlock(&fb->lock);
    return dead ? CUDA_ERROR_INVALID_HANDLE : done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

static CUresult b_event_destroy(void *ctx, CUevent ev)
{
    fake_backend *fb = ctx;
    fake_event *e = (fake_event *)ev;
    pthread_mutex_lock(&fb->lock);
    bool dead = event_dead(fb, e, "event_destroy");
    if (!dead) {
        fb->st.ev_destroy++;
        for (fake_event **pp = &fb->events; *pp; pp = &(*pp)->next)
            if (*pp == e) {
                *pp = e->next;
                break;
            }
    }
    pthread_mutex_unlock(&fb->lock);
    if (!dead)
        free(e);
    return dead ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

void fake_set_context(fake_backend *fb, void *where)
{
    pthread_mutex_lock(&fb->lock);
    fb->cur_ctx = where;
    pthread_mutex_unlock(&fb->lock);
}

void fake_context_reset(fake_backend *fb, void *where)
{
    pthread_mutex_lock(&fb->lock);
    for (fake_event *e = fb->events; e; e = e->next)
        if (e->where == where && !e->dead) {
            e->dead = true;
            fb->st.ev_destroy++; /* by the reset */
        }
    pthread_mutex_unlock(&fb->lock);
}

void fb_event_ops(sw_backend *ops)
{
    ops->event_create = b_event_create;
    ops->event_record = b_event_record;
    ops->event_query = b_event_query;
    ops->event_destroy = b_event_destroy;
}
