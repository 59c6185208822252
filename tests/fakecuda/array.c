/* fakecuda: CUDA arrays, as far as the linear array copies reach them.
 * An array is device memory of the current context's device that no
 * CUdeviceptr names: its storage is a registered region of its own kind
 * (FC_ARRAY), so copies to and from it follow the driver's rules for
 * device memory (copy.c), in stream order, captured like any copy. The
 * linear copies (cuMemcpy{DtoA,AtoD,HtoA,AtoH,AtoA}, HtoA/AtoH async) take a
 * byte offset into it; 2D/3D copies and 3D batches see it as rows of
 * Width elements (fc_array_layout, copy2d.c). Not emulated: texture and
 * surface objects, 3D, layered, cubemap and mipmapped arrays. */
#include <stdlib.h>

#include "tests/fakecuda/internal.h"

#define ARRAY_MAGIC 0x41525259u /* "ARRY" */

struct CUarray_st {
    uint32_t magic;
    CUDA_ARRAY_DESCRIPTOR desc;
    size_t bytes;
    uintptr_t storage;
    struct CUarray_st *next;
};

static struct CUarray_st *arrays; /* live ones, under fc_lock */

static size_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

/* Under fc_lock. */
static bool known(const struct CUarray_st *a)
{
    for (const struct CUarray_st *x = arrays; x; x = x->next)
        if (x == a)
            return x->magic == ARRAY_MAGIC;
    return false;
}

FC_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
    FC_FAULT(cuArrayCreate);
    struct CUctx_st *ctx;
    CUresult r = fc_current_ctx(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    size_t elem = d ? format_bytes(d->Format) : 0;
    if (!pHandle || !elem || !d->Width ||
        (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUarray_st *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->desc = *d;
    a->bytes = d->Width * (d->Height ? d->Height : 1) * elem * d->NumChannels;
    CUdeviceptr storage;
    if ((r = fc_alloc_device(a->bytes, FC_ARRAY, NULL, ctx->dev, &storage)) != CUDA_SUCCESS) {
        free(a);
        return r;
    }
    a->storage = (uintptr_t)storage;
    a->magic = ARRAY_MAGIC;
    pthread_mutex_lock(&fc_lock);
    a->next = arrays;
    arrays = a;
    pthread_mutex_unlock(&fc_lock);
    *pHandle = a;
    return CUDA_SUCCESS;
}

/* Array h's descriptor, as the two descriptor queries answer. */
static CUresult descriptor(CUarray h, CUDA_ARRAY_DESCRIPTOR *out, bool want)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    bool ok = known(h);
    if (ok)
        *out = h->desc;
    pthread_mutex_unlock(&fc_lock);
    return !ok ? CUDA_ERROR_INVALID_HANDLE : want ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *d, CUarray h)
{
    FC_FAULT(cuArrayGetDescriptor);
    CUDA_ARRAY_DESCRIPTOR got;
    CUresult r = descriptor(h, &got, d != NULL);
    if (r == CUDA_SUCCESS)
        *d = got;
    return r;
}

FC_EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *d, CUarray h)
{
    FC_FAULT(cuArray3DGetDescriptor);
    CUDA_ARRAY_DESCRIPTOR got;
    CUresult r = descriptor(h, &got, d != NULL);
    if (r == CUDA_SUCCESS)
        *d = (CUDA_ARRAY3D_DESCRIPTOR){.Width = got.Width, .Height = got.Height, .Depth = 0,
                                       .Format = got.Format, .NumChannels = got.NumChannels};
    return r;
}

