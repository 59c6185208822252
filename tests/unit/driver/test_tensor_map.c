/* Conformance: TMA descriptors (CUtensorMap), made on the host by
 * cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col, CUDA 12.8's
 * cuTensorMapEncodeIm2colWide and changed by cuTensorMapReplaceAddress.
 * spillway records each one the driver makes (shim/tensor_map_hooks.c);
 * fakecuda validates what cuda.h's comments above these prototypes
 * require. Each refusal asserted here is one of those requirements,
 * answered CUDA_ERROR_INVALID_VALUE; what cuda.h does not state outright
 * is listed in tests/gpu/README.md ("Conformance checks to read first").
 *
 * "Tensor map objects are only supported on devices of compute capability
 * 9.0 or higher" (10.0 for the wide form): below that the driver may
 * refuse everything, so each test skips with a printed line there.
 * fakecuda's devices are 9.0; it accepts the wide form anyway (not
 * modelled), so the wide case runs on fakecuda and on devices of 10.0 or
 * later, and skips on a driver without the entry point. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/driver/common.h"

static int cc_major;

static void setup(void)
{
    driver_setup();
    CUdevice d;
    CU_OK(cuCtxGetDevice(&d));
    CU_OK(cuDeviceGetAttribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d));
}

static int hopper_or_later(const char *test)
{
    if (cc_major >= 9)
        return 1;
    printf("%s: skipped (compute capability %d.x: tensor maps need 9.0)\n", test, cc_major);
    return 0;
}

/* A 2D FLOAT32 tiled map over p (rows of 256 floats, 1 KiB apart). */
struct tiled {
    cuuint32_t rank;
    cuuint64_t dim[6], stride[5];
    cuuint32_t box[6], estride[6];
    CUtensorMapSwizzle swizzle;
};

static struct tiled tiled_2d(void)
{
    return (struct tiled){.rank = 2,
                          .dim = {256, 256, 1, 1, 1, 1},
                          .stride = {1024, 1024 * 256, 1024 * 256, 1024 * 256, 1024 * 256},
                          .box = {32, 32, 1, 1, 1, 1},
                          .estride = {1, 1, 1, 1, 1, 1},
                          .swizzle = CU_TENSOR_MAP_SWIZZLE_NONE};
}

static CUresult encode(CUtensorMap *m, const struct tiled *t, CUdeviceptr p)
{
    return cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, t->rank, (void *)(uintptr_t)p, t->dim,
                                  t->stride, t->box, t->estride, CU_TENSOR_MAP_INTERLEAVE_NONE, t->swizzle,
                                  CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

START_TEST(tiled_map_over_device_memory)
{
    if (!hopper_or_later("tiled_map_over_device_memory"))
        return;
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 256 * 1024));
    CUtensorMap m;
    struct tiled t = tiled_2d();
    CU_OK(encode(&m, &t, p));
    t.swizzle = CU_TENSOR_MAP_SWIZZLE_128B; /* a 128-byte inner box: within the swizzle */
    CU_OK(encode(&m, &t, p));
    CU_OK(cuMemFree(p));
}
END_TEST

START_TEST(documented_refusals)
{
    if (!hopper_or_later("documented_refusals"))
        return;
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 256 * 1024));
    CUtensorMap m;
    struct tiled t = tiled_2d();
    /* globalAddress "must be 16 byte aligned" */
    CU_ERR(encode(&m, &t, p + 8), CUDA_ERROR_INVALID_VALUE);
    /* tensorRank "must be non-zero and less than or equal to ... 5" */
    t.rank = 0;
    CU_ERR(encode(&m, &t, p), CUDA_ERROR_INVALID_VALUE);
    t.rank = 6;
    CU_ERR(encode(&m, &t, p), CUDA_ERROR_INVALID_VALUE);
    /* boxDim "must be non-zero and less than or equal to 256" */
    t = tiled_2d();
    t.box[1] = 257;
    CU_ERR(encode(&m, &t, p), CUDA_ERROR_INVALID_VALUE);
    /* globalStrides "must be a multiple of 16" */
    t = tiled_2d();
    t.stride[0] = 1000;
    CU_ERR(encode(&m, &t, p), CUDA_ERROR_INVALID_VALUE);
    /* elementStrides "must be non-zero and less than or equal to 8" */
    t = tiled_2d();
    t.estride[1] = 9;
    CU_ERR(encode(&m, &t, p), CUDA_ERROR_INVALID_VALUE);
    /* "tensorMap address must be aligned to 64 bytes" */
    static _Alignas(128) unsigned char room[3 * sizeof(CUtensorMap)];
    t = tiled_2d();
    CU_ERR(encode((CUtensorMap *)(void *)(room + 32), &t, p), CUDA_ERROR_INVALID_VALUE);
    CU_OK(encode((CUtensorMap *)(void *)(room + 128), &t, p)); /* the rest was right */
    CU_OK(cuMemFree(p));
}
END_TEST

START_TEST(replace_address)
{
    if (!hopper_or_later("replace_address"))
        return;
    CUdeviceptr p, q;
    CU_OK(cuMemAlloc(&p, 256 * 1024));
    CU_OK(cuMemAlloc(&q, 256 * 1024));
    CUtensorMap m, before;
    struct tiled t = tiled_2d();
    CU_OK(encode(&m, &t, p));
    before = m;
    CU_OK(cuTensorMapReplaceAddress(&m, (void *)(uintptr_t)q));
    ck_assert_msg(memcmp(&m, &before, sizeof m) != 0, "the descriptor is unchanged after a new address");
    /* "must follow previous alignment requirements": 16 bytes here */
    CU_ERR(cuTensorMapReplaceAddress(&m, (void *)(uintptr_t)(q + 8)), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(q));
}
END_TEST

