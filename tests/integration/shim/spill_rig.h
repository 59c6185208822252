/* What the spill suite (test_spill.c and spill_*.c) shares: spill.sh's
 * limit and the context each test makes current (for its other threads).
 * Run by spill.sh. */
#ifndef SPILLWAY_TESTS_SPILL_RIG_H
#define SPILLWAY_TESTS_SPILL_RIG_H
#include "tests/integration/shim/rig.h"

#define LIMIT (64 * MiB)

extern CUcontext ctx; /* setup's */

/* rig_setup(0), kept in ctx. */
void setup(void);

/* The suite's tests beyond test_spill.c's, each file's added to tc in its
 * order. */
void spill_dma_buf_tests(TCase *tc); /* spill_dma_buf.c */
void spill_race_tests(TCase *tc);    /* spill_race.c */
#endif
