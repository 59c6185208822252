/* Every allocation API reached by each of the three paths, under spillway
 * (LD_PRELOAD) against fakecuda: counted, limited, released, reflected in
 * cuMemGetInfo_v2; the shared runtime counted once; name resolution (self
 * lookup, versioned ABI, _ptsz, unhooked names untouched); 32 threads.
 * Run by paths.sh, which sets the environment (SPILLWAY_MEM_LIMIT). */
#include "tests/unit/check_compat.h"

#include "shim/options.h"
#include "shim/spillway.h"
#include "tests/fakecuda/fakecuda.h"
#include "tests/integration/shim/driver_api.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)

static struct spw_driver_api api;
static uint64_t limit;

static int (*get_counters)(int, struct spillway_counters *);

/* Each test forks: set up in the child. */
static void setup_path(enum spw_path path)
{
    const char *v = getenv("SPILLWAY_MEM_LIMIT");
    ck_assert_msg(v && spw_parse_bytes(v, &limit) == 0, "run me through paths.sh");
    *(void **)&get_counters = dlsym(RTLD_DEFAULT, "spillway_get_counters");
    ck_assert_msg(get_counters != NULL, "not running under spillway (LD_PRELOAD)");
    const char *failed = spw_driver_api_load(path, &api);
    ck_assert_msg(failed == NULL, "path %d: cannot resolve %s", path, failed);
    ck_assert_int_eq(spw_driver_api_use_device(&api, 0), CUDA_SUCCESS);
}

static struct spillway_counters counters(int dev)
{
    struct spillway_counters c;
    ck_assert_int_eq(get_counters(dev, &c), 0);
    return c;
}

static size_t free_bytes(void)
{
    size_t f = 0, t = 0;
    ck_assert_int_eq(api.mem_get_info(&f, &t), CUDA_SUCCESS);
    ck_assert_uint_eq(t, limit);
    return f;
}

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

/* ---- name resolution ---- */

static const char *object_of(const void *p, const char **sym)
{
    Dl_info info;
    if (!p || !dladdr(p, &info))
        return "";
    if (sym)
        *sym = info.dli_sname ? info.dli_sname : "";
    return info.dli_fname ? info.dli_fname : "";
}

/* Is p the driver's (fakecuda's) own function called name? */
static int is_driver_function(const void *p, const char *name)
{
    const char *sym = "";
    const char *obj = object_of(p, &sym);
    return strstr(obj, "fakecuda/libcuda.so") != NULL && strcmp(sym, name) == 0;
}

typedef CUresult (*gpa_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);

static void *driver_handle(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    ck_assert_ptr_nonnull(h);
    return h;
}

static void *gpa(const char *name, int version, cuuint64_t flags)
{
    gpa_v2_fn fn = (gpa_v2_fn)dlsym(driver_handle(), "cuGetProcAddress_v2");
    void *p = NULL;
    CUdriverProcAddressQueryResult status;
    ck_assert_int_eq(fn(name, &p, version, flags, &status), CUDA_SUCCESS);
    return p;
}

START_TEST(self_lookup)
{
    void *h = driver_handle();
    gpa_v1_fn v1 = (gpa_v1_fn)dlsym(h, "cuGetProcAddress");
    void *v2 = dlsym(h, "cuGetProcAddress_v2");
    ck_assert(spw_in_spillway((void *)v1));
    ck_assert(spw_in_spillway(v2));
    ck_assert_ptr_eq(v2, (void *)&cuGetProcAddress_v2); /* the program's own reference */
    void *p = NULL;
    ck_assert_int_eq(v1("cuGetProcAddress", &p, 12000, 0), CUDA_SUCCESS);
    ck_assert_ptr_eq(p, v2);
    ck_assert_int_eq(v1("cuGetProcAddress", &p, 11030, 0), CUDA_SUCCESS);
    ck_assert_ptr_eq(p, (void *)v1);
    ck_assert_ptr_eq(gpa("cuGetProcAddress", 12000, 0), v2);
    /* Found with dlsym on any handle, as a program's own dlsym(RTLD_DEFAULT). */
    ck_assert_ptr_eq(dlsym(RTLD_DEFAULT, "cuGetProcAddress"), (void *)v1);
}
END_TEST

