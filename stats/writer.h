/* The stats writer: the shim publishes its counters through this.
 *
 * Lifecycle (the shim owns the one writer of its process):
 *   spw_stats_open()        at first CUDA use, once the device count and the
 *                           effective config are known (skip it when
 *                           SPILLWAY_STATS=0: a NULL writer makes every update
 *                           a no-op);
 *   spw_stats_add/sub/...   from any thread, on every hooked call: relaxed
 *                           atomics on per-counter cache lines, no syscalls,
 *                           no locks;
 *   spw_stats_close()       optional; at normal exit the segment is unlinked
 *                           automatically (atexit), and a forked child never
 *                           writes into nor removes its parent's segment
 *                           (it may open its own). exec skips atexit: the
 *                           new image's spw_stats_open replaces the segment
 *                           the old image left under the same pid.
 *
 * Updates with a device index >= device_count are ignored. spw_stats_sub
 * never wraps below zero: it clamps and counts an underflow instead (a shim
 * bug shows as SPW_C_UNDERFLOWS, not as a 17 TB figure).
 *
 * The laned counters (layout.h: in_use_bytes, allocs, frees, launches,
 * graph_launches) are what spw_stats_alloc, spw_stats_free and
 * spw_stats_launch change, in the caller's lane. A lane cannot tell an
 * underflow (it goes below zero whenever another thread frees what this
 * one allocated): the caller keeps the exact total and counts its own
 * underflows (the shim: account.c). get/set/add/sub act on a laned
 * counter's value too (add and sub through its base); they are for
 * attaching and tests, not the hot path. */
#ifndef SPILLWAY_STATS_WRITER_H
#define SPILLWAY_STATS_WRITER_H
#include "stats/layout.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct spw_stats_params {
    const char *dir;       /* the segment's directory (SPILLWAY_STATS_DIR's value) */
    uint32_t device_count; /* 1..SPW_STATS_MAX_DEVICES */
    const char *cmdline;   /* arguments joined by spaces (what does not fit is cut between
                            * characters, with SPW_STATS_CMDLINE_CUT); NULL: /proc/self/cmdline's */
    const char *config;    /* effective config as "key=value\n" lines, the limits first
                            * (what does not fit is cut, with SPW_STATS_CONFIG_CUT);
                            * NULL: empty */
};

/* Fields are read by the inline updaters below; only writer.c changes them. */
struct spw_stats_writer {
    struct spw_stats_device *dev;   /* device_count entries inside the mapping */
    uint32_t device_count;
    struct spw_stats_header *hdr;   /* start of the mapping */
    size_t size;                    /* mapping length */
    int dirfd;                      /* directory holding the segment */
    pid_t owner_pid;                /* process that created it: only it unlinks */
    bool unlinked;
    char name[64];                  /* file name inside dirfd */
    char path[512];                 /* for messages */
};

/* Creates and publishes the segment. 0 and *out, or -1 with a one-line
 * message in err (the caller logs it, under its own prefix, and runs on
 * without stats). */
int spw_stats_open(struct spw_stats_writer **out, const struct spw_stats_params *p,
                   char *err, size_t errlen);

/* Replaces the config text (seqlock-guarded; call from one thread at a time).
 * Text longer than the field is cut after a whole line and marked
 * (SPW_STATS_CONFIG_CUT, layout.h). */
void spw_stats_set_config(struct spw_stats_writer *w, const char *config);

/* Unlinks the segment, unmaps it and frees w. No other thread may update w
 * concurrently or afterwards. NULL is accepted. */
void spw_stats_close(struct spw_stats_writer *w);

/* Path of the segment (for logs and tests). */
const char *spw_stats_path(const struct spw_stats_writer *w);

/* The atomic of counter k of device d (of a laned counter: its base), or
 * NULL when there is none. */
static inline _Atomic uint64_t *spw_stats_slot(struct spw_stats_writer *w, uint32_t d, enum spw_counter k)
{
    if (!w || d >= w->device_count || (unsigned)k >= SPW_C_COUNT)
        return NULL;
    return &w->dev[d].c[k].value;
}

/* The sum of the lanes of counter k (0 for a counter without lanes). */
static inline uint64_t spw_stats_lanes_sum(struct spw_stats_writer *w, uint32_t d, enum spw_counter k)
{
    int l = spw_stats_laned(k);
    uint64_t s = 0;
    for (unsigned i = 0; l >= 0 && i < SPW_STATS_LANES; i++)
        s += atomic_load_explicit(&w->dev[d].lane[l][i].value, memory_order_relaxed);
    return s;
}

/* The value of counter k as a reader sees it (0 when there is none). */
static inline uint64_t spw_stats_get(struct spw_stats_writer *w, uint32_t d, enum spw_counter k)
{
    _Atomic uint64_t *v = spw_stats_slot(w, d, k);
    return v ? atomic_load_explicit(v, memory_order_relaxed) + spw_stats_lanes_sum(w, d, k) : 0;
}

static inline void spw_stats_add(struct spw_stats_writer *w, uint32_t d, enum spw_counter k, uint64_t n)
{
    _Atomic uint64_t *v = spw_stats_slot(w, d, k);
    if (v)
        atomic_fetch_add_explicit(v, n, memory_order_relaxed);
}

