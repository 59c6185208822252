/* A memory pool's usage attributes (cuMemPoolGetAttribute's USED_MEM_* and
 * RESERVED_MEM_*) show what the program allocated from it, also when
 * spillway serves the pool: PyTorch's cudaMallocAsync backend builds
 * memory_allocated/memory_reserved from them, XLA's cuda_async allocator
 * its stats. Sizes here are 4 KiB multiples above the slab sizes, so that
 * fakecuda's own pools (which charge whole host pages) and spillway's
 * figures agree in the "both" cases; async frees are followed by a sync of
 * their stream, after which the driver's figures have dropped too. */
#include "tests/integration/pool/common.h"

#include <pthread.h>

struct figures {
    cuuint64_t used, used_high, reserved, reserved_high;
};

static struct figures figures_of(CUmemoryPool pool)
{
    struct figures f;
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &f.used));
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &f.used_high));
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &f.reserved));
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &f.reserved_high));
    ck_assert_uint_ge(f.reserved, f.used);
    ck_assert_uint_ge(f.used_high, f.used);
    ck_assert_uint_ge(f.reserved_high, f.reserved);
    return f;
}

/* "They can be reset to the current value": the only value accepted is 0. */
static void reset_highs(CUmemoryPool pool)
{
    cuuint64_t zero = 0;
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero));
    struct figures f = figures_of(pool);
    ck_assert_uint_eq(f.used_high, f.used);
    ck_assert_uint_eq(f.reserved_high, f.reserved);
}

/* used and reserved both at bytes (4 KiB multiples: no rounding on either
 * side), the highs at high. */
static void expect_figures(CUmemoryPool pool, cuuint64_t bytes, cuuint64_t high)
{
    struct figures f = figures_of(pool);
    ck_assert_msg(f.used == bytes && f.reserved == bytes,
                  "used %llu reserved %llu, expected %llu", (unsigned long long)f.used,
                  (unsigned long long)f.reserved, (unsigned long long)bytes);
    ck_assert_msg(f.used_high == high && f.reserved_high == high,
                  "used high %llu reserved high %llu, expected %llu", (unsigned long long)f.used_high,
                  (unsigned long long)f.reserved_high, (unsigned long long)high);
}

static CUmemoryPool device_pool(int dev)
{
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    CUmemoryPool pool;
    CU_OK(cuMemPoolCreate(&pool, &props));
    return pool;
}

/* cuMemAllocAsync from the default pool, freed async on its stream, on
 * another stream, and with cuMemFree; the highs and their reset; a trim. */
START_TEST(default_pool_shows_its_allocations)
{
    use_device(0);
    CUmemoryPool pool;
    CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    reset_highs(pool);
    expect_figures(pool, 0, 0);
    CUstream s, t;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
    const size_t a = 8 * MiB, b = 3 * MiB + 4096, c = 20 * 1024;
    CUdeviceptr pa, pb, pc;
    CU_OK(cuMemAllocAsync(&pa, a, s));
    CU_OK(cuMemAllocAsync(&pb, b, NULL));
    CU_OK(cuMemAllocAsync(&pc, c, t));
    expect_figures(pool, a + b + c, a + b + c);
    CU_OK(cuMemFreeAsync(pa, t)); /* another stream than its allocation's */
    CU_OK(cuStreamSynchronize(t));
    expect_figures(pool, b + c, a + b + c);
    CU_OK(cuMemFree(pb)); /* synchronous free of a stream-ordered allocation */
    expect_figures(pool, c, a + b + c);
    reset_highs(pool);
    expect_figures(pool, c, c);
    CU_OK(cuMemPoolTrimTo(pool, 0)); /* nothing of a live allocation goes */
    expect_figures(pool, c, c);
    CU_OK(cuMemFreeAsync(pc, t)); /* its own stream */
    CU_OK(cuStreamSynchronize(t));
    expect_figures(pool, 0, c);
    CU_OK(cuMemPoolTrimTo(pool, 0));
    reset_highs(pool);
    expect_figures(pool, 0, 0);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuStreamDestroy(t));
}
END_TEST

/* Each pool shows its own allocations only: a created pool's (from
 * cuMemAllocFromPoolAsync, and from cuMemAllocAsync while it is the
 * device's current pool), not the default pool's, nor another device's. */
