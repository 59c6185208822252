/* Lookups for cuMemGetAddressRange / cuPointerGetAttribute(s), ownership,
 * and the counters the stats publisher reads. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "tests/unit/policy/helpers.h"

static void expect_range(CUdeviceptr ptr, CUdeviceptr base, size_t size)
{
    CUdeviceptr b = 0;
    size_t s = 0;
    int dev = -1;
    ck_assert_int_eq(sw_lookup(P, ptr, &b, &s, &dev, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(b, base);
    ck_assert_uint_eq(s, size);
    ck_assert_int_eq(dev, 0);
}

static void expect_none(CUdeviceptr ptr)
{
    CUdeviceptr b;
    size_t s;
    int dev;
    ck_assert_int_eq(sw_lookup(P, ptr, &b, &s, &dev, NULL), CUDA_ERROR_NOT_FOUND);
}

START_TEST(interior_pointers_answer_with_the_allocation)
{
    env_up(16, false, 0);
    static const size_t sizes[] = {1, 300, 4096, 70000, MiB, MiB + 1, 5 * PG + 3};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        CUdeviceptr p;
        ck_assert_int_eq(sw_alloc(P, 0, sizes[i], &p), CUDA_SUCCESS);
        expect_range(p, p, sizes[i]);
        expect_range(p + sizes[i] / 2, p, sizes[i]);
        expect_range(p + sizes[i] - 1, p, sizes[i]);
        ck_assert(sw_owns(P, p + sizes[i] / 3));
    }
    env_down();
}
END_TEST

/* A pointer past an allocation's requested end, in the rest of its slot or
 * of its 4 KiB-granular range, is not inside it: the answer (base, size)
 * must contain the pointer, as the driver's does, or a registration cache
 * keyed by [base, base + size) never covers the address it was asked for. */
START_TEST(pointers_past_the_requested_end_are_not_the_allocation)
{
    env_up(16, false, 0);
    static const size_t sizes[] = {1, 300, 1000, 70000, MiB + 1, 5 * PG + 3};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        CUdeviceptr p;
        ck_assert_int_eq(sw_alloc(P, 0, sizes[i], &p), CUDA_SUCCESS);
        expect_none(p + sizes[i]);
        expect_range(p + sizes[i] - 1, p, sizes[i]);
        ck_assert_int_eq(sw_free(P, p), CUDA_SUCCESS);
    }
    env_down();
}
END_TEST

START_TEST(freed_and_foreign_pointers_are_not_found)
{
    env_up(16, false, 64 * PG);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &c), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    expect_none(a);                /* pending */
    expect_none(c + PG);
    expect_range(b + 10, b, 1000); /* its neighbour is unaffected */
    expect_none(b + 1024 * 5);     /* a slot never handed out */
    expect_none(0);
    expect_none((CUdeviceptr)&a);  /* host memory */
    expect_none(~(CUdeviceptr)0);
    ck_assert(!sw_owns(P, (CUdeviceptr)&a));
    ck_assert(sw_owns(P, c)); /* still spillway's address space */
    CUdeviceptr base;
    size_t size;
    int dev;
    ck_assert_int_eq(sw_lookup(P, b, NULL, &size, &dev, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_lookup(P, b, &base, NULL, &dev, NULL), CUDA_ERROR_INVALID_VALUE);
    env_down();
}
END_TEST

START_TEST(counters_track_use_peak_and_pool)
{
    env_up(16, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &b), CUDA_SUCCESS);
    sw_counters c = counters();
    ck_assert_uint_eq(c.limit_bytes, 16 * PG);
    ck_assert_uint_eq(c.pool_bytes, 4 * PG);
    ck_assert_uint_eq(c.mapped_bytes, 4 * PG);
    ck_assert_uint_eq(c.in_use_bytes, 3 * PG + 1000);
    ck_assert_uint_eq(c.backing_bytes, 4 * PG);
    ck_assert_uint_eq(c.allocs, 2);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    c = counters();
    ck_assert_uint_eq(c.in_use_bytes, 1000);
    ck_assert_uint_eq(c.peak_in_use_bytes, 3 * PG + 1000);
    ck_assert_uint_eq(c.pending_bytes, 3 * PG);
    ck_assert_uint_eq(c.frees, 1);
    sw_count_passthrough(P, 0, SW_PT_IPC, 4096);
    sw_count_passthrough(P, 0, SW_PT_IPC, 100);
    sw_count_passthrough(P, 0, SW_PT_MANAGED, 7);
    sw_count_passthrough(P, 5, SW_PT_DISABLED, 9); /* a device spillway does not manage */
    sw_count_passthrough(P, 0, SW_PT_NREASONS, 9); /* ignored */
    c = counters();
    ck_assert_uint_eq(c.passthrough_count[SW_PT_IPC], 2);
    ck_assert_uint_eq(c.passthrough_bytes[SW_PT_IPC], 4196);
    ck_assert_uint_eq(c.passthrough_count[SW_PT_MANAGED], 1);
    ck_assert_uint_eq(c.passthrough_count[SW_PT_CAPTURE], 0);
    sw_counters c5;
    ck_assert_int_eq(sw_get_counters(P, 5, &c5), CUDA_SUCCESS);
    ck_assert_uint_eq(c5.passthrough_bytes[SW_PT_DISABLED], 9);
    ck_assert_uint_eq(c5.limit_bytes, 0);
    ck_assert_str_eq(sw_passthrough_reason_name(SW_PT_CAPTURE), "capture");
    ck_assert_str_eq(sw_passthrough_reason_name(SW_PT_NREASONS), "unknown");
    ck_assert_int_eq(sw_get_counters(P, SW_MAX_DEVICES, &c5), CUDA_ERROR_INVALID_VALUE);
    env_down();
}
END_TEST

