/* Spill and fill: which pages move, and when (DESIGN.md "Spill").
 *
 * Heat lives in the owner of a page (a block, a slab, a program mapping),
 * not in the page: a kernel argument names an allocation, and touching a
 * 40 GiB tensor must cost one store, not one per page. Owners are recycled
 * and never freed while the policy lives, so sw_touch needs no lock; a touch
 * racing a free only warms a dead owner.
 *
 * Spill happens on the allocation path, when the pool has no device page
 * left: the coldest pages backing live data move to pinned host pages (their
 * VAs and bytes stay) and the allocation gets the device pages they held.
 * Fill is asked for by the shim when a launch is about to use an owner with
 * pages on the host; it only takes device pages nobody needs (never spills
 * to make room), so spill and fill cannot chase each other. */
#include <stdlib.h>

#include "policy/internal.h"

sw_heat *sw_heat_of(sw_policy *p, CUdeviceptr va)
{
    sw_pte *e = sw_pt_get(&p->pt, va);
    uintptr_t o = e ? atomic_load_explicit(&e->owner, memory_order_acquire) : 0;
    switch (SW_OWN_TAG(o)) {
    case SW_OWN_BLOCK:
        return &((sw_block *)SW_OWN_PTR(o))->heat;
    case SW_OWN_SLAB:
        return &((sw_slab *)SW_OWN_PTR(o))->heat;
    case SW_OWN_VMM:
        return &((sw_vmap *)SW_OWN_PTR(o))->heat;
    default:
        return NULL;
    }
}

static uint64_t tick(sw_policy *p)
{
    return atomic_fetch_add_explicit(&p->clock, 1, memory_order_relaxed) + 1;
}

void sw_heat_init(sw_policy *p, sw_heat *h, CUdeviceptr va, uint32_t n)
{
    uint32_t host = 0;
    for (uint32_t i = 0; i < n; i++) {
        sw_page *pg = atomic_load_explicit(&sw_pt_get(&p->pt, va + ((CUdeviceptr)i << p->shift))->page,
                                           memory_order_relaxed);
        host += pg && pg->loc == SW_LOC_HOST;
    }
    atomic_store(&h->host_pages, host);
    atomic_store_explicit(&h->touched, tick(p), memory_order_relaxed);
}

bool sw_touch(sw_policy *p, CUdeviceptr ptr)
{
    if (!p || !p->page)
        return false;
    sw_heat *h = sw_heat_of(p, ptr);
    if (!h)
        return false;
    /* The clock is one cache line for all threads: an owner that is already
     * the newest (a buffer used launch after launch) costs no write to it. */
    if (atomic_load_explicit(&h->touched, memory_order_relaxed) !=
        atomic_load_explicit(&p->clock, memory_order_relaxed))
        atomic_store_explicit(&h->touched, tick(p), memory_order_relaxed);
    return atomic_load_explicit(&h->host_pages, memory_order_relaxed) != 0;
}

/* ---- victims --------------------------------------------------------------- */

typedef struct cand {
    CUdeviceptr va;
    uint64_t touched;
} cand;

static int colder_first(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->touched != y->touched)
        return x->touched < y->touched ? -1 : 1;
    return x->va < y->va ? -1 : x->va > y->va; /* a block's first pages first */
}

/* A page that could spill: device-resident, mapped at exactly one VA (an
 * alias would have to move too), owned by live data. */
static bool spillable(sw_policy *p, CUdeviceptr va, uint64_t *touched)
{
    sw_pte *e = sw_pt_get(&p->pt, va);
    sw_page *pg = e ? atomic_load_explicit(&e->page, memory_order_relaxed) : NULL;
    if (!pg || pg->loc != SW_LOC_DEVICE || pg->nmaps != 1)
        return false;
    sw_heat *h = sw_heat_of(p, va);
    if (!h)
        return false;
    *touched = atomic_load_explicit(&h->touched, memory_order_relaxed);
    return true;
}

/* Every spillable page of d, coldest first; handle and device locks held.
 * NULL (with *n = 0) when there is none or no memory to list them. */
static cand *list_victims(sw_policy *p, sw_device *d, size_t *n)
{
    size_t cap = d->pool.created, k = 0;
    cand *c = cap ? malloc(cap * sizeof *c) : NULL;
    *n = 0;
    if (!c)
        return NULL;
    for (uint32_t i = 0; i < d->arena.npages && k < cap; i++) {
        CUdeviceptr va = sw_arena_va(&d->arena, i, d->shift);
        if (d->arena.used[i] && d->arena.mapped[i] && spillable(p, va, &c[k].touched))
            c[k++].va = va;
    }
    for (sw_vmap *m = p->vmaps; m; m = m->next) {
        if (!m->h || m->h->dev != d)
            continue;
        for (size_t off = 0; off < m->size && k < cap; off += d->page)
            if (spillable(p, m->va + off, &c[k].touched))
                c[k++].va = m->va + off;
    }
    qsort(c, k, sizeof *c, colder_first);
    *n = k;
    return c;
}

/* Spills up to `want` of d's coldest pages; returns how many moved.
 * Handle and device locks held, gate closed, device synchronized. */
