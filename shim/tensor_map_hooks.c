/* cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col (CUDA 12.0),
 * cuTensorMapEncodeIm2colWide (12.8) and cuTensorMapReplaceAddress (12.0):
 * forwarded, and each descriptor the driver made or changed is recorded
 * with its global address (tensor_maps.h), so that a launch passing it
 * touches that memory and fills it back (param_scan.c).
 *
 * The driver answers first, and tensorMap is read only after its success:
 * a bad pointer or bad arguments get exactly the driver's answer, and
 * nothing is read that the driver did not just write. A failed replace
 * leaves the descriptor as it was, so its record stays. The table is kept
 * apart (tensor_maps.c, no driver call) so that the scan's unit test links
 * it alone. */
#include "shim/handler.h"
#include "shim/tensor_maps.h"

static CUresult recorded(CUresult r, const CUtensorMap *map, void *address)
{
    if (r == CUDA_SUCCESS && map && !spw_disabled())
        spw_tensor_map_record(map, (CUdeviceptr)(uintptr_t)address);
    return r;
}

CUresult spw_h_tensor_map_encode_tiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                       cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                                       const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
                                       const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                       CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                       CUtensorMapFloatOOBfill oobFill)
{
    SPW_REAL_OR_RETURN(real, spw_h_tensor_map_encode_tiled);
    return recorded(real(tensorMap, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides, boxDim,
                         elementStrides, interleave, swizzle, l2Promotion, oobFill),
                    tensorMap, globalAddress);
}

CUresult spw_h_tensor_map_encode_im2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                        cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
                                        const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner,
                                        const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
                                        cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
                                        CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                        CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    SPW_REAL_OR_RETURN(real, spw_h_tensor_map_encode_im2col);
    return recorded(real(tensorMap, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
                         pixelBoxLowerCorner, pixelBoxUpperCorner, channelsPerPixel, pixelsPerColumn,
                         elementStrides, interleave, swizzle, l2Promotion, oobFill),
                    tensorMap, globalAddress);
}

CUresult spw_h_tensor_map_encode_im2col_wide(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                             cuuint32_t tensorRank, void *globalAddress,
                                             const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                             int pixelBoxLowerCornerWidth, int pixelBoxUpperCornerWidth,
                                             cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                             const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
                                             CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle,
                                             CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
    SPW_REAL_OR_RETURN(real, spw_h_tensor_map_encode_im2col_wide);
    return recorded(real(tensorMap, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
                         pixelBoxLowerCornerWidth, pixelBoxUpperCornerWidth, channelsPerPixel, pixelsPerColumn,
                         elementStrides, interleave, mode, swizzle, l2Promotion, oobFill),
                    tensorMap, globalAddress);
}

CUresult spw_h_tensor_map_replace_address(CUtensorMap *tensorMap, void *globalAddress)
{
    SPW_REAL_OR_RETURN(real, spw_h_tensor_map_replace_address);
    return recorded(real(tensorMap, globalAddress), tensorMap, globalAddress);
}
