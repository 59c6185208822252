/* spillway's configuration: one struct generated from shim/options.def and
 * its parser. Pure libc (no CUDA, no other shim code) so that the launcher
 * can link build/shim/options.o to validate the environment before exec. */
#ifndef SPILLWAY_SHIM_OPTIONS_H
#define SPILLWAY_SHIM_OPTIONS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SPW_MAX_DEVICES 64
#define SPW_OPT_STRING_MAX 4096

enum spw_log_level { SPW_LOG_ERROR, SPW_LOG_WARN, SPW_LOG_INFO, SPW_LOG_DEBUG };

/* A device memory limit: `all` applies to every device (0 = not set, the
 * fraction applies); `dev[i]` (0 = not set) overrides it for device i. */
struct spw_devlimit {
    uint64_t all;
    uint64_t dev[SPW_MAX_DEVICES];
};

/* One C type per option type of options.def. */
typedef int spw_opt_bool;                   /* 0 or 1 */
typedef double spw_opt_fraction;            /* in (0, 1] */
typedef struct spw_devlimit spw_opt_devlimit;
typedef uint64_t spw_opt_bytes;             /* UINT64_MAX = unlimited, SPW_BYTES_AUTO = auto */
#define SPW_BYTES_AUTO (UINT64_MAX - 1)
typedef enum spw_log_level spw_opt_loglevel;
typedef char spw_opt_string[SPW_OPT_STRING_MAX];

struct spw_options {
#define SPW_OPTION(name, field, type, def, doc) spw_opt_##type field;
#include "shim/options.def"
#undef SPW_OPTION
};

/* Parses every SPILLWAY_* variable through get (pass getenv); an unset or
 * empty variable takes its default. Returns 0, or -1 with err holding one
 * line naming the variable, the value and what is accepted. get returns
 * char * (not const char *) so that getenv itself can be passed. */
int spw_options_load(struct spw_options *out, char *(*get)(const char *name),
                     char *err, size_t errlen);

/* Writes the table (name, default, doc), one option per line: for --help
 * and the README. */
void spw_options_print_table(FILE *f);

/* The limit of device dev whose total memory is total: the per-device
 * SPILLWAY_MEM_LIMIT, else the global one, else fraction x total; never more
 * than total. */
uint64_t spw_options_device_limit(const struct spw_options *o, int dev, uint64_t total);

/* Writes the effective configuration as "NAME=value\n" lines (what the
 * stats segment publishes). Returns the length it needed, as snprintf. */
int spw_options_format(const struct spw_options *o, char *buf, size_t len);

/* Parses a byte count with an optional K/M/G/T suffix (powers of 1024,
 * optionally followed by B or iB). Returns 0, or -1 if s is not one. */
int spw_parse_bytes(const char *s, uint64_t *out);

const char *spw_log_level_name(enum spw_log_level level);
#endif
