/* fakecuda: sharing VMM memory between processes by file descriptor
 * (cuMemExportToShareableHandle, cuMemImportFromShareableHandle). A handle's
 * memory is a memfd (vmm.c), so the exported descriptor is a duplicate of
 * it: another process that imports it maps the same bytes, as with the
 * driver. Only CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR is offered (FABRIC
 * needs an IMEX channel fakecuda does not have: cuMemCreate refuses it), and
 * not for multicast objects (one process's emulation cannot share them). */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fakecuda/internal.h"

FC_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle,
                                                CUmemGenericAllocationHandle handle,
                                                CUmemAllocationHandleType handleType,
                                                unsigned long long flags)
{
    FC_FAULT(cuMemExportToShareableHandle);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!shareableHandle || flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_handle *h = fc_vmm_handle(handle);
    int fd = -1;
    if (!h || h->refs <= 0 || !(h->prop.requestedHandleTypes & handleType))
        r = CUDA_ERROR_INVALID_VALUE; /* not a type it was made for */
    else if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || h->mc)
        r = CUDA_ERROR_NOT_SUPPORTED;
    else if ((fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0)) < 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&fc_lock);
    if (r == CUDA_SUCCESS)
        *(int *)shareableHandle = fd;
    return r;
}

/* The properties of an imported descriptor: its exporter's when it is one
 * of this process's handles, else device 0's (another process's device
 * memory; fakecuda cannot tell which). */
static CUmemAllocationProp imported_prop(int fd)
{
    struct fc_handle *from = fc_vmm_handle_by_file(fd);
    if (from)
        return from->prop;
    CUmemAllocationProp p = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                             .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    return p;
}

FC_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                                  void *osHandle,
                                                  CUmemAllocationHandleType shHandleType)
{
    FC_FAULT(cuMemImportFromShareableHandle);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    /* The descriptor travels in the pointer's value (the documented way). */
    int fd = (int)(intptr_t)osHandle;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size % FC_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_handle *h = calloc(1, sizeof *h);
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((h->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->size = (size_t)st.st_size;
    h->refs = 1;
    h->imported = true;
    pthread_mutex_lock(&fc_lock);
    h->prop = imported_prop(fd);
    fc_vmm_handle_add(h);
    pthread_mutex_unlock(&fc_lock);
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}
