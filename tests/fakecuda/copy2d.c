/* fakecuda: 2D and 3D copies, peer copies, 2D memsets and batched copies.
 * Every one is a CUDA_MEMCPY3D (a 2D copy has Depth 1, a linear one Height
 * 1 too) or a CUDA_MEMSET_NODE_PARAMS, the forms graph nodes keep, so that a
 * captured copy and a launched memcpy node run the same code. The host
 * synchronisation rules are copy.c's (pageable sources staged, device to
 * device never waited for, pageable destinations always), because spillway's
 * safety depends on them whatever the shape of the copy. An array operand
 * becomes the device memory that stores it (fc_array_layout) before the
 * copy is checked, submitted or captured (so a captured copy's node names
 * that storage, where the driver's names the array). */
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/graph.h"
#include "tests/fakecuda/internal.h"

enum fc_side fc_side_of(uintptr_t p)
{
    pthread_mutex_lock(&fc_lock);
    struct fc_region *r = fc_region_find(p);
    enum fc_side s = !r ? FC_SIDE_PAGEABLE
                     : (r->kind == FC_HOST || r->kind == FC_REGISTERED) ? FC_SIDE_PINNED
                                                                         : FC_SIDE_DEVICE;
    pthread_mutex_unlock(&fc_lock);
    return s;
}

/* One side of a copy: its first byte and the bytes it spans. */
struct side {
    uintptr_t start;
    size_t span;
};

static bool side_of(CUmemorytype type, const void *host, CUdeviceptr dev, size_t x, size_t y,
                    size_t z, size_t pitch, size_t height, const CUDA_MEMCPY3D *p, struct side *out)
{
    uintptr_t base;
    if (type == CU_MEMORYTYPE_HOST)
        base = (uintptr_t)host;
    else if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED)
        base = (uintptr_t)dev;
    else
        return false; /* arrays, or no type at all */
    out->start = base + (z * height + y) * pitch + x;
    out->span = ((p->Depth - 1) * height + (p->Height - 1)) * pitch + p->WidthInBytes;
    return true;
}

static bool device_ok(uintptr_t p, size_t n)
{
    pthread_mutex_lock(&fc_lock);
    bool ok = fc_device_range_ok(p, n);
    pthread_mutex_unlock(&fc_lock);
    return ok;
}

/* A device operand must be device memory, all of it. */
static bool operand_ok(CUmemorytype type, const struct side *s)
{
    if (type == CU_MEMORYTYPE_DEVICE)
        return device_ok(s->start, s->span);
    if (type == CU_MEMORYTYPE_UNIFIED && fc_side_of(s->start) == FC_SIDE_DEVICE)
        return device_ok(s->start, s->span);
    return true;
}

static bool empty(const CUDA_MEMCPY3D *p)
{
    return p->WidthInBytes == 0 || p->Height == 0 || p->Depth == 0;
}

static void sides(const CUDA_MEMCPY3D *p, struct side *src, struct side *dst, bool *ok)
{
    *ok = side_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ,
                  p->srcPitch ? p->srcPitch : p->WidthInBytes, p->srcHeight ? p->srcHeight : p->Height,
                  p, src) &&
          side_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ,
                  p->dstPitch ? p->dstPitch : p->WidthInBytes, p->dstHeight ? p->dstHeight : p->Height,
                  p, dst);
}

