/* Program-managed VMM: cuMemCreate and the calls around it, served with pool
 * pages at the program's own addresses.
 *
 * A spillway handle is a list of pool pages (one driver handle each: the
 * driver cannot map part of a handle, and spill moves single pages). Mapping
 * it maps its pages one by one at the program's VA and records the mapping in
 * the page table, so lookups, stats and residency see program VMM memory
 * exactly like arena memory. As in the driver, a handle's memory goes back
 * when it is released and no longer mapped.
 *
 * All of it runs under the policy's handle lock (then the device lock for
 * page work), so a handle or mapping is never changed under a reader. */
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"

#define IDX_BITS 20u
#define IDX_MASK ((1ull << IDX_BITS) - 1)
#define TAG_MASK 0xffff000000000000ull

sw_vmm *sw_vmm_get(sw_policy *p, CUmemGenericAllocationHandle h)
{
    if ((h & TAG_MASK) != p->handle_tag)
        return NULL;
    size_t idx = (size_t)(h & IDX_MASK);
    if (idx >= p->nhandles || !p->handles[idx] || p->handles[idx]->id != h)
        return NULL;
    return p->handles[idx];
}

bool sw_vmm_is_handle(sw_policy *p, CUmemGenericAllocationHandle h)
{
    if (!p)
        return false;
    pthread_mutex_lock(&p->handles_lock);
    sw_vmm *v = sw_vmm_get(p, h);
    bool ok = v && v->refs > 0;
    pthread_mutex_unlock(&p->handles_lock);
    return ok;
}

static CUresult handle_register(sw_policy *p, sw_vmm *v)
{
    size_t idx = 0;
    while (idx < p->nhandles && p->handles[idx])
        idx++;
    if (idx == p->nhandles) {
        if (idx > IDX_MASK)
            return CUDA_ERROR_OUT_OF_MEMORY;
        if (p->nhandles == p->cap_handles) {
            size_t cap = p->cap_handles ? 2 * p->cap_handles : 64;
            sw_vmm **n = realloc(p->handles, cap * sizeof *n);
            if (!n)
                return CUDA_ERROR_OUT_OF_MEMORY;
            p->handles = n;
            p->cap_handles = cap;
        }
        p->nhandles++;
    }
    p->handle_seq = (p->handle_seq + 1) & ((1ull << (48 - IDX_BITS)) - 1);
    v->id = p->handle_tag | p->handle_seq << IDX_BITS | idx;
    p->handles[idx] = v;
    return CUDA_SUCCESS;
}

void sw_vmm_forget(sw_policy *p, sw_vmm *v)
{
    sw_device *d = v->dev;
    for (uint32_t i = 0; i < v->npages; i++)
        sw_page_retire(d, v->pages[i]);
    p->handles[v->id & IDX_MASK] = NULL;
    if (!v->promoted) { /* a promoted handle's bytes left the pool then */
        sw_count_sub(&d->c.in_use, v->size);
        sw_count_sub(&d->c.backing, v->size);
    }
    free(v->pages);
    free(v);
}

/* Whether a handle of n pages can be backed at all: within the limit, or
 * with spill within the limit and the host limit together. */
static bool fits(const sw_device *d, size_t n)
{
    size_t cap = d->pool.limit_pages;
    if (d->cfg.spill)
        cap = d->pool.host_limit_pages > SIZE_MAX - cap ? SIZE_MAX : cap + d->pool.host_limit_pages;
    return n <= cap;
}

