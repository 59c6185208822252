/* fakecuda internals: state shared by the emulation's files.
 *
 * fakecuda emulates the CUDA driver API in host memory. Device pointers are
 * host addresses: cuMemAlloc memory is an anonymous mapping, VMM handles are
 * memfds mapped at reserved addresses, so that a remap really changes what an
 * address reads and an address with no mapping faults (SIGSEGV), as the GPU
 * would. Streams are worker threads. Nothing here calls dlsym: a preloaded
 * shim overrides it, and the driver must not loop back into the shim. */
#ifndef FAKECUDA_INTERNAL_H
#define FAKECUDA_INTERNAL_H
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/fakecuda/fakecuda.h"

#define FC_EXPORT __attribute__((visibility("default")))
#define FC_MAX_DEVICES 8
#define FC_GRANULARITY ((size_t)2 << 20)
#define FC_DRIVER_VERSION 13000
/* The version this build of fakecuda is: FC_DRIVER_VERSION, or an older
 * driver's in a build that emulates one (module.mk: the 12.7 driver, which
 * lacks what procs.def dates later, in cuGetProcAddress and in its
 * exports). cuDriverGetVersion answers it. */
extern const int fc_driver_version;

/* ---- devices and contexts (device.c, context.c) ---- */

struct fc_mempool;

struct fc_device {
    size_t capacity;             /* FAKECUDA_MEM */
    size_t used;                 /* device bytes held, under fc_lock */
    size_t used_high;            /* the most used has been (fakecuda_device_bytes_peak) */
    struct CUctx_st *primary;
    int primary_refs;
    bool primary_active;         /* retained since the last reset or last release */
    unsigned primary_flags;
    struct fc_mempool *default_pool;
    struct fc_mempool *current_pool;
    /* The graph memory pool (graph_mem.c), under fc_lock: physical memory
     * reserved for graph allocations (charged in used), the part of it
     * mapped to graph allocations, the bytes of graph allocations live. */
    size_t gm_reserved, gm_reserved_high, gm_mapped, gm_used_high;
    bool peer_enabled[FC_MAX_DEVICES];
};

struct CUctx_st {
    uint32_t magic;
    int dev;
    bool is_primary;
    bool destroyed;
    unsigned flags;              /* cuCtxCreate's, cuCtxSetFlags' (primary: the device's) */
    struct CUstream_st *legacy;  /* created on first use */
    struct CUctx_st *next;       /* every context, for validation */
};

extern pthread_mutex_t fc_lock;  /* guards devices, contexts, memory registry */
extern int fc_ndevices;
extern struct fc_device fc_devices[FC_MAX_DEVICES];
extern size_t fc_host_used;
extern bool fc_multicast; /* FAKECUDA_MULTICAST: CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED */

CUresult fc_initialized(void);          /* CUDA_ERROR_NOT_INITIALIZED before cuInit */
bool fc_forked(void);                   /* a child forked after cuInit: no driver here */
CUresult fc_current_ctx(struct CUctx_st **ctx); /* NOT_INITIALIZED / INVALID_CONTEXT */
CUresult fc_check_device(CUdevice dev);
bool fc_ctx_valid(struct CUctx_st *ctx);
/* How many calls named a context after it was destroyed (the driver
 * refuses them, or worse if the handle was reused). */
unsigned long long fc_ctx_stale_uses(void);
/* Device bytes: reserve against capacity (OOM when full) and give back. */
CUresult fc_device_charge(int dev, size_t bytes);
void fc_device_uncharge(int dev, size_t bytes);

/* ---- memory registry (registry.c) ---- */

enum fc_region_kind {
    FC_DEVICE,      /* cuMemAlloc / cuMemAllocPitch */
    FC_ASYNC,       /* cuMemAllocAsync / FromPoolAsync */
    FC_MANAGED,     /* cuMemAllocManaged */
    FC_HOST,        /* cuMemHostAlloc / cuMemAllocHost */
    FC_REGISTERED,  /* cuMemHostRegister */
    FC_VMM,         /* one cuMemMap mapping */
    FC_GRAPH_MEM,   /* a graph's allocation (cuMemAllocAsync captured, memory nodes) */
    FC_ARRAY,       /* a CUDA array's storage (array.c): device memory no CUdeviceptr names */
};

