/* Fill: bringing pages a launch is about to use back from the host
 * (docs/design.md, "Spill"). The shim asks when sw_touch saw host pages in
 * what a launch names: the owner (an allocation, a slab, a small program
 * mapping) or, in a mapping with spans, the buffer's span only.
 *
 * Free device pages are used first: that never costs anyone else. When
 * there are none the device is oversubscribed, and bringing data back means
 * pushing other data out. Demand paging (LRU: push out whatever the clock
 * says is coldest) is a repeating step's worst case: every kernel evicts
 * what the next one needs, and each step moves its whole excess twice. The
 * no-thrash rule instead keeps a stable resident set:
 *   - data comes back only in place of data used at most two thirds as
 *     often (its rate of use, heat.c: a margin that two equally hot
 *     ranges cannot cross back and forth, while data used twice a step
 *     still displaces data used once), and only data used at least SWAP_MIN_USES
 *     times; what is used rarely (optimizer state, once a step) stays on the
 *     host and is read there in place (a kernel reads a host page at
 *     ~48 GB/s on an H100, docs/design.md) instead of moving back and forth;
 *   - the pages a swap may move come from a budget that refills with the
 *     clock, so that a burst of equally hot data cannot churn the device;
 *   - a swap that found no victim leaves a floor: ranges used no more than
 *     an eighth more often do not quiesce the device again for a while;
 *   - free device pages go to data used at least half as often as the
 *     coldest data on the device (what the hand is about to reach), so
 *     that a step's freed buffers do not pull its optimizer state in for
 *     the next step's allocations to push out again.
 * Once the often-used data is on the device, nothing moves any more. */
#include <stdlib.h>

#include "policy/internal.h"

#define SWAP_MIN_USES 4u
/* A victim is used at most this fraction as often as what comes in. */
#define SWAP_RATIO_NUM 2u
#define SWAP_RATIO_DEN 3u
/* Budget: pages per tick of the clock, and at most (the pool's pages / 8,
 * at least 8) saved up. */
#define SWAP_TOKENS_PER_TICK 1u
#define SWAP_TOKENS_MIN_CAP 8u
/* How long a floor holds, in ticks. */
#define FLOOR_TICKS (1u << (SW_HALF_LIFE_LOG - 5))

static uint64_t now_of(sw_policy *p)
{
    return atomic_load_explicit(&p->clock, memory_order_relaxed);
}

/* ---- the budget ------------------------------------------------------------ */

static uint64_t cap_of(const sw_device *d)
{
    uint64_t cap = d->pool.limit_pages / 8;
    return cap < SWAP_TOKENS_MIN_CAP ? SWAP_TOKENS_MIN_CAP : cap;
}

/* Tokens now (racy read: a hint before the quiesce). */
static uint64_t tokens_now(sw_device *d, uint64_t now)
{
    uint64_t t = atomic_load_explicit(&d->swap_tokens, memory_order_relaxed);
    uint64_t at = atomic_load_explicit(&d->swap_refilled, memory_order_relaxed);
    uint64_t add = now > at ? (now - at) * SWAP_TOKENS_PER_TICK : 0;
    uint64_t cap = cap_of(d);
    return t + add > cap || t + add < t ? cap : t + add;
}

/* Takes up to want tokens; device lock held. */
static size_t tokens_take(sw_device *d, uint64_t now, size_t want)
{
    uint64_t t = tokens_now(d, now);
    size_t got = want < t ? want : (size_t)t;
    atomic_store_explicit(&d->swap_tokens, t - got, memory_order_relaxed);
    atomic_store_explicit(&d->swap_refilled, now, memory_order_relaxed);
    return got;
}

static void tokens_give_back(sw_device *d, size_t n)
{
    uint64_t t = atomic_load_explicit(&d->swap_tokens, memory_order_relaxed) + n;
    uint64_t cap = cap_of(d);
    atomic_store_explicit(&d->swap_tokens, t > cap ? cap : t, memory_order_relaxed);
}

/* ---- what to fill ------------------------------------------------------------ */

/* The range a fill of ptr works on and its heat: the owner, narrowed to
 * the buffer's span in a mapping with spans. Locks held. */
