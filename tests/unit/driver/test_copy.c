/* Conformance: copies and memsets in every direction, sync and async. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/driver/common.h"

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void *s, size_t n, CUstream h);
CUresult cuMemcpyDtoH_v2_ptds(void *d, CUdeviceptr s, size_t n);

static unsigned char *pattern(size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 31 + seed);
    return b;
}

/* A 1D array through the linear array copies: host -> array -> device ->
 * array -> array -> host, sync and async, with byte offsets; a range
 * past the end is refused. */
START_TEST(array_copies)
{
    enum { WORDS = 4096, BYTES = WORDS * 4 };
    CUDA_ARRAY_DESCRIPTOR d = {.Width = WORDS, .Height = 0, .Format = CU_AD_FORMAT_UNSIGNED_INT32,
                               .NumChannels = 1};
    CUarray a, b;
    CU_OK(cuArrayCreate(&a, &d));
    CU_OK(cuArrayCreate(&b, &d));
    CUDA_ARRAY_DESCRIPTOR got;
    CU_OK(cuArrayGetDescriptor(&got, a));
    ck_assert_uint_eq(got.Width, WORDS);
    ck_assert_int_eq(got.Format, CU_AD_FORMAT_UNSIGNED_INT32);
    unsigned char *src = pattern(BYTES, 7), *dst = calloc(1, BYTES);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, BYTES));
    CU_OK(cuMemcpyHtoA(a, 0, src, BYTES));
    CU_OK(cuMemcpyAtoD(p, a, 0, BYTES));
    CU_OK(cuMemcpyDtoH(dst, p, BYTES));
    ck_assert_mem_eq(src, dst, BYTES);
    CU_OK(cuMemsetD8(p, 0, BYTES));
    CU_OK(cuMemcpyHtoD(p + 1024, src, 2048));
    CU_OK(cuMemcpyDtoA(b, 512, p + 1024, 2048)); /* b[512, 2560) = src[0, 2048) */
    CU_OK(cuMemcpyAtoA(a, 0, b, 512, 2048));     /* a[0, 2048) = src[0, 2048) again */
    memset(dst, 0, BYTES);
    CU_OK(cuMemcpyAtoH(dst, b, 512, 2048));
    ck_assert_mem_eq(src, dst, 2048);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned char *pinned;
    CU_OK(cuMemAllocHost((void **)&pinned, BYTES));
    memcpy(pinned, src, BYTES);
    CU_OK(cuMemcpyHtoAAsync(b, 4, pinned + 100, 1000, s));
    memset(dst, 0, BYTES);
    CU_OK(cuMemcpyAtoHAsync(dst, b, 4, 1000, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(src + 100, dst, 1000);
    CU_ERR(cuMemcpyHtoA(a, BYTES - 4, src, 8), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMemcpyAtoD(p, a, BYTES, 4), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost(pinned));
    CU_OK(cuArrayDestroy(a));
    CU_OK(cuArrayDestroy(b));
    CU_OK(cuMemFree(p));
    free(src);
    free(dst);
}
END_TEST

/* A copy or set running past an allocation: the driver refuses one byte
 * past the end cuMemGetAddressRange reports and accepts one up to it, for
 * sizes that are no whole number of pages (spillway holds its pool to the
 * same rule: shim/pool_range.h, with the size its cuMemGetAddressRange
 * reports). What the driver reports for each size is printed: if it
 * rounds, a copy into its rounding is accepted, and spillway must follow. */
START_TEST(copies_past_an_allocation_are_refused)
{
    static const size_t sizes[] = {100, 4096 + 3, 3 * MiB + 100};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        CUdeviceptr p, base;
        size_t n = sizes[i], size;
        CU_OK(cuMemAlloc(&p, n));
        CU_OK(cuMemGetAddressRange(&base, &size, p));
        printf("copies_past_an_allocation: cuMemAlloc(%zu) reports %zu bytes\n", n, size);
        ck_assert_uint_eq(base, p);
        ck_assert_uint_ge(size, n);
        unsigned char *host = pattern(size + 1, 3);
        CU_OK(cuMemcpyHtoD(p, host, size));
        CU_OK(cuMemsetD8(p, 7, size));
        CU_ERR(cuMemcpyHtoD(p, host, size + 1), CUDA_ERROR_INVALID_VALUE);
        CU_ERR(cuMemcpyHtoD(p + 1, host, size), CUDA_ERROR_INVALID_VALUE);
        CU_ERR(cuMemcpyDtoH(host, p, size + 1), CUDA_ERROR_INVALID_VALUE);
        CU_ERR(cuMemsetD8(p, 0, size + 1), CUDA_ERROR_INVALID_VALUE);
        CU_ERR(cuMemcpyDtoD(p + 1, p, size), CUDA_ERROR_INVALID_VALUE);
        /* nothing of the refused ones was written */
        unsigned char *want = malloc(size);
        ck_assert_ptr_nonnull(want);
        memset(want, 7, size);
        memset(host, 0, size + 1);
        CU_OK(cuMemcpyDtoH(host, p, size));
        ck_assert_mem_eq(host, want, size);
        free(want);
        free(host);
        CU_OK(cuMemFree(p));
    }
}
END_TEST

START_TEST(sync_roundtrip_all_directions)
{
    size_t n = 3 * MiB + 5;
    unsigned char *src = pattern(n, 1), *dst = calloc(1, n);
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, n));
    CU_OK(cuMemAlloc(&b, n));
    CU_OK(cuMemcpyHtoD(a, src, n));
    CU_OK(cuMemcpyDtoD(b, a, n));
    CU_OK(cuMemcpyDtoH(dst, b, n));
    ck_assert_mem_eq(src, dst, n);
    memset(dst, 0, n);
    CU_OK(cuMemcpy((CUdeviceptr)dst, a, n)); /* unified addressing */
    ck_assert_mem_eq(src, dst, n);
    /* No allocation there: refused (INVALID_VALUE on fakecuda), never done. */
    CUresult r = cuMemcpyDtoH(dst, (CUdeviceptr)0x1000, 16);
    ck_assert(r == CUDA_ERROR_INVALID_VALUE || (fakecuda_present() ? 0 : r != CUDA_SUCCESS));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    free(src);
    free(dst);
}
END_TEST

START_TEST(async_roundtrip_pinned)
{
    size_t n = 2 * MiB;
    void *hs, *hd;
    CU_OK(cuMemAllocHost(&hs, n));
    CU_OK(cuMemAllocHost(&hd, n));
    unsigned char *p = pattern(n, 7);
    memcpy(hs, p, n);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, n));
    CU_OK(cuMemAlloc(&b, n));
    CU_OK(cuMemcpyHtoDAsync(a, hs, n, s));
    CU_OK(cuMemcpyDtoDAsync(b, a, n, s));
    CU_OK(cuMemcpyDtoHAsync(hd, b, n, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(p, hd, n);
    memset(hd, 0, n);
    CU_OK(cuMemcpyAsync((CUdeviceptr)hd, a, n, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_mem_eq(p, hd, n);
    CU_OK(cuMemcpyHtoDAsync_v2_ptsz(a, hs, 64, NULL));
    CU_OK(cuMemcpyDtoH_v2_ptds(hd, a, 64));
    ck_assert_mem_eq(p, hd, 64);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFreeHost(hs));
    CU_OK(cuMemFreeHost(hd));
    free(p);
}
END_TEST

START_TEST(memsets)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, MiB));
    CU_OK(cuMemsetD8(p, 0x11, MiB));
    CU_OK(cuMemsetD16(p, 0x2233, 1000));
    CU_OK(cuMemsetD32(p + 4096, 0x44556677u, 10));
    unsigned char b[4096 + 48];
    CU_OK(cuMemcpyDtoH(b, p, sizeof b));
    ck_assert_uint_eq(b[0], 0x33);
    ck_assert_uint_eq(b[1], 0x22);
    ck_assert_uint_eq(b[1999], 0x22);
    ck_assert_uint_eq(b[2000], 0x11);
    ck_assert_uint_eq(b[4096], 0x77);
    ck_assert_uint_eq(b[4096 + 39], 0x44);
    ck_assert_uint_eq(b[4096 + 40], 0x11);
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuMemsetD32Async(p, 5, MiB / 4, s));
    CU_OK(cuMemsetD8Async(p, 0, 4, s));
    CU_OK(cuStreamSynchronize(s));
    unsigned w[2];
    CU_OK(cuMemcpyDtoH(w, p, sizeof w));
    ck_assert_uint_eq(w[0], 0);
    ck_assert_uint_eq(w[1], 5);
    CU_ERR(cuMemsetD32(p + 2, 1, 4), CUDA_ERROR_INVALID_VALUE); /* misaligned */
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
}
END_TEST

START_TEST(pageable_source_may_be_reused_at_once)
{
    /* After cuMemcpyHtoD from pageable memory returns, the source buffer is
     * the caller's again even though the device copy may still be in flight. */
    size_t n = MiB;
    unsigned *src = malloc(n);
    for (size_t i = 0; i < n / 4; i++)
        src[i] = 77;
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, n));
    CU_OK(cuMemcpyHtoD(p, src, n));
    memset(src, 0, n);
    expect_u32(p, 77, n / 4);
    CU_OK(cuMemFree(p));
    free(src);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_copy");
    TCase *tc = tcase_create("copy");
    tcase_add_checked_fixture(tc, driver_setup, driver_teardown);
    tcase_add_test(tc, sync_roundtrip_all_directions);
    tcase_add_test(tc, copies_past_an_allocation_are_refused);
    tcase_add_test(tc, array_copies);
    tcase_add_test(tc, async_roundtrip_pinned);
    tcase_add_test(tc, memsets);
    tcase_add_test(tc, pageable_source_may_be_reused_at_once);
    suite_add_tcase(s, tc);
    return s;
}
