/* The VA arena of one device: page-granular ranges of one reservation.
 *
 * Free ranges carry boundary tags (length at the first page, start at the
 * last) so a freed range merges with both neighbours in O(1), and sit in size
 * bins (exact up to 63 pages, then one per power of two) with a bitmap of
 * non-empty bins, so finding a fit is a bit scan plus a short walk.
 *
 * Freed pages keep their mapping (cached): an allocation prefers a place
 * whose pages are all mapped already, because mapping and granting access
 * cost 35-40 us per page on the driver. Pages are unmapped only to reclaim
 * them, and only by a caller that has just synchronized the device.
 * Everything here runs under the device lock. */
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

#define CANDIDATES 16 /* ranges examined per allocation */

static unsigned bin_of(uint32_t n)
{
    if (n < SW_BIN_EXACT)
        return n;
    unsigned lg = 31u - (unsigned)__builtin_clz(n);
    unsigned b = SW_BIN_EXACT + (lg - 6u);
    return b < SW_NBINS ? b : SW_NBINS - 1;
}

static sw_pte *arena_pte(sw_device *d, uint32_t i)
{
    return sw_pt_get(&d->pol->pt, sw_arena_va(&d->arena, i, d->shift));
}

static bool page_mapped(sw_device *d, uint32_t i)
{
    return d->arena.mapped[i];
}

/* Arena page index of va, or SW_NONE for a VA outside the arena. */
static uint32_t arena_index(const sw_device *d, CUdeviceptr va)
{
    const sw_arena *a = &d->arena;
    if (!a->mapped || va < a->base || va >= a->base + ((CUdeviceptr)a->npages << d->shift))
        return SW_NONE;
    return (uint32_t)((va - a->base) >> d->shift);
}

static void bin_insert(sw_arena *a, uint32_t s, uint32_t n)
{
    unsigned b = bin_of(n);
    a->rlen[s] = n;
    a->rstart[s + n - 1] = s;
    a->prev[s] = SW_NONE;
    a->next[s] = a->bin_head[b];
    if (a->bin_head[b] != SW_NONE)
        a->prev[a->bin_head[b]] = s;
    a->bin_head[b] = s;
    a->binmap[b / 64] |= 1ull << (b % 64);
}

static void bin_remove(sw_arena *a, uint32_t s)
{
    unsigned b = bin_of(a->rlen[s]);
    if (a->prev[s] != SW_NONE)
        a->next[a->prev[s]] = a->next[s];
    else
        a->bin_head[b] = a->next[s];
    if (a->next[s] != SW_NONE)
        a->prev[a->next[s]] = a->prev[s];
    if (a->bin_head[b] == SW_NONE)
        a->binmap[b / 64] &= ~(1ull << (b % 64));
}

/* First non-empty bin >= b, or SW_NBINS. */
static unsigned next_bin(const sw_arena *a, unsigned b)
{
    while (b < SW_NBINS) {
        uint64_t w = a->binmap[b / 64] >> (b % 64);
        if (w)
            return b + (unsigned)__builtin_ctzll(w);
        b = (b / 64 + 1) * 64;
    }
    return SW_NBINS;
}

int sw_arena_init(sw_device *d, CUdeviceptr base, uint32_t npages)
{
    sw_arena *a = &d->arena;
    memset(a, 0, sizeof *a);
    a->base = base;
    a->npages = npages;
    a->used = calloc(npages, 1);
    a->mapped = calloc(npages, 1);
    a->rlen = calloc(npages, sizeof *a->rlen);
    a->rstart = calloc(npages, sizeof *a->rstart);
    a->next = calloc(npages, sizeof *a->next);
    a->prev = calloc(npages, sizeof *a->prev);
    if (!a->used || !a->mapped || !a->rlen || !a->rstart || !a->next || !a->prev)
        return -1;
    /* Entries for the whole arena exist from the start: the hot paths then
     * never allocate page-table levels. */
    for (uint32_t i = 0; i < npages; i += 1u << 9)
        if (!sw_pt_ensure(&d->pol->pt, sw_arena_va(a, i, d->shift)))
            return -1;
    if (!sw_pt_ensure(&d->pol->pt, sw_arena_va(a, npages - 1, d->shift)))
        return -1;
    for (unsigned b = 0; b < SW_NBINS; b++)
        a->bin_head[b] = SW_NONE;
    bin_insert(a, 0, npages);
    a->free_pages = npages;
    return 0;
}

