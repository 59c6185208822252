/* Owner of the table of recorded TMA descriptors (tensor_maps.h).
 *
 * Readers are launches (every 128-byte window of a large argument, once
 * any descriptor exists), writers are the encodes (a program makes its
 * descriptors once per shape or buffer, CUTLASS and Triton cache them):
 * reads must cost a few instructions and no lock, writes may wait.
 *
 * 2048 direct-mapped slots of 144 bytes (288 KiB of zero pages, touched
 * only as descriptors come), the slot chosen by a hash of all its words.
 * A program keeps far fewer live descriptors than that (a GEMM's two or
 * three per shape); a collision evicts the older one, which only
 * costs its data its heat. No entry is ever freed, so a reader never
 * touches freed memory; a stale entry (its buffer freed) passes an
 * address spill looks up like any stale pointer word.
 *
 * Each slot is a seqlock: sequence odd while a writer fills it (a CAS from
 * even to odd is the writers' lock: two encodes hashing to one slot take
 * turns), even when done; 0 for never filled. The words are atomics
 * written with release and read with acquire stores and loads (plain
 * moves on x86 and cheap on ARM): a reader that saw a writer's word sees
 * that writer's odd sequence on its second read and calls it a miss. No
 * fence, so ThreadSanitizer models every ordering here. */
#include "shim/tensor_maps.h"

#include <sched.h>
#include <stdint.h>
#include <string.h>

enum {
    WORDS = SPW_TENSOR_MAP_BYTES / 8,
    SLOT_BITS = 11,
    SLOTS = 1 << SLOT_BITS,
};

struct slot {
    _Atomic uint64_t seq;
    _Atomic uint64_t address;
    _Atomic uint64_t w[WORDS];
};

static struct slot table[SLOTS];
_Atomic bool spw_tensor_maps_seen;
static _Atomic size_t recorded;

/* Word i of the 128 bytes at p (any alignment: an argument's copy). */
static inline uint64_t word(const unsigned char *p, unsigned i)
{
    uint64_t v;
    memcpy(&v, p + 8 * i, sizeof v);
    return v;
}

/* The slot of a descriptor: a hash of all its words. The layout is
 * undocumented, so no word can be trusted to tell two descriptors apart
 * (two made for one buffer with other boxes may share their first
 * words). The words xor-folded as a tree (16 loads, 15 independent xors),
 * then one multiply: words that differ between descriptors (addresses,
 * sizes) spread them; two that hash alike share a slot, the newer
 * winning. */
static struct slot *slot_of(const unsigned char *p)
{
    uint64_t a = (word(p, 0) ^ word(p, 1)) ^ (word(p, 2) ^ word(p, 3));
    uint64_t b = (word(p, 4) ^ word(p, 5)) ^ (word(p, 6) ^ word(p, 7));
    uint64_t c = (word(p, 8) ^ word(p, 9)) ^ (word(p, 10) ^ word(p, 11));
    uint64_t d = (word(p, 12) ^ word(p, 13)) ^ (word(p, 14) ^ word(p, 15));
    return &table[(((a ^ b) ^ (c ^ d)) * 0x9E3779B97F4A7C15ull) >> (64 - SLOT_BITS)];
}

unsigned spw_tensor_map_slot(const void *map)
{
    return (unsigned)(slot_of(map) - table);
}

void spw_tensor_map_record(const void *map, CUdeviceptr address)
{
    struct slot *s = slot_of(map);
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    for (;;) {
        if (seq & 1) { /* another encode is writing this slot: a few stores */
            sched_yield();
            seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
        } else if (atomic_compare_exchange_weak_explicit(&s->seq, &seq, seq + 1, memory_order_acquire,
                                                         memory_order_relaxed)) {
            break;
        }
    }
    for (unsigned i = 0; i < WORDS; i++)
        atomic_store_explicit(&s->w[i], word(map, i), memory_order_release);
    atomic_store_explicit(&s->address, (uint64_t)address, memory_order_release);
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
    atomic_fetch_add_explicit(&recorded, 1, memory_order_relaxed);
    if (!atomic_load_explicit(&spw_tensor_maps_seen, memory_order_relaxed))
        atomic_store_explicit(&spw_tensor_maps_seen, true, memory_order_release);
}

/* Cost: see param_scan.c's scan_maps (a miss is the window's hash, the
 * sequence and one word compared; a hit compares all 16). */
bool spw_tensor_map_find(const void *window, CUdeviceptr *address)
{
    struct slot *s = slot_of(window);
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (seq == 0 || (seq & 1))
        return false;
    for (unsigned i = 0; i < WORDS; i++)
        if (atomic_load_explicit(&s->w[i], memory_order_acquire) != word(window, i))
            return false;
    uint64_t a = atomic_load_explicit(&s->address, memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq)
        return false; /* a writer came by meanwhile */
    *address = (CUdeviceptr)a;
    return true;
}

size_t spw_tensor_maps_recorded(void)
{
    return atomic_load_explicit(&recorded, memory_order_relaxed);
}
