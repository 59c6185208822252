/* The page pool under spillway (LD_PRELOAD) against fakecuda: bytes survive
 * random alloc/write/free sequences, a reused block is never written by
 * work still queued on its old owner, a JAX-like VMM arena behaves as
 * without spillway, address-range and attribute answers, 32 threads,
 * preallocation on and off, peer access, pass-through counters by reason,
 * stats. pool.sh runs it under several environments, and once without
 * spillway: tests marked "both" must pass there too (same behaviour). */
#include "tests/unit/check_compat.h"

#include "shim/spillway.h"
#include "stats/reader.h"
#include "tests/fakecuda/fakecuda.h"

#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)
#define PAGE (2 * MiB)

#define CU_OK(call)                                                              \
    do {                                                                         \
        CUresult r_ = (call);                                                    \
        ck_assert_msg(r_ == CUDA_SUCCESS, "%s: error %d", #call, (int)r_);       \
    } while (0)

/* ---- environment -------------------------------------------------------- */

static int (*get_pool)(int, struct spillway_pool_counters *);
static int (*get_counters)(int, struct spillway_counters *);

/* Whether spillway serves this run (preloaded and not disabled). */
static int pooled(void)
{
    *(void **)&get_pool = dlsym(RTLD_DEFAULT, "spillway_get_pool_counters");
    *(void **)&get_counters = dlsym(RTLD_DEFAULT, "spillway_get_counters");
    const char *d = getenv("SPILLWAY_DISABLE");
    return get_pool && !(d && strcmp(d, "1") == 0);
}

static int preallocating(void)
{
    const char *v = getenv("SPILLWAY_PREALLOCATE");
    return !v || strcmp(v, "0") != 0;
}

static size_t limit_bytes(void)
{
    return 64 * MiB; /* pool.sh's SPILLWAY_MEM_LIMIT */
}

static CUcontext use_device(int dev)
{
    CUcontext c;
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&c, dev));
    CU_OK(cuCtxSetCurrent(c));
    return c;
}

static struct spillway_pool_counters pool_counters(int dev)
{
    struct spillway_pool_counters c;
    ck_assert_int_eq(get_pool(dev, &c), 0);
    return c;
}

static void fill_pattern(unsigned char *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(seed + i * 31 + (i >> 12));
}

static void put(CUdeviceptr p, size_t n, unsigned seed)
{
    unsigned char *buf = malloc(n);
    ck_assert_ptr_nonnull(buf);
    fill_pattern(buf, n, seed);
    CU_OK(cuMemcpyHtoD(p, buf, n));
    free(buf);
}

static void expect(CUdeviceptr p, size_t n, unsigned seed)
{
    unsigned char *got = malloc(n), *want = malloc(n);
    ck_assert(got && want);
    CU_OK(cuMemcpyDtoH(got, p, n));
    fill_pattern(want, n, seed);
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            ck_abort_msg("byte %zu of %zu at %#llx is %u, expected %u", i, n,
                         (unsigned long long)p, got[i], want[i]);
    free(got);
    free(want);
}

static void expect_byte(CUdeviceptr p, size_t n, unsigned char v)
{
    unsigned char *got = malloc(n);
    ck_assert_ptr_nonnull(got);
    CU_OK(cuMemcpyDtoH(got, p, n));
    for (size_t i = 0; i < n; i++)
        if (got[i] != v)
            ck_abort_msg("byte %zu of %zu is %#x, expected %#x", i, n, got[i], v);
    free(got);
}

/* ---- a slow kernel: work still queued when the program frees ----------- */

/* slow_fill(ptr, byte, n, ms): sleeps ms, then writes n bytes at ptr on the
 * stream's worker thread, as a kernel would: a reused block it still writes
 * shows as corruption, an unmapped one as SIGSEGV. */
static void slow_fill(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    CUdeviceptr p = *(CUdeviceptr *)params[0];
    unsigned v = *(unsigned *)params[1];
    size_t n = *(size_t *)params[2];
    unsigned ms = *(unsigned *)params[3];
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    memset((void *)(uintptr_t)p, (int)v, n);
}

static CUfunction slow_kernel(void)
{
    static const size_t sizes[] = {sizeof(CUdeviceptr), sizeof(unsigned), sizeof(size_t),
                                   sizeof(unsigned)};
    ck_assert_msg(fakecuda_present(), "needs fakecuda");
    ck_assert_int_eq(fakecuda_register_kernel("slow_fill", slow_fill, 4, sizes), 0);
    CUmodule m;
    CUfunction f;
    CU_OK(cuModuleLoadData(&m, "fakecuda"));
    CU_OK(cuModuleGetFunction(&f, m, "slow_fill"));
    return f;
}

