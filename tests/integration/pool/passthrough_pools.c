/* The pass-through suite (test_passthrough.c): stream-ordered allocations
 * from a pool the program names, or made current, are pool-served for a
 * device pool, on the pool's device, and the driver's for a pool spillway
 * cannot stand in for (host, exportable, capped). */
#include "tests/integration/pool/passthrough.h"

#include <stdint.h>
#include <string.h>

/* cuMemAllocFromPoolAsync is served from spillway's pool for a device pool
 * the program names (the driver's pool holds none of it; its usage
 * attributes show it all the same) ... */
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
    cuuint64_t used = 0; /* spillway's, not the driver's pool: pool_use.c */
    CU_OK(cuMemPoolGetAttribute(mp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    ck_assert_uint_eq(used, 5 * MiB);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, 0);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemPoolDestroy(mp));
}
END_TEST

/* ... but from its own device's pool for a pool of another device, and
 * not at all from a pool whose memory spillway cannot stand in for: a host
 * pool's memory is pinned host memory the CPU reads, an exportable pool's
 * pointers are the program's to export. */
START_TEST(from_pool_async_follows_its_pool)
{
    if (!pooled())
        return;
    use_device(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 1)); /* the devices' pools exist */
    CU_OK(cuMemFree(p));
    use_device(1);
    CU_OK(cuMemAlloc(&p, 1));
    CU_OK(cuMemFree(p));
    use_device(0);
    struct spillway_pool_counters c0 = pool_counters(0), c1 = pool_counters(1);
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CUmemoryPool host, other, shared;
    CU_OK(cuMemPoolCreate(&host, &props));
    CU_OK(cuMemAllocFromPoolAsync(&p, 3 * MiB, host, s));
    CU_OK(cuStreamSynchronize(s));
    CUmemorytype type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    ck_assert_int_eq(type, CU_MEMORYTYPE_HOST);
    ((volatile unsigned char *)(uintptr_t)p)[3 * MiB - 1] = 7; /* the CPU's to touch */
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    ck_assert_uint_eq(pool_counters(0).passthrough_count[SPILLWAY_PT_HOST_LOCATION],
                      c0.passthrough_count[SPILLWAY_PT_HOST_LOCATION] + 1); /* the stream's device */
    CU_OK(cuMemFreeAsync(p, s));
    CUmemLocation at_host = {.type = CU_MEM_LOCATION_TYPE_HOST};
    CUmemoryPool host_default;
    CU_OK(cuMemGetDefaultMemPool(&host_default, &at_host, CU_MEM_ALLOCATION_TYPE_PINNED));
    CU_OK(cuMemAllocFromPoolAsync(&p, MiB, host_default, s));
    type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    ck_assert_int_eq(type, CU_MEMORYTYPE_HOST);
    CU_OK(cuMemFreeAsync(p, s));

    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 1;
    CU_OK(cuMemPoolCreate(&other, &props));
    CU_OK(cuMemAllocFromPoolAsync(&p, 2 * MiB, other, s)); /* device 0's stream */
    ck_assert_uint_eq(pool_counters(1).in_use_bytes, c1.in_use_bytes + 2 * MiB);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    int ordinal = -1;
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    ck_assert_int_eq(ordinal, 1);
    CU_OK(cuMemFreeAsync(p, s));
    CUmemoryPool default1; /* a CUDA 12 runtime's cudaDeviceGetDefaultMemPool(1) */
    CU_OK(cuDeviceGetDefaultMemPool(&default1, 1));
    CU_OK(cuMemAllocFromPoolAsync(&p, 2 * MiB, default1, s));
    ordinal = -1;
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    ck_assert_int_eq(ordinal, 1);
    CU_OK(cuMemFreeAsync(p, s));

    props.location.id = 0;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CU_OK(cuMemPoolCreate(&shared, &props));
    CU_OK(cuStreamSynchronize(s));
    size_t before = outside_pool(0);
    CU_OK(cuMemAllocFromPoolAsync(&p, 4 * MiB, shared, s));
    ck_assert_uint_eq(outside_pool(0) - before, 4 * MiB);
    ck_assert_uint_eq(pool_counters(0).passthrough_count[SPILLWAY_PT_IPC],
                      c0.passthrough_count[SPILLWAY_PT_IPC] + 1);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    CU_OK(cuMemFreeAsync(p, s));
    /* Made current and asked for again, it is still the exportable pool. */
    CUmemoryPool current;
    CU_OK(cuDeviceSetMemPool(0, shared));
    CUmemLocation dev0 = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CU_OK(cuMemGetMemPool(&current, &dev0, CU_MEM_ALLOCATION_TYPE_PINNED));
    ck_assert_ptr_eq(current, shared);
    CU_OK(cuStreamSynchronize(s)); /* the free above has run: the count is still */
    before = outside_pool(0);
    CU_OK(cuMemAllocFromPoolAsync(&p, 4 * MiB, current, s));
    ck_assert_uint_eq(outside_pool(0) - before, 4 * MiB);
    CU_OK(cuMemFreeAsync(p, s));
    CUmemoryPool default0;
    CU_OK(cuDeviceGetDefaultMemPool(&default0, 0));
    CU_OK(cuDeviceSetMemPool(0, default0));
    /* A pool with a size cap answers out of memory past it: the driver's. */
    CUmemoryPool capped;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.maxSize = 8 * MiB;
    CU_OK(cuMemPoolCreate(&capped, &props));
    CU_OK(cuStreamSynchronize(s));
    before = outside_pool(0);
    CU_OK(cuMemAllocFromPoolAsync(&p, 2 * MiB, capped, s));
    ck_assert_uint_eq(outside_pool(0) - before, 2 * MiB);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(capped));
    CU_OK(cuMemPoolDestroy(host));
    CU_OK(cuMemPoolDestroy(other));
    CU_OK(cuMemPoolDestroy(shared));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* cuMemAllocAsync allocates from the current pool of the stream's device
 * (cuDeviceSetMemPool): made current, an exportable or capped pool's
 * allocations are the driver's, as cuMemAllocFromPoolAsync's from it are;
 * the default pool made current again, or the current pool destroyed
 * (which makes the default current), they are the pool's again. */
