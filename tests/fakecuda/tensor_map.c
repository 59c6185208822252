/* fakecuda: TMA descriptors (CUtensorMap), made on the host by
 * cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col (CUDA 12.0),
 * cuTensorMapEncodeIm2colWide (12.8) and changed by
 * cuTensorMapReplaceAddress (12.0).
 *
 * Each encode checks what cuda.h's comment above its prototype requires
 * and answers CUDA_ERROR_INVALID_VALUE otherwise (NULL arrays and a NULL
 * address too, which it does not mention): tensorMap 64-byte aligned;
 * the data type, interleave, swizzle, L2 promotion, OOB fill and wide mode
 * enums; the rank (1..5, 3..5 when interleaved and for im2col); the
 * address 16-byte aligned (32 for INTERLEAVE_32B and the two ALIGN16B
 * packed types); each dimension 1..2^32 (packed types: the first a
 * multiple of 128, or of 2 for 16U4_ALIGN8B); each stride a multiple of
 * 16 (32 in those cases) below 2^40; boxes of 1..256 whose inner
 * dimension is a multiple of 16 bytes when not interleaved (128 elements
 * for the ALIGN16B types); element strides 1..8; the swizzle's inner
 * dimension bound (32, 64 or 128 bytes); INTERLEAVE_32B only with
 * SWIZZLE_32B; the swizzles each packed type allows; NaN fill for float
 * types only; im2col's corners by rank ([-32768, 32767] for one offset,
 * [-128, 127] for two, [-16, 15] for three), channelsPerPixel 1..256
 * (128 for the ALIGN16B types), pixelsPerColumn 1..1024 (the wide form's
 * W128 mode ignores it), the wide form's swizzles (64B, 128B, 128B atom
 * 32B). Not modelled: that the wide form needs compute capability 10.0
 * (fakecuda's devices are 9.0, and it accepts it), and what the box of
 * the corners must span.
 *
 * The 128 bytes are fakecuda's own (the driver's are undocumented): fields
 * packed into 16 words, every word with its top bit set, so that none is
 * ever an address and the global address (split across two words, shifted)
 * is found by no scan of aligned words: fakecuda stands for a driver whose
 * descriptors hold no pointer a program could see.
 * fakecuda_tensor_map_address decodes it, for fake kernels that read
 * through a descriptor. */
#include <stdint.h>
#include <string.h>

#include "tests/fakecuda/internal.h"

#define MAGIC 0x4D544346ull /* "FCTM" */
#define TOP (1ull << 63)
#define ADDR_LO_BITS 31 /* address bits 4..34 in word 1 */
#define ADDR_HI_SHIFT (4 + ADDR_LO_BITS)

enum kind { TILED = 1, IM2COL = 2, WIDE = 3 };

/* Everything an encode was given, checked. */
struct desc {
    enum kind kind;
    unsigned dtype, rank, interleave, swizzle, l2, oob, mode;
    uint64_t addr;
    uint64_t dim[5], stride[4];
    unsigned box[5], estride[5], cpp, ppc;
    int lower[3], upper[3];
};

static bool packed16(unsigned dtype)
{
    return dtype == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B || dtype == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
}

/* Bits an element takes in memory (the packed types: 16 values in 8 or,
 * with their gaps, 16 bytes). */
static unsigned elem_bits(unsigned dtype)
{
    static const unsigned bits[] = {8, 16, 32, 32, 64, 64, 16, 32, 64, 16, 32, 32, 32, 4, 8, 8};
    return bits[dtype];
}

static bool is_float(unsigned dtype)
{
    return dtype >= CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && dtype <= CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
}

static unsigned swizzle_span(unsigned swizzle)
{
    return swizzle == CU_TENSOR_MAP_SWIZZLE_32B ? 32 : swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64 : 128;
}

/* The rules the three encodes share; inner is the bounding box's inner
 * dimension in elements (boxDim[0], or channelsPerPixel for im2col). */