struct fc_handle;

struct fc_region {
    uintptr_t base;
    size_t size;            /* what the program asked for (the range it sees) */
    size_t charged;         /* bytes charged against the device or host */
    enum fc_region_kind kind;
    int dev;
    unsigned long long id;  /* CU_POINTER_ATTRIBUTE_BUFFER_ID */
    bool freeing;           /* async free queued: a second free is an error */
    struct fc_mempool *pool;
    struct fc_handle *handle; /* FC_VMM */
    unsigned access;        /* FC_VMM: CUmemAccess_flags set by cuMemSetAccess */
    bool sync_memops_off;   /* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS unset by the program */
    unsigned long long access_devs; /* FC_VMM: devices cuMemSetAccess gave access (bit d) */
    struct fc_gmem *gmem;   /* FC_GRAPH_MEM: the graph objects that keep it */
    struct CUctx_st *ctx;   /* FC_DEVICE, FC_MANAGED, FC_HOST: the context it dies with */
};

/* All under fc_lock. Lookup finds the region containing addr. */
struct fc_region *fc_region_add(const struct fc_region *r);
struct fc_region *fc_region_find(uintptr_t addr);
void fc_region_remove(struct fc_region *r);
size_t fc_region_count(enum fc_region_kind kind);
/* Visits the regions overlapping [addr, addr+size) in address order. */
typedef bool (*fc_region_visit)(struct fc_region *r, void *arg);
void fc_region_each_in(uintptr_t addr, size_t size, fc_region_visit fn, void *arg);

/* Is [addr, addr+size) inside memory the device can address? (copies) */
bool fc_device_range_ok(uintptr_t addr, size_t size);
/* Is addr pinned (or registered) host memory? */
bool fc_is_pinned_host(uintptr_t addr);

/* A linear copy of n bytes between addresses (device storage, pinned or
 * pageable host memory: classified from the registry), with the driver's
 * host-synchronisation rules (copy.c); dst_dev/src_dev 1: that side must
 * be device memory; sync: a synchronous entry point. */
CUresult fc_copy_linear(uintptr_t dst, uintptr_t src, size_t n, CUstream h, bool ptds, bool sync,
                        int dst_dev, int src_dev);

/* What cuGetProcAddress hands out for the exported function fn: fn, or
 * with FAKECUDA_PROC_ENTRY=internal an entry point of the same function at
 * another address (proc_entry.c). */
void *fc_proc_entry(void *fn);
/* With FAKECUDA_PROC_FUTURE=1, a newer ABI of symbol at version (only
 * cuMemAlloc from FC_FUTURE_VERSION), else NULL. */
#define FC_FUTURE_VERSION 13090
void *fc_proc_future(const char *symbol, int version);

/* How a 2D/3D copy reaches a CUDA array (array.c): its storage as depth
 * layers of height rows of pitch bytes, elements of elem bytes.
 * INVALID_VALUE for anything that is not a live array with storage. */
struct fc_array_layout {
    uintptr_t storage;
    size_t elem, pitch, height, depth;
};
CUresult fc_array_layout(CUarray a, struct fc_array_layout *out);

/* Allocates, charges and registers device memory of the given kind. */
CUresult fc_alloc_device(size_t size, enum fc_region_kind kind, struct fc_mempool *pool,
                         int dev, CUdeviceptr *dptr);
/* Uncharges, unregisters and unmaps; under fc_lock. */
void fc_region_release_locked(struct fc_region *reg);
/* A primary context's reset, or cuCtxDestroy: its cuMemAlloc-class and
 * pinned host memory is freed (memory.c), its arrays destroyed (array.c),
 * its streams and events destroyed (stream.c), its modules unloaded
 * (kernel.c). Its work must be finished. */
void fc_ctx_free_memory(struct CUctx_st *ctx);
void fc_ctx_end_streams(struct CUctx_st *ctx);
void fc_ctx_end_arrays(struct CUctx_st *ctx);
void fc_ctx_end_modules(struct CUctx_st *ctx);
size_t fc_vmm_live_handles(void);
/* Exports and imports (share.c): the handle with value h (NULL: none) and a
 * new handle for an imported file descriptor; under fc_lock. */
