/* Owner of the gate switch, and the touch-then-fill step every gated
 * submission takes before its bracket. */
#include "shim/gate.h"

#include "shim/log.h"
#include "shim/pool.h"

sw_policy *_Atomic spw_gate_policy;

void spw_gate_enable(sw_policy *p)
{
    atomic_store_explicit(&spw_gate_policy, p, memory_order_release);
}

void spw_gate_fill(sw_policy *p, CUdeviceptr ptr)
{
    /* A fill that finds no free device page leaves the data on the host:
     * still correct (kernels reach it over the bus), only slower. */
    CUresult r = sw_fill(p, ptr);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_FOUND)
        spw_debug("filling the allocation at %#llx back failed (error %d): it stays in host memory",
                  (unsigned long long)ptr, (int)r);
}

int spw_gate_use(sw_policy *p, CUdeviceptr ptr)
{
    if (!sw_touch(p, ptr))
        return 0;
    spw_gate_fill(p, ptr);
    return 1;
}

void spw_gate_filled(void)
{
    for (int dev = 0; dev < SW_MAX_DEVICES; dev++)
        if (spw_pool_spills(dev))
            spw_pool_publish(dev);
}
