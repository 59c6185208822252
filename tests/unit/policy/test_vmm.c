/* Program-managed VMM served from the pool: a JAX-like arena (reserve,
 * create, map, set access, use, unmap, release) and PyTorch-like growing
 * segments, answered as the driver would. */
#include <stdlib.h>

#include "tests/unit/policy/helpers.h"

START_TEST(jax_like_arena_behaves_as_without_spillway)
{
    env_up(16, true, 0);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, 32 * PG, &va), CUDA_SUCCESS); /* program's reservation */
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(sw_vmm_create(P, 0, 12 * PG, &h), CUDA_SUCCESS);
    ck_assert(sw_vmm_is_handle(P, h));
    size_t size;
    int dev;
    ck_assert_int_eq(sw_vmm_properties(P, h, &size, &dev, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(size, 12 * PG);
    ck_assert_int_eq(dev, 0);
    ck_assert_int_eq(sw_vmm_map(P, va + 4 * PG, 12 * PG, 0, h), CUDA_SUCCESS);
    ck_assert(sw_owns(P, va + 4 * PG));
    ck_assert(!sw_owns(P, va));
    ck_assert_int_eq(sw_vmm_set_access(P, va + 4 * PG, 12 * PG, 1), CUDA_SUCCESS);
    fill(va + 4 * PG, 12 * PG, 77);
    ck_assert(verify(va + 4 * PG, 12 * PG, 77));
    CUdeviceptr base;
    ck_assert_int_eq(sw_lookup(P, va + 9 * PG + 123, &base, &size, &dev, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(base, va + 4 * PG);
    ck_assert_uint_eq(size, 12 * PG);
    ck_assert_uint_eq(counters().in_use_bytes, 12 * PG);
    /* The pool now has 4 pages left for cuMemAlloc-class allocations. */
    CUdeviceptr p;
    ck_assert_int_eq(sw_alloc(P, 0, 5 * PG, &p), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &p), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, p), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_unmap(P, va + 4 * PG, 12 * PG, NULL), CUDA_SUCCESS);
    ck_assert(!sw_owns(P, va + 4 * PG));
    ck_assert_int_eq(sw_lookup(P, va + 5 * PG, &base, &size, &dev, NULL), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert(!sw_vmm_is_handle(P, h));
    ck_assert_uint_eq(counters().in_use_bytes, 0);
    ck_assert_uint_eq(fstats().creates, 16); /* all from the preallocated pool */
    ck_assert_int_eq(fake_free_va(FB, va, 32 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(growing_segments_map_handle_by_handle)
{
    env_up(16, false, 0);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, 16 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h[8];
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h[i]), CUDA_SUCCESS);
        ck_assert_int_eq(sw_vmm_map(P, va + (size_t)i * 2 * PG, 2 * PG, 0, h[i]), CUDA_SUCCESS);
        ck_assert_int_eq(sw_vmm_set_access(P, va + (size_t)i * 2 * PG, 2 * PG, 1), CUDA_SUCCESS);
        /* PyTorch releases its reference right after mapping. */
        ck_assert_int_eq(sw_vmm_release(P, h[i], NULL), CUDA_SUCCESS);
    }
    fill(va, 16 * PG, 9);
    ck_assert(verify(va, 16 * PG, 9));
    /* Memory stays while mapped; a handle can be retained from any address. */
    CUmemGenericAllocationHandle r;
    ck_assert_int_eq(sw_vmm_retain(P, va + 5 * PG + 17, &r), CUDA_SUCCESS);
    size_t size;
    int dev;
    ck_assert_int_eq(sw_vmm_properties(P, r, &size, &dev, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(size, 2 * PG);
    ck_assert_int_eq(sw_vmm_release(P, r, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().in_use_bytes, 16 * PG);
    /* One unmap may cover several mappings. */
    ck_assert_int_eq(sw_vmm_unmap(P, va, 8 * PG, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().in_use_bytes, 8 * PG);
    ck_assert(verify(va + 8 * PG, 8 * PG, 9 + 8 * PG / 8));
    ck_assert_int_eq(sw_vmm_unmap(P, va + 8 * PG, 8 * PG, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().in_use_bytes, 0);
    ck_assert_uint_eq(fstats().live_mappings, 0);
    ck_assert_int_eq(fake_free_va(FB, va, 16 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(driver_rules_for_map_unmap_and_handles)
{
    env_up(16, false, 0);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, 16 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h, g;
    ck_assert_int_eq(sw_vmm_create(P, 0, PG + 1, &h), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_vmm_create(P, 0, 0, &h), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_vmm_create(P, 3, PG, &h), CUDA_ERROR_INVALID_DEVICE);
    ck_assert_int_eq(sw_vmm_create(P, 0, 17 * PG, &h), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(sw_vmm_create(P, 0, 4 * PG, &h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &g), CUDA_SUCCESS);
    ck_assert_uint_ne(h, g);
    /* Part of a handle cannot be mapped (the driver says NOT_SUPPORTED). */
    ck_assert_int_eq(sw_vmm_map(P, va, 2 * PG, 0, h), CUDA_ERROR_NOT_SUPPORTED);
    ck_assert_int_eq(sw_vmm_map(P, va, 4 * PG, PG, h), CUDA_ERROR_NOT_SUPPORTED);
    ck_assert_int_eq(sw_vmm_map(P, va + 4096, 4 * PG, 0, h), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_vmm_map(P, va, 4 * PG, 0, 12345), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr arena;
    ck_assert_int_eq(sw_alloc(P, 0, 100, &arena), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, (arena & ~(CUdeviceptr)(PG - 1)) + 8 * PG, 4 * PG, 0, h),
                     CUDA_ERROR_INVALID_VALUE); /* spillway's own address space */
    ck_assert_int_eq(sw_free(P, arena), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 4 * PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va + 2 * PG, 2 * PG, 0, g), CUDA_ERROR_INVALID_VALUE); /* overlap */
    /* Outside the program's reservation: the backend's error comes back. */
    CUdeviceptr elsewhere = va + 64 * PG * 1024;
    ck_assert_int_ne(sw_vmm_map(P, elsewhere, 2 * PG, 0, g), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va + 4 * PG, 2 * PG, 0, g), CUDA_SUCCESS);
    /* Unmap must cover whole mappings, all spillway's. */
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_vmm_unmap(P, va + 4 * PG, 4 * PG, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_vmm_unmap(P, va + 8 * PG, 2 * PG, NULL), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(sw_vmm_unmap(P, va, ~(size_t)0 - PG + 1, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_vmm_unmap(P, va, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_vmm_set_access(P, va + 8 * PG, 2 * PG, 1), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(sw_vmm_set_access(P, va, 2 * PG, 1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_vmm_set_access(P, va, 6 * PG, 1), CUDA_SUCCESS);
    CUmemGenericAllocationHandle r;
    ck_assert_int_eq(sw_vmm_retain(P, va + 8 * PG, &r), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(sw_vmm_retain(P, va + 4 * PG, &r), CUDA_SUCCESS);
    ck_assert_uint_eq(r, g);
    ck_assert_int_eq(sw_vmm_release(P, r, NULL), CUDA_SUCCESS);
    /* Released while mapped: memory stays, the handle is gone. */
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_ERROR_INVALID_VALUE);
    size_t size;
    int dev;
    ck_assert_int_eq(sw_vmm_properties(P, h, &size, &dev, NULL), CUDA_ERROR_INVALID_VALUE);
    fill(va, 6 * PG, 4);
    ck_assert(verify(va, 6 * PG, 4));
    ck_assert_int_eq(sw_vmm_unmap(P, va, 6 * PG, NULL), CUDA_SUCCESS); /* both mappings */
    ck_assert_uint_eq(counters().in_use_bytes, 2 * PG);           /* g still held */
    ck_assert_int_eq(sw_vmm_release(P, g, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().in_use_bytes, 0);
    /* Handle values are spillway's own and not reused as the same value. */
    CUmemGenericAllocationHandle h2;
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h2), CUDA_SUCCESS);
    ck_assert_uint_ne(h2, h);
    ck_assert_uint_ne(h2, g);
    ck_assert(!sw_vmm_is_handle(P, 0));
    ck_assert(!sw_vmm_is_handle(P, 1));
    ck_assert(!sw_vmm_is_handle(P, (CUmemGenericAllocationHandle)(uintptr_t)&h));
    ck_assert_int_eq(sw_vmm_release(P, h2, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va, 16 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(create_reclaims_cached_arena_pages_after_a_sync)
{
    env_up(8, true, 0);
    CUdeviceptr a;
    ck_assert_int_eq(sw_alloc(P, 0, 8 * PG, &a), CUDA_SUCCESS);
    fake_launch(FB, S1, a, 8 * PG);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    /* All 8 pages sit mapped in the arena (pending, then cached). */
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(sw_vmm_create(P, 0, 6 * PG, &h), CUDA_SUCCESS);
    ck_assert_uint_ge(fstats().syncs, 1);
    ck_assert_uint_eq(fstats().unmaps, 6);
    ck_assert_uint_eq(fstats().creates, 8);
    assert_no_violation();
    /* The rest still serves cuMemAlloc from its cached mapping. */
    uint64_t maps = fstats().maps;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().maps, maps);
    ck_assert_int_eq(sw_alloc(P, 0, 1, &a), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h), CUDA_ERROR_OUT_OF_MEMORY);
    env_down();
}
END_TEST

START_TEST(map_failure_midway_unwinds)
{
    env_up(8, false, 0);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, 8 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(sw_vmm_create(P, 0, 4 * PG, &h), CUDA_SUCCESS);
    fake_fail_next(FB, "map", CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 4 * PG, 0, h), CUDA_ERROR_ILLEGAL_ADDRESS);
    ck_assert_uint_eq(fstats().live_mappings, 0);
    ck_assert(!sw_owns(P, va));
    ck_assert_int_eq(sw_vmm_map(P, va, 4 * PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, va, 4 * PG, 1), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_unmap(P, va, 4 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va, 8 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(destroy_cleans_up_live_program_mappings)
{
    env_up(8, false, 0);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, 8 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(sw_vmm_create(P, 0, 4 * PG, &h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 4 * PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h), CUDA_SUCCESS); /* never mapped */
    env_down();
}
END_TEST

/* Which call ended a handle: the release when nothing maps it, else the
 * unmap that takes its last mapping (one unmap may end several). */
START_TEST(release_and_unmap_tell_which_handles_ended)
{
    env_up(16, true, 0);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, 8 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle a, b, c;
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &c), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 2 * PG, 0, a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va + 2 * PG, 2 * PG, 0, b), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va + 4 * PG, 2 * PG, 0, c), CUDA_SUCCESS);
    bool gone = true;
    ck_assert_int_eq(sw_vmm_release(P, a, &gone), CUDA_SUCCESS);
    ck_assert(!gone); /* mapped */
    ck_assert_int_eq(sw_vmm_release(P, b, &gone), CUDA_SUCCESS);
    ck_assert(!gone);
    sw_vmm_gone ended;
    ck_assert_int_eq(sw_vmm_unmap(P, va, 6 * PG, &ended), CUDA_SUCCESS);
    ck_assert_uint_eq(ended.n, 2); /* a and b; c is still referenced */
    ck_assert((ended.h[0] == a && ended.h[1] == b) || (ended.h[0] == b && ended.h[1] == a));
    free(ended.h);
    ck_assert_uint_eq(counters().in_use_bytes, 2 * PG);
    ck_assert_int_eq(sw_vmm_release(P, c, &gone), CUDA_SUCCESS);
    ck_assert(gone);
    ck_assert_uint_eq(counters().in_use_bytes, 0);
    ck_assert_int_eq(fake_free_va(FB, va, 8 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* A handle made the driver's (its export) is released as the driver's: a
 * release that took it for a pool handle gets NOT_SUPPORTED and changes
 * nothing (the shim then releases it as promoted), so the driver handle
 * behind it is never leaked by a pool release racing the export. */
START_TEST(a_promoted_handle_is_not_released_as_a_pool_handle)
{
    /* The driver has a page more than the pool's limit: the export's own. */
    sw_device_config cfg = {.limit = 16 * PG, .preallocate = true, .host_limit = 64 * PG};
    env_up_cfg(&cfg, 17);
    sw_backend be = fake_ops(FB);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h, real, behind;
    ck_assert_int_eq(sw_vmm_create(P, 0, PG, &h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, va, PG, 1), CUDA_SUCCESS);
    fill(va, PG, 5);
    ck_assert_int_eq(be.page_create(be.ctx, 0, SW_LOC_DEVICE, PG, &real), CUDA_SUCCESS);
    CUdeviceptr mva[2];
    size_t msize[2];
    sw_vmm_maps maps = {mva, msize, 2, 0};
    ck_assert_int_eq(sw_vmm_promote(P, h, real, &maps), CUDA_SUCCESS);
    ck_assert(maps.n == 1 && mva[0] == va && msize[0] == PG); /* handed over, listed */
    ck_assert(verify(va, PG, 5));
    bool gone = true;
    ck_assert_int_eq(sw_vmm_release(P, h, &gone), CUDA_ERROR_NOT_SUPPORTED);
    ck_assert(!gone);
    ck_assert(sw_vmm_promoted(P, h, &behind) && behind == real); /* untouched */
    bool last = false;
    ck_assert_int_eq(sw_vmm_release_promoted(P, h, &last, &behind), CUDA_SUCCESS);
    ck_assert(last);
    ck_assert_int_eq(be.unmap(be.ctx, va, PG), CUDA_SUCCESS); /* the program's, the driver's now */
    ck_assert_int_eq(be.page_release(be.ctx, real), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va, PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* A program mapping's BUFFER_ID is new at each cuMemMap, its
 * MEMORY_BLOCK_ID is its handle's (the physical allocation): the same
 * through every mapping of one handle, new for each handle, never the
 * address (which the program maps again and again in a reserved range). */
static sw_ids vmm_ids(CUdeviceptr ptr)
{
    CUdeviceptr b;
    size_t s;
    int dev;
    sw_ids ids;
    ck_assert_int_eq(sw_lookup(P, ptr, &b, &s, &dev, &ids), CUDA_SUCCESS);
    ck_assert(ids.buffer & SW_ID_BIT && ids.block & SW_ID_BIT);
    return ids;
}

START_TEST(mappings_and_handles_have_ids_of_their_own)
{
    env_up(16, false, 0);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, 16 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h, h2;
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 2 * PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va + 4 * PG, 2 * PG, 0, h), CUDA_SUCCESS);
    sw_ids one = vmm_ids(va), inside = vmm_ids(va + 2 * PG - 1), two = vmm_ids(va + 5 * PG);
    ck_assert(inside.buffer == one.buffer && inside.block == one.block);
    ck_assert_uint_ne(two.buffer, one.buffer);
    ck_assert_uint_eq(two.block, one.block);
    /* Mapped again where it was: a new buffer, the same block. */
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 2 * PG, 0, h), CUDA_SUCCESS);
    sw_ids again = vmm_ids(va);
    ck_assert(again.buffer != one.buffer && again.buffer != two.buffer);
    ck_assert_uint_eq(again.block, one.block);
    /* Another handle at the same address: new IDs both. */
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h2), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 2 * PG, 0, h2), CUDA_SUCCESS);
    sw_ids other = vmm_ids(va);
    ck_assert(other.buffer != one.buffer && other.buffer != two.buffer &&
              other.buffer != again.buffer);
    ck_assert_uint_ne(other.block, one.block);
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_unmap(P, va + 4 * PG, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h2, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va, 16 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_vmm");
    TCase *tc = tcase_create("vmm");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, jax_like_arena_behaves_as_without_spillway);
    tcase_add_test(tc, growing_segments_map_handle_by_handle);
    tcase_add_test(tc, mappings_and_handles_have_ids_of_their_own);
    tcase_add_test(tc, driver_rules_for_map_unmap_and_handles);
    tcase_add_test(tc, create_reclaims_cached_arena_pages_after_a_sync);
    tcase_add_test(tc, map_failure_midway_unwinds);
    tcase_add_test(tc, destroy_cleans_up_live_program_mappings);
    tcase_add_test(tc, release_and_unmap_tell_which_handles_ended);
    tcase_add_test(tc, a_promoted_handle_is_not_released_as_a_pool_handle);
    suite_add_tcase(s, tc);
    return s;
}
