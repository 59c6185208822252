/* fakecuda: 2D memsets (cuMemsetD2D*), as the CUDA_MEMSET_NODE_PARAMS a
 * graph's memset node keeps, so that a captured set and a launched node
 * run the same code. A set of device memory never makes the host wait. */
#include "tests/fakecuda/copy2d.h"

#include <stdlib.h>
#include <string.h>

struct fc_use fc_memset2d_use(const CUDA_MEMSET_NODE_PARAMS *p)
{
    struct fc_use u = {{0, 0}, {0, 0}};
    if (p->width && p->height) {
        u.base[0] = (uintptr_t)p->dst;
        u.size[0] = (p->height - 1) * p->pitch + p->width * p->elementSize;
    }
    return u;
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
    return fc_device_ok((uintptr_t)p->dst, span) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
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

/* ---- entry points ---------------------------------------------------------- */

#undef cuMemsetD2D8Async
#undef cuMemsetD2D16Async
#undef cuMemsetD2D32Async

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
