/* The sub-allocator: what a cuMemAlloc-class request gets.
 *
 * Small requests (up to half a page) are rounded to a size class and packed
 * into slabs: one arena page cut into equal slots, with a bitmap of slots the
 * program holds (live) and of slots not reusable yet (used = live or waiting
 * for their sync point). Each class has its own lock, so threads allocating
 * different sizes do not meet. Larger requests get a page-aligned range of
 * arena pages (sw_block) under the device lock.
 *
 * Block and slab objects are recycled, never freed while the policy lives, so
 * a lock-free page-table reader never touches freed memory; readers check the
 * object's state after loading it. */
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

#define LARGE_BUCKET 0x80000000u

/* 256, 512, 768, then four classes per power of two, up to half a page:
 * at most 25% rounding waste, and at least two slots per slab. */
int sw_classes_init(sw_device *d)
{
    size_t max = d->page / 2;
    int n = 0;
    for (size_t sz = SW_MIN_ALIGN; sz <= max && n < SW_MAX_CLASSES;) {
        sw_class *c = &d->classes[n++];
        pthread_mutex_init(&c->lock, NULL);
        c->size = (uint32_t)sz;
        c->nslots = (uint32_t)(d->page / sz);
        size_t step = sz < 1024 ? SW_MIN_ALIGN : ((size_t)1 << (63 - __builtin_clzll(sz))) / 4;
        sz += step;
    }
    d->nclasses = n;
    d->class_max = d->classes[n - 1].size;
    size_t entries = d->class_max / SW_MIN_ALIGN + 1;
    d->class_of = malloc(entries);
    if (!d->class_of)
        return -1;
    int c = 0;
    for (size_t i = 0; i < entries; i++) {
        while (c < n && d->classes[c].size < i * SW_MIN_ALIGN)
            c++;
        d->class_of[i] = (uint8_t)c;
    }
    return 0;
}

static void slab_list_free(sw_slab *s)
{
    while (s) {
        sw_slab *n = s->next;
        free(s);
        s = n;
    }
}

void sw_classes_destroy(sw_device *d)
{
    /* Full slabs and blocks sit on no list: find them through the arena's
     * owners first, while the slabs on the class lists still exist. */
    for (uint32_t i = 0; d->arena.used && i < d->arena.npages; i++) {
        if (!d->arena.used[i])
            continue;
        sw_pte *e = sw_pt_get(&d->pol->pt, sw_arena_va(&d->arena, i, d->shift));
        uintptr_t o = atomic_load(&e->owner);
        if (SW_OWN_TAG(o) == SW_OWN_SLAB && !((sw_slab *)SW_OWN_PTR(o))->on_partial)
            free(SW_OWN_PTR(o));
        if (SW_OWN_TAG(o) == SW_OWN_BLOCK) {
            sw_block *b = SW_OWN_PTR(o);
            i = b->start + b->npages - 1; /* its other pages point to it too */
            free(b);
        }
    }
    for (int i = 0; i < d->nclasses; i++) {
        slab_list_free(d->classes[i].partial);
        slab_list_free(d->classes[i].spare);
        pthread_mutex_destroy(&d->classes[i].lock);
    }
    while (d->spare_blocks) {
        sw_block *n = d->spare_blocks->next_free;
        free(d->spare_blocks);
        d->spare_blocks = n;
    }
    free(d->class_of);
    d->class_of = NULL;
}

int sw_class_of(const sw_device *d, size_t size)
{
    if (size > d->class_max)
        return -1;
    return d->class_of[(size + SW_MIN_ALIGN - 1) / SW_MIN_ALIGN];
}

uint32_t sw_bucket_of(const sw_device *d, size_t size)
{
    int c = sw_class_of(d, size);
    if (c >= 0)
        return (uint32_t)c;
    return LARGE_BUCKET | (uint32_t)((size + d->page - 1) >> d->shift);
}

static sw_pte *pte_of(sw_device *d, CUdeviceptr va)
{
    return sw_pt_get(&d->pol->pt, va);
}

/* ---- slabs --------------------------------------------------------------- */

