/* Legacy IPC of pool memory (export.c): an exported allocation's pages are
 * filled back if spilled, never move again, and once nothing uses them are
 * released to the driver instead of going back to the pool or the cache
 * (another process may still write to them); the pool makes replacements. */
#include "policy/internal.h"
#include "tests/unit/policy/helpers.h"

static void settle(void)
{
    uint64_t t = sw_sync_begin(P, 0);
    sw_sync_end(P, 0, t);
}

START_TEST(an_exported_page_never_spills)
{
    env_spill(4, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    fill(a, 2 * PG, 1);
    sw_export x;
    ck_assert_int_eq(sw_export_pin(P, a + 100, &x), CUDA_SUCCESS);
    ck_assert_uint_eq(x.base, a);
    ck_assert_uint_eq(x.size, 2 * PG);
    ck_assert_uint_eq(x.npages, 2);
    ck_assert_uint_eq(x.offset, 0);
    CUdeviceptr base;
    size_t size;
    int dev;
    sw_ids ids;
    ck_assert_int_eq(sw_lookup(P, a, &base, &size, &dev, &ids), CUDA_SUCCESS);
    ck_assert_uint_eq(x.buffer, ids.buffer);
    /* a is the coldest: without the export it would be spilled for b. */
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(a, 2), 0);
    ck_assert_uint_eq(host_pages_in(b, 4), 2);
    ck_assert_int_eq(sw_set_residency(P, a, 2, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(a, 2), 0); /* skipped: it cannot move */
    ck_assert(verify(a, 2 * PG, 1));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(a_spilled_allocation_is_filled_back_by_its_export)
{
    env_spill(4, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &a), CUDA_SUCCESS);
    fill(a, 3 * PG, 3);
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &b), CUDA_SUCCESS);
    fill(b, 3 * PG, 4);
    ck_assert_uint_gt(host_pages_in(a, 3), 0);
    sw_counters c0 = counters();
    sw_export x;
    ck_assert_int_eq(sw_export_pin(P, a, &x), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(a, 3), 0);
    ck_assert_uint_eq(host_pages_in(b, 3), 2); /* b made room */
    ck_assert_uint_gt(counters().fill_events, c0.fill_events);
    ck_assert(verify(a, 3 * PG, 3));
    ck_assert(verify(b, 3 * PG, 4));
    /* Exported already: the same answer, nothing moves. */
    sw_export y;
    ck_assert_int_eq(sw_export_pin(P, a + PG, &y), CUDA_SUCCESS);
    ck_assert_uint_eq(y.buffer, x.buffer);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

static CUresult count_each(void *ctx, size_t i, CUmemGenericAllocationHandle h)
{
    (void)i;
    (void)h;
    ++*(size_t *)ctx;
    return CUDA_SUCCESS;
}

