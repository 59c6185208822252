/* fakecuda: copies and memsets, with the real driver's host-synchronisation
 * rules, because spillway's correctness depends on them:
 *  - from pageable host memory to the device, the call returns once the
 *    source is staged; the copy to the device may still be in flight (the
 *    measured hazard of docs/design.md: unmapping the destination then
 *    faults);
 *  - from pinned host memory to the device, and from the device to the host,
 *    the call returns when the copy is done;
 *  - device to device, and memsets of device memory, do not wait at all.
 * On a capturing stream an asynchronous copy or set becomes a graph node;
 * a synchronous one is refused by the capture rules (capture.c). Through
 * a multicast object's mapping a copy or set reaches every bound member
 * (multicast.c); captured, it would not (its node faults there). */
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/graph.h"
#include "tests/fakecuda/internal.h"

struct copy_op {
    void *dst;
    const void *src;
    size_t n;
    void *staging;
    bool dst_mc, src_mc; /* a side in a multicast object's mapping (multicast.c) */
    bool dst_dev, src_dev; /* device memory: maybe a handle's (fc_vmm_home) */
};

static void run_copy(void *arg)
{
    struct copy_op *c = arg;
    if (c->dst_mc || c->src_mc) {
        fc_mcast_copy((uintptr_t)c->dst, c->dst_mc, (uintptr_t)c->src, c->src_mc, c->n);
    } else {
        struct fc_handle *pd = NULL, *ps = NULL;
        void *dst = c->dst_dev ? fc_vmm_home((uintptr_t)c->dst, c->n, true, &pd) : c->dst;
        const void *src = c->src_dev ? fc_vmm_home((uintptr_t)c->src, c->n, false, &ps) : c->src;
        memcpy(dst, src, c->n);
        fc_vmm_unpin(pd);
        fc_vmm_unpin(ps);
    }
    free(c->staging);
    free(c);
}

struct set_op {
    void *dst;
    uint32_t value;
    size_t n;
    unsigned width;
    bool mc; /* dst in a multicast object's mapping: set a buffer, copy it there */
};

static void fill(void *dst, uint32_t value, size_t n, unsigned width)
{
    if (width == 1) {
        memset(dst, (int)value, n);
    } else if (width == 2) {
        uint16_t *p = dst;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint16_t)value;
    } else {
        uint32_t *p = dst;
        for (size_t i = 0; i < n; i++)
            p[i] = value;
    }
}

static void run_set(void *arg)
{
    struct set_op *s = arg;
    struct fc_handle *pin = NULL;
    void *buf = s->mc ? malloc(s->n * s->width)
                      : fc_vmm_home((uintptr_t)s->dst, s->n * s->width, true, &pin);
    if (!buf)
        abort(); /* an op cannot report: the set would be lost silently */
    fill(buf, s->value, s->n, s->width);
    if (s->mc) {
        fc_mcast_copy((uintptr_t)s->dst, true, (uintptr_t)buf, false, s->n * s->width);
        free(buf);
    }
    fc_vmm_unpin(pin);
    free(s);
}

#define PAGEABLE FC_SIDE_PAGEABLE
#define DEVICE FC_SIDE_DEVICE

static bool device_ok(CUdeviceptr p, size_t n)
{
    pthread_mutex_lock(&fc_lock);
    bool ok = fc_device_range_ok((uintptr_t)p, n);
    pthread_mutex_unlock(&fc_lock);
    return ok;
}

/* One copy. dst_dev/src_dev say which sides must be device memory (the
 * typed entry points); for cuMemcpy both are classified from the registry.
 * sync: the synchronous entry points. */
