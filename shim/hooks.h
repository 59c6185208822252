/* Declarations generated from hooks.def: the handlers (typed as the driver
 * function they stand for, so the compiler checks every signature against
 * cuda.h), the table of real driver functions, and the hook descriptors. */
#ifndef SPILLWAY_SHIM_HOOKS_H
#define SPILLWAY_SHIM_HOOKS_H
#include <cuda.h>

/* The oldest cuda.h the hooks build against: handlers are typed with
 * __typeof__ of CUDA 13.0's declarations (cuMemGetDefaultMemPool, 13.0;
 * cuMemcpyBatchAsync, 12.8), so an older header fails with a page of
 * unknown identifiers; say so once instead. Headers only: the library
 * still runs on older drivers (tests/integration/shim/olddriver.sh).
 * deploy/test_kubernetes.sh holds the Dockerfile's build image to it. */
#define SPW_CUDA_HEADERS_MIN 13000
#if !defined(CUDA_VERSION) || CUDA_VERSION < SPW_CUDA_HEADERS_MIN
#error "spillway builds against cuda.h of CUDA 13.0 or newer (CUDA_HOME=...); it runs on older drivers"
#endif

/* cuda.h maps cuGetProcAddress to cuGetProcAddress_v2 and declares the
 * CUDA 11.3 ABI only for its own build; the table needs both. */
#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
/* The same for the batch copies: CUDA 12.8's ABI (with failIdx) is still
 * what 12.8 and 12.9 runtimes ask for. */
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                                    CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs,
                                    size_t *failIdx, CUstream hStream);
CUresult CUDAAPI cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
                                      unsigned long long flags, CUstream hStream);

/* CUDA 4.1's cuIpcOpenMemHandle (no suffix), which cuda.h maps to _v2:
 * the same arguments. */
#undef cuIpcOpenMemHandle
CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);

/* CUDA 8/9's stream memory operations (no suffix): the same arguments as
 * the _v2 that cuda.h maps these names to, declared for the rows that
 * name the old symbols themselves. */
#undef cuStreamWriteValue32
#undef cuStreamWriteValue64
#undef cuStreamWaitValue32
#undef cuStreamWaitValue64
#undef cuStreamBatchMemOp
CUresult CUDAAPI cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
CUresult CUDAAPI cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
CUresult CUDAAPI cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
CUresult CUDAAPI cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
CUresult CUDAAPI cuStreamBatchMemOp(CUstream stream, unsigned int count,
                                    CUstreamBatchMemOpParams *paramArray, unsigned int flags);

/* CUDA 8's cuMemPrefetchAsync (a CUdevice, no flags), which cuda.h maps to
 * CUDA 12.2's _v2 and declares only for its own build. */
#undef cuMemPrefetchAsync
CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);

/* The graph ABIs of runtimes before CUDA 12 (cuGetProcAddress below 12000
 * answers them): instantiate with an error node and a log (10.0, and
 * 11.0's _v2), update with an error node and a result (10.2), a kernel
 * node's parameters without kern and ctx (10.1). */
#undef cuGraphInstantiate
#undef cuGraphExecUpdate
#undef cuGraphExecKernelNodeSetParams
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                    char *logBuffer, size_t bufferSize);
CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                       char *logBuffer, size_t bufferSize);
CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
                                   CUgraphExecUpdateResult *updateResult_out);
CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams);

/* CUDA 12.2's cuGraphAddNode, without edge data: cuda.h maps the name to
 * 12.3's _v2. */
#undef cuGraphAddNode
CUresult CUDAAPI cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                size_t numDependencies, CUgraphNodeParams *nodeParams);

/* CUDA 13.1's multicast binds that name the device: not in 13.0's cuda.h;
 * a newer one declares them the same. */
CUresult CUDAAPI cuMulticastBindMem_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                       size_t mcOffset, CUmemGenericAllocationHandle memHandle,
                                       size_t memOffset, size_t size, unsigned long long flags);
CUresult CUDAAPI cuMulticastBindAddr_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                        size_t mcOffset, CUdeviceptr memptr, size_t size,
                                        unsigned long long flags);

/* CUDA 13.2's single copies with a batch's attributes, and host functions
 * with a sync mode: not in 13.0's cuda.h; a newer one declares them the
 * same. */
