/* What the policy wait suite (test_wait.c and wait_*.c) shares: one
 * policy and fake backend for the whole program (helpers.h's FB and P,
 * defined in wait_rig.c), a pool with a patience, a bracket held open, and
 * a device kept busy with frees pending. */
#ifndef SPILLWAY_TEST_POLICY_WAIT_RIG_H
#define SPILLWAY_TEST_POLICY_WAIT_RIG_H
#define POLICY_HELPERS_SHARED
#include "tests/unit/policy/helpers.h"

#include <stdatomic.h>

#define WAIT_MS 50

/* Allocations past the limit in the tests of a device that stays busy. */
#define NBUSY 8

/* Spill on: limit_pages of device memory, host_pages of host memory, a
 * move's patience of ms (env_wait: WAIT_MS). */
void env_wait_ms(size_t limit_pages, size_t host_pages, uint64_t ms);
void env_wait(size_t limit_pages, size_t host_pages);

typedef struct holder {
    atomic_bool in, release;
} holder;

/* A bracket that stays open: a synchronous copy blocked in the driver. */
void *hold_bracket(void *arg);

/* A device kept busy (the program runs ahead of its GPU) with frees
 * pending: the allocation's sync that would release them and its spill's
 * quiesce both wait for the device. Together they wait one patience, not
 * one each: before, each waited out a deadline of its own (two timeouts,
 * twice the stall, on every allocation past the limit). */
void busy_with_pending_frees_ms(CUdeviceptr *y, uint64_t ms);

/* The suite's tests beyond test_wait.c's, each file's added to tc in its
 * order. */
void wait_once_tests(TCase *tc);     /* wait_once.c */
void wait_back_off_tests(TCase *tc); /* wait_back_off.c */
#endif
