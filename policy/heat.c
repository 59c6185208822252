/* Heat: how recently and how often the program used its memory, at the
 * granularity it names it (an allocation, a slab, a program mapping, a
 * buffer inside a large mapping: spans.c), and what spill reads page by
 * page.
 *
 * Heat lives in the owner, not in the page: a kernel argument names an
 * allocation, and touching a 40 GiB tensor must cost a store or two, not one
 * per page. A page's stamp and uses are the newest and the most of the live
 * owners overlapping it (several for a mixed page or a mapping with spans).
 * Owners are recycled, never freed while the policy lives, so sw_touch
 * needs no lock; a touch racing a free only warms a dead owner.
 *
 * The clock ticks at allocations, spill's inspections and every
 * SW_TOUCH_TICK touches of a thread (a thread-local count): a touch writes
 * only its owner's line, which the thread that uses a buffer keeps to
 * itself (issue 14: the hot path must not serialize threads). Uses count
 * touches and halve every 2^SW_HALF_LIFE_LOG ticks: what keeps a repeating
 * step's often-used data on the device and its rarely used data on the host
 * (issue 13, spill.c). */
#include "policy/internal.h"

uint64_t sw_clock_tick(sw_policy *p)
{
    return atomic_fetch_add_explicit(&p->clock, 1, memory_order_relaxed) + 1;
}

/* One use at now. Racy by design: two threads using one buffer at once may
 * count one use. A stamp ahead of now (another thread's, made after this
 * one read the clock) stays: set back, the next use would decay the count
 * across a boundary already crossed. */
static void use(sw_heat *h, uint64_t now)
{
    uint64_t t = atomic_load_explicit(&h->touched, memory_order_relaxed);
    uint32_t u = atomic_load_explicit(&h->uses, memory_order_relaxed);
    if (t < now) {
        u = sw_heat_decayed(u, t, now);
        atomic_store_explicit(&h->touched, now, memory_order_relaxed);
    }
    if (u != UINT32_MAX)
        atomic_store_explicit(&h->uses, u + 1, memory_order_relaxed);
}

/* The clock as this thread's touch sees it, ticked every SW_TOUCH_TICK
 * touches of the thread. */
static uint64_t touch_clock(sw_policy *p)
{
    static _Thread_local uint32_t touches;
    if (++touches % SW_TOUCH_TICK == 0)
        return sw_clock_tick(p);
    return atomic_load_explicit(&p->clock, memory_order_relaxed);
}

static sw_device *device_of_page(sw_policy *p, CUdeviceptr va)
{
    sw_pte *e = sw_pt_get(&p->pt, va);
    sw_page *pg = e ? atomic_load_explicit(&e->page, memory_order_acquire) : NULL;
    return pg ? pg->dev : NULL;
}

sw_heat *sw_heat_at(sw_policy *p, CUdeviceptr va)
{
    sw_pte *e = sw_pt_get(&p->pt, va);
    uintptr_t o = e ? atomic_load_explicit(&e->owner, memory_order_acquire) : 0;
    switch (SW_OWN_TAG(o)) {
    case SW_OWN_EXT:
        return &((sw_ext *)SW_OWN_PTR(o))->heat;
    case SW_OWN_MIXED: {
        sw_device *d = device_of_page(p, va);
        sw_ext *x = d ? sw_mixed_find(d, SW_OWN_PTR(o), va) : NULL;
        return x ? &x->heat : NULL;
    }
    case SW_OWN_VMM:
        return &((sw_vmap *)SW_OWN_PTR(o))->heat;
    default:
        return NULL;
    }
}

void sw_heat_init(sw_policy *p, sw_heat *h, CUdeviceptr va, size_t n)
{
    uint32_t host = 0;
    CUdeviceptr first = va >> p->shift, last = (va + n - 1) >> p->shift;
    for (CUdeviceptr pn = first; pn <= last; pn++) {
        sw_pte *e = sw_pt_get(&p->pt, pn << p->shift);
        sw_page *pg = e ? atomic_load_explicit(&e->page, memory_order_relaxed) : NULL;
        host += pg && pg->loc == SW_LOC_HOST;
    }
    atomic_store(&h->host_pages, host);
    atomic_store_explicit(&h->uses, 0, memory_order_relaxed);
    uint64_t now = sw_clock_tick(p);
    atomic_store_explicit(&h->born, now, memory_order_relaxed);
    atomic_store_explicit(&h->touched, now, memory_order_relaxed);
}

/* Calls fn for each used extent overlapping the mixed page at va (device
 * lock held: the extents do not change under the walk). */
static void each_in_page(sw_device *d, sw_mixed *m, CUdeviceptr page,
                         void (*fn)(sw_ext *e, void *arg), void *arg)
{
    sw_ext *e = atomic_load_explicit(&m->at[0], memory_order_relaxed);
    for (; e && sw_ext_base(e) < page + d->page; e = atomic_load(&e->next))
        if (sw_ext_used(e))
            fn(e, arg);
}

/* The newest stamp and the highest rate over a page's owners. */
typedef struct page_heat {
    uint64_t now, stamp;
    uint32_t rate;
} page_heat;

static void merge(page_heat *ph, const sw_heat *h)
{
    uint64_t t = atomic_load_explicit(&h->touched, memory_order_relaxed);
    uint32_t r = sw_heat_rate(h, ph->now);
    ph->stamp = t > ph->stamp ? t : ph->stamp;
    ph->rate = r > ph->rate ? r : ph->rate;
}

