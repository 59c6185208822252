/* The device's own figures, from NVML when the machine has it:
 * libnvidia-ml.so.1 is opened at run time, never linked, so that
 * spillway-top builds and runs where there is no NVIDIA driver. */
#ifndef SPILLWAY_TOOLS_TOP_NVML_H
#define SPILLWAY_TOOLS_TOP_NVML_H
#include <stdbool.h>
#include <stdint.h>

#define TOP_NVML_MAX_GPUS 64
#define TOP_NVML_TEXT 96

/* One GPU as NVML numbers it (its index on the host, in PCI bus order, as
 * nvidia-smi and DCGM's `gpu` label number it). Each figure has a flag:
 * NVML answers "not supported" for some of them on some boards. */
struct top_gpu {
    unsigned index;
    char uuid[TOP_NVML_TEXT];       /* "GPU-xxxxxxxx-...", or "" */
    char name[TOP_NVML_TEXT];       /* "NVIDIA H100 80GB HBM3", or "" */
    bool have_util, have_mem, have_temp, have_power, have_power_limit;
    unsigned util_gpu;              /* percent of time a kernel ran */
    unsigned util_mem;              /* percent of time memory was read or written */
    uint64_t mem_used, mem_total;   /* bytes, every process on the device */
    unsigned temp_c;
    unsigned power_mw, power_limit_mw;
};

struct top_nvml_api; /* the resolved functions */

struct top_nvml {
    void *lib;                      /* dlopen handle; NULL when closed */
    struct top_nvml_api *api;
    unsigned count;
    struct top_gpu gpu[TOP_NVML_MAX_GPUS];
    char error[160];                /* why it could not be opened, or "" */
};

/* Opens NVML (lib: NULL for libnvidia-ml.so.1) and reads every device's
 * identity and figures. 0, or -1 with n->error set (no library, a missing
 * function, no driver); n is then closed and may be opened again. */
int top_nvml_open(struct top_nvml *n, const char *lib);
/* Refreshes the figures (identity stays). A figure NVML refuses is marked
 * absent, not an error. */
void top_nvml_sample(struct top_nvml *n);
void top_nvml_close(struct top_nvml *n);

/* The device with this host index, or NULL (also when n is closed). */
const struct top_gpu *top_nvml_gpu(const struct top_nvml *n, unsigned index);
#endif
