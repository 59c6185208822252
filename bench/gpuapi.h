/* The few GPU calls the benchmarks and the CUDA C acceptance program make,
 * behind one interface with two implementations:
 *   gpuapi_rt.c   the CUDA runtime (cudaMalloc...), linked by nvcc with
 *                 -cudart static or shared: what CUDA C programs do, and how
 *                 the numbers in the README are taken on the GPU host;
 *   gpuapi_drv.c  the driver API (cuMemAlloc...), linked with gcc -lcuda, so
 *                 the same programs run in CI against fakecuda (the real
 *                 runtime cannot run on fakecuda).
 * Every call returns the API's own error code (0 = success). */
#ifndef SPILLWAY_BENCH_GPUAPI_H
#define SPILLWAY_BENCH_GPUAPI_H
#include <stddef.h>
#include <stdint.h>

typedef uint64_t gpu_ptr;

const char *gpu_api_name(void);          /* "runtime" or "driver" */
int gpu_init(void);                      /* device 0, its primary context current */
int gpu_thread_init(void);               /* the same context current on another thread, its own stream */
int gpu_malloc(gpu_ptr *p, size_t n);
int gpu_free(gpu_ptr p);
/* Stream-ordered allocation on the thread's private non-blocking stream, from the
 * device's default pool, which gpu_init sets to keep freed memory (release
 * threshold = max): the warm pool frameworks use, the fair native rival. */
int gpu_malloc_async(gpu_ptr *p, size_t n);
int gpu_free_async(gpu_ptr p);
int gpu_stream_sync(void);
int gpu_device_sync(void);
int gpu_mem_info(size_t *free_bytes, size_t *total_bytes);
/* Byte fill and read-back; on_stream: ordered on the private stream (for
 * memory from gpu_malloc_async), else synchronous. */
int gpu_memset8(gpu_ptr p, unsigned char v, size_t n, int on_stream);
int gpu_copy_dtoh(void *dst, gpu_ptr src, size_t n, int on_stream);
int gpu_is_oom(int err);
const char *gpu_error_string(int err);
#endif
