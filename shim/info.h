#ifndef SPILLWAY_SHIM_INFO_H
#define SPILLWAY_SHIM_INFO_H
#include <stddef.h>

/* Rewrites a driver's (free, total) answer for dev: total = the limit,
 * free = min(limit - used, the driver's free). Idempotent. Either pointer may
 * be NULL. */
void spw_info_clamp(int dev, size_t *free_bytes, size_t *total_bytes);
#endif
