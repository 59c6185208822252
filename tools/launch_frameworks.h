/* What `spillway run` does about the frameworks' own memory variables when
 * the program is oversubscribed (SPILLWAY_OVERSUBSCRIBE above 1): one
 * table of the variables that decide how JAX, TensorFlow and PyTorch size
 * and allocate their memory, each with the value spillway sets where the
 * user has not set it, or none, with the reason either way. -v prints one
 * line per variable. See README, "Oversubscription". */
#ifndef SPILLWAY_TOOLS_LAUNCH_FRAMEWORKS_H
#define SPILLWAY_TOOLS_LAUNCH_FRAMEWORKS_H
#include <stddef.h>
#include <stdio.h>

struct spw_fw_var {
    const char *framework; /* as users name it: "JAX" */
    const char *name;      /* the environment variable */
    const char *value;     /* set where the user has not; NULL: the framework's default stays */
    const char *why;       /* why that value, or why none (one clause, for -v) */
};

extern const struct spw_fw_var spw_fw_vars[];
extern const size_t spw_fw_var_count;

/* Sets each variable of the n in t that has a value and is not in the
 * environment (a variable the user set, even empty, is theirs). With log,
 * writes one line per variable: set, left alone because the user set it,
 * or not set because the framework's default stays. Returns 0, or -1 when
 * the environment could not take a value. */
int spw_fw_apply(const struct spw_fw_var *t, size_t n, FILE *log);
#endif
