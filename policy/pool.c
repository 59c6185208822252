/* The page pool of one device: physical pages (one driver handle each) that
 * are not mapped anywhere, device pages up to the limit and never beyond,
 * pinned host pages up to the host limit. Everything runs under the device
 * lock. Pages are kept once created: giving them back to the driver would
 * only make the next allocation pay cuMemCreate again. */
#include <stdlib.h>

#include "policy/internal.h"

int sw_pool_init(sw_device *d, size_t limit_pages, size_t host_limit_pages)
{
    sw_pool *pl = &d->pool;
    pl->limit_pages = limit_pages;
    pl->free = calloc(limit_pages ? limit_pages : 1, sizeof *pl->free);
    pl->host_limit_pages = host_limit_pages;
    return pl->free ? 0 : -1;
}

/* Preallocation: every device page up to the limit, created now. */
CUresult sw_pool_prefill(sw_device *d)
{
    sw_pool *pl = &d->pool;
    while (pl->created < pl->limit_pages) {
        CUmemGenericAllocationHandle h;
        CUresult r = d->pol->be.page_create(d->pol->be.ctx, d->id, SW_LOC_DEVICE, d->page, &h);
        if (r != CUDA_SUCCESS)
            return r;
        pl->created++;
        atomic_fetch_add_explicit(&d->c.pool_bytes, d->page, memory_order_relaxed);
        pl->free[pl->nfree++] = h;
    }
    return CUDA_SUCCESS;
}

size_t sw_pool_available(const sw_device *d)
{
    return d->pool.nfree + (d->pool.limit_pages - d->pool.created);
}

/* A new pinned host page, within the host limit. */
static CUresult create_host(sw_device *d, CUmemGenericAllocationHandle *h, sw_oom_reason *why)
{
    sw_pool *pl = &d->pool;
    if (pl->host_created >= pl->host_limit_pages) {
        *why = SW_OOM_HOST_LIMIT;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (pl->host_cap == pl->host_created) {
        /* The stack holds at most every host page created: grow it first so
         * that giving a page back can never fail. */
        size_t cap = pl->host_cap ? 2 * pl->host_cap : 16;
        CUmemGenericAllocationHandle *n = realloc(pl->host_free, cap * sizeof *n);
        if (!n) {
            *why = SW_OOM_DRIVER;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        pl->host_free = n;
        pl->host_cap = cap;
    }
    CUresult r = d->pol->be.page_create(d->pol->be.ctx, d->id, SW_LOC_HOST, d->page, h);
    if (r == CUDA_SUCCESS) {
        pl->host_created++;
        atomic_fetch_add_explicit(&d->c.host_pool_bytes, d->page, memory_order_relaxed);
    } else if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        *why = SW_OOM_DRIVER;
    }
    return r;
}

CUresult sw_pool_take(sw_device *d, sw_loc loc, CUmemGenericAllocationHandle *h,
                      sw_oom_reason *why)
{
    sw_pool *pl = &d->pool;
    sw_oom_reason ignored;
    if (!why)
        why = &ignored;
    if (loc == SW_LOC_DEVICE) {
        if (pl->nfree) {
            *h = pl->free[--pl->nfree];
            return CUDA_SUCCESS;
        }
        if (pl->created >= pl->limit_pages) {
            *why = SW_OOM_LIMIT;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        CUresult r = d->pol->be.page_create(d->pol->be.ctx, d->id, loc, d->page, h);
        if (r == CUDA_SUCCESS) {
            pl->created++;
            atomic_fetch_add_explicit(&d->c.pool_bytes, d->page, memory_order_relaxed);
        } else if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            *why = SW_OOM_DRIVER;
        }
        return r;
    }
    if (pl->host_nfree) {
        *h = pl->host_free[--pl->host_nfree];
        return CUDA_SUCCESS;
    }
    return create_host(d, h, why);
}

CUresult sw_pool_grow_host(sw_device *d)
{
    CUmemGenericAllocationHandle h;
    sw_oom_reason why;
    CUresult r = create_host(d, &h, &why);
    if (r == CUDA_SUCCESS)
        sw_pool_put(d, SW_LOC_HOST, h);
    return r;
}

void sw_pool_put(sw_device *d, sw_loc loc, CUmemGenericAllocationHandle h)
{
    sw_pool *pl = &d->pool;
    if (loc == SW_LOC_DEVICE)
        pl->free[pl->nfree++] = h;
    else
        pl->host_free[pl->host_nfree++] = h;
}

/* Releases every free page; pages still mapped are the caller's to unmap
 * first. Returns the first error. */
CUresult sw_pool_destroy(sw_device *d)
{
    sw_pool *pl = &d->pool;
    CUresult first = CUDA_SUCCESS;
    for (size_t i = 0; i < pl->nfree; i++) {
        CUresult r = d->pol->be.page_release(d->pol->be.ctx, pl->free[i]);
        if (first == CUDA_SUCCESS)
            first = r;
    }
    for (size_t i = 0; i < pl->host_nfree; i++) {
        CUresult r = d->pol->be.page_release(d->pol->be.ctx, pl->host_free[i]);
        if (first == CUDA_SUCCESS)
            first = r;
    }
    free(pl->free);
    free(pl->host_free);
    pl->free = pl->host_free = NULL;
    pl->nfree = pl->host_nfree = 0;
    atomic_store_explicit(&d->c.pool_bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&d->c.host_pool_bytes, 0, memory_order_relaxed);
    return first;
}

/* Logical page objects are recycled, never freed while the policy lives:
 * a lock-free reader may still hold a pointer to one. */
sw_page *sw_page_new(sw_device *d, CUmemGenericAllocationHandle h, sw_loc loc)
{
    sw_page *pg = d->pool.page_objs;
    if (pg)
        d->pool.page_objs = pg->next;
    else if (!(pg = malloc(sizeof *pg)))
        return NULL;
    *pg = (sw_page){.handle = h, .loc = (uint8_t)loc, .dev = d};
    return pg;
}

void sw_page_free(sw_device *d, sw_page *pg)
{
    pg->list = SW_LIST_NONE;
    pg->next = d->pool.page_objs;
    d->pool.page_objs = pg;
}

void sw_page_objs_destroy(sw_device *d)
{
    while (d->pool.page_objs) {
        sw_page *n = d->pool.page_objs->next;
        free(d->pool.page_objs);
        d->pool.page_objs = n;
    }
}
