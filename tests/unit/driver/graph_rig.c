/* The driver graph suite's shared helpers (graph_rig.h). */
#include "tests/unit/driver/graph_rig.h"

#include <string.h>

struct test_kernels k;
struct flag f;

void setup(void)
{
    driver_setup();
    kernels_load(&k);
    flag_new(&f);
}

CUDA_KERNEL_NODE_PARAMS kernel_params(CUfunction fn, struct kargs *a, CUdeviceptr p, unsigned v,
                                      unsigned long long n)
{
    a->p = p;
    a->v = v;
    a->n = n;
    a->args[0] = &a->p;
    a->args[1] = &a->v;
    a->args[2] = &a->n;
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = fn;
    kp.gridDimX = 16;
    kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = 128;
    kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = a->args;
    return kp;
}

CUgraph capture_fill_add(CUstream s, CUdeviceptr p, unsigned v)
{
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(launch_u32(k.fill_u32, p, v, 1024, s));
    CU_OK(launch_u32(k.add_u32, p, 1, 1024, s));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    return g;
}