static sw_slab *slab_get(sw_class *c)
{
    sw_slab *s = c->spare;
    size_t words = (c->nslots + 63) / 64;
    if (s) {
        c->spare = s->next;
    } else {
        s = malloc(sizeof *s + 2 * words * sizeof(uint64_t) + c->nslots * sizeof(uint32_t));
        if (!s)
            return NULL;
        s->live = (uint64_t *)(s + 1);
        s->used = s->live + words;
        s->req = (uint32_t *)(s->used + words);
    }
    memset(s->live, 0, 2 * words * sizeof(uint64_t));
    s->nslots = c->nslots;
    s->nused = 0;
    s->hint = 0;
    s->next = s->prev = NULL;
    s->on_partial = false;
    return s;
}

static void partial_push(sw_class *c, sw_slab *s)
{
    s->prev = NULL;
    s->next = c->partial;
    if (c->partial)
        c->partial->prev = s;
    c->partial = s;
    s->on_partial = true;
}

static void partial_remove(sw_class *c, sw_slab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        c->partial = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->next = s->prev = NULL;
    s->on_partial = false;
}

/* A new slab on a fresh arena page; under the class lock. */
static CUresult slab_new(sw_device *d, int cls, sw_map_mode mode)
{
    sw_class *c = &d->classes[cls];
    sw_slab *s = slab_get(c);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint32_t start;
    pthread_mutex_lock(&d->lock);
    CUresult r = sw_arena_alloc(d, 1, mode, &start);
    if (r == CUDA_SUCCESS) {
        s->cls = (uint32_t)cls;
        s->dev = d;
        s->start = start;
        s->base = sw_arena_va(&d->arena, start, d->shift);
        atomic_store_explicit(&pte_of(d, s->base)->owner, SW_OWN(s, SW_OWN_SLAB),
                              memory_order_release);
        sw_heat_init(d->pol, &s->heat, s->base, 1);
    }
    pthread_mutex_unlock(&d->lock);
    if (r != CUDA_SUCCESS) {
        s->next = c->spare;
        c->spare = s;
        return r;
    }
    sw_count_add(&d->c.backing, d->page, &d->c.peak_backing);
    partial_push(c, s);
    return CUDA_SUCCESS;
}

static uint32_t slab_take_slot(sw_slab *s)
{
    uint32_t words = (s->nslots + 63) / 64;
    for (uint32_t k = 0; k < words; k++) {
        uint32_t w = (s->hint + k) % words;
        uint64_t free_bits = ~s->used[w];
        if (w == words - 1 && s->nslots % 64)
            free_bits &= (1ull << (s->nslots % 64)) - 1;
        if (free_bits) {
            s->hint = w;
            return w * 64 + (uint32_t)__builtin_ctzll(free_bits);
        }
    }
    return SW_NONE; /* not reached: slabs on the partial list have a free slot */
}

CUresult sw_slab_alloc(sw_device *d, int cls, size_t size, sw_map_mode mode, CUdeviceptr *out)
{
    sw_class *c = &d->classes[cls];
    pthread_mutex_lock(&c->lock);
    if (!c->partial) {
        CUresult r = slab_new(d, cls, mode);
        if (r != CUDA_SUCCESS) {
            pthread_mutex_unlock(&c->lock);
            return r;
        }
    }
    sw_slab *s = c->partial;
    uint32_t slot = slab_take_slot(s);
    s->used[slot / 64] |= 1ull << (slot % 64);
    s->live[slot / 64] |= 1ull << (slot % 64);
    s->req[slot] = (uint32_t)size;
    if (++s->nused == s->nslots)
        partial_remove(c, s);
    pthread_mutex_unlock(&c->lock);
    *out = s->base + (CUdeviceptr)slot * c->size;
    return CUDA_SUCCESS;
}

/* The slab at ptr with its class locked, or NULL. */
static sw_slab *slab_lock(sw_policy *p, uintptr_t owner, CUdeviceptr ptr, sw_class **cp)
{
    sw_slab *s = SW_OWN_PTR(owner);
    sw_class *c = &s->dev->classes[s->cls];
    pthread_mutex_lock(&c->lock);
    /* The slab may have been retired between the load and the lock. */
    if (atomic_load_explicit(&sw_pt_get(&p->pt, ptr)->owner, memory_order_acquire) != owner) {
        pthread_mutex_unlock(&c->lock);
        return NULL;
    }
    *cp = c;
    return s;
}

