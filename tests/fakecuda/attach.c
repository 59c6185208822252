/* fakecuda: cuStreamAttachMemAsync (CUDA 6.0), and its _ptsz variant: a
 * stream-ordered change of which streams may touch a managed allocation.
 * fakecuda's managed memory is one storage every stream and the host
 * read, so the association changes nothing it does; the call checks what
 * the reference says the driver checks: managed memory (fakecuda's
 * devices report no CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, so
 * pageable memory is refused), from its start, length 0 or the whole
 * allocation ("not possible to change stream association for a portion"),
 * flags one of CUmemAttach_flags, and no single-stream attachment to the
 * NULL stream ("an error will be returned"). The reference names no code
 * for these: INVALID_VALUE. Stream capture is not modelled (the reference
 * is silent): the call runs as on a stream that does not capture. */
#include "tests/fakecuda/internal.h"

static CUresult attach(CUstream h, CUdeviceptr p, size_t length, unsigned flags, bool ptsz)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
        return CUDA_ERROR_INVALID_VALUE;
    /* The NULL stream as named: through the _ptsz entry point it is the
     * per-thread stream, a specific one. */
    if (flags == CU_MEM_ATTACH_SINGLE && (h == NULL ? !ptsz : h == CU_STREAM_LEGACY))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)p);
    bool ok = reg && reg->kind == FC_MANAGED && reg->base == (uintptr_t)p && (!length || length == reg->size);
    pthread_mutex_unlock(&fc_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

#undef cuStreamAttachMemAsync
CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags);

FC_EXPORT CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags)
{
    FC_FAULT(cuStreamAttachMemAsync);
    return attach(hStream, dptr, length, flags, false);
}

FC_EXPORT CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length,
                                               unsigned int flags)
{
    FC_FAULT(cuStreamAttachMemAsync);
    return attach(hStream, dptr, length, flags, true);
}
