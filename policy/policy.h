/* policy/: spillway's memory manager, with no knowledge of how calls arrived.
 *
 * One sw_policy serves every device of the process. Per device it owns a pool
 * of physical pages (one driver handle per page, up to the limit, never
 * beyond), a VA arena (one large reservation) from which cuMemAlloc-class
 * allocations get their addresses, a sub-allocator (size classes packed into
 * pages for small requests, page-aligned ranges for large ones), and one
 * page table shared by all devices: VA page -> physical page + residency.
 *
 * The shim calls the functions below from its hooks; they are thread-safe.
 * Every function returns the CUresult the driver would return for the same
 * mistake (e.g. CUDA_ERROR_INVALID_VALUE for a bad pointer or double free).
 * CUDA_ERROR_NOT_FOUND means "not spillway's": the shim passes the call
 * through to the driver.
 *
 * Free semantics (docs/design.md, "Free semantics"): a block freed with
 * sw_free is not handed to a new owner before a device-wide sync point
 * covers work issued before the free (spillway batches them and
 * synchronizes once per batch, only when it needs the memory); a block freed with sw_free_async(stream) is reusable at
 * once on that stream and on others once an event recorded at the free has
 * completed. A VA page is unmapped only after a sync point that covers all
 * work issued before the decision. */
#ifndef SPILLWAY_POLICY_H
#define SPILLWAY_POLICY_H
#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/backend.h"
#include "policy/limits.h"

typedef struct sw_policy sw_policy;

typedef struct sw_device_config {
    size_t limit;     /* device bytes spillway may hold (rounded down to pages) */
    bool preallocate; /* create every page up to the limit at sw_device_init */
    /* The arena's first VA reservation = va_factor x limit (0: default 4);
     * it grows by further reservations as allocations need, so this bounds
     * nothing (the driver's refusal of VA is a refusal reason of its own). */
    size_t va_factor;
    /* When freed-but-unsynced bytes reach this (or 1024 frees), an
     * allocation that would otherwise map fresh pages synchronizes instead
     * (0: limit / 16). Without free pages it synchronizes anyway. */
    size_t sync_batch;
    size_t host_limit; /* pinned host bytes residency changes may use */
    /* When the pool has no device page left (after syncing and reclaiming
     * cached pages), move the coldest pages that back live data to pinned
     * host pages (within host_limit) and use the device pages they free;
     * when nothing more can move, back the rest with host pages. An
     * allocation then fails only past the host limit. Off: it fails with
     * OUT_OF_MEMORY once the device pages are used. */
    bool spill;
    /* How long an allocation or a fill waits for the device to go idle (its
     * brackets to end, its work to drain) before it goes on without moving
     * pages: backed by host pages, or the fill left for later (0: 500 ms).
     * Work that waits for work the program has yet to submit never
     * drains. */
    uint64_t quiesce_wait_ns;
    /* Pinned host pages (in bytes) a thread of policy/'s own keeps ready
     * for spill once the pool first runs dry, so that a spill never waits
     * for the driver to pin a page (0: none, every host page is created
     * when needed). */
    size_t host_reserve;
    /* Demand paging: a launch that finds its data on the host brings it
     * back by spilling the clock's coldest pages, however often either is
     * used. Off (the default): the no-thrash rule (spill.c), under which
     * data comes back only in place of data used at most half as often,
     * within a move budget. For benchmarks that measure the rule. */
    bool demand_paging;
} sw_device_config;

/* Lifetime. The backend is copied; it must outlive the policy. */
CUresult sw_policy_create(const sw_backend *backend, sw_policy **out);
/* Releases every page, event and reservation (returns the first error). */
CUresult sw_policy_destroy(sw_policy *p);
/* Sets up device dev (0 <= dev < SW_MAX_DEVICES) once, before its first use:
 * reserves the arena and, with preallocate, creates the pages up to limit.
 * CUDA_ERROR_INVALID_VALUE if already set up or the config is unusable.
 * Not concurrently with other calls for the same device (the shim guards it
 * with its own once-per-device lock); devices may be set up concurrently. */