struct fc_handle *fc_vmm_handle(CUmemGenericAllocationHandle h);
struct fc_handle *fc_vmm_handle_by_file(int fd);
void fc_vmm_handle_add(struct fc_handle *h);

void *fc_map_anon(size_t size);     /* fresh zeroed pages, or NULL */
void fc_unmap(void *p, size_t size);
size_t fc_page_round(size_t size);

/* ---- VMM (vmm.c) ---- */

struct fc_mcast;

struct fc_handle {
    uint32_t magic;
    int fd;         /* -1 for a multicast object: it has no memory of its own */
    size_t size;
    CUmemAllocationProp prop;
    int refs;       /* create + retains - releases */
    int mappings;   /* live cuMemMap of it */
    int binds;      /* multicast objects its memory is bound to (multicast.c) */
    bool imported;  /* cuMemImportFromShareableHandle: charged to its exporter */
    struct fc_mcast *mc; /* a multicast object (cuMulticastCreate), else NULL */
    void *home;     /* the memory file mapped once, for copies (fc_vmm_home) */
    int pins;       /* copies running through home (fc_vmm_home) */
    struct fc_handle *next;
};

/* Where the worker of a stream copies or sets [addr, addr+n) now: when one
 * read-write (write: for a store) mapping of a handle covers it, the
 * handle's own mapping of its memory file, which stays mapped (a VA's
 * pages are remapped all the time by spill; each new mapping costs its
 * first touch page by page, a copy through home does not); *pin then holds
 * the handle until fc_vmm_unpin. Otherwise addr itself (*pin NULL): an
 * unmapped or inaccessible VA faults as before. */
void *fc_vmm_home(uintptr_t addr, size_t n, bool write, struct fc_handle **pin);
void fc_vmm_unpin(struct fc_handle *h);

/* Frees h once nothing refers to it (refs, mappings, binds); under fc_lock. */
void fc_vmm_handle_maybe_free(struct fc_handle *h);

/* ---- multicast objects (multicast.c) ---- */

/* A multicast object's end: its bindings go (their memory may go with
 * them); under fc_lock, h->mc set, nothing refers to h any more. */
void fc_mcast_free(struct fc_handle *h);
/* Waits (fc_lock held, released while waiting) until every device of the
 * team of the multicast object with value mc was added, as cuMemMap and the
 * binds do; the object found again afterwards, NULL if it went meanwhile. */
struct fc_handle *fc_mcast_wait_team(CUmemGenericAllocationHandle mc);
/* The device a mapping of multicast object h names (its first member). */
int fc_mcast_device(const struct fc_handle *h);
/* Whether [addr, addr+n) touches a mapping of a multicast object
 * (*err: INVALID_VALUE when it does without lying inside one); takes
 * fc_lock. A copy there runs as fc_mcast_copy (on the stream's worker; it
 * takes fc_lock): bytes written through the mapping go to every member
 * bound there, bytes read come from the member of the lowest device. */
bool fc_mcast_touches(uintptr_t addr, size_t n, CUresult *err);
void fc_mcast_copy(uintptr_t dst, bool dst_mc, uintptr_t src, bool src_mc, size_t n);

/* ---- streams and events (stream.c; their queues stream_queue.c, events
 * event.c) ---- */

typedef void (*fc_op_fn)(void *arg);

struct fc_dep {
    struct CUstream_st *stream;
    uint64_t seq;
};

enum fc_stream_kind { FC_STREAM_USER, FC_STREAM_LEGACY, FC_STREAM_PER_THREAD };

/* Resolves a CUstream argument. ptds: the call came through a _ptsz/_ptds
 * entry point, so the NULL stream means the per-thread default stream. */
CUresult fc_stream_resolve(CUstream h, bool ptds, struct CUstream_st **out);
/* Queues fn(arg) on s after its implicit dependencies (legacy-stream rules)
 * and the optional extra one; returns the op's sequence number. fn owns arg. */
uint64_t fc_stream_enqueue(struct CUstream_st *s, fc_op_fn fn, void *arg, const struct fc_dep *extra);
void fc_stream_wait(struct CUstream_st *s, uint64_t seq);
/* Waits for all work queued so far on every stream of every context of dev
 * (dev < 0: all devices). */
