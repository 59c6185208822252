/* shim/array_size.c: what an array of each kind is charged, worked out by
 * hand from cuda.h's descriptions of the formats and the mipmap levels. */
#include "tests/unit/check_compat.h"
#include "shim/array_size.h"

static CUDA_ARRAY3D_DESCRIPTOR desc(CUarray_format f, unsigned ch, size_t w, size_t h, size_t d,
                                    unsigned flags)
{
    return (CUDA_ARRAY3D_DESCRIPTOR){.Width = w, .Height = h, .Depth = d, .Format = f,
                                     .NumChannels = ch, .Flags = flags};
}

START_TEST(plain_formats)
{
    CUDA_ARRAY3D_DESCRIPTOR d = desc(CU_AD_FORMAT_FLOAT, 4, 100, 0, 0, 0); /* 1D */
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 100 * 16);
    d = desc(CU_AD_FORMAT_HALF, 2, 30, 20, 10, 0);
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 30 * 20 * 10 * 4);
    d = desc(CU_AD_FORMAT_UNORM_INT8X4, 4, 8, 8, 0, 0);
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 8 * 8 * 4);
    /* X formats: the channels the name says, whatever NumChannels says. */
    d = desc(CU_AD_FORMAT_UNORM_INT8X4, 1, 8, 8, 0, 0);
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 8 * 8 * 4);
    d = desc(CU_AD_FORMAT_SNORM_INT16X4, 1, 8, 8, 0, 0);
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 8 * 8 * 8);
    ck_assert_uint_eq(spw_array_element_bytes(CU_AD_FORMAT_UNORM_INT8X1, 4), 1);
    ck_assert_uint_eq(spw_array_element_bytes(CU_AD_FORMAT_UNORM_INT16X2, 1), 4);
    d = desc(CU_AD_FORMAT_UNORM_INT_101010_2, 4, 8, 8, 0, 0);
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 8 * 8 * 4);
    ck_assert_uint_eq(spw_array_element_bytes(CU_AD_FORMAT_SIGNED_INT16, 4), 8);
    ck_assert_uint_eq(spw_array_element_bytes(CU_AD_FORMAT_BC1_UNORM, 4), 0);
    ck_assert_uint_eq(spw_array_element_bytes(CU_AD_FORMAT_NV12, 3), 0);
}
END_TEST

/* Block-compressed formats in whole 4 x 4 blocks; video formats by their
 * sampling. */
START_TEST(packed_formats)
{
    CUDA_ARRAY3D_DESCRIPTOR d = desc(CU_AD_FORMAT_BC1_UNORM, 4, 64, 64, 0, 0);
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 16 * 16 * 8);
    d = desc(CU_AD_FORMAT_BC7_UNORM, 4, 6, 5, 0, 0); /* 2 x 2 blocks */
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 2 * 2 * 16);
    d = desc(CU_AD_FORMAT_NV12, 3, 1920, 1080, 0, 0);
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 1920 * 1080 * 3 / 2);
    d = desc(CU_AD_FORMAT_P016, 3, 64, 64, 0, 0);
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 64 * 64 * 3);
    d = desc(CU_AD_FORMAT_Y416, 4, 10, 10, 0, 0);
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 10 * 10 * 8);
    d = desc((CUarray_format)0x7777, 2, 10, 10, 0, 0); /* unknown: 4 bytes a channel */
    ck_assert_uint_eq(spw_array_bytes(&d, 1), 10 * 10 * 8);
}
END_TEST

/* Levels halve every side but layers; the count is clamped to
 * [1, 1 + log2 of the largest side]. */
