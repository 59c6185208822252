/* Kernel and graph launches: cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel and cuGraphLaunch, each also as its _ptsz
 * variant (forwarded to the driver's same variant), CUDA 2.0's cuLaunch,
 * cuLaunchGrid and cuLaunchGridAsync, CUDA 9.0's
 * cuLaunchCooperativeKernelMultiDevice, and the unloads that end a
 * function's life. They are hooked for spill and counted: without a
 * spilling pool each forwards untouched after one atomic load, and counts
 * what the driver accepted.
 *
 * With spill, a launch's arguments are scanned for pool pointers
 * (param_scan.c); each is touched, and the allocations that live on the
 * host are filled back, before the launch enters the work gate (gate_use.h):
 * a page is never remapped while a launch that may use it is being
 * submitted, and the sync that precedes a remap covers it once submitted.
 * A graph launch touches and fills what its nodes use (graphs.c). */
#include "shim/account.h"
#include "shim/gate_use.h"
#include "shim/graph_mem.h"
#include "shim/handler.h"
#include "shim/param_scan.h"
#include "shim/publish.h"

/* Values already filled in this launch: a kernel often gets one buffer
 * several times, and a fill that finds no room would sync each time. */
struct use {
    sw_policy *p;
    unsigned nfilled;
    CUdeviceptr filled[8];
};

static void use_word(void *ctx, CUdeviceptr w)
{
    struct use *u = ctx;
    if (!sw_touch(u->p, w))
        return;
    for (unsigned i = 0; i < u->nfilled && i < 8; i++)
        if (u->filled[i] == w)
            return;
    spw_gate_fill(u->p, w);
    u->filled[u->nfilled++ % 8] = w;
}

static void use_arguments(sw_policy *g, CUfunction f, void **params, void **extra)
{
    struct use u = {.p = g};
    spw_param_scan(f, params, extra, use_word, &u);
    if (u.nfilled)
        spw_gate_filled();
}

/* Where a launch runs: its stream's device, as the gate was told (gated:
 * the bit of that device's gate, runs_on) or asked now. */
struct launch_on {
    CUstream stream;
    uint64_t runs_on; /* the gate of its device (0: not gated) */
};

static int launch_device(const void *arg)
{
    const struct launch_on *l = arg;
    return l->runs_on ? __builtin_ctzll(l->runs_on) : spw_stream_device(l->stream);
}

/* Every launch the driver accepts is counted (stats: launches,
 * graph_launches), spill or not, on the device of its stream: a program
 * whose count falls short of its own reaches the driver past these
 * handlers, where the gate cannot see it (issue 10: the runtime's launches
 * must arrive here). A launch counts on the device its bracket was told it
 * runs on, so with spill on the count checks the gate too. */
static CUresult counted(CUresult r, CUstream stream, uint64_t runs_on, int graph)
{
    if (r != CUDA_SUCCESS)
        return r;
    spw_publish_ensure(); /* a program may launch before it allocates */
    struct launch_on l = {stream, runs_on};
    spw_account_launch(launch_device, &l, graph);
    return r;
}

/* A launch is gated on its stream's device: a kernel runs there even when
 * another device's context is current (gate_use.h). */
#define LAUNCH_HANDLERS(handler, params, f, kparams, extra, stream, args)     \
    SPW_GATED_HANDLERS(handler, params, args,                               \
                       use_arguments(g, (f), (kparams), (extra));           \
                       spw_gate_note_stream(stream);                        \
                       devices = runs_on = spw_gate_stream_devices(stream), counted(r, (stream), runs_on, 0))

LAUNCH_HANDLERS(spw_h_launch_kernel,
                (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                 unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                 unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                 void **extra),
                f, kernelParams, extra, hStream,
                (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                 hStream, kernelParams, extra))

LAUNCH_HANDLERS(spw_h_launch_kernel_ex,
                (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),
                f, kernelParams, extra, config ? config->hStream : NULL, (config, f, kernelParams, extra))

LAUNCH_HANDLERS(spw_h_launch_cooperative_kernel,
                (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                 unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                 unsigned int sharedMemBytes, CUstream hStream, void **kernelParams),
                f, kernelParams, NULL, hStream,
                (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                 hStream, kernelParams))

