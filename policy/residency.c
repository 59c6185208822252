/* Residency: moving one page's bytes between device and pinned host memory
 * while its VA stays where it is (DESIGN.md "Spill").
 *
 * The new physical page is first mapped at the device's scratch VA, the bytes
 * are copied VA to VA by the copy engine, and only after a synchronize are
 * the old mapping dropped and the new page mapped at the program's VA, with
 * access granted again. Remapping is not stream ordered, so the whole batch
 * starts with a device synchronize that covers every earlier piece of work:
 * an unmap racing in-flight work kills the context (measured). */
#include "policy/internal.h"

/* Devices that must see va after a remap; handle lock held. */
static uint64_t access_of(sw_policy *p, sw_device *d, CUdeviceptr va)
{
    uintptr_t o = atomic_load(&sw_pt_get(&p->pt, va)->owner);
    if (SW_OWN_TAG(o) == SW_OWN_VMM)
        return ((sw_vmap *)SW_OWN_PTR(o))->access;
    return d->access_mask;
}

/* Copies page va into the new physical page h and maps h at va. Device
 * synchronized before; device lock held. */
static CUresult move_page(sw_policy *p, sw_device *d, CUdeviceptr va, sw_page *pg,
                          CUmemGenericAllocationHandle h, uint64_t access)
{
    const sw_backend *be = &p->be;
    CUresult r = be->map(be->ctx, d->scratch, d->page, h);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = be->set_access(be->ctx, d->scratch, d->page, 1ull << d->id)) == CUDA_SUCCESS &&
        (r = be->copy(be->ctx, d->id, d->scratch, va, d->page, NULL)) == CUDA_SUCCESS)
        r = be->synchronize(be->ctx, d->id);
    if (r == CUDA_SUCCESS && (r = be->unmap(be->ctx, va, d->page)) == CUDA_SUCCESS) {
        r = be->map(be->ctx, va, d->page, h);
        if (r == CUDA_SUCCESS && access)
            r = be->set_access(be->ctx, va, d->page, access);
        if (r != CUDA_SUCCESS) {
            /* Put the old page back: the VA must never be left unbacked. */
            (void)be->unmap(be->ctx, va, d->page);
            if (be->map(be->ctx, va, d->page, pg->handle) == CUDA_SUCCESS && access)
                (void)be->set_access(be->ctx, va, d->page, access);
        }
    }
    CUresult u = be->unmap(be->ctx, d->scratch, d->page);
    if (r == CUDA_SUCCESS)
        r = u;
    return r;
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

CUresult sw_move_page(sw_policy *p, sw_device *d, CUdeviceptr va, sw_loc where)
{
    sw_page *pg = atomic_load(&sw_pt_get(&p->pt, va)->page);
    if (pg->loc == where)
        return CUDA_SUCCESS;
    if (pg->nmaps != 1)
        return CUDA_ERROR_NOT_SUPPORTED; /* would have to move every alias */
    CUmemGenericAllocationHandle h;
    CUresult r = take_for(d, where, &h);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = move_page(p, d, va, pg, h, access_of(p, d, va))) != CUDA_SUCCESS) {
        sw_pool_put(d, where, h);
        return r;
    }
    sw_pool_put(d, (sw_loc)pg->loc, pg->handle);
    pg->handle = h;
    pg->loc = (uint8_t)where;
    if (where == SW_LOC_HOST) {
        sw_list_remove(d, pg);
        atomic_fetch_add(&d->c.host_in_use, d->page);
        atomic_fetch_add_explicit(&d->c.spill_bytes, d->page, memory_order_relaxed);
        sw_heat_host_pages(p, va, +1);
    } else {
        /* Behind the hand, not yet referenced: the newest on the device. */
        sw_ring_insert(d, pg, sw_page_stamp(p, va));
        sw_count_sub(&d->c.host_in_use, d->page);
        atomic_fetch_add_explicit(&d->c.fill_bytes, d->page, memory_order_relaxed);
        sw_heat_host_pages(p, va, -1);
    }
    return CUDA_SUCCESS;
}

CUresult sw_set_residency(sw_policy *p, CUdeviceptr va, size_t npages, sw_residency where)
{
    if (!p || !p->page || !npages || (where != SW_RES_DEVICE && where != SW_RES_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    va &= ~(CUdeviceptr)(p->page - 1);
    CUresult r = sw_gate_close(p);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&p->handles_lock);
    sw_device *d = NULL;
    for (size_t i = 0; i < npages && r == CUDA_SUCCESS; i++) {
        sw_pte *e = sw_pt_get(&p->pt, va + ((CUdeviceptr)i << p->shift));
        sw_page *pg = e ? atomic_load(&e->page) : NULL;
        if (!pg || (d && pg->dev != d))
            r = CUDA_ERROR_INVALID_VALUE; /* unmapped, or spans two devices */
        else
            d = pg->dev;
    }
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&d->lock);
        /* One sync for the batch; it is a sync point for pending frees too. */
        uint64_t t = sw_sync_begin(p, d->id);
        r = p->be.synchronize(p->be.ctx, d->id);
        if (r == CUDA_SUCCESS) {
            sw_sync_end(p, d->id, t);
            atomic_fetch_add_explicit(&d->c.syncs, 1, memory_order_relaxed);
        }
        size_t moved = 0;
        for (size_t i = 0; i < npages && r == CUDA_SUCCESS; i++)
            if ((r = sw_move_page(p, d, va + ((CUdeviceptr)i << p->shift), (sw_loc)where)) ==
                CUDA_SUCCESS)
                moved++;
        if (moved)
            atomic_fetch_add_explicit(where == SW_RES_HOST ? &d->c.spill_events : &d->c.fill_events,
                                      1, memory_order_relaxed);
        pthread_mutex_unlock(&d->lock);
    }
    pthread_mutex_unlock(&p->handles_lock);
    sw_gate_open(p);
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
    pthread_mutex_lock(&d->lock);
    while (r == CUDA_SUCCESS && d->pool.host_nfree < n)
        r = sw_pool_grow_host(d);
    pthread_mutex_unlock(&d->lock);
    return r;
}