CUresult fc_copy3d_check(const CUDA_MEMCPY3D *p)
{
    if (!p || p->srcLOD || p->dstLOD || p->reserved0 || p->reserved1)
        return CUDA_ERROR_INVALID_VALUE;
    if (empty(p))
        return CUDA_SUCCESS;
    /* "If specified, srcPitch must be >= WidthInBytes + srcXInBytes", and
     * the heights likewise; a copy of more than one row needs the pitch. */
    bool rows = p->Height > 1 || p->Depth > 1;
    if ((rows && (p->srcPitch < p->WidthInBytes + p->srcXInBytes ||
                  p->dstPitch < p->WidthInBytes + p->dstXInBytes)) ||
        (p->srcPitch && p->srcPitch < p->WidthInBytes + p->srcXInBytes) ||
        (p->dstPitch && p->dstPitch < p->WidthInBytes + p->dstXInBytes))
        return CUDA_ERROR_INVALID_VALUE;
    if (p->Depth > 1 && (p->srcHeight < p->Height + p->srcY || p->dstHeight < p->Height + p->dstY))
        return CUDA_ERROR_INVALID_VALUE;
    struct side src, dst;
    bool ok;
    sides(p, &src, &dst, &ok);
    if (!ok || !operand_ok(p->srcMemoryType, &src) || !operand_ok(p->dstMemoryType, &dst))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

void fc_copy3d_run(const CUDA_MEMCPY3D *p)
{
    if (empty(p))
        return;
    struct side src, dst;
    bool ok;
    sides(p, &src, &dst, &ok);
    size_t sp = p->srcPitch ? p->srcPitch : p->WidthInBytes;
    size_t dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
    size_t sh = p->srcHeight ? p->srcHeight : p->Height;
    size_t dh = p->dstHeight ? p->dstHeight : p->Height;
    for (size_t z = 0; z < p->Depth; z++)
        for (size_t y = 0; y < p->Height; y++)
            memcpy((char *)dst.start + (z * dh + y) * dp, (const char *)src.start + (z * sh + y) * sp,
                   p->WidthInBytes);
}

struct fc_use fc_copy3d_use(const CUDA_MEMCPY3D *p)
{
    struct fc_use u = {{0, 0}, {0, 0}};
    if (empty(p))
        return u;
    struct side src, dst;
    bool ok;
    sides(p, &src, &dst, &ok);
    if (ok) {
        u.base[0] = dst.start;
        u.size[0] = dst.span;
        u.base[1] = src.start;
        u.size[1] = src.span;
    }
    return u;
}

struct fc_use fc_memset2d_use(const CUDA_MEMSET_NODE_PARAMS *p)
{
    struct fc_use u = {{0, 0}, {0, 0}};
    if (p->width && p->height) {
        u.base[0] = (uintptr_t)p->dst;
        u.size[0] = (p->height - 1) * p->pitch + p->width * p->elementSize;
    }
    return u;
}

void fc_copy3d_linear(CUDA_MEMCPY3D *p, uintptr_t dst, uintptr_t src, size_t n)
{
    memset(p, 0, sizeof *p);
    p->srcMemoryType = p->dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    p->srcDevice = (CUdeviceptr)src;
    p->dstDevice = (CUdeviceptr)dst;
    p->WidthInBytes = n;
    p->Height = p->Depth = 1;
}

CUresult fc_memset2d_check(const CUDA_MEMSET_NODE_PARAMS *p)
{
    if (!p || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4))
        return CUDA_ERROR_INVALID_VALUE;
    if (p->width == 0 || p->height == 0)
        return CUDA_SUCCESS;
    size_t row = p->width * p->elementSize;
    if (p->dst % p->elementSize || (p->height > 1 && (p->pitch < row || p->pitch % p->elementSize)))
        return CUDA_ERROR_INVALID_VALUE;
    size_t span = (p->height - 1) * p->pitch + row;
    return device_ok((uintptr_t)p->dst, span) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

void fc_memset2d_run(const CUDA_MEMSET_NODE_PARAMS *p)
{
    for (size_t y = 0; y < p->height; y++) {
        char *row = (char *)(uintptr_t)p->dst + y * p->pitch;
        if (p->elementSize == 1)
            memset(row, (int)(p->value & 0xff), p->width);
        else if (p->elementSize == 2)
            for (size_t i = 0; i < p->width; i++)
                ((uint16_t *)(void *)row)[i] = (uint16_t)p->value;
        else
            for (size_t i = 0; i < p->width; i++)
                ((uint32_t *)(void *)row)[i] = p->value;
    }
}

/* ---- submitting ------------------------------------------------------------ */

struct copy_op {
    CUDA_MEMCPY3D p;
    void *staging;
};

static void run_copy(void *arg)
{
    struct copy_op *c = arg;
    fc_copy3d_run(&c->p);
    free(c->staging);
    free(c);
}

/* Rewrites c's source to a packed copy of it, taken now. */
static bool stage(struct copy_op *c)
{
    const CUDA_MEMCPY3D *p = &c->p;
    size_t n = p->WidthInBytes * p->Height * p->Depth;
    c->staging = malloc(n ? n : 1);
    if (!c->staging)
        return false;
    CUDA_MEMCPY3D packed;
    memset(&packed, 0, sizeof packed);
    packed.dstMemoryType = CU_MEMORYTYPE_HOST;
    packed.dstHost = c->staging;
    packed.dstPitch = p->WidthInBytes;
    packed.dstHeight = p->Height;
    packed.srcMemoryType = p->srcMemoryType;
    packed.srcHost = p->srcHost;
    packed.srcDevice = p->srcDevice;
    packed.srcXInBytes = p->srcXInBytes;
    packed.srcY = p->srcY;
    packed.srcZ = p->srcZ;
    packed.srcPitch = p->srcPitch;
    packed.srcHeight = p->srcHeight;
    packed.WidthInBytes = p->WidthInBytes;
    packed.Height = p->Height;
    packed.Depth = p->Depth;
    fc_copy3d_run(&packed);
    c->p.srcMemoryType = CU_MEMORYTYPE_HOST;
    c->p.srcHost = c->staging;
    c->p.srcXInBytes = c->p.srcY = c->p.srcZ = 0;
    c->p.srcPitch = p->WidthInBytes;
    c->p.srcHeight = p->Height;
    return true;
}

/* Puts the copy p on s: captured as a memcpy node, or queued with the
 * driver's host synchronisation (sync: a synchronous entry point). */
static CUresult submit_copy(struct CUstream_st *s, const CUDA_MEMCPY3D *p, bool sync)
{
    CUresult r;
    bool capturing = false;
    if (sync)
        r = fc_capture_sync_call(s);
    else
        r = fc_capture_enter(s, &capturing);
    if (r != CUDA_SUCCESS)
        return r;
    if (capturing) {
        struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEMCPY);
        if (n)
            n->u.copy.p = *p;
        return fc_capture_add(s, n);
    }
    if (empty(p))
        return CUDA_SUCCESS;
    struct copy_op *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->p = *p;
    struct side src, dst;
    bool ok;
    sides(p, &src, &dst, &ok);
    enum fc_side ss = fc_side_of(src.start), ds = fc_side_of(dst.start);
    bool wait;
    if (ss == FC_SIDE_PAGEABLE && ds != FC_SIDE_PAGEABLE) {
        if (sync) /* "a stream sync is performed before the copy is initiated" */
            fc_stream_wait(s, fc_stream_enqueue(s, NULL, NULL, NULL));
        if (!stage(c)) {
            free(c);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        wait = false;
    } else if (ss == FC_SIDE_DEVICE && ds == FC_SIDE_DEVICE) {
        wait = false;
    } else {
        wait = sync || ds == FC_SIDE_PAGEABLE;
    }
    uint64_t seq = fc_stream_enqueue(s, run_copy, c, NULL);
    if (fc_check_unmap)
        fc_track_op(s, seq, dst.start, dst.span, ss == FC_SIDE_PAGEABLE ? 0 : src.start,
                    ss == FC_SIDE_PAGEABLE ? 0 : src.span);
    if (wait)
        fc_stream_wait(s, seq);
    return CUDA_SUCCESS;
}

/* One side of p if it is an array: the rows that store it instead. The
 * box must start on an element and lie inside the array. */
static CUresult array_side(CUmemorytype *type, CUarray a, CUdeviceptr *dev, size_t x, size_t y, size_t z,
                           size_t *pitch, size_t *height, const CUDA_MEMCPY3D *p)
{
    if (*type != CU_MEMORYTYPE_ARRAY)
        return CUDA_SUCCESS;
    struct fc_array_layout l;
    if (fc_array_layout(a, &l) != CUDA_SUCCESS || x % l.elem || p->WidthInBytes % l.elem ||
        x > l.pitch || p->WidthInBytes > l.pitch - x || y > l.height || p->Height > l.height - y ||
        z > l.depth || p->Depth > l.depth - z)
        return CUDA_ERROR_INVALID_VALUE;
    *type = CU_MEMORYTYPE_DEVICE;
    *dev = (CUdeviceptr)l.storage;
    *pitch = l.pitch;
    *height = l.height;
    return CUDA_SUCCESS;
}

static CUresult resolve_arrays(CUDA_MEMCPY3D *p)
{
    if (empty(p))
        return CUDA_SUCCESS;
    CUresult r = array_side(&p->srcMemoryType, p->srcArray, &p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ,
                            &p->srcPitch, &p->srcHeight, p);
    if (r == CUDA_SUCCESS)
        r = array_side(&p->dstMemoryType, p->dstArray, &p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ,
                       &p->dstPitch, &p->dstHeight, p);
    return r;
}

static CUresult copy3d(const CUDA_MEMCPY3D *p, CUstream h, bool ptds, bool sync)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D q = *p;
    if ((r = resolve_arrays(&q)) != CUDA_SUCCESS || (r = fc_copy3d_check(&q)) != CUDA_SUCCESS)
        return r;
    return submit_copy(s, &q, sync);
}