/* CUDA 9.0's multi-device cooperative launch (deprecated since 11.3, still
 * the driver's): one kernel per device, each with its own arguments on a
 * stream of its device. Each kernel's arguments are scanned like a
 * launch's, the bracket holds the gate of every device named, and each
 * launch the driver accepted counts on its own device. The driver refuses
 * two launches on one device, so a list longer than the machine's devices
 * is left for it to refuse unread (nothing is read past the program's
 * array on a bad count). */
CUresult spw_h_launch_cooperative_kernel_multi_device(CUDA_LAUNCH_PARAMS *launchParamsList,
                                                      unsigned int numDevices, unsigned int flags)
{
    SPW_REAL_OR_RETURN(real, spw_h_launch_cooperative_kernel_multi_device);
    const CUDA_LAUNCH_PARAMS *l = launchParamsList;
    int ndev = spw_driver_device_count();
    unsigned n = l && ndev > 0 && numDevices <= (unsigned)ndev && numDevices <= SW_MAX_DEVICES ? numDevices : 0;
    sw_policy *g = spw_gate();
    uint64_t devices = 0, runs_on[SW_MAX_DEVICES] = {0};
    if (g) {
        for (unsigned i = 0; i < n; i++) {
            use_arguments(g, l[i].function, l[i].kernelParams, NULL);
            spw_gate_note_stream(l[i].hStream);
            devices |= runs_on[i] = spw_gate_stream_devices(l[i].hStream);
        }
        spw_gate_note_context();
    }
    CUresult r;
    SPW_GATED_CALL(g, devices, r, real(launchParamsList, numDevices, flags));
    for (unsigned i = 0; r == CUDA_SUCCESS && i < n; i++)
        counted(r, l[i].hStream, runs_on[i], 0);
    return r;
}

/* SPW_GATED_HANDLER's shape, with the driver's graph memory counted
 * around it (graph_mem.h: a first launch may reserve, and is refused when
 * the limit has no room for it). */
#define GRAPH_LAUNCH_HANDLER(handler, per_thread)                        \
    CUresult handler(CUgraphExec hGraphExec, CUstream hStream)           \
    {                                                                    \
        SPW_REAL_OR_RETURN(real, handler);                               \
        struct spw_graph_mem_ticket t;                                   \
        CUresult r = spw_graph_mem_before(hGraphExec, true, &t);         \
        if (r != CUDA_SUCCESS)                                           \
            return r;                                                    \
        sw_policy *g = spw_gate();                                       \
        uint64_t devices = 0, runs_on = 0;                               \
        if (g) {                                                         \
            runs_on = spw_gate_stream_devices(hStream);                  \
            spw_gate_note_stream(hStream);                               \
            devices = spw_graph_use(g, hGraphExec, runs_on);             \
            spw_gate_note_context();                                     \
        }                                                                \
        SPW_GATED_CALL(g, devices, r, real(hGraphExec, hStream));        \
        spw_graph_mem_after(&t, r, hStream, per_thread);                 \
        return counted(r, hStream, runs_on, 1);                          \
    }
GRAPH_LAUNCH_HANDLER(spw_h_graph_launch, 0)
GRAPH_LAUNCH_HANDLER(spw_h_graph_launch_pt, 1)

/* The arguments of these live in the driver (cuParamSet*): not scanned, so
 * what they use is neither touched nor filled back; still gated, so no
 * page they may use moves while they are submitted. */
SPW_GATED_HANDLER(spw_h_launch, (CUfunction f), (f), devices = runs_on = spw_gate_stream_devices(NULL),
                  counted(r, NULL, runs_on, 0))
SPW_GATED_HANDLER(spw_h_launch_grid, (CUfunction f, int grid_width, int grid_height),
                  (f, grid_width, grid_height), devices = runs_on = spw_gate_stream_devices(NULL),
                  counted(r, NULL, runs_on, 0))
SPW_GATED_HANDLER(spw_h_launch_grid_async, (CUfunction f, int grid_width, int grid_height, CUstream hStream),
                  (f, grid_width, grid_height, hStream),
                  spw_gate_note_stream(hStream); devices = runs_on = spw_gate_stream_devices(hStream),
                  counted(r, hStream, runs_on, 0))

CUresult spw_h_module_unload(CUmodule hmod)
{
    SPW_REAL_OR_RETURN(real, spw_h_module_unload);
    CUresult r;
    SPW_UNLOADING(r, real(hmod));
    return r;
}

CUresult spw_h_library_unload(CUlibrary library)
{
    SPW_REAL_OR_RETURN(real, spw_h_library_unload);
    CUresult r;
    SPW_UNLOADING(r, real(library));
    return r;
}
