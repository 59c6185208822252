/* The policy object, device setup, and the allocation entry points.
 *
 * An allocation escalates only as far as it must, cheapest first:
 *   1. a block freed async on the same stream (no wait),
 *   2. a free slot in a slab, or free space over pages already mapped (no
 *      driver call),
 *   3. the same after releasing frees already covered by a sync or event,
 *   4. a device synchronize that releases the pending batch, when enough is
 *      pending (bytes or frees) or backing the request would mean creating
 *      or reclaiming pages,
 *   5. a place with the fewest pages to map, backed by acquire.c (pool,
 *      reclaim, sync, spill, host pages);
 *   6. with spill off, once more with the best place among every free
 *      extent (fragmentation),
 * and fails with CUDA_ERROR_OUT_OF_MEMORY and a reason after that. */
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
    sw_dev_counters keep = d->c; /* pass-through counts may predate init */
    memset(d, 0, sizeof *d);
    d->c = keep;
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

/* ---- allocation ---------------------------------------------------------- */

/* Created pages not mapped anywhere: what backs a request without creating
 * (a sync costs ~1 us on an idle device, creating a page 10-40 us, and the
 * freed-but-pending pages are already held). */
static size_t pool_free_locked(sw_device *d)
{
    sw_dev_lock(d);
    size_t n = d->pool.nfree;
    sw_dev_unlock(d);
    return n;
}

/* What an extent for `size` bytes of a block or slab looks like. */
typedef struct shape {
    size_t size, align;
    int kind;
} shape;

static shape shape_of(sw_device *d, int cls, size_t size)
{
    if (cls >= 0)
        return (shape){d->arena.chunk, d->arena.granule, SW_EXT_SLAB};
    /* Granule-aligned: a block may start in the page another one ends in
     * (placement prefers a page boundary when it costs no page). */
    size_t g = d->arena.granule;
    return (shape){(size + g - 1) / g * g, g, SW_EXT_BLOCK};
}

/* With install (a block of that many requested bytes over mapped pages),
 * the block is live before the device lock is dropped: one hold, not two. */
static CUresult carve(sw_device *d, shape sh, sw_place_mode mode, size_t install, sw_ext **e,
                      size_t *cost, sw_oom_reason *why)
{
    sw_dev_lock(d);
    CUresult r = sw_ext_carve(d, sh.size, sh.align, mode, sh.kind, e, cost, why);
    if (r == CUDA_SUCCESS) {
        /* Heat first: the pages it gets are stamped with it, so that only
         * a later touch counts as a use (spill.c). */
        sw_heat_init(d->pol, &(*e)->heat, sw_ext_base(*e), sh.size);
        sw_pages_use(d, *e);
        if (install)
            sw_block_install(*e, install);
    }
    sw_dev_unlock(d);
    return r;
}

static void discard(sw_device *d, sw_ext *e)
{
    sw_dev_lock(d);
    sw_ext_discard(d, e);
    sw_dev_unlock(d);
}

/* A block or slab slot of this bucket, freed earlier and covered by a
 * sync since, live again for `size` bytes (the calling thread's own first:
 * sw_freeq_take_covered). */
static bool reuse_covered(sw_device *d, uint32_t bucket, size_t size, CUdeviceptr *out)
{
    sw_freed f;
    if (!sw_freeq_take_covered(d, bucket, &f))
        return false;
    sw_revive(d, &f, size);
    *out = f.ptr;
    return true;
}

/* A carve over mapped pages only. A block comes out live at *ptr (*e
 * NULL); a slab's extent comes out in *e. */
static CUresult carve_live(sw_device *d, shape sh, size_t size, sw_ext **e, CUdeviceptr *ptr)
{
    size_t cost, install = sh.kind == SW_EXT_BLOCK ? size : 0;
    CUresult r = carve(d, sh, SW_PLACE_MAPPED, install, e, &cost, NULL);
    if (r == CUDA_SUCCESS && install) {
        *ptr = sw_ext_base(*e);
        *e = NULL;
    }
    return r;
}

