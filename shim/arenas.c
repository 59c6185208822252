/* Owner of the table of the pool's arenas: the VA range the policy reserved
 * on each device (arenas.h). Written by the backend when the policy
 * reserves or releases an arena, read lock-free by whoever must tell pool
 * pointers from others on a hot path (copies, the gate). */
#include "shim/arenas.h"

#include "policy/policy.h"

#include <stdatomic.h>

struct arena {
    _Atomic CUdeviceptr base; /* 0: none */
    _Atomic size_t size;      /* written before base, read after it */
};

static struct arena arenas[SW_MAX_DEVICES];
static _Atomic int arenas_hi; /* 1 + the highest device with an arena */

void spw_arena_note(int dev, CUdeviceptr base, size_t size)
{
    if (dev < 0 || dev >= SW_MAX_DEVICES)
        return;
    atomic_store_explicit(&arenas[dev].size, size, memory_order_relaxed);
    atomic_store_explicit(&arenas[dev].base, base, memory_order_release);
    int hi = atomic_load_explicit(&arenas_hi, memory_order_relaxed);
    while (hi < dev + 1 &&
           !atomic_compare_exchange_weak_explicit(&arenas_hi, &hi, dev + 1, memory_order_release,
                                                  memory_order_relaxed))
        ;
}

void spw_arena_forget(CUdeviceptr base)
{
    int hi = atomic_load_explicit(&arenas_hi, memory_order_acquire);
    for (int d = 0; base && d < hi; d++) {
        CUdeviceptr b = base;
        atomic_compare_exchange_strong(&arenas[d].base, &b, 0);
    }
}

int spw_arena_device(CUdeviceptr ptr)
{
    int hi = atomic_load_explicit(&arenas_hi, memory_order_acquire);
    for (int d = 0; d < hi; d++) {
        CUdeviceptr b = atomic_load_explicit(&arenas[d].base, memory_order_acquire);
        if (b && ptr >= b && ptr - b < atomic_load_explicit(&arenas[d].size, memory_order_relaxed))
            return d;
    }
    return -1;
}
