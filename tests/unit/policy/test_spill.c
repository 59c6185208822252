/* Spill and fill: a full pool moves its coldest live pages to the host and
 * keeps every byte and address; fill brings them back when device pages are
 * free; no page moves while a work bracket is open or work is in flight. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "policy/internal.h"
#include "tests/unit/policy/helpers.h"

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

/* CPU time of n touches of ptr (this thread's: other processes' load does
 * not count), the least of five tries. */
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

/* ---- the gate ---------------------------------------------------------------- */

typedef struct alloc_job {
    CUdeviceptr ptr;
    CUresult r;
    atomic_bool done;
} alloc_job;

static void *alloc_big(void *arg)
{
    alloc_job *j = arg;
    j->r = sw_alloc(P, 0, 4 * PG, &j->ptr);
    atomic_store(&j->done, true);
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

START_TEST(spill_waits_for_open_work_brackets)
{
    env_spill(4, 8);
    CUdeviceptr a;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 31);
    sw_work_begin(P, 1);
    sw_work_begin(P, 1); /* nested: free */
    /* Inside a bracket, a move would wait for itself: refused. */
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_ERROR_NOT_PERMITTED);
    alloc_job j = {0};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, alloc_big, &j), 0);
    sleep_ms(100);
    ck_assert_msg(!atomic_load(&j.done), "a spill ran while a work bracket was open");
    sw_work_end(P);
    sleep_ms(50);
    ck_assert(!atomic_load(&j.done));
    sw_work_end(P);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(j.r, CUDA_SUCCESS);
    ck_assert(verify(a, 4 * PG, 31));
    ck_assert_uint_eq(host_pages_in(a, 4), 4);
    env_down();
}
END_TEST

/* Threads that allocate, write, verify and free under a pool far smaller
 * than what they hold together: every byte survives the spills. */
typedef struct churn {
    int id;
    int fails;
} churn;

static void *churn_work(void *arg)
{
    churn *c = arg;
    uint64_t s = (uint64_t)c->id * 7919 + 1;
    CUdeviceptr held[4] = {0};
    size_t sizes[4] = {0};
    uint64_t seeds[4] = {0};
    for (int it = 0; it < 80; it++) {
        int k = (int)(rnd(&s) % 4);
        if (held[k]) {
            /* As the shim does before a launch: touch, fill, bracket. */
            if (sw_touch(P, held[k]) && sw_fill(P, held[k]) != CUDA_SUCCESS)
                c->fails++;
            /* The CPU reading pages stands for a kernel: it runs in a
             * bracket, or a spill could move the page under it. */
            sw_work_begin(P, 1);
            if (!verify(held[k], sizes[k], seeds[k]))
                c->fails++;
            sw_work_end(P);
            if (sw_free(P, held[k]) != CUDA_SUCCESS)
                c->fails++;
            held[k] = 0;
        } else {
            sizes[k] = rnd(&s) % 2 ? 1 + rnd(&s) % (3 * PG) : 1 + rnd(&s) % 5000;
            seeds[k] = rnd(&s);
            if (sw_alloc(P, 0, sizes[k], &held[k]) != CUDA_SUCCESS) {
                held[k] = 0;
                continue; /* the host limit can be reached: allowed */
            }
            sw_work_begin(P, 1);
            fill(held[k], sizes[k], seeds[k]);
            sw_work_end(P);
        }
    }
    for (int k = 0; k < 4; k++)
        if (held[k]) {
            sw_work_begin(P, 1);
            if (!verify(held[k], sizes[k], seeds[k]))
                c->fails++;
            sw_work_end(P);
            (void)sw_free(P, held[k]);
        }
    return NULL;
}

START_TEST(threads_churn_through_spill)
{
    env_spill(8, 64);
    pthread_t t[8];
    churn w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (churn){.id = i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, churn_work, &w[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
        ck_assert_int_eq(w[i].fails, 0);
    }
    sw_counters c = counters();
    ck_assert_uint_gt(c.spill_events, 0);
    ck_assert_uint_eq(c.in_use_bytes, 0);
    ck_assert_uint_le(fstats().max_dev_pages, 8);
    env_down();
}
END_TEST

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
    tcase_add_test(tc, fill_uses_free_device_pages_only);
    tcase_add_test(tc, fill_takes_free_pages_for_data_at_least_half_as_hot);
    tcase_add_test(tc, swap_edges_floor_budget_and_victim_rate);
    tcase_add_test(tc, fill_ignores_host_pages_that_cannot_move);
    tcase_add_test(tc, span_touch_answers_for_the_buffers_own_pages);
    tcase_add_test(tc, small_allocations_spill_with_their_slab);
    tcase_add_test(tc, program_vmm_pages_spill_and_make_room_for_handles);
    tcase_add_test(tc, spill_passes_by_mappings_without_access);
    tcase_add_test(tc, foreign_pointers);
    tcase_add_test(tc, spill_waits_for_open_work_brackets);
    tcase_add_test(tc, threads_churn_through_spill);
    tcase_add_test(tc, reserve_is_used_and_refilled);
    tcase_add_test(tc, no_reserve_counts_waits);
    tcase_add_test(tc, spill_waits_for_the_reserves_page_in_flight);
    suite_add_tcase(s, tc);
    return s;
}