static bool fill_target(sw_policy *p, sw_device *d, CUdeviceptr ptr, CUdeviceptr *va, size_t *n,
                        sw_heat **h)
{
    if (!sw_owner_range(p, d, ptr, va, n, h))
        return false;
    sw_pte *e = sw_pt_get(&p->pt, ptr);
    uintptr_t o = e ? atomic_load_explicit(&e->owner, memory_order_acquire) : 0;
    sw_spans *s = SW_OWN_TAG(o) == SW_OWN_VMM
                      ? atomic_load_explicit(&((sw_vmap *)SW_OWN_PTR(o))->spans, memory_order_acquire)
                      : NULL;
    if (s) {
        CUdeviceptr lo, hi;
        *h = sw_spans_at(s, ptr, &lo, &hi);
        *va = lo & ~(CUdeviceptr)(p->page - 1);
        *n = (size_t)((hi - *va + p->page - 1) >> p->shift);
    }
    return true;
}

/* The host pages of [va, va + n pages) that a move can bring back, at
 * most max of them, into vas (NULL: only counted). A page mapped at two
 * VAs, or one d was given no access to, never moves (sw_page_movable):
 * counting it would quiesce the device at every launch that names it,
 * and a swap would push data out for room nothing takes. */
static size_t host_pages(sw_policy *p, sw_device *d, CUdeviceptr va, size_t n, size_t max,
                         CUdeviceptr *vas)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < max; i++) {
        CUdeviceptr at = va + ((CUdeviceptr)i << p->shift);
        sw_page *pg = atomic_load(&sw_pt_get(&p->pt, at)->page);
        if (pg && pg->loc == SW_LOC_HOST && sw_page_movable(p, d, pg)) {
            if (vas)
                vas[k] = at;
            k++;
        }
    }
    return k;
}

/* Before the quiesce: whether the range a fill of ptr works on has a host
 * page that can move at all (a hint: the device lock alone is held, and
 * the quiesce looks again). */
static bool can_move_in(sw_policy *p, sw_device *d, CUdeviceptr ptr)
{
    CUdeviceptr va;
    size_t n;
    sw_heat *h;
    sw_dev_lock(d);
    bool any = fill_target(p, d, ptr, &va, &n, &h) && host_pages(p, d, va, n, 1, NULL);
    sw_dev_unlock(d);
    return any;
}

/* Moves up to max host pages of the range to the device while device
 * pages are free; returns how many moved. Quiesced, locks held. */
static size_t fill_free(sw_policy *p, sw_device *d, CUdeviceptr va, size_t n, size_t max,
                        CUresult *err)
{
    *err = CUDA_SUCCESS;
    CUdeviceptr *vas = malloc((n ? n : 1) * sizeof *vas);
    if (!vas) {
        *err = CUDA_ERROR_OUT_OF_MEMORY;
        return 0;
    }
    size_t moved = sw_move_pages(p, d, vas, host_pages(p, d, va, n, max, vas), SW_LOC_DEVICE, err);
    if (*err == CUDA_ERROR_OUT_OF_MEMORY)
        *err = CUDA_SUCCESS; /* no free device page: the rest stays on the host */
    free(vas);
    return moved;
}

/* ---- the no-thrash rule --------------------------------------------------------- */

/* Whether a swap may be worth a quiesce (racy hints, read before it). */
static bool swap_likely(sw_device *d, const sw_heat *h, uint64_t now)
{
    if (!d->cfg.spill)
        return false;
    if (d->cfg.demand_paging)
        return true;
    uint32_t rate = sw_heat_rate(h, now);
    if (rate == SW_RATE_NEWBORN || sw_heat_uses(h, now) < SWAP_MIN_USES || !tokens_now(d, now))
        return false; /* not judged yet, used too rarely, or out of budget */
    uint64_t at = atomic_load_explicit(&d->swap_floor_at, memory_order_relaxed);
    uint32_t floor = atomic_load_explicit(&d->swap_floor, memory_order_relaxed);
    return !(now - at < FLOOR_TICKS && rate < floor);
}

/* The floor a swap that found no victim for data of this rate leaves: a
 * margin above its rate, which a rarely used range's rate creeping up by a
 * little each step does not cross (it did, every step, when the floor was
 * the rate itself: a device sync per step that moved nothing). */
#define FLOOR_MARGIN_LOG 3u /* 1/8 */
static uint32_t floor_after(uint32_t rate)
{
    uint64_t f = (uint64_t)rate + (rate >> FLOOR_MARGIN_LOG) + 1;
    return f > UINT32_MAX ? UINT32_MAX : (uint32_t)f;
}

/* The range's host pages in place of colder device pages (or, demand
 * paging, the clock's coldest); returns how many came back. Quiesced,
 * locks held. */
