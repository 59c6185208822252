/* Allocation: sizes, alignment, limit, preallocation, coalescing, cached
 * mappings, and randomized sequences that check every byte. */
#include <pthread.h>

#include "tests/unit/policy/helpers.h"

START_TEST(small_and_large_are_aligned_distinct_and_writable)
{
    env_up(16, false, 0);
    static const size_t sizes[] = {1, 255, 256, 257, 1000, 4096, 65536, 100000, MiB,
                                   MiB + 1, 2 * MiB, 3 * MiB + 7, 9 * MiB};
    CUdeviceptr p[sizeof sizes / sizeof *sizes];
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        ck_assert_int_eq(sw_alloc(P, 0, sizes[i], &p[i]), CUDA_SUCCESS);
        ck_assert_uint_eq(p[i] % 256, 0);
        if (sizes[i] > 16384) /* blocks: the granule, as the driver's 4 KiB pages */
            ck_assert_uint_eq(p[i] % 4096, 0);
        fill(p[i], sizes[i], i);
    }
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        ck_assert_msg(verify(p[i], sizes[i], i), "allocation %zu overwritten", i);
    sw_counters c = counters();
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        total += sizes[i];
    ck_assert_uint_eq(c.in_use_bytes, total);
    ck_assert_uint_eq(c.allocs, sizeof sizes / sizeof *sizes);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        ck_assert_int_eq(sw_free(P, p[i]), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().in_use_bytes, 0);
    env_down();
}
END_TEST

START_TEST(size_zero_and_bad_arguments)
{
    env_up(4, false, 0);
    CUdeviceptr p;
    ck_assert_int_eq(sw_alloc(P, 0, 0, &p), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_alloc(P, 0, 16, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_alloc(P, 1, 16, &p), CUDA_ERROR_INVALID_DEVICE);
    ck_assert_int_eq(sw_alloc(P, -1, 16, &p), CUDA_ERROR_INVALID_DEVICE);
    sw_device_config cfg = {.limit = 4 * PG};
    ck_assert_int_eq(sw_device_init(P, 0, &cfg), CUDA_ERROR_INVALID_VALUE); /* twice */
    cfg.limit = PG - 1;
    ck_assert_int_eq(sw_device_init(P, 1, &cfg), CUDA_ERROR_INVALID_VALUE); /* < 1 page */
    env_down();
}
END_TEST

START_TEST(limit_gives_oom_and_never_more_pages)
{
    env_up(8, false, 0);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 9 * PG, &a), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(sw_alloc(P, 0, 8 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 1, &b), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(counters().ooms, 2);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    /* The freed block waits for a sync; the allocation makes one. */
    ck_assert_int_eq(sw_alloc(P, 0, 5 * PG, &b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &c), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 1, &a), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_le(fstats().max_dev_pages, 8);
    ck_assert_uint_eq(counters().pool_bytes, 8 * PG);
    sw_free(P, b);
    sw_free(P, c);
    env_down();
}
END_TEST

START_TEST(preallocation_creates_everything_up_front)
{
    env_up(12, true, 0);
    ck_assert_uint_eq(fstats().creates, 12);
    ck_assert_uint_eq(fstats().maps, 0); /* pages stay unmapped until used */
    ck_assert_uint_eq(counters().pool_bytes, 12 * PG);
    CUdeviceptr p[12];
    for (int i = 0; i < 12; i++)
        ck_assert_int_eq(sw_alloc(P, 0, PG, &p[i]), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().creates, 12);
    ck_assert_int_eq(sw_alloc(P, 0, 256, &p[0]), CUDA_ERROR_OUT_OF_MEMORY);
    env_down();
}
END_TEST

START_TEST(on_demand_creates_only_what_is_used)
{
    env_up(12, false, 0);
    ck_assert_uint_eq(fstats().creates, 0);
    CUdeviceptr a;
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &a), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().creates, 3);
    ck_assert_uint_eq(counters().pool_bytes, 3 * PG);
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &a), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().creates, 4);
    env_down();
}
END_TEST

