/* A pool handle made the driver's, for cuMemExportToShareableHandle: a
 * program that shares memory with another process (PyTorch's IPC of
 * expandable segments) needs one driver allocation behind one file
 * descriptor, which a list of pool pages cannot be. Until then the handle
 * is pooled and spills like any other; at the export its bytes move into
 * the driver allocation the shim made, every mapping of it is remapped
 * there (the program's addresses do not change), and its pages go back to
 * the pool. The move is like a spill's: the devices that reach the handle
 * are quiesced first, the copy runs on the device's own mover stream. */
#include "policy/internal.h"

#include <stdlib.h>

/* The first live mapping of v, NULL if it has none; handle lock held. */
static sw_vmap *first_mapping(sw_policy *p, const sw_vmm *v)
{
    for (sw_vmap *m = p->vmaps; m; m = m->next)
        if (m->h == v)
            return m;
    return NULL;
}

/* A scratch range of v's size with real mapped and readable by d. */
static CUresult scratch_map(sw_device *d, size_t size, CUmemGenericAllocationHandle real,
                            CUdeviceptr *va)
{
    const sw_backend *be = &d->pol->be;
    CUresult r = be->va_reserve(be->ctx, d->id, size, d->page, va);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = be->map(be->ctx, *va, size, real)) == CUDA_SUCCESS) {
        if ((r = be->set_access(be->ctx, *va, size, 1ull << d->id)) == CUDA_SUCCESS)
            return CUDA_SUCCESS;
        be->unmap(be->ctx, *va, size);
    }
    be->va_free(be->ctx, *va, size);
    return r;
}

static CUresult scratch_unmap(sw_device *d, CUdeviceptr va, size_t size)
{
    const sw_backend *be = &d->pol->be;
    CUresult r = be->unmap(be->ctx, va, size);
    CUresult f = r == CUDA_SUCCESS ? be->va_free(be->ctx, va, size) : CUDA_SUCCESS;
    return r != CUDA_SUCCESS ? r : f;
}

/* v's pages, one after the other, at a scratch range (v has no mapping
 * the device can read). */
