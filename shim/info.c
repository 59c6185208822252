/* cuMemGetInfo and cuDeviceTotalMem: the program sizes itself from these,
 * so they answer with what spillway tells it the device has: the limit, or
 * SPILLWAY_OVERSUBSCRIBE x the limit (the pool's device pages never pass
 * the limit; the rest is pinned host memory). The driver answers first, so
 * bad arguments get exactly its error. */
#include "shim/handler.h"

#include "shim/info.h"
#include "shim/pool_setup.h"

_Thread_local unsigned spw_info_clamps;

void spw_info_clamp(int dev, size_t *free_bytes, size_t *total_bytes)
{
    uint64_t told = spw_limit_told(dev);
    if (told == UINT64_MAX)
        return; /* accounting not started: the driver's answer stands */
    uint64_t used = spw_account_used(dev);
    uint64_t avail = used < told ? told - used : 0;
    if (total_bytes)
        *total_bytes = (size_t)told;
    if (!free_bytes)
        return;
    /* Without a pool, the smaller one stands. Before the pool is set up
     * (its first allocation), the driver's figure bounds only the device
     * part: what the program is told past the limit (SPILLWAY_OVERSUBSCRIBE)
     * will be pinned host pages, which the driver's free does not count.
     * Else a program that sizes itself from free before it allocates
     * (TensorFlow's BFC) is told no more than the device has free. */
    if (!spw_pool_serves(dev)) {
        uint64_t dfree = *free_bytes, limit = spw_limit(dev);
        if (told > limit && spw_pool_pending(dev))
            dfree += told - limit;
        *free_bytes = (size_t)(dfree < avail ? dfree : avail);
        return;
    }
    /* The pool holds its pages from the driver (all of them when
     * preallocated): the driver's free figure says nothing of what the
     * program may still allocate. Like the driver's, free drops by whole
     * pages: what a new allocation can have is the pages no live data
     * holds (sw_held_bytes: freed blocks' pages are free at once, slab
     * slots' once a sync covered their frees, memory outside the pool
     * takes whole pages), not the bytes the program did not request; an
     * allocation of the figure succeeds. Told more than the limit
     * (SPILLWAY_OVERSUBSCRIBE), the same rule against what it is told.
     * Never above told - used, which the limit checks. */
    uint64_t held = sw_held_bytes(spw_pool_policy(), dev);
    uint64_t pages = held < told ? told - held : 0;
    *free_bytes = (size_t)(pages < avail ? pages : avail);
}

CUresult spw_h_mem_get_info(size_t *free_bytes, size_t *total_bytes)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_get_info);
    CUresult r = real(free_bytes, total_bytes);
    int dev;
    if (r != CUDA_SUCCESS || spw_disabled())
        return r;
    /* The driver answered but cannot name the device: its figures would be
     * the device's, not the limit's. Its error instead. */
    if ((r = spw_driver_ctx_device(&dev)) != CUDA_SUCCESS)
        return r;
    if (dev >= 0 && spw_account_tracks(dev)) {
        spw_info_clamp(dev, free_bytes, total_bytes);
        spw_info_clamps++;
    }
    return CUDA_SUCCESS;
}

CUresult spw_h_device_total_mem(size_t *bytes, CUdevice dev)
{
    SPW_REAL_OR_RETURN(real, spw_h_device_total_mem);
    CUresult r = real(bytes, dev);
    if (r != CUDA_SUCCESS || spw_disabled() || !bytes || dev < 0 || !spw_account_tracks(dev))
        return r;
    uint64_t limit = spw_limit(dev), told = spw_limit_told(dev);
    /* Oversubscribed, the program is told more than the device has, as
     * cuMemGetInfo tells it; else never more than the driver's figure. */
    if (told > limit || limit < *bytes)
        *bytes = (size_t)told;
    return r;
}
