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
/* The same with each parameter's alignment (aligns[i], a power of two; 0:
 * natural), for parameters aligned past 8 bytes: a CUtensorMap
 * (alignas(64) in CUDA 12's cuda.h, alignas(128) in 13's) or a struct
 * holding one sits at an offset of its alignment, as nvcc places it.
 * -1 also for an alignment that is not a power of two. */
int fakecuda_register_kernel_aligned(const char *name, fakecuda_kernel_fn fn, unsigned nparams,
                                     const size_t *param_sizes, const size_t *aligns)
    __attribute__((weak));

/* The global address a TMA descriptor made by fakecuda's
 * cuTensorMapEncode* (or changed by cuTensorMapReplaceAddress) names, for
 * a fake kernel that reads through it (map: the parameter's bytes, any
 * alignment); 0 for bytes fakecuda did not make. fakecuda's descriptors
 * hold the address in no 8-byte word of theirs, as a driver's opaque
 * descriptor need not. */
unsigned long long fakecuda_tensor_map_address(const void *map) __attribute__((weak));

/* Introspection. */
size_t fakecuda_device_bytes_used(int dev) __attribute__((weak)); /* device memory held, all kinds */
/* The most device memory dev has held since the last reset (reset: start
 * again from what it holds now); returns the figure before any reset. */
size_t fakecuda_device_bytes_peak(int dev, int reset) __attribute__((weak));
size_t fakecuda_host_bytes_used(void) __attribute__((weak));      /* pinned host memory held */
size_t fakecuda_live_mappings(void) __attribute__((weak));        /* VMM mappings currently mapped */
size_t fakecuda_live_handles(void) __attribute__((weak));         /* cuMemCreate handles not yet freed */
/* Devices (bit d) the last cuMemSetAccess over the VMM mapping at ptr gave
 * access; 0 when ptr is not in a mapping. */
unsigned long long fakecuda_access_devices(unsigned long long ptr) __attribute__((weak));
/* Where the VMM page mapped at ptr lives: its device ordinal, -1 for host
 * memory (HOST or HOST_NUMA), -2 for memory that is not a VMM mapping, -3
 * for an address nothing is mapped at. */
int fakecuda_mapped_location(unsigned long long ptr) __attribute__((weak));
/* The importer of a dma_buf from cuMemGetHandleForAddressRange (a NIC's
 * DMA): n bytes at offset into (write) or out of buf, in the physical
 * memory the handle was taken for. 0, or -1 for an fd no such call gave or
 * a range past it. */
int fakecuda_dmabuf_access(int fd, size_t offset, void *buf, size_t n, int write) __attribute__((weak));
size_t fakecuda_live_reservations(void) __attribute__((weak)); /* cuMemAddressReserve ranges not freed */
size_t fakecuda_reserved_bytes(void) __attribute__((weak));     /* their bytes */
int fakecuda_reserved_at(unsigned long long addr) __attribute__((weak)); /* 1: addr is reserved */
size_t fakecuda_live_allocations(void) __attribute__((weak));   /* cuMemAlloc/Pitch/Managed/Async, not freed */
size_t fakecuda_live_host_allocations(void) __attribute__((weak)); /* pinned or registered host ranges */
size_t fakecuda_live_events(void) __attribute__((weak));        /* events not destroyed */
size_t fakecuda_live_streams(void) __attribute__((weak));       /* cuStreamCreate streams not destroyed */
int fakecuda_stream_live(void *stream) __attribute__((weak));   /* 1: that one is not destroyed */
/* Graphs not destroyed (made by cuGraphCreate, cuGraphClone, or a capture
 * under way or ended well), and executable graphs not destroyed. */
size_t fakecuda_live_graphs(void) __attribute__((weak));
size_t fakecuda_live_graph_execs(void) __attribute__((weak));
/* cudaGraphSetConditional(handle, value), for a fake kernel (the device
 * code that sets a conditional node's value): 0, or -1 for a handle
 * cuGraphConditionalHandleCreate did not make. */
int fakecuda_graph_set_conditional(unsigned long long handle, unsigned value) __attribute__((weak));
/* The calling thread's context stack: its depth and its top (the current
 * context), read without a driver call, so without counting one. */
int fakecuda_ctx_depth(void) __attribute__((weak));
void *fakecuda_ctx_current(void) __attribute__((weak));
/* Calls that named a context after cuCtxDestroy (refused with
 * INVALID_CONTEXT; on a GPU the handle may be another context's by then). */
unsigned long long fakecuda_stale_context_uses(void) __attribute__((weak));

/* The unmap hazard check (FAKECUDA_CHECK_UNMAP=1 at load, or this call):
 * copies and sets remember the memory they use until the host has seen
 * them complete (a wait returned, or a query answered "complete", after
 * they completed); cuMemUnmap of such memory prints a line starting with
 * "fakecuda: HAZARD" and aborts, as the GPU would fault the work and kill
 * the context, whether or not the stream's worker happened to be done.
 * Kernels are not tracked. Returns the previous setting. */
