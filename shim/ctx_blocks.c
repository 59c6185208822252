/* Pool blocks made in contexts the program created (ctx_blocks.h). One
 * sharded map, ptr -> (device, context), whose entries are rare: most
 * programs allocate only in the primary context. */
#include "shim/ctx_blocks.h"

#include "shim/backend.h"
#include "shim/driver.h"
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/ptrmap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* The map's size field holds the context's handle. */
static struct spw_map blocks;
static pthread_once_t blocks_once = PTHREAD_ONCE_INIT;
static atomic_bool any; /* some block was ever kept */

static void init_blocks(void)
{
    spw_map_init(&blocks);
}

/* The primary context this thread last allocated in, and its device: a
 * primary context spillway knows is retained until exit, so its handle
 * names no other context while it matches. */
static _Thread_local CUcontext last_primary;
static _Thread_local int last_primary_dev;

CUresult spw_ctx_blocks_alloc_device(int *dev, CUcontext *made_in)
{
    CUcontext c = NULL;
    *made_in = NULL;
    if (spw_driver_ready() && spw_drv.cuCtxGetCurrent &&
        spw_drv.cuCtxGetCurrent(&c) == CUDA_SUCCESS && c && c == last_primary &&
        c == spw_backend_primary_known(last_primary_dev)) {
        *dev = last_primary_dev;
        return CUDA_SUCCESS;
    }
    /* No context (the driver's error is the allocation's), or one this
     * thread did not allocate in yet: spw_ctx_blocks_note tells. */
    CUresult r = spw_alloc_device(dev);
    if (r == CUDA_SUCCESS && *dev >= 0)
        *made_in = c;
    return r;
}

void spw_ctx_blocks_note(int dev, CUdeviceptr ptr, CUcontext made_in)
{
    if (!made_in)
        return;
    /* Asked after the block was served: the pool, set up by then, holds
     * the primary context. */
    if (made_in == spw_backend_primary_known(dev)) {
        last_primary = made_in;
        last_primary_dev = dev;
        return;
    }
    pthread_once(&blocks_once, init_blocks);
    if (!atomic_load_explicit(&any, memory_order_relaxed))
        atomic_store(&any, true);
    if (spw_map_insert(&blocks, (uint64_t)ptr, dev, (uint64_t)(uintptr_t)made_in, NULL) < 0)
        spw_warn("out of memory noting the context of 0x%llx: it stays allocated after its "
                 "context is destroyed, and answers the primary context as its own",
                 (unsigned long long)ptr);
}

void spw_ctx_blocks_take(CUdeviceptr ptr, CUcontext *ctx, int *dev)
{
    *ctx = NULL;
    *dev = -1;
    if (!atomic_load_explicit(&any, memory_order_acquire))
        return;
    pthread_once(&blocks_once, init_blocks);
    struct spw_map_entry e;
    if (spw_map_remove(&blocks, (uint64_t)ptr, &e) == 0) {
        *ctx = (CUcontext)(uintptr_t)e.size;
        *dev = e.dev;
    }
}

void spw_ctx_blocks_undo(CUdeviceptr ptr, int dev, CUcontext ctx)
{
    if (ctx && spw_map_insert(&blocks, (uint64_t)ptr, dev, (uint64_t)(uintptr_t)ctx, NULL) < 0)
        spw_warn("out of memory noting the context of 0x%llx again after its free failed: it "
                 "stays allocated after its context is destroyed",
                 (unsigned long long)ptr);
}

CUcontext spw_ctx_blocks_context(CUdeviceptr ptr)
{
    if (!atomic_load_explicit(&any, memory_order_acquire))
        return NULL;
    pthread_once(&blocks_once, init_blocks);
    struct spw_map_entry e;
    return spw_map_find(&blocks, (uint64_t)ptr, &e) == 0 ? (CUcontext)(uintptr_t)e.size : NULL;
}

static int of_context(const struct spw_map_entry *e, void *ctx)
{
    return (CUcontext)(uintptr_t)e->size == (CUcontext)ctx;
}

size_t spw_ctx_blocks_gone(CUcontext ctx, CUdeviceptr **ptrs)
{
    *ptrs = NULL;
    if (!ctx || !atomic_load_explicit(&any, memory_order_acquire))
        return 0;
    pthread_once(&blocks_once, init_blocks);
    uint64_t *keys;
    size_t n, taken = 0;
    if (spw_map_keys(&blocks, of_context, ctx, &keys, &n) != 0) {
        spw_warn("out of memory listing the pool blocks of destroyed context %p: they stay "
                 "allocated and counted until freed",
                 (void *)ctx);
        return 0;
    }
    CUdeviceptr *out = n ? malloc(n * sizeof *out) : NULL;
    if (n && !out)
        spw_warn("out of memory listing the pool blocks of destroyed context %p: they stay "
                 "allocated and counted until freed",
                 (void *)ctx);
    /* Each taken one by one: a free racing the destroy takes its own (and
     * an address freed and made again in another context meanwhile is
     * that one's, put back). */
    for (size_t i = 0; out && i < n; i++) {
        struct spw_map_entry e;
        if (spw_map_remove(&blocks, keys[i], &e) != 0)
            continue;
        if ((CUcontext)(uintptr_t)e.size == ctx)
            out[taken++] = (CUdeviceptr)keys[i];
        else
            spw_ctx_blocks_undo((CUdeviceptr)keys[i], e.dev, (CUcontext)(uintptr_t)e.size);
    }
    free(keys);
    if (!taken) {
        free(out);
        return 0;
    }
    *ptrs = out;
    return taken;
}
