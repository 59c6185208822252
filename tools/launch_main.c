/* spillway: the launcher.
 *   spillway run [options] [--] COMMAND [ARG]...  run COMMAND under spillway
 *   spillway top [spillway-top options]            the monitor
 *   spillway options                               the SPILLWAY_* variables
 * `run` turns its options into SPILLWAY_* variables, validates the whole
 * environment with the shim's own parser (so a bad value stops here, with
 * the same message the library would give), prepends the library to
 * LD_PRELOAD, sets the frameworks' variables an oversubscribed program
 * needs (launch_frameworks.c) and execs the command. */
#include "shim/options.h"
#include "tools/launch_flags.h"
#include "tools/launch_frameworks.h"
#include "tools/launch_paths.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VERSION "0.1"

#define HELP_WIDTH 79

/* The usage, then each flag of launch_flags.def with what it sets and the
 * doc of shim/options.def (nothing here repeats them). */
static void usage(FILE *f)
{
    fprintf(f,
            "Usage: spillway run [OPTION]... [--] COMMAND [ARG]...\n"
            "       spillway top [spillway-top OPTION]...\n"
            "       spillway options\n"
            "       spillway --help | --version\n"
            "Run an unmodified CUDA program with its GPU memory limited, pooled and\n"
            "spilled to host memory; watch it with spillway top.\n\n"
            "run options (most set the SPILLWAY_* variable named):\n");
    for (size_t i = 0; i < SPW_RUN_FLAG_COUNT; i++)
        spw_run_flag_help(f, i, HELP_WIDTH);
    fprintf(f,
            "\nOther SPILLWAY_* variables already in the environment are kept and checked:\n"
            "an unknown SPILLWAY_* name or an empty value is refused like a bad value.\n"
            "Oversubscribed (SPILLWAY_OVERSUBSCRIBE above 1), the memory variables of JAX,\n"
            "TensorFlow and PyTorch are set where the user has not set them, when a value\n"
            "is better than the framework's default; -v says, for each, what was done.\n"
            "Exit status: COMMAND's, or 2 for a bad option or value, 126/127 when\n"
            "COMMAND cannot be run. See spillway(1), spillway-top(1), 'spillway options'.\n");
}

/* Usage and the table of variables: what --help prints, for run too. */
static void help(void)
{
    usage(stdout);
    printf("\nVariables (spillway options):\n");
    spw_options_print_table(stdout);
}

static int fail(int status, const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "spillway: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return status;
}

static int set(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0)
        return fail(2, "cannot set %s: %s", name, strerror(errno));
    return 0;
}

/* Puts lib first in LD_PRELOAD, taking it out of where it already was (the
 * first preloaded library interposes its symbols before the others'; left
 * later, another hook of the driver would be called instead of spillway).
 * The other entries keep their order and the separator before them (' ' or
 * ':'). */
static int add_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    if (!old)
        old = "";
    size_t n = strlen(lib), len = n + 1 + strlen(old) + 1, used = n;
    char *v = malloc(len);
    if (!v)
        return fail(2, "out of memory%s%s", "", "");
    memcpy(v, lib, n);
    for (const char *p = old; *p;) {
        size_t sep = strspn(p, " :");
        const char *e = p + sep;
        size_t el = strcspn(e, " :");
        if (el && !(el == n && memcmp(e, lib, n) == 0)) {
            char c = used == n || !sep ? ':' : p[0];
            v[used++] = c;
            memcpy(v + used, e, el);
            used += el;
        }
        p = e + el;
    }
    v[used] = '\0';
    int rc = set("LD_PRELOAD", v);
    free(v);
    return rc;
}

struct run_opts {
    const char *lib;
    int verbose;
    const char *fraction; /* --fraction's value, when given */
    int limit;            /* whether --limit was given */
};

/* getopt_long's tables from launch_flags.def: "+:" (stop at the command,
 * whose own options are not ours; ':' reports a missing value) and each
 * short name, with ':' when it takes a value. */
static void build_getopt(struct option *longs, char *shorts)
{
    char *s = shorts;
    *s++ = '+';
    *s++ = ':';
    for (size_t i = 0; i < SPW_RUN_FLAG_COUNT; i++) {
        const struct spw_run_flag *fl = &spw_run_flags[i];
        longs[i] = (struct option){fl->name, fl->arg ? required_argument : no_argument, NULL,
                                   spw_run_flag_val(i)};
        if (fl->short_name) {
            *s++ = fl->short_name;
            if (fl->arg)
                *s++ = ':';
        }
    }
    longs[SPW_RUN_FLAG_COUNT] = (struct option){NULL, 0, NULL, 0};
    *s = '\0';
}

