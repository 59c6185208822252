/* The copy suite (test_copies.c): every copy function by every path a
 * program reaches it (linked, dlsym, cuGetProcAddress, each with its
 * per-thread variant) counts its bytes, and a failed copy nothing. */
#include "tests/integration/shim/copies_rig.h"

#include <dlfcn.h>
#include <string.h>

/* F(field, base name, versioned symbol, per-thread suffix) */
#define COPY_FUNCS(F)                                             \
    F(memcpy, cuMemcpy, cuMemcpy, _ptds)                          \
    F(memcpy_async, cuMemcpyAsync, cuMemcpyAsync, _ptsz)          \
    F(htod, cuMemcpyHtoD, cuMemcpyHtoD_v2, _ptds)                 \
    F(dtoh, cuMemcpyDtoH, cuMemcpyDtoH_v2, _ptds)                 \
    F(dtod, cuMemcpyDtoD, cuMemcpyDtoD_v2, _ptds)                 \
    F(htod_async, cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, _ptsz) \
    F(dtoh_async, cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, _ptsz) \
    F(dtod_async, cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, _ptsz)

struct copy_api {
#define FIELD(field, base, symbol, pt) __typeof__(&symbol) field;
    COPY_FUNCS(FIELD)
#undef FIELD
};

enum copy_path { LINKED, LINKED_PT, DLSYM, DLSYM_PT, GPA, GPA_PT, COPY_PATHS };
static const char *const path_names[] = {"linked", "linked _pt", "dlsym", "dlsym _pt",
                                         "cuGetProcAddress", "cuGetProcAddress PER_THREAD"};


static void *driver_handle(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    ck_assert_ptr_nonnull(h);
    return h;
}

