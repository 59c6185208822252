/* Heat (rate.c, spans.c, heat.c): how recently and how often the program
 * used each owner of pool memory (a block, a slab, a program mapping, a
 * span of a large one), by the heat clock; what spill picks its victims by
 * and what tells a touch that a fill may help. Part of policy/'s internals
 * (internal.h includes it); a header of its own because it answers one
 * question, which memory is cold, for the rest of the policy. */
#ifndef SPILLWAY_POLICY_HEAT_H
#define SPILLWAY_POLICY_HEAT_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

/* ---- rate.c: the heat of an owner ---------------------------------------- */

/* How recently the program used an owner (a block, a slab, a program
 * mapping) and how many pages it overlaps live on the host: what spill
 * picks victims by and what tells sw_touch that a fill may help. touched
 * is written lock-free by sw_touch; host_pages under the device lock. */
typedef struct sw_heat {
    _Atomic uint64_t touched; /* heat clock when last used */
    _Atomic uint32_t host_pages;
    /* Uses (touches), halved every 2^SW_HALF_LIFE_LOG ticks of the clock:
     * how often, not how recently (sw_heat_uses reads it decayed). Written
     * racily by sw_touch: a lost increment is noise. */
    _Atomic uint32_t uses;
    _Atomic uint64_t born; /* clock when the owner came to be */
} sw_heat;

/* The clock ticks once per SW_TOUCH_TICK touches of a thread (and at
 * allocations and spill's inspections); uses halve every 2^SW_HALF_LIFE_LOG
 * ticks. */
#define SW_TOUCH_TICK 32u
#define SW_HALF_LIFE_LOG 10u
/* uses written at tick then, as of tick now: halved once per half-life
 * boundary crossed since (rate.c). */
uint32_t sw_heat_decayed(uint32_t uses, uint64_t then, uint64_t now);
uint32_t sw_heat_uses(const sw_heat *h, uint64_t now);
/* Uses per tick (x 1024) over the owner's life, or over the decay's window
 * once older: a buffer allocated and used within a step compares fairly
 * with one that lives through many. An owner younger than SW_NEWBORN_TICKS
 * is not judged yet: SW_RATE_NEWBORN, above any rate. */
#define SW_NEWBORN_TICKS 8u
#define SW_RATE_NEWBORN (UINT32_MAX / 2)
uint32_t sw_heat_rate(const sw_heat *h, uint64_t now);

/* ---- spans.c: heat inside a large program mapping --------------------- */

/* Mappings of at least this many pages get spans; at most SW_SPAN_MAX
 * spans each (then the last ones stay coarse). */
#define SW_SPAN_MIN_PAGES 16u
#define SW_SPAN_MAX 65536u

typedef struct sw_span {
    _Atomic CUdeviceptr start; /* set once; atomic for spans.c's sequence lock */
    sw_heat heat;
} sw_span;
typedef struct sw_spans sw_spans;

bool sw_spans_wanted(const sw_policy *p, size_t size);
/* One span over [va, va + size), with h's heat. NULL: no memory (the
 * mapping keeps one heat). Freed with the policy. */
sw_spans *sw_spans_new(sw_policy *p, CUdeviceptr va, size_t size, const sw_heat *h);
/* The heat of the span starting at ptr (made if new) and its end. */
sw_heat *sw_spans_touch(sw_policy *p, sw_spans *s, CUdeviceptr ptr, CUdeviceptr *end);
/* A known end of a buffer (a copy's or set's size): a span starts there,
 * so that what follows the buffer (free arena) has a heat of its own. */
void sw_spans_mark(sw_policy *p, sw_spans *s, CUdeviceptr ptr);
/* The span containing ptr, without making one. */
sw_heat *sw_spans_at(sw_spans *s, CUdeviceptr ptr, CUdeviceptr *start, CUdeviceptr *end);
/* The newest stamp and the highest rate of the spans over a page. */
void sw_spans_page(sw_spans *s, CUdeviceptr page, size_t size, uint64_t now, uint64_t *stamp,
                   uint32_t *rate);
/* The mapping's page at `page` moved to (on) or from the host (device
 * lock held); whether a page overlapping [lo, hi) lives on the host
 * (lock-free, racy: a hint). */
void sw_spans_host(sw_spans *s, CUdeviceptr page, bool on);
bool sw_spans_host_in(sw_spans *s, CUdeviceptr lo, CUdeviceptr hi);
/* Frees what spans left behind (sw_policy_destroy). */
void sw_spans_bury_all(sw_policy *p);

/* ---- heat.c: the clock, touches, the heat of pages --------------------- */

/* The heat of what the program uses at va (NULL: nothing live there). */
sw_heat *sw_heat_at(sw_policy *p, CUdeviceptr va);
/* A fresh owner over [va, va + n) bytes: used now, host pages counted. */
void sw_heat_init(sw_policy *p, sw_heat *h, CUdeviceptr va, size_t n);
/* The newest touch of anything live in the page at va (0: none), and the
 * highest rate (sw_heat_rate) of what is live there. */
uint64_t sw_page_stamp(sw_policy *p, CUdeviceptr va);
void sw_page_heat(sw_policy *p, CUdeviceptr va, uint64_t *stamp, uint32_t *rate);
/* Whether a page of [lo, hi) lives on the host (lock-free, racy). */
bool sw_range_on_host(sw_policy *p, CUdeviceptr lo, CUdeviceptr hi);
/* The page at va moved to (delta +1) or from (-1) the host: every owner
 * overlapping it counts it. Device lock held. */
void sw_heat_host_pages(sw_policy *p, CUdeviceptr va, int delta);
/* The heat clock: advanced by allocations, spill's inspections and every
 * SW_TOUCH_TICK touches of a thread. */
uint64_t sw_clock_tick(sw_policy *p);

#endif