void fc_device_drain(int dev);
void fc_ctx_drain(struct CUctx_st *ctx);
int fc_stream_device(struct CUstream_st *s);
/* Immutable facts about a stream, read without a lock. blocking: it
 * synchronises with the legacy stream (created without NON_BLOCKING, or the
 * per-thread stream). */
struct CUctx_st *fc_stream_ctx(struct CUstream_st *s);
bool fc_stream_is_blocking(struct CUstream_st *s);
bool fc_stream_is_legacy(struct CUstream_st *s);
bool fc_stream_marked_capturing(struct CUstream_st *s); /* fakecuda_set_capturing */
/* Waits for d from a stream's worker (a graph's wait node): unlike
 * fc_stream_wait, the host has not seen anything complete. */
void fc_dep_wait(const struct fc_dep *d);
/* Events: validity, the (stream, seq) a record names (false: never
 * recorded), and setting it (a graph's record node at launch). */
CUresult fc_event_check(CUevent e);
bool fc_event_dep(CUevent e, struct fc_dep *d);
void fc_event_set(CUevent e, struct CUstream_st *s, uint64_t seq);
/* The unmap hazard check (unmap_check.c, FAKECUDA_CHECK_UNMAP=1): copies
 * and sets note the ranges they use; an unmap of one the host has not
 * seen complete stops the process. */
extern bool fc_check_unmap;
void fc_track_op(struct CUstream_st *s, uint64_t seq, uintptr_t a, size_t an, uintptr_t b,
                 size_t bn);
void fc_unmap_check(uintptr_t addr, size_t size);

/* ---- pools (mempool.c) ---- */

struct fc_mempool {
    uint32_t magic;
    int dev;
    bool is_default;
    bool host; /* HOST or HOST_NUMA location: pinned host memory */
    cuuint64_t release_threshold;
    int reuse_follow, reuse_opportunistic, reuse_internal;
    cuuint64_t used, used_high, reserved, reserved_high;
    /* Of reserved, what no allocation uses: freed memory a device pool
     * keeps for its next allocations, charged to the device, up to its
     * release threshold (fc_mempool_trim_locked). Host pools keep none. */
    cuuint64_t cached;
    /* cuMemPoolSetAccess's flags per device: a device pool's own device
     * reads and writes, a host pool starts readable by the host only
     * ("default accessibility will be from the host CPU"). Kept and told,
     * not enforced on the memory. */
    CUmemAccess_flags access[FC_MAX_DEVICES];
    struct fc_mempool *next;
};

struct fc_mempool *fc_mempool_new(int dev, bool is_default, bool host);
/* Gives what pool keeps back to its device until it reserves at most keep
 * bytes (or keeps nothing); under fc_lock. */
void fc_mempool_trim_locked(struct fc_mempool *pool, cuuint64_t keep);

/* ---- kernels (kernel.c) ---- */

struct CUfunc_st {
    uint32_t magic;
    char name[128];
    fakecuda_kernel_fn fn;
    unsigned nparams;
    size_t size[FAKECUDA_MAX_PARAMS];
    size_t offset[FAKECUDA_MAX_PARAMS];
};

/* The registered kernel of that name (library.c looks kernels up too),
 * how many there are, the i-th. */
struct CUfunc_st *fc_kernel_find(const char *name);
unsigned fc_kernel_count(void);
struct CUfunc_st *fc_kernel_at(unsigned i);
/* A module (needs a current context), and its end. */
CUresult fc_module_new(CUmodule *m);
void fc_module_free(CUmodule m);
/* A CUfunction as a launch may name it: a function, or a CUkernel cast to
 * one (library.c); NULL when it is neither. */
struct CUfunc_st *fc_func_resolve(CUfunction f);
bool fc_func_valid(CUfunction f); /* a function only, not a cast CUkernel */
struct CUfunc_st *fc_kernel_func(CUkernel k); /* library.c; NULL: not a live kernel */

/* ---- launches (launch.c) ---- */

/* A kernel launch as data: what a launch runs, and a kernel node's
 * parameters. The arguments are copied in (the driver reads them at the
 * call); params[] (or extra[], when they came as one buffer) point into
 * args, so that a node hands them back as the program gave them. */
