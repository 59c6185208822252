/* Pool blocks made in a context the program created (cuCtxCreate): the
 * driver frees a context's cuMemAlloc memory at cuCtxDestroy ("Destroys
 * and cleans up all resources associated with the context"), and answers
 * that context as the CONTEXT attribute of its pointers. The pool's pages
 * live in the primary context, so spillway keeps which blocks were made
 * elsewhere: sync.c frees them back to the pool after a destroy, pointer.c
 * answers their context.
 *
 * Only synchronous allocations (cuMemAlloc, cuMemAllocPitch): stream-
 * ordered memory belongs to a memory pool and outlives its context. Hot
 * paths: an allocation asks the driver its current context instead of its
 * device, and a thread that allocates in a primary context knows which
 * device's it is; a free looks its pointer up only while some block is
 * kept (one load otherwise). */
#ifndef SPILLWAY_SHIM_CTX_BLOCKS_H
#define SPILLWAY_SHIM_CTX_BLOCKS_H
#include <cuda.h>
#include <stddef.h>

/* spw_alloc_device (handler.h) for an allocation the pool may serve, with
 * the context it is made in, for spw_ctx_blocks_note (*made_in NULL: a
 * primary context this thread allocated in before). One driver call, as
 * spw_alloc_device's, while the thread allocates in a primary context (a
 * thread-local compare); two in another. */
CUresult spw_ctx_blocks_alloc_device(int *dev, CUcontext *made_in);

/* ptr, a block just served on device dev, was made in made_in: kept when
 * that is not dev's primary context. */
void spw_ctx_blocks_note(int dev, CUdeviceptr ptr, CUcontext made_in);

/* ptr is about to be freed: its entry is taken (its context in *ctx, NULL
 * when it had none: the primary context's; its device in *dev). */
void spw_ctx_blocks_take(CUdeviceptr ptr, CUcontext *ctx, int *dev);

/* The free failed: the entry taken goes back (ctx NULL does nothing). */
void spw_ctx_blocks_undo(CUdeviceptr ptr, int dev, CUcontext ctx);

/* The context block ptr (an allocation's base) was made in; NULL for the
 * primary context's. */
CUcontext spw_ctx_blocks_context(CUdeviceptr ptr);

/* ctx was destroyed: its blocks' entries are taken, their pointers in a
 * malloc'd array (*ptrs, NULL when none) for the caller to free. Returns
 * their number; 0 with nothing taken when memory ran out (reported). */
size_t spw_ctx_blocks_gone(CUcontext ctx, CUdeviceptr **ptrs);
#endif
