/* Conformance: libraries and context-less kernels, how the CUDA runtime
 * (12.0 on) and so PyTorch and JAX load and launch kernels: a library from
 * the PTX a module loads, its kernels by name, a kernel's function in the
 * current context, its parameter layout, and cuLaunchKernel with the
 * CUkernel itself cast to CUfunction, as the driver documents. */
#include <string.h>

#include "tests/unit/driver/common.h"
#include "tests/unit/driver/kernels_ptx.h"

void fakecuda_kernels_register(void); /* kernels.c */

static CUlibrary lib;

static void setup(void)
{
    driver_setup();
    if (fakecuda_present())
        fakecuda_kernels_register();
    CU_OK(cuLibraryLoadData(&lib, kernels_ptx, NULL, NULL, 0, NULL, NULL, 0));
}

static void teardown(void)
{
    CU_OK(cuLibraryUnload(lib));
    driver_teardown();
}

static CUresult fill(CUfunction f, CUdeviceptr p, unsigned v, unsigned long long n)
{
    void *args[] = {&p, &v, &n};
    return cuLaunchKernel(f, 8, 1, 1, 128, 1, 1, 0, NULL, args, NULL);
}

START_TEST(kernel_function_and_launch)
{
    CUkernel kern;
    CU_OK(cuLibraryGetKernel(&kern, lib, "fill_u32"));
    CUkernel again;
    CU_OK(cuLibraryGetKernel(&again, lib, "fill_u32"));
    ck_assert_ptr_eq(again, kern); /* one handle per kernel */
    CUfunction fn;
    CU_OK(cuKernelGetFunction(&fn, kern));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(fill(fn, p, 3, 1024));
    expect_u32(p, 3, 1024);
    CU_OK(fill((CUfunction)(void *)kern, p, 4, 1024)); /* the CUkernel itself */
    expect_u32(p, 4, 1024);
    const char *name = NULL;
    CU_OK(cuKernelGetName(&name, kern));
    ck_assert_str_eq(name, "fill_u32");
    CUlibrary owner = NULL;
    CU_OK(cuKernelGetLibrary(&owner, kern));
    ck_assert_ptr_eq(owner, lib);
    CUmodule mod;
    CU_OK(cuLibraryGetModule(&mod, lib));
    CUfunction by_module;
    CU_OK(cuModuleGetFunction(&by_module, mod, "add_u32"));
    CU_OK(fill(by_module, p, 10, 1024)); /* add_u32: same parameters */
    expect_u32(p, 14, 1024);
    CU_OK(cuMemFree(p));
}
END_TEST

START_TEST(parameter_layout)
{
    CUkernel kern;
    CU_OK(cuLibraryGetKernel(&kern, lib, "fill_u32"));
    size_t off = 99, size = 99;
    CU_OK(cuKernelGetParamInfo(kern, 0, &off, &size));
    ck_assert(off == 0 && size == 8);
    CU_OK(cuKernelGetParamInfo(kern, 1, &off, &size));
    ck_assert(off == 8 && size == 4);
    CU_OK(cuKernelGetParamInfo(kern, 2, &off, NULL)); /* the size is optional */
    ck_assert_uint_eq(off, 16);
    CU_ERR(cuKernelGetParamInfo(kern, 3, &off, &size), CUDA_ERROR_INVALID_VALUE);
    CUfunction fn;
    CU_OK(cuKernelGetFunction(&fn, kern));
    CU_OK(cuFuncGetParamInfo(fn, 2, &off, &size));
    ck_assert(off == 16 && size == 8);
}
END_TEST

