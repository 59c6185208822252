/* How many bytes a CUDA array holds, from its descriptor alone: what the
 * 3D batch copies count per element (copy2d.c) and what an array is
 * charged against the limit (alloc_array.c). Pure arithmetic, no driver. */
#ifndef SPILLWAY_SHIM_ARRAY_SIZE_H
#define SPILLWAY_SHIM_ARRAY_SIZE_H
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>

/* Bytes per element of a format whose element is its channels times a
 * whole number of bytes (what a copy's extent counts in; the X formats
 * have the channels their name says, whatever channels says); 0 for the
 * block-compressed, planar and packed video formats and unknown ones. */
size_t spw_array_element_bytes(CUarray_format format, unsigned channels);

/* The levels cuMipmappedArrayCreate makes when asked for levels: "clamped
 * to the range [1, 1 + floor(log2(max(width, height, depth)))]" (cuda.h). */
unsigned spw_mipmap_levels(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels);

/* The bytes of an array of descriptor d with levels mipmap levels (1: a
 * plain array; clamped as spw_mipmap_levels does), each level half the one
 * before in every dimension that is not layers, at least 1. The elements' bytes: the driver's padding and
 * tiling are not in it. A format spillway does not know counts 4 bytes a
 * channel. Saturates at UINT64_MAX. */
uint64_t spw_array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels);

/* Whether the driver refuses descriptor d whatever the device: no width,
 * a plain format with other than 1, 2 or 4 channels, a depth without a
 * height that is not 1D layered, a cubemap that is not square with six
 * faces (a multiple of six when layered), as cuda.h's rules for
 * cuArray3DCreate and cuMipmappedArrayCreate say. Such a call is the
 * driver's to answer, its memory never made: nothing is charged or lent
 * for it. Shapes whose rules spillway does not know are not refused. */
bool spw_array_refused(const CUDA_ARRAY3D_DESCRIPTOR *d);
#endif
