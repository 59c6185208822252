/* The parameter scan of launches under spill (shim/param_scan.c), run by
 * params.sh with spill on against fakecuda: the layout it caches per
 * function is the function's own, also for a function handed out at the
 * address of one that died with its context, and what the cache keeps
 * does not grow with the unloads a program makes. A scan that used
 * another function's layout would read past the arguments the launch
 * passed: here they end at an unmapped page, so such a read faults. */
#include "tests/integration/shim/driver_api.h"
#include "tests/integration/shim/rig.h"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* bytes that end where an unmapped page begins. */
static void *at_a_page_end(size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(m, MAP_FAILED);
    ck_assert_int_eq(mprotect(m + page, page, PROT_NONE), 0);
    return m + page - bytes;
}

static void noop(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    (void)params;
}

static CUfunction function_of(CUmodule *m, const char *name)
{
    CUfunction f;
    CU_OK(cuModuleLoadData(m, "fakecuda"));
    CU_OK(cuModuleGetFunction(&f, *m, name));
    return f;
}

static void launch(CUfunction f, void **params)
{
    CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    CU_OK(cuCtxSynchronize());
}

/* A launch of f with its one 4-byte parameter, and the array naming it,
 * each just before an unmapped page: a scan by a layout of more or larger
 * parameters than f's reads past them (SIGSEGV). */
static void launch_one_word_at_a_page_end(CUfunction f)
{
    unsigned *k = at_a_page_end(sizeof *k);
    *k = 7;
    void **params = at_a_page_end(sizeof(void *));
    params[0] = k;
    launch(f, params);
}

/* cuCtxDestroy unloads the context's modules: a function of a later module
 * may get the dead one's handle (fakecuda hands a dead function's handle to
 * the next module's function, newest first), and must be scanned by its own layout, not the
 * one cached for the dead function (two 8-byte parameters where it takes
 * one of 4 bytes: the scan would read past both). */
START_TEST(a_function_at_a_destroyed_contexts_handle_is_scanned_by_its_own_layout)
{
    rig_setup(0);
    CUdeviceptr a = rig_filled(2 * MiB, 1); /* the pool, spilling */
    static const size_t two_pointers[] = {sizeof(CUdeviceptr), sizeof(CUdeviceptr)};
    ck_assert_int_eq(fakecuda_register_kernel("params_reused", noop, 2, two_pointers), 0);
    CUcontext mine;
    CU_OK(cuCtxCreate(&mine, NULL, 0, 0));
    CUmodule m;
    CUfunction dead = function_of(&m, "params_reused");
    launch(dead, (void *[]){&a, &a});
    CU_OK(cuCtxDestroy(mine));

    rig_setup(0);
    static const size_t one_word[] = {sizeof(unsigned)};
    ck_assert_int_eq(fakecuda_register_kernel("params_reused", noop, 1, one_word), 0);
    CUfunction f = function_of(&m, "params_reused");
    ck_assert_ptr_eq(f, dead); /* what the test is about */
    launch_one_word_at_a_page_end(f);
    CU_OK(cuModuleUnload(m));
    CU_OK(cuMemFree(a));
}
END_TEST

/* A primary context's reset (cudaDeviceReset), and the release of its last
 * reference, destroy it with its modules, as cuCtxDestroy does a context:
 * a function of a module loaded after may get a dead one's handle and
 * must be scanned by its own layout. Device 1's primary context, the pool
 * (spilling) on device 0. */
/* how: 0 reset, 1 release, 2 and 3 the same by their CUDA 7.0 ABI (the
 * unsuffixed exports, which CUDA.jl's deprecated wrappers and runtimes
 * before 11.0 call). */
