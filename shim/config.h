/* The process's configuration: shim/options.def parsed once from the
 * environment. */
#ifndef SPILLWAY_SHIM_CONFIG_H
#define SPILLWAY_SHIM_CONFIG_H
#include "shim/options.h"

/* Loads the configuration the first time (an invalid value ends the process
 * with status 2) and returns it; read-only afterwards. */
const struct spw_options *spw_config(void);

/* SPILLWAY_DISABLE: every entry point forwards untouched. Loads the
 * configuration if needed. */
int spw_disabled(void);
#endif