CUresult sw_device_init(sw_policy *p, int dev, const sw_device_config *cfg);
bool sw_device_ready(const sw_policy *p, int dev);
/* Whether r is an error after which the context runs no more work (the
 * driver's "any further CUDA work will return the same error": the
 * process must be relaunched): a failed step of spillway's own is then
 * the program's to see, not one to work around. Inline: the shim's
 * context list (shim/contexts.c) asks it too, without the policy. */
static inline bool sw_error_ends_context(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_EXTERNAL_DEVICE:
    case CUDA_ERROR_MPS_CLIENT_TERMINATED:
        return true;
    default:
        return false;
    }
}

size_t sw_page_size(const sw_policy *p); /* granularity (same on all devices) */
/* What a live allocation of size bytes on dev holds of the pool: its slab
 * slot's size class (up to a quarter of a chunk), else size rounded to the
 * granule (4 KiB); size itself before dev is set up. A reused block or
 * slot has the same footprint as a fresh one (reuse is by bucket). */
size_t sw_footprint(const sw_policy *p, int dev, size_t size);

/* ---- refusals -------------------------------------------------------------
 * Why an allocation got CUDA_ERROR_OUT_OF_MEMORY. Each is counted per device
 * (sw_counters.ooms_by) and the last one of the calling thread can be asked
 * right after the refusal, as errno. */
typedef enum sw_oom_reason {
    SW_OOM_NONE = 0,
    SW_OOM_LIMIT,      /* no device page left within the limit (spill off) */
    SW_OOM_HOST_LIMIT, /* spill: no pinned host page left within the host limit */
    SW_OOM_ADDRESS,    /* the driver refused more virtual address space */
    SW_OOM_TOO_LARGE,  /* one allocation larger than the limit (spill: than the
                        * limit and the host limit together) */
    SW_OOM_DRIVER,     /* the driver refused a page within the limits (the device
                        * or the machine is out of memory) */
    SW_OOM_NREASONS
} sw_oom_reason;
const char *sw_oom_reason_name(sw_oom_reason r);
sw_oom_reason sw_refusal_reason(void);

/* ---- cuMemAlloc-class allocations --------------------------------------
 * size 0 -> CUDA_ERROR_INVALID_VALUE; no room -> CUDA_ERROR_OUT_OF_MEMORY.
 * Every pointer is 256-byte aligned; large ones are page aligned. */
CUresult sw_alloc(sw_policy *p, int dev, size_t size, CUdeviceptr *out);
/* cuMemAllocAsync / cuMemAllocFromPoolAsync: may reuse blocks freed on the
 * same stream without waiting. The shim passes CU_STREAM_PER_THREAD for the
 * per-thread default stream (also for stream 0 in a _ptsz call): it is never
 * treated as "the same stream" across threads. Likewise CU_STREAM_LEGACY
 * for the legacy stream of a context other than the device's primary one
 * (NULL is the primary's): each context has its own, and no two are
 * ordered. */
CUresult sw_alloc_async(sw_policy *p, int dev, size_t size, CUstream stream, CUdeviceptr *out);
/* cuMemFree: dptr must be the base of a live allocation, else
 * CUDA_ERROR_INVALID_VALUE (a double free included). */
CUresult sw_free(sw_policy *p, CUdeviceptr dptr);
/* cuMemFreeAsync: records an event on stream (its error is returned). */
CUresult sw_free_async(sw_policy *p, CUdeviceptr dptr, CUstream stream);
/* Either free (async picks sw_free_async's rules), also telling the caller
 * the device and requested size of what it freed: the shim keeps its byte
 * count without a table of its own. */
CUresult sw_free_sized(sw_policy *p, CUdeviceptr dptr, bool async, CUstream stream, int *dev,
                       size_t *bytes);

/* ---- sync points reported by the shim ----------------------------------
 * A device-wide sync the program makes (cuCtxSynchronize, cudaDeviceSynchronize)
 * also covers pending frees: call begin before forwarding it, end with the
 * ticket after it returned CUDA_SUCCESS. */