static void load_copies(enum copy_path path, struct copy_api *api)
{
    void *h = driver_handle();
    typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
    gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
    ck_assert_ptr_nonnull((void *)gpa);
    CUdriverProcAddressQueryResult st;
    switch (path) {
#define LINK(field, base, symbol, pt) api->field = &symbol;
#define LINK_PT(field, base, symbol, pt) api->field = &symbol##pt;
#define DLSYM_(field, base, symbol, pt) *(void **)&api->field = dlsym(h, #symbol);
#define DLSYM_PT_(field, base, symbol, pt) *(void **)&api->field = dlsym(h, #symbol #pt);
#define GPA_(field, base, symbol, pt)                                                         \
    ck_assert_int_eq(gpa(#base, (void **)&api->field, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st), \
                     CUDA_SUCCESS);
#define GPA_PT_(field, base, symbol, pt)                                                      \
    ck_assert_int_eq(gpa(#base, (void **)&api->field, 12000,                                  \
                         CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st),                 \
                     CUDA_SUCCESS);                                                           \
    ck_assert_ptr_eq((void *)api->field, dlsym(h, #symbol #pt));
    case LINKED: COPY_FUNCS(LINK) break;
    case LINKED_PT: COPY_FUNCS(LINK_PT) break;
    case DLSYM: COPY_FUNCS(DLSYM_) break;
    case DLSYM_PT: COPY_FUNCS(DLSYM_PT_) break;
    case GPA: COPY_FUNCS(GPA_) break;
    case GPA_PT: COPY_FUNCS(GPA_PT_) break;
    default: ck_abort_msg("no such path");
    }
    /* Every answer is a spillway handler, the per-thread ones distinct. */
#define IN_SHIM(field, base, symbol, pt)                                                  \
    ck_assert_msg(spw_in_spillway((void *)api->field), "%s: %s is not spillway's",            \
                  path_names[path], #symbol);                                             \
    ck_assert_msg((path % 2 == 1) == ((void *)api->field == dlsym(h, #symbol #pt)),       \
                  "%s: %s is not its %s variant", path_names[path], #symbol,             \
                  path % 2 ? #pt : "plain");
    COPY_FUNCS(IN_SHIM)
}


/* Every function of api, in every direction it can copy. Sizes differ from
 * copy to copy so that a count in the wrong direction shows. */
static void copy_everything(const struct copy_api *api, CUstream s)
{
    enum { N = 64 * KiB };
    static unsigned char src[N], dst[N];
    unsigned char *pinned = NULL, *pinned2 = NULL;
    ck_assert_int_eq(drv.mem_host_alloc((void **)&pinned, N, 0), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_alloc_host((void **)&pinned2, N), CUDA_SUCCESS);
    CUdeviceptr a = dalloc(N), b = dalloc(N);
    fill(src, N, 7);

    COPY(0, 0, 1001, api->htod(a, src, 1001));
    COPY(0, 2, 2002, api->dtod(b, a, 2002));
    memset(dst, 0, N);
    COPY(0, 1, 3003, api->dtoh(dst, b, 3003));
    ck_assert_int_eq(memcmp(dst, src, 1001), 0);

    fill(src, N, 11);
    COPY(0, 0, 4004, api->htod_async(a, src, 4004, s));
    COPY(0, 2, 5005, api->dtod_async(b, a, 5005, s));
    synchronize();
    memset(dst, 0, N);
    COPY(0, 1, 6006, api->dtoh_async(dst, b, 6006, s));
    synchronize();
    ck_assert_int_eq(memcmp(dst, src, 4004), 0);

    /* Unified addressing: the sides are classified. */
    fill(src, N, 13);
    COPY(0, 0, 7007, api->memcpy(a, H(src), 7007));
    COPY(0, 2, 8008, api->memcpy(b, a, 8008));
    memset(dst, 0, N);
    COPY(0, 1, 9009, api->memcpy(H(dst), b, 9009));
    ck_assert_int_eq(memcmp(dst, src, 7007), 0);
    COPY(0, -1, 10010, api->memcpy(H(dst), H(src), 10010));
    fill(src, N, 17);
    COPY(0, 0, 11011, api->memcpy_async(a, H(src), 11011, s));
    COPY(0, 2, 12012, api->memcpy_async(b, a, 12012, s));
    synchronize();
    memset(dst, 0, N);
    COPY(0, 1, 13013, api->memcpy_async(H(dst), b, 13013, s));
    COPY(0, -1, 14014, api->memcpy_async(H(dst), H(src), 14014, s));
    synchronize();
    ck_assert_int_eq(memcmp(dst, src, 11011), 0);

    /* Pinned host memory is host memory. */
    fill(pinned, N, 19);
    COPY(0, 0, 15015, api->memcpy(a, H(pinned), 15015));
    COPY(0, 1, 16016, api->memcpy(H(pinned2), a, 16016));
    ck_assert_int_eq(memcmp(pinned2, pinned, 15015), 0);
    COPY(0, -1, 17017, api->memcpy_async(H(pinned2), H(pinned), 17017, s));
    COPY(0, 0, 18018, api->htod(a, pinned, 18018));
    COPY(0, 1, 19019, api->dtoh_async(pinned2, a, 19019, s));
    synchronize();
    /* A copy of nothing counts nothing. */
    COPY(0, 0, 0, api->htod(a, src, 0));

    ck_assert_int_eq(drv.mem_free(a), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(b), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free_host(pinned), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free_host(pinned2), CUDA_SUCCESS);
}

START_TEST(every_copy_by_every_path)
{
    setup();
    struct copy_api api;
    load_copies((enum copy_path)_i, &api);
    /* The per-thread variants' stream 0 is this thread's stream. */
    CUstream s = NULL;
    if (_i % 2 == 0)
        ck_assert_int_eq(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    copy_everything(&api, s);
    if (s)
        ck_assert_int_eq(cuStreamDestroy(s), CUDA_SUCCESS);
}
END_TEST

/* Failed copies answer the driver's error and count nothing. */
START_TEST(failed_copies_are_not_counted)
{
    setup();
    struct copy_api api;
    load_copies((enum copy_path)_i, &api);
    char host[64] = "x";
    CUdeviceptr good = dalloc(4 * KiB), bad = (CUdeviceptr)0xdead0000;
    CUstream bad_stream = (CUstream)(uintptr_t)0x1234;
    /* A first successful copy publishes the segment. */
    COPY(0, 0, 1, api.htod(good, host, 1));
    ck_assert_int_eq(api.htod(bad, host, 16), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(api.dtoh(host, bad, 16), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(api.dtod(bad, good, 16), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(api.dtod(good, bad, 16), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(api.htod_async(bad, host, 16, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(api.dtoh_async(host, bad, 16, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(api.dtod_async(good, bad, 16, NULL), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(api.htod_async(good, host, 16, bad_stream), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(api.memcpy_async(good, H(host), 16, bad_stream), CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(api.dtod_async(good, good, 16, bad_stream), CUDA_ERROR_INVALID_HANDLE);
    check_counts("after failed copies");
    /* No current context: the driver refuses before it looks at anything. */
    ck_assert_int_eq(drv.ctx_set_current(NULL), CUDA_SUCCESS);
    ck_assert_int_eq(api.memcpy(good, H(host), 16), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(api.htod(good, host, 16), CUDA_ERROR_INVALID_CONTEXT);
    ck_assert_int_eq(api.dtoh(host, good, 16), CUDA_ERROR_INVALID_CONTEXT);
    check_counts("after copies without a context");
}
END_TEST

void copies_path_tests(TCase *tc)
{
    tcase_add_loop_test(tc, every_copy_by_every_path, 0, COPY_PATHS);
    tcase_add_loop_test(tc, failed_copies_are_not_counted, 0, COPY_PATHS);
}