static void launch_slow(CUfunction f, CUdeviceptr p, unsigned v, size_t n, unsigned ms,
                        CUstream s)
{
    void *args[] = {&p, &v, &n, &ms};
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

/* ---- random sequences (both) -------------------------------------------- */

struct blk {
    CUdeviceptr p;
    size_t n;
    unsigned seed;
};

static size_t random_size(unsigned *st)
{
    unsigned r = (unsigned)rand_r(st) % 100;
    if (r < 45)
        return 1 + (size_t)rand_r(st) % 4096;
    if (r < 75)
        return 4096 + (size_t)rand_r(st) % MiB;
    if (r < 92)
        return 1 + (size_t)rand_r(st) % (6 * MiB);
    return PAGE * (1 + (size_t)rand_r(st) % 3);
}

static void expect_range(CUdeviceptr p, size_t n)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    CU_OK(cuMemGetAddressRange(&base, &size, p + n / 2));
    ck_assert_msg(base == p && size == n, "range of %#llx+%zu: %#llx+%zu",
                  (unsigned long long)p, n, (unsigned long long)base, size);
}

static void free_blk(struct blk *b, int async, CUstream s)
{
    expect(b->p, b->n, b->seed);
    expect_range(b->p, b->n);
    CU_OK(async ? cuMemFreeAsync(b->p, s) : cuMemFree(b->p));
    b->p = 0;
}

START_TEST(random_sequences_keep_every_byte)
{
    use_device(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    enum { LIVE = 24, OPS = 500 };
    struct blk live[LIVE] = {{0}};
    unsigned st = 12345;
    for (int op = 0; op < OPS; op++) {
        struct blk *b = &live[rand_r(&st) % LIVE];
        int async = rand_r(&st) % 3 == 0;
        if (b->p) {
            free_blk(b, async, s);
            continue;
        }
        b->n = random_size(&st);
        b->seed = (unsigned)op;
        CUresult r = async ? cuMemAllocAsync(&b->p, b->n, s) : cuMemAlloc(&b->p, b->n);
        if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            b->p = 0;
            for (int i = 0; i < LIVE; i++) /* make room */
                if (live[i].p && rand_r(&st) % 2)
                    free_blk(&live[i], 0, s);
            continue;
        }
        ck_assert_int_eq(r, CUDA_SUCCESS);
        ck_assert_uint_eq(b->p % 256, 0);
        for (int i = 0; i < LIVE; i++) /* never overlapping a live block */
            ck_assert(&live[i] == b || !live[i].p || b->p + b->n <= live[i].p ||
                      live[i].p + live[i].n <= b->p);
        if (async)
            CU_OK(cuStreamSynchronize(s)); /* the copy below is on the legacy stream */
        put(b->p, b->n, b->seed);
    }
    for (int i = 0; i < LIVE; i++)
        if (live[i].p)
            free_blk(&live[i], 0, s);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuCtxSynchronize());
}
END_TEST

/* ---- reuse while work is queued (both) ---------------------------------- */

/* Freed on stream a behind slow work, wanted at once on stream b with the
 * pool full: b's block must not be the one a's kernel still writes. */
START_TEST(async_free_reused_on_another_stream)
{
    use_device(0);
    CUfunction slow = slow_kernel();
    CUstream a, b;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    size_t half = limit_bytes() / 2;
    CUdeviceptr p, filler, q;
    CU_OK(cuMemAllocAsync(&p, half, a));
    CU_OK(cuMemAlloc(&filler, half));
    launch_slow(slow, p, 0xAA, half, 150, a);
    CU_OK(cuMemFreeAsync(p, a));
    CU_OK(cuMemAllocAsync(&q, half, b));
    CU_OK(cuMemsetD8Async(q, 0x55, half, b));
    CU_OK(cuStreamSynchronize(b));
    CU_OK(cuCtxSynchronize());
    expect_byte(q, half, 0x55);
    CU_OK(cuMemFreeAsync(q, b));
    CU_OK(cuMemFree(filler));
    CU_OK(cuCtxSynchronize());
}
END_TEST

/* cuMemFree behind queued work, the pool full: the next owner gets the
 * block only after a sync point covered the kernel. */
