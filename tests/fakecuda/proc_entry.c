/* fakecuda: a driver whose cuGetProcAddress answers with entry points of
 * its own rather than its exported symbols (FAKECUDA_PROC_ENTRY=internal):
 * the same functions at other addresses, which nothing in the ABI forbids
 * a driver to hand out. spillway can then not tell the ABI by the address
 * and must choose its handler by name, version and flags (shim/hooks.c).
 * Covered: the calls whose counts the shim suites check (allocation,
 * free, the kernel launches and their per-thread variants), and the
 * prefetches, discards and attachments of managed memory and the stream
 * callbacks (gates.sh: the prefetch's ABIs differ by version under one
 * name, CUDA 8's cuMemPrefetchAsync up to 12.1, the _v2 from 12.2). And a
 * driver
 * newer than spillway (FAKECUDA_PROC_FUTURE=1): an ABI of cuMemAlloc
 * from a CUDA version after 13.0, which spillway must leave alone. */
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/internal.h"

/* The exported per-thread launches, declared by their linker names. */
extern CUresult fc_x_launch_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, CUstream, void **, void **) __asm__("cuLaunchKernel_ptsz");
extern CUresult fc_x_launch_ex_ptsz(const CUlaunchConfig *, CUfunction, void **, void **)
    __asm__("cuLaunchKernelEx_ptsz");

static CUresult entry_alloc(CUdeviceptr *p, size_t n)
{
    return cuMemAlloc_v2(p, n);
}

static CUresult entry_free(CUdeviceptr p)
{
    return cuMemFree_v2(p);
}

static CUresult entry_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shmem, CUstream s, void **params, void **extra)
{
    return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

static CUresult entry_launch_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                  unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                                  void **extra)
{
    return fc_x_launch_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

static CUresult entry_launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    return cuLaunchKernelEx(c, f, params, extra);
}

static CUresult entry_launch_ex_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    return fc_x_launch_ex_ptsz(c, f, params, extra);
}

/* The prefetches and discards (prefetch.c), each ABI and variant, by their
 * linker names (cuda.h maps cuMemPrefetchAsync to the _v2). */
typedef CUresult prefetch_v1_t(CUdeviceptr, size_t, CUdevice, CUstream);
typedef CUresult prefetch_v2_t(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream);
typedef CUresult located_batch_t(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *, size_t,
                                 unsigned long long, CUstream);
typedef CUresult discard_batch_t(CUdeviceptr *, size_t *, size_t, unsigned long long, CUstream);
extern prefetch_v1_t fc_x_prefetch_v1 __asm__("cuMemPrefetchAsync");
extern prefetch_v1_t fc_x_prefetch_v1_ptsz __asm__("cuMemPrefetchAsync_ptsz");
extern prefetch_v2_t fc_x_prefetch_v2 __asm__("cuMemPrefetchAsync_v2");
extern prefetch_v2_t fc_x_prefetch_v2_ptsz __asm__("cuMemPrefetchAsync_v2_ptsz");
extern located_batch_t fc_x_prefetch_batch __asm__("cuMemPrefetchBatchAsync");
extern located_batch_t fc_x_prefetch_batch_ptsz __asm__("cuMemPrefetchBatchAsync_ptsz");
extern discard_batch_t fc_x_discard_batch __asm__("cuMemDiscardBatchAsync");
extern discard_batch_t fc_x_discard_batch_ptsz __asm__("cuMemDiscardBatchAsync_ptsz");
extern located_batch_t fc_x_both_batch __asm__("cuMemDiscardAndPrefetchBatchAsync");
extern located_batch_t fc_x_both_batch_ptsz __asm__("cuMemDiscardAndPrefetchBatchAsync_ptsz");
/* And the attachments and callbacks, ordered work that names no pool
 * memory either (gates.sh). */
typedef CUresult attach_t(CUstream, CUdeviceptr, size_t, unsigned);
typedef CUresult callback_t(CUstream, CUstreamCallback, void *, unsigned);
extern attach_t fc_x_attach __asm__("cuStreamAttachMemAsync");
extern attach_t fc_x_attach_ptsz __asm__("cuStreamAttachMemAsync_ptsz");
extern callback_t fc_x_callback __asm__("cuStreamAddCallback");
extern callback_t fc_x_callback_ptsz __asm__("cuStreamAddCallback_ptsz");

#define ENTRY_PREFETCH_V1(fn)                                                    \
    static CUresult entry_##fn(CUdeviceptr p, size_t n, CUdevice d, CUstream s) \
    {                                                                            \
        return fn(p, n, d, s);                                                   \
    }
#define ENTRY_PREFETCH_V2(fn)                                                                      \
    static CUresult entry_##fn(CUdeviceptr p, size_t n, CUmemLocation l, unsigned f, CUstream s) \
    {                                                                                              \
        return fn(p, n, l, f, s);                                                                  \
    }
