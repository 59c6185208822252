/* fakecuda: a stream's capture, as cuStreamIsCapturing and
 * cuStreamGetCaptureInfo tell it, and its dependencies changed
 * (cuStreamUpdateCaptureDependencies). capture.c has the rules. */
#include "tests/fakecuda/capture_state.h"

/* The status of s; *m its membership (lock held by the caller). */
static CUresult status_of(struct CUstream_st *s, CUstreamCaptureStatus *st, struct member **mp)
{
    struct member *m = fc_cap_member_of(s);
    *mp = m;
    if (m)
        *st = m->cap->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    else if (fc_cap_legacy_conflict(s, false))
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
    pthread_mutex_lock(&fc_cap_lock);
    r = status_of(s, st, &m);
    pthread_mutex_unlock(&fc_cap_lock);
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
    pthread_mutex_lock(&fc_cap_lock);
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
    pthread_mutex_unlock(&fc_cap_lock);
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
    pthread_mutex_lock(&fc_cap_lock);
    struct member *m = fc_cap_member_of(s);
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
            bool ok = flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES ? fc_cap_set_deps(m, deps, n)
                                                                  : fc_cap_add_deps(m, deps, n);
            r = ok ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&fc_cap_lock);
    return r;
}

/* cuda.h maps these names to their newest ABI; the old ABIs are exported
 * too, for programs and runtimes built against older headers. */
#undef cuStreamGetCaptureInfo
#undef cuStreamUpdateCaptureDependencies
#undef cuStreamIsCapturing

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
