/* Memory that dies with its context (ctx_memory.h). */
#include "shim/ctx_memory.h"

#include "shim/backend.h"
#include "shim/ctx_owned.h"
#include "shim/handler.h"
#include "shim/log.h"

#include <stdlib.h>

struct gone {
    uint64_t key, bytes;
    int dev, reason;
    enum spw_kind kind;
};

struct spw_ctx_memory {
    size_t n;
    int taken;     /* out of the tables already (spw_ctx_memory_take) */
    CUcontext ctx; /* the dying context */
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

/* What collect gathers: per kind, the keys that may die with the context. */
static const enum spw_kind owned_kinds[] = {SPW_KIND_ARRAY, SPW_KIND_MIPMAP, SPW_KIND_HOSTPTR};
#define OWNED_KINDS (sizeof owned_kinds / sizeof owned_kinds[0])

/* Takes key's note (an array's, a pinned allocation's) if it still names
 * ctx: 0, or -1 when it no longer does (freed, and the driver gave its
 * handle to an object of another context meanwhile: left to that one). */
static int take_note(enum spw_kind kind, uint64_t key, CUcontext ctx)
{
    CUcontext noted = spw_ctx_owned_take(kind, key);
    if (noted == ctx)
        return 0;
    spw_ctx_owned_undo(kind, key, noted);
    return -1;
}

/* Adds key of kind, which dies with m's context, to m: listed, or when
 * take, taken out of the noted contexts and the count's table (added only
 * if counted; a refused destroy puts it back). */
static void add(struct spw_ctx_memory *m, enum spw_kind kind, uint64_t key, int take)
{
    struct gone *g = &m->e[m->n];
    if (!take) {
        *g = (struct gone){.key = key, .kind = kind};
        m->n++;
        return;
    }
    if (kind != SPW_KIND_DEVPTR && take_note(kind, key, m->ctx) != 0)
        return;
    if (spw_account_forget_pt(kind, key, &g->dev, &g->bytes, &g->reason) == 0) {
        g->key = key;
        g->kind = kind;
        m->n++;
    }
}

static struct spw_ctx_memory *collect(CUcontext ctx, int dev, int take)
{
    if (spw_disabled() || dev < 0 || !spw_account_tracks(dev))
        return NULL;
    uint64_t *dev_keys, *keys[OWNED_KINDS] = {NULL};
    size_t dev_n, n[OWNED_KINDS] = {0}, total;
    /* Not captured allocations: graph memory, stream-ordered, is the
     * device's graph pool's and outlives the context (it answers no pool
     * handle, and the primary context as its own). */
    if (spw_account_keys_on(SPW_KIND_DEVPTR, dev, SW_PT_CAPTURE, &dev_keys, &dev_n)) {
        spw_warn("device %d: out of memory listing its allocations before a context's end: "
                 "what the driver frees with it stays counted",
                 dev);
        return NULL;
    }
    if (!dev_n && !spw_ctx_owned_any())
        return NULL;
    if (!ctx)
        ctx = primary_of(dev);
    total = dev_n;
    for (size_t k = 0; ctx && k < OWNED_KINDS; k++)
        if (spw_ctx_owned_of(owned_kinds[k], ctx, &keys[k], &n[k]) == 0)
            total += n[k];
    struct spw_ctx_memory *m = NULL;
    if (ctx && total && !(m = malloc(sizeof *m + total * sizeof m->e[0])))
        spw_warn("device %d: out of memory before a context's end: what the driver frees with "
                 "it stays counted",
                 dev);
    if (m) {
        m->n = 0;
        m->taken = take;
        m->ctx = ctx;
        for (size_t i = 0; i < dev_n; i++)
            if (dies_with((CUdeviceptr)dev_keys[i], ctx))
                add(m, SPW_KIND_DEVPTR, dev_keys[i], take);
        for (size_t k = 0; k < OWNED_KINDS; k++)
            for (size_t i = 0; i < n[k]; i++)
                add(m, owned_kinds[k], keys[k][i], take);
        if (!m->n) {
            free(m);
            m = NULL;
        }
    }
    free(dev_keys);
    for (size_t k = 0; k < OWNED_KINDS; k++)
        free(keys[k]);
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
        if (!m->taken) {
            if (!freed)
                continue;
            if (g->kind != SPW_KIND_DEVPTR && take_note(g->kind, g->key, m->ctx) != 0)
                continue;
            if (spw_account_forget_pt(g->kind, g->key, &g->dev, &g->bytes, &g->reason) != 0)
                continue;
        }
        if (freed) {
            if (g->dev == SPILLWAY_HOST)
                spw_debug("host: %llu pinned bytes at %#llx freed with their context",
                          (unsigned long long)g->bytes, (unsigned long long)g->key);
            else
                spw_debug("device %d: %llu bytes at %#llx freed with their context", g->dev,
                          (unsigned long long)g->bytes, (unsigned long long)g->key);
            spw_release_passthrough(g->dev, g->bytes, g->reason);
        } else {
            spw_account_restore_pt(g->kind, g->key, g->dev, g->bytes, g->reason);
            if (g->kind != SPW_KIND_DEVPTR)
                spw_ctx_owned_undo(g->kind, g->key, m->ctx);
        }
    }
    free(m);
}
