/* The figures the shim publishes: each device's counters read lock-free
 * (sw_get_spill_stats, sw_pool_bytes: after every allocation) or as one
 * snapshot (sw_get_counters), and the pass-through counts. Only reads and
 * counts: nothing here changes the pool. */
#include <string.h>

#include "policy/internal.h"

static const char *const pt_names[SW_PT_NREASONS] = {
#define SW_PT_NAME(reason, name, stat) name,
    SW_PASSTHROUGH_REASONS(SW_PT_NAME)
#undef SW_PT_NAME
};

const char *sw_passthrough_reason_name(sw_passthrough_reason r)
{
    return (unsigned)r < SW_PT_NREASONS ? pt_names[r] : "unknown";
}

void sw_count_passthrough(sw_policy *p, int dev, sw_passthrough_reason r, size_t bytes)
{
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES || (unsigned)r >= SW_PT_NREASONS)
        return;
    /* Counted even on devices spillway does not manage (reason "disabled"). */
    sw_dev_counters *c = &p->dev[dev].c;
    atomic_fetch_add_explicit(&c->pt_count[r], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->pt_bytes[r], bytes, memory_order_relaxed);
}

uint64_t sw_pool_bytes(const sw_policy *p, int dev)
{
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES)
        return 0;
    return atomic_load_explicit(&p->dev[dev].c.pool_bytes, memory_order_relaxed);
}

void sw_get_spill_stats(const sw_policy *p, int dev, sw_spill_stats *out)
{
    if (!out)
        return;
    *out = (sw_spill_stats){0};
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES)
        return;
    const sw_dev_counters *c = &p->dev[dev].c;
#define SW_SPILL_READ(name, counter, stat) \
    out->name = atomic_load_explicit(&c->counter, memory_order_relaxed);
    SW_SPILL_FIGURES(SW_SPILL_READ)
#undef SW_SPILL_READ
}

uint64_t sw_figures_gen(const sw_policy *p, int dev)
{
    if (!p || dev < 0 || dev >= SW_MAX_DEVICES)
        return 0;
    return atomic_load_explicit(&p->dev[dev].c.figures_gen, memory_order_acquire);
}

CUresult sw_get_counters(sw_policy *p, int dev, sw_counters *out)
{
    if (!p || !out || dev < 0 || dev >= SW_MAX_DEVICES)
        return CUDA_ERROR_INVALID_VALUE;
    memset(out, 0, sizeof *out);
    sw_device *d = &p->dev[dev];
    sw_dev_counters *c = &d->c;
    for (int i = 0; i < SW_PT_NREASONS; i++) {
        out->passthrough_count[i] = atomic_load(&c->pt_count[i]);
        out->passthrough_bytes[i] = atomic_load(&c->pt_bytes[i]);
    }
    if (!sw_dev(p, dev))
        return CUDA_SUCCESS;
    out->limit_bytes = d->cfg.limit;
    sw_spill_stats f;
    sw_get_spill_stats(p, dev, &f);
#define SW_SPILL_COPY(name, counter, stat) out->name = f.name;
    SW_SPILL_FIGURES(SW_SPILL_COPY)
#undef SW_SPILL_COPY
    sw_dev_lock(d);
    out->pool_bytes = (uint64_t)d->pool.created << d->shift;
    out->host_bytes = (uint64_t)d->pool.host_created << d->shift; /* exact, under the lock */
    sw_dev_unlock(d);
    out->pending_bytes = sw_freeq_pending(d, NULL);
    out->mapped_bytes = atomic_load(&c->mapped);
    out->in_use_bytes = atomic_load(&c->in_use);
    out->peak_in_use_bytes = atomic_load(&c->peak_in_use);
    out->backing_bytes = atomic_load(&c->backing);
    out->peak_backing_bytes = atomic_load(&c->peak_backing);
    out->noaccess_pages = atomic_load(&d->nnoacc);
    out->allocs = sw_lanes_sum(&c->allocs);
    out->frees = sw_lanes_sum(&c->frees);
    out->ooms = atomic_load(&c->ooms);
    out->maps = atomic_load(&c->maps);
    out->unmaps = atomic_load(&c->unmaps);
    out->reclaims = atomic_load(&c->reclaims);
    out->va_bytes = atomic_load(&c->va_bytes);
    out->streams = atomic_load(&c->streams);
    out->events = atomic_load(&c->events);
    for (int i = 0; i < SW_OOM_NREASONS; i++)
        out->ooms_by[i] = atomic_load(&c->oom[i]);
    return CUDA_SUCCESS;
}
