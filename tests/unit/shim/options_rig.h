/* What the options suite (test_options.c and options_*.c) shares: a fake
 * environment of one variable. */
#ifndef SPILLWAY_TEST_OPTIONS_RIG_H
#define SPILLWAY_TEST_OPTIONS_RIG_H
#include "tests/unit/check_compat.h"
#include "shim/options.h"

#include <stddef.h>

/* The fake environment's getenv: the one variable load_one set, or none. */
char *fake_get(const char *name);
/* spw_options_load with name=value the whole environment. */
int load_one(const char *name, const char *value, struct spw_options *o, char *err, size_t errlen);

/* The suite's tests beyond test_options.c's, each file's added to tc in
 * its order. */
void options_environ_tests(TCase *tc); /* options_environ.c */
void options_limit_tests(TCase *tc);   /* options_limits.c */
#endif
