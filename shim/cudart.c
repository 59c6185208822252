/* cudaMalloc, cudaFree, cudaMemGetInfo and cudaMemcpy of programs that use
 * the shared runtime (PyTorch's allocator calls cudaMalloc through the PLT).
 * Each forwards to the real runtime. The runtime then reaches the driver
 * through cuGetProcAddress, i.e. through spillway's handlers, which count
 * the allocation; the thread-local guard tells the wrapper that this
 * happened, so that it counts only what no handler saw (a runtime that
 * resolved the driver behind spillway's back). Exactly once either way;
 * cudaMemcpy's bytes the same. */
#include "shim/copy.h"
#include "shim/handler.h"
#include "shim/info.h"
#include "shim/log.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

#define SPW_EXPORT __attribute__((visibility("default")))

/* Every name of runtime.def, typed as the runtime's (a definition below
 * that differs does not compile). */
#define SPW_RUNTIME(name) SPW_EXPORT extern __typeof__(name) name;
#include "shim/runtime.def"
#undef SPW_RUNTIME

/* dl_iterate_phdr callback: the path of the first loaded runtime. */
static int find_runtime(struct dl_phdr_info *info, size_t size, void *out)
{
    (void)size;
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    if (strncmp(base, "libcudart.so", 12) != 0)
        return 0;
    *(const char **)out = info->dlpi_name;
    return 1;
}

/* The runtime loaded in a library's local scope only (Python loads
 * extension modules, and the libcudart they need, with RTLD_LOCAL): not
 * reachable with RTLD_NEXT from spillway, but loaded all the same. */
static void *from_loaded_runtime(const char *name)
{
    const char *path = NULL;
    dl_iterate_phdr(find_runtime, &path);
    if (!path)
        return NULL;
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return NULL;
    void *fn = spw_real_dlsym()(h, name);
    dlclose(h); /* only drops the reference RTLD_NOLOAD took */
    return fn;
}

/* The real runtime's function: the next definition after spillway, else
 * the one of the runtime that is loaded. */
static void *runtime_fn(void *_Atomic *cache, const char *name)
{
    void *fn = atomic_load_explicit(cache, memory_order_acquire);
    if (!fn) {
        fn = spw_real_dlsym()(RTLD_NEXT, name);
        if (!fn)
            fn = from_loaded_runtime(name);
        if (fn)
            atomic_store_explicit(cache, fn, memory_order_release);
    }
    return fn;
}

#define RUNTIME_FN(var, name)                                                   \
    static void *_Atomic var##_cache;                                           \
    __typeof__(&name) var = (__typeof__(&name))runtime_fn(&var##_cache, #name); \
    if (!var)                                                                   \
        return cudaErrorInitializationError /* no runtime in this process */

static struct spw_rt_guard guard_enter(void)
{
    struct spw_rt_guard saved = spw_rt_guard;
    spw_rt_guard = (struct spw_rt_guard){.active = 1, .counted = 0};
    return saved;
}

/* Returns whether a handler counted the call, and restores the guard. */
static int guard_leave(struct spw_rt_guard saved)
{
    int counted = spw_rt_guard.counted;
    spw_rt_guard = saved;
    return counted;
}

/* Counts an allocation the runtime made without a handler seeing it; frees
 * it again if it passes the limit. */
static cudaError_t adopt(void *ptr, size_t size, cudaError_t (*real_free)(void *))
{
    int dev;
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)ptr;
    if (spw_driver_pointer_device(p, &dev) != CUDA_SUCCESS &&
        spw_driver_ctx_device(&dev) != CUDA_SUCCESS)
        return cudaSuccess;
    if (dev < 0 || !spw_account_tracks(dev))
        return cudaSuccess;
    spw_publish_ensure();
    if (spw_account_reserve(dev, size)) {
        struct spw_rt_guard saved = guard_enter();
        real_free(ptr);
        guard_leave(saved);
        return cudaErrorMemoryAllocation;
    }
    spw_account_commit(SPW_KIND_DEVPTR, p, dev, size);
    return cudaSuccess;
}

SPW_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    RUNTIME_FN(real, cudaMalloc);
    if (spw_disabled() || !devPtr)
        return real(devPtr, size);
    struct spw_rt_guard saved = guard_enter();
    cudaError_t e = real(devPtr, size);
    int counted = guard_leave(saved);
    if (e != cudaSuccess || counted || !*devPtr)
        return e;
    RUNTIME_FN(real_free, cudaFree);
    spw_debug("cudaMalloc reached the driver unseen: counting it here");
    e = adopt(*devPtr, size, real_free);
    if (e != cudaSuccess)
        *devPtr = NULL; /* adopt freed it: the program must not get its address */
    return e;
}

SPW_EXPORT cudaError_t cudaFree(void *devPtr)
{
    RUNTIME_FN(real, cudaFree);
    if (spw_disabled() || !devPtr)
        return real(devPtr);
    struct spw_rt_guard saved = guard_enter();
    cudaError_t e = real(devPtr);
    int counted = guard_leave(saved);
    int dev;
    uint64_t bytes;
    if (e == cudaSuccess && !counted &&
        spw_account_forget(SPW_KIND_DEVPTR, (uintptr_t)devPtr, &dev, &bytes) == 0)
        spw_account_release(dev, bytes);
    return e;
}

SPW_EXPORT cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    RUNTIME_FN(real, cudaMemGetInfo);
    unsigned clamps = spw_info_clamps;
    cudaError_t e = real(free_bytes, total_bytes);
    int dev;
    /* Only an answer the handler did not rewrite (the runtime went around
     * it): a second rewrite added what the program is told past the limit
     * to free again (info.h). */
    if (e == cudaSuccess && spw_info_clamps == clamps && !spw_disabled() &&
        spw_driver_ctx_device(&dev) == CUDA_SUCCESS && dev >= 0 && spw_account_tracks(dev))
        spw_info_clamp(dev, free_bytes, total_bytes);
    return e;
}

/* The runtime's copy reaches a driver copy handler, which counts it; the
 * wrapper counts only a copy no handler saw (a runtime that bypassed
 * spillway), by the direction the program named. */
SPW_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                                  enum cudaMemcpyKind kind)
{
    RUNTIME_FN(real, cudaMemcpy);
    if (spw_disabled())
        return real(dst, src, count, kind);
    struct spw_rt_guard saved = guard_enter();
    cudaError_t e = real(dst, src, count, kind);
    if (guard_leave(saved) || e != cudaSuccess)
        return e;
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, s = (CUdeviceptr)(uintptr_t)src;
    switch (kind) {
    case cudaMemcpyHostToDevice: spw_copy_count(SPW_COPY_HTOD, d, s, count); break;
    case cudaMemcpyDeviceToHost: spw_copy_count(SPW_COPY_DTOH, s, d, count); break;
    case cudaMemcpyDeviceToDevice: spw_copy_count(SPW_COPY_DTOD, d, s, count); break;
    case cudaMemcpyDefault: spw_copy_count_unified(d, s, count); break;
    default: break; /* host to host */
    }
    return e;
}
