/* A stand-in driver for test_resolve.c (loaded by the shim through
 * SPILLWAY_DRIVER): each allocation function records its own exported name
 * in spy_last (copies also their byte count in spy_bytes), so a test sees
 * which real function a handler forwarded to.
 * spy_gpa_mode 0: cuGetProcAddress answers with the exported functions;
 * 1: with other addresses (trampolines), as a driver may. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT char spy_last[64];
EXPORT int spy_gpa_mode;
static CUdeviceptr next_ptr = 0x10000000;

static void record(const char *name)
{
    strncpy(spy_last, name, sizeof spy_last - 1);
}

static CUresult give(CUdeviceptr *p, const char *name)
{
    record(name);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    *p = next_ptr;
    next_ptr += 0x100000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
/* Unknown (as before cuInit) until a test sets spy_device_count. */
EXPORT int spy_device_count = -1;
EXPORT CUresult cuDeviceGetCount(int *n)
{
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    if (spy_device_count < 0)
        return CUDA_ERROR_NOT_INITIALIZED;
    *n = spy_device_count;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { (void)d; if (!b) return CUDA_ERROR_INVALID_VALUE; *b = 1ull << 30; return CUDA_SUCCESS; }
EXPORT CUresult cuGetExportTable(const void **t, const CUuuid *id) { (void)id; *t = NULL; return CUDA_ERROR_NOT_SUPPORTED; }

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { (void)n; return give(p, "cuMemAlloc_v2"); }
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { (void)p; record("cuMemFree_v2"); return CUDA_SUCCESS; }

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) { (void)n; (void)s; return give(p, "cuMemAllocAsync"); }
EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s) { (void)n; (void)s; return give(p, "cuMemAllocAsync_ptsz"); }
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool m, CUstream s) { (void)n; (void)m; (void)s; return give(p, "cuMemAllocFromPoolAsync"); }
EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool m, CUstream s) { (void)n; (void)m; (void)s; return give(p, "cuMemAllocFromPoolAsync_ptsz"); }
EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { (void)p; (void)s; record("cuMemFreeAsync"); return CUDA_SUCCESS; }
EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { (void)p; (void)s; record("cuMemFreeAsync_ptsz"); return CUDA_SUCCESS; }

/* The copy family, each variant recording its name and byte count. */
EXPORT size_t spy_bytes;
#define SPY_COPY(name, dst_t, src_t)                                   \
    EXPORT CUresult name(dst_t d, src_t s, size_t n)                   \
    {                                                                  \
        (void)d; (void)s; spy_bytes = n; record(#name);                \
        return CUDA_SUCCESS;                                           \
    }
#define SPY_COPY_ASYNC(name, dst_t, src_t)                             \
    EXPORT CUresult name(dst_t d, src_t s, size_t n, CUstream h)       \
    {                                                                  \
        (void)d; (void)s; (void)h; spy_bytes = n; record(#name);       \
        return CUDA_SUCCESS;                                           \
    }
SPY_COPY(cuMemcpy, CUdeviceptr, CUdeviceptr)
SPY_COPY(cuMemcpy_ptds, CUdeviceptr, CUdeviceptr)
SPY_COPY(cuMemcpyHtoD_v2, CUdeviceptr, const void *)
SPY_COPY(cuMemcpyHtoD_v2_ptds, CUdeviceptr, const void *)
SPY_COPY(cuMemcpyDtoH_v2, void *, CUdeviceptr)
SPY_COPY(cuMemcpyDtoH_v2_ptds, void *, CUdeviceptr)
SPY_COPY(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr)
SPY_COPY(cuMemcpyDtoD_v2_ptds, CUdeviceptr, CUdeviceptr)
SPY_COPY_ASYNC(cuMemcpyAsync, CUdeviceptr, CUdeviceptr)
SPY_COPY_ASYNC(cuMemcpyAsync_ptsz, CUdeviceptr, CUdeviceptr)
SPY_COPY_ASYNC(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void *)
SPY_COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, const void *)
SPY_COPY_ASYNC(cuMemcpyDtoHAsync_v2, void *, CUdeviceptr)
SPY_COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, void *, CUdeviceptr)
SPY_COPY_ASYNC(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr)
SPY_COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, CUdeviceptr)

