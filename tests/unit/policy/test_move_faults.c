/* The move paths (spill, fill, an export's promotion, the program's own
 * unmap) when the driver refuses a step: no byte lost, no VA left unmapped
 * that the program still owns, no page leaked or handed out while mapped,
 * no unmap under a copy that may still run (the remap hazard), and a VA
 * that could not be backed again let go of, not moved or reused as if
 * mapped.
 *
 * One suite in four files: here an export's promotion and VAs lost; then
 * the pages a move lost or left behind (move_faults_pages.c), refused
 * spills (move_faults_spills.c) and the sweep of every step
 * (move_faults_sweep.c), sharing move_faults_rig.h. */
#include "tests/unit/policy/move_faults_rig.h"

/* A pool handle of one page mapped at two VAs (aliases) with access, its
 * bytes seed 5, and a driver allocation to promote it into. */
static void aliased_handle(CUdeviceptr *va, CUmemGenericAllocationHandle *h, CUmemGenericAllocationHandle *real)
{
    sw_device_config cfg = {.limit = 16 * PG, .preallocate = true, .host_limit = 64 * PG};
    env_up_cfg(&cfg, 18);
    sw_backend be = fake_ops(FB);
    ck_assert_int_eq(fake_reserve(FB, 2 * PG, va), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_create(P, 0, PG, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, *va, PG, 0, *h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, *va + PG, PG, 0, *h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, *va, 2 * PG, 1), CUDA_SUCCESS);
    fill(*va, PG, 5);
    ck_assert(verify(*va + PG, PG, 5));
    ck_assert_int_eq(be.page_create(be.ctx, 0, SW_LOC_DEVICE, PG, real), CUDA_SUCCESS);
}

/* The second mapping's move onto the driver allocation is refused after
 * the first one's succeeded: the first goes back to the pool's page, so
 * the two still show one memory, and the export can be tried again. */
START_TEST(a_promotion_refused_halfway_keeps_the_aliases)
{
    CUdeviceptr va;
    CUmemGenericAllocationHandle h, real, real2;
    aliased_handle(&va, &h, &real);
    /* map 1: real at the scratch range; 2: real at one mapping; 3: the other */
    fake_fail_after(FB, "map", 2, CUDA_ERROR_OUT_OF_MEMORY, 1);
    ck_assert_int_eq(sw_vmm_promote(P, h, real, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    assert_no_violation();
    ck_assert_uint_eq(fake_mapped_handle(FB, va), fake_mapped_handle(FB, va + PG));
    ck_assert_uint_ne(fake_mapped_handle(FB, va), real);
    fill(va + PG, PG, 9);
    ck_assert(verify(va, PG, 9));
    sw_backend be = fake_ops(FB);
    ck_assert_int_eq(be.page_create(be.ctx, 0, SW_LOC_DEVICE, PG, &real2), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_promote(P, h, real2, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(fake_mapped_handle(FB, va), real2);
    ck_assert_uint_eq(fake_mapped_handle(FB, va + PG), real2);
    ck_assert(verify(va, PG, 9));
    assert_no_violation();
}
END_TEST

/* The copy into the driver allocation: its stream sync refused, the device
 * sync covers it and the export goes on; both refused, the copy may still
 * run, and nothing it reads or writes is unmapped under it. */
START_TEST(a_promotion_whose_copy_cannot_be_waited_for_unmaps_nothing)
{
    CUdeviceptr va;
    CUmemGenericAllocationHandle h, real;
    aliased_handle(&va, &h, &real);
    fake_fail_next(FB, "stream_sync", CUDA_ERROR_UNKNOWN);
    ck_assert_int_eq(sw_vmm_promote(P, h, real, NULL), CUDA_SUCCESS);
    ck_assert(verify(va, PG, 5));
    assert_no_violation();
}
END_TEST

START_TEST(a_promotion_whose_copy_may_still_run_unmaps_nothing)
{
    CUdeviceptr va;
    CUmemGenericAllocationHandle h, real;
    aliased_handle(&va, &h, &real);
    fake_fail_next(FB, "stream_sync", CUDA_ERROR_UNKNOWN);
    fake_on_call(FB, "stream_sync", 1, refuse_the_device_sync, NULL);
    ck_assert_int_eq(sw_vmm_promote(P, h, real, NULL), CUDA_ERROR_LAUNCH_FAILED);
    assert_no_violation(); /* the copy is in flight until a sync covers it */
    ck_assert(verify(va, PG, 5)); /* the program's mappings kept their pages */
    ck_assert_uint_eq(fake_mapped_handle(FB, va), fake_mapped_handle(FB, va + PG));
}
END_TEST

/* Every way to back the VA again refused: the move reports it, and the page
 * table lets the VA go: it is not moved again (a copy from an unmapped VA
 * ends a GPU context), and once freed, its next owner gets a mapped page. */
START_TEST(a_lost_va_is_let_go)
{
    env_up(8, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &a), CUDA_SUCCESS);
    fill(a, PG, 1);
    /* After the scratch page's map: the VA's new page twice, then restore's
     * old and new page twice each, each tried twice. */
    fake_fail_after(FB, "map", 1, CUDA_ERROR_OUT_OF_MEMORY, 10);
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_ERROR_UNKNOWN);
    fake_fail_clear(FB);
    ck_assert_uint_eq(fake_mapped_handle(FB, a), 0);
    sw_residency w;
    ck_assert_int_eq(sw_get_residency(P, a, &w), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_ERROR_INVALID_VALUE);
    assert_no_violation();
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, PG, &b), CUDA_SUCCESS);
    ck_assert_uint_ne(fake_mapped_handle(FB, b), 0);
    fill(b, PG, 2);
    ck_assert(verify(b, PG, 2));
    assert_no_violation();
}
END_TEST