void sw_arena_destroy(sw_device *d)
{
    sw_arena *a = &d->arena;
    free(a->used);
    free(a->mapped);
    free(a->rlen);
    free(a->rstart);
    free(a->next);
    free(a->prev);
    memset(a, 0, sizeof *a);
}

/* Unmapped pages among n from s; with enough == 1 only whether there is one
 * (a byte scan either way: this runs on every allocation). */
static uint32_t count_unmapped(sw_device *d, uint32_t s, uint32_t n, uint32_t enough)
{
    const uint8_t *m = d->arena.mapped + s;
    if (enough == 1)
        return memchr(m, 0, n) != NULL;
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++)
        c += !m[i];
    return c;
}

typedef struct placement {
    uint32_t range, at, maps, len;
} placement;

/* Best place for n pages: fewest pages to map, then smallest range. Looks at
 * ranges from the smallest fitting bin upwards, at most CANDIDATES. */
static bool find_place(sw_device *d, uint32_t n, bool cached_only, placement *best)
{
    sw_arena *a = &d->arena;
    unsigned seen = 0;
    best->maps = UINT32_MAX;
    for (unsigned b = next_bin(a, bin_of(n)); b < SW_NBINS; b = next_bin(a, b + 1)) {
        for (uint32_t r = a->bin_head[b]; r != SW_NONE; r = a->next[r]) {
            uint32_t len = a->rlen[r];
            if (len < n)
                continue;
            uint32_t ends[2] = {r, r + len - n};
            for (int e = 0; e < (len > n ? 2 : 1); e++) {
                /* Counting stops at the best so far: only a strictly
                 * better place replaces it (smaller ranges come first). */
                uint32_t bound = cached_only ? 1 : best->maps;
                uint32_t m = count_unmapped(d, ends[e], n, bound);
                if (m < bound)
                    *best = (placement){r, ends[e], m, len};
            }
            if (best->maps == 0 || ++seen >= CANDIDATES)
                return best->maps != UINT32_MAX;
        }
    }
    return best->maps != UINT32_MAX;
}

/* Takes [at, at+n) out of free range r, returning the rest to the bins. */
static void carve(sw_device *d, uint32_t r, uint32_t at, uint32_t n, uint32_t unmapped)
{
    sw_arena *a = &d->arena;
    uint32_t len = a->rlen[r];
    bin_remove(a, r);
    if (at > r)
        bin_insert(a, r, at - r);
    if (at + n < r + len)
        bin_insert(a, at + n, r + len - (at + n));
    memset(a->used + at, 1, n);
    a->free_pages -= n;
    a->free_mapped -= n - unmapped;
}

CUresult sw_map_page(sw_device *d, CUdeviceptr va, sw_page *pg)
{
    CUresult r = d->pol->be.map(d->pol->be.ctx, va, d->page, pg->handle);
    if (r != CUDA_SUCCESS)
        return r;
    pg->nmaps++;
    atomic_store_explicit(&sw_pt_get(&d->pol->pt, va)->page, pg, memory_order_release);
    uint32_t i = arena_index(d, va);
    if (i != SW_NONE)
        d->arena.mapped[i] = 1;
    atomic_fetch_add_explicit(&d->c.maps, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&d->c.mapped, d->page, memory_order_relaxed);
    return CUDA_SUCCESS;
}

