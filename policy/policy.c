/* The policy object and device setup (creation, the page size, a device's
 * build and teardown), lookups and peer access: the API of policy.h less
 * allocation and free (alloc.c). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

#define HANDLE_TAG 0x5357000000000000ull /* "SW": never a canonical pointer */

bool sw_device_ready(const sw_policy *p, int dev)
{
    return sw_dev((sw_policy *)p, dev) != NULL;
}

size_t sw_page_size(const sw_policy *p)
{
    return p->page;
}

size_t sw_footprint(const sw_policy *p, int dev, size_t size)
{
    const sw_device *d = sw_dev((sw_policy *)p, dev);
    if (!d || size == 0)
        return size;
    int cls = sw_class_of(d, size);
    if (cls >= 0)
        return d->classes[cls * SW_CLASS_SHARDS].size;
    size_t g = d->arena.granule;
    return (size + g - 1) / g * g;
}

CUresult sw_policy_create(const sw_backend *backend, sw_policy **out)
{
    if (!backend || !out)
        return CUDA_ERROR_INVALID_VALUE;
    /* Over-aligned members (queue shards on their own cache lines). */
    size_t size = (sizeof(sw_policy) + 63) / 64 * 64;
    sw_policy *p = aligned_alloc(64, size);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(p, 0, size);
    p->be = *backend;
    p->handle_tag = HANDLE_TAG;
    atomic_init(&p->clock, 1);
    pthread_mutex_init(&p->handles_lock, NULL);
    pthread_mutex_init(&p->reserve_lock, NULL);
    pthread_mutex_init(&p->graves_lock, NULL);
    pthread_cond_init(&p->reserve_cv, NULL);
    /* Every device's gate exists from the start: brackets name devices
     * whether or not their pool is set up yet. */
    for (int i = 0; i < SW_MAX_DEVICES; i++) {
        p->dev[i].pol = p;
        p->dev[i].id = i;
        if (sw_gate_init(&p->gate[i]) || sw_syncer_init(&p->syncer[i], p, i)) {
            free(p);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    *out = p;
    return CUDA_SUCCESS;
}

/* A refused free of VA is tried once more: the reservation would leak. */
static CUresult va_free2(sw_policy *p, CUdeviceptr va, size_t size)
{
    CUresult r = p->be.va_free(p->be.ctx, va, size);
    return r == CUDA_SUCCESS ? r : p->be.va_free(p->be.ctx, va, size);
}

/* Scratch slots a refused unmap left mapped, unmapped before any page is
 * released: a page there may also back a program VA (a move that
 * completed) and go back to the pool with it. The device was synchronized:
 * no copy runs. Those the driver still refuses keep their pages. */
static void unstick_all(sw_device *d)
{
    const sw_backend *be = &d->pol->be;
    for (unsigned i = 0; d->scratch && i < SW_SCRATCH_PAGES; i++) {
        sw_stuck st = d->stuck[i];
        if (!st.h || be->unmap(be->ctx, d->scratch + ((CUdeviceptr)i << d->shift), d->page) != CUDA_SUCCESS)
            continue;
        if (st.give_back)
            (void)be->page_release(be->ctx, st.h); /* taken from the pool: not among its pages */
        d->stuck[i] = (sw_stuck){0};
    }
}

void sw_context_gone(sw_policy *p, void *where)
{
    /* Any device's blocks: one of another device freed on a stream of
     * this context has its event here, and no sync of its own device
     * covers that free (sw_freeq_push). */
    int hi = atomic_load_explicit(&p->ndev_hi, memory_order_acquire);
    for (int i = 0; i < hi; i++) {
        sw_device *x = sw_dev(p, i);
        if (x)
            sw_freeq_context_gone(x, where);
    }
}

void sw_context_reset(sw_policy *p, int dev, void *where)
{
    sw_context_gone(p, where);
    sw_device *d = sw_dev(p, dev);
    if (!d)
        return;
    sw_freeq_collect(d, false); /* what a sync point covered */
    sw_dev_lock(d);
    for (int i = 0; i < 2; i++)
        if (d->mover[i]) {
            d->mover[i] = NULL;
            atomic_fetch_sub_explicit(&d->c.streams, 1, memory_order_relaxed);
        }
    sw_dev_unlock(d);
}

/* Frees what sw_device_init built, in reverse; first error wins. */
static CUresult device_teardown(sw_device *d)
{
    sw_policy *p = d->pol;
    unsigned nsegs = atomic_load(&d->arena.nsegs);
    /* Unmapping below must not race work the program left queued. */
    CUresult first = nsegs ? p->be.synchronize(p->be.ctx, d->id) : CUDA_SUCCESS, r;
    for (int i = 0; i < 2; i++) {
        if (!d->mover[i])
            continue;
        if ((r = p->be.stream_destroy(p->be.ctx, d->id, d->mover[i])) == CUDA_SUCCESS)
            atomic_fetch_sub_explicit(&d->c.streams, 1, memory_order_relaxed);
        else if (first == CUDA_SUCCESS)
            first = r;
    }
    if ((r = sw_freeq_destroy(d)) != CUDA_SUCCESS && first == CUDA_SUCCESS)
        first = r;
    sw_dev_lock(d);
    unstick_all(d);
    sw_classes_destroy(d);
    if ((r = sw_pages_unmap_all(d)) != CUDA_SUCCESS && first == CUDA_SUCCESS)
        first = r;
    if ((r = sw_pool_destroy(d)) != CUDA_SUCCESS && first == CUDA_SUCCESS)
        first = r;
    sw_page_objs_destroy(d);
    sw_arena_destroy(d);
    while (d->spare_mixed) {
        sw_mixed *m = d->spare_mixed->next_free;
        free(d->spare_mixed);
        d->spare_mixed = m;
    }
    sw_dev_unlock(d);
    for (unsigned i = 0; i < nsegs; i++) {
        if ((r = va_free2(p, d->arena.seg[i].base, d->arena.seg[i].size)) == CUDA_SUCCESS)
            sw_count_sub(&d->c.va_bytes, d->arena.seg[i].size);
        else if (first == CUDA_SUCCESS)
            first = r;
    }
    atomic_store(&d->arena.nsegs, 0);
    if (d->scratch) {
        if ((r = va_free2(p, d->scratch, (size_t)SW_SCRATCH_PAGES << d->shift)) == CUDA_SUCCESS)
            sw_count_sub(&d->c.va_bytes, (uint64_t)SW_SCRATCH_PAGES << d->shift);
        else if (first == CUDA_SUCCESS)
            first = r;
    }
    d->scratch = 0;
    pthread_mutex_destroy(&d->lock);
    atomic_store(&d->ready, false);
    return first;
}

CUresult sw_policy_destroy(sw_policy *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult first = CUDA_SUCCESS;
    sw_reserve_stop(p);
    for (int i = 0; i < SW_MAX_DEVICES; i++) {
        CUresult r = sw_dev(p, i) ? p->be.synchronize(p->be.ctx, i) : CUDA_SUCCESS;
        if (first == CUDA_SUCCESS)
            first = r;
    }
    CUresult r = sw_vmm_destroy_all(p);
    if (first == CUDA_SUCCESS)
        first = r;
    for (int i = 0; i < SW_MAX_DEVICES; i++) {
        if (!sw_dev(p, i))
            continue;
        CUresult r = device_teardown(&p->dev[i]);
        if (first == CUDA_SUCCESS)
            first = r;
    }
    sw_pt_destroy(&p->pt);
    sw_spans_bury_all(p);
    pthread_mutex_destroy(&p->graves_lock);
    pthread_mutex_destroy(&p->handles_lock);
    pthread_mutex_destroy(&p->reserve_lock);
    pthread_cond_destroy(&p->reserve_cv);
    for (int i = 0; i < SW_MAX_DEVICES; i++) {
        sw_syncer_destroy(&p->syncer[i]);
        sw_gate_destroy(&p->gate[i]);
    }
    free(p);
    return first;
}

/* The page size is the same for every device: the page table is shared.
 * At least 32 KiB, so that a slab chunk (page / 32) holds four of the
 * smallest class. */
static CUresult set_page_size(sw_policy *p, size_t g)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&p->handles_lock);
    if (!p->page) {
        if (g < SW_MIXED_SLOTS * 4 * SW_MIN_ALIGN || (g & (g - 1)) ||
            sw_pt_init(&p->pt, (unsigned)__builtin_ctzll(g)))
            r = CUDA_ERROR_NOT_SUPPORTED;
        else {
            p->page = g;
            p->shift = (unsigned)__builtin_ctzll(g);
        }
    } else if (p->page != g) {
        r = CUDA_ERROR_NOT_SUPPORTED;
    }
    pthread_mutex_unlock(&p->handles_lock);
    return r;
}

