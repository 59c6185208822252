/* What a refused allocation is told in the log (refusals.c): words a user
 * can act on. Counting refusals is account.c's; this only says them. */
#ifndef SPILLWAY_SHIM_REFUSALS_H
#define SPILLWAY_SHIM_REFUSALS_H
#include "policy/policy.h"
#include "shim/log.h"

#include <stdint.h>

/* The byte count refused bytes on dev: used plus bytes would pass cap,
 * named by what (a phrase before the figure: "the limit of"). */
void spw_refusal_say_count(enum spw_log_level level, int dev, sw_oom_reason why, uint64_t bytes,
                           uint64_t used, uint64_t cap, const char *what);

/* The pool (or the driver under it) refused bytes on dev, for why. */
void spw_refusal_say_pool(enum spw_log_level level, int dev, sw_oom_reason why, uint64_t bytes,
                          uint64_t used);
#endif
