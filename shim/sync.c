/* What the pool must learn from the program: its device-wide sync points
 * (they also cover frees waiting for one), destroyed streams (their handle
 * value may come back as a new stream) and peer access (granted on the
 * pool's mappings too). Each forwards first; the driver's answer stands. */
#include "shim/backend.h"
#include "shim/contexts.h"
#include "shim/ctx_blocks.h"
#include "shim/ctx_memory.h"
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/param_scan.h"
#include "shim/pool_setup.h"

#include <stdbool.h>
#include <stdlib.h>

/* The current context's device, asked twice when refused. */
static int current_device(void)
{
    int dev;
    if (spw_driver_ctx_device(&dev) == CUDA_SUCCESS || spw_driver_ctx_device(&dev) == CUDA_SUCCESS)
        return dev;
    return -1;
}

/* The device whose primary context is current, or -1. Only a sync of
 * the primary context counts as the device's (the pool's own work and most
 * programs' live there; a context the program created covers only its own
 * streams). Found among the primaries spillway holds (the pool's), so
 * that no second query (cuCtxGetDevice) can miss the sync point: a missed
 * one leaves freed spilled data counted, and its host pages held, until
 * the pool's own next sync. */
static int primary_device(void)
{
    CUcontext cur = NULL;
    if (!spw_drv.cuCtxGetCurrent)
        return -1;
    if (spw_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS &&
        spw_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS)
        return -1;
    return spw_backend_primary_device(cur);
}

/* Whether a sync of dev's primary context is the device's sync point: not
 * while a context the program created has had work on the device
 * (contexts.h), since the primary's sync does not wait for theirs. */
static bool device_sync_point(int dev)
{
    return dev >= 0 && spw_pool_serves(dev) && !spw_contexts_kept(dev);
}

/* The driver's sync succeeded: what the frees waiting for it held goes. */
static void device_synced(int dev, uint64_t ticket)
{
    sw_policy *p = spw_pool_policy();
    sw_sync_end(p, dev, ticket);
    if (spw_pool_spills(dev)) {
        sw_collect(p, dev); /* freed spilled data gives its host pages back here */
        spw_pool_publish(dev);
    }
}

CUresult spw_h_ctx_synchronize(void)
{
    SPW_REAL_OR_RETURN(real, spw_h_ctx_synchronize);
    int dev;
    if (spw_disabled() || !device_sync_point(dev = primary_device()))
        return real();
    uint64_t ticket = sw_sync_begin(spw_pool_policy(), dev);
    CUresult r = real();
    if (r == CUDA_SUCCESS)
        device_synced(dev, ticket);
    return r;
}

/* cuCtxSynchronize_v2 names its context: a sync point of the device when
 * that context is the device's primary one (NULL: the current one), as
 * above. */
CUresult spw_h_ctx_synchronize_v2(CUcontext ctx)
{
    SPW_REAL_OR_RETURN(real, spw_h_ctx_synchronize_v2);
    int dev;
    if (spw_disabled() ||
        !device_sync_point(dev = ctx ? spw_backend_primary_device(ctx) : primary_device()))
        return real(ctx);
    uint64_t ticket = sw_sync_begin(spw_pool_policy(), dev);
    CUresult r = real(ctx);
    if (r == CUDA_SUCCESS)
        device_synced(dev, ticket);
    return r;
}

static CUresult stream_destroy(CUresult (*real)(CUstream), CUstream hStream)
{
    int dev = -1;
    if (!spw_disabled() && hStream && spw_pool_policy() &&
        spw_driver_stream_device(hStream, &dev) != CUDA_SUCCESS)
        dev = -1;
    /* Before: once the driver has freed the handle, another thread's
     * create may hand it out as another device's stream, and a launch on
     * that must not find the old device remembered (gate_use.c). After:
     * a launch racing with the destroy may have remembered it meanwhile. */
    if (!spw_disabled())
        spw_contexts_stream_gone();
    CUresult r = real(hStream);
    if (r == CUDA_SUCCESS && !spw_disabled())
        spw_contexts_stream_gone();
    if (r == CUDA_SUCCESS && dev >= 0 && spw_pool_serves(dev))
        sw_stream_destroyed(spw_pool_policy(), dev, hStream);
    return r;
}

