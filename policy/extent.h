/* The VA arena's records (extent.c): segments, extents, their bins and
 * placement, and mixed pages. Part of policy/'s internals (internal.h
 * includes it); a header of its own because the arena is a structure of
 * its own that pages.c, suballoc.c and alloc.c build on. */
#ifndef SPILLWAY_POLICY_EXTENT_H
#define SPILLWAY_POLICY_EXTENT_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/heat.h"
#include "policy/policy.h"

/* A mixed page (several allocations share it) indexes its extents by this
 * many equal chunks, so that finding the one at an address walks at most a
 * chunk's worth of extents. */
#define SW_MIXED_SLOTS 32
/* VA reservations of one device: the first one, then each new one as large
 * as all before it, so 24 cover 2^23 times the first. */
#define SW_MAX_SEGS 24

typedef struct sw_device sw_device;
typedef struct sw_ext sw_ext;

/* One VA reservation of the arena. */
typedef struct sw_seg {
    CUdeviceptr base;
    size_t size;
} sw_seg;

enum { SW_EXT_FREE = 0, SW_EXT_BLOCK = 1, SW_EXT_SLAB = 2 };
enum { SW_LIVE = 1, SW_PENDING = 2, SW_DEAD = 0 };

struct sw_slab;

/* A range of one segment, free or used, in address order with its
 * neighbours; the extents of a segment tile it exactly. A used extent is a
 * block (one program allocation) or a slab (a chunk cut into equal slots).
 * Records are recycled, never freed while the policy lives: lock-free
 * readers (sw_touch) may hold one; the fields they read are atomic. */
struct sw_ext {
    _Atomic CUdeviceptr base;
    _Atomic uint64_t size;        /* bytes, a multiple of the granule */
    _Atomic(sw_ext *) next;       /* address order; NULL at the segment's end */
    sw_ext *prev;
    sw_ext *bnext, *bprev;        /* size bin while free; recycle list when dead */
    _Atomic int kind;             /* SW_EXT_* */
    /* Blocks: SW_LIVE / SW_PENDING / SW_DEAD in the low byte, above it the
     * record's incarnation, new at each reuse of the record: a lock-free
     * free (sw_mark_freed) claims the block it found with one compare-and-
     * swap of both, which fails if the record became another block since. */
    _Atomic uint64_t state;
    /* Blocks: bytes the program asked for; written before the block is
     * live, read without a lock by sw_range_check. */
    _Atomic size_t req;
    uint64_t id;                  /* blocks: the allocation's ID (sw_ids), new when
                                   * it is handed out, written before it is live */
    sw_device *dev;
    _Atomic(struct sw_slab *) slab; /* kind SLAB; set (release) once the slab is filled in */
    sw_heat heat;
};

/* Page-granular bins over extent sizes: exact below 8 granules, then eight
 * per power of two. */
#define SW_EXT_BINS 496

typedef struct sw_arena {
    sw_seg seg[SW_MAX_SEGS];
    _Atomic unsigned nsegs;
    size_t granule;          /* placement unit (page / 512, at least 256) */
    size_t chunk;            /* a slab's size and a mixed page's index step */
    sw_ext *bin[SW_EXT_BINS];
    uint64_t binmap[(SW_EXT_BINS + 63) / 64];
    sw_ext *spare;           /* recycled records */
    size_t free_bytes;       /* in free extents */
} sw_arena;

/* How thorough a placement search is. */
typedef enum sw_place_mode {
    SW_PLACE_MAPPED = 0, /* only where every page is mapped already */
    SW_PLACE_ANY = 1,    /* fewest pages to map among a few candidates */
    SW_PLACE_BEST = 2,   /* fewest pages to map among every free extent */
} sw_place_mode;

int sw_arena_init(sw_device *d, size_t first_va);
void sw_arena_destroy(sw_device *d); /* records only; the VA is freed by the caller */
/* Carves a used extent of `size` bytes (a multiple of the granule) aligned
 * to `align`, reserving more VA when no free extent fits (except in mode
 * MAPPED). *unmapped: pages of it with no mapping yet. OUT_OF_MEMORY when
 * mode finds no place, or *why = ADDRESS when the driver refuses more VA.
 * Device lock held. */
CUresult sw_ext_carve(sw_device *d, size_t size, size_t align, sw_place_mode mode, int kind,
                      sw_ext **out, size_t *unmapped, sw_oom_reason *why);
/* Makes a used extent free and merges it with free neighbours; returns the
 * merged free extent (e's record may be gone). The page bookkeeping
 * (pages.c) is the caller's: sw_pages_unuse before, sw_pages_settle after.
 * Device lock held. */
sw_ext *sw_ext_release(sw_device *d, sw_ext *e);
/* The extent of d containing va, under the device lock (NULL: none). */
sw_ext *sw_ext_at(sw_device *d, CUdeviceptr va);
/* Whether va lies in one of d's segments (lock-free). */
bool sw_arena_contains(const sw_device *d, CUdeviceptr va);
static inline CUdeviceptr sw_ext_base(const sw_ext *e)
{
    return atomic_load_explicit(&e->base, memory_order_relaxed);
}
static inline CUdeviceptr sw_ext_end(const sw_ext *e)
{
    return sw_ext_base(e) + atomic_load_explicit(&e->size, memory_order_relaxed);
}
static inline int sw_state_of(uint64_t st)
{
    return (int)(st & 0xff);
}
static inline int sw_ext_state(const sw_ext *e)
{
    return sw_state_of(atomic_load_explicit(&e->state, memory_order_acquire));
}
/* Sets a block's state in its current incarnation: by the record's only
 * writer of the moment (its carver, the thread reviving it, or its release
 * under the device lock); a racing claim expects SW_LIVE and fails. */
static inline void sw_ext_set_state(sw_ext *e, int s)
{
    uint64_t st = atomic_load_explicit(&e->state, memory_order_relaxed);
    atomic_store_explicit(&e->state, (st & ~(uint64_t)0xff) | (uint64_t)s, memory_order_release);
}
static inline bool sw_ext_used(const sw_ext *e)
{
    return atomic_load_explicit(&e->kind, memory_order_relaxed) != SW_EXT_FREE;
}

/* A page shared by several used extents: the extent at the start of each of
 * its chunks. Recycled, never freed while the policy lives. */
typedef struct sw_mixed {
    _Atomic(sw_ext *) at[SW_MIXED_SLOTS];
    struct sw_mixed *next_free;
} sw_mixed;

/* The used extent containing va in a mixed page, lock-free: a bounded walk
 * that may miss (NULL) when it races a change of the page. */
sw_ext *sw_mixed_find(const sw_device *d, const sw_mixed *m, CUdeviceptr va);
#endif
