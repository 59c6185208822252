/* The policy spill suite (test_spill.c): fill. Host data comes back into
 * free device pages only, to data at least half as hot as the device's
 * coldest, by the no-thrash rule's swap at its edges, and never for host
 * pages that cannot move. */
#include "tests/unit/policy/spill_rig.h"

#include "policy/internal.h"

START_TEST(fill_uses_free_device_pages_only)
{
    env_spill(4, 8);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    fill(a, 2 * PG, 11);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(a, 2), 2);
    /* No free device page: nothing moves, and no sync is spent finding out. */
    uint64_t syncs = fstats().syncs;
    ck_assert_int_eq(sw_fill(P, a), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().syncs, syncs);
    ck_assert_uint_eq(host_pages_in(a, 2), 2);
    ck_assert_uint_eq(host_pages_in(b, 4), 0); /* fill never spills others */
    /* Freed memory makes room: the fill takes it and the bytes come along. */
    fake_launch(FB, S1, b, 4 * PG);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_fill(P, a + 3), CUDA_SUCCESS);
    assert_no_violation();
    ck_assert_uint_eq(host_pages_in(a, 2), 0);
    ck_assert(verify(a, 2 * PG, 11));
    ck_assert(!sw_touch(P, a));
    sw_counters c = counters();
    ck_assert_uint_eq(c.host_in_use_bytes, 0);
    ck_assert_uint_eq(c.fill_bytes, 2 * PG);
    ck_assert_uint_eq(c.fill_events, 1);
    ck_assert_int_eq(sw_fill(P, a), CUDA_SUCCESS); /* nothing left to do */
    ck_assert_uint_eq(counters().fill_events, 1);
    env_down();
}
END_TEST

/* Sets an owner's heat so that its rate at the clock now is uses x 1024 /
 * 1000 (1000 ticks old, last used now). White-box, as above. */
static void set_rate(CUdeviceptr va, uint64_t now, uint32_t uses)
{
    sw_heat *h = sw_heat_at(P, va);
    ck_assert_ptr_nonnull(h);
    atomic_store(&h->born, now - 1000);
    atomic_store(&h->touched, now);
    atomic_store(&h->uses, uses);
    ck_assert_uint_eq(sw_heat_rate(h, now), uses * 1024 / 1000);
}

/* Free device pages go to host data used at least half as often as the
 * coldest data on the device, not to data used less (a step's freed
 * buffers would pull its optimizer state in for the next allocations to
 * push out again). */
START_TEST(fill_takes_free_pages_for_data_at_least_half_as_hot)
{
    env_spill(8, 16);
    CUdeviceptr hot, r;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &hot), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &r), CUDA_SUCCESS);
    fill(r, 2 * PG, 21);
    ck_assert_int_eq(sw_set_residency(P, r, 2, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(r, 2), 2);
    const uint64_t now = 1 << 20;
    atomic_store(&P->clock, now);
    set_rate(hot, now, 100); /* the device's coldest: rate 102 */
    set_rate(r, now, 40);    /* 40: less than half */
    ck_assert_int_eq(sw_fill(P, r), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(r, 2), 2);
    set_rate(r, now, 60); /* 61: at least half */
    ck_assert_int_eq(sw_fill(P, r), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(r, 2), 0);
    ck_assert_uint_eq(host_pages_in(hot, 2), 0);
    ck_assert(verify(r, 2 * PG, 21));
    assert_no_violation();
    env_down();
}
END_TEST

/* The no-thrash rule's swap, at its edges (fill.c). A swap that found no
 * victim gives its budget back and leaves a floor: data used no more than
 * an eighth more often is not swapped for a while, data used more is at
 * once (floor_after's + 1). A victim may be used up to two thirds as often
 * as what comes in, that much included. White-box, the clock held. */