static size_t spill_coldest(sw_policy *p, sw_device *d, size_t want, CUresult *err)
{
    size_t n, moved = 0;
    cand *c = list_victims(p, d, &n);
    *err = CUDA_SUCCESS;
    for (size_t i = 0; i < n && moved < want; i++) {
        CUresult r = sw_move_page(p, d, c[i].va, SW_LOC_HOST);
        if (r == CUDA_SUCCESS)
            moved++;
        else if (r != CUDA_ERROR_NOT_SUPPORTED) {
            *err = r; /* host limit reached, or the driver refused */
            break;
        }
    }
    free(c);
    if (moved)
        atomic_fetch_add_explicit(&d->c.spill_events, 1, memory_order_relaxed);
    return moved;
}

/* Closes the gate and synchronizes d: afterwards no work of the program is
 * in flight or can be submitted through a bracket until sw_gate_open. The
 * sync also releases the frees it covers. */
static CUresult quiesce(sw_device *d)
{
    CUresult r = sw_gate_close(d->pol);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = sw_sync_and_collect(d)) != CUDA_SUCCESS)
        sw_gate_open(d->pol);
    return r;
}

CUresult sw_make_room(sw_device *d, size_t need)
{
    sw_policy *p = d->pol;
    CUresult r = quiesce(d);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&p->handles_lock);
    pthread_mutex_lock(&d->lock);
    size_t have = sw_pool_available(d), got;
    if (have < need && (r = sw_arena_reclaim(d, need - have, &got)) == CUDA_SUCCESS)
        have += got;
    if (r == CUDA_SUCCESS && have < need && d->cfg.spill) {
        CUresult err;
        have += spill_coldest(p, d, need - have, &err);
        if (have < need && err != CUDA_SUCCESS && err != CUDA_ERROR_OUT_OF_MEMORY)
            r = err;
    }
    if (r == CUDA_SUCCESS && have < need)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&d->lock);
    pthread_mutex_unlock(&p->handles_lock);
    sw_gate_open(p);
    return r;
}

/* ---- fill ------------------------------------------------------------------ */

/* Whether a fill could find a device page without spilling: a racy hint
 * that spares the sync when the pool is plainly full. */
static bool room_likely(sw_device *d)
{
    pthread_mutex_lock(&d->lock);
    bool room = d->pool.nfree || d->pool.created < d->pool.limit_pages ||
                d->arena.free_mapped || sw_freeq_pending(d, NULL);
    pthread_mutex_unlock(&d->lock);
    return room;
}

/* The pages [*va, *va + *n pages) of the live owner at ptr, with its heat;
 * handle lock held. False when ptr is in no live allocation. */
static bool owner_range(sw_policy *p, CUdeviceptr ptr, CUdeviceptr *va, uint32_t *n,
                        sw_heat **heat)
{
    sw_pte *e = sw_pt_get(&p->pt, ptr);
    uintptr_t o = e ? atomic_load_explicit(&e->owner, memory_order_acquire) : 0;
    switch (SW_OWN_TAG(o)) {
    case SW_OWN_BLOCK: {
        sw_block *b = SW_OWN_PTR(o);
        if (atomic_load_explicit(&b->state, memory_order_acquire) != SW_LIVE)
            return false;
        *va = b->base;
        *n = b->npages;
        *heat = &b->heat;
        return true;
    }
    case SW_OWN_SLAB: {
        sw_slab *s = SW_OWN_PTR(o);
        *va = s->base;
        *n = 1;
        *heat = &s->heat;
        return true;
    }
    case SW_OWN_VMM: {
        sw_vmap *m = SW_OWN_PTR(o);
        if (!m->h)
            return false;
        *va = m->va;
        *n = (uint32_t)(m->size >> p->shift);
        *heat = &m->heat;
        return true;
    }
    default:
        return false;
    }
}

CUresult sw_fill(sw_policy *p, CUdeviceptr ptr)
{
    if (!p || !p->page)
        return CUDA_ERROR_NOT_FOUND;
    sw_pte *e = sw_pt_get(&p->pt, ptr);
    sw_page *pg = e ? atomic_load_explicit(&e->page, memory_order_acquire) : NULL;
    sw_heat *h = sw_heat_of(p, ptr);
    if (!pg || !h)
        return CUDA_ERROR_NOT_FOUND;
    sw_device *d = pg->dev;
    if (!atomic_load(&h->host_pages) || !room_likely(d))
        return CUDA_SUCCESS;
    CUresult r = quiesce(d);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&p->handles_lock);
    pthread_mutex_lock(&d->lock);
    CUdeviceptr va;
    uint32_t n;
    size_t moved = 0;
    /* Looked up again: the owner may have been freed before the gate closed. */
    if (owner_range(p, ptr, &va, &n, &h)) {
        for (uint32_t i = 0; i < n && atomic_load(&h->host_pages); i++) {
            CUdeviceptr at = va + ((CUdeviceptr)i << p->shift);
            if (atomic_load(&sw_pt_get(&p->pt, at)->page)->loc != SW_LOC_HOST)
                continue;
            r = sw_move_page(p, d, at, SW_LOC_DEVICE);
            if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                r = CUDA_SUCCESS; /* no free device page: the rest stays on the host */
                break;
            }
            if (r != CUDA_SUCCESS)
                break;
            moved++;
        }
    }
    if (moved)
        atomic_fetch_add_explicit(&d->c.fill_events, 1, memory_order_relaxed);
    pthread_mutex_unlock(&d->lock);
    pthread_mutex_unlock(&p->handles_lock);
    sw_gate_open(p);
    return r;
}