START_TEST(alloc_async_follows_the_current_pool)
{
    if (!pooled())
        return;
    use_device(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 1)); /* the device's pool exists */
    CU_OK(cuMemFree(p));
    struct spillway_pool_counters c0 = pool_counters(0);
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemoryPool shared, capped, default0;
    CU_OK(cuMemPoolCreate(&shared, &props));
    CU_OK(cuDeviceSetMemPool(0, shared));
    size_t before = outside_pool(0);
    CU_OK(cuMemAllocAsync(&p, 4 * MiB, s));
    ck_assert_uint_eq(outside_pool(0) - before, 4 * MiB);
    ck_assert_uint_eq(pool_counters(0).passthrough_count[SPILLWAY_PT_IPC],
                      c0.passthrough_count[SPILLWAY_PT_IPC] + 1);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));

    CU_OK(cuDeviceGetDefaultMemPool(&default0, 0));
    CU_OK(cuDeviceSetMemPool(0, default0));
    CU_OK(cuMemAllocAsync(&p, 4 * MiB, s));
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes + 4 * MiB);
    CU_OK(cuMemFreeAsync(p, s));

    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.maxSize = 8 * MiB;
    CU_OK(cuMemPoolCreate(&capped, &props));
    CU_OK(cuDeviceSetMemPool(0, capped));
    CU_OK(cuStreamSynchronize(s));
    before = outside_pool(0);
    CU_OK(cuMemAllocAsync(&p, 2 * MiB, s));
    ck_assert_uint_eq(outside_pool(0) - before, 2 * MiB);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(capped)); /* the default pool is current again */
    CU_OK(cuMemAllocAsync(&p, 4 * MiB, s));
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes + 4 * MiB);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    /* CUDA 13's setter by location, for a device's pinned pool. */
    CUmemLocation dev0 = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CU_OK(cuMemSetMemPool(&dev0, CU_MEM_ALLOCATION_TYPE_PINNED, shared));
    before = outside_pool(0);
    CU_OK(cuMemAllocAsync(&p, 4 * MiB, s));
    ck_assert_uint_eq(outside_pool(0) - before, 4 * MiB);
    ck_assert_uint_eq(pool_counters(0).in_use_bytes, c0.in_use_bytes);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(shared));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

void passthrough_pool_tests(TCase *tc)
{
    tcase_add_test(tc, from_pool_async_is_pool_served);
    tcase_add_test(tc, from_pool_async_follows_its_pool);
    tcase_add_test(tc, alloc_async_follows_the_current_pool);
}
