/* The program's references to each device's primary context.
 *
 * The pool lives in the primary context, on a reference spillway retained
 * for it (backend.c, through the driver's own function: never counted
 * here) and never releases. The driver counts every retain alike, so a
 * release beyond the program's own retains would take spillway's
 * reference, and the driver would reset the context under every pool
 * pointer of the process, where without spillway it answers
 * CUDA_ERROR_INVALID_CONTEXT ("Releasing a primary context that has not
 * been previously retained"). So the program's retains are counted per
 * device, and such a release gets the driver's answer without reaching it.
 *
 * Only where spillway holds a reference: elsewhere (SPILLWAY_DISABLE, a
 * device without pool) every release is the driver's to answer, also one
 * of a retain made behind spillway's back. (A release of none racing with
 * spillway's first retain of the device, as another thread sets the pool
 * up, may still reach the driver after that retain and take it.) A reset (cuDevicePrimaryCtxReset) does not
 * release: "an application that has retained the primary context should
 * explicitly release its usage" after it, so it leaves the count alone. */
#include "shim/backend.h"
#include "shim/contexts.h"
#include "shim/ctx_memory.h"
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/param_scan.h"
#include "shim/pool_setup.h"

#include <stdatomic.h>
#include <stdbool.h>

static _Atomic int program_refs[SW_MAX_DEVICES];
static _Atomic bool warned[SW_MAX_DEVICES]; /* the first refusal warns, later ones are debug */
/* The handle the program's retains got (one per device and process): a
 * reset names the context whose events died even where spillway holds
 * no reference (it made events there for blocks of other devices freed
 * on the device's streams). */
static _Atomic(CUcontext) retained[SW_MAX_DEVICES];

static int counted(CUdevice dev)
{
    return dev >= 0 && dev < SW_MAX_DEVICES && !spw_disabled();
}

CUresult spw_h_primary_ctx_retain(CUcontext *pctx, CUdevice dev)
{
    SPW_REAL_OR_RETURN(real, spw_h_primary_ctx_retain);
    CUresult r = real(pctx, dev);
    if (r == CUDA_SUCCESS && counted(dev)) {
        atomic_fetch_add(&program_refs[dev], 1);
        atomic_store_explicit(&retained[dev], *pctx, memory_order_relaxed);
    }
    return r;
}

/* Takes one of the program's references for a release: 1, or 0 when it
 * holds none (taken before the call, so that two releases of the last one
 * cannot both reach the driver). */
static int take_ref(CUdevice dev)
{
    int n = atomic_load(&program_refs[dev]);
    while (n > 0)
        if (atomic_compare_exchange_weak(&program_refs[dev], &n, n - 1))
            return 1;
    return 0;
}

/* A reset destroys the context with its modules and streams, and so does
 * the release of its last reference (which one is the last, only the
 * driver knows: every release counts). As around cuCtxDestroy, the cached
 * parameter layouts are forgotten (a function of a later module may get a
 * dead one's handle), and so is what threads noted of streams (a dead
 * stream's handle may come back as another context's). */
static CUresult primary_end(CUresult (*real)(CUdevice), CUdevice dev)
{
    CUresult r;
    if (!spw_disabled())
        spw_contexts_stream_gone();
    SPW_UNLOADING(r, real(dev));
    if (r == CUDA_SUCCESS && !spw_disabled())
        spw_contexts_stream_gone();
    return r;
}

/* A release spillway holds no reference under may be the last, which
 * resets the context and frees its memory: what spillway counted of it
 * is listed before (left counted: most releases are not the last, and
 * frees meanwhile count as ever), and released if the context is
 * inactive after (ctx_memory.h). */
static CUresult release_maybe_last(CUresult (*real)(CUdevice), CUdevice dev)
{
    struct spw_ctx_memory *dying = counted(dev) ? spw_ctx_memory_list(NULL, (int)dev) : NULL;
    CUcontext primary = atomic_load_explicit(&retained[dev], memory_order_relaxed);
    CUresult r = primary_end(real, dev);
    bool ended = r == CUDA_SUCCESS && spw_ctx_memory_primary_ended((int)dev);
    spw_ctx_memory_settle(dying, ended);
    /* Its events died with it: the pool's there mark frees now done. */
    sw_policy *p = spw_pool_policy();
    if (ended && p && primary)
        sw_context_gone(p, primary);
    return r;
}

