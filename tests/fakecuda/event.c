/* fakecuda: events. A record names the (stream, sequence number) of the
 * work before it; a wait or a query looks at that stream's counters. */
#include <stdlib.h>

#include "tests/fakecuda/stream_state.h"

static CUresult event_known(CUevent e)
{
    pthread_mutex_lock(&fc_stream_lock);
    bool ok = false;
    for (struct CUevent_st *x = fc_events; x && !ok; x = x->next)
        ok = x == e;
    pthread_mutex_unlock(&fc_stream_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult fc_event_check(CUevent e)
{
    return event_known(e);
}

bool fc_event_dep(CUevent e, struct fc_dep *d)
{
    pthread_mutex_lock(&fc_stream_lock);
    *d = (struct fc_dep){e->stream, e->seq};
    pthread_mutex_unlock(&fc_stream_lock);
    return d->stream != NULL;
}

void fc_event_set(CUevent e, struct CUstream_st *s, uint64_t seq)
{
    pthread_mutex_lock(&fc_stream_lock);
    e->stream = s;
    e->seq = seq;
    pthread_mutex_unlock(&fc_stream_lock);
}

size_t fc_live_events(void)
{
    size_t n = 0;
    pthread_mutex_lock(&fc_stream_lock);
    for (struct CUevent_st *e = fc_events; e; e = e->next)
        n++;
    pthread_mutex_unlock(&fc_stream_lock);
    return n;
}

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
    pthread_mutex_lock(&fc_stream_lock);
    e->next = fc_events;
    fc_events = e;
    pthread_mutex_unlock(&fc_stream_lock);
    *phEvent = e;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuEventDestroy(CUevent e)
{
    FC_FAULT(cuEventDestroy);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_stream_lock);
    struct CUevent_st **pp = &fc_events;
    while (*pp && *pp != e)
        pp = &(*pp)->next;
    bool found = e && *pp;
    if (found)
        *pp = e->next;
    pthread_mutex_unlock(&fc_stream_lock);
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
    pthread_mutex_lock(&fc_stream_lock);
    e->stream = s;
    e->seq = seq;
    pthread_mutex_unlock(&fc_stream_lock);
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
    pthread_mutex_lock(&fc_stream_lock);
    r = !e->stream || e->stream->completed >= e->seq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    if (r == CUDA_SUCCESS)
        fc_host_saw_locked();
    pthread_mutex_unlock(&fc_stream_lock);
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
    pthread_mutex_lock(&fc_stream_lock);
    struct CUstream_st *s = e->stream;
    uint64_t seq = e->seq;
    pthread_mutex_unlock(&fc_stream_lock);
    if (s)
        fc_stream_wait(s, seq);
    return CUDA_SUCCESS;
}

/* ---- entry points: legacy and per-thread (_ptsz) forms ---- */

FC_EXPORT CUresult cuEventRecord(CUevent e, CUstream h) { FC_FAULT(cuEventRecord); return event_record(e, h, 0, false); }
FC_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream h) { FC_FAULT(cuEventRecord); return event_record(e, h, 0, true); }
FC_EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream h, unsigned int f) { FC_FAULT(cuEventRecordWithFlags); return event_record(e, h, f, false); }
FC_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream h, unsigned int f) { FC_FAULT(cuEventRecordWithFlags); return event_record(e, h, f, true); }
