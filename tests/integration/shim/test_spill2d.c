/* 2D and 3D copies and 2D sets into a buffer whose pages are being spilled
 * and filled (issue 12 item 4), under spillway against fakecuda: one thread
 * writes rectangles and boxes into the buffer by cuMemcpy2D, cuMemcpy2DAsync,
 * cuMemcpy3D and cuMemsetD2D32, keeping a host mirror; another thread keeps
 * allocating what leaves no room for it, so its pages move while the copies
 * run. Every byte must be what the mirror says. And a copy that reaches a
 * spilled buffer by offsets from a base fills back what it reaches.
 *
 * Run by spill2d.sh: one 256 MiB device, a 64 MiB limit, the unmap hazard
 * check on. */
#include "tests/integration/shim/rig.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT (64 * MiB)
#define PITCH 4096u
#define ROWS 2048u /* the buffer: 8 MiB as 2048 rows of 4096 bytes */
#define BYTES ((size_t)PITCH * ROWS)
#define ROUNDS 160
#define MAX_ROUNDS (20 * ROUNDS)

static CUcontext ctx;

struct churn {
    _Atomic int stop;
    _Atomic unsigned rounds;
    CUresult failed;
};

static void *churn(void *arg)
{
    struct churn *c = arg;
    CUresult r = cuCtxSetCurrent(ctx);
    while (r == CUDA_SUCCESS && !atomic_load(&c->stop)) {
        CUdeviceptr x = 0;
        r = cuMemAlloc(&x, LIMIT - 4 * MiB);
        if (r == CUDA_SUCCESS)
            r = cuMemsetD32(x, 0xdeadbeefu, (LIMIT - 4 * MiB) / 4);
        if (r == CUDA_SUCCESS)
            r = cuMemFree(x);
        if (r == CUDA_SUCCESS)
            atomic_fetch_add(&c->rounds, 1);
    }
    c->failed = r;
    return NULL;
}

static bool moved_both_ways(struct churn *c, uint64_t spills, uint64_t fills)
{
    return atomic_load(&c->rounds) > 10 && rig_pool(0).spill_events > spills + 10 &&
           rig_pool(0).fill_events > fills + 10;
}

/* A source of w x h bytes with pitch sp, whose bytes depend on round. */
static unsigned char *source(unsigned round, size_t sp, size_t h)
{
    unsigned char *src = malloc(sp * h);
    ck_assert_ptr_nonnull(src);
    for (size_t i = 0; i < sp * h; i++)
        src[i] = (unsigned char)(i * 31u + round * 7u + (i >> 12));
    return src;
}

/* The mirror of a 2D write of w x h bytes from src (pitch sp) at (x, y). */
static void mirror_2d(unsigned char *m, const unsigned char *src, size_t sp, size_t x, size_t y,
                      size_t w, size_t h)
{
    for (size_t row = 0; row < h; row++)
        memcpy(m + (y + row) * PITCH + x, src + row * sp, w);
}

static CUDA_MEMCPY2D up_2d(CUdeviceptr d, const unsigned char *src, size_t sp, size_t x, size_t y,
                           size_t w, size_t h)
{
    return (CUDA_MEMCPY2D){.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = sp,
                           .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = d,
                           .dstXInBytes = x, .dstY = y, .dstPitch = PITCH,
                           .WidthInBytes = w, .Height = h};
}

/* Round r's writes: a 2D copy, an async 2D copy, a 3D box and a 2D set,
 * each at a place of its own that moves with r. */
static void one_round(CUdeviceptr d, unsigned char *m, unsigned r, CUstream s)
{
    size_t sp = 3000, w = 2500, h = 300;
    unsigned char *src = source(r, sp, h);
    size_t x = (r * 37u) % 1000u, y = (r * 13u) % 200u;
    CUDA_MEMCPY2D c = up_2d(d, src, sp, x, y, w, h);
    CU_OK(cuMemcpy2D(&c));
    mirror_2d(m, src, sp, x, y, w, h);

    y = 600 + (r * 11u) % 200u;
    c = up_2d(d, src, sp, x, y, w, h);
    CU_OK(cuMemcpy2DAsync(&c, s));
    CU_OK(cuStreamSynchronize(s));
    mirror_2d(m, src, sp, x, y, w, h);

    /* A box of 4 slices of 64 rows, in the buffer seen as slices of 256
     * rows, starting at slice 4. */
    size_t bw = 1024, bh = 64, depth = 4, bx = (r * 53u) % 2048u, by = (r * 5u) % 100u;
    CUDA_MEMCPY3D b = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = sp,
                       .srcHeight = 70, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = d,
                       .dstXInBytes = bx, .dstY = by, .dstZ = 4, .dstPitch = PITCH,
                       .dstHeight = 256, .WidthInBytes = bw, .Height = bh, .Depth = depth};
    CU_OK(cuMemcpy3D(&b));
    for (size_t z = 0; z < depth; z++)
        mirror_2d(m, src + z * sp * 70, sp, bx, (4 + z) * 256 + by, bw, bh);

    uint32_t v = 0x01010101u * (r & 0xff);
    size_t sx = 4 * ((r * 17u) % 300u), sy = 1900 + (r % 40u), sw = 200, sh = 100;
    CU_OK(cuMemsetD2D32(d + sy * PITCH + sx, PITCH, v, sw, sh));
    for (size_t row = 0; row < sh; row++)
        for (size_t i = 0; i < sw; i++)
            memcpy(m + (sy + row) * PITCH + sx + 4 * i, &v, 4);
    free(src);
}

