/* The path suite (test_paths.c): name resolution. cuGetProcAddress asked
 * for itself, base names and versions, the per-thread variants, unhooked
 * names left the driver's, a newer ABI the driver's, and RTLD_NEXT
 * relative to the caller. */
#include "tests/integration/shim/paths_rig.h"

#include "tests/fakecuda/fakecuda.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void paths_resolution_tests(TCase *tc)
{
    tcase_add_test(tc, self_lookup);
    tcase_add_test(tc, base_name_maps_to_versioned_handler);
    tcase_add_test(tc, per_thread_variants);
    tcase_add_test(tc, unhooked_names_are_the_drivers);
    tcase_add_test(tc, rtld_next_is_relative_to_the_caller);
    tcase_add_test(tc, a_newer_abi_is_the_drivers);
}
