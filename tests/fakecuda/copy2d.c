/* fakecuda: 2D and 3D copies, peer copies, 2D memsets and batched copies.
 * Every one is a CUDA_MEMCPY3D (a 2D copy has Depth 1, a linear one Height
 * 1 too) or a CUDA_MEMSET_NODE_PARAMS, the forms graph nodes keep, so that a
 * captured copy and a launched memcpy node run the same code. The host
 * synchronisation rules are copy.c's (pageable sources staged, device to
 * device never waited for, pageable destinations always), because spillway's
 * safety depends on them whatever the shape of the copy. An array operand
 * becomes the device memory that stores it (fc_array_layout) before the
 * copy is checked, submitted or captured (so a captured copy's node names
 * that storage, where the driver's names the array).
 *
 * Here 2D, 3D and peer copies; 2D memsets are memset2d.c's, batches
 * copy_batch.c's, sharing copy2d.h. */
#include "tests/fakecuda/copy2d.h"

#include <stdlib.h>
#include <string.h>

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

bool fc_device_ok(uintptr_t p, size_t n)
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
        return fc_device_ok(s->start, s->span);
    if (type == CU_MEMORYTYPE_UNIFIED && fc_side_of(s->start) == FC_SIDE_DEVICE)
        return fc_device_ok(s->start, s->span);
    return true;
}

static bool empty(const CUDA_MEMCPY3D *p)
{
    return p->WidthInBytes == 0 || p->Height == 0 || p->Depth == 0;
}

void fc_copy3d_sides(const CUDA_MEMCPY3D *p, struct side *src, struct side *dst, bool *ok)
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
    fc_copy3d_sides(p, &src, &dst, &ok);
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
    fc_copy3d_sides(p, &src, &dst, &ok);
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
    fc_copy3d_sides(p, &src, &dst, &ok);
    if (ok) {
        u.base[0] = dst.start;
        u.size[0] = dst.span;
        u.base[1] = src.start;
        u.size[1] = src.span;
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

/* ---- submitting ------------------------------------------------------------ */

static void run_copy(void *arg)
{
    struct copy_op *c = arg;
    fc_copy3d_run(&c->p);
    free(c->staging);
    free(c);
}

bool fc_copy3d_stage(struct copy_op *c)
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
    fc_copy3d_sides(p, &src, &dst, &ok);
    enum fc_side ss = fc_side_of(src.start), ds = fc_side_of(dst.start);
    bool wait;
    if (ss == FC_SIDE_PAGEABLE && ds != FC_SIDE_PAGEABLE) {
        if (sync) /* "a stream sync is performed before the copy is initiated" */
            fc_stream_wait(s, fc_stream_enqueue(s, NULL, NULL, NULL));
        if (!fc_copy3d_stage(c)) {
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

CUresult fc_copy3d_resolve_arrays(CUDA_MEMCPY3D *p)
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
    if ((r = fc_copy3d_resolve_arrays(&q)) != CUDA_SUCCESS || (r = fc_copy3d_check(&q)) != CUDA_SUCCESS)
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
    if (n && (!fc_device_ok((uintptr_t)dst, n) || !fc_device_ok((uintptr_t)src, n)))
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D p;
    fc_copy3d_linear(&p, (uintptr_t)dst, (uintptr_t)src, n);
    p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    return submit_copy(s, &p, sync);
}

/* ---- entry points ---------------------------------------------------------- */

#undef cuMemcpyPeer
#undef cuMemcpyPeerAsync
#undef cuMemcpy3DPeer
#undef cuMemcpy3DPeerAsync

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