/* Both ABIs: CUDA 2.0's unsuffixed export destroys as the _v2 does, and
 * a program built against old headers (or asking cuGetProcAddress for an
 * old version) calls it. */
CUresult spw_h_stream_destroy(CUstream hStream)
{
    SPW_REAL_OR_RETURN(real, spw_h_stream_destroy);
    return stream_destroy(real, hStream);
}

CUresult spw_h_stream_destroy_v1(CUstream hStream)
{
    SPW_REAL_OR_RETURN(real, spw_h_stream_destroy_v1);
    return stream_destroy(real, hStream);
}

/* The pool blocks made in ctx, which the driver destroyed: freed, as the
 * driver freed its memory (ctx_blocks.h). */
static void free_blocks_of(CUcontext ctx)
{
    CUdeviceptr *blocks;
    size_t n = spw_ctx_blocks_gone(ctx, &blocks);
    for (size_t i = 0; i < n; i++) {
        sw_policy *p = spw_pool_owner(blocks[i]);
        CUresult r = p ? spw_serve_free(p, blocks[i], 0, NULL) : CUDA_ERROR_INVALID_VALUE;
        if (r != CUDA_SUCCESS)
            spw_warn("freeing pool block 0x%llx of destroyed context %p failed (CUresult %d): "
                     "it stays allocated and counted",
                     (unsigned long long)blocks[i], (void *)ctx, (int)r);
        else
            spw_debug("pool block 0x%llx freed with its context %p", (unsigned long long)blocks[i],
                      (void *)ctx);
    }
    free(blocks);
}

/* Marked dying first, forgotten after: a move's sync must never make a
 * destroyed context current, and must not count as a sync point of the
 * device before the destroy drained the context's work (a block freed
 * under that work would be handed out while it runs): a sync waits for
 * the destroy instead (contexts.h). A destroy the driver refuses leaves
 * the context kept. The destroy
 * unloads the context's modules: the cached parameter layouts are
 * forgotten around it as around an unload (launch.c), or a function of a
 * later module handed the dead one's handle would be scanned by the dead
 * one's layout, past the arguments its launch passes. It also frees the
 * context's memory: what spillway counted of it is released
 * (ctx_memory.h), and so are the pool blocks made in it. */
static CUresult ctx_destroy(CUresult (*real)(CUcontext), CUcontext ctx)
{
    int dev = -1;
    struct spw_ctx_memory *dying = NULL;
    bool marked = ctx && !spw_disabled();
    if (marked) {
        spw_contexts_gone(ctx);
        if (spw_backend_ctx_device(ctx, &dev) == CUDA_SUCCESS)
            dying = spw_ctx_memory_take(ctx, dev);
    }
    CUresult r;
    SPW_UNLOADING(r, real(ctx));
    if (marked)
        spw_contexts_destroyed(ctx, r == CUDA_SUCCESS);
    spw_ctx_memory_settle(dying, r == CUDA_SUCCESS);
    if (r == CUDA_SUCCESS && marked) {
        spw_contexts_stream_gone();
        /* Its events died with it, the pool's among them (made in the
         * freeing thread's context): the frees they marked are done. */
        sw_policy *p = spw_pool_policy();
        if (p)
            sw_context_gone(p, ctx);
        free_blocks_of(ctx);
    }
    return r;
}

/* Both ABIs: CUDA 2.0's unsuffixed export destroys as the _v2 does. */
CUresult spw_h_ctx_destroy(CUcontext ctx)
{
    SPW_REAL_OR_RETURN(real, spw_h_ctx_destroy);
    return ctx_destroy(real, ctx);
}

CUresult spw_h_ctx_destroy_v1(CUcontext ctx)
{
    SPW_REAL_OR_RETURN(real, spw_h_ctx_destroy_v1);
    return ctx_destroy(real, ctx);
}

CUresult spw_h_ctx_enable_peer_access(CUcontext peerContext, unsigned int Flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_ctx_enable_peer_access);
    CUresult r = real(peerContext, Flags);
    int accessor, owner;
    if (r != CUDA_SUCCESS || spw_disabled() || (accessor = current_device()) < 0 ||
        spw_backend_ctx_device(peerContext, &owner) != CUDA_SUCCESS)
        return r;
    spw_pool_grant_peer(owner, accessor);
    return r;
}
