/* Backing a carved range with physical pages, escalating only as far as it
 * must, cheapest first:
 *   1. free pool pages, pages created up to the limit, cached pages
 *      reclaimed (their frees were covered when released: no sync),
 *   2. a device sync that releases pending frees into cached pages (through
 *      the device's syncer, so that a busy device is not waited for),
 *   3. with spill: the coldest pages of live data moved to the host, their
 *      device pages mapped here while the gate is still closed (another
 *      thread cannot take them first: issue 11 saw 8 threads refused),
 *   4. with spill: host pages for what is still missing (the new range
 *      lives partly on the host; fill brings it back when room appears);
 *      also at once when the device cannot be quiesced in time (busy,
 *      stream capture): a new range's pages can be mapped under running
 *      work, existing pages cannot be moved; and without waiting at all
 *      while a sync an earlier wait gave up on still runs (sw_back_off),
 * and refuses with the reason of the last step that ran dry.
 *
 * The range was carved before any of this, so its VA is the caller's
 * alone; a page of it that another allocation sharing the page maps in the
 * meantime simply counts as backed. */
#include "policy/internal.h"

static CUresult map_locked(sw_device *d, CUdeviceptr va, size_t n, bool host_ok,
                           size_t *missing, sw_oom_reason *why)
{
    sw_dev_lock(d);
    CUresult r = sw_pages_map(d, va, n, host_ok, missing, why);
    sw_dev_unlock(d);
    return r;
}

/* The pool ran dry on a spilling device: from now on the reserve keeps
 * host pages ready. */
static void start_reserve(sw_device *d)
{
    if (d->host_target && sw_reserve_start(d->pol) == CUDA_SUCCESS)
        sw_reserve_wake(d);
}

/* Free device pages beyond the request after a spill, up to the low
 * watermark: the allocations that follow need no quiesce of their own.
 * Adds what moved to *spilled. A move the driver refused and that was
 * undone costs nothing (the next spill tries again); one that lost a VA
 * (d->lost moved past lost_before: bytes gone) or whose error ends the
 * context is returned, as the allocation's own spill's would be: the
 * program must hear of it. Quiesced, locks held. */
static CUresult spill_ahead(sw_device *d, CUdeviceptr lo, CUdeviceptr hi, size_t lost_before,
                            size_t *spilled)
{
    size_t have = d->pool.nfree + d->ncached;
    if (have >= d->low_water)
        return CUDA_SUCCESS;
    CUresult err;
    *spilled += sw_spill_coldest(d, d->low_water - have, lo, hi, UINT32_MAX, &err);
    if (err != CUDA_SUCCESS &&
        (sw_error_ends_context(err) || atomic_load_explicit(&d->lost, memory_order_relaxed) != lost_before))
        return err;
    return CUDA_SUCCESS;
}

/* Whether err, why a spill stopped short, is the driver refusing a step
 * (OUT_OF_MEMORY is not: the host limit, which the host pages that follow
 * run into too). */
static bool refused(CUresult err)
{
    return err != CUDA_SUCCESS && err != CUDA_ERROR_OUT_OF_MEMORY;
}

/* A spill step the driver refused: its move was undone (the bytes stay
 * where they were, residency.c), so the allocation goes on with host pages
 * as when nothing more can move, and no other spill is tried. Returning
 * the driver's code instead would end the job: PyTorch's caching allocator
 * and XLA's BFC retry or report OUT_OF_MEMORY only. An error that ends the
 * context is the program's to see, and so is one whose move could not be
 * undone and lost a VA (d->lost moved past lost_before: bytes gone). */
static CUresult spill_refused(sw_device *d, CUresult err, size_t lost_before)
{
    if (sw_error_ends_context(err) || atomic_load_explicit(&d->lost, memory_order_relaxed) != lost_before)
        return err;
    sw_figure_add(&d->c, &d->c.spill_faults, 1);
    const sw_backend *be = &d->pol->be;
    if (be->spill_refused)
        be->spill_refused(be->ctx, d->id, err);
    return CUDA_SUCCESS;
}