static CUDA_MEMCPY3D from_2d(const CUDA_MEMCPY2D *q)
{
    CUDA_MEMCPY3D p;
    memset(&p, 0, sizeof p);
    p.srcXInBytes = q->srcXInBytes;
    p.srcY = q->srcY;
    p.srcMemoryType = q->srcMemoryType;
    p.srcHost = q->srcHost;
    p.srcDevice = q->srcDevice;
    p.srcArray = q->srcArray;
    p.srcPitch = q->srcPitch;
    p.dstXInBytes = q->dstXInBytes;
    p.dstY = q->dstY;
    p.dstMemoryType = q->dstMemoryType;
    p.dstHost = q->dstHost;
    p.dstDevice = q->dstDevice;
    p.dstArray = q->dstArray;
    p.dstPitch = q->dstPitch;
    p.WidthInBytes = q->WidthInBytes;
    p.Height = q->Height;
    p.Depth = 1;
    return p;
}

static CUresult copy2d(const CUDA_MEMCPY2D *q, CUstream h, bool ptds, bool sync)
{
    if (!q)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D p = from_2d(q);
    return copy3d(&p, h, ptds, sync);
}

static CUresult peer3d(const CUDA_MEMCPY3D_PEER *q, CUstream h, bool ptds, bool sync)
{
    if (!q)
        return CUDA_ERROR_INVALID_VALUE;
    if ((q->srcContext && !fc_ctx_valid(q->srcContext)) || (q->dstContext && !fc_ctx_valid(q->dstContext)))
        return CUDA_ERROR_INVALID_CONTEXT;
    CUDA_MEMCPY3D p;
    memset(&p, 0, sizeof p);
    p.srcXInBytes = q->srcXInBytes;
    p.srcY = q->srcY;
    p.srcZ = q->srcZ;
    p.srcLOD = q->srcLOD;
    p.srcMemoryType = q->srcMemoryType;
    p.srcHost = q->srcHost;
    p.srcDevice = q->srcDevice;
    p.srcArray = q->srcArray;
    p.srcPitch = q->srcPitch;
    p.srcHeight = q->srcHeight;
    p.dstXInBytes = q->dstXInBytes;
    p.dstY = q->dstY;
    p.dstZ = q->dstZ;
    p.dstLOD = q->dstLOD;
    p.dstMemoryType = q->dstMemoryType;
    p.dstHost = q->dstHost;
    p.dstDevice = q->dstDevice;
    p.dstArray = q->dstArray;
    p.dstPitch = q->dstPitch;
    p.dstHeight = q->dstHeight;
    p.WidthInBytes = q->WidthInBytes;
    p.Height = q->Height;
    p.Depth = q->Depth;
    return copy3d(&p, h, ptds, sync);
}

