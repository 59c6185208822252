/* Pages of the arena: which used extents overlap each VA page (users, the
 * owner the lock-free readers follow), which physical page backs it, and
 * the two lists spill and reclaim work from.
 *
 * A page is backed while any used extent overlaps it. When its last user
 * goes, a device page stays mapped (cached: the next allocation there costs
 * no map or access grant, 35-40 us per page on the driver) and joins the
 * cached list, from which reclaim takes pages back into the pool in O(1)
 * each; a host page goes back to the pool at once (the next
 * owner should get device memory). A device page backing live data is on
 * the device's ring, spill's clock (spill.c).
 *
 * Who uses each page, and the owner readers follow, is kept in owners.c.
 * Everything here runs under the device lock. */
#include <stdlib.h>

#include "policy/internal.h"

/* ---- lists ---------------------------------------------------------------- */

/* Circular lists; *head is the ring's hand or the cached list's oldest. */
static void list_push_back(sw_page **head, sw_page *pg)
{
    if (!*head) {
        pg->next = pg->prev = pg;
        *head = pg;
        return;
    }
    pg->next = *head;
    pg->prev = (*head)->prev;
    (*head)->prev->next = pg;
    (*head)->prev = pg;
}

static void list_unlink(sw_page **head, sw_page *pg)
{
    if (pg->next == pg) {
        *head = NULL;
    } else {
        pg->prev->next = pg->next;
        pg->next->prev = pg->prev;
        if (*head == pg)
            *head = pg->next;
    }
    pg->next = pg->prev = NULL;
}

/* New pages go just behind the hand: the last the clock reaches. */
void sw_ring_insert(sw_device *d, sw_page *pg, uint64_t seen)
{
    sw_list_remove(d, pg);
    pg->seen = seen;
    list_push_back(&d->ring, pg);
    pg->list = SW_LIST_RING;
    d->nring++;
}

static void cache_insert(sw_device *d, sw_page *pg)
{
    sw_list_remove(d, pg);
    list_push_back(&d->cached, pg);
    pg->list = SW_LIST_CACHED;
    d->ncached++;
}

void sw_list_remove(sw_device *d, sw_page *pg)
{
    if (pg->list == SW_LIST_RING) {
        list_unlink(&d->ring, pg);
        d->nring--;
    } else if (pg->list == SW_LIST_CACHED) {
        list_unlink(&d->cached, pg);
        d->ncached--;
    }
    pg->list = SW_LIST_NONE;
}

/* ---- mapping ---------------------------------------------------------------- */

CUresult sw_map_page(sw_device *d, CUdeviceptr va, sw_page *pg)
{
    CUresult r = d->pol->be.map(d->pol->be.ctx, va, d->page, pg->handle);
    if (r != CUDA_SUCCESS)
        return r;
    if (pg->nmaps++ == 0)
        pg->va = va;
    atomic_store_explicit(&sw_pte_at(d, va)->page, pg, memory_order_release);
    atomic_fetch_add_explicit(&d->c.maps, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&d->c.mapped, d->page, memory_order_relaxed);
    return CUDA_SUCCESS;
}

static CUresult unstrand(sw_device *d, CUdeviceptr va, bool all);

CUresult sw_unmap_page(sw_device *d, CUdeviceptr va)
{
    sw_pte *e = sw_pte_at(d, va);
    sw_page *pg = atomic_load_explicit(&e->page, memory_order_relaxed);
    if (!pg) /* a VA a failed move lost: at most a page the driver kept there */
        return d->stranded ? unstrand(d, va, false) : CUDA_SUCCESS;
    CUresult r = d->pol->be.unmap(d->pol->be.ctx, va, d->page);
    if (r != CUDA_SUCCESS)
        return r;
    pg->nmaps--;
    pg->noaccess = 0; /* the mapping without access is gone */
    atomic_store_explicit(&e->page, NULL, memory_order_release);
    atomic_fetch_add_explicit(&d->c.unmaps, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&d->c.mapped, d->page, memory_order_relaxed);
    return CUDA_SUCCESS;
}

