/* Conformance: modules, kernel launches (kernelParams, the packed extra
 * buffer, cuLaunchKernelEx, cuLaunchCooperativeKernelMultiDevice on one
 * device) and cuFuncGetParamInfo. */
#include <string.h>

#include "tests/unit/driver/common.h"

static struct test_kernels k;

static void setup(void)
{
    driver_setup();
    kernels_load(&k);
}

START_TEST(launch_with_params)
{
    CUdeviceptr p;
    size_t n = 1 << 20;
    CU_OK(cuMemAlloc(&p, n * 4));
    CU_OK(launch_u32(k.fill_u32, p, 0xfeed, n, NULL));
    expect_u32(p, 0xfeed, n);
    CU_OK(cuMemFree(p));
}
END_TEST

START_TEST(param_info)
{
    size_t off = 99, size = 99;
    CU_OK(cuFuncGetParamInfo(k.fill_u32, 0, &off, &size));
    ck_assert_uint_eq(off, 0);
    ck_assert_uint_eq(size, 8);
    CU_OK(cuFuncGetParamInfo(k.fill_u32, 1, &off, &size));
    ck_assert_uint_eq(off, 8);
    ck_assert_uint_eq(size, 4);
    CU_OK(cuFuncGetParamInfo(k.fill_u32, 2, &off, &size));
    ck_assert_uint_eq(off, 16);
    ck_assert_uint_eq(size, 8);
    CU_ERR(cuFuncGetParamInfo(k.fill_u32, 3, &off, &size), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuFuncGetParamInfo(k.wait_flag, 0, &off, &size));
    ck_assert_uint_eq(size, 8);
}
END_TEST

START_TEST(launch_with_extra_buffer)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    unsigned char buf[24];
    memset(buf, 0, sizeof buf);
    unsigned v = 31;
    unsigned long long n = 1024;
    memcpy(buf + 0, &p, 8);
    memcpy(buf + 8, &v, 4);
    memcpy(buf + 16, &n, 8);
    size_t len = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &len,
                     CU_LAUNCH_PARAM_END};
    CU_OK(cuLaunchKernel(k.fill_u32, 4, 1, 1, 64, 1, 1, 0, NULL, NULL, extra));
    expect_u32(p, 31, 1024);
    CU_OK(cuMemFree(p));
}
END_TEST

/* The CUDA 2.0 launch API, deprecated but still the driver's: block shape
 * and argument bytes are state of the function, and cuLaunch,
 * cuLaunchGrid, cuLaunchGridAsync launch it with them. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* what the test is about */
START_TEST(legacy_launch_api)
{
    CUdeviceptr p;
    CUstream s;
    unsigned long long n = 4096;
    CU_OK(cuMemAlloc(&p, n * 4));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuFuncSetBlockShape(k.fill_u32, 64, 1, 1));
    CU_OK(cuFuncSetSharedSize(k.fill_u32, 0));
    CU_OK(cuParamSetv(k.fill_u32, 0, &p, sizeof p));
    CU_OK(cuParamSeti(k.fill_u32, 8, 77));
    CU_OK(cuParamSetv(k.fill_u32, 16, &n, sizeof n));
    CU_OK(cuParamSetSize(k.fill_u32, 24));
    CU_OK(cuLaunchGrid(k.fill_u32, 4, 2));
    CU_OK(cuCtxSynchronize());
    expect_u32(p, 77, (size_t)n);
    CU_OK(cuParamSeti(k.fill_u32, 8, 78)); /* the state as it is at the launch */
    CU_OK(cuLaunchGridAsync(k.fill_u32, 2, 1, s));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 78, (size_t)n);
    CU_OK(cuParamSeti(k.fill_u32, 8, 79));
    CU_OK(cuLaunch(k.fill_u32)); /* one block: the kernel strides over all n */
    CU_OK(cuCtxSynchronize());
    expect_u32(p, 79, (size_t)n);
    /* No function: cuda.h lists INVALID_VALUE for these, INVALID_HANDLE
     * fits them as well (fakecuda's). */
    CUresult r = cuLaunchGrid(NULL, 1, 1);
    ck_assert(r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_INVALID_VALUE);
    r = cuParamSetv(NULL, 0, &p, sizeof p);
    ck_assert(r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(p));
}
END_TEST
#pragma GCC diagnostic pop

