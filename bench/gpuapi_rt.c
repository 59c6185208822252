/* gpuapi.h over the CUDA runtime. Built with gcc, linked by nvcc
 * (-cudart static|shared): see bench/module.mk. */
#include "bench/gpuapi.h"

#include <cuda_runtime.h>
#include <stdint.h>

/* Each thread's own (see gpuapi_drv.c). */
static _Thread_local cudaStream_t stream;

const char *gpu_api_name(void) { return "runtime"; }

int gpu_thread_init(void)
{
    cudaError_t e = cudaSetDevice(0); /* the runtime makes the primary context current */
    if (e == cudaSuccess && !stream)
        e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    return (int)e;
}

int gpu_init(void)
{
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess)
        e = cudaFree(0); /* creates the context now, not inside the first timed call */
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaMemPool_t pool;
    if (e == cudaSuccess)
        e = cudaDeviceGetDefaultMemPool(&pool, 0);
    if (e == cudaSuccess) {
        uint64_t keep = UINT64_MAX;
        e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    return (int)e;
}

/* A failed cudaMalloc leaves the error in the runtime's last-error slot;
 * clear it so that it never surfaces from a later, unrelated call. */
static int ret(cudaError_t e)
{
    if (e != cudaSuccess)
        (void)cudaGetLastError();
    return (int)e;
}

int gpu_malloc(gpu_ptr *p, size_t n)
{
    void *v = NULL;
    cudaError_t e = cudaMalloc(&v, n);
    *p = (gpu_ptr)(uintptr_t)v;
    return ret(e);
}

int gpu_free(gpu_ptr p) { return ret(cudaFree((void *)(uintptr_t)p)); }

int gpu_malloc_async(gpu_ptr *p, size_t n)
{
    void *v = NULL;
    cudaError_t e = cudaMallocAsync(&v, n, stream);
    *p = (gpu_ptr)(uintptr_t)v;
    return ret(e);
}

int gpu_free_async(gpu_ptr p) { return ret(cudaFreeAsync((void *)(uintptr_t)p, stream)); }
int gpu_stream_sync(void) { return ret(cudaStreamSynchronize(stream)); }
int gpu_device_sync(void) { return ret(cudaDeviceSynchronize()); }
int gpu_mem_info(size_t *f, size_t *t) { return ret(cudaMemGetInfo(f, t)); }

int gpu_memset8(gpu_ptr p, unsigned char v, size_t n, int on_stream)
{
    void *d = (void *)(uintptr_t)p;
    return ret(on_stream ? cudaMemsetAsync(d, v, n, stream) : cudaMemset(d, v, n));
}

int gpu_copy_dtoh(void *dst, gpu_ptr src, size_t n, int on_stream)
{
    const void *s = (const void *)(uintptr_t)src;
    if (!on_stream)
        return ret(cudaMemcpy(dst, s, n, cudaMemcpyDeviceToHost));
    cudaError_t e = cudaMemcpyAsync(dst, s, n, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(stream);
    return ret(e);
}

int gpu_is_oom(int err) { return err == (int)cudaErrorMemoryAllocation; }
const char *gpu_error_string(int err) { return cudaGetErrorString((cudaError_t)err); }
