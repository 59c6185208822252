/* The move-faults suite (test_move_faults.c): pages a refused move lost or
 * left behind. A handle's lost page counted once and exported from its
 * pages; pages under a copy that may still run kept out of the pool; a
 * page left at a lost VA, or without access, or stranded, neither reused
 * nor copied from until the driver lets it go. */
#include "tests/unit/policy/move_faults_rig.h"

/* A handle's page lost in a move (a fill whose every remap is refused):
 * counted out of the host pages once, not again when the handle goes, and
 * its handle kept out of the pool. */
START_TEST(a_handles_lost_page_is_counted_once)
{
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    one_page_handle(&va, &h);
    ck_assert_int_eq(sw_set_residency(P, va, 1, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().host_in_use_bytes, PG);
    fake_fail_after(FB, "map", 1, CUDA_ERROR_OUT_OF_MEMORY, 10);
    ck_assert_int_eq(sw_set_residency(P, va, 1, SW_RES_DEVICE), CUDA_ERROR_UNKNOWN);
    fake_fail_clear(FB);
    ck_assert_uint_eq(counters().host_in_use_bytes, 0);
    ck_assert_int_eq(sw_vmm_unmap(P, va, PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().host_in_use_bytes, 0);
    assert_no_violation();
}
END_TEST

/* The export of a handle whose page a move lost copies from its pages
 * (the old page kept the bytes), never from the VA that has none (on a
 * GPU an illegal address). */
START_TEST(an_export_after_a_lost_page_copies_from_the_pages)
{
    CUdeviceptr va;
    CUmemGenericAllocationHandle h, real;
    one_page_handle(&va, &h);
    fake_fail_after(FB, "map", 1, CUDA_ERROR_OUT_OF_MEMORY, 10);
    ck_assert_int_eq(sw_set_residency(P, va, 1, SW_RES_HOST), CUDA_ERROR_UNKNOWN);
    fake_fail_clear(FB);
    sw_backend be = fake_ops(FB);
    ck_assert_int_eq(be.page_create(be.ctx, 0, SW_LOC_DEVICE, PG, &real), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_promote(P, h, real, NULL), CUDA_SUCCESS);
    assert_no_violation();
    ck_assert_uint_eq(fake_mapped_handle(FB, va), real);
    ck_assert(verify(va, PG, 4)); /* the bytes the lost page kept */
}
END_TEST

/* The export of a handle the device cannot read at any mapping copies
 * from its pages at a scratch range; when that copy cannot be waited for,
 * the pages stay there and never reach the pool (released while mapped). */
START_TEST(pages_under_a_copy_that_may_still_run_stay_out_of_the_pool)
{
    env_up(8, false, 0);
    CUmemGenericAllocationHandle h, real;
    ck_assert_int_eq(sw_vmm_create(P, 0, PG, &h), CUDA_SUCCESS);
    sw_backend be = fake_ops(FB);
    ck_assert_int_eq(be.page_create(be.ctx, 0, SW_LOC_DEVICE, PG, &real), CUDA_SUCCESS);
    fake_fail_next(FB, "stream_sync", CUDA_ERROR_UNKNOWN);
    fake_on_call(FB, "stream_sync", 1, refuse_the_device_sync, NULL);
    ck_assert_int_eq(sw_vmm_promote(P, h, real, NULL), CUDA_ERROR_LAUNCH_FAILED);
    fake_fail_clear(FB);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    assert_no_violation();
    ck_assert_int_eq(be.synchronize(be.ctx, 0), CUDA_SUCCESS);
    ck_assert_int_eq(sw_policy_destroy(P), CUDA_SUCCESS); /* the pool's pages released, not that one */
    ck_assert_msg(fstats().violations == 0, "at destroy: %s", fake_violation(FB));
}
END_TEST

/* A fresh page's access refused (the run, then the page), and its undo, the
 * unmap, refused too (each tried twice): the page is still mapped at the
 * VA. The allocation answers the driver's error; the next one placed there
 * must not map over that page (the driver refuses a map over a mapping,
 * so every later allocation there failed), and the page is not leaked. */
START_TEST(a_fresh_page_whose_grant_and_unmap_are_refused_is_unmapped_later)
{
    env_up(8, false, 0);
    CUdeviceptr a, b;
    fake_fail_times(FB, "set_access", CUDA_ERROR_UNKNOWN, 2);
    fake_fail_also(FB, "unmap", CUDA_ERROR_UNKNOWN, 2);
    ck_assert_int_eq(sw_alloc(P, 0, PG, &a), CUDA_ERROR_UNKNOWN);
    fake_fail_clear(FB);
    assert_no_violation();
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(sw_alloc(P, 0, PG, &b), CUDA_SUCCESS);
        assert_no_violation();
        ck_assert_uint_ne(fake_mapped_handle(FB, b), 0);
        fill(b, PG, 2 + (uint64_t)i);
        ck_assert(verify(b, PG, 2 + (uint64_t)i));
        ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    }
    env_down(); /* no page left mapped under the arena, none leaked */
}
END_TEST

/* Once a move's copy is done (its stream synced): the VA's new page
 * refused twice, then every grant, and every unmap after the VA's own.
 * restore maps the old page back, gets no access, and cannot undo the map:
 * that page stays mapped at the VA. */
static void refuse_the_restore(void *arg)
{
    (void)arg;
    fake_fail_after(FB, "map", 0, CUDA_ERROR_UNKNOWN, 2);
    fake_fail_also(FB, "set_access", CUDA_ERROR_UNKNOWN, 100);
    fake_fail_also_after(FB, "unmap", 1, CUDA_ERROR_UNKNOWN, 100);
}

/* The VA is lost (as a_lost_va_is_let_go), but a page is still mapped
 * there: nothing is mapped over it (the driver refuses a map over a
 * mapping, so every allocation placed there failed), the next owner of the
 * VA gets a page once the driver lets the old one go, and no page leaks. */
START_TEST(a_page_left_at_a_lost_va_is_unmapped_before_the_va_is_reused)
{
    env_up(8, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &a), CUDA_SUCCESS);
    fill(a, PG, 1);
    fake_on_call(FB, "stream_sync", 1, refuse_the_restore, NULL);
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_ERROR_UNKNOWN);
    fake_fail_clear(FB);
    assert_no_violation();
    sw_residency w;
    ck_assert_int_eq(sw_get_residency(P, a, &w), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(sw_alloc(P, 0, PG, &b), CUDA_SUCCESS);
        assert_no_violation();
        fill(b, PG, 2 + (uint64_t)i);
        ck_assert(verify(b, PG, 2 + (uint64_t)i));
        ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    }
    env_down();
}
END_TEST

