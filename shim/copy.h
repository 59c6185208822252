/* Counting the program's copies by direction (copy.c), shared by the
 * driver handlers and the runtime's cudaMemcpy wrapper (cudart.c). */
#ifndef SPILLWAY_SHIM_COPY_H
#define SPILLWAY_SHIM_COPY_H
#include "shim/account.h"

#include <cuda.h>
#include <stddef.h>

/* A successful copy of bytes whose direction is known; dev_side is its
 * device pointer (for device to device: the destination, then the source,
 * tells the device). */
void spw_copy_count(enum spw_copy_dir dir, CUdeviceptr dev_side, CUdeviceptr other,
                    size_t bytes);

/* A successful copy between two pointers of unified addressing, each side
 * classified (copy_side.h); host to host counts nothing. */
void spw_copy_count_unified(CUdeviceptr dst, CUdeviceptr src, size_t bytes);

/* A successful copy between sides a 2D/3D descriptor names by memory type
 * (host, device, array, unified: the pointer is the descriptor's
 * srcDevice/dstDevice, ignored for host and array sides). */
void spw_copy_count_typed(CUmemorytype dst_type, CUdeviceptr dst, CUmemorytype src_type, CUdeviceptr src,
                          size_t bytes);
#endif
