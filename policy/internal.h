/* Structures shared by the policy/ files; not part of the shim's API.
 * docs/design.md ("The pool") tells the whole story; this header groups the
 * declarations by the file that defines them, lowest layer first. A file
 * calls only files above it in this list (never the other way round):
 *
 *   device.c     per-device counters, sw_dev, sw_new_id  (calls nothing)
 *   gate.c       the work gates (one per device; gate.h)
 *   pagetable.c  VA page -> owner, users, logical page (pages.h)
 *   rate.c       rates of use of a heat record (heat.h)
 *   pool.c       physical pages (device up to the limit less what is lent,
 *                host up to its limit; pages.h)
 *   syncer.c     device syncs a caller can stop waiting for; sync tickets
 *                (gate.h)
 *   extent.c     VA segments and extents: bins, placement, carving, merging
 *                (extent.h)
 *   spans.c      per-buffer heat inside a big program mapping (heat.h)
 *   reserve.c    pinned host pages kept ready by a thread of its own
 *   heat.c       the heat clock, touch, page heat, host page counts
 *                (heat.h)
 *   pages.c      page users and owners, mapping, the cached list and the ring
 *                (pages.h)
 *   suballoc.c   slabs and blocks on extents; free, release, revive, lookup
 *                (suballoc.h)
 *   freeq.c      pending frees (calls suballoc.c to release; freeq.h)
 *   held.c       what live data holds of the pool (cuMemGetInfo's free)
 *   quiesce.c    closing the gates and syncing before a move
 *   counters.c   the figures the shim publishes
 *   residency.c  moving pages between device and host
 *   spill.c      victims and spill
 *   fill.c       fill, and the no-thrash rule
 *   acquire.c    backing a carved range: pool, reclaim, sync, spill, host
 *   lend.c       device memory outside the pool: pages given back for it
 *   vmm.c        program-managed VMM
 *   promote.c    program VMM made shareable (exports)
 *   export.c     pool memory made permanent for legacy IPC
 *   alloc.c      allocation and free (policy.h)
 *   policy.c     the rest of the API of policy.h: the policy, devices
 *
 * Locks, always taken in this order (never the reverse):
 *   work gate (exclusive: spill, fill) -> class lock (one per shard of a
 *   size class) -> handle-table lock -> device lock -> free-queue shard lock;
 *   the page-table grow lock is a leaf. No thread waits for the gate while
 *   it holds any other of these (allocation escalates with none held), and
 *   work brackets (the gate held shared) take none of them.
 * The device lock guards the extents, the page pool, page objects, page
 * users/owners and the lists of its device, and program VMM handles' pages.
 * The steady allocation and free take none of it (issue 14 item 6): a
 * covered free is reused from a free-queue shard, and a free finds its
 * block or slab without it (suballoc.c); only a carve, a release to the
 * arena and the slow paths do.
 * Backend calls may happen under the device lock (creating or mapping a
 * page, a synchronize on the slow path). */
#ifndef SPILLWAY_POLICY_INTERNAL_H
#define SPILLWAY_POLICY_INTERNAL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "policy/lanes.h"
#include "policy/policy.h"

#define SW_MIN_ALIGN 256u
#define SW_MAX_CLASSES 32
#define SW_NONE UINT32_MAX
/* Pending frees that make an allocation miss synchronize rather than map
 * fresh pages: a sync costs ~1 us on an idle device, a page map + access
 * ~40 us, and a short queue stays in cache. */
#define SW_SYNC_BATCH_FREES 1024
/* Pages of VA one device keeps for moving pages (mapped while copying):
 * two windows, one copying while the other is remapped. */
#define SW_SCRATCH_PAGES 16

typedef struct sw_device sw_device;
typedef struct sw_ext sw_ext;
typedef struct sw_stuck sw_stuck;
typedef struct sw_strand sw_strand;
typedef struct sw_noacc sw_noacc;

#include "policy/extent.h"
#include "policy/freeq.h"
#include "policy/gate.h"
#include "policy/heat.h"
#include "policy/pages.h"
#include "policy/suballoc.h"

/* ---- device.c ----------------------------------------------------------- */

