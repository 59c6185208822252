/* Residency: moving pages' bytes between device and pinned host memory
 * while their VAs stay where they are (docs/design.md, "Spill").
 *
 * Each new physical page is first mapped at one of the device's scratch
 * VAs and the bytes copied VA to VA by the copy engine, on the device's own
 * non-blocking streams (never the legacy stream: work there during a
 * capture breaks it); only after those copies completed is the old page
 * unmapped and the new one mapped at the program's VA, with access granted
 * again. Remapping is not stream ordered, so the caller quiesced the
 * devices that can reach the pages first: an unmap racing in-flight work
 * kills the context (measured).
 *
 * Moves are pipelined in windows on two streams: while window k's copies
 * run, window k-1 is remapped, so the copy engine's time (the physical
 * limit, ~55 GB/s) and the driver's remap time (~35 us of set-access per
 * page) overlap instead of adding up (issue 14). */
#include <stdlib.h>

#include "policy/internal.h"

#define WINDOW (SW_SCRATCH_PAGES / 2)

/* Devices that must see va after a remap; handle lock held. */
static uint64_t access_of(sw_policy *p, sw_device *d, CUdeviceptr va)
{
    uintptr_t o = atomic_load(&sw_pt_get(&p->pt, va)->owner);
    if (SW_OWN_TAG(o) == SW_OWN_VMM)
        return ((sw_vmap *)SW_OWN_PTR(o))->access;
    return d->access_mask;
}

/* A free physical page at loc; a device page may come from the cached
 * list. Device lock held. */
static CUresult take_for(sw_device *d, sw_loc loc, CUmemGenericAllocationHandle *h)
{
    CUresult r = sw_pool_take(d, loc, h, NULL);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && loc == SW_LOC_DEVICE && d->ncached) {
        size_t got;
        if ((r = sw_pages_reclaim(d, 1, &got)) == CUDA_SUCCESS)
            r = got ? sw_pool_take(d, loc, h, NULL) : CUDA_ERROR_OUT_OF_MEMORY;
    }
    return r;
}

CUresult sw_movers(sw_device *d)
{
    const sw_backend *be = &d->pol->be;
    for (int i = 0; i < 2; i++)
        if (!d->mover[i]) {
            CUresult r = be->stream_create(be->ctx, d->id, &d->mover[i]);
            if (r != CUDA_SUCCESS)
                return r;
            atomic_fetch_add_explicit(&d->c.streams, 1, memory_order_relaxed);
        }
    return CUDA_SUCCESS;
}

/* One page on its way: where it is going and through which scratch page. */
typedef struct move {
    CUdeviceptr va, scratch;
    sw_page *pg;
    CUmemGenericAllocationHandle h;
    uint64_t access;
    bool staged; /* new page mapped at scratch and its copy queued */
    bool lost;   /* the driver refused every way to back the VA again */
    /* Lost with a page still mapped at the VA, without access (its grant
     * and the unmap undoing it refused): that page's handle. */
    CUmemGenericAllocationHandle left;
    bool noaccess; /* moved, but the new page got no access at the VA */
} move;

/* Unmaps the scratch page at slot and gives its page to the pool; when the
 * driver refuses the unmap, the page stays there (it is still mapped: the
 * pool must not hand it out) until a later use of the slot retries. */
static void release_scratch(sw_policy *p, sw_device *d, unsigned slot,
                            CUmemGenericAllocationHandle h, sw_loc loc, bool give_back)
{
    CUdeviceptr va = d->scratch + ((CUdeviceptr)slot << d->shift);
    if (p->be.unmap(p->be.ctx, va, d->page) != CUDA_SUCCESS) {
        d->stuck[slot] = (sw_stuck){h, (uint8_t)loc, give_back};
        if (give_back)
            sw_page_faulted(d, loc, true);
        return;
    }
    if (give_back)
        sw_pool_put(d, loc, h);
}

