/* The work gate as the handlers use it (policy/gate.c is the gate): the
 * touch-then-fill step every gated submission takes before its bracket. */
#include "shim/arenas.h"
#include "shim/gate_use.h"

#include "shim/backend.h"
#include "shim/contexts.h"
#include "shim/copy_side.h"
#include "shim/driver.h"
#include "shim/log.h"
#include "shim/pool_setup.h"

#include <string.h>

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

/* The devices of the streams this thread last worked on: asking the
 * driver was most of a launch's cost (a torchrun process sees every device
 * and launches on a few streams of one). Valid while the generation
 * (contexts.h) stays: it changes around every destroy of a stream, as the
 * destroyed handle may come back as another device's stream. */
#define KNOWN_STREAMS 4
static _Thread_local struct {
    CUstream stream;
    int dev;
} known[KNOWN_STREAMS];
static _Thread_local uint64_t known_gen;
static _Thread_local unsigned known_next;

int spw_stream_device(CUstream s)
{
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return spw_current_device();
    /* Read before the driver is asked: a destroy meanwhile makes what it
     * answers stale at once. */
    uint64_t gen = spw_contexts_generation();
    if (gen == known_gen) {
        for (int i = 0; i < KNOWN_STREAMS; i++)
            if (known[i].stream == s)
                return known[i].dev;
    } else {
        memset(known, 0, sizeof known);
        known_gen = gen;
    }
    CUdevice d;
    if (spw_driver_stream_own_device(s, &d) != CUDA_SUCCESS || d < 0 || d >= SW_MAX_DEVICES)
        return spw_current_device();
    unsigned at = known_next++ % KNOWN_STREAMS;
    known[at].stream = s;
    known[at].dev = (int)d;
    return (int)d;
}

uint64_t spw_gate_stream_devices(CUstream s)
{
    int d = spw_stream_device(s);
    return d >= 0 ? 1ull << d : 0;
}

/* What this thread already noted (contexts.h): the context it last
 * submitted from, and the stream it last launched on, each valid while the
 * generation stays. */
static _Thread_local CUcontext noted_ctx;
static _Thread_local uint64_t noted_ctx_gen;
static _Thread_local CUstream noted_stream;
static _Thread_local uint64_t noted_stream_gen;

/* The context whose sync covers work on s (NULL: the current context's
 * streams). For a green context's stream, CUDA 12.5's cuStreamGetCtx_v2
 * answers its device's primary context, whose sync covers every green
 * context (and which is never kept: a green context may be current on one
 * thread only, so spillway must not make it current on its own). */
static CUresult work_context(CUstream s, CUcontext *c)
{
    CUgreenCtx green;
    if (spw_drv.cuStreamGetCtx_v2)
        return spw_drv.cuStreamGetCtx_v2(s, c, &green);
    if (spw_drv.cuStreamGetCtx)
        return spw_drv.cuStreamGetCtx(s, c);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* Keeps the context of work on s when it is one the program made. */
static void note(CUstream s)
{
    CUcontext c = NULL;
    int dev;
    if (work_context(s, &c) == CUDA_SUCCESS && c &&
        spw_backend_ctx_device(c, &dev) == CUDA_SUCCESS && dev >= 0 && dev < SW_MAX_DEVICES &&
        c != spw_backend_primary_known(dev))
        spw_contexts_add(c, dev);
}

void spw_gate_note_context(void)
{
    CUcontext c = NULL;
    if (!spw_drv.cuCtxGetCurrent || spw_drv.cuCtxGetCurrent(&c) != CUDA_SUCCESS || !c)
        return;
    uint64_t gen = spw_contexts_generation();
    if (c == noted_ctx && gen == noted_ctx_gen)
        return;
    note(NULL);
    noted_ctx = c;
    noted_ctx_gen = gen;
}

void spw_gate_note_stream(CUstream s)
{
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return; /* the current context's: noted by every gated handler */
    uint64_t gen = spw_contexts_generation();
    if (s == noted_stream && gen == noted_stream_gen)
        return;
    note(s);
    noted_stream = s;
    noted_stream_gen = gen;
}

/* The pool device of side p, noting that work on device `on` names it. */
static int side_device(CUdeviceptr p, int on)
{
    int d = p ? spw_side_pool_device(p) : -1;
    if (d < 0 || d >= SW_MAX_DEVICES)
        return -1;
    if (on >= 0 && on != d)
        sw_note_work(spw_pool_policy(), d, on);
    return d;
}

uint64_t spw_gate_side_on(CUdeviceptr p, int on, int also)
{
    int d = side_device(p, on);
    if (d < 0)
        return 0;
    sw_note_work(spw_pool_policy(), d, also);
    return 1ull << d;
}

/* Work running on device `on` (-1: none known, only the sides) naming a
 * and b. */
static uint64_t devices_on(int on, CUdeviceptr a, CUdeviceptr b)
{
    uint64_t m = 0;
    int d;
    if (on >= 0)
        m |= 1ull << on;
    if ((d = side_device(a, on)) >= 0)
        m |= 1ull << d;
    if ((d = side_device(b, on)) >= 0)
        m |= 1ull << d;
    return m;
}

uint64_t spw_gate_devices(CUdeviceptr a, CUdeviceptr b)
{
    return devices_on(spw_current_device(), a, b);
}

uint64_t spw_gate_devices_on(CUstream s, CUdeviceptr a, CUdeviceptr b)
{
    spw_gate_note_stream(s);
    return devices_on(spw_stream_device(s), a, b);
}

uint64_t spw_gate_use_sides(sw_policy *g, const spw_sides *s, CUstream stream)
{
    int filled = 0;
    /* The device the work runs on: the stream's, asked once. */
    spw_gate_note_stream(stream);
    int on = spw_stream_device(stream);
    uint64_t devs = devices_on(on, 0, 0);
    for (unsigned i = 0; i < s->n; i++) {
        filled |= spw_gate_use_range(g, s->p[i], s->bytes[i]);
        devs |= devices_on(on, s->p[i], 0);
    }
    for (uint64_t m = s->more; m; m &= m - 1)
        sw_note_work(g, __builtin_ctzll(m), on); /* nothing for on's own or -1 */
    devs |= s->more;
    if (filled)
        spw_gate_filled();
    return devs;
}
