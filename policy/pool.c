/* The page pool of one device: physical pages (one driver handle each) that
 * are not mapped anywhere, device pages up to the limit less what memory
 * outside the pool takes (sw_pool_cap, lend.c) and never beyond, pinned
 * host pages up to the host limit. Everything runs under the device lock.
 * Pages are kept once created (giving them back to the driver would only
 * make the next allocation pay cuMemCreate again), except the ones memory
 * outside the pool needs (sw_pool_give_back). */
#include <stdlib.h>
#include <time.h>

#include "policy/internal.h"

int sw_pool_init(sw_device *d, size_t limit_pages, size_t host_limit_pages)
{
    sw_pool *pl = &d->pool;
    pl->limit_pages = limit_pages;
    pl->free = calloc(limit_pages ? limit_pages : 1, sizeof *pl->free);
    pl->host_limit_pages = host_limit_pages;
    return pl->free ? 0 : -1;
}

/* One thread's share of a preallocation: pages [from, to) of the free stack. */
typedef struct prefill_part {
    sw_device *d;
    size_t from, to, done;
    CUresult r;
} prefill_part;

static void *prefill_run(void *arg)
{
    prefill_part *pp = arg;
    const sw_backend *be = &pp->d->pol->be;
    if (be->thread_start)
        be->thread_start(be->ctx);
    pp->r = CUDA_SUCCESS;
    for (size_t i = pp->from; i < pp->to; i++) {
        pp->r = be->page_create(be->ctx, pp->d->id, SW_LOC_DEVICE, pp->d->page, &pp->d->pool.free[i]);
        if (pp->r != CUDA_SUCCESS)
            break;
        pp->done++;
    }
    return NULL;
}

#define PREFILL_THREADS 8
#define PREFILL_MIN_SHARE 256 /* pages below which a thread is not worth it */

/* Preallocation: every device page up to the limit, created now, by up to
 * eight threads: one driver call per page is 40,000 calls for 80 GB
 * (issue 14 asks for well under a second). Runs before the device is
 * ready, so nothing else touches the pool meanwhile. */
CUresult sw_pool_prefill(sw_device *d)
{
    sw_pool *pl = &d->pool;
    size_t cap = sw_pool_cap(d);
    size_t want = cap > pl->created ? cap - pl->created : 0, base = pl->nfree;
    if (!want)
        return CUDA_SUCCESS;
    size_t nt = want / PREFILL_MIN_SHARE;
    nt = nt < 1 ? 1 : nt > PREFILL_THREADS ? PREFILL_THREADS : nt;
    prefill_part part[PREFILL_THREADS];
    pthread_t th[PREFILL_THREADS];
    bool started[PREFILL_THREADS] = {false};
    for (size_t t = 0; t < nt; t++)
        part[t] = (prefill_part){d, base + want * t / nt, base + want * (t + 1) / nt, 0, CUDA_SUCCESS};
    for (size_t t = 1; t < nt; t++)
        started[t] = pthread_create(&th[t], NULL, prefill_run, &part[t]) == 0;
    prefill_run(&part[0]);
    for (size_t t = 1; t < nt; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            prefill_run(&part[t]); /* no thread to spare: this one does it */
    }
    /* Each share created a prefix of its slots: close the gaps. */
    CUresult first = CUDA_SUCCESS;
    size_t n = base;
    for (size_t t = 0; t < nt; t++) {
        for (size_t i = 0; i < part[t].done; i++)
            pl->free[n++] = pl->free[part[t].from + i];
        if (first == CUDA_SUCCESS)
            first = part[t].r;
    }
    pl->created += n - base;
    pl->nfree = n;
    sw_figure_add(&d->c, &d->c.pool_bytes, (uint64_t)(n - base) << d->shift);
    return first;
}

size_t sw_pool_cap(const sw_device *d)
{
    uint64_t lent = atomic_load_explicit(&d->pol->lent[d->id], memory_order_relaxed);
    uint64_t pages = (lent + d->page - 1) >> d->shift;
    return pages >= d->pool.limit_pages ? 0 : d->pool.limit_pages - (size_t)pages;
}

size_t sw_pool_available(const sw_device *d)
{
    size_t cap = sw_pool_cap(d);
    return d->pool.nfree + (cap > d->pool.created ? cap - d->pool.created : 0);
}

/* A slot for one more host page within the host limit: counted as created
 * now (so that concurrent creators never pass the limit), with room on the
 * free stack for it. OUT_OF_MEMORY with *why at the limit. */
CUresult sw_pool_host_slot(sw_device *d, sw_oom_reason *why)
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
    pl->host_created++;
    return CUDA_SUCCESS;
}

/* The slot's page came (h) or did not (r != SUCCESS: the slot goes back). */
void sw_pool_host_settle(sw_device *d, CUresult r)
{
    if (r == CUDA_SUCCESS)
        sw_figure_add(&d->c, &d->c.host_pool_bytes, d->page);
    else
        d->pool.host_created--;
}