/* A slot left mapped by a refused unmap: unmapped now, or unusable. */
static CUresult unstick(sw_policy *p, sw_device *d, unsigned slot)
{
    sw_stuck st = d->stuck[slot];
    if (!st.h)
        return CUDA_SUCCESS;
    CUdeviceptr va = d->scratch + ((CUdeviceptr)slot << d->shift);
    CUresult r = p->be.unmap(p->be.ctx, va, d->page);
    if (r != CUDA_SUCCESS)
        return r;
    if (st.give_back) {
        sw_pool_put(d, (sw_loc)st.loc, st.h);
        sw_page_faulted(d, (sw_loc)st.loc, false);
    }
    d->stuck[slot] = (sw_stuck){0};
    return CUDA_SUCCESS;
}

static unsigned slot_of(const sw_device *d, CUdeviceptr scratch)
{
    return (unsigned)((scratch - d->scratch) >> d->shift);
}

/* Takes the new page, maps it at the scratch VA and queues the copy. */
static CUresult stage(sw_policy *p, sw_device *d, move *m, sw_loc where, CUstream s)
{
    const sw_backend *be = &p->be;
    CUresult r = unstick(p, d, slot_of(d, m->scratch));
    if (r != CUDA_SUCCESS)
        return r;
    r = take_for(d, where, &m->h);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = be->map(be->ctx, m->scratch, d->page, m->h)) != CUDA_SUCCESS) {
        sw_pool_put(d, where, m->h);
        return r;
    }
    if ((r = be->set_access(be->ctx, m->scratch, d->page, 1ull << d->id)) == CUDA_SUCCESS)
        r = be->copy(be->ctx, d->id, m->scratch, m->va, d->page, s);
    if (r != CUDA_SUCCESS) { /* nothing was queued: the scratch page is idle */
        release_scratch(p, d, slot_of(d, m->scratch), m->h, where, true);
        return r;
    }
    m->staged = true;
    return CUDA_SUCCESS;
}

/* Undoes a staged move that will not happen (its copy is done). */
static void unstage(sw_policy *p, sw_device *d, move *m, sw_loc where)
{
    release_scratch(p, d, slot_of(d, m->scratch), m->h, where, true);
    m->staged = false;
}

/* The bookkeeping of a page that now lives at `where`. */
static void moved(sw_policy *p, sw_device *d, move *m, sw_loc where)
{
    sw_page *pg = m->pg;
    sw_pool_put(d, (sw_loc)pg->loc, pg->handle);
    pg->handle = m->h;
    pg->loc = (uint8_t)where;
    if (where == SW_LOC_HOST) {
        sw_list_remove(d, pg);
        sw_figure_add(&d->c, &d->c.host_in_use, d->page);
        sw_figure_add(&d->c, &d->c.spill_bytes, d->page);
        sw_heat_host_pages(p, m->va, +1);
    } else {
        /* Behind the hand, not yet referenced: the newest on the device. */
        sw_ring_insert(d, pg, sw_page_stamp(p, m->va));
        sw_figure_sub(&d->c, &d->c.host_in_use, d->page);
        sw_figure_add(&d->c, &d->c.fill_bytes, d->page);
        sw_heat_host_pages(p, m->va, -1);
    }
}

/* Driver calls tried once more when refused: a refused remap leaves an
 * address without a page or a page without access, so every step that can
 * is retried before it is given up. */
static CUresult map2(const sw_backend *be, CUdeviceptr va, size_t size,
                     CUmemGenericAllocationHandle h)
{
    CUresult r = be->map(be->ctx, va, size, h);
    return r == CUDA_SUCCESS ? r : be->map(be->ctx, va, size, h);
}

static CUresult unmap2(const sw_backend *be, CUdeviceptr va, size_t size)
{
    CUresult r = be->unmap(be->ctx, va, size);
    return r == CUDA_SUCCESS ? r : be->unmap(be->ctx, va, size);
}

static CUresult access2(const sw_backend *be, CUdeviceptr va, size_t size, uint64_t mask)
{
    CUresult r = be->set_access(be->ctx, va, size, mask);
    return r == CUDA_SUCCESS ? r : be->set_access(be->ctx, va, size, mask);
}

