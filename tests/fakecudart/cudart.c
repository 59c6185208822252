/* fakecudart: the few functions of the shared CUDA runtime (libcudart.so)
 * that spillway intercepts, reaching the driver the way the real runtime
 * does (docs/design.md, "How programs reach CUDA"): dlopen("libcuda.so.1"),
 * dlsym(handle, "cuGetProcAddress"), then that function asked for
 * "cuGetProcAddress" itself (version 12000, the _v2 ABI), then every driver
 * function by base name and version through what it returned. CI has no
 * runtime that works against fakecuda; this one lets the tests check that a
 * cudaMalloc is counted exactly once. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define RUNTIME_VERSION 12000

typedef CUresult (*gpa_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);

static struct {
    CUresult (*init)(unsigned);
    CUresult (*primary_ctx_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_get_info)(size_t *, size_t *);
    CUresult (*memcpy)(CUdeviceptr, CUdeviceptr, size_t);
} drv;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cudaError_t load_error = cudaErrorInitializationError;
static _Thread_local int current_device;

/* The driver functions this runtime uses: field, base name, versioned symbol. */
#define DRIVER_FUNCS(F)                                               \
    F(init, cuInit, cuInit)                                           \
    F(primary_ctx_retain, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain) \
    F(ctx_get_current, cuCtxGetCurrent, cuCtxGetCurrent)              \
    F(ctx_set_current, cuCtxSetCurrent, cuCtxSetCurrent)              \
    F(mem_alloc, cuMemAlloc, cuMemAlloc_v2)                           \
    F(mem_free, cuMemFree, cuMemFree_v2)                              \
    F(mem_get_info, cuMemGetInfo, cuMemGetInfo_v2)                    \
    F(memcpy, cuMemcpy, cuMemcpy)

/* As the real runtime: cuGetProcAddress found with dlsym, asked for itself,
 * then for every base name. */
static int load_through_gpa(void *h)
{
    gpa_v1_fn first = (gpa_v1_fn)dlsym(h, "cuGetProcAddress");
    gpa_v2_fn gpa = NULL;
    if (!first || first("cuGetProcAddress", (void **)&gpa, RUNTIME_VERSION, 0) != CUDA_SUCCESS ||
        !gpa)
        return -1;
    CUdriverProcAddressQueryResult status;
#define GET(field, base, symbol)                                                              \
    if (gpa(#base, (void **)&drv.field, RUNTIME_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,        \
            &status) != CUDA_SUCCESS ||                                                      \
        status != CU_GET_PROC_ADDRESS_SUCCESS)                                               \
        return -1;
    DRIVER_FUNCS(GET)
#undef GET
    return 0;
}

/* FAKECUDART_BYPASS=1: the driver's own functions, found with glibc's dlsym
 * on the driver's handle, behind an interposed dlsym's and exports' back
 * (as a runtime that resolved the driver before spillway was there). */
static int load_bypassing(void *h)
{
    void *(*glibc_dlsym)(void *, const char *) =
        (void *(*)(void *, const char *))dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34");
    if (!glibc_dlsym)
        glibc_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5");
    if (!glibc_dlsym)
        return -1;
#define GET(field, base, symbol)                                   \
    if (!(*(void **)&drv.field = glibc_dlsym(h, #symbol)))          \
        return -1;
    DRIVER_FUNCS(GET)
#undef GET
    return 0;
}

static void load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    const char *bypass = getenv("FAKECUDART_BYPASS");
    int r = bypass && strcmp(bypass, "1") == 0 ? load_bypassing(h) : load_through_gpa(h);
    if (r == 0 && drv.init(0) == CUDA_SUCCESS)
        load_error = cudaSuccess;
}

static cudaError_t to_runtime(CUresult r)
{
    switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
    default: return cudaErrorUnknown;
    }
}

/* Like the runtime: the device's primary context, made current lazily. */
static cudaError_t ready(void)
{
    pthread_once(&load_once, load);
    if (load_error != cudaSuccess)
        return load_error;
    CUcontext ctx = NULL;
    if (drv.ctx_get_current(&ctx) == CUDA_SUCCESS && ctx)
        return cudaSuccess;
    CUresult r = drv.primary_ctx_retain(&ctx, current_device);
    if (r == CUDA_SUCCESS)
        r = drv.ctx_set_current(ctx);
    return to_runtime(r);
}

EXPORT cudaError_t cudaSetDevice(int device)
{
    current_device = device;
    pthread_once(&load_once, load);
    if (load_error != cudaSuccess)
        return load_error;
    CUcontext ctx;
    CUresult r = drv.primary_ctx_retain(&ctx, device);
    if (r == CUDA_SUCCESS)
        r = drv.ctx_set_current(ctx);
    return to_runtime(r);
}

EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    cudaError_t e = ready();
    if (e != cudaSuccess)
        return e;
    if (!devPtr)
        return cudaErrorInvalidValue;
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    CUdeviceptr p = 0;
    CUresult r = drv.mem_alloc(&p, size);
    if (r == CUDA_SUCCESS)
        *devPtr = (void *)(uintptr_t)p;
    return to_runtime(r);
}

EXPORT cudaError_t cudaFree(void *devPtr)
{
    cudaError_t e = ready();
    if (e != cudaSuccess || !devPtr)
        return e;
    return to_runtime(drv.mem_free((CUdeviceptr)(uintptr_t)devPtr));
}

EXPORT cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    cudaError_t e = ready();
    if (e != cudaSuccess)
        return e;
    return to_runtime(drv.mem_get_info(free_bytes, total_bytes));
}

EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    (void)kind; /* unified addressing: the driver tells the directions apart */
    cudaError_t e = ready();
    if (e != cudaSuccess)
        return e;
    return to_runtime(drv.memcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, count));
}
