/* Bad arguments to every function spillway hooks (shim/hooks.def), run on
 * fakecuda alone and under spillway by badargs.sh, which requires the same
 * output: whatever spillway does not own must answer what the driver
 * alone answers, and no bad argument may crash it.
 *
 * Each case prints "base/symbol/case code", symbol being the exported
 * name called ("+pt" for its _ptsz/_ptds variant), code the CUresult, or
 * -1 when the driver does not export it. badargs.sh checks that every
 * hooks.def row's symbol (and variant) has a case.
 *
 * Every symbol is looked up by name (dlsym, as a program linked with
 * -lcuda would bind it), typed from hooks.def itself, so that the calls
 * follow the table and the compiler checks them against cuda.h.
 *
 * After each case the process must still be usable (its context current,
 * a sync succeeds): a case that left a sticky error would make every later
 * code meaningless, so the probe stops there with exit status 3. Calls
 * whose effect the driver leaves undefined (a second free of the same
 * address that another allocation may have taken, a handle freed twice
 * while others are live) are not made, except where fakecuda's
 * answer is the documented one (the double frees probe.c's errors make). */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/hooks.h"
#include "tests/fakecuda/fakecuda.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define SPW_HOOK(base, symbol, version, handler, pt) \
    static __typeof__(symbol) *p_##symbol;           \
    SPW_PT_IF_##pt(static __typeof__(symbol) *p_##symbol##_pt;)
#include "shim/hooks.def"
#undef SPW_HOOK

