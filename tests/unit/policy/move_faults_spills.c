/* The move-faults suite (test_move_faults.c): refused spills. The
 * allocation that asked for one gets host pages; an error the context
 * does not survive, or a VA the move lost, is returned. */
#include "tests/unit/policy/move_faults_rig.h"

/* A spill whose move the driver refuses (undone: the bytes stay on the
 * device): the allocation that asked for it gets host pages, as when
 * nothing more can move, and the refusal is counted. Before, it returned
 * the driver's code, which PyTorch's and XLA's allocators treat as fatal
 * (they handle OUT_OF_MEMORY only). */
static void spill_refused(CUresult err, CUdeviceptr *a)
{
    sw_device_config cfg = {.limit = 4 * PG, .host_limit = 16 * PG, .spill = true};
    env_up_cfg(&cfg, 4);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, a), CUDA_SUCCESS);
    fill(*a, 4 * PG, 11);
    fake_fail_times(FB, "copy", err, 4); /* each page's copy, and its retry */
}

START_TEST(a_refused_spill_leaves_the_allocation_host_pages)
{
    CUdeviceptr a, b, c;
    spill_refused(CUDA_ERROR_UNKNOWN, &a);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    fake_fail_clear(FB);
    ck_assert_uint_eq(host_pages_in(b, 2), 2);
    ck_assert_uint_eq(host_pages_in(a, 4), 0);
    ck_assert_uint_eq(counters().spill_faults, 1);
    assert_no_violation();
    fill(b, 2 * PG, 12);
    ck_assert(verify(a, 4 * PG, 11));
    /* The driver takes moves again: the next allocation spills. */
    ck_assert_int_eq(sw_alloc(P, 0, PG, &c), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(c, 1), 0);
    ck_assert(verify(a, 4 * PG, 11));
    ck_assert(verify(b, 2 * PG, 12));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* The same for a VMM handle (host pages back those too). */
START_TEST(a_refused_spill_leaves_a_handle_host_pages)
{
    CUdeviceptr a;
    CUmemGenericAllocationHandle h;
    spill_refused(CUDA_ERROR_UNKNOWN, &a);
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h), CUDA_SUCCESS);
    fake_fail_clear(FB);
    ck_assert_uint_eq(counters().spill_faults, 1);
    ck_assert(verify(a, 4 * PG, 11));
    bool gone;
    ck_assert_int_eq(sw_vmm_release(P, h, &gone), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* An error after which the context runs no more work is the program's to
 * see, not papered over with host pages. */
START_TEST(a_spill_refused_for_a_dead_context_returns_the_error)
{
    CUdeviceptr a, b;
    spill_refused(CUDA_ERROR_ILLEGAL_ADDRESS, &a);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_ERROR_ILLEGAL_ADDRESS);
    fake_fail_clear(FB);
    ck_assert_uint_eq(counters().spill_faults, 0);
    ck_assert(verify(a, 4 * PG, 11));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* The allocation's own spill: a refused step whose move could not be
 * undone (the VA's new page and the old page's restore both refused) lost
 * the VA's bytes. That is not a refusal host pages can stand in for: the
 * program hears of it. */
START_TEST(a_spill_that_lost_a_va_returns_the_error)
{
    env_spill(64, 128);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 64 * PG, &a), CUDA_SUCCESS);
    fill(a, 64 * PG, 22);
    /* The move maps its scratch page; every map after that is refused. */
    fake_fail_after(FB, "map", 1, CUDA_ERROR_INVALID_VALUE, 10);
    CUresult r = sw_alloc(P, 0, PG, &b);
    fake_fail_clear(FB);
    assert_no_violation();
    ck_assert_uint_ge(counters().faulted_bytes, PG); /* a VA was lost */
    ck_assert_int_ne(r, CUDA_SUCCESS);
    ck_assert_uint_eq(counters().spill_faults, 0);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
}
END_TEST

/* A spill frees down to a low watermark beyond what the allocation needs
 * (1/64 of a pool of 64 pages: one page more). When that extra move lost
 * a VA (its bytes gone, the page table let it go), the allocation answered
 * success and nothing told the program; the loss is the driver's error,
 * as when the allocation's own spill loses one. */
START_TEST(a_spill_ahead_that_lost_a_va_returns_the_error)
{
    env_spill(64, 128);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 64 * PG, &a), CUDA_SUCCESS);
    fill(a, 64 * PG, 19);
    /* The spill's move maps its scratch page and the VA's new page, then
     * b's page is mapped; the watermark's move maps its scratch page, and
     * every map after that is refused (the VA's new page, then restore's). */
    fake_fail_after(FB, "map", 4, CUDA_ERROR_INVALID_VALUE, 10);
    CUresult r = sw_alloc(P, 0, PG, &b);
    fake_fail_clear(FB);
    assert_no_violation();
    ck_assert_uint_eq(counters().faulted_bytes, PG); /* a VA was lost */
    ck_assert_int_eq(r, CUDA_ERROR_UNKNOWN);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
}
END_TEST

/* The same for a program's cuMemCreate, whose pages go back to the pool. */
START_TEST(a_spill_ahead_for_a_handle_that_lost_a_va_returns_the_error)
{
    env_spill(64, 128);
    CUdeviceptr a, c;
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(sw_alloc(P, 0, 64 * PG, &a), CUDA_SUCCESS);
    fill(a, 64 * PG, 20);
    /* No page of the handle is mapped: the spill's two maps, the
     * watermark's scratch map, then refusals. */
    fake_fail_after(FB, "map", 3, CUDA_ERROR_INVALID_VALUE, 10);
    CUresult r = sw_vmm_create(P, 0, PG, &h);
    fake_fail_clear(FB);
    assert_no_violation();
    ck_assert_uint_eq(counters().faulted_bytes, PG);
    ck_assert_int_eq(r, CUDA_ERROR_UNKNOWN);
    /* The page it had taken is the pool's again: the next allocation gets
     * it without a spill. */
    uint64_t events = counters().spill_events;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &c), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(c, 1), 0);
    ck_assert_uint_eq(counters().spill_events, events);
    fill(c, PG, 21);
    ck_assert(verify(c, PG, 21));
    assert_no_violation();
}
END_TEST

void move_faults_spill_tests(TCase *tc)
{
    tcase_add_test(tc, a_refused_spill_leaves_the_allocation_host_pages);
    tcase_add_test(tc, a_refused_spill_leaves_a_handle_host_pages);
    tcase_add_test(tc, a_spill_refused_for_a_dead_context_returns_the_error);
    tcase_add_test(tc, a_spill_that_lost_a_va_returns_the_error);
    tcase_add_test(tc, a_spill_ahead_that_lost_a_va_returns_the_error);
    tcase_add_test(tc, a_spill_ahead_for_a_handle_that_lost_a_va_returns_the_error);
}
