/* The work gate (gate.c) and the syncer (syncer.c): how the policy orders
 * what it does to pages against the program's work on the device. A move
 * closes the gates of the devices that can reach a page and waits for the
 * submissions in progress; a sync point is asked of the device's syncer
 * thread, never made on a program thread that later launches may have to
 * release. Part of policy/'s internals (internal.h includes it); a header
 * of its own because it is the policy's one concern with time and
 * ordering, apart from what memory is where. */
#ifndef SPILLWAY_POLICY_GATE_H
#define SPILLWAY_POLICY_GATE_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

typedef struct sw_device sw_device;

/* ---- gate.c ----------------------------------------------------------------- */

#define SW_GATE_SLOTS 32

typedef struct sw_gate_slot {
    _Atomic uint32_t n; /* brackets in progress of the threads of this slot */
    char pad[60];
} sw_gate_slot;

/* One device's gate: brackets count themselves in slots, a mover sets
 * closed and waits for the slots to drain; parked brackets wait on
 * reopened. writer: one mover at a time. */
typedef struct sw_gate {
    _Atomic int closed;
    /* Slots a close found still counting brackets at its deadline (bit i:
     * slot i), until seen drained (sw_gate_stuck): the gate is overdue. */
    _Atomic uint32_t stuck;
    pthread_mutex_t writer, park;
    pthread_cond_t reopened;
    sw_gate_slot slot[SW_GATE_SLOTS];
} __attribute__((aligned(64))) sw_gate;

int sw_gate_init(sw_gate *g);
void sw_gate_destroy(sw_gate *g);
/* Closes the gates of devices (a mask) in ascending order, waiting for the
 * brackets in progress until deadline_ns (sw_now_ns clock; UINT64_MAX: no
 * deadline). NOT_READY at the deadline (nothing stays closed); NOT_PERMITTED
 * when the calling thread holds one of them itself. */
CUresult sw_gate_close(sw_policy *p, uint64_t devices, uint64_t deadline_ns);
void sw_gate_open(sw_policy *p, uint64_t devices);
/* Of devices, those whose gate is overdue: a close of it ran into its
 * deadline and a slot it waited for still counts a bracket (the bracket
 * still open, or, rarely, another thread's of the same slot: one more
 * back-off). A gate whose slots drained since stops being overdue here.
 * The back-off's test (sw_back_off) alongside the syncer's overdue. */
uint64_t sw_gate_stuck(sw_policy *p, uint64_t devices);
uint64_t sw_now_ns(void); /* CLOCK_MONOTONIC */

/* ---- syncer.c ---------------------------------------------------------------- */

#define SW_SYNC_TOKENS 8

typedef struct sw_syncer {
    sw_policy *pol;
    int dev;
    pthread_mutex_t m;
    pthread_cond_t ask, answered;
    uint64_t asked, done; /* generations */
    CUresult result;      /* of the sync that answered `done` */
    bool running, busy, stop;
    /* The newest generation an asker stopped waiting for (0: none): until
     * a sync answers it, the device is overdue (sw_policy.overdue). */
    uint64_t overdue;
    pthread_t thread;
    /* Askers' own contexts (backend sync_token) the next sync covers too. */
    void *tokens[SW_SYNC_TOKENS];
    size_t ntokens;
} sw_syncer;

/* A syncer of device dev; its thread starts at the first wait. */
int sw_syncer_init(sw_syncer *s, sw_policy *p, int dev);
void sw_syncer_destroy(sw_syncer *s);
/* A sync of device dev that began after this call, waited for until
 * deadline_ns: its result, or NOT_READY when it did not end in time or a
 * stream capture is under way (then no sync was made for the caller).
 * With or without a pool: one with none (never allocated through
 * spillway, or passed through after a failed set-up) can still run work
 * that reaches another device's pages through peer access, and a move
 * must sync it too. The syncers are the policy's (sw_policy.syncer), one
 * per device like the gates. */
CUresult sw_sync_device(sw_policy *p, int dev, uint64_t deadline_ns);
/* Now + the device's patience (cfg.quiesce_wait_ns). */
uint64_t sw_deadline(const sw_device *d);
/* One operation's deadline, shared by all its waits: *by (0: none yet) is
 * set to sw_deadline(d) at its first wait and kept for the next ones, so
 * that an allocation whose sync and spill's quiesce both find the device
 * busy waits one patience in all, not one each. by NULL: a deadline of the
 * call's own (an operation that waits once). Returns the deadline. */
uint64_t sw_deadline_of(const sw_device *d, uint64_t *by);
/* A deadline long past: an operation whose *by it is waits no more. */
#define SW_SPENT 1u
/* The back-off from a device that stays busy (a kernel running longer than
 * the patience, a stream waiting on the host): an operation that can do
 * without the device (an allocation that host pages can back, a fill) and
 * has not waited yet does not wait at all while a sync of a device it
 * would wait for (sw_reach) is still running after an earlier wait gave up
 * on it, or while a bracket that ran out an earlier close of its gate is
 * still open (sw_gate_stuck): *by becomes SW_SPENT (counted in backoffs)
 * and true is returned. Without it each allocation past the limit, and
 * each launch naming host pages, would wait a whole patience of its own.
 * Ends when that sync ends, or that bracket. Only where the relaxed loads
 * of sw_policy.overdue and gates_stuck find a bit set does it take the
 * device lock. */
bool sw_back_off(sw_device *d, uint64_t *by);

#endif