START_TEST(sync_free_reused_after_queued_work)
{
    use_device(0);
    CUfunction slow = slow_kernel();
    CUstream a;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    size_t half = limit_bytes() / 2;
    CUdeviceptr p, filler, q;
    CU_OK(cuMemAlloc(&p, half));
    CU_OK(cuMemAlloc(&filler, half));
    launch_slow(slow, p, 0xAA, half, 150, a);
    CU_OK(cuMemFree(p));
    CU_OK(cuMemAlloc(&q, half));
    CU_OK(cuMemsetD8(q, 0x55, half));
    CU_OK(cuCtxSynchronize());
    expect_byte(q, half, 0x55);
    CU_OK(cuMemFree(q));
    CU_OK(cuMemFree(filler));
}
END_TEST

/* The same in a context the program created (not the primary one): the
 * pool's sync and its events must cover that context's streams. */
START_TEST(own_context_free_waits_for_its_work)
{
    CU_OK(cuInit(0));
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext own;
    CU_OK(cuCtxCreate(&own, &params, 0, 0));
    CUfunction slow = slow_kernel();
    CUstream a, b;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    size_t half = limit_bytes() / 2;
    CUdeviceptr p, filler, q, r;
    CU_OK(cuMemAlloc(&p, half));
    CU_OK(cuMemAlloc(&filler, half));
    launch_slow(slow, p, 0xAA, half, 150, a);
    CU_OK(cuMemFree(p));
    CU_OK(cuMemAlloc(&q, half));
    CU_OK(cuMemsetD8(q, 0x55, half));
    CU_OK(cuCtxSynchronize());
    expect_byte(q, half, 0x55);
    launch_slow(slow, q, 0xAA, half, 150, a);
    CU_OK(cuMemFreeAsync(q, a));
    CU_OK(cuMemAllocAsync(&r, half, b));
    CU_OK(cuMemsetD8Async(r, 0x66, half, b));
    CU_OK(cuCtxSynchronize());
    expect_byte(r, half, 0x66);
    CU_OK(cuMemFree(r));
    CU_OK(cuMemFree(filler));
    CU_OK(cuCtxDestroy(own));
}
END_TEST

/* Small blocks freed behind queued work, then one allocation that needs
 * every page: their pages are unmapped only after the kernel is done
 * (unmapping earlier makes fakecuda's worker fault, as a GPU would). */
START_TEST(reclaim_waits_for_queued_work)
{
    use_device(0);
    CUfunction slow = slow_kernel();
    CUstream a;
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CUdeviceptr small[8], big;
    for (int i = 0; i < 8; i++) {
        CU_OK(cuMemAlloc(&small[i], 64 * 1024 + (size_t)i * 4096));
        launch_slow(slow, small[i], 0xAA, 64 * 1024, i == 7 ? 150 : 1, a);
    }
    for (int i = 0; i < 8; i++)
        CU_OK(cuMemFree(small[i]));
    CUresult r = cuMemAlloc(&big, limit_bytes());
    if (pooled()) {
        CU_OK(r);
        CU_OK(cuMemsetD8(big, 0x55, limit_bytes()));
        CU_OK(cuCtxSynchronize());
        expect_byte(big, limit_bytes(), 0x55);
        CU_OK(cuMemFree(big));
    } else if (r == CUDA_SUCCESS) {
        CU_OK(cuMemFree(big));
    }
    CU_OK(cuCtxSynchronize());
}
END_TEST

/* ---- a JAX-like arena (both) --------------------------------------------- */

static CUmemAllocationProp device_prop(int dev)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
}

static void set_rw(CUdeviceptr va, size_t n, int dev)
{
    CUmemAccessDesc d = {{CU_MEM_LOCATION_TYPE_DEVICE, dev}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va, n, &d, 1));
}