/* Device memory of one context to another's; peer access is not needed
 * (the driver stages the copy when there is none). */
static CUresult peer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
                     CUstream h, bool ptds, bool sync)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!dc || !sc || !fc_ctx_valid(dc) || !fc_ctx_valid(sc))
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUstream_st *s;
    if ((r = fc_stream_resolve(h, ptds, &s)) != CUDA_SUCCESS)
        return r;
    if (n && (!device_ok((uintptr_t)dst, n) || !device_ok((uintptr_t)src, n)))
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D p;
    fc_copy3d_linear(&p, (uintptr_t)dst, (uintptr_t)src, n);
    p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    return submit_copy(s, &p, sync);
}

struct set_op {
    CUDA_MEMSET_NODE_PARAMS p;
};

static void run_set(void *arg)
{
    struct set_op *o = arg;
    fc_memset2d_run(&o->p);
    free(o);
}

/* Memsets of device memory never make the host wait, synchronous or not. */
static CUresult set2d(CUdeviceptr dst, size_t pitch, unsigned value, unsigned width_bytes,
                      size_t width, size_t height, CUstream h, bool ptds, bool sync)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    CUDA_MEMSET_NODE_PARAMS p = {.dst = dst, .pitch = pitch, .value = value,
                                 .elementSize = width_bytes, .width = width, .height = height};
    if (height > 1 && pitch < width * width_bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = fc_memset2d_check(&p)) != CUDA_SUCCESS)
        return r;
    bool capturing = false;
    r = sync ? fc_capture_sync_call(s) : fc_capture_enter(s, &capturing);
    if (r != CUDA_SUCCESS)
        return r;
    if (capturing) {
        struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEMSET);
        if (n)
            n->u.set.p = p;
        return fc_capture_add(s, n);
    }
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    struct set_op *o = malloc(sizeof *o);
    if (!o)
        return CUDA_ERROR_OUT_OF_MEMORY;
    o->p = p;
    uint64_t seq = fc_stream_enqueue(s, run_set, o, NULL);
    if (fc_check_unmap)
        fc_track_op(s, seq, (uintptr_t)dst, (height - 1) * pitch + width * width_bytes, 0, 0);
    return CUDA_SUCCESS;
}

