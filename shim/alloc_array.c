/* CUDA arrays (cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate)
 * and their destroys: texture memory of the current context's device that
 * the pool cannot serve (the driver lays it out), so it passes through,
 * counted against the same limit as the "array" pass-through. Without
 * this a program would hold device memory past its limit unseen. An array
 * made with deferred mapping or as sparse has no memory of its own (what
 * is mapped into it is cuMemCreate's, counted there): not counted; nor
 * is a descriptor the driver is sure to refuse (spw_array_refused), which
 * gets the driver's own error, not an out-of-memory for a size it never
 * had. */
#include "shim/array_size.h"
#include "shim/ctx_owned.h"
#include "shim/handler.h"

/* The arrays whose memory the driver does not allocate at creation. */
#define UNBACKED (CUDA_ARRAY3D_DEFERRED_MAPPING | CUDA_ARRAY3D_SPARSE)

/* The driver's answer r to the creation of *h, noted with its context
 * (ctx_owned.h: it goes with it). */
static CUresult made_array(CUresult r, const CUarray *h)
{
    if (r == CUDA_SUCCESS)
        spw_ctx_owned_made(SPW_KIND_ARRAY, (uintptr_t)*h);
    return r;
}

static CUresult made_mipmap(CUresult r, const CUmipmappedArray *h)
{
    if (r == CUDA_SUCCESS)
        spw_ctx_owned_made(SPW_KIND_MIPMAP, (uintptr_t)*h);
    return r;
}

/* An array larger than the whole device is the driver's to refuse, with
 * its own error (INVALID_VALUE for sizes past its largest array, else out
 * of memory): it cannot allocate it, so nothing passes the limit, and the
 * limit's refusal would answer out of memory for a descriptor the driver
 * calls invalid. Asked only of arrays past the limit. */
static bool beyond_device(int dev, uint64_t bytes)
{
    if (bytes <= spw_limit(dev))
        return false;
    uint64_t total = spw_driver_device_total(dev);
    return total && bytes > total;
}

CUresult spw_h_array_create(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    SPW_REAL_OR_RETURN(real, spw_h_array_create);
    int dev;
    if (spw_disabled() || !pHandle || !pAllocateArray)
        return real(pHandle, pAllocateArray);
    CUresult why = spw_alloc_device(&dev);
    if (why != CUDA_SUCCESS)
        return why;
    const CUDA_ARRAY_DESCRIPTOR *d = pAllocateArray;
    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = d->Width, .Height = d->Height, .Format = d->Format,
                                  .NumChannels = d->NumChannels};
    if (dev < 0 || spw_array_refused(&d3))
        return real(pHandle, pAllocateArray);
    uint64_t bytes = spw_array_bytes(&d3, 1);
    if (beyond_device(dev, bytes))
        return real(pHandle, pAllocateArray);
    SPW_PASSTHROUGH_ALLOC(SPW_KIND_ARRAY, dev, bytes, SW_PT_ARRAY, "cuArrayCreate",
                          made_array(real(pHandle, pAllocateArray), pHandle),
                          (uintptr_t)*pHandle);
}

CUresult spw_h_array3d_create(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    SPW_REAL_OR_RETURN(real, spw_h_array3d_create);
    int dev;
    if (spw_disabled() || !pHandle || !pAllocateArray || (pAllocateArray->Flags & UNBACKED))
        return real(pHandle, pAllocateArray);
    CUresult why = spw_alloc_device(&dev);
    if (why != CUDA_SUCCESS)
        return why;
    if (dev < 0 || spw_array_refused(pAllocateArray))
        return real(pHandle, pAllocateArray);
    uint64_t bytes = spw_array_bytes(pAllocateArray, 1);
    if (beyond_device(dev, bytes))
        return real(pHandle, pAllocateArray);
    SPW_PASSTHROUGH_ALLOC(SPW_KIND_ARRAY, dev, bytes, SW_PT_ARRAY, "cuArray3DCreate",
                          made_array(real(pHandle, pAllocateArray), pHandle),
                          (uintptr_t)*pHandle);
}

CUresult spw_h_mipmapped_array_create(CUmipmappedArray *pHandle,
                                      const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                      unsigned int numMipmapLevels)
{
    SPW_REAL_OR_RETURN(real, spw_h_mipmapped_array_create);
    const CUDA_ARRAY3D_DESCRIPTOR *d = pMipmappedArrayDesc;
    int dev;
    if (spw_disabled() || !pHandle || !d || (d->Flags & UNBACKED))
        return real(pHandle, d, numMipmapLevels);
    CUresult why = spw_alloc_device(&dev);
    if (why != CUDA_SUCCESS)
        return why;
    if (dev < 0 || spw_array_refused(d))
        return real(pHandle, d, numMipmapLevels);
    uint64_t bytes = spw_array_bytes(d, numMipmapLevels);
    if (beyond_device(dev, bytes))
        return real(pHandle, d, numMipmapLevels);
    SPW_PASSTHROUGH_ALLOC(SPW_KIND_MIPMAP, dev, bytes, SW_PT_ARRAY, "cuMipmappedArrayCreate",
                          made_mipmap(real(pHandle, d, numMipmapLevels), pHandle),
                          (uintptr_t)*pHandle);
}

/* Its noted context is taken before the driver's call (a handle the
 * driver reuses at once is another thread's to note), and put back if
 * the driver refused. */
static CUresult array_destroy(CUresult (*real)(CUarray), CUarray h)
{
    CUcontext ctx = spw_ctx_owned_take(SPW_KIND_ARRAY, (uintptr_t)h);
    return spw_ctx_owned_settle(SPW_KIND_ARRAY, (uintptr_t)h, ctx, real(h));
}

static CUresult mipmap_destroy(CUresult (*real)(CUmipmappedArray), CUmipmappedArray h)
{
    CUcontext ctx = spw_ctx_owned_take(SPW_KIND_MIPMAP, (uintptr_t)h);
    return spw_ctx_owned_settle(SPW_KIND_MIPMAP, (uintptr_t)h, ctx, real(h));
}

/* A level of a mipmapped array (cuMipmappedArrayGetLevel) was never
 * counted on its own: forgetting finds nothing and the driver answers.
 * Arrays and mipmapped arrays are kept apart (two kinds), so a level whose
 * handle equalled its mipmapped array's could not forget the whole. */
CUresult spw_h_array_destroy(CUarray hArray)
{
    SPW_REAL_OR_RETURN(real, spw_h_array_destroy);
    if (spw_disabled() || !hArray)
        return real(hArray);
    SPW_ACCOUNTED_FREE(SPW_KIND_ARRAY, (uintptr_t)hArray, array_destroy(real, hArray));
}

CUresult spw_h_mipmapped_array_destroy(CUmipmappedArray hMipmappedArray)
{
    SPW_REAL_OR_RETURN(real, spw_h_mipmapped_array_destroy);
    if (spw_disabled() || !hMipmappedArray)
        return real(hMipmappedArray);
    SPW_ACCOUNTED_FREE(SPW_KIND_MIPMAP, (uintptr_t)hMipmappedArray,
                       mipmap_destroy(real, hMipmappedArray));
}
