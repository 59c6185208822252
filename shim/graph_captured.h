/* Captured allocations whose graph never runs them (graph_captured.c). */
#ifndef SPILLWAY_SHIM_GRAPH_CAPTURED_H
#define SPILLWAY_SHIM_GRAPH_CAPTURED_H
#include <cuda.h>
#include <stdint.h>

/* Around an allocation's driver call on stream (per_thread: through a
 * _ptsz entry point), being captured, its note and its count: hold
 * returns the id of stream's capture (0: none, or the driver cannot say),
 * read before the call: once the call returns, the capture may already be
 * invalidated (another thread's call), when its id can no longer be read.
 * The end of a capture waits for those under way, and those to come wait
 * for it, so that the capture an allocation joined is still going when it
 * is noted. */
cuuint64_t spw_graph_captures_hold(CUstream stream, int per_thread);
void spw_graph_captures_release(void);
/* An allocation p the driver captured into capture id's graph (held as
 * above), about to be counted under key p: uncounted again if its capture
 * ends without a graph, or its graph and executable graph go without ever
 * running it. */
void spw_graph_captured(CUdeviceptr p, cuuint64_t id, CUstream stream, int per_thread);
#endif
