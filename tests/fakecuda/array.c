/* fakecuda: CUDA arrays, as far as copies and memory accounting reach
 * them. An array is device memory of the current context's device that no
 * CUdeviceptr names: its storage is a registered region of its own kind
 * (FC_ARRAY), so copies to and from it follow the driver's rules for
 * device memory (copy.c), in stream order, captured like any copy, and it
 * counts in cuMemGetInfo. The linear copies (cuMemcpy{DtoA,AtoD,HtoA,AtoH,
 * AtoA}, HtoA/AtoH async) take a byte offset into it; 2D/3D copies and 3D
 * batches see it as layers of rows of Width elements (fc_array_layout,
 * copy2d.c). 1D, 2D, 3D, 1D and 2D layered and cubemap arrays of the
 * formats whose element is whole bytes a channel (the X formats with the
 * channels their names say), and mipmapped arrays (levels, each an
 * array, halved in every dimension but layers); with
 * CUDA_ARRAY3D_DEFERRED_MAPPING an array has no storage until mapped (not
 * emulated: only its memory requirements are answered). Not emulated:
 * texture and surface objects, sparse arrays, the driver's padding. */
#include <stdlib.h>

#include "tests/fakecuda/internal.h"

#define ARRAY_MAGIC 0x41525259u  /* "ARRY" */
#define MIPMAP_MAGIC 0x4d495050u /* "MIPP" */
/* What fakecuda answers as a deferred array's alignment (the driver's own
 * is its business: the conformance test asks only for a power of two). */
#define DEFERRED_ALIGN ((size_t)64 << 10)
#define KNOWN_FLAGS                                                                        \
    (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP |            \
     CUDA_ARRAY3D_TEXTURE_GATHER | CUDA_ARRAY3D_DEFERRED_MAPPING)

struct CUmipmappedArray_st;

struct CUarray_st {
    uint32_t magic;
    CUDA_ARRAY3D_DESCRIPTOR desc;
    size_t bytes;
    uintptr_t storage;                 /* 0: deferred mapping */
    struct CUmipmappedArray_st *level_of; /* a level is destroyed with its array */
    struct CUctx_st *ctx;              /* made in; a level's is its mipmapped array's */
    struct CUarray_st *next;
};

struct CUmipmappedArray_st {
    uint32_t magic;
    unsigned nlevels;
    bool deferred;
    size_t bytes;
    struct CUctx_st *ctx; /* made in */
    struct CUarray_st **levels;
    struct CUmipmappedArray_st *next;
};

static struct CUarray_st *arrays; /* live ones, under fc_lock */
static struct CUmipmappedArray_st *mipmaps;

static size_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X4:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X4:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

/* The channels an X format names ("4 channel unsigned 8-bit normalized
 * integer"), 0 for the formats that take any of 1, 2 or 4. fakecuda
 * refuses an X format given other channels than its name's (what the
 * driver does with them is not known here: programs give the name's). */
