/* Pinned host memory: cuMemHostAlloc, cuMemAllocHost, cuMemHostRegister and
 * their frees, counted as host (SPILLWAY_HOST), never refused. */
#include "shim/ctx_owned.h"
#include "shim/handler.h"

/* The driver's answer r to a pinned allocation at *pp, noted with its
 * context (ctx_owned.h: cuCtxDestroy frees it). */
static CUresult made(CUresult r, void *const *pp)
{
    if (r == CUDA_SUCCESS)
        spw_ctx_owned_made(SPW_KIND_HOSTPTR, (uintptr_t)*pp);
    return r;
}

/* Its noted context is taken before the driver's call, and put back if
 * the driver refused. */
static CUresult free_host(CUresult (*real)(void *), void *p)
{
    CUcontext ctx = spw_ctx_owned_take(SPW_KIND_HOSTPTR, (uintptr_t)p);
    return spw_ctx_owned_settle(SPW_KIND_HOSTPTR, (uintptr_t)p, ctx, real(p));
}

CUresult spw_h_mem_host_alloc(void **pp, size_t bytesize, unsigned int Flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_host_alloc);
    if (spw_disabled() || !pp)
        return real(pp, bytesize, Flags);
    SPW_ACCOUNTED_ALLOC(SPW_KIND_HOSTPTR, SPILLWAY_HOST, bytesize, made(real(pp, bytesize, Flags), pp),
                        (uintptr_t)*pp);
}

CUresult spw_h_mem_alloc_host(void **pp, size_t bytesize)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_alloc_host);
    if (spw_disabled() || !pp)
        return real(pp, bytesize);
    SPW_ACCOUNTED_ALLOC(SPW_KIND_HOSTPTR, SPILLWAY_HOST, bytesize, made(real(pp, bytesize), pp),
                        (uintptr_t)*pp);
}

CUresult spw_h_mem_free_host(void *p)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_free_host);
    if (spw_disabled() || !p)
        return real(p);
    SPW_ACCOUNTED_FREE(SPW_KIND_HOSTPTR, (uintptr_t)p, free_host(real, p));
}

/* A note at p can only be a pinned allocation's that its context's end
 * freed (live pinned memory cannot be registered): taken before the
 * driver's call, so that the end's settling, should it come meanwhile,
 * does not take this registration (never noted) for it; put back if the
 * driver refused. */
static CUresult registered(CUresult (*real)(void *, size_t, unsigned int), void *p, size_t bytesize,
                           unsigned int flags)
{
    CUcontext ctx = spw_ctx_owned_take(SPW_KIND_HOSTPTR, (uintptr_t)p);
    return spw_ctx_owned_settle(SPW_KIND_HOSTPTR, (uintptr_t)p, ctx, real(p, bytesize, flags));
}

CUresult spw_h_mem_host_register(void *p, size_t bytesize, unsigned int Flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_host_register);
    if (spw_disabled() || !p)
        return real(p, bytesize, Flags);
    SPW_ACCOUNTED_ALLOC(SPW_KIND_HOSTPTR, SPILLWAY_HOST, bytesize, registered(real, p, bytesize, Flags),
                        (uintptr_t)p);
}

CUresult spw_h_mem_host_unregister(void *p)
{
    SPW_REAL_OR_RETURN(real, spw_h_mem_host_unregister);
    if (spw_disabled() || !p)
        return real(p);
    SPW_ACCOUNTED_FREE(SPW_KIND_HOSTPTR, (uintptr_t)p, real(p));
}
