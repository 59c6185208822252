/* Name -> handler lookups over the hook table (hooks.def). */
#ifndef SPILLWAY_SHIM_RESOLVE_H
#define SPILLWAY_SHIM_RESOLVE_H
#include <cuda.h>

/* Whether name could be a driver function's ("cu..."); NULL is not. */
int spw_is_driver_name(const char *name);

/* The handler for an exported symbol name ("cuMemAlloc_v2",
 * "cuMemAllocAsync_ptsz"), or NULL if the name is not hooked, spillway is
 * disabled, or the driver lacks the symbol. Loads the driver if needed. */
void *spw_handler_for_symbol(const char *name);

/* What cuGetProcAddress should hand out for symbol: real is what the
 * driver returned for (symbol, version, flags). */
void *spw_handler_for_proc(const char *symbol, void *real, int version, cuuint64_t flags);
#endif