uint64_t sw_sync_begin(sw_policy *p, int dev);
void sw_sync_end(sw_policy *p, int dev, uint64_t ticket);
/* Releases the frees that sync points or completed events already cover:
 * their blocks become reusable and the host pages of freed spilled data go
 * back to the host pool. No synchronize; call with no policy lock held
 * (the shim calls it after a program's sync on a spilling device, so that
 * the spill stats stop counting freed data there). Returns the bytes. */
size_t sw_collect(sw_policy *p, int dev);
/* cuStreamDestroy: blocks freed on stream lose their same-stream reuse (a new
 * stream may get the same handle value). */
void sw_stream_destroyed(sw_policy *p, int dev, CUstream stream);
/* cuDevicePrimaryCtxReset of dev, after its sw_sync_end when it is a sync
 * point of dev: the streams and events the pool made in that context
 * (where: the backend's token of its events, see event_create) died with
 * it, after it finished the context's work. The async frees of any
 * device whose events were made there are released (their work is done),
 * the frees a sync point covered too; those events, pending or idle, and
 * the device's mover streams are forgotten (never destroyed: dead handles,
 * which the driver may hand out again for the program's own), made anew
 * on next use. Events of other contexts (the program's own) are kept.
 * Call with no policy lock held. */
void sw_context_reset(sw_policy *p, int dev, void *where);
/* A context ended with its work finished (cuCtxDestroy of one the program
 * made, the last release of a primary): the async frees of any device
 * whose events were made there (where: the backend's token) are released,
 * and those events, pending or idle, forgotten, as at a reset. Call with no
 * policy lock held. */
void sw_context_gone(sw_policy *p, void *where);

/* ---- lookups (cuMemGetAddressRange, cuPointerGetAttribute(s)) ----------
 * True when ptr lies in a spillway arena or a page spillway mapped for the
 * program: then the call is spillway's to answer. Lock-free. */
bool sw_owns(const sw_policy *p, CUdeviceptr ptr);
/* The device whose pool page is mapped at ptr (in an arena or a program
 * mapping on pool pages), whether it lives on the device or the host now;
 * -1 when none. Lock-free: one page-table walk. */
int sw_page_device(const sw_policy *p, CUdeviceptr ptr);
/* The IDs of what a pointer lies in, as CU_POINTER_ATTRIBUTE_BUFFER_ID and
 * MEMORY_BLOCK_ID answer them: unique in the process and never given again
 * ("subsequent allocations do not reuse IDs from previous freed
 * allocations"), so that a registration cache (UCX, libfabric, Open MPI,
 * IPC caches) tells an allocation at a freed one's address from the freed
 * one. A cuMemAlloc-class allocation gets a new one each time it is handed
 * out (a reused block or slot too), buffer == block (the program's
 * allocation is its physical allocation as far as it can tell); a program
 * VMM mapping gets one per cuMemMap (buffer) and its handle one per
 * cuMemCreate (block: the physical allocation). The top bit is set: never
 * equal to the driver's own IDs of memory spillway passes through (it
 * counts from 1). */
#define SW_ID_BIT ((uint64_t)1 << 63)
typedef struct sw_ids {
    uint64_t buffer, block;
} sw_ids;

/* The program's allocation containing ptr: its base, its size as requested
 * (a program VMM mapping: the mapped range), the device and (ids may be
 * NULL) its IDs. Memory that lives on the host for now is still device
 * memory for the program. CUDA_ERROR_NOT_FOUND when ptr is not inside a
 * live allocation. */
CUresult sw_lookup(sw_policy *p, CUdeviceptr ptr, CUdeviceptr *base, size_t *size, int *dev,
                   sw_ids *ids);

/* Whether a copy or set of bytes from ptr, memory p owns, stays inside one
 * live allocation: CUDA_ERROR_INVALID_VALUE, the driver's answer for a
 * range past an allocation's end or in freed memory, when it does not
 * (the pool's pages around an allocation are mapped, so the driver would
 * write over its neighbours). Pages of the program's own VMM mappings are
 * the driver's to judge (a copy may cross from one mapping into the next).
 * Lock-free for a live block, the common case. */
