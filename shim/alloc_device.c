/* cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged and cuMemFree: device
 * memory on the current context's device, counted against its limit. */
#include "shim/handler.h"

/* The device a context-bound allocation goes to, or -1 when accounting
 * cannot tell (no current context: the driver will answer the error). */
static int current_device(void)
{
    int dev;
    if (spw_driver_ctx_device(&dev) != CUDA_SUCCESS || !spw_account_tracks(dev) || dev < 0)
        return -1;
    return dev;
}

CUresult spw_h_mem_alloc(CUdeviceptr *dptr, size_t bytesize)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_alloc);
    int dev;
    if (spw_disabled() || !dptr || (dev = current_device()) < 0)
        return real(dptr, bytesize);
    SPW_ACCOUNTED_ALLOC(SPW_KIND_DEVPTR, dev, bytesize, real(dptr, bytesize), *dptr);
}

CUresult spw_h_mem_alloc_managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_alloc_managed);
    int dev;
    if (spw_disabled() || !dptr || (dev = current_device()) < 0)
        return real(dptr, bytesize, flags);
    SPW_ACCOUNTED_ALLOC(SPW_KIND_DEVPTR, dev, bytesize, real(dptr, bytesize, flags), *dptr);
}

/* The driver picks the pitch; reserve what it will most likely take
 * (rows padded to 512 bytes), then settle the difference. */
#define PITCH_GUESS_ALIGN 512u

static CUresult settle_pitch(CUresult (*real_free)(CUdeviceptr), int dev, CUdeviceptr ptr,
                             uint64_t reserved, uint64_t actual)
{
    if (actual > reserved && spw_account_reserve(dev, actual - reserved)) {
        spw_account_unreserve(dev, reserved);
        if (real_free)
            real_free(ptr);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (actual < reserved)
        spw_account_unreserve(dev, reserved - actual);
    spw_account_commit(SPW_KIND_DEVPTR, ptr, dev, actual);
    spw_mark_counted();
    return CUDA_SUCCESS;
}

CUresult spw_h_mem_alloc_pitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                               size_t Height, unsigned int ElementSizeBytes)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_alloc_pitch);
    int dev;
    uint64_t row = ((uint64_t)WidthInBytes + PITCH_GUESS_ALIGN - 1) / PITCH_GUESS_ALIGN * PITCH_GUESS_ALIGN;
    if (spw_disabled() || !dptr || !pPitch || (dev = current_device()) < 0 ||
        (Height && row > UINT64_MAX / Height))
        return real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    uint64_t guess = row * Height;
    spw_publish_ensure();
    if (spw_account_reserve(dev, guess))
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (r != CUDA_SUCCESS) {
        spw_account_unreserve(dev, guess);
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            spw_account_note_oom(dev);
        return r;
    }
    return settle_pitch(spw_real.spw_h_mem_free, dev, *dptr, guess, (uint64_t)*pPitch * Height);
}

CUresult spw_h_mem_free(CUdeviceptr dptr)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_free);
    if (spw_disabled() || !dptr)
        return real(dptr);
    SPW_ACCOUNTED_FREE(SPW_KIND_DEVPTR, dptr, real(dptr));
}
