/* Free semantics: cuMemFree'd blocks wait for a sync point (batched),
 * cuMemFreeAsync'd blocks are reusable on their stream at once and elsewhere
 * after their event; bad pointers and double frees are refused. */
#include <pthread.h>

#include "tests/unit/policy/helpers.h"

#define NOSTREAM ((CUstream)0xdead) /* "any stream" for conflict checks */

START_TEST(sync_free_is_not_reused_before_a_sync)
{
    env_up(16, true, 64 * PG); /* batch large: no sync while free pages remain */
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    fake_launch(FB, S1, a, 2 * PG);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().pending_bytes, 2 * PG);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_ne(b, a);
    ck_assert(!fake_conflict(FB, b, 2 * PG, NOSTREAM));
    ck_assert_uint_eq(fstats().syncs, 0);
    sw_free(P, b);
    env_down();
}
END_TEST

START_TEST(sync_free_reused_after_the_pool_needs_it)
{
    env_up(4, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 3);
    fake_launch(FB, S1, a, 4 * PG);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    uint64_t maps = fstats().maps;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(b, a);                 /* the same block, after one sync */
    ck_assert_uint_eq(fstats().syncs, 1);
    ck_assert_uint_eq(fstats().maps, maps);  /* its mapping was kept */
    ck_assert(!fake_conflict(FB, b, 4 * PG, NOSTREAM));
    sw_free(P, b);
    env_down();
}
END_TEST

START_TEST(sync_frees_are_batched_one_sync_per_batch)
{
    /* Batch threshold 4 pages: the 2nd free of 2 pages reaches it. */
    env_up(64, true, 4 * PG);
    CUdeviceptr p;
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &p), CUDA_SUCCESS);
        ck_assert(!fake_conflict(FB, p, 2 * PG, NOSTREAM));
        fake_launch(FB, S1, p, 2 * PG);
        ck_assert_int_eq(sw_free(P, p), CUDA_SUCCESS);
    }
    /* 40 allocations, one sync per two frees at most, and few pages. */
    ck_assert_uint_le(fstats().syncs, 20);
    ck_assert_uint_ge(fstats().syncs, 1);
    ck_assert_uint_le(counters().mapped_bytes, 8 * PG);
    env_down();
}
END_TEST

START_TEST(on_demand_pool_syncs_before_creating_pages)
{
    env_up(16, false, 64 * PG);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    fake_launch(FB, S1, a, 2 * PG);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(b, a); /* a sync is cheaper than creating pages */
    ck_assert_uint_eq(fstats().syncs, 1);
    ck_assert_uint_eq(fstats().creates, 2);
    ck_assert(!fake_conflict(FB, b, 2 * PG, NOSTREAM));
    sw_free(P, b);
    env_down();
}
END_TEST

START_TEST(program_sync_points_release_without_a_backend_sync)
{
    env_up(4, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    /* The program synchronizes the device itself (the shim reports it). */
    uint64_t t = sw_sync_begin(P, 0);
    sw_sync_end(P, 0, t);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(b, a);
    ck_assert_uint_eq(fstats().syncs, 0);
    sw_free(P, b);
    env_down();
}
END_TEST

START_TEST(program_sync_covers_frees_before_it_only)
{
    env_up(8, false, 64 * PG);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    uint64_t t = sw_sync_begin(P, 0);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS); /* after the sync began */
    sw_sync_end(P, 0, t);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &c), CUDA_SUCCESS);
    ck_assert_uint_eq(c, a);
    ck_assert_uint_eq(fstats().syncs, 0);
    ck_assert_uint_eq(counters().pending_bytes, 4 * PG); /* b still waits */
    sw_free(P, c);
    env_down();
}
END_TEST

/* A covered free at the head of the thread's queue lets the search for a
 * covered block of another size start; it must stop at the first free no
 * sync covers: a block freed after the sync is not handed out under the
 * work still queued on it. */
START_TEST(covered_reuse_stops_at_the_first_uncovered_free)
{
    env_up(16, true, 64 * PG); /* batch large: no sync while free pages remain */
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    uint64_t t = sw_sync_begin(P, 0); /* covers a */
    sw_sync_end(P, 0, t);
    fake_launch(FB, S1, b, 4 * PG);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS); /* after the sync: not covered */
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &c), CUDA_SUCCESS);
    ck_assert_uint_ne(c, b);
    ck_assert(!fake_conflict(FB, c, 4 * PG, NOSTREAM));
    ck_assert_uint_eq(fstats().syncs, 0);
    sw_free(P, c);
    env_down();
}
END_TEST

