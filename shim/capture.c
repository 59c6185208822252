/* cuStreamBeginCapture (CUDA 10.0's, without a mode, and _v2),
 * cuStreamBeginCaptureToGraph and
 * cuStreamEndCapture, each also as its per-thread variant: counted, so
 * that the pool knows a capture is under way (capture.h). A begin counts
 * before the driver is asked, and uncounts if the driver refused it: a
 * sync the pool would issue while the driver begins the capture would
 * invalidate it, and counting after the driver's answer left that window
 * open for the whole call (what remains is a sync already past its check,
 * syncer.c). An end uncounts when the stream was
 * capturing before it (active or invalidated) and the end closed that
 * capture: it succeeded, or it failed and the stream no longer captures
 * (an invalidated or unjoined capture ends with its error). An end the
 * driver refused before touching the capture (no place for the graph, a
 * stream forked into the capture rather than its origin, a GLOBAL or
 * THREAD_LOCAL capture ended from another thread) leaves it going: still
 * counted, or the pool would sync under it and invalidate it. The end
 * handlers are graph_captured.c's (what the capture allocated goes with a
 * capture that ends without a graph). */
#include "shim/capture.h"

#include "shim/handler.h"

#include <stdatomic.h>

static _Atomic int captures;

bool spw_capture_active(void)
{
    return atomic_load_explicit(&captures, memory_order_acquire) > 0;
}

static void beginning(void)
{
    atomic_fetch_add_explicit(&captures, 1, memory_order_acq_rel);
}

static void began(CUresult r)
{
    if (r != CUDA_SUCCESS && atomic_fetch_sub_explicit(&captures, 1, memory_order_acq_rel) <= 0)
        atomic_store_explicit(&captures, 0, memory_order_release); /* never below zero */
}

/* stream's capture status, or -1 when the driver cannot say. */
static int status(CUstream stream, int per_thread)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult (*is)(CUstream, CUstreamCaptureStatus *) =
        per_thread ? spw_drv.cuStreamIsCapturing_ptsz : spw_drv.cuStreamIsCapturing;
    if (!is || is(stream, &st) != CUDA_SUCCESS)
        return -1;
    return (int)st;
}

bool spw_capture_in(CUstream stream, int per_thread)
{
    int st = status(stream, per_thread);
    return st >= 0 && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool spw_capture_not_in(CUstream stream, int per_thread)
{
    return status(stream, per_thread) == CU_STREAM_CAPTURE_STATUS_NONE;
}

void spw_capture_ended(CUstream stream, int per_thread, bool was, CUresult r)
{
    if (!was || (r != CUDA_SUCCESS && spw_capture_in(stream, per_thread)))
        return;
    if (atomic_fetch_sub_explicit(&captures, 1, memory_order_acq_rel) <= 0)
        atomic_store_explicit(&captures, 0, memory_order_release); /* never below zero */
}

#define BEGIN_HANDLER(handler, params, args)     \
    CUresult handler params                      \
    {                                            \
        SPW_REAL_OR_RETURN(real, handler);       \
        beginning();                             \
        CUresult r = real args;                  \
        began(r);                                \
        return r;                                \
    }

BEGIN_HANDLER(spw_h_stream_begin_capture_v1, (CUstream hStream), (hStream))
BEGIN_HANDLER(spw_h_stream_begin_capture_v1_pt, (CUstream hStream), (hStream))
BEGIN_HANDLER(spw_h_stream_begin_capture, (CUstream hStream, CUstreamCaptureMode mode),
              (hStream, mode))
BEGIN_HANDLER(spw_h_stream_begin_capture_pt, (CUstream hStream, CUstreamCaptureMode mode),
              (hStream, mode))
BEGIN_HANDLER(spw_h_stream_begin_capture_to_graph,
              (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
               const CUgraphEdgeData *dependencyData, size_t numDependencies,
               CUstreamCaptureMode mode),
              (hStream, hGraph, dependencies, dependencyData, numDependencies, mode))
BEGIN_HANDLER(spw_h_stream_begin_capture_to_graph_pt,
              (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
               const CUgraphEdgeData *dependencyData, size_t numDependencies,
               CUstreamCaptureMode mode),
              (hStream, hGraph, dependencies, dependencyData, numDependencies, mode))
