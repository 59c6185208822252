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

static inline int fakecuda_present(void)
{
    return fakecuda_register_kernel != NULL;
}

#ifdef __cplusplus
}
#endif
#endif