#define ENTRY_LOCATED(fn)                                                                            \
    static CUresult entry_##fn(CUdeviceptr *p, size_t *n, size_t c, CUmemLocation *l, size_t *i,  \
                               size_t nl, unsigned long long f, CUstream s)                          \
    {                                                                                                \
        return fn(p, n, c, l, i, nl, f, s);                                                          \
    }
#define ENTRY_DISCARD(fn)                                                                             \
    static CUresult entry_##fn(CUdeviceptr *p, size_t *n, size_t c, unsigned long long f, CUstream s) \
    {                                                                                                 \
        return fn(p, n, c, f, s);                                                                     \
    }
ENTRY_PREFETCH_V1(fc_x_prefetch_v1)
ENTRY_PREFETCH_V1(fc_x_prefetch_v1_ptsz)
ENTRY_PREFETCH_V2(fc_x_prefetch_v2)
ENTRY_PREFETCH_V2(fc_x_prefetch_v2_ptsz)
ENTRY_LOCATED(fc_x_prefetch_batch)
ENTRY_LOCATED(fc_x_prefetch_batch_ptsz)
ENTRY_DISCARD(fc_x_discard_batch)
ENTRY_DISCARD(fc_x_discard_batch_ptsz)
ENTRY_LOCATED(fc_x_both_batch)
ENTRY_LOCATED(fc_x_both_batch_ptsz)
#define ENTRY_ATTACH(fn)                                                          \
    static CUresult entry_##fn(CUstream s, CUdeviceptr p, size_t n, unsigned f) \
    {                                                                             \
        return fn(s, p, n, f);                                                    \
    }
#define ENTRY_CALLBACK(fn)                                                                   \
    static CUresult entry_##fn(CUstream s, CUstreamCallback cb, void *data, unsigned f) \
    {                                                                                        \
        return fn(s, cb, data, f);                                                           \
    }
ENTRY_ATTACH(fc_x_attach)
ENTRY_ATTACH(fc_x_attach_ptsz)
ENTRY_CALLBACK(fc_x_callback)
ENTRY_CALLBACK(fc_x_callback_ptsz)

/* A newer ABI of cuMemAlloc than CUDA 13.0 has (FAKECUDA_PROC_FUTURE=1):
 * a third argument, as a driver newer than spillway could bring. */
static CUresult future_mem_alloc(CUdeviceptr *p, size_t n, unsigned long long flags)
{
    return flags ? CUDA_ERROR_INVALID_VALUE : cuMemAlloc_v2(p, n);
}

void *fc_proc_future(const char *symbol, int version)
{
    const char *on = getenv("FAKECUDA_PROC_FUTURE");
    if (on && strcmp(on, "1") == 0 && strcmp(symbol, "cuMemAlloc") == 0 && version >= FC_FUTURE_VERSION)
        return (void *)future_mem_alloc;
    return NULL;
}

void *fc_proc_entry(void *exported)
{
    const char *how = getenv("FAKECUDA_PROC_ENTRY");
    if (!exported || !how || strcmp(how, "internal") != 0)
        return exported;
    const struct {
        void *exported, *entry;
    } entries[] = {
        {(void *)cuMemAlloc_v2, (void *)entry_alloc},
        {(void *)cuMemFree_v2, (void *)entry_free},
        {(void *)cuLaunchKernel, (void *)entry_launch},
        {(void *)fc_x_launch_ptsz, (void *)entry_launch_ptsz},
        {(void *)cuLaunchKernelEx, (void *)entry_launch_ex},
        {(void *)fc_x_launch_ex_ptsz, (void *)entry_launch_ex_ptsz},
#define ENTRY_OF(fn) {(void *)fn, (void *)entry_##fn},
        ENTRY_OF(fc_x_prefetch_v1) ENTRY_OF(fc_x_prefetch_v1_ptsz) ENTRY_OF(fc_x_prefetch_v2)
        ENTRY_OF(fc_x_prefetch_v2_ptsz) ENTRY_OF(fc_x_prefetch_batch)
        ENTRY_OF(fc_x_prefetch_batch_ptsz) ENTRY_OF(fc_x_discard_batch)
        ENTRY_OF(fc_x_discard_batch_ptsz) ENTRY_OF(fc_x_both_batch) ENTRY_OF(fc_x_both_batch_ptsz)
        ENTRY_OF(fc_x_attach) ENTRY_OF(fc_x_attach_ptsz) ENTRY_OF(fc_x_callback)
        ENTRY_OF(fc_x_callback_ptsz)
#undef ENTRY_OF
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (entries[i].exported == exported)
            return entries[i].entry;
    return exported;
}