/* One spill event per quiesce that moved anything. */
static void count_event(sw_device *d, size_t moved)
{
    if (moved)
        sw_figure_add(&d->c, &d->c.spill_events, 1);
}

/* Steps 3 and 4, quiesced. */
static CUresult spill_for(sw_device *d, CUdeviceptr va, size_t n, uint64_t *by, size_t *missing,
                          sw_oom_reason *why)
{
    sw_quiet q;
    start_reserve(d);
    CUresult r = sw_move_begin(d, &q, by);
    if (r == CUDA_ERROR_NOT_READY)
        return map_locked(d, va, n, true, missing, why); /* busy: host pages now */
    if (r != CUDA_SUCCESS)
        return r;
    size_t lost = atomic_load_explicit(&d->lost, memory_order_relaxed), spilled = 0;
    r = sw_pages_map(d, va, n, false, missing, why);
    bool stop = false; /* a step refused: no more spilling */
    while (r == CUDA_SUCCESS && *missing) {
        CUresult err;
        size_t moved = sw_spill_coldest(d, *missing, va, va + ((CUdeviceptr)n << d->shift), UINT32_MAX,
                                        &err);
        spilled += moved;
        if ((stop = refused(err))) {
            r = spill_refused(d, err, lost);
            break; /* what is still missing: host pages, below */
        }
        if (!moved)
            break;
        r = sw_pages_map(d, va, n, false, missing, why);
    }
    if (r == CUDA_SUCCESS && *missing)
        r = sw_pages_map(d, va, n, true, missing, why);
    else if (r == CUDA_SUCCESS && !stop)
        r = spill_ahead(d, va, va + ((CUdeviceptr)n << d->shift), lost, &spilled);
    count_event(d, spilled);
    sw_move_end(d, &q);
    return r;
}

CUresult sw_acquire(sw_device *d, sw_ext *e, bool synced, uint64_t *by, sw_oom_reason *why)
{
    CUdeviceptr va = sw_ext_base(e) & ~(CUdeviceptr)(d->page - 1);
    size_t n = (size_t)((sw_ext_end(e) - va + d->page - 1) >> d->shift), missing;
    *why = SW_OOM_LIMIT;
    CUresult r = map_locked(d, va, n, false, &missing, why);
    if (r != CUDA_SUCCESS || !missing)
        return r;
    /* Host pages can back the rest: a device still busy since an earlier
     * allocation's wait timed out is not waited for again (its sync and
     * quiesce below find the patience spent). */
    if (d->cfg.spill)
        sw_back_off(d, by);
    if (!synced && sw_freeq_pending(d, NULL)) {
        r = sw_sync_and_collect(d, by);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
            return r;
        if (r == CUDA_SUCCESS &&
            ((r = map_locked(d, va, n, false, &missing, why)) != CUDA_SUCCESS || !missing))
            return r;
    }
    if (!d->cfg.spill)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = spill_for(d, va, n, by, &missing, why)) != CUDA_SUCCESS)
        return r;
    return missing ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

/* n pages from the pool into out, all or none; device lock held. With
 * host_ok, host pages make up for missing device pages. */
static CUresult take_n(sw_device *d, size_t n, bool host_ok, CUmemGenericAllocationHandle *out,
                       sw_loc *locs, sw_oom_reason *why)
{
    size_t i = 0;
    CUresult r = CUDA_SUCCESS;
    for (; i < n; i++) {
        locs[i] = SW_LOC_DEVICE;
        r = sw_pool_take(d, SW_LOC_DEVICE, &out[i], why);
        if (r == CUDA_ERROR_OUT_OF_MEMORY && d->ncached) {
            size_t got;
            if ((r = sw_pages_reclaim(d, 1, &got)) == CUDA_SUCCESS)
                r = sw_pool_take(d, SW_LOC_DEVICE, &out[i], why);
        }
        if (r == CUDA_ERROR_OUT_OF_MEMORY && host_ok) {
            locs[i] = SW_LOC_HOST;
            r = sw_pool_take(d, SW_LOC_HOST, &out[i], why);
        }
        if (r != CUDA_SUCCESS)
            break;
    }
    if (r != CUDA_SUCCESS)
        while (i--)
            sw_pool_put(d, locs[i], out[i]);
    return r;
}