static CUresult copy(uintptr_t dst, uintptr_t src, size_t n, CUstream h, bool ptds, bool sync,
                     int dst_dev, int src_dev)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (n == 0)
        return CUDA_SUCCESS;
    enum fc_side ds = fc_side_of(dst), ss = fc_side_of(src);
    if ((dst_dev == 1 && ds != DEVICE) || (src_dev == 1 && ss != DEVICE))
        return CUDA_ERROR_INVALID_VALUE;
    if ((ds == DEVICE && !device_ok(dst, n)) || (ss == DEVICE && !device_ok(src, n)))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult de, se;
    bool dst_mc = ds == DEVICE && fc_mcast_touches(dst, n, &de);
    bool src_mc = ss == DEVICE && fc_mcast_touches(src, n, &se);
    if ((dst_mc && de != CUDA_SUCCESS) || (src_mc && se != CUDA_SUCCESS))
        return CUDA_ERROR_INVALID_VALUE;
    bool capturing = false;
    r = sync ? fc_capture_sync_call(s) : fc_capture_enter(s, &capturing);
    if (r != CUDA_SUCCESS)
        return r;
    if (capturing) {
        struct CUgraphNode_st *node = fc_node_new(CU_GRAPH_NODE_TYPE_MEMCPY);
        if (node) {
            fc_copy3d_linear(&node->u.copy.p, dst, src, n);
            if (dst_dev == 1)
                node->u.copy.p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            if (src_dev == 1)
                node->u.copy.p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        }
        return fc_capture_add(s, node);
    }
    struct copy_op *c = malloc(sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *c = (struct copy_op){(void *)dst, (const void *)src, n, NULL, dst_mc, src_mc,
                          ds == DEVICE, ss == DEVICE};
    bool wait;
    if (ss == PAGEABLE && ds != PAGEABLE) {
        if (sync) /* "a stream sync is performed before the copy is initiated" */
            fc_stream_wait(s, fc_stream_enqueue(s, NULL, NULL, NULL));
        c->staging = malloc(n);
        if (!c->staging) {
            free(c);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        memcpy(c->staging, (const void *)src, n);
        c->src = c->staging;
        wait = false;
    } else if (ds == DEVICE && ss == DEVICE) {
        wait = false;
    } else {
        /* to pageable memory the copy is synchronous even when async */
        wait = sync || ds == PAGEABLE;
    }
    uint64_t seq = fc_stream_enqueue(s, run_copy, c, NULL);
    if (fc_check_unmap)
        fc_track_op(s, seq, dst, n, ss == PAGEABLE ? 0 : src, ss == PAGEABLE ? 0 : n);
    if (wait)
        fc_stream_wait(s, seq);
    return CUDA_SUCCESS;
}

CUresult fc_copy_linear(uintptr_t dst, uintptr_t src, size_t n, CUstream h, bool ptds, bool sync,
                        int dst_dev, int src_dev)
{
    return copy(dst, src, n, h, ptds, sync, dst_dev, src_dev);
}

static CUresult set(CUdeviceptr dst, uint32_t value, size_t n, unsigned width, CUstream h, bool ptds,
                    bool sync)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (n == 0)
        return CUDA_SUCCESS;
    /* n * width wrapping (cuMemsetD32 of SIZE_MAX elements) would check a
     * shorter range than the set writes. */
    if ((dst % width) || n > SIZE_MAX / width || !device_ok(dst, n * width))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult me;
    bool mc = fc_mcast_touches(dst, n * width, &me);
    if (mc && me != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    bool capturing = false;
    r = sync ? fc_capture_sync_call(s) : fc_capture_enter(s, &capturing);
    if (r != CUDA_SUCCESS)
        return r;
    if (capturing) {
        struct CUgraphNode_st *node = fc_node_new(CU_GRAPH_NODE_TYPE_MEMSET);
        if (node)
            node->u.set.p = (CUDA_MEMSET_NODE_PARAMS){.dst = dst, .value = value, .elementSize = width,
                                                      .width = n, .height = 1};
        return fc_capture_add(s, node);
    }
    struct set_op *op = malloc(sizeof *op);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *op = (struct set_op){(void *)dst, value, n, width, mc};
    uint64_t seq = fc_stream_enqueue(s, run_set, op, NULL);
    if (fc_check_unmap)
        fc_track_op(s, seq, dst, n * width, 0, 0);
    return CUDA_SUCCESS;
}

#define P(x) ((uintptr_t)(x))
/* dst_dev/src_dev: 1 must be device memory, 0 must be host, -1 either. */
FC_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) { FC_FAULT(cuMemcpyHtoD); return copy(P(d), P(s), n, NULL, false, true, 1, -1); }
FC_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void *s, size_t n) { FC_FAULT(cuMemcpyHtoD); return copy(P(d), P(s), n, NULL, true, true, 1, -1); }
FC_EXPORT CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) { FC_FAULT(cuMemcpyDtoH); return copy(P(d), P(s), n, NULL, false, true, -1, 1); }
FC_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *d, CUdeviceptr s, size_t n) { FC_FAULT(cuMemcpyDtoH); return copy(P(d), P(s), n, NULL, true, true, -1, 1); }
FC_EXPORT CUresult cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) { FC_FAULT(cuMemcpyDtoD); return copy(P(d), P(s), n, NULL, false, true, 1, 1); }
FC_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { FC_FAULT(cuMemcpyDtoD); return copy(P(d), P(s), n, NULL, true, true, 1, 1); }
FC_EXPORT CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { FC_FAULT(cuMemcpy); return copy(P(d), P(s), n, NULL, false, true, -1, -1); }
FC_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { FC_FAULT(cuMemcpy); return copy(P(d), P(s), n, NULL, true, true, -1, -1); }
FC_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream h) { FC_FAULT(cuMemcpyHtoDAsync); return copy(P(d), P(s), n, h, false, false, 1, -1); }
FC_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void *s, size_t n, CUstream h) { FC_FAULT(cuMemcpyHtoDAsync); return copy(P(d), P(s), n, h, true, false, 1, -1); }
FC_EXPORT CUresult cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream h) { FC_FAULT(cuMemcpyDtoHAsync); return copy(P(d), P(s), n, h, false, false, -1, 1); }
FC_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *d, CUdeviceptr s, size_t n, CUstream h) { FC_FAULT(cuMemcpyDtoHAsync); return copy(P(d), P(s), n, h, true, false, -1, 1); }
FC_EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) { FC_FAULT(cuMemcpyDtoDAsync); return copy(P(d), P(s), n, h, false, false, 1, 1); }
FC_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) { FC_FAULT(cuMemcpyDtoDAsync); return copy(P(d), P(s), n, h, true, false, 1, 1); }
FC_EXPORT CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) { FC_FAULT(cuMemcpyAsync); return copy(P(d), P(s), n, h, false, false, -1, -1); }
FC_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h) { FC_FAULT(cuMemcpyAsync); return copy(P(d), P(s), n, h, true, false, -1, -1); }