static CUresult device_build(sw_device *d, const sw_device_config *cfg, size_t limit_pages)
{
    sw_policy *p = d->pol;
    size_t factor = cfg->va_factor ? cfg->va_factor : 4;
    size_t first_va = limit_pages > SIZE_MAX / factor / d->page ? SIZE_MAX / 2 + 1
                                                                 : limit_pages * factor * d->page;
    CUresult r = p->be.va_reserve(p->be.ctx, d->id, (size_t)SW_SCRATCH_PAGES << d->shift, d->page,
                                  &d->scratch);
    if (r != CUDA_SUCCESS) {
        d->scratch = 0;
        return r;
    }
    atomic_fetch_add_explicit(&d->c.va_bytes, (uint64_t)SW_SCRATCH_PAGES << d->shift,
                              memory_order_relaxed);
    if (!sw_pt_ensure(&p->pt, d->scratch) ||
        sw_pool_init(d, limit_pages, cfg->host_limit >> d->shift) || sw_arena_init(d, first_va) ||
        sw_classes_init(d) || sw_freeq_init(&d->q))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (cfg->preallocate) {
        sw_dev_lock(d);
        r = sw_pool_prefill(d);
        sw_dev_unlock(d);
    }
    return r;
}

CUresult sw_device_init(sw_policy *p, int dev, const sw_device_config *cfg)
{
    if (!p || !cfg || dev < 0 || dev >= SW_MAX_DEVICES || sw_dev(p, dev))
        return CUDA_ERROR_INVALID_VALUE;
    sw_device *d = &p->dev[dev];
    size_t g;
    CUresult r = p->be.granularity(p->be.ctx, dev, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = set_page_size(p, g)) != CUDA_SUCCESS)
        return r;
    size_t limit_pages = cfg->limit / g;
    if (!limit_pages)
        return CUDA_ERROR_INVALID_VALUE;
    /* Everything but the counters: pass-through counts may predate init,
     * and other threads keep counting on the device meanwhile (pass-through
     * allocations, its syncer); a copy put back would drop what they add
     * between the copy and the put. */
    memset(d, 0, offsetof(sw_device, c));
    memset((char *)&d->c + sizeof d->c, 0, sizeof *d - offsetof(sw_device, c) - sizeof d->c);
    d->pol = p;
    d->id = dev;
    d->cfg = *cfg;
    d->cfg.limit = limit_pages * g;
    if (!d->cfg.sync_batch)
        d->cfg.sync_batch = d->cfg.limit / 16;
    if (!d->cfg.quiesce_wait_ns)
        d->cfg.quiesce_wait_ns = 500 * 1000000ull;
    /* A spill leaves 1/64 of the pool free (at most 256 pages; none in a
     * pool under 64 pages): the next allocations find pages without a
     * quiesce of their own. */
    d->low_water = limit_pages / 64 > 256 ? 256 : limit_pages / 64;
    size_t host_pages = cfg->host_limit >> p->shift;
    d->host_target = cfg->spill ? cfg->host_reserve >> p->shift : 0;
    if (d->host_target > host_pages)
        d->host_target = host_pages;
    d->page = g;
    d->shift = p->shift;
    d->access_mask = 1ull << dev;
    pthread_mutex_init(&d->lock, NULL);
    r = device_build(d, cfg, limit_pages);
    if (r != CUDA_SUCCESS) {
        /* Undone while never ready: a thread that lends or allocates
         * meanwhile finds no device, never one being torn down. */
        device_teardown(d);
        return r;
    }
    atomic_store_explicit(&d->ready, true, memory_order_release);
    sw_lend_settle(d); /* what was lent while it was being built */
    int hi = atomic_load(&p->ndev_hi);
    while (hi < dev + 1 && !atomic_compare_exchange_weak(&p->ndev_hi, &hi, dev + 1))
        ;
    return CUDA_SUCCESS;
}

