/* Conformance: stream-ordered allocation and memory pools. */
#include <signal.h>

#include <stdio.h>

#include "tests/unit/driver/common.h"

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t n, CUstream h);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream h);

START_TEST(alloc_use_free_in_stream_order)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAllocAsync(&p, 4 * MiB, s));
    CU_OK(cuMemsetD32Async(p, 11, MiB, s));
    unsigned back[4];
    CU_OK(cuMemcpyDtoHAsync(back, p + 100 * 4, sizeof back, s));
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(back[i], 11);
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A host pool is the CPU's until a device is given access ("default
 * accessibility will be from the host CPU"): dev may read and write it
 * after this. What it had before is printed. */
static void device_may_use(CUmemoryPool pool, CUdevice dev)
{
    CUmemLocation where = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    CUmemAccess_flags had = CU_MEM_ACCESS_FLAGS_PROT_MAX, now = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    CU_OK(cuMemPoolGetAccess(&had, pool, &where));
    printf("a host pool's access from device %d: %d before it is set\n", (int)dev, (int)had);
    CUmemAccessDesc rw = {.location = where, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemPoolSetAccess(pool, &rw, 1));
    CU_OK(cuMemPoolGetAccess(&now, pool, &where));
    ck_assert_int_eq(now, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

START_TEST(bad_frees)
{
    CUdeviceptr p;
    CU_ERR(cuMemAllocAsync(&p, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMemAllocAsync(NULL, 64, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAllocAsync(&p, 1 * MiB, NULL));
    /* What the driver does with a pointer it did not hand out, or freed,
     * is undefined ("results in undefined behavior"): fakecuda's answer. */
    if (fakecuda_present())
        CU_ERR(cuMemFreeAsync(p + 64, NULL), CUDA_ERROR_INVALID_VALUE); /* not the start */
    CU_OK(cuMemFreeAsync(p, NULL));
    CU_OK(cuCtxSynchronize());
    if (fakecuda_present())
        CU_ERR(cuMemFreeAsync(p, NULL), CUDA_ERROR_INVALID_VALUE); /* double free */
}
END_TEST

START_TEST(default_pool_attributes)
{
    CUmemoryPool pool, current;
    CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    CU_OK(cuDeviceGetMemPool(&current, 0));
    ck_assert_ptr_eq(pool, current);
    cuuint64_t used0 = 0, used1 = 0, threshold = 0;
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used0));
    CUdeviceptr p;
    CU_OK(cuMemAllocAsync(&p, 8 * MiB, NULL));
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used1));
    ck_assert_uint_ge(used1, used0 + 8 * MiB);
    CUmemoryPool owner = NULL;
    CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
    ck_assert_ptr_eq(owner, pool);
    CU_OK(cuMemFreeAsync(p, NULL));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used1));
    ck_assert_uint_eq(used1, used0);
    cuuint64_t big = 64 * MiB;
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &big));
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    ck_assert_uint_eq(threshold, 64 * MiB);
    cuuint64_t zero = 0;
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero));
    CU_OK(cuMemPoolTrimTo(pool, 0));
}
END_TEST

/* A pool's usage attributes ("cudaMemPoolAttrReservedMemCurrent ... the
 * current total physical GPU memory consumed by the pool",
 * "cudaMemPoolAttrUsedMemCurrent ... the total size of all of the memory
 * allocated from the pool and not available for reuse", the HIGH marks
 * "can be reset to the current value"), with a release threshold that
 * keeps freed memory reserved ("Amount of reserved memory in bytes to hold
 * onto before trying to release memory back to the OS") until
 * cuMemPoolTrimTo gives it back. A fresh pool: nobody else's figures. */