/* Maps handle h at va and grants access, each step tried twice; a map
 * that gets no access is undone (a page nobody can reach backs nothing).
 * *stays: the undo was refused too, so h is still mapped at va. */
static CUresult map_with_access(const sw_backend *be, sw_device *d, CUdeviceptr va,
                                CUmemGenericAllocationHandle h, uint64_t access, bool *stays)
{
    *stays = false;
    CUresult r = map2(be, va, d->page, h);
    if (r == CUDA_SUCCESS && access && (r = access2(be, va, d->page, access)) != CUDA_SUCCESS)
        *stays = unmap2(be, va, d->page) != CUDA_SUCCESS;
    return r;
}

/* va lost its mapping: back with the old page (its bytes are the same as
 * the new one's), else with the new one. *now_new: the new page backs it.
 * A VA left with neither is m->lost (a flag, not an error code: the driver
 * answers CUDA_ERROR_UNKNOWN too) and reported as CUDA_ERROR_UNKNOWN (the
 * context is likely lost); so is one where a page stays mapped without
 * access (m->left), after which nothing else can be mapped there (the
 * driver refuses a map over a mapping). */
static CUresult restore(sw_policy *p, sw_device *d, move *m, bool *now_new)
{
    const sw_backend *be = &p->be;
    bool stays = false;
    for (int attempt = 0; attempt < 2 && !stays; attempt++) {
        if (map_with_access(be, d, m->va, m->pg->handle, m->access, &stays) == CUDA_SUCCESS)
            return CUDA_SUCCESS;
        if (stays) {
            m->left = m->pg->handle;
            break;
        }
        if (map_with_access(be, d, m->va, m->h, m->access, &stays) == CUDA_SUCCESS) {
            *now_new = true;
            return CUDA_SUCCESS;
        }
        if (stays)
            m->left = m->h;
    }
    m->lost = true;
    return CUDA_ERROR_UNKNOWN;
}

/* Swaps the program's VA over to the staged page (access comes after, in
 * grant). *now_new: the VA is backed by the new page. */
static CUresult remap(sw_policy *p, sw_device *d, move *m, bool *now_new)
{
    const sw_backend *be = &p->be;
    *now_new = false;
    CUresult r = unmap2(be, m->va, d->page);
    if (r != CUDA_SUCCESS)
        return r; /* the old page is still there */
    if ((r = map2(be, m->va, d->page, m->h)) == CUDA_SUCCESS) {
        *now_new = true;
        return CUDA_SUCCESS;
    }
    CUresult back = restore(p, d, m, now_new);
    return back == CUDA_SUCCESS ? r : back;
}

/* Access for the remapped pages of w, a run of equal masks at a time, then
 * page by page for a refused run; a page that gets none goes back to its
 * old page. ok[i]: the new page backs w[i] (with access). */
static CUresult grant(sw_policy *p, sw_device *d, move *w, size_t n, bool *ok)
{
    const sw_backend *be = &p->be;
    CUresult first = CUDA_SUCCESS;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && ok[j] == ok[i] && w[j].access == w[i].access &&
               w[j].va == w[j - 1].va + d->page)
            j++;
        if (ok[i] && w[i].access &&
            be->set_access(be->ctx, w[i].va, (j - i) << d->shift, w[i].access) != CUDA_SUCCESS) {
            for (size_t k = i; k < j; k++) {
                CUresult r = access2(be, w[k].va, d->page, w[k].access);
                if (r == CUDA_SUCCESS)
                    continue;
                if (first == CUDA_SUCCESS)
                    first = r;
                bool now_new = true;
                if (unmap2(be, w[k].va, d->page) == CUDA_SUCCESS) {
                    now_new = false;
                    (void)restore(p, d, &w[k], &now_new); /* else lost, reported above */
                } else {
                    /* Still the new page, with the bytes (the copy is
                     * done), but no access: moved (finish), and kept from
                     * every copy and allocation until a grant succeeds. */
                    w[k].noaccess = true;
                }
                ok[k] = now_new;
            }
        }
        i = j;
    }
    return first;
}