typedef struct sw_dev_counters {
    /* Written on every allocation and free, from every thread: apart from
     * the figures the shim reads after each of them (issue 14 item 6). */
    _Atomic uint64_t in_use __attribute__((aligned(64))), peak_in_use;
    sw_lanes allocs, frees;
    _Atomic uint64_t backing __attribute__((aligned(64))), peak_backing, mapped, host_in_use;
    _Atomic uint64_t ooms, syncs, maps, unmaps, reclaims;
    _Atomic uint64_t spill_bytes, spill_events, fill_bytes, fill_events;
    _Atomic uint64_t pool_bytes;      /* mirror of pool.created, for lock-free readers */
    _Atomic uint64_t host_pool_bytes; /* mirror of pool.host_created, likewise */
    _Atomic uint64_t va_bytes;        /* VA reserved for the arena */
    _Atomic uint64_t stall_ns;        /* gates closed for moves, in total */
    _Atomic uint64_t spill_ns, fill_ns; /* moving, each way (sw_move_pages) */
    _Atomic uint64_t host_creates_waited; /* host pages created on a caller's path */
    _Atomic uint64_t wait_timeouts;   /* waits for this device that hit their deadline */
    _Atomic uint64_t backoffs;        /* operations that did not wait: a sync overdue */
    _Atomic uint64_t spill_faults;    /* spills the driver refused, host pages instead */
    _Atomic uint64_t streams, events; /* the pool's own, alive */
    /* Device pages out of the pool after refused driver calls, bytes: lost
     * (kept for good), stranded or stuck at a scratch slot (until the
     * driver lets them go). Held (held.c): no allocation can have them. */
    _Atomic uint64_t faulted;
    _Atomic uint64_t pt_count[SW_PT_NREASONS], pt_bytes[SW_PT_NREASONS];
    _Atomic uint64_t oom[SW_OOM_NREASONS];
    /* Bumped after every change of a figure the shim publishes after each
     * allocation (SW_SPILL_FIGURES and pool_bytes), which change only
     * through sw_figure_add/sub/set: a publisher that finds it unchanged
     * need not read them again (issue 14 item 6: re-reading them was 15%
     * of an allocation's instructions). */
    _Atomic uint64_t figures_gen;
} sw_dev_counters;

static inline void sw_figure_add(sw_dev_counters *c, _Atomic uint64_t *v, uint64_t n)
{
    atomic_fetch_add_explicit(v, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->figures_gen, 1, memory_order_release);
}

static inline void sw_figure_sub(sw_dev_counters *c, _Atomic uint64_t *v, uint64_t n)
{
    atomic_fetch_sub_explicit(v, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->figures_gen, 1, memory_order_release);
}

static inline void sw_figure_set(sw_dev_counters *c, _Atomic uint64_t *v, uint64_t n)
{
    atomic_store_explicit(v, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->figures_gen, 1, memory_order_release);
}

void sw_count_add(_Atomic uint64_t *v, uint64_t n, _Atomic uint64_t *peak);
void sw_count_sub(_Atomic uint64_t *v, uint64_t n);
sw_device *sw_dev(sw_policy *p, int dev); /* NULL unless ready */
/* A new ID for an allocation, a program mapping or a program handle
 * (sw_ids): unique in the process and never given again (never 0),
 * whichever policy or thread asks. From the calling thread's batch,
 * refilled from the process's counter when used up; inline (on the
 * allocation's hot path). */
extern _Thread_local uint64_t sw_id_next, sw_id_end;
uint64_t sw_new_id_batch(void);
static inline uint64_t sw_new_id(void)
{
    if (__builtin_expect(sw_id_next == sw_id_end, 0))
        return sw_new_id_batch();
    return SW_ID_BIT | sw_id_next++;
}
/* The device lock (sw_device.lock), the one all threads of a device share.
 * Taken through a function of its own, never inlined, so that a profile
 * counts its acquisitions exactly (make bench-threads). */
void sw_dev_lock(sw_device *d);
void sw_dev_unlock(sw_device *d);
/* Counts a refusal of dev by reason and remembers it for the calling
 * thread (sw_refusal_reason). Returns CUDA_ERROR_OUT_OF_MEMORY. */
CUresult sw_refuse(sw_device *d, sw_oom_reason why);
/* Tells the host-page reserve (reserve.c) that d's reserve runs low; a
 * leaf: any lock may be held. */
void sw_reserve_wake(sw_device *d);