/* Steps 2 to 4, over mapped pages: what carve_live gives (*e NULL: *ptr
 * is live, carved or a covered free reused), or *synced telling whether the
 * search synchronized on the way. */
static CUresult carve_mapped(sw_device *d, shape sh, uint32_t bucket, size_t size, sw_ext **e,
                             CUdeviceptr *ptr, bool *synced)
{
    *synced = false;
    CUresult r = carve_live(d, sh, size, e, ptr);
    if (r != CUDA_SUCCESS && sw_freeq_collect(d, true))
        r = carve_live(d, sh, size, e, ptr);
    if (r == CUDA_SUCCESS)
        return r;
    size_t npend, pending = sw_freeq_pending(d, &npend);
    size_t need = (sh.size + d->page - 1) >> d->shift;
    if (!pending || (pending < d->cfg.sync_batch && npend < SW_SYNC_BATCH_FREES &&
                     pool_free_locked(d) >= need))
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* Tried once per allocation: a busy device is not asked again. */
    *synced = true;
    r = sw_sync_point(d);
    if (r == CUDA_ERROR_NOT_READY)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (r != CUDA_SUCCESS)
        return r;
    /* What the sync covered is reused before it goes back to the arena: the
     * calling thread's own frees first (sw_freeq_take_covered). */
    if (reuse_covered(d, bucket, size, ptr)) {
        *e = NULL;
        return CUDA_SUCCESS;
    }
    sw_freeq_collect(d, false);
    return carve_live(d, sh, size, e, ptr);
}

/* Steps 5 and 6: a backed extent, or the refusal's reason. */
static CUresult carve_backed(sw_device *d, shape sh, bool synced, sw_ext **out,
                             sw_oom_reason *why)
{
    sw_place_mode modes[2] = {SW_PLACE_ANY, SW_PLACE_BEST};
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < (d->cfg.spill ? 1 : 2) && r == CUDA_ERROR_OUT_OF_MEMORY; i++) {
        sw_ext *e;
        size_t cost;
        if ((r = carve(d, sh, modes[i], 0, &e, &cost, why)) != CUDA_SUCCESS)
            return r;
        if ((r = sw_acquire(d, e, synced || i > 0, why)) == CUDA_SUCCESS) {
            *out = e;
            return r;
        }
        discard(d, e);
        if (*why != SW_OOM_LIMIT)
            break; /* a better place helps against fragmentation only */
    }
    return r;
}

/* Whether one allocation of size bytes can ever be served. */
static bool fits(const sw_device *d, size_t size)
{
    size_t cap = d->cfg.limit;
    if (d->cfg.spill)
        cap = d->cfg.host_limit > SIZE_MAX - cap ? SIZE_MAX : cap + d->cfg.host_limit;
    return size <= cap;
}

