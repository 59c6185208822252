/* Spill and fill: a full pool moves its coldest live pages to the host and
 * keeps every byte and address; fill brings them back when device pages are
 * free; no page moves while a work bracket is open or work is in flight.
 *
 * One suite in four files: here spill itself and the kinds of memory it
 * moves (spans, slabs, program VMM, mappings without access, foreign
 * pointers); then fill (spill_fill.c), the gate (spill_gate.c) and the
 * host-page reserve (spill_reserve.c), sharing spill_rig.h. */
#include "tests/unit/policy/spill_rig.h"

#include "policy/internal.h"

static sw_residency where_is(CUdeviceptr va)
{
    sw_residency w;
    ck_assert_int_eq(sw_get_residency(P, va, &w), CUDA_SUCCESS);
    return w;
}

START_TEST(full_pool_spills_coldest_and_keeps_bytes)
{
    env_spill(8, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 6 * PG, &a), CUDA_SUCCESS);
    fill(a, 6 * PG, 1);
    fake_launch(FB, S1, a, 6 * PG); /* in flight: the spill must sync first */
    ck_assert_int_eq(sw_alloc(P, 0, 6 * PG, &b), CUDA_SUCCESS);
    assert_no_violation();
    fill(b, 6 * PG, 2);
    ck_assert(verify(a, 6 * PG, 1));
    ck_assert(verify(b, 6 * PG, 2));
    ck_assert_uint_eq(host_pages_in(a, 6), 4);
    ck_assert_uint_eq(host_pages_in(b, 6), 0); /* the new allocation is on the device */
    sw_counters c = counters();
    ck_assert_uint_eq(c.host_in_use_bytes, 4 * PG);
    ck_assert_uint_eq(c.spill_bytes, 4 * PG);
    ck_assert_uint_eq(c.spill_events, 1);
    ck_assert_uint_eq(c.in_use_bytes, 12 * PG);
    ck_assert_uint_le(fstats().max_dev_pages, 8);
    sw_spill_stats st; /* the lock-free view agrees */
    sw_get_spill_stats(P, 0, &st);
    ck_assert_uint_eq(st.host_in_use_bytes, c.host_in_use_bytes);
    ck_assert_uint_eq(st.host_bytes, c.host_bytes);
    ck_assert_uint_eq(st.spill_bytes, c.spill_bytes);
    ck_assert_uint_eq(st.spill_events, 1);
    sw_get_spill_stats(P, 7, &st);
    ck_assert_uint_eq(st.host_bytes + st.spill_events, 0);
    /* Addresses answer as before: the program's allocation, device memory. */
    CUdeviceptr base;
    size_t size;
    int dev;
    ck_assert_int_eq(sw_lookup(P, a + 5 * PG, &base, &size, &dev, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(base, a);
    ck_assert_uint_eq(size, 6 * PG);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(least_recently_touched_spills_first)
{
    env_spill(6, 16);
    CUdeviceptr a, b, c, d;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &c), CUDA_SUCCESS);
    fill(b, 2 * PG, 7);
    ck_assert(!sw_touch(P, a + 100)); /* a is now warmer than b; on the device */
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &d), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(a, 2), 0);
    ck_assert_uint_eq(host_pages_in(b, 2), 2);
    ck_assert_uint_eq(host_pages_in(c, 2), 0);
    ck_assert(verify(b, 2 * PG, 7));
    ck_assert(sw_touch(P, b + PG + 1)); /* tells the caller a fill may help */
    env_down();
}
END_TEST

/* A use stamped by another thread just after this one read the clock (the
 * stamp past a half-life boundary this thread's clock has not reached) is
 * as recent as now, not 2^64 ticks old: read or touched with the older
 * clock, the owner keeps its uses. Were they decayed away, the hottest
 * buffer would read as never used and spill first. White-box: the clock
 * and the heat records are internal. */
