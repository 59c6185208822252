/* Counts that many threads bump on every allocation and free (how many
 * there were), split into lanes on cache lines of their own: a thread adds
 * to its lane, a reader sums them all. Issue 14 item 6: one shared counter
 * per event made every allocating thread take the line from the others.
 * The sum is exact for every add that returned before the read began;
 * figures a decision depends on (bytes against a limit, a peak) stay single
 * atomics. Header-only, no dependency: policy/ and the shim count this way.
 * The lane is the thread's, assigned once, round robin. */
#ifndef SPILLWAY_POLICY_LANES_H
#define SPILLWAY_POLICY_LANES_H

#include <stdatomic.h>
#include <stdint.h>

#define SW_LANES 16

typedef struct sw_lanes {
    struct {
        _Atomic uint64_t v;
        char pad[64 - sizeof(uint64_t)];
    } lane[SW_LANES];
} sw_lanes;

unsigned sw_lane_of_thread(void);

static inline void sw_lanes_add(sw_lanes *l, uint64_t n)
{
    atomic_fetch_add_explicit(&l->lane[sw_lane_of_thread()].v, n, memory_order_relaxed);
}

static inline uint64_t sw_lanes_sum(const sw_lanes *l)
{
    uint64_t s = 0;
    for (int i = 0; i < SW_LANES; i++)
        s += atomic_load_explicit(&l->lane[i].v, memory_order_relaxed);
    return s;
}

#endif