static inline void spw_stats_sub(struct spw_stats_writer *w, uint32_t d, enum spw_counter k, uint64_t n)
{
    _Atomic uint64_t *v = spw_stats_slot(w, d, k);
    if (!v)
        return;
    if (spw_stats_laned(k) >= 0) {
        /* The base alone may be below n while the lanes hold the rest: the
         * floor is the value's (exact while no lane moves). */
        uint64_t have = spw_stats_get(w, d, k);
        if (have < n) {
            atomic_fetch_add_explicit(&w->dev[d].c[SPW_C_UNDERFLOWS].value, 1, memory_order_relaxed);
            n = have;
        }
        atomic_fetch_sub_explicit(v, n, memory_order_relaxed);
        return;
    }
    uint64_t old = atomic_load_explicit(v, memory_order_relaxed);
    for (;;) {
        uint64_t next = old >= n ? old - n : 0;
        if (atomic_compare_exchange_weak_explicit(v, &old, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            if (old < n)
                atomic_fetch_add_explicit(&w->dev[d].c[SPW_C_UNDERFLOWS].value, 1,
                                          memory_order_relaxed);
            return;
        }
    }
}

/* Makes the value n: a laned counter's base becomes n less its lanes
 * (exact while no lane moves: at attach, its lanes are all zero). */
static inline void spw_stats_set(struct spw_stats_writer *w, uint32_t d, enum spw_counter k, uint64_t n)
{
    _Atomic uint64_t *v = spw_stats_slot(w, d, k);
    if (v)
        atomic_store_explicit(v, n - spw_stats_lanes_sum(w, d, k), memory_order_relaxed);
}

/* Raises the counter to n if it is lower (for peaks: a load, and a CAS only
 * when it grows). Not for a laned counter. */
static inline void spw_stats_max(struct spw_stats_writer *w, uint32_t d, enum spw_counter k, uint64_t n)
{
    _Atomic uint64_t *v = spw_stats_slot(w, d, k);
    if (!v)
        return;
    uint64_t old = atomic_load_explicit(v, memory_order_relaxed);
    while (old < n &&
           !atomic_compare_exchange_weak_explicit(v, &old, n, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

/* Lane `lane` (any number, taken modulo SPW_STATS_LANES) of the laned
 * counter l of device d, or NULL when there is no such device. The caller
 * picks the lane: the shim's is its thread's (policy/lanes.h), so that
 * threads allocating at once write lines of their own. */
static inline _Atomic uint64_t *spw_stats_lane(struct spw_stats_writer *w, uint32_t d, enum spw_laned l,
                                               unsigned lane)
{
    if (!w || d >= w->device_count)
        return NULL;
    return &w->dev[d].lane[l][lane & (SPW_STATS_LANES - 1)].value;
}

/* An allocation of `bytes` served, counted in `lane`: in_use and allocs.
 * in_use_after is the caller's exact total for the device once this
 * allocation is counted (the shim's own byte count): the lanes cannot tell
 * it, and peak_bytes is raised to it. */
static inline void spw_stats_alloc(struct spw_stats_writer *w, uint32_t d, unsigned lane, uint64_t bytes,
                                   uint64_t in_use_after)
{
    _Atomic uint64_t *v = spw_stats_lane(w, d, SPW_L_IN_USE, lane);
    if (!v)
        return;
    atomic_fetch_add_explicit(v, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(spw_stats_lane(w, d, SPW_L_ALLOCS, lane), 1, memory_order_relaxed);
    spw_stats_max(w, d, SPW_C_PEAK, in_use_after);
}

/* Bytes that spw_stats_alloc counted and that are no longer in use, in
 * `lane` (any thread's: the sum stays exact). spw_stats_free also counts a
 * free; this alone is for bytes given up without one. */
static inline void spw_stats_unuse(struct spw_stats_writer *w, uint32_t d, unsigned lane, uint64_t bytes)
{
    _Atomic uint64_t *v = spw_stats_lane(w, d, SPW_L_IN_USE, lane);
    if (v)
        atomic_fetch_sub_explicit(v, bytes, memory_order_relaxed); /* wraps below zero: see above */
}

/* A free of `bytes` that spw_stats_alloc counted. */
static inline void spw_stats_free(struct spw_stats_writer *w, uint32_t d, unsigned lane, uint64_t bytes)
{
    _Atomic uint64_t *f = spw_stats_lane(w, d, SPW_L_FREES, lane);
    if (!f)
        return;
    spw_stats_unuse(w, d, lane, bytes);
    atomic_fetch_add_explicit(f, 1, memory_order_relaxed);
}

/* A kernel launch (graph: a graph launch) the driver accepted on device d,
 * counted in `lane`. */
static inline void spw_stats_launch(struct spw_stats_writer *w, uint32_t d, unsigned lane, int graph)
{
    _Atomic uint64_t *v = spw_stats_lane(w, d, graph ? SPW_L_GRAPH_LAUNCHES : SPW_L_LAUNCHES, lane);
    if (v)
        atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
}

/* A spill (device -> host) or fill (host -> device) of `bytes`. */
static inline void spw_stats_spill(struct spw_stats_writer *w, uint32_t d, uint64_t bytes)
{
    spw_stats_add(w, d, SPW_C_SPILL_BYTES, bytes);
    spw_stats_add(w, d, SPW_C_SPILL_EVENTS, 1);
    spw_stats_add(w, d, SPW_C_SPILLED, bytes);
}

static inline void spw_stats_fill(struct spw_stats_writer *w, uint32_t d, uint64_t bytes)
{
    spw_stats_add(w, d, SPW_C_FILL_BYTES, bytes);
    spw_stats_add(w, d, SPW_C_FILL_EVENTS, 1);
    spw_stats_sub(w, d, SPW_C_SPILLED, bytes);
}
#endif
