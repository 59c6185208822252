/* spillway only: the pool as fakecuda sees it (preallocated or page by
 * page), peer access on pool mappings, and a pool set up for another
 * device without changing the program's current context. */
#include "tests/integration/pool/common.h"

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

static void need_two_devices(void)
{
    int n = 0;
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetCount(&n));
    ck_assert_msg(n >= 2, "run with FAKECUDA_DEVICES=2");
}

/* cuMemAlloc pointers are pool VAs (fakecuda maps them), with access for
 * the devices the program enabled peer access from: now and later. */
START_TEST(peer_access)
{
    if (!pooled())
        return;
    need_two_devices();
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

/* Stream-ordered memory gets its peers from its pool's access
 * (cuMemPoolSetAccess: XLA's cuda_async allocator grants each device's pool
 * to its peers so, Warp's set_mempool_access_enabled too). That memory is
 * spillway's here, so the grant reaches its mappings, now and later. */
START_TEST(pool_access_reaches_stream_ordered_memory)
{
    if (!pooled())
        return;
    use_device(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUmemoryPool pool0;
    CU_OK(cuDeviceGetDefaultMemPool(&pool0, 0));
    CUdeviceptr p, q;
    CU_OK(cuMemAllocFromPoolAsync(&p, MiB, pool0, s));
    ck_assert_uint_eq(fakecuda_access_devices(p), 1);
    CUmemAccessDesc rw = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemPoolSetAccess(pool0, &rw, 1));
    ck_assert_uint_eq(fakecuda_access_devices(p), 3);
    CU_OK(cuMemAllocAsync(&q, 16 * MiB, s));
    ck_assert_uint_eq(fakecuda_access_devices(q), 3);
    ck_assert_uint_eq(fakecuda_access_devices(q + 15 * MiB), 3);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuMemFreeAsync(q, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
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

static size_t free_now(void)
{
    size_t f = 0, t = 0;
    CU_OK(cuMemGetInfo(&f, &t));
    ck_assert_uint_eq(t, limit_bytes());
    return f;
}

/* cuMemGetInfo's free is what the pool can hand out: the limit less the
 * pages live data holds (the pool, as the driver, holds whole pages), not
 * less the bytes requested. It was the latter: after 1000 x 100 bytes
 * (four slabs on one page) 67008864 bytes were reported free, and an
 * allocation of them refused with spill off; after 32 x (1 MiB + 1), each
 * on a page of its own, half the limit was reported free and not even
 * 1 MiB could be had. With spill, the program is told the same. */
START_TEST(free_is_what_the_pool_can_hand_out)
{
    if (!pooled())
        return;
    use_device(0);
    ck_assert_uint_eq(free_now(), limit_bytes());
    CUdeviceptr small[1000], rest, big[32];
    for (int i = 0; i < 32; i++)
        CU_OK(cuMemAlloc(&big[i], MiB + 1));
    ck_assert_uint_lt(free_now(), MiB);
    for (int i = 0; i < 32; i++)
        CU_OK(cuMemFree(big[i]));
    ck_assert_uint_eq(free_now(), limit_bytes());
    for (int i = 0; i < 1000; i++)
        CU_OK(cuMemAlloc(&small[i], 100));
    size_t f = free_now();
    ck_assert_uint_eq(f, limit_bytes() - PAGE);
    CU_OK(cuMemAlloc(&rest, f));
    ck_assert_uint_eq(free_now(), 0);
    CU_OK(cuMemFree(rest));
    for (int i = 0; i < 1000; i++)
        CU_OK(cuMemFree(small[i]));
    CU_OK(cuCtxSynchronize());
    ck_assert_uint_eq(free_now(), limit_bytes());
    /* Pages that hold no live data any more (mapped still) serve again:
     * what is reported free is had, wherever the blocks sit. */
    for (int i = 0; i < 32; i++)
        CU_OK(cuMemAlloc(&big[i], MiB + 1));
    f = free_now();
    ck_assert_uint_lt(f, limit_bytes() - 32 * (MiB + 1) + 1);
    if (f)
        CU_OK(cuMemAlloc(&rest, f));
    for (int i = 0; i < 32; i++)
        CU_OK(cuMemFree(big[i]));
}
END_TEST

/* Allocating and freeing brings free back where it was, without waiting
 * for a sync: a freed block's pages are free at once, as the driver's
 * after cuMemFree, whether or not it shared them with other freed blocks
 * (sizes that end inside a page), and for cuMemFreeAsync too (the pool
 * reuses them: no memory pool keeps them). Small allocations (slab slots)
 * give their pages back once a sync covered their frees. */
START_TEST(free_comes_back_after_churn)
{
    if (!pooled())
        return;
    use_device(0);
    const size_t sizes[] = {3 * MiB + 5, MiB + 1, 5 * MiB, 20 * 1024 + 3, 700 * 1024, PAGE,
                            64 * 1024, 9 * MiB + 4096};
    enum { N = sizeof sizes / sizeof sizes[0] };
    size_t f0 = free_now();
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int round = 0; round < 6; round++) {
        CUdeviceptr p[2 * N];
        for (int i = 0; i < 2 * N; i++) {
            size_t n = sizes[(i + round) % N];
            if (round % 2)
                CU_OK(cuMemAllocAsync(&p[i], n, s));
            else
                CU_OK(cuMemAlloc(&p[i], n));
        }
        ck_assert_uint_lt(free_now(), f0);
        for (int i = 0; i < 2 * N; i++) {
            if (round % 2)
                CU_OK(cuMemFreeAsync(p[i], s));
            else
                CU_OK(cuMemFree(p[i]));
        }
        ck_assert_msg(free_now() == f0, "round %d: %zu free, %zu at the start", round, free_now(),
                      f0);
    }
    CUdeviceptr q[600];
    for (int i = 0; i < 600; i++)
        CU_OK(cuMemAlloc(&q[i], i % 2 ? 100 : 4096));
    ck_assert_uint_lt(free_now(), f0);
    for (int i = 0; i < 600; i++)
        CU_OK(cuMemFree(q[i]));
    CU_OK(cuCtxSynchronize());
    ck_assert_uint_eq(free_now(), f0);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* One thread switching between the devices' primary contexts, several
 * allocations in each in a row: every block comes from the current
 * context's device, in its count. */
START_TEST(allocations_follow_the_current_primary_context)
{
    if (!pooled())
        return;
    need_two_devices();
    CUcontext c[2] = {use_device(0), use_device(1)};
    const int order[] = {1, 1, 0, 0, 0, 1, 1, 0};
    enum { N = sizeof order / sizeof order[0] };
    CUdeviceptr p[N];
    uint64_t want[2] = {0, 0};
    for (int i = 0; i < N; i++) {
        int dev = order[i];
        CU_OK(cuCtxSetCurrent(c[dev]));
        size_t bytes = (size_t)(i + 1) * MiB;
        CU_OK(cuMemAlloc(&p[i], bytes));
        want[dev] += bytes;
        int ordinal = -1;
        CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p[i]));
        ck_assert_int_eq(ordinal, dev);
        CUcontext owner = NULL;
        CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p[i]));
        ck_assert_ptr_eq(owner, c[dev]);
    }
    for (int dev = 0; dev < 2; dev++) {
        struct spillway_counters k;
        ck_assert_int_eq(get_counters(dev, &k), 0);
        ck_assert_uint_eq(k.used, want[dev]);
    }
    for (int i = 0; i < N; i++)
        CU_OK(cuMemFree(p[i]));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("pool_devices");
    TCase *spw = tcase_create("spillway");
    tcase_set_timeout(spw, 60);
    tcase_add_test(spw, preallocation);
    tcase_add_test(spw, peer_access);
    tcase_add_test(spw, pool_access_reaches_stream_ordered_memory);
    tcase_add_test(spw, other_device_keeps_the_current_context);
    tcase_add_test(spw, free_is_what_the_pool_can_hand_out);
    tcase_add_test(spw, free_comes_back_after_churn);
    tcase_add_test(spw, allocations_follow_the_current_primary_context);
    suite_add_tcase(s, spw);
    return s;
}
