/* A CUDA program with known copies that stays alive until SIGTERM, so that
 * spillway-top can read its stats segment while it runs (copies_top.sh).
 * On device 0: 3 MiB + 1 host to device (cuMemcpyHtoD), 1 MiB + 5 device
 * to device (cuMemcpyDtoDAsync), 2 MiB + 3 device to host (cuMemcpy,
 * unified addressing), and one copy the driver refuses (not counted);
 * then prints "ready" and waits. */
#include <cuda.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

#define CHECK(call)                                                          \
    do {                                                                     \
        CUresult r_ = (call);                                                \
        if (r_ != CUDA_SUCCESS) {                                            \
            fprintf(stderr, "copy_hold: %s failed: %d\n", #call, (int)r_);   \
            return 1;                                                        \
        }                                                                    \
    } while (0)

#define MiB ((size_t)1 << 20)

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr a, b;
    char *host = calloc(1, 4 * MiB);
    if (!host)
        return 1;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuMemAlloc(&a, 4 * MiB));
    CHECK(cuMemAlloc(&b, 4 * MiB));
    CHECK(cuMemcpyHtoD(a, host, 3 * MiB + 1));
    CHECK(cuMemcpyDtoDAsync(b, a, 1 * MiB + 5, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpy((CUdeviceptr)(uintptr_t)host, b, 2 * MiB + 3));
    CUresult bad = cuMemcpyHtoD((CUdeviceptr)0xdead0000, host, MiB);
    printf("ready refused=%d\n", bad != CUDA_SUCCESS);
    fflush(stdout);
    for (int i = 0; i < 6000 && !stop; i++)
        usleep(20000);
    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    free(host);
    return 0;
}
