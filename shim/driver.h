/* The real CUDA driver: loaded with dlopen on first use (spillway never
 * links libcuda), its hooked functions in spw_real (hooks.h), and the few
 * unhooked functions the shim itself needs. */
#ifndef SPILLWAY_SHIM_DRIVER_H
#define SPILLWAY_SHIM_DRIVER_H
#include <cuda.h>
#include <stdint.h>

/* dlsym runs before every other runtime of the process is ready (the
 * AddressSanitizer runtime resolves its interceptors through it while it
 * initialises): the functions on dlsym's pass-through path must not be
 * instrumented, or a sanitizer build of spillway crashes at start-up. */
#define SPW_EARLY __attribute__((no_sanitize("address", "undefined", "thread")))

typedef void *(*spw_dlsym_fn)(void *handle, const char *name);

/* glibc's dlsym, not the override. */
spw_dlsym_fn spw_real_dlsym(void);

/* Loads the driver and fills spw_real the first time. Returns 1 once that
 * is done, 0 if the driver cannot be loaded or this thread is loading it
 * right now (the driver's own initialisation reaching spillway). */
int spw_driver_ready(void);

/* Whether addr is code of the driver library (its own dlsym calls must get
 * its own functions). */
int spw_driver_owns(const void *addr);

/* The device of the calling thread's current context. */
CUresult spw_driver_ctx_device(int *dev);

/* The device a stream belongs to (cuStreamGetDevice; before CUDA 12.8 its
 * context's, cuStreamGetCtx); the current context's for the NULL, legacy
 * and per-thread streams, or when the driver cannot tell. */
CUresult spw_driver_stream_device(CUstream stream, int *dev);
/* Before CUDA 12.8: the device of the stream's context (driver.c). */
CUresult spw_driver_stream_ctx_device(CUstream stream, CUdevice *d);

/* The device an allocation lives on (for allocations spillway did not see
 * being made). */
CUresult spw_driver_pointer_device(CUdeviceptr ptr, int *dev);

/* The number of devices, or -1 if the driver cannot tell (yet). */
int spw_driver_device_count(void);

/* Total memory of a device as the driver reports it, 0 if unknown. */
uint64_t spw_driver_device_total(int dev);

/* The device's VMM granularity (the pool's page: 2 MiB on H100 and
 * fakecuda), 0 if the driver cannot tell. */
uint64_t spw_driver_page_size(int dev);

/* Whether the pool can be made on the device at all: 1 when the driver has
 * virtual memory management and the device says it supports it, 0 when
 * either lacks it (a driver before CUDA 10.2, a device or vGPU profile
 * without VMM), -1 when the driver cannot tell (yet). */
int spw_driver_vmm(int dev);

/* Unhooked driver functions the pool's backend and handlers call (always
 * the real driver's, never a handler). NULL when the driver lacks one. */
