/* The sub-allocator (suballoc.c): slabs of small slots in size classes
 * (in shards), blocks, and what a free, a release, a revive and a look-up
 * do to them. Part of policy/'s internals (internal.h includes it); a
 * header of its own for the sub-allocator's records and calls. */
#ifndef SPILLWAY_POLICY_SUBALLOC_H
#define SPILLWAY_POLICY_SUBALLOC_H
#include <pthread.h>
#include <stdbool.h>

#include "policy/freeq.h"
#include "policy/policy.h"

typedef struct sw_device sw_device;
typedef struct sw_ext sw_ext;
typedef struct sw_heat sw_heat;

typedef struct sw_slab {
    sw_ext *ext;
    CUdeviceptr base;
    uint32_t cls; /* index in sw_device.classes: size class x SW_CLASS_SHARDS + shard */
    uint32_t nslots, nused, hint;
    sw_device *dev;
    struct sw_slab *next, *prev; /* class partial list / recycle list */
    bool on_partial;
    uint64_t *live;   /* slot held by the program */
    uint64_t *used;   /* slot not reusable (live or pending) */
    uint64_t *ids;    /* the allocation's ID per slot (sw_ids), new when handed out */
    uint32_t *req;    /* requested size per slot */
} sw_slab;

/* Each size class is SW_CLASS_SHARDS classes, each with its own lock,
 * slabs and spare slab objects: a thread takes slots from its home shard
 * (its lane, lanes.h), a free goes to its slab's shard, so threads
 * allocating one small size at once rarely share a lock (issue 14 item
 * 6). A single-threaded program uses one shard: no slab more than before. */
#define SW_CLASS_SHARDS 4

typedef struct sw_class {
    pthread_mutex_t lock;
    uint32_t size;
    uint32_t nslots;
    sw_slab *partial; /* slabs with a free slot */
    sw_slab *spare;   /* recycled slab objects of this class */
} sw_class;

int sw_classes_init(sw_device *d);
void sw_classes_destroy(sw_device *d);
int sw_class_of(const sw_device *d, size_t size); /* -1: not a slab size */
/* A slot of class cls from a slab with room (no driver call, no device
 * lock): OUT_OF_MEMORY when every slab of the class is full. */
CUresult sw_slab_take(sw_device *d, int cls, size_t size, CUdeviceptr *out);
/* Makes the used, backed extent e a slab of class cls and takes a slot. */
CUresult sw_slab_install(sw_device *d, int cls, sw_ext *e, size_t size, CUdeviceptr *out);
/* Makes the used, backed extent e a live block of `size` requested bytes:
 * by its carver, with or without the device lock (its state is stored with
 * release after req, and readers take req only from a live block). */
CUdeviceptr sw_block_install(sw_ext *e, size_t size);
/* Gives a carved extent that never became a block or slab back. */
void sw_ext_discard(sw_device *d, sw_ext *e);
/* Marks the allocation at ptr not live (not yet reusable) and describes it
 * for the free queue. INVALID_VALUE if not a live base. */
CUresult sw_mark_freed(sw_policy *p, CUdeviceptr ptr, sw_device **dev, sw_freed *out);
/* Makes n freed allocations reusable (their sync point or event is behind
 * us): the blocks under one hold of the device lock (a collect releases
 * hundreds; one lock hand-off each would make a second allocating thread
 * wait hundreds of times). */
void sw_release_all(sw_device *d, const sw_freed *f, size_t n);
/* Makes a freed, still-reserved allocation live again for `size` bytes:
 * fresh, for a new owner (a new ID), else back to the program that freed
 * it (a free that failed: it keeps its ID). */
void sw_revive(sw_device *d, const sw_freed *f, size_t size, bool fresh);
uint32_t sw_bucket_of(const sw_device *d, size_t size);
CUresult sw_lookup_owner(sw_policy *p, CUdeviceptr ptr, CUdeviceptr *base, size_t *size,
                         int *dev, sw_ids *ids);
/* The live owner at ptr: its range in pages [*va, *va + *n pages) and its
 * heat; device lock held. False when ptr is in no live allocation. */
bool sw_owner_range(sw_policy *p, sw_device *d, CUdeviceptr ptr, CUdeviceptr *va, size_t *n,
                    sw_heat **heat);

#endif