START_TEST(reuse_costs_no_map_or_set_access)
{
    env_up(32, false, 0);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 6 * PG, &a), CUDA_SUCCESS);
    fake_stats s0 = fstats();
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    for (int i = 0; i < 50; i++) {
        ck_assert_int_eq(sw_alloc(P, 0, 6 * PG - 100, &b), CUDA_SUCCESS);
        ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    }
    /* Smaller requests fit in the cached range too. */
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &c), CUDA_SUCCESS);
    fake_stats s1 = fstats();
    ck_assert_uint_eq(s1.maps, s0.maps);
    ck_assert_uint_eq(s1.set_access, s0.set_access);
    ck_assert_uint_eq(s1.creates, s0.creates);
    sw_free(P, b);
    sw_free(P, c);
    env_down();
}
END_TEST

START_TEST(freed_neighbours_coalesce)
{
    env_up(32, false, 0);
    CUdeviceptr p[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &p[i]), CUDA_SUCCESS);
    for (int i = 1; i < 4; i++)
        ck_assert_uint_eq(p[i], p[i - 1] + 2 * PG); /* address ordered from a fresh arena */
    uint64_t maps = fstats().maps;
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(sw_free(P, p[i]), CUDA_SUCCESS);
    /* One 8-page block fits only in the merged range: same address, no map. */
    CUdeviceptr big;
    ck_assert_int_eq(sw_alloc(P, 0, 8 * PG, &big), CUDA_SUCCESS);
    ck_assert_uint_eq(big, p[0]);
    ck_assert_uint_eq(fstats().maps, maps);
    sw_free(P, big);
    env_down();
}
END_TEST

START_TEST(small_sizes_share_pages)
{
    env_up(8, false, 0);
    CUdeviceptr p[64];
    for (int i = 0; i < 64; i++)
        ck_assert_int_eq(sw_alloc(P, 0, 1000, &p[i]), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().creates, 1); /* one slab page */
    ck_assert_uint_eq(counters().backing_bytes, PG);
    for (int i = 0; i < 64; i++)
        ck_assert_int_eq(sw_free(P, p[i]), CUDA_SUCCESS);
    env_down();
}
END_TEST

static void *alloc_1000(void *out)
{
    ck_assert_int_eq(sw_alloc(P, 0, 1000, out), CUDA_SUCCESS);
    return NULL;
}

/* Issue 14 item 6: two threads allocating one small size take slots from
 * slabs of their own (each class comes in shards with their own lock),
 * while one thread's slots share a slab; frees go back to each slot's
 * slab, whichever thread makes them. */
START_TEST(threads_allocating_one_small_size_use_slabs_of_their_own)
{
    env_up(8, false, 0);
    const CUdeviceptr chunk = PG / 32;
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(a & ~(chunk - 1), b & ~(chunk - 1)); /* one slab */
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, alloc_1000, &c), 0);
    pthread_join(th, NULL);
    ck_assert_uint_ne(c & ~(chunk - 1), a & ~(chunk - 1)); /* another */
    ck_assert_uint_eq(counters().backing_bytes, PG);       /* on the same page */
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(page_runs_bigger_than_needed_are_split)
{
    env_up(16, false, 0);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 10 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 16 * PG - 10 * PG, &b), CUDA_SUCCESS); /* 6 */
    ck_assert_int_eq(sw_alloc(P, 0, 10 * PG, &c), CUDA_SUCCESS);           /* needs a sync */
    ck_assert_uint_le(fstats().max_dev_pages, 16);
    ck_assert_uint_ge(counters().syncs, 1);
    fill(b, 6 * PG, 1);
    fill(c, 10 * PG, 2);
    ck_assert(verify(b, 6 * PG, 1));
    ck_assert(verify(c, 10 * PG, 2));
    sw_free(P, b);
    sw_free(P, c);
    env_down();
}
END_TEST

/* Random sizes over every range (slab classes, page runs), written, checked,
 * freed sync or async on two streams, under a tight limit so that syncs and
 * reclaims happen. Pointers never move: every live block keeps its bytes. */