CUresult sw_vmm_create(sw_policy *p, int dev, size_t size, CUmemGenericAllocationHandle *out)
{
    sw_device *d = sw_dev(p, dev);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!out || !size || size % d->page)
        return CUDA_ERROR_INVALID_VALUE;
    size_t n = size >> d->shift;
    if (!fits(d, n))
        return sw_refuse(d, SW_OOM_TOO_LARGE);
    sw_vmm *v = calloc(1, sizeof *v);
    CUmemGenericAllocationHandle *hs = malloc(n * sizeof *hs);
    sw_loc *locs = malloc(n * sizeof *locs);
    if (v)
        v->pages = calloc(n, sizeof *v->pages);
    if (!v || !hs || !locs || !v->pages) {
        free(hs);
        free(locs);
        if (v)
            free(v->pages);
        free(v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    sw_oom_reason why;
    CUresult r = sw_acquire_pages(d, n, hs, locs, &why);
    if (r != CUDA_SUCCESS) {
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            sw_refuse(d, why);
        free(hs);
        free(locs);
        free(v->pages);
        free(v);
        return r;
    }
    v->dev = d;
    v->size = size;
    v->npages = (uint32_t)n;
    v->refs = 1;
    v->block_id = sw_new_id();
    pthread_mutex_lock(&p->handles_lock);
    sw_dev_lock(d);
    for (size_t i = 0; i < n; i++)
        if (!(v->pages[i] = sw_page_new(d, hs[i], locs[i])))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        r = handle_register(p, v);
    if (r != CUDA_SUCCESS) {
        for (size_t i = 0; i < n; i++) {
            sw_pool_put(d, locs[i], hs[i]);
            if (v->pages[i])
                sw_page_free(d, v->pages[i]);
        }
        free(v->pages);
        free(v);
    } else {
        for (size_t i = 0; i < n; i++)
            if (locs[i] == SW_LOC_HOST)
                sw_figure_add(&d->c, &d->c.host_in_use, d->page);
        sw_count_add(&d->c.in_use, size, &d->c.peak_in_use);
        sw_count_add(&d->c.backing, size, &d->c.peak_backing);
        sw_lanes_add(&d->c.allocs, 1);
        *out = v->id;
    }
    sw_dev_unlock(d);
    pthread_mutex_unlock(&p->handles_lock);
    free(hs);
    free(locs);
    return r;
}

CUresult sw_vmm_release(sw_policy *p, CUmemGenericAllocationHandle h, bool *gone)
{
    if (gone)
        *gone = false;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&p->handles_lock);
    sw_vmm *v = sw_vmm_get(p, h);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (v && v->refs > 0 && v->promoted) {
        r = CUDA_ERROR_NOT_SUPPORTED; /* the driver's now: sw_vmm_release_promoted */
    } else if (v && v->refs > 0) {
        r = CUDA_SUCCESS;
        if (--v->refs == 0 && v->maps == 0) {
            sw_device *d = v->dev; /* v is gone after handle_free */
            sw_dev_lock(d);
            sw_lanes_add(&d->c.frees, 1);
            sw_vmm_forget(p, v);
            sw_dev_unlock(d);
            if (gone)
                *gone = true;
        }
    }
    pthread_mutex_unlock(&p->handles_lock);
    return r;
}

/* Whether [va, va+size) touches a spillway arena (never the program's). */
static bool in_arena(sw_policy *p, CUdeviceptr va, size_t size)
{
    int hi = atomic_load(&p->ndev_hi);
    for (int i = 0; i < hi; i++) {
        sw_device *d = sw_dev(p, i);
        if (!d)
            continue;
        unsigned n = atomic_load_explicit(&d->arena.nsegs, memory_order_acquire);
        for (unsigned k = 0; k < n; k++)
            if (va < d->arena.seg[k].base + d->arena.seg[k].size && d->arena.seg[k].base < va + size)
                return true;
    }
    return false;
}

sw_vmap *sw_vmap_at(sw_policy *p, CUdeviceptr va)
{
    sw_pte *e = sw_pt_get(&p->pt, va);
    if (!e)
        return NULL;
    uintptr_t o = atomic_load_explicit(&e->owner, memory_order_acquire);
    return SW_OWN_TAG(o) == SW_OWN_VMM ? SW_OWN_PTR(o) : NULL;
}

CUresult sw_vmap_unmap_pages(sw_policy *p, sw_vmap *m, uint32_t done)
{
    CUresult first = CUDA_SUCCESS;
    for (uint32_t i = 0; i < done; i++) {
        CUdeviceptr va = m->va + ((CUdeviceptr)i << p->shift);
        sw_list_remove(m->h->dev, m->h->pages[i]);
        CUresult r = sw_unmap_page(m->h->dev, va);
        if (r != CUDA_SUCCESS && first == CUDA_SUCCESS)
            first = r;
        atomic_store_explicit(&sw_pt_get(&p->pt, va)->owner, 0, memory_order_release);
    }
    return first;
}

