/* The sub-allocator: what a cuMemAlloc-class request becomes on the arena.
 *
 * Small requests (up to a quarter of a chunk: 16 KiB for 2 MiB pages) are
 * rounded to a size class and packed into slabs: one chunk-sized extent
 * (64 KiB) cut into equal slots, with a bitmap of slots the program holds
 * (live) and of slots not reusable yet (used = live or waiting for their
 * sync point). Slabs of different classes share pages like any extents, so
 * a class holding one object costs a chunk, not a page. Each class has its
 * own lock, so threads allocating different sizes do not meet, and comes in
 * shards (SW_CLASS_SHARDS), so threads allocating one size do not either:
 * a slab belongs to one shard, a thread takes slots from its home shard's
 * slabs, and a free goes to its slot's slab. Larger
 * requests are blocks: one extent each, aligned to the granule (4 KiB);
 * placement puts blocks of half a page and more on a page boundary when
 * that costs no extra page.
 *
 * Slab objects and extent records are recycled, never freed while the
 * policy lives, so a lock-free page-table reader never touches freed
 * memory; readers check the object's state after loading it. */
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

#define LARGE_BUCKET 0x80000000u

/* 256, 512, 768, then four classes per power of two, up to a quarter of a
 * chunk: at most 25% rounding waste, and at least four slots per slab. */