/* NWC: 16 FLOAT16 channels (32 bytes a pixel), 64 pixels, 4 images. */
static CUresult im2col(CUtensorMap *m, cuuint32_t rank, CUdeviceptr p)
{
    const cuuint64_t dim[] = {16, 64, 4, 1, 1}, stride[] = {32, 32 * 64, 32 * 64 * 4, 32 * 64 * 4};
    const int lower[] = {-1, 0, 0}, upper[] = {-1, 0, 0};
    const cuuint32_t estride[] = {1, 1, 1, 1, 1};
    return cuTensorMapEncodeIm2col(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, rank, (void *)(uintptr_t)p, dim, stride,
                                   lower, upper, 16, 64, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

START_TEST(im2col_needs_rank_3)
{
    if (!hopper_or_later("im2col_needs_rank_3"))
        return;
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 64 * 1024));
    CUtensorMap m;
    CU_OK(im2col(&m, 3, p));
    /* tensorRank "must be 3, 4, or 5" */
    CU_ERR(im2col(&m, 2, p), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(p));
}
END_TEST

typedef CUresult (*wide_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                            const cuuint64_t *, int, int, cuuint32_t, cuuint32_t, const cuuint32_t *,
                            CUtensorMapInterleave, CUtensorMapIm2ColWideMode, CUtensorMapSwizzle,
                            CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static CUresult wide(wide_fn f, CUtensorMap *m, cuuint32_t rank, CUtensorMapSwizzle swizzle, CUdeviceptr p)
{
    const cuuint64_t dim[] = {16, 64, 4, 1, 1}, stride[] = {32, 32 * 64, 32 * 64 * 4, 32 * 64 * 4};
    const cuuint32_t estride[] = {1, 1, 1, 1, 1};
    return f(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, rank, (void *)(uintptr_t)p, dim, stride, -1, -1, 16, 64, estride,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, swizzle,
             CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

START_TEST(im2col_wide)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult q;
    if (cuGetProcAddress("cuTensorMapEncodeIm2colWide", &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &q) !=
            CUDA_SUCCESS ||
        !fn) {
        printf("im2col_wide: skipped (no cuTensorMapEncodeIm2colWide)\n");
        return;
    }
    if (cc_major < 10 && !fakecuda_present()) {
        printf("im2col_wide: skipped (compute capability %d.x: the wide form needs 10.0)\n", cc_major);
        return;
    }
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 64 * 1024));
    CUtensorMap m;
    CU_OK(wide((wide_fn)fn, &m, 3, CU_TENSOR_MAP_SWIZZLE_128B, p));
    /* tensorRank "must be 3, 4, or 5" */
    CU_ERR(wide((wide_fn)fn, &m, 2, CU_TENSOR_MAP_SWIZZLE_128B, p), CUDA_ERROR_INVALID_VALUE);
    /* swizzle: 64B, 128B or 128B_ATOM_32B, "other swizzle modes are not supported" */
    CU_ERR(wide((wide_fn)fn, &m, 3, CU_TENSOR_MAP_SWIZZLE_NONE, p), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(p));
}
END_TEST

/* fakecuda only: its descriptors hold their address in no 8-byte word
 * (what spillway's tests of the conservative case rely on), and
 * fakecuda_tensor_map_address decodes it, before and after a replace. */
START_TEST(fakecuda_descriptors_hide_their_address)
{
    if (!fakecuda_present())
        return;
    CUdeviceptr p, q;
    CU_OK(cuMemAlloc(&p, 256 * 1024));
    CU_OK(cuMemAlloc(&q, 256 * 1024));
    CUtensorMap m;
    struct tiled t = tiled_2d();
    CU_OK(encode(&m, &t, p));
    for (unsigned i = 0; i < 16; i++)
        ck_assert_uint_ne(m.opaque[i], p);
    ck_assert_uint_eq(fakecuda_tensor_map_address(&m), p);
    CU_OK(cuTensorMapReplaceAddress(&m, (void *)(uintptr_t)q));
    for (unsigned i = 0; i < 16; i++)
        ck_assert_uint_ne(m.opaque[i], q);
    ck_assert_uint_eq(fakecuda_tensor_map_address(&m), q);
    CU_OK(im2col(&m, 4, p));
    ck_assert_uint_eq(fakecuda_tensor_map_address(&m), p);
    static const unsigned char zero[sizeof(CUtensorMap)];
    ck_assert_uint_eq(fakecuda_tensor_map_address(zero), 0);
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(q));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_tensor_map");
    TCase *tc = tcase_create("tensor_map");
    tcase_add_checked_fixture(tc, setup, driver_teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, tiled_map_over_device_memory);
    tcase_add_test(tc, documented_refusals);
    tcase_add_test(tc, replace_address);
    tcase_add_test(tc, im2col_needs_rank_3);
    tcase_add_test(tc, im2col_wide);
    tcase_add_test(tc, fakecuda_descriptors_hide_their_address);
    suite_add_tcase(s, tc);
    return s;
}