/* ---- lookups ------------------------------------------------------------- */

bool sw_owns(const sw_policy *p, CUdeviceptr ptr)
{
    if (!p || !p->page)
        return false;
    int hi = atomic_load_explicit(&p->ndev_hi, memory_order_acquire);
    for (int i = 0; i < hi; i++) {
        const sw_device *d = &p->dev[i];
        if (atomic_load_explicit(&d->ready, memory_order_acquire) && sw_arena_contains(d, ptr))
            return true;
    }
    sw_pte *e = sw_pt_get(&p->pt, ptr);
    return e && SW_OWN_TAG(atomic_load_explicit(&e->owner, memory_order_acquire)) == SW_OWN_VMM;
}

int sw_page_device(const sw_policy *p, CUdeviceptr ptr)
{
    if (!p || !p->page)
        return -1;
    sw_pte *e = sw_pt_get(&p->pt, ptr);
    /* A page keeps its device for life (a move changes its backing only). */
    sw_page *pg = e ? atomic_load_explicit(&e->page, memory_order_acquire) : NULL;
    return pg ? pg->dev->id : -1;
}

CUresult sw_lookup(sw_policy *p, CUdeviceptr ptr, CUdeviceptr *base, size_t *size, int *dev,
                   sw_ids *ids)
{
    if (!p || !base || !size || !dev)
        return CUDA_ERROR_INVALID_VALUE;
    if (!p->page)
        return CUDA_ERROR_NOT_FOUND;
    sw_ids unused;
    return sw_lookup_owner(p, ptr, base, size, dev, ids ? ids : &unused);
}