CUresult sw_range_check(sw_policy *p, CUdeviceptr ptr, size_t bytes);

/* Work running on device runs_on names memory of device dev (a copy on
 * another device's stream, without peer access): dev's moves wait for
 * runs_on's work too, from now on. Lock-free; one load once known. */
void sw_note_work(sw_policy *p, int dev, int runs_on);

/* ---- peer access ---------------------------------------------------------
 * The program enabled access from device `peer` to dev's memory (cuCtxEnable-
 * PeerAccess in peer's context): spillway grants it on dev's arena mappings,
 * now and for every page it maps later. Program VMM mappings are the
 * program's own to grant (it calls cuMemSetAccess). */
CUresult sw_grant_access(sw_policy *p, int dev, int peer);

/* ---- program-managed VMM (cuMemCreate & co.) ---------------------------
 * Handles are spillway's own values (never a driver handle value); the shim
 * passes a handle through to the driver when !sw_vmm_is_handle(). */
bool sw_vmm_is_handle(sw_policy *p, CUmemGenericAllocationHandle h);
/* size must be a multiple of the page size. Pages come from dev's pool. */
CUresult sw_vmm_create(sw_policy *p, int dev, size_t size, CUmemGenericAllocationHandle *out);
/* One reference less; *gone (may be NULL) when it was the last and no
 * mapping is left: its memory went back to the pool. NOT_SUPPORTED, nothing
 * done, for a handle promoted meanwhile (sw_vmm_release_promoted's). */
CUresult sw_vmm_release(sw_policy *p, CUmemGenericAllocationHandle h, bool *gone);
/* Maps the whole handle at va (page aligned, inside a range the program
 * reserved): offset != 0 or size != the handle's size -> NOT_SUPPORTED, as
 * the driver; any page of the range already mapped -> INVALID_VALUE. */
CUresult sw_vmm_map(sw_policy *p, CUdeviceptr va, size_t size, size_t offset,
                    CUmemGenericAllocationHandle h);
/* The handles an unmap ended (released before, no mapping left): their
 * memory went back to the pool. h is the caller's to free. */
typedef struct sw_vmm_gone {
    CUmemGenericAllocationHandle *h;
    size_t n;
} sw_vmm_gone;
/* NOT_FOUND when no page of the range is spillway's; INVALID_VALUE when only
 * part of it is, or the range splits one mapping. gone (may be NULL): the
 * handles it ended (OUT_OF_MEMORY, nothing unmapped, without room to say). */
CUresult sw_vmm_unmap(sw_policy *p, CUdeviceptr va, size_t size, sw_vmm_gone *gone);
/* What sw_vmm_unmap would answer for the range, changing nothing. */
CUresult sw_vmm_check(sw_policy *p, CUdeviceptr va, size_t size);
/* rw_dev_mask: devices given read-write access (bit d = device d). */
CUresult sw_vmm_set_access(sw_policy *p, CUdeviceptr va, size_t size, uint64_t rw_dev_mask);
/* cuMemRetainAllocationHandle: the handle mapped at va (+1 reference). */
CUresult sw_vmm_retain(sw_policy *p, CUdeviceptr va, CUmemGenericAllocationHandle *out);
/* The pool handle of the lowest program mapping on pool pages that meets
 * [lo, hi) (one pass over the live mappings, whatever the range's size),
 * and that mapping's range: NOT_FOUND where no such mapping is (the
 * arena's cuMemAlloc-class memory, or nothing of spillway's),
 * NOT_SUPPORTED (*h set) for a handle the program released (only its
 * mappings keep it: it cannot be promoted). */
CUresult sw_vmm_mapped_in(sw_policy *p, CUdeviceptr lo, CUdeviceptr hi, CUmemGenericAllocationHandle *h,
                          CUdeviceptr *base, size_t *size);
/* cuMemGetAllocationPropertiesFromHandle: size and device of the handle,
 * and the word the shim set (user may be NULL). */
