/* Residency: a page moves between device and host memory and keeps its VA
 * and its bytes; never remapped while work may use it. */
#include "tests/unit/policy/helpers.h"

START_TEST(arena_page_to_host_and_back_keeps_bytes_and_address)
{
    env_up(8, false, 0);
    CUdeviceptr a;
    ck_assert_int_eq(sw_alloc(P, 0, 3 * PG, &a), CUDA_SUCCESS);
    fill(a, 3 * PG, 42);
    CUmemGenericAllocationHandle before = fake_mapped_handle(FB, a + PG);
    fake_launch(FB, S1, a, 3 * PG); /* queued work: the move must sync first */
    ck_assert_int_eq(sw_set_residency(P, a + PG + 5, 1, SW_RES_HOST), CUDA_SUCCESS);
    assert_no_violation();
    ck_assert_uint_ne(fake_mapped_handle(FB, a + PG), before);
    sw_residency where;
    ck_assert_int_eq(sw_get_residency(P, a + PG, &where), CUDA_SUCCESS);
    ck_assert_int_eq(where, SW_RES_HOST);
    ck_assert_int_eq(sw_get_residency(P, a, &where), CUDA_SUCCESS);
    ck_assert_int_eq(where, SW_RES_DEVICE);
    ck_assert(verify(a, 3 * PG, 42));
    sw_counters c = counters();
    ck_assert_uint_eq(c.host_in_use_bytes, PG);
    ck_assert_uint_eq(c.host_bytes, PG);
    ck_assert_uint_eq(c.spill_events, 1); /* one move, its direction's event */
    ck_assert_uint_eq(c.fill_events, 0);
    CUdeviceptr base;
    size_t size;
    int dev;
    ck_assert_int_eq(sw_lookup(P, a + PG, &base, &size, &dev, NULL), CUDA_SUCCESS); /* still device memory */
    ck_assert_uint_eq(base, a);
    /* Writes go to the host page, and come back with it. */
    fill(a + PG, PG, 43);
    ck_assert_int_eq(sw_set_residency(P, a + PG, 1, SW_RES_DEVICE), CUDA_SUCCESS);
    ck_assert(verify(a + PG, PG, 43));
    ck_assert(verify(a, PG, 42));
    ck_assert_int_eq(sw_get_residency(P, a + PG, &where), CUDA_SUCCESS);
    ck_assert_int_eq(where, SW_RES_DEVICE);
    c = counters();
    ck_assert_uint_eq(c.host_in_use_bytes, 0);
    ck_assert_uint_eq(c.spill_events, 1);
    ck_assert_uint_eq(c.fill_events, 1);
    ck_assert_uint_le(fstats().max_dev_pages, 8);
    env_down();
}
END_TEST

