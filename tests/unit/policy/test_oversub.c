/* Oversubscription (issue 13) at the policy, over the fake backend: a
 * repeating training step (stepload.c) whose data exceeds the device, in
 * the three ways programs allocate: one JAX-style arena of 0.75 x the told
 * total, per-buffer stream-ordered allocations (activations allocated and
 * freed every step), and cuMemAlloc-style buffers. At F = 2 (and 1.5):
 *  - every word every kernel reads is what the last kernel wrote;
 *  - the backend never holds more device pages than the limit;
 *  - after warm-up, pages moved per step stay within 10% of the pages above
 *    the limit, the often-used buffers (weights, activations, gradients)
 *    live on the device, and what the step uses on the host is no more than
 *    the excess (the rarely used optimizer state, read in place);
 *  - a settled step does not quiesce the device: a fill that found no
 *    victim leaves a floor that holds while the data's rate creeps up.
 * The controls: demand paging (the no-thrash rule off) moves several times
 * the excess every step, so the bound above is not met by accident. */
#include "tests/unit/check_compat.h"
#include "tests/unit/policy/stepload.h"

#define LIMIT_PAGES 64
#define PAGE ((size_t)64 << 10)
#define WARMUP 60
#define MEASURED 20
/* The control thrashes from its first steps on: a few show it, and each
 * moves several times the excess (fresh mappings: the costliest thing
 * the fake backend does). */
#define DEMAND_WARMUP 5
#define DEMAND_MEASURED 5

typedef struct outcome {
    uint64_t moved_max, host_used_max;
    size_t excess, hot_on_host;
    uint64_t max_device_pages;
    uint64_t measured_syncs; /* device syncs during the measured steps */
} outcome;

static outcome run(stepload_mode mode, double factor, bool demand_paging)
{
    stepload_cfg cfg = {.mode = mode, .factor = factor, .limit_pages = LIMIT_PAGES, .page = PAGE,
                        .demand_paging = demand_paging};
    const char *why = NULL;
    stepload *s = stepload_new(&cfg, &why);
    ck_assert_msg(s != NULL, "set-up: %s", why);
    outcome o = {0};
    o.excess = stepload_excess_pages(s);
    ck_assert_uint_gt(o.excess, 0); /* it does not fit: the point */
    uint64_t syncs0 = 0;
    int warmup = demand_paging ? DEMAND_WARMUP : WARMUP;
    int measured = demand_paging ? DEMAND_MEASURED : MEASURED;
    for (int i = 0; i < warmup + measured; i++) {
        stepload_step st;
        if (i == warmup)
            syncs0 = stepload_syncs(s);
        ck_assert_msg(stepload_step_run(s, &st, &why), "step %d: %s", i, why);
        if (i < warmup)
            continue;
        o.moved_max = st.moved_pages > o.moved_max ? st.moved_pages : o.moved_max;
        o.host_used_max = st.host_used_pages > o.host_used_max ? st.host_used_pages : o.host_used_max;
    }
    o.measured_syncs = stepload_syncs(s) - syncs0;
    o.hot_on_host = stepload_hot_on_host(s);
    o.max_device_pages = stepload_max_device_pages(s);
    ck_assert_msg(stepload_free(s, &why), "teardown: %s", why);
    return o;
}

static void expect_settled(stepload_mode mode, double factor)
{
    outcome o = run(mode, factor, false);
    ck_assert_uint_le(o.max_device_pages, LIMIT_PAGES);
    ck_assert_msg(o.moved_max * 10 <= o.excess, "moved %llu pages in a step; %zu above the limit",
                  (unsigned long long)o.moved_max, o.excess);
    ck_assert_msg(o.hot_on_host == 0, "%zu pages of often-used buffers on the host", o.hot_on_host);
    ck_assert_msg(o.host_used_max <= o.excess, "a step used %llu pages on the host; excess %zu",
                  (unsigned long long)o.host_used_max, o.excess);
    /* Nothing moves, so the device need not be quiesced at each step: a
     * look now and then, when a floor has run out (it was one or two a
     * step). */
    ck_assert_msg(o.measured_syncs <= MEASURED / 4, "%llu device syncs in %d settled steps",
                  (unsigned long long)o.measured_syncs, MEASURED);
}

START_TEST(arena_at_2x)
{
    expect_settled(STEPLOAD_ARENA, 2.0);
}
END_TEST

START_TEST(arena_at_1_5x)
{
    expect_settled(STEPLOAD_ARENA, 1.5);
}
END_TEST

START_TEST(per_buffer_at_2x)
{
    expect_settled(STEPLOAD_PER_BUFFER, 2.0);
}
END_TEST

START_TEST(per_buffer_at_1_5x)
{
    expect_settled(STEPLOAD_PER_BUFFER, 1.5);
}
END_TEST

START_TEST(alloc_at_2x)
{
    expect_settled(STEPLOAD_ALLOC, 2.0);
}
END_TEST

/* Demand paging thrashes on the same steps: the bound is earned. */
START_TEST(demand_paging_thrashes)
{
    const stepload_mode modes[] = {STEPLOAD_ARENA, STEPLOAD_PER_BUFFER, STEPLOAD_ALLOC};
    outcome o = run(modes[_i], 2.0, true);
    ck_assert_uint_le(o.max_device_pages, LIMIT_PAGES);
    ck_assert_msg(o.moved_max >= 2 * o.excess, "demand paging moved only %llu pages (excess %zu)",
                  (unsigned long long)o.moved_max, o.excess);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_oversub");
    TCase *tc = tcase_create("oversub");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, arena_at_2x);
    tcase_add_test(tc, arena_at_1_5x);
    tcase_add_test(tc, per_buffer_at_2x);
    tcase_add_test(tc, per_buffer_at_1_5x);
    tcase_add_test(tc, alloc_at_2x);
    tcase_add_loop_test(tc, demand_paging_thrashes, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}
