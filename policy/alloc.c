/* The allocation and free entry points (policy.h).
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
#include "policy/internal.h"

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
    sw_revive(d, &f, size, true);
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
                             CUdeviceptr *ptr, bool *synced, uint64_t *by)
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
    /* Tried once per allocation: a busy device is not asked again, nor
     * waited for at all while its sync is overdue (with spill: host pages
     * can do without it). */
    *synced = true;
    if (d->cfg.spill)
        sw_back_off(d, by);
    r = sw_sync_point(d, by);
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
static CUresult carve_backed(sw_device *d, shape sh, bool synced, uint64_t *by, sw_ext **out,
                             sw_oom_reason *why)
{
    sw_place_mode modes[2] = {SW_PLACE_ANY, SW_PLACE_BEST};
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < (d->cfg.spill ? 1 : 2) && r == CUDA_ERROR_OUT_OF_MEMORY; i++) {
        sw_ext *e;
        size_t cost;
        if ((r = carve(d, sh, modes[i], 0, &e, &cost, why)) != CUDA_SUCCESS)
            return r;
        if ((r = sw_acquire(d, e, synced || i > 0, by, why)) == CUDA_SUCCESS) {
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
    /* The allocation's one deadline: its sync and its spill's quiesce wait
     * for a busy device one patience in all (sw_deadline_of). */
    uint64_t by = 0;
    CUresult r = carve_mapped(d, sh, bucket, size, &e, out, &synced, &by);
    if (r == CUDA_SUCCESS && !e)
        return r; /* live already */
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        r = carve_backed(d, sh, synced, &by, &e, &why);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && by == SW_SPENT) {
        /* It backed off (sw_back_off) and the host limit refused the host
         * pages: it waits for the device after all, as without the
         * back-off, rather than fail where the wait would let it through. */
        by = sw_deadline(d);
        r = carve_mapped(d, sh, bucket, size, &e, out, &synced, &by);
        if (r == CUDA_SUCCESS && !e)
            return r;
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            r = carve_backed(d, sh, synced, &by, &e, &why);
    }
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

/* A reused block or slot on a page a failed move left without access (a
 * freed block revived keeps its pages): granted, or a fresh page, before
 * the program gets it. */
static CUresult regrant(sw_device *d, CUdeviceptr ptr, size_t size)
{
    CUdeviceptr va = ptr & ~(CUdeviceptr)(d->page - 1);
    size_t n = (size_t)((ptr + size - va + d->page - 1) >> d->shift);
    sw_oom_reason why;
    sw_dev_lock(d);
    CUresult r = sw_pages_regrant(d, va, n, &why);
    /* The records of pages granted or let go here (and by frees since):
     * while one is left, every allocation of the device comes here. */
    sw_noaccess_prune(d->pol, d);
    sw_dev_unlock(d);
    return r == CUDA_ERROR_OUT_OF_MEMORY ? sw_refuse(d, why) : r;
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
        sw_revive(d, &f, size, true);
        ptr = f.ptr;
    } else if ((r = alloc_new(d, cls, bucket, size, &ptr)) != CUDA_SUCCESS) {
        return r;
    }
    sw_count_add(&d->c.in_use, size, &d->c.peak_in_use);
    sw_lanes_add(&d->c.allocs, 1);
    if (atomic_load_explicit(&d->nnoacc, memory_order_relaxed) && (r = regrant(d, ptr, size)) != CUDA_SUCCESS) {
        (void)sw_free(p, ptr);
        return r;
    }
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
    /* Memory another process maps (legacy IPC) goes back to the arena, its
     * pages released (pages.c), never to an allocation of the same size. */
    if (__builtin_expect(atomic_load_explicit(&p->exported_any, memory_order_relaxed), 0) &&
        sw_export_touches(p, f.ptr, f.bytes))
        f.bucket = SW_NONE;
    if ((r = sw_freeq_push(d, &f, async, stream)) != CUDA_SUCCESS) {
        sw_revive(d, &f, f.bytes, false); /* the program still owns it, its ID too */
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
