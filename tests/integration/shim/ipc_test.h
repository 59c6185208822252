/* What the legacy IPC test programs share (test_ipc.c, test_ipc_peer.c):
 * failing loudly, the cuIpc* entry points (spillway's, looked up at run
 * time: fakecuda has none), a clock, and a handle written as hex for a
 * child's environment. */
#ifndef SPILLWAY_TESTS_IPC_TEST_H
#define SPILLWAY_TESTS_IPC_TEST_H
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MiB ((size_t)1 << 20)
#define PAGE (2 * MiB)

typedef CUresult (*get_fn)(CUipcMemHandle *, CUdeviceptr);
typedef CUresult (*open_fn)(CUdeviceptr *, CUipcMemHandle, unsigned int);
typedef CUresult (*close_fn)(CUdeviceptr);
static get_fn ipc_get;
static open_fn ipc_open;
static close_fn ipc_close;
/* Which side failed, in FAIL's message. */
static const char *who = "exporter";

#define FAIL(...)                                                                  \
    do {                                                                           \
        fprintf(stderr, "FAIL (%s) %s:%d: ", who, __FILE__, __LINE__);             \
        fprintf(stderr, __VA_ARGS__);                                              \
        fprintf(stderr, "\n");                                                     \
        exit(1);                                                                   \
    } while (0)
#define CU_OK(call)                                                                \
    do {                                                                           \
        CUresult r_ = (call);                                                      \
        if (r_ != CUDA_SUCCESS)                                                    \
            FAIL("%s: error %d", #call, (int)r_);                                  \
    } while (0)
#define CHECK(cond)                                                                \
    do {                                                                           \
        if (!(cond))                                                               \
            FAIL("%s", #cond);                                                     \
    } while (0)

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Device 0's primary context current, and the cuIpc* entry points. */
static inline void setup(void)
{
    CU_OK(cuInit(0));
    CUcontext ctx;
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU_OK(cuCtxSetCurrent(ctx));
    ipc_get = (get_fn)dlsym(RTLD_DEFAULT, "cuIpcGetMemHandle");
    ipc_open = (open_fn)dlsym(RTLD_DEFAULT, "cuIpcOpenMemHandle_v2");
    ipc_close = (close_fn)dlsym(RTLD_DEFAULT, "cuIpcCloseMemHandle");
}

static inline void hex(const CUipcMemHandle *h, char *out)
{
    for (int i = 0; i < CU_IPC_HANDLE_SIZE; i++)
        sprintf(out + 2 * i, "%02x", (unsigned char)h->reserved[i]);
}

static inline void unhex(const char *s, CUipcMemHandle *h)
{
    for (int i = 0; i < CU_IPC_HANDLE_SIZE; i++) {
        unsigned v = 0;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            FAIL("not a handle's hex: %s", s);
        h->reserved[i] = (char)v;
    }
}
#endif
