/* Memory that dies with its context (ctx_memory.h). */
#include "shim/ctx_memory.h"

#include "shim/backend.h"
#include "shim/handler.h"
#include "shim/log.h"

#include <stdlib.h>

struct gone {
    uint64_t key, bytes;
    int dev, reason;
};

struct spw_ctx_memory {
    size_t n;
    int taken; /* out of the table already (spw_ctx_memory_take) */
    struct gone e[];
};

/* dev's primary context, without making it active: spillway's own
 * reference when it holds one, else asked with a retain and its release
 * through the driver's own functions (uncounted, primary.c), only while
 * the context is active (an inactive one holds no memory). */
static CUcontext primary_of(int dev)
{
    CUcontext c = spw_backend_primary_known(dev);
    unsigned flags;
    int active = 0;
    if (c)
        return c;
    CUresult (*release)(CUdevice) = spw_real.spw_h_primary_ctx_release;
    if (!spw_drv.cuDevicePrimaryCtxGetState || !spw_drv.cuDevicePrimaryCtxRetain || !release ||
        spw_drv.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active ||
        spw_drv.cuDevicePrimaryCtxRetain(&c, dev) != CUDA_SUCCESS)
        return NULL;
    if (release(dev) != CUDA_SUCCESS)
        spw_warn("device %d: the driver refused to release spillway's question of its primary "
                 "context: the context stays retained once more",
                 dev);
    return c;
}

int spw_ctx_memory_primary_ended(int dev)
{
    unsigned flags;
    int active = 1;
    return spw_drv.cuDevicePrimaryCtxGetState &&
           spw_drv.cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && !active;
}

/* Whether the driver frees ptr with ctx: allocated in it, and not from a
 * memory pool (stream-ordered memory outlives its context). */
static int dies_with(CUdeviceptr ptr, CUcontext ctx)
{
    CUpointer_attribute a[] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE};
    CUcontext owner = NULL;
    CUmemoryPool pool = NULL;
    void *data[] = {&owner, &pool};
    CUresult (*ask)(unsigned, CUpointer_attribute *, void **, CUdeviceptr) =
        spw_real.spw_h_pointer_get_attributes;
    return ask && ask(2, a, data, ptr) == CUDA_SUCCESS && owner == ctx && !pool;
}

static struct spw_ctx_memory *collect(CUcontext ctx, int dev, int take)
{
    if (spw_disabled() || dev < 0 || !spw_account_tracks(dev))
        return NULL;
    uint64_t *keys;
    size_t n;
    /* Not captured allocations: graph memory, stream-ordered, is the
     * device's graph pool's and outlives the context (it answers no pool
     * handle, and the primary context as its own). */
    if (spw_account_keys_on(SPW_KIND_DEVPTR, dev, SW_PT_CAPTURE, &keys, &n)) {
        spw_warn("device %d: out of memory listing its allocations before a context's end: "
                 "what the driver frees with it stays counted",
                 dev);
        return NULL;
    }
    if (!n)
        return NULL;
    struct spw_ctx_memory *m = NULL;
    if (!ctx)
        ctx = primary_of(dev);
    if (ctx && !(m = malloc(sizeof *m + n * sizeof m->e[0])))
        spw_warn("device %d: out of memory before a context's end: what the driver frees with "
                 "it stays counted",
                 dev);
    if (m) {
        m->n = 0;
        m->taken = take;
        for (size_t i = 0; i < n; i++) {
            struct gone *g = &m->e[m->n];
            if (dies_with((CUdeviceptr)keys[i], ctx) &&
                (!take || spw_account_forget_pt(SPW_KIND_DEVPTR, keys[i], &g->dev, &g->bytes,
                                                &g->reason) == 0)) {
                g->key = keys[i];
                m->n++;
            }
        }
        if (!m->n) {
            free(m);
            m = NULL;
        }
    }
    free(keys);
    return m;
}

struct spw_ctx_memory *spw_ctx_memory_take(CUcontext ctx, int dev)
{
    return collect(ctx, dev, 1);
}

struct spw_ctx_memory *spw_ctx_memory_list(CUcontext ctx, int dev)
{
    return collect(ctx, dev, 0);
}

void spw_ctx_memory_settle(struct spw_ctx_memory *m, int freed)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        struct gone *g = &m->e[i];
        /* Listed only: those a free did not take meanwhile go now. */
        if (!m->taken && (!freed || spw_account_forget_pt(SPW_KIND_DEVPTR, g->key, &g->dev,
                                                          &g->bytes, &g->reason) != 0))
            continue;
        if (freed) {
            spw_debug("device %d: %llu bytes at %#llx freed with their context", g->dev,
                      (unsigned long long)g->bytes, (unsigned long long)g->key);
            spw_release_passthrough(g->dev, g->bytes, g->reason);
        } else {
            spw_account_restore_pt(SPW_KIND_DEVPTR, g->key, g->dev, g->bytes, g->reason);
        }
    }
    free(m);
}