CUresult sw_vmm_properties(sw_policy *p, CUmemGenericAllocationHandle h, size_t *size, int *dev,
                           uint64_t *user);
/* One word the shim keeps with a handle (what the program asked for). */
CUresult sw_vmm_set_user(sw_policy *p, CUmemGenericAllocationHandle h, uint64_t user);
/* Mappings of a handle, as sw_vmm_promote lists them. */
typedef struct sw_vmm_maps {
    CUdeviceptr *va;
    size_t *size;
    size_t max; /* room in va[] and size[] */
    size_t n;   /* the mappings there were (more than max: the rest untold) */
} sw_vmm_maps;
/* cuMemExportToShareableHandle of a pool handle: the handle becomes the
 * driver's handle `real` (made by the shim with the program's properties,
 * of the handle's size): its bytes are copied there and every mapping of
 * it is remapped to `real` with the same access; its pages go back to the
 * pool, and the handle value stays valid, standing for `real`
 * (sw_vmm_promoted). Waits for the devices that reach the handle (gates
 * closed, synced): NOT_READY when they stay busy past the deadline or a
 * capture runs (nothing changed then). maps (may be NULL): the mappings
 * made the driver's, listed in the same hold of the handle lock. */
CUresult sw_vmm_promote(sw_policy *p, CUmemGenericAllocationHandle h,
                        CUmemGenericAllocationHandle real, sw_vmm_maps *maps);
/* The program's release of a promoted handle: one reference less; *last
 * when it was the last (the handle value is gone then, and the shim
 * releases *real, the driver handle behind it). */
CUresult sw_vmm_release_promoted(sw_policy *p, CUmemGenericAllocationHandle h, bool *last,
                                 CUmemGenericAllocationHandle *real);
/* cuMemRetainAllocationHandle of a promoted handle's memory: the driver
 * answered real; *h is the promoted handle standing for it (the value the
 * program mapped), with one reference more. NOT_FOUND: real stands for no
 * live promoted handle. */
CUresult sw_vmm_retain_promoted(sw_policy *p, CUmemGenericAllocationHandle real,
                                CUmemGenericAllocationHandle *h);
/* How many mappings of pool handle h the program has now. */
size_t sw_vmm_mappings(sw_policy *p, CUmemGenericAllocationHandle h);
/* Whether h was promoted, and to which driver handle. */
bool sw_vmm_promoted(sw_policy *p, CUmemGenericAllocationHandle h,
                     CUmemGenericAllocationHandle *real);

/* ---- residency (spill/fill stand on this) ------------------------------
 * Moves the page containing va to device or host memory; the VA and the
 * bytes stay. Synchronizes dev first (one sync for the whole range of
 * npages pages). NOT_SUPPORTED for a page mapped at more than one VA. */
typedef enum sw_residency { SW_RES_DEVICE = SW_LOC_DEVICE, SW_RES_HOST = SW_LOC_HOST } sw_residency;
CUresult sw_set_residency(sw_policy *p, CUdeviceptr va, size_t npages, sw_residency where);
CUresult sw_get_residency(sw_policy *p, CUdeviceptr va, sw_residency *where);
/* Creates pinned host pages ahead of need until n are free (within the host
 * limit): creating one costs 400-800 us, never paid on the spill path.
 * OUT_OF_MEMORY when the host limit stops it short. */
CUresult sw_reserve_host_pages(sw_policy *p, int dev, size_t n);

/* ---- spill, fill and the work gates ------------------------------------
 * A page changes residency only when no work can touch it (docs/design.md:
 * an unmap racing in-flight work kills the context). The shim brackets
 * every call that submits device work on the program's behalf (launches,
 * copies, sets) with sw_work_begin/sw_work_end, naming the devices it runs
 * on or reads (a mask, bit d = device d); a residency change closes the
 * gates of the devices that can reach its pages, waits for the brackets in
 * progress, synchronizes them and remaps. Brackets nest per thread (a
 * nested begin for the same devices is free). Cheap when no residency
 * change is under way: one atomic add on a per-thread line and one load. */