CUresult sw_vmm_map(sw_policy *p, CUdeviceptr va, size_t size, size_t offset,
                    CUmemGenericAllocationHandle h)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&p->handles_lock);
    sw_vmm *v = sw_vmm_get(p, h);
    CUresult r = CUDA_SUCCESS;
    /* size 0 maps nothing: the driver refuses it as a bad value, not as a
     * part of a handle. */
    if (!v || v->refs == 0 || v->promoted || !va || !size || va % p->page || in_arena(p, va, size))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (offset || size != v->size)
        r = CUDA_ERROR_NOT_SUPPORTED; /* the driver cannot map part of a handle */
    for (uint32_t i = 0; r == CUDA_SUCCESS && i < v->npages; i++) {
        sw_pte *e = sw_pt_ensure(&p->pt, va + ((CUdeviceptr)i << p->shift));
        if (!e)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else if (atomic_load(&e->owner) || atomic_load(&e->page))
            r = CUDA_ERROR_INVALID_VALUE; /* already mapped */
    }
    sw_vmap *m = NULL;
    if (r == CUDA_SUCCESS) {
        if ((m = p->spare_vmaps))
            p->spare_vmaps = m->next;
        else if (!(m = calloc(1, sizeof *m)))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r != CUDA_SUCCESS) {
        pthread_mutex_unlock(&p->handles_lock);
        return r;
    }
    m->va = va;
    m->size = size;
    m->h = v;
    m->id = sw_new_id();
    m->access = 0;
    sw_heat_init(p, &m->heat, va, size);
    atomic_store(&m->spans, sw_spans_wanted(p, size) ? sw_spans_new(p, va, size, &m->heat) : NULL);
    sw_device *d = v->dev;
    sw_dev_lock(d);
    uint32_t i = 0;
    for (; i < v->npages; i++) {
        CUdeviceptr pva = va + ((CUdeviceptr)i << p->shift);
        if ((r = sw_map_page(d, pva, v->pages[i])) != CUDA_SUCCESS)
            break;
        atomic_store_explicit(&sw_pt_get(&p->pt, pva)->owner, SW_OWN(m, SW_OWN_VMM),
                              memory_order_release);
    }
    if (r != CUDA_SUCCESS) {
        (void)sw_vmap_unmap_pages(p, m, i); /* nothing ran there: safe to unmap */
        m->h = NULL;
        m->next = p->spare_vmaps;
        p->spare_vmaps = m;
    } else {
        sw_heat_init(p, &m->heat, va, size); /* host pages counted now they are mapped */
        uint64_t now = atomic_load(&m->heat.touched);
        sw_spans *spans = atomic_load(&m->spans);
        for (uint32_t k = 0; k < v->npages; k++) {
            if (v->pages[k]->loc == SW_LOC_DEVICE && v->pages[k]->nmaps == 1)
                sw_ring_insert(d, v->pages[k], now);
            else if (v->pages[k]->loc == SW_LOC_HOST && spans)
                sw_spans_host(spans, va + ((CUdeviceptr)k << p->shift), true);
        }
        v->maps++;
        m->prev = NULL;
        m->next = p->vmaps;
        if (p->vmaps)
            p->vmaps->prev = m;
        p->vmaps = m;
    }
    sw_dev_unlock(d);
    pthread_mutex_unlock(&p->handles_lock);
    return r;
}

void sw_vmap_retire(sw_policy *p, sw_vmap *m)
{
    if (m->prev)
        m->prev->next = m->next;
    else
        p->vmaps = m->next;
    if (m->next)
        m->next->prev = m->prev;
    m->h = NULL;
    m->next = p->spare_vmaps;
    p->spare_vmaps = m;
}

/* Checks [va, va+size) is made of whole spillway mappings; handle lock held. */
static CUresult check_range(sw_policy *p, CUdeviceptr va, size_t size)
{
    if (!size || va % p->page || size % p->page || va + size < va)
        return sw_vmap_at(p, va) ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_FOUND;
    size_t n = size >> p->shift, ours = 0;
    for (size_t i = 0; i < n; i++) {
        sw_vmap *m = sw_vmap_at(p, va + ((CUdeviceptr)i << p->shift));
        if (!m)
            continue;
        ours++;
        if (m->va < va || m->va + m->size > va + size)
            return CUDA_ERROR_INVALID_VALUE; /* splits a mapping */
    }
    if (!ours)
        return CUDA_ERROR_NOT_FOUND;
    return ours == n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult sw_vmm_check(sw_policy *p, CUdeviceptr va, size_t size)
{
    if (!p || !p->page)
        return CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&p->handles_lock);
    CUresult r = check_range(p, va, size);
    pthread_mutex_unlock(&p->handles_lock);
    return r;
}

/* Room for the ids of the handles the unmap of [va, va+size) may end:
 * one per mapping there. Handle lock held; the range checked. */