START_TEST(jax_like_arena)
{
    use_device(0);
    size_t handles_before = fakecuda_live_handles();
    CUmemAllocationProp prop = device_prop(0);
    size_t g = 0;
    CU_OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    ck_assert_uint_eq(g, PAGE);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 32 * MiB, PAGE, 0, 0));
    CUmemGenericAllocationHandle h1, h2, again;
    CU_OK(cuMemCreate(&h1, 8 * MiB, &prop, 0));
    CU_OK(cuMemCreate(&h2, 2 * MiB, &prop, 0));
    ck_assert_int_ne(cuMemMap(va, 4 * MiB, 0, h1, 0), CUDA_SUCCESS); /* a handle maps whole */
    CU_OK(cuMemMap(va, 8 * MiB, 0, h1, 0));
    CU_OK(cuMemMap(va + 8 * MiB, 2 * MiB, 0, h2, 0));
    set_rw(va, 10 * MiB, 0);
    put(va, 10 * MiB, 7);
    expect(va, 10 * MiB, 7);
    /* The program's mappings, as the driver answers them. */
    CUdeviceptr base;
    size_t size;
    CU_OK(cuMemGetAddressRange(&base, &size, va + 9 * MiB));
    ck_assert(base == va + 8 * MiB && size == 2 * MiB);
    CU_OK(cuMemGetAddressRange(&base, &size, va + 3 * MiB));
    ck_assert(base == va && size == 8 * MiB);
    CU_OK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + MiB)));
    ck_assert(again == h1);
    CU_OK(cuMemRelease(again));
    CUmemAllocationProp got;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, h2));
    ck_assert(got.type == CU_MEM_ALLOCATION_TYPE_PINNED &&
              got.location.type == CU_MEM_LOCATION_TYPE_DEVICE && got.location.id == 0);
    /* Unmapped and mapped elsewhere, a handle keeps its bytes. */
    CU_OK(cuMemUnmap(va + 8 * MiB, 2 * MiB));
    CU_OK(cuMemMap(va + 16 * MiB, 2 * MiB, 0, h2, 0));
    set_rw(va + 16 * MiB, 2 * MiB, 0);
    unsigned char *want = malloc(10 * MiB), *back = malloc(2 * MiB);
    fill_pattern(want, 10 * MiB, 7);
    CU_OK(cuMemcpyDtoH(back, va + 16 * MiB, 2 * MiB));
    ck_assert(memcmp(back, want + 8 * MiB, 2 * MiB) == 0);
    free(want);
    free(back);
    /* Released while mapped: alive until unmapped (as the driver). */
    CU_OK(cuMemRelease(h1));
    expect(va, 8 * MiB, 7);
    CU_OK(cuMemUnmap(va, 8 * MiB));
    CU_OK(cuMemUnmap(va + 16 * MiB, 2 * MiB));
    CU_OK(cuMemRelease(h2));
    ck_assert_int_eq(cuMemRelease(h2), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAddressFree(va, 32 * MiB));
    if (pooled()) {
        /* Pool pages, not driver handles of the program's own. */
        ck_assert_uint_le(fakecuda_live_handles(), handles_before + limit_bytes() / PAGE);
        ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
        struct spillway_counters c;
        ck_assert_int_eq(get_counters(0, &c), 0);
        ck_assert_uint_eq(c.used, 0);
        ck_assert_uint_ge(c.peak, 10 * MiB);
    } else {
        ck_assert_uint_eq(fakecuda_live_handles(), handles_before);
    }
}
END_TEST

/* ---- address range and attributes (both) ------------------------------- */