void sw_work_begin(sw_policy *p, uint64_t devices);
void sw_work_end(sw_policy *p);

/* The program is about to use the live allocation containing ptr (a kernel
 * argument, a copy's side): it becomes the last to spill. Lock-free, no
 * driver call. Returns true when some page of that allocation lives on the
 * host now (the caller may sw_fill it); false otherwise, also when ptr is
 * not spillway's. */
bool sw_touch(sw_policy *p, CUdeviceptr ptr);
/* The same for a use whose size is known (a copy, a set): in a large
 * program mapping, [ptr, ptr + bytes) is known to be one buffer's, and what
 * follows it gets a heat of its own (0: unknown, as sw_touch). */
bool sw_touch_range(sw_policy *p, CUdeviceptr ptr, size_t bytes);

/* Moves the host-resident pages of the live allocation containing ptr back
 * to device memory, as far as device pages are free (after a sync and
 * reclaiming cached free pages); it never spills other data to make room,
 * so pages that find none stay on the host (still correct, slower).
 * CUDA_SUCCESS also when nothing moved; NOT_FOUND when ptr is not
 * spillway's. Never call it between sw_work_begin and sw_work_end. */
CUresult sw_fill(sw_policy *p, CUdeviceptr ptr);

/* ---- legacy IPC of pool memory (export.c, shim/ipc.c) -----------------
 * An allocation handed to another process by cuIpcGetMemHandle: its base,
 * requested size, device and BUFFER_ID, its span of pages and the offset
 * of base in the first. */
typedef struct sw_export {
    CUdeviceptr base;
    size_t size;
    int dev;
    uint64_t buffer;
    size_t page, npages, offset;
} sw_export;
/* The live cuMemAlloc-class allocation containing ptr, into *x (its span
 * too); NOT_FOUND when ptr is not pool memory of that kind (free or freed,
 * the program's own VMM): the driver's to answer. */
CUresult sw_export_find(sw_policy *p, CUdeviceptr ptr, sw_export *x);
/* Makes the pages of that allocation permanent: spilled pages are filled
 * back (spilling colder ones for room), then every page of its span is
 * marked exported: it never moves again and, once nothing uses its VA, is
 * released instead of reused. Fills *x. NOT_FOUND as sw_export_find;
 * OUT_OF_MEMORY: no device page to bring it back to; NOT_READY: the
 * device could not be quiesced for that within about 2 s (busy, or a
 * stream capture under way); NOT_SUPPORTED: a page that cannot be pinned
 * (aliased, without access). Call with no policy lock held, outside a
 * work bracket. */
CUresult sw_export_pin(sw_policy *p, CUdeviceptr ptr, sw_export *x);
/* Calls each(ctx, i, handle) for pages i in [from, from + count) of the
 * span of the allocation x names (base, size, buffer: the rest is filled
 * here), under the device lock (each must take no policy lock), when it
 * is still that live allocation with every page exported; INVALID_VALUE
 * when it is not (freed), or each's error. */
typedef CUresult (*sw_export_each)(void *ctx, size_t i, CUmemGenericAllocationHandle h);
CUresult sw_export_handles(sw_policy *p, sw_export *x, size_t from, size_t count, sw_export_each each,
                           void *ctx);

/* ---- counters for the stats publisher ---------------------------------- */
/* Why an allocation passed through to the driver instead of the pool,
 * once: X(reason, name, stat) with stat the stats segment's gauge of its
 * bytes (stats/layout.h's SPW_C_<stat>, by name only; NONE: host memory,
 * no device gauge). The public enum (spillway.h's SPILLWAY_PT_*) is
 * checked against it, value by value (shim/introspect.c). */
