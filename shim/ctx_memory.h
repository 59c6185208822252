/* Memory the driver frees with a context: cuCtxDestroy ("Destroys and
 * cleans up all resources associated with the context", among them
 * "memory allocations by cuMemAlloc(), cuMemAllocHost(),
 * cuMemAllocManaged() and cuMemAllocPitch()", not cuMemCreate's nor
 * stream-ordered ones) and a reset of the primary context ("Destroy all
 * allocations"), or its last release. What spillway counted of it (pass-
 * through device pointers, arrays and mipmapped arrays against the limit,
 * pinned host allocations as host memory) stops being counted then, as if
 * the program had freed it; else the limit would shrink for good.
 *
 * Around the driver's call, never on an allocation's path: before it, the
 * device's counted pointers are asked their context (one driver call
 * each), the arrays and pinned host allocations noted with that context
 * are found (ctx_owned.h), and all of them are taken out of the count's table (a
 * cuMemFree racing with the destroy then counts nothing twice); after it,
 * they are released if the driver freed them, else put back. A primary
 * release, seldom the last, only lists them (spw_ctx_memory_list). */
#ifndef SPILLWAY_SHIM_CTX_MEMORY_H
#define SPILLWAY_SHIM_CTX_MEMORY_H
#include <cuda.h>

struct spw_ctx_memory;

/* Takes out what dies with ctx, a context of device dev (NULL: dev's
 * primary context, if it is active). NULL when nothing does (or
 * spillway is disabled, or memory ran out: then nothing is taken). */
struct spw_ctx_memory *spw_ctx_memory_take(CUcontext ctx, int dev);

/* The same, listed but left in the table: for a call that may not free
 * (a primary release that may not be the last, the usual case), so that
 * frees meanwhile count as ever and nothing is put back over them. */
struct spw_ctx_memory *spw_ctx_memory_list(CUcontext ctx, int dev);

/* After the driver's call: freed, what was taken (or listed and still
 * counted) is released (the frees
 * counted, pages lent out of the pool given back), else put back as it
 * was. Frees m; m NULL does nothing. */
void spw_ctx_memory_settle(struct spw_ctx_memory *m, int freed);

/* Whether dev's primary context is inactive now (its last release reset
 * it): 0 when it is active or the driver cannot tell. */
int spw_ctx_memory_primary_ended(int dev);
#endif
