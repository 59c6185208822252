/* Per-device accounting of every allocation spillway sees, against the
 * limit (limits.h).
 * Counters are atomics; which allocation belongs to which device and how
 * big it is lives in three concurrent maps (ptrmap.h). Pure bookkeeping: it
 * never calls the driver except through the device callbacks. */
#ifndef SPILLWAY_SHIM_ACCOUNT_H
#define SPILLWAY_SHIM_ACCOUNT_H
#include "policy/policy.h"
#include "shim/limits.h"
#include "shim/options.h"
#include "shim/spillway.h"

#include <stdint.h>

/* What an allocation's key is. */
enum spw_kind {
    SPW_KIND_DEVPTR, /* cuMemAlloc*, managed, stream-ordered: a CUdeviceptr */
    SPW_KIND_HANDLE, /* cuMemCreate: a CUmemGenericAllocationHandle */
    SPW_KIND_HOSTPTR, /* pinned host memory: a host pointer */
    SPW_KIND_ARRAY,   /* a CUDA array: its handle */
    SPW_KIND_MIPMAP   /* a CUDA mipmapped array: its handle */
};
#define SPW_KINDS 5


/* Sets the options the limits come from and how to learn about a device
 * (q must outlive the process). Safe to call more than once, the first call
 * wins; before it, every device is unlimited. */
void spw_account_init(const struct spw_options *opts, const struct spw_device_query *q);

/* Whether dev is a device index accounting tracks (0 <= dev < 64) or
 * SPILLWAY_HOST. */
int spw_account_tracks(int dev);

uint64_t spw_account_used(int dev);


/* Reserves bytes on a device before the driver allocates them: 0, or -1
 * (and the OOM counted and logged) if that would pass the limit. Check and
 * reservation are one atomic step. Host memory (SPILLWAY_HOST) is never
 * refused. */
int spw_account_reserve(int dev, uint64_t bytes);

/* The same against what the program is told (spw_limit_told) instead of
 * the limit, counting every byte in use, spilled or not: pool memory with
 * SPILLWAY_OVERSUBSCRIBE above 1, whose device pages the pool bounds. A
 * refusal is counted and logged as spw_account_reserve's are. */
int spw_account_reserve_told(int dev, uint64_t bytes);

/* The same for memory whose bound is not the limit but the pool (a pool
 * that spills never holds more device pages than the limit; what does not
 * fit lives in host memory): counted in use, never refused here. */
void spw_account_add(int dev, uint64_t bytes);

/* Where the bytes of a device that live in host memory now (spilled) are
 * learnt: spw_account_reserve checks only the device-resident part
 * (in use - spilled) against the limit. Before it is set, nothing is
 * spilled. The first call wins. */
void spw_account_set_spilled_source(uint64_t (*spilled)(int dev));

/* Where an entry whose memory went away without a free spillway saw (its
 * key reused by the driver) reports its device, pass-through reason and
 * bytes. The first call wins. */
void spw_account_set_gone_sink(void (*gone)(int dev, int reason, uint64_t bytes));

/* Gives back a reservation whose allocation failed. */
void spw_account_unreserve(int dev, uint64_t bytes);

/* Records a reserved allocation that succeeded under key: counts it and
 * updates the peak. */
void spw_account_commit(enum spw_kind kind, uint64_t key, int dev, uint64_t bytes);

/* Records a reserved allocation served from the page pool (policy/ keeps
 * its size: no entry in the maps), counting it as spw_account_commit does. */
void spw_account_commit_pool(int dev, uint64_t bytes);

/* Records a reserved allocation that passed the pool by (reason: a
 * sw_passthrough_reason), counted and also in the stats' pass-through
 * gauge of its reason until freed. */
void spw_account_commit_pt(enum spw_kind kind, uint64_t key, int dev, uint64_t bytes, int reason);

/* The same for memory with no key of its own (the driver's graph memory
 * pool, graph_mem.c): released with spw_account_release_pt. */
void spw_account_commit_unkeyed_pt(int dev, uint64_t bytes, int reason);

/* Live bytes passed through on dev for reason (a sw_passthrough_reason). */
uint64_t spw_account_pt_bytes(int dev, int reason);

