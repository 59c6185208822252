/* Every allocation API reached by each of the three paths, under spillway
 * (LD_PRELOAD) against fakecuda: counted, limited, released, reflected in
 * cuMemGetInfo_v2; the shared runtime counted once; name resolution (self
 * lookup, versioned ABI, _ptsz, unhooked names untouched); 32 threads.
 * Run by paths.sh, which sets the environment (SPILLWAY_MEM_LIMIT).
 *
 * One suite in three files: here the allocation APIs and what the
 * runtime is told; name resolution (paths_resolution.c) and threads
 * (paths_threads.c), sharing paths_rig.h. */
#include "tests/integration/shim/paths_rig.h"

#include "tests/fakecuda/fakecuda.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

/* ---- device allocation APIs ---- */

enum dev_api { DEV_ALLOC, DEV_PITCH, DEV_MANAGED, DEV_ASYNC, DEV_POOL, DEV_CREATE, DEV_APIS };
static const char *const dev_api_names[] = {"cuMemAlloc", "cuMemAllocPitch", "cuMemAllocManaged",
                                            "cuMemAllocAsync", "cuMemAllocFromPoolAsync",
                                            "cuMemCreate"};

static CUmemAllocationProp device_prop(void)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    return prop;
}

/* Allocates about bytes with api; *charged is what it should count. */
static CUresult dev_alloc(enum dev_api which, size_t bytes, uint64_t *key, size_t *charged)
{
    CUdeviceptr p = 0;
    CUresult r;
    *charged = bytes;
    switch (which) {
    case DEV_ALLOC: r = api.mem_alloc(&p, bytes); break;
    case DEV_PITCH: {
        size_t pitch = 0, height = 16;
        r = api.mem_alloc_pitch(&p, &pitch, bytes / height, height, 4);
        *charged = pitch * height;
        break;
    }
    case DEV_MANAGED: r = api.mem_alloc_managed(&p, bytes, CU_MEM_ATTACH_GLOBAL); break;
    case DEV_ASYNC: r = api.mem_alloc_async(&p, bytes, NULL); break;
    case DEV_POOL: {
        CUmemoryPool pool;
        ck_assert_int_eq(api.device_get_default_mem_pool(&pool, 0), CUDA_SUCCESS);
        r = api.mem_alloc_from_pool_async(&p, bytes, pool, NULL);
        break;
    }
    case DEV_CREATE: {
        CUmemAllocationProp prop = device_prop();
        size_t gran = 0;
        ck_assert_int_eq(api.mem_get_allocation_granularity(&gran, &prop,
                                                            CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                         CUDA_SUCCESS);
        *charged = (bytes + gran - 1) / gran * gran;
        CUmemGenericAllocationHandle h = 0;
        r = api.mem_create(&h, *charged, &prop, 0);
        *key = h;
        return r;
    }
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    *key = p;
    return r;
}

static CUresult dev_free(enum dev_api which, uint64_t key)
{
    switch (which) {
    case DEV_ASYNC:
    case DEV_POOL:
        /* Released when enqueued; no need to wait for the stream. */
        return api.mem_free_async(key, NULL);
    case DEV_CREATE: return api.mem_release(key);
    default: return api.mem_free(key);
    }
}

START_TEST(device_api_counted_limited_released)
{
    enum spw_path path = (enum spw_path)(_i / DEV_APIS);
    enum dev_api which = (enum dev_api)(_i % DEV_APIS);
    setup_path(path);
    const char *name = dev_api_names[which];
    size_t free0 = free_bytes();
    struct spillway_counters c0 = counters(0);
    ck_assert_uint_eq(c0.used, 0);

    uint64_t key;
    size_t charged;
    ck_assert_int_eq(dev_alloc(which, 16 * MiB, &key, &charged), CUDA_SUCCESS);
    struct spillway_counters c1 = counters(0);
    ck_assert_msg(c1.used == charged && c1.allocs == c0.allocs + 1,
                  "path %d %s: used %llu allocs %llu after %zu bytes", path, name,
                  (unsigned long long)c1.used, (unsigned long long)c1.allocs, charged);
    ck_assert_uint_eq(free_bytes(), free0 - charged);

    /* More than what is left under the limit (fakecuda has plenty). */
    uint64_t key2;
    size_t charged2;
    CUresult r = dev_alloc(which, limit - charged + 4 * MiB, &key2, &charged2);
    ck_assert_msg(r == CUDA_ERROR_OUT_OF_MEMORY, "path %d %s: over the limit gave %d", path, name,
                  r);
    struct spillway_counters c2 = counters(0);
    ck_assert_uint_eq(c2.used, charged);
    ck_assert_uint_eq(c2.ooms, c0.ooms + 1);
    ck_assert_uint_le(c2.peak, limit);

    ck_assert_int_eq(dev_free(which, key), CUDA_SUCCESS);
    struct spillway_counters c3 = counters(0);
    ck_assert_uint_eq(c3.used, 0);
    ck_assert_uint_eq(c3.frees, c0.frees + 1);
    ck_assert_uint_eq(free_bytes(), free0);

    /* Up to the limit exactly is allowed once the memory is back. */
    ck_assert_int_eq(dev_alloc(which, 16 * MiB, &key, &charged), CUDA_SUCCESS);
    ck_assert_int_eq(dev_free(which, key), CUDA_SUCCESS);
}
END_TEST

/* ---- pinned host memory ---- */

enum host_api { HOST_ALLOC, HOST_ALLOC_HOST, HOST_REGISTER, HOST_CREATE, HOST_APIS };

static CUresult host_alloc(enum host_api which, size_t bytes, uint64_t *key, void **buf)
{
    void *p = NULL;
    CUresult r;
    *buf = NULL;
    switch (which) {
    case HOST_ALLOC: r = api.mem_host_alloc(&p, bytes, 0); break;
    case HOST_ALLOC_HOST: r = api.mem_alloc_host(&p, bytes); break;
    case HOST_REGISTER:
        ck_assert_int_eq(posix_memalign(buf, 4096, bytes), 0);
        p = *buf;
        r = api.mem_host_register(p, bytes, 0);
        break;
    case HOST_CREATE: {
        CUmemAllocationProp prop = {0};
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
        prop.location.id = 0;
        CUmemGenericAllocationHandle h = 0;
        r = api.mem_create(&h, bytes, &prop, 0);
        *key = h;
        return r;
    }
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    *key = (uintptr_t)p;
    return r;
}

static CUresult host_free(enum host_api which, uint64_t key)
{
    switch (which) {
    case HOST_REGISTER: return api.mem_host_unregister((void *)(uintptr_t)key);
    case HOST_CREATE: return api.mem_release(key);
    default: return api.mem_free_host((void *)(uintptr_t)key);
    }
}

START_TEST(host_api_counted_unlimited_released)
{
    enum spw_path path = (enum spw_path)(_i / HOST_APIS);
    enum host_api which = (enum host_api)(_i % HOST_APIS);
    setup_path(path);
    size_t free0 = free_bytes();
    struct spillway_counters h0 = counters(SPILLWAY_HOST);
    /* Host memory does not count against the device limit, whatever its size. */
    size_t bytes = limit + 16 * MiB;
    uint64_t key;
    void *buf;
    ck_assert_int_eq(host_alloc(which, bytes, &key, &buf), CUDA_SUCCESS);
    struct spillway_counters h1 = counters(SPILLWAY_HOST);
    ck_assert_msg(h1.used == h0.used + bytes && h1.allocs == h0.allocs + 1,
                  "path %d host api %d: used %llu", path, which, (unsigned long long)h1.used);
    ck_assert_uint_eq(counters(0).used, 0);
    ck_assert_uint_eq(free_bytes(), free0);
    ck_assert_int_eq(host_free(which, key), CUDA_SUCCESS);
    struct spillway_counters h2 = counters(SPILLWAY_HOST);
    ck_assert_uint_eq(h2.used, h0.used);
    ck_assert_uint_eq(h2.frees, h0.frees + 1);
    free(buf);
}
END_TEST

START_TEST(total_mem_reports_limit)
{
    setup_path((enum spw_path)_i);
    size_t total = 0;
    ck_assert_int_eq(api.device_total_mem(&total, 0), CUDA_SUCCESS);
    ck_assert_uint_eq(total, limit);
    ck_assert_uint_eq(free_bytes(), limit);
}
END_TEST

/* The driver's own errors, and no crash. Parity with the bare driver is
 * checked by the env suite, which can run without spillway. */
START_TEST(bad_arguments_do_not_crash)
{
    setup_path((enum spw_path)_i);
    size_t t;
    ck_assert_int_ne(api.mem_get_info(NULL, NULL), CUDA_SUCCESS);
    ck_assert_int_ne(api.mem_get_info(NULL, &t), CUDA_SUCCESS);
    ck_assert_int_ne(api.device_total_mem(NULL, 0), CUDA_SUCCESS);
    ck_assert_int_ne(api.mem_alloc(NULL, MiB), CUDA_SUCCESS);
    ck_assert_int_ne(api.mem_free((CUdeviceptr)0xdead0000), CUDA_SUCCESS);
    ck_assert_int_ne(api.mem_create(NULL, 2 * MiB, NULL, 0), CUDA_SUCCESS);
    struct spillway_counters c = counters(0);
    ck_assert_uint_eq(c.used, 0);
    ck_assert_uint_eq(c.allocs, 0);
    ck_assert_uint_eq(c.frees, 0);
}
END_TEST

/* ---- the shared runtime ---- */

START_TEST(runtime_counted_once)
{
    setup_path(SPW_PATH_LINKED);
    void *p = NULL;
    ck_assert_int_eq(cudaMalloc(&p, 16 * MiB), cudaSuccess);
    struct spillway_counters c = counters(0);
    ck_assert_uint_eq(c.used, 16 * MiB);
    ck_assert_uint_eq(c.allocs, 1);
    size_t f = 0, t = 0;
    ck_assert_int_eq(cudaMemGetInfo(&f, &t), cudaSuccess);
    ck_assert_uint_eq(t, limit);
    ck_assert_uint_eq(f, limit - 16 * MiB);
    void *q = (void *)1;
    ck_assert_int_eq(cudaMalloc(&q, limit), cudaErrorMemoryAllocation);
    /* Left alone or cleared, never the address of memory freed again
     * (rtbypass.sh: spillway's wrapper refused what the runtime allocated). */
    ck_assert_msg(q == (void *)1 || q == NULL, "refused cudaMalloc left %p", q);
    ck_assert_uint_eq(counters(0).ooms, 1);
    char host[64] = "spillway", back[64] = "";
    ck_assert_int_eq(cudaMemcpy(p, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
    ck_assert_int_eq(cudaMemcpy(back, p, sizeof back, cudaMemcpyDeviceToHost), cudaSuccess);
    ck_assert_str_eq(back, "spillway");
    ck_assert_int_eq(cudaFree(p), cudaSuccess);
    c = counters(0);
    ck_assert_uint_eq(c.used, 0);
    ck_assert_uint_eq(c.frees, 1);
    ck_assert_int_ne(cudaFree(p), cudaSuccess); /* double free: the runtime's error */
    ck_assert_uint_eq(counters(0).frees, 1);
}
END_TEST

/* What the program is told through the runtime: cudaMemGetInfo reaches
 * spillway's cuMemGetInfo handler (the runtime resolves the driver with
 * cuGetProcAddress), and the wrapper around the runtime rewrote the
 * figures the handler had rewritten already. Before a device's pool
 * exists, free adds to the driver's figure what the program is told past
 * the limit (SPILLWAY_OVERSUBSCRIBE: host pages the driver does not
 * count), so the second rewrite added it twice: with another program
 * holding most of the device, PyTorch's mem_get_info was told free what
 * neither the device nor the host limit holds. paths.sh runs this at
 * F = 1 and F = 2. */
START_TEST(runtime_free_is_told_once)
{
    setup_path(SPW_PATH_LINKED);
    size_t told = 0;
    ck_assert_int_eq(api.device_total_mem(&told, 0), CUDA_SUCCESS);
    /* Another program's memory: the driver's own cuMemAlloc, behind
     * spillway's back (glibc's dlsym, not spillway's override). */
    __typeof__(&cuMemAlloc_v2) unseen_alloc;
    __typeof__(&cuMemFree_v2) unseen_free;
    *(void **)&unseen_alloc = spw_driver_unseen("cuMemAlloc_v2");
    *(void **)&unseen_free = spw_driver_unseen("cuMemFree_v2");
    ck_assert(unseen_alloc && unseen_free && (void *)unseen_alloc != (void *)cuMemAlloc_v2);
    size_t dfree = 0, dtotal = 0;
    __typeof__(&cuMemGetInfo_v2) unseen_info;
    *(void **)&unseen_info = spw_driver_unseen("cuMemGetInfo_v2");
    ck_assert_ptr_nonnull((void *)unseen_info);
    ck_assert_int_eq(unseen_info(&dfree, &dtotal), CUDA_SUCCESS);
    ck_assert_uint_gt(dfree, limit);
    CUdeviceptr other = 0;
    ck_assert_int_eq(unseen_alloc(&other, dfree - limit / 2), CUDA_SUCCESS);
    ck_assert_int_eq(unseen_info(&dfree, &dtotal), CUDA_SUCCESS);
    ck_assert_uint_eq(dfree, limit / 2);
    /* Nothing allocated through spillway: no pool yet. The device part is
     * what the driver has free, the rest what the program is told past
     * the limit. */
    size_t want = dfree + (told - limit);
    size_t f = 0, t = 0;
    ck_assert_int_eq(api.mem_get_info(&f, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(t, told);
    ck_assert_uint_eq(f, want);
    f = t = 0;
    ck_assert_int_eq(cudaMemGetInfo(&f, &t), cudaSuccess);
    ck_assert_uint_eq(t, told);
    ck_assert_uint_eq(f, want);
    ck_assert_int_eq(unseen_free(other), CUDA_SUCCESS);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_paths");
    TCase *alloc = tcase_create("allocation");
    tcase_set_timeout(alloc, 30);
    tcase_add_loop_test(alloc, device_api_counted_limited_released, 0, SPW_PATHS * DEV_APIS);
    tcase_add_loop_test(alloc, host_api_counted_unlimited_released, 0, SPW_PATHS * HOST_APIS);
    tcase_add_loop_test(alloc, total_mem_reports_limit, 0, SPW_PATHS);
    tcase_add_loop_test(alloc, bad_arguments_do_not_crash, 0, SPW_PATHS);
    tcase_add_test(alloc, runtime_counted_once);
    suite_add_tcase(s, alloc);
    TCase *told = tcase_create("told");
    tcase_add_test(told, runtime_free_is_told_once);
    suite_add_tcase(s, told);
    TCase *names = tcase_create("resolution");
    paths_resolution_tests(names);
    suite_add_tcase(s, names);
    TCase *threads = tcase_create("threads");
    tcase_set_timeout(threads, 60);
    paths_thread_tests(threads);
    suite_add_tcase(s, threads);
    return s;
}
