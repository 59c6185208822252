/* The VA arena of one device: segments (VA reservations) tiled by extents.
 *
 * Every byte of a segment belongs to exactly one extent, free or used, kept
 * in address order with its neighbours, so a freed extent merges with free
 * neighbours in O(1). Free extents sit in size bins (exact below 8
 * granules, then eight per power of two) with a bitmap of non-empty bins.
 *
 * Extents are byte ranges (multiples of the granule, 4 KiB for 2 MiB
 * pages), not page ranges: physical memory is held per page, and a page
 * is backed while any used extent overlaps it, so allocations of different
 * sizes share pages instead of each rounding up to whole pages (issue 11:
 * per-size-class pages refused memory the driver would have given).
 * Placement counts the pages a candidate would have to map (pages are what
 * the limit bounds, VA is cheap) and prefers free extents over pages that
 * are mapped already: the ends of a free extent touch its used neighbours'
 * pages.
 *
 * VA is never the limit: when no free extent fits, the arena reserves one
 * more segment, as large as all before it. Everything here runs under the
 * device lock; sw_mixed_find is the lock-free exception. */
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

#define CANDIDATES 16 /* free extents a quick placement examines */

/* ---- records ------------------------------------------------------------- */

static sw_ext *ext_new(sw_device *d)
{
    sw_ext *e = d->arena.spare;
    if (e)
        d->arena.spare = e->bnext;
    else if (!(e = calloc(1, sizeof *e)))
        return NULL;
    e->prev = e->bnext = e->bprev = NULL;
    atomic_store_explicit(&e->next, NULL, memory_order_relaxed);
    atomic_store_explicit(&e->kind, SW_EXT_FREE, memory_order_relaxed);
    /* A new incarnation: a claim read from the old one fails. */
    uint64_t st = atomic_load_explicit(&e->state, memory_order_relaxed);
    atomic_store_explicit(&e->state, ((st >> 8) + 1) << 8 | SW_DEAD, memory_order_release);
    atomic_store_explicit(&e->req, 0, memory_order_relaxed);
    atomic_store_explicit(&e->slab, NULL, memory_order_relaxed);
    e->dev = d;
    return e;
}

/* Records outlive their extent: a lock-free reader may still hold one. */
static void ext_recycle(sw_device *d, sw_ext *e)
{
    atomic_store_explicit(&e->kind, SW_EXT_FREE, memory_order_relaxed);
    e->bnext = d->arena.spare;
    d->arena.spare = e;
}

static void set_range(sw_ext *e, CUdeviceptr base, uint64_t size)
{
    atomic_store_explicit(&e->base, base, memory_order_relaxed);
    atomic_store_explicit(&e->size, size, memory_order_relaxed);
}

static sw_ext *next_of(const sw_ext *e)
{
    return atomic_load_explicit(&e->next, memory_order_relaxed);
}

/* ---- bins ---------------------------------------------------------------- */

static unsigned bin_of(const sw_arena *a, uint64_t size)
{
    uint64_t g = size / a->granule;
    if (g < 8)
        return (unsigned)g;
    unsigned fl = 63u - (unsigned)__builtin_clzll(g);
    unsigned b = 8u + (fl - 3u) * 8u + (unsigned)((g >> (fl - 3u)) & 7u);
    return b < SW_EXT_BINS ? b : SW_EXT_BINS - 1;
}

static void bin_insert(sw_arena *a, sw_ext *e)
{
    uint64_t size = atomic_load_explicit(&e->size, memory_order_relaxed);
    unsigned b = bin_of(a, size);
    e->bprev = NULL;
    e->bnext = a->bin[b];
    if (a->bin[b])
        a->bin[b]->bprev = e;
    a->bin[b] = e;
    a->binmap[b / 64] |= 1ull << (b % 64);
    a->free_bytes += size;
}

static void bin_remove(sw_arena *a, sw_ext *e)
{
    uint64_t size = atomic_load_explicit(&e->size, memory_order_relaxed);
    unsigned b = bin_of(a, size);
    if (e->bprev)
        e->bprev->bnext = e->bnext;
    else
        a->bin[b] = e->bnext;
    if (e->bnext)
        e->bnext->bprev = e->bprev;
    if (!a->bin[b])
        a->binmap[b / 64] &= ~(1ull << (b % 64));
    e->bnext = e->bprev = NULL;
    a->free_bytes -= size;
}