START_TEST(created_pool_shows_its_own_allocations)
{
    use_device(0);
    CUmemoryPool dflt, dflt1, pool = device_pool(0);
    CU_OK(cuDeviceGetDefaultMemPool(&dflt, 0));
    CU_OK(cuDeviceGetDefaultMemPool(&dflt1, 1));
    reset_highs(dflt);
    reset_highs(dflt1);
    struct figures d0 = figures_of(dflt), d1 = figures_of(dflt1);
    expect_figures(pool, 0, 0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    const size_t a = 6 * MiB, b = 2 * MiB, c = 5 * MiB;
    CUdeviceptr pa, pb, pc, pd;
    CU_OK(cuMemAllocFromPoolAsync(&pa, a, pool, s));
    CU_OK(cuDeviceSetMemPool(0, pool));
    CU_OK(cuMemAllocAsync(&pb, b, s));
    CU_OK(cuDeviceSetMemPool(0, dflt));
    CU_OK(cuMemAllocAsync(&pc, c, s));
    expect_figures(pool, a + b, a + b);
    expect_figures(dflt, d0.used + c, d0.used + c);
    expect_figures(dflt1, d1.used, d1.used);
    CU_OK(cuMemFreeAsync(pa, s));
    CU_OK(cuMemFreeAsync(pc, s));
    CU_OK(cuStreamSynchronize(s));
    expect_figures(pool, b, a + b);
    expect_figures(dflt, d0.used, d0.used + c);
    /* Another device's pool, from a stream of this device's context. */
    CUmemoryPool pool1 = device_pool(1);
    CU_OK(cuMemAllocFromPoolAsync(&pd, a, pool1, s));
    expect_figures(pool1, a, a);
    expect_figures(pool, b, a + b);
    cuuint64_t one = 1;
    ck_assert_int_eq(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &one), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &one),
                     CUDA_ERROR_INVALID_VALUE);
    expect_figures(pool, b, a + b); /* a refused reset changes nothing */
    reset_highs(pool);
    CU_OK(cuMemPoolTrimTo(pool, 0));
    expect_figures(pool, b, b);
    CU_OK(cuMemFree(pb));
    CU_OK(cuMemFreeAsync(pd, s));
    CU_OK(cuStreamSynchronize(s));
    expect_figures(pool, 0, b);
    expect_figures(pool1, 0, a);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuMemPoolDestroy(pool1));
}
END_TEST

/* A pool destroyed while an allocation from it lives: the allocation's
 * free later counts against no other pool (one made afterwards may get
 * its place, or its handle). */