static bool valid_common(const struct desc *t, uintptr_t map, const cuuint64_t *dim, const cuuint64_t *stride,
                         const cuuint32_t *estride, unsigned inner)
{
    if (!map || map % 64 || t->dtype > CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B ||
        t->interleave > CU_TENSOR_MAP_INTERLEAVE_32B || t->swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B ||
        t->l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B || t->oob > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
        return false;
    if (t->rank < 1 || t->rank > 5 || (t->interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && t->rank < 3))
        return false;
    bool by32 = t->interleave == CU_TENSOR_MAP_INTERLEAVE_32B || packed16(t->dtype);
    if (!t->addr || t->addr % (by32 ? 32 : 16) || !dim || !estride || (t->rank > 1 && !stride))
        return false;
    for (unsigned i = 0; i < t->rank; i++)
        if (!dim[i] || dim[i] > (1ull << 32) || !estride[i] || estride[i] > 8)
            return false;
    if ((packed16(t->dtype) && dim[0] % 128) || (t->dtype == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B && dim[0] % 2))
        return false;
    for (unsigned i = 0; i + 1 < t->rank; i++)
        if (stride[i] % (by32 ? 32 : 16) || stride[i] >= (1ull << 40))
            return false;
    if (t->interleave == CU_TENSOR_MAP_INTERLEAVE_32B && t->swizzle != CU_TENSOR_MAP_SWIZZLE_32B)
        return false;
    if (t->interleave == CU_TENSOR_MAP_INTERLEAVE_NONE && t->swizzle != CU_TENSOR_MAP_SWIZZLE_NONE &&
        (uint64_t)inner * elem_bits(t->dtype) > 8ull * swizzle_span(t->swizzle))
        return false;
    if (t->dtype == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B &&
        (t->interleave != CU_TENSOR_MAP_INTERLEAVE_NONE ||
         (t->swizzle != CU_TENSOR_MAP_SWIZZLE_NONE && t->swizzle != CU_TENSOR_MAP_SWIZZLE_128B &&
          t->swizzle != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B && t->swizzle != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B)))
        return false;
    if (t->dtype == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B && t->swizzle != CU_TENSOR_MAP_SWIZZLE_NONE &&
        t->swizzle != CU_TENSOR_MAP_SWIZZLE_128B && t->swizzle != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B)
        return false;
    if (t->oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !is_float(t->dtype))
        return false;
    return true;
}

/* The im2col forms' pixel rules. */
static bool valid_pixels(const struct desc *t)
{
    if (t->rank < 3 || !t->cpp || t->cpp > 256 || (packed16(t->dtype) && t->cpp != 128))
        return false;
    return t->kind == WIDE && t->mode == CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128 ? true : t->ppc >= 1 && t->ppc <= 1024;
}

static void take_arrays(struct desc *t, const cuuint64_t *dim, const cuuint64_t *stride, const cuuint32_t *estride)
{
    for (unsigned i = 0; i < t->rank; i++) {
        t->dim[i] = dim[i];
        t->estride[i] = estride[i];
        if (i + 1 < t->rank)
            t->stride[i] = stride[i];
    }
}

static void put_address(uint64_t w[16], uint64_t a)
{
    w[1] = (w[1] & ~((1ull << ADDR_LO_BITS) - 1)) | ((a >> 4) & ((1ull << ADDR_LO_BITS) - 1));
    w[2] = (w[2] & ~((1ull << 29) - 1)) | (a >> ADDR_HI_SHIFT);
}

static uint64_t get_address(const uint64_t w[16])
{
    return ((w[1] & ((1ull << ADDR_LO_BITS) - 1)) << 4) | ((w[2] & ((1ull << 29) - 1)) << ADDR_HI_SHIFT);
}

static CUresult encode(CUtensorMap *map, const struct desc *t)
{
    uint64_t w[16] = {0};
    w[0] = MAGIC | (uint64_t)t->kind << 32 | (uint64_t)t->dtype << 34 | (uint64_t)t->rank << 38 |
           (uint64_t)t->interleave << 41 | (uint64_t)t->swizzle << 43 | (uint64_t)t->l2 << 46 |
           (uint64_t)t->oob << 48 | (uint64_t)t->mode << 49;
    for (unsigned i = 0; i < t->rank; i++) {
        w[1] |= (uint64_t)(t->estride[i] - 1) << (ADDR_LO_BITS + 3 * i);
        if (t->kind == TILED)
            w[3] |= (uint64_t)(t->box[i] - 1) << (8 * i);
        w[6 + i] = t->dim[i] - 1;
        if (i + 1 < t->rank)
            w[11 + i] = t->stride[i] >> 4;
    }
    w[2] = (uint64_t)t->cpp << 29 | (uint64_t)t->ppc << 38;
    for (unsigned i = 0; i < 3; i++) {
        w[4] |= (uint64_t)(uint16_t)t->lower[i] << (16 * i);
        w[5] |= (uint64_t)(uint16_t)t->upper[i] << (16 * i);
    }
    put_address(w, t->addr);
    for (unsigned i = 0; i < 16; i++)
        w[i] |= TOP;
    /* Through void *: the API asks 64-byte alignment of tensorMap, while
     * CUDA 13's CUtensorMap type is 128-aligned, so no member access. */
    memcpy((void *)map, w, sizeof w);
    return CUDA_SUCCESS;
}

static CUresult ready(void)
{
    struct CUctx_st *c;
    return fc_current_ctx(&c);
}

#define TM_COMMON(k)                                                                                  \
    .kind = (k), .dtype = (unsigned)tensorDataType, .rank = tensorRank, .addr = (uintptr_t)globalAddress, \
    .interleave = (unsigned)interleave, .swizzle = (unsigned)swizzle, .l2 = (unsigned)l2Promotion,       \
    .oob = (unsigned)oobFill

FC_EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                          cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                                          const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
                                          const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                          CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                          CUtensorMapFloatOOBfill oobFill)
{
    FC_FAULT(cuTensorMapEncodeTiled);
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    struct desc t = {TM_COMMON(TILED)};
    if (!boxDim || !valid_common(&t, (uintptr_t)tensorMap, globalDim, globalStrides, elementStrides,
                                 t.rank >= 1 && t.rank <= 5 ? boxDim[0] : 0))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < t.rank; i++) {
        if (!boxDim[i] || boxDim[i] > 256)
            return CUDA_ERROR_INVALID_VALUE;
        t.box[i] = boxDim[i];
    }
    if ((t.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE && (uint64_t)boxDim[0] * elem_bits(t.dtype) % 128) ||
        (packed16(t.dtype) && boxDim[0] != 128))
        return CUDA_ERROR_INVALID_VALUE;
    take_arrays(&t, globalDim, globalStrides, elementStrides);
    return encode(tensorMap, &t);
}