void sw_page_retire(sw_device *d, sw_page *pg)
{
    if (!pg->kept)
        sw_pool_put(d, (sw_loc)pg->loc, pg->handle);
    if (pg->loc == SW_LOC_HOST && !pg->lost)
        sw_figure_sub(&d->c, &d->c.host_in_use, d->page);
    sw_page_free(d, pg);
}

void sw_page_lose(sw_device *d, CUdeviceptr va, sw_page *pg)
{
    sw_list_remove(d, pg);
    pg->lost = pg->kept = 1;
    sw_page_faulted(d, (sw_loc)pg->loc, true);
    if (pg->loc == SW_LOC_HOST) {
        sw_figure_sub(&d->c, &d->c.host_in_use, d->page);
        sw_heat_host_pages(d->pol, va, -1);
    }
    atomic_fetch_add_explicit(&d->lost, 1, memory_order_relaxed);
}

/* The exported page pg at va, which no allocation uses any more: unmapped
 * and released, never pooled nor cached (another process may still write
 * to it). When the driver refuses the unmap, the page table forgets it and
 * it is stranded without going back to the pool (unstrand unmaps it
 * later; its handle stays the driver's). */
static void release_exported(sw_device *d, CUdeviceptr va, sw_page *pg)
{
    sw_list_remove(d, pg);
    CUresult r = sw_unmap_page(d, va);
    if (r != CUDA_SUCCESS)
        r = sw_unmap_page(d, va);
    if (r != CUDA_SUCCESS) {
        atomic_store_explicit(&sw_pte_at(d, va)->page, NULL, memory_order_release);
        atomic_fetch_sub_explicit(&d->c.mapped, d->page, memory_order_relaxed);
        sw_strand_page(d, va, pg->handle, (sw_loc)pg->loc, SW_STRAND_RELEASE, false);
        sw_page_free(d, pg);
        return;
    }
    sw_pool_forget(d, pg->handle);
    sw_page_free(d, pg);
}

/* Unmaps the arena page at va and gives its physical page to the pool
 * (the caller settles host_in_use). A refused unmap is tried once more;
 * then the page stays where it is, on the cached list, for a later
 * reclaim to try again: a page still mapped must never reach the pool.
 * An exported page is released instead (release_exported). */
static CUresult drop_page(sw_device *d, CUdeviceptr va)
{
    sw_page *pg = atomic_load_explicit(&sw_pte_at(d, va)->page, memory_order_relaxed);
    if (pg && pg->exported) {
        release_exported(d, va, pg);
        return CUDA_SUCCESS;
    }
    CUresult r = sw_unmap_page(d, va);
    if (r != CUDA_SUCCESS)
        r = sw_unmap_page(d, va);
    if (r != CUDA_SUCCESS) {
        if (pg->list != SW_LIST_CACHED && !sw_pte_at(d, va)->users)
            cache_insert(d, pg);
        return r;
    }
    sw_list_remove(d, pg);
    sw_pool_put(d, (sw_loc)pg->loc, pg->handle);
    sw_page_free(d, pg);
    return CUDA_SUCCESS;
}

/* Unmaps the arena page at va, which has no access, into the pool; when
 * the driver refuses, the page table forgets it (a placement over mapped
 * pages would hand it out as it is) and it is stranded, out of the pool,
 * until an unmap of it succeeds (unstrand). */
static void drop_or_strand(sw_device *d, CUdeviceptr va)
{
    sw_page *pg = atomic_load_explicit(&sw_pte_at(d, va)->page, memory_order_relaxed);
    if (drop_page(d, va) == CUDA_SUCCESS)
        return;
    sw_list_remove(d, pg);
    atomic_store_explicit(&sw_pte_at(d, va)->page, NULL, memory_order_release);
    atomic_fetch_sub_explicit(&d->c.mapped, d->page, memory_order_relaxed);
    sw_strand_page(d, va, pg->handle, (sw_loc)pg->loc, SW_STRAND_POOL, false);
    sw_page_free(d, pg);
}