START_TEST(destroyed_pools_allocation_counts_against_no_other)
{
    use_device(0);
    CUmemoryPool old = device_pool(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p, q;
    CU_OK(cuMemAllocFromPoolAsync(&p, 4 * MiB, old, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(old));
    CUmemoryPool fresh = device_pool(0);
    expect_figures(fresh, 0, 0);
    CU_OK(cuMemAllocFromPoolAsync(&q, 2 * MiB, fresh, s));
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    expect_figures(fresh, 2 * MiB, 2 * MiB);
    CU_OK(cuMemFreeAsync(q, s));
    CU_OK(cuStreamSynchronize(s));
    expect_figures(fresh, 0, 2 * MiB);
    CU_OK(cuMemPoolDestroy(fresh));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* Pools spillway does not stand in for (exportable, host-located) are the
 * driver's: their figures are the driver's own. */
START_TEST(pools_left_to_the_driver_answer_the_drivers_figures)
{
    use_device(0);
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemoryPool shared, host;
    CU_OK(cuMemPoolCreate(&shared, &props));
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CU_OK(cuMemPoolCreate(&host, &props));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p, q;
    CU_OK(cuMemAllocFromPoolAsync(&p, 3 * MiB, shared, s));
    CU_OK(cuMemAllocFromPoolAsync(&q, 5 * MiB, host, s));
    expect_figures(shared, 3 * MiB, 3 * MiB);
    expect_figures(host, 5 * MiB, 5 * MiB);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuMemFreeAsync(q, s));
    CU_OK(cuStreamSynchronize(s));
    expect_figures(shared, 0, 3 * MiB);
    expect_figures(host, 0, 5 * MiB);
    reset_highs(shared);
    reset_highs(host);
    CU_OK(cuMemPoolDestroy(shared));
    CU_OK(cuMemPoolDestroy(host));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* Threads allocating from one pool at once, each on a stream of its own
 * and freeing on it (PyTorch's cudaMallocAsync backend: one allocation per
 * tensor): the figures neither drift nor lose a high mark. */
struct churn {
    CUcontext ctx;
    CUmemoryPool pool;
    unsigned seed;
    int err;
};

static void *churn_thread(void *arg)
{
    struct churn *c = arg;
    CUstream s;
    CUdeviceptr p[4] = {0};
    if (cuCtxSetCurrent(c->ctx) != CUDA_SUCCESS || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        c->err = 1;
        return NULL;
    }
    for (unsigned i = 0; i < 400 && !c->err; i++) {
        unsigned k = i % 4;
        if (p[k] && cuMemFreeAsync(p[k], s) != CUDA_SUCCESS)
            c->err = 2;
        c->seed = c->seed * 1103515245u + 12345u;
        size_t bytes = (size_t)(5 + (c->seed >> 16) % 60) * 4096; /* 20 KiB .. 256 KiB */
        if (!c->err && cuMemAllocFromPoolAsync(&p[k], bytes, c->pool, s) != CUDA_SUCCESS)
            c->err = 3;
    }
    for (int k = 0; k < 4; k++)
        if (p[k] && cuMemFreeAsync(p[k], s) != CUDA_SUCCESS)
            c->err = 4;
    if (cuStreamSynchronize(s) != CUDA_SUCCESS || cuStreamDestroy(s) != CUDA_SUCCESS)
        c->err = 5;
    return NULL;
}

START_TEST(threads_churning_one_pool_leave_it_empty)
{
    CUcontext ctx = use_device(0);
    CUmemoryPool pool = device_pool(0);
    enum { T = 4 };
    pthread_t t[T];
    struct churn c[T];
    for (int i = 0; i < T; i++) {
        c[i] = (struct churn){.ctx = ctx, .pool = pool, .seed = 7u + (unsigned)i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, churn_thread, &c[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(c[i].err, 0);
    }
    struct figures f = figures_of(pool);
    ck_assert_uint_eq(f.used, 0);
    ck_assert_uint_eq(f.reserved, 0);
    ck_assert_uint_ge(f.used_high, 4 * 20 * 1024); /* at least one thread's four */
    if (pooled()) /* spillway uncounts at the free; the driver when the stream reaches it */
        ck_assert_uint_le(f.used_high, (size_t)T * 4 * 256 * 1024);
    CU_OK(cuMemPoolDestroy(pool));
}
END_TEST

/* Under spillway: a small allocation is used at its requested size and
 * reserved at its slab slot's; the driver's figures are spillway's added
 * to the driver's own (none here: spillway served everything). */
START_TEST(small_allocations_reserve_their_slot)
{
    if (!pooled())
        return;
    use_device(0);
    CUmemoryPool pool = device_pool(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p[4];
    for (int i = 0; i < 4; i++)
        CU_OK(cuMemAllocFromPoolAsync(&p[i], 1000, pool, s));
    struct figures f = figures_of(pool);
    ck_assert_uint_eq(f.used, 4000);
    ck_assert_uint_eq(f.reserved, 4 * 1024); /* the 1 KiB size class */
    ck_assert_uint_eq(f.used_high, 4000);
    ck_assert_uint_eq(f.reserved_high, 4 * 1024);
    for (int i = 0; i < 4; i++)
        CU_OK(cuMemFreeAsync(p[i], s));
    f = figures_of(pool);
    ck_assert_uint_eq(f.used, 0);
    ck_assert_uint_eq(f.reserved, 0);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* "CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: Returns the mempool handle for the
 * allocation if it was allocated from a mempool. Otherwise returns NULL."
 * Stream-ordered memory names its pool, at its start and inside it (also
 * the default pool's, through cuMemAllocAsync); cuMemAlloc memory none. */
static CUmemoryPool pool_of(CUdeviceptr p)
{
    CUmemoryPool owner = (CUmemoryPool)(uintptr_t)1;
    CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
    return owner;
}

START_TEST(stream_ordered_memory_names_its_pool)
{
    use_device(0);
    CUmemoryPool dflt, pool = device_pool(0);
    CU_OK(cuDeviceGetDefaultMemPool(&dflt, 0));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    const size_t big = 3 * MiB + 4096, small = 20 * 1024;
    CUdeviceptr pa, pb, pc, pd;
    CU_OK(cuMemAllocFromPoolAsync(&pa, big, pool, s));
    CU_OK(cuMemAllocFromPoolAsync(&pb, small, pool, s));
    CU_OK(cuMemAllocAsync(&pc, big, s));
    CU_OK(cuMemAlloc(&pd, big));
    ck_assert_ptr_eq(pool_of(pa), pool);
    ck_assert_ptr_eq(pool_of(pa + big - 1), pool);
    ck_assert_ptr_eq(pool_of(pb + 100), pool);
    ck_assert_ptr_eq(pool_of(pc + MiB), dflt);
    ck_assert_ptr_eq(pool_of(pd), NULL);
    CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE;
    CUmemoryPool many = NULL;
    void *data[] = {&many};
    CU_OK(cuPointerGetAttributes(1, &attr, data, pa + 4096));
    ck_assert_ptr_eq(many, pool);
    CU_OK(cuMemFreeAsync(pa, s));
    CU_OK(cuMemFreeAsync(pb, s));
    CU_OK(cuMemFreeAsync(pc, s));
    CU_OK(cuMemFree(pd));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("pool_attrs");
    TCase *both = tcase_create("both");
    tcase_set_timeout(both, 60);
    tcase_add_test(both, default_pool_shows_its_allocations);
    tcase_add_test(both, created_pool_shows_its_own_allocations);
    tcase_add_test(both, destroyed_pools_allocation_counts_against_no_other);
    tcase_add_test(both, pools_left_to_the_driver_answer_the_drivers_figures);
    tcase_add_test(both, threads_churning_one_pool_leave_it_empty);
    tcase_add_test(both, stream_ordered_memory_names_its_pool);
    suite_add_tcase(s, both);
    TCase *sp = tcase_create("spillway");
    tcase_add_test(sp, small_allocations_reserve_their_slot);
    suite_add_tcase(s, sp);
    return s;
}
