/* Which of the host's GPUs a process's CUDA device is. The stats segment
 * numbers devices as CUDA numbers them inside the process, after
 * CUDA_VISIBLE_DEVICES (and, in a container, after the runtime's
 * NVIDIA_VISIBLE_DEVICES) renumbered them; NVML, nvidia-smi and DCGM's
 * `gpu` label number them on the host, in PCI bus order. */
#ifndef SPILLWAY_TOOLS_TOP_GPUMAP_H
#define SPILLWAY_TOOLS_TOP_GPUMAP_H
#include "tools/top_nvml.h"

#include <stdbool.h>

#define TOP_GPU_ENV_LEN 256

/* What the process's environment says about its devices. */
struct top_gpu_env {
    bool known;                        /* the environment could be read */
    bool in_container;                 /* NVIDIA_VISIBLE_DEVICES took effect */
    bool has_cuda_visible, has_nvidia_visible;
    char cuda_visible[TOP_GPU_ENV_LEN];   /* CUDA_VISIBLE_DEVICES */
    char nvidia_visible[TOP_GPU_ENV_LEN]; /* NVIDIA_VISIBLE_DEVICES */
    char device_order[32];                /* CUDA_DEVICE_ORDER */
};

/* The host index of the process's CUDA device `ordinal`, or -1 when it
 * cannot be told: the environment is unknown, an entry is a MIG instance
 * or a UUID without NVML to look it up, the devices differ and CUDA orders
 * them fastest first, or the ordinal is past the visible devices. gpus:
 * NVML's devices in host order (n 0 without NVML). */
int top_gpu_host_index(const struct top_gpu_env *e, unsigned ordinal, const struct top_gpu *gpus, unsigned n);
#endif
