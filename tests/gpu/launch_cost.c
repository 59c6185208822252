/* What spill costs a program that never spills: the time to submit one
 * kernel launch whose argument is a pool pointer (with spill on, each launch
 * scans its arguments, touches the allocation and passes the work gate).
 * Run natively, under spillway with SPILLWAY_SPILL=0 and with spill on; the
 * GPU check reports the three side by side.
 *
 *   launch_cost [--launches 200000]
 *
 * One line: RESULT launches=.. us_per_launch=.. err=NAME */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fakecuda/fakecuda.h"
#include "tests/unit/driver/kernels_ptx.h"

void fakecuda_kernels_register(void); /* tests/unit/driver/kernels.c */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long launches = 200000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--launches") && i + 1 < argc && (launches = atol(argv[i + 1])) > 0)
            i++;
        else {
            fprintf(stderr, "usage: launch_cost [--launches N]\n");
            return 2;
        }
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fill;
    CUdeviceptr p = 0;
    CUresult r;
    if (fakecuda_present())
        fakecuda_kernels_register();
    if ((r = cuInit(0)) || (r = cuDeviceGet(&dev, 0)) || (r = cuDevicePrimaryCtxRetain(&ctx, dev)) ||
        (r = cuCtxSetCurrent(ctx)) || (r = cuModuleLoadData(&mod, kernels_ptx)) ||
        (r = cuModuleGetFunction(&fill, mod, "fill_u32")) || (r = cuMemAlloc(&p, 1 << 20))) {
        const char *s = "?";
        cuGetErrorName(r, &s);
        printf("RESULT launches=0 us_per_launch=0 err=%s\n", s);
        return 1;
    }
    unsigned v = 7;
    unsigned long long n = 1; /* one word: the cost is the submission */
    void *args[] = {&p, &v, &n};
    /* Warm: the first launch loads the module and fills spillway's cache. */
    for (int i = 0; i < 100 && r == CUDA_SUCCESS; i++)
        r = cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    /* In batches of 500 with an untimed sync between: the launch queue
     * never fills up and blocks the submitting thread (that would time the
     * GPU, not the submission). */
    double t = 0;
    for (long done = 0; done < launches && r == CUDA_SUCCESS;) {
        double t0 = now();
        for (int i = 0; i < 500 && done < launches && r == CUDA_SUCCESS; i++, done++)
            r = cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
        t += now() - t0;
        if (r == CUDA_SUCCESS)
            r = cuCtxSynchronize();
    }
    const char *s = "?";
    cuGetErrorName(r, &s);
    printf("RESULT launches=%ld us_per_launch=%.3f err=%s\n", launches, t / (double)launches * 1e6, s);
    cuMemFree(p);
    return r == CUDA_SUCCESS ? 0 : 1;
}
