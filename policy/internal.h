/* Structures shared by the policy/ files; not part of the shim's API.
 *
 * Locks, always taken in this order (never the reverse):
 *   handle-table lock -> class lock (one per size class) -> device lock
 *   -> free-queue lock; the page-table grow lock is a leaf.
 * The device lock guards the arena, the pool, page objects, block records
 * and program VMM handles of its device. Backend calls may happen under the
 * device lock (creating or mapping a page, a synchronize on the slow path). */
#ifndef SPILLWAY_POLICY_INTERNAL_H
#define SPILLWAY_POLICY_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "policy/policy.h"

#define SW_MIN_ALIGN 256u
#define SW_MAX_CLASSES 64
#define SW_BIN_EXACT 64 /* ranges of 1..63 pages have a bin each */
#define SW_NBINS (SW_BIN_EXACT + 40)
#define SW_NONE UINT32_MAX
/* Pending frees that make an allocation miss synchronize rather than map
 * fresh pages: a sync costs ~1 us on an idle device, a page map + access
 * ~40 us, and a short queue stays in cache. */
#define SW_SYNC_BATCH_FREES 1024

typedef struct sw_device sw_device;

/* ---- page table (pagetable.c) ----------------------------------------- */

/* A logical page: what one VA page of spillway shows the program. Its backing
 * (handle, loc) changes when it changes residency; the VA does not. */
typedef struct sw_page {
    CUmemGenericAllocationHandle handle; /* current physical backing */
    uint8_t loc;                         /* sw_loc */
    uint32_t nmaps;                      /* VAs it is mapped at */
    sw_device *dev;
    struct sw_page *next_free;
} sw_page;

/* How recently the program used an owner (a block, a slab or a program
 * mapping) and how many of its pages live on the host: what spill picks its
 * victims by and what tells sw_touch that a fill may help. Written lock-free
 * by sw_touch; host_pages under the device lock. */
typedef struct sw_heat {
    _Atomic uint64_t touched; /* sw_policy.clock when last used */
    _Atomic uint32_t host_pages;
} sw_heat;

/* What owns a VA page, as a tagged pointer in sw_pte.owner. */
enum { SW_OWN_NONE = 0, SW_OWN_BLOCK = 1, SW_OWN_SLAB = 2, SW_OWN_VMM = 3 };
#define SW_OWN_TAG(o) ((unsigned)((o) & 3u))
#define SW_OWN_PTR(o) ((void *)((o) & ~(uintptr_t)3u))
#define SW_OWN(ptr, tag) ((uintptr_t)(ptr) | (uintptr_t)(tag))

typedef struct sw_pte {
    _Atomic uintptr_t owner;  /* SW_OWN(...) */
    _Atomic(sw_page *) page;  /* mapped page, NULL when the VA is unmapped */
} sw_pte;

/* Four-level radix table indexed by VA page number; levels are created once
 * and never freed before the table, so lookups need no lock. Covers VAs
 * below 2^57. */
typedef struct sw_pagetable {
    unsigned shift; /* log2(page size) */
    unsigned top_bits;
    _Atomic(void *) *top;
    pthread_mutex_t grow;
} sw_pagetable;

int sw_pt_init(sw_pagetable *pt, unsigned shift);
void sw_pt_destroy(sw_pagetable *pt);
sw_pte *sw_pt_get(const sw_pagetable *pt, CUdeviceptr va);  /* NULL: never created */
sw_pte *sw_pt_ensure(sw_pagetable *pt, CUdeviceptr va);     /* NULL: out of memory */

/* ---- physical page pool (pool.c) -------------------------------------- */

typedef struct sw_pool {
    size_t limit_pages;     /* device pages never exceed this */
    size_t created;         /* device pages created */
    CUmemGenericAllocationHandle *free; /* unmapped device pages, a stack */
    size_t nfree;
    size_t host_limit_pages;
    size_t host_created;
    CUmemGenericAllocationHandle *host_free;
    size_t host_nfree, host_cap;
    sw_page *page_objs; /* recycled sw_page objects */
} sw_pool;