static CUresult gone_room(sw_policy *p, CUdeviceptr va, size_t size, sw_vmm_gone *gone)
{
    size_t n = 0;
    for (CUdeviceptr at = va; at < va + size; n++) {
        sw_vmap *m = sw_vmap_at(p, at);
        at = m->va + m->size;
    }
    gone->n = 0;
    gone->h = malloc(n * sizeof *gone->h);
    return gone->h ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

void sw_vmap_pages_back(sw_policy *p, sw_vmap *m, uint32_t n)
{
    sw_vmm *v = m->h;
    sw_device *d = v->dev;
    uint64_t now = atomic_load(&m->heat.touched);
    for (uint32_t i = 0; i < n; i++) {
        CUdeviceptr va = m->va + ((CUdeviceptr)i << p->shift);
        sw_pte *e = sw_pt_get(&p->pt, va);
        sw_page *pg = v->pages[i];
        /* A page a failed move lost stays so. */
        if (!pg->lost && !atomic_load(&e->page) && sw_map_page(d, va, pg) != CUDA_SUCCESS)
            sw_page_lose(d, va, pg);
        atomic_store_explicit(&e->owner, SW_OWN(m, SW_OWN_VMM), memory_order_release);
        if (pg->lost)
            continue;
        if (m->access)
            (void)p->be.set_access(p->be.ctx, va, d->page, m->access);
        if (pg->loc == SW_LOC_DEVICE && pg->nmaps == 1)
            sw_ring_insert(d, pg, now);
    }
}

/* The program's unmap of mapping m, all of it or none: when the driver
 * refuses a page, the pages unmapped before it are mapped back, so that
 * the mapping stays whole, its handle's pages stay out of the pool, and the
 * program's retry finds it again. Handle and device locks held. */
static CUresult unmap_whole(sw_policy *p, sw_vmap *m)
{
    sw_vmm *v = m->h;
    sw_device *d = v->dev;
    CUresult r = CUDA_SUCCESS;
    uint32_t done = 0;
    for (; done < v->npages; done++) {
        CUdeviceptr va = m->va + ((CUdeviceptr)done << p->shift);
        if ((r = sw_unmap_page(d, va)) != CUDA_SUCCESS)
            break;
        sw_list_remove(d, v->pages[done]);
        atomic_store_explicit(&sw_pt_get(&p->pt, va)->owner, 0, memory_order_release);
    }
    if (r != CUDA_SUCCESS)
        sw_vmap_pages_back(p, m, done);
    return r;
}

/* After one of v's mappings went with others left (a handle mapped at
 * several VAs): its pages name a VA still mapped, and once one mapping is
 * left they are single pages again, which spill may move (an alias could
 * not), back on the clock's ring the unmap took them off. Handle and
 * device locks held. */
static void rehome(sw_policy *p, sw_vmm *v)
{
    sw_vmap *m = p->vmaps;
    while (m && m->h != v)
        m = m->next;
    if (!m)
        return;
    uint64_t now = atomic_load(&m->heat.touched);
    for (uint32_t i = 0; i < v->npages; i++) {
        sw_page *pg = v->pages[i];
        pg->va = m->va + ((CUdeviceptr)i << p->shift);
        if (!pg->lost && pg->loc == SW_LOC_DEVICE && pg->nmaps == 1)
            sw_ring_insert(v->dev, pg, now);
    }
}

CUresult sw_vmm_unmap(sw_policy *p, CUdeviceptr va, size_t size, sw_vmm_gone *gone)
{
    if (gone)
        *gone = (sw_vmm_gone){0};
    if (!p || !p->page)
        return CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&p->handles_lock);
    CUresult r = check_range(p, va, size);
    if (r == CUDA_SUCCESS && gone)
        r = gone_room(p, va, size, gone);
    for (CUdeviceptr at = va; r == CUDA_SUCCESS && at < va + size;) {
        sw_vmap *m = sw_vmap_at(p, at);
        sw_vmm *v = m->h;
        sw_device *d = v->dev;
        sw_dev_lock(d);
        /* The program's own unmap: ordering it after the program's work is
         * the program's business, as without spillway. */
        r = unmap_whole(p, m);
        at = m->va + m->size;
        if (r != CUDA_SUCCESS) {
            sw_dev_unlock(d);
            break;
        }
        sw_vmap_retire(p, m);
        if (--v->maps == 0 && v->refs == 0) {
            sw_lanes_add(&d->c.frees, 1);
            if (gone)
                gone->h[gone->n++] = v->id;
            sw_vmm_forget(p, v);
        } else if (v->maps) {
            rehome(p, v);
        }
        sw_dev_unlock(d);
    }
    pthread_mutex_unlock(&p->handles_lock);
    return r;
}

