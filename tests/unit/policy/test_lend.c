/* Lending (policy/lend.c): device memory outside the pool takes its pages
 * out of the pool, before and while the pool is built as well as after,
 * and the lent sum never wraps. */
#include "tests/unit/policy/helpers.h"

/* The policy over a 16-page fake backend, device 0 not set up yet. */
static void policy_only(void)
{
    FB = fake_create(PG, 16);
    sw_backend be = fake_ops(FB);
    ck_assert_int_eq(sw_policy_create(&be, &P), CUDA_SUCCESS);
}

/* Device 0 with a preallocated pool of 16 pages. */
static void set_up_16(void)
{
    sw_device_config cfg = {.limit = 16 * PG, .preallocate = true, .host_limit = 16 * PG};
    ck_assert_int_eq(sw_device_init(P, 0, &cfg), CUDA_SUCCESS);
}

/* Bytes lent for device 0 from inside set-up (the fake backend's hook runs
 * on the thread creating the pool's pages): what another thread's lend
 * does while the pool is being built, when it cannot see the device yet. */
static void lend_four_pages(void *arg)
{
    (void)arg;
    ck_assert_int_eq(sw_lend(P, 0, 4 * PG), CUDA_SUCCESS);
}

/* A preallocated pool of 16 pages: the pages lent while it was being built
 * are given back as soon as it is ready, so pool and lent memory never
 * pass the limit; what is left is the pool's to use. */
START_TEST(a_lend_during_set_up_is_given_back_when_ready)
{
    policy_only();
    fake_on_call(FB, "page_create", 3, lend_four_pages, NULL);
    set_up_16();
    ck_assert_uint_eq(sw_lent_bytes(P, 0), 4 * PG);
    ck_assert_uint_eq(counters().pool_bytes, 12 * PG);
    ck_assert_uint_eq(fstats().live_dev_pages, 12);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 12 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, PG, &b), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    sw_unlend(P, 0, 4 * PG);
    env_down();
}
END_TEST

/* After the third page: the driver refuses more, and the first page given
 * back lends four pages. */
static void refuse_pages_then_lend(void *arg)
{
    (void)arg;
    fake_fail_times(FB, "page_create", CUDA_ERROR_OUT_OF_MEMORY, 1000);
    fake_on_call(FB, "page_release", 1, lend_four_pages, NULL);
}

/* A set-up that fails part-way is undone while the device is not ready: a
 * lend meanwhile (here while its pages are given back, under the device
 * lock) only records its bytes, never shrinks a pool being torn down. A
 * later set-up builds the pool within what is left. */
START_TEST(a_lend_during_a_failed_set_up_finds_no_device)
{
    policy_only();
    fake_on_call(FB, "page_create", 3, refuse_pages_then_lend, NULL);
    sw_device_config cfg = {.limit = 16 * PG, .preallocate = true, .host_limit = 16 * PG};
    ck_assert_int_eq(sw_device_init(P, 0, &cfg), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(fstats().releases, 3); /* undone, and the lend ran */
    ck_assert_uint_eq(sw_lent_bytes(P, 0), 4 * PG);
    fake_fail_times(FB, "", CUDA_SUCCESS, 0); /* no more refusals */
    set_up_16();
    ck_assert_uint_eq(counters().pool_bytes, 12 * PG);
    sw_unlend(P, 0, 4 * PG);
    env_down();
}
END_TEST

/* Lent before the pool exists: the pool is built within what is left. */
START_TEST(lent_before_set_up_sizes_the_pool)
{
    policy_only();
    ck_assert_int_eq(sw_lend(P, 0, 5 * PG - 1), CUDA_SUCCESS); /* whole pages of the sum */
    set_up_16();
    ck_assert_uint_eq(counters().pool_bytes, 11 * PG);
    sw_unlend(P, 0, 5 * PG - 1);
    env_down();
}
END_TEST

/* Before the pool exists there is no limit to check against, but a size
 * that would wrap the sum is refused and the sum kept: otherwise its
 * refusal's unlend would clamp the sum to 0 and forget what was lent. */
START_TEST(a_lend_that_would_wrap_is_refused)
{
    policy_only();
    ck_assert_int_eq(sw_lend(P, 0, 10 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(sw_lend(P, 0, SIZE_MAX), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(sw_lend(P, 0, SIZE_MAX - 5 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(sw_lent_bytes(P, 0), 10 * MiB);
    /* Once it exists, more than the limit outside it is refused. */
    set_up_16();
    ck_assert_int_eq(sw_lend(P, 0, 16 * PG), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(sw_lent_bytes(P, 0), 10 * MiB);
    sw_unlend(P, 0, 10 * MiB);
    ck_assert_uint_eq(sw_lent_bytes(P, 0), 0);
    env_down();
}
END_TEST

/* Spilled data freed leaves host pages among the cached ones: a lend
 * reclaims past them to the device pages it can give back, and is not
 * refused for finding a host page first. */
START_TEST(a_lend_reclaims_past_cached_host_pages)
{
    env_spill(8, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 6 * PG, &a), CUDA_SUCCESS);
    fill(a, 6 * PG, 1);
    ck_assert_int_eq(sw_alloc(P, 0, 6 * PG, &b), CUDA_SUCCESS); /* spills a */
    ck_assert_uint_gt(counters().host_in_use_bytes, 0);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_lend(P, 0, 6 * PG), CUDA_SUCCESS);
    ck_assert_uint_le(counters().pool_bytes, 2 * PG);
    ck_assert_uint_le(fstats().live_dev_pages, 2);
    sw_unlend(P, 0, 6 * PG);
    env_down();
}
END_TEST

/* Every reason that is device memory lends, a device without a pool's too
 * (a later try at its set-up must start within the cap); host memory does
 * not. */
START_TEST(which_reasons_lend)
{
    for (int r = 0; r < SW_PT_NREASONS; r++)
        ck_assert_msg(sw_passthrough_lends((sw_passthrough_reason)r) == (r != SW_PT_HOST_LOCATION),
                      "reason %d", r);
    ck_assert(!sw_passthrough_lends((sw_passthrough_reason)SW_PT_NREASONS));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_lend");
    TCase *tc = tcase_create("lend");
    tcase_set_timeout(tc, 10); /* a lend into a device being torn down deadlocks */
    tcase_add_test(tc, a_lend_during_set_up_is_given_back_when_ready);
    tcase_add_test(tc, a_lend_during_a_failed_set_up_finds_no_device);
    tcase_add_test(tc, lent_before_set_up_sizes_the_pool);
    tcase_add_test(tc, a_lend_that_would_wrap_is_refused);
    tcase_add_test(tc, a_lend_reclaims_past_cached_host_pages);
    tcase_add_test(tc, which_reasons_lend);
    suite_add_tcase(s, tc);
    return s;
}