START_TEST(address_range_and_attributes)
{
    CUcontext ctx = use_device(0);
    CUdeviceptr p, q;
    CU_OK(cuMemAlloc(&p, 1000));
    CU_OK(cuMemAlloc(&q, 3 * MiB + 5));
    CUdeviceptr base;
    size_t size;
    CU_OK(cuMemGetAddressRange(&base, &size, p + 999));
    ck_assert(base == p && size == 1000);
    CU_OK(cuMemGetAddressRange(NULL, &size, q + 3 * MiB));
    ck_assert_uint_eq(size, 3 * MiB + 5);
    unsigned type = 0, managed = 9, mapped = 0;
    int ordinal = -1;
    CUcontext owner = NULL;
    CUdeviceptr start = 0, devptr = 0;
    size_t rsize = 0;
    unsigned long long id_p = 0, id_q = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 10));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    ck_assert_int_eq(ordinal, 0);
    CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p));
    ck_assert_ptr_eq(owner, ctx);
    CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, q + 77));
    CU_OK(cuPointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, q + 77));
    ck_assert(start == q && rsize == 3 * MiB + 5);
    CU_OK(cuPointerGetAttribute(&id_p, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    CU_OK(cuPointerGetAttribute(&id_q, CU_POINTER_ATTRIBUTE_BUFFER_ID, q));
    ck_assert(id_p && id_q && id_p != id_q);
    void *host = (void *)1;
    ck_assert_int_eq(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p),
                     CUDA_ERROR_INVALID_VALUE);
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_MAPPED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void *data[] = {&managed, &mapped, &devptr, &ordinal};
    ordinal = -1;
    CU_OK(cuPointerGetAttributes(4, attrs, data, q + 1));
    ck_assert(managed == 0 && mapped == 1 && devptr == q + 1 && ordinal == 0);
    if (pooled()) {
        /* As the runtime's cudaPointerGetAttributes asks (the real driver
         * answers NULL; fakecuda's plural call fails instead). */
        CUpointer_attribute rt[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
        void *rtdata[] = {&type, &host, &ordinal};
        CU_OK(cuPointerGetAttributes(3, rt, rtdata, q));
        ck_assert(type == CU_MEMORYTYPE_DEVICE && host == NULL && ordinal == 0);
    }
    /* Freed: unknown memory, with the driver's answers. */
    CU_OK(cuMemFree(p));
    ck_assert_int_eq(cuMemGetAddressRange(&base, &size, p), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
                     CUDA_ERROR_INVALID_VALUE);
    ordinal = 5;
    CU_OK(cuPointerGetAttributes(4, attrs, data, p));
    ck_assert(mapped == 0 && devptr == 0 && ordinal == -2);
    ck_assert_int_eq(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemFree(q + 8), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(q));
}
END_TEST

/* ---- 32 threads (both) --------------------------------------------------- */

static void *stress_thread(void *arg)
{
    unsigned st = (unsigned)(uintptr_t)arg;
    CUcontext c;
    if (cuDevicePrimaryCtxRetain(&c, 0) != CUDA_SUCCESS || cuCtxSetCurrent(c) != CUDA_SUCCESS)
        return (void *)"context";
    CUstream s;
    if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        return (void *)"stream";
    unsigned char buf[8192], back[8192];
    for (int i = 0; i < 60; i++) {
        size_t n = 1 + (size_t)rand_r(&st) % sizeof buf;
        if (rand_r(&st) % 8 == 0)
            n = 64 * 1024 + (size_t)rand_r(&st) % (512 * 1024); /* larger, checked in part */
        size_t check = n < sizeof buf ? n : sizeof buf;
        int async = rand_r(&st) % 2;
        CUdeviceptr p;
        CUresult r = async ? cuMemAllocAsync(&p, n, s) : cuMemAlloc(&p, n);
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            continue;
        if (r != CUDA_SUCCESS)
            return (void *)"alloc";
        if (async && cuStreamSynchronize(s) != CUDA_SUCCESS)
            return (void *)"sync";
        fill_pattern(buf, check, st);
        if (cuMemcpyHtoD(p + n - check, buf, check) != CUDA_SUCCESS ||
            cuMemcpyDtoH(back, p + n - check, check) != CUDA_SUCCESS)
            return (void *)"copy";
        if (memcmp(buf, back, check) != 0)
            return (void *)"bytes differ";
        if ((async ? cuMemFreeAsync(p, s) : cuMemFree(p)) != CUDA_SUCCESS)
            return (void *)"free";
    }
    cuStreamSynchronize(s);
    cuStreamDestroy(s);
    return NULL;
}

START_TEST(threads_32)
{
    use_device(0);
    pthread_t t[32];
    for (int i = 0; i < 32; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, stress_thread, (void *)(uintptr_t)(i + 1)), 0);
    for (int i = 0; i < 32; i++) {
        void *err;
        pthread_join(t[i], &err);
        ck_assert_msg(err == NULL, "thread %d: %s", i, (const char *)err);
    }
    CU_OK(cuCtxSynchronize());
    if (pooled()) {
        struct spillway_counters c;
        ck_assert_int_eq(get_counters(0, &c), 0);
        ck_assert_uint_eq(c.used, 0);
        ck_assert_uint_eq(c.allocs, c.frees);
        ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
    }
}
END_TEST

/* ---- spillway only -------------------------------------------------------- */

/* fakecuda sees the pool: the limit's pages at first use when preallocating
 * (and never more), a page at a time otherwise. */
START_TEST(preallocation)
{
    if (!pooled())
        return;
    use_device(0);
    size_t before = fakecuda_device_bytes_used(0);
    CUdeviceptr p[16];
    CU_OK(cuMemAlloc(&p[0], MiB));
    size_t first = fakecuda_device_bytes_used(0) - before;
    if (preallocating())
        ck_assert_uint_eq(first, limit_bytes());
    else
        ck_assert_uint_eq(first, PAGE);
    for (int i = 1; i < 16; i++)
        CU_OK(cuMemAlloc(&p[i], 3 * MiB));
    size_t later = fakecuda_device_bytes_used(0) - before;
    if (preallocating())
        ck_assert_uint_eq(later, limit_bytes());
    else
        ck_assert(later > first && later <= limit_bytes());
    ck_assert_uint_eq(pool_counters(0).pool_bytes, later);
    size_t f = 0, t = 0;
    CU_OK(cuMemGetInfo(&f, &t));
    ck_assert_uint_eq(t, limit_bytes());
    ck_assert_uint_eq(f, limit_bytes() - MiB - 15 * 3 * MiB);
    for (int i = 0; i < 16; i++)
        CU_OK(cuMemFree(p[i]));
    CU_OK(cuMemGetInfo(&f, &t));
    ck_assert_uint_eq(f, limit_bytes());
    ck_assert_uint_eq(fakecuda_device_bytes_used(0) - before, later); /* pages are kept */
}
END_TEST

