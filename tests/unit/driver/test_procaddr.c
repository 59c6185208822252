/* Conformance: cuGetProcAddress as the CUDA runtime uses it. Results are
 * compared with the driver's exported symbols found by dlsym. */
#include <dlfcn.h>

#include <stdio.h>

#include "tests/unit/driver/common.h"

static void *driver;

static void setup(void)
{
    driver_setup();
    driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(driver);
}

static void *exported(const char *name)
{
    void *p = dlsym(driver, name);
    ck_assert_msg(p != NULL, "driver does not export %s", name);
    return p;
}

static void *resolve(const char *name, int version, cuuint64_t flags)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CU_OK(cuGetProcAddress(name, &fn, version, flags, &st));
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
    return fn;
}

START_TEST(self_lookup)
{
    /* what the runtime does first: look the resolver itself up */
    ck_assert_ptr_eq(resolve("cuGetProcAddress", 12000, 0), exported("cuGetProcAddress_v2"));
    ck_assert_ptr_eq(resolve("cuGetProcAddress", 13000, 0), exported("cuGetProcAddress_v2"));
    ck_assert_ptr_eq(resolve("cuGetProcAddress", 11030, 0), exported("cuGetProcAddress"));
}
END_TEST

START_TEST(base_name_and_version_select_the_abi)
{
    ck_assert_ptr_eq(resolve("cuMemAlloc", 12000, 0), exported("cuMemAlloc_v2"));
    ck_assert_ptr_eq(resolve("cuMemFree", 13000, 0), exported("cuMemFree_v2"));
    ck_assert_ptr_eq(resolve("cuMemGetInfo", 11030, 0), exported("cuMemGetInfo_v2"));
    ck_assert_ptr_eq(resolve("cuDeviceTotalMem", 12000, 0), exported("cuDeviceTotalMem_v2"));
    ck_assert_ptr_eq(resolve("cuMemCreate", 12000, 0), exported("cuMemCreate"));
    ck_assert_ptr_eq(resolve("cuMemAllocAsync", 12000, 0), exported("cuMemAllocAsync"));
    ck_assert_ptr_eq(resolve("cuStreamDestroy", 12000, 0), exported("cuStreamDestroy_v2"));
}
END_TEST

START_TEST(per_thread_variants)
{
    cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    ck_assert_ptr_eq(resolve("cuMemcpyHtoDAsync", 12000, pt), exported("cuMemcpyHtoDAsync_v2_ptsz"));
    ck_assert_ptr_eq(resolve("cuMemcpyHtoD", 12000, pt), exported("cuMemcpyHtoD_v2_ptds"));
    ck_assert_ptr_eq(resolve("cuMemAllocAsync", 12000, pt), exported("cuMemAllocAsync_ptsz"));
    ck_assert_ptr_eq(resolve("cuMemFreeAsync", 12000, pt), exported("cuMemFreeAsync_ptsz"));
    ck_assert_ptr_eq(resolve("cuLaunchKernel", 12000, pt), exported("cuLaunchKernel_ptsz"));
    ck_assert_ptr_eq(resolve("cuStreamSynchronize", 12000, pt), exported("cuStreamSynchronize_ptsz"));
    /* no variant: the plain function */
    ck_assert_ptr_eq(resolve("cuMemAlloc", 12000, pt), exported("cuMemAlloc_v2"));
    /* explicit legacy */
    ck_assert_ptr_eq(resolve("cuMemcpyHtoDAsync", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM),
                     exported("cuMemcpyHtoDAsync_v2"));
}
END_TEST

