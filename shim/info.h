#ifndef SPILLWAY_SHIM_INFO_H
#define SPILLWAY_SHIM_INFO_H
#include <stddef.h>

/* Rewrites a driver's (free, total) answer for dev: total = what the
 * program is told (the limit, or SPILLWAY_OVERSUBSCRIBE x it); free = what
 * the pool can hand out on a device it serves (told less the pages live
 * data holds, never above told - used), else min(told - used, the driver's
 * free, plus what the program is told past the limit while the pool is
 * not built yet). Not idempotent (that plus would be added again): a
 * driver's answer is rewritten once. Either pointer may be NULL. */
void spw_info_clamp(int dev, size_t *free_bytes, size_t *total_bytes);

/* How many answers cuMemGetInfo's handler rewrote on this thread: the
 * runtime's cudaMemGetInfo reaches the handler through cuGetProcAddress,
 * and its wrapper rewrites only an answer no handler saw (a runtime that
 * resolved the driver behind spillway's back). */
extern _Thread_local unsigned spw_info_clamps;
#endif