/* cuMemAlloc pointers are pool VAs (fakecuda maps them), with access for
 * the devices the program enabled peer access from: now and later. */
START_TEST(peer_access)
{
    if (!pooled())
        return;
    int n = 0;
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetCount(&n));
    ck_assert_msg(n >= 2, "run with FAKECUDA_DEVICES=2");
    CUcontext c1 = use_device(1);
    CUdeviceptr on1;
    CU_OK(cuMemAlloc(&on1, MiB)); /* device 1's pool first */
    CUcontext c0 = use_device(0);
    CUdeviceptr p, q;
    CU_OK(cuMemAlloc(&p, MiB));
    ck_assert_uint_eq(fakecuda_access_devices(p), 1);
    /* From device 1, access to device 0's memory. */
    CU_OK(cuCtxSetCurrent(c1));
    CU_OK(cuCtxEnablePeerAccess(c0, 0));
    ck_assert_uint_eq(fakecuda_access_devices(p), 3);
    ck_assert_uint_eq(fakecuda_access_devices(on1), 2); /* device 1's own: unchanged */
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuMemAlloc(&q, 16 * MiB));
    ck_assert_uint_eq(fakecuda_access_devices(q), 3);
    ck_assert_uint_eq(fakecuda_access_devices(q + 15 * MiB), 3);
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(q));
}
END_TEST

/* A handle created for device 1 while device 0's context is current: the
 * pool of device 1 is set up in device 1's primary context (pushed for it),
 * and the program's current context is left as it was. */
START_TEST(other_device_keeps_the_current_context)
{
    if (!pooled())
        return;
    CUcontext c0 = use_device(0);
    size_t before1 = fakecuda_device_bytes_used(1);
    CUmemAllocationProp prop = device_prop(1);
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, 4 * MiB, &prop, 0));
    CUcontext cur = NULL;
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, c0);
    size_t grown = fakecuda_device_bytes_used(1) - before1;
    ck_assert_uint_eq(grown, preallocating() ? limit_bytes() : 4 * MiB);
    CUdeviceptr va, p;
    CU_OK(cuMemAddressReserve(&va, 4 * MiB, PAGE, 0, 0));
    CU_OK(cuMemMap(va, 4 * MiB, 0, h, 0));
    set_rw(va, 4 * MiB, 1);
    put(va, 4 * MiB, 3);
    expect(va, 4 * MiB, 3);
    int ordinal = -1;
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va + MiB));
    ck_assert_int_eq(ordinal, 1);
    CU_OK(cuMemAlloc(&p, MiB)); /* still device 0's */
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    ck_assert_int_eq(ordinal, 0);
    CU_OK(cuMemUnmap(va, 4 * MiB));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, 4 * MiB));
    CU_OK(cuMemFree(p));
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, c0);
}
END_TEST

static int read_stats(struct spw_stats_snapshot *snap)
{
    const char *dir = getenv("SPILLWAY_STATS_DIR");
    if (!dir)
        return -1;
    char name[64];
    snprintf(name, sizeof name, "spillway.%u.%d", (unsigned)getuid(), (int)getpid());
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    char why[256];
    int removed = 0;
    enum spw_read_result r = spw_stats_read_at(fd, name, 0, snap, &removed, why, sizeof why);
    close(fd);
    return r == SPW_READ_OK ? 0 : -1;
}

/* What cannot be pool memory passes through, counted by reason, in the
 * counters and the stats segment (pool-served vs pass-through bytes). */