static CUresult pages_map(sw_device *d, const sw_vmm *v, CUdeviceptr *va)
{
    const sw_backend *be = &d->pol->be;
    CUresult r = be->va_reserve(be->ctx, d->id, v->size, d->page, va);
    uint32_t i = 0;
    for (; r == CUDA_SUCCESS && i < v->npages; i++)
        r = be->map(be->ctx, *va + ((CUdeviceptr)i << d->shift), d->page, v->pages[i]->handle);
    if (r == CUDA_SUCCESS)
        r = be->set_access(be->ctx, *va, v->size, 1ull << d->id);
    if (r == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    for (uint32_t k = 0; k < i; k++)
        be->unmap(be->ctx, *va + ((CUdeviceptr)k << d->shift), d->page);
    be->va_free(be->ctx, *va, v->size);
    return r;
}

/* Whether every page of mapping m is there (none lost by a failed move)
 * and readable (none left without access by one). */
static bool whole(sw_policy *p, const sw_vmap *m)
{
    for (uint32_t i = 0; i < m->h->npages; i++)
        if (m->h->pages[i]->lost || m->h->pages[i]->noaccess || !atomic_load(&sw_pt_get(&p->pt, m->va + ((CUdeviceptr)i << p->shift))->page))
            return false;
    return true;
}

/* Copies v's bytes into real (mapped at dst); device lock held, quiesced.
 * *busy: the copy may still be running (its stream and the device sync
 * both refused), so neither end may be unmapped: an unmap under a running
 * copy ends the context (the remap hazard); the scratch ranges are left
 * mapped instead, as a move leaves its stuck slots. */
static CUresult copy_out(sw_policy *p, sw_device *d, const sw_vmm *v, CUdeviceptr dst, bool *busy)
{
    const sw_backend *be = &p->be;
    *busy = false;
    CUresult r = sw_movers(d);
    if (r != CUDA_SUCCESS)
        return r;
    sw_vmap *m = first_mapping(p, v);
    if (m && (!(m->access & (1ull << d->id)) || !whole(p, m)))
        m = NULL; /* the device may not read it there (yet), or a page was lost there */
    CUdeviceptr src = m ? m->va : 0;
    if (!m && (r = pages_map(d, v, &src)) != CUDA_SUCCESS)
        return r;
    r = be->copy(be->ctx, d->id, dst, src, v->size, d->mover[0]);
    if (r == CUDA_SUCCESS) {
        r = be->stream_sync(be->ctx, d->id, d->mover[0]);
        if (r != CUDA_SUCCESS) /* as a move's finish: the device sync covers the copy */
            r = be->synchronize(be->ctx, d->id);
        *busy = r != CUDA_SUCCESS;
    }
    if (!m && *busy) {
        /* v's pages stay mapped at src under the copy: never the pool's. */
        for (uint32_t i = 0; i < v->npages; i++)
            v->pages[i]->kept = 1;
    } else if (!m) {
        CUresult u = scratch_unmap(d, src, v->size);
        if (r == CUDA_SUCCESS)
            r = u;
    }
    return r;
}

/* Puts real where m's pages were. If the driver refuses, the pages go back
 * (nothing ran there meanwhile: quiesced). */
static CUresult remap(sw_policy *p, sw_vmap *m, CUmemGenericAllocationHandle real)
{
    const sw_backend *be = &p->be;
    sw_vmm *v = m->h;
    CUresult r = sw_vmap_unmap_pages(p, m, v->npages);
    if (r == CUDA_SUCCESS && (r = be->map(be->ctx, m->va, v->size, real)) == CUDA_SUCCESS) {
        if (!m->access || (r = be->set_access(be->ctx, m->va, v->size, m->access)) == CUDA_SUCCESS)
            return CUDA_SUCCESS;
        be->unmap(be->ctx, m->va, v->size);
    }
    sw_vmap_pages_back(p, m, v->npages);
    return r;
}

/* A mapping already moved onto real, put back on v's pages when a later
 * mapping of v could not be moved: one handle's mappings must all show the
 * same memory. The unmap of real is tried twice; if the driver refuses
 * both, the mapping stays on real and that is reported. */
static CUresult unpromote(sw_policy *p, sw_vmap *m)
{
    const sw_backend *be = &p->be;
    CUresult r = be->unmap(be->ctx, m->va, m->h->size);
    if (r != CUDA_SUCCESS && (r = be->unmap(be->ctx, m->va, m->h->size)) != CUDA_SUCCESS)
        return r;
    sw_vmap_pages_back(p, m, m->h->npages);
    return CUDA_SUCCESS;
}

/* v's pages back to the pool, its mappings forgotten: it is real now. */
static void hand_over(sw_policy *p, sw_device *d, sw_vmm *v, CUmemGenericAllocationHandle real)
{
    for (sw_vmap *m = first_mapping(p, v); m; m = first_mapping(p, v))
        sw_vmap_retire(p, m);
    for (uint32_t i = 0; i < v->npages; i++)
        sw_page_retire(d, v->pages[i]);
    free(v->pages);
    v->pages = NULL;
    v->npages = 0;
    v->maps = 0;
    v->promoted = true;
    v->real = real;
    sw_count_sub(&d->c.in_use, v->size);
    sw_count_sub(&d->c.backing, v->size);
}

/* Every mapping of v onto real, or none: on a refusal those done so far go
 * back to v's pages (two mappings of one handle showing different memory
 * would part the program's aliases). One whose unmap of real the driver
 * refuses twice stays on real, its VA unknown to the page table (the
 * program's unmap of it then goes to the driver): not expected of a driver
 * that just mapped real; the export answers the first refusal. */
static CUresult remap_all(sw_policy *p, sw_vmm *v, CUmemGenericAllocationHandle real)
{
    sw_vmap *failed = NULL;
    CUresult r = CUDA_SUCCESS;
    for (sw_vmap *m = p->vmaps; m && !failed; m = m->next)
        if (m->h == v && (r = remap(p, m, real)) != CUDA_SUCCESS)
            failed = m;
    for (sw_vmap *m = p->vmaps; failed && m != failed; m = m->next)
        if (m->h == v)
            (void)unpromote(p, m);
    return r;
}

/* v's mappings into out (its count, the first max of them). */
static void list_mappings(sw_policy *p, const sw_vmm *v, sw_vmm_maps *out)
{
    out->n = 0;
    for (sw_vmap *m = p->vmaps; m; m = m->next) {
        if (m->h != v)
            continue;
        if (out->n < out->max) {
            out->va[out->n] = m->va;
            out->size[out->n] = m->size;
        }
        out->n++;
    }
}

static CUresult promote_locked(sw_policy *p, sw_device *d, sw_vmm *v,
                               CUmemGenericAllocationHandle real, sw_vmm_maps *maps)
{
    CUdeviceptr dst;
    CUresult r = scratch_map(d, v->size, real, &dst);
    if (r != CUDA_SUCCESS)
        return r;
    bool busy;
    r = copy_out(p, d, v, dst, &busy);
    if (busy)
        return r; /* dst stays mapped: the copy may still write it */
    CUresult u = scratch_unmap(d, dst, v->size);
    if (r == CUDA_SUCCESS)
        r = u;
    if (r == CUDA_SUCCESS)
        r = remap_all(p, v, real);
    if (r == CUDA_SUCCESS) {
        if (maps)
            list_mappings(p, v, maps);
        hand_over(p, d, v, real);
    }
    return r;
}

CUresult sw_vmm_promote(sw_policy *p, CUmemGenericAllocationHandle h,
                        CUmemGenericAllocationHandle real, sw_vmm_maps *maps)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&p->handles_lock);
    sw_vmm *v = sw_vmm_get(p, h);
    sw_device *d = v && v->refs && !v->promoted ? v->dev : NULL;
    pthread_mutex_unlock(&p->handles_lock);
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    sw_quiet q;
    CUresult r = sw_move_begin(d, &q, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    v = sw_vmm_get(p, h); /* released or promoted meanwhile? */
    if (!v || !v->refs || v->promoted)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        r = promote_locked(p, d, v, real, maps);
    sw_move_end(d, &q);
    return r;
}