/* Newest first: a freed extent's pages join the list in address order, and
 * placements go to the start of a free extent, so its low pages are the
 * ones worth keeping mapped. */
CUresult sw_pages_reclaim(sw_device *d, size_t want, size_t *got)
{
    *got = 0;
    while (*got < want && d->cached) {
        CUresult r = drop_page(d, d->cached->prev->va);
        if (r != CUDA_SUCCESS)
            return r;
        ++*got;
    }
    if (*got)
        atomic_fetch_add_explicit(&d->c.reclaims, *got, memory_order_relaxed);
    return CUDA_SUCCESS;
}

/* Free cached pages beyond a slack of 1/32 of the pool are better reclaimed
 * than new pages created: the pages held stay close to the pages used
 * (pool efficiency) for an unmap (~15 us) instead of a create (10-40 us). */
static bool cache_in_excess(const sw_device *d)
{
    return d->ncached > d->pool.created / 32;
}

/* A device page for a new mapping: free, else reclaimed when the cache is
 * in excess, else created, else reclaimed (sw_pool_take's answers). */
static CUresult take_device(sw_device *d, CUmemGenericAllocationHandle *h, sw_oom_reason *why)
{
    sw_pool *pl = &d->pool;
    size_t got;
    if (!pl->nfree && d->ncached && (cache_in_excess(d) || pl->created >= sw_pool_cap(d))) {
        CUresult r = sw_pages_reclaim(d, 1, &got);
        if (r != CUDA_SUCCESS)
            return r;
    }
    CUresult r = sw_pool_take(d, SW_LOC_DEVICE, h, why);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && d->ncached) {
        /* The driver itself is out of pages: ours that sit idle will do. */
        if ((r = sw_pages_reclaim(d, 1, &got)) == CUDA_SUCCESS)
            r = sw_pool_take(d, SW_LOC_DEVICE, h, why);
    }
    return r;
}

void sw_page_faulted(sw_device *d, sw_loc loc, bool out)
{
    if (loc != SW_LOC_DEVICE)
        return; /* a host page takes nothing of the device's */
    if (out)
        sw_figure_add(&d->c, &d->c.faulted, d->page);
    else
        sw_figure_sub(&d->c, &d->c.faulted, d->page);
}

void sw_strand_page(sw_device *d, CUdeviceptr va, CUmemGenericAllocationHandle h, sw_loc loc,
                    sw_strand_then then, bool lost)
{
    if (then == SW_STRAND_POOL && !lost)
        sw_page_faulted(d, loc, true);
    sw_strand *st = malloc(sizeof *st);
    if (!st)
        return; /* unrecorded: h stays out of the pool, as the caller left it */
    *st = (sw_strand){va, h, (uint8_t)loc, (uint8_t)then, d->stranded};
    d->stranded = st;
}

/* Unmaps the stranded page at va (every one when all), giving its physical
 * page back to the pool when it may; the driver's refusal when it still
 * will not. */
static CUresult unstrand(sw_device *d, CUdeviceptr va, bool all)
{
    CUresult first = CUDA_SUCCESS;
    for (sw_strand **at = &d->stranded; *at;) {
        sw_strand *st = *at;
        if (!all && st->va != va) {
            at = &st->next;
            continue;
        }
        CUresult r = d->pol->be.unmap(d->pol->be.ctx, st->va, d->page);
        if (r != CUDA_SUCCESS) {
            if (first == CUDA_SUCCESS)
                first = r;
            at = &st->next;
            continue;
        }
        *at = st->next;
        atomic_fetch_add_explicit(&d->c.unmaps, 1, memory_order_relaxed);
        if (st->then == SW_STRAND_POOL) {
            sw_pool_put(d, (sw_loc)st->loc, st->h);
            sw_page_faulted(d, (sw_loc)st->loc, false);
        } else if (st->then == SW_STRAND_RELEASE) {
            sw_pool_forget(d, st->h); /* exported: never back in the pool */
        }
        free(st);
    }
    return first;
}

/* Maps one fresh page at va: device first, host when allowed and no device
 * page is left. OUT_OF_MEMORY (with *why) when none can be had. */
