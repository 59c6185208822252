/* NVML's ABI as spillway-top uses it, declared here rather than taken from
 * nvml.h: the GPU host's CUDA headers may lack it, and the library is
 * opened at run time (top_nvml.c). Private to top_nvml*.c. */
#ifndef SPILLWAY_TOOLS_TOP_NVML_ABI_H
#define SPILLWAY_TOOLS_TOP_NVML_ABI_H

typedef int nvml_return;                    /* nvmlReturn_t */
typedef struct nvml_device_st *nvml_device; /* nvmlDevice_t */

#define NVML_OK 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_TEMPERATURE_GPU 0
/* usedGpuMemory when the driver does not say (no permission, a MIG-enabled
 * board's whole-device list, Windows' WDDM): ULLONG_MAX. */
#define NVML_VALUE_NOT_AVAILABLE 0xffffffffffffffffull

struct nvml_utilization { unsigned int gpu, memory; };
struct nvml_memory { unsigned long long total, free, used; };

/* nvmlDeviceGet{Compute,Graphics}RunningProcesses[_v2|_v3](device,
 * &infoCount, infos): the element of infos differs by version, but pid and
 * usedGpuMemory keep their place (offsets 0 and 8) in every one:
 *   v1  {pid, usedGpuMemory}                                      16 bytes
 *   v2  {pid, usedGpuMemory, gpuInstanceId, computeInstanceId}    24 bytes
 *   v3  v2 + usedGpuCcProtectedMemory                             32 bytes
 * The _v3 functions took v2's 24-byte element from R510, then v3's from
 * R535 until nvmlDeviceGetRunningProcessDetailList took that one over
 * (top_nvml_procs.c). */
typedef nvml_return (*nvml_procs_fn)(nvml_device, unsigned int *, void *);
#define NVML_PROC_PID_OFFSET 0
#define NVML_PROC_USED_OFFSET 8
#define NVML_PROC_V1_SIZE 16
#define NVML_PROC_V2_SIZE 24
#define NVML_PROC_V3_SIZE 32
#endif