/* Applies flag i (its argument arg). Returns 0, an exit status, or -1 when
 * the help was printed. */
static int apply_flag(size_t i, const char *arg, struct run_opts *o)
{
    const struct spw_run_flag *fl = &spw_run_flags[i];
    switch (fl->own) {
    case SPW_RUN_SETS_VARIABLE:
        if (strcmp(fl->var, "SPILLWAY_MEM_FRACTION") == 0)
            o->fraction = arg;
        else if (strcmp(fl->var, "SPILLWAY_MEM_LIMIT") == 0)
            o->limit = 1;
        return set(fl->var, fl->value ? fl->value : arg);
    case SPW_RUN_LIB: o->lib = arg; return 0;
    case SPW_RUN_VERBOSE: o->verbose = 1; return 0;
    case SPW_RUN_HELP: help(); return -1;
    }
    return 0;
}

/* The line for getopt_long's error c (':' a missing value, '?' the rest),
 * naming the option as the user wrote it. optopt says which: the short
 * option's character, the flag's value for a long option given a value it
 * does not take, 0 for a long option unknown or ambiguous. arg (argv[optind
 * - 1]) is the argument at fault except for an unknown short option before
 * the end of a cluster ("-xv"), where optind has not moved on. Returns 2. */
static int option_error(int c, const char *arg)
{
    int i = optopt ? spw_run_flag_find(optopt) : -1;
    int is_long = strncmp(arg, "--", 2) == 0;
    char name[64];
    if (c == ':') {
        if (is_long && i >= 0)
            snprintf(name, sizeof name, "--%s", spw_run_flags[i].name);
        else
            snprintf(name, sizeof name, "-%c", optopt);
        return fail(2, "option '%s' needs a value%s", name, "");
    }
    if (optopt && i < 0) {
        snprintf(name, sizeof name, "-%c", optopt);
        return fail(2, "unknown option '%s' (see spillway --help)%s", name, "");
    }
    size_t n = strcspn(arg + 2, "=");
    if (i >= 0)
        return fail(2, "option '--%s' takes no value (got '%s')", spw_run_flags[i].name, arg);
    char fits[256] = "";
    size_t used = 0, count = 0;
    for (size_t k = 0; k < SPW_RUN_FLAG_COUNT; k++) {
        if (strncmp(spw_run_flags[k].name, arg + 2, n) != 0 || used >= sizeof fits)
            continue;
        used += (size_t)snprintf(fits + used, sizeof fits - used, "%s--%s", count ? ", " : "",
                                 spw_run_flags[k].name);
        count++;
    }
    if (count > 1) {
        snprintf(name, sizeof name, "%.*s", (int)(n + 2), arg);
        return fail(2, "option '%s' is ambiguous: it begins %s", name, fits);
    }
    return fail(2, "unknown option '%s' (see spillway --help)%s", arg, "");
}

/* Parses run's options into the environment. Returns the index of the
 * command in argv, or -(exit status). */
static int parse_run(int argc, char **argv, struct run_opts *o)
{
    static struct option longs[SPW_RUN_FLAG_COUNT + 1];
    static char shorts[2 + 2 * SPW_RUN_FLAG_COUNT + 1];
    build_getopt(longs, shorts);
    opterr = 0;
    optind = 1;
    int c, rc = 0, li = -1;
    while (rc == 0 && (c = getopt_long(argc, argv, shorts, longs, &li)) != -1) {
        if (c == ':' || c == '?')
            return -option_error(c, argv[optind - 1]);
        size_t i = (size_t)spw_run_flag_find(c);
        /* An empty value is what a script leaves when the variable it
         * meant to expand is missing (--limit "$LIMIT"): refused as the
         * flag the user typed, not as the variable it would have set
         * (whose line says to unset it). */
        if (optarg && !*optarg) {
            char name[64];
            if (li >= 0)
                snprintf(name, sizeof name, "--%s", spw_run_flags[i].name);
            else
                snprintf(name, sizeof name, "-%c", c);
            return -fail(2, "option '%s' needs a value, got an empty one%s", name, "");
        }
        li = -1;
        rc = apply_flag(i, optarg, o);
    }
    if (rc == -1)
        return -0x100;
    if (rc)
        return -rc;
    if (optind >= argc)
        return -fail(2, "no command to run (usage: spillway run [OPTION]... [--] COMMAND [ARG]...)%s%s", "", "");
    return optind;
}

