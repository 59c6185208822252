/* The shim's resolution against a spy driver (spydriver.c), loaded with
 * dlopen (not preloaded): which real function each handler forwards to
 * (_ptsz stays _ptsz, _ptds stays _ptds, for allocations and copies),
 * cuGetProcAddress's flags, a driver whose
 * cuGetProcAddress answers with other addresses than its symbols,
 * cuGetExportTable untouched, and the dlsym override. */
#include "tests/unit/check_compat.h"

#include "shim/spillway.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *shim, *spy;
static char *spy_last;
static int *spy_gpa_mode;

typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);
typedef CUresult (*pool_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*gpa_v1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);

static void setup(void)
{
    const char *b = getenv("SPW_TEST_BUILD");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/unit/shim/libspydriver.so", b && *b ? b : "build");
    setenv("SPILLWAY_DRIVER", path, 1);
    setenv("SPILLWAY_LOG", "error", 1);
    spy = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(spy != NULL, "%s", dlerror());
    snprintf(path, sizeof path, "%s/libspillway.so", b && *b ? b : "build");
    shim = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(shim != NULL, "%s", dlerror());
    spy_last = dlsym(spy, "spy_last");
    spy_gpa_mode = dlsym(spy, "spy_gpa_mode");
    ck_assert(spy_last && spy_gpa_mode);
}

static void *shim_fn(const char *name)
{
    void *p = dlsym(shim, name);
    ck_assert_msg(p != NULL, "libspillway.so does not export %s", name);
    return p;
}

static uint64_t used(void)
{
    int (*get)(int, struct spillway_counters *) =
        (int (*)(int, struct spillway_counters *))shim_fn("spillway_get_counters");
    struct spillway_counters c;
    ck_assert_int_eq(get(0, &c), 0);
    return c.used;
}

/* Calls the allocation trio through f_alloc/f_pool/f_free and checks the
 * spy saw the functions with the given suffix. */
static void expect_forwarding(void *f_alloc, void *f_pool, void *f_free, const char *suffix)
{
    char want[64];
    CUdeviceptr p;
    ck_assert_int_eq(((alloc_async_fn)f_alloc)(&p, 1 << 20, NULL), CUDA_SUCCESS);
    snprintf(want, sizeof want, "cuMemAllocAsync%s", suffix);
    ck_assert_str_eq(spy_last, want);
    ck_assert_uint_eq(used(), 1 << 20);
    ck_assert_int_eq(((free_async_fn)f_free)(p, NULL), CUDA_SUCCESS);
    snprintf(want, sizeof want, "cuMemFreeAsync%s", suffix);
    ck_assert_str_eq(spy_last, want);
    ck_assert_uint_eq(used(), 0);
    if (f_pool) {
        ck_assert_int_eq(((pool_fn)f_pool)(&p, 1 << 20, NULL, NULL), CUDA_SUCCESS);
        snprintf(want, sizeof want, "cuMemAllocFromPoolAsync%s", suffix);
        ck_assert_str_eq(spy_last, want);
        ck_assert_int_eq(((free_async_fn)f_free)(p, NULL), CUDA_SUCCESS);
    }
}

START_TEST(exported_ptsz_forward_to_ptsz)
{
    setup();
    expect_forwarding(shim_fn("cuMemAllocAsync_ptsz"), shim_fn("cuMemAllocFromPoolAsync_ptsz"),
                      shim_fn("cuMemFreeAsync_ptsz"), "_ptsz");
    expect_forwarding(shim_fn("cuMemAllocAsync"), shim_fn("cuMemAllocFromPoolAsync"),
                      shim_fn("cuMemFreeAsync"), "");
}
END_TEST

/* Loop: 0/1 = spy_gpa_mode (the driver's answers are its symbols, or not),
 * even/odd = v2 / v1 ABI of cuGetProcAddress. */
static void *lookup(int abi_v1, const char *name, cuuint64_t flags)
{
    void *p = NULL;
    CUresult r;
    if (abi_v1) {
        r = ((gpa_v1_fn)shim_fn("cuGetProcAddress"))(name, &p, 12000, flags);
    } else {
        CUdriverProcAddressQueryResult st;
        r = ((gpa_v2_fn)shim_fn("cuGetProcAddress_v2"))(name, &p, 12000, flags, &st);
    }
    ck_assert_msg(r == CUDA_SUCCESS && p, "%s: %d", name, r);
    return p;
}