/* pg, now at va, got no access there: its bytes stay on it, kept from
 * copies (sw_page_movable) and allocations (pages.c, sw_pages_unuse) until
 * sw_noaccess_retry grants it. */
static void no_access(sw_device *d, CUdeviceptr va, sw_page *pg)
{
    sw_noacc *n = malloc(sizeof *n);
    pg->noaccess = 1; /* unrecorded without memory: retried when freed */
    if (n) {
        *n = (sw_noacc){va, d->noacc};
        d->noacc = n;
        atomic_fetch_add_explicit(&d->nnoacc, 1, memory_order_relaxed);
    }
}

/* Walks the records of pages left without access: with grant, asks the
 * driver again for those still without it; either way drops the records
 * of pages granted or gone (unmapped, freed, stranded), which regrant,
 * sw_pages_unuse and sw_unmap_page leave behind. */
static CUresult noaccess_walk(sw_policy *p, sw_device *d, bool grant)
{
    CUresult first = CUDA_SUCCESS;
    for (sw_noacc **at = &d->noacc; *at;) {
        sw_noacc *n = *at;
        sw_page *pg = atomic_load(&sw_pt_get(&p->pt, n->va)->page);
        if (pg && pg->noaccess) {
            CUresult r = grant ? access2(&p->be, n->va, d->page, access_of(p, d, n->va))
                               : CUDA_ERROR_NOT_READY;
            if (r != CUDA_SUCCESS) {
                if (grant && first == CUDA_SUCCESS)
                    first = r;
                at = &n->next;
                continue;
            }
            pg->noaccess = 0;
        }
        *at = n->next; /* granted, or no longer there (unmapped, freed) */
        free(n);
        atomic_fetch_sub_explicit(&d->nnoacc, 1, memory_order_relaxed);
    }
    return first;
}

CUresult sw_noaccess_retry(sw_policy *p, sw_device *d)
{
    return noaccess_walk(p, d, true);
}

void sw_noaccess_prune(sw_policy *p, sw_device *d)
{
    (void)noaccess_walk(p, d, false);
}

/* The page table lets go of a lost VA, as grant_run does: no move copies
 * from it again (on a GPU, a copy from an unmapped VA is an illegal address
 * that ends the context), a free or a program unmap finds nothing mapped
 * there, and the next owner of the VA gets a fresh page. The old page stays
 * out of the pool (it may still be mapped). */
static void forget(sw_policy *p, sw_device *d, move *m)
{
    sw_page *pg = m->pg;
    if (pg->nmaps)
        pg->nmaps--;
    atomic_store_explicit(&sw_pt_get(&p->pt, m->va)->page, NULL, memory_order_release);
    atomic_fetch_sub_explicit(&d->c.mapped, d->page, memory_order_relaxed);
    sw_page_lose(d, m->va, pg);
}

