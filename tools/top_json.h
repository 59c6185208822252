/* spillway-top --json: every process with all its counters, and the
 * devices' own figures when NVML is open. */
#ifndef SPILLWAY_TOOLS_TOP_JSON_H
#define SPILLWAY_TOOLS_TOP_JSON_H
#include "tools/top_model.h"

#include <stdio.h>

void top_print_json(FILE *f, const struct top_model *m);
#endif