/* --fraction with SPILLWAY_MEM_LIMIT inherited from the environment (a
 * job's profile, Slurm's TaskProlog): the limit wins over any fraction
 * (options.def), so the flag the user typed would do nothing. The command
 * line wins over the environment, as every other flag does: the inherited
 * limit is taken out (*dropped: 1), its value kept in value for the line
 * that says so. With --limit as well both stand, as the variables do: the
 * limit, the fraction for devices its per-device form does not name.
 * Returns 0, or an exit status. */
static int drop_inherited_limit(const struct run_opts *o, int *dropped, char *value, size_t len)
{
    const char *inherited = getenv("SPILLWAY_MEM_LIMIT");
    *dropped = 0;
    if (!o->fraction || o->limit || !inherited)
        return 0;
    spw_options_quote(inherited, value, len);
    if (unsetenv("SPILLWAY_MEM_LIMIT") != 0)
        return fail(2, "cannot unset %s: %s", "SPILLWAY_MEM_LIMIT", strerror(errno));
    *dropped = 1;
    return 0;
}

static void print_settings(void)
{
    extern char **environ;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "SPILLWAY_", 9) == 0 || strncmp(*e, "LD_PRELOAD=", 11) == 0)
            fprintf(stderr, "spillway: %s\n", *e);
}

static int cmd_run(int argc, char **argv)
{
    struct run_opts o = {0};
    int cmd = parse_run(argc, argv, &o);
    if (cmd == -0x100)
        return 0;
    if (cmd < 0)
        return -cmd;
    static struct spw_options opts; /* large: not on the stack */
    char err[512], limit[128];
    int dropped, rc = drop_inherited_limit(&o, &dropped, limit, sizeof limit);
    if (rc)
        return rc;
    /* Before -v prints anything: a misspelt or empty variable stops here
     * with the library's own line, verbose or not. */
    if (spw_options_load_environ(&opts, err, sizeof err) != 0)
        return fail(2, "%s%s", err, "");
    if (dropped) {
        char f[64];
        fprintf(stderr,
                "spillway: --fraction %s replaces SPILLWAY_MEM_LIMIT=%s from the environment "
                "(the limit would win over any fraction; the command line wins over the "
                "environment)\n",
                spw_options_quote(o.fraction, f, sizeof f), limit);
    }
    char lib[PATH_MAX];
    if (spw_find_library(o.lib, lib, sizeof lib, err, sizeof err) != 0)
        return fail(2, "%s%s", err, "");
    if (add_preload(lib) != 0)
        return 2;
    if (o.verbose)
        print_settings();
    if (opts.oversubscribe > 1.0 &&
        spw_fw_apply(spw_fw_vars, spw_fw_var_count, o.verbose ? stderr : NULL) != 0)
        return fail(2, "cannot set the frameworks' variables: %s%s", strerror(errno), "");
    execvp(argv[cmd], argv + cmd);
    int e = errno;
    fail(e == ENOENT ? 127 : 126, "cannot run '%s': %s", argv[cmd], strerror(e));
    return e == ENOENT ? 127 : 126;
}

static int cmd_top(int argc, char **argv)
{
    char tool[PATH_MAX + 32];
    spw_sibling_tool("spillway-top", tool, sizeof tool);
    argv[0] = "spillway-top";
    (void)argc;
    execvp(tool, argv);
    return fail(127, "cannot run '%s': %s", tool, strerror(errno));
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr), 2;
    const char *sub = argv[1];
    if (strcmp(sub, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(sub, "top") == 0)
        return cmd_top(argc - 1, argv + 1);
    if (strcmp(sub, "options") == 0) {
        if (argc > 2)
            return fail(2, "options takes no argument, got '%s'%s", argv[2], "");
        spw_options_print_table(stdout);
        return 0;
    }
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
        help();
        return 0;
    }
    if (strcmp(sub, "--version") == 0 || strcmp(sub, "-V") == 0) {
        printf("spillway " VERSION "\n");
        return 0;
    }
    return fail(2, "unknown command '%s' (expected run, top or options; see spillway --help)%s", sub, "");
}
