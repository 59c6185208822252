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
 * calls: a failed capture must not make the whole process fail.
 *
 * capture.c keeps the state and the rules every other entry point asks
 * about; events in a capture are capture_events.c's, a capture's begin
 * and end capture_begin_end.c's, its status and dependencies
 * capture_status.c's (capture_state.h). */
#include "tests/fakecuda/capture_state.h"

#include <stdlib.h>
#include <string.h>

pthread_mutex_t fc_cap_lock = PTHREAD_MUTEX_INITIALIZER;
struct capture *fc_captures;
struct member *fc_cap_members;
struct captured_event *fc_cap_events;
_Atomic size_t fc_cap_nmembers;
static _Thread_local CUstreamCaptureMode thread_mode; /* 0: GLOBAL, the default */

struct member *fc_cap_member_of(struct CUstream_st *s)
{
    for (struct member *m = fc_cap_members; m; m = m->next)
        if (m->s == s)
            return m;
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

bool fc_cap_set_deps(struct member *m, struct CUgraphNode_st *const *nodes, size_t n)
{
    if (!reserve(m, n))
        return false;
    if (n)
        memcpy(m->deps, nodes, n * sizeof *nodes);
    m->ndeps = n;
    return true;
}

bool fc_cap_add_deps(struct member *m, struct CUgraphNode_st *const *nodes, size_t n)
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

struct member *fc_cap_member_new(struct CUstream_st *s, struct capture *c)
{
    struct member *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->s = s;
    m->cap = c;
    m->next = fc_cap_members;
    fc_cap_members = m;
    atomic_fetch_add(&fc_cap_nmembers, 1);
    return m;
}

bool fc_cap_legacy_conflict(struct CUstream_st *s, bool invalidate)
{
    if (!fc_stream_is_legacy(s))
        return false;
    bool found = false;
    for (struct member *m = fc_cap_members; m; m = m->next)
        if (fc_stream_ctx(m->s) == fc_stream_ctx(s) && fc_stream_is_blocking(m->s)) {
            found = true;
            if (invalidate)
                m->cap->invalidated = true;
        }
    return found;
}

bool fc_cap_prohibited(void)
{
    if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return false;
    pthread_t self = pthread_self();
    bool bad = false;
    for (struct capture *c = fc_captures; c; c = c->next) {
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
    if (atomic_load(&fc_cap_nmembers) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&fc_cap_lock);
    struct member *m = fc_cap_member_of(s);
    if (m && !m->cap->invalidated) {
        *capturing = true;
        return CUDA_SUCCESS; /* the lock stays held until fc_capture_add */
    }
    CUresult r = m ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                 : fc_cap_legacy_conflict(s, true) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
                                                   : CUDA_SUCCESS;
    pthread_mutex_unlock(&fc_cap_lock);
    return r;
}

CUresult fc_cap_append(struct member *m, struct CUgraphNode_st *n)
{
    fc_graph_lock();
    CUresult r = fc_graph_add(m->cap->graph, n, m->deps, m->ndeps);
    fc_graph_unlock();
    if (r != CUDA_SUCCESS)
        return r;
    return fc_cap_set_deps(m, &n, 1) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult fc_capture_add(struct CUstream_st *s, struct CUgraphNode_st *n)
{
    struct member *m = fc_cap_member_of(s);
    CUresult r = !n ? CUDA_ERROR_OUT_OF_MEMORY : fc_cap_append(m, n);
    pthread_mutex_unlock(&fc_cap_lock);
    if (r != CUDA_SUCCESS && n && !n->graph) {
        fc_graph_lock();
        fc_node_free(n);
        fc_graph_unlock();
    }
    return r;
}

CUresult fc_capture_refuse(struct CUstream_st *s)
{
    struct member *m = fc_cap_member_of(s);
    m->cap->invalidated = true;
    pthread_mutex_unlock(&fc_cap_lock);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

struct CUgraph_st *fc_capture_graph(struct CUstream_st *s)
{
    struct member *m = fc_cap_member_of(s);
    return m ? m->cap->graph : NULL;
}

CUresult fc_capture_wait_stream(struct CUstream_st *s)
{
    if (atomic_load(&fc_cap_nmembers) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&fc_cap_lock);
    struct member *m = fc_cap_member_of(s);
    CUresult r = CUDA_SUCCESS;
    if (m) {
        m->cap->invalidated = true;
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else if (fc_cap_legacy_conflict(s, true)) {
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    pthread_mutex_unlock(&fc_cap_lock);
    return r;
}

CUresult fc_capture_unsafe_call(void)
{
    if (atomic_load(&fc_cap_nmembers) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&fc_cap_lock);
    bool bad = fc_cap_prohibited();
    pthread_mutex_unlock(&fc_cap_lock);
    return bad ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult fc_capture_sync_call(struct CUstream_st *s)
{
    CUresult r = fc_capture_wait_stream(s);
    return r != CUDA_SUCCESS ? r : fc_capture_unsafe_call();
}

CUresult fc_capture_ctx_sync(struct CUctx_st *ctx)
{
    if (atomic_load(&fc_cap_nmembers) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&fc_cap_lock);
    bool bad = false;
    for (struct member *m = fc_cap_members; m; m = m->next)
        if (fc_stream_ctx(m->s) == ctx) {
            m->cap->invalidated = true;
            bad = true;
        }
    pthread_mutex_unlock(&fc_cap_lock);
    return bad ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
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