static unsigned named_channels(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
        return 1;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
        return 2;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
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

static bool known_mipmap(const struct CUmipmappedArray_st *m)
{
    for (const struct CUmipmappedArray_st *x = mipmaps; x; x = x->next)
        if (x == m)
            return x->magic == MIPMAP_MAGIC;
    return false;
}

static size_t dim(size_t v)
{
    return v ? v : 1;
}

static size_t element(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    return format_bytes(d->Format) * d->NumChannels;
}

/* The driver's checks of a descriptor that fakecuda can store. */
static CUresult check_descriptor(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    if (!format_bytes(d->Format) || !d->Width || (d->NumChannels != 1 && d->NumChannels != 2 &&
                                                  d->NumChannels != 4))
        return CUDA_ERROR_INVALID_VALUE;
    if (named_channels(d->Format) && d->NumChannels != named_channels(d->Format))
        return CUDA_ERROR_INVALID_VALUE;
    if (d->Flags & ~(unsigned)KNOWN_FLAGS)
        return CUDA_ERROR_INVALID_VALUE; /* sparse, depth and colour targets: not emulated */
    if (d->Depth && !d->Height && !(d->Flags & CUDA_ARRAY3D_LAYERED))
        return CUDA_ERROR_INVALID_VALUE; /* 3D needs a height; 1D layered has none */
    if ((d->Flags & CUDA_ARRAY3D_LAYERED) && !d->Depth)
        return CUDA_ERROR_INVALID_VALUE;
    if (d->Flags & CUDA_ARRAY3D_CUBEMAP) {
        bool layered = d->Flags & CUDA_ARRAY3D_LAYERED;
        if (d->Width != d->Height || !d->Depth || (layered ? d->Depth % 6 : d->Depth != 6))
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* Makes one array of descriptor d in device dev (storage unless deferred)
 * and links it in. */
static CUresult make_array(const CUDA_ARRAY3D_DESCRIPTOR *d, int dev, struct CUmipmappedArray_st *level_of,
                           struct CUarray_st **out)
{
    struct CUarray_st *a = calloc(1, sizeof *a);
    if (!a)
        return CUDA_ERROR_OUT_OF_MEMORY;
    a->desc = *d;
    a->level_of = level_of;
    a->bytes = d->Width * dim(d->Height) * dim(d->Depth) * element(d);
    if (!(d->Flags & CUDA_ARRAY3D_DEFERRED_MAPPING)) {
        CUdeviceptr storage;
        CUresult r = fc_alloc_device(a->bytes, FC_ARRAY, NULL, dev, &storage);
        if (r != CUDA_SUCCESS) {
            free(a);
            return r;
        }
        a->storage = (uintptr_t)storage;
    }
    a->magic = ARRAY_MAGIC;
    pthread_mutex_lock(&fc_lock);
    a->next = arrays;
    arrays = a;
    pthread_mutex_unlock(&fc_lock);
    *out = a;
    return CUDA_SUCCESS;
}

/* Unlinks a (under fc_lock) and releases its storage; free it after. */
static void unlink_array_locked(struct CUarray_st *a)
{
    for (struct CUarray_st **pp = &arrays; *pp; pp = &(*pp)->next)
        if (*pp == a) {
            *pp = a->next;
            break;
        }
    struct fc_region *reg = a->storage ? fc_region_find(a->storage) : NULL;
    if (reg)
        fc_region_release_locked(reg);
    a->magic = 0;
}

/* What every creation checks first: a current context (*ctx), somewhere
 * to put the handle, a descriptor fakecuda can store. */
static CUresult creation(const void *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d, struct CUctx_st **ctx)
{
    CUresult r = fc_current_ctx(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pHandle || !d)
        return CUDA_ERROR_INVALID_VALUE;
    return check_descriptor(d);
}

static CUresult create(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    struct CUctx_st *ctx;
    CUresult r = creation(pHandle, d, &ctx);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUarray_st *a;
    if ((r = make_array(d, ctx->dev, NULL, &a)) == CUDA_SUCCESS) {
        pthread_mutex_lock(&fc_lock);
        a->ctx = ctx;
        pthread_mutex_unlock(&fc_lock);
        *pHandle = a;
    }
    return r;
}

FC_EXPORT CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
    FC_FAULT(cuArrayCreate);
    CUDA_ARRAY3D_DESCRIPTOR d3 = {0};
    if (d)
        d3 = (CUDA_ARRAY3D_DESCRIPTOR){.Width = d->Width, .Height = d->Height, .Format = d->Format,
                                       .NumChannels = d->NumChannels};
    return create(pHandle, d ? &d3 : NULL);
}

FC_EXPORT CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    FC_FAULT(cuArray3DCreate);
    return create(pHandle, d);
}

/* Array h's descriptor, as the two descriptor queries answer. */
static CUresult descriptor(CUarray h, CUDA_ARRAY3D_DESCRIPTOR *out, bool want)
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
    CUDA_ARRAY3D_DESCRIPTOR got;
    CUresult r = descriptor(h, &got, d != NULL);
    if (r == CUDA_SUCCESS)
        *d = (CUDA_ARRAY_DESCRIPTOR){.Width = got.Width, .Height = got.Height, .Format = got.Format,
                                     .NumChannels = got.NumChannels};
    return r;
}