START_TEST(a_stamp_ahead_of_the_readers_clock_keeps_its_uses)
{
    sw_heat h = {0};
    atomic_store(&h.touched, 4096);
    atomic_store(&h.uses, 40);
    ck_assert_uint_eq(sw_heat_uses(&h, 4094), 40);
    ck_assert_uint_eq(sw_heat_decayed(40, 4096, 4095), 40);
    ck_assert_uint_eq(sw_heat_decayed(40, 3072, 4096), 20); /* one boundary crossed */
    ck_assert_uint_gt(sw_heat_rate(&h, 4094), 0);

    env_spill(4, 16);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    fill(a, 2 * PG, 11);
    fill(b, 2 * PG, 12);
    /* a used 40 times and b 8, both last at 4096 by another thread, while
     * this one still reads 4094 and touches a once more. */
    sw_heat *ha = sw_heat_at(P, a), *hb = sw_heat_at(P, b);
    ck_assert_ptr_nonnull(ha);
    ck_assert_ptr_nonnull(hb);
    atomic_store(&ha->touched, 4096);
    atomic_store(&ha->uses, 40);
    atomic_store(&hb->touched, 4096);
    atomic_store(&hb->uses, 8);
    atomic_store(&P->clock, 4094);
    ck_assert(!sw_touch(P, a));
    ck_assert_uint_ge(atomic_load(&ha->touched), 4096); /* never moved back */
    ck_assert_uint_ge(sw_heat_uses(ha, 4100), 40);
    /* The clock goes on; a full pool spills b, the colder, not a. */
    atomic_store(&P->clock, 4100);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &c), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(a, 2), 0);
    ck_assert_uint_eq(host_pages_in(b, 2), 2);
    ck_assert(verify(a, 2 * PG, 11));
    ck_assert(verify(b, 2 * PG, 12));
    env_down();
}
END_TEST

/* The pages an allocation is being backed on are not its own spill's
 * victims: a block that starts in a page another block fills the rest of
 * keeps that page on the device and gets host pages for the rest, rather
 * than pushing the shared page out to map the new one in its place. */
START_TEST(an_allocation_never_spills_its_own_pages)
{
    env_spill(1, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, MiB, &a), CUDA_SUCCESS);
    fill(a, MiB, 5);
    ck_assert_int_eq(sw_alloc(P, 0, PG + MiB / 2, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(b, a + MiB); /* in a's page, and one page more */
    ck_assert_uint_eq(host_pages_in(a, 1), 0);
    ck_assert_uint_eq(host_pages_in(b + MiB, 1), 1);
    ck_assert_uint_eq(counters().spill_events, 0);
    ck_assert(verify(a, MiB, 5));
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(spill_off_fails_at_the_limit)
{
    env_up(4, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_ERROR_OUT_OF_MEMORY);
    sw_counters c = counters();
    ck_assert_uint_eq(c.host_bytes, 0);
    ck_assert_uint_eq(c.spill_events, 0);
    ck_assert_uint_eq(c.ooms, 1);
    env_down();
}
END_TEST

START_TEST(host_limit_bounds_spill_and_loses_nothing)
{
    env_spill(4, 2);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 3);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS); /* 2 pages spill */
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &c), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert(verify(a, 4 * PG, 3));
    sw_counters k = counters();
    ck_assert_uint_eq(k.host_bytes, 2 * PG);
    ck_assert_uint_eq(k.ooms, 1);
    /* An allocation larger than the device limit never fits. */
    ck_assert_int_eq(sw_alloc(P, 0, 5 * PG, &c), CUDA_ERROR_OUT_OF_MEMORY);
    env_down();
}
END_TEST

/* Inside one big mapping (spans), a touch tells whether the buffer's own
 * pages are on the host, whichever other page of the mapping lives there.
 * What it costs (the same for a buffer of 4,096 pages as for one of 16:
 * design.md, touching a 40 GiB tensor costs a store or two, not one per
 * page) is policy_bench's "touch inside spans" line: speed lives in
 * benchmarks, not in timed tests. */
