// diffgen's kernels for a real GPU (gen-ptx.sh turns this into
// kernels_ptx.h). Against fakecuda the same kernels are C functions
// (kernels.c); both write what pattern.h predicts.
#include "pattern.h"

extern "C" __global__ void diff_fill(uint8_t *dst, uint64_t n, uint64_t seed)
{
    uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        dst[i] = diff_pat_byte(seed, i);
}

// dst = src ^ key, byte by byte; dst == src (in place) is allowed.
extern "C" __global__ void diff_xor(uint8_t *dst, const uint8_t *src, uint64_t n, uint64_t key)
{
    uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        dst[i] = src[i] ^ (uint8_t)key;
}