#define SW_PASSTHROUGH_REASONS(X)                                                  \
    X(IPC, "ipc", PASS_IPC)                     /* a shareable (IPC) handle type */ \
    X(MANAGED, "managed", PASS_MANAGED)         /* cuMemAllocManaged */             \
    X(CAPTURE, "capture", PASS_CAPTURE)         /* stream-ordered, during capture */ \
    X(HOST_LOCATION, "host-location", NONE)     /* cuMemCreate on a host location */ \
    X(DISABLED, "disabled", PASS_OTHER)         /* the device has no pool */        \
    X(OTHER, "other", PASS_OTHER)               /* special properties */        \
    X(ARRAY, "array", PASS_OTHER)               /* a CUDA array (texture memory) */

typedef enum sw_passthrough_reason {
#define SW_PT_ENUM(reason, name, stat) SW_PT_##reason,
    SW_PASSTHROUGH_REASONS(SW_PT_ENUM)
#undef SW_PT_ENUM
    SW_PT_NREASONS
} sw_passthrough_reason;
const char *sw_passthrough_reason_name(sw_passthrough_reason r);
/* Counts one pass-through allocation of `bytes` on dev. */
void sw_count_passthrough(sw_policy *p, int dev, sw_passthrough_reason r, size_t bytes);

/* ---- memory outside the pool (lend.c) -------------------------------------
 * Device memory the driver allocates past the pool takes its bytes out of
 * the pool's device pages, so that together they never hold more of the
 * device than the limit. sw_lend before the driver allocates bytes outside
 * the pool on dev: the pool's page cap becomes the limit less everything
 * lent, and pages beyond it go back to the driver now (free, cached, after
 * a sync those of covered frees, with spill the coldest live data moved to
 * the host first). OUT_OF_MEMORY, nothing lent, when more than the limit
 * would be lent or the pages cannot be given back (no spill, or the device
 * stays busy past the quiesce deadline); a device not set up yet only
 * records it. sw_unlend after that memory was freed or its allocation
 * failed. Which pass-through reasons lend: sw_passthrough_lends (device
 * memory on a device with a pool). */
bool sw_passthrough_lends(sw_passthrough_reason r);
CUresult sw_lend(sw_policy *p, int dev, size_t bytes);
void sw_unlend(sw_policy *p, int dev, size_t bytes);
uint64_t sw_lent_bytes(const sw_policy *p, int dev);

/* The spill figures, once: X(name, counter, stat) with name the field of
 * sw_spill_stats and sw_counters, counter the device counter it is read
 * from (internal.h's sw_dev_counters) and stat the stats segment's counter
 * that publishes it (stats/layout.h's SPW_C_<stat>, by name only: the shim
 * publishes them, policy/ knows nothing of the segment). */
#define SW_SPILL_FIGURES(X)                                                     \
    X(host_bytes, host_pool_bytes, HOST)              /* pinned host pages created */ \
    X(host_in_use_bytes, host_in_use, SPILLED)        /* host pages backing program data */ \
    X(spill_bytes, spill_bytes, SPILL_BYTES)          /* device -> host moves */ \
    X(spill_events, spill_events, SPILL_EVENTS)       /* an event = one batch */ \
    X(fill_bytes, fill_bytes, FILL_BYTES)             /* host -> device moves */ \
    X(fill_events, fill_events, FILL_EVENTS)                                    \
    X(syncs, syncs, SYNCS)                            /* device syncs the pool made */ \
    X(stall_ns, stall_ns, STALL_NS)                   /* gates closed for moves */ \
    X(spill_ns, spill_ns, SPILL_NS)                   /* moving to the host */    \
    X(fill_ns, fill_ns, FILL_NS)                      /* moving to the device */  \
    X(host_creates_waited, host_creates_waited, HOST_WAITS) /* host pages created on a caller's path */ \
    X(faulted_bytes, faulted, FAULTED)                /* device pages refused calls keep out */ \
    X(wait_timeouts, wait_timeouts, WAIT_TIMEOUTS)    /* waits for the device past their deadline */ \
    X(backoffs, backoffs, BACKOFFS)                   /* operations that did not wait: device overdue */ \
    X(spill_faults, spill_faults, SPILL_FAULTS)       /* spills the driver refused: host pages instead */

