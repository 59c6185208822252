/* The driver functions the shim integration tests call, obtained by each of
 * the three paths programs use (docs/design.md, "How programs reach
 * CUDA"):
 *   SPW_PATH_LINKED  the program's own references (linked with -lcuda)
 *   SPW_PATH_DLSYM   dlopen("libcuda.so.1") + dlsym of versioned names, as XLA
 *   SPW_PATH_GPA     cuGetProcAddress found with dlsym, asked first for
 *                    "cuGetProcAddress" itself, then for base names, as the
 *                    CUDA runtime */
#ifndef SPILLWAY_TEST_DRIVER_API_H
#define SPILLWAY_TEST_DRIVER_API_H
#include <cuda.h>

enum spw_path { SPW_PATH_LINKED, SPW_PATH_DLSYM, SPW_PATH_GPA, SPW_PATHS };

/* F(field, base name, versioned symbol) */
#define SPW_TEST_DRIVER_FUNCS(F)                                              \
    F(init, cuInit, cuInit)                                                   \
    F(device_get_count, cuDeviceGetCount, cuDeviceGetCount)                   \
    F(primary_ctx_retain, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain) \
    F(ctx_set_current, cuCtxSetCurrent, cuCtxSetCurrent)                      \
    F(mem_alloc, cuMemAlloc, cuMemAlloc_v2)                                   \
    F(mem_alloc_pitch, cuMemAllocPitch, cuMemAllocPitch_v2)                   \
    F(mem_alloc_managed, cuMemAllocManaged, cuMemAllocManaged)                \
    F(mem_free, cuMemFree, cuMemFree_v2)                                      \
    F(mem_alloc_async, cuMemAllocAsync, cuMemAllocAsync)                      \
    F(mem_alloc_from_pool_async, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync) \
    F(mem_free_async, cuMemFreeAsync, cuMemFreeAsync)                         \
    F(device_get_default_mem_pool, cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool) \
    F(stream_synchronize, cuStreamSynchronize, cuStreamSynchronize)           \
    F(mem_create, cuMemCreate, cuMemCreate)                                   \
    F(mem_release, cuMemRelease, cuMemRelease)                                \
    F(mem_get_allocation_granularity, cuMemGetAllocationGranularity,          \
      cuMemGetAllocationGranularity)                                          \
    F(mem_host_alloc, cuMemHostAlloc, cuMemHostAlloc)                         \
    F(mem_alloc_host, cuMemAllocHost, cuMemAllocHost_v2)                      \
    F(mem_free_host, cuMemFreeHost, cuMemFreeHost)                            \
    F(mem_host_register, cuMemHostRegister, cuMemHostRegister_v2)             \
    F(mem_host_unregister, cuMemHostUnregister, cuMemHostUnregister)          \
    F(mem_get_info, cuMemGetInfo, cuMemGetInfo_v2)                            \
    F(device_total_mem, cuDeviceTotalMem, cuDeviceTotalMem_v2)

struct spw_driver_api {
#define SPW_TEST_FIELD(field, base, symbol) __typeof__(&symbol) field;
    SPW_TEST_DRIVER_FUNCS(SPW_TEST_FIELD)
#undef SPW_TEST_FIELD
};

/* Fills api by path. Returns NULL, or what failed. */
const char *spw_driver_api_load(enum spw_path path, struct spw_driver_api *api);

/* One function as a program reaching the driver by path (DLSYM or GPA)
 * gets it: dlsym of symbol (the exported name, a _ptsz one included), or
 * cuGetProcAddress of base, with the per-thread default-stream flag when
 * per_thread. NULL when the path does not resolve it, and for LINKED (the
 * caller's own references are that path). */
void *spw_driver_api_find(enum spw_path path, const char *base, const char *symbol, int per_thread);

/* The loaded driver's own symbol, reached behind spillway's back (glibc's
 * dlsym, not spillway's override): what a runtime that resolved the driver
 * before spillway was there calls, or another program's allocation. NULL
 * when the driver is not loaded or lacks it. */
void *spw_driver_unseen(const char *symbol);

/* Whether p is a function of spillway's (libspillway.so's): a handler,
 * not the driver's own. */
int spw_in_spillway(const void *p);

/* cuInit, then device dev's primary context made current on this thread. */
CUresult spw_driver_api_use_device(const struct spw_driver_api *api, int dev);
#endif