/* ---- batches --------------------------------------------------------------- */

static bool order_ok(CUmemcpySrcAccessOrder o)
{
    return o == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM || o == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL ||
           o == CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
}

/* A batch as one operation on its stream (its copies in no promised
 * order), or as memcpy nodes when captured. A source read "during the API
 * call" is staged before the call returns. */
struct batch_op {
    size_t n;
    struct copy_op ops[];
};

static void run_batch(void *arg)
{
    struct batch_op *b = arg;
    for (size_t i = 0; i < b->n; i++) {
        fc_copy3d_run(&b->ops[i].p);
        free(b->ops[i].staging);
    }
    free(b);
}

static CUresult submit_batch(struct CUstream_st *s, const CUDA_MEMCPY3D *ps,
                             const CUmemcpySrcAccessOrder *orders, size_t n)
{
    bool capturing;
    CUresult r = fc_capture_enter(s, &capturing);
    if (r != CUDA_SUCCESS)
        return r;
    if (capturing) {
        for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++) {
            struct CUgraphNode_st *node = fc_node_new(CU_GRAPH_NODE_TYPE_MEMCPY);
            if (node)
                node->u.copy.p = ps[i];
            r = fc_capture_add(s, node); /* releases the capture: take it again */
            if (r == CUDA_SUCCESS && i + 1 < n && (r = fc_capture_enter(s, &capturing)) == CUDA_SUCCESS &&
                !capturing)
                r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; /* ended meanwhile */
        }
        return r;
    }
    struct batch_op *b = calloc(1, sizeof *b + n * sizeof b->ops[0]);
    if (!b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++) {
        b->ops[i].p = ps[i];
        if (orders[i] == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL && !stage(&b->ops[i])) {
            for (size_t k = 0; k < i; k++)
                free(b->ops[k].staging);
            free(b);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    b->n = n;
    /* What each copy reads and writes, taken before the worker may free b. */
    struct side *sd = fc_check_unmap ? calloc(2 * n, sizeof *sd) : NULL;
    for (size_t i = 0; sd && i < n; i++) {
        bool ok;
        sides(&b->ops[i].p, &sd[2 * i], &sd[2 * i + 1], &ok);
        if (!ok || b->ops[i].staging)
            sd[2 * i] = (struct side){0, 0}; /* a staged source is read already */
        if (!ok)
            sd[2 * i + 1] = (struct side){0, 0};
    }
    uint64_t seq = fc_stream_enqueue(s, run_batch, b, NULL);
    /* In flight like any copy: unmapping what it uses is the hazard. */
    for (size_t i = 0; sd && i < n; i++)
        fc_track_op(s, seq, sd[2 * i + 1].start, sd[2 * i + 1].span, sd[2 * i].start, sd[2 * i].span);
    free(sd);
    return CUDA_SUCCESS;
}

static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                      CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, size_t *fail_idx,
                      CUstream h, bool ptsz)
{
    if (fail_idx)
        *fail_idx = SIZE_MAX;
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    /* "Must not be legacy NULL stream" */
    if (fc_stream_is_legacy(s) || count == 0 || !dsts || !srcs || !sizes || !attrs || !idxs ||
        nattrs == 0 || nattrs > count || idxs[0] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < nattrs; k++)
        if (!order_ok(attrs[k].srcAccessOrder) || idxs[k] >= count || (k && idxs[k] <= idxs[k - 1]))
            return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D *ps = malloc(count * sizeof *ps);
    CUmemcpySrcAccessOrder *orders = malloc(count * sizeof *orders);
    if (!ps || !orders)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0, k = 0; i < count && r == CUDA_SUCCESS; i++) {
        while (k + 1 < nattrs && idxs[k + 1] <= i)
            k++;
        orders[i] = attrs[k].srcAccessOrder;
        fc_copy3d_linear(&ps[i], (uintptr_t)dsts[i], (uintptr_t)srcs[i], sizes[i]);
        if ((r = fc_copy3d_check(&ps[i])) != CUDA_SUCCESS && fail_idx)
            *fail_idx = i;
    }
    if (r == CUDA_SUCCESS)
        r = submit_batch(s, ps, orders, count);
    free(ps);
    free(orders);
    return r;
}

