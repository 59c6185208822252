/* The pool's device pages: what they are made with (page_props.h). Each
 * property is the device's answer to one attribute, asked once: per device,
 * 0 not asked yet, 1 yes, 2 no. */
#include "shim/page_props.h"

#include <stdatomic.h>
#include <stdbool.h>

#include "policy/policy.h"
#include "shim/backend.h"
#include "shim/config.h"
#include "shim/driver.h"
#include "shim/hooks.h"
#include "shim/log.h"

/* Pages made GPUDirect RDMA capable (NCCL and network cards can use pool
 * memory). */
static _Atomic int rdma[SW_MAX_DEVICES];
/* Pages made exportable as a POSIX file descriptor (legacy IPC of pool
 * memory, ipc.c); no when SPILLWAY_IPC=0, or for good once the driver
 * refused a creation with it. */
static _Atomic int fd_export[SW_MAX_DEVICES];

/* cache[dev]: whether the device answers attr with a non-zero value (never,
 * unless allowed). The first answer stays. */
static bool asked_once(_Atomic int *cache, int dev, bool allowed, CUdevice_attribute attr)
{
    if (dev < 0 || dev >= SW_MAX_DEVICES)
        return false;
    int v = atomic_load_explicit(&cache[dev], memory_order_relaxed);
    if (!v) {
        int yes = 0;
        if (!allowed || !spw_drv.cuDeviceGetAttribute ||
            spw_drv.cuDeviceGetAttribute(&yes, attr, (CUdevice)dev) != CUDA_SUCCESS)
            yes = 0;
        int want = yes ? 1 : 2;
        if (atomic_compare_exchange_strong(&cache[dev], &v, want))
            v = want;
    }
    return v == 1;
}

int spw_backend_rdma_capable(int dev)
{
    return asked_once(rdma, dev, true, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED);
}

int spw_backend_ipc_capable(int dev)
{
    return asked_once(fd_export, dev, spw_config()->ipc,
                      CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED);
}

CUmemAllocationProp spw_page_prop(int dev)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = spw_backend_ipc_capable(dev) ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
                                                             : CU_MEM_HANDLE_TYPE_NONE;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.allocFlags.gpuDirectRDMACapable = (unsigned char)spw_backend_rdma_capable(dev);
    return prop;
}

CUresult spw_page_create(int dev, size_t size, CUmemAllocationProp *prop, CUmemGenericAllocationHandle *h)
{
    CUresult r = spw_real.spw_h_mem_create(h, size, prop, 0);
    if (r == CUDA_SUCCESS || prop->requestedHandleTypes == CU_MEM_HANDLE_TYPE_NONE ||
        r == CUDA_ERROR_OUT_OF_MEMORY)
        return r;
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    CUresult again = spw_real.spw_h_mem_create(h, size, prop, 0);
    if (again == CUDA_SUCCESS && atomic_exchange(&fd_export[dev], 2) != 2)
        spw_warn("device %d: the driver refused an exportable pool page (error %d): "
                 "cuIpcGetMemHandle of its pool memory is not supported", dev, (int)r);
    return again;
}