START_TEST(randomized_sequences_keep_every_byte)
{
    enum { N = 96, OPS = 1200 };
    env_up(48, _i % 2 == 1, (size_t)(_i % 3) * PG);
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(_i + 1);
    CUdeviceptr ptr[N] = {0};
    size_t size[N] = {0};
    uint64_t tag[N] = {0};
    for (int op = 0; op < OPS; op++) {
        int k = (int)(rnd(&seed) % N);
        if (ptr[k]) {
            if (!verify(ptr[k], size[k], tag[k]))
                ck_abort_msg("block %d lost its bytes", k);
            /* Work still queued on the block when it is freed. */
            CUstream s = rnd(&seed) % 2 ? S1 : S2;
            fake_launch(FB, s, ptr[k], size[k]);
            CUresult r = rnd(&seed) % 3 == 0 ? sw_free_async(P, ptr[k], s) : sw_free(P, ptr[k]);
            if (r != CUDA_SUCCESS)
                ck_abort_msg("free returned %d", r);
            ptr[k] = 0;
            continue;
        }
        uint64_t kind = rnd(&seed) % 10;
        size_t sz = kind < 6 ? 1 + rnd(&seed) % 4096
                  : kind < 8 ? 1 + rnd(&seed) % MiB
                             : 1 + rnd(&seed) % (3 * PG);
        CUdeviceptr p;
        bool async = rnd(&seed) % 4 == 0;
        CUresult r = async ? sw_alloc_async(P, 0, sz, S1, &p) : sw_alloc(P, 0, sz, &p);
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            continue;
        if (r != CUDA_SUCCESS)
            ck_abort_msg("alloc returned %d", r);
        if (fake_conflict(FB, p, sz, async ? S1 : (CUstream)0xdead))
            ck_abort_msg("handed out a block that queued work still uses");
        /* Plain checks in the inner loops: each Check assertion is a write. */
        for (int j = 0; j < N; j++)
            if (ptr[j] && p + sz > ptr[j] && ptr[j] + size[j] > p)
                ck_abort_msg("new block overlaps live block %d", j);
        CUdeviceptr base;
        size_t bs;
        int dev;
        if (sw_lookup(P, p + sz - 1, &base, &bs, &dev, NULL) != CUDA_SUCCESS || base != p || bs != sz)
            ck_abort_msg("lookup of a new block's last byte");
        ptr[k] = p;
        size[k] = sz;
        tag[k] = rnd(&seed);
        fill(p, sz, tag[k]);
        if (op % 200 == 0) /* the other stream finishes its work now and then */
            fake_complete(FB, S2);
    }
    size_t live = 0;
    for (int k = 0; k < N; k++) {
        if (!ptr[k])
            continue;
        ck_assert(verify(ptr[k], size[k], tag[k]));
        live += size[k];
    }
    sw_counters c = counters();
    ck_assert_uint_eq(c.in_use_bytes, live);
    ck_assert_uint_le(fstats().max_dev_pages, 48);
    for (int k = 0; k < N; k++)
        if (ptr[k])
            ck_assert_int_eq(sw_free(P, ptr[k]), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().in_use_bytes, 0);
    env_down();
}
END_TEST