CUresult sw_unmap_page(sw_device *d, CUdeviceptr va)
{
    sw_pte *e = sw_pt_get(&d->pol->pt, va);
    sw_page *pg = atomic_load_explicit(&e->page, memory_order_relaxed);
    CUresult r = d->pol->be.unmap(d->pol->be.ctx, va, d->page);
    if (r != CUDA_SUCCESS)
        return r;
    pg->nmaps--;
    atomic_store_explicit(&e->page, NULL, memory_order_release);
    uint32_t i = arena_index(d, va);
    if (i != SW_NONE)
        d->arena.mapped[i] = 0;
    atomic_fetch_add_explicit(&d->c.unmaps, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&d->c.mapped, d->page, memory_order_relaxed);
    return CUDA_SUCCESS;
}

/* Unmaps arena page i and gives its physical page back to the pool. */
static CUresult drop_page(sw_device *d, uint32_t i)
{
    sw_page *pg = atomic_load_explicit(&arena_pte(d, i)->page, memory_order_relaxed);
    CUresult r = sw_unmap_page(d, sw_arena_va(&d->arena, i, d->shift));
    if (r != CUDA_SUCCESS)
        return r;
    sw_pool_put(d, (sw_loc)pg->loc, pg->handle);
    if (pg->loc == SW_LOC_HOST)
        sw_count_sub(&d->c.host_in_use, d->page);
    sw_page_free(d, pg);
    return CUDA_SUCCESS;
}

/* Maps pool pages at the unmapped pages of [s, s+n) and grants access run by
 * run. On error, the pages of the failing run are given back unmapped. */
