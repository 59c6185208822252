/* Which context each array, mipmapped array and pinned host allocation
 * was made in (ctx_owned.h): one sharded map per kind, key -> context
 * (kept in the entry's size field). */
#include "shim/ctx_owned.h"

#include "shim/driver.h"
#include "shim/log.h"
#include "shim/ptrmap.h"

#include <pthread.h>
#include <stdatomic.h>

enum { OWNED_ARRAY, OWNED_MIPMAP, OWNED_HOST, OWNED_KINDS };

static struct spw_map owned[OWNED_KINDS];
static pthread_once_t owned_once = PTHREAD_ONCE_INIT;
static atomic_bool any; /* some object was ever noted */

static void init_owned(void)
{
    for (int i = 0; i < OWNED_KINDS; i++)
        spw_map_init(&owned[i]);
}

/* kind's map, or NULL for a kind whose context is not noted. */
static struct spw_map *map_of(enum spw_kind kind)
{
    int i = kind == SPW_KIND_ARRAY ? OWNED_ARRAY : kind == SPW_KIND_MIPMAP ? OWNED_MIPMAP
          : kind == SPW_KIND_HOSTPTR ? OWNED_HOST : -1;
    if (i < 0)
        return NULL;
    pthread_once(&owned_once, init_owned);
    return &owned[i];
}

int spw_ctx_owned_any(void)
{
    return atomic_load_explicit(&any, memory_order_acquire);
}

static void insert(struct spw_map *m, uint64_t key, CUcontext ctx)
{
    if (spw_map_insert(m, key, 0, (uint64_t)(uintptr_t)ctx, NULL) < 0)
        spw_warn("out of memory noting the context of %#llx: it stays counted after its context "
                 "is destroyed, until freed",
                 (unsigned long long)key);
}

void spw_ctx_owned_made(enum spw_kind kind, uint64_t key)
{
    struct spw_map *m = map_of(kind);
    CUcontext ctx = NULL;
    /* The driver made it in this context a moment ago: it answers. */
    if (m && key && spw_drv.cuCtxGetCurrent && spw_drv.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx) {
        if (!atomic_load_explicit(&any, memory_order_relaxed))
            atomic_store(&any, true);
        insert(m, key, ctx);
    }
}

CUcontext spw_ctx_owned_take(enum spw_kind kind, uint64_t key)
{
    struct spw_map *m = map_of(kind);
    struct spw_map_entry e;
    return m && spw_map_remove(m, key, &e) == 0 ? (CUcontext)(uintptr_t)e.size : NULL;
}

void spw_ctx_owned_undo(enum spw_kind kind, uint64_t key, CUcontext ctx)
{
    struct spw_map *m = map_of(kind);
    if (m && ctx)
        insert(m, key, ctx);
}

CUresult spw_ctx_owned_settle(enum spw_kind kind, uint64_t key, CUcontext ctx, CUresult r)
{
    if (r != CUDA_SUCCESS)
        spw_ctx_owned_undo(kind, key, ctx);
    return r;
}

static int of_context(const struct spw_map_entry *e, void *ctx)
{
    return (CUcontext)(uintptr_t)e->size == (CUcontext)ctx;
}

int spw_ctx_owned_of(enum spw_kind kind, CUcontext ctx, uint64_t **keys, size_t *n)
{
    struct spw_map *m = map_of(kind);
    *keys = NULL;
    *n = 0;
    if (!m || !ctx)
        return 0;
    if (spw_map_keys(m, of_context, ctx, keys, n) != 0) {
        spw_warn("out of memory listing what context %p made: its arrays and pinned host memory "
                 "stay counted after its end, until freed",
                 (void *)ctx);
        return -1;
    }
    return 0;
}