START_TEST(gpa_flags_select_the_variant)
{
    setup();
    *spy_gpa_mode = _i / 2;
    int v1 = _i % 2;
    const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    void *a = lookup(v1, "cuMemAllocAsync", pt), *f = lookup(v1, "cuMemFreeAsync", pt);
    ck_assert_ptr_eq(a, dlsym(shim, "cuMemAllocAsync_ptsz"));
    expect_forwarding(a, NULL, f, "_ptsz");
    a = lookup(v1, "cuMemAllocAsync", CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    f = lookup(v1, "cuMemFreeAsync", 0);
    ck_assert_ptr_eq(a, dlsym(shim, "cuMemAllocAsync"));
    expect_forwarding(a, NULL, f, "");
    ck_assert_ptr_eq(lookup(v1, "cuMemAlloc", 0), dlsym(shim, "cuMemAlloc_v2"));
    /* Unhooked and never-wrapped names: the driver's answer, untouched. */
    ck_assert_ptr_eq(lookup(v1, "cuGetExportTable", 0), dlsym(spy, "cuGetExportTable"));
    ck_assert_ptr_eq(lookup(v1, "cuCtxGetDevice", 0), dlsym(spy, "cuCtxGetDevice"));
    /* Self-lookup. */
    ck_assert_ptr_eq(lookup(v1, "cuGetProcAddress", 0), dlsym(shim, "cuGetProcAddress_v2"));
}
END_TEST

/* The copy family: every handler, exported, handed out by the dlsym
 * override or by cuGetProcAddress (with or without the per-thread flag),
 * forwards to the driver's same variant with the same arguments. */
enum copy_sig { SYNC_DD, SYNC_DH, SYNC_HD, ASYNC_DD, ASYNC_DH, ASYNC_HD };
static const struct {
    const char *base, *symbol, *pt;
    enum copy_sig sig;
} copies[] = {
    {"cuMemcpy", "cuMemcpy", "_ptds", SYNC_DD},
    {"cuMemcpyAsync", "cuMemcpyAsync", "_ptsz", ASYNC_DD},
    {"cuMemcpyHtoD", "cuMemcpyHtoD_v2", "_ptds", SYNC_DH},
    {"cuMemcpyDtoH", "cuMemcpyDtoH_v2", "_ptds", SYNC_HD},
    {"cuMemcpyDtoD", "cuMemcpyDtoD_v2", "_ptds", SYNC_DD},
    {"cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", "_ptsz", ASYNC_DH},
    {"cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2", "_ptsz", ASYNC_HD},
    {"cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2", "_ptsz", ASYNC_DD},
};

/* Calls fn, a copy of signature sig, for n bytes; returns its answer. */
static CUresult call_copy(void *fn, enum copy_sig sig, size_t n)
{
    static char host[64];
    CUdeviceptr dev = 0x10000000;
    switch (sig) {
    case SYNC_DD: return ((CUresult(*)(CUdeviceptr, CUdeviceptr, size_t))fn)(dev, dev + 64, n);
    case SYNC_DH: return ((CUresult(*)(CUdeviceptr, const void *, size_t))fn)(dev, host, n);
    case SYNC_HD: return ((CUresult(*)(void *, CUdeviceptr, size_t))fn)(host, dev, n);
    case ASYNC_DD:
        return ((CUresult(*)(CUdeviceptr, CUdeviceptr, size_t, CUstream))fn)(dev, dev + 64, n, NULL);
    case ASYNC_DH:
        return ((CUresult(*)(CUdeviceptr, const void *, size_t, CUstream))fn)(dev, host, n, NULL);
    case ASYNC_HD:
        return ((CUresult(*)(void *, CUdeviceptr, size_t, CUstream))fn)(host, dev, n, NULL);
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* Loop as gpa_flags_select_the_variant. */
START_TEST(copies_forward_to_the_same_variant)
{
    setup();
    *spy_gpa_mode = _i / 2;
    int v1 = _i % 2;
    size_t *spy_bytes = dlsym(spy, "spy_bytes");
    void *(*over)(void *, const char *) = (void *(*)(void *, const char *))shim_fn("dlsym");
    ck_assert_ptr_nonnull(spy_bytes);
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++) {
        for (int pt = 0; pt < 2; pt++) {
            char name[64];
            snprintf(name, sizeof name, "%s%s", copies[i].symbol, pt ? copies[i].pt : "");
            void *exported = shim_fn(name);
            void *by_gpa = lookup(v1, copies[i].base,
                                  pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                     : CU_GET_PROC_ADDRESS_LEGACY_STREAM);
            ck_assert_msg(by_gpa == exported, "cuGetProcAddress(%s, pt %d) is not %s",
                          copies[i].base, pt, name);
            ck_assert_msg(over(spy, name) == exported, "dlsym(%s)", name);
            size_t n = 1000 + 10 * i + (size_t)pt;
            ck_assert_int_eq(call_copy(exported, copies[i].sig, n), CUDA_SUCCESS);
            ck_assert_str_eq(spy_last, name);
            ck_assert_uint_eq(*spy_bytes, n);
        }
    }
}
END_TEST

START_TEST(dlsym_override)
{
    setup();
    void *(*over)(void *, const char *) = (void *(*)(void *, const char *))shim_fn("dlsym");
    ck_assert_ptr_eq(over(spy, "cuMemAllocAsync_ptsz"), dlsym(shim, "cuMemAllocAsync_ptsz"));
    ck_assert_ptr_eq(over(spy, "cuGetProcAddress"), dlsym(shim, "cuGetProcAddress"));
    ck_assert_ptr_eq(over(spy, "cuCtxGetDevice"), dlsym(spy, "cuCtxGetDevice"));
    ck_assert_ptr_eq(over(spy, "spy_last"), (void *)spy_last);
    /* Hooked, but this driver does not have it: nothing to forward to. */
    ck_assert_ptr_null(over(spy, "cuMemCreate"));
    ck_assert_ptr_null(over(spy, "cuMemAllocAsync_ptds"));
    ck_assert_ptr_null(over(spy, "cuNoSuchFunction"));
    /* ...and its export answers an error instead of crashing. */
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                       unsigned long long) = shim_fn("cuMemCreate");
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop = {0};
    ck_assert_int_eq(create(&h, 2 << 20, &prop, 0), CUDA_ERROR_NOT_INITIALIZED);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_resolve");
    TCase *tc = tcase_create("resolve");
    tcase_add_test(tc, exported_ptsz_forward_to_ptsz);
    tcase_add_loop_test(tc, gpa_flags_select_the_variant, 0, 4);
    tcase_add_loop_test(tc, copies_forward_to_the_same_variant, 0, 4);
    tcase_add_test(tc, dlsym_override);
    suite_add_tcase(s, tc);
    return s;
}