/* Remaps the staged pages of one window once its stream is done. */
static size_t finish(sw_policy *p, sw_device *d, move *w, size_t n, sw_loc where, CUstream s,
                     CUresult *err)
{
    const sw_backend *be = &p->be;
    bool ok[WINDOW] = {0};
    CUresult r = be->stream_sync(be->ctx, d->id, s);
    if (r != CUDA_SUCCESS && be->synchronize(be->ctx, d->id) == CUDA_SUCCESS)
        r = CUDA_SUCCESS; /* the device sync covers the copies: they are done */
    if (r != CUDA_SUCCESS) {
        /* The copies may still be writing the scratch pages: unmapping them
         * now would fault the context (the remap hazard). They stay mapped
         * (the program's VAs keep their old pages) until the slot's next
         * use, which comes after a quiesce whose sync covers them. */
        for (size_t i = 0; i < n; i++) {
            if (w[i].staged) {
                d->stuck[slot_of(d, w[i].scratch)] = (sw_stuck){w[i].h, (uint8_t)where, true};
                sw_page_faulted(d, where, true);
            }
            w[i].staged = false;
        }
        if (*err == CUDA_SUCCESS)
            *err = r;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (!w[i].staged)
            continue;
        bool now_new;
        CUresult m = remap(p, d, &w[i], &now_new);
        ok[i] = now_new;
        if (m != CUDA_SUCCESS && *err == CUDA_SUCCESS)
            *err = m;
    }
    CUresult g = grant(p, d, w, n, ok);
    if (g != CUDA_SUCCESS && *err == CUDA_SUCCESS)
        *err = g;
    size_t done = 0;
    for (size_t i = 0; i < n; i++) {
        if (!w[i].staged)
            continue;
        if (ok[i]) {
            /* The page now backs the program's VA: never the pool's. */
            release_scratch(p, d, slot_of(d, w[i].scratch), w[i].h, where, false);
            moved(p, d, &w[i], where);
            if (w[i].noaccess)
                no_access(d, w[i].va, w[i].pg);
            w[i].staged = false;
            done++;
        } else if (w[i].lost) {
            /* The VA is lost and answers the driver's error. The old page
             * keeps its bytes, out of the pool (a handle's page is still
             * the handle's: an export copies from it); the new one, a copy
             * nobody can reach, goes back once its scratch slot lets it
             * go, unless it is the page left at the VA. */
            unsigned slot = slot_of(d, w[i].scratch);
            release_scratch(p, d, slot, w[i].h, where, w[i].left != w[i].h);
            bool vmm = SW_OWN_TAG(atomic_load(&sw_pt_get(&p->pt, w[i].va)->owner)) == SW_OWN_VMM;
            forget(p, d, &w[i]);
            if (w[i].left) {
                /* Once unmapped there, a page nothing else holds goes to
                 * the pool: the old page of an arena VA (a handle's stays
                 * the handle's), the new one unless its slot kept it. */
                bool old = w[i].left == w[i].pg->handle;
                bool give_back = old ? !vmm : d->stuck[slot].h != w[i].h;
                sw_strand_page(d, w[i].va, w[i].left, old ? (sw_loc)w[i].pg->loc : where,
                               give_back ? SW_STRAND_POOL : SW_STRAND_KEEP, old);
            }
            w[i].staged = false;
        } else {
            unstage(p, d, &w[i], where);
        }
    }
    return done;
}

static size_t move_pages(sw_policy *p, sw_device *d, const CUdeviceptr *vas, size_t n, sw_loc where,
                         CUresult *err)
{
    move win[2][WINDOW];
    size_t fill[2] = {0, 0}, done = 0, next = 0;
    /* A page still without access is skipped (sw_page_movable); when it is
     * one asked for, the driver's refusal is this move's answer. */
    CUresult na = d->noacc ? sw_noaccess_retry(p, d) : CUDA_SUCCESS;
    bool na_hit = false;
    *err = sw_movers(d);
    int cur = 0;
    while (*err == CUDA_SUCCESS && (next < n || fill[0] || fill[1])) {
        /* Stage the next window on this stream while the other one copies. */
        while (*err == CUDA_SUCCESS && next < n && fill[cur] < WINDOW) {
            sw_page *pg = atomic_load(&sw_pt_get(&p->pt, vas[next])->page);
            CUdeviceptr va = vas[next++];
            if (!pg || pg->loc == where || !sw_page_movable(p, d, pg)) {
                na_hit |= pg && pg->loc != where && pg->noaccess;
                continue; /* already there, gone, aliased, or unreachable */
            }
            move *m = &win[cur][fill[cur]];
            *m = (move){va, d->scratch + ((CUdeviceptr)(cur * WINDOW + fill[cur]) << d->shift), pg,
                        0, access_of(p, d, va), false, false, 0, false};
            CUresult r = stage(p, d, m, where, d->mover[cur]);
            if (r != CUDA_SUCCESS) {
                *err = r; /* no page left at `where`, or the driver refused */
                break;
            }
            fill[cur]++;
        }
        cur ^= 1;
        if (fill[cur]) { /* the older window: remap it */
            done += finish(p, d, win[cur], fill[cur], where, d->mover[cur], err);
            fill[cur] = 0;
        }
    }
    for (int k = 0; k < 2; k++)
        if (fill[k])
            done += finish(p, d, win[k], fill[k], where, d->mover[k], err);
    if (*err == CUDA_SUCCESS && na_hit)
        *err = na;
    return done;
}