FC_EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *d, CUarray h)
{
    FC_FAULT(cuArray3DGetDescriptor);
    CUDA_ARRAY3D_DESCRIPTOR got;
    CUresult r = descriptor(h, &got, d != NULL);
    if (r == CUDA_SUCCESS)
        *d = got;
    return r;
}

/* What a deferred array (mipmap: a deferred mipmapped array) needs
 * mapped: its bytes in whole alignments. INVALID_VALUE for one that is not
 * deferred. */
static CUresult requirements(bool mipmap, const void *h, CUdevice dev, CUDA_ARRAY_MEMORY_REQUIREMENTS *req)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS || (r = fc_check_device(dev)) != CUDA_SUCCESS)
        return r;
    size_t bytes = 0;
    bool deferred = false, ok;
    pthread_mutex_lock(&fc_lock);
    if (mipmap) {
        const struct CUmipmappedArray_st *m = h;
        if ((ok = known_mipmap(m)))
            bytes = m->bytes, deferred = m->deferred;
    } else {
        const struct CUarray_st *a = h;
        if ((ok = known(a)))
            bytes = a->bytes, deferred = !a->storage;
    }
    pthread_mutex_unlock(&fc_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!req || !deferred)
        return CUDA_ERROR_INVALID_VALUE;
    *req = (CUDA_ARRAY_MEMORY_REQUIREMENTS){
        .size = (bytes + DEFERRED_ALIGN - 1) / DEFERRED_ALIGN * DEFERRED_ALIGN,
        .alignment = DEFERRED_ALIGN};
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *req, CUarray h, CUdevice dev)
{
    FC_FAULT(cuArrayGetMemoryRequirements);
    return requirements(false, h, dev, req);
}

