/* The device's own figures, from NVML when the machine has it:
 * libnvidia-ml.so.1 is opened at run time, never linked, so that
 * spillway-top builds and runs where there is no NVIDIA driver. */
#ifndef SPILLWAY_TOOLS_TOP_NVML_H
#define SPILLWAY_TOOLS_TOP_NVML_H
#include <stdbool.h>
#include <stdint.h>

#define TOP_NVML_MAX_GPUS 64
#define TOP_NVML_TEXT 96

/* A process NVML lists on a device: its pid as the driver reports it (the
 * host's, in the initial pid namespace) and the device memory it holds
 * there, CUDA context and everything else it allocated included. */
struct top_gpu_proc {
    int pid;
    bool have_used;                 /* NVML_VALUE_NOT_AVAILABLE: unknown */
    uint64_t used;                  /* bytes */
    bool compute, graphics;         /* the lists it was on */
};

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
    /* Its processes, compute and graphics lists merged (one entry per
     * pid), when NVML could list them; else procs_error says why. */
    bool have_procs;
    unsigned nprocs;
    struct top_gpu_proc *procs;     /* owned by the top_nvml */
    unsigned procs_cap;
    char procs_error[64];
};

struct top_nvml_api; /* the resolved functions */

struct top_nvml {
    void *lib;                      /* dlopen handle; NULL when closed */
    struct top_nvml_api *api;
    unsigned count;
    struct top_gpu gpu[TOP_NVML_MAX_GPUS];
    char error[160];                /* why it could not be opened, or "" */
    /* The functions that list processes, as resolved ("" when the driver
     * has none): e.g. "nvmlDeviceGetComputeRunningProcesses_v3 (24-byte
     * entries)". */
    char procs_api[2][96];
};

/* Opens NVML (lib: NULL for libnvidia-ml.so.1) and reads every device's
 * identity and figures (its processes come with top_nvml_sample). 0, or -1 with n->error set (no library, a missing
 * function, no driver); n is then closed and may be opened again. */
int top_nvml_open(struct top_nvml *n, const char *lib);
/* Refreshes the figures (identity stays) and the process lists. A figure
 * NVML refuses is marked absent, not an error. */
void top_nvml_sample(struct top_nvml *n);
void top_nvml_close(struct top_nvml *n);

/* The device with this host index, or NULL (also when n is closed). */
const struct top_gpu *top_nvml_gpu(const struct top_nvml *n, unsigned index);
/* The process pid on g, or NULL (also when g's processes are unknown). */
const struct top_gpu_proc *top_gpu_find_proc(const struct top_gpu *g, int pid);
/* Whether any device's processes could be listed. */
bool top_nvml_have_procs(const struct top_nvml *n);
#endif