/* ---- residency.c ---------------------------------------------------------- */

/* Moves the pages mapped at vas[0..n) to `where` (those already there, or
 * aliased, are skipped), taking new pages from the pool, pipelined on the
 * device's own streams. Returns how many moved; *err why it stopped short
 * (OUT_OF_MEMORY: no page left at `where`). Quiesced (sw_quiesce); handle
 * and device locks held. */
/* The device's two mover streams, created on first use. Device lock held. */
CUresult sw_movers(sw_device *d);
size_t sw_move_pages(sw_policy *p, sw_device *d, const CUdeviceptr *vas, size_t n, sw_loc where,
                     CUresult *err);
/* One page of it; NOT_SUPPORTED for an aliased page. */
CUresult sw_move_page(sw_policy *p, sw_device *d, CUdeviceptr va, sw_loc where);
/* Whether pg can move at all: mapped once, and reachable by d. */
bool sw_page_movable(sw_policy *p, sw_device *d, const sw_page *pg);

/* ---- spill.c ---------------------------------------------------------------- */

/* Devices whose work can reach d's pages: d, its peers, and the devices
 * the program gave access to its VMM mappings of d. Device lock held. */
uint64_t sw_reach(sw_device *d);
/* Closes the gates of *devices (sw_reach(d), computed here) and syncs each
 * of them, until the device's deadline: afterwards no work that can touch
 * d's pages is in flight or can be submitted through a bracket until
 * sw_gate_open(p, *devices). The sync also releases the frees it covers.
 * NOT_READY (nothing held) when a bracket, a sync or a stream capture would
 * keep it waiting past the deadline (*by, the operation's: sw_deadline_of),
 * or that deadline is past already: the caller goes on without moving
 * pages. */
CUresult sw_quiesce(sw_device *d, uint64_t *by, uint64_t *devices);
/* Opens the gates again; the time since since_ns counts as stalled. */
void sw_unquiesce(sw_device *d, uint64_t devices, uint64_t since_ns);
/* A move's critical section, as every move takes it: sw_quiesce, then the
 * handles lock and d's lock; sw_move_end undoes it in reverse and counts
 * the stall. sw_move_begin's errors are sw_quiesce's (NOT_READY: busy or
 * capturing), and NOT_READY when a device was granted access to d's pages
 * while the others were quiesced; nothing is held then. */
typedef struct sw_quiet {
    uint64_t held; /* devices quiesced */
    uint64_t t0;   /* when the stall began */
} sw_quiet;
CUresult sw_move_begin(sw_device *d, sw_quiet *q, uint64_t *by);
void sw_move_end(sw_device *d, const sw_quiet *q);
/* Moves up to want of d's coldest pages of live data to the host, never a
 * page of [keep_lo, keep_hi) (what the caller is backing) nor one whose
 * rate (sw_heat_rate) is above max_rate; returns how many moved (their
 * device pages are free in the pool). Coldest: lowest rate, then not used
 * since the hand last passed, then the hand's order, among a window of
 * pages ahead of the hand. *err: why it stopped short (OUT_OF_MEMORY: the host limit).
 * Quiesced; handle and device locks held. The caller counts the spill
 * event (one per quiesce). */
size_t sw_spill_coldest(sw_device *d, size_t want, CUdeviceptr keep_lo, CUdeviceptr keep_hi,
                        uint32_t max_rate, CUresult *err);
/* The lowest rate among the pages just ahead of the hand (the hand does
 * not move; UINT32_MAX: none there), remembered for a few ticks. Device
 * lock held. */
uint32_t sw_ring_floor(sw_device *d, uint64_t now);

/* ---- reserve.c ---------------------------------------------------------------- */

/* Starts the reserve's thread (once; it then sleeps until woken). */
CUresult sw_reserve_start(sw_policy *p);
void sw_reserve_stop(sw_policy *p);

/* ---- acquire.c -------------------------------------------------------------- */

/* Backs every unmapped page of the carved extent e, escalating as far as
 * it must: the pool, reclaimed cached pages, a sync releasing pending
 * frees, spilling colder pages (cfg.spill), then host pages (cfg.spill,
 * within the host limit). OUT_OF_MEMORY with *why when that is not enough;
 * e stays carved either way (the caller discards it on failure). Called
 * without locks. by: the allocation's deadline (sw_deadline_of), shared
 * with the waits made before. */