/* All under the device lock. */
int sw_pool_init(sw_device *d, size_t limit_pages, size_t host_limit_pages);
CUresult sw_pool_prefill(sw_device *d);
size_t sw_pool_available(const sw_device *d); /* free + still creatable */
CUresult sw_pool_take(sw_device *d, sw_loc loc, CUmemGenericAllocationHandle *h);
void sw_pool_put(sw_device *d, sw_loc loc, CUmemGenericAllocationHandle h);
CUresult sw_pool_grow_host(sw_device *d); /* one more free host page */
CUresult sw_pool_destroy(sw_device *d);
sw_page *sw_page_new(sw_device *d, CUmemGenericAllocationHandle h, sw_loc loc);
void sw_page_free(sw_device *d, sw_page *pg);
void sw_page_objs_destroy(sw_device *d);

/* ---- VA arena (arena.c) ----------------------------------------------- */

/* Page-granular ranges of one reservation. Free ranges are coalesced with
 * their neighbours whatever their pages' mapping state and kept in size
 * bins; a free page keeps its mapping (cached) until reclaimed. */
typedef struct sw_arena {
    CUdeviceptr base;
    uint32_t npages;
    uint8_t *used;     /* per page: 1 while in an allocated range */
    uint8_t *mapped;   /* per page: 1 while a physical page is mapped there */
    uint32_t *rlen;    /* free range length, at its first page */
    uint32_t *rstart;  /* free range start, at its last page */
    uint32_t *next, *prev; /* bin list links, at a free range's first page */
    uint32_t bin_head[SW_NBINS];
    uint64_t binmap[(SW_NBINS + 63) / 64];
    size_t free_pages;
    size_t free_mapped; /* free pages still mapped */
} sw_arena;

/* How far an arena allocation may go to find backing. */
typedef enum sw_map_mode {
    SW_CACHED_ONLY = 0, /* only pages already mapped */
    SW_MAP_FRESH = 1,   /* may map free pool pages, and create pages up to the
                         * limit unless too many free pages sit cached */
    SW_RECLAIM = 2,     /* reclaims (unmaps) free cached pages before creating
                         * any: the caller synchronized */
} sw_map_mode;

int sw_arena_init(sw_device *d, CUdeviceptr base, uint32_t npages);
void sw_arena_destroy(sw_device *d);
/* Under the device lock: a range of n mapped pages, its first page index in
 * *start. OUT_OF_MEMORY when mode does not allow finding one. */
CUresult sw_arena_alloc(sw_device *d, uint32_t n, sw_map_mode mode, uint32_t *start);
void sw_arena_free(sw_device *d, uint32_t start, uint32_t n);
/* Unmaps up to want free cached pages back into the pool (caller synchronized). */
CUresult sw_arena_reclaim(sw_device *d, size_t want, size_t *got);
/* Unmaps every mapped page of the arena (destroy). */
CUresult sw_arena_unmap_all(sw_device *d);
CUresult sw_map_page(sw_device *d, CUdeviceptr va, sw_page *pg);
CUresult sw_unmap_page(sw_device *d, CUdeviceptr va);
static inline CUdeviceptr sw_arena_va(const sw_arena *a, uint32_t i, unsigned shift)
{
    return a->base + ((CUdeviceptr)i << shift);
}

/* ---- large blocks and slabs (suballoc.c) ------------------------------- */

enum { SW_LIVE = 1, SW_PENDING = 2, SW_DEAD = 0 };

typedef struct sw_block {
    CUdeviceptr base;
    size_t size;      /* requested */
    uint32_t start, npages;
    _Atomic int state;
    sw_device *dev;
    sw_heat heat;
    struct sw_block *next_free;
} sw_block;

typedef struct sw_slab {
    CUdeviceptr base;
    uint32_t cls, nslots, nused, hint;
    uint32_t start; /* arena page */
    sw_device *dev;
    sw_heat heat;
    struct sw_slab *next, *prev; /* class partial list / recycle list */
    bool on_partial;
    uint64_t *live;   /* slot held by the program */
    uint64_t *used;   /* slot not reusable (live or pending) */
    uint32_t *req;    /* requested size per slot */
} sw_slab;

typedef struct sw_class {
    pthread_mutex_t lock;
    uint32_t size;
    uint32_t nslots;
    sw_slab *partial; /* slabs with a free slot */
    sw_slab *spare;   /* recycled slab objects of this class */
} sw_class;