CUresult fc_array_layout(CUarray a, struct fc_array_layout *out)
{
    pthread_mutex_lock(&fc_lock);
    bool ok = known(a);
    if (ok) {
        size_t elem = format_bytes(a->desc.Format) * a->desc.NumChannels;
        *out = (struct fc_array_layout){.storage = a->storage, .elem = elem, .pitch = a->desc.Width * elem,
                                        .height = a->desc.Height ? a->desc.Height : 1};
    }
    pthread_mutex_unlock(&fc_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuArrayDestroy(CUarray h)
{
    FC_FAULT(cuArrayDestroy);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    bool ok = known(h);
    if (ok) {
        for (struct CUarray_st **pp = &arrays; *pp; pp = &(*pp)->next)
            if (*pp == h) {
                *pp = h->next;
                break;
            }
        struct fc_region *reg = fc_region_find(h->storage);
        if (reg)
            fc_region_release_locked(reg);
        h->magic = 0;
    }
    pthread_mutex_unlock(&fc_lock);
    if (ok)
        free(h);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The storage address of bytes [off, off + n) of array a, or 0 when a is
 * no array (*r: INVALID_HANDLE) or the range is outside it (INVALID_VALUE). */
static uintptr_t at(CUarray a, size_t off, size_t n, CUresult *r)
{
    pthread_mutex_lock(&fc_lock);
    bool ok = known(a);
    uintptr_t p = ok && off <= a->bytes && n <= a->bytes - off ? a->storage + off : 0;
    pthread_mutex_unlock(&fc_lock);
    *r = !ok ? CUDA_ERROR_INVALID_HANDLE : p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    return p;
}

static CUresult dtoa(CUarray a, size_t off, CUdeviceptr src, size_t n, bool ptds)
{
    CUresult r;
    uintptr_t dst = at(a, off, n, &r);
    return dst ? fc_copy_linear(dst, (uintptr_t)src, n, NULL, ptds, true, 1, 1) : r;
}

static CUresult atod(CUdeviceptr dst, CUarray a, size_t off, size_t n, bool ptds)
{
    CUresult r;
    uintptr_t src = at(a, off, n, &r);
    return src ? fc_copy_linear((uintptr_t)dst, src, n, NULL, ptds, true, 1, 1) : r;
}

static CUresult htoa(CUarray a, size_t off, const void *src, size_t n, CUstream h, bool pt, bool sync)
{
    CUresult r;
    uintptr_t dst = at(a, off, n, &r);
    return dst ? fc_copy_linear(dst, (uintptr_t)src, n, h, pt, sync, 1, 0) : r;
}

static CUresult atoh(void *dst, CUarray a, size_t off, size_t n, CUstream h, bool pt, bool sync)
{
    CUresult r;
    uintptr_t src = at(a, off, n, &r);
    return src ? fc_copy_linear((uintptr_t)dst, src, n, h, pt, sync, 0, 1) : r;
}

static CUresult atoa(CUarray d, size_t doff, CUarray s, size_t soff, size_t n, bool ptds)
{
    CUresult r;
    uintptr_t dst = at(d, doff, n, &r), src = dst ? at(s, soff, n, &r) : 0;
    return src ? fc_copy_linear(dst, src, n, NULL, ptds, true, 1, 1) : r;
}

FC_EXPORT CUresult cuMemcpyDtoA_v2(CUarray a, size_t off, CUdeviceptr src, size_t n) { FC_FAULT(cuMemcpyDtoA); return dtoa(a, off, src, n, false); }
FC_EXPORT CUresult cuMemcpyDtoA_v2_ptds(CUarray a, size_t off, CUdeviceptr src, size_t n) { FC_FAULT(cuMemcpyDtoA); return dtoa(a, off, src, n, true); }
FC_EXPORT CUresult cuMemcpyAtoD_v2(CUdeviceptr dst, CUarray a, size_t off, size_t n) { FC_FAULT(cuMemcpyAtoD); return atod(dst, a, off, n, false); }
FC_EXPORT CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dst, CUarray a, size_t off, size_t n) { FC_FAULT(cuMemcpyAtoD); return atod(dst, a, off, n, true); }
FC_EXPORT CUresult cuMemcpyHtoA_v2(CUarray a, size_t off, const void *src, size_t n) { FC_FAULT(cuMemcpyHtoA); return htoa(a, off, src, n, NULL, false, true); }
FC_EXPORT CUresult cuMemcpyHtoA_v2_ptds(CUarray a, size_t off, const void *src, size_t n) { FC_FAULT(cuMemcpyHtoA); return htoa(a, off, src, n, NULL, true, true); }
FC_EXPORT CUresult cuMemcpyAtoH_v2(void *dst, CUarray a, size_t off, size_t n) { FC_FAULT(cuMemcpyAtoH); return atoh(dst, a, off, n, NULL, false, true); }
FC_EXPORT CUresult cuMemcpyAtoH_v2_ptds(void *dst, CUarray a, size_t off, size_t n) { FC_FAULT(cuMemcpyAtoH); return atoh(dst, a, off, n, NULL, true, true); }
FC_EXPORT CUresult cuMemcpyAtoA_v2(CUarray d, size_t doff, CUarray s, size_t soff, size_t n) { FC_FAULT(cuMemcpyAtoA); return atoa(d, doff, s, soff, n, false); }
FC_EXPORT CUresult cuMemcpyAtoA_v2_ptds(CUarray d, size_t doff, CUarray s, size_t soff, size_t n) { FC_FAULT(cuMemcpyAtoA); return atoa(d, doff, s, soff, n, true); }
FC_EXPORT CUresult cuMemcpyHtoAAsync_v2(CUarray a, size_t off, const void *src, size_t n, CUstream h) { FC_FAULT(cuMemcpyHtoAAsync); return htoa(a, off, src, n, h, false, false); }
FC_EXPORT CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray a, size_t off, const void *src, size_t n, CUstream h) { FC_FAULT(cuMemcpyHtoAAsync); return htoa(a, off, src, n, h, true, false); }
FC_EXPORT CUresult cuMemcpyAtoHAsync_v2(void *dst, CUarray a, size_t off, size_t n, CUstream h) { FC_FAULT(cuMemcpyAtoHAsync); return atoh(dst, a, off, n, h, false, false); }
FC_EXPORT CUresult cuMemcpyAtoHAsync_v2_ptsz(void *dst, CUarray a, size_t off, size_t n, CUstream h) { FC_FAULT(cuMemcpyAtoHAsync); return atoh(dst, a, off, n, h, true, false); }