/* Base name + version: the same handler as the versioned symbol. */
START_TEST(base_name_maps_to_versioned_handler)
{
    static const char *const pairs[][2] = {
        {"cuMemAlloc", "cuMemAlloc_v2"},         {"cuMemFree", "cuMemFree_v2"},
        {"cuMemAllocPitch", "cuMemAllocPitch_v2"}, {"cuMemGetInfo", "cuMemGetInfo_v2"},
        {"cuDeviceTotalMem", "cuDeviceTotalMem_v2"}, {"cuMemAllocHost", "cuMemAllocHost_v2"},
        {"cuMemHostRegister", "cuMemHostRegister_v2"}, {"cuMemCreate", "cuMemCreate"},
        {"cuMemRelease", "cuMemRelease"},         {"cuMemAllocAsync", "cuMemAllocAsync"},
        {"cuMemAllocManaged", "cuMemAllocManaged"}, {"cuMemHostAlloc", "cuMemHostAlloc"},
    };
    void *h = driver_handle();
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        void *by_base = gpa(pairs[i][0], 12000, CU_GET_PROC_ADDRESS_DEFAULT);
        void *by_name = dlsym(h, pairs[i][1]);
        ck_assert_msg(by_base == by_name && spw_in_spillway(by_base), "%s -> %p, %s -> %p",
                      pairs[i][0], by_base, pairs[i][1], by_name);
    }
    ck_assert_ptr_eq(gpa("cuMemAlloc", 12000, 0), (void *)&cuMemAlloc_v2);
}
END_TEST

