/* The writer's suite (test_segment.c): counters updated from many threads
 * sum exactly, and what an update costs. */
#include "tests/unit/stats/writer_rig.h"

#include <pthread.h>

/* Threads allocating and freeing through the writer as the shim does: each
 * in its lane (20 threads: some share one), the device total kept in one
 * atomic as the shim's count is and passed for the peak. Every round all
 * hold their blocks at once (a barrier), so the peak is known exactly.
 * Then two threads share a lane flat out, as threads past the 16th do. */
#define THREADS 20
#define ROUNDS 300
#define BLOCKS 8
static pthread_barrier_t round_barrier;
static _Atomic uint64_t shim_used;
struct hammer_arg {
    struct spw_stats_writer *w;
    unsigned lane;
    uint64_t size;
};

static void *hammer(void *arg)
{
    struct hammer_arg *a = arg;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < BLOCKS; i++) {
            uint64_t now = atomic_fetch_add(&shim_used, a->size) + a->size;
            spw_stats_alloc(a->w, 0, a->lane, a->size, now);
            spw_stats_add(a->w, 0, SPW_C_COPY_DTOD, 5);
        }
        pthread_barrier_wait(&round_barrier);
        for (int i = 0; i < BLOCKS; i++) {
            atomic_fetch_sub(&shim_used, a->size);
            spw_stats_free(a->w, 0, a->lane, a->size);
        }
        pthread_barrier_wait(&round_barrier);
    }
    /* One block kept. */
    uint64_t now = atomic_fetch_add(&shim_used, a->size) + a->size;
    spw_stats_alloc(a->w, 0, a->lane, a->size, now);
    return NULL;
}

#define SHARED_PAIRS 500000
static void *share_lane(void *arg)
{
    struct spw_stats_writer *w = arg;
    pthread_barrier_wait(&round_barrier); /* both at once */
    for (int i = 0; i < SHARED_PAIRS; i++) {
        /* The total passed is below the peak already reached: no line in
         * common but the lane's. */
        spw_stats_alloc(w, 0, SPW_STATS_LANES - 1, 64, 64);
        spw_stats_free(w, 0, SPW_STATS_LANES - 1, 64);
    }
    return NULL;
}

START_TEST(threads_in_lanes_sum_exactly)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    pthread_t t[THREADS];
    struct hammer_arg args[THREADS];
    uint64_t kept = 0;
    ck_assert_int_eq(pthread_barrier_init(&round_barrier, NULL, THREADS), 0);
    double t0 = now_ns();
    for (unsigned i = 0; i < THREADS; i++) {
        args[i] = (struct hammer_arg){w, i, 4096 * (i + 1)};
        kept += args[i].size;
        ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("stats updates, %d threads in their lanes: %.1f ns of wall time per alloc+copy+free "
           "(barriers included)\n", THREADS, (now_ns() - t0) / (THREADS * ROUNDS * BLOCKS));
    pthread_barrier_destroy(&round_barrier);
    ck_assert_int_eq(pthread_barrier_init(&round_barrier, NULL, 2), 0);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, share_lane, w), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&round_barrier);
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_ALLOCS], THREADS * (ROUNDS * BLOCKS + 1) + 2 * SHARED_PAIRS);
    ck_assert_uint_eq(s->c[0][SPW_C_FREES], THREADS * ROUNDS * BLOCKS + 2 * SHARED_PAIRS);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], kept);
    ck_assert_uint_eq(s->c[0][SPW_C_PEAK], BLOCKS * kept);
    ck_assert_uint_eq(s->c[0][SPW_C_COPY_DTOD], 5ull * THREADS * ROUNDS * BLOCKS);
    ck_assert_uint_eq(s->c[0][SPW_C_UNDERFLOWS], 0);
    ck_assert_uint_eq(spw_stats_get(w, 0, SPW_C_IN_USE), kept);
    free(s);
    spw_stats_close(w);
}
END_TEST

struct lane_op {
    struct spw_stats_writer *w;
    unsigned lane;
    int allocs, frees;
};

static void *lane_ops(void *arg)
{
    struct lane_op *o = arg;
    for (int i = 0; i < o->allocs; i++) {
        uint64_t now = atomic_fetch_add(&shim_used, 1000) + 1000;
        spw_stats_alloc(o->w, 0, o->lane, 1000, now);
    }
    for (int i = 0; i < o->frees; i++) {
        atomic_fetch_sub(&shim_used, 1000);
        spw_stats_free(o->w, 0, o->lane, 1000);
    }
    return NULL;
}

static void run_on_thread(struct lane_op op)
{
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, lane_ops, &op), 0);
    pthread_join(t, NULL);
}

/* Memory one thread allocates and another frees: the freeing thread's lane
 * goes below zero (it wraps), and the sum is still exact. */
START_TEST(free_on_another_thread_sums_exactly)
{
    atomic_store(&shim_used, 0); /* the same process as the test before without Check's fork */
    struct spw_stats_writer *w = open_writer(1, NULL);
    run_on_thread((struct lane_op){w, 3, 5, 0});
    run_on_thread((struct lane_op){w, 7, 0, 3});
    uint64_t lane7 = atomic_load(spw_stats_lane(w, 0, SPW_L_IN_USE, 7));
    ck_assert_uint_eq(lane7, (uint64_t)0 - 3000); /* below zero, wrapped */
    struct spw_stats_snapshot *s = malloc(sizeof *s);
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 2000);
    ck_assert_uint_eq(s->c[0][SPW_C_PEAK], 5000);
    ck_assert_uint_eq(s->c[0][SPW_C_ALLOCS], 5);
    ck_assert_uint_eq(s->c[0][SPW_C_FREES], 3);
    run_on_thread((struct lane_op){w, 12, 0, 2});
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 0);
    ck_assert_uint_eq(s->c[0][SPW_C_FREES], 5);
    /* A base set at attach counts too: a free of what was counted before. */
    spw_stats_set(w, 0, SPW_C_IN_USE, 8000);
    uint64_t base = atomic_load(spw_stats_slot(w, 0, SPW_C_IN_USE));
    ck_assert_uint_eq(base, 8000);
    run_on_thread((struct lane_op){w, 1, 0, 2});
    read_own(s);
    ck_assert_uint_eq(s->c[0][SPW_C_IN_USE], 6000);
    free(s);
    spw_stats_close(w);
}
END_TEST

/* The cost of the updates the shim makes on every hooked call. Printed for
 * the benchmark table; the bound only catches a syscall or lock creeping in. */
START_TEST(update_cost)
{
    struct spw_stats_writer *w = open_writer(1, NULL);
    const int n = 2000000;
    double t0 = now_ns();
    for (int i = 0; i < n; i++)
        spw_stats_add(w, 0, SPW_C_COPY_HTOD, (uint64_t)i);
    double t1 = now_ns();
    for (int i = 0; i < n; i++) {
        spw_stats_alloc(w, 0, 1, 64, 64);
        spw_stats_free(w, 0, 1, 64);
    }
    double t2 = now_ns();
    double add = (t1 - t0) / n, pair = (t2 - t1) / n;
    printf("stats update cost: add %.1f ns, alloc+free %.1f ns (uncontended)\n", add, pair);
    ck_assert_msg(add < 200 && pair < 1000, "updates too slow: %.1f / %.1f ns", add, pair);
    spw_stats_close(w);
}
END_TEST

void segment_thread_tests(TCase *tc)
{
    tcase_add_test(tc, threads_in_lanes_sum_exactly);
    tcase_add_test(tc, free_on_another_thread_sums_exactly);
    tcase_add_test(tc, update_cost);
}
