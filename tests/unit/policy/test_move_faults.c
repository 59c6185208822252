/* The move paths (spill, fill, an export's promotion, the program's own
 * unmap) when the driver refuses a step: no byte lost, no VA left unmapped
 * that the program still owns, no page leaked or handed out while mapped,
 * no unmap under a copy that may still run (the remap hazard), and a VA
 * that could not be backed again let go of, not moved or reused as if
 * mapped. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/policy/helpers.h"

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

/* The device sync after the refused stream sync is refused too. */
static void refuse_the_device_sync(void *arg)
{
    (void)arg;
    fake_fail_also(FB, "synchronize", CUDA_ERROR_LAUNCH_FAILED, 1);
}

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

/* Spill on (8 pages, 16 on the host); a one-page pool handle mapped at
 * *va with access, its bytes seed 4. */
static void one_page_handle(CUdeviceptr *va, CUmemGenericAllocationHandle *h)
{
    sw_device_config cfg = {.limit = 8 * PG, .host_limit = 16 * PG, .spill = true};
    env_up_cfg(&cfg, 8);
    ck_assert_int_eq(fake_reserve(FB, PG, va), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_create(P, 0, PG, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, *va, PG, 0, *h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, *va, PG, 1), CUDA_SUCCESS);
    fill(*va, PG, 4);
}

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

/* One case of the sweep, in a child: NULL when every invariant held, else
 * what broke. Its pages are 64 KiB: a move makes the same driver calls,
 * page by page, whatever their size, and 840 cases of 2 MiB pages spent a
 * minute and a half of the suite copying bytes and faulting them in. */
#define SWEEP_PG ((size_t)64 << 10)

static const char *sweep_case(const char *op, int skip, int times, CUresult err, bool fill_back)
{
    sw_device_config cfg = {.limit = 8 * SWEEP_PG, .host_limit = 16 * SWEEP_PG, .spill = true};
    env_up_paged(&cfg, SWEEP_PG, 8);
    CUdeviceptr a;
    if (sw_alloc(P, 0, 4 * SWEEP_PG, &a) != CUDA_SUCCESS)
        return "alloc";
    fill(a, 4 * SWEEP_PG, 3);
    if (fill_back && sw_set_residency(P, a, 4, SW_RES_HOST) != CUDA_SUCCESS)
        return "spill before the fill";
    fake_fail_after(FB, op, skip, err, times);
    (void)sw_set_residency(P, a, 4, fill_back ? SW_RES_DEVICE : SW_RES_HOST);
    fake_fail_clear(FB);
    for (int i = 0; i < 4; i++)
        if (!fake_mapped_handle(FB, a + (CUdeviceptr)i * SWEEP_PG))
            return "a VA left unmapped";
    if (!verify(a, 4 * SWEEP_PG, 3))
        return "bytes lost";
    if (fstats().violations)
        return fake_violation(FB);
    if (sw_set_residency(P, a, 4, SW_RES_DEVICE) != CUDA_SUCCESS || !verify(a, 4 * SWEEP_PG, 3))
        return "filled back afterwards";
    if (sw_free(P, a) != CUDA_SUCCESS)
        return "free";
    if (sw_policy_destroy(P) != CUDA_SUCCESS)
        return "destroy";
    fake_stats s = fstats();
    if (s.violations)
        return fake_violation(FB);
    if (s.live_dev_pages || s.live_host_pages || s.live_mappings)
        return "a page or mapping leaked";
    return NULL;
}

/* One driver step of a 4-page spill or fill refused, once to three times in
 * a row, after 0 to 9 calls of it passed, with two error codes (UNKNOWN
 * among them: the driver's, not a sentinel of ours). */
START_TEST(every_refused_step_of_a_move_keeps_the_bytes)
{
    static const char *ops[] = {"map", "unmap", "set_access", "copy", "stream_sync", "synchronize",
                                "page_create"};
    static const CUresult errs[] = {CUDA_ERROR_UNKNOWN, CUDA_ERROR_OUT_OF_MEMORY};
    int failed = 0, cases = 0;
    for (int back = 0; back < 2; back++)
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
            for (size_t e = 0; e < 2; e++)
                for (int skip = 0; skip < 10; skip++)
                    for (int times = 1; times <= 3; times++) {
                        fflush(stdout);
                        pid_t pid = fork();
                        ck_assert_int_ge(pid, 0);
                        if (pid == 0) {
                            const char *why = sweep_case(ops[o], skip, times, errs[e], back);
                            if (why)
                                printf("%s refused (%d) after %d, %d time(s), %s: %s\n", ops[o],
                                       (int)errs[e], skip, times, back ? "fill" : "spill", why);
                            fflush(stdout);
                            _exit(why ? 1 : 0);
                        }
                        int st;
                        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
                        cases++;
                        if (!WIFEXITED(st) || WEXITSTATUS(st)) {
                            if (!WIFEXITED(st))
                                printf("%s refused (%d) after %d, %d time(s), %s: died (status %d)\n",
                                       ops[o], (int)errs[e], skip, times, back ? "fill" : "spill", st);
                            failed++;
                        }
                    }
    ck_assert_msg(failed == 0, "%d of %d cases broke an invariant (listed above)", failed, cases);
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
    tcase_add_test(tc, a_refused_spill_leaves_the_allocation_host_pages);
    tcase_add_test(tc, a_refused_spill_leaves_a_handle_host_pages);
    tcase_add_test(tc, a_spill_refused_for_a_dead_context_returns_the_error);
    tcase_add_test(tc, a_spill_that_lost_a_va_returns_the_error);
    tcase_add_test(tc, a_spill_ahead_that_lost_a_va_returns_the_error);
    tcase_add_test(tc, a_spill_ahead_for_a_handle_that_lost_a_va_returns_the_error);
    tcase_add_test(tc, every_refused_step_of_a_move_keeps_the_bytes);
    suite_add_tcase(s, tc);
    return s;
}