START_TEST(pool_usage_attributes)
{
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemoryPool pool;
    CU_OK(cuMemPoolCreate(&pool, &props));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    cuuint64_t used, reserved, used_high, reserved_high, zero = 0, one = 1, keep = ~(cuuint64_t)0;
#define FIGURES()                                                                                \
    do {                                                                                         \
        CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));             \
        CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));     \
        CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &used_high));           \
        CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &reserved_high));   \
        ck_assert_uint_ge(reserved, used);                                                       \
        ck_assert_uint_ge(used_high, used);                                                      \
        ck_assert_uint_ge(reserved_high, reserved);                                              \
    } while (0)
    FIGURES();
    ck_assert_uint_eq(used, 0);
    ck_assert_uint_eq(reserved, 0);
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    CUdeviceptr p;
    CU_OK(cuMemAllocFromPoolAsync(&p, 8 * MiB, pool, s));
    FIGURES();
    ck_assert_uint_ge(used, 8 * MiB);
    ck_assert_uint_ge(used_high, 8 * MiB);
    ck_assert_uint_ge(reserved_high, 8 * MiB);
    /* Only 0 resets a high mark. */
    CU_ERR(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &one), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &one), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    FIGURES();
    ck_assert_uint_eq(used, 0);
    ck_assert_uint_ge(reserved, 8 * MiB); /* kept: below the threshold */
    ck_assert_uint_ge(used_high, 8 * MiB);
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero));
    cuuint64_t kept = reserved;
    FIGURES();
    ck_assert_uint_eq(used_high, used);
    ck_assert_uint_eq(reserved_high, kept);
    CU_OK(cuMemAllocFromPoolAsync(&p, 8 * MiB, pool, s)); /* from what the pool keeps */
    FIGURES();
    ck_assert_uint_eq(reserved, kept);
    CU_OK(cuMemPoolTrimTo(pool, 0)); /* what backs a live allocation stays */
    FIGURES();
    ck_assert_uint_ge(reserved, 8 * MiB);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolTrimTo(pool, 0));
    FIGURES();
    ck_assert_uint_eq(used, 0);
    ck_assert_uint_eq(reserved, 0);
    ck_assert_uint_ge(reserved_high, kept);