typedef struct sw_counters {
    uint64_t limit_bytes;    /* device bytes spillway may hold */
    uint64_t pool_bytes;     /* device pages created (held from the driver) */
    uint64_t mapped_bytes;   /* pages mapped in the arena or for program VMM */
    uint64_t in_use_bytes;   /* bytes the program holds (requested sizes + VMM) */
    uint64_t peak_in_use_bytes;
    uint64_t backing_bytes;  /* pages that back at least one live allocation */
    uint64_t peak_backing_bytes;
    uint64_t pending_bytes;  /* freed, waiting for a sync point or an event */
    /* faulted_bytes (SW_SPILL_FIGURES): device pages refused driver calls
     * keep out of the pool (lost for good, or stranded or stuck until the
     * driver lets them go), held */
    /* device pages a failed move left mapped without access, kept from
     * copies and new owners until the driver grants them (residency.c) */
    uint64_t noaccess_pages;
#define SW_SPILL_FIELD(name, counter, stat) uint64_t name;
    SW_SPILL_FIGURES(SW_SPILL_FIELD) /* the spill figures, as sw_spill_stats */
#undef SW_SPILL_FIELD
    uint64_t allocs, frees, ooms, maps, unmaps, reclaims;
    uint64_t ooms_by[SW_OOM_NREASONS]; /* refusals by reason */
    uint64_t va_bytes;       /* virtual address space reserved (arena and scratch) */
    uint64_t streams, events; /* the pool's own, alive */
    /* In SW_SPILL_FIGURES above: wait_timeouts, waits for this device (its
     * work gate, its sync) that ran into their deadline (the device was
     * busy and a caller went on without it); backoffs, operations that
     * could do without the device (an allocation host pages can back, a
     * fill: the launch reads the data where it is) and did not wait at
     * all, a wait for it being overdue; spill_faults, allocations whose
     * spill the driver refused (the move undone, the bytes where they
     * were) that got host pages instead. */
    uint64_t passthrough_count[SW_PT_NREASONS];
    uint64_t passthrough_bytes[SW_PT_NREASONS];
} sw_counters;
/* Device pages dev holds from the driver (pool_bytes), lock-free: cheap
 * enough for the shim to publish after every allocation. */
uint64_t sw_pool_bytes(const sw_policy *p, int dev);
/* Bytes of dev's pool that a new allocation cannot have: the pages live
 * data holds, on the device or spilled (a page serves an allocation of any
 * size only when nothing live is on it), plus the whole pages memory
 * outside the pool takes (sw_lend) and the pages refused driver calls keep
 * out of the pool (faulted_bytes). Pages only pending frees hold are not
 * counted (an allocation that needs them syncs and takes them: free at
 * once, as the driver's memory after cuMemFree), except those of slab
 * slots, held until their frees are released; frees a sync point already
 * covered are released first. The unused part of a held page is not free:
 * only a small enough allocation could use it. For cuMemGetInfo: it takes
 * the device lock and walks the pending frees (held.c), not for a hot
 * path. 0 for a device that is not set up. */
uint64_t sw_held_bytes(sw_policy *p, int dev);
/* A snapshot of dev's counters (each read atomically). */
CUresult sw_get_counters(sw_policy *p, int dev, sw_counters *out);

/* dev's spill gauges and counters, lock-free (relaxed loads): cheap enough
 * for the shim to publish after every allocation, free and fill. host_in_use
 * counts freed data until its free is collected (at the next pool miss or
 * move). All zero for a device that is not set up. */
typedef struct sw_spill_stats {
#define SW_SPILL_FIELD(name, counter, stat) uint64_t name;
    SW_SPILL_FIGURES(SW_SPILL_FIELD)
#undef SW_SPILL_FIELD
} sw_spill_stats;
void sw_get_spill_stats(const sw_policy *p, int dev, sw_spill_stats *out);
/* A number that changes whenever pool_bytes or a spill figure of dev may
 * have: read it (acquire) before the figures, and skip them when it is the
 * one seen at the last publication. */
uint64_t sw_figures_gen(const sw_policy *p, int dev);

#endif