static void primary_context_ends(int how)
{
    CUresult (*end)(CUdevice) = how == 0 ? cuDevicePrimaryCtxReset : cuDevicePrimaryCtxRelease;
    if (how >= 2) {
        *(void **)&end = dlsym(RTLD_DEFAULT, how == 2 ? "cuDevicePrimaryCtxReset" : "cuDevicePrimaryCtxRelease");
        ck_assert_ptr_nonnull((void *)end);
    }
    rig_setup(0);
    CUdeviceptr a = rig_filled(2 * MiB, 1);
    static const size_t two_pointers[] = {sizeof(CUdeviceptr), sizeof(CUdeviceptr)};
    ck_assert_int_eq(fakecuda_register_kernel("params_reset", noop, 2, two_pointers), 0);
    CUcontext c1;
    CU_OK(cuDevicePrimaryCtxRetain(&c1, 1));
    CU_OK(cuCtxSetCurrent(c1));
    CUmodule m;
    CUfunction dead = function_of(&m, "params_reset");
    launch(dead, (void *[]){&a, &a});
    CU_OK(end(1));

    static const size_t one_word[] = {sizeof(unsigned)};
    ck_assert_int_eq(fakecuda_register_kernel("params_reset", noop, 1, one_word), 0);
    CU_OK(cuDevicePrimaryCtxRetain(&c1, 1));
    CU_OK(cuCtxSetCurrent(c1));
    CUfunction f = function_of(&m, "params_reset");
    ck_assert_ptr_eq(f, dead); /* what the test is about */
    launch_one_word_at_a_page_end(f);
    CU_OK(cuModuleUnload(m));
    CU_OK(cuDevicePrimaryCtxRelease(1));
    rig_setup(0);
    CU_OK(cuMemFree(a));
}

START_TEST(a_function_at_a_reset_primary_contexts_handle_is_scanned_by_its_own_layout)
{
    primary_context_ends(0);
}
END_TEST

START_TEST(a_function_at_a_released_primary_contexts_handle_is_scanned_by_its_own_layout)
{
    primary_context_ends(1);
}
END_TEST

START_TEST(a_function_at_a_primary_context_reset_by_the_old_abi_is_scanned_by_its_own_layout)
{
    primary_context_ends(2);
}
END_TEST

START_TEST(a_function_at_a_primary_context_released_by_the_old_abi_is_scanned_by_its_own_layout)
{
    primary_context_ends(3);
}
END_TEST

/* ---- the program's references to a primary context ---------------------- */