#undef FIGURES
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(explicit_pool)
{
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool pool;
    CU_OK(cuMemPoolCreate(&pool, &props));
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    CUdeviceptr p;
    CU_OK(cuMemAllocFromPoolAsync(&p, 3 * MiB, pool, s));
    CU_OK(cuMemsetD8Async(p, 0x3c, 3 * MiB, s));
    CU_OK(cuStreamSynchronize(s));
    unsigned char b;
    CU_OK(cuMemcpyDtoH(&b, p + 3 * MiB - 1, 1));
    ck_assert_uint_eq(b, 0x3c);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* A pool of pinned host memory (CUDA 12.2 and later): the host reads and
 * writes what it hands out; HOST_NUMA_CURRENT is no pool location. */
START_TEST(host_pool)
{
    CUdevice dev;
    int supported = 0;
    CU_OK(cuCtxGetDevice(&dev));
    CU_OK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED, dev));
    if (!supported)
        return;
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CUmemoryPool pool;
    CU_OK(cuMemPoolCreate(&pool, &props));
    device_may_use(pool, dev);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAllocFromPoolAsync(&p, 3 * MiB, pool, s));
    CU_OK(cuMemsetD8Async(p, 0x5a, 3 * MiB, s));
    CU_OK(cuStreamSynchronize(s));
    volatile unsigned char *h = (volatile unsigned char *)(uintptr_t)p;
    ck_assert_uint_eq(h[0], 0x5a);
    ck_assert_uint_eq(h[3 * MiB - 1], 0x5a);
    h[17] = 0x11;
    unsigned char b = 0;
    CU_OK(cuMemcpy((CUdeviceptr)(uintptr_t)&b, p + 17, 1)); /* unified: the driver tells */
    ck_assert_uint_eq(b, 0x11);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    /* "The memory pool must be local to the specified device" */
    CU_ERR(cuDeviceSetMemPool(dev, pool), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s));
    props.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
    CU_ERR(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

/* CUDA 13's pools by location and kind: a device's pinned default pool is
 * cuDeviceGetDefaultMemPool's, its current one cuDeviceGetMemPool's; the
 * host's default pool hands out memory the CPU reads. */
START_TEST(pools_by_location)
{
    CUdevice dev;
    CU_OK(cuCtxGetDevice(&dev));
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    CUmemoryPool a, b;
    CU_OK(cuMemGetDefaultMemPool(&a, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    CU_OK(cuDeviceGetDefaultMemPool(&b, dev));
    ck_assert_ptr_eq(a, b);
    CU_OK(cuMemGetMemPool(&a, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    CU_OK(cuDeviceGetMemPool(&b, dev));
    ck_assert_ptr_eq(a, b);
    CU_ERR(cuMemGetDefaultMemPool(&a, &loc, CU_MEM_ALLOCATION_TYPE_INVALID), CUDA_ERROR_INVALID_VALUE);
    /* cuMemSetMemPool of a device's pinned pool is cuDeviceSetMemPool. */
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location = loc;
    CUmemoryPool made;
    CU_OK(cuMemPoolCreate(&made, &props));
    CU_OK(cuMemSetMemPool(&loc, CU_MEM_ALLOCATION_TYPE_PINNED, made));
    CU_OK(cuDeviceGetMemPool(&a, dev));
    ck_assert_ptr_eq(a, made);
    CU_OK(cuMemSetMemPool(&loc, CU_MEM_ALLOCATION_TYPE_PINNED, b));
    CU_OK(cuMemGetMemPool(&a, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    ck_assert_ptr_eq(a, b);
    CU_OK(cuMemPoolDestroy(made));
    int supported = 0;
    CU_OK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED, dev));
    if (!supported)
        return;
    loc = (CUmemLocation){.type = CU_MEM_LOCATION_TYPE_HOST};
    CUmemoryPool host;
    CU_OK(cuMemGetDefaultMemPool(&host, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    CU_OK(cuMemGetMemPool(&a, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    ck_assert_ptr_eq(a, host);
    /* A device pool is no host location's: the locations must match. */
    CU_ERR(cuMemSetMemPool(&loc, CU_MEM_ALLOCATION_TYPE_PINNED, b), CUDA_ERROR_INVALID_VALUE);
    device_may_use(host, dev);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAllocFromPoolAsync(&p, MiB, host, s));
    CU_OK(cuMemsetD8Async(p, 0x77, MiB, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(((volatile unsigned char *)(uintptr_t)p)[MiB - 1], 0x77);
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
    /* "A device's default memory pool cannot be destroyed"; cuda.h says
     * nothing of the host's: refused on fakecuda, printed. */
    CUresult r = cuMemPoolDestroy(host);
    printf("destroying the host's default pool: %d\n", (int)r);
    ck_assert(r == CUDA_ERROR_INVALID_VALUE || (!fakecuda_present() && r == CUDA_SUCCESS));
}
END_TEST

/* "Destroying the current mempool of a device sets the default mempool of
 * that device as the current mempool for that device." */
START_TEST(destroying_the_current_pool)
{
    CUdevice dev;
    CU_OK(cuCtxGetDevice(&dev));
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    CUmemoryPool pool, current, dflt;
    CU_OK(cuMemPoolCreate(&pool, &props));
    CU_OK(cuDeviceGetDefaultMemPool(&dflt, dev));
    CU_OK(cuDeviceSetMemPool(dev, pool));
    CU_OK(cuDeviceGetMemPool(&current, dev));
    ck_assert_ptr_eq(current, pool);
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuDeviceGetMemPool(&current, dev));
    ck_assert_ptr_eq(current, dflt);
    CUdeviceptr p; /* from the default pool, on the device */
    CU_OK(cuMemAllocAsync(&p, MiB, NULL));
    CU_OK(cuMemsetD8Async(p, 0x3c, MiB, NULL));
    CU_OK(cuMemFreeAsync(p, NULL));
    CU_OK(cuStreamSynchronize(NULL));
}
END_TEST

START_TEST(per_thread_entry_points)
{
    CUdeviceptr p;
    CU_OK(cuMemAllocAsync_ptsz(&p, MiB, NULL)); /* NULL = this thread's default stream */
    CU_OK(cuMemFreeAsync_ptsz(p, NULL));
    CU_OK(cuCtxSynchronize());
}
END_TEST

START_TEST(async_free_releases_in_stream_order)
{
    if (!fakecuda_present())
        return; /* fakecuda only: introspection */
    struct test_kernels k;
    kernels_load(&k);
    struct flag f;
    flag_new(&f);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t used0 = fakecuda_device_bytes_used(0);
    CUdeviceptr p;
    CU_OK(cuMemAllocAsync(&p, 4 * MiB, s));
    stream_block(&k, &f, s);
    CU_OK(cuMemFreeAsync(p, s));
    ck_assert_uint_eq(fakecuda_device_bytes_used(0), used0 + 4 * MiB); /* not yet reached */
    flag_release(&f);
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(fakecuda_device_bytes_used(0), used0);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_async");
    TCase *tc = tcase_create("async");
    tcase_add_checked_fixture(tc, driver_setup, driver_teardown);
    tcase_add_test(tc, alloc_use_free_in_stream_order);
    tcase_add_test(tc, bad_frees);
    tcase_add_test(tc, default_pool_attributes);
    tcase_add_test(tc, pool_usage_attributes);
    tcase_add_test(tc, explicit_pool);
    tcase_add_test(tc, host_pool);
    tcase_add_test(tc, pools_by_location);
    tcase_add_test(tc, destroying_the_current_pool);
    tcase_add_test(tc, per_thread_entry_points);
    tcase_add_test(tc, async_free_releases_in_stream_order);
    suite_add_tcase(s, tc);
    return s;
}