/* Issue 14 item 6: a thread gets back what it freed (size bytes) once a
 * sync covered it, from its own shard of the queue: no carve, no collect;
 * the new owner (again_size bytes: the same block or slot size) sees its
 * own size, and a second free of it is refused. */
static void check_covered_reuse(size_t size, size_t again_size)
{
    env_up(16, true, 64 * PG);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, size, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, size, &b), CUDA_SUCCESS);
    ck_assert_uint_ne(b, a); /* not covered yet: elsewhere */
    uint64_t t = sw_sync_begin(P, 0); /* the program synchronizes */
    sw_sync_end(P, 0, t);
    ck_assert_int_eq(sw_alloc(P, 0, again_size, &c), CUDA_SUCCESS);
    ck_assert_uint_eq(c, a);
    ck_assert_uint_eq(counters().pending_bytes, 0);
    CUdeviceptr base;
    size_t got;
    int dev;
    ck_assert_int_eq(sw_lookup(P, c + 10, &base, &got, &dev, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(base, c);
    ck_assert_uint_eq(got, again_size);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_ERROR_INVALID_VALUE);
    sw_free(P, b);
    env_down();
}

START_TEST(covered_block_goes_back_to_the_thread_that_freed_it)
{
    check_covered_reuse(64 << 10, (64 << 10) - 100); /* the same granules */
}
END_TEST

/* Small sizes too: the covered slot is reused, not a new one taken. */
START_TEST(covered_slab_slot_goes_back_to_the_thread_that_freed_it)
{
    check_covered_reuse(4096, 4000); /* the same class */
}
END_TEST

static void *alloc_64k(void *out)
{
    (void)sw_alloc(P, 0, 64 << 10, out);
    return NULL;
}

static void *free_it(void *ptr)
{
    ck_assert_int_eq(sw_free(P, *(CUdeviceptr *)ptr), CUDA_SUCCESS);
    return NULL;
}

static void on_thread(void *(*fn)(void *), void *arg)
{
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, fn, arg), 0);
    pthread_join(th, NULL);
}

/* A thread whose shard holds no covered block of the size takes another
 * thread's before it carves a new one. */
