/* Spill: which pages move to the host, and when (docs/design.md, "Spill").
 *
 * Spill happens when an allocation finds no device page left: the coldest
 * pages backing live data move to pinned host pages (their VAs and bytes
 * stay) and the allocation gets the device pages they held. Victims are
 * chosen among a window of pages ahead of a clock's hand over the device's
 * ring of live device pages: lowest rate of use first (uses per tick over
 * the owner's life, decayed: heat.c), then those not used since the hand
 * last passed (second chance), then the hand's order. A repeating step is the worst case of recency alone (it
 * evicts exactly what the next kernels need); counting uses keeps what a
 * step uses often on the device and sends what it uses rarely (optimizer
 * state) to the host (issue 13). Each choice costs O(window) for a window
 * of 2 x want + 64 pages, whatever the size of the pool (issue 14).
 *
 * Fill, the way back, is fill.c. */
#include <stdlib.h>

#include "policy/internal.h"

/* A page ahead of the hand, as the choice of victims weighs it. */
typedef struct cand {
    sw_page *pg;
    uint32_t rate;
    bool referenced; /* used since the hand last passed */
    size_t order;
} cand;

static int colder_first(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->rate != y->rate)
        return x->rate < y->rate ? -1 : 1;
    if (x->referenced != y->referenced)
        return x->referenced ? 1 : -1;
    return x->order < y->order ? -1 : x->order > y->order;
}

uint32_t sw_ring_floor(sw_device *d, uint64_t now)
{
    if (d->ring_floor_at && now - d->ring_floor_at < SW_NEWBORN_TICKS)
        return d->ring_floor;
    uint32_t floor = UINT32_MAX;
    sw_page *pg = d->ring;
    for (size_t i = 0; pg && i < 64 && i < d->nring; i++, pg = pg->next) {
        uint64_t stamp;
        uint32_t rate;
        sw_page_heat(d->pol, pg->va, &stamp, &rate);
        floor = rate < floor ? rate : floor;
    }
    d->ring_floor = floor;
    d->ring_floor_at = now;
    return floor;
}

/* How far ahead of the hand one choice looks: enough to find the rarely
 * used pages among often used ones, bounded so a spill stays O(want). */
#define WINDOW_MIN 64u

/* Weighs the pages ahead of the hand (which moves past them); a page used
 * since the hand last passed is stamped with the clock. Returns how many
 * candidates fill c. */
static size_t look_ahead(sw_policy *p, sw_device *d, size_t window, CUdeviceptr keep_lo,
                         CUdeviceptr keep_hi, uint32_t max_rate, cand *c)
{
    size_t n = 0;
    for (size_t i = 0; i < window && d->ring; i++) {
        sw_page *pg = d->ring;
        d->ring = pg->next; /* the hand moves on */
        if (!sw_page_movable(p, d, pg) || (pg->va >= keep_lo && pg->va < keep_hi))
            continue;
        uint64_t stamp;
        uint32_t rate;
        sw_page_heat(p, pg->va, &stamp, &rate);
        if (rate > max_rate)
            continue;
        bool ref = stamp > pg->seen;
        if (ref)
            pg->seen = sw_clock_tick(p) - 1;
        c[n++] = (cand){pg, rate, ref, i};
    }
    return n;
}

size_t sw_spill_coldest(sw_device *d, size_t want, CUdeviceptr keep_lo, CUdeviceptr keep_hi,
                        uint32_t max_rate, CUresult *err)
{
    sw_policy *p = d->pol;
    *err = CUDA_SUCCESS;
    if (!want || !d->nring)
        return 0;
    size_t window = want > SIZE_MAX / 2 - WINDOW_MIN ? SIZE_MAX : 2 * want + WINDOW_MIN;
    if (window > d->nring)
        window = d->nring;
    cand *c = malloc(window * sizeof *c);
    CUdeviceptr *vas = malloc((want < window ? want : window) * sizeof *vas);
    if (!c || !vas) {
        free(c);
        free(vas);
        *err = CUDA_ERROR_OUT_OF_MEMORY;
        return 0;
    }
    size_t n = look_ahead(p, d, window, keep_lo, keep_hi, max_rate, c);
    qsort(c, n, sizeof *c, colder_first);
    size_t k = n < want ? n : want;
    for (size_t i = 0; i < k; i++)
        vas[i] = c[i].pg->va;
    size_t moved = sw_move_pages(p, d, vas, k, SW_LOC_HOST, err);
    free(vas);
    free(c);
    return moved;
}
