/* The pass-through suite (test_passthrough.c) in several files: the tests
 * each of the others adds to the suite's tcase, in its order. */
#ifndef SPILLWAY_TEST_POOL_PASSTHROUGH_H
#define SPILLWAY_TEST_POOL_PASSTHROUGH_H
#include "tests/integration/pool/common.h"

void passthrough_pool_tests(TCase *tc);   /* passthrough_pools.c */
void passthrough_array_tests(TCase *tc);  /* passthrough_arrays.c */
void passthrough_handle_tests(TCase *tc); /* passthrough_handles.c */
#endif
