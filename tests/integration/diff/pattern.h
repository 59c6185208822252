/* The bytes diffgen's fill kernel writes, shared by the kernel (C for
 * fakecuda, CUDA for a GPU: kernels.cu) and the host that predicts them.
 * One 64-bit mix per 8 bytes, so that both sides run at memory speed. */
#ifndef DIFF_PATTERN_H
#define DIFF_PATTERN_H
#include <stdint.h>

#ifdef __CUDACC__
#define DIFF_HD __host__ __device__ static inline
#else
#define DIFF_HD static inline
#endif

DIFF_HD uint64_t diff_pat_word(uint64_t seed, uint64_t w)
{
    uint64_t z = seed + (w + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Byte i of the pattern `seed` (little-endian bytes of word i / 8). */
DIFF_HD uint8_t diff_pat_byte(uint64_t seed, uint64_t i)
{
    return (uint8_t)(diff_pat_word(seed, i >> 3) >> ((i & 7) * 8));
}
#endif
