/* The processes NVML lists on a device (nvmlDeviceGetComputeRunningProcesses
 * and nvmlDeviceGetGraphicsRunningProcesses, whichever version the driver
 * has), for top_nvml.c. */
#ifndef SPILLWAY_TOOLS_TOP_NVML_PROCS_H
#define SPILLWAY_TOOLS_TOP_NVML_PROCS_H
#include "tools/top_nvml.h"
#include "tools/top_nvml_abi.h"

#include <stddef.h>

enum { TOP_NVML_COMPUTE, TOP_NVML_GRAPHICS, TOP_NVML_LISTS };

struct top_nvml_procs_api {
    nvml_procs_fn fn[TOP_NVML_LISTS]; /* NULL: the driver has none */
    size_t stride[TOP_NVML_LISTS];    /* the element the function writes */
    unsigned char *buf;               /* one call's array: cap elements of the largest kind */
    unsigned cap;
};

/* Finds the newest version of each function lib has and the element it
 * writes; names[k] says which ("" when none). */
void top_nvml_procs_resolve(void *lib, struct top_nvml_procs_api *a, char names[TOP_NVML_LISTS][96]);

/* Lists h's processes into g (have_procs, procs, nprocs; procs_error when
 * the compute list cannot be had). error_string: NVML's, or NULL. */
void top_nvml_procs_sample(struct top_nvml_procs_api *a, nvml_device h, struct top_gpu *g,
                           const char *(*error_string)(nvml_return));

void top_nvml_procs_free(struct top_nvml_procs_api *a);
#endif
