/* The policy object, device setup, and the allocation entry points.
 *
 * An allocation escalates only as far as it must, cheapest first:
 *   1. a block freed async on the same stream (no wait),
 *   2. free space whose pages are still mapped (no driver call),
 *   3. the same after releasing frees already covered by a sync or event,
 *   4. a device synchronize that releases the pending batch, when enough is
 *      pending (bytes or frees) or backing the request would mean creating
 *      or reclaiming pages,
 *   5. mapping pool pages (creating them up to the limit),
 *   6. a synchronize and unmapping cached free pages (reclaim),
 *   7. with spill on, moving the coldest live pages to the host (spill.c),
 * and fails with CUDA_ERROR_OUT_OF_MEMORY after that. */
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

#define HANDLE_TAG 0x5357000000000000ull /* "SW": never a canonical pointer */

void sw_count_add(_Atomic uint64_t *v, uint64_t n, _Atomic uint64_t *peak)
{
    uint64_t now = atomic_fetch_add_explicit(v, n, memory_order_relaxed) + n;
    uint64_t p = atomic_load_explicit(peak, memory_order_relaxed);
    while (p < now &&
           !atomic_compare_exchange_weak_explicit(peak, &p, now, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

void sw_count_sub(_Atomic uint64_t *v, uint64_t n)
{
    atomic_fetch_sub_explicit(v, n, memory_order_relaxed);
}

sw_device *sw_dev(sw_policy *p, int dev)
{
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES)
        return NULL;
    sw_device *d = &p->dev[dev];
    return atomic_load_explicit(&d->ready, memory_order_acquire) ? d : NULL;
}

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
    if (sw_gate_init(p)) {
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_init(&p->handles_lock, NULL);
    for (int i = 0; i < SW_MAX_DEVICES; i++) {
        p->dev[i].pol = p;
        p->dev[i].id = i;
    }
    *out = p;
    return CUDA_SUCCESS;
}

/* Frees what sw_device_init built, in reverse; first error wins. */
static CUresult device_teardown(sw_device *d)
{
    sw_policy *p = d->pol;
    /* Unmapping below must not race work the program left queued. */
    CUresult first = d->arena.used ? p->be.synchronize(p->be.ctx, d->id) : CUDA_SUCCESS, r;
    if ((r = sw_freeq_destroy(d)) != CUDA_SUCCESS && first == CUDA_SUCCESS)
        first = r;
    pthread_mutex_lock(&d->lock);
    sw_classes_destroy(d);
    if (d->arena.used && (r = sw_arena_unmap_all(d)) != CUDA_SUCCESS && first == CUDA_SUCCESS)
        first = r;
    if ((r = sw_pool_destroy(d)) != CUDA_SUCCESS && first == CUDA_SUCCESS)
        first = r;
    sw_page_objs_destroy(d);
    sw_arena_destroy(d);
    pthread_mutex_unlock(&d->lock);
    if (d->reserve_size &&
        (r = p->be.va_free(p->be.ctx, d->reserve_base, d->reserve_size)) != CUDA_SUCCESS &&
        first == CUDA_SUCCESS)
        first = r;
    d->reserve_size = 0;
    pthread_mutex_destroy(&d->lock);
    atomic_store(&d->ready, false);
    return first;
}

CUresult sw_policy_destroy(sw_policy *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult first = CUDA_SUCCESS;
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
    pthread_mutex_destroy(&p->handles_lock);
    sw_gate_destroy(p);
    free(p);
    return first;
}

/* The page size is the same for every device: the page table is shared. */
static CUresult set_page_size(sw_policy *p, size_t g)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&p->handles_lock);
    if (!p->page) {
        if (g < 4096 || (g & (g - 1)) || sw_pt_init(&p->pt, (unsigned)__builtin_ctzll(g)))
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
    size_t va_pages = limit_pages * factor;
    if (va_pages > UINT32_MAX - 2)
        va_pages = UINT32_MAX - 2;
    d->reserve_size = (va_pages + 1) << d->shift; /* + the scratch page */
    CUresult r = p->be.va_reserve(p->be.ctx, d->id, d->reserve_size, d->page, &d->reserve_base);
    if (r != CUDA_SUCCESS) {
        d->reserve_size = 0;
        return r;
    }
    d->scratch = d->reserve_base + ((CUdeviceptr)va_pages << d->shift);
    if (!sw_pt_ensure(&p->pt, d->scratch) || sw_pool_init(d, limit_pages, cfg->host_limit >> d->shift) ||
        sw_classes_init(d) || sw_arena_init(d, d->reserve_base, (uint32_t)va_pages) ||
        sw_freeq_init(&d->q))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (cfg->preallocate) {
        pthread_mutex_lock(&d->lock);
        r = sw_pool_prefill(d);
        pthread_mutex_unlock(&d->lock);
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
    d->page = g;
    d->shift = p->shift;
    d->access_mask = 1ull << dev;
    pthread_mutex_init(&d->lock, NULL);
    r = device_build(d, cfg, limit_pages);
    if (r != CUDA_SUCCESS) {
        atomic_store(&d->ready, true); /* teardown undoes a partial build */
        device_teardown(d);
        return r;
    }
    atomic_store_explicit(&d->ready, true, memory_order_release);
    int hi = atomic_load(&p->ndev_hi);
    while (hi < dev + 1 && !atomic_compare_exchange_weak(&p->ndev_hi, &hi, dev + 1))
        ;
    return CUDA_SUCCESS;
}

/* ---- allocation ---------------------------------------------------------- */

static CUresult alloc_at(sw_device *d, int cls, size_t size, sw_map_mode mode, CUdeviceptr *out)
{
    return cls >= 0 ? sw_slab_alloc(d, cls, size, mode, out)
                    : sw_block_alloc(d, size, mode, out);
}

/* Created pages not mapped anywhere: what backs a request without creating
 * (a sync costs ~1 us on an idle device, creating a page 10-40 us, and the
 * freed-but-pending pages are already held). */
static size_t pool_free_locked(sw_device *d)
{
    pthread_mutex_lock(&d->lock);
    size_t n = d->pool.nfree;
    pthread_mutex_unlock(&d->lock);
    return n;
}

/* Steps 2 to 6 of the escalation above. */
static CUresult alloc_slow(sw_device *d, int cls, size_t size, CUdeviceptr *out)
{
    CUresult r = alloc_at(d, cls, size, SW_CACHED_ONLY, out);
    if (r != CUDA_ERROR_OUT_OF_MEMORY)
        return r;
    if (sw_freeq_collect(d, true) &&
        (r = alloc_at(d, cls, size, SW_CACHED_ONLY, out)) != CUDA_ERROR_OUT_OF_MEMORY)
        return r;
    size_t need = cls >= 0 ? 1 : (size + d->page - 1) >> d->shift;
    size_t npend, pending = sw_freeq_pending(d, &npend);
    bool synced = false;
    if (pending && (pending >= d->cfg.sync_batch || npend >= SW_SYNC_BATCH_FREES ||
                    pool_free_locked(d) < need)) {
        if ((r = sw_sync_and_collect(d)) != CUDA_SUCCESS)
            return r;
        synced = true;
        if ((r = alloc_at(d, cls, size, SW_CACHED_ONLY, out)) != CUDA_ERROR_OUT_OF_MEMORY)
            return r;
    }
    if ((r = alloc_at(d, cls, size, SW_MAP_FRESH, out)) != CUDA_ERROR_OUT_OF_MEMORY)
        return r;
    /* Reclaim unmaps pages: a sync must cover all work issued before now. */
    if (!synced && (r = sw_sync_and_collect(d)) != CUDA_SUCCESS)
        return r;
    r = alloc_at(d, cls, size, SW_RECLAIM, out);
    /* Another thread may take the pages spill frees before we map them:
     * a few rounds, then the allocation fails as without spill. */
    for (int round = 0; round < 4 && r == CUDA_ERROR_OUT_OF_MEMORY && d->cfg.spill; round++) {
        if ((r = sw_make_room(d, need)) != CUDA_SUCCESS)
            return r;
        r = alloc_at(d, cls, size, SW_RECLAIM, out);
    }
    return r;
}

static CUresult alloc_common(sw_policy *p, int dev, size_t size, bool async, CUstream stream,
                             CUdeviceptr *out)
{
    if (!out || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    sw_device *d = sw_dev(p, dev);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    int cls = sw_class_of(d, size);
    CUdeviceptr ptr = 0;
    if (size <= d->cfg.limit) {
        uint32_t bucket = sw_bucket_of(d, size);
        if (async && sw_freeq_take_stream(d, stream, bucket, &ptr)) {
            sw_revive(d, ptr, bucket, size);
            r = CUDA_SUCCESS;
        } else {
            r = alloc_at(d, cls, size, SW_CACHED_ONLY, &ptr);
            if (r == CUDA_ERROR_OUT_OF_MEMORY)
                r = alloc_slow(d, cls, size, &ptr);
        }
    }
    if (r != CUDA_SUCCESS) {
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            atomic_fetch_add_explicit(&d->c.ooms, 1, memory_order_relaxed);
        return r;
    }
    sw_count_add(&d->c.in_use, size, &d->c.peak_in_use);
    atomic_fetch_add_explicit(&d->c.allocs, 1, memory_order_relaxed);
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
    uint32_t bucket;
    size_t bytes;
    CUresult r = sw_mark_freed(p, dptr, &d, &bucket, &bytes);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = sw_freeq_push(d, dptr, bucket, bytes, async, stream)) != CUDA_SUCCESS) {
        sw_revive(d, dptr, bucket, bytes); /* the program still owns it */
        return r;
    }
    sw_count_sub(&d->c.in_use, bytes);
    atomic_fetch_add_explicit(&d->c.frees, 1, memory_order_relaxed);
    if (dev_out)
        *dev_out = d->id;
    if (bytes_out)
        *bytes_out = bytes;
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
        if (atomic_load_explicit(&d->ready, memory_order_acquire) && ptr >= d->reserve_base &&
            ptr < d->reserve_base + d->reserve_size)
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

CUresult sw_grant_access(sw_policy *p, int dev, int peer)
{
    sw_device *d = sw_dev(p, dev);
    if (!d || peer < 0 || peer >= SW_MAX_DEVICES)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&d->lock);
    uint64_t mask = d->access_mask | 1ull << peer;
    if (mask != d->access_mask) {
        d->access_mask = mask;
        /* Every mapped run of the arena, free (cached) or not. */
        for (uint32_t i = 0; i < d->arena.npages && r == CUDA_SUCCESS;) {
            uint32_t j = i;
            while (j < d->arena.npages &&
                   atomic_load(&sw_pt_get(&p->pt, sw_arena_va(&d->arena, j, d->shift))->page))
                j++;
            if (j > i)
                r = p->be.set_access(p->be.ctx, sw_arena_va(&d->arena, i, d->shift),
                                     (size_t)(j - i) << d->shift, mask);
            i = j + 1;
        }
    }
    pthread_mutex_unlock(&d->lock);
    return r;
}

/* ---- counters ------------------------------------------------------------ */

static const char *const pt_names[SW_PT_NREASONS] = {
    "ipc", "managed", "capture", "host-location", "disabled", "other",
};

const char *sw_passthrough_reason_name(sw_passthrough_reason r)
{
    return (unsigned)r < SW_PT_NREASONS ? pt_names[r] : "unknown";
}

void sw_count_passthrough(sw_policy *p, int dev, sw_passthrough_reason r, size_t bytes)
{
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES || (unsigned)r >= SW_PT_NREASONS)
        return;
    /* Counted even on devices spillway does not manage (reason "disabled"). */
    sw_dev_counters *c = &p->dev[dev].c;
    atomic_fetch_add_explicit(&c->pt_count[r], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->pt_bytes[r], bytes, memory_order_relaxed);
}

