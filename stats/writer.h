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
 * bug shows as SPW_C_UNDERFLOWS, not as a 17 TB figure). */
#ifndef SPILLWAY_STATS_WRITER_H
#define SPILLWAY_STATS_WRITER_H
#include "stats/layout.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct spw_stats_params {
    const char *dir;       /* NULL: $SPILLWAY_STATS_DIR, else /dev/shm */
    uint32_t device_count; /* 1..SPW_STATS_MAX_DEVICES */
    const char *cmdline;   /* NULL: read /proc/self/cmdline */
    const char *config;    /* effective config as "key=value\n" lines; NULL: empty */
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
 * Text longer than the field is truncated. */
void spw_stats_set_config(struct spw_stats_writer *w, const char *config);

/* Unlinks the segment, unmaps it and frees w. No other thread may update w
 * concurrently or afterwards. NULL is accepted. */
void spw_stats_close(struct spw_stats_writer *w);

/* Path of the segment (for logs and tests). */
const char *spw_stats_path(const struct spw_stats_writer *w);

static inline _Atomic uint64_t *spw_stats_slot(struct spw_stats_writer *w, uint32_t d, enum spw_counter k)
{
    if (!w || d >= w->device_count || (unsigned)k >= SPW_C_COUNT)
        return NULL;
    return &w->dev[d].c[k].value;
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

static inline void spw_stats_set(struct spw_stats_writer *w, uint32_t d, enum spw_counter k, uint64_t n)
{
    _Atomic uint64_t *v = spw_stats_slot(w, d, k);
    if (v)
        atomic_store_explicit(v, n, memory_order_relaxed);
}

/* Raises the counter to n if it is lower (for peaks). */
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

/* An allocation of `bytes` served from the pool: in_use, allocs and peak. */
static inline void spw_stats_alloc(struct spw_stats_writer *w, uint32_t d, uint64_t bytes)
{
    _Atomic uint64_t *v = spw_stats_slot(w, d, SPW_C_IN_USE);
    if (!v)
        return;
    uint64_t now = atomic_fetch_add_explicit(v, bytes, memory_order_relaxed) + bytes;
    spw_stats_add(w, d, SPW_C_ALLOCS, 1);
    spw_stats_max(w, d, SPW_C_PEAK, now);
}

/* A free of `bytes` that spw_stats_alloc counted. */
static inline void spw_stats_free(struct spw_stats_writer *w, uint32_t d, uint64_t bytes)
{
    spw_stats_sub(w, d, SPW_C_IN_USE, bytes);
    spw_stats_add(w, d, SPW_C_FREES, 1);
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
