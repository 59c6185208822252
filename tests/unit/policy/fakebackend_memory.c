/* The fake backend's memory (fakebackend.h): reservations, physical pages
 * (slices of one memfd), their mappings and access, and copies. */
#include "tests/unit/policy/fakebackend_state.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- reservations -------------------------------------------------------- */

static reservation *res_of(fake_backend *fb, CUdeviceptr va, size_t size)
{
    for (int i = 0; i < fb->nres; i++) {
        reservation *r = &fb->res[i];
        if (va >= r->base && va + size <= r->base + r->size && va + size > va)
            return r;
    }
    return NULL;
}

static CUresult reserve_locked(fake_backend *fb, size_t size, size_t align, CUdeviceptr *va)
{
    if (!size || size % fb->page || fb->nres == MAX_RES)
        return CUDA_ERROR_INVALID_VALUE;
    if (align < fb->page)
        align = fb->page;
    size_t raw_size = size + align;
    void *raw;
    if (fb->no_bytes) { /* addresses only: handed out past the last one */
        static uintptr_t next = (uintptr_t)1 << 44;
        raw = (void *)next;
        next += (raw_size + fb->page - 1) / fb->page * fb->page + fb->page;
    } else {
        raw = mmap(NULL, raw_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (raw == MAP_FAILED)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    reservation *r = &fb->res[fb->nres++];
    r->raw = raw;
    r->raw_size = raw_size;
    r->base = ((CUdeviceptr)raw + align - 1) & ~(CUdeviceptr)(align - 1);
    r->size = size;
    r->mapped = calloc(size / fb->page, sizeof *r->mapped);
    r->access = calloc(size / fb->page, sizeof *r->access);
    fb->st.reserves++;
    *va = r->base;
    return CUDA_SUCCESS;
}

CUresult fake_reserve(fake_backend *fb, size_t size, CUdeviceptr *va)
{
    pthread_mutex_lock(&fb->lock);
    CUresult r = reserve_locked(fb, size, fb->page, va);
    pthread_mutex_unlock(&fb->lock);
    return r;
}

static CUresult free_va_locked(fake_backend *fb, CUdeviceptr va, size_t size)
{
    for (int i = 0; i < fb->nres; i++) {
        reservation *r = &fb->res[i];
        if (r->base != va || r->size != size)
            continue;
        for (size_t p = 0; p < size / fb->page; p++)
            if (r->mapped[p])
                fb_violate(fb, "va_free of a reservation with page %llu mapped",
                           (unsigned long long)p);
        if (!fb->no_bytes)
            munmap(r->raw, r->raw_size);
        free(r->mapped);
        free(r->access);
        fb->res[i] = fb->res[--fb->nres];
        fb->st.va_frees++;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult fake_free_va(fake_backend *fb, CUdeviceptr va, size_t size)
{
    pthread_mutex_lock(&fb->lock);
    CUresult r = free_va_locked(fb, va, size);
    pthread_mutex_unlock(&fb->lock);
    return r;
}

CUmemGenericAllocationHandle fake_mapped_handle(fake_backend *fb, CUdeviceptr va)
{
    pthread_mutex_lock(&fb->lock);
    reservation *r = res_of(fb, va, 1);
    CUmemGenericAllocationHandle h = r ? r->mapped[(va - r->base) / fb->page] : 0;
    pthread_mutex_unlock(&fb->lock);
    return h;
}

/* ---- the backend ----------------------------------------------------------- */

static CUresult b_granularity(void *ctx, int dev, size_t *bytes)
{
    (void)dev;
    *bytes = ((fake_backend *)ctx)->page;
    return CUDA_SUCCESS;
}

static CUresult b_page_create(void *ctx, int dev, sw_loc loc, size_t size,
                              CUmemGenericAllocationHandle *h)
{
    fake_backend *fb = ctx;
    (void)dev;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    if (fb_injected(fb, "page_create", &r)) {
    } else if (size != fb->page || !fb->nfree_idx) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (loc == SW_LOC_DEVICE && fb->st.live_dev_pages >= fb->dev_limit) {
        fb_violate(fb, "device page created beyond the limit (%llu pages)",
                   (unsigned long long)fb->dev_limit);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        uint32_t idx = fb->free_idx[--fb->nfree_idx];
        fb->kind[idx] = loc == SW_LOC_DEVICE ? 1 : 2;
        if (loc == SW_LOC_DEVICE) {
            if (++fb->st.live_dev_pages > fb->st.max_dev_pages)
                fb->st.max_dev_pages = fb->st.live_dev_pages;
        } else {
            fb->st.live_host_pages++;
        }
        fb->st.creates++;
        *h = (CUmemGenericAllocationHandle)idx + 1;
    }
    void (*fn)(void *) = fb_hook_due(fb, "page_create");
    pthread_mutex_unlock(&fb->lock);
    if (fn)
        fn(fb->on_arg);
    return r;
}

static CUresult b_page_release(void *ctx, CUmemGenericAllocationHandle h)
{
    fake_backend *fb = ctx;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    uint32_t idx = (uint32_t)(h - 1);
    if (h == 0 || idx >= MAX_PAGES || !fb->kind[idx]) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        if (fb->maps_of[idx])
            fb_violate(fb, "page %llu released while mapped", (unsigned long long)h);
        if (fb->kind[idx] == 1)
            fb->st.live_dev_pages--;
        else
            fb->st.live_host_pages--;
        fb->kind[idx] = 0;
        /* Gives the memory back so long suites stay small. */
        if (!fb->no_bytes)
            fallocate(fb->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)idx * (off_t)fb->page,
                  (off_t)fb->page);
        fb->free_idx[fb->nfree_idx++] = idx;
        fb->st.releases++;
    }
    void (*fn)(void *) = fb_hook_due(fb, "page_release");
    pthread_mutex_unlock(&fb->lock);
    if (fn)
        fn(fb->on_arg);
    return r;
}

static CUresult b_va_reserve(void *ctx, int dev, size_t size, size_t align, CUdeviceptr *va)
{
    fake_backend *fb = ctx;
    (void)dev;
    pthread_mutex_lock(&fb->lock);
    CUresult r;
    if (!fb_injected(fb, "va_reserve", &r))
        r = reserve_locked(fb, size, align, va);
    pthread_mutex_unlock(&fb->lock);
    return r;
}

static CUresult b_va_free(void *ctx, CUdeviceptr va, size_t size)
{
    return fake_free_va(ctx, va, size);
}

static CUresult b_map(void *ctx, CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h)
{
    fake_backend *fb = ctx;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    reservation *res = res_of(fb, va, size);
    uint32_t idx = (uint32_t)(h - 1);
    if (fb_injected(fb, "map", &r)) {
    } else if (!res || size != fb->page || va % fb->page) {
        r = CUDA_ERROR_INVALID_VALUE; /* a program's mistake, forwarded */
    } else if (h == 0 || idx >= MAX_PAGES || !fb->kind[idx]) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else if (res->mapped[(va - res->base) / fb->page]) {
        fb_violate(fb, "map over a mapping at %llx", (unsigned long long)va);
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (!fb->no_bytes && mmap((void *)va, size, PROT_NONE, MAP_SHARED | MAP_FIXED, fb->fd,
                                     (off_t)idx * (off_t)fb->page) == MAP_FAILED) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        res->mapped[(va - res->base) / fb->page] = h;
        res->access[(va - res->base) / fb->page] = false;
        fb->maps_of[idx]++;
        fb->st.maps++;
        fb->st.live_mappings++;
    }
    pthread_mutex_unlock(&fb->lock);
    return r;
}

static CUresult b_unmap(void *ctx, CUdeviceptr va, size_t size)
{
    fake_backend *fb = ctx;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    reservation *res = res_of(fb, va, size);
    if (fb_injected(fb, "unmap", &r)) {
    } else if (!res || size != fb->page || !res->mapped[(va - res->base) / fb->page]) {
        fb_violate(fb, "unmap of an unmapped page at %llx", (unsigned long long)va);
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        if (fb_inflight(fb, va, size, NULL, false))
            fb_violate(fb, "unmap of page %llx with work in flight", (unsigned long long)va);
        if (!fb->no_bytes)
            mmap((void *)va, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
                 -1, 0);
        CUmemGenericAllocationHandle h = res->mapped[(va - res->base) / fb->page];
        fb->maps_of[h - 1]--;
        res->mapped[(va - res->base) / fb->page] = 0;
        res->access[(va - res->base) / fb->page] = false;
        fb->st.unmaps++;
        fb->st.live_mappings--;
    }
    pthread_mutex_unlock(&fb->lock);
    return r;
}

static CUresult b_set_access(void *ctx, CUdeviceptr va, size_t size, uint64_t dev_mask)
{
    fake_backend *fb = ctx;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    reservation *res = res_of(fb, va, size);
    if (fb_injected(fb, "set_access", &r)) {
    } else if (!res || size % fb->page || va % fb->page || !dev_mask) {
        fb_violate(fb, "set_access outside a reservation at %llx", (unsigned long long)va);
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        for (size_t p = 0; p < size / fb->page; p++)
            if (!res->mapped[(va - res->base) / fb->page + p]) {
                fb_violate(fb, "set_access on an unmapped page at %llx", (unsigned long long)va);
                r = CUDA_ERROR_INVALID_VALUE;
            }
        if (r == CUDA_SUCCESS) {
            if (!fb->no_bytes)
                mprotect((void *)va, size, PROT_READ | PROT_WRITE);
            for (size_t p = 0; p < size / fb->page; p++)
                res->access[(va - res->base) / fb->page + p] = true;
            fb->st.set_access++;
        }
    }
    pthread_mutex_unlock(&fb->lock);
    return r;
}

/* Whether the device may touch [va, va+size): outside every reservation
 * (host memory), or mapped with access granted. */
static bool reachable(fake_backend *fb, CUdeviceptr va, size_t size)
{
    reservation *res = res_of(fb, va, size);
    if (!res)
        return true;
    for (CUdeviceptr a = va & ~(CUdeviceptr)(fb->page - 1); a < va + size; a += fb->page)
        if (!res->mapped[(a - res->base) / fb->page] || !res->access[(a - res->base) / fb->page])
            return false;
    return true;
}

static CUresult b_copy(void *ctx, int dev, CUdeviceptr dst, CUdeviceptr src, size_t size,
                       CUstream stream)
{
    fake_backend *fb = ctx;
    (void)dev;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fb->lock);
    if (fb_injected(fb, "copy", &r)) {
    } else if (!reachable(fb, dst, size) || !reachable(fb, src, size)) {
        /* The driver's answer (fakecuda's too); on a GPU the copy may
         * instead fault the context: either way no byte moves. */
        fb_violate(fb, "copy through a page without access at %llx",
                   (unsigned long long)(reachable(fb, src, size) ? dst : src));
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        if (!fb->no_bytes)
            memmove((void *)dst, (const void *)src, size);
        stream_state *st = fb_stream_of(fb, stream);
        if (fb->nworks < MAX_WORK) {
            fb->works[fb->nworks++] = (work){stream, ++st->issued, dst, size};
            fb->works[fb->nworks++] = (work){stream, ++st->issued, src, size};
        }
        fb->st.copies++;
    }
    pthread_mutex_unlock(&fb->lock);
    return r;
}

void fb_memory_ops(sw_backend *ops)
{
    ops->granularity = b_granularity;
    ops->page_create = b_page_create;
    ops->page_release = b_page_release;
    ops->va_reserve = b_va_reserve;
    ops->va_free = b_va_free;
    ops->map = b_map;
    ops->unmap = b_unmap;
    ops->set_access = b_set_access;
    ops->copy = b_copy;
}