/* Access refused on every page that could back the VA: each map that got
 * no access is undone before the next is tried (the driver refuses a map
 * over a mapping), and the VA is let go. */
START_TEST(maps_without_access_are_undone)
{
    env_up(8, false, 0);
    CUdeviceptr a;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &a), CUDA_SUCCESS);
    fill(a, PG, 1);
    fake_fail_after(FB, "set_access", 1, CUDA_ERROR_UNKNOWN, 50); /* after the scratch page's */
    ck_assert_int_ne(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_SUCCESS);
    fake_fail_clear(FB);
    assert_no_violation();
    sw_residency w;
    ck_assert_int_eq(sw_get_residency(P, a, &w), CUDA_ERROR_NOT_FOUND);
    ck_assert_uint_eq(fake_mapped_handle(FB, a), 0);
}
END_TEST

/* CUDA_ERROR_UNKNOWN from the driver is an error like any other, not the
 * sign of a lost VA: the VA's unmap refused leaves the old page there, and
 * the staged page goes back to the pool (env_down counts every page). */
START_TEST(the_drivers_unknown_error_is_not_a_lost_va)
{
    env_up(8, false, 0);
    CUdeviceptr a;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &a), CUDA_SUCCESS);
    fill(a, PG, 1);
    fake_fail_times(FB, "unmap", CUDA_ERROR_UNKNOWN, 2); /* the VA's unmap, tried twice */
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_ERROR_UNKNOWN);
    sw_residency w;
    ck_assert_int_eq(sw_get_residency(P, a, &w), CUDA_SUCCESS);
    ck_assert_int_eq(w, SW_RES_DEVICE);
    ck_assert(verify(a, PG, 1));
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert(verify(a, PG, 1));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* The program's unmap of a two-page mapping, the second page's unmap
 * refused: the mapping stays whole (the first page mapped back, with its
 * bytes and access), its pages stay out of the pool, and the program's
 * retry is spillway's again. */
START_TEST(a_refused_program_unmap_keeps_the_mapping_whole)
{
    env_up(8, false, 0);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, 2 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h, h2;
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 2 * PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, va, 2 * PG, 1), CUDA_SUCCESS);
    fill(va, 2 * PG, 3);
    bool gone = true;
    ck_assert_int_eq(sw_vmm_release(P, h, &gone), CUDA_SUCCESS);
    ck_assert(!gone); /* mapped: kept */
    fake_fail_after(FB, "unmap", 1, CUDA_ERROR_UNKNOWN, 1);
    sw_vmm_gone g;
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, &g), CUDA_ERROR_UNKNOWN);
    ck_assert_uint_eq(g.n, 0);
    free(g.h);
    assert_no_violation();
    ck_assert(verify(va, 2 * PG, 3));
    sw_residency w;
    ck_assert_int_eq(sw_get_residency(P, va, &w), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_check(P, va, 2 * PG), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, &g), CUDA_SUCCESS);
    ck_assert_uint_eq(g.n, 1);
    free(g.h);
    ck_assert_int_eq(sw_get_residency(P, va, &w), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h2), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 2 * PG, 0, h2), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h2, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va, 2 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_move_faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_promotion_refused_halfway_keeps_the_aliases);
    tcase_add_test(tc, a_promotion_whose_copy_cannot_be_waited_for_unmaps_nothing);
    tcase_add_test(tc, a_promotion_whose_copy_may_still_run_unmaps_nothing);
    tcase_add_test(tc, a_lost_va_is_let_go);
    tcase_add_test(tc, maps_without_access_are_undone);
    tcase_add_test(tc, the_drivers_unknown_error_is_not_a_lost_va);
    tcase_add_test(tc, a_refused_program_unmap_keeps_the_mapping_whole);
    move_faults_page_tests(tc);
    move_faults_spill_tests(tc);
    move_faults_sweep_tests(tc);
    suite_add_tcase(s, tc);
    return s;
}