/* Capture, graphs, libraries and 2D copies: the ABI each version asks for. */
START_TEST(capture_graph_library_and_copy_abis)
{
    cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    ck_assert_ptr_eq(resolve("cuStreamBeginCapture", 12000, 0), exported("cuStreamBeginCapture_v2"));
    ck_assert_ptr_eq(resolve("cuStreamBeginCapture", 12000, pt), exported("cuStreamBeginCapture_v2_ptsz"));
    ck_assert_ptr_eq(resolve("cuStreamEndCapture", 12000, pt), exported("cuStreamEndCapture_ptsz"));
    ck_assert_ptr_eq(resolve("cuStreamGetCaptureInfo", 11030, 0), exported("cuStreamGetCaptureInfo_v2"));
    ck_assert_ptr_eq(resolve("cuStreamGetCaptureInfo", 13000, 0), exported("cuStreamGetCaptureInfo_v3"));
    ck_assert_ptr_eq(resolve("cuGraphAddKernelNode", 11000, 0), exported("cuGraphAddKernelNode"));
    ck_assert_ptr_eq(resolve("cuGraphAddKernelNode", 12000, 0), exported("cuGraphAddKernelNode_v2"));
    ck_assert_ptr_eq(resolve("cuGraphKernelNodeGetParams", 13000, 0),
                     exported("cuGraphKernelNodeGetParams_v2"));
    ck_assert_ptr_eq(resolve("cuGraphExecUpdate", 13000, 0), exported("cuGraphExecUpdate_v2"));
    ck_assert_ptr_eq(resolve("cuGraphInstantiateWithFlags", 13000, 0),
                     exported("cuGraphInstantiateWithFlags"));
    /* Since CUDA 12 cuda.h maps the name to the flags ABI, but
     * cudaTypedefs.h has no 12000 entry for it: either answer, printed. */
    void *inst = resolve("cuGraphInstantiate", 12000, 0);
    printf("cuGraphInstantiate at 12000 is %s\n",
           inst == exported("cuGraphInstantiateWithFlags") ? "cuGraphInstantiateWithFlags"
           : inst == exported("cuGraphInstantiate_v2")     ? "cuGraphInstantiate_v2"
                                                           : "another function");
    ck_assert(inst == exported("cuGraphInstantiateWithFlags") || inst == exported("cuGraphInstantiate_v2"));
    ck_assert_ptr_eq(resolve("cuGraphLaunch", 12000, pt), exported("cuGraphLaunch_ptsz"));
    ck_assert_ptr_eq(resolve("cuLibraryLoadData", 12000, 0), exported("cuLibraryLoadData"));
    ck_assert_ptr_eq(resolve("cuKernelGetParamInfo", 12040, 0), exported("cuKernelGetParamInfo"));
    ck_assert_ptr_eq(resolve("cuMemcpy2D", 12000, 0), exported("cuMemcpy2D_v2"));
    ck_assert_ptr_eq(resolve("cuMemcpy2D", 12000, pt), exported("cuMemcpy2D_v2_ptds"));
    ck_assert_ptr_eq(resolve("cuMemcpy3DAsync", 12000, pt), exported("cuMemcpy3DAsync_v2_ptsz"));
    ck_assert_ptr_eq(resolve("cuMemcpyPeerAsync", 12000, pt), exported("cuMemcpyPeerAsync_ptsz"));
    ck_assert_ptr_eq(resolve("cuMemsetD2D32", 12000, 0), exported("cuMemsetD2D32_v2"));
    ck_assert_ptr_eq(resolve("cuMemcpyBatchAsync", 12080, 0), exported("cuMemcpyBatchAsync"));
    ck_assert_ptr_eq(resolve("cuMemcpyBatchAsync", 13000, 0), exported("cuMemcpyBatchAsync_v2"));
    /* The per-thread variant of each ABI (cudaTypedefs.h: _v12080_ptsz, _v13000_ptsz). */
    ck_assert_ptr_eq(resolve("cuMemcpyBatchAsync", 12080, pt), exported("cuMemcpyBatchAsync_ptsz"));
    ck_assert_ptr_eq(resolve("cuMemcpyBatchAsync", 13000, pt), exported("cuMemcpyBatchAsync_v2_ptsz"));
    ck_assert_ptr_eq(resolve("cuMemcpy3DBatchAsync", 12080, pt), exported("cuMemcpy3DBatchAsync_ptsz"));
    ck_assert_ptr_eq(resolve("cuMemcpy3DBatchAsync", 13000, pt), exported("cuMemcpy3DBatchAsync_v2_ptsz"));
}
END_TEST

