#include "shim/ptrmap.h"

#include <stdlib.h>
#include <string.h>

/* Pointers are aligned and handles sequential: mix all bits before using
 * the low ones (splitmix64's finalizer). */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static struct spw_map_shard *shard_of(struct spw_map *m, uint64_t h)
{
    return &m->shard[h % SPW_MAP_SHARDS];
}

/* The slot holding key, or the empty slot where it would go. cap > 0. */
static size_t probe(const struct spw_map_shard *s, uint64_t key, uint64_t h)
{
    size_t mask = s->cap - 1, i = (size_t)(h / SPW_MAP_SHARDS) & mask;
    while (s->slots[i].key != 0 && s->slots[i].key != key)
        i = (i + 1) & mask;
    return i;
}

static int grow(struct spw_map_shard *s)
{
    size_t cap = s->cap ? s->cap * 2 : 16;
    struct spw_map_entry *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    struct spw_map_entry *old = s->slots;
    size_t old_cap = s->cap;
    s->slots = slots;
    s->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key)
            s->slots[probe(s, old[i].key, mix(old[i].key))] = old[i];
    free(old);
    return 0;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void erase_slot(struct spw_map_shard *s, size_t i)
{
    size_t mask = s->cap - 1, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (s->slots[j].key == 0)
            break;
        size_t home = (size_t)(mix(s->slots[j].key) / SPW_MAP_SHARDS) & mask;
        /* Move j back to i unless its home lies cyclically in (i, j]. */
        int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            s->slots[i] = s->slots[j];
            i = j;
        }
    }
    memset(&s->slots[i], 0, sizeof s->slots[i]);
    s->count--;
}

void spw_map_init(struct spw_map *m)
{
    memset(m, 0, sizeof *m);
    for (int i = 0; i < SPW_MAP_SHARDS; i++)
        pthread_mutex_init(&m->shard[i].lock, NULL);
}

void spw_map_destroy(struct spw_map *m)
{
    for (int i = 0; i < SPW_MAP_SHARDS; i++) {
        free(m->shard[i].slots);
        pthread_mutex_destroy(&m->shard[i].lock);
    }
    memset(m, 0, sizeof *m);
}

int spw_map_insert(struct spw_map *m, uint64_t key, int32_t dev, uint64_t size,
                   struct spw_map_entry *old)
{
    if (key == 0)
        return -1; /* 0 marks empty slots; no allocation has it */
    uint64_t h = mix(key);
    struct spw_map_shard *s = shard_of(m, h);
    int ret = 0;
    pthread_mutex_lock(&s->lock);
    if ((s->count + 1) * 2 > s->cap && grow(s)) {
        pthread_mutex_unlock(&s->lock);
        return -1;
    }
    size_t i = probe(s, key, h);
    if (s->slots[i].key == key) {
        if (old)
            *old = s->slots[i];
        ret = 1;
    } else {
        s->count++;
    }
    s->slots[i] = (struct spw_map_entry){.key = key, .size = size, .dev = dev};
    pthread_mutex_unlock(&s->lock);
    return ret;
}

/* Finds key: copies its entry to out and, with erase, removes it. */
static int lookup(struct spw_map *m, uint64_t key, struct spw_map_entry *out, int erase)
{
    if (key == 0)
        return -1; /* it would match an empty slot (cuMemRelease(0) asks) */
    uint64_t h = mix(key);
    struct spw_map_shard *s = shard_of(m, h);
    int ret = -1;
    pthread_mutex_lock(&s->lock);
    if (s->cap) {
        size_t i = probe(s, key, h);
        if (s->slots[i].key == key) {
            if (out)
                *out = s->slots[i];
            if (erase)
                erase_slot(s, i);
            ret = 0;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return ret;
}

int spw_map_remove(struct spw_map *m, uint64_t key, struct spw_map_entry *out)
{
    return lookup(m, key, out, 1);
}

int spw_map_find(struct spw_map *m, uint64_t key, struct spw_map_entry *out)
{
    return lookup(m, key, out, 0);
}

int spw_map_keys(struct spw_map *m, int (*keep)(const struct spw_map_entry *, void *), void *arg,
                 uint64_t **keys, size_t *n)
{
    uint64_t *k = NULL;
    size_t len = 0, cap = 0;
    int ret = 0;
    for (int i = 0; i < SPW_MAP_SHARDS && !ret; i++) {
        struct spw_map_shard *s = &m->shard[i];
        pthread_mutex_lock(&s->lock);
        for (size_t j = 0; j < s->cap && !ret; j++) {
            if (!s->slots[j].key || !keep(&s->slots[j], arg))
                continue;
            if (len == cap) {
                size_t c = cap ? 2 * cap : 16;
                uint64_t *more = realloc(k, c * sizeof *k);
                if (!more) {
                    ret = -1;
                    break;
                }
                k = more;
                cap = c;
            }
            k[len++] = s->slots[j].key;
        }
        pthread_mutex_unlock(&s->lock);
    }
    if (ret) {
        free(k);
        k = NULL;
        len = 0;
    }
    *keys = k;
    *n = len;
    return ret;
}

size_t spw_map_count(struct spw_map *m)
{
    size_t n = 0;
    for (int i = 0; i < SPW_MAP_SHARDS; i++) {
        pthread_mutex_lock(&m->shard[i].lock);
        n += m->shard[i].count;
        pthread_mutex_unlock(&m->shard[i].lock);
    }
    return n;
}

void spw_map_lock_all(struct spw_map *m)
{
    for (int i = 0; i < SPW_MAP_SHARDS; i++)
        pthread_mutex_lock(&m->shard[i].lock);
}

void spw_map_unlock_all(struct spw_map *m)
{
    for (int i = SPW_MAP_SHARDS - 1; i >= 0; i--)
        pthread_mutex_unlock(&m->shard[i].lock);
}
