/* Conformance: prefetches and discards of managed memory, each a stream-
 * ordered operation with a per-thread (_ptsz) variant. cuMemPrefetchAsync
 * in CUDA 8's ABI (a CUdevice; CUDA 12.x's reference, which 13.0's cuda.h no
 * longer documents but whose symbol the driver still exports), and CUDA
 * 13.0's batches cuMemPrefetchBatchAsync, cuMemDiscardBatchAsync and
 * cuMemDiscardAndPrefetchBatchAsync, found through cuGetProcAddress at
 * 13000 (a driver without them skips). Asserted is what the reference
 * states; the batches' reference names no error code, so a refusal is
 * asserted as a failure and its code printed (fakecuda's INVALID_VALUE is
 * checked on fakecuda only; tests/gpu/README.md, item 23). CUDA 12.2's
 * cuMemPrefetchAsync_v2 is driver_memory's managed_memory_prefetch. */
#include <stdio.h>
#include <string.h>

#include "tests/unit/driver/common.h"

static struct test_kernels k;
static struct flag f;

static void setup(void)
{
    driver_setup();
    kernels_load(&k);
    flag_new(&f);
}

/* cuda.h maps cuMemPrefetchAsync to the _v2 and declares CUDA 8's ABI only
 * for its own build. */
#undef cuMemPrefetchAsync
CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);

typedef CUresult (*located_batch_t)(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *, size_t,
                                      unsigned long long, CUstream);
typedef CUresult (*discard_batch_t)(CUdeviceptr *, size_t *, size_t, unsigned long long, CUstream);

/* The entry point name at 13000 (per_thread: its _ptsz variant), or NULL
 * with a skip line naming test. */
static void *batch_entry(const char *name, int per_thread, const char *test)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    cuuint64_t flags = per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    if (cuGetProcAddress(name, &fn, 13000, flags, &q) != CUDA_SUCCESS || !fn) {
        printf("%s: skipped (no %s)\n", test, name);
        return NULL;
    }
    return fn;
}

/* Whether every device has CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
 * which a batch needs ("otherwise the API will return an error") and a
 * prefetch to a device needs of that device. */
static int all_concurrent(const char *test)
{
    int n = 0;
    CU_OK(cuDeviceGetCount(&n));
    for (int d = 0; d < n; d++) {
        int v = 0;
        CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, d));
        if (!v) {
            printf("%s: skipped (device %d has no concurrent managed access)\n", test, d);
            return 0;
        }
    }
    return 1;
}

/* A refusal the reference names no code for: a failure, its code printed;
 * fakecuda's is INVALID_VALUE. */
static void expect_refused(CUresult r, const char *what)
{
    printf("prefetch: %s: the driver answers %d\n", what, (int)r);
    ck_assert_msg(r != CUDA_SUCCESS, "%s accepted", what);
    if (fakecuda_present())
        ck_assert_int_eq(r, CUDA_ERROR_INVALID_VALUE);
}

static void expect_bytes(const unsigned char *p, unsigned char v, size_t n, const char *what)
{
    size_t i = 0;
    while (i < n && p[i] == v)
        i++;
    ck_assert_msg(i == n, "%s: byte %zu is %#x, not %#x", what, i, i < n ? p[i] : 0, v);
}

/* CUDA 8's ABI: managed memory to a device and to the host (CU_DEVICE_CPU),
 * through the legacy and per-thread entry points, its bytes kept ("memory
 * accesses to this range are always coherent"); memory that is not managed
 * refused (INVALID_VALUE, the reference's one argument error besides
 * INVALID_DEVICE, which programs such as RMM take for "not managed"), and a
 * device that does not exist refused (INVALID_DEVICE on fakecuda). */