/* Gives an empty slab's page back to the arena; under the class lock. */
static void slab_retire(sw_device *d, sw_class *c, sw_slab *s)
{
    if (s->on_partial)
        partial_remove(c, s);
    pthread_mutex_lock(&d->lock);
    atomic_store_explicit(&pte_of(d, s->base)->owner, 0, memory_order_release);
    sw_arena_free(d, s->start, 1);
    pthread_mutex_unlock(&d->lock);
    sw_count_sub(&d->c.backing, d->page);
    s->next = c->spare;
    c->spare = s;
}

/* ---- large blocks ------------------------------------------------------- */

static void set_owner(sw_device *d, uint32_t start, uint32_t n, uintptr_t owner)
{
    for (uint32_t i = 0; i < n; i++)
        atomic_store_explicit(&pte_of(d, sw_arena_va(&d->arena, start + i, d->shift))->owner,
                              owner, memory_order_release);
}

CUresult sw_block_alloc(sw_device *d, size_t size, sw_map_mode mode, CUdeviceptr *out)
{
    size_t np = (size + d->page - 1) >> d->shift;
    if (np > d->pool.limit_pages || np > d->arena.npages)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint32_t n = (uint32_t)np, start;
    pthread_mutex_lock(&d->lock);
    CUresult r = sw_arena_alloc(d, n, mode, &start);
    sw_block *b = NULL;
    if (r == CUDA_SUCCESS) {
        b = d->spare_blocks;
        if (b)
            d->spare_blocks = b->next_free;
        else if (!(b = malloc(sizeof *b))) {
            sw_arena_free(d, start, n);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (r == CUDA_SUCCESS) {
        b->base = sw_arena_va(&d->arena, start, d->shift);
        b->size = size;
        b->start = start;
        b->npages = n;
        b->dev = d;
        atomic_store_explicit(&b->state, SW_LIVE, memory_order_release);
        set_owner(d, start, n, SW_OWN(b, SW_OWN_BLOCK));
        sw_heat_init(d->pol, &b->heat, b->base, n);
    }
    pthread_mutex_unlock(&d->lock);
    if (r != CUDA_SUCCESS)
        return r;
    sw_count_add(&d->c.backing, (uint64_t)n << d->shift, &d->c.peak_backing);
    *out = b->base;
    return CUDA_SUCCESS;
}

/* ---- free, release, revive ---------------------------------------------- */

CUresult sw_mark_freed(sw_policy *p, CUdeviceptr ptr, sw_device **dev, uint32_t *bucket,
                       size_t *bytes)
{
    sw_pte *e = sw_pt_get(&p->pt, ptr);
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t o = atomic_load_explicit(&e->owner, memory_order_acquire);
    if (SW_OWN_TAG(o) == SW_OWN_BLOCK) {
        sw_block *b = SW_OWN_PTR(o);
        int live = SW_LIVE;
        if (b->base != ptr ||
            !atomic_compare_exchange_strong(&b->state, &live, SW_PENDING))
            return CUDA_ERROR_INVALID_VALUE;
        *dev = b->dev;
        *bucket = LARGE_BUCKET | b->npages;
        *bytes = b->size;
        return CUDA_SUCCESS;
    }
    if (SW_OWN_TAG(o) != SW_OWN_SLAB)
        return CUDA_ERROR_INVALID_VALUE;
    sw_class *c;
    sw_slab *s = slab_lock(p, o, ptr, &c);
    if (!s)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr off = ptr - s->base;
    uint32_t slot = (uint32_t)(off / c->size);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (off % c->size == 0 && slot < s->nslots && (s->live[slot / 64] >> (slot % 64) & 1)) {
        s->live[slot / 64] &= ~(1ull << (slot % 64));
        *dev = s->dev;
        *bucket = s->cls;
        *bytes = s->req[slot];
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

void sw_release(sw_device *d, CUdeviceptr ptr, uint32_t bucket)
{
    uintptr_t o = atomic_load_explicit(&pte_of(d, ptr)->owner, memory_order_acquire);
    if (bucket & LARGE_BUCKET) {
        sw_block *b = SW_OWN_PTR(o);
        pthread_mutex_lock(&d->lock);
        uint32_t n = b->npages; /* b may be reused once the lock is dropped */
        atomic_store_explicit(&b->state, SW_DEAD, memory_order_release);
        set_owner(d, b->start, n, 0);
        sw_arena_free(d, b->start, n);
        b->next_free = d->spare_blocks;
        d->spare_blocks = b;
        pthread_mutex_unlock(&d->lock);
        sw_count_sub(&d->c.backing, (uint64_t)n << d->shift);
        return;
    }
    sw_slab *s = SW_OWN_PTR(o);
    sw_class *c = &d->classes[bucket];
    pthread_mutex_lock(&c->lock);
    uint32_t slot = (uint32_t)((ptr - s->base) / c->size);
    s->used[slot / 64] &= ~(1ull << (slot % 64));
    if (--s->nused == 0)
        slab_retire(d, c, s);
    else if (!s->on_partial)
        partial_push(c, s);
    pthread_mutex_unlock(&c->lock);
}

void sw_revive(sw_device *d, CUdeviceptr ptr, uint32_t bucket, size_t size)
{
    uintptr_t o = atomic_load_explicit(&pte_of(d, ptr)->owner, memory_order_acquire);
    if (bucket & LARGE_BUCKET) {
        sw_block *b = SW_OWN_PTR(o);
        b->size = size;
        atomic_store_explicit(&b->state, SW_LIVE, memory_order_release);
        return;
    }
    sw_slab *s = SW_OWN_PTR(o);
    sw_class *c = &d->classes[bucket];
    pthread_mutex_lock(&c->lock);
    uint32_t slot = (uint32_t)((ptr - s->base) / c->size);
    s->live[slot / 64] |= 1ull << (slot % 64);
    s->req[slot] = (uint32_t)size;
    pthread_mutex_unlock(&c->lock);
}

/* ---- lookup ------------------------------------------------------------- */

CUresult sw_lookup_owner(sw_policy *p, CUdeviceptr ptr, CUdeviceptr *base, size_t *size,
                         int *dev)
{
    sw_pte *e = sw_pt_get(&p->pt, ptr);
    if (!e)
        return CUDA_ERROR_NOT_FOUND;
    uintptr_t o = atomic_load_explicit(&e->owner, memory_order_acquire);
    switch (SW_OWN_TAG(o)) {
    case SW_OWN_BLOCK: {
        sw_block *b = SW_OWN_PTR(o);
        /* State first: a live block's fields were written before it became
         * live. A lookup racing the free of the same block is the program's
         * race (as with the driver); a recycled block fails the range check. */
        if (atomic_load_explicit(&b->state, memory_order_acquire) != SW_LIVE)
            return CUDA_ERROR_NOT_FOUND;
        CUdeviceptr bb = b->base;
        size_t bs = b->size;
        int dv = b->dev->id;
        if (ptr < bb || ptr >= bb + ((CUdeviceptr)b->npages << p->shift))
            return CUDA_ERROR_NOT_FOUND;
        *base = bb;
        *size = bs;
        *dev = dv;
        return CUDA_SUCCESS;
    }
    case SW_OWN_SLAB: {
        sw_class *c;
        sw_slab *s = slab_lock(p, o, ptr, &c);
        if (!s)
            return CUDA_ERROR_NOT_FOUND;
        uint32_t slot = (uint32_t)((ptr - s->base) / c->size);
        CUresult r = CUDA_ERROR_NOT_FOUND;
        if (slot < s->nslots && (s->live[slot / 64] >> (slot % 64) & 1)) {
            *base = s->base + (CUdeviceptr)slot * c->size;
            *size = s->req[slot];
            *dev = s->dev->id;
            r = CUDA_SUCCESS;
        }
        pthread_mutex_unlock(&c->lock);
        return r;
    }
    case SW_OWN_VMM: {
        sw_vmap *m = SW_OWN_PTR(o);
        pthread_mutex_lock(&p->handles_lock);
        CUresult r = CUDA_ERROR_NOT_FOUND;
        if (m->h && ptr >= m->va && ptr < m->va + m->size) {
            *base = m->va;
            *size = m->size;
            *dev = m->h->dev->id;
            r = CUDA_SUCCESS;
        }
        pthread_mutex_unlock(&p->handles_lock);
        return r;
    }
    default:
        return CUDA_ERROR_NOT_FOUND;
    }
}