static CUresult map_missing(sw_device *d, uint32_t s, uint32_t n)
{
    sw_arena *a = &d->arena;
    uint32_t i = 0;
    while (i < n) {
        if (page_mapped(d, s + i)) {
            i++;
            continue;
        }
        uint32_t run = i;
        CUresult r = CUDA_SUCCESS;
        for (; i < n && !page_mapped(d, s + i); i++) {
            CUmemGenericAllocationHandle h;
            if ((r = sw_pool_take(d, SW_LOC_DEVICE, &h)) != CUDA_SUCCESS)
                break;
            sw_page *pg = sw_page_new(d, h, SW_LOC_DEVICE);
            if (!pg) {
                sw_pool_put(d, SW_LOC_DEVICE, h);
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            if ((r = sw_map_page(d, sw_arena_va(a, s + i, d->shift), pg)) != CUDA_SUCCESS) {
                sw_pool_put(d, SW_LOC_DEVICE, h);
                sw_page_free(d, pg);
                break;
            }
        }
        if (r == CUDA_SUCCESS && i > run)
            r = d->pol->be.set_access(d->pol->be.ctx, sw_arena_va(a, s + run, d->shift),
                                      (size_t)(i - run) << d->shift, d->access_mask);
        if (r != CUDA_SUCCESS) {
            /* Nothing ran on these fresh pages: unmapping them is safe. */
            for (uint32_t j = run; j < i; j++)
                (void)drop_page(d, s + j);
            return r;
        }
    }
    return CUDA_SUCCESS;
}

/* Free pages still mapped beyond a slack of 1/32 of the pool are better
 * reclaimed than new pages created: that keeps the pages held close to the
 * pages used (pool efficiency) at the price of an unmap (~15 us) instead of
 * a create (10-40 us). */
static bool cache_in_excess(const sw_device *d, size_t need)
{
    return d->arena.free_mapped >= need + d->pool.created / 32;
}

CUresult sw_arena_alloc(sw_device *d, uint32_t n, sw_map_mode mode, uint32_t *start)
{
    placement pl = {0, 0, 0, 0};
    if (!find_place(d, n, mode == SW_CACHED_ONLY, &pl))
        return CUDA_ERROR_OUT_OF_MEMORY;
    carve(d, pl.range, pl.at, n, pl.maps);
    if (pl.maps) {
        sw_pool *pool = &d->pool;
        /* Pages neither free in the pool nor yet created. */
        size_t short_by = pl.maps > pool->nfree ? pl.maps - pool->nfree : 0;
        if (short_by && mode == SW_MAP_FRESH && cache_in_excess(d, short_by)) {
            sw_arena_free(d, pl.at, n); /* the caller syncs and comes back to reclaim */
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (short_by && mode == SW_RECLAIM) {
            size_t got = 0;
            CUresult r = sw_arena_reclaim(d, short_by, &got);
            if (r != CUDA_SUCCESS) {
                sw_arena_free(d, pl.at, n);
                return r;
            }
            short_by -= got;
        }
        if (short_by > pool->limit_pages - pool->created) {
            sw_arena_free(d, pl.at, n);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        CUresult r = map_missing(d, pl.at, n);
        if (r != CUDA_SUCCESS) {
            sw_arena_free(d, pl.at, n);
            return r;
        }
    }
    *start = pl.at;
    return CUDA_SUCCESS;
}

void sw_arena_free(sw_device *d, uint32_t s, uint32_t n)
{
    sw_arena *a = &d->arena;
    uint32_t mapped = 0;
    for (uint32_t i = 0; i < n; i++) {
        /* A spilled page goes back to the host pool rather than stay cached:
         * the next allocation here should get device memory. Nothing uses a
         * range being freed (its sync point or event is behind us), so the
         * unmap is safe; if it fails, the page stays mapped and the next
         * owner counts it as host-resident. */
        sw_page *pg = a->mapped[s + i]
                          ? atomic_load_explicit(&arena_pte(d, s + i)->page, memory_order_relaxed)
                          : NULL;
        if (pg && pg->loc == SW_LOC_HOST)
            (void)drop_page(d, s + i);
        mapped += a->mapped[s + i];
    }
    memset(a->used + s, 0, n);
    a->free_pages += n;
    a->free_mapped += mapped;
    if (s > 0 && !a->used[s - 1]) {
        uint32_t l = a->rstart[s - 1];
        bin_remove(a, l);
        n += s - l;
        s = l;
    }
    if (s + n < a->npages && !a->used[s + n]) {
        uint32_t rn = a->rlen[s + n];
        bin_remove(a, s + n);
        n += rn;
    }
    bin_insert(a, s, n);
}

/* Largest bins first: their cached pages are the least likely to be reused
 * whole, and small exact bins feed the size classes. */
CUresult sw_arena_reclaim(sw_device *d, size_t want, size_t *got)
{
    sw_arena *a = &d->arena;
    *got = 0;
    for (int b = SW_NBINS - 1; b >= 1 && *got < want; b--) {
        for (uint32_t r = a->bin_head[b]; r != SW_NONE && *got < want; r = a->next[r]) {
            /* From the range's end: allocations are placed at the start of a
             * range, so the mapped pages left there stay usable. */
            for (uint32_t i = r + a->rlen[r]; i-- > r && *got < want;) {
                sw_page *pg = atomic_load_explicit(&arena_pte(d, i)->page, memory_order_relaxed);
                if (!pg || pg->loc != SW_LOC_DEVICE) /* a host page frees no device page */
                    continue;
                CUresult res = drop_page(d, i);
                if (res != CUDA_SUCCESS)
                    return res;
                a->free_mapped--;
                ++*got;
            }
        }
    }
    if (*got)
        atomic_fetch_add_explicit(&d->c.reclaims, *got, memory_order_relaxed);
    return CUDA_SUCCESS;
}

CUresult sw_arena_unmap_all(sw_device *d)
{
    CUresult first = CUDA_SUCCESS;
    for (uint32_t i = 0; i < d->arena.npages; i++) {
        if (!page_mapped(d, i))
            continue;
        CUresult r = drop_page(d, i);
        if (first == CUDA_SUCCESS)
            first = r;
    }
    return first;
}