static void expect_mirror(CUdeviceptr d, const unsigned char *m, unsigned r)
{
    unsigned char *got = malloc(BYTES);
    ck_assert_ptr_nonnull(got);
    CU_OK(cuMemcpyDtoH(got, d, BYTES));
    size_t i = 0;
    while (i < BYTES && got[i] == m[i])
        i++;
    ck_assert_msg(i == BYTES, "round %u: byte %zu (row %zu, column %zu) is %#x, expected %#x", r,
                  i, i / PITCH, i % PITCH, i < BYTES ? got[i] : 0, i < BYTES ? m[i] : 0);
    free(got);
}

START_TEST(copies_2d_3d_into_moving_pages)
{
    ctx = rig_setup(0);
    CUdeviceptr d = 0;
    CU_OK(cuMemAlloc(&d, BYTES));
    unsigned char *m = calloc(1, BYTES);
    ck_assert_ptr_nonnull(m);
    CU_OK(cuMemsetD8(d, 0, BYTES));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    uint64_t spills = rig_pool(0).spill_events, fills = rig_pool(0).fill_events;
    struct churn c = {0};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, churn, &c), 0);
    /* At least ROUNDS rounds, and on until the buffer did move both ways
     * while the copies went on: how many moves a round sees depends on how
     * fast the churn and spillway's promotions run (MAX_ROUNDS: never). */
    unsigned r = 0;
    for (; r < ROUNDS || (r < MAX_ROUNDS && !moved_both_ways(&c, spills, fills)); r++) {
        one_round(d, m, r, s);
        if (r % 16 == 15)
            expect_mirror(d, m, r);
    }
    atomic_store(&c.stop, 1);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(c.failed == CUDA_SUCCESS, "the churning thread failed: error %d", (int)c.failed);
    expect_mirror(d, m, r);
    ck_assert_msg(moved_both_ways(&c, spills, fills),
                  "in %u rounds: %u churn rounds, %llu spill and %llu fill events (want > 10 each)",
                  r, atomic_load(&c.rounds),
                  (unsigned long long)(rig_pool(0).spill_events - spills),
                  (unsigned long long)(rig_pool(0).fill_events - fills));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(d));
    free(m);
}
END_TEST

/* A 2D or 3D copy names its rows by a base and offsets (its X, Y
 * and Z in bytes, rows and slices of its pitch): the rows it reaches are
 * what it uses and fills back, not the buffer its base starts. In a large
 * program mapping (JAX's arena on cuMemCreate) each buffer a call names is
 * a span of its own (policy/spans.c): two buffers, [va, va + 16 MiB) and
 * [va + 16 MiB, va + 24 MiB), all spilled; a 2D copy (by its Y) and a 3D
 * copy (by its Z) into the second through the mapping's base must bring
 * that one back. */
enum rows_way { ROWS_2D, ROWS_3D };

static void fills_the_rows_it_names(enum rows_way way)
{
    ctx = rig_setup(0);
    enum { MAP = 32 * MiB, SECOND = 16 * MiB, SECOND_BYTES = 8 * MiB, ROW = 1 * MiB };
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemAddressReserve(&va, MAP, 0, 0, 0));
    CU_OK(cuMemCreate(&h, MAP, &prop, 0));
    CU_OK(cuMemMap(va, MAP, 0, h, 0));
    CUmemAccessDesc a = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                         .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va, MAP, &a, 1));
    CU_OK(cuMemsetD8(va, 1, SECOND));
    CU_OK(cuMemsetD8(va + SECOND, 2, SECOND_BYTES));
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, LIMIT)); /* the whole pool: the mapping spills */
    ck_assert_uint_eq(rig_resident(va, MAP, 0), 0);
    CU_OK(cuMemFree(x));
    CU_OK(cuCtxSynchronize()); /* its pages are free again */
    unsigned char *src = source(1, ROW, SECOND_BYTES / ROW);
    CUDA_MEMCPY2D c = up_2d(va, src, ROW, 0, 0, ROW, SECOND_BYTES / ROW);
    c.dstPitch = ROW;
    switch (way) {
    case ROWS_2D:
        c.dstY = SECOND / ROW;
        CU_OK(cuMemcpy2D(&c));
        break;
    case ROWS_3D: {
        /* slices of 4 rows: the second buffer is slice 4 on */
        CUDA_MEMCPY3D b = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src, .srcPitch = ROW,
                           .srcHeight = 4, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = va,
                           .dstZ = SECOND / ROW / 4, .dstPitch = ROW, .dstHeight = 4,
                           .WidthInBytes = ROW, .Height = 4, .Depth = SECOND_BYTES / ROW / 4};
        CU_OK(cuMemcpy3D(&b));
        break;
    }
    }
    ck_assert_uint_eq(rig_resident(va + SECOND, SECOND_BYTES, 0), SECOND_BYTES);
    unsigned char *got = malloc(SECOND_BYTES);
    ck_assert_ptr_nonnull(got);
    CU_OK(cuMemcpyDtoH(got, va + SECOND, SECOND_BYTES));
    ck_assert(memcmp(got, src, SECOND_BYTES) == 0);
    free(got);
    free(src);
    CU_OK(cuMemUnmap(va, MAP));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, MAP));
}

START_TEST(a_2d_copy_fills_the_rows_it_names) { fills_the_rows_it_names(ROWS_2D); }
END_TEST
START_TEST(a_3d_copy_fills_the_slices_it_names) { fills_the_rows_it_names(ROWS_3D); }
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_spill2d");
    TCase *tc = tcase_create("spill2d");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, copies_2d_3d_into_moving_pages);
    tcase_add_test(tc, a_2d_copy_fills_the_rows_it_names);
    tcase_add_test(tc, a_3d_copy_fills_the_slices_it_names);
    suite_add_tcase(s, tc);
    return s;
}
