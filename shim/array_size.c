/* CUDA array sizes from their descriptors (array_size.h). */
#include "shim/array_size.h"

size_t spw_array_element_bytes(CUarray_format format, unsigned channels)
{
    switch (format) {
    /* The X formats name their channels ("4 channel unsigned 8-bit
     * normalized integer"): NumChannels does not widen or narrow them. */
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
        return 1;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
        return 2;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
        return 4;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
        return 8;
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return channels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2 * (size_t)channels;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4 * (size_t)channels;
    case CU_AD_FORMAT_UNORM_INT_101010_2:
        return 4;
    default:
        return 0;
    }
}

/* Bits per texel of the formats whose texel is not whole bytes per
 * channel (cuda.h's comments give the sampling), 0 for the others. */
static unsigned packed_bits(CUarray_format format)
{
    switch (format) {
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
        return 4; /* 8 bytes per 4 x 4 block */
    case CU_AD_FORMAT_BC2_UNORM:
    case CU_AD_FORMAT_BC2_UNORM_SRGB:
    case CU_AD_FORMAT_BC3_UNORM:
    case CU_AD_FORMAT_BC3_UNORM_SRGB:
    case CU_AD_FORMAT_BC5_UNORM:
    case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16:
    case CU_AD_FORMAT_BC6H_SF16:
    case CU_AD_FORMAT_BC7_UNORM:
    case CU_AD_FORMAT_BC7_UNORM_SRGB:
        return 8; /* 16 bytes per 4 x 4 block */
    case CU_AD_FORMAT_NV12:
        return 12; /* 4:2:0, 8-bit */
    case CU_AD_FORMAT_P010:
    case CU_AD_FORMAT_P016:
        return 24; /* 4:2:0 in 16-bit words */
    case CU_AD_FORMAT_NV16:
    case CU_AD_FORMAT_YUY2:
        return 16; /* 4:2:2, 8-bit */
    case CU_AD_FORMAT_P210:
    case CU_AD_FORMAT_P216:
    case CU_AD_FORMAT_Y210:
    case CU_AD_FORMAT_Y216:
        return 32; /* 4:2:2 in 16-bit words */
    case CU_AD_FORMAT_AYUV:
    case CU_AD_FORMAT_Y410:
        return 32;
    case CU_AD_FORMAT_Y416:
        return 64;
    case CU_AD_FORMAT_Y444_PLANAR8:
    case CU_AD_FORMAT_YUV444_8bit_SemiPlanar:
        return 24;
    case CU_AD_FORMAT_Y444_PLANAR10:
    case CU_AD_FORMAT_YUV444_16bit_SemiPlanar:
        return 48;
    default:
        return 0;
    }
}

static int block_compressed(CUarray_format f)
{
    return f >= CU_AD_FORMAT_BC1_UNORM && f <= CU_AD_FORMAT_BC7_UNORM_SRGB;
}

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t at_least_1(uint64_t v)
{
    return v ? v : 1;
}

/* One level: w x h x d texels of bits each, blocks of 4 x 4 whole. */
static uint64_t level_bytes(uint64_t w, uint64_t h, uint64_t d, uint64_t bits, int blocks)
{
    if (blocks) {
        w = (w + 3) / 4 * 4;
        h = (h + 3) / 4 * 4;
    }
    uint64_t texels = mul_sat(mul_sat(w, h), d);
    uint64_t b = mul_sat(texels, bits);
    return b == UINT64_MAX ? b : (b + 7) / 8;
}

unsigned spw_mipmap_levels(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    uint64_t big = d->Width;
    if (d->Height > big)
        big = d->Height;
    if (d->Depth > big)
        big = d->Depth;
    unsigned most = 1;
    while (big >>= 1)
        most++;
    return levels < 1 ? 1 : levels > most ? most : levels;
}

uint64_t spw_array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    size_t elem = spw_array_element_bytes(d->Format, d->NumChannels);
    uint64_t bits = elem ? 8 * (uint64_t)elem : packed_bits(d->Format);
    if (!bits)
        bits = 32 * (uint64_t)at_least_1(d->NumChannels);
    int layered = (d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    uint64_t w = at_least_1(d->Width), h = at_least_1(d->Height), z = at_least_1(d->Depth);
    unsigned n = spw_mipmap_levels(d, levels);
    uint64_t total = 0;
    for (unsigned l = 0; l < n; l++) {
        total = add_sat(total, level_bytes(w, h, z, bits, block_compressed(d->Format)));
        w = at_least_1(w / 2);
        h = at_least_1(h / 2);
        if (!layered)
            z = at_least_1(z / 2);
    }
    return total;
}

/* Channels per element as the plain formats take them: "1, 2, or 4". */
static int plain_channels(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    switch (d->Format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return d->NumChannels == 1 || d->NumChannels == 2 || d->NumChannels == 4;
    default:
        return 1; /* the others' rules are not spillway's to guess */
    }
}

bool spw_array_refused(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    bool layered = d->Flags & CUDA_ARRAY3D_LAYERED;
    if (!d->Width || !plain_channels(d))
        return true;
    if (!d->Height && d->Depth && !layered)
        return true; /* neither 1D layered nor any other shape */
    if (d->Flags & CUDA_ARRAY3D_CUBEMAP)
        return d->Width != d->Height || !d->Depth || (layered ? d->Depth % 6 != 0 : d->Depth != 6);
    return false;
}