START_TEST(swap_edges_floor_budget_and_victim_rate)
{
    env_spill(4, 16);
    CUdeviceptr r, hot, cold;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &r), CUDA_SUCCESS);
    fill(r, 2 * PG, 41);
    ck_assert_int_eq(sw_set_residency(P, r, 2, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &hot), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &cold), CUDA_SUCCESS);
    fill(cold, 2 * PG, 42);
    ck_assert_uint_eq(host_pages_in(hot, 2) + host_pages_in(cold, 2), 0); /* the device is full */
    sw_device *d = &P->dev[0];
    const uint64_t now = 1 << 20;
    /* r at rate 51: victims up to 34; the device's data is hotter. */
    atomic_store(&P->clock, now);
    set_rate(hot, now, 100);
    set_rate(cold, now, 50);
    set_rate(r, now, 50);
    ck_assert_int_eq(sw_fill(P, r), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(r, 2), 2);
    uint64_t floor = atomic_load(&d->swap_floor), tokens = atomic_load(&d->swap_tokens);
    ck_assert_uint_eq(floor, 51 + 51 / 8 + 1); /* 58 */
    ck_assert_uint_eq(tokens, 8);              /* the budget's cap, given back */
    /* r at the floor (58), not under it: swapped, for a victim of rate 38,
     * two thirds of 58 exactly. */
    atomic_store(&P->clock, now);
    set_rate(r, now, 57);
    set_rate(cold, now, 38);
    ck_assert_int_eq(sw_fill(P, r), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(r, 2), 0);
    ck_assert_uint_eq(host_pages_in(cold, 2), 2);
    ck_assert_uint_eq(host_pages_in(hot, 2), 0);
    ck_assert(verify(r, 2 * PG, 41));
    ck_assert(verify(cold, 2 * PG, 42));
    assert_no_violation();
    env_down();
}
END_TEST

/* Host pages a fill can never move (a handle mapped at two VAs: the alias
 * would have to move too) must not cost a quiesce at every launch, nor
 * push other data out to make room they will never take. */
START_TEST(fill_ignores_host_pages_that_cannot_move)
{
    env_spill(6, 16);
    CUdeviceptr va1, va2, a;
    ck_assert_int_eq(fake_reserve(FB, 2 * PG, &va1), CUDA_SUCCESS);
    ck_assert_int_eq(fake_reserve(FB, 2 * PG, &va2), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va1, 2 * PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, va1, 2 * PG, 1), CUDA_SUCCESS);
    fill(va1, 2 * PG, 31);
    ck_assert_int_eq(sw_set_residency(P, va1, 2, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va2, 2 * PG, 0, h), CUDA_SUCCESS); /* an alias */
    ck_assert_int_eq(sw_vmm_set_access(P, va2, 2 * PG, 1), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(va1, 2), 2);
    /* Free device pages: the fill finds out without a sync that it cannot
     * use them. */
    ck_assert(sw_touch(P, va1));
    uint64_t syncs = fstats().syncs;
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(sw_fill(P, va1), CUDA_SUCCESS);
    /* A full device, the alias used often, the rest never: no victim goes
     * to the host for pages that cannot come in. */
    ck_assert_int_eq(sw_alloc(P, 0, 6 * PG, &a), CUDA_SUCCESS);
    fill(a, 6 * PG, 32);
    ck_assert_uint_eq(host_pages_in(a, 6), 0);
    for (int i = 0; i < 2000; i++)
        ck_assert(sw_touch(P, va1 + (CUdeviceptr)i % 64));
    uint64_t spilled = counters().spill_bytes;
    syncs = fstats().syncs;
    for (int i = 0; i < 10; i++) {
        for (int j = 0; j < 64; j++)
            (void)sw_touch(P, va1);
        ck_assert_int_eq(sw_fill(P, va1), CUDA_SUCCESS);
    }
    ck_assert_uint_eq(counters().spill_bytes, spilled);
    ck_assert_uint_eq(host_pages_in(a, 6), 0);
    ck_assert_uint_eq(fstats().syncs, syncs);
    assert_no_violation();
    ck_assert(verify(va2, 2 * PG, 31));
    ck_assert(verify(a, 6 * PG, 32));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_unmap(P, va2, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_unmap(P, va1, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va1, 2 * PG), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va2, 2 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

void spill_fill_tests(TCase *tc)
{
    tcase_add_test(tc, fill_uses_free_device_pages_only);
    tcase_add_test(tc, fill_takes_free_pages_for_data_at_least_half_as_hot);
    tcase_add_test(tc, swap_edges_floor_budget_and_victim_rate);
    tcase_add_test(tc, fill_ignores_host_pages_that_cannot_move);
}