static CUresult alloc_new(sw_device *d, int cls, uint32_t bucket, size_t size, CUdeviceptr *out)
{
    /* Covered frees first: a reused slot keeps its slab from emptying and
     * going back to the arena, only for a new one to be carved. */
    if (reuse_covered(d, bucket, size, out))
        return CUDA_SUCCESS;
    if (cls >= 0 && sw_slab_take(d, cls, size, out) == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    shape sh = shape_of(d, cls, size);
    sw_ext *e;
    bool synced;
    sw_oom_reason why = SW_OOM_LIMIT;
    CUresult r = carve_mapped(d, sh, bucket, size, &e, out, &synced);
    if (r == CUDA_SUCCESS && !e)
        return r; /* live already */
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        r = carve_backed(d, sh, synced, &e, &why);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return sw_refuse(d, why);
    if (r != CUDA_SUCCESS)
        return r;
    if (cls < 0) {
        *out = sw_block_install(e, size); /* a release store: no lock needed */
        return CUDA_SUCCESS;
    }
    /* Another thread may have made a slab of this class meanwhile: ours is
     * one more on its partial list. */
    if ((r = sw_slab_install(d, cls, e, size, out)) != CUDA_SUCCESS)
        discard(d, e);
    return r;
}

/* A reused block or slot whose pages a failed move lost (its VA has no
 * page since): backed again before the program gets it. */
static CUresult reback(sw_device *d, CUdeviceptr ptr, size_t size)
{
    CUdeviceptr va = ptr & ~(CUdeviceptr)(d->page - 1);
    size_t n = (size_t)((ptr + size - va + d->page - 1) >> d->shift), missing;
    sw_oom_reason why;
    sw_dev_lock(d);
    CUresult r = sw_pages_map(d, va, n, d->cfg.spill, &missing, &why);
    sw_dev_unlock(d);
    return r == CUDA_SUCCESS && missing ? sw_refuse(d, why) : r;
}

static CUresult alloc_common(sw_policy *p, int dev, size_t size, bool async, CUstream stream,
                             CUdeviceptr *out)
{
    if (!out || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sw_device *d = sw_dev(p, dev);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!fits(d, size))
        return sw_refuse(d, SW_OOM_TOO_LARGE);
    int cls = sw_class_of(d, size);
    uint32_t bucket = sw_bucket_of(d, size);
    CUdeviceptr ptr = 0;
    sw_freed f;
    CUresult r = CUDA_SUCCESS;
    if (async && sw_freeq_take_stream(d, stream, bucket, &f)) {
        sw_revive(d, &f, size);
        ptr = f.ptr;
    } else if ((r = alloc_new(d, cls, bucket, size, &ptr)) != CUDA_SUCCESS) {
        return r;
    }
    sw_count_add(&d->c.in_use, size, &d->c.peak_in_use);
    sw_lanes_add(&d->c.allocs, 1);
    if (atomic_load_explicit(&d->lost, memory_order_relaxed) && (r = reback(d, ptr, size)) != CUDA_SUCCESS) {
        (void)sw_free(p, ptr);
        return r;
    }
    if (d->cfg.spill)
        (void)sw_touch(p, ptr); /* the newest data is the last to spill */
    *out = ptr;
    return CUDA_SUCCESS;
}

CUresult sw_alloc(sw_policy *p, int dev, size_t size, CUdeviceptr *out)
{
    return alloc_common(p, dev, size, false, NULL, out);
}

CUresult sw_alloc_async(sw_policy *p, int dev, size_t size, CUstream stream, CUdeviceptr *out)
{
    return alloc_common(p, dev, size, true, stream, out);
}

static CUresult free_common(sw_policy *p, CUdeviceptr dptr, bool async, CUstream stream,
                            int *dev_out, size_t *bytes_out)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    sw_device *d;
    sw_freed f;
    CUresult r = sw_mark_freed(p, dptr, &d, &f);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = sw_freeq_push(d, &f, async, stream)) != CUDA_SUCCESS) {
        sw_revive(d, &f, f.bytes); /* the program still owns it */
        return r;
    }
    sw_count_sub(&d->c.in_use, f.bytes);
    sw_lanes_add(&d->c.frees, 1);
    if (dev_out)
        *dev_out = d->id;
    if (bytes_out)
        *bytes_out = f.bytes;
    return CUDA_SUCCESS;
}

CUresult sw_free(sw_policy *p, CUdeviceptr dptr)
{
    return free_common(p, dptr, false, NULL, NULL, NULL);
}

CUresult sw_free_async(sw_policy *p, CUdeviceptr dptr, CUstream stream)
{
    return free_common(p, dptr, true, stream, NULL, NULL);
}

CUresult sw_free_sized(sw_policy *p, CUdeviceptr dptr, bool async, CUstream stream, int *dev,
                       size_t *bytes)
{
    return free_common(p, dptr, async, async ? stream : NULL, dev, bytes);
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

CUresult sw_lookup(sw_policy *p, CUdeviceptr ptr, CUdeviceptr *base, size_t *size, int *dev)
{
    if (!p || !base || !size || !dev)
        return CUDA_ERROR_INVALID_VALUE;
    if (!p->page)
        return CUDA_ERROR_NOT_FOUND;
    return sw_lookup_owner(p, ptr, base, size, dev);
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