START_TEST(per_thread_variants)
{
    static const char *const names[] = {"cuMemAllocAsync", "cuMemAllocFromPoolAsync",
                                        "cuMemFreeAsync"};
    void *h = driver_handle();
    for (size_t i = 0; i < 3; i++) {
        char ptsz[64];
        snprintf(ptsz, sizeof ptsz, "%s_ptsz", names[i]);
        void *pt = gpa(names[i], 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
        void *legacy = gpa(names[i], 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
        ck_assert_msg(spw_in_spillway(pt) && spw_in_spillway(legacy) && pt != legacy, "%s", names[i]);
        ck_assert_ptr_eq(pt, dlsym(h, ptsz));
        ck_assert_ptr_eq(legacy, dlsym(h, names[i]));
    }
    /* So are the sets and launches (hooked for spill), _ptds and _ptsz. */
    static const char *const work[][2] = {{"cuMemsetD8", "cuMemsetD8_v2_ptds"},
                                          {"cuMemsetD32Async", "cuMemsetD32Async_ptsz"},
                                          {"cuLaunchKernel", "cuLaunchKernel_ptsz"},
                                          {"cuLaunchKernelEx", "cuLaunchKernelEx_ptsz"},
                                          {"cuLaunchCooperativeKernel",
                                           "cuLaunchCooperativeKernel_ptsz"}};
    for (size_t i = 0; i < sizeof work / sizeof work[0]; i++) {
        void *pt = gpa(work[i][0], 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
        ck_assert_msg(spw_in_spillway(pt) && pt == dlsym(h, work[i][1]), "%s", work[i][1]);
    }
    /* An unhooked per-thread function is the driver's own variant. */
    ck_assert(is_driver_function(gpa("cuStreamQuery", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
                                 "cuStreamQuery_ptsz"));
    /* The per-thread handlers count like the others. */
    setup_path(SPW_PATH_LINKED);
    CUresult (*alloc)(CUdeviceptr *, size_t, CUstream) =
        (CUresult(*)(CUdeviceptr *, size_t, CUstream))gpa("cuMemAllocAsync", 12000,
                                                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CUresult (*release)(CUdeviceptr, CUstream) = (CUresult(*)(CUdeviceptr, CUstream))gpa(
        "cuMemFreeAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CUdeviceptr p, q;
    ck_assert_int_eq(alloc(&p, 8 * MiB, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    ck_assert_uint_eq(counters(0).used, 8 * MiB);
    ck_assert_int_eq(alloc(&q, limit, CU_STREAM_PER_THREAD), CUDA_ERROR_OUT_OF_MEMORY);
    ck_assert_int_eq(release(p, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    ck_assert_uint_eq(counters(0).used, 0);
}
END_TEST

START_TEST(unhooked_names_are_the_drivers)
{
    static const char *const names[] = {"cuDeviceGet", "cuStreamSynchronize", "cuStreamQuery",
                                         "cuGetExportTable", "cuMemAddressReserve", "cuInit",
                                         "cuMemAllocAsync_ptds" /* no such symbol */};
    void *h = driver_handle();
    for (size_t i = 0; i + 1 < sizeof names / sizeof names[0]; i++) {
        void *p = dlsym(h, names[i]);
        ck_assert_msg(is_driver_function(p, names[i]), "dlsym %s", names[i]);
        ck_assert_ptr_eq(p, dlsym(RTLD_DEFAULT, names[i]));
    }
    ck_assert_ptr_null(dlsym(h, "cuMemAllocAsync_ptds"));
    ck_assert_ptr_null(dlsym(h, "cuMemAlloc_v2x"));
    ck_assert(is_driver_function((void *)&cuDeviceGet, "cuDeviceGet"));
    ck_assert(is_driver_function(gpa("cuDeviceGet", 12000, 0), "cuDeviceGet"));
    ck_assert(is_driver_function(gpa("cuStreamQuery", 12000, 0), "cuStreamQuery"));
    /* Never wrapped: the runtime's private tables. */
    ck_assert(is_driver_function(gpa("cuGetExportTable", 12000, 0), "cuGetExportTable"));
    /* Names that are not the driver's at all. */
    ck_assert_ptr_eq(dlsym(RTLD_DEFAULT, "strlen"), (void *)&strlen);
}
END_TEST

/* A driver newer than spillway (fakecuda with FAKECUDA_PROC_FUTURE=1) has a
 * newer ABI of cuMemAlloc at 13090: spillway hands out the driver's own
 * function there (its handler would misread the arguments), its handler
 * below it. Only under paths.sh's run with that variable. */
START_TEST(a_newer_abi_is_the_drivers)
{
    if (!getenv("FAKECUDA_PROC_FUTURE"))
        return;
    setup_path(SPW_PATH_LINKED);
    void *newer = gpa("cuMemAlloc", 13090, 0);
    ck_assert_msg(newer && !spw_in_spillway(newer), "cuMemAlloc at 13090 -> %p", newer);
    CUdeviceptr p;
    ck_assert_int_eq(((CUresult(*)(CUdeviceptr *, size_t, unsigned long long))newer)(&p, MiB, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemFree(p), CUDA_SUCCESS);
    ck_assert_ptr_eq(gpa("cuMemAlloc", 13000, 0), (void *)&cuMemAlloc_v2);
}
END_TEST

/* glibc finds RTLD_NEXT's "next" from dlsym's caller: spillway's override
 * must leave that the program. The object after this program is spillway,
 * whose cudaMalloc comes before the runtime's. */
START_TEST(rtld_next_is_relative_to_the_caller)
{
    void *next = dlsym(RTLD_NEXT, "cudaMalloc");
    ck_assert_msg(spw_in_spillway(next), "RTLD_NEXT cudaMalloc is in %s", object_of(next, NULL));
    ck_assert_ptr_eq(next, (void *)&cudaMalloc);
}
END_TEST

/* ---- threads ---- */

#define THREADS 32
#define OPS 400
#define HELD_MAX 8

struct worker {
    CUcontext ctx;
    unsigned seed;
    uint64_t allocs, frees, ooms, held_bytes;
    CUdeviceptr held[HELD_MAX];
    size_t held_size[HELD_MAX];
    int nheld;
    int error;
};

static void *worker_run(void *arg)
{
    struct worker *w = arg;
    if (api.ctx_set_current(w->ctx) != CUDA_SUCCESS) {
        w->error = -1;
        return NULL;
    }
    for (int op = 0; op < OPS; op++) {
        int do_alloc = w->nheld == 0 || (w->nheld < HELD_MAX && rand_r(&w->seed) % 2);
        if (do_alloc) {
            size_t size = (size_t)(rand_r(&w->seed) % (4 * MiB)) + 1;
            CUdeviceptr p;
            CUresult r = api.mem_alloc(&p, size);
            if (r == CUDA_SUCCESS) {
                w->held[w->nheld] = p;
                w->held_size[w->nheld++] = size;
                w->held_bytes += size;
                w->allocs++;
            } else if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                w->ooms++;
            } else {
                w->error = r;
            }
        } else {
            int i = rand_r(&w->seed) % w->nheld;
            if (api.mem_free(w->held[i]) != CUDA_SUCCESS)
                w->error = -2;
            w->held_bytes -= w->held_size[i];
            w->held[i] = w->held[--w->nheld];
            w->held_size[i] = w->held_size[w->nheld];
            w->frees++;
        }
    }
    return NULL;
}

START_TEST(threads_keep_exact_counts)
{
    setup_path((enum spw_path)_i);
    CUcontext ctx;
    ck_assert_int_eq(api.primary_ctx_retain(&ctx, 0), CUDA_SUCCESS);
    static struct worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.ctx = ctx, .seed = 1234u + (unsigned)i * 7919u + (unsigned)_i};
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
    }
    uint64_t allocs = 0, frees = 0, ooms = 0, held = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(w[i].error == 0, "thread %d: error %d", i, w[i].error);
        allocs += w[i].allocs;
        frees += w[i].frees;
        ooms += w[i].ooms;
        held += w[i].held_bytes;
    }
    struct spillway_counters c = counters(0);
    ck_assert_uint_eq(c.allocs, allocs);
    ck_assert_uint_eq(c.frees, frees);
    ck_assert_uint_eq(c.ooms, ooms);
    ck_assert_uint_eq(c.used, held);
    ck_assert_uint_le(c.peak, limit);
    ck_assert_msg(ooms > 0, "the workload never reached the limit: it tests nothing");
    /* Free is in whole pages, as the pool holds them: never more than
     * the bytes not held, and all of it can be had. */
    size_t f = free_bytes();
    ck_assert_uint_le(f, limit - held);
    CUdeviceptr rest = 0;
    if (f)
        ck_assert_int_eq(api.mem_alloc(&rest, f), CUDA_SUCCESS);
    if (rest)
        ck_assert_int_eq(api.mem_free(rest), CUDA_SUCCESS);
    if (fakecuda_present())
        ck_assert_uint_ge(fakecuda_device_bytes_used(0), held);
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < w[i].nheld; j++)
            ck_assert_int_eq(api.mem_free(w[i].held[j]), CUDA_SUCCESS);
    c = counters(0);
    ck_assert_uint_eq(c.used, 0);
    ck_assert_uint_eq(c.frees, c.allocs);
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
    tcase_add_test(names, self_lookup);
    tcase_add_test(names, base_name_maps_to_versioned_handler);
    tcase_add_test(names, per_thread_variants);
    tcase_add_test(names, unhooked_names_are_the_drivers);
    tcase_add_test(names, rtld_next_is_relative_to_the_caller);
    tcase_add_test(names, a_newer_abi_is_the_drivers);
    suite_add_tcase(s, names);
    TCase *threads = tcase_create("threads");
    tcase_set_timeout(threads, 60);
    tcase_add_loop_test(threads, threads_keep_exact_counts, 0, SPW_PATHS);
    suite_add_tcase(s, threads);
    return s;
}
