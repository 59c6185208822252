/* Counted handles with driver mappings (vmm_live.h). A handle gets an entry
 * at its first mapping; cuMemRelease of a mapped one moves its count from
 * the account (whose key the driver may hand out again) into the entry,
 * which gives it back, and its pages to the pool, at its last unmap.
 * These are rare calls (exported and shareable memory, NCCL's buffers):
 * one lock, linear scans. */
#include "shim/vmm_live.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "shim/handler.h"
#include "shim/log.h"

struct live {
    uint64_t key;     /* 0 once released: only its mappings name it then */
    unsigned maps;    /* the driver's mappings of it */
    unsigned refs;    /* references cuMemRetainAllocationHandle added */
    bool held;        /* released while mapped: dev, bytes, reason held */
    int dev, reason;
    uint64_t bytes;
};

struct mapping {
    CUdeviceptr va;
    size_t size;
    struct live *l;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct live **lives; /* under lock */
static size_t nlives, cap_lives;
static struct mapping *maps;
static size_t nmaps, cap_maps;
/* Entries alive: the unmap of memory no counted handle backs skips the lock. */
static _Atomic size_t live_count;

static bool grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? 2 * *cap : 16;
    void *a = realloc(*arr, c * elem);
    if (!a)
        return false;
    *arr = a;
    *cap = c;
    return true;
}

/* Under lock. */
static struct live *find(uint64_t key)
{
    for (size_t i = 0; i < nlives; i++)
        if (lives[i]->key == key)
            return lives[i];
    return NULL;
}

static void drop(struct live *l)
{
    for (size_t i = 0; i < nlives; i++)
        if (lives[i] == l) {
            lives[i] = lives[--nlives];
            break;
        }
    atomic_fetch_sub_explicit(&live_count, 1, memory_order_relaxed);
    free(l);
}

void spw_live_mapped(uint64_t key, CUdeviceptr va, size_t size)
{
    if (!key || !spw_account_counted(SPW_KIND_HANDLE, key))
        return;
    pthread_mutex_lock(&lock);
    struct live *l = find(key);
    if (!l && grow((void **)&lives, &cap_lives, nlives, sizeof *lives) && (l = calloc(1, sizeof *l))) {
        l->key = key;
        lives[nlives++] = l;
        atomic_fetch_add_explicit(&live_count, 1, memory_order_relaxed);
    }
    if (l && grow((void **)&maps, &cap_maps, nmaps, sizeof *maps)) {
        maps[nmaps++] = (struct mapping){va, size, l};
        l->maps++;
    } else {
        /* Its count then leaves at cuMemRelease, as with no mapping. */
        spw_warn("out of memory recording a mapping of %zu bytes: its count may leave before "
                 "its memory does",
                 size);
        if (l && !l->maps)
            drop(l);
    }
    pthread_mutex_unlock(&lock);
}

void spw_live_retained(uint64_t key)
{
    if (!key) /* released entries have key 0 */
        return;
    pthread_mutex_lock(&lock);
    struct live *l = find(key);
    if (l)
        l->refs++;
    pthread_mutex_unlock(&lock);
}

CUresult spw_live_release(uint64_t key, CUresult (*release)(uint64_t key, void *arg), void *arg)
{
    pthread_mutex_lock(&lock); /* across the call: an unmap meanwhile sees the outcome */
    struct live *l = key ? find(key) : NULL;
    CUresult r;
    if (l && l->refs) {
        if ((r = release(key, arg)) == CUDA_SUCCESS)
            l->refs--;
        pthread_mutex_unlock(&lock);
        return r;
    }
    int dev, why;
    uint64_t bytes;
    bool known = spw_account_forget_pt(SPW_KIND_HANDLE, key, &dev, &bytes, &why) == 0;
    r = release(key, arg);
    if (known && r != CUDA_SUCCESS) {
        spw_account_restore_pt(SPW_KIND_HANDLE, key, dev, bytes, why);
    } else if (known && l && l->maps) {
        *l = (struct live){.maps = l->maps, .held = true, .dev = dev, .reason = why, .bytes = bytes};
    } else if (known) {
        spw_account_release_pt(dev, bytes, why);
        spw_pool_unlend(dev, why, bytes);
        spw_mark_counted();
    }
    if (r == CUDA_SUCCESS && l && !l->held)
        drop(l);
    pthread_mutex_unlock(&lock);
    return r;
}

void spw_live_unmapped(CUdeviceptr va, size_t size)
{
    if (!atomic_load_explicit(&live_count, memory_order_relaxed))
        return;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmaps;) {
        struct mapping *m = &maps[i];
        if (m->va < va || m->va - va >= size) {
            i++;
            continue;
        }
        struct live *l = m->l;
        *m = maps[--nmaps];
        if (--l->maps)
            continue;
        if (l->held) {
            spw_account_release_pt(l->dev, l->bytes, l->reason);
            spw_pool_unlend(l->dev, l->reason, l->bytes);
            spw_mark_counted();
            drop(l);
        } else if (!l->refs) {
            drop(l); /* counted under its key again, freed at its release */
        }
    }
    pthread_mutex_unlock(&lock);
}
