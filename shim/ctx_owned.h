/* Arrays, mipmapped arrays and pinned host allocations (cuMemHostAlloc,
 * cuMemAllocHost) made in a context: the driver frees them with it
 * (cuCtxDestroy: "These resources include CUDA types ... CUarray,
 * CUmipmappedArray ... memory allocations by cuMemAlloc(),
 * cuMemAllocHost() ..."; a primary context's reset: "Destroy all
 * allocations"), and no driver call says which context an array belongs
 * to (asking about one after its context is gone is undefined), so each
 * is noted with the context current when it was made. ctx_memory.c takes
 * a dying context's out of the count. Registered host memory
 * (cuMemHostRegister) is not among what cuCtxDestroy names: not noted.
 *
 * Not on a hot path: arrays and pinned host allocations are made and
 * freed seldom; each note or take is one sharded map operation. */
#ifndef SPILLWAY_SHIM_CTX_OWNED_H
#define SPILLWAY_SHIM_CTX_OWNED_H
#include "shim/account.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* Whether any object was ever noted (one load). */
int spw_ctx_owned_any(void);

/* key, an object of kind the driver just made, belongs to the calling
 * thread's current context. */
void spw_ctx_owned_made(enum spw_kind kind, uint64_t key);

/* key is about to be freed: its entry is taken, its context returned
 * (NULL: none noted). */
CUcontext spw_ctx_owned_take(enum spw_kind kind, uint64_t key);

/* The free failed: the entry taken goes back (ctx NULL does nothing). */
void spw_ctx_owned_undo(enum spw_kind kind, uint64_t key, CUcontext ctx);

/* The driver's answer r to the call key's entry was taken for (ctx: what
 * spw_ctx_owned_take returned): the entry goes back if it refused.
 * Returns r. */
CUresult spw_ctx_owned_settle(enum spw_kind kind, uint64_t key, CUcontext ctx, CUresult r);

/* The keys of kind noted in ctx, in a malloc'd array (*keys, NULL when
 * none; *n of them). Returns 0, or -1 when memory ran out (reported;
 * nothing returned). */
int spw_ctx_owned_of(enum spw_kind kind, CUcontext ctx, uint64_t **keys, size_t *n);
#endif
