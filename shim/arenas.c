/* Owner of the table of the pool's arenas: every VA range the policy
 * reserved on a device (arenas.h). Written by the backend when the policy
 * reserves or releases a range, read lock-free by whoever must tell pool
 * pointers from others on a hot path (copies, the gate).
 *
 * A device has several ranges at once: its scratch range, each segment
 * its arena grows by (policy/extent.c), the scratch ranges of a promotion
 * (policy/promote.c). One entry per range: with one per device, each new
 * reservation replaced the arena's entry and its release erased it, and
 * the pool's own blocks were taken for host memory (copies charged to the
 * wrong device, work on them not gated on their device). */
#include "shim/arenas.h"

#include "policy/policy.h"
#include "shim/log.h"

#include <pthread.h>
#include <stdatomic.h>

/* The first arena, its growth (24 segments at most) and scratch ranges. */
#define ARENA_RANGES (SW_MAX_DEVICES * 32)

struct arena {
    _Atomic CUdeviceptr base; /* 0: a free entry */
    _Atomic size_t size;      /* written before base, read after it */
    _Atomic int dev;
};

static struct arena arenas[ARENA_RANGES];
static _Atomic int arenas_hi; /* 1 + the highest entry ever used */
static pthread_mutex_t writers = PTHREAD_MUTEX_INITIALIZER;

void spw_arena_note(int dev, CUdeviceptr base, size_t size)
{
    if (dev < 0 || dev >= SW_MAX_DEVICES || !base)
        return;
    pthread_mutex_lock(&writers);
    int i = 0;
    while (i < ARENA_RANGES && atomic_load_explicit(&arenas[i].base, memory_order_relaxed))
        i++;
    if (i < ARENA_RANGES) {
        /* A reused entry: its base went to 0 (spw_arena_forget) before its
         * new size and device, for a reader that read the old base and
         * checks it again (spw_arena_device). */
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&arenas[i].size, size, memory_order_relaxed);
        atomic_store_explicit(&arenas[i].dev, dev, memory_order_relaxed);
        atomic_store_explicit(&arenas[i].base, base, memory_order_release);
        if (atomic_load_explicit(&arenas_hi, memory_order_relaxed) < i + 1)
            atomic_store_explicit(&arenas_hi, i + 1, memory_order_release);
    }
    pthread_mutex_unlock(&writers);
    if (i == ARENA_RANGES)
        spw_error("device %d: more than %d pool VA ranges; addresses of the one at 0x%llx "
                  "are not known to be the pool's (copies and work on them are not "
                  "charged to the device)",
                  dev, ARENA_RANGES, (unsigned long long)base);
}

void spw_arena_forget(CUdeviceptr base)
{
    if (!base)
        return;
    pthread_mutex_lock(&writers);
    int hi = atomic_load_explicit(&arenas_hi, memory_order_relaxed);
    for (int i = 0; i < hi; i++)
        if (atomic_load_explicit(&arenas[i].base, memory_order_relaxed) == base) {
            atomic_store_explicit(&arenas[i].base, 0, memory_order_release);
            break;
        }
    pthread_mutex_unlock(&writers);
}

int spw_arena_device(CUdeviceptr ptr)
{
    int hi = atomic_load_explicit(&arenas_hi, memory_order_acquire);
    for (int i = 0; i < hi; i++) {
        CUdeviceptr b = atomic_load_explicit(&arenas[i].base, memory_order_acquire);
        if (!b || ptr < b ||
            ptr - b >= atomic_load_explicit(&arenas[i].size, memory_order_relaxed))
            continue;
        int dev = atomic_load_explicit(&arenas[i].dev, memory_order_relaxed);
        /* Still the same range (not released and reused meanwhile). */
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&arenas[i].base, memory_order_relaxed) == b)
            return dev;
    }
    return -1;
}

bool spw_arena_meets(CUdeviceptr lo, CUdeviceptr hi)
{
    int n = atomic_load_explicit(&arenas_hi, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        CUdeviceptr b = atomic_load_explicit(&arenas[i].base, memory_order_acquire);
        if (b && b < hi && (b >= lo || lo - b < atomic_load_explicit(&arenas[i].size, memory_order_relaxed)))
            return true;
    }
    return false;
}

bool spw_arena_holds(CUdeviceptr lo, CUdeviceptr hi)
{
    int n = atomic_load_explicit(&arenas_hi, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        CUdeviceptr b = atomic_load_explicit(&arenas[i].base, memory_order_acquire);
        if (b && b <= lo && hi - b <= atomic_load_explicit(&arenas[i].size, memory_order_relaxed))
            return true;
    }
    return false;
}