static CUresult map_fresh(sw_device *d, CUdeviceptr va, bool host_ok, sw_oom_reason *why)
{
    CUmemGenericAllocationHandle h;
    sw_loc loc = SW_LOC_DEVICE;
    CUresult r = d->stranded ? unstrand(d, va, false) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS)
        return r;
    r = take_device(d, &h, why);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && host_ok) {
        loc = SW_LOC_HOST;
        r = sw_pool_take(d, loc, &h, why);
    }
    if (r != CUDA_SUCCESS)
        return r;
    sw_page *pg = sw_page_new(d, h, loc);
    if (!pg) {
        sw_pool_put(d, loc, h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if ((r = sw_map_page(d, va, pg)) != CUDA_SUCCESS) {
        sw_pool_put(d, loc, h);
        sw_page_free(d, pg);
        return r;
    }
    if (loc == SW_LOC_HOST) {
        sw_figure_add(&d->c, &d->c.host_in_use, d->page);
        sw_heat_host_pages(d->pol, va, +1);
    } else {
        sw_ring_insert(d, pg, sw_page_stamp(d->pol, va));
    }
    return CUDA_SUCCESS;
}

/* Grants access to the n pages mapped from va, trying a refused grant once
 * more page by page; pages that still get none are dropped again (nothing
 * ran on them: unmapping is safe), or, when even that is refused, forgotten
 * by the page table (their VA then answers the driver's error, never a
 * page nobody can reach: a placement over mapped pages would hand it out
 * without access) and stranded, out of the pool, until an unmap of them
 * succeeds (unstrand). */
static CUresult grant_run(sw_device *d, CUdeviceptr va, size_t n)
{
    const sw_backend *be = &d->pol->be;
    CUresult r = be->set_access(be->ctx, va, n << d->shift, d->access_mask);
    if (r == CUDA_SUCCESS)
        return r;
    CUresult first = CUDA_SUCCESS;
    for (size_t i = 0; i < n; i++) {
        CUdeviceptr at = va + ((CUdeviceptr)i << d->shift);
        if (be->set_access(be->ctx, at, d->page, d->access_mask) == CUDA_SUCCESS)
            continue;
        first = r;
        sw_page *pg = atomic_load_explicit(&sw_pte_at(d, at)->page, memory_order_relaxed);
        bool host = pg->loc == SW_LOC_HOST;
        if (host)
            sw_heat_host_pages(d->pol, at, -1);
        drop_or_strand(d, at);
        if (host)
            sw_figure_sub(&d->c, &d->c.host_in_use, d->page);
    }
    return first;
}

CUresult sw_pages_regrant(sw_device *d, CUdeviceptr va, size_t n, sw_oom_reason *why)
{
    const sw_backend *be = &d->pol->be;
    CUresult first = CUDA_SUCCESS;
    for (size_t i = 0; i < n; i++) {
        CUdeviceptr at = va + ((CUdeviceptr)i << d->shift);
        sw_page *pg = atomic_load_explicit(&sw_pte_at(d, at)->page, memory_order_relaxed);
        if (!pg || !pg->noaccess)
            continue;
        CUresult r = be->set_access(be->ctx, at, d->page, d->access_mask);
        if (r == CUDA_SUCCESS) {
            pg->noaccess = 0; /* its record goes at the prune after this (alloc.c) */
            continue;
        }
        if (sw_pte_at(d, at)->users > 1) { /* live data of another owner on it: kept */
            if (first == CUDA_SUCCESS)
                first = r;
            continue;
        }
        /* The bytes on it were freed: a fresh page serves as well. */
        if (pg->loc == SW_LOC_HOST) {
            sw_heat_host_pages(d->pol, at, -1);
            sw_figure_sub(&d->c, &d->c.host_in_use, d->page);
        }
        drop_or_strand(d, at);
    }
    if (first != CUDA_SUCCESS)
        return first;
    size_t missing;
    CUresult r = sw_pages_map(d, va, n, d->cfg.spill, &missing, why);
    return r == CUDA_SUCCESS && missing ? CUDA_ERROR_OUT_OF_MEMORY : r;
}

CUresult sw_pages_map(sw_device *d, CUdeviceptr va, size_t n, bool host_ok, size_t *missing,
                      sw_oom_reason *why)
{
    *missing = 0;
    size_t i = 0;
    while (i < n) {
        CUdeviceptr at = va + ((CUdeviceptr)i << d->shift);
        if (atomic_load_explicit(&sw_pte_at(d, at)->page, memory_order_relaxed)) {
            i++;
            continue;
        }
        size_t run = 0;
        CUresult r = CUDA_SUCCESS;
        while (i + run < n &&
               !atomic_load_explicit(&sw_pte_at(d, at + ((CUdeviceptr)run << d->shift))->page,
                                     memory_order_relaxed) &&
               (r = map_fresh(d, at + ((CUdeviceptr)run << d->shift), host_ok, why)) ==
                   CUDA_SUCCESS)
            run++;
        if (run) {
            CUresult g = grant_run(d, at, run);
            if (g != CUDA_SUCCESS)
                return g;
        }
        if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            /* The pool ran dry: count what stays unmapped. */
            for (i += run; i < n; i++)
                *missing += !atomic_load_explicit(&sw_pte_at(d, va + ((CUdeviceptr)i << d->shift))->page,
                                                  memory_order_relaxed);
            return CUDA_SUCCESS;
        }
        if (r != CUDA_SUCCESS)
            return r;
        i += run;
    }
    return CUDA_SUCCESS;
}