#define SPW_DRV_FUNCS(X)                                                                   \
    X(cuCtxGetCurrent, CUresult (*)(CUcontext *))                                          \
    X(cuCtxPushCurrent_v2, CUresult (*)(CUcontext))                                        \
    X(cuCtxPopCurrent_v2, CUresult (*)(CUcontext *))                                       \
    X(cuCtxGetDevice, CUresult (*)(CUdevice *))                                            \
    X(cuCtxGetFlags, CUresult (*)(unsigned int *))                                         \
    X(cuCtxSetFlags, CUresult (*)(unsigned int))                                           \
    X(cuStreamGetDevice, CUresult (*)(CUstream, CUdevice *))                               \
    X(cuStreamGetCtx, CUresult (*)(CUstream, CUcontext *))                                 \
    X(cuStreamGetCtx_v2, CUresult (*)(CUstream, CUcontext *, CUgreenCtx *))                \
    X(cuDeviceGetCount, CUresult (*)(int *))                                               \
    X(cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext *, CUdevice))                       \
    X(cuDevicePrimaryCtxGetState, CUresult (*)(CUdevice, unsigned int *, int *))           \
    X(cuDeviceGetAttribute, CUresult (*)(int *, CUdevice_attribute, CUdevice))             \
    X(cuDeviceGetUuid_v2, CUresult (*)(CUuuid *, CUdevice))                                \
    X(cuMemImportFromShareableHandle,                                                      \
      CUresult (*)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType))     \
    X(cuMemGetAllocationGranularity,                                                       \
      CUresult (*)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags)) \
    X(cuMemAddressReserve, CUresult (*)(CUdeviceptr *, size_t, size_t, CUdeviceptr,        \
                                        unsigned long long))                               \
    X(cuMemAddressFree, CUresult (*)(CUdeviceptr, size_t))                                 \
    X(cuEventCreate, CUresult (*)(CUevent *, unsigned int))                                \
    X(cuEventRecord, CUresult (*)(CUevent, CUstream))                                      \
    X(cuEventQuery, CUresult (*)(CUevent))                                                 \
    X(cuEventDestroy_v2, CUresult (*)(CUevent))                                            \
    X(cuStreamCreate, CUresult (*)(CUstream *, unsigned int))                              \
    X(cuStreamSynchronize, CUresult (*)(CUstream))                                         \
    X(cuStreamDestroy_v2, CUresult (*)(CUstream))                                          \
    X(cuStreamIsCapturing, CUresult (*)(CUstream, CUstreamCaptureStatus *))                \
    X(cuStreamIsCapturing_ptsz, CUresult (*)(CUstream, CUstreamCaptureStatus *))          \
    X(cuStreamGetCaptureInfo_v2, CUresult (*)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, \
                                              CUgraph *, const CUgraphNode **, size_t *))  \
    X(cuThreadExchangeStreamCaptureMode, CUresult (*)(CUstreamCaptureMode *))              \
    X(cuGraphGetNodes, CUresult (*)(CUgraph, CUgraphNode *, size_t *))                     \
    X(cuGraphNodeGetType, CUresult (*)(CUgraphNode, CUgraphNodeType *))                    \
    X(cuGraphKernelNodeGetParams_v2, CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *)) \
    X(cuGraphMemcpyNodeGetParams, CUresult (*)(CUgraphNode, CUDA_MEMCPY3D *))              \
    X(cuGraphMemsetNodeGetParams, CUresult (*)(CUgraphNode, CUDA_MEMSET_NODE_PARAMS *))    \
    X(cuGraphChildGraphNodeGetGraph, CUresult (*)(CUgraphNode, CUgraph *))                 \
    X(cuGraphMemAllocNodeGetParams, CUresult (*)(CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS *)) \
    X(cuGraphBatchMemOpNodeGetParams, CUresult (*)(CUgraphNode, CUDA_BATCH_MEM_OP_NODE_PARAMS *)) \
    X(cuDeviceGetGraphMemAttribute, CUresult (*)(CUdevice, CUgraphMem_attribute, void *))  \
    X(cuDeviceGraphMemTrim, CUresult (*)(CUdevice))                                        \
    X(cuFuncGetParamInfo, CUresult (*)(CUfunction, size_t, size_t *, size_t *))           \
    X(cuKernelGetParamInfo, CUresult (*)(CUkernel, size_t, size_t *, size_t *))          \
    X(cuArray3DGetDescriptor_v2, CUresult (*)(CUDA_ARRAY3D_DESCRIPTOR *, CUarray))

struct spw_drv {
#define SPW_DRV_FIELD(name, type) __typeof__(type) name;
    SPW_DRV_FUNCS(SPW_DRV_FIELD)
#undef SPW_DRV_FIELD
};
/* Filled with spw_real when the driver loads; read-only afterwards. */
extern struct spw_drv spw_drv;

/* The real function behind a handler, NULL if there is none (no driver, or
 * this driver does not export it). */
#define SPW_REAL(handler) (spw_driver_ready() ? spw_real.handler : NULL)

/* spw_driver_stream_device for a stream that is none of the NULL, legacy
 * and per-thread ones, the driver ready (a handler's hot path): the
 * driver's answer, nothing else asked. */
static inline CUresult spw_driver_stream_own_device(CUstream stream, CUdevice *d)
{
    return spw_drv.cuStreamGetDevice ? spw_drv.cuStreamGetDevice(stream, d)
                                     : spw_driver_stream_ctx_device(stream, d);
}
#endif