void sw_pool_host_hand_over(sw_device *d, CUresult r, CUmemGenericAllocationHandle h)
{
    if (r == CUDA_SUCCESS)
        atomic_store_explicit(&d->pool.host_arrived, h, memory_order_release);
    atomic_store_explicit(&d->pool.host_pending, false, memory_order_release);
}

/* At the host limit with the reserve's last page still pinning (its slot
 * counted, the page not yet in the pool): that page, waited for until the
 * device's deadline (pinning takes about a millisecond), rather than a
 * refusal of memory that is on its way. Device lock held: the reserve
 * hands the page over without it. */
static bool host_in_flight(sw_device *d, CUmemGenericAllocationHandle *h)
{
    uint64_t deadline = 0;
    for (;;) {
        bool pending = atomic_load_explicit(&d->pool.host_pending, memory_order_acquire);
        if ((*h = atomic_exchange_explicit(&d->pool.host_arrived, 0, memory_order_acquire)))
            return true;
        if (!pending)
            return false;
        if (!deadline)
            deadline = sw_deadline(d);
        else if (sw_now_ns() > deadline)
            return false;
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

/* A new pinned host page now, on the caller's path (400-800 us on an H100:
 * counted, the reserve exists so that this does not happen). */
static CUresult create_host(sw_device *d, CUmemGenericAllocationHandle *h, sw_oom_reason *why)
{
    CUresult r = sw_pool_host_slot(d, why);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && *why == SW_OOM_HOST_LIMIT && host_in_flight(d, h)) {
        sw_figure_add(&d->c, &d->c.host_creates_waited, 1);
        return CUDA_SUCCESS;
    }
    if (r != CUDA_SUCCESS)
        return r;
    r = d->pol->be.page_create(d->pol->be.ctx, d->id, SW_LOC_HOST, d->page, h);
    sw_pool_host_settle(d, r);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        *why = SW_OOM_DRIVER;
    if (r == CUDA_SUCCESS)
        sw_figure_add(&d->c, &d->c.host_creates_waited, 1);
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
        if (pl->created >= sw_pool_cap(d)) {
            *why = SW_OOM_LIMIT;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        CUresult r = d->pol->be.page_create(d->pol->be.ctx, d->id, loc, d->page, h);
        if (r == CUDA_SUCCESS) {
            pl->created++;
            sw_figure_add(&d->c, &d->c.pool_bytes, d->page);
        } else if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            *why = SW_OOM_DRIVER;
        }
        return r;
    }
    CUresult r = CUDA_SUCCESS;
    if (pl->host_nfree)
        *h = pl->host_free[--pl->host_nfree];
    else
        r = create_host(d, h, why);
    if (pl->host_nfree < d->host_target / 2)
        sw_reserve_wake(d);
    return r;
}

CUresult sw_pool_grow_host(sw_device *d)
{
    CUmemGenericAllocationHandle h;
    sw_oom_reason why;
    CUresult r = sw_pool_host_slot(d, &why);
    if (r != CUDA_SUCCESS)
        return r;
    r = d->pol->be.page_create(d->pol->be.ctx, d->id, SW_LOC_HOST, d->page, &h);
    sw_pool_host_settle(d, r);
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

/* A refused release is tried once more: the page would leak for good. */
static CUresult release2(sw_device *d, CUmemGenericAllocationHandle h)
{
    const sw_backend *be = &d->pol->be;
    CUresult r = be->page_release(be->ctx, h);
    return r == CUDA_SUCCESS ? r : be->page_release(be->ctx, h);
}

void sw_pool_forget(sw_device *d, CUmemGenericAllocationHandle h)
{
    (void)release2(d, h); /* refused twice: the driver keeps it, the pool does not */
    d->pool.created--;
    sw_figure_sub(&d->c, &d->c.pool_bytes, d->page);
}

CUresult sw_pool_give_back(sw_device *d)
{
    sw_pool *pl = &d->pool;
    if (!pl->nfree)
        return CUDA_ERROR_NOT_FOUND;
    CUresult r = release2(d, pl->free[pl->nfree - 1]);
    if (r != CUDA_SUCCESS)
        return r;
    pl->nfree--;
    pl->created--;
    sw_figure_sub(&d->c, &d->c.pool_bytes, d->page);
    return CUDA_SUCCESS;
}

/* Releases every free page; pages still mapped are the caller's to unmap
 * first. Returns the first error. */
CUresult sw_pool_destroy(sw_device *d)
{
    sw_pool *pl = &d->pool;
    CUresult first = CUDA_SUCCESS;
    for (size_t i = 0; i < pl->nfree; i++) {
        CUresult r = release2(d, pl->free[i]);
        if (first == CUDA_SUCCESS)
            first = r;
    }
    for (size_t i = 0; i < pl->host_nfree; i++) {
        CUresult r = release2(d, pl->host_free[i]);
        if (first == CUDA_SUCCESS)
            first = r;
    }
    free(pl->free);
    free(pl->host_free);
    pl->free = pl->host_free = NULL;
    pl->nfree = pl->host_nfree = 0;
    sw_figure_set(&d->c, &d->c.pool_bytes, 0);
    sw_figure_set(&d->c, &d->c.host_pool_bytes, 0);
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
