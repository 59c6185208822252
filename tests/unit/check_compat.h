/* The unit suites are written against Check's API. On hosts without Check
 * (the GPU host) they build against minicheck.h, a small subset of it. */
#ifndef SPILLWAY_CHECK_COMPAT_H
#define SPILLWAY_CHECK_COMPAT_H
#ifdef SPILLWAY_MINICHECK
#include "tests/unit/minicheck.h"
#else
#include <check.h>
#endif

/* Each suite file defines this; tests/unit/main.c runs it. */
Suite *test_suite(void);
#endif