static size_t swap_in(sw_policy *p, sw_device *d, CUdeviceptr va, size_t n, const sw_heat *h,
                      CUresult *err)
{
    uint64_t now = now_of(p);
    uint32_t rate = sw_heat_rate(h, now);
    size_t want = n, budget = 0;
    uint32_t max_rate = UINT32_MAX;
    if (!d->cfg.demand_paging) {
        if (rate == SW_RATE_NEWBORN || sw_heat_uses(h, now) < SWAP_MIN_USES)
            return 0;
        budget = tokens_take(d, now, n);
        want = budget;
        max_rate = (uint32_t)((uint64_t)rate * SWAP_RATIO_NUM / SWAP_RATIO_DEN);
    }
    size_t k = host_pages(p, d, va, n, want, NULL);
    CUresult e_out = CUDA_SUCCESS, e_in = CUDA_SUCCESS;
    size_t out = k ? sw_spill_coldest(d, k, va, va + ((CUdeviceptr)n << p->shift), max_rate, &e_out)
                   : 0;
    if (out)
        sw_figure_add(&d->c, &d->c.spill_events, 1);
    if (k && !out && !d->cfg.demand_paging) {
        atomic_store_explicit(&d->swap_floor, floor_after(rate), memory_order_relaxed);
        atomic_store_explicit(&d->swap_floor_at, now, memory_order_relaxed);
    }
    size_t in = out ? fill_free(p, d, va, n, out, &e_in) : 0;
    /* The host limit (OUT_OF_MEMORY) only means nothing could go out. */
    *err = e_out != CUDA_SUCCESS && e_out != CUDA_ERROR_OUT_OF_MEMORY ? e_out : e_in;
    if (budget > in)
        tokens_give_back(d, budget - in);
    return in;
}

/* ---- fill -------------------------------------------------------------------- */

/* Whether a fill could find a device page without spilling, for data of
 * this rate (not used less than half as often as the coldest data on the
 * device): a racy hint that spares the sync when the pool is plainly
 * full. */
static bool room_for(sw_device *d, uint32_t rate, uint64_t now)
{
    sw_dev_lock(d);
    bool room = d->pool.nfree || d->pool.created < sw_pool_cap(d) || d->ncached ||
                sw_freeq_pending(d, NULL);
    if (room && !d->cfg.demand_paging && d->c.host_in_use) {
        uint32_t floor = sw_ring_floor(d, now);
        room = floor == UINT32_MAX || 2 * (uint64_t)rate >= floor;
    }
    sw_dev_unlock(d);
    return room;
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
    if (!atomic_load(&h->host_pages))
        return CUDA_SUCCESS;
    sw_heat *target = h;
    uintptr_t o = atomic_load_explicit(&e->owner, memory_order_acquire);
    if (SW_OWN_TAG(o) == SW_OWN_VMM) {
        sw_spans *s = atomic_load_explicit(&((sw_vmap *)SW_OWN_PTR(o))->spans, memory_order_acquire);
        CUdeviceptr lo, hi;
        if (s)
            target = sw_spans_at(s, ptr, &lo, &hi);
    }
    uint64_t now = now_of(p);
    bool room = room_for(d, sw_heat_rate(target, now), now);
    if ((!room && !swap_likely(d, target, now)) || !can_move_in(p, d, ptr))
        return CUDA_SUCCESS;
    /* A device still busy since an earlier wait gave up on it is not
     * waited for by every launch that names host pages: the launch runs
     * with the data where it is (correct, slower) until that sync ends. */
    uint64_t by = 0;
    if (sw_back_off(d, &by))
        return CUDA_SUCCESS;
    sw_quiet q;
    CUresult r = sw_move_begin(d, &q, &by);
    if (r == CUDA_ERROR_NOT_READY)
        return CUDA_SUCCESS; /* busy or capturing: it stays on the host for now */
    if (r != CUDA_SUCCESS)
        return r;
    CUdeviceptr va;
    size_t n, moved = 0;
    /* Looked up again: the owner may have been freed before the gate closed. */
    if (fill_target(p, d, ptr, &va, &n, &h)) {
        CUdeviceptr end = va + ((CUdeviceptr)n << p->shift);
        if (room && sw_range_on_host(p, va, end))
            moved = fill_free(p, d, va, n, n, &r);
        if (r == CUDA_SUCCESS && sw_range_on_host(p, va, end) && swap_likely(d, h, now_of(p)))
            moved += swap_in(p, d, va, n, h, &r);
    }
    if (moved)
        sw_figure_add(&d->c, &d->c.fill_events, 1);
    sw_move_end(d, &q);
    return r;
}
