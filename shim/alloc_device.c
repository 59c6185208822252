/* cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged and cuMemFree: device
 * memory on the current context's device, served from its page pool;
 * managed memory (and everything on a device without a pool) passes
 * through to the driver, counted against the same limit. */
#include "shim/ctx_blocks.h"
#include "shim/handler.h"

/* The pool of dev, with the stats segment opened first so that the pool's
 * first numbers reach it. */
static sw_policy *pool_of(int dev)
{
    spw_publish_ensure();
    return spw_pool_for(dev);
}

/* A block from the pool, kept with the context it is made in
 * (ctx_blocks.h), which frees it at its destroy. */
static CUresult serve_kept(sw_policy *p, int dev, size_t bytes, CUcontext made_in, CUdeviceptr *out)
{
    CUresult r = spw_serve_alloc(p, dev, bytes, 0, NULL, out);
    if (r == CUDA_SUCCESS)
        spw_ctx_blocks_note(dev, *out, made_in);
    return r;
}

CUresult spw_h_mem_alloc(CUdeviceptr *dptr, size_t bytesize)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_alloc);
    int dev;
    CUcontext made_in;
    if (spw_disabled() || !dptr)
        return real(dptr, bytesize);
    CUresult why = spw_ctx_blocks_alloc_device(&dev, &made_in);
    if (why != CUDA_SUCCESS)
        return why;
    if (dev < 0)
        return real(dptr, bytesize);
    sw_policy *p = pool_of(dev);
    if (p)
        return serve_kept(p, dev, bytesize, made_in, dptr);
    SPW_PASSTHROUGH_ALLOC(SPW_KIND_DEVPTR, dev, bytesize, SW_PT_DISABLED, "cuMemAlloc",
                          real(dptr, bytesize), *dptr);
}

CUresult spw_h_mem_alloc_managed(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_alloc_managed);
    int dev;
    if (spw_disabled() || !dptr)
        return real(dptr, bytesize, flags);
    CUresult why = spw_alloc_device(&dev);
    if (why != CUDA_SUCCESS)
        return why;
    if (dev < 0)
        return real(dptr, bytesize, flags);
    SPW_PASSTHROUGH_ALLOC(SPW_KIND_DEVPTR, dev, bytesize, SW_PT_MANAGED, "cuMemAllocManaged",
                          real(dptr, bytesize, flags), *dptr);
}

/* The driver's texture pitch alignment (512 bytes on every GPU we know):
 * what spillway gives as pitch, and what it guesses the driver will take. */
#define PITCH_ALIGN 512u

/* cuMemAllocPitch from the pool: the driver's argument checks, then rows
 * padded to the pitch. */
static CUresult pool_pitch(sw_policy *p, int dev, CUcontext made_in, CUdeviceptr *dptr,
                           size_t *pPitch, size_t width, size_t height, unsigned elem)
{
    if (width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16) ||
        width > SIZE_MAX - PITCH_ALIGN)
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
    if (pitch > SIZE_MAX / height)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = serve_kept(p, dev, pitch * height, made_in, dptr);
    if (r == CUDA_SUCCESS)
        *pPitch = pitch;
    return r;
}

/* A pass-through cuMemAllocPitch held a guess: settle the difference
 * once the driver told its pitch. */
static CUresult settle_pitch(CUresult (*real_free)(CUdeviceptr), int dev, CUdeviceptr ptr,
                             uint64_t reserved, uint64_t actual)
{
    if (actual > reserved && spw_hold_passthrough(dev, SW_PT_DISABLED, actual - reserved)) {
        spw_drop_passthrough(dev, SW_PT_DISABLED, reserved);
        if (real_free)
            real_free(ptr);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (actual < reserved)
        spw_drop_passthrough(dev, SW_PT_DISABLED, reserved - actual);
    spw_account_commit_pt(SPW_KIND_DEVPTR, ptr, dev, actual, SW_PT_DISABLED);
    spw_pool_passthrough(dev, SW_PT_DISABLED, actual, "cuMemAllocPitch");
    spw_mark_counted();
    return CUDA_SUCCESS;
}

CUresult spw_h_mem_alloc_pitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                               size_t Height, unsigned int ElementSizeBytes)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_alloc_pitch);
    int dev;
    uint64_t row = ((uint64_t)WidthInBytes + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
    if (spw_disabled() || !dptr || !pPitch || (Height && row > UINT64_MAX / Height))
        return real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    CUcontext made_in;
    CUresult why = spw_ctx_blocks_alloc_device(&dev, &made_in);
    if (why != CUDA_SUCCESS)
        return why;
    if (dev < 0)
        return real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    sw_policy *p = pool_of(dev);
    if (p)
        return pool_pitch(p, dev, made_in, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    uint64_t guess = row * Height;
    if (spw_hold_passthrough(dev, SW_PT_DISABLED, guess))
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (r != CUDA_SUCCESS) {
        spw_drop_passthrough(dev, SW_PT_DISABLED, guess);
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
    sw_policy *p = spw_pool_owner(dptr);
    if (p)
        return spw_serve_free(p, dptr, 0, NULL);
    SPW_ACCOUNTED_FREE(SPW_KIND_DEVPTR, dptr, real(dptr));
}