static CUresult take_locked(sw_device *d, size_t n, bool host_ok,
                            CUmemGenericAllocationHandle *out, sw_loc *locs, sw_oom_reason *why)
{
    sw_dev_lock(d);
    CUresult r = take_n(d, n, host_ok, out, locs, why);
    sw_dev_unlock(d);
    return r;
}

/* Spills until n device pages are free or creatable, then takes them (and
 * host pages for the rest). Quiesce first. */
static CUresult spill_and_take(sw_device *d, size_t n, uint64_t *by,
                               CUmemGenericAllocationHandle *out, sw_loc *locs, sw_oom_reason *why)
{
    sw_quiet q;
    start_reserve(d);
    CUresult r = sw_move_begin(d, &q, by);
    if (r == CUDA_ERROR_NOT_READY)
        return take_locked(d, n, true, out, locs, why); /* busy: host pages now */
    if (r != CUDA_SUCCESS)
        return r;
    size_t have = sw_pool_available(d) + d->ncached, spilled = 0;
    size_t lost = atomic_load_explicit(&d->lost, memory_order_relaxed);
    bool stop = false; /* a step refused: no more spilling */
    while (have < n) {
        CUresult err;
        size_t moved = sw_spill_coldest(d, n - have, 0, 0, UINT32_MAX, &err);
        spilled += moved;
        if ((stop = refused(err))) {
            r = spill_refused(d, err, lost);
            break; /* what is still missing: host pages, in take_n */
        }
        if (!moved)
            break;
        have += moved;
    }
    if (r == CUDA_SUCCESS)
        r = take_n(d, n, true, out, locs, why);
    if (r == CUDA_SUCCESS && !stop && (r = spill_ahead(d, 0, 0, lost, &spilled)) != CUDA_SUCCESS)
        for (size_t i = n; i--;)
            sw_pool_put(d, locs[i], out[i]); /* refused: the handle's pages go back */
    count_event(d, spilled);
    sw_move_end(d, &q);
    return r;
}

/* sw_acquire_pages past the pool's free pages, within the deadline *by. */
static CUresult escalate_pages(sw_device *d, size_t n, uint64_t *by,
                               CUmemGenericAllocationHandle *out, sw_loc *locs, sw_oom_reason *why)
{
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (sw_freeq_pending(d, NULL)) {
        r = sw_sync_and_collect(d, by);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
            return r;
        if (r == CUDA_SUCCESS &&
            (r = take_locked(d, n, false, out, locs, why)) != CUDA_ERROR_OUT_OF_MEMORY)
            return r;
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!d->cfg.spill)
        return r;
    return spill_and_take(d, n, by, out, locs, why);
}

CUresult sw_acquire_pages(sw_device *d, size_t n, CUmemGenericAllocationHandle *out,
                          sw_loc *locs, sw_oom_reason *why)
{
    *why = SW_OOM_LIMIT;
    CUresult r = take_locked(d, n, false, out, locs, why);
    if (r != CUDA_ERROR_OUT_OF_MEMORY)
        return r;
    uint64_t by = 0; /* one patience for the sync and the spill together */
    if (d->cfg.spill)
        sw_back_off(d, &by); /* host pages can back it: as sw_acquire */
    r = escalate_pages(d, n, &by, out, locs, why);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && by == SW_SPENT) {
        by = sw_deadline(d); /* the host limit refused: it waits after all (alloc.c) */
        r = escalate_pages(d, n, &by, out, locs, why);
    }
    return r;
}