/* ---- peers --------------------------------------------------------------- */

/* Grants access to every mapped run of d's arena, free (cached) or not. */
static CUresult grant_all(sw_device *d, uint64_t mask)
{
    sw_policy *p = d->pol;
    CUresult r = CUDA_SUCCESS;
    unsigned n = atomic_load(&d->arena.nsegs);
    for (unsigned s = 0; s < n && r == CUDA_SUCCESS; s++) {
        const sw_seg *g = &d->arena.seg[s];
        for (CUdeviceptr va = g->base; va < g->base + g->size && r == CUDA_SUCCESS;) {
            CUdeviceptr end = va;
            while (end < g->base + g->size && atomic_load(&sw_pt_get(&p->pt, end)->page))
                end += d->page;
            if (end > va)
                r = p->be.set_access(p->be.ctx, va, (size_t)(end - va), mask);
            va = end + d->page;
        }
    }
    return r;
}

CUresult sw_grant_access(sw_policy *p, int dev, int peer)
{
    sw_device *d = sw_dev(p, dev);
    if (!d || peer < 0 || peer >= SW_MAX_DEVICES)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    sw_dev_lock(d);
    uint64_t mask = d->access_mask | 1ull << peer;
    if (mask != d->access_mask) {
        d->access_mask = mask;
        r = grant_all(d, mask);
    }
    sw_dev_unlock(d);
    return r;
}
