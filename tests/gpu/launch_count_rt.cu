// launch_count.h over the CUDA runtime, as CUDA C programs launch: `<<<>>>`
// on the legacy default stream (nvcc's default), on a created blocking
// stream and on cudaStreamPerThread, and cudaLaunchKernel; a graph by
// stream capture (cudaStreamBeginCapture, cudaStreamEndCapture,
// cudaGraphInstantiate, cudaGraphLaunch). Compiled by nvcc, linked by nvcc
// with -cudart static and -cudart shared (tests/gpu/module.mk): the
// runtime reaches the driver through cuGetProcAddress, so whether its
// launches come through spillway's handlers is what the row checks.
#include "tests/gpu/launch_count.h"

#include <cuda_runtime.h>

// Adds 1 to each of the n words (grid-stride: any grid covers them).
__global__ void lc_increment(unsigned *p, unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] += 1;
}

static unsigned *buf;
static unsigned long long nwords;
static unsigned grid;
static cudaStream_t stream;
static cudaGraph_t graph;
static cudaGraphExec_t exec;

// A `<<<>>>` launch reports through the runtime's last-error slot.
static int launched(void) { return (int)cudaGetLastError(); }

extern "C" const char *lc_api(void) { return "runtime"; }

extern "C" int lc_setup(size_t words)
{
    nwords = words;
    grid = words / 256 + 1 < 1024 ? (unsigned)(words / 256 + 1) : 1024;
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&buf, words * sizeof(unsigned));
    if (e == cudaSuccess)
        e = cudaMemset(buf, 0, words * sizeof(unsigned));
    if (e == cudaSuccess)
        e = cudaStreamCreate(&stream); // blocking: ordered with the legacy stream
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    return (int)e;
}

extern "C" int lc_launch(enum lc_path path)
{
    switch (path) {
    case LC_LEGACY:
        lc_increment<<<grid, 256>>>(buf, nwords);
        return launched();
    case LC_STREAM:
        lc_increment<<<grid, 256, 0, stream>>>(buf, nwords);
        return launched();
    case LC_PER_THREAD:
        lc_increment<<<grid, 256, 0, cudaStreamPerThread>>>(buf, nwords);
        return launched();
    case LC_EXPLICIT: {
        void *args[] = {&buf, &nwords};
        return (int)cudaLaunchKernel(reinterpret_cast<const void *>(lc_increment), dim3(grid), dim3(256),
                                     args, 0, 0);
    }
    default: // LC_BYPASS is the driver twin's negative control
        return (int)cudaErrorNotSupported;
    }
}

extern "C" int lc_graph_capture(void)
{
    cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    if (e != cudaSuccess)
        return (int)e;
    lc_increment<<<grid, 256, 0, stream>>>(buf, nwords);
    int l = launched();
    e = cudaStreamEndCapture(stream, &graph); // ended whatever the launch said
    if (l != 0)
        return l;
    if (e == cudaSuccess)
        e = cudaGraphInstantiate(&exec, graph, 0);
    return (int)e;
}

extern "C" int lc_graph_launch(void) { return (int)cudaGraphLaunch(exec, stream); }
extern "C" int lc_sync(void) { return (int)cudaDeviceSynchronize(); }

extern "C" int lc_read(unsigned *host, size_t words)
{
    return (int)cudaMemcpy(host, buf, words * sizeof *host, cudaMemcpyDeviceToHost);
}

extern "C" const char *lc_error_name(int err) { return cudaGetErrorName((cudaError_t)err); }