static void resolve(void)
{
    static const struct {
        const char *name, *suffix;
        void **slot, **pt_slot;
    } syms[] = {
#define SPW_HOOK(base, symbol, version, handler, pt) \
    {#symbol, SPW_PT_SUFFIX_##pt, (void **)&p_##symbol, SPW_PT_OR_NULL_##pt((void **)&p_##symbol##_pt)},
#include "shim/hooks.def"
#undef SPW_HOOK
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        *syms[i].slot = dlsym(RTLD_DEFAULT, syms[i].name);
        if (syms[i].suffix) {
            char n[128];
            snprintf(n, sizeof n, "%s%s", syms[i].name, syms[i].suffix);
            *syms[i].pt_slot = dlsym(RTLD_DEFAULT, n);
        }
    }
}

static CUcontext ctx; /* NULL until the cases that need a context */

/* Stops the probe when a case left the context unusable. */
static void still_usable(const char *base, const char *sym, const char *tag)
{
    if (!ctx) /* before setup: nothing to lose yet */
        return;
    CUcontext cur = NULL;
    CUresult r = cuCtxGetCurrent(&cur);
    if (r == CUDA_SUCCESS && cur != ctx) {
        printf("context changed after %s/%s/%s\n", base, sym, tag);
        exit(3);
    }
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    if (r != CUDA_SUCCESS) {
        printf("unusable after %s/%s/%s: %d\n", base, sym, tag, (int)r);
        exit(3);
    }
}

static void report(const char *base, const char *sym, const char *tag, int code)
{
    printf("%s/%s/%s %d\n", base, sym, tag, code);
    fflush(stdout);
    still_usable(base, sym, tag);
}

#define ABSENT (-1)
/* One call of the exported symbol sym. */
#define TRY(base, tag, sym, ...) report(#base, #sym, tag, p_##sym ? (int)p_##sym(__VA_ARGS__) : ABSENT)
/* The same call of sym and of its per-thread variant. */
#define TRY_PT(base, tag, sym, ...)                                                              \
    do {                                                                                         \
        report(#base, #sym, tag, p_##sym ? (int)p_##sym(__VA_ARGS__) : ABSENT);                 \
        report(#base, #sym "+pt", tag, p_##sym##_pt ? (int)p_##sym##_pt(__VA_ARGS__) : ABSENT); \
    } while (0)

/* ---- what the cases use ---------------------------------------------------- */

#define MiB (1ull << 20)
#define HUGE_SIZE ((size_t)1 << 62)
static const CUdeviceptr bad = 0xdead0000;    /* never the driver's */
static CUstream const bad_stream = (CUstream)(uintptr_t)0x1234;
static CUdeviceptr dptr, gap, inner;        /* 1 MiB live; 1 MiB freed after it; dptr + 256 */
static CUdeviceptr next_to;                 /* 1 MiB live, after dptr: what an overrun would hit */
static CUstream stream;
static CUarray array;                       /* 64 x 64 bytes */
static CUgraph graph;                       /* empty */
static CUgraphExec gexec;
static CUfunction noop_fn, ptr_fn;          /* no parameters; one pointer */
static CUmemoryPool pool;
static void *pinned;
static char host[4 * MiB];
/* A handle the driver never gave: readable memory, since a driver may read
 * a handle before it rejects it (fakecuda's modules carry a magic). */
static _Alignas(64) char not_a_handle[256];
#define BAD_HANDLE ((void *)not_a_handle)

static void kernel_nothing(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    (void)params;
}

#define OK(call)                                                          \
    do {                                                                  \
        CUresult r_ = (call);                                             \
        if (r_ != CUDA_SUCCESS) {                                         \
            printf("setup: %s: %d\n", #call, (int)r_);                    \
            exit(2);                                                      \
        }                                                                 \
    } while (0)

/* An address freed just now, for each case that names freed memory: one
 * freed at the start could be any allocation's by the time a case uses it
 * (the driver alone reused it under AddressSanitizer, whose own mappings
 * move fakecuda's), and a live allocation answers differently. */
static CUdeviceptr just_freed(void)
{
    CUdeviceptr p;
    OK(cuMemAlloc(&p, MiB));
    OK(cuMemFree(p));
    return p;
}

static void setup(void)
{
    OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    OK(cuCtxSetCurrent(ctx));
    OK(cuMemAlloc(&dptr, MiB));
    OK(cuMemAlloc(&gap, MiB));
    OK(cuMemAlloc(&next_to, MiB));
    OK(cuMemFree(gap));
    OK(cuMemsetD8(dptr, 0x5a, MiB));
    OK(cuMemsetD8(next_to, 0xa5, MiB));
    inner = dptr + 256;
    OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUDA_ARRAY_DESCRIPTOR ad = {.Width = 64, .Height = 64, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    OK(cuArrayCreate(&array, &ad));
    OK(cuGraphCreate(&graph, 0));
    OK(cuGraphInstantiateWithFlags(&gexec, graph, 0));
    static const size_t ptr_size[] = {sizeof(CUdeviceptr)};
    if (!fakecuda_present() || fakecuda_register_kernel("badargs_noop", kernel_nothing, 0, NULL) ||
        fakecuda_register_kernel("badargs_ptr", kernel_nothing, 1, ptr_size)) {
        printf("setup: fakecuda's kernels\n");
        exit(2);
    }
    CUmodule m;
    OK(cuModuleLoadData(&m, "fakecuda"));
    OK(cuModuleGetFunction(&noop_fn, m, "badargs_noop"));
    OK(cuModuleGetFunction(&ptr_fn, m, "badargs_ptr"));
    OK(cuDeviceGetDefaultMemPool(&pool, 0));
    OK(cuMemAllocHost(&pinned, MiB));
}

/* ---- before a context ------------------------------------------------------ */

/* Before cuInit, then without a current context: spillway has nothing to
 * look anything up in and must still answer as the driver. */
static void no_context(void)
{
    CUdeviceptr p;
    size_t f, t;
    TRY(cuMemAlloc, "before_init", cuMemAlloc_v2, &p, MiB);
    TRY(cuMemGetInfo, "before_init", cuMemGetInfo_v2, &f, &t);
    TRY(cuDeviceTotalMem, "before_init", cuDeviceTotalMem_v2, &t, 0);
    TRY(cuCtxSynchronize, "before_init", cuCtxSynchronize);
    OK(cuInit(0));
    TRY(cuMemAlloc, "no_context", cuMemAlloc_v2, &p, MiB);
    TRY(cuMemAllocManaged, "no_context", cuMemAllocManaged, &p, MiB, CU_MEM_ATTACH_GLOBAL);
    TRY_PT(cuMemAllocAsync, "no_context", cuMemAllocAsync, &p, MiB, NULL);
    TRY(cuMemFree, "no_context", cuMemFree_v2, bad);
    TRY(cuMemGetInfo, "no_context", cuMemGetInfo_v2, &f, &t);
    TRY(cuCtxSynchronize, "no_context", cuCtxSynchronize);
    TRY(cuCtxSynchronize, "no_context", cuCtxSynchronize_v2, NULL);
    TRY_PT(cuMemcpy, "no_context", cuMemcpy, bad, bad, 16);
    TRY_PT(cuMemcpyHtoD, "no_context", cuMemcpyHtoD_v2, bad, host, 16);
    TRY_PT(cuMemsetD8, "no_context", cuMemsetD8_v2, bad, 0, 16);
    TRY(cuMemHostAlloc, "no_context", cuMemHostAlloc, (void **)&p, MiB, 0);
    TRY(cuPointerGetAttribute, "no_context", cuPointerGetAttribute, &t, CU_POINTER_ATTRIBUTE_CONTEXT, bad);
    TRY(cuMemGetAddressRange, "no_context", cuMemGetAddressRange_v2, &p, &t, bad);
}

/* ---- cuGetProcAddress ------------------------------------------------------ */

static void get_proc_address(void)
{
    void *fn;
    CUdriverProcAddressQueryResult st;
    TRY(cuGetProcAddress, "null_symbol", cuGetProcAddress_v2, NULL, &fn, 12000, 0, &st);
    TRY(cuGetProcAddress, "null_out", cuGetProcAddress_v2, "cuMemAlloc", NULL, 12000, 0, &st);
    TRY(cuGetProcAddress, "unknown", cuGetProcAddress_v2, "cuNoSuchFunction", &fn, 12000, 0, &st);
    TRY(cuGetProcAddress, "bad_flags", cuGetProcAddress_v2, "cuMemAlloc", &fn, 12000, 0x100, &st);
    TRY(cuGetProcAddress, "version_0", cuGetProcAddress_v2, "cuMemAlloc", &fn, 0, 0, &st);
    TRY(cuGetProcAddress, "version_too_new", cuGetProcAddress_v2, "cuMemAlloc", &fn, 99000, 0, &st);
    TRY(cuGetProcAddress, "null_status", cuGetProcAddress_v2, "cuMemAlloc", &fn, 12000, 0, NULL);
    TRY(cuGetProcAddress, "null_symbol", cuGetProcAddress, NULL, &fn, 12000, 0);
    TRY(cuGetProcAddress, "null_out", cuGetProcAddress, "cuMemAlloc", NULL, 12000, 0);
    TRY(cuGetProcAddress, "unknown", cuGetProcAddress, "cuNoSuchFunction", &fn, 12000, 0);
    TRY(cuGetProcAddress, "bad_flags", cuGetProcAddress, "cuMemAlloc", &fn, 12000, 0x100);
}

/* ---- device memory --------------------------------------------------------- */

static void device_memory(void)
{
    CUdeviceptr p;
    size_t pitch;
    TRY(cuMemAlloc, "null_out", cuMemAlloc_v2, NULL, MiB);
    TRY(cuMemAlloc, "size_0", cuMemAlloc_v2, &p, 0);
    TRY(cuMemAlloc, "size_max", cuMemAlloc_v2, &p, SIZE_MAX);
    TRY(cuMemAlloc, "size_huge", cuMemAlloc_v2, &p, HUGE_SIZE);
    TRY(cuMemAllocPitch, "null_out", cuMemAllocPitch_v2, NULL, &pitch, 1024, 16, 4);
    TRY(cuMemAllocPitch, "null_pitch", cuMemAllocPitch_v2, &p, NULL, 1024, 16, 4);
    TRY(cuMemAllocPitch, "width_0", cuMemAllocPitch_v2, &p, &pitch, 0, 16, 4);
    TRY(cuMemAllocPitch, "height_0", cuMemAllocPitch_v2, &p, &pitch, 1024, 0, 4);
    TRY(cuMemAllocPitch, "element_3", cuMemAllocPitch_v2, &p, &pitch, 1024, 16, 3);
    /* The element sizes the driver takes (4 is every other case's): 0,
     * freed at once (later cases depend on what lies past dptr). */
    p = 0;
    TRY(cuMemAllocPitch, "element_8", cuMemAllocPitch_v2, &p, &pitch, 1024, 16, 8);
    if (p)
        cuMemFree(p);
    p = 0;
    TRY(cuMemAllocPitch, "element_16", cuMemAllocPitch_v2, &p, &pitch, 1024, 16, 16);
    if (p)
        cuMemFree(p);
    TRY(cuMemAllocPitch, "size_huge", cuMemAllocPitch_v2, &p, &pitch, HUGE_SIZE, 1 << 20, 4);
    TRY(cuMemAllocManaged, "null_out", cuMemAllocManaged, NULL, MiB, CU_MEM_ATTACH_GLOBAL);
    TRY(cuMemAllocManaged, "size_0", cuMemAllocManaged, &p, 0, CU_MEM_ATTACH_GLOBAL);
    TRY(cuMemAllocManaged, "flags_0", cuMemAllocManaged, &p, MiB, 0);
    TRY(cuMemAllocManaged, "bad_flags", cuMemAllocManaged, &p, MiB, 0x80);
    TRY(cuMemAllocManaged, "size_max", cuMemAllocManaged, &p, SIZE_MAX, CU_MEM_ATTACH_GLOBAL);
    TRY(cuMemFree, "bad_pointer", cuMemFree_v2, bad);
    TRY(cuMemFree, "null", cuMemFree_v2, 0);
    TRY(cuMemFree, "interior", cuMemFree_v2, inner);
    TRY(cuMemFree, "freed", cuMemFree_v2, just_freed());
}

static void stream_ordered(void)
{
    CUdeviceptr p;
    CUmemoryPool mp;
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemPoolProps far = props;
    far.location.id = 99;
    CUmemPoolProps untyped = props;
    untyped.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
    CUmemLocation here = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CUmemLocation nowhere = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 99};
    CUmemAccessDesc acc = {.location = here, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUmemAccessDesc acc_far = {.location = nowhere, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUmemAccessDesc acc_bad = {.location = here, .flags = 7};
    cuuint64_t v = 0;

    TRY_PT(cuMemAllocAsync, "null_out", cuMemAllocAsync, NULL, MiB, stream);
    TRY_PT(cuMemAllocAsync, "size_0", cuMemAllocAsync, &p, 0, stream);
    TRY_PT(cuMemAllocAsync, "size_huge", cuMemAllocAsync, &p, HUGE_SIZE, stream);
    TRY_PT(cuMemAllocAsync, "bad_stream", cuMemAllocAsync, &p, MiB, bad_stream);
    TRY_PT(cuMemAllocFromPoolAsync, "null_out", cuMemAllocFromPoolAsync, NULL, MiB, pool, stream);
    TRY_PT(cuMemAllocFromPoolAsync, "null_pool", cuMemAllocFromPoolAsync, &p, MiB, NULL, stream);
    TRY_PT(cuMemAllocFromPoolAsync, "bad_pool", cuMemAllocFromPoolAsync, &p, MiB, BAD_HANDLE, stream);
    TRY_PT(cuMemAllocFromPoolAsync, "size_0", cuMemAllocFromPoolAsync, &p, 0, pool, stream);
    TRY_PT(cuMemAllocFromPoolAsync, "size_huge", cuMemAllocFromPoolAsync, &p, HUGE_SIZE, pool, stream);
    TRY_PT(cuMemAllocFromPoolAsync, "bad_stream", cuMemAllocFromPoolAsync, &p, MiB, pool, bad_stream);
    TRY_PT(cuMemFreeAsync, "bad_pointer", cuMemFreeAsync, bad, stream);
    TRY_PT(cuMemFreeAsync, "null", cuMemFreeAsync, 0, stream);
    TRY_PT(cuMemFreeAsync, "interior", cuMemFreeAsync, inner, stream);
    TRY_PT(cuMemFreeAsync, "freed", cuMemFreeAsync, just_freed(), stream);
    TRY_PT(cuMemFreeAsync, "bad_stream", cuMemFreeAsync, dptr, bad_stream);

    TRY(cuMemPoolCreate, "null_out", cuMemPoolCreate, NULL, &props);
    TRY(cuMemPoolCreate, "null_props", cuMemPoolCreate, &mp, NULL);
    TRY(cuMemPoolCreate, "device_99", cuMemPoolCreate, &mp, &far);
    TRY(cuMemPoolCreate, "bad_type", cuMemPoolCreate, &mp, &untyped);
    TRY(cuMemPoolDestroy, "null", cuMemPoolDestroy, NULL);
    TRY(cuMemPoolDestroy, "bad_pool", cuMemPoolDestroy, BAD_HANDLE);
    TRY(cuDeviceGetDefaultMemPool, "null_out", cuDeviceGetDefaultMemPool, NULL, 0);
    TRY(cuDeviceGetDefaultMemPool, "device_99", cuDeviceGetDefaultMemPool, &mp, 99);
    TRY(cuDeviceGetMemPool, "null_out", cuDeviceGetMemPool, NULL, 0);
    TRY(cuDeviceGetMemPool, "device_99", cuDeviceGetMemPool, &mp, 99);
    TRY(cuDeviceSetMemPool, "device_99", cuDeviceSetMemPool, 99, pool);
    TRY(cuDeviceSetMemPool, "null_pool", cuDeviceSetMemPool, 0, NULL);
    TRY(cuDeviceSetMemPool, "bad_pool", cuDeviceSetMemPool, 0, BAD_HANDLE);
    TRY(cuMemGetDefaultMemPool, "null_out", cuMemGetDefaultMemPool, NULL, &here, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetDefaultMemPool, "null_location", cuMemGetDefaultMemPool, &mp, NULL, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetDefaultMemPool, "device_99", cuMemGetDefaultMemPool, &mp, &nowhere, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetDefaultMemPool, "bad_type", cuMemGetDefaultMemPool, &mp, &here, CU_MEM_ALLOCATION_TYPE_INVALID);
    TRY(cuMemGetMemPool, "null_out", cuMemGetMemPool, NULL, &here, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetMemPool, "null_location", cuMemGetMemPool, &mp, NULL, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetMemPool, "device_99", cuMemGetMemPool, &mp, &nowhere, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetMemPool, "bad_type", cuMemGetMemPool, &mp, &here, CU_MEM_ALLOCATION_TYPE_INVALID);
    TRY(cuMemSetMemPool, "null_location", cuMemSetMemPool, NULL, CU_MEM_ALLOCATION_TYPE_PINNED, pool);
    TRY(cuMemSetMemPool, "device_99", cuMemSetMemPool, &nowhere, CU_MEM_ALLOCATION_TYPE_PINNED, pool);
    TRY(cuMemSetMemPool, "null_pool", cuMemSetMemPool, &here, CU_MEM_ALLOCATION_TYPE_PINNED, NULL);
    TRY(cuMemSetMemPool, "bad_pool", cuMemSetMemPool, &here, CU_MEM_ALLOCATION_TYPE_PINNED, BAD_HANDLE);
    TRY(cuMemPoolSetAccess, "null_pool", cuMemPoolSetAccess, NULL, &acc, 1);
    TRY(cuMemPoolSetAccess, "bad_pool", cuMemPoolSetAccess, BAD_HANDLE, &acc, 1);
    TRY(cuMemPoolSetAccess, "null_map", cuMemPoolSetAccess, pool, NULL, 1);
    TRY(cuMemPoolSetAccess, "device_99", cuMemPoolSetAccess, pool, &acc_far, 1);
    TRY(cuMemPoolSetAccess, "bad_flags", cuMemPoolSetAccess, pool, &acc_bad, 1);
    TRY(cuMemPoolGetAttribute, "null_pool", cuMemPoolGetAttribute, NULL, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v);
    TRY(cuMemPoolGetAttribute, "bad_pool", cuMemPoolGetAttribute, BAD_HANDLE, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v);
    TRY(cuMemPoolGetAttribute, "null_value", cuMemPoolGetAttribute, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, NULL);
    TRY(cuMemPoolGetAttribute, "bad_attr", cuMemPoolGetAttribute, pool, (CUmemPool_attribute)999, &v);
    TRY(cuMemPoolSetAttribute, "null_pool", cuMemPoolSetAttribute, NULL, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
    TRY(cuMemPoolSetAttribute, "bad_pool", cuMemPoolSetAttribute, BAD_HANDLE, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
    TRY(cuMemPoolSetAttribute, "null_value", cuMemPoolSetAttribute, pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, NULL);
    TRY(cuMemPoolSetAttribute, "bad_attr", cuMemPoolSetAttribute, pool, (CUmemPool_attribute)999, &v);
    /* Read-only attributes: only their resets (to 0) are settable. */
    v = 12345;
    TRY(cuMemPoolSetAttribute, "set_used_current", cuMemPoolSetAttribute, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v);
    TRY(cuMemPoolSetAttribute, "set_used_high_nonzero", cuMemPoolSetAttribute, pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v);
}

/* ---- virtual memory management -------------------------------------------- */

static void vmm(void)
{
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemAllocationProp far = prop;
    far.location.id = 99;
    CUmemAllocationProp untyped = prop;
    untyped.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    CUmemGenericAllocationHandle h, live;
    const CUmemGenericAllocationHandle bad_h = 0x12345678;
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    size_t gran = 0;
    OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    OK(cuMemCreate(&live, gran, &prop, 0));
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0));

    TRY(cuMemCreate, "null_out", cuMemCreate, NULL, gran, &prop, 0);
    TRY(cuMemCreate, "null_prop", cuMemCreate, &h, gran, NULL, 0);
    TRY(cuMemCreate, "size_0", cuMemCreate, &h, 0, &prop, 0);
    TRY(cuMemCreate, "unaligned_size", cuMemCreate, &h, 12345, &prop, 0);
    TRY(cuMemCreate, "size_huge", cuMemCreate, &h, HUGE_SIZE, &prop, 0);
    TRY(cuMemCreate, "device_99", cuMemCreate, &h, gran, &far, 0);
    TRY(cuMemCreate, "bad_type", cuMemCreate, &h, gran, &untyped, 0);
    TRY(cuMemCreate, "bad_flags", cuMemCreate, &h, gran, &prop, 0x100);
    TRY(cuMemRelease, "bad_handle", cuMemRelease, bad_h);
    TRY(cuMemRelease, "null", cuMemRelease, 0);
    TRY(cuMemMap, "unreserved", cuMemMap, bad, gran, 0, live, 0);
    TRY(cuMemMap, "bad_handle", cuMemMap, va, gran, 0, bad_h, 0);
    TRY(cuMemMap, "size_0", cuMemMap, va, 0, 0, live, 0);
    TRY(cuMemMap, "past_handle", cuMemMap, va, 2 * gran, 0, live, 0);
    TRY(cuMemMap, "bad_offset", cuMemMap, va, gran, gran, live, 0);
    TRY(cuMemMap, "bad_flags", cuMemMap, va, gran, 0, live, 1);
    TRY(cuMemMap, "on_pool", cuMemMap, dptr, gran, 0, live, 0);
    TRY(cuMemUnmap, "bad_pointer", cuMemUnmap, bad, gran);
    TRY(cuMemUnmap, "unmapped", cuMemUnmap, va, gran);
    TRY(cuMemUnmap, "size_0", cuMemUnmap, va, 0);
    TRY(cuMemSetAccess, "bad_pointer", cuMemSetAccess, bad, gran, &acc, 1);
    TRY(cuMemSetAccess, "unmapped", cuMemSetAccess, va, gran, &acc, 1);
    TRY(cuMemSetAccess, "null_desc", cuMemSetAccess, va, gran, NULL, 1);
    TRY(cuMemSetAccess, "count_0", cuMemSetAccess, va, gran, &acc, 0);
    TRY(cuMemRetainAllocationHandle, "null_out", cuMemRetainAllocationHandle, NULL, (void *)(uintptr_t)dptr);
    TRY(cuMemRetainAllocationHandle, "bad_pointer", cuMemRetainAllocationHandle, &h, (void *)(uintptr_t)bad);
    TRY(cuMemRetainAllocationHandle, "unmapped", cuMemRetainAllocationHandle, &h, (void *)(uintptr_t)va);
    /* cuMemAlloc memory is no VMM mapping to the program, whatever spillway
     * serves it from. */
    TRY(cuMemRetainAllocationHandle, "mem_alloc", cuMemRetainAllocationHandle, &h, (void *)(uintptr_t)dptr);
    TRY(cuMemRetainAllocationHandle, "mem_alloc_interior", cuMemRetainAllocationHandle, &h,
        (void *)(uintptr_t)inner);
    CUmemAllocationProp got;
    TRY(cuMemGetAllocationPropertiesFromHandle, "null_out", cuMemGetAllocationPropertiesFromHandle, NULL, live);
    TRY(cuMemGetAllocationPropertiesFromHandle, "bad_handle", cuMemGetAllocationPropertiesFromHandle, &got, bad_h);
    TRY(cuMemGetAllocationPropertiesFromHandle, "null", cuMemGetAllocationPropertiesFromHandle, &got, 0);
    int fd;
    TRY(cuMemExportToShareableHandle, "null_out", cuMemExportToShareableHandle, NULL, live,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    TRY(cuMemExportToShareableHandle, "bad_handle", cuMemExportToShareableHandle, &fd, bad_h,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    /* live was made without requestedHandleTypes: not exportable. */
    TRY(cuMemExportToShareableHandle, "not_requested", cuMemExportToShareableHandle, &fd, live,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    TRY(cuMemExportToShareableHandle, "bad_type", cuMemExportToShareableHandle, &fd, live,
        (CUmemAllocationHandleType)0x40, 0);
    TRY(cuMemExportToShareableHandle, "bad_flags", cuMemExportToShareableHandle, &fd, live,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1);

    /* Legacy IPC (fakecuda has none: ABSENT alone; under spillway the
     * hooks' answers, badargs.sh's known differences). No case exports
     * live memory: that would pin it for good. */
    CUipcMemHandle ih, spw_ih;
    memset(&ih, 0, sizeof ih);
    memset(&spw_ih, 0x5a, sizeof spw_ih);
    memcpy(spw_ih.reserved, "SPWIPC\1\0", 8); /* spillway's magic, nonsense after it */
    CUdeviceptr ip;
    TRY(cuIpcGetMemHandle, "null_out", cuIpcGetMemHandle, NULL, dptr);
    TRY(cuIpcGetMemHandle, "bad_ptr", cuIpcGetMemHandle, &ih, bad);
    TRY(cuIpcGetMemHandle, "freed", cuIpcGetMemHandle, &ih, gap);
    TRY(cuIpcGetMemHandle, "null_ptr", cuIpcGetMemHandle, &ih, 0);
    TRY(cuIpcOpenMemHandle, "zero_handle", cuIpcOpenMemHandle, &ip, ih, 0);
    TRY(cuIpcOpenMemHandle, "spw_null_out", cuIpcOpenMemHandle, NULL, spw_ih, 0);
    TRY(cuIpcOpenMemHandle, "spw_no_exporter", cuIpcOpenMemHandle, &ip, spw_ih, 0);
    TRY(cuIpcOpenMemHandle, "zero_handle", cuIpcOpenMemHandle_v2, &ip, ih, 0);
    TRY(cuIpcOpenMemHandle, "spw_null_out", cuIpcOpenMemHandle_v2, NULL, spw_ih, 0);
    TRY(cuIpcOpenMemHandle, "spw_bad_flags", cuIpcOpenMemHandle_v2, &ip, spw_ih, 0x80);
    TRY(cuIpcOpenMemHandle, "spw_no_exporter", cuIpcOpenMemHandle_v2, &ip, spw_ih,
        CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    TRY(cuIpcCloseMemHandle, "bad_ptr", cuIpcCloseMemHandle, bad);
    TRY(cuIpcCloseMemHandle, "null_ptr", cuIpcCloseMemHandle, 0);
    TRY(cuIpcCloseMemHandle, "pool_ptr", cuIpcCloseMemHandle, dptr);

    /* dptr: 1 MiB of cuMemAlloc memory, the pool's under spillway; gap
     * freed. */
    const CUmemRangeHandleType dma_buf = CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD;
    TRY(cuMemGetHandleForAddressRange, "null_out", cuMemGetHandleForAddressRange, NULL, dptr, 4096, dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "bad_type", cuMemGetHandleForAddressRange, &fd, dptr, 4096,
        (CUmemRangeHandleType)99, 0);
    TRY(cuMemGetHandleForAddressRange, "bad_flags", cuMemGetHandleForAddressRange, &fd, dptr, 4096, dma_buf, 8);
    TRY(cuMemGetHandleForAddressRange, "pcie_flag", cuMemGetHandleForAddressRange, &fd, dptr, 4096, dma_buf,
        CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE);
    TRY(cuMemGetHandleForAddressRange, "unaligned", cuMemGetHandleForAddressRange, &fd, dptr + 256, 4096,
        dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "unaligned_size", cuMemGetHandleForAddressRange, &fd, dptr, 100, dma_buf,
        0);
    TRY(cuMemGetHandleForAddressRange, "size_0", cuMemGetHandleForAddressRange, &fd, dptr, 0, dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "null_ptr", cuMemGetHandleForAddressRange, &fd, 0, 4096, dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "bad_ptr", cuMemGetHandleForAddressRange, &fd, bad, 4096, dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "freed", cuMemGetHandleForAddressRange, &fd, just_freed(), 4096, dma_buf,
        0);
    /* Past dptr's end into the memory after it (the pool's next block). */
    TRY(cuMemGetHandleForAddressRange, "past_end", cuMemGetHandleForAddressRange, &fd, dptr, 2 * MiB, dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "huge", cuMemGetHandleForAddressRange, &fd, dptr, (size_t)1 << 62,
        dma_buf, 0);
    /* A bad start above every mapping and a size past all memory: the
     * driver's answer at once (spillway once walked such a range in 64 KiB
     * steps: 2^46 of them). */
    TRY(cuMemGetHandleForAddressRange, "huge_bad_ptr", cuMemGetHandleForAddressRange, &fd,
        (CUdeviceptr)0xffff00000000ull, (size_t)1 << 62, dma_buf, 0);

    TRY(cuMulticastBindMem, "bad_mc", cuMulticastBindMem, bad_h, 0, live, 0, gran, 0);
    TRY(cuMulticastBindMem, "null_mc", cuMulticastBindMem, 0, 0, live, 0, gran, 0);
    TRY(cuMulticastBindMem, "null_mem", cuMulticastBindMem, bad_h, 0, 0, 0, gran, 0);
    TRY(cuMulticastBindAddr, "bad_mc", cuMulticastBindAddr, bad_h, 0, dptr, gran, 0);
    TRY(cuMulticastBindAddr, "bad_pointer", cuMulticastBindAddr, bad_h, 0, bad, gran, 0);
    TRY(cuMulticastBindMem_v2, "bad_mc", cuMulticastBindMem_v2, bad_h, 0, 0, live, 0, gran, 0);
    TRY(cuMulticastBindMem_v2, "device_99", cuMulticastBindMem_v2, bad_h, 99, 0, live, 0, gran, 0);
    TRY(cuMulticastBindAddr_v2, "bad_mc", cuMulticastBindAddr_v2, bad_h, 0, 0, dptr, gran, 0);
    TRY(cuMulticastBindAddr_v2, "device_99", cuMulticastBindAddr_v2, bad_h, 99, 0, dptr, gran, 0);

    OK(cuMemAddressFree(va, 2 * gran));
    OK(cuMemRelease(live));
}

/* ---- pointers -------------------------------------------------------------- */

static void pointers(void)
{
    CUdeviceptr base;
    size_t size;
    unsigned long long v = 0;
    CUcontext c;
    TRY(cuMemGetAddressRange, "bad_pointer", cuMemGetAddressRange_v2, &base, &size, bad);
    TRY(cuMemGetAddressRange, "freed", cuMemGetAddressRange_v2, &base, &size, just_freed());
    TRY(cuMemGetAddressRange, "null", cuMemGetAddressRange_v2, &base, &size, 0);
    TRY(cuMemGetAddressRange, "null_outs", cuMemGetAddressRange_v2, NULL, NULL, inner);
    TRY(cuMemGetAddressRange, "past_end", cuMemGetAddressRange_v2, &base, &size, dptr + MiB);
    TRY(cuPointerGetAttribute, "null_data", cuPointerGetAttribute, NULL, CU_POINTER_ATTRIBUTE_CONTEXT, dptr);
    TRY(cuPointerGetAttribute, "bad_pointer", cuPointerGetAttribute, &c, CU_POINTER_ATTRIBUTE_CONTEXT, bad);
    TRY(cuPointerGetAttribute, "freed", cuPointerGetAttribute, &c, CU_POINTER_ATTRIBUTE_CONTEXT, just_freed());
    TRY(cuPointerGetAttribute, "null", cuPointerGetAttribute, &c, CU_POINTER_ATTRIBUTE_CONTEXT, 0);
    TRY(cuPointerGetAttribute, "bad_attr", cuPointerGetAttribute, &v, (CUpointer_attribute)999, dptr);
    TRY(cuPointerGetAttribute, "past_end", cuPointerGetAttribute, &v, CU_POINTER_ATTRIBUTE_RANGE_SIZE, dptr + MiB);
    /* The mapping of cuMemAlloc memory: under spillway the program's
     * allocation, not the pool page the driver sees (shim/pointer.c). */
    TRY(cuPointerGetAttribute, "mem_alloc_mapping", cuPointerGetAttribute, &v,
        CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, dptr);
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    CUpointer_attribute bad_attrs[] = {(CUpointer_attribute)999};
    unsigned mt = 77;
    size_t rs = 77;
    void *data[] = {&mt, &rs};
    TRY(cuPointerGetAttributes, "count_0", cuPointerGetAttributes, 0, attrs, data, dptr);
    TRY(cuPointerGetAttributes, "null_attrs", cuPointerGetAttributes, 2, NULL, data, dptr);
    TRY(cuPointerGetAttributes, "null_data", cuPointerGetAttributes, 2, attrs, NULL, dptr);
    TRY(cuPointerGetAttributes, "bad_attr", cuPointerGetAttributes, 1, bad_attrs, data, dptr);
    /* No error for a pointer the driver does not know: the values say so. */
    TRY(cuPointerGetAttributes, "bad_pointer", cuPointerGetAttributes, 2, attrs, data, bad);
    printf("cuPointerGetAttributes/cuPointerGetAttributes/bad_pointer_values type %u size %zu\n", mt, rs);
    mt = 77, rs = 77;
    TRY(cuPointerGetAttributes, "freed", cuPointerGetAttributes, 2, attrs, data, just_freed());
    printf("cuPointerGetAttributes/cuPointerGetAttributes/freed_values type %u size %zu\n", mt, rs);
    int one = 1;
    TRY(cuPointerSetAttribute, "bad_pointer", cuPointerSetAttribute, &one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, bad);
    TRY(cuPointerSetAttribute, "freed", cuPointerSetAttribute, &one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, just_freed());
    TRY(cuPointerSetAttribute, "null_value", cuPointerSetAttribute, NULL, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, dptr);
    TRY(cuPointerSetAttribute, "read_only_attr", cuPointerSetAttribute, &one, CU_POINTER_ATTRIBUTE_CONTEXT, dptr);
    TRY(cuPointerSetAttribute, "bad_attr", cuPointerSetAttribute, &one, (CUpointer_attribute)999, dptr);
}

/* ---- captures, syncs, contexts ---------------------------------------------- */

static void captures(void)
{
    CUgraph g;
    CUgraphNode none = NULL;
    TRY_PT(cuStreamBeginCapture, "bad_stream", cuStreamBeginCapture, bad_stream);
    TRY_PT(cuStreamBeginCapture, "legacy_stream", cuStreamBeginCapture, CU_STREAM_LEGACY);
    TRY_PT(cuStreamBeginCapture, "bad_stream", cuStreamBeginCapture_v2, bad_stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCapture, "legacy_stream", cuStreamBeginCapture_v2, CU_STREAM_LEGACY,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCapture, "bad_mode", cuStreamBeginCapture_v2, stream, (CUstreamCaptureMode)99);
    TRY_PT(cuStreamBeginCaptureToGraph, "bad_stream", cuStreamBeginCaptureToGraph, bad_stream, graph, NULL, NULL,
           0, CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCaptureToGraph, "null_graph", cuStreamBeginCaptureToGraph, stream, NULL, NULL, NULL, 0,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCaptureToGraph, "bad_graph", cuStreamBeginCaptureToGraph, stream, BAD_HANDLE, NULL, NULL,
           0, CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCaptureToGraph, "null_deps", cuStreamBeginCaptureToGraph, stream, graph, NULL, NULL, 1,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCaptureToGraph, "bad_dep", cuStreamBeginCaptureToGraph, stream, graph, &none, NULL, 1,
           CU_STREAM_CAPTURE_MODE_GLOBAL);
    TRY_PT(cuStreamBeginCaptureToGraph, "bad_mode", cuStreamBeginCaptureToGraph, stream, graph, NULL, NULL, 0,
           (CUstreamCaptureMode)99);
    TRY_PT(cuStreamEndCapture, "not_capturing", cuStreamEndCapture, stream, &g);
    TRY_PT(cuStreamEndCapture, "null_out", cuStreamEndCapture, stream, NULL);
    TRY_PT(cuStreamEndCapture, "bad_stream", cuStreamEndCapture, bad_stream, &g);
    TRY_PT(cuStreamEndCapture, "legacy_stream", cuStreamEndCapture, CU_STREAM_LEGACY, &g);
}

static void contexts(void)
{
    CUcontext c;
    TRY(cuCtxSynchronize, "bad_context", cuCtxSynchronize_v2, BAD_HANDLE);
    TRY(cuStreamDestroy, "bad_stream", cuStreamDestroy, bad_stream);
    TRY(cuStreamDestroy, "bad_stream", cuStreamDestroy_v2, bad_stream);
    TRY(cuStreamDestroy, "legacy_stream", cuStreamDestroy_v2, CU_STREAM_LEGACY);
    TRY(cuStreamDestroy, "per_thread_stream", cuStreamDestroy_v2, CU_STREAM_PER_THREAD);
    TRY(cuCtxDestroy, "null", cuCtxDestroy, NULL);
    TRY(cuCtxDestroy, "bad_context", cuCtxDestroy, BAD_HANDLE);
    TRY(cuCtxDestroy, "null", cuCtxDestroy_v2, NULL);
    TRY(cuCtxDestroy, "bad_context", cuCtxDestroy_v2, BAD_HANDLE);
    TRY(cuDevicePrimaryCtxRetain, "null_out", cuDevicePrimaryCtxRetain, NULL, 0);
    TRY(cuDevicePrimaryCtxRetain, "device_99", cuDevicePrimaryCtxRetain, &c, 99);
    TRY(cuDevicePrimaryCtxRetain, "device_minus_1", cuDevicePrimaryCtxRetain, &c, -1);
    TRY(cuDevicePrimaryCtxReset, "device_99", cuDevicePrimaryCtxReset, 99);
    TRY(cuDevicePrimaryCtxReset, "device_99", cuDevicePrimaryCtxReset_v2, 99);
    TRY(cuDevicePrimaryCtxReset, "device_minus_1", cuDevicePrimaryCtxReset_v2, -1);
    TRY(cuDevicePrimaryCtxRelease, "device_99", cuDevicePrimaryCtxRelease, 99);
    TRY(cuDevicePrimaryCtxRelease, "device_99", cuDevicePrimaryCtxRelease_v2, 99);
    TRY(cuDevicePrimaryCtxRelease, "device_minus_1", cuDevicePrimaryCtxRelease_v2, -1);
    TRY(cuCtxEnablePeerAccess, "null", cuCtxEnablePeerAccess, NULL, 0);
    TRY(cuCtxEnablePeerAccess, "bad_context", cuCtxEnablePeerAccess, BAD_HANDLE, 0);
    TRY(cuCtxEnablePeerAccess, "self", cuCtxEnablePeerAccess, ctx, 0);
    TRY(cuCtxEnablePeerAccess, "bad_flags", cuCtxEnablePeerAccess, ctx, 1);
}

/* ---- copies and sets -------------------------------------------------------- */

/* cuMemcpy and cuMemcpyAsync take an address the driver does not know as
 * host memory (unified addressing): a bad one is written or read by the
 * driver itself, a crash on a GPU as on fakecuda, so they get none; nor
 * does any host buffer of a copy (NULL included: not documented as
 * checked). */
static void copies(void)
{
    TRY_PT(cuMemcpy, "size_0_bad", cuMemcpy, bad, bad, 0);
    TRY_PT(cuMemcpy, "past_end", cuMemcpy, inner, dptr, MiB);
    TRY_PT(cuMemcpy, "size_max", cuMemcpy, dptr, dptr, SIZE_MAX);
    TRY_PT(cuMemcpyAsync, "size_0_bad", cuMemcpyAsync, bad, bad, 0, stream);
    TRY_PT(cuMemcpyAsync, "past_end", cuMemcpyAsync, inner, dptr, MiB, stream);
    TRY_PT(cuMemcpyAsync, "bad_stream", cuMemcpyAsync, dptr, dptr, 16, bad_stream);
    TRY_PT(cuMemcpyHtoD, "bad_pointer", cuMemcpyHtoD_v2, bad, host, 16);
    TRY_PT(cuMemcpyHtoD, "freed", cuMemcpyHtoD_v2, just_freed(), host, 16);
    TRY_PT(cuMemcpyHtoD, "past_end", cuMemcpyHtoD_v2, inner, host, MiB);
    TRY_PT(cuMemcpyHtoD, "size_max", cuMemcpyHtoD_v2, dptr, host, SIZE_MAX);
    TRY_PT(cuMemcpyDtoH, "bad_pointer", cuMemcpyDtoH_v2, host, bad, 16);
    TRY_PT(cuMemcpyDtoH, "freed", cuMemcpyDtoH_v2, host, just_freed(), 16);
    TRY_PT(cuMemcpyDtoH, "past_end", cuMemcpyDtoH_v2, host, inner, MiB);
    TRY_PT(cuMemcpyDtoD, "bad_pointer", cuMemcpyDtoD_v2, bad, dptr, 16);
    TRY_PT(cuMemcpyDtoD, "freed", cuMemcpyDtoD_v2, dptr, just_freed(), 16);
    TRY_PT(cuMemcpyDtoD, "past_end", cuMemcpyDtoD_v2, dptr, inner, MiB);
    TRY_PT(cuMemcpyHtoDAsync, "bad_pointer", cuMemcpyHtoDAsync_v2, bad, host, 16, stream);
    TRY_PT(cuMemcpyHtoDAsync, "past_end", cuMemcpyHtoDAsync_v2, inner, host, MiB, stream);
    TRY_PT(cuMemcpyHtoDAsync, "bad_stream", cuMemcpyHtoDAsync_v2, dptr, host, 16, bad_stream);
    TRY_PT(cuMemcpyDtoHAsync, "bad_pointer", cuMemcpyDtoHAsync_v2, host, bad, 16, stream);
    TRY_PT(cuMemcpyDtoHAsync, "past_end", cuMemcpyDtoHAsync_v2, host, inner, MiB, stream);
    TRY_PT(cuMemcpyDtoHAsync, "bad_stream", cuMemcpyDtoHAsync_v2, host, dptr, 16, bad_stream);
    TRY_PT(cuMemcpyDtoDAsync, "bad_pointer", cuMemcpyDtoDAsync_v2, dptr, bad, 16, stream);
    TRY_PT(cuMemcpyDtoDAsync, "past_end", cuMemcpyDtoDAsync_v2, inner, dptr, MiB, stream);
    TRY_PT(cuMemcpyDtoDAsync, "bad_stream", cuMemcpyDtoDAsync_v2, dptr, dptr, 16, bad_stream);

    const size_t arr = 64 * 64;
    TRY_PT(cuMemcpyDtoA, "null_array", cuMemcpyDtoA_v2, NULL, 0, dptr, 16);
    TRY_PT(cuMemcpyDtoA, "bad_array", cuMemcpyDtoA_v2, BAD_HANDLE, 0, dptr, 16);
    TRY_PT(cuMemcpyDtoA, "bad_pointer", cuMemcpyDtoA_v2, array, 0, bad, 16);
    TRY_PT(cuMemcpyDtoA, "past_array", cuMemcpyDtoA_v2, array, arr - 8, dptr, 16);
    TRY_PT(cuMemcpyDtoA, "past_end", cuMemcpyDtoA_v2, array, 0, dptr + MiB - 8, 16);
    TRY_PT(cuMemcpyAtoD, "null_array", cuMemcpyAtoD_v2, dptr, NULL, 0, 16);
    TRY_PT(cuMemcpyAtoD, "bad_pointer", cuMemcpyAtoD_v2, bad, array, 0, 16);
    TRY_PT(cuMemcpyAtoD, "freed", cuMemcpyAtoD_v2, just_freed(), array, 0, 16);
    TRY_PT(cuMemcpyAtoD, "past_array", cuMemcpyAtoD_v2, dptr, array, arr - 8, 16);
    TRY_PT(cuMemcpyHtoA, "null_array", cuMemcpyHtoA_v2, NULL, 0, host, 16);
    TRY_PT(cuMemcpyHtoA, "past_array", cuMemcpyHtoA_v2, array, arr - 8, host, 16);
    TRY_PT(cuMemcpyAtoH, "null_array", cuMemcpyAtoH_v2, host, NULL, 0, 16);
    TRY_PT(cuMemcpyAtoH, "past_array", cuMemcpyAtoH_v2, host, array, arr - 8, 16);
    TRY_PT(cuMemcpyAtoA, "null_array", cuMemcpyAtoA_v2, NULL, 0, array, 0, 16);
    TRY_PT(cuMemcpyAtoA, "bad_array", cuMemcpyAtoA_v2, array, 0, BAD_HANDLE, 0, 16);
    TRY_PT(cuMemcpyAtoA, "past_array", cuMemcpyAtoA_v2, array, 0, array, arr - 8, 16);
    TRY_PT(cuMemcpyHtoAAsync, "null_array", cuMemcpyHtoAAsync_v2, NULL, 0, host, 16, stream);
    TRY_PT(cuMemcpyHtoAAsync, "past_array", cuMemcpyHtoAAsync_v2, array, arr - 8, host, 16, stream);
    TRY_PT(cuMemcpyHtoAAsync, "bad_stream", cuMemcpyHtoAAsync_v2, array, 0, host, 16, bad_stream);
    TRY_PT(cuMemcpyAtoHAsync, "null_array", cuMemcpyAtoHAsync_v2, host, NULL, 0, 16, stream);
    TRY_PT(cuMemcpyAtoHAsync, "past_array", cuMemcpyAtoHAsync_v2, host, array, arr - 8, 16, stream);
    TRY_PT(cuMemcpyAtoHAsync, "bad_stream", cuMemcpyAtoHAsync_v2, host, array, 0, 16, bad_stream);
}

static void sets(void)
{
    TRY_PT(cuMemsetD8, "bad_pointer", cuMemsetD8_v2, bad, 0, 16);
    TRY_PT(cuMemsetD8, "freed", cuMemsetD8_v2, just_freed(), 0, 16);
    TRY_PT(cuMemsetD8, "size_0_bad", cuMemsetD8_v2, bad, 0, 0);
    TRY_PT(cuMemsetD8, "past_end", cuMemsetD8_v2, inner, 0, MiB);
    TRY_PT(cuMemsetD8, "size_max", cuMemsetD8_v2, dptr, 0, SIZE_MAX);
    TRY_PT(cuMemsetD16, "bad_pointer", cuMemsetD16_v2, bad, 0, 16);
    TRY_PT(cuMemsetD16, "misaligned", cuMemsetD16_v2, dptr + 1, 0, 16);
    TRY_PT(cuMemsetD16, "past_end", cuMemsetD16_v2, inner, 0, MiB / 2);
    TRY_PT(cuMemsetD32, "bad_pointer", cuMemsetD32_v2, bad, 0, 16);
    TRY_PT(cuMemsetD32, "misaligned", cuMemsetD32_v2, dptr + 2, 0, 16);
    TRY_PT(cuMemsetD32, "past_end", cuMemsetD32_v2, inner, 0, MiB / 4);
    TRY_PT(cuMemsetD8Async, "bad_pointer", cuMemsetD8Async, bad, 0, 16, stream);
    TRY_PT(cuMemsetD8Async, "past_end", cuMemsetD8Async, inner, 0, MiB, stream);
    TRY_PT(cuMemsetD8Async, "bad_stream", cuMemsetD8Async, dptr, 0, 16, bad_stream);
    TRY_PT(cuMemsetD16Async, "misaligned", cuMemsetD16Async, dptr + 1, 0, 16, stream);
    TRY_PT(cuMemsetD16Async, "bad_stream", cuMemsetD16Async, dptr, 0, 16, bad_stream);
    TRY_PT(cuMemsetD32Async, "misaligned", cuMemsetD32Async, dptr + 2, 0, 16, stream);
    TRY_PT(cuMemsetD32Async, "bad_stream", cuMemsetD32Async, dptr, 0, 16, bad_stream);

    TRY_PT(cuMemsetD2D8, "bad_pointer", cuMemsetD2D8_v2, bad, 64, 0, 64, 4);
    TRY_PT(cuMemsetD2D8, "pitch_below_width", cuMemsetD2D8_v2, dptr, 16, 0, 64, 4);
    TRY_PT(cuMemsetD2D8, "past_end", cuMemsetD2D8_v2, inner, 4096, 0, 64, 257);
    TRY_PT(cuMemsetD2D16, "misaligned", cuMemsetD2D16_v2, dptr + 1, 64, 0, 16, 4);
    TRY_PT(cuMemsetD2D16, "bad_pointer", cuMemsetD2D16_v2, bad, 64, 0, 16, 4);
    TRY_PT(cuMemsetD2D32, "misaligned", cuMemsetD2D32_v2, dptr + 2, 64, 0, 16, 4);
    TRY_PT(cuMemsetD2D32, "bad_pointer", cuMemsetD2D32_v2, bad, 64, 0, 16, 4);
    TRY_PT(cuMemsetD2D8Async, "bad_pointer", cuMemsetD2D8Async, bad, 64, 0, 64, 4, stream);
    TRY_PT(cuMemsetD2D8Async, "bad_stream", cuMemsetD2D8Async, dptr, 64, 0, 64, 4, bad_stream);
    TRY_PT(cuMemsetD2D16Async, "misaligned", cuMemsetD2D16Async, dptr + 1, 64, 0, 16, 4, stream);
    TRY_PT(cuMemsetD2D16Async, "bad_stream", cuMemsetD2D16Async, dptr, 64, 0, 16, 4, bad_stream);
    TRY_PT(cuMemsetD2D32Async, "misaligned", cuMemsetD2D32Async, dptr + 2, 64, 0, 16, 4, stream);
    TRY_PT(cuMemsetD2D32Async, "bad_stream", cuMemsetD2D32Async, dptr, 64, 0, 16, 4, bad_stream);
}

static void copies_2d(void)
{
    CUDA_MEMCPY2D zero2 = {0};
    CUDA_MEMCPY2D htod = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 64,
                          .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = bad, .dstPitch = 64,
                          .WidthInBytes = 64, .Height = 4};
    CUDA_MEMCPY2D narrow = htod;
    narrow.dstDevice = dptr;
    narrow.dstPitch = 16;
    CUDA_MEMCPY2D past = htod;
    past.dstDevice = inner;
    past.dstPitch = 4096;
    past.Height = 257; /* one row past the end of dptr */
    CUDA_MEMCPY3D zero3 = {0};
    CUDA_MEMCPY3D htod3 = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 64, .srcHeight = 4,
                           .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = bad, .dstPitch = 64,
                           .dstHeight = 4, .WidthInBytes = 64, .Height = 4, .Depth = 1};
    CUDA_MEMCPY3D_PEER zerop = {0};
    CUDA_MEMCPY3D_PEER htodp = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 64,
                                .srcHeight = 4, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = bad,
                                .dstContext = ctx, .dstPitch = 64, .dstHeight = 4, .WidthInBytes = 64,
                                .Height = 4, .Depth = 1};
    TRY_PT(cuMemcpy2D, "null", cuMemcpy2D_v2, NULL);
    TRY_PT(cuMemcpy2D, "zero", cuMemcpy2D_v2, &zero2);
    TRY_PT(cuMemcpy2D, "bad_pointer", cuMemcpy2D_v2, &htod);
    TRY_PT(cuMemcpy2D, "pitch_below_width", cuMemcpy2D_v2, &narrow);
    TRY_PT(cuMemcpy2D, "past_end", cuMemcpy2D_v2, &past);
    TRY_PT(cuMemcpy2DUnaligned, "null", cuMemcpy2DUnaligned_v2, NULL);
    TRY_PT(cuMemcpy2DUnaligned, "zero", cuMemcpy2DUnaligned_v2, &zero2);
    TRY_PT(cuMemcpy2DUnaligned, "bad_pointer", cuMemcpy2DUnaligned_v2, &htod);
    TRY_PT(cuMemcpy2DUnaligned, "past_end", cuMemcpy2DUnaligned_v2, &past);
    TRY_PT(cuMemcpy2DAsync, "null", cuMemcpy2DAsync_v2, NULL, stream);
    TRY_PT(cuMemcpy2DAsync, "zero", cuMemcpy2DAsync_v2, &zero2, stream);
    TRY_PT(cuMemcpy2DAsync, "bad_pointer", cuMemcpy2DAsync_v2, &htod, stream);
    TRY_PT(cuMemcpy2DAsync, "past_end", cuMemcpy2DAsync_v2, &past, stream);
    TRY_PT(cuMemcpy2DAsync, "bad_stream", cuMemcpy2DAsync_v2, &narrow, bad_stream);
    TRY_PT(cuMemcpy3D, "null", cuMemcpy3D_v2, NULL);
    TRY_PT(cuMemcpy3D, "zero", cuMemcpy3D_v2, &zero3);
    TRY_PT(cuMemcpy3D, "bad_pointer", cuMemcpy3D_v2, &htod3);
    TRY_PT(cuMemcpy3DAsync, "null", cuMemcpy3DAsync_v2, NULL, stream);
    TRY_PT(cuMemcpy3DAsync, "zero", cuMemcpy3DAsync_v2, &zero3, stream);
    TRY_PT(cuMemcpy3DAsync, "bad_pointer", cuMemcpy3DAsync_v2, &htod3, stream);
    TRY_PT(cuMemcpy3DAsync, "bad_stream", cuMemcpy3DAsync_v2, &htod3, bad_stream);
    TRY_PT(cuMemcpy3DPeer, "null", cuMemcpy3DPeer, NULL);
    TRY_PT(cuMemcpy3DPeer, "zero", cuMemcpy3DPeer, &zerop);
    TRY_PT(cuMemcpy3DPeer, "bad_pointer", cuMemcpy3DPeer, &htodp);
    TRY_PT(cuMemcpy3DPeerAsync, "null", cuMemcpy3DPeerAsync, NULL, stream);
    TRY_PT(cuMemcpy3DPeerAsync, "zero", cuMemcpy3DPeerAsync, &zerop, stream);
    TRY_PT(cuMemcpy3DPeerAsync, "bad_pointer", cuMemcpy3DPeerAsync, &htodp, stream);
    TRY_PT(cuMemcpy3DPeerAsync, "bad_stream", cuMemcpy3DPeerAsync, &htodp, bad_stream);
    TRY_PT(cuMemcpyPeer, "null_contexts", cuMemcpyPeer, dptr, NULL, dptr, NULL, 16);
    TRY_PT(cuMemcpyPeer, "bad_context", cuMemcpyPeer, dptr, BAD_HANDLE, dptr, ctx, 16);
    TRY_PT(cuMemcpyPeer, "bad_pointer", cuMemcpyPeer, bad, ctx, dptr, ctx, 16);
    TRY_PT(cuMemcpyPeer, "past_end", cuMemcpyPeer, inner, ctx, dptr, ctx, MiB);
    TRY_PT(cuMemcpyPeerAsync, "null_contexts", cuMemcpyPeerAsync, dptr, NULL, dptr, NULL, 16, stream);
    TRY_PT(cuMemcpyPeerAsync, "bad_pointer", cuMemcpyPeerAsync, bad, ctx, dptr, ctx, 16, stream);
    TRY_PT(cuMemcpyPeerAsync, "bad_stream", cuMemcpyPeerAsync, dptr, ctx, dptr, ctx, 16, bad_stream);
}

/* Batches longer than the sides spillway keeps for a submission (64):
 * the overrun in a late operation is refused all the same, and failIdx
 * names that operation as the driver's does. */
#define LONG_BATCH 40
#define LONG_BAD 35
#define FAIL_UNSET 7777
#define TRY_FAIL(base, tag, sym, fail, ...)                                      \
    do {                                                                         \
        *(fail) = FAIL_UNSET;                                                    \
        TRY(base, tag, sym, __VA_ARGS__);                                        \
        report(#base, #sym, tag ".failIdx", (int)*(fail));                       \
        *(fail) = FAIL_UNSET;                                                    \
        report(#base, #sym "+pt", tag, p_##sym##_pt ? (int)p_##sym##_pt(__VA_ARGS__) : ABSENT); \
        report(#base, #sym "+pt", tag ".failIdx", (int)*(fail));                 \
    } while (0)

static void long_batches(CUmemcpyAttributes *attr, const CUDA_MEMCPY3D_BATCH_OP *past,
                         const CUDA_MEMCPY3D_BATCH_OP *ok)
{
    CUdeviceptr dsts[LONG_BATCH], srcs[LONG_BATCH];
    size_t sizes[LONG_BATCH], idx[] = {0}, fail;
    CUDA_MEMCPY3D_BATCH_OP ops[LONG_BATCH];
    for (int i = 0; i < LONG_BATCH; i++) {
        dsts[i] = dptr + 4096 + 16 * (CUdeviceptr)i;
        srcs[i] = dptr;
        sizes[i] = 16;
        ops[i] = *ok;
        ops[i].dst.op.ptr.ptr = dsts[i];
    }
    TRY_FAIL(cuMemcpyBatchAsync, "long_ok", cuMemcpyBatchAsync, &fail, dsts, srcs, sizes, LONG_BATCH, attr, idx, 1,
             &fail, stream);
    TRY_FAIL(cuMemcpy3DBatchAsync, "long_ok", cuMemcpy3DBatchAsync, &fail, LONG_BATCH, ops, &fail, 0, stream);
    dsts[LONG_BAD] = inner;
    sizes[LONG_BAD] = MiB;
    ops[LONG_BAD] = *past;
    TRY_FAIL(cuMemcpyBatchAsync, "long_past_end", cuMemcpyBatchAsync, &fail, dsts, srcs, sizes, LONG_BATCH, attr,
             idx, 1, &fail, stream);
    TRY_PT(cuMemcpyBatchAsync, "long_past_end", cuMemcpyBatchAsync_v2, dsts, srcs, sizes, LONG_BATCH, attr, idx, 1,
           stream);
    TRY_FAIL(cuMemcpy3DBatchAsync, "long_past_end", cuMemcpy3DBatchAsync, &fail, LONG_BATCH, ops, &fail, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "long_past_end", cuMemcpy3DBatchAsync_v2, LONG_BATCH, ops, 0, stream);
}

static void batch_copies(void)
{
    /* Their operands are unified addresses, as cuMemcpy's: no bad one
     * (copies()); an overrun instead. */
    CUdeviceptr dsts[] = {inner}, srcs[] = {dptr}, ok_dsts[] = {dptr};
    size_t sizes[] = {16}, past[] = {MiB}, idx[] = {0}, fail = 0;
    CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    CUmemcpyAttributes bad_attr = {.srcAccessOrder = (CUmemcpySrcAccessOrder)99};
    TRY_PT(cuMemcpyBatchAsync, "count_0", cuMemcpyBatchAsync, dsts, srcs, sizes, 0, &attr, idx, 1, &fail, stream);
    TRY_PT(cuMemcpyBatchAsync, "null_dsts", cuMemcpyBatchAsync, NULL, srcs, sizes, 1, &attr, idx, 1, &fail, stream);
    TRY_PT(cuMemcpyBatchAsync, "null_attrs", cuMemcpyBatchAsync, ok_dsts, srcs, sizes, 1, NULL, idx, 1, &fail, stream);
    TRY_PT(cuMemcpyBatchAsync, "bad_attr", cuMemcpyBatchAsync, ok_dsts, srcs, sizes, 1, &bad_attr, idx, 1, &fail,
           stream);
    TRY_PT(cuMemcpyBatchAsync, "past_end", cuMemcpyBatchAsync, dsts, srcs, past, 1, &attr, idx, 1, &fail, stream);
    TRY_PT(cuMemcpyBatchAsync, "legacy_stream", cuMemcpyBatchAsync, ok_dsts, srcs, sizes, 1, &attr, idx, 1, &fail,
           CU_STREAM_LEGACY);
    TRY_PT(cuMemcpyBatchAsync, "bad_stream", cuMemcpyBatchAsync, ok_dsts, srcs, sizes, 1, &attr, idx, 1, &fail,
           bad_stream);
    TRY_PT(cuMemcpyBatchAsync, "count_0", cuMemcpyBatchAsync_v2, dsts, srcs, sizes, 0, &attr, idx, 1, stream);
    TRY_PT(cuMemcpyBatchAsync, "null_dsts", cuMemcpyBatchAsync_v2, NULL, srcs, sizes, 1, &attr, idx, 1, stream);
    TRY_PT(cuMemcpyBatchAsync, "null_attrs", cuMemcpyBatchAsync_v2, ok_dsts, srcs, sizes, 1, NULL, idx, 1, stream);
    TRY_PT(cuMemcpyBatchAsync, "past_end", cuMemcpyBatchAsync_v2, dsts, srcs, past, 1, &attr, idx, 1, stream);
    TRY_PT(cuMemcpyBatchAsync, "bad_stream", cuMemcpyBatchAsync_v2, ok_dsts, srcs, sizes, 1, &attr, idx, 1,
           bad_stream);

    CUDA_MEMCPY3D_BATCH_OP zero = {0};
    CUDA_MEMCPY3D_BATCH_OP op = {
        .src = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = dptr, .rowLength = 0, .layerHeight = 0}},
        .dst = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = inner, .rowLength = 0, .layerHeight = 0}},
        .extent = {.width = MiB, .height = 1, .depth = 1},
        .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    /* One error a case: which of two the driver reports first is not
     * documented. */
    CUDA_MEMCPY3D_BATCH_OP ok_op = op;
    ok_op.dst.op.ptr.ptr = dptr;
    ok_op.extent.width = 16;
    TRY_PT(cuMemcpy3DBatchAsync, "count_0", cuMemcpy3DBatchAsync, 0, &op, &fail, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "null_ops", cuMemcpy3DBatchAsync, 1, NULL, &fail, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "zero_op", cuMemcpy3DBatchAsync, 1, &zero, &fail, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "past_end", cuMemcpy3DBatchAsync, 1, &op, &fail, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "bad_flags", cuMemcpy3DBatchAsync, 1, &ok_op, &fail, 0x100, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "bad_stream", cuMemcpy3DBatchAsync, 1, &ok_op, &fail, 0, bad_stream);
    TRY_PT(cuMemcpy3DBatchAsync, "count_0", cuMemcpy3DBatchAsync_v2, 0, &op, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "null_ops", cuMemcpy3DBatchAsync_v2, 1, NULL, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "zero_op", cuMemcpy3DBatchAsync_v2, 1, &zero, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "past_end", cuMemcpy3DBatchAsync_v2, 1, &op, 0, stream);
    TRY_PT(cuMemcpy3DBatchAsync, "bad_stream", cuMemcpy3DBatchAsync_v2, 1, &ok_op, 0, bad_stream);
    long_batches(&attr, &op, &ok_op);

    /* CUDA 13.2's single copies: the batch of one each stands for. */
    TRY_PT(cuMemcpyWithAttributesAsync, "null_attr", cuMemcpyWithAttributesAsync, dptr, dptr, 16, NULL, stream);
    TRY_PT(cuMemcpyWithAttributesAsync, "bad_attr", cuMemcpyWithAttributesAsync, dptr, dptr, 16, &bad_attr, stream);
    TRY_PT(cuMemcpyWithAttributesAsync, "past_end", cuMemcpyWithAttributesAsync, inner, dptr, MiB, &attr, stream);
    TRY_PT(cuMemcpyWithAttributesAsync, "bad_stream", cuMemcpyWithAttributesAsync, dptr, dptr, 16, &attr,
           bad_stream);
    TRY_PT(cuMemcpy3DWithAttributesAsync, "null_op", cuMemcpy3DWithAttributesAsync, NULL, 0, stream);
    TRY_PT(cuMemcpy3DWithAttributesAsync, "zero_op", cuMemcpy3DWithAttributesAsync, &zero, 0, stream);
    TRY_PT(cuMemcpy3DWithAttributesAsync, "past_end", cuMemcpy3DWithAttributesAsync, &op, 0, stream);
    TRY_PT(cuMemcpy3DWithAttributesAsync, "bad_flags", cuMemcpy3DWithAttributesAsync, &ok_op, 0x100, stream);
    TRY_PT(cuMemcpy3DWithAttributesAsync, "bad_stream", cuMemcpy3DWithAttributesAsync, &ok_op, 0, bad_stream);
}

/* ---- stream work ------------------------------------------------------------- */

static void host_fn(void *data)
{
    (void)data;
}

/* A write of a value to memory freed just now (just_freed), one for each
 * call. */
static CUstreamBatchMemOpParams *freed_write(void)
{
    static CUstreamBatchMemOpParams op;
    op = (CUstreamBatchMemOpParams){
        .writeValue = {.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32, .address = just_freed()}};
    return &op;
}

/* Waits only on addresses that fail before the wait is queued: a wait
 * that is queued on a value never written would hang the stream. */
static void stream_memops(void)
{
    CUstreamBatchMemOpParams op = {.writeValue = {.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32, .address = bad}};
    CUstreamBatchMemOpParams bad_op = {.operation = (CUstreamBatchMemOpType)99};
#define MEMOPS(sym32w, sym64w, sym32, sym64, symb)                                             \
    TRY_PT(cuStreamWriteValue32, "bad_pointer", sym32w, stream, bad, 1, 0);                    \
    TRY_PT(cuStreamWriteValue32, "null", sym32w, stream, 0, 1, 0);                             \
    TRY_PT(cuStreamWriteValue32, "bad_flags", sym32w, stream, dptr, 1, 0x100);                 \
    TRY_PT(cuStreamWriteValue32, "misaligned", sym32w, stream, dptr + 1, 1, 0);                \
    TRY_PT(cuStreamWriteValue32, "bad_stream", sym32w, bad_stream, dptr, 1, 0);                \
    TRY_PT(cuStreamWriteValue32, "freed", sym32w, stream, just_freed(), 1, 0);                 \
    TRY_PT(cuStreamWriteValue64, "bad_pointer", sym64w, stream, bad, 1, 0);                    \
    TRY_PT(cuStreamWriteValue64, "freed", sym64w, stream, just_freed(), 1, 0);                 \
    TRY_PT(cuStreamWriteValue64, "misaligned", sym64w, stream, dptr + 4, 1, 0);                \
    TRY_PT(cuStreamWriteValue64, "bad_stream", sym64w, bad_stream, dptr, 1, 0);                \
    TRY_PT(cuStreamWaitValue32, "bad_pointer", sym32, stream, bad, 1, 0);                      \
    TRY_PT(cuStreamWaitValue32, "bad_flags", sym32, stream, bad, 1, 0x100);                    \
    TRY_PT(cuStreamWaitValue32, "bad_stream", sym32, bad_stream, bad, 1, 0);                   \
    TRY_PT(cuStreamWaitValue64, "bad_pointer", sym64, stream, bad, 1, 0);                      \
    TRY_PT(cuStreamWaitValue64, "bad_flags", sym64, stream, bad, 1, 0x100);                    \
    TRY_PT(cuStreamWaitValue64, "bad_stream", sym64, bad_stream, bad, 1, 0);                   \
    TRY_PT(cuStreamBatchMemOp, "count_0", symb, stream, 0, &op, 0);                            \
    TRY_PT(cuStreamBatchMemOp, "null_ops", symb, stream, 1, NULL, 0);                          \
    TRY_PT(cuStreamBatchMemOp, "count_256", symb, stream, 256, &op, 0);                        \
    TRY_PT(cuStreamBatchMemOp, "bad_pointer", symb, stream, 1, &op, 0);                        \
    TRY_PT(cuStreamBatchMemOp, "freed", symb, stream, 1, freed_write(), 0);                    \
    TRY_PT(cuStreamBatchMemOp, "bad_op", symb, stream, 1, &bad_op, 0);                         \
    TRY_PT(cuStreamBatchMemOp, "bad_flags", symb, stream, 1, &op, 0x100);                      \
    TRY_PT(cuStreamBatchMemOp, "bad_stream", symb, bad_stream, 1, &op, 0);
    MEMOPS(cuStreamWriteValue32, cuStreamWriteValue64, cuStreamWaitValue32, cuStreamWaitValue64,
           cuStreamBatchMemOp)
    MEMOPS(cuStreamWriteValue32_v2, cuStreamWriteValue64_v2, cuStreamWaitValue32_v2, cuStreamWaitValue64_v2,
           cuStreamBatchMemOp_v2)
#undef MEMOPS

    CUmemLocation here = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CUmemLocation nowhere = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 99};
    CUmemLocation untyped = {.type = CU_MEM_LOCATION_TYPE_INVALID, .id = 0};
    TRY_PT(cuMemPrefetchAsync, "bad_pointer", cuMemPrefetchAsync_v2, bad, 16, here, 0, stream);
    TRY_PT(cuMemPrefetchAsync, "not_managed", cuMemPrefetchAsync_v2, dptr, 16, here, 0, stream);
    TRY_PT(cuMemPrefetchAsync, "device_99", cuMemPrefetchAsync_v2, dptr, 16, nowhere, 0, stream);
    TRY_PT(cuMemPrefetchAsync, "bad_location", cuMemPrefetchAsync_v2, dptr, 16, untyped, 0, stream);
    TRY_PT(cuMemPrefetchAsync, "bad_flags", cuMemPrefetchAsync_v2, dptr, 16, here, 0x100, stream);
    TRY_PT(cuMemPrefetchAsync, "bad_stream", cuMemPrefetchAsync_v2, dptr, 16, here, 0, bad_stream);
    TRY_PT(cuLaunchHostFunc, "null_fn", cuLaunchHostFunc, stream, NULL, NULL);
    TRY_PT(cuLaunchHostFunc, "bad_stream", cuLaunchHostFunc, bad_stream, host_fn, NULL);
    TRY_PT(cuLaunchHostFunc_v2, "null_fn", cuLaunchHostFunc_v2, stream, NULL, NULL, 0);
    TRY_PT(cuLaunchHostFunc_v2, "bad_stream", cuLaunchHostFunc_v2, bad_stream, host_fn, NULL, 0);
    TRY_PT(cuLaunchHostFunc_v2, "bad_mode", cuLaunchHostFunc_v2, stream, host_fn, NULL, 7);

    CUmemDecompressParams dp = {.src = (void *)(uintptr_t)bad, .dst = (void *)(uintptr_t)dptr,
                                .srcNumBytes = 16, .dstNumBytes = 16, .algo = CU_MEM_DECOMPRESS_ALGORITHM_DEFLATE};
    size_t err_idx;
    TRY_PT(cuMemBatchDecompressAsync, "null_params", cuMemBatchDecompressAsync, NULL, 1, 0, &err_idx, stream);
    TRY_PT(cuMemBatchDecompressAsync, "count_0", cuMemBatchDecompressAsync, &dp, 0, 0, &err_idx, stream);
    TRY_PT(cuMemBatchDecompressAsync, "bad_flags", cuMemBatchDecompressAsync, &dp, 1, 0x100, &err_idx, stream);
    TRY_PT(cuMemBatchDecompressAsync, "bad_pointer", cuMemBatchDecompressAsync, &dp, 1, 0, &err_idx, stream);
    TRY_PT(cuMemBatchDecompressAsync, "bad_stream", cuMemBatchDecompressAsync, &dp, 1, 0, &err_idx, bad_stream);
}

/* ---- launches and graphs -------------------------------------------------- */

static void launches(void)
{
    void *args[] = {&dptr};
    TRY_PT(cuLaunchKernel, "null_function", cuLaunchKernel, NULL, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
    TRY_PT(cuLaunchKernel, "bad_function", cuLaunchKernel, BAD_HANDLE, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL);
    TRY_PT(cuLaunchKernel, "grid_0", cuLaunchKernel, noop_fn, 0, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
    TRY_PT(cuLaunchKernel, "block_too_big", cuLaunchKernel, noop_fn, 1, 1, 1, 4096, 1, 1, 0, stream, NULL, NULL);
    TRY_PT(cuLaunchKernel, "shared_too_big", cuLaunchKernel, noop_fn, 1, 1, 1, 1, 1, 1, 1u << 30, stream, NULL,
           NULL);
    TRY_PT(cuLaunchKernel, "bad_stream", cuLaunchKernel, ptr_fn, 1, 1, 1, 1, 1, 1, 0, bad_stream, args, NULL);
    TRY_PT(cuLaunchKernel, "null_params", cuLaunchKernel, ptr_fn, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL);
    TRY_PT(cuLaunchKernel, "params_and_extra", cuLaunchKernel, ptr_fn, 1, 1, 1, 1, 1, 1, 0, stream, args,
           (void **)args);
    CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
                          .blockDimZ = 1, .hStream = stream};
    CUlaunchConfig cfg_bad_stream = cfg;
    cfg_bad_stream.hStream = bad_stream;
    CUlaunchConfig cfg_grid_0 = cfg;
    cfg_grid_0.gridDimX = 0;
    CUlaunchConfig cfg_null_attrs = cfg;
    cfg_null_attrs.numAttrs = 1;
    CUlaunchAttribute bad_attr = {.id = (CUlaunchAttributeID)999};
    CUlaunchConfig cfg_bad_attr = cfg;
    cfg_bad_attr.attrs = &bad_attr;
    cfg_bad_attr.numAttrs = 1;
    TRY_PT(cuLaunchKernelEx, "null_config", cuLaunchKernelEx, NULL, ptr_fn, args, NULL);
    TRY_PT(cuLaunchKernelEx, "null_function", cuLaunchKernelEx, &cfg, NULL, args, NULL);
    TRY_PT(cuLaunchKernelEx, "bad_function", cuLaunchKernelEx, &cfg, BAD_HANDLE, args, NULL);
    TRY_PT(cuLaunchKernelEx, "grid_0", cuLaunchKernelEx, &cfg_grid_0, ptr_fn, args, NULL);
    TRY_PT(cuLaunchKernelEx, "bad_stream", cuLaunchKernelEx, &cfg_bad_stream, ptr_fn, args, NULL);
    TRY_PT(cuLaunchKernelEx, "null_attrs", cuLaunchKernelEx, &cfg_null_attrs, ptr_fn, args, NULL);
    TRY_PT(cuLaunchKernelEx, "bad_attr", cuLaunchKernelEx, &cfg_bad_attr, ptr_fn, args, NULL);
    TRY_PT(cuLaunchKernelEx, "null_params", cuLaunchKernelEx, &cfg, ptr_fn, NULL, NULL);
    TRY_PT(cuLaunchCooperativeKernel, "null_function", cuLaunchCooperativeKernel, NULL, 1, 1, 1, 1, 1, 1, 0, stream,
           args);
    TRY_PT(cuLaunchCooperativeKernel, "grid_0", cuLaunchCooperativeKernel, ptr_fn, 0, 1, 1, 1, 1, 1, 0, stream,
           args);
    TRY_PT(cuLaunchCooperativeKernel, "bad_stream", cuLaunchCooperativeKernel, ptr_fn, 1, 1, 1, 1, 1, 1, 0,
           bad_stream, args);
    TRY_PT(cuLaunchCooperativeKernel, "null_params", cuLaunchCooperativeKernel, ptr_fn, 1, 1, 1, 1, 1, 1, 0,
           stream, NULL);
    CUDA_LAUNCH_PARAMS multi = {.function = ptr_fn, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1, .hStream = stream,
                                .kernelParams = args};
    CUDA_LAUNCH_PARAMS multi_null_stream = multi, multi_bad_stream = multi, multi_null_function = multi,
                       multi_bad_function = multi, multi_grid_0 = multi, multi_null_params = multi;
    multi_null_stream.hStream = NULL;
    multi_bad_stream.hStream = bad_stream;
    multi_null_function.function = NULL;
    multi_bad_function.function = BAD_HANDLE;
    multi_grid_0.gridDimX = 0;
    multi_null_params.kernelParams = NULL;
    CUDA_LAUNCH_PARAMS multi_one_device_twice[2] = {multi, multi};
    TRY(cuLaunchCooperativeKernelMultiDevice, "null_list", cuLaunchCooperativeKernelMultiDevice, NULL, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "no_devices", cuLaunchCooperativeKernelMultiDevice, &multi, 0, 0);
    /* More entries than the array has, and than any machine has devices. */
    TRY(cuLaunchCooperativeKernelMultiDevice, "huge_count", cuLaunchCooperativeKernelMultiDevice, &multi,
        0x7fffffffu, 0);
    /* More than the machine's devices (fakecuda has 1 here) but within
     * spillway's 64: the one-entry array must not be read past. */
    TRY(cuLaunchCooperativeKernelMultiDevice, "past_the_devices", cuLaunchCooperativeKernelMultiDevice, &multi, 40,
        0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "bad_flags", cuLaunchCooperativeKernelMultiDevice, &multi, 1, 0x80);
    TRY(cuLaunchCooperativeKernelMultiDevice, "null_stream", cuLaunchCooperativeKernelMultiDevice,
        &multi_null_stream, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "bad_stream", cuLaunchCooperativeKernelMultiDevice,
        &multi_bad_stream, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "null_function", cuLaunchCooperativeKernelMultiDevice,
        &multi_null_function, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "bad_function", cuLaunchCooperativeKernelMultiDevice,
        &multi_bad_function, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "grid_0", cuLaunchCooperativeKernelMultiDevice, &multi_grid_0, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "null_params", cuLaunchCooperativeKernelMultiDevice,
        &multi_null_params, 1, 0);
    TRY(cuLaunchCooperativeKernelMultiDevice, "one_device_twice", cuLaunchCooperativeKernelMultiDevice,
        multi_one_device_twice, 2, 0);
    TRY(cuLaunch, "null_function", cuLaunch, NULL);
    TRY(cuLaunch, "bad_function", cuLaunch, BAD_HANDLE);
    TRY(cuLaunchGrid, "null_function", cuLaunchGrid, NULL, 1, 1);
    TRY(cuLaunchGrid, "grid_0", cuLaunchGrid, noop_fn, 0, 1);
    TRY(cuLaunchGridAsync, "null_function", cuLaunchGridAsync, NULL, 1, 1, stream);
    TRY(cuLaunchGridAsync, "grid_0", cuLaunchGridAsync, noop_fn, 0, 1, stream);
    TRY(cuLaunchGridAsync, "bad_stream", cuLaunchGridAsync, noop_fn, 1, 1, bad_stream);
    TRY_PT(cuGraphLaunch, "null_exec", cuGraphLaunch, NULL, stream);
    TRY_PT(cuGraphLaunch, "bad_exec", cuGraphLaunch, BAD_HANDLE, stream);
    TRY_PT(cuGraphLaunch, "bad_stream", cuGraphLaunch, gexec, bad_stream);
    TRY_PT(cuGraphUpload, "null_exec", cuGraphUpload, NULL, stream);
    TRY_PT(cuGraphUpload, "bad_exec", cuGraphUpload, BAD_HANDLE, stream);
    TRY_PT(cuGraphUpload, "bad_stream", cuGraphUpload, gexec, bad_stream);
}

/* Copy and set nodes: the driver checks their ranges when they are added
 * or given parameters, as copies are checked when issued. Each graph call
 * below that succeeds is one the driver alone accepts too. */
static CUDA_MEMCPY3D node_copy(CUdeviceptr dst, size_t bytes)
{
    return (CUDA_MEMCPY3D){.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = dptr,
                           .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst,
                           .WidthInBytes = bytes, .Height = 1, .Depth = 1};
}

static CUDA_MEMSET_NODE_PARAMS node_set(CUdeviceptr dst, size_t bytes)
{
    return (CUDA_MEMSET_NODE_PARAMS){.dst = dst, .value = 0x5a, .elementSize = 1, .width = bytes, .height = 1};
}

static CUDA_MEMCPY3D *freed_copy(void)
{
    static CUDA_MEMCPY3D c;
    c = node_copy(just_freed(), 16);
    return &c;
}

static CUDA_MEMSET_NODE_PARAMS *freed_set(void)
{
    static CUDA_MEMSET_NODE_PARAMS m;
    m = node_set(just_freed(), 16);
    return &m;
}

static void graph_nodes(void)
{
    CUgraph g;
    CUgraphNode cn, sn;
    CUgraphExec x;
    CUDA_MEMCPY3D ok = node_copy(dptr + 4096, 16), past = node_copy(inner, MiB);
    CUDA_MEMSET_NODE_PARAMS sok = node_set(dptr + 4096, 16), spast = node_set(inner, MiB);
    CUDA_MEMSET_NODE_PARAMS sbad = sok;
    sbad.elementSize = 3;
    OK(cuGraphCreate(&g, 0));
    TRY(cuGraphAddMemcpyNode, "null_out", cuGraphAddMemcpyNode, NULL, g, NULL, 0, &ok, ctx);
    TRY(cuGraphAddMemcpyNode, "null_graph", cuGraphAddMemcpyNode, &cn, NULL, NULL, 0, &ok, ctx);
    TRY(cuGraphAddMemcpyNode, "null_params", cuGraphAddMemcpyNode, &cn, g, NULL, 0, NULL, ctx);
    TRY(cuGraphAddMemcpyNode, "past_end", cuGraphAddMemcpyNode, &cn, g, NULL, 0, &past, ctx);
    TRY(cuGraphAddMemcpyNode, "freed", cuGraphAddMemcpyNode, &cn, g, NULL, 0, freed_copy(), ctx);
    TRY(cuGraphAddMemsetNode, "null_out", cuGraphAddMemsetNode, NULL, g, NULL, 0, &sok, ctx);
    TRY(cuGraphAddMemsetNode, "null_params", cuGraphAddMemsetNode, &sn, g, NULL, 0, NULL, ctx);
    TRY(cuGraphAddMemsetNode, "bad_element", cuGraphAddMemsetNode, &sn, g, NULL, 0, &sbad, ctx);
    TRY(cuGraphAddMemsetNode, "past_end", cuGraphAddMemsetNode, &sn, g, NULL, 0, &spast, ctx);
    TRY(cuGraphAddMemsetNode, "freed", cuGraphAddMemsetNode, &sn, g, NULL, 0, freed_set(), ctx);
    OK(cuGraphAddMemcpyNode(&cn, g, NULL, 0, &ok, ctx));
    OK(cuGraphAddMemsetNode(&sn, g, &cn, 1, &sok, ctx));
    TRY(cuGraphMemcpyNodeSetParams, "null_params", cuGraphMemcpyNodeSetParams, cn, NULL);
    TRY(cuGraphMemcpyNodeSetParams, "wrong_node", cuGraphMemcpyNodeSetParams, sn, &ok);
    TRY(cuGraphMemcpyNodeSetParams, "past_end", cuGraphMemcpyNodeSetParams, cn, &past);
    TRY(cuGraphMemcpyNodeSetParams, "freed", cuGraphMemcpyNodeSetParams, cn, freed_copy());
    TRY(cuGraphMemsetNodeSetParams, "null_params", cuGraphMemsetNodeSetParams, sn, NULL);
    TRY(cuGraphMemsetNodeSetParams, "wrong_node", cuGraphMemsetNodeSetParams, cn, &sok);
    TRY(cuGraphMemsetNodeSetParams, "past_end", cuGraphMemsetNodeSetParams, sn, &spast);
    TRY(cuGraphMemsetNodeSetParams, "freed", cuGraphMemsetNodeSetParams, sn, freed_set());
    CUgraphNodeParams npast = {.type = CU_GRAPH_NODE_TYPE_MEMCPY, .memcpy = {.copyCtx = ctx, .copyParams = past}};
    CUgraphNodeParams nspast = {.type = CU_GRAPH_NODE_TYPE_MEMSET,
                                .memset = {.dst = inner, .value = 0x5a, .elementSize = 1, .width = MiB, .height = 1,
                                           .ctx = ctx}};
    CUgraphNodeParams nok = {.type = CU_GRAPH_NODE_TYPE_MEMCPY, .memcpy = {.copyCtx = ctx, .copyParams = ok}};
    CUgraphNodeParams nsok = {.type = CU_GRAPH_NODE_TYPE_MEMSET,
                              .memset = {.dst = dptr + 4096, .value = 0x5a, .elementSize = 1, .width = 16,
                                         .height = 1, .ctx = ctx}};
    CUgraphNodeParams nfreed = nok, nsfreed = nsok;
    nfreed.memcpy.copyParams = *freed_copy();
    nsfreed.memset.dst = freed_set()->dst;
    /* A conditional node on a handle that is none: refused, nothing
     * recorded (shim/graph_cond.c). */
    CUgraphNodeParams ncond = {.type = CU_GRAPH_NODE_TYPE_CONDITIONAL,
                               .conditional = {.handle = 0, .type = CU_GRAPH_COND_TYPE_IF, .size = 1, .ctx = ctx}};
    CUgraphNode gn, gsn;
    TRY(cuGraphAddNode, "null_params", cuGraphAddNode, &gn, g, NULL, 0, NULL);
    TRY(cuGraphAddNode, "cond_bad_handle", cuGraphAddNode, &gn, g, NULL, 0, &ncond);
    TRY(cuGraphAddNode, "cond_bad_handle", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, &ncond);
    TRY(cuGraphAddNode, "null_graph", cuGraphAddNode, &gn, NULL, NULL, 0, &nok);
    TRY(cuGraphAddNode, "copy_past_end", cuGraphAddNode, &gn, g, NULL, 0, &npast);
    TRY(cuGraphAddNode, "set_past_end", cuGraphAddNode, &gn, g, NULL, 0, &nspast);
    TRY(cuGraphAddNode, "copy_freed", cuGraphAddNode, &gn, g, NULL, 0, &nfreed);
    TRY(cuGraphAddNode, "null_params", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, NULL);
    TRY(cuGraphAddNode, "copy_past_end", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, &npast);
    TRY(cuGraphAddNode, "set_past_end", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, &nspast);
    TRY(cuGraphAddNode, "set_freed", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, &nsfreed);
    OK(cuGraphAddNode(&gn, g, &sn, 1, &nok));
    OK(cuGraphAddNode_v2(&gsn, g, &gn, NULL, 1, &nsok));
    TRY(cuGraphNodeSetParams, "null_params", cuGraphNodeSetParams, gn, NULL);
    TRY(cuGraphNodeSetParams, "wrong_node", cuGraphNodeSetParams, gsn, &nok);
    TRY(cuGraphNodeSetParams, "copy_past_end", cuGraphNodeSetParams, gn, &npast);
    TRY(cuGraphNodeSetParams, "copy_freed", cuGraphNodeSetParams, gn, &nfreed);
    TRY(cuGraphNodeSetParams, "set_past_end", cuGraphNodeSetParams, gsn, &nspast);
    TRY(cuGraphNodeSetParams, "set_freed", cuGraphNodeSetParams, gsn, &nsfreed);
    OK(cuGraphInstantiateWithFlags(&x, g, 0));
    TRY(cuGraphExecMemcpyNodeSetParams, "past_end", cuGraphExecMemcpyNodeSetParams, x, cn, &past, ctx);
    TRY(cuGraphExecMemcpyNodeSetParams, "freed", cuGraphExecMemcpyNodeSetParams, x, cn, freed_copy(), ctx);
    TRY(cuGraphExecMemsetNodeSetParams, "past_end", cuGraphExecMemsetNodeSetParams, x, sn, &spast, ctx);
    TRY(cuGraphExecMemsetNodeSetParams, "freed", cuGraphExecMemsetNodeSetParams, x, sn, freed_set(), ctx);
    TRY(cuGraphExecNodeSetParams, "copy_past_end", cuGraphExecNodeSetParams, x, cn, &npast);
    TRY(cuGraphExecNodeSetParams, "set_past_end", cuGraphExecNodeSetParams, x, sn, &nspast);
    /* What was accepted runs: copies and sets of 16 bytes inside dptr. */
    OK(cuGraphLaunch(x, stream));
    OK(cuStreamSynchronize(stream));
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g));
}

/* Batch memory operation nodes: each operation's value checked against
 * the pool allocation it names, as a stream batch's, when the node is
 * added or given parameters. odd ends 3 bytes past a multiple of 8: a 32-
 * or 64-bit value at odd + 4096 runs past it. */
static CUstreamBatchMemOpParams memop(CUstreamBatchMemOpType t, CUdeviceptr a)
{
    CUstreamBatchMemOpParams op = {.writeValue = {.operation = t, .address = a, .value = 0x5a}};
    return op;
}

/* A node's parameters of one write to memory freed just now (just_freed). */
static CUDA_BATCH_MEM_OP_NODE_PARAMS *freed_memop(void)
{
    static CUstreamBatchMemOpParams op;
    static CUDA_BATCH_MEM_OP_NODE_PARAMS p;
    op = memop(CU_STREAM_MEM_OP_WRITE_VALUE_32, just_freed());
    p = (CUDA_BATCH_MEM_OP_NODE_PARAMS){.ctx = ctx, .count = 1, .paramArray = &op};
    return &p;
}

static CUgraphNodeParams memop_node(const CUDA_BATCH_MEM_OP_NODE_PARAMS *p)
{
    return (CUgraphNodeParams){.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP,
                               .memOp = {.ctx = p->ctx, .count = p->count, .paramArray = p->paramArray}};
}

/* The same as CUDA 12.2's parameters. */
static CUgraphNodeParams *freed_memop_node(void)
{
    static CUgraphNodeParams p;
    p = memop_node(freed_memop());
    return &p;
}

static void memop_nodes(void)
{
    CUdeviceptr odd;
    OK(cuMemAlloc(&odd, 4096 + 3));
    CUstreamBatchMemOpParams ok[2] = {memop(CU_STREAM_MEM_OP_WRITE_VALUE_32, odd),
                                      memop(CU_STREAM_MEM_OP_WRITE_VALUE_64, odd + 8)};
    CUstreamBatchMemOpParams past32 = memop(CU_STREAM_MEM_OP_WRITE_VALUE_32, odd + 4096);
    CUstreamBatchMemOpParams second_past[2] = {ok[0], memop(CU_STREAM_MEM_OP_WRITE_VALUE_64, odd + 4096)};
    CUstreamBatchMemOpParams wait_past = {.waitValue = {.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32,
                                                        .address = odd + 4096, .value = 1}};
    CUDA_BATCH_MEM_OP_NODE_PARAMS nok = {.ctx = ctx, .count = 2, .paramArray = ok};
    CUDA_BATCH_MEM_OP_NODE_PARAMS npast = {.ctx = ctx, .count = 1, .paramArray = &past32};
    CUDA_BATCH_MEM_OP_NODE_PARAMS nsecond = {.ctx = ctx, .count = 2, .paramArray = second_past};
    CUDA_BATCH_MEM_OP_NODE_PARAMS nwait = {.ctx = ctx, .count = 1, .paramArray = &wait_past};
    CUDA_BATCH_MEM_OP_NODE_PARAMS nnull = {.ctx = ctx, .count = 1, .paramArray = NULL};
    CUDA_BATCH_MEM_OP_NODE_PARAMS ncount0 = {.ctx = ctx, .count = 0, .paramArray = ok};
    CUgraphNodeParams gok = memop_node(&nok), gpast = memop_node(&npast), gsecond = memop_node(&nsecond);
    CUgraph g;
    CUgraphNode n, gn, other;
    CUgraphExec x;
    OK(cuGraphCreate(&g, 0));
    TRY(cuGraphAddBatchMemOpNode, "null_params", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, NULL);
    TRY(cuGraphAddBatchMemOpNode, "null_ops", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, &nnull);
    TRY(cuGraphAddBatchMemOpNode, "count_0", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, &ncount0);
    TRY(cuGraphAddBatchMemOpNode, "null_graph", cuGraphAddBatchMemOpNode, &n, NULL, NULL, 0, &nok);
    TRY(cuGraphAddBatchMemOpNode, "past_end", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, &npast);
    TRY(cuGraphAddBatchMemOpNode, "second_past_end", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, &nsecond);
    TRY(cuGraphAddBatchMemOpNode, "wait_past_end", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, &nwait);
    TRY(cuGraphAddBatchMemOpNode, "freed", cuGraphAddBatchMemOpNode, &n, g, NULL, 0, freed_memop());
    TRY(cuGraphAddNode, "memop_past_end", cuGraphAddNode, &gn, g, NULL, 0, &gpast);
    TRY(cuGraphAddNode, "memop_freed", cuGraphAddNode, &gn, g, NULL, 0, freed_memop_node());
    TRY(cuGraphAddNode, "memop_second_past_end", cuGraphAddNode_v2, &gn, g, NULL, NULL, 0, &gsecond);
    OK(cuGraphAddBatchMemOpNode(&n, g, NULL, 0, &nok));
    OK(cuGraphAddNode(&gn, g, &n, 1, &gok));
    OK(cuGraphAddEmptyNode(&other, g, NULL, 0));
    TRY(cuGraphBatchMemOpNodeSetParams, "null_params", cuGraphBatchMemOpNodeSetParams, n, NULL);
    TRY(cuGraphBatchMemOpNodeSetParams, "wrong_node", cuGraphBatchMemOpNodeSetParams, other, &nok);
    TRY(cuGraphBatchMemOpNodeSetParams, "past_end", cuGraphBatchMemOpNodeSetParams, n, &npast);
    TRY(cuGraphBatchMemOpNodeSetParams, "second_past_end", cuGraphBatchMemOpNodeSetParams, n, &nsecond);
    TRY(cuGraphBatchMemOpNodeSetParams, "freed", cuGraphBatchMemOpNodeSetParams, n, freed_memop());
    TRY(cuGraphNodeSetParams, "memop_past_end", cuGraphNodeSetParams, gn, &gpast);
    TRY(cuGraphNodeSetParams, "memop_freed", cuGraphNodeSetParams, gn, freed_memop_node());
    OK(cuGraphInstantiateWithFlags(&x, g, 0));
    TRY(cuGraphExecBatchMemOpNodeSetParams, "null_exec", cuGraphExecBatchMemOpNodeSetParams, NULL, n, &nok);
    TRY(cuGraphExecBatchMemOpNodeSetParams, "wrong_node", cuGraphExecBatchMemOpNodeSetParams, x, other, &nok);
    TRY(cuGraphExecBatchMemOpNodeSetParams, "past_end", cuGraphExecBatchMemOpNodeSetParams, x, n, &nsecond);
    TRY(cuGraphExecBatchMemOpNodeSetParams, "freed", cuGraphExecBatchMemOpNodeSetParams, x, n, freed_memop());
    TRY(cuGraphExecNodeSetParams, "memop_past_end", cuGraphExecNodeSetParams, x, gn, &gsecond);
    TRY(cuGraphExecNodeSetParams, "memop_freed", cuGraphExecNodeSetParams, x, gn, freed_memop_node());
    /* What was accepted runs: writes inside odd. */
    OK(cuGraphLaunch(x, stream));
    OK(cuStreamSynchronize(stream));
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g));
    OK(cuMemFree(odd));
}

static void graphs(void)
{
    CUgraphExec e;
    CUgraphNode err_node;
    char log[64];
    CUgraphExecUpdateResult res;
    CUgraphExecUpdateResultInfo info;
    CUDA_KERNEL_NODE_PARAMS_v1 kp1 = {.func = noop_fn, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                      .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1};
    CUDA_KERNEL_NODE_PARAMS kp = {.func = noop_fn, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                  .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1};
    CUgraphNodeParams np = {.type = CU_GRAPH_NODE_TYPE_KERNEL};
    CUDA_MEMCPY3D cp = {0};
    CUDA_MEMSET_NODE_PARAMS sp = {.dst = dptr, .elementSize = 1, .width = 16, .height = 1};
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.hUploadStream = bad_stream,
                                        .flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD};
    CUDA_GRAPH_INSTANTIATE_PARAMS ip_bad_flags = {.flags = 0x1000};

    TRY(cuGraphInstantiate, "null_out", cuGraphInstantiate, NULL, graph, &err_node, log, sizeof log);
    TRY(cuGraphInstantiate, "null_graph", cuGraphInstantiate, &e, NULL, &err_node, log, sizeof log);
    TRY(cuGraphInstantiate, "bad_graph", cuGraphInstantiate, &e, BAD_HANDLE, &err_node, log, sizeof log);
    TRY(cuGraphInstantiate, "null_out", cuGraphInstantiate_v2, NULL, graph, &err_node, log, sizeof log);
    TRY(cuGraphInstantiate, "null_graph", cuGraphInstantiate_v2, &e, NULL, &err_node, log, sizeof log);
    TRY(cuGraphInstantiate, "bad_graph", cuGraphInstantiate_v2, &e, BAD_HANDLE, &err_node, log, sizeof log);
    TRY(cuGraphInstantiateWithFlags, "null_out", cuGraphInstantiateWithFlags, NULL, graph, 0);
    TRY(cuGraphInstantiateWithFlags, "null_graph", cuGraphInstantiateWithFlags, &e, NULL, 0);
    TRY(cuGraphInstantiateWithFlags, "bad_graph", cuGraphInstantiateWithFlags, &e, BAD_HANDLE, 0);
    TRY(cuGraphInstantiateWithFlags, "bad_flags", cuGraphInstantiateWithFlags, &e, graph, 0x1000);
    TRY(cuGraphInstantiateWithFlags, "upload_flag", cuGraphInstantiateWithFlags, &e, graph,
        CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
    TRY_PT(cuGraphInstantiateWithParams, "null_out", cuGraphInstantiateWithParams, NULL, graph, &ip);
    TRY_PT(cuGraphInstantiateWithParams, "null_params", cuGraphInstantiateWithParams, &e, graph, NULL);
    TRY_PT(cuGraphInstantiateWithParams, "bad_graph", cuGraphInstantiateWithParams, &e, BAD_HANDLE, &ip_bad_flags);
    TRY_PT(cuGraphInstantiateWithParams, "bad_flags", cuGraphInstantiateWithParams, &e, graph, &ip_bad_flags);
    TRY_PT(cuGraphInstantiateWithParams, "bad_upload_stream", cuGraphInstantiateWithParams, &e, graph, &ip);
    TRY(cuGraphExecUpdate, "null_exec", cuGraphExecUpdate, NULL, graph, &err_node, &res);
    TRY(cuGraphExecUpdate, "bad_exec", cuGraphExecUpdate, BAD_HANDLE, graph, &err_node, &res);
    TRY(cuGraphExecUpdate, "bad_graph", cuGraphExecUpdate, gexec, BAD_HANDLE, &err_node, &res);
    TRY(cuGraphExecUpdate, "null_result", cuGraphExecUpdate, gexec, graph, &err_node, NULL);
    TRY(cuGraphExecUpdate, "null_exec", cuGraphExecUpdate_v2, NULL, graph, &info);
    TRY(cuGraphExecUpdate, "bad_exec", cuGraphExecUpdate_v2, BAD_HANDLE, graph, &info);
    TRY(cuGraphExecUpdate, "bad_graph", cuGraphExecUpdate_v2, gexec, BAD_HANDLE, &info);
    TRY(cuGraphExecUpdate, "null_info", cuGraphExecUpdate_v2, gexec, graph, NULL);
    TRY(cuGraphExecKernelNodeSetParams, "null_exec", cuGraphExecKernelNodeSetParams, NULL, BAD_HANDLE, &kp1);
    TRY(cuGraphExecKernelNodeSetParams, "bad_node", cuGraphExecKernelNodeSetParams, gexec, BAD_HANDLE, &kp1);
    TRY(cuGraphExecKernelNodeSetParams, "null_node", cuGraphExecKernelNodeSetParams, gexec, NULL, &kp1);
    TRY(cuGraphExecKernelNodeSetParams, "null_params", cuGraphExecKernelNodeSetParams, gexec, BAD_HANDLE, NULL);
    TRY(cuGraphExecKernelNodeSetParams, "null_exec", cuGraphExecKernelNodeSetParams_v2, NULL, BAD_HANDLE, &kp);
    TRY(cuGraphExecKernelNodeSetParams, "bad_node", cuGraphExecKernelNodeSetParams_v2, gexec, BAD_HANDLE, &kp);
    TRY(cuGraphExecKernelNodeSetParams, "null_node", cuGraphExecKernelNodeSetParams_v2, gexec, NULL, &kp);
    TRY(cuGraphExecKernelNodeSetParams, "null_params", cuGraphExecKernelNodeSetParams_v2, gexec, BAD_HANDLE, NULL);
    TRY(cuGraphExecNodeSetParams, "null_exec", cuGraphExecNodeSetParams, NULL, BAD_HANDLE, &np);
    TRY(cuGraphExecNodeSetParams, "bad_node", cuGraphExecNodeSetParams, gexec, BAD_HANDLE, &np);
    TRY(cuGraphExecNodeSetParams, "null_node", cuGraphExecNodeSetParams, gexec, NULL, &np);
    TRY(cuGraphExecNodeSetParams, "null_params", cuGraphExecNodeSetParams, gexec, BAD_HANDLE, NULL);
    TRY(cuGraphExecMemcpyNodeSetParams, "null_exec", cuGraphExecMemcpyNodeSetParams, NULL, BAD_HANDLE, &cp, ctx);
    TRY(cuGraphExecMemcpyNodeSetParams, "bad_node", cuGraphExecMemcpyNodeSetParams, gexec, BAD_HANDLE, &cp, ctx);
    TRY(cuGraphExecMemcpyNodeSetParams, "null_params", cuGraphExecMemcpyNodeSetParams, gexec, BAD_HANDLE, NULL,
        ctx);
    TRY(cuGraphExecMemsetNodeSetParams, "null_exec", cuGraphExecMemsetNodeSetParams, NULL, BAD_HANDLE, &sp, ctx);
    TRY(cuGraphExecMemsetNodeSetParams, "bad_node", cuGraphExecMemsetNodeSetParams, gexec, BAD_HANDLE, &sp, ctx);
    TRY(cuGraphExecMemsetNodeSetParams, "null_params", cuGraphExecMemsetNodeSetParams, gexec, BAD_HANDLE, NULL,
        ctx);
    TRY(cuGraphExecChildGraphNodeSetParams, "null_exec", cuGraphExecChildGraphNodeSetParams, NULL, BAD_HANDLE,
        graph);
    TRY(cuGraphExecChildGraphNodeSetParams, "bad_node", cuGraphExecChildGraphNodeSetParams, gexec, BAD_HANDLE,
        graph);
    TRY(cuGraphExecChildGraphNodeSetParams, "null_child", cuGraphExecChildGraphNodeSetParams, gexec, BAD_HANDLE,
        NULL);
    TRY(cuGraphExecDestroy, "null", cuGraphExecDestroy, NULL);
    TRY(cuGraphExecDestroy, "bad_exec", cuGraphExecDestroy, BAD_HANDLE);
    TRY(cuGraphDestroy, "null", cuGraphDestroy, NULL);
    TRY(cuGraphDestroy, "bad_graph", cuGraphDestroy, BAD_HANDLE);
    TRY(cuGraphDestroyNode, "null", cuGraphDestroyNode, NULL);
    TRY(cuGraphDestroyNode, "bad_node", cuGraphDestroyNode, BAD_HANDLE);
    TRY(cuDeviceGraphMemTrim, "device_99", cuDeviceGraphMemTrim, 99);
    TRY(cuDeviceGraphMemTrim, "device_minus_1", cuDeviceGraphMemTrim, -1);
    TRY(cuModuleUnload, "null", cuModuleUnload, NULL);
    TRY(cuModuleUnload, "bad_module", cuModuleUnload, BAD_HANDLE);
    TRY(cuLibraryUnload, "null", cuLibraryUnload, NULL);
    TRY(cuLibraryUnload, "bad_library", cuLibraryUnload, BAD_HANDLE);
}

/* ---- TMA descriptors ---------------------------------------------------------- */

/* spillway reads a descriptor only after the driver made it: every refusal
 * is the driver's, and a valid encode succeeds as without spillway. */
static void tensor_maps(void)
{
    static _Alignas(128) unsigned char room[3 * sizeof(CUtensorMap)];
    CUtensorMap *m = (CUtensorMap *)(void *)room, *off_grid = (CUtensorMap *)(void *)(room + 160);
    void *a = (void *)(uintptr_t)dptr, *a8 = (void *)(uintptr_t)(dptr + 8);
    const cuuint64_t dim[] = {256, 256, 4, 1, 1, 1}, stride[] = {1024, 1024 * 256, 1024 * 256 * 4, 1 << 20, 1 << 20};
    const cuuint32_t box[] = {32, 32, 1, 1, 1, 1}, box257[] = {32, 257, 1, 1, 1, 1}, es[] = {1, 1, 1, 1, 1, 1};
    const CUtensorMapDataType f32 = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
#define TILED(tag, map, type, rank, addr, dims, boxes, swz)                                                  \
    TRY(cuTensorMapEncodeTiled, tag, cuTensorMapEncodeTiled, map, type, rank, addr, dims, stride, boxes, es,    \
        CU_TENSOR_MAP_INTERLEAVE_NONE, swz, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    TILED("null_map", NULL, f32, 2, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("misaligned_map", off_grid, f32, 2, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("misaligned_address", m, f32, 2, a8, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("null_address", m, f32, 2, NULL, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("rank_0", m, f32, 0, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("rank_6", m, f32, 6, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("box_257", m, f32, 2, a, dim, box257, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("null_dims", m, f32, 2, a, NULL, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("bad_type", m, (CUtensorMapDataType)99, 2, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
    TILED("bad_swizzle", m, f32, 2, a, dim, box, (CUtensorMapSwizzle)99);
    TILED("swizzle_32_box_128", m, f32, 2, a, dim, box, CU_TENSOR_MAP_SWIZZLE_32B);
    TILED("valid", m, f32, 2, a, dim, box, CU_TENSOR_MAP_SWIZZLE_NONE);
#undef TILED
    TRY(cuTensorMapReplaceAddress, "null_map", cuTensorMapReplaceAddress, NULL, a);
    TRY(cuTensorMapReplaceAddress, "misaligned_address", cuTensorMapReplaceAddress, m, a8);
    TRY(cuTensorMapReplaceAddress, "misaligned_map", cuTensorMapReplaceAddress, off_grid, a);
    TRY(cuTensorMapReplaceAddress, "valid", cuTensorMapReplaceAddress, m, (void *)(uintptr_t)(dptr + 4096));

    const int lo[] = {-1, 0, 0}, hi[] = {-1, 0, 0}, far[] = {-40000, 0, 0};
    const cuuint64_t nwc[] = {16, 64, 4, 1, 1}, nwc_stride[] = {32, 32 * 64, 32 * 64 * 4, 1 << 20};
    const CUtensorMapDataType f16 = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
#define IM2COL(tag, map, rank, addr, lower, cpp)                                                                 \
    TRY(cuTensorMapEncodeIm2col, tag, cuTensorMapEncodeIm2col, map, f16, rank, addr, nwc, nwc_stride, lower, hi, \
        cpp, 64, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, \
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    IM2COL("null_map", NULL, 3, a, lo, 16);
    IM2COL("rank_2", m, 2, a, lo, 16);
    IM2COL("misaligned_address", m, 3, a8, lo, 16);
    IM2COL("corner_out_of_range", m, 3, a, far, 16);
    IM2COL("channels_257", m, 3, a, lo, 257);
    IM2COL("null_corners", m, 3, a, NULL, 16);
    IM2COL("valid", m, 3, a, lo, 16);
#undef IM2COL
#define WIDE(tag, map, rank, addr, lower, mode, swz)                                                               \
    TRY(cuTensorMapEncodeIm2colWide, tag, cuTensorMapEncodeIm2colWide, map, f16, rank, addr, nwc, nwc_stride,      \
        lower, -1, 16, 64, es, CU_TENSOR_MAP_INTERLEAVE_NONE, mode, swz, CU_TENSOR_MAP_L2_PROMOTION_NONE,          \
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    const CUtensorMapIm2ColWideMode w = CU_TENSOR_MAP_IM2COL_WIDE_MODE_W;
    const CUtensorMapSwizzle s128 = CU_TENSOR_MAP_SWIZZLE_128B;
    WIDE("null_map", NULL, 3, a, -1, w, s128);
    WIDE("rank_2", m, 2, a, -1, w, s128);
    WIDE("misaligned_address", m, 3, a8, -1, w, s128);
    WIDE("corner_out_of_range", m, 3, a, 40000, w, s128);
    WIDE("bad_mode", m, 3, a, -1, (CUtensorMapIm2ColWideMode)7, s128);
    WIDE("swizzle_none", m, 3, a, -1, w, CU_TENSOR_MAP_SWIZZLE_NONE);
    WIDE("valid", m, 3, a, -1, w, s128);
#undef WIDE
}

/* ---- arrays, host memory, sizes ---------------------------------------------- */

static void arrays(void)
{
    CUarray a;
    CUmipmappedArray mm;
    CUDA_ARRAY_DESCRIPTOR d0 = {.Width = 0, .Height = 0, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    CUDA_ARRAY_DESCRIPTOR dfmt = {.Width = 64, .Height = 64, .Format = (CUarray_format)0x7777, .NumChannels = 1};
    CUDA_ARRAY_DESCRIPTOR dch = {.Width = 64, .Height = 64, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 3};
    CUDA_ARRAY_DESCRIPTOR dhuge = {.Width = 1 << 30, .Height = 1 << 30, .Format = CU_AD_FORMAT_FLOAT,
                                   .NumChannels = 4};
    CUDA_ARRAY3D_DESCRIPTOR e0 = {.Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    CUDA_ARRAY3D_DESCRIPTOR efmt = {.Width = 64, .Format = (CUarray_format)0x7777, .NumChannels = 1};
    CUDA_ARRAY3D_DESCRIPTOR eflags = {.Width = 64, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1,
                                      .Flags = 0x80000000u};
    CUDA_ARRAY3D_DESCRIPTOR ehuge = {.Width = 1 << 30, .Height = 1 << 30, .Depth = 1 << 30,
                                     .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CUDA_ARRAY3D_DESCRIPTOR eok = {.Width = 64, .Height = 64, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                   .NumChannels = 1};
    TRY(cuArrayCreate, "null_out", cuArrayCreate_v2, NULL, &d0);
    TRY(cuArrayCreate, "null_desc", cuArrayCreate_v2, &a, NULL);
    TRY(cuArrayCreate, "width_0", cuArrayCreate_v2, &a, &d0);
    TRY(cuArrayCreate, "bad_format", cuArrayCreate_v2, &a, &dfmt);
    TRY(cuArrayCreate, "channels_3", cuArrayCreate_v2, &a, &dch);
    TRY(cuArrayCreate, "size_huge", cuArrayCreate_v2, &a, &dhuge);
    TRY(cuArray3DCreate, "null_out", cuArray3DCreate_v2, NULL, &eok);
    TRY(cuArray3DCreate, "null_desc", cuArray3DCreate_v2, &a, NULL);
    TRY(cuArray3DCreate, "width_0", cuArray3DCreate_v2, &a, &e0);
    TRY(cuArray3DCreate, "bad_format", cuArray3DCreate_v2, &a, &efmt);
    TRY(cuArray3DCreate, "bad_flags", cuArray3DCreate_v2, &a, &eflags);
    TRY(cuArray3DCreate, "size_huge", cuArray3DCreate_v2, &a, &ehuge);
    TRY(cuMipmappedArrayCreate, "null_out", cuMipmappedArrayCreate, NULL, &eok, 2);
    TRY(cuMipmappedArrayCreate, "null_desc", cuMipmappedArrayCreate, &mm, NULL, 2);
    TRY(cuMipmappedArrayCreate, "levels_0", cuMipmappedArrayCreate, &mm, &eok, 0);
    TRY(cuMipmappedArrayCreate, "levels_99", cuMipmappedArrayCreate, &mm, &eok, 99);
    TRY(cuMipmappedArrayCreate, "width_0", cuMipmappedArrayCreate, &mm, &e0, 2);
    TRY(cuMipmappedArrayCreate, "size_huge", cuMipmappedArrayCreate, &mm, &ehuge, 1);
    TRY(cuArrayDestroy, "null", cuArrayDestroy, NULL);
    TRY(cuArrayDestroy, "bad_array", cuArrayDestroy, BAD_HANDLE);
    TRY(cuMipmappedArrayDestroy, "null", cuMipmappedArrayDestroy, NULL);
    TRY(cuMipmappedArrayDestroy, "bad_array", cuMipmappedArrayDestroy, BAD_HANDLE);
}

/* No registration with undefined flags or of unmapped memory: what the
 * driver does with them is not documented (fakecuda registers them). */
static void host_memory(void)
{
    void *hp;
    static char page[3 * 4096] __attribute__((aligned(4096)));
    TRY(cuMemHostAlloc, "null_out", cuMemHostAlloc, NULL, MiB, 0);
    TRY(cuMemHostAlloc, "size_0", cuMemHostAlloc, &hp, 0, 0);
    TRY(cuMemHostAlloc, "bad_flags", cuMemHostAlloc, &hp, MiB, 0x80);
    TRY(cuMemHostAlloc, "size_huge", cuMemHostAlloc, &hp, HUGE_SIZE, 0);
    TRY(cuMemAllocHost, "null_out", cuMemAllocHost_v2, NULL, MiB);
    TRY(cuMemAllocHost, "size_0", cuMemAllocHost_v2, &hp, 0);
    TRY(cuMemAllocHost, "size_huge", cuMemAllocHost_v2, &hp, HUGE_SIZE);
    TRY(cuMemFreeHost, "bad_pointer", cuMemFreeHost, (void *)(uintptr_t)bad);
    TRY(cuMemFreeHost, "null", cuMemFreeHost, NULL);
    TRY(cuMemFreeHost, "interior", cuMemFreeHost, (char *)pinned + 256);
    TRY(cuMemFreeHost, "device_pointer", cuMemFreeHost, (void *)(uintptr_t)dptr);
    TRY(cuMemHostRegister, "null", cuMemHostRegister_v2, NULL, 4096, 0);
    TRY(cuMemHostRegister, "size_0", cuMemHostRegister_v2, page, 0, 0);
    TRY(cuMemHostRegister, "pinned", cuMemHostRegister_v2, pinned, 4096, 0);
    OK(cuMemHostRegister(page, sizeof page, 0));
    TRY(cuMemHostRegister, "registered", cuMemHostRegister_v2, page, sizeof page, 0);
    TRY(cuMemHostRegister, "overlap", cuMemHostRegister_v2, page + 4096, 4096, 0);
    TRY(cuMemHostUnregister, "interior", cuMemHostUnregister, page + 4096);
    OK(cuMemHostUnregister(page));
    TRY(cuMemHostUnregister, "null", cuMemHostUnregister, NULL);
    TRY(cuMemHostUnregister, "unregistered", cuMemHostUnregister, page);
    TRY(cuMemHostUnregister, "pinned", cuMemHostUnregister, pinned);
}

static void sizes(void)
{
    size_t f, t;
    TRY(cuMemGetInfo, "null_both", cuMemGetInfo_v2, NULL, NULL);
    TRY(cuMemGetInfo, "null_free", cuMemGetInfo_v2, NULL, &t);
    TRY(cuMemGetInfo, "null_total", cuMemGetInfo_v2, &f, NULL);
    TRY(cuDeviceTotalMem, "null_out", cuDeviceTotalMem_v2, NULL, 0);
    TRY(cuDeviceTotalMem, "device_99", cuDeviceTotalMem_v2, &t, 99);
    TRY(cuDeviceTotalMem, "device_minus_1", cuDeviceTotalMem_v2, &t, -1);
}

int main(void)
{
    printf("badargs: main\n");
    fflush(stdout);
    resolve();
    no_context();
    setup();
    get_proc_address();
    device_memory();
    stream_ordered();
    vmm();
    pointers();
    captures();
    contexts();
    copies();
    sets();
    copies_2d();
    batch_copies();
    stream_memops();
    launches();
    tensor_maps();
    graphs();
    graph_nodes();
    memop_nodes();
    arrays();
    host_memory();
    sizes();
    /* A refused call must have written nothing: the bytes of dptr and of
     * the allocation next to it that differ from what setup wrote. */
    static unsigned char back[MiB];
    CUdeviceptr mem[] = {dptr, next_to};
    unsigned char fill[] = {0x5a, 0xa5};
    for (int i = 0; i < 2; i++) {
        OK(cuMemcpyDtoH(back, mem[i], MiB));
        size_t changed = 0;
        for (size_t k = 0; k < MiB; k++)
            changed += back[k] != fill[i];
        printf("badargs: allocation %d: %zu bytes changed\n", i, changed);
    }
    printf("badargs: done\n");
    return 0;
}
