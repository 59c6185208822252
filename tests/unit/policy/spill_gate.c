/* The policy spill suite (test_spill.c): the gate. No page moves while a
 * work bracket is open, and threads churn through spill without a lost
 * byte. */
#include "tests/unit/policy/spill_rig.h"

#include <pthread.h>
#include <stdatomic.h>

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

void spill_gate_tests(TCase *tc)
{
    tcase_add_test(tc, spill_waits_for_open_work_brackets);
    tcase_add_test(tc, threads_churn_through_spill);
}
