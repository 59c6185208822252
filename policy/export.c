/* Pool memory made permanent for legacy IPC (cuIpcGetMemHandle, shim/ipc.c):
 * the pages of an exported allocation are mapped in another process too,
 * by their physical handles, so they must never change again. Each page of
 * the allocation's span is brought back to the device if it was spilled
 * (spilling colder pages to make room, as an allocation would), then marked
 * exported under the device lock: sw_page_movable is false for it from then
 * on (no spill, no fill, no set_residency), and once no allocation uses its
 * VA it is unmapped and released rather than pooled or cached (pages.c),
 * so an importer that writes after the exporter's free never reaches
 * another allocation. Neighbours on a shared page stay with it. */
#include <stdlib.h>
#include <time.h>

#include "policy/internal.h"

/* The span [*va, *va + *n pages) of an allocation. */
static void span_of(const sw_device *d, CUdeviceptr base, size_t size, CUdeviceptr *va, size_t *n)
{
    *va = sw_page_base(d, base);
    CUdeviceptr end = base + (size ? size : 1);
    *n = (size_t)((end - *va + d->page - 1) >> d->shift);
}

/* Whether every page of the span is mapped, on the device and either
 * exported already or able to be (mapped once, with access, not kept).
 * *host: how many live on the host (then false). Device lock held. */
static bool span_ready(sw_device *d, CUdeviceptr va, size_t n, size_t *host)
{
    bool ok = true;
    *host = 0;
    for (size_t i = 0; i < n; i++) {
        sw_page *pg = atomic_load_explicit(&sw_pte_at(d, va + ((CUdeviceptr)i << d->shift))->page,
                                           memory_order_relaxed);
        if (!pg)
            return false;
        if (pg->exported)
            continue;
        if (pg->loc != SW_LOC_DEVICE)
            ++*host, ok = false;
        else if (pg->nmaps != 1 || pg->kept || pg->noaccess || pg->lost)
            ok = false;
    }
    return ok;
}

static void span_mark(sw_device *d, CUdeviceptr va, size_t n)
{
    atomic_store(&d->pol->exported_any, true);
    for (size_t i = 0; i < n; i++)
        __atomic_store_n(&atomic_load_explicit(&sw_pte_at(d, va + ((CUdeviceptr)i << d->shift))->page,
                                               memory_order_relaxed)
                              ->exported,
                         1, __ATOMIC_RELAXED);
}

bool sw_export_touches(sw_policy *p, CUdeviceptr ptr, size_t bytes)
{
    CUdeviceptr end = ptr + (bytes ? bytes : 1);
    for (CUdeviceptr va = ptr & ~(CUdeviceptr)(p->page - 1); va < end; va += p->page) {
        sw_pte *e = sw_pt_get(&p->pt, va);
        sw_page *pg = e ? atomic_load_explicit(&e->page, memory_order_acquire) : NULL;
        if (pg && __atomic_load_n(&pg->exported, __ATOMIC_RELAXED))
            return true;
    }
    return false;
}

/* Whether x is still the live allocation it was (same base, size and ID:
 * IDs are never reused, so also the same device, which goes into x->dev). */
static bool still_live(sw_policy *p, sw_export *x)
{
    CUdeviceptr base;
    size_t size;
    sw_ids ids;
    return sw_lookup(p, x->base, &base, &size, &x->dev, &ids) == CUDA_SUCCESS && base == x->base &&
           size == x->size && ids.buffer == x->buffer;
}

/* Under a move (quiesced, locks held): the span's host pages back to the
 * device, cached pages reclaimed and colder pages spilled for room. */
static void bring_back(sw_policy *p, sw_device *d, CUdeviceptr va, size_t n)
{
    CUdeviceptr *vas = malloc(n * sizeof *vas);
    if (!vas)
        return;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        CUdeviceptr at = va + ((CUdeviceptr)i << d->shift);
        sw_page *pg = atomic_load_explicit(&sw_pte_at(d, at)->page, memory_order_relaxed);
        if (pg && pg->loc == SW_LOC_HOST && sw_page_movable(p, d, pg))
            vas[k++] = at;
    }
    size_t room = sw_pool_available(d), got;
    if (room < k && d->ncached)
        (void)sw_pages_reclaim(d, k - room, &got);
    room = sw_pool_available(d);
    CUresult err;
    if (room < k && d->cfg.spill &&
        sw_spill_coldest(d, k - room, va, va + ((CUdeviceptr)n << d->shift), UINT32_MAX, &err))
        sw_figure_add(&d->c, &d->c.spill_events, 1);
    if (k && sw_move_pages(p, d, vas, k, SW_LOC_DEVICE, &err))
        sw_figure_add(&d->c, &d->c.fill_events, 1);
    free(vas);
}

