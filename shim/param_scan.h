/* Which values a kernel launch passes (param_scan.c): every 8-byte-aligned
 * 8-byte word of its arguments is a candidate pointer, for spill to touch
 * and fill back (launch.c), and so is the global address of every TMA
 * descriptor (CUtensorMap, tensor_maps.h) the driver made for the program
 * that an argument holds at a 64-byte-aligned offset. A pointer the kernel
 * finds elsewhere (inside device memory, a constant, a global; a
 * descriptor made or changed on the device, or passed by pointer) is not
 * seen: its data still works when spilled, only over the bus. */
#ifndef SPILLWAY_SHIM_PARAM_SCAN_H
#define SPILLWAY_SHIM_PARAM_SCAN_H
#include <cuda.h>

/* Calls each(ctx, word) for the candidate words (and descriptors'
 * addresses) of a launch of f with kernelParams, or else the
 * CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE buffer of extra. The layout of f's
 * parameters comes from cuFuncGetParamInfo (or cuKernelGetParamInfo for a
 * library kernel), cached per function; a function whose layout the
 * driver cannot tell is scanned nowhere (its launch is still gated).
 * Returns the number of values passed to each. */
unsigned spw_param_scan(CUfunction f, void **kernelParams, void **extra,
                        void (*each)(void *ctx, CUdeviceptr word), void *ctx);

/* A module or library is about to be unloaded, or was (cuModuleUnload,
 * cuLibraryUnload, cuCtxDestroy, which unloads its context's modules): a
 * function handed out later may reuse an unloaded one's handle value with
 * another layout, so every cached layout is asked again: before (a launch
 * racing the unload must not cache the dying layout under the current
 * generation) and after (nor one asked between). */
void spw_param_scan_forget(void);
/* r = call, an unloading call, with the layouts forgotten around it. */
#define SPW_UNLOADING(r, call)     \
    do {                           \
        spw_param_scan_forget();   \
        (r) = (call);              \
        spw_param_scan_forget();   \
    } while (0)
#endif