uint64_t sw_pool_bytes(const sw_policy *p, int dev)
{
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES)
        return 0;
    return atomic_load_explicit(&p->dev[dev].c.pool_bytes, memory_order_relaxed);
}

void sw_get_spill_stats(const sw_policy *p, int dev, sw_spill_stats *out)
{
    if (!out)
        return;
    *out = (sw_spill_stats){0};
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES)
        return;
    const sw_dev_counters *c = &p->dev[dev].c;
    out->host_bytes = atomic_load_explicit(&c->host_pool_bytes, memory_order_relaxed);
    out->host_in_use_bytes = atomic_load_explicit(&c->host_in_use, memory_order_relaxed);
    out->spill_bytes = atomic_load_explicit(&c->spill_bytes, memory_order_relaxed);
    out->spill_events = atomic_load_explicit(&c->spill_events, memory_order_relaxed);
    out->fill_bytes = atomic_load_explicit(&c->fill_bytes, memory_order_relaxed);
    out->fill_events = atomic_load_explicit(&c->fill_events, memory_order_relaxed);
}

CUresult sw_get_counters(sw_policy *p, int dev, sw_counters *out)
{
    if (!p || !out || dev < 0 || dev >= SW_MAX_DEVICES)
        return CUDA_ERROR_INVALID_VALUE;
    memset(out, 0, sizeof *out);
    sw_device *d = &p->dev[dev];
    sw_dev_counters *c = &d->c;
    for (int i = 0; i < SW_PT_NREASONS; i++) {
        out->passthrough_count[i] = atomic_load(&c->pt_count[i]);
        out->passthrough_bytes[i] = atomic_load(&c->pt_bytes[i]);
    }
    if (!sw_dev(p, dev))
        return CUDA_SUCCESS;
    out->limit_bytes = d->cfg.limit;
    pthread_mutex_lock(&d->lock);
    out->pool_bytes = (uint64_t)d->pool.created << d->shift;
    out->host_bytes = (uint64_t)d->pool.host_created << d->shift;
    pthread_mutex_unlock(&d->lock);
    out->pending_bytes = sw_freeq_pending(d, NULL);
    out->mapped_bytes = atomic_load(&c->mapped);
    out->in_use_bytes = atomic_load(&c->in_use);
    out->peak_in_use_bytes = atomic_load(&c->peak_in_use);
    out->backing_bytes = atomic_load(&c->backing);
    out->peak_backing_bytes = atomic_load(&c->peak_backing);
    out->host_in_use_bytes = atomic_load(&c->host_in_use);
    out->allocs = atomic_load(&c->allocs);
    out->frees = atomic_load(&c->frees);
    out->ooms = atomic_load(&c->ooms);
    out->syncs = atomic_load(&c->syncs);
    out->maps = atomic_load(&c->maps);
    out->unmaps = atomic_load(&c->unmaps);
    out->reclaims = atomic_load(&c->reclaims);
    out->spill_bytes = atomic_load(&c->spill_bytes);
    out->spill_events = atomic_load(&c->spill_events);
    out->fill_bytes = atomic_load(&c->fill_bytes);
    out->fill_events = atomic_load(&c->fill_events);
    return CUDA_SUCCESS;
}