/* Fills x's span from its base and size on d. */
static void span_fill(const sw_device *d, sw_export *x)
{
    CUdeviceptr va;
    span_of(d, x->base, x->size, &va, &x->npages);
    x->page = d->page;
    x->offset = (size_t)(x->base - va);
}

CUresult sw_export_find(sw_policy *p, CUdeviceptr ptr, sw_export *x)
{
    if (!p || !x)
        return CUDA_ERROR_INVALID_VALUE;
    if (!p->page)
        return CUDA_ERROR_NOT_FOUND;
    sw_pte *e = sw_pt_get(&p->pt, ptr);
    uintptr_t o = e ? atomic_load_explicit(&e->owner, memory_order_acquire) : 0;
    if (!o || SW_OWN_TAG(o) == SW_OWN_VMM)
        return CUDA_ERROR_NOT_FOUND; /* free, or the program's own VMM: the driver's */
    sw_ids ids;
    if (sw_lookup(p, ptr, &x->base, &x->size, &x->dev, &ids) != CUDA_SUCCESS)
        return CUDA_ERROR_NOT_FOUND; /* freed: the driver's answer */
    x->buffer = ids.buffer;
    sw_device *d = sw_dev(p, x->dev);
    if (!d)
        return CUDA_ERROR_NOT_FOUND;
    span_fill(d, x);
    return CUDA_SUCCESS;
}

/* Waits before another try at a move the device could not be quiesced
 * for (busy past the deadline, a stream capture under way): 1 ms, then
 * twice as long each time, at most 256 ms; false once about 2 s went by. */
static bool back_off(int attempt)
{
    if (attempt >= 14)
        return false;
    long ms = attempt < 8 ? 1L << attempt : 256;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return true;
}

CUresult sw_export_pin(sw_policy *p, CUdeviceptr ptr, sw_export *x)
{
    CUresult r = sw_export_find(p, ptr, x);
    if (r != CUDA_SUCCESS)
        return r;
    sw_device *d = sw_dev(p, x->dev);
    CUdeviceptr va = x->base - x->offset;
    size_t n = x->npages, host;
    for (int attempt = 0;; attempt++) {
        bool done = false;
        sw_dev_lock(d);
        if (span_ready(d, va, n, &host)) {
            span_mark(d, va, n);
            done = true;
        }
        sw_dev_unlock(d);
        if (done)
            return still_live(p, x) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
        if (!host)
            return CUDA_ERROR_NOT_SUPPORTED; /* aliased or without access: cannot be pinned */
        /* Asked before the move (sw_lookup takes locks the move holds):
         * a free racing its own export is the program's race. */
        if (!still_live(p, x))
            return CUDA_ERROR_INVALID_VALUE;
        sw_quiet q;
        uint64_t by = 0;
        r = sw_move_begin(d, &q, &by);
        if (r == CUDA_ERROR_NOT_READY) {
            if (!back_off(attempt))
                return CUDA_ERROR_NOT_READY;
            continue;
        }
        if (r != CUDA_SUCCESS)
            return r;
        bring_back(p, d, va, n);
        if ((done = span_ready(d, va, n, &host)))
            span_mark(d, va, n);
        sw_move_end(d, &q);
        if (done)
            return CUDA_SUCCESS;
        if (attempt >= 3)
            return CUDA_ERROR_OUT_OF_MEMORY; /* no device page to bring it back to */
    }
}

CUresult sw_export_handles(sw_policy *p, sw_export *x, size_t from, size_t count, sw_export_each each,
                           void *ctx)
{
    if (!p || !x || !each)
        return CUDA_ERROR_INVALID_VALUE;
    if (!p->page || !still_live(p, x))
        return CUDA_ERROR_INVALID_VALUE; /* freed, or another allocation there now */
    sw_device *d = sw_dev(p, x->dev);
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    span_fill(d, x);
    CUdeviceptr va = x->base - x->offset;
    size_t end = from < x->npages && count < x->npages - from ? from + count : x->npages;
    CUresult r = CUDA_SUCCESS;
    sw_dev_lock(d);
    for (size_t i = 0; i < x->npages && r == CUDA_SUCCESS; i++) {
        sw_page *pg = atomic_load_explicit(&sw_pte_at(d, va + ((CUdeviceptr)i << d->shift))->page,
                                           memory_order_relaxed);
        if (!pg || !pg->exported)
            r = CUDA_ERROR_INVALID_VALUE; /* not an exported allocation */
        else if (i >= from && i < end)
            r = each(ctx, i, pg->handle);
    }
    sw_dev_unlock(d);
    /* Freed meanwhile (and its VA given again): what was listed is not it. */
    return r == CUDA_SUCCESS && !still_live(p, x) ? CUDA_ERROR_INVALID_VALUE : r;
}
