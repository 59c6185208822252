/* What the policy spill suite (test_spill.c and spill_*.c) shares: one
 * policy and fake backend for the whole program (helpers.h's FB and P,
 * defined in spill_rig.c), and a sleep. */
#ifndef SPILLWAY_TEST_POLICY_SPILL_RIG_H
#define SPILLWAY_TEST_POLICY_SPILL_RIG_H
#define POLICY_HELPERS_SHARED
#include "tests/unit/policy/helpers.h"

/* Sleeps ms milliseconds (under 1 s). */
void sleep_ms(long ms);

/* The suite's tests beyond test_spill.c's, each file's added to tc in its
 * order. */
void spill_fill_tests(TCase *tc);    /* spill_fill.c */
void spill_gate_tests(TCase *tc);    /* spill_gate.c */
void spill_reserve_tests(TCase *tc); /* spill_reserve.c */
#endif