START_TEST(mipmap_levels)
{
    CUDA_ARRAY3D_DESCRIPTOR d = desc(CU_AD_FORMAT_FLOAT, 1, 64, 32, 0, 0);
    ck_assert_uint_eq(spw_mipmap_levels(&d, 0), 1);
    ck_assert_uint_eq(spw_mipmap_levels(&d, 3), 3);
    ck_assert_uint_eq(spw_mipmap_levels(&d, 100), 7);
    uint64_t all = 0;
    for (unsigned l = 0; l < 7; l++) {
        uint64_t w = 64 >> l, h = 32 >> l;
        all += (w ? w : 1) * (h ? h : 1) * 4;
    }
    ck_assert_uint_eq(spw_array_bytes(&d, 100), all);
    d = desc(CU_AD_FORMAT_FLOAT, 1, 8, 8, 8, 0); /* 3D: depth halves too */
    ck_assert_uint_eq(spw_array_bytes(&d, 2), (512 + 64) * 4);
    d = desc(CU_AD_FORMAT_FLOAT, 1, 8, 8, 6, CUDA_ARRAY3D_CUBEMAP); /* six faces at every level */
    ck_assert_uint_eq(spw_array_bytes(&d, 2), (8 * 8 + 4 * 4) * 6 * 4);
    d = desc(CU_AD_FORMAT_FLOAT, 1, 8, 0, 5, CUDA_ARRAY3D_LAYERED); /* 1D layered */
    ck_assert_uint_eq(spw_array_bytes(&d, 2), (8 + 4) * 5 * 4);
}
END_TEST

/* What the driver refuses whatever the device, and shapes that are fine. */
START_TEST(refused_descriptors)
{
    CUDA_ARRAY3D_DESCRIPTOR d = desc(CU_AD_FORMAT_FLOAT, 1, 0, 8, 0, 0);
    ck_assert(spw_array_refused(&d)); /* no width */
    d = desc(CU_AD_FORMAT_FLOAT, 3, 8, 8, 0, 0);
    ck_assert(spw_array_refused(&d)); /* 3 channels of a plain format */
    d = desc(CU_AD_FORMAT_FLOAT, 0, 8, 8, 0, 0);
    ck_assert(spw_array_refused(&d));
    d = desc(CU_AD_FORMAT_FLOAT, 1, 8, 0, 4, 0);
    ck_assert(spw_array_refused(&d)); /* depth, no height, not layered */
    d = desc(CU_AD_FORMAT_FLOAT, 1, 8, 4, 6, CUDA_ARRAY3D_CUBEMAP);
    ck_assert(spw_array_refused(&d)); /* not square */
    d = desc(CU_AD_FORMAT_FLOAT, 1, 8, 8, 5, CUDA_ARRAY3D_CUBEMAP);
    ck_assert(spw_array_refused(&d)); /* five faces */
    d = desc(CU_AD_FORMAT_FLOAT, 1, 8, 8, 12, CUDA_ARRAY3D_CUBEMAP);
    ck_assert(spw_array_refused(&d)); /* twelve, not layered */
    d = desc(CU_AD_FORMAT_FLOAT, 1, 8, 8, 14, CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_LAYERED);
    ck_assert(spw_array_refused(&d));

    d = desc(CU_AD_FORMAT_FLOAT, 4, 8, 0, 0, 0);
    ck_assert(!spw_array_refused(&d)); /* 1D */
    d = desc(CU_AD_FORMAT_FLOAT, 1, 8, 0, 4, CUDA_ARRAY3D_LAYERED);
    ck_assert(!spw_array_refused(&d)); /* 1D layered */
    d = desc(CU_AD_FORMAT_FLOAT, 1, 8, 8, 12, CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_LAYERED);
    ck_assert(!spw_array_refused(&d));
    d = desc(CU_AD_FORMAT_NV12, 3, 64, 64, 0, 0);
    ck_assert(!spw_array_refused(&d)); /* other formats' channels are the driver's to judge */
    d = desc((CUarray_format)0x7777, 3, 8, 8, 0, 0);
    ck_assert(!spw_array_refused(&d));
    d = desc(CU_AD_FORMAT_FLOAT, 1, 8, 8, 0, 0x8000);
    ck_assert(!spw_array_refused(&d)); /* flags spillway does not know: counted */
}
END_TEST

START_TEST(saturates)
{
    CUDA_ARRAY3D_DESCRIPTOR d = desc(CU_AD_FORMAT_FLOAT, 4, (size_t)1 << 40, (size_t)1 << 20, (size_t)1 << 10, 0);
    ck_assert_uint_eq(spw_array_bytes(&d, 1), UINT64_MAX);
    ck_assert_uint_eq(spw_array_bytes(&d, 30), UINT64_MAX);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_array_size");
    TCase *tc = tcase_create("array_size");
    tcase_add_test(tc, plain_formats);
    tcase_add_test(tc, packed_formats);
    tcase_add_test(tc, mipmap_levels);
    tcase_add_test(tc, refused_descriptors);
    tcase_add_test(tc, saturates);
    suite_add_tcase(s, tc);
    return s;
}
