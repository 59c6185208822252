/* The policy wait suite (test_wait.c): a busy device is waited for once.
 * An allocation, a VMM allocation or a lend waits one patience, not one
 * per step, and only the first allocation past the limit waits while the
 * device stays busy. */
#include "policy/internal.h" /* sw_sync_device: waits for the syncer */
#include "tests/unit/policy/wait_rig.h"

#include <pthread.h>
#include <time.h>

static void busy_with_pending_frees(CUdeviceptr *y)
{
    busy_with_pending_frees_ms(y, WAIT_MS);
}

static void busy_ends(CUdeviceptr y)
{
    fake_hold_sync(FB, false);
    fake_complete(FB, S1);
    assert_no_violation();
    ck_assert(verify(y, 2 * PG, 6));
    ck_assert_int_eq(sw_free(P, y), CUDA_SUCCESS);
}

START_TEST(an_allocation_waits_for_a_busy_device_once)
{
    CUdeviceptr y, b;
    busy_with_pending_frees(&y);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(b, 4), 4);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    busy_ends(y);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(a_vmm_allocation_waits_for_a_busy_device_once)
{
    CUdeviceptr y;
    CUmemGenericAllocationHandle h;
    busy_with_pending_frees(&y);
    ck_assert_int_eq(sw_vmm_create(P, 0, 4 * PG, &h), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    busy_ends(y);
    bool gone;
    ck_assert_int_eq(sw_vmm_release(P, h, &gone), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(a_lend_waits_for_a_busy_device_once)
{
    CUdeviceptr y;
    busy_with_pending_frees(&y);
    /* The pool must give 3 pages back: only a sync or a spill frees them. */
    ck_assert_int_eq(sw_lend(P, 0, 3 * PG), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    busy_ends(y);
    env_down();
}
END_TEST


/* A device that stays busy (a kernel longer than the patience): only the
 * first allocation past the limit waits for it. While that sync is still
 * pending, the next ones go straight to host pages: before, each waited a
 * whole patience of its own (100 allocations, 50 s at 500 ms). Nothing
 * moves meanwhile, and once the sync ends spilling resumes. */

START_TEST(a_busy_device_is_waited_for_once_not_per_allocation)
{
    env_wait(4, 32);
    CUdeviceptr a, b[NBUSY], c;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 7);
    fake_launch(FB, S1, a, 4 * PG); /* in flight past the patience */
    fake_hold_sync(FB, true);
    for (int i = 0; i < NBUSY; i++) {
        ck_assert_int_eq(sw_alloc(P, 0, PG, &b[i]), CUDA_SUCCESS);
        ck_assert_uint_eq(host_pages_in(b[i], 1), 1);
        fill(b[i], PG, 100 + (uint64_t)i);
    }
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    ck_assert_uint_eq(counters().backoffs, NBUSY - 1);
    ck_assert_uint_eq(host_pages_in(a, 4), 0); /* nothing moved under the work */
    assert_no_violation();
    /* The work ends; once its sync is answered, the next allocation past
     * the limit spills again (no back-off for good). */
    fake_hold_sync(FB, false);
    fake_complete(FB, S1);
    ck_assert_int_eq(sw_sync_device(P, 0, UINT64_MAX), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &c), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(c, 2), 0);
    ck_assert_uint_eq(host_pages_in(a, 4), 2);
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    assert_no_violation();
    /* The data of all of them intact, the host pages filled back. */
    ck_assert(verify(a, 4 * PG, 7));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(sw_fill(P, b[i]), CUDA_SUCCESS);
        ck_assert_uint_eq(host_pages_in(b[i], 1), 0);
    }
    for (int i = 0; i < NBUSY; i++) {
        ck_assert(verify(b[i], PG, 100 + (uint64_t)i));
        ck_assert_int_eq(sw_free(P, b[i]), CUDA_SUCCESS);
    }
    env_down();
}
END_TEST

/* The same with frees pending (each allocation's sync that would release
 * them is skipped too) and for VMM handles, which host pages back as well. */
START_TEST(busy_with_pending_frees_waits_once_not_per_allocation)
{
    CUdeviceptr y, b[NBUSY];
    CUmemGenericAllocationHandle h[NBUSY];
    busy_with_pending_frees(&y);
    for (int i = 0; i < NBUSY; i++) {
        ck_assert_int_eq(sw_alloc(P, 0, PG, &b[i]), CUDA_SUCCESS);
        ck_assert_uint_eq(host_pages_in(b[i], 1), 1);
        fill(b[i], PG, 200 + (uint64_t)i);
        ck_assert_int_eq(sw_vmm_create(P, 0, PG, &h[i]), CUDA_SUCCESS);
    }
    ck_assert_uint_eq(counters().wait_timeouts, 1);
    ck_assert_uint_eq(counters().backoffs, 2 * NBUSY - 1);
    busy_ends(y);
    for (int i = 0; i < NBUSY; i++) {
        bool gone;
        ck_assert(verify(b[i], PG, 200 + (uint64_t)i));
        ck_assert_int_eq(sw_free(P, b[i]), CUDA_SUCCESS);
        ck_assert_int_eq(sw_vmm_release(P, h[i], &gone), CUDA_SUCCESS);
    }
    env_down();
}
END_TEST

void wait_once_tests(TCase *tc)
{
    tcase_add_test(tc, an_allocation_waits_for_a_busy_device_once);
    tcase_add_test(tc, a_vmm_allocation_waits_for_a_busy_device_once);
    tcase_add_test(tc, a_lend_waits_for_a_busy_device_once);
    tcase_add_test(tc, a_busy_device_is_waited_for_once_not_per_allocation);
    tcase_add_test(tc, busy_with_pending_frees_waits_once_not_per_allocation);
}
