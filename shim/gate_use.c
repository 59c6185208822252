/* The work gate as the handlers use it (policy/gate.c is the gate): the
 * touch-then-fill step every gated submission takes before its bracket. */
#include "shim/arenas.h"
#include "shim/gate_use.h"

#include "shim/copy_side.h"
#include "shim/driver.h"
#include "shim/log.h"
#include "shim/pool_setup.h"

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
    return spw_gate_use_range(p, ptr, 0);
}

int spw_gate_use_range(sw_policy *p, CUdeviceptr ptr, size_t bytes)
{
    if (!sw_touch_range(p, ptr, bytes))
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

/* Two thread-local reads in the driver. */
int spw_current_device(void)
{
    CUcontext c = NULL;
    CUdevice d;
    if (!spw_drv.cuCtxGetCurrent || spw_drv.cuCtxGetCurrent(&c) != CUDA_SUCCESS || !c ||
        !spw_drv.cuCtxGetDevice || spw_drv.cuCtxGetDevice(&d) != CUDA_SUCCESS || d < 0 ||
        d >= SW_MAX_DEVICES)
        return -1;
    return (int)d;
}

int spw_stream_device(CUstream s)
{
    CUdevice d;
    if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD && spw_drv.cuStreamGetDevice &&
        spw_drv.cuStreamGetDevice(s, &d) == CUDA_SUCCESS && d >= 0 && d < SW_MAX_DEVICES)
        return (int)d;
    return spw_current_device();
}

uint64_t spw_gate_stream_devices(CUstream s)
{
    int d = spw_stream_device(s);
    return d >= 0 ? 1ull << d : 0;
}

/* The pool device of side p, noting that work on device `on` names it. */
static int side_device(CUdeviceptr p, int on)
{
    int d = p ? spw_arena_device(p) : -1;
    if (d < 0 || d >= SW_MAX_DEVICES)
        return -1;
    if (on >= 0 && on != d)
        sw_note_work(spw_pool_policy(), d, on);
    return d;
}

uint64_t spw_gate_devices(CUdeviceptr a, CUdeviceptr b)
{
    uint64_t m = 0;
    int on = spw_current_device(), d; /* no context: only the sides */
    if (on >= 0)
        m |= 1ull << on;
    if ((d = side_device(a, on)) >= 0)
        m |= 1ull << d;
    if ((d = side_device(b, on)) >= 0)
        m |= 1ull << d;
    return m;
}

uint64_t spw_gate_use_sides(sw_policy *g, const spw_sides *s)
{
    int filled = 0;
    uint64_t devs = spw_gate_devices(0, 0);
    for (unsigned i = 0; i < s->n; i++) {
        filled |= spw_gate_use(g, s->p[i]);
        devs |= spw_gate_devices(s->p[i], 0);
    }
    if (filled)
        spw_gate_filled();
    return devs;
}