void sw_pages_unuse(sw_device *d, sw_ext *e)
{
    CUdeviceptr lo = sw_ext_base(e), hi = sw_ext_end(e);
    for (CUdeviceptr pg = sw_page_base(d, lo); pg < hi; pg += d->page) {
        sw_pte *pte = sw_pte_at(d, pg);
        if (--pte->users)
            continue;
        sw_count_sub(&d->c.backing, d->page);
        atomic_store_explicit(&pte->owner, 0, memory_order_release);
        sw_page *p = atomic_load_explicit(&pte->page, memory_order_relaxed);
        if (!p)
            continue;
        if (p->noaccess) {
            /* Never cached as it is: the next allocation there would get
             * it without access. Granted now, or let go. */
            const sw_backend *be = &d->pol->be;
            if (be->set_access(be->ctx, pg, d->page, d->access_mask) == CUDA_SUCCESS) {
                p->noaccess = 0;
            } else {
                if (p->loc == SW_LOC_HOST)
                    sw_figure_sub(&d->c, &d->c.host_in_use, d->page);
                drop_or_strand(d, pg);
                continue;
            }
        }
        if (p->loc == SW_LOC_HOST) {
            /* It holds no program data any more, whether or not the driver
             * lets it go now (drop_page keeps it cached for later). */
            sw_figure_sub(&d->c, &d->c.host_in_use, d->page);
            (void)drop_page(d, pg);
        } else if (p->exported) {
            release_exported(d, pg, p);
        } else {
            cache_insert(d, p);
        }
    }
}

CUresult sw_pages_unmap_all(sw_device *d)
{
    CUresult first = unstrand(d, 0, true);
    while (d->stranded) { /* refused still: their pages stay the driver's */
        sw_strand *st = d->stranded;
        d->stranded = st->next;
        free(st);
    }
    while (d->noacc) { /* unmapped below, with access or not */
        sw_noacc *n = d->noacc;
        d->noacc = n->next;
        free(n);
    }
    atomic_store_explicit(&d->nnoacc, 0, memory_order_relaxed);
    unsigned n = atomic_load(&d->arena.nsegs);
    for (unsigned s = 0; s < n; s++) {
        const sw_seg *g = &d->arena.seg[s];
        for (CUdeviceptr va = g->base; va < g->base + g->size; va += d->page) {
            if (!atomic_load_explicit(&sw_pte_at(d, va)->page, memory_order_relaxed))
                continue;
            CUresult r = drop_page(d, va);
            if (first == CUDA_SUCCESS)
                first = r;
        }
    }
    return first;
}