/* The same in a program mapping: the program's unmap unmaps the page left
 * there, so that its reservation can be freed (or mapped again). */
START_TEST(the_programs_unmap_of_a_lost_va_unmaps_the_page_left_there)
{
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    one_page_handle(&va, &h);
    fake_on_call(FB, "stream_sync", 1, refuse_the_restore, NULL);
    ck_assert_int_eq(sw_set_residency(P, va, 1, SW_RES_HOST), CUDA_ERROR_UNKNOWN);
    fake_fail_clear(FB);
    assert_no_violation();
    ck_assert_int_eq(sw_vmm_unmap(P, va, PG, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(fake_mapped_handle(FB, va), 0);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va, PG), CUDA_SUCCESS);
    assert_no_violation();
}
END_TEST

/* A move's access grant refused (the run, then the page, twice) and the
 * unmap undoing the remap refused too (twice): the VA keeps the new page,
 * mapped without access. Set after the scratch page's grant and the
 * scratch and VA unmaps that come before. */
static void refuse_grant_and_undo(int times)
{
    fake_fail_after(FB, "set_access", 1, CUDA_ERROR_UNKNOWN, times);
    fake_fail_also_after(FB, "unmap", 1, CUDA_ERROR_UNKNOWN, 2);
}

/* Spilled that way, the page is no source for a fill while it has no
 * access (on a GPU the copy faults the context); once the driver grants
 * it again, the fill brings the bytes back. */
