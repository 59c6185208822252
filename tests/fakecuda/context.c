/* fakecuda: primary and created contexts, the per-thread context stack,
 * peer access. */
#include <stdlib.h>

#include "tests/fakecuda/internal.h"

#define STACK_MAX 16
static _Thread_local struct CUctx_st *ctx_stack[STACK_MAX];
static _Thread_local int ctx_depth;
static struct CUctx_st *all_contexts; /* under fc_lock; never freed (handles stay checkable) */
static unsigned long long stale_uses;  /* under fc_lock: calls that named a destroyed context */

static struct CUctx_st *ctx_new(int dev, bool primary)
{
    struct CUctx_st *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->magic = FC_MAGIC_CTX;
    c->dev = dev;
    c->is_primary = primary;
    pthread_mutex_lock(&fc_lock);
    c->next = all_contexts;
    all_contexts = c;
    pthread_mutex_unlock(&fc_lock);
    return c;
}

bool fc_ctx_valid(struct CUctx_st *ctx)
{
    bool ok = false;
    pthread_mutex_lock(&fc_lock);
    for (struct CUctx_st *c = all_contexts; c; c = c->next)
        if (c == ctx) {
            ok = !c->destroyed;
            stale_uses += c->destroyed;
        }
    pthread_mutex_unlock(&fc_lock);
    return ok;
}

unsigned long long fc_ctx_stale_uses(void)
{
    pthread_mutex_lock(&fc_lock);
    unsigned long long n = stale_uses;
    pthread_mutex_unlock(&fc_lock);
    return n;
}

int fc_ctx_depth(void)
{
    return ctx_depth;
}

void *fc_ctx_top(void)
{
    return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
}

CUresult fc_current_ctx(struct CUctx_st **ctx)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    struct CUctx_st *c = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
    if (!c || c->destroyed)
        return CUDA_ERROR_INVALID_CONTEXT;
    *ctx = c;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    FC_FAULT(cuDevicePrimaryCtxRetain);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_device *d = &fc_devices[dev];
    pthread_mutex_lock(&fc_lock);
    struct CUctx_st *p = d->primary;
    pthread_mutex_unlock(&fc_lock);
    if (!p) {
        struct CUctx_st *n = ctx_new(dev, true);
        if (!n)
            return CUDA_ERROR_OUT_OF_MEMORY;
        pthread_mutex_lock(&fc_lock);
        if (!d->primary)
            d->primary = n;     /* a loser's context stays unused on the list */
        p = d->primary;
        pthread_mutex_unlock(&fc_lock);
    }
    pthread_mutex_lock(&fc_lock);
    d->primary_refs++;
    d->primary_active = true;
    pthread_mutex_unlock(&fc_lock);
    *pctx = p;
    return CUDA_SUCCESS;
}

/* What a reset does once the device's work is finished: "Destroy all
 * allocations and reset all state on the primary context". Its cuMemAlloc-
 * class memory, streams, events and modules go; the context object stays
 * (NVIDIA's driver hands the same handle back at the next retain), fresh.
 * Memory pools and VMM memory are device objects (cuMemPoolCreate and
 * cuMemCreate name a device, not a context) and stay. */
static void primary_reset(int dev)
{
    pthread_mutex_lock(&fc_lock);
    struct CUctx_st *p = fc_devices[dev].primary;
    pthread_mutex_unlock(&fc_lock);
    if (!p)
        return;
    fc_ctx_free_memory(p);
    fc_ctx_end_arrays(p);
    fc_ctx_end_streams(p);
    fc_ctx_end_modules(p);
}

/* The driver: "The context is automatically reset once the last reference
 * to it is released", as cuDevicePrimaryCtxReset does here (its work
 * finished, the context inactive); a release with no retain outstanding is
 * CUDA_ERROR_INVALID_CONTEXT. Neither pops the context. */
FC_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    FC_FAULT(cuDevicePrimaryCtxRelease);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    struct fc_device *d = &fc_devices[dev];
    r = d->primary_refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS)
        d->primary_refs--;
    bool last = r == CUDA_SUCCESS && d->primary_refs == 0;
    if (last)
        d->primary_active = false;
    pthread_mutex_unlock(&fc_lock);
    if (last) { /* inactive first: a retain meanwhile keeps its reference */
        fc_device_drain(dev);
        pthread_mutex_lock(&fc_lock);
        last = !d->primary_active; /* and what it made since */
        pthread_mutex_unlock(&fc_lock);
        if (last)
            primary_reset(dev);
    }
    return r;
}

FC_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    FC_FAULT(cuDevicePrimaryCtxGetState);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    *flags = fc_devices[dev].primary_flags;
    *active = fc_devices[dev].primary_active;
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    FC_FAULT(cuDevicePrimaryCtxSetFlags);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&fc_lock);
    fc_devices[dev].primary_flags = flags;
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

/* The driver: "Resetting the primary context does not release it, an
 * application that has retained the primary context should explicitly
 * release its usage": the references stay, each with its release to come;
 * the context is inactive until the next retain (cuDevicePrimaryCtxGetState
 * on NVIDIA's driver). */