START_TEST(passthrough_by_reason)
{
    if (!pooled())
        return;
    use_device(0);
    CUdeviceptr pooled_p, managed, captured;
    CU_OK(cuMemAlloc(&pooled_p, 5 * MiB));
    size_t before = fakecuda_device_bytes_used(0);
    uint64_t pool_before = pool_counters(0).pool_bytes;
    CU_OK(cuMemAllocManaged(&managed, 3 * MiB, CU_MEM_ATTACH_GLOBAL));
    CUmemAllocationProp ipc = device_prop(0);
    ipc.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle h, hh;
    CU_OK(cuMemCreate(&h, 2 * MiB, &ipc, 0));
    CUmemAllocationProp host = device_prop(0);
    host.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CU_OK(cuMemCreate(&hh, 2 * MiB, &host, 0));
    /* A shareable handle is pooled until its export makes it the driver's:
     * mapped, answered as asked, the same bytes after. */
    CUmemAllocationProp got;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, h));
    ck_assert_int_eq(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUdeviceptr va, base;
    size_t size;
    CU_OK(cuMemAddressReserve(&va, 2 * MiB, PAGE, 0, 0));
    CU_OK(cuMemMap(va, 2 * MiB, 0, h, 0));
    set_rw(va, 2 * MiB, 0);
    put(va, 2 * MiB, 9);
    expect(va, 2 * MiB, 9);
    ck_assert_uint_eq(pool_counters(0).passthrough_count[SPILLWAY_PT_IPC], 0);
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    ck_assert_int_eq(close(fd), 0);
    expect(va, 2 * MiB, 9);
    CU_OK(cuMemGetAddressRange(&base, &size, va + 5));
    ck_assert(base == va && size == 2 * MiB);
    CU_OK(cuMemUnmap(va, 2 * MiB));
    CU_OK(cuMemAddressFree(va, 2 * MiB));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    ck_assert_int_eq(fakecuda_set_capturing(s, 1), 0);
    CU_OK(cuMemAllocAsync(&captured, MiB, s));
    /* All of it the driver's own memory, beyond the pool (which kept the
     * page the handle had before its export). */
    struct spillway_pool_counters pc = pool_counters(0);
    ck_assert_uint_eq(fakecuda_device_bytes_used(0) - before,
                      3 * MiB + 2 * MiB + MiB + (pc.pool_bytes - pool_before));
    ck_assert(pc.passthrough_count[SPILLWAY_PT_MANAGED] == 1 &&
              pc.passthrough_bytes[SPILLWAY_PT_MANAGED] == 3 * MiB);
    ck_assert(pc.passthrough_count[SPILLWAY_PT_IPC] == 1 &&
              pc.passthrough_bytes[SPILLWAY_PT_IPC] == 2 * MiB);
    ck_assert(pc.passthrough_count[SPILLWAY_PT_CAPTURE] == 1 &&
              pc.passthrough_bytes[SPILLWAY_PT_CAPTURE] == MiB);
    ck_assert(pc.passthrough_count[SPILLWAY_PT_HOST_LOCATION] == 1 &&
              pc.passthrough_bytes[SPILLWAY_PT_HOST_LOCATION] == 2 * MiB);
    ck_assert_uint_eq(pc.in_use_bytes, 5 * MiB);
    /* One byte count against the limit: pool and device pass-through. */
    struct spillway_counters c;
    ck_assert_int_eq(get_counters(0, &c), 0);
    ck_assert_uint_eq(c.used, 5 * MiB + 3 * MiB + 2 * MiB + MiB);
    size_t f, t;
    CU_OK(cuMemGetInfo(&f, &t));
    ck_assert_uint_eq(f, limit_bytes() - c.used);
    struct spw_stats_snapshot snap;
    ck_assert_int_eq(read_stats(&snap), 0);
    ck_assert_uint_eq(snap.c[0][SPW_C_IN_USE], c.used);
    ck_assert_uint_eq(snap.c[0][SPW_C_POOL], pc.pool_bytes);
    ck_assert_uint_eq(snap.c[0][SPW_C_PASS_MANAGED], 3 * MiB);
    ck_assert_uint_eq(snap.c[0][SPW_C_PASS_IPC], 2 * MiB);
    ck_assert_uint_eq(snap.c[0][SPW_C_PASS_CAPTURE], MiB);
    /* Freed: the gauges go back, the totals stay. */
    CU_OK(cuMemFreeAsync(captured, s));
    ck_assert_int_eq(fakecuda_set_capturing(s, 0), 0);
    CU_OK(cuMemFree(managed));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemRelease(hh));
    CU_OK(cuMemFree(pooled_p));
    CU_OK(cuCtxSynchronize());
    ck_assert_int_eq(read_stats(&snap), 0);
    ck_assert(snap.c[0][SPW_C_IN_USE] == 0 && snap.c[0][SPW_C_PASS_MANAGED] == 0 &&
              snap.c[0][SPW_C_PASS_IPC] == 0 && snap.c[0][SPW_C_PASS_CAPTURE] == 0 &&
              snap.c[0][SPW_C_UNDERFLOWS] == 0);
    ck_assert_uint_eq(pool_counters(0).passthrough_count[SPILLWAY_PT_MANAGED], 1);
}
END_TEST

