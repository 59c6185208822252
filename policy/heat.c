/* Heat: how recently the program used its memory, at the granularity it
 * names it (an allocation, a slab, a program mapping), and what spill's
 * clock reads page by page.
 *
 * Heat lives in the owner, not in the page: a kernel argument names an
 * allocation, and touching a 40 GiB tensor must cost one store, not one per
 * page. A page's stamp is the newest touch of the live owners overlapping
 * it (several for a mixed page). Owners are recycled, never freed while
 * the policy lives, so sw_touch needs no lock; a touch racing a free only
 * warms a dead owner.
 *
 * The clock is advanced by allocations and by spill's inspections, never by
 * a touch: a touch stores the clock into its owner only when they differ,
 * so a buffer used launch after launch costs one load of a shared line and
 * no write (issue 14: the hot path must not serialize threads). */
#include "policy/internal.h"

uint64_t sw_clock_tick(sw_policy *p)
{
    return atomic_fetch_add_explicit(&p->clock, 1, memory_order_relaxed) + 1;
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
    atomic_store_explicit(&h->touched, sw_clock_tick(p), memory_order_relaxed);
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

static void newest(sw_ext *e, void *arg)
{
    uint64_t t = atomic_load_explicit(&e->heat.touched, memory_order_relaxed);
    if (t > *(uint64_t *)arg)
        *(uint64_t *)arg = t;
}

uint64_t sw_page_stamp(sw_policy *p, CUdeviceptr va)
{
    sw_pte *e = sw_pt_get(&p->pt, va);
    uintptr_t o = e ? atomic_load_explicit(&e->owner, memory_order_acquire) : 0;
    uint64_t t = 0;
    switch (SW_OWN_TAG(o)) {
    case SW_OWN_EXT:
        return atomic_load_explicit(&((sw_ext *)SW_OWN_PTR(o))->heat.touched, memory_order_relaxed);
    case SW_OWN_VMM:
        return atomic_load_explicit(&((sw_vmap *)SW_OWN_PTR(o))->heat.touched,
                                    memory_order_relaxed);
    case SW_OWN_MIXED: {
        sw_device *d = device_of_page(p, va);
        if (d)
            each_in_page(d, SW_OWN_PTR(o), va & ~(CUdeviceptr)(p->page - 1), newest, &t);
        return t;
    }
    default:
        return 0;
    }
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
    case SW_OWN_VMM:
        atomic_fetch_add_explicit(&((sw_vmap *)SW_OWN_PTR(o))->heat.host_pages, (uint32_t)delta,
                                  memory_order_relaxed);
        break;
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

bool sw_touch(sw_policy *p, CUdeviceptr ptr)
{
    if (!p || !p->page)
        return false;
    sw_heat *h = sw_heat_at(p, ptr);
    if (!h)
        return false;
    uint64_t now = atomic_load_explicit(&p->clock, memory_order_relaxed);
    if (atomic_load_explicit(&h->touched, memory_order_relaxed) != now)
        atomic_store_explicit(&h->touched, now, memory_order_relaxed);
    return atomic_load_explicit(&h->host_pages, memory_order_relaxed) != 0;
}
