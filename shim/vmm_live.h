/* Counted handles whose mappings are the driver's (a pass-through
 * cuMemCreate, a pool handle made the driver's at its export): as in the
 * driver, their memory outlives cuMemRelease while mapped, so their count
 * and the pages they took out of the pool stay until the last unmap. */
#ifndef SPILLWAY_SHIM_VMM_LIVE_H
#define SPILLWAY_SHIM_VMM_LIVE_H
#include <cuda.h>
#include <stdint.h>

/* After the driver mapped [va, va+size) of handle key (as the program
 * names it), if spillway counts key: remembers the mapping. */
void spw_live_mapped(uint64_t key, CUdeviceptr va, size_t size);

/* After cuMemRetainAllocationHandle gave the program key again. */
void spw_live_retained(uint64_t key);

/* cuMemRelease of key by release(key), settled: a reference a retain took
 * only drops; the last one forgets key's count, which stays held while key
 * is mapped (given back at the last unmap) or is released now. Returns
 * release's answer. */
CUresult spw_live_release(uint64_t key, CUresult (*release)(uint64_t key, void *arg), void *arg);

/* After the driver unmapped [va, va+size): forgets the mappings in it and
 * releases what a released handle held once its last mapping is gone. */
void spw_live_unmapped(CUdeviceptr va, size_t size);
#endif
