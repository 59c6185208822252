/* The copies and sets the driver alone would refuse for the pool memory
 * they name. cuMemAlloc memory lives in pool pages that hold other
 * allocations and free space, all mapped: a range past the end of an
 * allocation, or in a freed one, is memory to the driver, which would
 * copy into another allocation's bytes where alone it answers
 * CUDA_ERROR_INVALID_VALUE ("lost data", not a refusal). */
#ifndef SPILLWAY_SHIM_POOL_RANGE_H
#define SPILLWAY_SHIM_POOL_RANGE_H
#include <cuda.h>
#include <stddef.h>

/* CUDA_ERROR_INVALID_VALUE when the bytes from p on start in the pool but
 * do not lie inside one live allocation; CUDA_SUCCESS otherwise (memory
 * that is not the pool's, and bytes 0, are the driver's to judge). One
 * load for memory outside the pool, a lock-free look-up for a live block
 * inside it (sw_range_check). */
CUresult spw_pool_range_check(CUdeviceptr p, size_t bytes);
#endif
