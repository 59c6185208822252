/* What the path suite (test_paths.c and paths_*.c) shares: the driver's
 * functions by the path under test, the limit paths.sh sets, and
 * spillway's counters. Run by paths.sh. */
#ifndef SPILLWAY_TESTS_PATHS_RIG_H
#define SPILLWAY_TESTS_PATHS_RIG_H
#include "tests/unit/check_compat.h"

#include "shim/spillway.h"
#include "tests/integration/shim/driver_api.h"

#include <stdint.h>

#define MiB (1ull << 20)

extern struct spw_driver_api api; /* setup_path's */
extern uint64_t limit;            /* SPILLWAY_MEM_LIMIT */

/* Each test forks: set up in the child. */
void setup_path(enum spw_path path);
/* spillway_get_counters of device dev. */
struct spillway_counters counters(int dev);
/* cuMemGetInfo's free, by the path; its total must be the limit. */
size_t free_bytes(void);

/* The suite's tcases beyond test_paths.c's, each file's tests added to
 * the tcase it is given in their order. */
void paths_resolution_tests(TCase *tc); /* paths_resolution.c */
void paths_thread_tests(TCase *tc);     /* paths_threads.c */
#endif
