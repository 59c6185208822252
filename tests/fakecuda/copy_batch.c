/* fakecuda: batched copies (cuMemcpyBatchAsync, cuMemcpy3DBatchAsync, and
 * CUDA 13.2's single copies with attributes), each copy a CUDA_MEMCPY3D
 * as copy2d.c's, the batch one operation on its stream. */
#include "tests/fakecuda/copy2d.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
        if (orders[i] == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL && !fc_copy3d_stage(&b->ops[i])) {
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
        fc_copy3d_sides(&b->ops[i].p, &sd[2 * i], &sd[2 * i + 1], &ok);
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
            r = fc_copy3d_resolve_arrays(p);
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

#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync

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
