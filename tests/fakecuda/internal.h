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

/* ---- devices and contexts (device.c, context.c) ---- */

struct fc_mempool;

struct fc_device {
    size_t capacity;             /* FAKECUDA_MEM */
    size_t used;                 /* device bytes held, under fc_lock */
    struct CUctx_st *primary;
    int primary_refs;
    unsigned primary_flags;
    struct fc_mempool *default_pool;
    struct fc_mempool *current_pool;
    bool peer_enabled[FC_MAX_DEVICES];
};

struct CUctx_st {
    uint32_t magic;
    int dev;
    bool is_primary;
    bool destroyed;
    struct CUstream_st *legacy;  /* created on first use */
    struct CUctx_st *next;       /* every context, for validation */
};

extern pthread_mutex_t fc_lock;  /* guards devices, contexts, memory registry */
extern int fc_ndevices;
extern struct fc_device fc_devices[FC_MAX_DEVICES];
extern size_t fc_host_used;

CUresult fc_initialized(void);          /* CUDA_ERROR_NOT_INITIALIZED before cuInit */
CUresult fc_current_ctx(struct CUctx_st **ctx); /* NOT_INITIALIZED / INVALID_CONTEXT */
CUresult fc_check_device(CUdevice dev);
bool fc_ctx_valid(struct CUctx_st *ctx);
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
    unsigned long long access_devs; /* FC_VMM: devices cuMemSetAccess gave access (bit d) */
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

/* Allocates, charges and registers device memory of the given kind. */
CUresult fc_alloc_device(size_t size, enum fc_region_kind kind, struct fc_mempool *pool,
                         int dev, CUdeviceptr *dptr);
/* Uncharges, unregisters and unmaps; under fc_lock. */
void fc_region_release_locked(struct fc_region *reg);
size_t fc_vmm_live_handles(void);

void *fc_map_anon(size_t size);     /* fresh zeroed pages, or NULL */
void fc_unmap(void *p, size_t size);
size_t fc_page_round(size_t size);

/* ---- VMM (vmm.c) ---- */

struct fc_handle {
    uint32_t magic;
    int fd;
    size_t size;
    CUmemAllocationProp prop;
    int refs;       /* create + retains - releases */
    int mappings;   /* live cuMemMap of it */
    struct fc_handle *next;
};

/* ---- streams and events (stream.c) ---- */

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
/* The unmap hazard check (stream.c, FAKECUDA_CHECK_UNMAP=1): copies and
 * sets note the ranges they use; an unmap of one the host has not seen
 * complete stops the process. */
extern bool fc_check_unmap;
void fc_track_op(struct CUstream_st *s, uint64_t seq, uintptr_t a, size_t an, uintptr_t b,
                 size_t bn);
void fc_unmap_check(uintptr_t addr, size_t size);

/* ---- pools (mempool.c) ---- */

struct fc_mempool {
    uint32_t magic;
    int dev;
    bool is_default;
    cuuint64_t release_threshold;
    int reuse_follow, reuse_opportunistic, reuse_internal;
    cuuint64_t used, used_high, reserved, reserved_high;
    struct fc_mempool *next;
};

struct fc_mempool *fc_mempool_new(int dev, bool is_default);

/* ---- kernels (kernel.c) ---- */

struct CUfunc_st {
    uint32_t magic;
    char name[128];
    fakecuda_kernel_fn fn;
    unsigned nparams;
    size_t size[FAKECUDA_MAX_PARAMS];
    size_t offset[FAKECUDA_MAX_PARAMS];
};

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
 * not apply, so every ABI version of a function counts as the function. */
#define FC_FAULT(name)                                        \
    do {                                                      \
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

#endif
