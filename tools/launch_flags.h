/* The flags of `spillway run` (launch_flags.def) as a table: what the
 * launcher parses, and what its help and spillway(1) say of them, with the
 * docs of the variables they set taken from shim/options.def. */
#ifndef SPILLWAY_TOOLS_LAUNCH_FLAGS_H
#define SPILLWAY_TOOLS_LAUNCH_FLAGS_H
#include <stddef.h>
#include <stdio.h>

/* The launcher's own flags, by id. */
enum spw_run_own {
    SPW_RUN_SETS_VARIABLE, /* not an own flag: it sets a variable */
#define SPW_RUN_SET(lng, shrt, arg, name, value)
#define SPW_RUN_OWN(lng, shrt, arg, id, doc) SPW_RUN_##id,
#include "tools/launch_flags.def"
#undef SPW_RUN_SET
#undef SPW_RUN_OWN
};

struct spw_run_flag {
    const char *name;        /* the long name, without "--" */
    char short_name;         /* 0: none */
    const char *arg;         /* what the argument is called; NULL: none */
    const char *var;         /* the variable it sets; NULL for an own flag */
    const char *value;       /* the value it sets; NULL: the argument */
    const char *var_default; /* the variable's default ("" for none) */
    const char *doc;         /* the variable's doc, or the flag's own */
    enum spw_run_own own;
};

/* How many flags there are, for arrays sized at compile time. */
enum {
    SPW_RUN_FLAG_COUNT = 0
#define SPW_RUN_SET(lng, shrt, arg, name, value) + 1
#define SPW_RUN_OWN(lng, shrt, arg, id, doc) + 1
#include "tools/launch_flags.def"
#undef SPW_RUN_SET
#undef SPW_RUN_OWN
};

extern const struct spw_run_flag spw_run_flags[SPW_RUN_FLAG_COUNT];

/* What getopt_long returns for flag i: its short name, else a value past
 * every character. */
int spw_run_flag_val(size_t i);

/* The index of the flag getopt_long returned as val, or -1. */
int spw_run_flag_find(int val);

/* The flag's help line, wrapped to width columns: "  -l, --limit SIZE",
 * then what it sets and the doc. */
void spw_run_flag_help(FILE *f, size_t i, int width);
#endif
