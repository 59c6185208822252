/* Which side of a copy a pointer is on (copy_side.h).
 *
 * A pointer is device memory when
 *   1. it lies in a pool arena: its device is the arena's (arenas.c, a
 *      copy of what the policy reserved, so that the answer needs no policy
 *      lock: sw_lookup locks slabs and VMM mappings);
 *   2. the pool owns it otherwise (a program VMM range mapped on pool pages,
 *      sw_owns: lock-free): its device is the current context's;
 *   3. spillway counts device memory outside the pool (pass-through
 *      allocations: managed, IPC, capture, a device without pool, or a
 *      runtime that reached the driver behind spillway's back) and the
 *      driver says so (cuPointerGetAttribute). Only then is the driver
 *      asked: a process whose device memory all comes from the pool never
 *      pays for it.
 * Anything else is host memory: also device memory spillway never saw
 * allocated (the driver's own, or a bypassing runtime's that no wrapper
 * adopted), the price of not asking the driver about every host pointer. */
#include "shim/copy_side.h"

#include "shim/account.h"
#include "shim/arenas.h"
#include "shim/driver.h"
#include "shim/hooks.h"
#include "shim/pool_setup.h"

#include <stdatomic.h>

static _Atomic int devices; /* the driver's device count, 0 until known */

static int device_count(void)
{
    int n = atomic_load_explicit(&devices, memory_order_relaxed);
    if (n > 0)
        return n;
    /* Fixed for the life of the process: asked once it is known. */
    n = spw_driver_device_count();
    if (n > 0)
        atomic_store_explicit(&devices, n, memory_order_relaxed);
    return n;
}

int spw_side_fallback_device(void)
{
    if (device_count() == 1)
        return 0;
    int dev;
    return spw_driver_ctx_device(&dev) == CUDA_SUCCESS ? dev : -1;
}

/* The driver's answer for memory outside the pool. */
static int driver_says_device(CUdeviceptr ptr, int *dev)
{
    CUresult (*get)(void *, CUpointer_attribute, CUdeviceptr) = spw_real.spw_h_pointer_get_attribute;
    unsigned type = 0;
    if (!get || get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) != CUDA_SUCCESS ||
        type != CU_MEMORYTYPE_DEVICE)
        return 0;
    if (device_count() == 1)
        *dev = 0;
    else if (spw_driver_pointer_device(ptr, dev) != CUDA_SUCCESS)
        *dev = -1;
    return 1;
}

int spw_side_is_device(CUdeviceptr ptr, int *dev)
{
    if ((*dev = spw_arena_device(ptr)) >= 0)
        return 1;
    sw_policy *p = spw_pool_policy();
    if (p && sw_owns(p, ptr))
        return 1;
    return spw_account_unpooled_live() && driver_says_device(ptr, dev);
}