static void merge_ext(sw_ext *e, void *arg)
{
    merge(arg, &e->heat);
}

void sw_page_heat(sw_policy *p, CUdeviceptr va, uint64_t *stamp, uint32_t *rate)
{
    sw_pte *e = sw_pt_get(&p->pt, va);
    uintptr_t o = e ? atomic_load_explicit(&e->owner, memory_order_acquire) : 0;
    CUdeviceptr page = va & ~(CUdeviceptr)(p->page - 1);
    page_heat ph = {atomic_load_explicit(&p->clock, memory_order_relaxed), 0, 0};
    switch (SW_OWN_TAG(o)) {
    case SW_OWN_EXT:
        merge(&ph, &((sw_ext *)SW_OWN_PTR(o))->heat);
        break;
    case SW_OWN_VMM: {
        sw_vmap *m = SW_OWN_PTR(o);
        sw_spans *s = atomic_load_explicit(&m->spans, memory_order_acquire);
        if (s)
            sw_spans_page(s, page, p->page, ph.now, &ph.stamp, &ph.rate);
        else
            merge(&ph, &m->heat);
        break;
    }
    case SW_OWN_MIXED: {
        sw_device *d = device_of_page(p, va);
        if (d)
            each_in_page(d, SW_OWN_PTR(o), page, merge_ext, &ph);
        break;
    }
    default:
        break;
    }
    *stamp = ph.stamp;
    *rate = ph.rate;
}

uint64_t sw_page_stamp(sw_policy *p, CUdeviceptr va)
{
    uint64_t t;
    uint32_t u;
    sw_page_heat(p, va, &t, &u);
    return t;
}

static void count_host(sw_ext *e, void *arg)
{
    atomic_fetch_add_explicit(&e->heat.host_pages, (uint32_t)(intptr_t)arg, memory_order_relaxed);
}

void sw_heat_host_pages(sw_policy *p, CUdeviceptr va, int delta)
{
    sw_pte *e = sw_pt_get(&p->pt, va);
    uintptr_t o = e ? atomic_load_explicit(&e->owner, memory_order_acquire) : 0;
    void *arg = (void *)(intptr_t)delta; /* added as uint32_t: -1 wraps to a decrement */
    switch (SW_OWN_TAG(o)) {
    case SW_OWN_EXT:
        count_host(SW_OWN_PTR(o), arg);
        break;
    case SW_OWN_VMM: {
        sw_vmap *m = SW_OWN_PTR(o);
        sw_spans *s = atomic_load_explicit(&m->spans, memory_order_acquire);
        atomic_fetch_add_explicit(&m->heat.host_pages, (uint32_t)delta, memory_order_relaxed);
        if (s)
            sw_spans_host(s, va & ~(CUdeviceptr)(p->page - 1), delta > 0);
        break;
    }
    case SW_OWN_MIXED: {
        sw_device *d = device_of_page(p, va);
        if (d)
            each_in_page(d, SW_OWN_PTR(o), va & ~(CUdeviceptr)(p->page - 1), count_host, arg);
        break;
    }
    default:
        break;
    }
}

bool sw_range_on_host(sw_policy *p, CUdeviceptr lo, CUdeviceptr hi)
{
    for (CUdeviceptr a = lo & ~(CUdeviceptr)(p->page - 1); a < hi; a += p->page) {
        sw_pte *e = sw_pt_get(&p->pt, a);
        sw_page *pg = e ? atomic_load_explicit(&e->page, memory_order_relaxed) : NULL;
        if (pg && pg->loc == SW_LOC_HOST)
            return true;
    }
    return false;
}

/* A touch of a mapping with spans: the buffer's span is used; host pages
 * are looked for in that span only, and only when the mapping has any. */
static bool touch_span(sw_policy *p, sw_vmap *m, sw_spans *s, CUdeviceptr ptr, uint64_t now)
{
    CUdeviceptr end;
    use(sw_spans_touch(p, s, ptr, &end), now);
    if (!atomic_load_explicit(&m->heat.host_pages, memory_order_relaxed))
        return false;
    return sw_spans_host_in(s, ptr, end);
}

bool sw_touch(sw_policy *p, CUdeviceptr ptr)
{
    return sw_touch_range(p, ptr, 0);
}

bool sw_touch_range(sw_policy *p, CUdeviceptr ptr, size_t bytes)
{
    if (!p || !p->page)
        return false;
    sw_pte *e = sw_pt_get(&p->pt, ptr);
    uintptr_t o = e ? atomic_load_explicit(&e->owner, memory_order_acquire) : 0;
    if (SW_OWN_TAG(o) == SW_OWN_VMM) {
        sw_vmap *m = SW_OWN_PTR(o);
        sw_spans *s = atomic_load_explicit(&m->spans, memory_order_acquire);
        if (s && bytes && ptr + bytes > ptr)
            sw_spans_mark(p, s, ptr + bytes);
        if (s)
            return touch_span(p, m, s, ptr, touch_clock(p));
    }
    sw_heat *h = sw_heat_at(p, ptr);
    if (!h)
        return false;
    use(h, touch_clock(p));
    return atomic_load_explicit(&h->host_pages, memory_order_relaxed) != 0;
}
