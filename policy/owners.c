/* Who uses each arena page (policy/internal.h, sw_pte.users and owner):
 * the extents on a page, kept as allocations are carved and freed, so that
 * a move knows whose data a page holds and a lookup finds the allocation
 * at an address without the device lock: a page covered by one used
 * extent points at it; a page shared by several points at a mixed record
 * that indexes them by chunk, so that a lock-free reader finds the one at
 * an address in a few steps. pages.c maps, caches and lets go of the pages
 * themselves. Everything here runs under the device lock. */
#include <stdlib.h>

#include "policy/internal.h"

static sw_mixed *mixed_new(sw_device *d)
{
    sw_mixed *m = d->spare_mixed;
    if (m)
        d->spare_mixed = m->next_free;
    else
        m = calloc(1, sizeof *m);
    return m;
}

/* What the extents overlapping a page make of it. */
typedef struct page_walk {
    sw_ext *slots[SW_MIXED_SLOTS]; /* the extent at the start of each chunk */
    unsigned nslots, used;         /* used: how many of the extents are */
    sw_ext *only;                  /* the last used one */
} page_walk;

/* Walks every extent overlapping the page at `page`; e is an extent at or
 * next to the page (extents tile the segment). */
static page_walk walk(sw_device *d, sw_ext *e, CUdeviceptr page)
{
    page_walk w = {.nslots = 0, .used = 0, .only = NULL};
    while (e && sw_ext_base(e) > page)
        e = e->prev;
    while (e && sw_ext_end(e) <= page)
        e = atomic_load_explicit(&e->next, memory_order_relaxed);
    for (; e && sw_ext_base(e) < page + d->page; e = atomic_load(&e->next)) {
        if (sw_ext_used(e)) {
            w.used++;
            w.only = e;
        }
        while (w.nslots < SW_MIXED_SLOTS && page + w.nslots * d->arena.chunk < sw_ext_end(e))
            w.slots[w.nslots++] = e;
    }
    return w;
}

/* Sets the owner of the page at `page` from the used extents overlapping
 * it, walking them all; e is an extent at or next to the page. */
static void rebuild(sw_device *d, sw_ext *e, CUdeviceptr page)
{
    sw_pte *pte = sw_pte_at(d, page);
    uintptr_t old = atomic_load_explicit(&pte->owner, memory_order_relaxed);
    page_walk w = walk(d, e, page);
    unsigned s = w.nslots, used = w.used;
    sw_ext **slots = w.slots, *only = w.only;
    uintptr_t owner = used == 0 ? 0 : used == 1 ? SW_OWN(only, SW_OWN_EXT) : old;
    if (used > 1) {
        sw_mixed *m = SW_OWN_TAG(old) == SW_OWN_MIXED ? SW_OWN_PTR(old) : mixed_new(d);
        if (m) {
            for (unsigned i = 0; i < s; i++)
                atomic_store_explicit(&m->at[i], slots[i], memory_order_release);
            owner = SW_OWN(m, SW_OWN_MIXED);
        } else {
            owner = SW_OWN(only, SW_OWN_EXT); /* no memory for the index: one of them */
        }
    }
    atomic_store_explicit(&pte->owner, owner, memory_order_release);
    if (SW_OWN_TAG(old) == SW_OWN_MIXED && owner != old) {
        /* Recycled, not freed: a lock-free reader may still walk it. */
        sw_mixed *m = SW_OWN_PTR(old);
        m->next_free = d->spare_mixed;
        d->spare_mixed = m;
    }
}

#ifdef SW_VERIFY_REFRESH
#include <stdio.h>
/* Test builds: the incremental owner must equal what a whole walk gives. */
static void sw_pages_verify(sw_device *d, sw_ext *e, CUdeviceptr page)
{
    sw_pte *pte = sw_pte_at(d, page);
    uintptr_t o = atomic_load(&pte->owner);
    page_walk w = walk(d, e, page);
    unsigned s = w.nslots, used = w.used;
    sw_ext **slots = w.slots, *only = w.only;
    bool ok = used == pte->users;
    if (used == 0)
        ok = ok && o == 0;
    else if (used == 1)
        ok = ok && o == SW_OWN(only, SW_OWN_EXT);
    else if (SW_OWN_TAG(o) == SW_OWN_MIXED)
        for (unsigned i = 0; i < s; i++)
            ok = ok && atomic_load(&((sw_mixed *)SW_OWN_PTR(o))->at[i]) == slots[i];
    else
        ok = false;
    if (!ok) {
        fprintf(stderr, "refresh: page %#llx owner %#lx users %u used %u\n",
                (unsigned long long)page, (unsigned long)o, pte->users, used);
        abort();
    }
}
#endif

/* Points the slots of mixed page `page` whose chunk starts lie in [lo, hi)
 * at the extents there; x is the extent at lo. */