#define CU_ERR(call, want)                                                     \
    do {                                                                       \
        CUresult r_ = (call);                                                  \
        ck_assert_msg(r_ == (want), "%s: error %d, expected %d", #call, (int)r_, (int)(want)); \
    } while (0)

typedef CUresult (*retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*release_fn)(CUdevice);

static void *looked_up(const char *name, int version)
{
    void *fn = NULL;
    CU_OK(cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    ck_assert_ptr_nonnull(fn);
    return fn;
}

/* how: 0 the exports (_v2), 1 the CUDA 7.0 release export (dlsym), 2 and 3
 * both through cuGetProcAddress, for CUDA 12.0 (_v2) and 10.0 (the old
 * release ABI). */
static void primary_by(int how, retain_fn *retain, release_fn *release)
{
    *retain = cuDevicePrimaryCtxRetain;
    *release = cuDevicePrimaryCtxRelease;
    if (how == 1)
        *(void **)release = dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRelease");
    if (how >= 2) {
        *(void **)retain = looked_up("cuDevicePrimaryCtxRetain", how == 2 ? 12000 : 10000);
        *(void **)release = looked_up("cuDevicePrimaryCtxRelease", how == 2 ? 12000 : 10000);
    }
    ck_assert_ptr_nonnull((void *)*release);
}

/* cuDevicePrimaryCtxRelease: "Releasing a primary context that has not
 * been previously retained will fail with CUDA_ERROR_INVALID_CONTEXT". The
 * pool holds spillway's own reference: a release beyond the program's
 * retains (a bug, or two libraries each releasing what one retained) must
 * get that answer, not take spillway's reference and reset the context
 * under every pool pointer of the process. */
START_TEST(a_release_beyond_the_programs_retains_is_refused)
{
    retain_fn retain;
    release_fn release;
    primary_by(_i, &retain, &release);
    CUcontext c = rig_setup(0), again; /* the program's first retain */
    CUdeviceptr a = rig_filled(2 * MiB, 5); /* the pool: spillway's reference */
    CU_OK(retain(&again, 0));
    ck_assert_ptr_eq(again, c);
    CU_OK(release(0));
    CU_OK(release(0)); /* both retains released: each was the program's */
    CU_ERR(release(0), CUDA_ERROR_INVALID_CONTEXT);
    CU_ERR(release(0), CUDA_ERROR_INVALID_CONTEXT);
    unsigned flags;
    int active = -1;
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_msg(active == 1, "the primary context lost spillway's reference");
    rig_expect_pattern(a, 2 * MiB, 5, "pool memory after a refused release");
    CU_OK(cuMemsetD32(a, 0x5a5a5a5au, 2 * MiB / 4));
    uint32_t w = 0;
    CU_OK(cuMemcpyDtoH(&w, a + MiB, sizeof w));
    ck_assert_uint_eq(w, 0x5a5a5a5au);
    CU_OK(retain(&again, 0)); /* the program holds one again */
    CU_OK(release(0));
    CU_OK(cuMemFree(a));
}
END_TEST

static void *retain_release_pairs(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2000; i++) {
        CUcontext c;
        if (cuDevicePrimaryCtxRetain(&c, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRelease(0) != CUDA_SUCCESS)
            return (void *)1;
    }
    return NULL;
}

/* Threads retaining and releasing at once (a release never outruns its
 * own retain): none is refused, and the count ends where it began, one
 * retain of the program's, whose release is accepted and the next one
 * refused. */
START_TEST(concurrent_retains_and_releases_keep_the_count)
{
    rig_setup(0);
    CUdeviceptr a = rig_filled(2 * MiB, 7);
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, retain_release_pairs, NULL), 0);
    for (int i = 0; i < 8; i++) {
        void *failed;
        ck_assert_int_eq(pthread_join(t[i], &failed), 0);
        ck_assert_msg(failed == NULL, "a thread's retain or release failed");
    }
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_ERR(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    rig_expect_pattern(a, 2 * MiB, 7, "pool memory after the threads");
    CU_OK(cuMemFree(a));
}
END_TEST

/* cuDevicePrimaryCtxReset: "Resetting the primary context does not
 * release it, an application that has retained the primary context should
 * explicitly release its usage": the program's retain made before a reset
 * (cudaDeviceReset's) still has its release, and one more is refused. */
START_TEST(a_reset_leaves_the_programs_retains_to_release)
{
    rig_setup(0);
    CUdeviceptr a = rig_filled(2 * MiB, 6);
    CU_OK(cuMemFree(a));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuDevicePrimaryCtxReset(0));
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_ERR(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
}
END_TEST

/* On a device whose primary context spillway holds no reference to (no
 * pool there), a release is the driver's to answer, also for a retain
 * spillway never saw (made through the driver's own function, as a runtime
 * that resolved the driver before spillway was there). */
START_TEST(a_release_where_spillway_holds_no_reference_is_the_drivers)
{
    rig_setup(0);
    retain_fn unseen;
    *(void **)&unseen = spw_driver_unseen("cuDevicePrimaryCtxRetain");
    ck_assert_ptr_nonnull((void *)unseen);
    ck_assert_ptr_ne((void *)unseen, (void *)cuDevicePrimaryCtxRetain);
    CUcontext c;
    CU_OK(unseen(&c, 1));
    CU_OK(cuDevicePrimaryCtxRelease(1));
    CU_ERR(cuDevicePrimaryCtxRelease(1), CUDA_ERROR_INVALID_CONTEXT);
}
END_TEST

/* A module loaded and unloaded over and over while its kernel and another
 * (of a module that stays) are launched: each unload makes every cached
 * layout ask again, and what the cache keeps must not grow with them. */
START_TEST(unloads_do_not_grow_the_layout_cache)
{
    rig_setup(0);
    CUdeviceptr a = rig_filled(2 * MiB, 2);
    static const size_t sizes[] = {sizeof(CUdeviceptr), sizeof(size_t), sizeof(unsigned)};
    ck_assert_int_eq(fakecuda_register_kernel("params_stays", noop, 3, sizes), 0);
    ck_assert_int_eq(fakecuda_register_kernel("params_cycles", noop, 3, sizes), 0);
    CUmodule stays, cycles;
    CUfunction f = function_of(&stays, "params_stays");
    size_t n = 1;
    unsigned k = 1;
    void *params[] = {&a, &n, &k};
    enum { ROUNDS = 20000 };
    size_t before = 0;
    for (int i = 0; i < ROUNDS; i++) {
        CUfunction g = function_of(&cycles, "params_cycles");
        CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        CU_OK(cuLaunchKernel(g, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        CU_OK(cuCtxSynchronize());
        CU_OK(cuModuleUnload(cycles));
        if (i == ROUNDS / 10)
            before = mallinfo2().uordblks; /* past the first rounds' caches */
    }
    size_t after = mallinfo2().uordblks;
    ck_assert_msg(after < before + 256 * 1024, "the heap grew by %zu bytes over %d unloads",
                  after - before, ROUNDS - ROUNDS / 10);
    CU_OK(cuModuleUnload(stays));
    CU_OK(cuMemFree(a));
}
END_TEST

/* params.sh runs this with a driver that describes no kernel's parameters
 * (cuFuncGetParamInfo and cuKernelGetParamInfo refused, as on a driver
 * before 12.4, which lacks them): launches still run on the data wherever
 * it lives, and the script checks that spillway said once, not per launch,
 * that their arguments are neither touched nor filled back. */
START_TEST(launches_of_kernels_the_driver_will_not_describe)
{
    rig_setup(0);
    CUfunction f = rig_kernel("step_u32");
    CUdeviceptr a = rig_filled(48 * MiB, 3);
    CUdeviceptr b = rig_filled(48 * MiB, 4); /* a partly on the host */
    CU_OK(cuMemFree(b));                     /* room to fill it back */
    size_t n = 48 * MiB / 4;
    uint32_t *want = rig_expected(48 * MiB, 3);
    for (unsigned k = 0; k < 8; k++) {
        void *params[] = {&a, &n, &k};
        launch(f, params);
        for (size_t i = 0; i < n; i++)
            want[i] = rig_step(want[i], k);
    }
    rig_expect_words(a, want, 48 * MiB, "a buffer stepped where it lives");
    free(want);
    CU_OK(cuMemFree(a));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_params");
    TCase *c = tcase_create("params");
    tcase_set_timeout(c, 60);
    if (getenv("SPW_PARAMS_REFUSED")) {
        tcase_add_test(c, launches_of_kernels_the_driver_will_not_describe);
    } else if (getenv("SPW_PARAMS_PRIMARY_WARN")) { /* one process, two refusals */
        tcase_add_loop_test(c, a_release_beyond_the_programs_retains_is_refused, 0, 1);
    } else {
        tcase_add_test(c, a_function_at_a_destroyed_contexts_handle_is_scanned_by_its_own_layout);
        tcase_add_test(c, a_function_at_a_reset_primary_contexts_handle_is_scanned_by_its_own_layout);
        tcase_add_test(c, a_function_at_a_released_primary_contexts_handle_is_scanned_by_its_own_layout);
        tcase_add_test(c, a_function_at_a_primary_context_reset_by_the_old_abi_is_scanned_by_its_own_layout);
        tcase_add_test(c, a_function_at_a_primary_context_released_by_the_old_abi_is_scanned_by_its_own_layout);
        tcase_add_test(c, unloads_do_not_grow_the_layout_cache);
        tcase_add_loop_test(c, a_release_beyond_the_programs_retains_is_refused, 0, 4);
        tcase_add_test(c, concurrent_retains_and_releases_keep_the_count);
        tcase_add_test(c, a_reset_leaves_the_programs_retains_to_release);
        tcase_add_test(c, a_release_where_spillway_holds_no_reference_is_the_drivers);
    }
    suite_add_tcase(s, c);
    return s;
}