/* A batch operand as a CUDA_MEMCPY3D side: a pointer's rows and layers
 * are counted in elements of elem bytes; an array becomes its storage. */
static CUresult operand(const CUmemcpy3DOperand *o, const CUextent3D *e, size_t elem, CUmemorytype *type,
                        CUdeviceptr *ptr, CUarray *array, size_t *x, size_t *y, size_t *z, size_t *pitch,
                        size_t *height)
{
    if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
        *type = CU_MEMORYTYPE_ARRAY;
        *array = o->op.array.array;
        *x = o->op.array.offset.x * elem;
        *y = o->op.array.offset.y;
        *z = o->op.array.offset.z;
        return CUDA_SUCCESS;
    }
    if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER || (o->op.ptr.rowLength && o->op.ptr.rowLength < e->width) ||
        (o->op.ptr.layerHeight && o->op.ptr.layerHeight < e->height))
        return CUDA_ERROR_INVALID_VALUE;
    *type = CU_MEMORYTYPE_UNIFIED;
    *ptr = o->op.ptr.ptr;
    *pitch = (o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width) * elem;
    *height = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
    return CUDA_SUCCESS;
}

/* "For pointer-to-pointer copies, the element size is considered to be 1.
 * For pointer to CUDA array or vice versa copies, the element size is
 * determined by the CUDA array. For CUDA array to CUDA array copies, the
 * element size of the two CUDA arrays must match." 0: no such copy. */
static size_t element_bytes(const CUDA_MEMCPY3D_BATCH_OP *o)
{
    size_t elem = 0;
    const CUmemcpy3DOperand *sides[2] = {&o->src, &o->dst};
    for (int i = 0; i < 2; i++) {
        struct fc_array_layout l;
        if (sides[i]->type != CU_MEMCPY_OPERAND_TYPE_ARRAY)
            continue;
        if (fc_array_layout(sides[i]->op.array.array, &l) != CUDA_SUCCESS || (elem && elem != l.elem))
            return 0;
        elem = l.elem;
    }
    return elem ? elem : 1;
}

static CUresult batch3d(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail_idx, unsigned long long flags,
                        CUstream h, bool ptsz)
{
    if (fail_idx)
        *fail_idx = SIZE_MAX;
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (fc_stream_is_legacy(s) || n == 0 || !ops || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D *ps = calloc(n, sizeof *ps);
    CUmemcpySrcAccessOrder *orders = malloc(n * sizeof *orders);
    if (!ps || !orders)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++) {
        const CUDA_MEMCPY3D_BATCH_OP *o = &ops[i];
        CUDA_MEMCPY3D *p = &ps[i];
        if (!o->extent.width || !o->extent.height || !o->extent.depth || !order_ok(o->srcAccessOrder))
            r = CUDA_ERROR_INVALID_VALUE;
        size_t elem = r == CUDA_SUCCESS ? element_bytes(o) : 0;
        if (!elem)
            r = CUDA_ERROR_INVALID_VALUE;
        if (r == CUDA_SUCCESS)
            r = operand(&o->src, &o->extent, elem, &p->srcMemoryType, &p->srcDevice, &p->srcArray,
                        &p->srcXInBytes, &p->srcY, &p->srcZ, &p->srcPitch, &p->srcHeight);
        if (r == CUDA_SUCCESS)
            r = operand(&o->dst, &o->extent, elem, &p->dstMemoryType, &p->dstDevice, &p->dstArray,
                        &p->dstXInBytes, &p->dstY, &p->dstZ, &p->dstPitch, &p->dstHeight);
        p->WidthInBytes = o->extent.width * elem;
        p->Height = o->extent.height;
        p->Depth = o->extent.depth;
        orders[i] = o->srcAccessOrder;
        if (r == CUDA_SUCCESS)
            r = resolve_arrays(p);
        if (r == CUDA_SUCCESS)
            r = fc_copy3d_check(p);
        if (r != CUDA_SUCCESS && fail_idx)
            *fail_idx = i;
    }
    if (r == CUDA_SUCCESS)
        r = submit_batch(s, ps, orders, n);
    free(ps);
    free(orders);
    return r;
}