CUresult sw_acquire(sw_device *d, sw_ext *e, bool synced, uint64_t *by, sw_oom_reason *why);
/* n pages for a program VMM handle, the same way: device pages first, then
 * (with spill) host pages; locs[i] tells where out[i] lives. */
CUresult sw_acquire_pages(sw_device *d, size_t n, CUmemGenericAllocationHandle *out,
                          sw_loc *locs, sw_oom_reason *why);

/* ---- vmm.c ------------------------------------------------------------------ */

typedef struct sw_vmm {
    uint64_t id;      /* handle value handed to the program */
    sw_device *dev;
    size_t size;
    uint32_t npages;
    uint32_t refs;    /* create + retains - releases */
    uint32_t maps;    /* live mappings */
    sw_page **pages;
    uint64_t user;    /* the shim's word: what the program asked for */
    uint64_t block_id; /* MEMORY_BLOCK_ID of its mappings (sw_ids) */
    /* Made the driver's (promote.c): its memory is this driver handle, it
     * has no pages and no mappings of spillway's any more. */
    bool promoted;
    CUmemGenericAllocationHandle real;
} sw_vmm;

/* One live mapping of a handle at the program's VA. */
typedef struct sw_vmap {
    CUdeviceptr va;
    size_t size;
    sw_vmm *h;        /* NULL once unmapped (the record is recycled) */
    uint64_t access;  /* devices the program granted access (cuMemSetAccess) */
    uint64_t id;      /* BUFFER_ID (sw_ids), new at each cuMemMap */
    sw_heat heat;
    /* Per-buffer heat of a large mapping (spans.c; NULL: one heat for it
     * all). Set before the mapping is published, kept when its record is
     * recycled until the next mapping replaces it. */
    _Atomic(sw_spans *) spans;
    struct sw_vmap *next, *prev;
} sw_vmap;

CUresult sw_vmm_destroy_all(sw_policy *p);
/* vmm.c for promote.c, under the handle lock: the live handle with value h
 * (NULL: none), the mapping at va, and the unmap of a mapping's first
 * `done` pages (device lock held too). */
sw_vmm *sw_vmm_get(sw_policy *p, CUmemGenericAllocationHandle h);
sw_vmap *sw_vmap_at(sw_policy *p, CUdeviceptr va);
CUresult sw_vmap_unmap_pages(sw_policy *p, sw_vmap *m, uint32_t done);
/* m's pages [0, n) mapped at its VAs again where none is (an unmap or a
 * remap refused partway: nothing ran there meanwhile), each with m's
 * access; one the driver will not map back is lost (its VA reads as
 * unmapped, as the driver left it). Every page keeps m as its owner, so
 * that the mapping stays whole for the program's next call. Handle and
 * device locks held. */
void sw_vmap_pages_back(sw_policy *p, sw_vmap *m, uint32_t n);
/* Gives a handle's pages back to the pool and forgets it (device lock held
 * too). */
void sw_vmm_forget(sw_policy *p, sw_vmm *v);
/* Takes m off the list of live mappings and keeps its record for reuse. */
void sw_vmap_retire(sw_policy *p, sw_vmap *m);

/* ---- export.c ---------------------------------------------------------------- */

/* Whether a page of [ptr, ptr + bytes) is exported: its freed allocation
 * is then never reused from the free queue (only released). Lock-free. */
bool sw_export_touches(sw_policy *p, CUdeviceptr ptr, size_t bytes);