FC_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    FC_FAULT(cuDevicePrimaryCtxReset);
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    fc_device_drain(dev);
    pthread_mutex_lock(&fc_lock);
    fc_devices[dev].primary_active = false;
    pthread_mutex_unlock(&fc_lock);
    primary_reset(dev);
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    CUresult r = fc_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx_depth == STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUctx_st *c = ctx_new(dev, false);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->flags = flags;
    ctx_stack[ctx_depth++] = c;
    *pctx = c;
    return CUDA_SUCCESS;
}

/* The pre-12.5 ABI, still asked for by older runtimes through cuGetProcAddress. */
FC_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    FC_FAULT(cuCtxCreate);
    return ctx_create(pctx, flags, dev);
}

FC_EXPORT CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    FC_FAULT(cuCtxCreate);
    (void)params;
    return ctx_create(pctx, flags, dev);
}

FC_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
    FC_FAULT(cuCtxDestroy);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx || !fc_ctx_valid(ctx) || ctx->is_primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    fc_ctx_drain(ctx);
    /* "Destroys and cleans up all resources associated with the context":
     * its cuMemAlloc-class and pinned host memory, arrays, streams, events
     * and modules, as at a
     * primary reset (VMM memory and memory pools are the device's). */
    fc_ctx_free_memory(ctx);
    fc_ctx_end_arrays(ctx);
    fc_ctx_end_streams(ctx);
    fc_ctx_end_modules(ctx);
    pthread_mutex_lock(&fc_lock);
    ctx->destroyed = true;
    pthread_mutex_unlock(&fc_lock);
    if (ctx_depth && ctx_stack[ctx_depth - 1] == ctx)
        ctx_depth--;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    FC_FAULT(cuCtxSetCurrent);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx) {
        if (ctx_depth)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    if (!fc_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == 0)
        ctx_depth = 1;
    ctx_stack[ctx_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    FC_FAULT(cuCtxGetCurrent);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx)
{
    FC_FAULT(cuCtxPushCurrent);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx || !fc_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    FC_FAULT(cuCtxPopCurrent);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUctx_st *c = ctx_stack[--ctx_depth];
    if (pctx)
        *pctx = c;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    FC_FAULT(cuCtxGetDevice);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = c->dev;
    return CUDA_SUCCESS;
}

/* A primary context's flags are its device's (cuDevicePrimaryCtxSetFlags
 * and cuDevicePrimaryCtxGetState see them); call with fc_lock held. */
static unsigned *ctx_flags(struct CUctx_st *c)
{
    return c->is_primary ? &fc_devices[c->dev].primary_flags : &c->flags;
}

FC_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
    FC_FAULT(cuCtxGetFlags);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    *flags = *ctx_flags(c);
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuCtxSetFlags(unsigned int flags)
{
    FC_FAULT(cuCtxSetFlags);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_lock);
    *ctx_flags(c) = flags;
    pthread_mutex_unlock(&fc_lock);
    return CUDA_SUCCESS;
}

/* A context with a capturing stream cannot be synchronized (capture.c). */
static CUresult ctx_synchronize(struct CUctx_st *c)
{
    CUresult r = fc_capture_ctx_sync(c);
    if (r != CUDA_SUCCESS)
        return r;
    fc_ctx_drain(c);
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuCtxSynchronize(void)
{
    FC_FAULT(cuCtxSynchronize);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    return ctx_synchronize(c);
}

/* CUDA 13's: the context named, or the current one for NULL. */
FC_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    FC_FAULT(cuCtxSynchronize);
    struct CUctx_st *c = ctx;
    CUresult r = ctx ? fc_initialized() : fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!fc_ctx_valid(c))
        return CUDA_ERROR_INVALID_CONTEXT;
    return ctx_synchronize(c);
}

FC_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
    FC_FAULT(cuCtxEnablePeerAccess);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!peer || !fc_ctx_valid(peer))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (peer->dev == c->dev)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&fc_lock);
    bool *on = &fc_devices[c->dev].peer_enabled[peer->dev];
    r = *on ? CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED : CUDA_SUCCESS;
    *on = true;
    pthread_mutex_unlock(&fc_lock);
    return r;
}

FC_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peer)
{
    FC_FAULT(cuCtxDisablePeerAccess);
    struct CUctx_st *c;
    CUresult r = fc_current_ctx(&c);
    if (r != CUDA_SUCCESS)
        return r;
    if (!peer || !fc_ctx_valid(peer))
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&fc_lock);
    bool *on = &fc_devices[c->dev].peer_enabled[peer->dev];
    r = *on ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    *on = false;
    pthread_mutex_unlock(&fc_lock);
    return r;
}

/* CUDA 7.0's ABI of the two, which the _v2 superseded in 11.0 (cuda.h
 * declares it only for the driver's own build): still exported and served
 * to older callers, the same calls. */
/* CUDA 2.0's destroy, still exported by the driver beside the _v2 that
 * cuda.h names: the same function. */
#undef cuCtxDestroy
FC_EXPORT CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
FC_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }
FC_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }
