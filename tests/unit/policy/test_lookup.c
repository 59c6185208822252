/* Lookups for cuMemGetAddressRange / cuPointerGetAttribute(s), ownership,
 * and the counters the stats publisher reads. */
#include "tests/unit/policy/helpers.h"

static void expect_range(CUdeviceptr ptr, CUdeviceptr base, size_t size)
{
    CUdeviceptr b = 0;
    size_t s = 0;
    int dev = -1;
    ck_assert_int_eq(sw_lookup(P, ptr, &b, &s, &dev), CUDA_SUCCESS);
    ck_assert_uint_eq(b, base);
    ck_assert_uint_eq(s, size);
    ck_assert_int_eq(dev, 0);
}

static void expect_none(CUdeviceptr ptr)
{
    CUdeviceptr b;
    size_t s;
    int dev;
    ck_assert_int_eq(sw_lookup(P, ptr, &b, &s, &dev), CUDA_ERROR_NOT_FOUND);
}

START_TEST(interior_pointers_answer_with_the_allocation)
{
    env_up(16, false, 0);
    static const size_t sizes[] = {1, 300, 4096, 70000, MiB, MiB + 1, 5 * PG + 3};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        CUdeviceptr p;
        ck_assert_int_eq(sw_alloc(P, 0, sizes[i], &p), CUDA_SUCCESS);
        expect_range(p, p, sizes[i]);
        expect_range(p + sizes[i] / 2, p, sizes[i]);
        expect_range(p + sizes[i] - 1, p, sizes[i]);
        ck_assert(sw_owns(P, p + sizes[i] / 3));
    }
    env_down();
}
END_TEST

START_TEST(freed_and_foreign_pointers_are_not_found)
{
    env_up(16, false, 64 * PG);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &c), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    expect_none(a);                /* pending */
    expect_none(c + PG);
    expect_range(b + 10, b, 1000); /* its neighbour is unaffected */
    expect_none(b + 1024 * 5);     /* a slot never handed out */
    expect_none(0);
    expect_none((CUdeviceptr)&a);  /* host memory */
    expect_none(~(CUdeviceptr)0);
    ck_assert(!sw_owns(P, (CUdeviceptr)&a));
    ck_assert(sw_owns(P, c)); /* still spillway's address space */
    CUdeviceptr base;
    size_t size;
    int dev;
    ck_assert_int_eq(sw_lookup(P, b, NULL, &size, &dev), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_lookup(P, b, &base, NULL, &dev), CUDA_ERROR_INVALID_VALUE);
    env_down();
}
END_TEST

START_TEST(counters_track_use_peak_and_pool)
{
    env_up(16, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &b), CUDA_SUCCESS);
    sw_counters c = counters();
    ck_assert_uint_eq(c.limit_bytes, 16 * PG);
    ck_assert_uint_eq(c.pool_bytes, 4 * PG);
    ck_assert_uint_eq(c.mapped_bytes, 4 * PG);
    ck_assert_uint_eq(c.in_use_bytes, 3 * PG + 1000);
    ck_assert_uint_eq(c.backing_bytes, 4 * PG);
    ck_assert_uint_eq(c.allocs, 2);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    c = counters();
    ck_assert_uint_eq(c.in_use_bytes, 1000);
    ck_assert_uint_eq(c.peak_in_use_bytes, 3 * PG + 1000);
    ck_assert_uint_eq(c.pending_bytes, 3 * PG);
    ck_assert_uint_eq(c.frees, 1);
    sw_count_passthrough(P, 0, SW_PT_IPC, 4096);
    sw_count_passthrough(P, 0, SW_PT_IPC, 100);
    sw_count_passthrough(P, 0, SW_PT_MANAGED, 7);
    sw_count_passthrough(P, 5, SW_PT_DISABLED, 9); /* a device spillway does not manage */
    sw_count_passthrough(P, 0, SW_PT_NREASONS, 9); /* ignored */
    c = counters();
    ck_assert_uint_eq(c.passthrough_count[SW_PT_IPC], 2);
    ck_assert_uint_eq(c.passthrough_bytes[SW_PT_IPC], 4196);
    ck_assert_uint_eq(c.passthrough_count[SW_PT_MANAGED], 1);
    ck_assert_uint_eq(c.passthrough_count[SW_PT_CAPTURE], 0);
    sw_counters c5;
    ck_assert_int_eq(sw_get_counters(P, 5, &c5), CUDA_SUCCESS);
    ck_assert_uint_eq(c5.passthrough_bytes[SW_PT_DISABLED], 9);
    ck_assert_uint_eq(c5.limit_bytes, 0);
    ck_assert_str_eq(sw_passthrough_reason_name(SW_PT_CAPTURE), "capture");
    ck_assert_str_eq(sw_passthrough_reason_name(SW_PT_NREASONS), "unknown");
    ck_assert_int_eq(sw_get_counters(P, SW_MAX_DEVICES, &c5), CUDA_ERROR_INVALID_VALUE);
    env_down();
}
END_TEST

START_TEST(two_devices_have_separate_pools)
{
    sw_device_config cfg = {.limit = 4 * PG};
    env_up_cfg(&cfg, 6); /* the fake counts both devices' pages */
    cfg.limit = 2 * PG;
    ck_assert_int_eq(sw_device_init(P, 1, &cfg), CUDA_SUCCESS);
    ck_assert(sw_device_ready(P, 1));
    ck_assert(!sw_device_ready(P, 2));
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 1, 2 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 1, 1, &b), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    CUdeviceptr base;
    size_t size;
    int dev;
    ck_assert_int_eq(sw_lookup(P, a + 5, &base, &size, &dev), CUDA_SUCCESS);
    ck_assert_int_eq(dev, 1);
    ck_assert_int_eq(sw_lookup(P, b + 5, &base, &size, &dev), CUDA_SUCCESS);
    ck_assert_int_eq(dev, 0);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 1, 2 * PG, &a), CUDA_SUCCESS);
    ck_assert_uint_eq(sw_page_size(P), PG);
    env_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_lookup");
    TCase *tc = tcase_create("lookup");
    tcase_add_test(tc, interior_pointers_answer_with_the_allocation);
    tcase_add_test(tc, freed_and_foreign_pointers_are_not_found);
    tcase_add_test(tc, counters_track_use_peak_and_pool);
    tcase_add_test(tc, two_devices_have_separate_pools);
    suite_add_tcase(s, tc);
    return s;
}
