/* The three ways programs reach the driver (linked, dlopen+dlsym as XLA,
 * cuGetProcAddress as the CUDA runtime), run against fakecuda WITHOUT
 * spillway: the baseline the shim's path suite (tests/integration/shim) is
 * compared with. Each path must reach the same driver and every allocation
 * API must behave: counted by the device, visible in cuMemGetInfo, released. */
#include <dlfcn.h>
#include <string.h>

#include "tests/fakecuda/fakecuda.h"
#include "tests/integration/shim/driver_api.h"
#include "tests/unit/check_compat.h"

#define MiB ((size_t)1 << 20)
static const char *path_name[] = {"linked", "dlsym", "cuGetProcAddress"};

static void load(struct spw_driver_api *api, int path)
{
    const char *err = spw_driver_api_load((enum spw_path)path, api);
    ck_assert_msg(err == NULL, "%s path: %s", path_name[path], err ? err : "");
    ck_assert_int_eq(spw_driver_api_use_device(api, 0), CUDA_SUCCESS);
}

/* Device bytes as the driver sees them, and as cuMemGetInfo reports them. */
static size_t used(const struct spw_driver_api *api)
{
    size_t free, total;
    ck_assert_int_eq(api->mem_get_info(&free, &total), CUDA_SUCCESS);
    ck_assert_uint_eq(total - free, fakecuda_device_bytes_used(0));
    return total - free;
}

START_TEST(no_preload)
{
    ck_assert_msg(!getenv("LD_PRELOAD") || !strstr(getenv("LD_PRELOAD"), "spillway"),
                  "this suite is the baseline: run it without spillway");
    ck_assert(fakecuda_present());
}
END_TEST

START_TEST(paths_reach_the_same_driver)
{
    struct spw_driver_api api;
    load(&api, _i);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_eq((void *)api.mem_alloc, dlsym(h, "cuMemAlloc_v2"));
    ck_assert_ptr_eq((void *)api.mem_create, dlsym(h, "cuMemCreate"));
    ck_assert_ptr_eq((void *)api.mem_get_info, dlsym(h, "cuMemGetInfo_v2"));
}
END_TEST

START_TEST(device_apis_counted_and_released)
{
    struct spw_driver_api api;
    load(&api, _i);
    size_t u0 = used(&api);
    CUdeviceptr a, b, m, c;
    size_t pitch;
    ck_assert_int_eq(api.mem_alloc(&a, 8 * MiB), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_alloc_pitch(&b, &pitch, 4096, 512, 4), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_alloc_managed(&m, 2 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_alloc_async(&c, 4 * MiB, NULL), CUDA_SUCCESS);
    ck_assert_uint_eq(used(&api), u0 + 8 * MiB + pitch * 512 + 2 * MiB + 4 * MiB);

    CUmemoryPool pool;
    CUdeviceptr d;
    ck_assert_int_eq(api.device_get_default_mem_pool(&pool, 0), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_alloc_from_pool_async(&d, 2 * MiB, pool, NULL), CUDA_SUCCESS);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t g;
    ck_assert_int_eq(api.mem_get_allocation_granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                     CUDA_SUCCESS);
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(api.mem_create(&h, 2 * g, &prop, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(used(&api), u0 + 8 * MiB + pitch * 512 + 2 * MiB + 4 * MiB + 2 * MiB + 2 * g);

    ck_assert_int_eq(api.mem_release(h), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_free_async(d, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_free_async(c, NULL), CUDA_SUCCESS);
    ck_assert_int_eq(api.stream_synchronize(NULL), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_free(m), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_free(b), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_free(a), CUDA_SUCCESS);
    ck_assert_uint_eq(used(&api), u0);
}
END_TEST

START_TEST(device_memory_runs_out)
{
    struct spw_driver_api api;
    load(&api, _i);
    size_t total;
    ck_assert_int_eq(api.device_total_mem(&total, 0), CUDA_SUCCESS);
    CUdeviceptr p[64];
    int n = 0;
    CUresult r;
    while ((r = api.mem_alloc(&p[n], 32 * MiB)) == CUDA_SUCCESS && n < 63)
        n++;
    ck_assert_int_eq(r, CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_uint_eq((size_t)n * 32 * MiB, total);
    while (n--)
        ck_assert_int_eq(api.mem_free(p[n]), CUDA_SUCCESS);
}
END_TEST

START_TEST(host_apis_counted_as_host)
{
    struct spw_driver_api api;
    load(&api, _i);
    size_t h0 = fakecuda_host_bytes_used(), d0 = used(&api);
    void *a, *b;
    static char buf[1 << 16] __attribute__((aligned(4096)));
    ck_assert_int_eq(api.mem_host_alloc(&a, MiB, 0), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_alloc_host(&b, MiB), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_host_register(buf, sizeof buf, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(fakecuda_host_bytes_used(), h0 + 2 * MiB + sizeof buf);
    ck_assert_uint_eq(used(&api), d0);
    ck_assert_int_eq(api.mem_host_unregister(buf), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_free_host(b), CUDA_SUCCESS);
    ck_assert_int_eq(api.mem_free_host(a), CUDA_SUCCESS);
    ck_assert_uint_eq(fakecuda_host_bytes_used(), h0);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("native_paths");
    TCase *tc = tcase_create("paths");
    tcase_add_test(tc, no_preload);
    tcase_add_loop_test(tc, paths_reach_the_same_driver, 0, SPW_PATHS);
    tcase_add_loop_test(tc, device_apis_counted_and_released, 0, SPW_PATHS);
    tcase_add_loop_test(tc, device_memory_runs_out, 0, SPW_PATHS);
    tcase_add_loop_test(tc, host_apis_counted_as_host, 0, SPW_PATHS);
    suite_add_tcase(s, tc);
    return s;
}