struct fc_kernel_call {
    struct CUfunc_st *fn;
    CUfunction func;          /* as named: a function or a cast CUkernel */
    CUkernel kern;            /* a node's kern field */
    CUcontext ctx;
    fakecuda_dim3 grid, block;
    unsigned shmem;
    bool via_extra;
    size_t size;              /* bytes of args */
    unsigned char *args;
    void *params[FAKECUDA_MAX_PARAMS];
    void *extra[5];
};

/* A kernel launch on stream h (ptds: as a _ptsz entry point names the
 * default stream): run in stream order, or recorded when h captures. */
CUresult fc_launch(CUfunction f, fakecuda_dim3 grid, fakecuda_dim3 block, unsigned shmem, CUstream h,
                   void **params, void **extra, bool ptds);

/* Checks a launch's configuration and copies its arguments. */
CUresult fc_kernel_call_init(struct fc_kernel_call *k, CUfunction f, fakecuda_dim3 grid,
                             fakecuda_dim3 block, unsigned shmem, void **params, void **extra);
CUresult fc_kernel_call_copy(struct fc_kernel_call *dst, const struct fc_kernel_call *src);
/* After a struct copy that moved the arguments: points the arrays at them. */
void fc_kernel_call_rebase(struct fc_kernel_call *k);
void fc_kernel_call_free(struct fc_kernel_call *k);
void fc_kernel_call_run(const struct fc_kernel_call *k);

/* ---- 2D/3D copies and sets (copy2d.c, memset2d.c), shared with graph nodes ---- */

/* Where an address is, for the driver's host synchronisation rules. */
enum fc_side { FC_SIDE_PAGEABLE, FC_SIDE_PINNED, FC_SIDE_DEVICE };
enum fc_side fc_side_of(uintptr_t p);

/* Checks a CUDA_MEMCPY3D (a 2D copy is one with Depth 1) against memory
 * fakecuda knows; CUDA_SUCCESS or the driver's error. */
CUresult fc_copy3d_check(const CUDA_MEMCPY3D *p);
void fc_copy3d_run(const CUDA_MEMCPY3D *p);
CUresult fc_memset2d_check(const CUDA_MEMSET_NODE_PARAMS *p);
void fc_memset2d_run(const CUDA_MEMSET_NODE_PARAMS *p);
/* The (up to two) ranges such a copy or set uses, for the unmap hazard
 * check (a graph's copy and set nodes are copies and sets too). */
struct fc_use {
    uintptr_t base[2];
    size_t size[2];
};
struct fc_use fc_copy3d_use(const CUDA_MEMCPY3D *p);
struct fc_use fc_memset2d_use(const CUDA_MEMSET_NODE_PARAMS *p);
/* A 1D copy of n bytes as a CUDA_MEMCPY3D (unified addressing). */
void fc_copy3d_linear(CUDA_MEMCPY3D *p, uintptr_t dst, uintptr_t src, size_t n);

/* ---- stream memory operations (memops.c), a batch node's too ---- */

/* "Must be less than 256". */
#define FC_MEMOPS_MAX 256
/* A batch of count operations checked as cuStreamBatchMemOp checks it:
 * INVALID_VALUE for a count, address or flags the driver refuses,
 * NOT_SUPPORTED for an operation fakecuda does not emulate. */
CUresult fc_memops_check(const CUstreamBatchMemOpParams *ops, unsigned count);
/* Runs them in order on the calling (stream worker) thread. */
void fc_memops_run(const CUstreamBatchMemOpParams *ops, unsigned count);
/* The memory one operation names (none for a flush or a barrier). */
struct fc_use fc_memop_use(const CUstreamBatchMemOpParams *op);

/* ---- graphs: graph.h ---- */

/* ---- stream capture (capture.c) ----
 * Every entry point that puts work on a stream asks fc_capture_enter
 * first, after checking its own arguments: an error (the capture rules),
 * or *capturing = false (run it), or *capturing = true: the capture lock
 * is then held and the caller must hand its work to fc_capture_add as a
 * node (NULL when it could not build one), which releases the lock. */