START_TEST(batch_moves_with_one_sync)
{
    env_up(8, false, 0);
    CUdeviceptr a;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    fill(a, 4 * PG, 8);
    uint64_t syncs = fstats().syncs;
    ck_assert_int_eq(sw_set_residency(P, a, 4, SW_RES_HOST), CUDA_SUCCESS);
    /* One covering sync for the batch; the copies are waited for on the
     * mover's own stream, not with more device syncs. */
    ck_assert_uint_eq(fstats().syncs, syncs + 1);
    ck_assert(verify(a, 4 * PG, 8));
    ck_assert_uint_eq(counters().host_in_use_bytes, 4 * PG);
    /* The device pages went back to the pool: others can use them. */
    CUdeviceptr b;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &b), CUDA_SUCCESS);
    fill(b, 4 * PG, 9);
    ck_assert(verify(a, 4 * PG, 8));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(program_vmm_page_moves_and_keeps_access)
{
    env_up(8, false, 0);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, 4 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(sw_vmm_create(P, 0, 2 * PG, &h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, 2 * PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, va, 2 * PG, 1), CUDA_SUCCESS);
    fill(va, 2 * PG, 5);
    ck_assert_int_eq(sw_set_residency(P, va + PG, 1, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert(verify(va, 2 * PG, 5)); /* readable: access was granted again */
    /* Unmap and map the handle again elsewhere: the host page comes along. */
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va + 2 * PG, 2 * PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, va + 2 * PG, 2 * PG, 1), CUDA_SUCCESS);
    ck_assert(verify(va + 2 * PG, 2 * PG, 5));
    sw_residency where;
    ck_assert_int_eq(sw_get_residency(P, va + 3 * PG, &where), CUDA_SUCCESS);
    ck_assert_int_eq(where, SW_RES_HOST);
    ck_assert_int_eq(sw_vmm_unmap(P, va + 2 * PG, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().host_in_use_bytes, 0);
    ck_assert_int_eq(fake_free_va(FB, va, 4 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

/* One move is one device's: a range whose pages are of two devices (a
 * program mapping of handles on both) is refused whole, nothing moved. */
START_TEST(a_range_over_two_devices_is_refused)
{
    sw_device_config cfg = {.limit = 4 * PG, .host_limit = 8 * PG};
    env_up_cfg(&cfg, 8); /* the fake counts both devices' pages */
    ck_assert_int_eq(sw_device_init(P, 1, &cfg), CUDA_SUCCESS);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, 2 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h0, h1;
    ck_assert_int_eq(sw_vmm_create(P, 0, PG, &h0), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_create(P, 1, PG, &h1), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, PG, 0, h0), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va + PG, PG, 0, h1), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_set_access(P, va, 2 * PG, 3), CUDA_SUCCESS);
    ck_assert_int_eq(sw_set_residency(P, va, 2, SW_RES_HOST), CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(host_pages_in(va, 2), 0);
    ck_assert_int_eq(sw_set_residency(P, va + PG, 1, SW_RES_HOST), CUDA_SUCCESS); /* one device's */
    ck_assert_uint_eq(host_pages_in(va, 2), 1);
    assert_no_violation();
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h0, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h1, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va, 2 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(refused_moves)
{
    env_up(8, false, 0);
    CUdeviceptr va;
    ck_assert_int_eq(fake_reserve(FB, 4 * PG, &va), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(sw_vmm_create(P, 0, PG, &h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va, PG, 0, h), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_map(P, va + PG, PG, 0, h), CUDA_SUCCESS); /* an alias */
    ck_assert_int_eq(sw_set_residency(P, va, 1, SW_RES_HOST), CUDA_ERROR_NOT_SUPPORTED);
    ck_assert_int_eq(sw_set_residency(P, va + 2 * PG, 1, SW_RES_HOST), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_set_residency(P, va, 0, SW_RES_HOST), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(sw_set_residency(P, va, 1, (sw_residency)7), CUDA_ERROR_INVALID_VALUE);
    sw_residency where;
    ck_assert_int_eq(sw_get_residency(P, va + 2 * PG, &where), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(sw_vmm_unmap(P, va, 2 * PG, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(fake_free_va(FB, va, 4 * PG), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(host_limit_and_copy_failure)
{
    sw_device_config cfg = {.limit = 8 * PG, .host_limit = PG};
    env_up_cfg(&cfg, 8);
    CUdeviceptr a;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    fill(a, 2 * PG, 1);
    ck_assert_int_eq(sw_set_residency(P, a, 2, SW_RES_HOST), CUDA_ERROR_OUT_OF_MEMORY);
    sw_residency where;
    ck_assert_int_eq(sw_get_residency(P, a, &where), CUDA_SUCCESS);
    ck_assert_int_eq(where, SW_RES_HOST); /* the first page moved */
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_DEVICE), CUDA_SUCCESS);
    fake_fail_next(FB, "copy", CUDA_ERROR_LAUNCH_FAILED);
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_ERROR_LAUNCH_FAILED);
    ck_assert_int_eq(sw_get_residency(P, a, &where), CUDA_SUCCESS);
    ck_assert_int_eq(where, SW_RES_DEVICE);
    ck_assert(verify(a, 2 * PG, 1));
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(reclaim_takes_device_pages_only)
{
    env_up(4, false, 0);
    CUdeviceptr a, b;
    ck_assert_int_eq(sw_alloc(P, 0, 4 * PG, &a), CUDA_SUCCESS);
    ck_assert_int_eq(sw_set_residency(P, a, 1, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert_int_eq(sw_free(P, a), CUDA_SUCCESS);
    ck_assert_uint_eq(counters().host_in_use_bytes, PG); /* until the free is covered */
    /* A VMM handle needs all 4 device pages: its sync releases the free,
     * whose host page goes back to the host pool rather than stay cached,
     * and reclaim unmaps the 3 cached device pages of the arena. */
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(sw_vmm_create(P, 0, 4 * PG, &h), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().unmaps, 2 + 1 + 3); /* the move (VA, scratch), host, reclaim */
    ck_assert_uint_eq(counters().host_in_use_bytes, 0);
    ck_assert_uint_eq(counters().host_bytes, PG); /* kept for the next spill */
    /* No device page is left, and without spill no allocation lands on the host. */
    ck_assert_int_eq(sw_alloc(P, 0, 1, &b), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(sw_vmm_release(P, h, NULL), CUDA_SUCCESS);
    env_down();
}
END_TEST

START_TEST(host_pages_reserved_ahead)
{
    sw_device_config cfg = {.limit = 8 * PG, .host_limit = 3 * PG};
    env_up_cfg(&cfg, 8);
    ck_assert_int_eq(sw_reserve_host_pages(P, 0, 2), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().live_host_pages, 2);
    ck_assert_int_eq(sw_reserve_host_pages(P, 0, 2), CUDA_SUCCESS); /* already there */
    ck_assert_uint_eq(fstats().creates, 2);
    CUdeviceptr a;
    ck_assert_int_eq(sw_alloc(P, 0, 2 * PG, &a), CUDA_SUCCESS);
    uint64_t creates = fstats().creates;
    ck_assert_int_eq(sw_set_residency(P, a, 2, SW_RES_HOST), CUDA_SUCCESS);
    ck_assert_uint_eq(fstats().creates, creates); /* none created on the move */
    ck_assert_int_eq(sw_reserve_host_pages(P, 0, 2), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq(counters().host_bytes, 3 * PG);
    ck_assert_int_eq(sw_reserve_host_pages(P, 9, 1), CUDA_ERROR_INVALID_VALUE);
    env_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_residency");
    TCase *tc = tcase_create("residency");
    tcase_add_test(tc, arena_page_to_host_and_back_keeps_bytes_and_address);
    tcase_add_test(tc, batch_moves_with_one_sync);
    tcase_add_test(tc, program_vmm_page_moves_and_keeps_access);
    tcase_add_test(tc, refused_moves);
    tcase_add_test(tc, a_range_over_two_devices_is_refused);
    tcase_add_test(tc, host_limit_and_copy_failure);
    tcase_add_test(tc, reclaim_takes_device_pages_only);
    tcase_add_test(tc, host_pages_reserved_ahead);
    suite_add_tcase(s, tc);
    return s;
}