START_TEST(a_page_left_without_access_is_not_copied_from)
{
    env_spill(8, 16);
    CUdeviceptr a;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &a), CUDA_SUCCESS);
    fill(a, PG, 6);
    refuse_grant_and_undo(3);
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_ERROR_UNKNOWN);
    fake_fail_clear(FB);
    assert_no_violation();
    fake_fail_times(FB, "set_access", CUDA_ERROR_UNKNOWN, 100); /* still refused */
    (void)sw_set_residency(P, a, 1, SW_RES_DEVICE);
    fake_fail_clear(FB);
    assert_no_violation(); /* no copy through the page without access */
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_DEVICE), CUDA_SUCCESS);
    assert_no_violation();
    ck_assert(verify(a, PG, 6));
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert(verify(a, PG, 6));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* Filled that way, then freed: the device page without access is not
 * cached for the next allocation there (a cached page is handed out as it
 * is, mapped: its owner's kernels would fault on it). */
START_TEST(a_page_left_without_access_is_not_handed_out_again)
{
    env_spill(8, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &a), CUDA_SUCCESS);
    fill(a, PG, 7);
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_SUCCESS);
    refuse_grant_and_undo(3);
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_DEVICE), CUDA_ERROR_UNKNOWN);
    fake_fail_clear(FB);
    assert_no_violation();
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().noaccess_pages, 1);
    ck_assert_int_eq(sw_alloc(P, 0, PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(b, a);
    /* Granted, its record goes: no later allocation comes by regrant. */
    ck_assert_uint_eq(counters().noaccess_pages, 0);
    sw_backend be = fake_ops(FB);
    ck_assert_int_eq(be.copy(be.ctx, 0, b, b, PG, S1), CUDA_SUCCESS); /* the device can reach it */
    fill(b, PG, 8);
    ck_assert(verify(b, PG, 8));
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* cuMemGetInfo's free (the limit less sw_held_bytes) after a move lost a
 * device page for good: an allocation of all of it succeeds with spill
 * off, as the driver's free promises; the lost page is out of the pool. */
START_TEST(free_memory_after_a_lost_page_can_be_allocated)
{
    env_up(8, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &a), CUDA_SUCCESS);
    fill(a, PG, 1);
    fake_fail_after(FB, "map", 1, CUDA_ERROR_OUT_OF_MEMORY, 10); /* as a_lost_va_is_let_go */
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_ERROR_UNKNOWN);
    fake_fail_clear(FB);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    uint64_t held = sw_held_bytes(P, 0);
    ck_assert_uint_lt(held, 8 * PG);
    ck_assert_int_eq(sw_alloc(P, 0, 8 * PG - held, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(sw_held_bytes(P, 0), 8 * PG);
    ck_assert_uint_eq(counters().faulted_bytes, PG); /* the lost page, for good */
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    assert_no_violation();
}
END_TEST

/* A fresh page stranded (its grant and unmap refused): out of the pool
 * while the driver keeps it mapped, so held (the pool can hand out 6
 * pages, not 7), and free again once the next allocation there unmaps it. */
START_TEST(a_stranded_page_is_held_until_the_driver_lets_it_go)
{
    env_up(8, false, 0);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &a), CUDA_SUCCESS);
    fake_fail_times(FB, "set_access", CUDA_ERROR_UNKNOWN, 2);
    fake_fail_also(FB, "unmap", CUDA_ERROR_UNKNOWN, 2);
    ck_assert_int_eq(sw_alloc(P, 0, PG, &b), CUDA_ERROR_UNKNOWN); /* its page stranded */
    fake_fail_clear(FB);
    ck_assert_uint_eq(sw_held_bytes(P, 0), 2 * PG);
    ck_assert_uint_eq(counters().faulted_bytes, PG);
    ck_assert_int_eq(sw_alloc(P, 0, PG, &b), CUDA_SUCCESS); /* placed there: unmapped first */
    ck_assert_uint_eq(sw_held_bytes(P, 0), 2 * PG);
    ck_assert_uint_eq(counters().faulted_bytes, 0);
    ck_assert_int_eq(sw_alloc(P, 0, 6 * PG, &c), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    env_down();
}
END_TEST

void move_faults_page_tests(TCase *tc)
{
    tcase_add_test(tc, a_handles_lost_page_is_counted_once);
    tcase_add_test(tc, an_export_after_a_lost_page_copies_from_the_pages);
    tcase_add_test(tc, pages_under_a_copy_that_may_still_run_stay_out_of_the_pool);
    tcase_add_test(tc, a_fresh_page_whose_grant_and_unmap_are_refused_is_unmapped_later);
    tcase_add_test(tc, a_page_left_at_a_lost_va_is_unmapped_before_the_va_is_reused);
    tcase_add_test(tc, the_programs_unmap_of_a_lost_va_unmaps_the_page_left_there);
    tcase_add_test(tc, a_page_left_without_access_is_not_copied_from);
    tcase_add_test(tc, a_page_left_without_access_is_not_handed_out_again);
    tcase_add_test(tc, free_memory_after_a_lost_page_can_be_allocated);
    tcase_add_test(tc, a_stranded_page_is_held_until_the_driver_lets_it_go);
}