START_TEST(prefetch_in_cuda_8s_abi)
{
    if (!all_concurrent("prefetch_in_cuda_8s_abi"))
        return;
    CUdevice dev;
    CU_OK(cuCtxGetDevice(&dev));
    CUdeviceptr p, d;
    CU_OK(cuMemAllocManaged(&p, MiB, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemAlloc(&d, MiB));
    memset((void *)(uintptr_t)p, 0x3c, MiB);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemPrefetchAsync(p, MiB, dev, NULL));
    CU_OK(cuMemPrefetchAsync(p + 4096, 4096, CU_DEVICE_CPU, s));
    CU_OK(cuMemPrefetchAsync_ptsz(p, MiB, dev, NULL)); /* the per-thread stream */
    CU_OK(cuMemPrefetchAsync_ptsz(p, MiB, CU_DEVICE_CPU, s));
    CU_ERR(cuMemPrefetchAsync(d, MiB, dev, NULL), CUDA_ERROR_INVALID_VALUE);
    CUresult r = cuMemPrefetchAsync(p, MiB, 99, NULL);
    printf("prefetch_in_cuda_8s_abi: to device 99: the driver answers %d\n", (int)r);
    ck_assert_int_ne(r, CUDA_SUCCESS);
    if (fakecuda_present())
        ck_assert_int_eq(r, CUDA_ERROR_INVALID_DEVICE);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuCtxSynchronize());
    unsigned char got[2] = {0, 0};
    CU_OK(cuMemcpyDtoH(&got[0], p, 1));
    CU_OK(cuMemcpyDtoH(&got[1], p + MiB - 1, 1));
    expect_bytes(got, 0x3c, 2, "after the prefetches");
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(d));
}
END_TEST

/* CUDA 13.0's batch of prefetches: ranges of two allocations, the first
 * two to the device and the third to the host (prefetchLocIdxs {0, 2}),
 * their bytes kept; any stream but the legacy one ("must not be legacy
 * NULL stream": CU_STREAM_PER_THREAD, and NULL through the _ptsz entry
 * point, which names the per-thread stream). Refused: the legacy stream,
 * flags (reserved, 0), a first index other than 0, indices not increasing,
 * a last index not below count (which more locations than operations
 * come to), memory that is not managed. */
START_TEST(prefetch_batch)
{
    located_batch_t batch = (located_batch_t)batch_entry("cuMemPrefetchBatchAsync", 0, "prefetch_batch");
    located_batch_t batch_pt = (located_batch_t)batch_entry("cuMemPrefetchBatchAsync", 1, "prefetch_batch");
    if (!batch || !batch_pt || !all_concurrent("prefetch_batch"))
        return;
    CUdevice dev;
    CU_OK(cuCtxGetDevice(&dev));
    CUdeviceptr a, b, d;
    CU_OK(cuMemAllocManaged(&a, MiB, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemAllocManaged(&b, 64 * 1024, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemAlloc(&d, MiB));
    memset((void *)(uintptr_t)a, 0x21, MiB);
    memset((void *)(uintptr_t)b, 0x43, 64 * 1024);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr dptrs[3] = {a, a + MiB / 2, b};
    size_t sizes[3] = {MiB / 2, MiB / 2, 64 * 1024};
    CUmemLocation locs[2] = {{.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev},
                             {.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0}};
    size_t idxs[2] = {0, 2};
    CU_OK(batch(dptrs, sizes, 3, locs, idxs, 2, 0, s));
    CU_OK(batch(dptrs, sizes, 3, locs, idxs, 2, 0, CU_STREAM_PER_THREAD));
    CU_OK(batch_pt(dptrs, sizes, 3, locs, idxs, 2, 0, NULL));
    CU_OK(batch_pt(dptrs, sizes, 1, locs, idxs, 1, 0, s)); /* one location for all */

    expect_refused(batch(dptrs, sizes, 3, locs, idxs, 2, 0, NULL), "batch prefetch on the legacy NULL stream");
    expect_refused(batch(dptrs, sizes, 3, locs, idxs, 2, 0, CU_STREAM_LEGACY), "batch prefetch on CU_STREAM_LEGACY");
    expect_refused(batch_pt(dptrs, sizes, 3, locs, idxs, 2, 0, CU_STREAM_LEGACY),
                   "batch prefetch (_ptsz) on CU_STREAM_LEGACY");
    expect_refused(batch(dptrs, sizes, 3, locs, idxs, 2, 1, s), "batch prefetch with flags 1");
    size_t from1[2] = {1, 2}, same[2] = {0, 0}, past[2] = {0, 3};
    expect_refused(batch(dptrs, sizes, 3, locs, from1, 2, 0, s), "batch prefetch whose first index is 1");
    expect_refused(batch(dptrs, sizes, 3, locs, same, 2, 0, s), "batch prefetch with indices {0, 0}");
    expect_refused(batch(dptrs, sizes, 3, locs, past, 2, 0, s), "batch prefetch whose last index is count");
    CUdeviceptr not_managed[1] = {d};
    expect_refused(batch(not_managed, sizes, 1, locs, idxs, 1, 0, s), "batch prefetch of cuMemAlloc memory");

    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuCtxSynchronize());
    expect_bytes((const unsigned char *)(uintptr_t)a, 0x21, MiB, "the first allocation");
    expect_bytes((const unsigned char *)(uintptr_t)b, 0x43, 64 * 1024, "the second allocation");
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFree(d));
}
END_TEST

