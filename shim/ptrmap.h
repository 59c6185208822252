/* A concurrent map from an allocation's key (device pointer, VMM handle or
 * host pointer) to its device and size. Sharded by key hash, each shard
 * with its own lock, so that threads allocating at the same time rarely
 * meet on one lock. */
#ifndef SPILLWAY_SHIM_PTRMAP_H
#define SPILLWAY_SHIM_PTRMAP_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define SPW_MAP_SHARDS 64

struct spw_map_entry {
    uint64_t key; /* 0 = empty slot: no allocation has key 0 */
    uint64_t size;
    int32_t dev;
};

struct spw_map_shard {
    pthread_mutex_t lock;
    struct spw_map_entry *slots; /* open addressing, linear probing */
    size_t cap, count;           /* cap is 0 or a power of two */
} __attribute__((aligned(64)));

struct spw_map {
    struct spw_map_shard shard[SPW_MAP_SHARDS];
};

void spw_map_init(struct spw_map *m);
void spw_map_destroy(struct spw_map *m);

/* Adds key. Returns 0; 1 if key was present (its stale entry, e.g. of
 * memory the driver freed behind spillway's back, is replaced and copied to
 * *old); -1 if key is 0 or memory for the table ran out (nothing changed). */
int spw_map_insert(struct spw_map *m, uint64_t key, int32_t dev, uint64_t size,
                   struct spw_map_entry *old);

/* Removes key. Returns 0 with its entry in *out, or -1 if absent (key 0
 * always is). */
int spw_map_remove(struct spw_map *m, uint64_t key, struct spw_map_entry *out);

/* Looks key up without removing it. Returns 0 or -1. */
int spw_map_find(struct spw_map *m, uint64_t key, struct spw_map_entry *out);

/* Take and release every shard's lock, around fork(): the child must not
 * inherit a lock another thread of the parent held. */
void spw_map_lock_all(struct spw_map *m);
void spw_map_unlock_all(struct spw_map *m);

/* The keys of the entries keep(entry, arg) answers nonzero for, in a
 * malloc'd array (*keys, NULL when none; *n of them), shard by shard (not
 * a snapshot). Returns 0, or -1 if memory ran out (nothing returned).
 * Rare questions only (a context's destroy): it visits every slot. */
int spw_map_keys(struct spw_map *m, int (*keep)(const struct spw_map_entry *, void *), void *arg,
                 uint64_t **keys, size_t *n);

/* Number of entries (not a snapshot: shards are counted one by one). */
size_t spw_map_count(struct spw_map *m);
#endif