FC_EXPORT CUresult cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n) { FC_FAULT(cuMemsetD8); return set(d, v, n, 1, NULL, false, true); }
FC_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) { FC_FAULT(cuMemsetD8); return set(d, v, n, 1, NULL, true, true); }
FC_EXPORT CUresult cuMemsetD16(CUdeviceptr d, unsigned short v, size_t n) { FC_FAULT(cuMemsetD16); return set(d, v, n, 2, NULL, false, true); }
FC_EXPORT CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n) { FC_FAULT(cuMemsetD16); return set(d, v, n, 2, NULL, true, true); }
FC_EXPORT CUresult cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n) { FC_FAULT(cuMemsetD32); return set(d, v, n, 4, NULL, false, true); }
FC_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n) { FC_FAULT(cuMemsetD32); return set(d, v, n, 4, NULL, true, true); }
FC_EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream h) { FC_FAULT(cuMemsetD8Async); return set(d, v, n, 1, h, false, false); }
FC_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream h) { FC_FAULT(cuMemsetD8Async); return set(d, v, n, 1, h, true, false); }
FC_EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream h) { FC_FAULT(cuMemsetD16Async); return set(d, v, n, 2, h, false, false); }
FC_EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream h) { FC_FAULT(cuMemsetD16Async); return set(d, v, n, 2, h, true, false); }
FC_EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream h) { FC_FAULT(cuMemsetD32Async); return set(d, v, n, 4, h, false, false); }
FC_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream h) { FC_FAULT(cuMemsetD32Async); return set(d, v, n, 4, h, true, false); }