START_TEST(map_failure_is_returned_and_leaves_no_trace)
{
    env_up(8, false, 0);
    CUdeviceptr p;
    fake_fail_next(FB, "page_create", CUDA_ERROR_UNKNOWN);
    ck_assert_int_eq(sw_alloc(P, 0, 100, &p), CUDA_ERROR_UNKNOWN);
    fake_fail_next(FB, "map", CUDA_ERROR_ILLEGAL_STATE);
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &p), CUDA_ERROR_ILLEGAL_STATE);
    /* A refused grant is tried again page by page: once is absorbed... */
    fake_fail_next(FB, "set_access", CUDA_ERROR_INVALID_DEVICE);
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &p), CUDA_SUCCESS);
    fill(p, 3 * PG, 4);
    ck_assert(verify(p, 3 * PG, 4));
    ck_assert_int_eq(sw_free(P, p), CUDA_SUCCESS);
    /* ... a driver that keeps refusing is answered with its error (more
     * than the 3 pages mapped so far: some must be mapped afresh). */
    fake_fail_times(FB, "set_access", CUDA_ERROR_INVALID_DEVICE, 1000);
    ck_assert_int_eq(sw_alloc(P, 0, 6 * PG, &p), CUDA_ERROR_INVALID_DEVICE);
    fake_fail_next(FB, "", CUDA_SUCCESS); /* no more refusals */
    ck_assert_uint_eq(counters().in_use_bytes, 0);
    ck_assert_int_eq(sw_alloc(P, 0, 8 * PG, &p), CUDA_SUCCESS); /* all of it still usable */
    fill(p, 8 * PG, 5);
    ck_assert(verify(p, 8 * PG, 5));
    ck_assert_int_eq(sw_free(P, p), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(peer_access_covers_existing_and_new_mappings)
{
    env_up(8, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    uint64_t before = fstats().set_access;
    ck_assert_int_eq(sw_grant_access(P, 0, 1), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().set_access, before + 1); /* one run of 2 pages */
    ck_assert_int_eq(sw_grant_access(P, 0, 1), CUDA_SUCCESS); /* idempotent */
    ck_assert_uint_eq(fstats().set_access, before + 1);
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_grant_access(P, 7, 1), CUDA_ERROR_INVALID_VALUE); /* not set up */
    sw_free(P, a);
    sw_free(P, b);
    env_down();
}
END_TEST

/* The workload (sizes uniform up to 64 MiB, 73% allocate / 27%
 * free, 10,000 operations, requested bytes capped below the limit: 3/4 of
 * it here, so that the pool need not fill up) on demand-created pages:
 * peak requested / peak device bytes held >= 0.9. */
START_TEST(pool_efficiency_on_the_random_workload)
{
    enum { MAXLIVE = 4096 };
    const size_t limit_pages = 2048;
    env_up(limit_pages, false, 0);
    static CUdeviceptr ptr[MAXLIVE];
    static size_t sz[MAXLIVE];
    int live = 0;
    size_t used = 0, cap = limit_pages * PG * 3 / 4;
    uint64_t seed = 42;
    for (int op = 0; op < 10000; op++) {
        bool do_alloc = rnd(&seed) % 100 < 73 || live == 0;
        size_t s = 1 + rnd(&seed) % (64 * MiB);
        if (do_alloc && used + s <= cap && live < MAXLIVE) {
            CUresult r = sw_alloc(P, 0, s, &ptr[live]);
            if (r != CUDA_SUCCESS)
                ck_abort_msg("alloc of %zu with %zu in use: %d", s, used, r);
            sz[live++] = s;
            used += s;
        } else if (live) {
            int k = (int)(rnd(&seed) % (uint64_t)live);
            if (sw_free(P, ptr[k]) != CUDA_SUCCESS)
                ck_abort_msg("free");
            used -= sz[k];
            ptr[k] = ptr[--live];
            sz[k] = sz[live];
        }
    }
    sw_counters c = counters();
    double held = (double)fstats().max_dev_pages * PG;
    ck_assert_msg((double)c.peak_in_use_bytes / held >= 0.9, "efficiency %.3f",
                  (double)c.peak_in_use_bytes / held);
    ck_assert_uint_le(fstats().max_dev_pages, limit_pages);
    ck_assert_uint_eq(c.ooms, 0);
    env_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_alloc");
    TCase *tc = tcase_create("alloc");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, small_and_large_are_aligned_distinct_and_writable);
    tcase_add_test(tc, size_zero_and_bad_arguments);
    tcase_add_test(tc, limit_gives_oom_and_never_more_pages);
    tcase_add_test(tc, preallocation_creates_everything_up_front);
    tcase_add_test(tc, on_demand_creates_only_what_is_used);
    tcase_add_test(tc, reuse_costs_no_map_or_set_access);
    tcase_add_test(tc, freed_neighbours_coalesce);
    tcase_add_test(tc, small_sizes_share_pages);
    tcase_add_test(tc, threads_allocating_one_small_size_use_slabs_of_their_own);
    tcase_add_test(tc, page_runs_bigger_than_needed_are_split);
    tcase_add_loop_test(tc, randomized_sequences_keep_every_byte, 0, 4);
    tcase_add_test(tc, map_failure_is_returned_and_leaves_no_trace);
    tcase_add_test(tc, peer_access_covers_existing_and_new_mappings);
    tcase_add_test(tc, pool_efficiency_on_the_random_workload);
    suite_add_tcase(s, tc);
    return s;
}
