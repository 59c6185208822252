/* Stream captures under way in the process, as the capture hooks
 * (capture.c) see them begin and end. While any is under way, the pool
 * neither synchronizes nor remaps on its own account: a device or context
 * synchronize during a capture invalidates it (and work on the legacy
 * stream while a blocking stream captures fails with
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT). */
#ifndef SPILLWAY_SHIM_CAPTURE_H
#define SPILLWAY_SHIM_CAPTURE_H
#include <cuda.h>
#include <stdbool.h>

bool spw_capture_active(void);

/* For the end handlers (graph_captured.c): whether stream is in a capture
 * (active or invalidated), asked before the end (per_thread: the call came
 * through a _ptsz entry point); and the end's answer r, was what the first
 * said before it, counted (the capture closed) or not (still going). */
bool spw_capture_in(CUstream stream, int per_thread);
/* Whether the driver says stream captures nothing (false when it cannot
 * say): work on it ran, not into a graph. */
bool spw_capture_not_in(CUstream stream, int per_thread);
void spw_capture_ended(CUstream stream, int per_thread, bool was, CUresult r);
#endif
