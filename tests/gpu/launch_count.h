/* The launch-count row of the GPU check (issue 10: runtime launches reach
 * the gate). One program, two back ends behind this interface:
 *   launch_count_rt.cu   the CUDA runtime: `<<<>>>` and cudaLaunchKernel,
 *                        compiled and linked by nvcc, -cudart static and
 *                        -cudart shared (the rows that matter on a GPU);
 *   launch_count_drv.c   its driver-API twin (cuLaunchKernel, _ptsz,
 *                        cuLaunchKernelEx; the conformance suites' kernels:
 *                        PTX on a GPU, C functions on fakecuda), linked with
 *                        gcc: what the fakecuda self-test runs.
 * launch_count.c holds main: the plan of launches, the stats segment read
 * before and after, the judging and the RESULT line, shared by both.
 *
 * Every launch adds 1 to every word of one buffer of `words` 32-bit words
 * (zeroed by lc_setup). Every call returns the API's own error code (0 =
 * success); lc_error_name names it. */
#ifndef SPILLWAY_TESTS_GPU_LAUNCH_COUNT_H
#define SPILLWAY_TESTS_GPU_LAUNCH_COUNT_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum lc_path {
    LC_LEGACY,     /* the legacy default stream: <<<g, b>>>, cuLaunchKernel(..., NULL, ...) */
    LC_STREAM,     /* a created (blocking) stream: <<<g, b, 0, s>>>, cuLaunchKernel(..., s, ...) */
    LC_PER_THREAD, /* the per-thread default stream: <<<..., cudaStreamPerThread>>>, cuLaunchKernel_ptsz */
    LC_EXPLICIT,   /* cudaLaunchKernel on the legacy stream; the twin: cuLaunchKernelEx */
    LC_BYPASS,     /* the twin only (SWGPU_LAUNCH_BYPASS=1, the self-test's negative control): the
                    * driver's own cuLaunchKernel, found past spillway's hooks */
    LC_NPATHS
};

const char *lc_api(void); /* "runtime" or "driver" */
/* Device 0 current, the buffer allocated (cudaMalloc / cuMemAlloc: spillway's
 * pool) and zeroed, a blocking stream created, the kernel ready; synchronized. */
int lc_setup(size_t words);
int lc_launch(enum lc_path path);
/* Stream capture of one launch on the created stream, ended and
 * instantiated: the capture itself is one accepted launch call. */
int lc_graph_capture(void);
int lc_graph_launch(void); /* the instantiated graph on the created stream */
int lc_sync(void);         /* the whole device */
int lc_read(unsigned *host, size_t words);
const char *lc_error_name(int err);

#ifdef __cplusplus
}
#endif
#endif