START_TEST(a_freed_exported_page_is_released_not_reused)
{
    env_spill(4, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    sw_export x;
    ck_assert_int_eq(sw_export_pin(P, a, &x), CUDA_SUCCESS);
    size_t n = 0;
    ck_assert_int_eq(sw_export_handles(P, &x, 0, SIZE_MAX, count_each, &n), CUDA_SUCCESS);
    ck_assert_uint_eq(n, 2);
    fake_stats s0 = fstats();
    uint64_t pool0 = counters().pool_bytes;
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    /* Freed: its handles are no one's to list any more. */
    ck_assert_int_eq(sw_export_handles(P, &x, 0, SIZE_MAX, count_each, &n), CUDA_ERROR_INVALID_VALUE);
    /* The pool releases a's two pages and makes two fresh ones: the whole
     * limit on the device, none of it a's. */
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(b, 4), 0);
    fake_stats s1 = fstats();
    ck_assert_uint_eq(s1.releases, s0.releases + 2);
    ck_assert_uint_eq(s1.creates, s0.creates + 4); /* 2 to the limit, 2 for a's */
    ck_assert_uint_eq(s1.live_dev_pages, 4);
    ck_assert_uint_eq(counters().pool_bytes, pool0 + 2 * PG);
    assert_no_violation();
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* A covered free is reused by the next allocation of its size at the same
 * VA: never one on exported pages. */
START_TEST(a_freed_export_is_not_reused_from_the_free_queue)
{
    env_spill(8, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    sw_export x;
    ck_assert_int_eq(sw_export_pin(P, a, &x), CUDA_SUCCESS);
    uint64_t rel = fstats().releases;
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    settle();
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().releases, rel + 2);
    ck_assert(!sw_export_touches(P, b, 2 * PG));
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(neighbours_on_an_exported_page_stay_with_it)
{
    env_spill(4, 16);
    CUdeviceptr s1, s2, b;
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &s1), CUDA_SUCCESS);
    ck_assert_int_eq(sw_alloc(P, 0, 1000, &s2), CUDA_SUCCESS);
    ck_assert_uint_eq(s1 & ~(CUdeviceptr)(PG - 1), s2 & ~(CUdeviceptr)(PG - 1));
    fill(s2, 1000, 9);
    sw_export x;
    ck_assert_int_eq(sw_export_pin(P, s1 + 10, &x), CUDA_SUCCESS);
    ck_assert_uint_eq(x.base, s1);
    ck_assert_uint_eq(x.offset, s1 & (PG - 1));
    ck_assert_uint_eq(x.npages, 1);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(host_pages_in(s2 & ~(CUdeviceptr)(PG - 1), 1), 0);
    ck_assert(verify(s2, 1000, 9));
    uint64_t rel = fstats().releases;
    ck_assert_int_eq(sw_free(P, s1), CUDA_SUCCESS);
    settle();
    CUdeviceptr c;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &c), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, c), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().releases, rel); /* s2 still lives on it */
    ck_assert(verify(s2, 1000, 9));
    ck_assert_int_eq(sw_free(P, s2), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* The driver refuses the unmap of a freed exported page twice: stranded,
 * its VA named by no page; when the next allocation there unmaps it, it is
 * released (never pooled) and the pool makes a replacement. */
START_TEST(a_stranded_exported_page_is_released_once_unmapped)
{
    env_spill(4, 16);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &a), CUDA_SUCCESS);
    sw_export x;
    ck_assert_int_eq(sw_export_pin(P, a, &x), CUDA_SUCCESS);
    uint64_t rel0 = fstats().releases;
    fake_fail_times(FB, "unmap", CUDA_ERROR_UNKNOWN, 2);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    settle();
    sw_collect(P, 0);
    fake_fail_clear(FB);
    ck_assert_uint_eq(fstats().releases, rel0); /* still mapped: stranded */
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    ck_assert_uint_eq(b, a); /* placed over it: unmapped first */
    ck_assert_uint_eq(fstats().releases, rel0 + 1);
    ck_assert_uint_eq(host_pages_in(b, 4), 0); /* a replacement was made */
    assert_no_violation();
    ck_assert_int_eq(sw_free(P, b), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(what_is_not_pool_allocation_memory_is_not_exported)
{
    env_spill(4, 16);
    sw_export x;
    ck_assert_int_eq(sw_export_pin(P, 0x1000, &x), CUDA_ERROR_NOT_FOUND);
    CUdeviceptr a;
    ck_assert_int_eq(sw_alloc(P, 0, PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    settle();
    ck_assert_int_ne(sw_export_pin(P, a, &x), CUDA_SUCCESS);
    ck_assert_int_eq(sw_export_pin(NULL, a, &x), CUDA_ERROR_INVALID_VALUE);
    env_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_export");
    TCase *tc = tcase_create("export");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, an_exported_page_never_spills);
    tcase_add_test(tc, a_spilled_allocation_is_filled_back_by_its_export);
    tcase_add_test(tc, a_freed_exported_page_is_released_not_reused);
    tcase_add_test(tc, a_freed_export_is_not_reused_from_the_free_queue);
    tcase_add_test(tc, neighbours_on_an_exported_page_stay_with_it);
    tcase_add_test(tc, a_stranded_exported_page_is_released_once_unmapped);
    tcase_add_test(tc, what_is_not_pool_allocation_memory_is_not_exported);
    suite_add_tcase(s, tc);
    return s;
}
