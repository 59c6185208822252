/* gpuapi.h over the driver API (gcc, -lcuda): runs against fakecuda in CI
 * and against the real driver on the GPU host. */
#include "bench/gpuapi.h"

#include <cuda.h>
#include <stdint.h>

/* Each thread's own: threads submitting at once (alloc_threads --op submit)
 * must not meet in one stream's queue, natively or under spillway. */
static _Thread_local CUstream stream;

const char *gpu_api_name(void) { return "driver"; }

int gpu_thread_init(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUresult r = cuDeviceGet(&dev, 0);
    if (r == CUDA_SUCCESS)
        r = cuDevicePrimaryCtxRetain(&ctx, dev);
    if (r == CUDA_SUCCESS)
        r = cuCtxSetCurrent(ctx);
    if (r == CUDA_SUCCESS && !stream)
        r = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    return (int)r;
}

int gpu_init(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmemoryPool pool;
    uint64_t keep = UINT64_MAX;
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGet(&dev, 0);
    if (r == CUDA_SUCCESS)
        r = cuDevicePrimaryCtxRetain(&ctx, dev);
    if (r == CUDA_SUCCESS)
        r = cuCtxSetCurrent(ctx);
    if (r == CUDA_SUCCESS)
        r = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetDefaultMemPool(&pool, dev);
    if (r == CUDA_SUCCESS)
        r = cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    return (int)r;
}

int gpu_malloc(gpu_ptr *p, size_t n)
{
    CUdeviceptr d = 0;
    CUresult r = cuMemAlloc(&d, n);
    *p = (gpu_ptr)d;
    return (int)r;
}

int gpu_free(gpu_ptr p) { return (int)cuMemFree((CUdeviceptr)p); }

int gpu_malloc_async(gpu_ptr *p, size_t n)
{
    CUdeviceptr d = 0;
    CUresult r = cuMemAllocAsync(&d, n, stream);
    *p = (gpu_ptr)d;
    return (int)r;
}

int gpu_free_async(gpu_ptr p) { return (int)cuMemFreeAsync((CUdeviceptr)p, stream); }
int gpu_stream_sync(void) { return (int)cuStreamSynchronize(stream); }
int gpu_device_sync(void) { return (int)cuCtxSynchronize(); }
int gpu_mem_info(size_t *f, size_t *t) { return (int)cuMemGetInfo(f, t); }

int gpu_memset8(gpu_ptr p, unsigned char v, size_t n, int on_stream)
{
    return (int)(on_stream ? cuMemsetD8Async((CUdeviceptr)p, v, n, stream) : cuMemsetD8((CUdeviceptr)p, v, n));
}

int gpu_copy_dtoh(void *dst, gpu_ptr src, size_t n, int on_stream)
{
    if (!on_stream)
        return (int)cuMemcpyDtoH(dst, (CUdeviceptr)src, n);
    CUresult r = cuMemcpyDtoHAsync(dst, (CUdeviceptr)src, n, stream);
    if (r == CUDA_SUCCESS)
        r = cuStreamSynchronize(stream);
    return (int)r;
}

int gpu_is_oom(int err) { return err == (int)CUDA_ERROR_OUT_OF_MEMORY; }

const char *gpu_error_string(int err)
{
    const char *s = NULL;
    if (cuGetErrorString((CUresult)err, &s) != CUDA_SUCCESS || !s)
        return "unknown error";
    return s;
}