CUresult CUDAAPI cuMemcpyWithAttributesAsync(CUdeviceptr dst, CUdeviceptr src, size_t size,
                                             CUmemcpyAttributes *attr, CUstream hStream);
CUresult CUDAAPI cuMemcpy3DWithAttributesAsync(CUDA_MEMCPY3D_BATCH_OP *op, unsigned long long flags,
                                               CUstream hStream);
CUresult CUDAAPI cuLaunchHostFunc_v2(CUstream hStream, CUhostFn fn, void *userData, unsigned int syncMode);

/* CUDA 10.0's cuStreamBeginCapture, without a mode. */
#undef cuStreamBeginCapture
CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream);

#define SPW_PT_IF_NONE(...)
#define SPW_PT_IF_PTSZ(...) __VA_ARGS__
#define SPW_PT_IF_PTDS(...) __VA_ARGS__
/* A row's per-thread suffix, and x only for a row that has the variant
 * (the tables of hooks.c and real.c). */
#define SPW_PT_SUFFIX_NONE NULL
#define SPW_PT_SUFFIX_PTSZ "_ptsz"
#define SPW_PT_SUFFIX_PTDS "_ptds"
#define SPW_PT_OR_NULL_NONE(x) NULL
#define SPW_PT_OR_NULL_PTSZ(x) x
#define SPW_PT_OR_NULL_PTDS(x) x

/* Handlers have default visibility so that the linker script can alias the
 * exported names to them; the version script keeps the handlers themselves
 * local. */
#define SPW_HANDLER __attribute__((visibility("default")))

/* The table names deprecated entry points too (cuLaunchGrid...): programs
 * still call them, so their types are taken without a warning. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define SPW_HOOK(base, symbol, version, handler, pt) \
    SPW_HANDLER extern __typeof__(symbol) handler;   \
    SPW_PT_IF_##pt(SPW_HANDLER extern __typeof__(symbol) handler##_pt;)
#include "shim/hooks.def"
#undef SPW_HOOK

/* The real driver's functions, one per handler, filled once when the driver
 * is loaded (driver.c owns it) and read-only afterwards. A NULL entry means
 * this driver does not export the symbol. */
struct spw_real {
#define SPW_HOOK(base, symbol, version, handler, pt) \
    __typeof__(symbol) *handler;                     \
    SPW_PT_IF_##pt(__typeof__(symbol) *handler##_pt;)
#include "shim/hooks.def"
#undef SPW_HOOK
};
#pragma GCC diagnostic pop
extern struct spw_real spw_real;

/* Where each exported symbol's real function goes (real.c): the driver
 * loader's view of hooks.def, without the handlers. */
struct spw_real_slot {
    const char *symbol;    /* versioned ABI symbol */
    const char *pt_suffix; /* "_ptsz", "_ptds" or NULL */
    void **real, **real_pt; /* into spw_real */
};
extern const struct spw_real_slot spw_real_slots[];
extern const unsigned spw_real_slot_count;

/* One row of hooks.def, for lookups by name. */
struct spw_hook {
    const char *base;      /* cuGetProcAddress name */
    const char *symbol;    /* versioned ABI symbol */
    int version;           /* first cudaVersion meaning this symbol */
    const char *pt_suffix; /* "_ptsz", "_ptds" or NULL */
    void *handler, *handler_pt;
    void **real, **real_pt; /* into spw_real */
};
extern const struct spw_hook spw_hooks[];
extern const unsigned spw_hooks_count;

/* Lookups by name over it (hooks.c). */
/* Whether name could be a driver function's ("cu..."); NULL is not. */
int spw_is_driver_name(const char *name);

/* The handler for an exported symbol name ("cuMemAlloc_v2",
 * "cuMemAllocAsync_ptsz"), or NULL if the name is not hooked, spillway is
 * disabled, or the driver lacks the symbol. Loads the driver if needed. */
void *spw_handler_for_symbol(const char *name);

/* What cuGetProcAddress should hand out for symbol: real is what the
 * driver returned for (symbol, version, flags). */
void *spw_handler_for_proc(const char *symbol, void *real, int version, cuuint64_t flags);
#endif
