/* What a move quiesces: every device that can reach the pages it moves,
 * as that set stands when the pages are remapped, not only as it stood
 * when the gates were closed. */
#include "tests/unit/policy/helpers.h"

typedef struct grant {
    CUdeviceptr va;
    size_t size;
    CUresult r;
} grant;

/* While the mover waits for device 0's sync: device 1 is given peer access
 * to device 0's pool, and its work, through its gate (open: the move did
 * not know of device 1), starts reading the pages. */
static void grant_and_read(void *arg)
{
    grant *g = arg;
    g->r = sw_grant_access(P, 0, 1);
    sw_work_begin(P, 1ull << 1);
    fake_launch(FB, S1, g->va, g->size);
    sw_work_end(P);
}

/* Without the check at the move's commit, the spill unmapped pages device
 * 1's work was reading (the fake counts it: a dead context on a GPU). With
 * it, the move gives up (NOT_READY) and the allocation gets host pages, as
 * when a device is busy; nothing is unmapped under the work. */
START_TEST(a_grant_during_the_quiesce_stops_the_move)
{
    sw_device_config cfg = {
        .limit = 4 * PG, .host_limit = 16 * PG, .spill = true,
        .quiesce_wait_ns = 50 * 1000000ull,
    };
    env_up_cfg(&cfg, 4);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 3);
    grant g = {a, 4 * PG, CUDA_ERROR_UNKNOWN};
    fake_on_call(FB, "synchronize", 1, grant_and_read, &g);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    ck_assert_int_eq(g.r, CUDA_SUCCESS);
    assert_no_violation();
    fake_complete(FB, S1);
    ck_assert(verify(a, 4 * PG, 3));
    /* The move gave up: b on host pages, a left where it was. */
    ck_assert_uint_eq(host_pages_in(b, 2), 2);
    ck_assert_uint_eq(host_pages_in(a, 4), 0);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* A capture begun between the syncer's check and its sync makes the sync
 * answer a capture error (and the driver invalidates that capture): the
 * move must give up as when a device is busy, and the allocation get host
 * pages, not fail with the capture's error. A device that is really
 * broken (an error the device keeps) still fails the allocation. */
static void sync_refused_with(CUresult err, CUresult want)
{
    sw_device_config cfg = {
        .limit = 4 * PG, .host_limit = 16 * PG, .spill = true,
        .quiesce_wait_ns = 50 * 1000000ull,
    };
    env_up_cfg(&cfg, 4);
    CUdeviceptr a, b = 0;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 5);
    fake_fail_next(FB, "synchronize", err);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), want);
    assert_no_violation();
    ck_assert(verify(a, 4 * PG, 5));
    ck_assert_uint_eq(host_pages_in(a, 4), 0);
    if (want == CUDA_SUCCESS) {
        ck_assert_uint_eq(host_pages_in(b, 2), 2);
        ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    }
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    env_down();
}

START_TEST(a_sync_refused_by_a_new_capture_gives_up_the_move)
{
    sync_refused_with(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, CUDA_SUCCESS);
    sync_refused_with(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, CUDA_SUCCESS);
    sync_refused_with(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, CUDA_SUCCESS);
}
END_TEST

START_TEST(a_sync_refused_by_a_broken_device_fails_the_allocation)
{
    sync_refused_with(CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_ADDRESS);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_quiesce");
    TCase *tc = tcase_create("quiesce");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, a_grant_during_the_quiesce_stops_the_move);
    tcase_add_test(tc, a_sync_refused_by_a_new_capture_gives_up_the_move);
    tcase_add_test(tc, a_sync_refused_by_a_broken_device_fails_the_allocation);
    suite_add_tcase(s, tc);
    return s;
}