START_TEST(counting_and_enumerating)
{
    unsigned n = 0;
    CU_OK(cuLibraryGetKernelCount(&n, lib));
    ck_assert_uint_eq(n, 3); /* kernels.cu has three */
    CUkernel ks[3];
    CU_OK(cuLibraryEnumerateKernels(ks, 3, lib));
    int seen = 0;
    for (int i = 0; i < 3; i++) {
        const char *name;
        CU_OK(cuKernelGetName(&name, ks[i]));
        seen |= strcmp(name, "fill_u32") == 0 ? 1 : strcmp(name, "add_u32") == 0 ? 2
                : strcmp(name, "wait_flag") == 0                              ? 4
                                                                                : 8;
    }
    ck_assert_int_eq(seen, 7);
}
END_TEST

START_TEST(attributes)
{
    CUkernel kern;
    CU_OK(cuLibraryGetKernel(&kern, lib, "add_u32"));
    int v = 0;
    CU_OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kern, 0));
    ck_assert_int_ge(v, 128);
    CU_OK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024, kern, 0));
    CU_OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kern, 0));
    ck_assert_int_eq(v, 1024);
    CU_ERR(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kern, 9999),
           CUDA_ERROR_INVALID_DEVICE);
}
END_TEST

START_TEST(bad_lookups)
{
    CUkernel kern;
    CU_ERR(cuLibraryGetKernel(&kern, lib, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    CU_ERR(cuLibraryGetKernel(NULL, lib, "fill_u32"), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuLibraryGetKernel(&kern, lib, NULL), CUDA_ERROR_INVALID_VALUE);
    CUlibrary l;
    CU_ERR(cuLibraryLoadData(&l, NULL, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuLibraryLoadData(NULL, kernels_ptx, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CUresult r = cuLibraryLoadFromFile(&l, "/nonexistent/kernels.ptx", NULL, NULL, 0, NULL, NULL, 0);
    ck_assert(r == CUDA_ERROR_FILE_NOT_FOUND || r == CUDA_ERROR_INVALID_VALUE); /* not listed in cuda.h */
}
END_TEST

/* A kernel node may name its kernel by CUkernel (func NULL, kern set). */
START_TEST(kernel_node_by_cukernel)
{
    CUkernel kern;
    CU_OK(cuLibraryGetKernel(&kern, lib, "fill_u32"));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    unsigned v = 6;
    unsigned long long n = 1024;
    void *args[] = {&p, &v, &n};
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.kern = kern;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = 128;
    kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = args;
    CUgraph g;
    CU_OK(cuGraphCreate(&g, 0));
    CUgraphNode node;
    CU_OK(cuGraphAddKernelNode(&node, g, NULL, 0, &kp));
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, NULL));
    CU_OK(cuStreamSynchronize(NULL));
    expect_u32(p, 6, 1024);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(p));
}
END_TEST

/* fakecuda only: what it decided where the driver's documentation is
 * silent, and what only it can show (an unloaded library's handles). */
START_TEST(fakecuda_choices)
{
    if (!fakecuda_present())
        return;
    CUkernel kern;
    CU_OK(cuLibraryGetKernel(&kern, lib, "fill_u32"));
    size_t off;
    /* cuFuncGetParamInfo is not documented for a cast CUkernel */
    CU_ERR(cuFuncGetParamInfo((CUfunction)(void *)kern, 0, &off, NULL), CUDA_ERROR_INVALID_HANDLE);
    CUlibrary other;
    CU_OK(cuLibraryLoadData(&other, kernels_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel gone;
    CU_OK(cuLibraryGetKernel(&gone, other, "fill_u32"));
    CU_OK(cuLibraryUnload(other));
    CUfunction fn;
    CU_ERR(cuKernelGetFunction(&fn, gone), CUDA_ERROR_INVALID_HANDLE);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_library");
    TCase *tc = tcase_create("library");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, kernel_function_and_launch);
    tcase_add_test(tc, parameter_layout);
    tcase_add_test(tc, counting_and_enumerating);
    tcase_add_test(tc, attributes);
    tcase_add_test(tc, bad_lookups);
    tcase_add_test(tc, kernel_node_by_cukernel);
    tcase_add_test(tc, fakecuda_choices);
    suite_add_tcase(s, tc);
    return s;
}