/* A 2 MiB range on a 2 MiB boundary inside an 8 MiB managed allocation
 * (large pages of the device cannot straddle its ends), all of it
 * holding 0x5a; *base: the allocation. */
static CUdeviceptr discard_target(CUdeviceptr *base)
{
    CU_OK(cuMemAllocManaged(base, 8 * MiB, CU_MEM_ATTACH_GLOBAL));
    memset((void *)(uintptr_t)*base, 0x5a, 8 * MiB);
    return (*base + 2 * MiB) & ~(CUdeviceptr)(2 * MiB - 1);
}

/* What a discard documents: "the batch as a whole executes in stream
 * order", so a copy queued before it (behind a blocked stream) reads the
 * bytes as they were; memory outside the ranges keeps its bytes; "this
 * operation can be undone on any part of the range by ... writing to it",
 * after the stream's work is done ("reads, writes or prefetches ... that
 * occur simultaneously with the discard operation result in undefined
 * behavior"). prefetch: the combined call, with the range's one location
 * the device. */
static void discard_in_stream_order(int prefetch, const char *test)
{
    void *entry = batch_entry(prefetch ? "cuMemDiscardAndPrefetchBatchAsync" : "cuMemDiscardBatchAsync", 0, test);
    if (!entry || !all_concurrent(test))
        return;
    CUdevice dev;
    CU_OK(cuCtxGetDevice(&dev));
    CUdeviceptr base, d;
    CUdeviceptr r = discard_target(&base);
    CU_OK(cuMemAlloc(&d, MiB));
    unsigned char *seen;
    CU_OK(cuMemAllocHost((void **)&seen, 2 * MiB));
    memset(seen, 0, 2 * MiB);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr dptrs[1] = {r};
    size_t sizes[1] = {2 * MiB}, idxs[1] = {0};
    CUmemLocation loc[1] = {{.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev}};
    stream_block(&k, &f, s);
    CU_OK(cuMemcpyDtoHAsync(seen, r, 2 * MiB, s));
    if (prefetch)
        CU_OK(((located_batch_t)entry)(dptrs, sizes, 1, loc, idxs, 1, 0, s));
    else
        CU_OK(((discard_batch_t)entry)(dptrs, sizes, 1, 0, s));
    flag_release(&f);
    CU_OK(cuStreamSynchronize(s));
    expect_bytes(seen, 0x5a, 2 * MiB, "the copy queued before the discard");
    const unsigned char *all = (const unsigned char *)(uintptr_t)base;
    expect_bytes(all, 0x5a, (size_t)(r - base), "before the discarded range");
    expect_bytes(all + (r - base) + 2 * MiB, 0x5a, 8 * MiB - (size_t)(r - base) - 2 * MiB,
                 "after the discarded range");
    if (fakecuda_present()) /* its indeterminate bytes: FC_DISCARDED (prefetch.c) */
        ck_assert_uint_eq(all[r - base], 0xdd);
    memset((void *)(uintptr_t)r, 0x11, 2 * MiB);
    unsigned char back[2] = {0, 0};
    CU_OK(cuMemcpyDtoH(&back[0], r, 1));
    CU_OK(cuMemcpyDtoH(&back[1], r + 2 * MiB - 1, 1));
    expect_bytes(back, 0x11, 2, "the discarded range written again");

    /* Refusals: the legacy stream, flags, memory that is not managed, and
     * for the combined call a first location index other than 0. */
    CUdeviceptr not_managed[1] = {d};
    size_t from1[1] = {1};
    if (prefetch) {
        located_batch_t both = (located_batch_t)entry;
        expect_refused(both(dptrs, sizes, 1, loc, idxs, 1, 0, NULL), "discard and prefetch on the legacy stream");
        expect_refused(both(dptrs, sizes, 1, loc, idxs, 1, 1, s), "discard and prefetch with flags 1");
        expect_refused(both(not_managed, sizes, 1, loc, idxs, 1, 0, s), "discard and prefetch of cuMemAlloc memory");
        expect_refused(both(dptrs, sizes, 1, loc, from1, 1, 0, s), "discard and prefetch whose first index is 1");
    } else {
        discard_batch_t discard = (discard_batch_t)entry;
        expect_refused(discard(dptrs, sizes, 1, 0, NULL), "discard on the legacy stream");
        expect_refused(discard(dptrs, sizes, 1, 1, s), "discard with flags 1");
        expect_refused(discard(not_managed, sizes, 1, 0, s), "discard of cuMemAlloc memory");
    }
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost(seen));
    CU_OK(cuMemFree(base));
    CU_OK(cuMemFree(d));
}

