#ifndef SPILLWAY_SHIM_INFO_H
#define SPILLWAY_SHIM_INFO_H
#include <stddef.h>

/* Rewrites a driver's (free, total) answer for dev: total = what the
 * program is told (the limit, or SPILLWAY_OVERSUBSCRIBE x it); free = what
 * the pool can hand out on a device it serves (told less the pages live
 * data holds, never above told - used), else min(told - used, the driver's
 * free). Idempotent. Either pointer may be NULL. */
void spw_info_clamp(int dev, size_t *free_bytes, size_t *total_bytes);
#endif