static CUresult release(CUresult (*real)(CUdevice), CUdevice dev)
{
    if (!counted(dev))
        return primary_end(real, dev);
    if (!take_ref(dev)) {
        if (!spw_backend_primary_known(dev))
            return release_maybe_last(real, dev);
        if (!atomic_exchange(&warned[dev], true))
            spw_warn("device %d: cuDevicePrimaryCtxRelease without a retain of the program's "
                     "left: refused (CUDA_ERROR_INVALID_CONTEXT, as without spillway), the "
                     "context and spillway's pool in it stay",
                     (int)dev);
        else
            spw_debug("device %d: cuDevicePrimaryCtxRelease without a retain of the program's "
                      "left: refused",
                      (int)dev);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    CUresult r = spw_backend_primary_known(dev) ? primary_end(real, dev)
                                                 : release_maybe_last(real, dev);
    if (r != CUDA_SUCCESS)
        atomic_fetch_add(&program_refs[dev], 1); /* the driver kept it */
    return r;
}

/* Both ABIs: CUDA 7.0's unsuffixed exports end the context as the _v2 do,
 * and what was built against old headers (or asks cuGetProcAddress for an
 * old version) calls them. */
CUresult spw_h_primary_ctx_release(CUdevice dev)
{
    SPW_REAL_OR_RETURN(real, spw_h_primary_ctx_release);
    return release(real, dev);
}

CUresult spw_h_primary_ctx_release_v1(CUdevice dev)
{
    SPW_REAL_OR_RETURN(real, spw_h_primary_ctx_release_v1);
    return release(real, dev);
}

/* A reset also destroys the streams and events spillway's pool made in
 * the context (spill's mover streams, the free queue's events): without
 * forgetting them, every later move of the device would name a dead
 * stream, and a program that resets between phases (cudaDeviceReset:
 * CUDA samples, test suites) could never allocate past the device's
 * pages again (CUDA_ERROR_INVALID_HANDLE). The reset finishes the
 * context's work first, so it is a sync point of the device where a
 * cuCtxSynchronize of the primary context is one. Whether or not it is
 * (contexts the program created), the frees whose events the pool made in
 * the context, on any device's queue, are done: released, their dead
 * events forgotten rather than queried, recorded or counted again (a
 * driver may hand their handles out for the program's own events). (A
 * release is never the last on a device whose pool spillway holds a
 * reference to.) */
static CUresult reset(CUresult (*real)(CUdevice), CUdevice dev)
{
    sw_policy *p = spw_pool_policy();
    /* The backend's token of the events made in the context (be_event_create). */
    CUcontext primary = NULL;
    if (p && counted(dev) && !(primary = spw_backend_primary_known((int)dev)))
        primary = atomic_load_explicit(&retained[dev], memory_order_relaxed);
    bool pool = primary && spw_pool_serves((int)dev) && spw_backend_primary_known((int)dev);
    /* As for cuCtxSynchronize (sync.c): not while contexts the program
     * created have work on the device (the reset ends only the primary's). */
    bool sync_point = pool && !spw_contexts_kept((int)dev);
    uint64_t ticket = sync_point ? sw_sync_begin(p, (int)dev) : 0;
    /* "Destroy all allocations": what spillway counted of them goes. */
    struct spw_ctx_memory *dying =
        dev >= 0 && dev < SW_MAX_DEVICES ? spw_ctx_memory_take(NULL, (int)dev) : NULL;
    CUresult r = primary_end(real, dev);
    spw_ctx_memory_settle(dying, r == CUDA_SUCCESS);
    if (primary && r == CUDA_SUCCESS) {
        if (sync_point)
            sw_sync_end(p, (int)dev, ticket);
        sw_context_reset(p, (int)dev, primary);
    }
    return r;
}

CUresult spw_h_primary_ctx_reset(CUdevice dev)
{
    SPW_REAL_OR_RETURN(real, spw_h_primary_ctx_reset);
    return reset(real, dev);
}

CUresult spw_h_primary_ctx_reset_v1(CUdevice dev)
{
    SPW_REAL_OR_RETURN(real, spw_h_primary_ctx_reset_v1);
    return reset(real, dev);
}
