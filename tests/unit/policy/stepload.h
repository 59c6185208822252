/* A training step that repeats, over the policy and the fake backend
 * (issue 13): weights W, activations A and gradients G used several times a
 * step, optimizer state M and V once, more of it all than the device holds.
 * Launches are played as the shim plays them (sw_touch, then sw_fill when
 * the buffer has pages on the host) and then run on the CPU: each "kernel"
 * checks and rewrites one word of every page it uses, so a byte lost in a
 * move fails the run. What is measured: pages moved per step (spilled and
 * filled) and pages a step used where they lay on the host.
 *
 * Used by tests/unit/policy/test_oversub.c (the bounds) and
 * bench/oversub_bench.c (the table). */
#ifndef SPILLWAY_TESTS_POLICY_STEPLOAD_H
#define SPILLWAY_TESTS_POLICY_STEPLOAD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"
#include "tests/unit/policy/fakebackend.h"

/* How the program gets its memory. */
typedef enum stepload_mode {
    STEPLOAD_ARENA,     /* JAX's BFC: one cuMemCreate of 0.75 x the told total */
    STEPLOAD_PER_BUFFER, /* stream-ordered: activations allocated and freed each step */
    STEPLOAD_ALLOC,      /* cuMemAlloc-style: every buffer its own allocation */
} stepload_mode;

typedef struct stepload_cfg {
    stepload_mode mode;
    double factor;      /* F: the program sizes itself to F x the limit */
    size_t limit_pages; /* the device's pages */
    size_t page;        /* bytes per page */
    bool demand_paging; /* the no-thrash rule off (sw_device_config) */
} stepload_cfg;

typedef struct stepload_step {
    uint64_t moved_pages;      /* spilled + filled during the step */
    uint64_t host_used_pages;  /* pages the step's kernels used on the host */
} stepload_step;

typedef struct stepload stepload;

/* Sets it up (policy, backend, buffers); NULL with why on failure. */
stepload *stepload_new(const stepload_cfg *cfg, const char **why);
/* One step; false with why when a kernel found a wrong word or a call
 * failed. */
bool stepload_step_run(stepload *s, stepload_step *out, const char **why);
/* Pages the program holds (its working set) and how many of them exceed
 * the limit; pages of the often-used buffers. */
size_t stepload_live_pages(const stepload *s);
size_t stepload_excess_pages(const stepload *s);
size_t stepload_hot_pages(const stepload *s);
/* Pages of the often-used buffers on the host now. */
size_t stepload_hot_on_host(stepload *s);
/* The backend's most device pages at once (must stay within the limit). */
uint64_t stepload_max_device_pages(stepload *s);
/* Device syncs the backend has run so far (each quiesce of a move syncs). */
uint64_t stepload_syncs(stepload *s);
/* Tears it all down; false with why if the policy or backend complained. */
bool stepload_free(stepload *s, const char **why);
#endif