/* cuMemAllocFromPoolAsync is served from spillway's pool whatever pool the
 * program names (that pool's own figures do not show it). */
START_TEST(from_pool_async_is_pool_served)
{
    if (!pooled())
        return;
    use_device(0);
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool mp;
    CU_OK(cuMemPoolCreate(&mp, &props));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 1)); /* the device's pool exists */
    CU_OK(cuMemFree(p));
    size_t before = fakecuda_device_bytes_used(0);
    CU_OK(cuMemAllocFromPoolAsync(&p, 5 * MiB, mp, s));
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, 5 * MiB);
    if (preallocating())
        ck_assert_uint_eq(fakecuda_device_bytes_used(0), before);
    CU_OK(cuMemsetD8Async(p, 0x33, 5 * MiB, s));
    CU_OK(cuStreamSynchronize(s));
    expect_byte(p, 5 * MiB, 0x33);
    cuuint64_t used = 1;
    CU_OK(cuMemPoolGetAttribute(mp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    ck_assert_uint_eq(used, 0);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemPoolDestroy(mp));
}
END_TEST

/* The limit holds for the pool and pass-through together; with spill on,
 * the pool's allocation past it is served (its device pages never pass the
 * limit) and pass-through memory is what the cap still refuses. */
START_TEST(limit_covers_pool_and_passthrough)
{
    if (!pooled())
        return;
    use_device(0);
    const char *spill = getenv("SPILLWAY_SPILL");
    bool spilling = !spill || strcmp(spill, "0") != 0;
    CUdeviceptr managed, p, m2;
    CU_OK(cuMemAllocManaged(&managed, 40 * MiB, CU_MEM_ATTACH_GLOBAL));
    if (spilling) {
        CU_OK(cuMemAlloc(&p, 32 * MiB));
        ck_assert_int_eq(cuMemAllocManaged(&m2, 32 * MiB, CU_MEM_ATTACH_GLOBAL),
                         CUDA_ERROR_OUT_OF_MEMORY);
        CU_OK(cuMemFree(p));
    } else {
        ck_assert_int_eq(cuMemAlloc(&p, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    }
    CU_OK(cuMemAlloc(&p, 16 * MiB));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(managed));
    CU_OK(cuMemAlloc(&p, limit_bytes()));
    CU_OK(cuMemFree(p));
}
END_TEST

/* With SPILLWAY_DISABLE=1 nothing is pool memory. */
START_TEST(disabled_passes_everything)
{
    const char *d = getenv("SPILLWAY_DISABLE");
    if (!d || strcmp(d, "1") != 0)
        return;
    use_device(0);
    size_t before = fakecuda_device_bytes_used(0);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, MiB));
    ck_assert_uint_eq(fakecuda_device_bytes_used(0) - before, MiB);
    struct spillway_pool_counters pc;
    if (get_pool && get_pool(0, &pc) == 0)
        ck_assert_uint_eq(pc.pool_bytes, 0);
    CU_OK(cuMemFree(p));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *both = tcase_create("both");
    tcase_set_timeout(both, 60);
    tcase_add_test(both, random_sequences_keep_every_byte);
    tcase_add_test(both, async_free_reused_on_another_stream);
    tcase_add_test(both, sync_free_reused_after_queued_work);
    tcase_add_test(both, reclaim_waits_for_queued_work);
    tcase_add_test(both, own_context_free_waits_for_its_work);
    tcase_add_test(both, jax_like_arena);
    tcase_add_test(both, address_range_and_attributes);
    tcase_add_test(both, threads_32);
    suite_add_tcase(s, both);
    TCase *pool = tcase_create("spillway");
    tcase_set_timeout(pool, 60);
    tcase_add_test(pool, preallocation);
    tcase_add_test(pool, peer_access);
    tcase_add_test(pool, other_device_keeps_the_current_context);
    tcase_add_test(pool, passthrough_by_reason);
    tcase_add_test(pool, limit_covers_pool_and_passthrough);
    tcase_add_test(pool, from_pool_async_is_pool_served);
    tcase_add_test(pool, disabled_passes_everything);
    suite_add_tcase(s, pool);
    return s;
}
