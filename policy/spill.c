/* Spill and fill: which pages move, and when (docs/design.md, "Spill").
 *
 * Spill happens when an allocation finds no device page left: the coldest
 * pages backing live data move to pinned host pages (their VAs and bytes
 * stay) and the allocation gets the device pages they held. Victims come
 * from a clock over the device's ring of live device pages (CLOCK, second
 * chance): a page whose owners were touched since the hand last passed is
 * skipped and stamped, the first that was not is the victim. Each page
 * costs O(1) amortized per event, whatever the size of the pool (issue 14:
 * a scan and sort of every page made one event cost millions of
 * instructions at 6,000 pages).
 *
 * Fill is asked for by the shim when a launch is about to use an owner with
 * pages on the host; it only takes device pages nobody needs (never spills
 * to make room), so spill and fill cannot chase each other. */
#include <stdlib.h>

#include "policy/internal.h"

uint64_t sw_reach(sw_device *d)
{
    return d->access_mask | atomic_load_explicit(&d->vmm_access, memory_order_relaxed) |
           1ull << d->id;
}

/* Syncs every device of mask; NOT_READY when one cannot be had in time. */
static CUresult sync_all(sw_policy *p, uint64_t mask, uint64_t deadline)
{
    for (uint64_t m = mask; m; m &= m - 1) {
        sw_device *x = sw_dev(p, __builtin_ctzll(m));
        if (!x)
            continue; /* no pool there: its work reaches ours only through peers we sync */
        CUresult r = sw_syncer_wait(x, deadline);
        if (r != CUDA_SUCCESS)
            return r;
        sw_freeq_collect(x, false);
    }
    return CUDA_SUCCESS;
}

CUresult sw_quiesce(sw_device *d, uint64_t *devices)
{
    sw_policy *p = d->pol;
    const sw_backend *be = &p->be;
    if (be->capturing && be->capturing(be->ctx))
        return CUDA_ERROR_NOT_READY;
    pthread_mutex_lock(&d->lock);
    uint64_t mask = sw_reach(d);
    pthread_mutex_unlock(&d->lock);
    uint64_t deadline = sw_deadline(d);
    CUresult r = sw_gate_close(p, mask, deadline);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = sync_all(p, mask, deadline)) != CUDA_SUCCESS) {
        sw_gate_open(p, mask);
        return r;
    }
    *devices = mask;
    return CUDA_SUCCESS;
}

void sw_unquiesce(sw_device *d, uint64_t devices, uint64_t since_ns)
{
    sw_gate_open(d->pol, devices);
    atomic_fetch_add_explicit(&d->c.stall_ns, sw_now_ns() - since_ns, memory_order_relaxed);
}

/* Whether the hand should pass pg by: its owners were used since it last
 * looked (then it is stamped with the clock, which moves on). */
static bool referenced(sw_policy *p, sw_page *pg)
{
    if (sw_page_stamp(p, pg->va) <= pg->seen)
        return false;
    pg->seen = sw_clock_tick(p) - 1;
    return true;
}

size_t sw_spill_coldest(sw_device *d, size_t want, CUdeviceptr keep_lo, CUdeviceptr keep_hi,
                        CUresult *err)
{
    sw_policy *p = d->pol;
    *err = CUDA_SUCCESS;
    if (!want)
        return 0;
    CUdeviceptr *vas = malloc(want * sizeof *vas);
    if (!vas) {
        *err = CUDA_ERROR_OUT_OF_MEMORY;
        return 0;
    }
    size_t n = 0;
    /* Two turns of the hand stamp every page once and then find them all
     * unreferenced: a bound, not an expected cost. */
    size_t budget = 2 * d->nring + 2;
    sw_page *stop = NULL;
    while (n < want && d->ring && budget--) {
        sw_page *pg = d->ring;
        d->ring = pg->next; /* the hand moves on */
        if (pg == stop)
            break; /* every page left on the ring is chosen already */
        if (!sw_page_movable(p, d, pg) || (pg->va >= keep_lo && pg->va < keep_hi) ||
            referenced(p, pg))
            continue;
        vas[n++] = pg->va;
        if (!stop)
            stop = pg;
    }
    size_t moved = sw_move_pages(p, d, vas, n, SW_LOC_HOST, err);
    free(vas);
    return moved;
}

/* ---- fill ------------------------------------------------------------------ */

/* Whether a fill could find a device page without spilling: a racy hint
 * that spares the sync when the pool is plainly full. */
static bool room_likely(sw_device *d)
{
    pthread_mutex_lock(&d->lock);
    bool room = d->pool.nfree || d->pool.created < d->pool.limit_pages || d->ncached ||
                sw_freeq_pending(d, NULL);
    pthread_mutex_unlock(&d->lock);
    return room;
}

/* Moves the host pages of [va, va + n pages) to the device while free
 * device pages last; returns how many moved. Quiesced, locks held. */
static size_t fill_range(sw_policy *p, sw_device *d, CUdeviceptr va, size_t n, CUresult *err)
{
    CUdeviceptr *vas = malloc(n * sizeof *vas);
    size_t k = 0;
    *err = CUDA_SUCCESS;
    if (!vas)
        return 0;
    for (size_t i = 0; i < n; i++) {
        CUdeviceptr at = va + ((CUdeviceptr)i << p->shift);
        sw_page *pg = atomic_load(&sw_pt_get(&p->pt, at)->page);
        if (pg && pg->loc == SW_LOC_HOST)
            vas[k++] = at;
    }
    size_t moved = sw_move_pages(p, d, vas, k, SW_LOC_DEVICE, err);
    if (*err == CUDA_ERROR_OUT_OF_MEMORY)
        *err = CUDA_SUCCESS; /* no free device page: the rest stays on the host */
    free(vas);
    return moved;
}

CUresult sw_fill(sw_policy *p, CUdeviceptr ptr)
{
    if (!p || !p->page)
        return CUDA_ERROR_NOT_FOUND;
    sw_pte *e = sw_pt_get(&p->pt, ptr);
    sw_page *pg = e ? atomic_load_explicit(&e->page, memory_order_acquire) : NULL;
    sw_heat *h = sw_heat_at(p, ptr);
    if (!pg || !h)
        return CUDA_ERROR_NOT_FOUND;
    sw_device *d = pg->dev;
    if (!atomic_load(&h->host_pages) || !room_likely(d))
        return CUDA_SUCCESS;
    uint64_t held, t0 = sw_now_ns();
    CUresult r = sw_quiesce(d, &held);
    if (r == CUDA_ERROR_NOT_READY)
        return CUDA_SUCCESS; /* busy or capturing: it stays on the host for now */
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&p->handles_lock);
    pthread_mutex_lock(&d->lock);
    CUdeviceptr va;
    size_t n, moved = 0;
    /* Looked up again: the owner may have been freed before the gate closed. */
    if (sw_owner_range(p, d, ptr, &va, &n, &h) && atomic_load(&h->host_pages))
        moved = fill_range(p, d, va, n, &r);
    if (moved)
        atomic_fetch_add_explicit(&d->c.fill_events, 1, memory_order_relaxed);
    pthread_mutex_unlock(&d->lock);
    pthread_mutex_unlock(&p->handles_lock);
    sw_unquiesce(d, held, t0);
    return r;
}