START_TEST(not_found)
{
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    CU_ERR(cuGetProcAddress("cuNoSuchFunction", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    ck_assert_ptr_null(fn);
    CU_ERR(cuGetProcAddress("cuMemCreate", &fn, 10000, 0, &st), CUDA_ERROR_NOT_FOUND);
    ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    /* "symbol - The base name": what a versioned name gets is printed. */
    CUresult v2 = cuGetProcAddress("cuMemAlloc_v2", &fn, 13000, 0, &st);
    printf("not_found: cuGetProcAddress(\"cuMemAlloc_v2\") answers %d (status %d)\n", (int)v2, (int)st);
    ck_assert(v2 == CUDA_ERROR_NOT_FOUND || (v2 == CUDA_SUCCESS && fn == exported("cuMemAlloc_v2")));
    CU_ERR(cuGetProcAddress(NULL, &fn, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGetProcAddress("cuMemAlloc", NULL, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(resolved_functions_work)
{
    CUresult (*alloc)(CUdeviceptr *, size_t) = (CUresult (*)(CUdeviceptr *, size_t))resolve("cuMemAlloc", 12000, 0);
    CUresult (*release)(CUdeviceptr) = (CUresult (*)(CUdeviceptr))resolve("cuMemFree", 12000, 0);
    CUdeviceptr p;
    CU_OK(alloc(&p, 4096));
    CU_OK(release(p));
}
END_TEST

/* The ABIs the _v2 calls superseded are still exported and served to a
 * caller of an older version, and do the same: cuStreamDestroy (CUDA 2.0),
 * cuDevicePrimaryCtxRelease and cuDevicePrimaryCtxReset (CUDA 7.0; _v2
 * since 11.0). CUDA.jl's deprecated wrappers and runtimes older than 11.0
 * call them by these names. */
START_TEST(superseded_abis_are_exported_and_work)
{
    typedef CUresult (*by_stream)(CUstream);
    typedef CUresult (*by_device)(CUdevice);
    by_stream destroy = (by_stream)resolve("cuStreamDestroy", 3000, 0);
    by_device release = (by_device)resolve("cuDevicePrimaryCtxRelease", 10000, 0);
    by_device reset = (by_device)resolve("cuDevicePrimaryCtxReset", 10000, 0);
    ck_assert_ptr_eq((void *)destroy, exported("cuStreamDestroy"));
    ck_assert_ptr_eq((void *)release, exported("cuDevicePrimaryCtxRelease"));
    ck_assert_ptr_eq((void *)reset, exported("cuDevicePrimaryCtxReset"));

    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(destroy(s));

    CUcontext c;
    unsigned flags;
    int active;
    CU_OK(cuDevicePrimaryCtxRetain(&c, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&c, 0));
    CU_OK(release(0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_int_eq(active, 1); /* one reference left */
    CU_OK(reset(0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_int_eq(active, 0);
    CU_OK(cuDevicePrimaryCtxRetain(&c, 0)); /* current again for the teardown */
    CU_OK(cuCtxSetCurrent(c));
}
END_TEST

/* An entry point newer than the driver is not there at all: not exported,
 * and cuGetProcAddress does not know its name (SYMBOL_NOT_FOUND, whatever
 * version is asked). cuStreamGetDevice came with CUDA 12.8; before it, the
 * device of a stream is its context's (cuStreamGetCtx, CUDA 9.2), which is
 * what spillway falls back on. Run on fakecuda as a 12.7 driver too
 * (older.sh); a real driver of 12.8 or later answers with the function. */
START_TEST(an_entry_point_newer_than_the_driver_is_absent)
{
    int version = 0;
    CU_OK(cuDriverGetVersion(&version));
    ck_assert_ptr_nonnull(exported("cuStreamGetCtx"));
    cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if (version >= 12080) {
        ck_assert_ptr_eq(resolve("cuStreamGetDevice", 12080, 0), exported("cuStreamGetDevice"));
        ck_assert_ptr_eq(resolve("cuStreamGetDevice", 12080, pt), exported("cuStreamGetDevice_ptsz"));
        return;
    }
    ck_assert_ptr_null(dlsym(driver, "cuStreamGetDevice"));
    ck_assert_ptr_null(dlsym(driver, "cuStreamGetDevice_ptsz"));
    for (int i = 0; i < 2; i++) {
        void *fn = (void *)1;
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
        CU_ERR(cuGetProcAddress("cuStreamGetDevice", &fn, 13000, i ? pt : 0, &st), CUDA_ERROR_NOT_FOUND);
        ck_assert_int_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        ck_assert_ptr_null(fn);
    }
    /* What it has is served as before. */
    ck_assert_ptr_eq(resolve("cuStreamGetCtx", 13000, 0), exported("cuStreamGetCtx_v2"));
    ck_assert_ptr_eq(resolve("cuLaunchKernel", 13000, pt), exported("cuLaunchKernel_ptsz"));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_procaddr");
    TCase *tc = tcase_create("procaddr");
    tcase_add_checked_fixture(tc, setup, driver_teardown);
    tcase_add_test(tc, self_lookup);
    tcase_add_test(tc, base_name_and_version_select_the_abi);
    tcase_add_test(tc, per_thread_variants);
    tcase_add_test(tc, capture_graph_library_and_copy_abis);
    tcase_add_test(tc, not_found);
    tcase_add_test(tc, resolved_functions_work);
    tcase_add_test(tc, superseded_abis_are_exported_and_work);
    suite_add_tcase(s, tc);
    /* A case of its own: older.sh runs only it on fakecuda as 12.7. */
    TCase *older = tcase_create("older");
    tcase_add_checked_fixture(older, setup, driver_teardown);
    tcase_add_test(older, an_entry_point_newer_than_the_driver_is_absent);
    suite_add_tcase(s, older);
    return s;
}
