/* Device memory outside the pool (what passes through to the driver:
 * managed memory, exported handles, allocations during a capture, CUDA
 * arrays) takes its bytes out of the pool's device pages, so that pool and
 * pass-through together never hold more of the device than the limit,
 * whatever the pool had preallocated. The pool gives pages back to the
 * driver cheapest first: free ones, then cached ones (unmapped), then,
 * after a sync, those of covered frees, and with spill the coldest pages
 * of live data, moved to the host first. */
#include "policy/internal.h"

static size_t excess(sw_device *d)
{
    size_t cap = sw_pool_cap(d);
    return d->pool.created > cap ? d->pool.created - cap : 0;
}

/* Releases free and cached pages while the pool holds more than its cap.
 * Device lock held. */
static CUresult give_back_excess(sw_device *d)
{
    while (excess(d)) {
        /* Unmapping a cached page may free a host page (one a refused move
         * left mapped), not a device page: go on to the next. */
        while (!d->pool.nfree && d->ncached) {
            size_t got;
            CUresult r = sw_pages_reclaim(d, 1, &got);
            if (r != CUDA_SUCCESS)
                return r;
            if (!got)
                break;
        }
        if (!d->pool.nfree)
            return CUDA_SUCCESS; /* short of it: the caller escalates */
        CUresult r = sw_pool_give_back(d);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

static CUresult give_back_locked(sw_device *d, bool *short_of)
{
    sw_dev_lock(d);
    CUresult r = give_back_excess(d);
    *short_of = excess(d) != 0;
    sw_dev_unlock(d);
    return r;
}

/* Spills the coldest live data until the excess can be given back. */
static CUresult spill_excess(sw_device *d, uint64_t *by)
{
    sw_quiet q;
    CUresult r = sw_move_begin(d, &q, by);
    if (r != CUDA_SUCCESS)
        return r == CUDA_ERROR_NOT_READY ? CUDA_ERROR_OUT_OF_MEMORY : r;
    size_t spilled = 0;
    while ((r = give_back_excess(d)) == CUDA_SUCCESS && excess(d)) {
        CUresult err;
        size_t moved = sw_spill_coldest(d, excess(d), 0, 0, UINT32_MAX, &err);
        spilled += moved;
        if (err != CUDA_SUCCESS && err != CUDA_ERROR_OUT_OF_MEMORY)
            r = err;
        if (!moved || r != CUDA_SUCCESS)
            break;
    }
    if (spilled)
        sw_figure_add(&d->c, &d->c.spill_events, 1);
    if (r == CUDA_SUCCESS && excess(d))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    sw_move_end(d, &q);
    return r;
}

/* Brings the pool within its cap, escalating as sw_acquire does. */
static CUresult shrink(sw_device *d)
{
    bool short_of;
    CUresult r = give_back_locked(d, &short_of);
    if (r != CUDA_SUCCESS || !short_of)
        return r;
    uint64_t by = 0; /* one patience for the sync and the spill together */
    if (sw_freeq_pending(d, NULL)) {
        r = sw_sync_and_collect(d, &by);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
            return r;
        if ((r = give_back_locked(d, &short_of)) != CUDA_SUCCESS || !short_of)
            return r;
    }
    return d->cfg.spill ? spill_excess(d, &by) : CUDA_ERROR_OUT_OF_MEMORY;
}

static void sub_floor(_Atomic uint64_t *v, uint64_t n)
{
    uint64_t cur = atomic_load_explicit(v, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(v, &cur, cur > n ? cur - n : 0, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

bool sw_passthrough_lends(sw_passthrough_reason r)
{
    /* Host memory takes no device page. A device whose pool could not be
     * set up lends too: a later try that builds it starts within its cap. */
    return r >= 0 && r < SW_PT_NREASONS && r != SW_PT_HOST_LOCATION;
}

CUresult sw_lend(sw_policy *p, int dev, size_t bytes)
{
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES || !bytes)
        return CUDA_SUCCESS;
    _Atomic uint64_t *lent = &p->lent[dev];
    uint64_t had = atomic_load_explicit(lent, memory_order_relaxed);
    sw_device *d = sw_dev(p, dev);
    do {
        /* More than the limit outside the pool can never fit; before the
         * pool exists, at least the sum must not wrap. */
        if (d ? bytes > d->cfg.limit || had > d->cfg.limit - bytes : had > UINT64_MAX - bytes)
            return CUDA_ERROR_OUT_OF_MEMORY;
    } while (!atomic_compare_exchange_weak_explicit(lent, &had, had + bytes, memory_order_relaxed,
                                                    memory_order_relaxed));
    /* Pairs with sw_lend_settle's fence: a device made ready meanwhile
     * either is seen here or sees these bytes when it settles. */
    atomic_thread_fence(memory_order_seq_cst);
    if (!d && !(d = sw_dev(p, dev)))
        return CUDA_SUCCESS; /* a pool built later starts within its cap */
    CUresult r = shrink(d);
    if (r != CUDA_SUCCESS)
        sub_floor(lent, bytes);
    return r;
}

void sw_lend_settle(sw_device *d)
{
    atomic_thread_fence(memory_order_seq_cst);
    bool short_of;
    /* All its pages are free yet: given back, they fit the cap. What the
     * driver would not take back, the next lend on the device retries. */
    (void)give_back_locked(d, &short_of);
}

void sw_unlend(sw_policy *p, int dev, size_t bytes)
{
    if (p && dev >= 0 && dev < SW_MAX_DEVICES && bytes)
        sub_floor(&p->lent[dev], bytes);
}

uint64_t sw_lent_bytes(const sw_policy *p, int dev)
{
    return p && dev >= 0 && dev < SW_MAX_DEVICES
               ? atomic_load_explicit(&((sw_policy *)p)->lent[dev], memory_order_relaxed)
               : 0;
}