int fakecuda_check_unmap(int on) __attribute__((weak));

/* Fault injection (see tests/fakecuda/fault.c for FAKECUDA_FAIL,
 * FAKECUDA_FAIL_RATE, FAKECUDA_FAIL_SEED and FAKECUDA_FAIL_TRACE, the same
 * specifications set at load). A function is named by its base name
 * (cuMemAlloc; cuMemAlloc_v2 and _ptsz/_ptds names mean the same one).
 *
 * Replaces the whole configuration: fail as FAKECUDA_FAIL, rate as
 * FAKECUDA_FAIL_RATE (either may be NULL), call numbers counting from this
 * call on. Both NULL: no more faults. Returns 0, or -1 for a bad
 * specification (the previous one stays). */
int fakecuda_fault_config(const char *fail, const char *rate, unsigned long long seed)
    __attribute__((weak));
/* Calls of fn since load (every variant), and faults injected into it (fn
 * NULL: into all); -1 for a name fakecuda cannot make fail. */
long long fakecuda_calls(const char *fn) __attribute__((weak));
long long fakecuda_faults(const char *fn) __attribute__((weak));
/* The i-th function that can be made to fail, NULL past the last. */
const char *fakecuda_fault_fn(unsigned i) __attribute__((weak));
/* The last fault injected, or the i-th (from 0; the last 64 are kept): its
 * error (0 for none), function and call number since load. */
int fakecuda_fault_last(const char **fn, unsigned long long *call) __attribute__((weak));
int fakecuda_fault_nth(unsigned long long i, const char **fn, unsigned long long *call)
    __attribute__((weak));

/* The pitch cuMemAllocPitch rounds rows to: align (a power of two), or,
 * for 0 (or anything else), the 512 bytes of every GPU known. A driver
 * that pitches otherwise is what spillway's guess must settle with. */
void fakecuda_set_pitch_align(size_t align) __attribute__((weak));

/* Marks a stream (a CUstream, not the NULL or per-thread stream) as being
 * captured or not: cuStreamIsCapturing and cuStreamGetCaptureInfo then
 * answer ACTIVE, and nothing else changes (work still runs, no rule
 * applies). A status only, older than fakecuda's stream capture: to test
 * capture itself, use cuStreamBeginCapture. Returns 0, or -1 for a bad
 * stream. */
int fakecuda_set_capturing(void *stream, int capturing) __attribute__((weak));
/* on: cuStreamCreate (and WithPriority) gives back the handle of a
 * destroyed stream, once its work is done, as the real driver may reuse
 * a freed stream's memory; off (the default): every stream is new.
 * Returns 0. */
int fakecuda_reuse_streams(int on) __attribute__((weak));

/* A stand-in for a collective across devices (an NCCL all-reduce: a kernel
 * per device that spins until the kernels of all its peers have started),
 * so that a test can make a kernel on one device wait for a kernel on
 * another without any stream dependency between them.
 *
 * fakecuda_register_collective(name) registers name as a kernel (found by
 * cuModuleGetFunction in any module, as fakecuda_register_kernel's) of
 * three parameters: (unsigned long long key, unsigned nranks,
 * unsigned *status). A launch of it blocks its stream until nranks
 * launches with that key have started, on any streams of any devices, then
 * writes FAKECUDA_COLLECTIVE_DONE to *status (NULL: no status); once a
 * round completes the key serves again. If the others do not come within
 * the timeout (FAKECUDA_COLLECTIVE_TIMEOUT_MS at load, default 10000, or
 * fakecuda_collective_timeout_ms), the launch gives up: it writes
 * FAKECUDA_COLLECTIVE_TIMED_OUT, prints a line on stderr and counts one
 * timeout. A timeout stands for what would hang on a GPU.
 *
 *     fakecuda_register_collective("allreduce");   // then, per device:
 *     cuModuleGetFunction(&f, module, "allreduce");
 *     void *args[] = {&key, &nranks, &status_dptr};
 *     cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL);
 *
 * Returns 0, or -1 as fakecuda_register_kernel. The timeout setter returns
 * the previous timeout (0 leaves it). */
#define FAKECUDA_COLLECTIVE_DONE 1u
#define FAKECUDA_COLLECTIVE_TIMED_OUT 2u
int fakecuda_register_collective(const char *name) __attribute__((weak));
unsigned fakecuda_collective_timeout_ms(unsigned ms) __attribute__((weak));
unsigned long long fakecuda_collective_timeouts(void) __attribute__((weak));

static inline int fakecuda_present(void)
{
    return fakecuda_register_kernel != NULL;
}

#ifdef __cplusplus
}
#endif
#endif
