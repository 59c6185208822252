/* What live data holds of a device's pool: the figure cuMemGetInfo's free
 * is made of (sw_held_bytes, policy.h). The pool, as the driver, holds
 * memory in whole pages, and a page serves a new allocation of any size
 * only when no live data is on it: free is the pages nobody's live data
 * holds, not the limit less the bytes requested (1000 x 100 bytes hold
 * one page, 32 x (1 MiB + 1) on pages of their own hold 32).
 *
 * The pages that back a used extent are counted (sw_dev_counters.backing,
 * kept by pages.c where an extent takes its pages and gives them back, and
 * by vmm.c for program handles: no cost here), and so are the device pages
 * refused driver calls keep out of the pool (sw_page_faulted: lost,
 * stranded, stuck at a scratch slot). A freed block keeps its
 * extent, and so its pages, until its free is released (a sync point or
 * its event); an allocation that needs them syncs and takes them, so they
 * are free for the program at once, as the driver's memory is after
 * cuMemFree (and as cuMemFreeAsync'd memory is once its memory pool
 * trims: spillway's pool, not the memory pool, keeps it). Those pages are
 * found here, on the query's path, not the allocation's: the free queue is
 * walked under the device lock and each pending block's pages that no
 * live extent shares are left out (a snapshot: a block revived or freed
 * meanwhile is seen either way). Slab slots (requests up to a quarter
 * of a chunk) are not told apart: a slab is held while any slot of it is
 * live or pending, until the frees are released, which the query does for
 * those a sync point already covered. The unused part of a held page is
 * not counted free: only an allocation small enough could use it. */
#include "policy/internal.h"

/* Whether page pg (which pending block e overlaps) has no live data and e
 * is the first used extent on it, so that a page that several pending
 * blocks share is counted once. A slab, or a block not pending (live, or
 * being carved), holds the page. Device and shard locks held. */
static bool idle_first(sw_device *d, sw_ext *e, CUdeviceptr pg)
{
    CUdeviceptr end = pg + d->page;
    for (sw_ext *x = e->prev; x && sw_ext_end(x) > pg; x = x->prev)
        if (sw_ext_used(x))
            return false; /* live data, or a pending block that counts it */
    for (sw_ext *x = atomic_load_explicit(&e->next, memory_order_relaxed); x && sw_ext_base(x) < end;
         x = atomic_load_explicit(&x->next, memory_order_relaxed))
        if (sw_ext_used(x) && (atomic_load_explicit(&x->kind, memory_order_relaxed) != SW_EXT_BLOCK ||
                               sw_ext_state(x) != SW_PENDING))
            return false;
    return true;
}

/* The pages of pending block e that only pending blocks hold and that e
 * counts (the pages inside it, and its end pages when idle_first). */
static size_t idle_pages(sw_device *d, sw_ext *e)
{
    if (atomic_load_explicit(&e->kind, memory_order_relaxed) != SW_EXT_BLOCK ||
        sw_ext_state(e) != SW_PENDING)
        return 0;
    CUdeviceptr lo = sw_ext_base(e), hi = sw_ext_end(e), mask = d->page - 1;
    CUdeviceptr in_lo = (lo + mask) & ~mask, in_hi = hi & ~mask;
    size_t n = in_hi > in_lo ? (size_t)((in_hi - in_lo) >> d->shift) : 0;
    /* Its end pages, when they are not wholly inside it (counted above). */
    CUdeviceptr first = lo & ~mask, last = (hi - 1) & ~mask;
    if (first == last)
        return n ? n : (size_t)idle_first(d, e, first);
    if (first != lo && idle_first(d, e, first))
        n++;
    if (last + d->page != hi && idle_first(d, e, last))
        n++;
    return n;
}

static size_t idle_in(sw_device *d, sw_pend_list *l)
{
    size_t n = 0;
    for (sw_pend *p = l->head; p; p = p->next)
        if (p->f.block)
            n += idle_pages(d, p->f.block);
    return n;
}

uint64_t sw_held_bytes(sw_policy *p, int dev)
{
    sw_device *d = sw_dev(p, dev);
    if (!d)
        return 0;
    (void)sw_freeq_collect(d, false);
    size_t idle = 0;
    sw_dev_lock(d);
    uint64_t held = atomic_load_explicit(&d->c.backing, memory_order_relaxed);
    /* Pages refused driver calls keep out of the pool: no allocation can
     * have them, whatever holds their VA now. */
    uint64_t faulted = atomic_load_explicit(&d->c.faulted, memory_order_relaxed);
    for (int i = 0; i < SW_FREEQ_SHARDS; i++) {
        sw_freeq_shard *q = &d->q.shard[i];
        pthread_mutex_lock(&q->lock);
        if (q->count)
            idle += idle_in(d, &q->sync_list) + idle_in(d, &q->async_list);
        pthread_mutex_unlock(&q->lock);
    }
    sw_dev_unlock(d);
    uint64_t idle_bytes = (uint64_t)idle << d->shift;
    held = (held > idle_bytes ? held - idle_bytes : 0) + faulted;
    /* Memory outside the pool takes whole pages of it (sw_pool_cap). */
    uint64_t lent = sw_lent_bytes(p, dev);
    return held + ((lent + d->page - 1) & ~(uint64_t)(d->page - 1));
}