START_TEST(covered_block_of_another_thread_is_taken_before_carving)
{
    env_up(16, true, 64 * PG);
    CUdeviceptr a, b = 0;
    ck_assert_int_eq(sw_alloc(P, 0, 64 << 10, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    on_thread(alloc_64k, &b); /* not covered yet: a new block */
    ck_assert_uint_ne(b, a);
    uint64_t t = sw_sync_begin(P, 0);
    sw_sync_end(P, 0, t);
    CUdeviceptr c = 0;
    on_thread(alloc_64k, &c);
    ck_assert_uint_eq(c, a);
    ck_assert_uint_eq(counters().pending_bytes, 0);
    sw_free(P, b);
    sw_free(P, c);
    env_down();
}
END_TEST

/* ... but its own first: the block it freed itself, not the other's. */
START_TEST(covered_block_of_the_thread_itself_comes_first)
{
    env_up(16, true, 64 * PG);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc(P, 0, 64 << 10, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 64 << 10, &b), CUDA_SUCCESS);
    on_thread(free_it, &a); /* into the other thread's shard, first */
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    uint64_t t = sw_sync_begin(P, 0);
    sw_sync_end(P, 0, t);
    ck_assert_int_eq(sw_alloc(P, 0, 64 << 10, &c), CUDA_SUCCESS);
    ck_assert_uint_eq(c, b);
    ck_assert_uint_eq(counters().pending_bytes, 64 << 10);
    sw_free(P, c);
    env_down();
}
END_TEST

/* sw_held_bytes (cuMemGetInfo's free): pages that live data holds, and
 * pages only pending frees hold left out at once, a page shared by two
 * freed blocks once, one shared with live data not at all; slab pages
 * until their frees are released (a covered one at the query); memory
 * outside the pool in whole pages. */
START_TEST(held_bytes_are_pages_of_live_data)
{
    env_up(16, true, 64 * PG);
    CUdeviceptr a, b, c, s;
    ck_assert_uint_eq(sw_held_bytes(P, 0), 0);
    /* a on pages 0-1, b from the middle of page 1 to the end of page 2. */
    ck_assert_int_eq(sw_alloc(P, 0, PG + MiB, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, PG + MiB, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(b, a + PG + MiB);
    ck_assert_uint_eq(sw_held_bytes(P, 0), 3 * PG);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_uint_eq(sw_held_bytes(P, 0), 2 * PG); /* page 1: b's too */
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    ck_assert_uint_eq(sw_held_bytes(P, 0), 0);      /* page 1 left out once */
    ck_assert_uint_eq(counters().backing_bytes, 3 * PG); /* still pending */
    /* A block within one page, and a small slot: the slab holds its page
     * until the slot's free is released. */
    ck_assert_int_eq(sw_alloc(P, 0, 100 * 1024, &c), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 100, &s), CUDA_SUCCESS);
    ck_assert_uint_eq(sw_held_bytes(P, 0), c / PG == s / PG ? PG : 2 * PG);
    ck_assert_int_eq(sw_free(P, s), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    ck_assert_uint_eq(sw_held_bytes(P, 0), PG);
    uint64_t t = sw_sync_begin(P, 0);
    sw_sync_end(P, 0, t);
    ck_assert_uint_eq(sw_held_bytes(P, 0), 0);
    ck_assert_uint_eq(counters().backing_bytes, 0); /* the query released them */
    /* Outside the pool: whole pages of it. */
    ck_assert_int_eq(sw_lend(P, 0, PG + 1), CUDA_SUCCESS);
    ck_assert_uint_eq(sw_held_bytes(P, 0), 2 * PG);
    sw_unlend(P, 0, PG + 1);
    ck_assert_uint_eq(sw_held_bytes(P, 0), 0);
    env_down();
}
END_TEST

START_TEST(async_free_reused_at_once_on_its_stream)
{
    env_up(8, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc_async(P, 0, 3 * PG, S1, &a), CUDA_SUCCESS);
    fake_launch(FB, S1, a, 3 * PG);
    ck_assert_int_eq(sw_free_async(P, a, S1), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc_async(P, 0, 3 * PG - 5, S1, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(b, a);
    ck_assert_uint_eq(fstats().syncs, 0);
    CUdeviceptr base;
    size_t size;
    int dev;
    ck_assert_int_eq(sw_lookup(P, b, &base, &size, &dev, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(size, 3 * PG - 5);
    /* Small blocks too. */
    CUdeviceptr s, t;
    ck_assert_int_eq(sw_alloc_async(P, 0, 300, S1, &s), CUDA_SUCCESS);
    fake_launch(FB, S1, s, 300);
    ck_assert_int_eq(sw_free_async(P, s, S1), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc_async(P, 0, 400, S1, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(t, s);
    sw_free_async(P, b, S1);
    sw_free_async(P, t, S1);
    env_down();
}
END_TEST

START_TEST(async_free_waits_for_its_event_on_other_streams)
{
    env_up(64, true, 64 * PG);
    CUdeviceptr a, b, c;
    ck_assert_int_eq(sw_alloc_async(P, 0, 2 * PG, S1, &a), CUDA_SUCCESS);
    fake_launch(FB, S1, a, 2 * PG);
    ck_assert_int_eq(sw_free_async(P, a, S1), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc_async(P, 0, 2 * PG, S2, &b), CUDA_SUCCESS);
    ck_assert_uint_ne(b, a);
    ck_assert(!fake_conflict(FB, b, 2 * PG, S2));
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &c), CUDA_SUCCESS); /* no stream: same rule */
    ck_assert_uint_ne(c, a);
    fake_complete(FB, S1); /* the event completes */
    CUdeviceptr d;
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    /* The cached range is found without mapping after the event is polled. */
    ck_assert_int_eq(sw_free_async(P, b, S2), CUDA_SUCCESS);
    fake_complete(FB, S2);
    uint64_t maps = fstats().maps;
    ck_assert_int_eq(sw_alloc_async(P, 0, 2 * PG, S2, &d), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().maps, maps);
    ck_assert_uint_eq(fstats().syncs, 0);
    ck_assert(!fake_conflict(FB, d, 2 * PG, S2));
    sw_free(P, d);
    env_down();
}
END_TEST

START_TEST(per_thread_stream_is_never_the_same_stream)
{
    env_up(64, true, 64 * PG);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc_async(P, 0, 2 * PG, CU_STREAM_PER_THREAD, &a), CUDA_SUCCESS);
    fake_launch(FB, CU_STREAM_PER_THREAD, a, 2 * PG);
    ck_assert_int_eq(sw_free_async(P, a, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc_async(P, 0, 2 * PG, CU_STREAM_PER_THREAD, &b), CUDA_SUCCESS);
    ck_assert_uint_ne(b, a);
    sw_free(P, b);
    env_down();
}
END_TEST

START_TEST(destroyed_stream_loses_same_stream_reuse)
{
    env_up(64, true, 64 * PG);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc_async(P, 0, 2 * PG, S1, &a), CUDA_SUCCESS);
    fake_launch(FB, S1, a, 2 * PG);
    ck_assert_int_eq(sw_free_async(P, a, S1), CUDA_SUCCESS);
    sw_stream_destroyed(P, 0, S1);
    ck_assert_int_eq(sw_alloc_async(P, 0, 2 * PG, S1, &b), CUDA_SUCCESS); /* a new S1 */
    ck_assert_uint_ne(b, a);
    sw_free(P, b);
    env_down();
}
END_TEST

START_TEST(pending_async_frees_released_by_a_sync_when_needed)
{
    env_up(4, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc_async(P, 0, 4 * PG, S1, &a), CUDA_SUCCESS);
    fake_launch(FB, S1, a, 4 * PG);
    ck_assert_int_eq(sw_free_async(P, a, S1), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc_async(P, 0, 4 * PG, S2, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(b, a);
    ck_assert_uint_eq(fstats().syncs, 1);
    ck_assert(!fake_conflict(FB, b, 4 * PG, S2));
    sw_free(P, b);
    env_down();
}
END_TEST

START_TEST(bad_pointers_and_double_frees_are_refused)
{
    env_up(8, false, 0);
    CUdeviceptr small, big;
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &small), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &big), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, small + 8), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_free(P, big + PG), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_free(P, small + 1024), CUDA_ERROR_INVALID_VALUE); /* free slot */
    ck_assert_int_eq(sw_free(P, 0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_free(P, (CUdeviceptr)&small), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_free(P, ~(CUdeviceptr)0), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_free(P, small), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, small), CUDA_ERROR_INVALID_VALUE);   /* pending */
    ck_assert_int_eq(sw_free_async(P, small, S1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_free_async(P, big, S1), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free_async(P, big, S1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_free(P, big), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr x;
    ck_assert_int_eq(sw_alloc(P, 0, 8 * PG, &x), CUDA_SUCCESS); /* syncs, releases both */
    ck_assert_uint_ne(x, big);
    ck_assert_int_eq(sw_free(P, big), CUDA_ERROR_INVALID_VALUE); /* released, inside x */
    sw_counters c = counters();
    ck_assert_uint_eq(c.frees, 2);
    ck_assert_uint_eq(c.in_use_bytes, 8 * PG);
    ck_assert_int_eq(sw_free(P, x), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* The program still owns it: its size, and its BUFFER_ID (a registration
 * cache must not take it for another allocation). */
START_TEST(event_failure_keeps_the_block_live)
{
    env_up(8, false, 0);
    static const size_t sizes[] = {5000, 3 * PG + 1};
    for (int i = 0; i < 2; i++) {
        CUdeviceptr a;
        ck_assert_int_eq(sw_alloc(P, 0, sizes[i], &a), CUDA_SUCCESS);
        CUdeviceptr base;
        size_t size;
        int dev;
        sw_ids before, after;
        ck_assert_int_eq(sw_lookup(P, a, &base, &size, &dev, &before), CUDA_SUCCESS);
        fake_fail_next(FB, "event_record", CUDA_ERROR_INVALID_HANDLE);
        ck_assert_int_eq(sw_free_async(P, a, S1), CUDA_ERROR_INVALID_HANDLE);
        ck_assert_int_eq(sw_lookup(P, a, &base, &size, &dev, &after), CUDA_SUCCESS);
        ck_assert_uint_eq(size, sizes[i]);
        ck_assert(after.buffer == before.buffer && after.block == before.block);
        ck_assert_uint_eq(counters().in_use_bytes, sizes[i]);
        ck_assert_int_eq(sw_free_async(P, a, S1), CUDA_SUCCESS);
    }
    env_down();
}
END_TEST

START_TEST(sync_failure_is_returned)
{
    env_up(2, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    fake_fail_next(FB, "synchronize", CUDA_ERROR_LAUNCH_FAILED);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_ERROR_LAUNCH_FAILED);
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(b, a);
    sw_free(P, b);
    env_down();
}
END_TEST

START_TEST(events_are_recycled)
{
    env_up(8, false, 0);
    CUdeviceptr a;
    for (int i = 0; i < 200; i++) {
        ck_assert_int_eq(sw_alloc_async(P, 0, 4096, S1, &a), CUDA_SUCCESS);
        ck_assert_int_eq(sw_free_async(P, a, S1), CUDA_SUCCESS);
    }
    ck_assert_uint_le(fstats().ev_create, 2);
    ck_assert_uint_eq(fstats().ev_record, 200);
    env_down();
}
END_TEST

/* cuDevicePrimaryCtxReset while the program keeps a context of its own
 * (no sync point of the device): the reset finished the primary's work and
 * destroyed its events. The free on the primary's stream is done (released
 * without its dead event, which is never queried, recorded nor destroyed
 * again, and no longer counted); the free on the own context's stream,
 * whose work is still in flight, keeps its live event. */
#define PRIMARY_CTX ((void *)0xC0)
#define OWN_CTX ((void *)0xC1)
START_TEST(a_context_reset_releases_its_async_frees_and_keeps_others)
{
    env_up(8, false, 0);
    CUdeviceptr a, b, c, x, big;
    /* Allocated first: a pool that makes pages syncs before it does. */
    ck_assert_int_eq(sw_alloc_async(P, 0, PG, S2, &b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc_async(P, 0, 2 * PG, S1, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc_async(P, 0, 4096, S1, &c), CUDA_SUCCESS);
    fake_set_context(FB, OWN_CTX);
    fake_launch(FB, S2, b, PG);
    ck_assert_int_eq(sw_free_async(P, b, S2), CUDA_SUCCESS);
    fake_set_context(FB, PRIMARY_CTX);
    fake_launch(FB, S1, a, 2 * PG);
    ck_assert_int_eq(sw_free_async(P, a, S1), CUDA_SUCCESS);
    /* An idle event of the primary: a free taken back at once on its stream. */
    ck_assert_int_eq(sw_free_async(P, c, S1), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc_async(P, 0, 4096, S1, &x), CUDA_SUCCESS);
    ck_assert_uint_eq(x, c);
    ck_assert_uint_eq(counters().pending_bytes, 3 * PG);
    fake_complete(FB, S1);               /* the reset finishes the primary's work */
    fake_context_reset(FB, PRIMARY_CTX); /* and destroys its events */
    sw_context_reset(P, 0, PRIMARY_CTX);
    sw_counters k = counters();
    ck_assert_msg(k.pending_bytes == PG, "pending after the reset: %llu bytes, expected %zu",
                  (unsigned long long)k.pending_bytes, PG);
    fake_stats f = fstats();
    ck_assert_uint_eq(k.events, f.ev_create - f.ev_destroy);
    /* Async frees on the primary's stream after it: events that live. */
    ck_assert_int_eq(sw_free_async(P, x, S1), CUDA_SUCCESS);
    assert_no_violation();
    /* The pool wants every page: the queue is polled, then synced. */
    fake_complete(FB, S2);
    ck_assert_int_eq(sw_alloc(P, 0, 7 * PG, &big), CUDA_SUCCESS);
    assert_no_violation();
    k = counters();
    f = fstats();
    ck_assert_uint_eq(k.events, f.ev_create - f.ev_destroy);
    sw_free(P, big);
    env_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_free");
    TCase *tc = tcase_create("free");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, sync_free_is_not_reused_before_a_sync);
    tcase_add_test(tc, sync_free_reused_after_the_pool_needs_it);
    tcase_add_test(tc, covered_block_goes_back_to_the_thread_that_freed_it);
    tcase_add_test(tc, covered_block_of_another_thread_is_taken_before_carving);
    tcase_add_test(tc, covered_block_of_the_thread_itself_comes_first);
    tcase_add_test(tc, covered_slab_slot_goes_back_to_the_thread_that_freed_it);
    tcase_add_test(tc, sync_frees_are_batched_one_sync_per_batch);
    tcase_add_test(tc, on_demand_pool_syncs_before_creating_pages);
    tcase_add_test(tc, program_sync_points_release_without_a_backend_sync);
    tcase_add_test(tc, program_sync_covers_frees_before_it_only);
    tcase_add_test(tc, covered_reuse_stops_at_the_first_uncovered_free);
    tcase_add_test(tc, async_free_reused_at_once_on_its_stream);
    tcase_add_test(tc, async_free_waits_for_its_event_on_other_streams);
    tcase_add_test(tc, per_thread_stream_is_never_the_same_stream);
    tcase_add_test(tc, destroyed_stream_loses_same_stream_reuse);
    tcase_add_test(tc, pending_async_frees_released_by_a_sync_when_needed);
    tcase_add_test(tc, bad_pointers_and_double_frees_are_refused);
    tcase_add_test(tc, event_failure_keeps_the_block_live);
    tcase_add_test(tc, sync_failure_is_returned);
    tcase_add_test(tc, events_are_recycled);
    tcase_add_test(tc, a_context_reset_releases_its_async_frees_and_keeps_others);
    tcase_add_test(tc, held_bytes_are_pages_of_live_data);
    suite_add_tcase(s, tc);
    return s;
}
