/* What the move-faults suite (test_move_faults.c and move_faults_*.c)
 * shares: one policy and fake backend for the whole program (helpers.h's
 * FB and P, defined in move_faults_rig.c), a one-page handle, and a
 * refused device sync. */
#ifndef SPILLWAY_TEST_POLICY_MOVE_FAULTS_RIG_H
#define SPILLWAY_TEST_POLICY_MOVE_FAULTS_RIG_H
#define POLICY_HELPERS_SHARED
#include "tests/unit/policy/helpers.h"

/* The device sync after the refused stream sync is refused too. */
void refuse_the_device_sync(void *arg);
/* Spill on (8 pages, 16 on the host); a one-page pool handle mapped at
 * *va with access, its bytes seed 4. */
void one_page_handle(CUdeviceptr *va, CUmemGenericAllocationHandle *h);

/* The suite's tests beyond test_move_faults.c's, each file's added to tc
 * in its order. */
void move_faults_page_tests(TCase *tc);  /* move_faults_pages.c */
void move_faults_spill_tests(TCase *tc); /* move_faults_spills.c */
void move_faults_sweep_tests(TCase *tc); /* move_faults_sweep.c */
#endif
