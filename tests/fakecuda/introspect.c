/* fakecuda: what tests may ask the emulation directly (fakecuda.h). */
#include "tests/fakecuda/internal.h"

FC_EXPORT size_t fakecuda_device_bytes_used(int dev)
{
    if (dev < 0 || dev >= fc_ndevices)
        return 0;
    pthread_mutex_lock(&fc_lock);
    size_t n = fc_devices[dev].used;
    pthread_mutex_unlock(&fc_lock);
    return n;
}

FC_EXPORT size_t fakecuda_device_bytes_peak(int dev, int reset)
{
    if (dev < 0 || dev >= fc_ndevices)
        return 0;
    pthread_mutex_lock(&fc_lock);
    size_t n = fc_devices[dev].used_high;
    if (reset)
        fc_devices[dev].used_high = fc_devices[dev].used;
    pthread_mutex_unlock(&fc_lock);
    return n;
}

FC_EXPORT size_t fakecuda_host_bytes_used(void)
{
    pthread_mutex_lock(&fc_lock);
    size_t n = fc_host_used;
    pthread_mutex_unlock(&fc_lock);
    return n;
}

FC_EXPORT size_t fakecuda_live_mappings(void)
{
    pthread_mutex_lock(&fc_lock);
    size_t n = fc_region_count(FC_VMM);
    pthread_mutex_unlock(&fc_lock);
    return n;
}

FC_EXPORT size_t fakecuda_live_handles(void)
{
    pthread_mutex_lock(&fc_lock);
    size_t n = fc_vmm_live_handles();
    pthread_mutex_unlock(&fc_lock);
    return n;
}

FC_EXPORT unsigned long long fakecuda_access_devices(unsigned long long ptr)
{
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)ptr);
    unsigned long long devs = reg && reg->kind == FC_VMM ? reg->access_devs : 0;
    pthread_mutex_unlock(&fc_lock);
    return devs;
}

/* Where the page mapped at ptr lives (the driver answers the same through
 * cuMemRetainAllocationHandle and the handle's properties; spillway hooks
 * those for its own pages, so tests ask here). */
FC_EXPORT int fakecuda_mapped_location(unsigned long long ptr)
{
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)ptr);
    int where = -3;
    if (reg && reg->kind == FC_VMM && reg->handle) {
        const CUmemLocation *l = &reg->handle->prop.location;
        where = l->type == CU_MEM_LOCATION_TYPE_DEVICE ? l->id : -1;
    } else if (reg) {
        where = -2;
    }
    pthread_mutex_unlock(&fc_lock);
    return where;
}

FC_EXPORT size_t fakecuda_live_reservations(void)
{
    return fc_vmm_live_reservations(NULL);
}

FC_EXPORT size_t fakecuda_reserved_bytes(void)
{
    size_t bytes;
    fc_vmm_live_reservations(&bytes);
    return bytes;
}

FC_EXPORT int fakecuda_reserved_at(unsigned long long addr)
{
    return fc_vmm_reserved_at((uintptr_t)addr);
}

FC_EXPORT size_t fakecuda_live_allocations(void)
{
    pthread_mutex_lock(&fc_lock);
    size_t n = fc_region_count(FC_DEVICE) + fc_region_count(FC_ASYNC) + fc_region_count(FC_MANAGED);
    pthread_mutex_unlock(&fc_lock);
    return n;
}

FC_EXPORT size_t fakecuda_live_host_allocations(void)
{
    pthread_mutex_lock(&fc_lock);
    size_t n = fc_region_count(FC_HOST) + fc_region_count(FC_REGISTERED);
    pthread_mutex_unlock(&fc_lock);
    return n;
}

FC_EXPORT size_t fakecuda_live_events(void)
{
    return fc_live_events();
}

FC_EXPORT size_t fakecuda_live_streams(void)
{
    return fc_live_user_streams();
}

FC_EXPORT int fakecuda_ctx_depth(void)
{
    return fc_ctx_depth();
}

FC_EXPORT void *fakecuda_ctx_current(void)
{
    return fc_ctx_top();
}

FC_EXPORT unsigned long long fakecuda_stale_context_uses(void)
{
    return fc_ctx_stale_uses();
}
