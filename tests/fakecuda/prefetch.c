/* fakecuda: prefetches and discards of managed memory, each with its _ptsz
 * variant: cuMemPrefetchAsync in CUDA 8's ABI (a CUdevice, CU_DEVICE_CPU for
 * the host; the unsuffixed symbol, still exported) and CUDA 12.2's (_v2, a
 * CUmemLocation and flags), and CUDA 13.0's batches cuMemPrefetchBatchAsync,
 * cuMemDiscardBatchAsync and cuMemDiscardAndPrefetchBatchAsync.
 *
 * fakecuda's managed memory is one storage every device and the host read,
 * so a prefetch checks what the driver checks and has nothing to move. A
 * discard leaves its ranges' contents "indeterminate" until written or
 * prefetched: fakecuda fills them with FC_DISCARDED bytes in stream order
 * (after the work queued before it), so that a program reading discarded
 * bytes, or discarding before its earlier work read them, sees garbage here
 * as it may on a GPU. Stream capture of these calls is not modelled (the
 * reference does not say what the driver does): they run as on a stream
 * that does not capture. */
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/internal.h"

/* What a discarded byte reads until it is written again. */
#define FC_DISCARDED 0xdd

static CUresult location_ok(CUmemLocation loc)
{
    switch (loc.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        return fc_check_device(loc.id) == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return CUDA_SUCCESS; /* the id is ignored */
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        return loc.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; /* one NUMA node, as fakecuda's VMM has it */
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* [p, p + count) lies in one managed allocation, count > 0. */
static bool managed_range(CUdeviceptr p, size_t count)
{
    if (!count)
        return false;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)p);
    bool ok = reg && reg->kind == FC_MANAGED && count <= reg->size - ((uintptr_t)p - reg->base);
    pthread_mutex_unlock(&fc_lock);
    return ok;
}

static CUresult prefetch(CUdeviceptr p, size_t count, CUmemLocation loc, unsigned flags, CUstream h,
                         bool ptsz)
{
    CUresult r = fc_initialized();
    struct CUstream_st *s;
    if (r == CUDA_SUCCESS)
        r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE; /* flags: reserved, 0 */
    if ((r = location_ok(loc)) != CUDA_SUCCESS)
        return r;
    return managed_range(p, count) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                         unsigned int flags, CUstream hStream)
{
    FC_FAULT(cuMemPrefetchAsync);
    return prefetch(devPtr, count, location, flags, hStream, false);
}

FC_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                              unsigned int flags, CUstream hStream)
{
    FC_FAULT(cuMemPrefetchAsync);
    return prefetch(devPtr, count, location, flags, hStream, true);
}

/* CUDA 8's ABI (CUDA 12.x's reference): the destination a device ordinal,
 * CU_DEVICE_CPU the host; anything else is no device. cuda.h maps the name
 * to the _v2 and declares this one only for its own build. */
static CUresult prefetch_v1(CUdeviceptr p, size_t count, CUdevice dst, CUstream h, bool ptsz)
{
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dst};
    if (dst == CU_DEVICE_CPU)
        loc = (CUmemLocation){.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0};
    return prefetch(p, count, loc, 0, h, ptsz);
}

#undef cuMemPrefetchAsync
CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);

FC_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
{
    FC_FAULT(cuMemPrefetchAsync);
    return prefetch_v1(devPtr, count, dstDevice, hStream, false);
}

FC_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                           CUstream hStream)
{
    FC_FAULT(cuMemPrefetchAsync);
    return prefetch_v1(devPtr, count, dstDevice, hStream, true);
}

/* ---- CUDA 13.0's batches ---- */

/* The batch's ranges, owned by the stream's worker once queued. */
struct discard {
    size_t n;
    struct {
        uintptr_t p;
        size_t size;
    } r[];
};

static void run_discard(void *arg)
{
    struct discard *d = arg;
    for (size_t i = 0; i < d->n; i++)
        memset((void *)d->r[i].p, FC_DISCARDED, d->r[i].size);
    free(d);
}

/* The locations of a batch of count operations: numPrefetchLocs entries,
 * the first index 0, each greater than the one before, the last below
 * count, numPrefetchLocs at most count; each location one a prefetch
 * takes. */
