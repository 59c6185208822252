/* The copy family under spillway (LD_PRELOAD) against fakecuda: every copy
 * function, reached by each path (linked, dlsym, cuGetProcAddress) and as
 * its per-thread variant, adds exactly its bytes to the stats segment's
 * copy_htod_bytes / copy_dtoh_bytes / copy_dtod_bytes of the right device;
 * failed copies count nothing and answer the driver's error; cuMemcpy's
 * sides are told apart for pool, program-VMM, pinned, managed and pageable
 * memory; 2D, 3D, peer and batch copies count their bytes by their memory
 * types, array copies as device memory; cudaMemcpy (the shared runtime) is counted once; 16 threads.
 * Run by copies.sh, which sets the environment (two devices, the stats
 * directory) and runs it again for a device without a pool
 * (SPW_COPIES_ONLY=paths) and a runtime that bypasses spillway
 * (SPW_COPIES_ONLY=runtime). */
#include "tests/unit/check_compat.h"

#include "stats/reader.h"
#include "tests/integration/shim/driver_api.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The per-thread variants, which cuda.h declares only when it is told to
 * use them for every call. */
__typeof__(cuMemcpy) cuMemcpy_ptds;
__typeof__(cuMemcpyAsync) cuMemcpyAsync_ptsz;
__typeof__(cuMemcpyHtoD_v2) cuMemcpyHtoD_v2_ptds;
__typeof__(cuMemcpyDtoH_v2) cuMemcpyDtoH_v2_ptds;
__typeof__(cuMemcpyDtoD_v2) cuMemcpyDtoD_v2_ptds;
__typeof__(cuMemcpyHtoDAsync_v2) cuMemcpyHtoDAsync_v2_ptsz;
__typeof__(cuMemcpyDtoHAsync_v2) cuMemcpyDtoHAsync_v2_ptsz;
__typeof__(cuMemcpyDtoDAsync_v2) cuMemcpyDtoDAsync_v2_ptsz;

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

#define KiB 1024u
#define MiB (1024u * 1024u)

static struct spw_driver_api drv;

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

/* ---- the stats segment of this process ---- */

struct bytes {
    uint64_t htod, dtoh, dtod;
};
static struct bytes expected[2];

static struct bytes segment(int dev)
{
    const char *dir = getenv("SPILLWAY_STATS_DIR");
    ck_assert_msg(dir != NULL, "run me through copies.sh");
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(fd, 0);
    char name[64], why[256];
    snprintf(name, sizeof name, SPW_STATS_NAME_PREFIX "%u.%d", (unsigned)geteuid(), (int)getpid());
    static struct spw_stats_snapshot s;
    int removed = 0;
    enum spw_read_result r = spw_stats_read_at(fd, name, 0, &s, &removed, why, sizeof why);
    close(fd);
    ck_assert_msg(r == SPW_READ_OK, "segment %s: %d %s", name, r, why);
    ck_assert_uint_gt(s.device_count, (unsigned)dev);
    return (struct bytes){s.c[dev][SPW_C_COPY_HTOD], s.c[dev][SPW_C_COPY_DTOH],
                          s.c[dev][SPW_C_COPY_DTOD]};
}

/* The segment equals what this process copied, on every device. */
static void check_counts(const char *what)
{
    for (int d = 0; d < 2; d++) {
        struct bytes b = segment(d);
        ck_assert_msg(b.htod == expected[d].htod && b.dtoh == expected[d].dtoh &&
                          b.dtod == expected[d].dtod,
                      "%s: device %d has htod %llu dtoh %llu dtod %llu, expected %llu %llu %llu",
                      what, d, (unsigned long long)b.htod, (unsigned long long)b.dtoh,
                      (unsigned long long)b.dtod, (unsigned long long)expected[d].htod,
                      (unsigned long long)expected[d].dtoh, (unsigned long long)expected[d].dtod);
    }
}

/* Each test runs in its own process (fork): its own segment. */
static void setup(void)
{
    const char *failed = spw_driver_api_load(SPW_PATH_LINKED, &drv);
    ck_assert_msg(failed == NULL, "cannot resolve %s", failed);
    ck_assert_msg(dlsym(RTLD_DEFAULT, "spillway_get_counters") != NULL,
                  "not running under spillway (LD_PRELOAD)");
    ck_assert_int_eq(spw_driver_api_use_device(&drv, 0), CUDA_SUCCESS);
    memset(expected, 0, sizeof expected);
}

