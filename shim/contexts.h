/* Contexts the program made itself (cuCtxCreate, or the context of a green
 * context's stream) that have had work through a gated handler. A move may
 * remap a page only once every piece of work that may use it is done
 * (README "Safety"); the pool's sync of a device covers its primary
 * context, so each of these is synced too (backend.c's synchronize). The
 * primary contexts are never kept here.
 *
 * The handlers note contexts (gate_use.c, once per thread and context);
 * cuCtxDestroy marks one dying before the driver destroys it and forgets
 * it after (sync.c). */
#ifndef SPILLWAY_SHIM_CONTEXTS_H
#define SPILLWAY_SHIM_CONTEXTS_H
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

/* Changes whenever a context or a stream is gone (sync.c: before and
 * after each destroy): a thread's memory of what it already noted, or of
 * a stream's device, holds only while this stays the same (a handle value
 * may come back as another context's, or another context's stream). */
uint64_t spw_contexts_generation(void);

/* Keeps c, a context of device dev that is not its primary context. */
void spw_contexts_add(CUcontext c, int dev);

/* c is about to be destroyed: after any sync of it in progress has ended,
 * it is marked dying, never made current again; a device's sync waits for
 * spw_contexts_destroyed instead (the driver's destroy waits for its work,
 * as a sync of it would). */
void spw_contexts_gone(CUcontext c);

/* The driver's destroy of c returned: c is forgotten when it destroyed
 * it, else kept as before. Each spw_contexts_gone is followed by one. */
void spw_contexts_destroyed(CUcontext c, bool destroyed);

/* Whether some context of dev is kept: then a sync of dev's primary
 * context alone is not a sync point of the device. */
int spw_contexts_kept(int dev);

/* A stream is gone: its handle may name another context's stream next. */
void spw_contexts_stream_gone(void);

/* Syncs every kept context of dev with sync (which makes it current for
 * the call). A context the driver no longer knows, or one an error ended
 * (its work will never run), is forgotten; any other refusal is returned
 * after the rest were synced. */
CUresult spw_contexts_sync(int dev, CUresult (*sync)(CUcontext));
#endif
