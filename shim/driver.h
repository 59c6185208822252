/* The real CUDA driver: loaded with dlopen on first use (spillway never
 * links libcuda), its hooked functions in spw_real (hooks.h), and the few
 * unhooked functions the shim itself needs. */
#ifndef SPILLWAY_SHIM_DRIVER_H
#define SPILLWAY_SHIM_DRIVER_H
#include <cuda.h>
#include <stdint.h>

typedef void *(*spw_dlsym_fn)(void *handle, const char *name);

/* glibc's dlsym, not the override. */
spw_dlsym_fn spw_real_dlsym(void);

/* Loads the driver and fills spw_real the first time. Returns 1 once that
 * is done, 0 if the driver cannot be loaded or this thread is loading it
 * right now (the driver's own initialisation reaching spillway). */
int spw_driver_ready(void);

/* Whether addr is code of the driver library (its own dlsym calls must get
 * its own functions). */
int spw_driver_owns(const void *addr);

/* The device of the calling thread's current context. */
CUresult spw_driver_ctx_device(int *dev);

/* The device a stream belongs to; the current context's for the NULL,
 * legacy and per-thread streams, or when the driver cannot tell. */
CUresult spw_driver_stream_device(CUstream stream, int *dev);

/* The device an allocation lives on (for allocations spillway did not see
 * being made). */
CUresult spw_driver_pointer_device(CUdeviceptr ptr, int *dev);

/* The number of devices, or -1 if the driver cannot tell (yet). */
int spw_driver_device_count(void);

/* Total memory of a device as the driver reports it, 0 if unknown. */
uint64_t spw_driver_device_total(int dev);

/* The real function behind a handler, NULL if there is none (no driver, or
 * this driver does not export it). */
#define SPW_REAL(handler) (spw_driver_ready() ? spw_real.handler : NULL)
#endif