static CUdeviceptr dalloc(size_t n)
{
    CUdeviceptr p = 0;
    ck_assert_int_eq(drv.mem_alloc(&p, n), CUDA_SUCCESS);
    return p;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 31 + seed);
}

#define H(p) ((CUdeviceptr)(uintptr_t)(p))

/* One copy by fn(args), expected to count n bytes in direction dir of
 * device dev (dir: 0 htod, 1 dtoh, 2 dtod, -1 nothing). */
#define COPY(dev, dir, n, call)                                                      \
    do {                                                                             \
        ck_assert_msg((int)(call) == 0, "%s", #call); /* CUDA_SUCCESS, cudaSuccess */ \
        uint64_t *e_ = (dir) == 0 ? &expected[dev].htod                              \
                       : (dir) == 1 ? &expected[dev].dtoh                            \
                       : (dir) == 2 ? &expected[dev].dtod : NULL;                    \
        if (e_)                                                                      \
            *e_ += (n);                                                              \
        check_counts(#call);                                                         \
    } while (0)

static void synchronize(void)
{
    ck_assert_int_eq(cuCtxSynchronize(), CUDA_SUCCESS);
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

/* Program-managed VMM on pool pages (as JAX), and managed memory (passes
 * the pool by: the driver is asked) are device memory for cuMemcpy. */
START_TEST(unified_sides)
{
    setup();
    enum { N = 32 * KiB };
    static unsigned char src[N], dst[N];
    fill(src, N, 23);
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    size_t gran = 0;
    ck_assert_int_eq(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                     CUDA_SUCCESS);
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemCreate(&h, gran, &prop, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemMap(va + gran, gran, 0, h, 0), CUDA_SUCCESS);
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    ck_assert_int_eq(cuMemSetAccess(va + gran, gran, &acc, 1), CUDA_SUCCESS);
    COPY(0, 0, 1111, cuMemcpy(va + gran + 64, H(src), 1111));
    COPY(0, 1, 2222, cuMemcpy(H(dst), va + gran + 64, 2222));
    ck_assert_int_eq(memcmp(dst, src, 1111), 0);

    CUdeviceptr m;
    ck_assert_int_eq(drv.mem_alloc_managed(&m, N, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    COPY(0, 0, 3333, cuMemcpy(m, H(src), 3333));
    COPY(0, 2, 4444, cuMemcpy(va + gran, m, 4444));
    COPY(0, 1, 5555, cuMemcpyAsync(H(dst), m, 5555, NULL));
    synchronize();
    ck_assert_int_eq(memcmp(dst, src, 3333), 0);
    /* With device memory outside the pool live, host memory is still host. */
    COPY(0, -1, 6666, cuMemcpy(H(dst), H(src), 6666));
    ck_assert_int_eq(drv.mem_free(m), CUDA_SUCCESS);

    ck_assert_int_eq(cuMemUnmap(va + gran, gran), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemRelease(h), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemAddressFree(va, 4 * gran), CUDA_SUCCESS);
}
END_TEST

static void use(int dev)
{
    CUcontext ctx;
    ck_assert_int_eq(drv.primary_ctx_retain(&ctx, dev), CUDA_SUCCESS);
    ck_assert_int_eq(drv.ctx_set_current(ctx), CUDA_SUCCESS);
}

/* A copy is charged to the device its device memory lives on, whatever
 * context is current. */
START_TEST(charged_to_the_owning_device)
{
    setup();
    int n = 0;
    ck_assert_int_eq(drv.device_get_count(&n), CUDA_SUCCESS);
    ck_assert_msg(n == 2, "copies.sh runs this with two devices");
    static unsigned char src[8 * KiB], dst[8 * KiB];
    fill(src, sizeof src, 29);
    use(1);
    CUdeviceptr d1 = dalloc(64 * KiB), m1;
    ck_assert_int_eq(drv.mem_alloc_managed(&m1, 64 * KiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    use(0);
    CUdeviceptr d0 = dalloc(64 * KiB);
    COPY(1, 0, 101, cuMemcpyHtoD(d1, src, 101));
    COPY(1, 1, 202, cuMemcpyDtoHAsync(dst, d1, 202, NULL));
    COPY(1, 0, 303, cuMemcpy(d1, H(src), 303));
    COPY(1, 1, 404, cuMemcpy(H(dst), d1, 404));
    COPY(0, 0, 505, cuMemcpy(d0, H(src), 505));
    /* Device to device: the destination's device. */
    COPY(0, 2, 606, cuMemcpyDtoD(d0, d1, 606));
    COPY(1, 2, 707, cuMemcpy(d1, d0, 707));
    /* Managed memory of device 1: the driver says which device. */
    COPY(1, 0, 808, cuMemcpy(m1, H(src), 808));
    COPY(1, 1, 909, cuMemcpy(H(dst), m1, 909));
    synchronize();
    ck_assert_int_eq(drv.mem_free(d0), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d1), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(m1), CUDA_SUCCESS);
}
END_TEST

/* The same once the pool's arena has grown a second VA reservation
 * (64 MiB limit: the first is 256 MiB; spill holds the rest): a block of
 * the first is still the pool's, of its device. */
START_TEST(charged_to_the_owning_device_after_the_arena_grows)
{
    setup();
    static unsigned char src[4 * KiB];
    fill(src, sizeof src, 31);
    use(1);
    CUdeviceptr first = dalloc(64 * KiB), big[5];
    for (int i = 0; i < 5; i++)
        big[i] = dalloc(60 * MiB);
    use(0);
    COPY(1, 0, 111, cuMemcpyHtoD(first, src, 111));
    COPY(1, 0, 222, cuMemcpy(first, H(src), 222));
    COPY(1, 0, 333, cuMemcpyHtoD(big[4], src, 333));
    synchronize();
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(drv.mem_free(big[i]), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(first), CUDA_SUCCESS);
}
END_TEST

static CUDA_MEMCPY2D copy2d(CUmemorytype dt, CUdeviceptr d, CUmemorytype st, CUdeviceptr s, size_t width,
                           size_t height)
{
    CUDA_MEMCPY2D c = {.srcMemoryType = st, .dstMemoryType = dt, .WidthInBytes = width, .Height = height,
                       .srcPitch = 4 * KiB, .dstPitch = 4 * KiB};
    if (st == CU_MEMORYTYPE_HOST)
        c.srcHost = (const void *)(uintptr_t)s;
    else
        c.srcDevice = s;
    if (dt == CU_MEMORYTYPE_HOST)
        c.dstHost = (void *)(uintptr_t)d;
    else
        c.dstDevice = d;
    return c;
}

static CUDA_MEMCPY3D copy3d(const CUDA_MEMCPY2D *c, size_t depth)
{
    return (CUDA_MEMCPY3D){.srcMemoryType = c->srcMemoryType, .srcHost = c->srcHost, .srcDevice = c->srcDevice,
                           .srcPitch = c->srcPitch, .srcHeight = c->Height, .dstMemoryType = c->dstMemoryType,
                           .dstHost = c->dstHost, .dstDevice = c->dstDevice, .dstPitch = c->dstPitch,
                           .dstHeight = c->Height, .WidthInBytes = c->WidthInBytes, .Height = c->Height,
                           .Depth = depth};
}

/* 2D and 3D copies count width x height x depth bytes, in the direction
 * their memory types say (unified: as cuMemcpy's sides), on the device of
 * their device memory; peer copies as device to device on the
 * destination's device; a batch each of its copies. */
START_TEST(strided_peer_and_batch_copies)
{
    setup();
    static unsigned char host[64 * KiB], back[64 * KiB];
    fill(host, sizeof host, 41);
    use(1);
    CUcontext ctx1;
    ck_assert_int_eq(cuCtxGetCurrent(&ctx1), CUDA_SUCCESS);
    CUdeviceptr d1 = dalloc(64 * KiB);
    use(0);
    CUcontext ctx0;
    ck_assert_int_eq(cuCtxGetCurrent(&ctx0), CUDA_SUCCESS);
    CUdeviceptr d0 = dalloc(64 * KiB), e0 = dalloc(64 * KiB);
    const CUmemorytype H_ = CU_MEMORYTYPE_HOST, D_ = CU_MEMORYTYPE_DEVICE, U_ = CU_MEMORYTYPE_UNIFIED;
    CUDA_MEMCPY2D c = copy2d(D_, d0, H_, H(host), 100, 7);
    COPY(0, 0, 700, cuMemcpy2D(&c));
    c = copy2d(H_, H(back), D_, d0, 100, 7);
    COPY(0, 1, 700, cuMemcpy2DUnaligned(&c));
    ck_assert_int_eq(memcmp(back, host, 100), 0);
    c = copy2d(D_, e0, D_, d0, 64, 5);
    COPY(0, 2, 320, cuMemcpy2DAsync(&c, NULL));
    c = copy2d(U_, d1, U_, H(host), 30, 11); /* unified: the pool says device 1 */
    COPY(1, 0, 330, cuMemcpy2D(&c));
    c = copy2d(U_, H(back), U_, H(host), 30, 11); /* host to host: nothing */
    COPY(0, -1, 330, cuMemcpy2D(&c));
    c = copy2d(D_, d1, H_, H(host), 50, 4);
    CUDA_MEMCPY3D c3 = copy3d(&c, 3);
    COPY(1, 0, 600, cuMemcpy3D(&c3));
    c = copy2d(H_, H(back), D_, d1, 50, 4);
    c3 = copy3d(&c, 2);
    COPY(1, 1, 400, cuMemcpy3DAsync(&c3, NULL));
    CUDA_MEMCPY3D_PEER p3 = {.srcMemoryType = D_, .srcDevice = d0, .srcContext = ctx0, .srcPitch = 4 * KiB,
                             .srcHeight = 2, .dstMemoryType = D_, .dstDevice = d1, .dstContext = ctx1,
                             .dstPitch = 4 * KiB, .dstHeight = 2, .WidthInBytes = 70, .Height = 2, .Depth = 2};
    COPY(1, 2, 280, cuMemcpy3DPeer(&p3));
    COPY(1, 2, 280, cuMemcpy3DPeerAsync(&p3, NULL));
    COPY(1, 2, 555, cuMemcpyPeer(d1, ctx1, d0, ctx0, 555));
    COPY(0, 2, 666, cuMemcpyPeerAsync(d0, ctx0, d1, ctx1, 666, NULL));
    CUdeviceptr dsts[] = {d0, H(back), e0}, srcs[] = {H(host), d0, d0};
    size_t sizes[] = {1000, 2000, 3000}, idx = 0;
    CUmemcpyAttributes at = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
    CUstream st;
    ck_assert_int_eq(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, &at, &idx, 1, st), CUDA_SUCCESS);
    expected[0].htod += 1000;
    expected[0].dtoh += 2000;
    expected[0].dtod += 3000;
    check_counts("cuMemcpyBatchAsync");
    /* CUDA 12.8's ABI, as a 12.8 runtime finds it: counted the same. */
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    ck_assert_int_eq(cuGetProcAddress("cuMemcpyBatchAsync", &fn, 12080, 0, &q), CUDA_SUCCESS);
    size_t fail = 0;
    ck_assert_int_eq(((CUresult (*)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
                                    size_t *, size_t, size_t *, CUstream))fn)(dsts, srcs, sizes, 3, &at, &idx, 1,
                                                                              &fail, st),
                     CUDA_SUCCESS);
    expected[0].htod += 1000;
    expected[0].dtoh += 2000;
    expected[0].dtod += 3000;
    check_counts("cuMemcpyBatchAsync, CUDA 12.8's ABI");
    /* CUDA 13.2's single copy with attributes, as a 13.2 runtime finds it:
     * the batch of one it stands for. */
    ck_assert_int_eq(cuGetProcAddress("cuMemcpyWithAttributesAsync", &fn, 13020, 0, &q), CUDA_SUCCESS);
    ck_assert_int_eq(((CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUmemcpyAttributes *, CUstream))fn)(
                         e0, d0, 3000, &at, st),
                     CUDA_SUCCESS);
    expected[0].dtod += 3000;
    check_counts("cuMemcpyWithAttributesAsync");
    ck_assert_int_eq(cuStreamSynchronize(st), CUDA_SUCCESS);
    ck_assert_int_eq(cuStreamDestroy(st), CUDA_SUCCESS);
    /* What the driver refuses counts nothing. */
    c = copy2d(D_, d0, H_, H(host), 8 * KiB, 2); /* wider than the pitch */
    ck_assert_int_ne(cuMemcpy2D(&c), CUDA_SUCCESS);
    ck_assert_int_ne(cuMemcpy2D(NULL), CUDA_SUCCESS);
    check_counts("refused 2D copies");
    synchronize();
    ck_assert_int_eq(drv.mem_free(d0), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(e0), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d1), CUDA_SUCCESS);
}
END_TEST

/* Copies to and from a CUDA array count as the device memory it is:
 * charged to the device of the pointer on the other side, else the current
 * context's; the data goes through. */
START_TEST(array_copies_counted)
{
    setup();
    enum { BYTES = 16 * KiB };
    static unsigned char src[BYTES], dst[BYTES];
    fill(src, BYTES, 53);
    CUDA_ARRAY_DESCRIPTOR d = {.Width = BYTES / 4, .Format = CU_AD_FORMAT_UNSIGNED_INT32, .NumChannels = 1};
    CUarray a, b;
    ck_assert_int_eq(cuArrayCreate(&a, &d), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayCreate(&b, &d), CUDA_SUCCESS);
    use(1);
    CUdeviceptr d1 = dalloc(BYTES);
    use(0);
    CUdeviceptr d0 = dalloc(BYTES);
    COPY(0, 0, 1001, cuMemcpyHtoA(a, 0, src, 1001));
    COPY(0, 2, 1002, cuMemcpyAtoD(d0, a, 0, 1002));
    COPY(1, 2, 1003, cuMemcpyAtoD(d1, a, 0, 1003)); /* device 1's memory, device 0 current */
    COPY(1, 2, 1004, cuMemcpyDtoA(b, 8, d1, 1004));
    COPY(0, 2, 1005, cuMemcpyAtoA(a, 2000, b, 8, 1005));
    COPY(0, 1, 1006, cuMemcpyAtoH(dst, a, 2000, 1006));
    ck_assert_int_eq(memcmp(dst, src, 1001), 0);
    CUstream st;
    ck_assert_int_eq(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    COPY(0, 0, 1007, cuMemcpyHtoAAsync(b, 0, src, 1007, st));
    COPY(0, 1, 1008, cuMemcpyAtoHAsync(dst, b, 0, 1008, st));
    ck_assert_int_eq(cuStreamSynchronize(st), CUDA_SUCCESS);
    ck_assert_int_eq(memcmp(dst, src, 1007), 0);
    ck_assert_int_eq(cuStreamDestroy(st), CUDA_SUCCESS);
    /* Past the array's end: refused, nothing counted. */
    ck_assert_int_ne(cuMemcpyDtoA(b, BYTES - 4, d0, 8), CUDA_SUCCESS);
    ck_assert_int_ne(cuMemcpyAtoH(dst, a, BYTES, 1), CUDA_SUCCESS);
    check_counts("refused array copies");
    synchronize();
    ck_assert_int_eq(cuArrayDestroy(a), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayDestroy(b), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d0), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d1), CUDA_SUCCESS);
}
END_TEST

/* A 3D batch counts each copy's extent in elements: bytes between two
 * pointers, the array's elements where an array takes part; pointers are
 * classified as cuMemcpy's sides, an array is device memory (of the
 * pointer's device, else the current context's). */
START_TEST(batch3d_copies_counted)
{
    setup();
    static unsigned char host[16 * KiB], back[16 * KiB];
    fill(host, sizeof host, 61);
    use(1);
    CUdeviceptr d1 = dalloc(16 * KiB);
    use(0);
    CUdeviceptr d0 = dalloc(16 * KiB);
    CUDA_ARRAY_DESCRIPTOR fd = {.Width = 64, .Height = 4, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUDA_ARRAY_DESCRIPTOR hd = {.Width = 32, .Height = 2, .Format = CU_AD_FORMAT_HALF, .NumChannels = 2};
    CUarray fa, ha;
    ck_assert_int_eq(cuArrayCreate(&fa, &fd), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayCreate(&ha, &hd), CUDA_SUCCESS);
    CUstream st;
    ck_assert_int_eq(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUDA_MEMCPY3D_BATCH_OP op[3];
    memset(op, 0, sizeof op);
    for (int i = 0; i < 3; i++)
        op[i].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    /* host to device 1's pool memory: 40 x 3 x 2 bytes */
    op[0].src.type = op[0].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op[0].src.op.ptr.ptr = H(host);
    op[0].dst.op.ptr.ptr = d1;
    op[0].extent = (CUextent3D){40, 3, 2};
    /* device 0's memory into the float array: 10 x 2 elements of 4 bytes */
    op[1].src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op[1].src.op.ptr.ptr = d0;
    op[1].dst.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
    op[1].dst.op.array.array = fa;
    op[1].dst.op.array.offset = (CUoffset3D){3, 1, 0};
    op[1].extent = (CUextent3D){10, 2, 1};
    COPY(1, 0, 240, cuMemcpy3DBatchAsync(1, &op[0], 0, st));
    COPY(0, 2, 80, cuMemcpy3DBatchAsync(1, &op[1], 0, st));
    void *v1 = NULL; /* CUDA 12.8's ABI, per-thread, as such a runtime finds it */
    CUdriverProcAddressQueryResult q;
    ck_assert_int_eq(cuGetProcAddress("cuMemcpy3DBatchAsync", &v1, 12080,
                                      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q),
                     CUDA_SUCCESS);
    size_t fail = 0;
    COPY(0, 2, 80, ((CUresult (*)(size_t, CUDA_MEMCPY3D_BATCH_OP *, size_t *, unsigned long long,
                                  CUstream))v1)(1, &op[1], &fail, 0, st));
    void *one = NULL; /* CUDA 13.2's single 3D copy, per-thread, the same */
    ck_assert_int_eq(cuGetProcAddress("cuMemcpy3DWithAttributesAsync", &one, 13020,
                                      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q),
                     CUDA_SUCCESS);
    COPY(0, 2, 80, ((CUresult (*)(CUDA_MEMCPY3D_BATCH_OP *, unsigned long long, CUstream))one)(&op[1], 0, st));
    /* two half2 elements of 4 bytes x 2 rows out to the host, in one
     * batch with a copy to device 1 */
    op[2].src.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
    op[2].src.op.array.array = ha;
    op[2].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op[2].dst.op.ptr.ptr = H(back);
    op[2].extent = (CUextent3D){2, 2, 1};
    CUDA_MEMCPY3D_BATCH_OP two[2] = {op[2], op[0]};
    ck_assert_int_eq(cuMemcpy3DBatchAsync(2, two, 0, st), CUDA_SUCCESS);
    expected[0].dtoh += 16;
    expected[1].htod += 240;
    check_counts("a 3D batch of two");
    ck_assert_int_eq(cuStreamSynchronize(st), CUDA_SUCCESS);
    op[0].src.op.ptr.ptr = d1; /* and back: the data went through */
    op[0].dst.op.ptr.ptr = H(back);
    COPY(1, 1, 240, cuMemcpy3DBatchAsync(1, &op[0], 0, st));
    ck_assert_int_eq(cuStreamSynchronize(st), CUDA_SUCCESS);
    ck_assert_int_eq(memcmp(back, host, 240), 0);
    /* Past the array's end: refused, nothing counted. */
    op[1].extent.width = 62;
    ck_assert_int_ne(cuMemcpy3DBatchAsync(1, &op[1], 0, st), CUDA_SUCCESS);
    check_counts("a refused 3D batch");
    ck_assert_int_eq(cuStreamDestroy(st), CUDA_SUCCESS);
    synchronize();
    ck_assert_int_eq(cuArrayDestroy(fa), CUDA_SUCCESS);
    ck_assert_int_eq(cuArrayDestroy(ha), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d0), CUDA_SUCCESS);
    ck_assert_int_eq(drv.mem_free(d1), CUDA_SUCCESS);
}
END_TEST

/* cudaMemcpy reaches the driver through cuGetProcAddress, i.e. a copy
 * handler: counted there, not again by the wrapper. With
 * FAKECUDART_BYPASS=1 no handler sees it and the wrapper counts it. */
START_TEST(runtime_counted_once)
{
    setup();
    static char src[4 * KiB] = "spillway", dst[4 * KiB];
    void *a = NULL, *b = NULL;
    ck_assert_int_eq(cudaMalloc(&a, 16 * KiB), cudaSuccess);
    ck_assert_int_eq(cudaMalloc(&b, 16 * KiB), cudaSuccess);
    COPY(0, 0, 1000, cudaMemcpy(a, src, 1000, cudaMemcpyHostToDevice));
    COPY(0, 2, 2000, cudaMemcpy(b, a, 2000, cudaMemcpyDeviceToDevice));
    COPY(0, 1, 3000, cudaMemcpy(dst, b, 3000, cudaMemcpyDeviceToHost));
    ck_assert_str_eq(dst, "spillway");
    COPY(0, 0, 1500, cudaMemcpy(a, src, 1500, cudaMemcpyDefault));
    COPY(0, 1, 2500, cudaMemcpy(dst, a, 2500, cudaMemcpyDefault));
    COPY(0, -1, 3500, cudaMemcpy(dst, src, 3500, cudaMemcpyDefault));
    COPY(0, -1, 3600, cudaMemcpy(dst, src, 3600, cudaMemcpyHostToHost));
    ck_assert_int_eq(cudaFree(a), cudaSuccess);
    ck_assert_int_eq(cudaFree(b), cudaSuccess);
}
END_TEST

/* ---- threads ---- */

#define THREADS 16
#define OPS 300

struct worker {
    CUcontext ctx;
    unsigned seed;
    struct bytes done;
    int error;
};

static void *worker_run(void *arg)
{
    struct worker *w = arg;
    static _Thread_local unsigned char host[16 * KiB];
    CUdeviceptr a, b;
    if (drv.ctx_set_current(w->ctx) != CUDA_SUCCESS || drv.mem_alloc(&a, sizeof host) ||
        drv.mem_alloc(&b, sizeof host)) {
        w->error = -1;
        return NULL;
    }
    for (int op = 0; op < OPS && !w->error; op++) {
        size_t n = (size_t)(rand_r(&w->seed) % sizeof host) + 1;
        CUresult r;
        switch (rand_r(&w->seed) % 6) {
        case 0: r = cuMemcpyHtoD(a, host, n); w->done.htod += n; break;
        case 1: r = cuMemcpyDtoH(host, a, n); w->done.dtoh += n; break;
        case 2: r = cuMemcpyDtoDAsync(b, a, n, NULL); w->done.dtod += n; break;
        case 3: r = cuMemcpy(a, H(host), n); w->done.htod += n; break;
        case 4: r = cuMemcpyAsync(H(host), b, n, NULL); w->done.dtoh += n; break;
        default: r = cuMemcpyDtoD_v2_ptds(b, a, n); w->done.dtod += n; break;
        }
        if (r != CUDA_SUCCESS)
            w->error = r;
    }
    if (cuCtxSynchronize() != CUDA_SUCCESS || drv.mem_free(a) || drv.mem_free(b))
        w->error = -2;
    return NULL;
}

START_TEST(threads_count_exactly)
{
    setup();
    CUcontext ctx;
    ck_assert_int_eq(drv.primary_ctx_retain(&ctx, 0), CUDA_SUCCESS);
    static struct worker w[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){.ctx = ctx, .seed = 4321u + (unsigned)i * 7919u};
        ck_assert_int_eq(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(w[i].error == 0, "thread %d: error %d", i, w[i].error);
        expected[0].htod += w[i].done.htod;
        expected[0].dtoh += w[i].done.dtoh;
        expected[0].dtod += w[i].done.dtod;
    }
    check_counts("after the threads");
}
END_TEST

Suite *test_suite(void)
{
    /* SPW_COPIES_ONLY=paths|runtime: copies.sh's other runs. */
    const char *only = getenv("SPW_COPIES_ONLY");
    int all = !only || !*only;
    Suite *s = suite_create("shim_copies");
    TCase *paths = tcase_create("paths");
    tcase_set_timeout(paths, 30);
    tcase_add_loop_test(paths, every_copy_by_every_path, 0, COPY_PATHS);
    tcase_add_loop_test(paths, failed_copies_are_not_counted, 0, COPY_PATHS);
    if (all || strcmp(only, "paths") == 0)
        suite_add_tcase(s, paths);
    TCase *sides = tcase_create("sides");
    tcase_set_timeout(sides, 60); /* the arena case spills 236 MiB: slow under TSan */
    tcase_add_test(sides, unified_sides);
    tcase_add_test(sides, charged_to_the_owning_device);
    tcase_add_test(sides, charged_to_the_owning_device_after_the_arena_grows);
    tcase_add_test(sides, strided_peer_and_batch_copies);
    tcase_add_test(sides, array_copies_counted);
    tcase_add_test(sides, batch3d_copies_counted);
    TCase *runtime = tcase_create("runtime");
    tcase_add_test(runtime, runtime_counted_once);
    TCase *threads = tcase_create("threads");
    tcase_set_timeout(threads, 60);
    tcase_add_test(threads, threads_count_exactly);
    if (all) {
        suite_add_tcase(s, sides);
        suite_add_tcase(s, threads);
    }
    if (all || strcmp(only, "runtime") == 0)
        suite_add_tcase(s, runtime);
    return s;
}