CUresult fc_array_layout(CUarray a, struct fc_array_layout *out)
{
    pthread_mutex_lock(&fc_lock);
    bool ok = known(a) && a->storage;
    if (ok) {
        size_t elem = element(&a->desc);
        *out = (struct fc_array_layout){.storage = a->storage, .elem = elem, .pitch = a->desc.Width * elem,
                                        .height = dim(a->desc.Height), .depth = dim(a->desc.Depth)};
    }
    pthread_mutex_unlock(&fc_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A level of a mipmapped array goes with it: destroying one alone is
 * refused (INVALID_HANDLE: fakecuda's choice, not checked on a driver). */
FC_EXPORT CUresult cuArrayDestroy(CUarray h)
{
    FC_FAULT(cuArrayDestroy);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    bool ok = known(h) && !h->level_of;
    if (ok)
        unlink_array_locked(h);
    pthread_mutex_unlock(&fc_lock);
    if (ok)
        free(h);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ---- mipmapped arrays ---- */

static void destroy_levels(struct CUmipmappedArray_st *m, unsigned n)
{
    pthread_mutex_lock(&fc_lock);
    for (unsigned i = 0; i < n; i++)
        unlink_array_locked(m->levels[i]);
    pthread_mutex_unlock(&fc_lock);
    for (unsigned i = 0; i < n; i++)
        free(m->levels[i]);
}

/* "clamped to the range [1, 1 + floor(log2(max(width, height, depth)))]"
 * (cuda.h, cuMipmappedArrayCreate). */
static unsigned clamp_levels(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    size_t big = d->Width > d->Height ? d->Width : d->Height;
    if (d->Depth > big)
        big = d->Depth;
    unsigned most = 1;
    while (big >>= 1)
        most++;
    return levels < 1 ? 1 : levels > most ? most : levels;
}

FC_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                          unsigned int numMipmapLevels)
{
    FC_FAULT(cuMipmappedArrayCreate);
    struct CUctx_st *ctx;
    CUresult r = creation(pHandle, d, &ctx);
    if (r != CUDA_SUCCESS)
        return r;
    numMipmapLevels = clamp_levels(d, numMipmapLevels);
    struct CUmipmappedArray_st *m = calloc(1, sizeof *m);
    if (!m || !(m->levels = calloc(numMipmapLevels, sizeof *m->levels))) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    bool layered = d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
    CUDA_ARRAY3D_DESCRIPTOR l = *d;
    for (unsigned i = 0; i < numMipmapLevels; i++) {
        if ((r = make_array(&l, ctx->dev, m, &m->levels[i])) != CUDA_SUCCESS) {
            destroy_levels(m, i);
            free(m->levels);
            free(m);
            return r;
        }
        m->bytes += m->levels[i]->bytes;
        l.Width = dim(l.Width / 2);
        l.Height = l.Height ? dim(l.Height / 2) : 0;
        l.Depth = l.Depth && !layered ? dim(l.Depth / 2) : l.Depth;
    }
    m->nlevels = numMipmapLevels;
    m->deferred = d->Flags & CUDA_ARRAY3D_DEFERRED_MAPPING;
    m->ctx = ctx;
    m->magic = MIPMAP_MAGIC;
    pthread_mutex_lock(&fc_lock);
    m->next = mipmaps;
    mipmaps = m;
    pthread_mutex_unlock(&fc_lock);
    *pHandle = m;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray h, unsigned int level)
{
    FC_FAULT(cuMipmappedArrayGetLevel);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    bool ok = known_mipmap(h);
    bool in = ok && level < h->nlevels;
    if (in && pLevelArray)
        *pLevelArray = h->levels[level];
    pthread_mutex_unlock(&fc_lock);
    return !ok ? CUDA_ERROR_INVALID_HANDLE : in && pLevelArray ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS *req,
                                                         CUmipmappedArray h, CUdevice dev)
{
    FC_FAULT(cuMipmappedArrayGetMemoryRequirements);
    return requirements(true, h, dev, req);
}

FC_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
    FC_FAULT(cuMipmappedArrayDestroy);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    bool ok = known_mipmap(h);
    if (ok) {
        for (struct CUmipmappedArray_st **pp = &mipmaps; *pp; pp = &(*pp)->next)
            if (*pp == h) {
                *pp = h->next;
                break;
            }
        h->magic = 0;
    }
    pthread_mutex_unlock(&fc_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_HANDLE;
    destroy_levels(h, h->nlevels);
    free(h->levels);
    free(h);
    return CUDA_SUCCESS;
}

/* cuCtxDestroy and a primary reset: "These resources include CUDA types
 * ... CUarray, CUmipmappedArray" (cuCtxDestroy). The arrays and mipmapped
 * arrays made in ctx go, their storage given back; a handle of one is
 * unknown after (the driver calls its use undefined behaviour). */
void fc_ctx_end_arrays(struct CUctx_st *ctx)
{
    struct CUarray_st *dead = NULL;
    struct CUmipmappedArray_st *dead_mipmaps = NULL;
    pthread_mutex_lock(&fc_lock);
    for (struct CUarray_st **pp = &arrays, *a; (a = *pp) != NULL;) {
        if (a->ctx != ctx || a->level_of) {
            pp = &a->next;
            continue;
        }
        unlink_array_locked(a); /* unlinks *pp: pp now names the next */
        a->next = dead;
        dead = a;
    }
    for (struct CUmipmappedArray_st **pp = &mipmaps, *m; (m = *pp) != NULL;) {
        if (m->ctx != ctx) {
            pp = &m->next;
            continue;
        }
        *pp = m->next;
        m->magic = 0;
        for (unsigned i = 0; i < m->nlevels; i++)
            unlink_array_locked(m->levels[i]);
        m->next = dead_mipmaps;
        dead_mipmaps = m;
    }
    pthread_mutex_unlock(&fc_lock);
    while (dead) {
        struct CUarray_st *next = dead->next;
        free(dead);
        dead = next;
    }
    while (dead_mipmaps) {
        struct CUmipmappedArray_st *next = dead_mipmaps->next;
        for (unsigned i = 0; i < dead_mipmaps->nlevels; i++)
            free(dead_mipmaps->levels[i]);
        free(dead_mipmaps->levels);
        free(dead_mipmaps);
        dead_mipmaps = next;
    }
}

/* The storage address of bytes [off, off + n) of array a, or 0 when a is
 * no array (*r: INVALID_HANDLE) or the range is outside it (INVALID_VALUE). */
static uintptr_t at(CUarray a, size_t off, size_t n, CUresult *r)
{
    pthread_mutex_lock(&fc_lock);
    bool ok = known(a);
    uintptr_t p = ok && a->storage && off <= a->bytes && n <= a->bytes - off ? a->storage + off : 0;
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
