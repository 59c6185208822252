/* spillway_get_counters and spillway_get_pool_counters (spillway.h): the
 * counters, for tests and programs that want to see them without the stats
 * segment; spillway_graph_conditionals, the conditional nodes recorded;
 * spillway_tensor_maps, the TMA descriptors recorded. */
#include "shim/account.h"
#include "shim/graph_cond.h"
#include "shim/pool_setup.h"
#include "shim/tensor_maps.h"

#include <string.h>

_Static_assert((int)SPILLWAY_PT_COUNT == (int)SW_PT_NREASONS, "pass-through reasons");
#define SPW_PT_SAME(r, name, stat) \
    _Static_assert((int)SPILLWAY_PT_##r == (int)SW_PT_##r, "pass-through reason " name);
SW_PASSTHROUGH_REASONS(SPW_PT_SAME)
#undef SPW_PT_SAME

__attribute__((visibility("default"))) int spillway_get_counters(int device,
                                                                 struct spillway_counters *out)
{
    if (!out)
        return -1;
    return spw_account_read(device, out);
}

__attribute__((visibility("default"))) int
spillway_get_pool_counters(int device, struct spillway_pool_counters *out)
{
    if (!out)
        return -1;
    memset(out, 0, sizeof *out);
    sw_counters c;
    sw_policy *p = spw_pool_policy();
    if (!p || sw_get_counters(p, device, &c) != CUDA_SUCCESS)
        return -1;
    out->pool_bytes = c.pool_bytes;
    out->in_use_bytes = c.in_use_bytes;
    out->pending_bytes = c.pending_bytes;
    out->syncs = c.syncs;
    for (int i = 0; i < SPILLWAY_PT_COUNT; i++) {
        out->passthrough_count[i] = c.passthrough_count[i];
        out->passthrough_bytes[i] = c.passthrough_bytes[i];
    }
    out->spilled_bytes = c.host_in_use_bytes;
    out->host_bytes = c.host_bytes;
    out->spill_bytes = c.spill_bytes;
    out->spill_events = c.spill_events;
    out->fill_bytes = c.fill_bytes;
    out->fill_events = c.fill_events;
    out->va_bytes = c.va_bytes;
    out->streams = c.streams;
    out->events = c.events;
    return 0;
}

__attribute__((visibility("default"))) size_t spillway_graph_conditionals(void)
{
    return spw_graph_cond_count();
}

__attribute__((visibility("default"))) size_t spillway_tensor_maps(void)
{
    return spw_tensor_maps_recorded();
}