START_TEST(launch_ex)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 32;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    unsigned v = 4;
    unsigned long long n = 1024;
    void *args[] = {&p, &v, &n};
    CU_OK(cuLaunchKernelEx(&cfg, k.fill_u32, args, NULL));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 4, 1024);
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(arguments_are_copied_at_launch)
{
    struct flag f;
    flag_new(&f);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    stream_block(&k, &f, s);
    unsigned v = 1;
    unsigned long long n = 1024;
    void *args[] = {&p, &v, &n};
    CU_OK(cuLaunchKernel(k.fill_u32, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    v = 2; /* after the launch call: must not matter */
    flag_release(&f);
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 1, 1024);
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

START_TEST(bad_launches)
{
    CUfunction fn;
    CU_ERR(cuModuleGetFunction(&fn, k.module, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    CUdeviceptr p = 0;
    unsigned v = 0;
    unsigned long long n = 0;
    void *args[] = {&p, &v, &n};
    CU_ERR(cuLaunchKernel(k.fill_u32, 1, 1, 1, 2048, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuLaunchKernel(k.fill_u32, 0, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    /* Arguments in both forms at once ("both kernelParams and extra are
     * non-NULL", cuLaunchKernel's documentation). */
    unsigned char buf[24] = {0};
    size_t len = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &len,
                     CU_LAUNCH_PARAM_END};
    CU_ERR(cuLaunchKernel(k.fill_u32, 1, 1, 1, 32, 1, 1, 0, NULL, args, extra), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

/* cuLaunchCooperativeKernelMultiDevice (deprecated, still exported) on the
 * one device: the kernel runs on its stream, with its arguments copied at
 * the call; what the documentation rules out is refused (the codes it does
 * not name are only asked to be errors). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
START_TEST(cooperative_multi_device_launch)
{
    int can = 0;
    CU_OK(cuDeviceGetAttribute(&can, CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH, 0));
    if (!can)
        return; /* the device does not have it */
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    unsigned v = 9;
    unsigned long long n = 1024;
    void *args[] = {&p, &v, &n};
    CUDA_LAUNCH_PARAMS l = {.function = k.fill_u32, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                            .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1, .hStream = s,
                            .kernelParams = args};
    CU_OK(cuLaunchCooperativeKernelMultiDevice(&l, 1, 0));
    v = 10; /* after the call: must not matter */
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 9, 1024);
    unsigned both = CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC |
                    CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC;
    CU_OK(cuLaunchCooperativeKernelMultiDevice(&l, 1, both));
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 10, 1024);
    v = 11; /* what a refused launch would write */
    ck_assert_int_ne(cuLaunchCooperativeKernelMultiDevice(NULL, 1, 0), CUDA_SUCCESS);
    ck_assert_int_ne(cuLaunchCooperativeKernelMultiDevice(&l, 0, 0), CUDA_SUCCESS);
    ck_assert_int_ne(cuLaunchCooperativeKernelMultiDevice(&l, 1, 0x80), CUDA_SUCCESS);
    CUDA_LAUNCH_PARAMS bad = l;
    bad.hStream = NULL;
    ck_assert_int_ne(cuLaunchCooperativeKernelMultiDevice(&bad, 1, 0), CUDA_SUCCESS);
    bad.hStream = CU_STREAM_LEGACY;
    ck_assert_int_ne(cuLaunchCooperativeKernelMultiDevice(&bad, 1, 0), CUDA_SUCCESS);
    bad.hStream = CU_STREAM_PER_THREAD;
    ck_assert_int_ne(cuLaunchCooperativeKernelMultiDevice(&bad, 1, 0), CUDA_SUCCESS);
    bad = l;
    bad.gridDimX = 0;
    ck_assert_int_ne(cuLaunchCooperativeKernelMultiDevice(&bad, 1, 0), CUDA_SUCCESS);
    /* Two launches on one device: "no two kernels can be launched on the
     * same device". */
    CUDA_LAUNCH_PARAMS twice[2] = {l, l};
    ck_assert_int_ne(cuLaunchCooperativeKernelMultiDevice(twice, 2, 0), CUDA_SUCCESS);
    CU_OK(cuStreamSynchronize(s));
    expect_u32(p, 10, 1024); /* nothing refused ran */
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(s));
}
END_TEST
#pragma GCC diagnostic pop

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_kernel");
    TCase *tc = tcase_create("kernel");
    tcase_add_checked_fixture(tc, setup, driver_teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, launch_with_params);
    tcase_add_test(tc, param_info);
    tcase_add_test(tc, launch_with_extra_buffer);
    tcase_add_test(tc, legacy_launch_api);
    tcase_add_test(tc, launch_ex);
    tcase_add_test(tc, arguments_are_copied_at_launch);
    tcase_add_test(tc, bad_launches);
    tcase_add_test(tc, cooperative_multi_device_launch);
    suite_add_tcase(s, tc);
    return s;
}