FC_EXPORT CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                           cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                                           const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner,
                                           const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
                                           cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
                                           CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                           CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    FC_FAULT(cuTensorMapEncodeIm2col);
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    struct desc t = {TM_COMMON(IM2COL), .cpp = channelsPerPixel, .ppc = pixelsPerColumn};
    if (!valid_common(&t, (uintptr_t)tensorMap, globalDim, globalStrides, elementStrides, channelsPerPixel) ||
        !valid_pixels(&t) || !pixelBoxLowerCorner || !pixelBoxUpperCorner)
        return CUDA_ERROR_INVALID_VALUE;
    /* One offset of 16 bits at rank 3, two of 8 at rank 4, three of 5 at 5. */
    unsigned n = t.rank - 2;
    int bound = t.rank == 3 ? 32768 : t.rank == 4 ? 128 : 16;
    for (unsigned i = 0; i < n; i++) {
        if (pixelBoxLowerCorner[i] < -bound || pixelBoxLowerCorner[i] >= bound ||
            pixelBoxUpperCorner[i] < -bound || pixelBoxUpperCorner[i] >= bound)
            return CUDA_ERROR_INVALID_VALUE;
        t.lower[i] = pixelBoxLowerCorner[i];
        t.upper[i] = pixelBoxUpperCorner[i];
    }
    take_arrays(&t, globalDim, globalStrides, elementStrides);
    return encode(tensorMap, &t);
}

FC_EXPORT CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                               cuuint32_t tensorRank, void *globalAddress,
                                               const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                               int pixelBoxLowerCornerWidth, int pixelBoxUpperCornerWidth,
                                               cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                               const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                               CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle,
                                               CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    FC_FAULT(cuTensorMapEncodeIm2colWide);
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    struct desc t = {TM_COMMON(WIDE), .cpp = channelsPerPixel, .ppc = pixelsPerColumn, .mode = (unsigned)mode,
                   .lower = {pixelBoxLowerCornerWidth}, .upper = {pixelBoxUpperCornerWidth}};
    if (t.mode > CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128 ||
        !valid_common(&t, (uintptr_t)tensorMap, globalDim, globalStrides, elementStrides, channelsPerPixel) ||
        !valid_pixels(&t))
        return CUDA_ERROR_INVALID_VALUE;
    /* "other swizzle modes are not supported" */
    if (t.swizzle != CU_TENSOR_MAP_SWIZZLE_128B && t.swizzle != CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B &&
        (t.swizzle != CU_TENSOR_MAP_SWIZZLE_64B || packed16(t.dtype)))
        return CUDA_ERROR_INVALID_VALUE;
    if (t.lower[0] < -32768 || t.lower[0] > 32767 || t.upper[0] < -32768 || t.upper[0] > 32767)
        return CUDA_ERROR_INVALID_VALUE;
    take_arrays(&t, globalDim, globalStrides, elementStrides);
    return encode(tensorMap, &t);
}

/* "must follow previous alignment requirements": the descriptor's own
 * (32 bytes for INTERLEAVE_32B and the ALIGN16B types, else 16). */
FC_EXPORT CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress)
{
    FC_FAULT(cuTensorMapReplaceAddress);
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    uint64_t w[16];
    if (!tensorMap || (uintptr_t)tensorMap % 64 || !globalAddress)
        return CUDA_ERROR_INVALID_VALUE;
    memcpy(w, (const void *)tensorMap, sizeof w);
    if ((w[0] & 0xffffffffull) != MAGIC)
        return CUDA_ERROR_INVALID_VALUE; /* not a descriptor fakecuda made */
    unsigned dtype = (unsigned)(w[0] >> 34) & 0xf, interleave = (unsigned)(w[0] >> 41) & 3;
    bool by32 = interleave == CU_TENSOR_MAP_INTERLEAVE_32B || packed16(dtype);
    if ((uintptr_t)globalAddress % (by32 ? 32 : 16))
        return CUDA_ERROR_INVALID_VALUE;
    put_address(w, (uintptr_t)globalAddress); /* the top bits stay set */
    memcpy((void *)tensorMap, w, sizeof w);
    return CUDA_SUCCESS;
}

FC_EXPORT unsigned long long fakecuda_tensor_map_address(const void *map)
{
    uint64_t w[16];
    if (!map)
        return 0;
    memcpy(w, map, sizeof w);
    return (w[0] & 0xffffffffull) == MAGIC ? get_address(w) : 0;
}