/* First non-empty bin >= b, or SW_EXT_BINS. */
static unsigned next_bin(const sw_arena *a, unsigned b)
{
    while (b < SW_EXT_BINS) {
        uint64_t w = a->binmap[b / 64] >> (b % 64);
        if (w)
            return b + (unsigned)__builtin_ctzll(w);
        b = (b / 64 + 1) * 64;
    }
    return SW_EXT_BINS;
}

/* ---- segments ------------------------------------------------------------ */

bool sw_arena_contains(const sw_device *d, CUdeviceptr va)
{
    unsigned n = atomic_load_explicit(&d->arena.nsegs, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        if (va - d->arena.seg[i].base < d->arena.seg[i].size)
            return true;
    return false;
}

/* Page-table entries for the whole segment exist from the start: the hot
 * paths then never allocate page-table levels. */
static bool ensure_entries(sw_device *d, CUdeviceptr base, size_t size)
{
    for (size_t off = 0; off < size; off += (size_t)512 << d->shift)
        if (!sw_pt_ensure(&d->pol->pt, base + off))
            return false;
    return sw_pt_ensure(&d->pol->pt, base + size - d->page) != NULL;
}

/* One more reservation of at least `size` bytes, as one free extent. */
static CUresult seg_add(sw_device *d, size_t size)
{
    sw_arena *a = &d->arena;
    unsigned n = atomic_load_explicit(&a->nsegs, memory_order_relaxed);
    if (n == SW_MAX_SEGS)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size = (size + d->page - 1) & ~(size_t)(d->page - 1);
    sw_ext *e = ext_new(d);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUdeviceptr base;
    const sw_backend *be = &d->pol->be;
    CUresult r = be->va_reserve(be->ctx, d->id, size, d->page, &base);
    if (r == CUDA_SUCCESS && !ensure_entries(d, base, size)) {
        (void)be->va_free(be->ctx, base, size);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r != CUDA_SUCCESS) {
        ext_recycle(d, e);
        return r;
    }
    a->seg[n] = (sw_seg){base, size};
    atomic_store_explicit(&a->nsegs, n + 1, memory_order_release);
    atomic_fetch_add_explicit(&d->c.va_bytes, size, memory_order_relaxed);
    set_range(e, base, size);
    bin_insert(a, e);
    return CUDA_SUCCESS;
}

/* Granule and chunk follow the page size: 4 KiB and 64 KiB for 2 MiB. */
int sw_arena_init(sw_device *d, size_t first_va)
{
    sw_arena *a = &d->arena;
    memset(a, 0, sizeof *a);
    a->granule = d->page / 512 < SW_MIN_ALIGN ? SW_MIN_ALIGN : d->page / 512;
    a->chunk = d->page / SW_MIXED_SLOTS;
    return seg_add(d, first_va) == CUDA_SUCCESS ? 0 : -1;
}

/* The first extent of a segment, the one at its base: used, its page says;
 * free, it is in a bin. */
static sw_ext *seg_first(sw_device *d, CUdeviceptr base)
{
    sw_ext *e = sw_ext_at(d, base);
    for (unsigned b = 0; b < SW_EXT_BINS && !e; b++)
        for (sw_ext *x = d->arena.bin[b]; x && !e; x = x->bnext)
            if (sw_ext_base(x) == base)
                e = x;
    return e;
}

void sw_arena_destroy(sw_device *d)
{
    sw_arena *a = &d->arena;
    unsigned n = atomic_load(&a->nsegs);
    /* Every segment's first extent is found before any record is freed:
     * the search reads the bins, which hold free extents of all segments. */
    sw_ext *first[SW_MAX_SEGS];
    for (unsigned i = 0; i < n; i++)
        first[i] = seg_first(d, a->seg[i].base);
    for (unsigned i = 0; i < n; i++) {
        sw_ext *e = first[i];
        while (e) {
            sw_ext *nx = next_of(e);
            free(e);
            e = nx;
        }
    }
    while (a->spare) {
        sw_ext *nx = a->spare->bnext;
        free(a->spare);
        a->spare = nx;
    }
    memset(a->bin, 0, sizeof a->bin);
    memset(a->binmap, 0, sizeof a->binmap);
}

/* ---- placement ------------------------------------------------------------ */

typedef struct place {
    sw_ext *e;
    CUdeviceptr at;
    size_t cost;   /* pages to map */
    uint64_t len;  /* size of the free extent */
} place;

/* Unmapped pages of [at, at + size), counted up to bound. */
static size_t unmapped(sw_device *d, CUdeviceptr at, size_t size, size_t bound)
{
    CUdeviceptr first = at >> d->shift, last = (at + size - 1) >> d->shift;
    size_t n = 0;
    for (CUdeviceptr pn = first; pn <= last && n < bound; pn++) {
        sw_pte *e = sw_pt_get(&d->pol->pt, pn << d->shift);
        n += !e || !atomic_load_explicit(&e->page, memory_order_relaxed);
    }
    return n;
}

/* Whether a place at `at` beats *best: fewer pages to map, then page
 * aligned when the request is half a page or more (a buffer's TLB reach;
 * never at the price of a page), then the smaller free extent. */
static bool better(const sw_device *d, const place *best, size_t cost, CUdeviceptr at,
                   uint64_t len, size_t size)
{
    if (!best->e || cost != best->cost)
        return !best->e || cost < best->cost;
    if (size >= d->page / 2) {
        bool a = (at & (d->page - 1)) == 0, b = (best->at & (d->page - 1)) == 0;
        if (a != b)
            return a;
    }
    return len < best->len;
}

/* The best of the places free extent e offers for size bytes aligned to
 * align: its two ends, and the first page boundary inside it. */
static void consider(sw_device *d, sw_ext *e, size_t size, size_t align, place *best)
{
    CUdeviceptr b = sw_ext_base(e), end = sw_ext_end(e);
    CUdeviceptr lo = (b + align - 1) & ~(CUdeviceptr)(align - 1);
    if (lo < b || lo + size > end)
        return;
    CUdeviceptr hi = (end - size) & ~(CUdeviceptr)(align - 1);
    CUdeviceptr pa = (lo + d->page - 1) & ~(CUdeviceptr)(d->page - 1);
    uint64_t len = atomic_load_explicit(&e->size, memory_order_relaxed);
    CUdeviceptr at[3] = {lo, hi, pa};
    for (int i = 0; i < 3; i++) {
        if ((i == 1 && hi == lo) || (i == 2 && (pa == lo || pa == hi || pa + size > end)))
            continue;
        size_t bound = best->e ? best->cost + 1 : SIZE_MAX;
        size_t c = unmapped(d, at[i], size, bound);
        if (better(d, best, c, at[i], len, size))
            *best = (place){e, at[i], c, len};
    }
}

static bool find_place(sw_device *d, size_t size, size_t align, sw_place_mode mode, place *best)
{
    sw_arena *a = &d->arena;
    unsigned seen = 0;
    *best = (place){0};
    for (unsigned b = next_bin(a, bin_of(a, size)); b < SW_EXT_BINS; b = next_bin(a, b + 1)) {
        for (sw_ext *e = a->bin[b]; e; e = e->bnext) {
            if (atomic_load_explicit(&e->size, memory_order_relaxed) < size)
                continue;
            consider(d, e, size, align, best);
            if (mode != SW_PLACE_BEST && best->e && (best->cost == 0 || ++seen >= CANDIDATES))
                goto done;
        }
    }
done:
    if (mode == SW_PLACE_MAPPED && best->e && best->cost)
        best->e = NULL;
    return best->e != NULL;
}

/* Splits free extent f around [at, at + size) and returns the used middle. */
static sw_ext *carve_at(sw_device *d, sw_ext *f, CUdeviceptr at, size_t size, int kind)
{
    sw_arena *a = &d->arena;
    sw_ext *u = ext_new(d), *t = NULL;
    CUdeviceptr fb = sw_ext_base(f), fe = sw_ext_end(f);
    if (u && at + size < fe && !(t = ext_new(d))) {
        ext_recycle(d, u);
        u = NULL;
    }
    if (!u)
        return NULL;
    bin_remove(a, f);
    set_range(u, at, size);
    atomic_store_explicit(&u->kind, kind, memory_order_relaxed);
    sw_ext *after = next_of(f);
    if (t) {
        set_range(t, at + size, fe - (at + size));
        t->prev = u;
        atomic_store_explicit(&t->next, after, memory_order_relaxed);
        if (after)
            after->prev = t;
        bin_insert(a, t);
    }
    sw_ext *right = t ? t : after;
    atomic_store_explicit(&u->next, right, memory_order_relaxed);
    if (!t && after)
        after->prev = u;
    if (at > fb) { /* f keeps the head */
        set_range(f, fb, at - fb);
        u->prev = f;
        atomic_store_explicit(&f->next, u, memory_order_release);
        bin_insert(a, f);
    } else {       /* f is gone: u takes its place */
        u->prev = f->prev;
        if (f->prev)
            atomic_store_explicit(&f->prev->next, u, memory_order_release);
        ext_recycle(d, f);
    }
    return u;
}

CUresult sw_ext_carve(sw_device *d, size_t size, size_t align, sw_place_mode mode, int kind,
                      sw_ext **out, size_t *nunmapped, sw_oom_reason *why)
{
    place pl;
    if (!find_place(d, size, align, mode, &pl)) {
        if (mode == SW_PLACE_MAPPED)
            return CUDA_ERROR_OUT_OF_MEMORY;
        /* No free extent fits: VA is cheap, reserve more (as much again). */
        size_t total = 0;
        unsigned n = atomic_load_explicit(&d->arena.nsegs, memory_order_relaxed);
        for (unsigned i = 0; i < n; i++)
            total += d->arena.seg[i].size;
        size_t want = size + align > total ? size + align : total;
        if (seg_add(d, want) != CUDA_SUCCESS && seg_add(d, size + align) != CUDA_SUCCESS) {
            if (why)
                *why = SW_OOM_ADDRESS;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (!find_place(d, size, align, mode, &pl)) {
            if (why)
                *why = SW_OOM_ADDRESS;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    sw_ext *u = carve_at(d, pl.e, pl.at, size, kind);
    if (!u) {
        if (why)
            *why = SW_OOM_DRIVER; /* host memory for the records */
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (nunmapped)
        *nunmapped = pl.cost;
    *out = u;
    return CUDA_SUCCESS;
}

/* Merges free extent r into its free left neighbour l (l survives). */
static void merge_into(sw_device *d, sw_ext *l, sw_ext *r)
{
    sw_ext *after = next_of(r);
    atomic_store_explicit(&l->size, sw_ext_end(r) - sw_ext_base(l), memory_order_relaxed);
    atomic_store_explicit(&l->next, after, memory_order_release);
    if (after)
        after->prev = l;
    ext_recycle(d, r);
}

sw_ext *sw_ext_release(sw_device *d, sw_ext *e)
{
    sw_arena *a = &d->arena;
    atomic_store_explicit(&e->kind, SW_EXT_FREE, memory_order_release);
    sw_ext_set_state(e, SW_DEAD);
    atomic_store_explicit(&e->slab, NULL, memory_order_relaxed);
    sw_ext *nx = next_of(e);
    if (nx && !sw_ext_used(nx)) {
        bin_remove(a, nx);
        merge_into(d, e, nx);
    }
    if (e->prev && !sw_ext_used(e->prev)) {
        sw_ext *l = e->prev;
        bin_remove(a, l);
        merge_into(d, l, e);
        e = l;
    }
    bin_insert(a, e);
    return e;
}

/* ---- lookups -------------------------------------------------------------- */

sw_ext *sw_mixed_find(const sw_device *d, const sw_mixed *m, CUdeviceptr va)
{
    CUdeviceptr page = va & ~(CUdeviceptr)(d->page - 1);
    size_t slot = (size_t)(va - page) / d->arena.chunk;
    sw_ext *e = atomic_load_explicit(&m->at[slot < SW_MIXED_SLOTS ? slot : 0], memory_order_acquire);
    /* A chunk holds at most chunk / granule extents; a racing change can
     * only make the walk miss, and the bound keeps it finite. */
    for (size_t k = 0; e && k <= d->arena.chunk / d->arena.granule + 1; k++) {
        CUdeviceptr b = sw_ext_base(e);
        if (va < b)
            return NULL;
        if (va < b + atomic_load_explicit(&e->size, memory_order_relaxed))
            return sw_ext_used(e) ? e : NULL;
        e = next_of(e);
    }
    return NULL;
}

sw_ext *sw_ext_at(sw_device *d, CUdeviceptr va)
{
    sw_pte *pte = sw_pt_get(&d->pol->pt, va);
    uintptr_t o = pte ? atomic_load_explicit(&pte->owner, memory_order_acquire) : 0;
    sw_ext *e = NULL;
    if (SW_OWN_TAG(o) == SW_OWN_EXT)
        e = SW_OWN_PTR(o);
    else if (SW_OWN_TAG(o) == SW_OWN_MIXED)
        e = sw_mixed_find(d, SW_OWN_PTR(o), va);
    if (e && (e->dev != d || va < sw_ext_base(e) || va >= sw_ext_end(e)))
        e = NULL;
    return e;
}
