/* policy/'s backend built on the real driver (backend.c). */
#ifndef SPILLWAY_SHIM_BACKEND_H
#define SPILLWAY_SHIM_BACKEND_H
#include "policy/policy.h"

/* The backend the shim's policy is created with (static, never freed). */
const sw_backend *spw_backend(void);

/* dev's primary context, retained on first use (NULL if the driver refuses). */
CUcontext spw_backend_primary(int dev);

/* dev's primary context if spillway retained it already, else NULL
 * (never retains: a device the program only uses through contexts of its
 * own gets no primary context from a question). */
CUcontext spw_backend_primary_known(int dev);

/* The device whose primary context spillway retained is ctx, or -1 (asks
 * the driver nothing). */
int spw_backend_primary_device(CUcontext ctx);

/* The device of a context (pushed for the question when not current). */
CUresult spw_backend_ctx_device(CUcontext ctx, int *dev);
/* Whether dev's pool pages are made GPUDirect RDMA capable (the device
 * supports it with VMM): what IS_GPU_DIRECT_RDMA_CAPABLE answers. */
int spw_backend_rdma_capable(int dev);
/* Whether dev's pool pages are created exportable as POSIX file
 * descriptors (legacy IPC of pool memory), and the export of one page's
 * handle (a descriptor the caller closes). */
int spw_backend_ipc_capable(int dev);
CUresult spw_backend_export_fd(CUmemGenericAllocationHandle h, int *fd);

/* cuMemCreate and cuMemRelease of the driver itself, with dev's primary
 * context current if the thread has none of dev's (the shim's own driver
 * handles: a probe, a promoted pool handle). */
CUresult spw_backend_mem_create(int dev, size_t size, const CUmemAllocationProp *prop,
                                CUmemGenericAllocationHandle *handle);
CUresult spw_backend_mem_release(CUmemGenericAllocationHandle handle);

/* The driver's own cuMemGetAddressRange (for a VMM address: the mapping it
 * lies in), with a context current if the thread has none. */
CUresult spw_backend_address_range(CUdeviceptr va, CUdeviceptr *base, size_t *size);
#endif
