/* Stream-ordered allocation: cuMemAllocAsync, cuMemAllocFromPoolAsync and
 * cuMemFreeAsync, each also as its _ptsz variant, which forwards to the
 * driver's _ptsz function (the per-thread default stream must stay per
 * thread). Counted on the stream's device when the allocation is enqueued,
 * released when the free is. */
#include "shim/handler.h"

static int stream_device(CUstream stream)
{
    int dev;
    if (spw_driver_stream_device(stream, &dev) != CUDA_SUCCESS || dev < 0 ||
        !spw_account_tracks(dev))
        return -1;
    return dev;
}

static CUresult alloc_async(CUresult (*real)(CUdeviceptr *, size_t, CUstream), CUdeviceptr *dptr,
                            size_t bytesize, CUstream stream)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev;
    if (spw_disabled() || !dptr || (dev = stream_device(stream)) < 0)
        return real(dptr, bytesize, stream);
    SPW_ACCOUNTED_ALLOC(SPW_KIND_DEVPTR, dev, bytesize, real(dptr, bytesize, stream), *dptr);
}

/* A pool's memory lives on the pool's device, which the driver cannot be
 * asked for; the stream's device is the same in every program we know. */
static CUresult alloc_from_pool(CUresult (*real)(CUdeviceptr *, size_t, CUmemoryPool, CUstream),
                                CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                CUstream stream)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    int dev;
    if (spw_disabled() || !dptr || (dev = stream_device(stream)) < 0)
        return real(dptr, bytesize, pool, stream);
    SPW_ACCOUNTED_ALLOC(SPW_KIND_DEVPTR, dev, bytesize, real(dptr, bytesize, pool, stream),
                        *dptr);
}

static CUresult free_async(CUresult (*real)(CUdeviceptr, CUstream), CUdeviceptr dptr,
                           CUstream stream)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (spw_disabled() || !dptr)
        return real(dptr, stream);
    SPW_ACCOUNTED_FREE(SPW_KIND_DEVPTR, dptr, real(dptr, stream));
}

CUresult spw_h_mem_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(SPW_REAL(spw_h_mem_alloc_async), dptr, bytesize, hStream);
}

CUresult spw_h_mem_alloc_async_pt(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(SPW_REAL(spw_h_mem_alloc_async_pt), dptr, bytesize, hStream);
}

CUresult spw_h_mem_alloc_from_pool_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream)
{
    return alloc_from_pool(SPW_REAL(spw_h_mem_alloc_from_pool_async), dptr, bytesize, pool,
                           hStream);
}

CUresult spw_h_mem_alloc_from_pool_async_pt(CUdeviceptr *dptr, size_t bytesize,
                                            CUmemoryPool pool, CUstream hStream)
{
    return alloc_from_pool(SPW_REAL(spw_h_mem_alloc_from_pool_async_pt), dptr, bytesize, pool,
                           hStream);
}

CUresult spw_h_mem_free_async(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(SPW_REAL(spw_h_mem_free_async), dptr, hStream);
}

CUresult spw_h_mem_free_async_pt(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(SPW_REAL(spw_h_mem_free_async_pt), dptr, hStream);
}