CUresult sw_vmm_release_promoted(sw_policy *p, CUmemGenericAllocationHandle h, bool *last,
                                 CUmemGenericAllocationHandle *real)
{
    if (!p || !last || !real)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&p->handles_lock);
    sw_vmm *v = sw_vmm_get(p, h);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (v && v->refs && v->promoted) {
        *real = v->real;
        *last = --v->refs == 0;
        if (*last) {
            sw_device *d = v->dev;
            sw_dev_lock(d);
            sw_vmm_forget(p, v);
            sw_dev_unlock(d);
        }
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&p->handles_lock);
    return r;
}

CUresult sw_vmm_retain_promoted(sw_policy *p, CUmemGenericAllocationHandle real,
                                CUmemGenericAllocationHandle *h)
{
    if (!p || !h)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&p->handles_lock);
    for (size_t i = 0; i < p->nhandles && r != CUDA_SUCCESS; i++) {
        sw_vmm *v = p->handles[i];
        if (v && v->refs && v->promoted && v->real == real) {
            v->refs++;
            *h = v->id;
            r = CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&p->handles_lock);
    return r;
}

size_t sw_vmm_mappings(sw_policy *p, CUmemGenericAllocationHandle h)
{
    if (!p)
        return 0;
    sw_vmm_maps none = {0};
    pthread_mutex_lock(&p->handles_lock);
    sw_vmm *v = sw_vmm_get(p, h);
    if (v)
        list_mappings(p, v, &none);
    pthread_mutex_unlock(&p->handles_lock);
    return none.n;
}

bool sw_vmm_promoted(sw_policy *p, CUmemGenericAllocationHandle h,
                     CUmemGenericAllocationHandle *real)
{
    if (!p)
        return false;
    pthread_mutex_lock(&p->handles_lock);
    sw_vmm *v = sw_vmm_get(p, h);
    bool yes = v && v->refs && v->promoted;
    if (yes && real)
        *real = v->real;
    pthread_mutex_unlock(&p->handles_lock);
    return yes;
}
