/* fakecuda's test-only extension API.
 *
 * Everything here is declared weak, so a test program that uses it links
 * against the real libcuda too: there the functions are NULL and the test
 * takes its real-driver path (for kernels: loading PTX). Check
 * fakecuda_present() before calling anything else here. */
#ifndef SPILLWAY_FAKECUDA_H
#define SPILLWAY_FAKECUDA_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fakecuda_dim3 {
    unsigned x, y, z;
} fakecuda_dim3;

/* A kernel is a C function that runs the whole grid on the stream's worker
 * thread. params is the launch's kernelParams array (or the one fakecuda
 * built from CU_LAUNCH_PARAM_BUFFER_POINTER). */
typedef void (*fakecuda_kernel_fn)(fakecuda_dim3 grid, fakecuda_dim3 block, void **params);

#define FAKECUDA_MAX_PARAMS 32

/* Registers a kernel under name; cuModuleGetFunction finds it in any module
 * and cuFuncGetParamInfo answers from param_sizes (offsets are laid out with
 * natural alignment, as nvcc does). Returns 0, or -1 if the table is full or
 * nparams > FAKECUDA_MAX_PARAMS. Registering a name again replaces it. */
int fakecuda_register_kernel(const char *name, fakecuda_kernel_fn fn,
                             unsigned nparams, const size_t *param_sizes)
    __attribute__((weak));

/* Introspection. */
size_t fakecuda_device_bytes_used(int dev) __attribute__((weak)); /* device memory held, all kinds */
size_t fakecuda_host_bytes_used(void) __attribute__((weak));      /* pinned host memory held */
size_t fakecuda_live_mappings(void) __attribute__((weak));        /* VMM mappings currently mapped */
size_t fakecuda_live_handles(void) __attribute__((weak));         /* cuMemCreate handles not yet freed */
/* Devices (bit d) the last cuMemSetAccess over the VMM mapping at ptr gave
 * access; 0 when ptr is not in a mapping. */
unsigned long long fakecuda_access_devices(unsigned long long ptr) __attribute__((weak));

/* Marks a stream (a CUstream, not the NULL or per-thread stream) as being
 * captured or not: cuStreamIsCapturing then answers ACTIVE. fakecuda has
 * no graphs; this only lets tests see how a library treats capture.
 * Returns 0, or -1 for a bad stream. */
int fakecuda_set_capturing(void *stream, int capturing) __attribute__((weak));

static inline int fakecuda_present(void)
{
    return fakecuda_register_kernel != NULL;
}

#ifdef __cplusplus
}
#endif
#endif
