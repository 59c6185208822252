/* fakecuda: cuMemBatchDecompressAsync (CUDA 12.8), and its _ptsz variant,
 * as on a device without the hardware decompression engine (every device
 * before Blackwell: CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK is 0,
 * which fakecuda answers for every device). Arguments are checked as the
 * driver documents them (a batch, flags 0, a valid stream), then the call
 * answers CUDA_ERROR_NOT_SUPPORTED with *errorIndex SIZE_MAX ("a general
 * error that does not pertain to a particular decompression operation"),
 * and nothing is read or written. The conformance test driver_memory
 * holds the real driver of such a device to the same. */
#include <stdint.h>

#include "tests/fakecuda/internal.h"

static CUresult decompress(CUmemDecompressParams *params, size_t count, unsigned flags,
                           size_t *error_index, CUstream h, bool ptsz)
{
    if (error_index)
        *error_index = SIZE_MAX;
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!params || !count || flags)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_ERROR_NOT_SUPPORTED;
}

#undef cuMemBatchDecompressAsync
FC_EXPORT CUresult cuMemBatchDecompressAsync(CUmemDecompressParams *params, size_t count, unsigned flags,
                                             size_t *error_index, CUstream h)
{
    FC_FAULT(cuMemBatchDecompressAsync);
    return decompress(params, count, flags, error_index, h, false);
}

FC_EXPORT CUresult cuMemBatchDecompressAsync_ptsz(CUmemDecompressParams *params, size_t count, unsigned flags,
                                                  size_t *error_index, CUstream h)
{
    FC_FAULT(cuMemBatchDecompressAsync);
    return decompress(params, count, flags, error_index, h, true);
}