static CUresult locations_ok(const CUmemLocation *locs, const size_t *idxs, size_t nlocs, size_t count)
{
    if (!locs || !idxs || !nlocs || nlocs > count || idxs[0] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 1; k < nlocs; k++)
        if (idxs[k] <= idxs[k - 1])
            return CUDA_ERROR_INVALID_VALUE;
    if (idxs[nlocs - 1] >= count)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < nlocs; k++) {
        CUresult r = location_ok(locs[k]);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

/* What a batch does. */
enum batch_kind { PREFETCH = 1, DISCARD = 2, DISCARD_AND_PREFETCH = 3 };

/* One batch, as the three calls document it: "the batch as a whole
 * executes in stream order"; every range managed memory; flags reserved
 * (0); hStream "must not be legacy NULL stream" (through a _ptsz entry
 * point NULL is the per-thread stream, which is not); all devices with
 * CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS (fakecuda's all have it).
 * The reference names no error code for any of it: INVALID_VALUE, the
 * code of every argument error of cuMemPrefetchAsync, and INVALID_DEVICE
 * for a device location that is no device, as there. */
static CUresult batch(enum batch_kind kind, CUdeviceptr *dptrs, size_t *sizes, size_t count,
                      CUmemLocation *locs, size_t *idxs, size_t nlocs, unsigned long long flags, CUstream h,
                      bool ptsz)
{
    CUresult r = fc_initialized();
    struct CUstream_st *s;
    if (r == CUDA_SUCCESS)
        r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (fc_stream_is_legacy(s) || flags != 0 || !count || !dptrs || !sizes)
        return CUDA_ERROR_INVALID_VALUE;
    if ((kind & PREFETCH) && (r = locations_ok(locs, idxs, nlocs, count)) != CUDA_SUCCESS)
        return r;
    for (size_t i = 0; i < count; i++)
        if (!managed_range(dptrs[i], sizes[i]))
            return CUDA_ERROR_INVALID_VALUE;
    if (!(kind & DISCARD))
        return CUDA_SUCCESS; /* nothing to move */
    struct discard *d = malloc(sizeof *d + count * sizeof d->r[0]);
    if (!d)
        return CUDA_ERROR_OUT_OF_MEMORY;
    d->n = count;
    for (size_t i = 0; i < count; i++) {
        d->r[i].p = (uintptr_t)dptrs[i];
        d->r[i].size = sizes[i];
    }
    fc_stream_enqueue(s, run_discard, d, NULL);
    return CUDA_SUCCESS;
}

#undef cuMemPrefetchBatchAsync
#undef cuMemDiscardBatchAsync
#undef cuMemDiscardAndPrefetchBatchAsync
CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,
                                      size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
                                      CUstream hStream);
CUresult cuMemDiscardBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count, unsigned long long flags,
                                     CUstream hStream);
CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                                CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs,
                                                size_t numPrefetchLocs, unsigned long long flags,
                                                CUstream hStream);

/* An entry point of a batch with locations: base (its fault name), the
 * exported name, the kind, whether it is the _ptsz variant. */
#define LOCATED_BATCH(base, name, kind, pt)                                                                \
    FC_EXPORT CUresult name(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs, \
                            size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,    \
                            CUstream hStream)                                                             \
    {                                                                                                     \
        FC_FAULT(base);                                                                                   \
        return batch(kind, dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags,    \
                     hStream, pt);                                                                        \
    }
LOCATED_BATCH(cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync, PREFETCH, false)
LOCATED_BATCH(cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync_ptsz, PREFETCH, true)
LOCATED_BATCH(cuMemDiscardAndPrefetchBatchAsync, cuMemDiscardAndPrefetchBatchAsync, DISCARD_AND_PREFETCH, false)
LOCATED_BATCH(cuMemDiscardAndPrefetchBatchAsync, cuMemDiscardAndPrefetchBatchAsync_ptsz, DISCARD_AND_PREFETCH,
              true)

FC_EXPORT CUresult cuMemDiscardBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count, unsigned long long flags,
                                          CUstream hStream)
{
    FC_FAULT(cuMemDiscardBatchAsync);
    return batch(DISCARD, dptrs, sizes, count, NULL, NULL, 0, flags, hStream, false);
}

FC_EXPORT CUresult cuMemDiscardBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes, size_t count,
                                               unsigned long long flags, CUstream hStream)
{
    FC_FAULT(cuMemDiscardBatchAsync);
    return batch(DISCARD, dptrs, sizes, count, NULL, NULL, 0, flags, hStream, true);
}
