/* The free queue (freeq.c): frees the program made whose blocks and slots
 * may still be in use by work already issued, held until a sync point or
 * an event covers them, and reused or released from there. Part of
 * policy/'s internals (internal.h includes it); a header of its own
 * because the queue is a subsystem of its own: its records, shards and
 * calls. */
#ifndef SPILLWAY_POLICY_FREEQ_H
#define SPILLWAY_POLICY_FREEQ_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "policy/policy.h"

typedef struct sw_device sw_device;
typedef struct sw_ext sw_ext;

/* A freed allocation, as the free queue holds it until it is released or
 * revived. */
typedef struct sw_freed {
    CUdeviceptr ptr;
    uint32_t bucket;
    size_t bytes;
    /* A block's record, NULL for a slab slot. Until the block is released
     * nothing else changes the record (its state is SW_PENDING), so
     * reviving it needs no look-up and no device lock. */
    sw_ext *block;
} sw_freed;

typedef struct sw_pend {
    sw_freed f;
    uint64_t epoch;
    CUstream stream;
    CUevent ev;
    bool same_stream_ok;
    /* ev was made in the stream's context, not the device's: destroyed
     * when done, never recycled for this device's streams. */
    bool foreign_ev;
    /* The context ev was made in (the backend's token): a reset of it
     * destroys ev and finishes the free (sw_freeq_context_gone). */
    void *ev_where;
    struct sw_pend *prev, *next;
} sw_pend;

/* An idle event and the context it was made in. */
typedef struct sw_idle_ev {
    CUevent ev;
    void *where;
} sw_idle_ev;

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
    sw_idle_ev *events;      /* idle events to record again */
    size_t nevents, cap_events;
    size_t sync_bytes, async_bytes;
    size_t count;            /* entries on both lists */
    /* The epoch of sync_list's head, 0 when it is empty: whether the shard
     * holds a covered block, seen without its lock. */
    _Atomic uint64_t sync_head_epoch;
} __attribute__((aligned(64))) sw_freeq_shard;

#define SW_FREEQ_SHARDS 8

typedef struct sw_freeq {
    sw_freeq_shard shard[SW_FREEQ_SHARDS];
    _Atomic uint64_t epoch;   /* bumped when a sync begins */
    _Atomic uint64_t covered; /* frees with epoch <= covered are synced */
} sw_freeq;

int sw_freeq_init(sw_freeq *q);
CUresult sw_freeq_destroy(sw_device *d);
CUresult sw_freeq_push(sw_device *d, const sw_freed *f, bool async, CUstream stream);
/* A pending block freed on stream with this bucket, taken off the queue. */
bool sw_freeq_take_stream(sw_device *d, CUstream stream, uint32_t bucket, sw_freed *out);
/* A block of this bucket that a sync has covered, taken off the queue:
 * reused without the device lock, from the calling thread's shard first. */
bool sw_freeq_take_covered(sw_device *d, uint32_t bucket, sw_freed *out);
/* Releases what is covered by a sync or a completed event; returns bytes. */
size_t sw_freeq_collect(sw_device *d, bool poll_events);
size_t sw_freeq_pending(sw_device *d, size_t *count);
/* Synchronizes dev (through its syncer, until its deadline) and releases
 * everything the sync covers. NOT_READY: no sync could be had in time
 * (busy device, stream capture, the deadline *by already past): nothing
 * released. by: the operation's deadline (sw_deadline_of). */
CUresult sw_sync_and_collect(sw_device *d, uint64_t *by);
/* The sync alone: what it covers stays queued (sw_freeq_take_covered). */
CUresult sw_sync_point(sw_device *d, uint64_t *by);
void sw_freeq_forget_stream(sw_device *d, CUstream stream);
/* A reset destroyed context `where` (the backend's token of its events)
 * after finishing its work: the frees whose events were made there are
 * released, and those events, pending or idle, forgotten (never destroyed:
 * their handles are dead, maybe reused). Returns bytes released. */
size_t sw_freeq_context_gone(sw_device *d, void *where);

#endif
