/* The policy spill suite (test_spill.c): the host-page reserve, made when
 * the pool first runs dry and refilled, its absence counted, and its page
 * in flight waited for. */
#include "tests/unit/policy/spill_rig.h"

#include <stdatomic.h>

/* ---- the host-page reserve ------------------------------------------------ */

static uint64_t host_pages_created(void)
{
    return counters().host_bytes / PG;
}

static void wait_host_pages(uint64_t n)
{
    for (int i = 0; i < 5000 && host_pages_created() < n; i++)
        sleep_ms(1);
}

/* The reserve starts when the pool first runs dry, fills to its target on
 * its own thread, serves the spills that follow (none of them creates a
 * host page while it waits), and refills what they took. */
START_TEST(reserve_is_used_and_refilled)
{
    sw_device_config cfg = {
        .limit = 4 * PG, .host_limit = 32 * PG, .spill = true, .host_reserve = 8 * PG,
    };
    env_up_cfg(&cfg, 4);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_created(), 0); /* nothing pinned before the need */
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS); /* the first spill */
    uint64_t waited = counters().host_creates_waited;
    /* Filled: at least 6 free (8, or 8 less what the spill took after). */
    wait_host_pages(counters().host_in_use_bytes / PG + 6);
    ck_assert_uint_ge(host_pages_created(), counters().host_in_use_bytes / PG + 6);
    sw_spill_stats st;
    sw_get_spill_stats(P, 0, &st);
    ck_assert_uint_eq(st.host_bytes, counters().host_bytes);
    /* Spills from the reserve: no host page created on the caller's path. */
    uint64_t before = host_pages_created();
    ck_assert_int_eq(sw_alloc(P, 0, 5 * PG, &c), CUDA_SUCCESS); /* takes 5 of the 8 */
    ck_assert_uint_eq(counters().host_creates_waited, waited);
    ck_assert_uint_ge(counters().host_in_use_bytes, 7 * PG);
    /* Below half its target, the reserve is refilled (at least half of it
     * stays free), within the host limit. */
    uint64_t in_use = counters().host_in_use_bytes / PG;
    wait_host_pages(in_use + 4);
    ck_assert_uint_gt(host_pages_created(), before);
    ck_assert_uint_ge(host_pages_created() - in_use, 4);
    ck_assert_uint_le(host_pages_created(), 32);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* Without a reserve every host page is made on the caller's path: counted. */
START_TEST(no_reserve_counts_waits)
{
    env_spill(4, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().host_creates_waited, 2);
    sleep_ms(20);
    ck_assert_uint_eq(host_pages_created(), 2);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* The reserve's page in flight (a slot of the host limit taken, the page
 * not yet in the pool: 400-800 us of pinning on an H100) is one a spill
 * can have: waited for, not refused as past the host limit. */
static atomic_int pin_started;
static void slow_pin(void *arg)
{
    (void)arg;
    atomic_store(&pin_started, 1);
    sleep_ms(100);
}

START_TEST(spill_waits_for_the_reserves_page_in_flight)
{
    sw_device_config cfg = {.limit = 4 * PG, .preallocate = true, .spill = true,
                            .host_limit = 4 * PG, .host_reserve = 4 * PG};
    env_up_cfg(&cfg, 4);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_reserve_host_pages(P, 0, 3), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 41);
    atomic_store(&pin_started, 0);
    /* The next page created is the reserve's 4th, the last the host
     * limit allows: it pins slowly. */
    fake_on_call(FB, "page_create", 1, slow_pin, NULL);
    ck_assert_int_eq(sw_alloc(P, 0, PG, &b), CUDA_SUCCESS); /* wakes the reserve */
    for (int i = 0; i < 1000 && !atomic_load(&pin_started); i++)
        sleep_ms(1);
    ck_assert(atomic_load(&pin_started));
    /* 3 more pages to the host: 2 free, the 4th on its way. */
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &c), CUDA_SUCCESS);
    ck_assert(verify(a, 4 * PG, 41));
    ck_assert_uint_eq(counters().host_bytes, 4 * PG);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    env_down();
}
END_TEST

void spill_reserve_tests(TCase *tc)
{
    tcase_add_test(tc, reserve_is_used_and_refilled);
    tcase_add_test(tc, no_reserve_counts_waits);
    tcase_add_test(tc, spill_waits_for_the_reserves_page_in_flight);
}