/* ---- entry points ---------------------------------------------------------- */

#undef cuMemcpyPeer
#undef cuMemcpyPeerAsync
#undef cuMemcpy3DPeer
#undef cuMemcpy3DPeerAsync
#undef cuMemsetD2D8Async
#undef cuMemsetD2D16Async
#undef cuMemsetD2D32Async
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync

FC_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *p) { FC_FAULT(cuMemcpy2D); return copy2d(p, NULL, false, true); }
FC_EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p) { FC_FAULT(cuMemcpy2D); return copy2d(p, NULL, true, true); }
FC_EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p) { FC_FAULT(cuMemcpy2DUnaligned); return copy2d(p, NULL, false, true); }
FC_EXPORT CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p) { FC_FAULT(cuMemcpy2DUnaligned); return copy2d(p, NULL, true, true); }
FC_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream h) { FC_FAULT(cuMemcpy2DAsync); return copy2d(p, h, false, false); }
FC_EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream h) { FC_FAULT(cuMemcpy2DAsync); return copy2d(p, h, true, false); }
FC_EXPORT CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *p) { FC_FAULT(cuMemcpy3D); return copy3d(p, NULL, false, true); }
FC_EXPORT CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p) { FC_FAULT(cuMemcpy3D); return copy3d(p, NULL, true, true); }
FC_EXPORT CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream h) { FC_FAULT(cuMemcpy3DAsync); return copy3d(p, h, false, false); }
FC_EXPORT CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream h) { FC_FAULT(cuMemcpy3DAsync); return copy3d(p, h, true, false); }
FC_EXPORT CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p) { FC_FAULT(cuMemcpy3DPeer); return peer3d(p, NULL, false, true); }
FC_EXPORT CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p) { FC_FAULT(cuMemcpy3DPeer); return peer3d(p, NULL, true, true); }
FC_EXPORT CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream h) { FC_FAULT(cuMemcpy3DPeerAsync); return peer3d(p, h, false, false); }
FC_EXPORT CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream h) { FC_FAULT(cuMemcpy3DPeerAsync); return peer3d(p, h, true, false); }
FC_EXPORT CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) { FC_FAULT(cuMemcpyPeer); return peer(d, dc, s, sc, n, NULL, false, true); }
FC_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) { FC_FAULT(cuMemcpyPeer); return peer(d, dc, s, sc, n, NULL, true, true); }
FC_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream h) { FC_FAULT(cuMemcpyPeerAsync); return peer(d, dc, s, sc, n, h, false, false); }
FC_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream h) { FC_FAULT(cuMemcpyPeerAsync); return peer(d, dc, s, sc, n, h, true, false); }

FC_EXPORT CUresult cuMemsetD2D8_v2(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h) { FC_FAULT(cuMemsetD2D8); return set2d(d, p, v, 1, w, h, NULL, false, true); }
FC_EXPORT CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h) { FC_FAULT(cuMemsetD2D8); return set2d(d, p, v, 1, w, h, NULL, true, true); }
FC_EXPORT CUresult cuMemsetD2D16_v2(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h) { FC_FAULT(cuMemsetD2D16); return set2d(d, p, v, 2, w, h, NULL, false, true); }
FC_EXPORT CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h) { FC_FAULT(cuMemsetD2D16); return set2d(d, p, v, 2, w, h, NULL, true, true); }
FC_EXPORT CUresult cuMemsetD2D32_v2(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h) { FC_FAULT(cuMemsetD2D32); return set2d(d, p, v, 4, w, h, NULL, false, true); }
FC_EXPORT CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h) { FC_FAULT(cuMemsetD2D32); return set2d(d, p, v, 4, w, h, NULL, true, true); }
FC_EXPORT CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s) { FC_FAULT(cuMemsetD2D8Async); return set2d(d, p, v, 1, w, h, s, false, false); }
FC_EXPORT CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t h, CUstream s) { FC_FAULT(cuMemsetD2D8Async); return set2d(d, p, v, 1, w, h, s, true, false); }
FC_EXPORT CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s) { FC_FAULT(cuMemsetD2D16Async); return set2d(d, p, v, 2, w, h, s, false, false); }
FC_EXPORT CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t h, CUstream s) { FC_FAULT(cuMemsetD2D16Async); return set2d(d, p, v, 2, w, h, s, true, false); }
FC_EXPORT CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h, CUstream s) { FC_FAULT(cuMemsetD2D32Async); return set2d(d, p, v, 4, w, h, s, false, false); }
FC_EXPORT CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t h, CUstream s) { FC_FAULT(cuMemsetD2D32Async); return set2d(d, p, v, 4, w, h, s, true, false); }

