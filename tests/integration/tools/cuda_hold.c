/* A CUDA program with known allocations that stays alive until SIGTERM, so
 * that the stats segment the shim publishes can be read while it runs.
 *   cuda_hold CHUNK_BYTES
 * Allocates three CHUNK_BYTES blocks on device 0, frees one, then asks for
 * 1 TiB (which a limit refuses: one OOM), prints "ready", waits. */
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

#define CHECK(call)                                                             \
    do {                                                                        \
        CUresult r_ = (call);                                                   \
        if (r_ != CUDA_SUCCESS) {                                               \
            fprintf(stderr, "cuda_hold: %s failed: %d\n", #call, (int)r_);      \
            return 1;                                                           \
        }                                                                       \
    } while (0)

int main(int argc, char **argv)
{
    size_t chunk = argc > 1 ? strtoull(argv[1], NULL, 0) : (8u << 20);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p[3], huge;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    for (int i = 0; i < 3; i++)
        CHECK(cuMemAlloc(&p[i], chunk));
    CHECK(cuMemFree(p[1]));
    CUresult big = cuMemAlloc(&huge, (size_t)1 << 40);
    printf("ready oom=%d\n", big == CUDA_ERROR_OUT_OF_MEMORY);
    fflush(stdout);
    for (int i = 0; i < 6000 && !stop; i++)
        usleep(20000);
    CHECK(cuMemFree(p[0]));
    CHECK(cuMemFree(p[2]));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