CUresult sw_vmm_set_access(sw_policy *p, CUdeviceptr va, size_t size, uint64_t rw_dev_mask)
{
    if (!p || !p->page)
        return CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&p->handles_lock);
    CUresult r = check_range(p, va, size);
    if (r == CUDA_SUCCESS)
        r = p->be.set_access(p->be.ctx, va, size, rw_dev_mask);
    for (CUdeviceptr at = va; r == CUDA_SUCCESS && at < va + size;) {
        sw_vmap *m = sw_vmap_at(p, at);
        m->access = rw_dev_mask; /* re-granted when a page changes residency */
        /* Work on those devices can reach the mapping: a move waits for it. */
        atomic_fetch_or(&m->h->dev->vmm_access, rw_dev_mask);
        at = m->va + m->size;
    }
    pthread_mutex_unlock(&p->handles_lock);
    return r;
}

CUresult sw_vmm_retain(sw_policy *p, CUdeviceptr va, CUmemGenericAllocationHandle *out)
{
    if (!p || !out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!p->page)
        return CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&p->handles_lock);
    sw_vmap *m = sw_vmap_at(p, va);
    CUresult r = CUDA_ERROR_NOT_FOUND;
    if (m && m->h) {
        m->h->refs++;
        *out = m->h->id;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&p->handles_lock);
    return r;
}

CUresult sw_vmm_mapped_in(sw_policy *p, CUdeviceptr lo, CUdeviceptr hi, CUmemGenericAllocationHandle *h,
                          CUdeviceptr *base, size_t *size)
{
    if (!p || !h || !base || !size)
        return CUDA_ERROR_INVALID_VALUE;
    if (!p->page || hi <= lo)
        return CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&p->handles_lock);
    const sw_vmap *first = NULL;
    for (const sw_vmap *m = p->vmaps; m; m = m->next)
        if (m->h && m->va < hi && m->va + m->size > lo && (!first || m->va < first->va))
            first = m;
    CUresult r = CUDA_ERROR_NOT_FOUND;
    if (first) {
        *h = first->h->id;
        *base = first->va;
        *size = first->size;
        r = first->h->refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
    }
    pthread_mutex_unlock(&p->handles_lock);
    return r;
}

CUresult sw_vmm_properties(sw_policy *p, CUmemGenericAllocationHandle h, size_t *size, int *dev,
                           uint64_t *user)
{
    if (!p || !size || !dev)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&p->handles_lock);
    sw_vmm *v = sw_vmm_get(p, h);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (v && v->refs > 0) {
        *size = v->size;
        *dev = v->dev->id;
        if (user)
            *user = v->user;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&p->handles_lock);
    return r;
}

CUresult sw_vmm_set_user(sw_policy *p, CUmemGenericAllocationHandle h, uint64_t user)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&p->handles_lock);
    sw_vmm *v = sw_vmm_get(p, h);
    if (v)
        v->user = user;
    pthread_mutex_unlock(&p->handles_lock);
    return v ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult sw_vmm_destroy_all(sw_policy *p)
{
    CUresult first = CUDA_SUCCESS;
    pthread_mutex_lock(&p->handles_lock);
    while (p->vmaps) {
        sw_vmap *m = p->vmaps;
        p->vmaps = m->next;
        sw_dev_lock(m->h->dev);
        CUresult r = sw_vmap_unmap_pages(p, m, m->h->npages);
        sw_dev_unlock(m->h->dev);
        if (first == CUDA_SUCCESS)
            first = r;
        free(m);
    }
    while (p->spare_vmaps) {
        sw_vmap *n = p->spare_vmaps->next;
        free(p->spare_vmaps);
        p->spare_vmaps = n;
    }
    for (size_t i = 0; i < p->nhandles; i++) {
        sw_vmm *v = p->handles[i];
        if (!v)
            continue;
        sw_device *d = v->dev;
        sw_dev_lock(d);
        sw_vmm_forget(p, v);
        sw_dev_unlock(d);
    }
    free(p->handles);
    p->handles = NULL;
    p->nhandles = p->cap_handles = 0;
    pthread_mutex_unlock(&p->handles_lock);
    return first;
}