START_TEST(discard_batch_in_stream_order) { discard_in_stream_order(0, "discard_batch_in_stream_order"); }
END_TEST
START_TEST(discard_and_prefetch_batch_in_stream_order)
{
    discard_in_stream_order(1, "discard_and_prefetch_batch_in_stream_order");
}
END_TEST

/* The per-thread variants take the same batches: NULL is the per-thread
 * stream there, which they accept. */
START_TEST(discard_batches_per_thread)
{
    discard_batch_t discard =
        (discard_batch_t)batch_entry("cuMemDiscardBatchAsync", 1, "discard_batches_per_thread");
    located_batch_t both =
        (located_batch_t)batch_entry("cuMemDiscardAndPrefetchBatchAsync", 1, "discard_batches_per_thread");
    if (!discard || !both || !all_concurrent("discard_batches_per_thread"))
        return;
    CUdevice dev;
    CU_OK(cuCtxGetDevice(&dev));
    CUdeviceptr base;
    CUdeviceptr r = discard_target(&base);
    CUdeviceptr dptrs[1] = {r};
    size_t sizes[1] = {2 * MiB}, idxs[1] = {0};
    CUmemLocation loc[1] = {{.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0}};
    CU_OK(discard(dptrs, sizes, 1, 0, NULL));
    CU_OK(both(dptrs, sizes, 1, loc, idxs, 1, 0, NULL));
    CU_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    memset((void *)(uintptr_t)r, 0x22, 2 * MiB);
    unsigned char back = 0;
    CU_OK(cuMemcpyDtoH(&back, r + MiB, 1));
    ck_assert_uint_eq(back, 0x22);
    CU_OK(cuMemFree(base));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_prefetch");
    TCase *tc = tcase_create("prefetch");
    tcase_add_checked_fixture(tc, setup, driver_teardown);
    tcase_add_test(tc, prefetch_in_cuda_8s_abi);
    tcase_add_test(tc, prefetch_batch);
    tcase_add_test(tc, discard_batch_in_stream_order);
    tcase_add_test(tc, discard_and_prefetch_batch_in_stream_order);
    tcase_add_test(tc, discard_batches_per_thread);
    suite_add_tcase(s, tc);
    return s;
}