/* CUDA 13's batches, and the 12.8 ABI that also reports the failing copy. */
FC_EXPORT CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t count, CUmemcpyAttributes *a, size_t *i, size_t na, CUstream h) { FC_FAULT(cuMemcpyBatchAsync); return batch(d, s, n, count, a, i, na, NULL, h, false); }
FC_EXPORT CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t count, CUmemcpyAttributes *a, size_t *i, size_t na, CUstream h) { FC_FAULT(cuMemcpyBatchAsync); return batch(d, s, n, count, a, i, na, NULL, h, true); }
FC_EXPORT CUresult cuMemcpyBatchAsync(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t count, CUmemcpyAttributes *a, size_t *i, size_t na, size_t *f, CUstream h) { FC_FAULT(cuMemcpyBatchAsync); return batch(d, s, n, count, a, i, na, f, h, false); }
FC_EXPORT CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *n, size_t count, CUmemcpyAttributes *a, size_t *i, size_t na, size_t *f, CUstream h) { FC_FAULT(cuMemcpyBatchAsync); return batch(d, s, n, count, a, i, na, f, h, true); }
FC_EXPORT CUresult cuMemcpy3DBatchAsync_v2(size_t n, CUDA_MEMCPY3D_BATCH_OP *o, unsigned long long f, CUstream h) { FC_FAULT(cuMemcpy3DBatchAsync); return batch3d(n, o, NULL, f, h, false); }
FC_EXPORT CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *o, unsigned long long f, CUstream h) { FC_FAULT(cuMemcpy3DBatchAsync); return batch3d(n, o, NULL, f, h, true); }
FC_EXPORT CUresult cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP *o, size_t *fi, unsigned long long f, CUstream h) { FC_FAULT(cuMemcpy3DBatchAsync); return batch3d(n, o, fi, f, h, false); }
FC_EXPORT CUresult cuMemcpy3DBatchAsync_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *o, size_t *fi, unsigned long long f, CUstream h) { FC_FAULT(cuMemcpy3DBatchAsync); return batch3d(n, o, fi, f, h, true); }

/* CUDA 13.2's single copies with attributes: the batch of one copy each
 * stands for (its rules: attributes required, a valid source access
 * order, flags 0, not the legacy stream). */
static CUresult with_attributes(CUdeviceptr d, CUdeviceptr s, size_t n, CUmemcpyAttributes *a, CUstream h, bool ptsz)
{
    size_t first = 0;
    return batch(&d, &s, &n, 1, a, &first, 1, NULL, h, ptsz);
}
FC_EXPORT CUresult cuMemcpyWithAttributesAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUmemcpyAttributes *a, CUstream h) { FC_FAULT(cuMemcpyWithAttributesAsync); return with_attributes(d, s, n, a, h, false); }
FC_EXPORT CUresult cuMemcpyWithAttributesAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUmemcpyAttributes *a, CUstream h) { FC_FAULT(cuMemcpyWithAttributesAsync); return with_attributes(d, s, n, a, h, true); }
FC_EXPORT CUresult cuMemcpy3DWithAttributesAsync(CUDA_MEMCPY3D_BATCH_OP *o, unsigned long long f, CUstream h) { FC_FAULT(cuMemcpy3DWithAttributesAsync); return batch3d(1, o, NULL, f, h, false); }
FC_EXPORT CUresult cuMemcpy3DWithAttributesAsync_ptsz(CUDA_MEMCPY3D_BATCH_OP *o, unsigned long long f, CUstream h) { FC_FAULT(cuMemcpy3DWithAttributesAsync); return batch3d(1, o, NULL, f, h, true); }