/* Sets the stats' pool_bytes gauge of dev (device pages held). */
void spw_account_set_pool_bytes(int dev, uint64_t bytes);

/* Sets the stats' spilled_bytes and host_bytes gauges and the spill/fill
 * counters of dev from the pool's figures. */
void spw_account_set_spill(int dev, const sw_spill_stats *f);

/* The keys of kind counted on dev, but those counted with reason but
 * (-1: none left out), in a malloc'd array (*n of them; NULL when none).
 * Returns 0, or -1 if memory ran out. Visits every entry: for rare events
 * (a context's destroy, ctx_memory.c). */
int spw_account_keys_on(enum spw_kind kind, int dev, int but, uint64_t **keys, size_t *n);

/* Whether spillway counts key (0 or 1). */
int spw_account_counted(enum spw_kind kind, uint64_t key);

/* Forgets key before the driver frees it. Returns 0 with its device and
 * size, or -1 if spillway never counted it (nothing changes). */
int spw_account_forget(enum spw_kind kind, uint64_t key, int *dev, uint64_t *bytes);
/* The same, with the pass-through reason it was committed with (-1: none),
 * for spw_account_release_pt / spw_account_restore_pt. */
int spw_account_forget_pt(enum spw_kind kind, uint64_t key, int *dev, uint64_t *bytes,
                          int *reason);
void spw_account_release_pt(int dev, uint64_t bytes, int reason);
void spw_account_restore_pt(enum spw_kind kind, uint64_t key, int dev, uint64_t bytes,
                            int reason);

/* After a successful free of a forgotten key: releases its bytes and counts
 * the free. Never goes below zero. */
void spw_account_release(int dev, uint64_t bytes);

/* After a failed free of a forgotten key: records it again, uncounted. */
void spw_account_restore(enum spw_kind kind, uint64_t key, int dev, uint64_t bytes);

/* An allocation that changes hands (a pool handle made the driver's at its
 * export): the same bytes, counted under another pass-through reason (-1:
 * the pool's). Returns -1 if key was never counted. */
int spw_account_retag(enum spw_kind kind, uint64_t key, int reason);

/* Counts an out-of-memory answer of the driver itself (reason "driver"). */
void spw_account_note_oom(int dev);
/* The same for the pool's own refusal, with its reason (a sw_oom_reason,
 * as sw_refusal_reason() told right after it): counted by reason in the
 * stats and logged as the limit's refusals are (warning once per device,
 * then debug). */
void spw_account_note_pool_oom(int dev, uint64_t bytes, int reason);

/* Device memory outside the pool that the maps no longer hold but a
 * pointer still names (a released handle still mapped: vmm_live.c): +1
 * while it lives, -1 when it goes, for spw_account_unpooled_live. */
void spw_account_unpooled_held(int sign);

/* Whether device memory outside the pool is live (pass-through or adopted
 * allocations in the maps): one atomic load. Copies ask the driver where a
 * pointer lives only then (copy_side.c). */
int spw_account_unpooled_live(void);

/* Bytes the program copied, by direction, on dev: one relaxed add to the
 * stats segment (nothing before it is published or for dev < 0). */
enum spw_copy_dir { SPW_COPY_HTOD, SPW_COPY_DTOH, SPW_COPY_DTOD };
void spw_account_copy(int dev, enum spw_copy_dir dir, uint64_t bytes);

/* A kernel launch (graph: a graph launch) the driver accepted, in the
 * thread's lane of the stats segment, on the device device(arg) names
 * (asked only while a segment is published and the process has more than
 * one device: it may cost a driver call; nothing for a device < 0). */
void spw_account_launch(int (*device)(const void *), const void *arg, int graph);

/* From now on, mirror every device's counters into the stats segment w
 * (limit, in use, peak, allocs, frees, OOMs); counts from before are
 * copied in first. NULL stops publishing. */
struct spw_stats_writer;
void spw_account_publish_to(struct spw_stats_writer *w);

/* A consistent-enough copy of the counters (each field read atomically). */
int spw_account_read(int dev, struct spillway_counters *out);
#endif