/* Timed by direction: the time spent moving (copies, remaps, grants),
 * against which the bytes moved give the effective bandwidth each way
 * (spill_ns, fill_ns), apart from the wait for the gates (stall_ns). */
size_t sw_move_pages(sw_policy *p, sw_device *d, const CUdeviceptr *vas, size_t n, sw_loc where,
                     CUresult *err)
{
    uint64_t t0 = sw_now_ns();
    size_t done = move_pages(p, d, vas, n, where, err);
    sw_figure_add(&d->c, where == SW_LOC_HOST ? &d->c.spill_ns : &d->c.fill_ns, sw_now_ns() - t0);
    return done;
}

bool sw_page_movable(sw_policy *p, sw_device *d, const sw_page *pg)
{
    /* An alias would have to move too; a page no device was given access
     * to (a program mapping before its cuMemSetAccess) cannot be copied:
     * on a GPU the copy would fault. An exported page is mapped in another
     * process too: it stays where it is. */
    return pg->nmaps == 1 && !pg->kept && !pg->noaccess && !pg->exported && (access_of(p, d, pg->va) >> d->id & 1);
}

CUresult sw_move_page(sw_policy *p, sw_device *d, CUdeviceptr va, sw_loc where)
{
    CUresult r;
    sw_page *pg = atomic_load(&sw_pt_get(&p->pt, va)->page);
    if (pg && pg->loc != where && pg->nmaps != 1)
        return CUDA_ERROR_NOT_SUPPORTED;
    sw_move_pages(p, d, &va, 1, where, &r);
    return r;
}

CUresult sw_set_residency(sw_policy *p, CUdeviceptr va, size_t npages, sw_residency where)
{
    if (!p || !p->page || !npages || (where != SW_RES_DEVICE && where != SW_RES_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    va &= ~(CUdeviceptr)(p->page - 1);
    sw_device *d = NULL;
    for (size_t i = 0; i < npages; i++) {
        sw_pte *e = sw_pt_get(&p->pt, va + ((CUdeviceptr)i << p->shift));
        sw_page *pg = e ? atomic_load(&e->page) : NULL;
        if (!pg || (d && pg->dev != d))
            return CUDA_ERROR_INVALID_VALUE; /* unmapped, or spans two devices */
        if (pg->loc != (uint8_t)where && pg->nmaps != 1)
            return CUDA_ERROR_NOT_SUPPORTED; /* every alias would have to move */
        d = pg->dev;
    }
    sw_quiet q;
    CUresult r = sw_move_begin(d, &q, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    CUdeviceptr *vas = malloc(npages * sizeof *vas);
    size_t moved = 0;
    if (!vas) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        for (size_t i = 0; i < npages; i++)
            vas[i] = va + ((CUdeviceptr)i << p->shift);
        moved = sw_move_pages(p, d, vas, npages, (sw_loc)where, &r);
        free(vas);
    }
    if (moved)
        sw_figure_add(&d->c, where == SW_RES_HOST ? &d->c.spill_events : &d->c.fill_events, 1);
    sw_move_end(d, &q);
    return r;
}

CUresult sw_get_residency(sw_policy *p, CUdeviceptr va, sw_residency *where)
{
    if (!p || !where)
        return CUDA_ERROR_INVALID_VALUE;
    if (!p->page)
        return CUDA_ERROR_NOT_FOUND;
    sw_pte *e = sw_pt_get(&p->pt, va);
    sw_page *pg = e ? atomic_load(&e->page) : NULL;
    if (!pg)
        return CUDA_ERROR_NOT_FOUND;
    *where = (sw_residency)pg->loc;
    return CUDA_SUCCESS;
}

CUresult sw_reserve_host_pages(sw_policy *p, int dev, size_t n)
{
    sw_device *d = sw_dev(p, dev);
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    sw_dev_lock(d);
    while (r == CUDA_SUCCESS && d->pool.host_nfree < n)
        r = sw_pool_grow_host(d);
    sw_dev_unlock(d);
    return r;
}