int sw_classes_init(sw_device *d);
void sw_classes_destroy(sw_device *d);
int sw_class_of(const sw_device *d, size_t size); /* -1: large */
CUresult sw_slab_alloc(sw_device *d, int cls, size_t size, sw_map_mode mode, CUdeviceptr *out);
CUresult sw_block_alloc(sw_device *d, size_t size, sw_map_mode mode, CUdeviceptr *out);
/* Marks the allocation at ptr not live (not yet reusable): *bucket and
 * *bytes describe it for the free queue. INVALID_VALUE if not a live base. */
CUresult sw_mark_freed(sw_policy *p, CUdeviceptr ptr, sw_device **dev, uint32_t *bucket,
                       size_t *bytes);
/* Makes a freed allocation reusable (its sync point or event is behind us). */
void sw_release(sw_device *d, CUdeviceptr ptr, uint32_t bucket);
/* Gives a freed, still-reserved allocation to a new owner of `size` bytes. */
void sw_revive(sw_device *d, CUdeviceptr ptr, uint32_t bucket, size_t size);
uint32_t sw_bucket_of(const sw_device *d, size_t size);
CUresult sw_lookup_owner(sw_policy *p, CUdeviceptr ptr, CUdeviceptr *base, size_t *size,
                         int *dev);

/* ---- pending frees (freeq.c) ------------------------------------------ */

typedef struct sw_pend {
    CUdeviceptr ptr;
    uint32_t bucket;
    size_t bytes;
    uint64_t epoch;
    CUstream stream;
    CUevent ev;
    bool same_stream_ok;
    struct sw_pend *prev, *next;
} sw_pend;

typedef struct sw_pend_list {
    sw_pend *head, *tail;
} sw_pend_list;

/* One shard of the queue: its own lock, lists, records and idle events.
 * cuMemFree'd blocks go to the freeing thread's shard, cuMemFreeAsync'd ones
 * to their stream's (where an allocation on that stream looks), so threads
 * freeing at once rarely share a lock. */
typedef struct sw_freeq_shard {
    pthread_mutex_t lock;
    sw_pend_list sync_list;  /* cuMemFree: wait for a covering sync */
    sw_pend_list async_list; /* cuMemFreeAsync: wait for the event or a sync */
    sw_pend *spare;
    CUevent *events;         /* idle events to record again */
    size_t nevents, cap_events;
    size_t sync_bytes, async_bytes;
    size_t count;            /* entries on both lists */
} __attribute__((aligned(64))) sw_freeq_shard;

#define SW_FREEQ_SHARDS 8

typedef struct sw_freeq {
    sw_freeq_shard shard[SW_FREEQ_SHARDS];
    _Atomic uint64_t epoch;   /* bumped when a sync begins */
    _Atomic uint64_t covered; /* frees with epoch <= covered are synced */
} sw_freeq;

int sw_freeq_init(sw_freeq *q);
CUresult sw_freeq_destroy(sw_device *d);
CUresult sw_freeq_push(sw_device *d, CUdeviceptr ptr, uint32_t bucket, size_t bytes,
                       bool async, CUstream stream);
/* A pending block freed on stream with this bucket, taken off the queue. */
bool sw_freeq_take_stream(sw_device *d, CUstream stream, uint32_t bucket, CUdeviceptr *ptr);
/* Releases what is covered by a sync or a completed event; returns bytes. */
size_t sw_freeq_collect(sw_device *d, bool poll_events);
size_t sw_freeq_pending(sw_device *d, size_t *count);
/* Synchronizes dev (one backend call) and releases everything it covers. */
CUresult sw_sync_and_collect(sw_device *d);
void sw_freeq_forget_stream(sw_device *d, CUstream stream);

/* ---- program VMM handles (vmm.c) -------------------------------------- */

typedef struct sw_vmm {
    uint64_t id;      /* handle value handed to the program */
    sw_device *dev;
    size_t size;
    uint32_t npages;
    uint32_t refs;    /* create + retains - releases */
    uint32_t maps;    /* live mappings */
    sw_page **pages;
} sw_vmm;

/* One live mapping of a handle at the program's VA. */
typedef struct sw_vmap {
    CUdeviceptr va;
    size_t size;
    sw_vmm *h;        /* NULL once unmapped (the record is recycled) */
    uint64_t access;  /* devices the program granted access (cuMemSetAccess) */
    sw_heat heat;
    struct sw_vmap *next, *prev;
} sw_vmap;