CUresult fc_capture_enter(struct CUstream_st *s, bool *capturing);
CUresult fc_capture_add(struct CUstream_st *s, struct CUgraphNode_st *n);
/* Instead of fc_capture_add, for work that cannot be captured: the capture
 * invalidated, the lock released, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
CUresult fc_capture_refuse(struct CUstream_st *s);
/* The graph s captures into (capture lock held, after fc_capture_enter). */
struct CUgraph_st *fc_capture_graph(struct CUstream_st *s);
/* cuStreamSynchronize / cuStreamQuery of s: a capturing stream cannot be
 * waited for, nor the legacy stream while a blocking stream captures. */
CUresult fc_capture_wait_stream(struct CUstream_st *s);
/* A synchronous call on s (cuMemcpy, cuMemsetD8, ...): the above, then the
 * rules for potentially unsafe calls. */
CUresult fc_capture_sync_call(struct CUstream_st *s);
/* A potentially unsafe call (cuMemAlloc, cuMemFree, cuEventQuery, ...)
 * under the calling thread's capture mode. */
CUresult fc_capture_unsafe_call(void);
/* cuCtxSynchronize: no stream of ctx may be capturing. */
CUresult fc_capture_ctx_sync(struct CUctx_st *ctx);
/* Events (capture_events.c): a record on a capturing stream (*done: it
 * was handled here), a wait (*done likewise), a query or synchronize, a
 * record elsewhere or a destroy (forget what a capture said about it). */
CUresult fc_capture_event_record(CUevent e, struct CUstream_st *s, unsigned flags, bool *done);
CUresult fc_capture_event_wait(struct CUstream_st *s, CUevent e, unsigned flags, bool *done);
CUresult fc_capture_event_use(CUevent e);
void fc_capture_event_forget(CUevent e);

/* ---- fault injection (fault.c, faults.def) ---- */

enum fc_fn {
#define FC_FAULT_FN(name, err) FC_FN_##name,
#include "tests/fakecuda/faults.def"
#undef FC_FAULT_FN
    FC_FN_COUNT
};

/* Counts one call of fn and says whether it fails: CUDA_SUCCESS, or the
 * error to return at once, before the call has any effect. */
CUresult fc_fault_hit(enum fc_fn fn);

/* The first statement of every entry point listed in faults.def. The name
 * is pasted, never expanded: cuda.h's cuMemAlloc -> cuMemAlloc_v2 macros do
 * not apply, so every ABI version of a function counts as the function.
 * Being every entry point's first step, it also refuses every call of a
 * forked child (fc_forked) before the call touches state the parent's
 * threads may have held locked at the fork. */
#define FC_FAULT(name)                                        \
    do {                                                      \
        if (fc_forked())                                      \
            return CUDA_ERROR_NOT_INITIALIZED;                \
        CUresult fc_fault_ = fc_fault_hit(FC_FN_##name);      \
        if (fc_fault_ != CUDA_SUCCESS)                        \
            return fc_fault_;                                 \
    } while (0)

/* Live resources, for the introspection calls; each takes its own lock. */
size_t fc_vmm_live_reservations(size_t *bytes);
bool fc_vmm_reserved_at(uintptr_t addr);
size_t fc_live_events(void);
size_t fc_live_user_streams(void);
int fc_ctx_depth(void);
void *fc_ctx_top(void);

/* ---- misc ---- */

/* An error code's name (errors.c), and the reverse: a name of the table or
 * a decimal number, len bytes of s. */
const char *fc_error_name(CUresult e);
bool fc_error_parse(const char *s, size_t len, CUresult *out);

/* Parses "256M"-style sizes; 0 on error. */
size_t fc_parse_size(const char *s);

#define FC_MAGIC_CTX 0xC7C7C7C7u
#define FC_MAGIC_STREAM 0x57EA7001u
#define FC_MAGIC_EVENT 0xE7E7E7E7u
#define FC_MAGIC_HANDLE 0x4A4D4C45u
#define FC_MAGIC_POOL 0x9001900Fu
#define FC_MAGIC_FUNC 0xF00CF00Cu
#define FC_MAGIC_MODULE 0x40D40D4Du
#define FC_MAGIC_GRAPH 0x6A9A6A9Au
#define FC_MAGIC_NODE 0x40DE40DEu
#define FC_MAGIC_EXEC 0xE8ECE8ECu
#define FC_MAGIC_LIBRARY 0x11B11B11u
#define FC_MAGIC_KERNEL 0x4E4E4E4Eu

#endif