/* ---- device and policy (policy.c) ------------------------------------- */

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
    CUdeviceptr scratch;      /* SW_SCRATCH_PAGES pages of VA for moving pages */
    CUstream mover[2];        /* the device's own streams for moving pages */
    /* Scratch pages the driver refused to unmap: retried at the slot's next
     * use (their page goes to the pool only then). */
    struct sw_stuck {
        CUmemGenericAllocationHandle h;
        uint8_t loc;
        bool give_back;
    } stuck[SW_SCRATCH_PAGES];
    _Atomic uint64_t vmm_access; /* devices given access to its VMM mappings */
    _Atomic uint64_t work_reach; /* devices whose work named its memory (sw_note_work) */
    /* VAs a failed move left with no page (residency.c, forget): until
     * there are any, a reused block or slot is known to be backed. */
    _Atomic size_t lost;
    sw_mixed *spare_mixed;
    /* Pages backing live data on the device, in a circle (spill's clock,
     * the hand at ring) and free arena pages still mapped (cached, in the
     * order they were freed), with their lengths. */
    sw_page *ring, *cached;
    size_t nring, ncached;
    /* Pages the driver keeps mapped at VAs the page table no longer names
     * (sw_strand); usually none. */
    sw_strand *stranded;
    /* VAs whose page got no access (sw_page.noaccess), retried at each
     * move, at each allocation while there are any (nnoacc, read without
     * the lock) and when freed; usually none. */
    sw_noacc *noacc;
    _Atomic size_t nnoacc;
    size_t host_target;       /* host pages the reserve keeps free (0: none) */
    size_t low_water;         /* free device pages a spill leaves behind */
    /* The no-thrash rule's move budget (spill.c): pages a swap may still
     * move, refilled with the clock up to a cap; and the uses below which
     * a swap found no victim lately (a hint that spares the quiesce). */
    _Atomic uint64_t swap_tokens, swap_refilled;
    _Atomic uint32_t swap_floor;
    _Atomic uint64_t swap_floor_at;
    /* sw_ring_floor's last answer, and when. */
    uint32_t ring_floor;
    uint64_t ring_floor_at;
    int nclasses;
    sw_class classes[SW_MAX_CLASSES * SW_CLASS_SHARDS];
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
    /* Device memory outside the pool, per device (lend.c): kept here, not
     * in sw_device, because it is lent before a device is set up too. */
    _Atomic uint64_t lent[SW_MAX_DEVICES];
    _Atomic int ndev_hi; /* 1 + the highest device index set up */
    pthread_mutex_t handles_lock;
    sw_vmm **handles;         /* by index; NULL slots are free */
    size_t nhandles, cap_handles;
    uint64_t handle_tag;
    uint64_t handle_seq;      /* makes a reused index a new handle value */
    sw_vmap *vmaps;           /* live program mappings */
    sw_vmap *spare_vmaps;
    /* Each device's work gate, ready before any device is set up: brackets
     * name devices whether or not they have a pool. */
    sw_gate gate[SW_MAX_DEVICES];
    /* Each device's syncer, as its gate: a device without a pool (a peer
     * given access to a pool's pages) runs work a move must wait for too. */
    sw_syncer syncer[SW_MAX_DEVICES];
    /* Bit i: device i's syncer runs (or has yet to run) a sync an asker
     * gave up waiting for. Set by that asker and cleared by the syncer once
     * a sync answers it, both under the syncer's mutex; read lock-free by
     * operations about to wait for the device (sw_back_off). */
    _Atomic uint64_t overdue;
    /* Bit i: a close of device i's gate ran into its deadline and a bracket
     * it waited for may still be open (sw_gate.stuck names its slots). Set
     * by that mover, cleared by the first sw_back_off that finds those
     * slots drained (sw_gate_stuck); read lock-free as overdue is. */
    _Atomic uint64_t gates_stuck;
    /* The host-page reserve's thread (reserve.c) and the devices it should
     * look at. */
    pthread_mutex_t reserve_lock;
    pthread_cond_t reserve_cv;
    _Atomic uint64_t reserve_wanted;
    bool reserve_running, reserve_stop;
    pthread_t reserve_thread;
    /* The heat scale: advanced by allocations, spill's inspections and
     * every SW_TOUCH_TICK touches of a thread, so that a launch costs no
     * shared write. */
    _Atomic uint64_t clock;
    /* Some page was exported (export.c): frees look at their pages. */
    _Atomic bool exported_any;
    /* What spans.c retired, freed with the policy. */
    pthread_mutex_t graves_lock;
    struct grave *graves;
};

/* The page table entry of the arena page at va (pages.c, owners.c). */
static inline sw_pte *sw_pte_at(sw_device *d, CUdeviceptr va)
{
    return sw_pt_get(&d->pol->pt, va);
}

/* The start of the page va is on. */
static inline CUdeviceptr sw_page_base(const sw_device *d, CUdeviceptr va)
{
    return va & ~(CUdeviceptr)(d->page - 1);
}

#endif