int sw_classes_init(sw_device *d)
{
    size_t max = d->arena.chunk / 4;
    int n = 0;
    for (size_t sz = SW_MIN_ALIGN; sz <= max && n < SW_MAX_CLASSES; n++) {
        for (int k = 0; k < SW_CLASS_SHARDS; k++) {
            sw_class *c = &d->classes[n * SW_CLASS_SHARDS + k];
            pthread_mutex_init(&c->lock, NULL);
            c->size = (uint32_t)sz;
            c->nslots = (uint32_t)(d->arena.chunk / sz);
        }
        size_t step = sz < 1024 ? SW_MIN_ALIGN : ((size_t)1 << (63 - __builtin_clzll(sz))) / 4;
        sz += step;
    }
    d->nclasses = n;
    d->class_max = n ? d->classes[(n - 1) * SW_CLASS_SHARDS].size : 0;
    size_t entries = d->class_max / SW_MIN_ALIGN + 1;
    d->class_of = malloc(entries);
    if (!d->class_of)
        return -1;
    int c = 0;
    for (size_t i = 0; i < entries; i++) {
        while (c < n && d->classes[c * SW_CLASS_SHARDS].size < i * SW_MIN_ALIGN)
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

/* Full slabs sit on no list: the caller finds them through their extents
 * (slab_of_ext) before the class lists are freed. */
void sw_classes_destroy(sw_device *d)
{
    unsigned n = atomic_load(&d->arena.nsegs);
    for (unsigned i = 0; i < n; i++) {
        const sw_seg *g = &d->arena.seg[i];
        for (CUdeviceptr va = g->base; va < g->base + g->size; va += d->page) {
            sw_pte *e = sw_pt_get(&d->pol->pt, va);
            uintptr_t o = e ? atomic_load(&e->owner) : 0;
            if (!o || SW_OWN_TAG(o) == SW_OWN_VMM)
                continue;
            /* Every used extent starting in this page, once. */
            sw_ext *x = SW_OWN_TAG(o) == SW_OWN_EXT ? SW_OWN_PTR(o)
                                                    : atomic_load(&((sw_mixed *)SW_OWN_PTR(o))->at[0]);
            for (; x && sw_ext_base(x) < va + d->page; x = atomic_load(&x->next))
                if (sw_ext_base(x) >= va && atomic_load(&x->slab) &&
                    !atomic_load(&x->slab)->on_partial) {
                    free(atomic_load(&x->slab));
                    atomic_store(&x->slab, NULL);
                }
        }
    }
    for (int i = 0; i < d->nclasses * SW_CLASS_SHARDS; i++) {
        slab_list_free(d->classes[i].partial);
        slab_list_free(d->classes[i].spare);
        pthread_mutex_destroy(&d->classes[i].lock);
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
    return LARGE_BUCKET | (uint32_t)((size + d->arena.granule - 1) / d->arena.granule);
}

/* ---- slabs --------------------------------------------------------------- */

/* A slab object of class index cls on d: recycled from the class's spare
 * list, else new. Its class and device are written once, when it is new: a
 * lock-free reader holding a stale pointer to it reads them unlocked
 * (lock_if_slab_at), and a recycled object never changes class. */
static sw_slab *slab_get(sw_device *d, int cls)
{
    sw_class *c = &d->classes[cls];
    sw_slab *s = c->spare;
    size_t words = (c->nslots + 63) / 64;
    if (s) {
        c->spare = s->next;
    } else {
        s = malloc(sizeof *s + (2 * words + c->nslots) * sizeof(uint64_t) +
                   c->nslots * sizeof(uint32_t));
        if (!s)
            return NULL;
        s->live = (uint64_t *)(s + 1);
        s->used = s->live + words;
        s->ids = s->used + words;
        s->req = (uint32_t *)(s->ids + c->nslots);
        s->cls = (uint32_t)cls;
        s->dev = d;
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

/* A slot of the first partial slab; class lock held. */
static CUdeviceptr take_slot(sw_class *c, size_t size)
{
    sw_slab *s = c->partial;
    uint32_t slot = slab_take_slot(s);
    s->used[slot / 64] |= 1ull << (slot % 64);
    s->live[slot / 64] |= 1ull << (slot % 64);
    s->req[slot] = (uint32_t)size;
    s->ids[slot] = sw_new_id();
    if (++s->nused == s->nslots)
        partial_remove(c, s);
    return s->base + (CUdeviceptr)slot * c->size;
}

/* Size class cls's shard for the calling thread. */
static int home_of(int cls)
{
    return cls * SW_CLASS_SHARDS + (int)(sw_lane_of_thread() % SW_CLASS_SHARDS);
}

CUresult sw_slab_take(sw_device *d, int cls, size_t size, CUdeviceptr *out)
{
    sw_class *c = &d->classes[home_of(cls)];
    pthread_mutex_lock(&c->lock);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (c->partial) {
        *out = take_slot(c, size);
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

CUresult sw_slab_install(sw_device *d, int cls, sw_ext *e, size_t size, CUdeviceptr *out)
{
    int home = home_of(cls);
    sw_class *c = &d->classes[home];
    pthread_mutex_lock(&c->lock);
    sw_slab *s = slab_get(d, home);
    if (!s) {
        pthread_mutex_unlock(&c->lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    s->ext = e;
    s->base = sw_ext_base(e);
    sw_dev_lock(d);
    atomic_store_explicit(&e->slab, s, memory_order_release);
    sw_dev_unlock(d);
    partial_push(c, s);
    *out = take_slot(c, size);
    pthread_mutex_unlock(&c->lock);
    return CUDA_SUCCESS;
}

/* The extent at ptr as the lock-free readers find it: the page's owner, or
 * the mixed page's index; possibly stale, for the caller to check. */
static sw_ext *ext_fast(sw_pte *pte, CUdeviceptr ptr)
{
    uintptr_t o = atomic_load_explicit(&pte->owner, memory_order_acquire);
    if (SW_OWN_TAG(o) == SW_OWN_EXT)
        return SW_OWN_PTR(o);
    if (SW_OWN_TAG(o) != SW_OWN_MIXED)
        return NULL;
    sw_page *pg = atomic_load_explicit(&pte->page, memory_order_acquire);
    return pg ? sw_mixed_find(pg->dev, SW_OWN_PTR(o), ptr) : NULL;
}

/* The extent at ptr under the device lock: exact. */
static sw_ext *ext_locked(sw_pte *pte, CUdeviceptr ptr)
{
    sw_page *pg = atomic_load_explicit(&pte->page, memory_order_acquire);
    if (!pg)
        return NULL;
    sw_dev_lock(pg->dev);
    sw_ext *e = sw_ext_at(pg->dev, ptr);
    sw_dev_unlock(pg->dev);
    return e;
}

/* Locks the class of the slab that extent e holds if ptr lies in it. A
 * slab is installed and retired under its class lock and a slab extent's
 * range never changes, so what holds under that lock stays true until it
 * is dropped, however stale e was when it was read. A slab object stays
 * in its class for good (recycled through the class's spare list). */
static sw_slab *lock_if_slab_at(sw_ext *e, CUdeviceptr ptr, sw_class **cp)
{
    if (!e || atomic_load_explicit(&e->kind, memory_order_acquire) != SW_EXT_SLAB)
        return NULL;
    sw_slab *s = atomic_load_explicit(&e->slab, memory_order_acquire);
    if (!s)
        return NULL;
    sw_class *c = &s->dev->classes[s->cls];
    pthread_mutex_lock(&c->lock);
    if (s->ext == e && atomic_load_explicit(&e->slab, memory_order_relaxed) == s &&
        atomic_load_explicit(&e->kind, memory_order_relaxed) == SW_EXT_SLAB && ptr >= s->base &&
        ptr - s->base < s->dev->arena.chunk) {
        *cp = c;
        return s;
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* The slab at ptr with its class locked, or NULL: found without the device
 * lock (issue 14 item 6: it was taken twice for every small free), then,
 * on a miss that a race next door may have caused, under it. */
static sw_slab *slab_lock(sw_policy *p, CUdeviceptr ptr, sw_class **cp)
{
    sw_pte *pte = sw_pt_get(&p->pt, ptr);
    if (!pte)
        return NULL;
    sw_slab *s = lock_if_slab_at(ext_fast(pte, ptr), ptr, cp);
    return s ? s : lock_if_slab_at(ext_locked(pte, ptr), ptr, cp);
}

/* Gives an empty slab's extent back to the arena; under the class lock. */
static void slab_retire(sw_device *d, sw_class *c, sw_slab *s)
{
    if (s->on_partial)
        partial_remove(c, s);
    sw_dev_lock(d);
    sw_ext_discard(d, s->ext);
    sw_dev_unlock(d);
    s->ext = NULL;
    s->next = c->spare;
    c->spare = s;
}

/* ---- blocks and extents --------------------------------------------------- */

CUdeviceptr sw_block_install(sw_ext *e, size_t size)
{
    atomic_store_explicit(&e->req, size, memory_order_relaxed);
    e->id = sw_new_id();
    sw_ext_set_state(e, SW_LIVE);
    return sw_ext_base(e);
}

void sw_ext_discard(sw_device *d, sw_ext *e)
{
    CUdeviceptr lo = sw_ext_base(e), hi = sw_ext_end(e);
    sw_pages_unuse(d, e);
    sw_pages_settle(d, sw_ext_release(d, e), lo, hi);
}

/* ---- free, release, revive ---------------------------------------------- */

/* Claims e for its free if it is the live block whose base is ptr: one
 * compare-and-swap of state and incarnation, so a record that became
 * another block since it was read is never claimed. */
static bool claim(sw_ext *e, CUdeviceptr ptr)
{
    uint64_t st = atomic_load_explicit(&e->state, memory_order_acquire);
    if (sw_state_of(st) != SW_LIVE ||
        atomic_load_explicit(&e->kind, memory_order_relaxed) != SW_EXT_BLOCK ||
        sw_ext_base(e) != ptr)
        return false;
    return atomic_compare_exchange_strong_explicit(&e->state, &st,
                                                   (st & ~(uint64_t)0xff) | SW_PENDING,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

/* Marks the slab slot at ptr not live. */
static CUresult mark_slot(sw_policy *p, CUdeviceptr ptr, sw_device **dev, sw_freed *out)
{
    sw_class *c;
    sw_slab *s = slab_lock(p, ptr, &c);
    if (!s)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr off = ptr - s->base;
    uint32_t slot = (uint32_t)(off / c->size);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (off % c->size == 0 && slot < s->nslots && (s->live[slot / 64] >> (slot % 64) & 1)) {
        s->live[slot / 64] &= ~(1ull << (slot % 64));
        *dev = s->dev;
        *out = (sw_freed){ptr, s->cls / SW_CLASS_SHARDS, s->req[slot], NULL}; /* the size class */
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

static CUresult block_freed(sw_ext *e, CUdeviceptr ptr, sw_device **dev, sw_freed *out)
{
    *dev = e->dev;
    *out = (sw_freed){ptr, sw_bucket_of(e->dev, e->req), e->req, e};
    return CUDA_SUCCESS;
}

/* First without a lock (issue 14 item 6: the device lock on every free
 * made threads freeing at once wait for each other): the extent the
 * lock-free readers find, claimed if it is the block, else its slab's slot.
 * A miss, maybe from a race with a change next door, looks again under
 * the device lock. */
CUresult sw_mark_freed(sw_policy *p, CUdeviceptr ptr, sw_device **dev, sw_freed *out)
{
    sw_pte *pte = sw_pt_get(&p->pt, ptr);
    if (!pte)
        return CUDA_ERROR_INVALID_VALUE;
    sw_ext *e = ext_fast(pte, ptr);
    if (e && claim(e, ptr))
        return block_freed(e, ptr, dev, out);
    if (e && atomic_load(&e->kind) == SW_EXT_SLAB && mark_slot(p, ptr, dev, out) == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    e = ext_locked(pte, ptr);
    if (e && atomic_load(&e->kind) == SW_EXT_BLOCK && sw_ext_base(e) == ptr)
        return claim(e, ptr) ? block_freed(e, ptr, dev, out)
                             : CUDA_ERROR_INVALID_VALUE; /* freed already */
    return mark_slot(p, ptr, dev, out);
}

/* A freed block back to the arena; device lock held. Its record is still
 * the block's: nothing changes a pending block but this. */
static void release_block(sw_device *d, const sw_freed *f)
{
    sw_ext *e = f->block;
    if (atomic_load(&e->kind) == SW_EXT_BLOCK && sw_ext_base(e) == f->ptr &&
        sw_ext_state(e) == SW_PENDING) {
        sw_ext_set_state(e, SW_DEAD);
        sw_ext_discard(d, e);
    }
}

/* A freed slab slot back to its slab. */
static void release_slot(sw_device *d, const sw_freed *f)
{
    sw_class *c;
    sw_slab *s = slab_lock(d->pol, f->ptr, &c);
    if (!s)
        return;
    uint32_t slot = (uint32_t)((f->ptr - s->base) / c->size);
    s->used[slot / 64] &= ~(1ull << (slot % 64));
    if (--s->nused == 0)
        slab_retire(d, c, s);
    else if (!s->on_partial)
        partial_push(c, s);
    pthread_mutex_unlock(&c->lock);
}

void sw_release_all(sw_device *d, const sw_freed *f, size_t n)
{
    size_t blocks = 0;
    for (size_t i = 0; i < n; i++)
        blocks += f[i].block != NULL;
    if (blocks) {
        sw_dev_lock(d);
        for (size_t i = 0; i < n; i++)
            if (f[i].block)
                release_block(d, &f[i]);
        sw_dev_unlock(d);
    }
    for (size_t i = 0; i < n; i++)
        if (!f[i].block)
            release_slot(d, &f[i]);
}

void sw_revive(sw_device *d, const sw_freed *f, size_t size, bool fresh)
{
    if (f->block) {
        atomic_store_explicit(&f->block->req, size, memory_order_relaxed);
        if (fresh)
            f->block->id = sw_new_id();
        sw_ext_set_state(f->block, SW_LIVE);
        return;
    }
    sw_class *c;
    sw_slab *s = slab_lock(d->pol, f->ptr, &c);
    if (!s)
        return;
    uint32_t slot = (uint32_t)((f->ptr - s->base) / c->size);
    s->live[slot / 64] |= 1ull << (slot % 64);
    s->req[slot] = (uint32_t)size;
    if (fresh)
        s->ids[slot] = sw_new_id();
    pthread_mutex_unlock(&c->lock);
}

/* ---- lookup ------------------------------------------------------------- */

static CUresult lookup_slab(sw_policy *p, CUdeviceptr ptr, CUdeviceptr *base, size_t *size,
                            int *dev, sw_ids *ids)
{
    sw_class *c;
    sw_slab *s = slab_lock(p, ptr, &c);
    if (!s)
        return CUDA_ERROR_NOT_FOUND;
    uint32_t slot = (uint32_t)((ptr - s->base) / c->size);
    CUresult r = CUDA_ERROR_NOT_FOUND;
    CUdeviceptr at = s->base + (CUdeviceptr)slot * c->size;
    /* The rest of the slot past the requested size is no allocation's. */
    if (slot < s->nslots && (s->live[slot / 64] >> (slot % 64) & 1) && ptr - at < s->req[slot]) {
        *base = at;
        *size = s->req[slot];
        *dev = s->dev->id;
        ids->buffer = ids->block = s->ids[slot];
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

CUresult sw_lookup_owner(sw_policy *p, CUdeviceptr ptr, CUdeviceptr *base, size_t *size,
                         int *dev, sw_ids *ids)
{
    sw_pte *pte = sw_pt_get(&p->pt, ptr);
    if (!pte)
        return CUDA_ERROR_NOT_FOUND;
    uintptr_t o = atomic_load_explicit(&pte->owner, memory_order_acquire);
    if (SW_OWN_TAG(o) == SW_OWN_VMM) {
        sw_vmap *m = SW_OWN_PTR(o);
        pthread_mutex_lock(&p->handles_lock);
        CUresult r = CUDA_ERROR_NOT_FOUND;
        if (m->h && ptr >= m->va && ptr < m->va + m->size) {
            *base = m->va;
            *size = m->size;
            *dev = m->h->dev->id;
            ids->buffer = m->id;
            ids->block = m->h->block_id;
            r = CUDA_SUCCESS;
        }
        pthread_mutex_unlock(&p->handles_lock);
        return r;
    }
    sw_page *pg = atomic_load_explicit(&pte->page, memory_order_acquire);
    if (!o || !pg)
        return CUDA_ERROR_NOT_FOUND;
    sw_device *d = pg->dev;
    sw_dev_lock(d);
    sw_ext *e = sw_ext_at(d, ptr);
    int kind = e ? atomic_load(&e->kind) : SW_EXT_FREE;
    CUresult r = CUDA_ERROR_NOT_FOUND;
    /* A live block's fields were written before it became live; a look-up
     * racing the free of the same block is the program's race, as with the
     * driver. */
    /* Nor is the rest of the block's granule past its requested size. */
    if (kind == SW_EXT_BLOCK && sw_ext_state(e) == SW_LIVE && ptr - sw_ext_base(e) < e->req) {
        *base = sw_ext_base(e);
        *size = e->req;
        *dev = d->id;
        ids->buffer = ids->block = e->id;
        r = CUDA_SUCCESS;
    }
    sw_dev_unlock(d);
    return kind == SW_EXT_SLAB ? lookup_slab(p, ptr, base, size, dev, ids) : r;
}

/* Whether bytes from ptr stay inside [base, base + size), ptr in it. */
static CUresult inside(CUdeviceptr ptr, size_t bytes, CUdeviceptr base, size_t size)
{
    return bytes <= size - (size_t)(ptr - base) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult sw_range_check(sw_policy *p, CUdeviceptr ptr, size_t bytes)
{
    sw_pte *pte = sw_pt_get(&p->pt, ptr);
    uintptr_t o = pte ? atomic_load_explicit(&pte->owner, memory_order_acquire) : 0;
    if (SW_OWN_TAG(o) == SW_OWN_VMM)
        return CUDA_SUCCESS;
    /* The common case without a lock: a live block found through the
     * page's owner, as sw_mark_freed finds it. Its size was stored before
     * it became live; one read racing its free and reuse is the program's
     * race. */
    sw_ext *e = pte ? ext_fast(pte, ptr) : NULL;
    int kind = e ? atomic_load_explicit(&e->kind, memory_order_acquire) : SW_EXT_FREE;
    if (kind == SW_EXT_BLOCK && sw_ext_state(e) == SW_LIVE) {
        CUdeviceptr base = sw_ext_base(e);
        size_t req = atomic_load_explicit(&e->req, memory_order_relaxed);
        if (ptr >= base && ptr - base < req)
            return inside(ptr, bytes, base, req);
    }
    /* A slab slot under its class lock alone; a stale owner, or no
     * allocation at all, by the exact look-up (the device lock). */
    CUdeviceptr base;
    size_t size;
    int dev;
    sw_ids ids;
    CUresult r = kind == SW_EXT_SLAB ? lookup_slab(p, ptr, &base, &size, &dev, &ids)
                                     : CUDA_ERROR_NOT_FOUND;
    if (r != CUDA_SUCCESS && sw_lookup_owner(p, ptr, &base, &size, &dev, &ids) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    return inside(ptr, bytes, base, size);
}

bool sw_owner_range(sw_policy *p, sw_device *d, CUdeviceptr ptr, CUdeviceptr *va, size_t *n,
                    sw_heat **heat)
{
    sw_pte *pte = sw_pt_get(&p->pt, ptr);
    uintptr_t o = pte ? atomic_load_explicit(&pte->owner, memory_order_acquire) : 0;
    CUdeviceptr lo, hi;
    if (SW_OWN_TAG(o) == SW_OWN_VMM) {
        sw_vmap *m = SW_OWN_PTR(o);
        if (!m->h)
            return false;
        lo = m->va;
        hi = m->va + m->size;
        *heat = &m->heat;
    } else {
        sw_ext *e = sw_ext_at(d, ptr);
        if (!e || (atomic_load(&e->kind) == SW_EXT_BLOCK && sw_ext_state(e) != SW_LIVE))
            return false;
        lo = sw_ext_base(e);
        hi = sw_ext_end(e);
        *heat = &e->heat;
    }
    *va = lo & ~(CUdeviceptr)(p->page - 1);
    *n = (size_t)((hi - *va + p->page - 1) >> p->shift);
    return true;
}