START_TEST(two_devices_have_separate_pools)
{
    sw_device_config cfg = {.limit = 4 * PG};
    env_up_cfg(&cfg, 6); /* the fake counts both devices' pages */
    cfg.limit = 2 * PG;
    ck_assert_int_eq(sw_device_init(P, 1, &cfg), CUDA_SUCCESS);
    ck_assert(sw_device_ready(P, 1));
    ck_assert(!sw_device_ready(P, 2));
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 1, 2 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 1, 1, &b), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    CUdeviceptr base;
    size_t size;
    int dev;
    ck_assert_int_eq(sw_lookup(P, a + 5, &base, &size, &dev, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(dev, 1);
    ck_assert_int_eq(sw_lookup(P, b + 5, &base, &size, &dev, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(dev, 0);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 1, 2 * PG, &a), CUDA_SUCCESS);
    ck_assert_uint_eq(sw_page_size(P), PG);
    env_down();
}
END_TEST

/* Pass-through counts made on a device while another thread sets its pool
 * up (a managed allocation beside the device's first cuMemAlloc) outlive
 * the set-up, as the ones made before it do. */
typedef struct counting {
    int dev;
    _Atomic int stop;
    _Atomic uint64_t n;
} counting;

static void *count_passthrough(void *arg)
{
    counting *c = arg;
    while (!atomic_load(&c->stop)) {
        sw_count_passthrough(P, c->dev, SW_PT_MANAGED, 1);
        atomic_fetch_add(&c->n, 1);
    }
    return NULL;
}

/* Devices set up under a counting thread: the window is the set-up's
 * first microseconds, which a thread on a busy machine may miss for a few
 * devices, so several policies' worth of them (the fake backend has room
 * for 31 devices besides device 0). */
enum { COUNT_ROUNDS = 4, COUNT_DEVICES = 32 };

static void count_during_set_up(int dev)
{
    sw_device_config cfg = {.limit = PG};
    counting c = {.dev = dev};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, count_passthrough, &c), 0);
    while (atomic_load(&c.n) < 1000)
        sched_yield();
    ck_assert_int_eq(sw_device_init(P, dev, &cfg), CUDA_SUCCESS);
    atomic_store(&c.stop, 1);
    pthread_join(t, NULL);
    sw_counters got;
    ck_assert_int_eq(sw_get_counters(P, dev, &got), CUDA_SUCCESS);
    ck_assert_msg(got.passthrough_count[SW_PT_MANAGED] == atomic_load(&c.n),
                  "device %d: %llu of %llu pass-through counts left after its set-up", dev,
                  (unsigned long long)got.passthrough_count[SW_PT_MANAGED],
                  (unsigned long long)atomic_load(&c.n));
}

START_TEST(passthrough_counts_survive_a_concurrent_set_up)
{
    for (int round = 0; round < COUNT_ROUNDS; round++) {
        env_up(2, false, 0);
        for (int dev = 1; dev < COUNT_DEVICES; dev++)
            count_during_set_up(dev);
        env_down();
    }
}
END_TEST

/* CU_POINTER_ATTRIBUTE_BUFFER_ID and MEMORY_BLOCK_ID (sw_ids): the same for
 * every pointer of one allocation, never the same for two allocations,
 * even at one address one after the other ("subsequent allocations do not
 * reuse IDs from previous freed allocations"). */
static sw_ids ids_at(CUdeviceptr ptr)
{
    CUdeviceptr b;
    size_t s;
    int dev;
    sw_ids ids = {0, 0};
    ck_assert_int_eq(sw_lookup(P, ptr, &b, &s, &dev, &ids), CUDA_SUCCESS);
    ck_assert_msg(ids.buffer & SW_ID_BIT, "an ID the driver could give too: %llx",
                  (unsigned long long)ids.buffer);
    return ids;
}

static uint64_t id_of(CUdeviceptr p, size_t n)
{
    sw_ids ids = ids_at(p);
    ck_assert_uint_eq(ids.block, ids.buffer); /* the program's allocation is its block */
    sw_ids inside = ids_at(p + n / 2), last = ids_at(p + n - 1);
    ck_assert(inside.buffer == ids.buffer && last.buffer == ids.buffer);
    ck_assert(inside.block == ids.block && last.block == ids.block);
    return ids.buffer;
}