CUresult sw_vmm_destroy_all(sw_policy *p);
/* n device pages from dev's pool for a program handle, escalating to a sync
 * and reclaiming cached arena pages; called without the device lock. */
CUresult sw_take_pages(sw_device *d, size_t n, CUmemGenericAllocationHandle *out);

/* ---- device and policy (policy.c) ------------------------------------- */

typedef struct sw_dev_counters {
    _Atomic uint64_t in_use, peak_in_use, backing, peak_backing, mapped, host_in_use;
    _Atomic uint64_t allocs, frees, ooms, syncs, maps, unmaps, reclaims;
    _Atomic uint64_t spill_bytes, spill_events, fill_bytes, fill_events;
    _Atomic uint64_t pool_bytes; /* mirror of pool.created, for lock-free readers */
    _Atomic uint64_t host_pool_bytes; /* mirror of pool.host_created, likewise */
    _Atomic uint64_t pt_count[SW_PT_NREASONS], pt_bytes[SW_PT_NREASONS];
} sw_dev_counters;

struct sw_device {
    sw_policy *pol;
    int id;
    _Atomic bool ready;
    sw_device_config cfg;
    size_t page;
    unsigned shift;
    uint64_t access_mask; /* devices given access to the arena's mappings */
    pthread_mutex_t lock;
    sw_pool pool;
    sw_arena arena;
    CUdeviceptr reserve_base; /* whole reservation: arena + scratch page */
    size_t reserve_size;
    CUdeviceptr scratch;      /* one page of VA used while moving a page */
    sw_block *spare_blocks;
    int nclasses;
    sw_class classes[SW_MAX_CLASSES];
    uint8_t *class_of;        /* (size + 255) / 256 -> class */
    size_t class_max;         /* largest slab size */
    sw_freeq q;
    sw_dev_counters c;
};

struct sw_policy {
    sw_backend be;
    size_t page;
    unsigned shift;
    sw_pagetable pt;
    sw_device dev[SW_MAX_DEVICES];
    _Atomic int ndev_hi; /* 1 + the highest device index set up */
    pthread_mutex_t handles_lock;
    sw_vmm **handles;         /* by index; NULL slots are free */
    size_t nhandles, cap_handles;
    uint64_t handle_tag;
    uint64_t handle_seq;      /* makes a reused index a new handle value */
    sw_vmap *vmaps;           /* live program mappings */
    sw_vmap *spare_vmaps;
    /* Held shared by every bracket of program work (sw_work_begin), taken
     * exclusively while pages change residency: no work is submitted
     * between the covering sync and the remap. Outermost lock of all. */
    pthread_rwlock_t gate;
    _Atomic uint64_t clock;   /* ticks once per touch: the heat scale */
};

/* ---- work gate (gate.c) ----------------------------------------------- */

int sw_gate_init(sw_policy *p);
void sw_gate_destroy(sw_policy *p);
/* Waits for the work brackets in progress and holds new ones back.
 * NOT_PERMITTED when the calling thread is inside a bracket itself. */
CUresult sw_gate_close(sw_policy *p);
void sw_gate_open(sw_policy *p);

/* ---- residency moves and spill (residency.c, spill.c) ------------------ */

/* The heat of the owner of the page at va (NULL: no owner). */
sw_heat *sw_heat_of(sw_policy *p, CUdeviceptr va);
/* A fresh owner: used now, host pages counted over [va, va + n pages).
 * Device lock held. */
void sw_heat_init(sw_policy *p, sw_heat *h, CUdeviceptr va, uint32_t n);
/* Moves the page mapped at va to `where` (no-op when it is there). The gate
 * is closed, the device synchronized since; handle and device locks held. */
CUresult sw_move_page(sw_policy *p, sw_device *d, CUdeviceptr va, sw_loc where);
/* Makes at least `need` device pages available to d (free in the pool or
 * still creatable): releases covered frees, reclaims cached free pages, and
 * with cfg.spill moves the coldest pages of live data to the host.
 * OUT_OF_MEMORY when that cannot reach `need`. No lock held by the caller. */
CUresult sw_make_room(sw_device *d, size_t need);

void sw_count_add(_Atomic uint64_t *v, uint64_t n, _Atomic uint64_t *peak);
void sw_count_sub(_Atomic uint64_t *v, uint64_t n);
sw_device *sw_dev(sw_policy *p, int dev); /* NULL unless ready */

#endif