START_TEST(span_touch_answers_for_the_buffers_own_pages)
{
    enum { BIG = 4096, SMALL = 16, NP = BIG + 2 * SMALL };
    FB = fake_create(PG, NP);
    ck_assert_ptr_nonnull(FB);
    fake_no_bytes(FB); /* 4,000 pages: bookkeeping only */
    sw_backend be = fake_ops(FB);
    ck_assert_int_eq(sw_policy_create(&be, &P), CUDA_SUCCESS);
    sw_device_config cfg = {.limit = NP * PG, .host_limit = 64 * PG, .spill = true};
    ck_assert_int_eq(sw_device_init(P, 0, &cfg), CUDA_SUCCESS);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, NP * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(sw_vmm_create(P, 0, NP * PG, &h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, NP * PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, va, NP * PG, 1), CUDA_SUCCESS);
    /* Three buffers: BIG pages, SMALL pages, SMALL pages. */
    CUdeviceptr big = va, small = va + BIG * PG, last = small + SMALL * PG;
    ck_assert(!sw_touch_range(P, big, BIG * PG));
    ck_assert(!sw_touch_range(P, small, SMALL * PG));
    ck_assert(!sw_touch_range(P, last, SMALL * PG));
    ck_assert_int_eq(sw_set_residency(P, last + 3 * PG, 1, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert(!sw_touch(P, big));
    ck_assert(!sw_touch(P, small));
    ck_assert(sw_touch(P, last));
    ck_assert_int_eq(sw_set_residency(P, big + 100 * PG, 1, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert(sw_touch(P, big));
    ck_assert(!sw_touch(P, small));
    ck_assert_int_eq(sw_set_residency(P, big + 100 * PG, 1, SW_RES_DEVICE), CUDA_SUCCESS);
    ck_assert(!sw_touch(P, big));
    ck_assert_int_eq(sw_set_residency(P, last + 3 * PG, 1, SW_RES_DEVICE), CUDA_SUCCESS);
    ck_assert(!sw_touch(P, last));
    ck_assert_int_eq(sw_vmm_unmap(P, va, NP * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va, NP * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(small_allocations_spill_with_their_slab)
{
    env_spill(3, 8);
    CUdeviceptr s[8], big;
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(sw_alloc(P, 0, 1000, &s[i]), CUDA_SUCCESS);
        fill(s[i], 1000, 100 + (uint64_t)i);
    }
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &big), CUDA_SUCCESS);
    ck_assert_int_eq(where_is(s[0]), SW_RES_HOST);
    for (int i = 0; i < 8; i++)
        ck_assert(verify(s[i], 1000, 100 + (uint64_t)i));
    ck_assert_int_eq(sw_free(P, big), CUDA_SUCCESS);
    ck_assert_int_eq(sw_fill(P, s[5]), CUDA_SUCCESS);
    ck_assert_int_eq(where_is(s[0]), SW_RES_DEVICE);
    for (int i = 0; i < 8; i++)
        ck_assert(verify(s[i], 1000, 100 + (uint64_t)i));
    env_down();
}
END_TEST

START_TEST(program_vmm_pages_spill_and_make_room_for_handles)
{
    env_spill(4, 8);
    CUdeviceptr va, a;
    ck_assert_int_eq(fake_reserve(FB, 2 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h, h2;
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 2 * PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, va, 2 * PG, 1), CUDA_SUCCESS);
    fill(va, 2 * PG, 21);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    fill(a, 2 * PG, 22);
    /* A new handle needs 2 pages: the mapping is colder than a. */
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h2), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(va, 2), 2);
    ck_assert(verify(va, 2 * PG, 21)); /* access granted again on the host pages */
    ck_assert(verify(a, 2 * PG, 22));
    ck_assert_int_eq(sw_vmm_release(P, h2, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_fill(P, va + PG), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(va, 2), 0);
    ck_assert(verify(va, 2 * PG, 21));
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va, 2 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* A program mapping the device was given no access to yet (before its
 * cuMemSetAccess) cannot be copied: on a GPU the copy would fault. Spill
 * passes it by, however cold, and takes what it can move. */
START_TEST(spill_passes_by_mappings_without_access)
{
    env_spill(4, 8);
    CUdeviceptr va, a;
    ck_assert_int_eq(fake_reserve(FB, 2 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h, h2;
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 2 * PG, 0, h), CUDA_SUCCESS); /* no access */
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    fill(a, 2 * PG, 22);
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h2), CUDA_SUCCESS);
    assert_no_violation();
    ck_assert_uint_eq(host_pages_in(va, 2), 0);
    ck_assert_uint_eq(host_pages_in(a, 2), 2);
    ck_assert(verify(a, 2 * PG, 22));
    ck_assert_int_eq(sw_vmm_release(P, h2, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va, 2 * PG), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(foreign_pointers)
{
    env_spill(4, 4);
    int x;
    ck_assert(!sw_touch(P, (CUdeviceptr)(uintptr_t)&x));
    ck_assert(!sw_touch(P, 0));
    ck_assert_int_eq(sw_fill(P, (CUdeviceptr)(uintptr_t)&x), CUDA_ERROR_NOT_FOUND);
    ck_assert(!sw_touch(NULL, 1));
    ck_assert_int_eq(sw_fill(NULL, 1), CUDA_ERROR_NOT_FOUND);
    env_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_spill");
    TCase *tc = tcase_create("spill");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, full_pool_spills_coldest_and_keeps_bytes);
    tcase_add_test(tc, least_recently_touched_spills_first);
    tcase_add_test(tc, a_stamp_ahead_of_the_readers_clock_keeps_its_uses);
    tcase_add_test(tc, an_allocation_never_spills_its_own_pages);
    tcase_add_test(tc, spill_off_fails_at_the_limit);
    tcase_add_test(tc, host_limit_bounds_spill_and_loses_nothing);
    spill_fill_tests(tc);
    tcase_add_test(tc, span_touch_answers_for_the_buffers_own_pages);
    tcase_add_test(tc, small_allocations_spill_with_their_slab);
    tcase_add_test(tc, program_vmm_pages_spill_and_make_room_for_handles);
    tcase_add_test(tc, spill_passes_by_mappings_without_access);
    tcase_add_test(tc, foreign_pointers);
    spill_gate_tests(tc);
    spill_reserve_tests(tc);
    suite_add_tcase(s, tc);
    return s;
}