static void slots_update(sw_device *d, sw_mixed *m, CUdeviceptr page, sw_ext *x, CUdeviceptr lo,
                         CUdeviceptr hi)
{
    size_t chunk = d->arena.chunk;
    CUdeviceptr a = lo > page ? lo : page, b = hi < page + d->page ? hi : page + d->page;
    for (size_t s = (size_t)(a - page + chunk - 1) / chunk; s < SW_MIXED_SLOTS && page + s * chunk < b;
         s++) {
        CUdeviceptr c = page + s * chunk;
        while (x && sw_ext_end(x) <= c)
            x = atomic_load_explicit(&x->next, memory_order_relaxed);
        atomic_store_explicit(&m->at[s], x, memory_order_release);
    }
}

/* Brings the owner of `page` up to date after the extents tiling [lo, hi)
 * changed (x is the one at lo) and nothing else on the page did. The page's
 * users count its used extents, so only a page that has just become mixed
 * or stopped being one is walked whole; a page that stays mixed has just
 * the slots of the changed range rewritten, and a page with one user kept
 * that user as its owner when it got it (sw_pages_use). Issue 14 item 6:
 * walking every extent of the page at each end of every allocation and free
 * was half of their instructions, all under the device lock. */
static void refresh(sw_device *d, sw_ext *x, CUdeviceptr page, CUdeviceptr lo, CUdeviceptr hi)
{
    sw_pte *pte = sw_pte_at(d, page);
    uintptr_t old = atomic_load_explicit(&pte->owner, memory_order_relaxed);
    if (pte->users > 1 && SW_OWN_TAG(old) == SW_OWN_MIXED) {
        slots_update(d, SW_OWN_PTR(old), page, x, lo, hi);
    } else if (pte->users == 1 && SW_OWN_TAG(old) == SW_OWN_EXT) {
        sw_ext *only = SW_OWN_PTR(old);
        if (!sw_ext_used(only) || sw_ext_end(only) <= page || sw_ext_base(only) >= page + d->page)
            rebuild(d, x, page);
    } else if (pte->users || old) {
        rebuild(d, x, page);
    }
#ifdef SW_VERIFY_REFRESH
    sw_pages_verify(d, x, page);
#endif
}

/* Refreshes the end pages of two ranges, each page once, after the extents
 * tiling [lo, hi) changed (x the one at lo): the four ends are mostly one
 * page (a small block between its neighbours). */
static void refresh_ends2(sw_device *d, sw_ext *x, CUdeviceptr lo, CUdeviceptr hi,
                          CUdeviceptr lo2, CUdeviceptr hi2)
{
    CUdeviceptr pg[4] = {sw_page_base(d, lo), sw_page_base(d, hi - 1), sw_page_base(d, lo2), sw_page_base(d, hi2 - 1)};
    for (int i = 0; i < 4; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = pg[j] == pg[i];
        if (!seen)
            refresh(d, x, pg[i], lo, hi);
    }
}

void sw_pages_use(sw_device *d, sw_ext *e)
{
    CUdeviceptr lo = sw_ext_base(e), hi = sw_ext_end(e);
    for (CUdeviceptr pg = sw_page_base(d, lo); pg < hi; pg += d->page) {
        sw_pte *pte = sw_pte_at(d, pg);
        if (pte->users++ == 0) {
            sw_count_add(&d->c.backing, d->page, &d->c.peak_backing);
            atomic_store_explicit(&pte->owner, SW_OWN(e, SW_OWN_EXT), memory_order_release);
            sw_page *p = atomic_load_explicit(&pte->page, memory_order_relaxed);
            if (p && p->loc == SW_LOC_DEVICE) {
                sw_ring_insert(d, p, atomic_load(&e->heat.touched));
            } else if (p) {
                /* A host page a refused unmap left cached: data again. */
                sw_list_remove(d, p);
                sw_figure_add(&d->c, &d->c.host_in_use, d->page);
            }
        }
    }
    /* The carve changed the extents from the left neighbour to the right
     * one (the free extent it split, or more): their end pages too. */
    sw_ext *l = e->prev, *r = atomic_load_explicit(&e->next, memory_order_relaxed);
    refresh_ends2(d, l ? l : e, l ? sw_ext_base(l) : lo, r ? sw_ext_end(r) : hi, lo, hi);
}


void sw_pages_settle(sw_device *d, sw_ext *merged, CUdeviceptr lo, CUdeviceptr hi)
{
    /* Pages strictly inside the merged free extent have no user left; its
     * end pages, and those of the range freed, may be shared still. The
     * merged extent is the only one that changed. */
    refresh_ends2(d, merged, sw_ext_base(merged), sw_ext_end(merged), lo, hi);
}