START_TEST(ids_are_new_each_time_an_allocation_is_handed_out)
{
    env_up(16, false, 0);
    static const size_t sizes[] = {300, 5000, 70000, 5 * PG + 3};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        CUdeviceptr a, b, again;
        ck_assert_int_eq(sw_alloc(P, 0, n, &a), CUDA_SUCCESS);
        ck_assert_int_eq(sw_alloc(P, 0, n, &b), CUDA_SUCCESS);
        uint64_t ida = id_of(a, n), idb = id_of(b, n);
        ck_assert_uint_ne(ida, idb);
        /* cuMemFree, a sync, the same size again: a's place, a new ID. */
        ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
        sw_sync_end(P, 0, sw_sync_begin(P, 0));
        ck_assert_int_eq(sw_alloc(P, 0, n, &again), CUDA_SUCCESS);
        ck_assert_uint_eq(again, a);
        uint64_t id2 = id_of(again, n);
        ck_assert(id2 != ida && id2 != idb);
        /* cuMemFreeAsync, taken back at once on the same stream. */
        ck_assert_int_eq(sw_free_async(P, again, S1), CUDA_SUCCESS);
        ck_assert_int_eq(sw_alloc_async(P, 0, n, S1, &again), CUDA_SUCCESS);
        ck_assert_uint_eq(again, a);
        uint64_t id3 = id_of(again, n);
        ck_assert(id3 != ida && id3 != idb && id3 != id2);
        ck_assert_uint_eq(id_of(b, n), idb); /* its neighbour keeps its own */
        ck_assert_int_eq(sw_free(P, again), CUDA_SUCCESS);
        ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    }
    env_down();
}
END_TEST

/* The ID source: threads allocating at once (each from batches of its own)
 * never get one twice, across batches and across policies (IDs are the
 * process's, as the driver's). */
#define ID_THREADS 4
#define ID_ALLOCS 700 /* more than one batch of a thread */

struct id_run {
    uint64_t ids[ID_ALLOCS];
    CUdeviceptr ptrs[ID_ALLOCS];
};

static void *alloc_ids(void *arg)
{
    struct id_run *r = arg;
    for (int i = 0; i < ID_ALLOCS; i++) {
        size_t n = i % 50 == 0 ? 20000 : 256; /* blocks too */
        if (sw_alloc(P, 0, n, &r->ptrs[i]) != CUDA_SUCCESS)
            return "alloc";
        CUdeviceptr b;
        size_t s;
        int dev;
        sw_ids ids;
        if (sw_lookup(P, r->ptrs[i] + n - 1, &b, &s, &dev, &ids) != CUDA_SUCCESS)
            return "lookup";
        r->ids[i] = ids.buffer;
    }
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

START_TEST(ids_are_unique_across_threads_and_policies)
{
    env_up(32, false, 0);
    static struct id_run runs[ID_THREADS];
    pthread_t t[ID_THREADS];
    for (int i = 0; i < ID_THREADS; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, alloc_ids, &runs[i]), 0);
    for (int i = 0; i < ID_THREADS; i++) {
        void *err;
        ck_assert_int_eq(pthread_join(t[i], &err), 0);
        ck_assert_msg(err == NULL, "thread %d: %s", i, (const char *)err);
    }
    /* A second policy in the same process, on this thread. */
    uint64_t *all = malloc(sizeof(uint64_t) * (ID_THREADS * ID_ALLOCS + 1));
    size_t n = 0;
    for (int i = 0; i < ID_THREADS; i++)
        for (int k = 0; k < ID_ALLOCS; k++)
            all[n++] = runs[i].ids[k];
    for (int i = 0; i < ID_THREADS; i++)
        for (int k = 0; k < ID_ALLOCS; k++)
            ck_assert_int_eq(sw_free(P, runs[i].ptrs[k]), CUDA_SUCCESS);
    env_down();
    env_up(4, false, 0);
    CUdeviceptr x;
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &x), CUDA_SUCCESS);
    all[n++] = id_of(x, 1000);
    ck_assert_int_eq(sw_free(P, x), CUDA_SUCCESS);
    env_down();
    qsort(all, n, sizeof *all, by_value);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(all[i] & SW_ID_BIT, "ID %llx", (unsigned long long)all[i]);
        ck_assert_msg(i == 0 || all[i] != all[i - 1], "ID %llx given twice",
                      (unsigned long long)all[i]);
    }
    free(all);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_lookup");
    TCase *tc = tcase_create("lookup");
    tcase_add_test(tc, interior_pointers_answer_with_the_allocation);
    tcase_add_test(tc, freed_and_foreign_pointers_are_not_found);
    tcase_add_test(tc, pointers_past_the_requested_end_are_not_the_allocation);
    tcase_add_test(tc, counters_track_use_peak_and_pool);
    tcase_add_test(tc, two_devices_have_separate_pools);
    tcase_add_test(tc, passthrough_counts_survive_a_concurrent_set_up);
    tcase_add_test(tc, ids_are_new_each_time_an_allocation_is_handed_out);
    tcase_add_test(tc, ids_are_unique_across_threads_and_policies);
    suite_add_tcase(s, tc);
    return s;
}
