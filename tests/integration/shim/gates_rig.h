/* What the gates suite (test_gates.c and gates_*.c) shares: gates.sh's
 * limit and the sizes made for it, the 300 ms kernel work is queued
 * behind, and device 0 made to spill. Run by gates.sh. */
#ifndef SPILLWAY_TESTS_GATES_RIG_H
#define SPILLWAY_TESTS_GATES_RIG_H
#include "tests/integration/shim/rig.h"

/* gates.sh's limit (SPILLWAY_MEM_LIMIT): small, since every byte a test
 * fills, spills and reads back is fresh memory, which costs more than
 * anything else the suite does; the ratios are what the tests need. BUF
 * leaves room for a 1 MiB buffer beside it; PAST_BUF, allocated next to
 * BUF, spills part of it; PAST_ALL spills all of what PAST_BUF did not. */
#define LIMIT (16 * MiB)
#define BUF (LIMIT / 8 * 7)
#define PAST_BUF (LIMIT / 8 * 3)
#define PAST_ALL (LIMIT / 8 * 5)
#define BIT_MORE (LIMIT / 8)

/* rig_setup, and the limit the sizes above are made for. */
CUcontext setup(int dev);
/* A kernel that sleeps for its argument's milliseconds, in the current
 * context. */
CUfunction sleeper(void);
/* sleeper's kernel launched on s for ms milliseconds. */
void sleep_on(CUstream s, unsigned ms);
/* rig_filled, landed: a copy from pageable memory returns once staged,
 * and another context's work does not wait for the rest (TSan saw the fill
 * race with an own context's read of the buffer). */
CUdeviceptr filled(size_t bytes, unsigned seed);
/* Past device 0's limit: spills the coldest of its pool, b among it. */
CUdeviceptr spill_device0(CUcontext c0);
/* spill_device0, then the room it took given back (a free, and a sync
 * point that covers it): a page used as seldom as a test's buffer comes
 * back only into free pages (policy/fill.c, the no-thrash rule). */
void spill_device0_leaving_room(CUcontext c0);

/* The suite's tests beyond test_gates.c's, each file's added to the tcase
 * it is given in its order. */
void gates_own_context_tests(TCase *tc);                /* gates_own_contexts.c */
void gates_entry_point_tests(TCase *tc, TCase *reach); /* gates_entry_points.c */
void gates_patience_tests(TCase *tc);                   /* gates_patience.c */
#endif
