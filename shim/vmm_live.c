/* Counted handles with driver mappings (vmm_live.h), and the end of pool
 * handles released while mapped. A handle gets an entry
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
#include "shim/size_text.h"
#include "policy/policy.h"

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

/* Device memory a held entry keeps out of the maps is still what a
 * pointer names (spw_account_unpooled_live): +1 held, -1 no longer. */
static void held_step(const struct live *l, int sign)
{
    if (l->dev != SPILLWAY_HOST)
        spw_account_unpooled_held(sign);
}

void spw_live_mapped(uint64_t key, CUdeviceptr va, size_t size)
{
    if (!key)
        return;
    /* Asked under the lock: a release settling meanwhile takes the entry
     * out of the account and may put it back. */
    pthread_mutex_lock(&lock);
    if (!spw_account_counted(SPW_KIND_HANDLE, key)) {
        pthread_mutex_unlock(&lock);
        return;
    }
    struct live *l = find(key);
    bool made = false;
    if (!l && grow((void **)&lives, &cap_lives, nlives, sizeof *lives) && (l = calloc(1, sizeof *l))) {
        l->key = key;
        lives[nlives++] = l;
        atomic_fetch_add_explicit(&live_count, 1, memory_order_relaxed);
        made = true;
    }
    if (l && grow((void **)&maps, &cap_maps, nmaps, sizeof *maps)) {
        maps[nmaps++] = (struct mapping){va, size, l};
        l->maps++;
    } else {
        /* Its count then leaves at cuMemRelease, as with no mapping. */
        char b[SPW_SIZE_TEXT_MAX];
        spw_warn("out of memory recording a mapping of %s: its count may leave before "
                 "its memory does",
                 spw_size_text(b, sizeof b, size));
        if (made)
            drop(l);
    }
    pthread_mutex_unlock(&lock);
}

/* The entry whose mapping holds va, under lock. */
static struct live *mapped_at(CUdeviceptr va)
{
    for (size_t i = 0; i < nmaps; i++)
        if (va >= maps[i].va && va - maps[i].va < maps[i].size)
            return maps[i].l;
    return NULL;
}

void spw_live_retained(uint64_t key, CUdeviceptr va)
{
    if (!key)
        return;
    pthread_mutex_lock(&lock);
    struct live *l = mapped_at(va);
    if (l && l->held) {
        /* Released, and the program holds it again: counted under the
         * key it holds now, freed at that key's release. */
        spw_account_restore_pt(SPW_KIND_HANDLE, key, l->dev, l->bytes, l->reason);
        held_step(l, -1); /* the maps hold it again */
        l->held = false;
        l->key = key;
    } else if (l && l->key == key) {
        l->refs++;
    }
    pthread_mutex_unlock(&lock);
}

CUresult spw_live_release(uint64_t key, CUresult (*release)(uint64_t key, void *arg, bool *last),
                          void *arg)
{
    pthread_mutex_lock(&lock); /* across the call: an unmap meanwhile sees the outcome */
    struct live *l = key ? find(key) : NULL;
    int dev, why;
    uint64_t bytes;
    bool known = spw_account_forget_pt(SPW_KIND_HANDLE, key, &dev, &bytes, &why) == 0, last = true;
    CUresult r = release(key, arg, &last);
    if (r == CUDA_SUCCESS && l && l->refs) {
        l->refs--;
        last = false;
    }
    if (known && (r != CUDA_SUCCESS || !last)) {
        spw_account_restore_pt(SPW_KIND_HANDLE, key, dev, bytes, why); /* still referenced */
    } else if (known && l && l->maps) {
        l->held = true;
        l->key = 0;
        l->dev = dev;
        l->reason = why;
        l->bytes = bytes;
        held_step(l, +1); /* its mappings name it still */
    } else if (known) {
        spw_release_passthrough(dev, bytes, why);
    }
    if (r == CUDA_SUCCESS && last && l && !l->held) {
        if (l->maps)
            l->key = 0; /* nothing counted to hold: its mappings only */
        else
            drop(l);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Forgets mapping i (under lock) and settles its entry. */
static void unmap_one(size_t i)
{
    struct live *l = maps[i].l;
    maps[i] = maps[--nmaps];
    if (--l->maps)
        return;
    if (l->held) {
        spw_release_passthrough(l->dev, l->bytes, l->reason);
        held_step(l, -1);
        drop(l);
    } else if (!l->refs || !l->key) {
        drop(l); /* counted under its key, if at all, until its release */
    }
}

void spw_live_unmapped(CUdeviceptr va, size_t size)
{
    if (!atomic_load_explicit(&live_count, memory_order_relaxed))
        return;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmaps;) {
        if (maps[i].va >= va && maps[i].va - va < size)
            unmap_one(i);
        else
            i++;
    }
    pthread_mutex_unlock(&lock);
}

void spw_live_unmapped_of(uint64_t key, CUdeviceptr va)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmaps; i++)
        if (maps[i].va == va && maps[i].l->key == key) {
            unmap_one(i);
            break;
        }
    pthread_mutex_unlock(&lock);
}

/* A counted handle whose memory is gone: its count and lend go back. */
static void gone_now(uint64_t key)
{
    int dev, why;
    uint64_t bytes;
    if (spw_account_forget_pt(SPW_KIND_HANDLE, key, &dev, &bytes, &why) == 0)
        spw_release_passthrough(dev, bytes, why);
}

CUresult spw_live_pool_unmap(sw_policy *p, CUdeviceptr va, size_t size)
{
    sw_vmm_gone gone;
    pthread_mutex_lock(&lock); /* a release meanwhile sees the outcome */
    CUresult r = sw_vmm_unmap(p, va, size, &gone);
    for (size_t i = 0; i < gone.n; i++)
        gone_now(gone.h[i]);
    pthread_mutex_unlock(&lock);
    free(gone.h);
    return r;
}

int spw_live_retag(uint64_t key, int reason)
{
    pthread_mutex_lock(&lock); /* not while a release has the entry out */
    int r = spw_account_retag(SPW_KIND_HANDLE, key, reason);
    pthread_mutex_unlock(&lock);
    return r;
}