/* Mode 1's addresses: same behaviour, other functions. */
static CUresult t_alloc_async(CUdeviceptr *p, size_t n, CUstream s) { return cuMemAllocAsync(p, n, s); }
static CUresult t_alloc_async_ptsz(CUdeviceptr *p, size_t n, CUstream s) { return cuMemAllocAsync_ptsz(p, n, s); }
static CUresult t_free_async(CUdeviceptr p, CUstream s) { return cuMemFreeAsync(p, s); }
static CUresult t_free_async_ptsz(CUdeviceptr p, CUstream s) { return cuMemFreeAsync_ptsz(p, s); }
static CUresult t_alloc(CUdeviceptr *p, size_t n) { return cuMemAlloc_v2(p, n); }
static CUresult t_htod(CUdeviceptr d, const void *s, size_t n) { return cuMemcpyHtoD_v2(d, s, n); }
static CUresult t_htod_ptds(CUdeviceptr d, const void *s, size_t n) { return cuMemcpyHtoD_v2_ptds(d, s, n); }

#undef cuGetProcAddress
EXPORT CUresult cuGetProcAddress(const char *, void **, int, cuuint64_t);
EXPORT CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static const struct {
    const char *base;
    void *fn, *pt, *tramp, *tramp_pt;
} procs[] = {
    {"cuMemAlloc", (void *)cuMemAlloc_v2, NULL, (void *)t_alloc, NULL},
    {"cuMemAllocAsync", (void *)cuMemAllocAsync, (void *)cuMemAllocAsync_ptsz, (void *)t_alloc_async, (void *)t_alloc_async_ptsz},
    {"cuMemFreeAsync", (void *)cuMemFreeAsync, (void *)cuMemFreeAsync_ptsz, (void *)t_free_async, (void *)t_free_async_ptsz},
    {"cuMemAllocFromPoolAsync", (void *)cuMemAllocFromPoolAsync, (void *)cuMemAllocFromPoolAsync_ptsz, NULL, NULL},
    {"cuMemcpy", (void *)cuMemcpy, (void *)cuMemcpy_ptds, NULL, NULL},
    {"cuMemcpyAsync", (void *)cuMemcpyAsync, (void *)cuMemcpyAsync_ptsz, NULL, NULL},
    {"cuMemcpyHtoD", (void *)cuMemcpyHtoD_v2, (void *)cuMemcpyHtoD_v2_ptds, (void *)t_htod, (void *)t_htod_ptds},
    {"cuMemcpyDtoH", (void *)cuMemcpyDtoH_v2, (void *)cuMemcpyDtoH_v2_ptds, NULL, NULL},
    {"cuMemcpyDtoD", (void *)cuMemcpyDtoD_v2, (void *)cuMemcpyDtoD_v2_ptds, NULL, NULL},
    {"cuMemcpyHtoDAsync", (void *)cuMemcpyHtoDAsync_v2, (void *)cuMemcpyHtoDAsync_v2_ptsz, NULL, NULL},
    {"cuMemcpyDtoHAsync", (void *)cuMemcpyDtoHAsync_v2, (void *)cuMemcpyDtoHAsync_v2_ptsz, NULL, NULL},
    {"cuMemcpyDtoDAsync", (void *)cuMemcpyDtoDAsync_v2, (void *)cuMemcpyDtoDAsync_v2_ptsz, NULL, NULL},
    {"cuGetExportTable", (void *)cuGetExportTable, NULL, NULL, NULL},
    {"cuCtxGetDevice", (void *)cuCtxGetDevice, NULL, NULL, NULL},
};

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    if (strcmp(symbol, "cuGetProcAddress") == 0) {
        *pfn = version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
        return CUDA_SUCCESS;
    }
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        if (strcmp(symbol, procs[i].base) != 0)
            continue;
        int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && procs[i].pt;
        void *fn = pt ? procs[i].pt : procs[i].fn;
        if (spy_gpa_mode == 1 && procs[i].tramp)
            fn = pt ? procs[i].tramp_pt : procs[i].tramp;
        *pfn = fn;
        return CUDA_SUCCESS;
    }
    *pfn = NULL;
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return lookup(symbol, pfn, version, flags);
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    CUresult r = lookup(symbol, pfn, version, flags);
    if (status)
        *status = r == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return r;
}

/* What the driver gets when it looks up one of its own hooked names with
 * dlsym (drvself.c): its own function, not spillway's handler. */
EXPORT void *spy_self_lookup(void)
{
    Dl_info info;
    if (!dladdr((void *)spy_self_lookup, &info))
        return NULL;
    void *self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!self)
        return NULL;
    /* Not a tail call: the lookup must come from inside the driver. */
    void *volatile p = dlsym(self, "cuMemAllocAsync");
    dlclose(self);
    return p;
}
