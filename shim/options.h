/* spillway's configuration: one struct generated from shim/options.def and
 * its parser. Pure libc (no CUDA, no other shim code) so that the launcher
 * can link build/shim/options.o to validate the environment before exec. */
#ifndef SPILLWAY_SHIM_OPTIONS_H
#define SPILLWAY_SHIM_OPTIONS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/limits.h"

#define SPW_OPT_STRING_MAX 4096

enum spw_log_level { SPW_LOG_ERROR, SPW_LOG_WARN, SPW_LOG_INFO, SPW_LOG_DEBUG };

/* A device memory limit: `all` applies to every device (0 = not set, the
 * fraction applies); `dev[i]` (0 = not set) overrides it for device i. */
struct spw_devlimit {
    uint64_t all;
    uint64_t dev[SW_MAX_DEVICES];
};

/* One C type per option type of options.def. */
typedef int spw_opt_bool;                   /* 0 or 1 */
typedef double spw_opt_fraction;            /* in (0, 1] */
typedef double spw_opt_factor;              /* in [1, SPW_MAX_FACTOR] */
typedef struct spw_devlimit spw_opt_devlimit;
typedef uint64_t spw_opt_bytes;             /* UINT64_MAX = unlimited, SPW_BYTES_AUTO = auto */
#define SPW_BYTES_AUTO (UINT64_MAX - 1)
typedef uint64_t spw_opt_reserve;           /* bytes, or SPW_BYTES_AUTO; never unlimited */
typedef enum spw_log_level spw_opt_loglevel;
typedef char spw_opt_string[SPW_OPT_STRING_MAX];

struct spw_options {
#define SPW_OPTION(name, field, type, def, doc) spw_opt_##type field;
#include "shim/options.def"
#undef SPW_OPTION
};

/* The smallest SPILLWAY_MEM_FRACTION accepted: below it no device has a
 * page's worth, so the value can only be a typo. */
#define SPW_MIN_FRACTION 1e-6

/* The largest SPILLWAY_OVERSUBSCRIBE accepted: more is a typo (and F x the
 * limit must stay a byte count). */
#define SPW_MAX_FACTOR 1000.0

/* Parses every SPILLWAY_* variable through get (pass getenv); an unset
 * variable takes its default, an empty one is an error. Then the rules
 * between options that need no device to check: SPILLWAY_OVERSUBSCRIBE
 * above 1 needs spill. (Whether the host limit holds what the factor puts
 * past a limit needs the device, which cuts a limit above it: that is
 * spw_options_check_host_room at the device's first use.) Returns 0, or
 * -1 with err holding one line naming the variable, the value and what is accepted. get returns
 * char * (not const char *) so that getenv itself can be passed. */
int spw_options_load(struct spw_options *out, char *(*get)(const char *name),
                     char *err, size_t errlen);

/* Checks that every SPILLWAY_* name in env ("NAME=value" strings, NULL
 * terminated, like environ; the prefix in any case) is an option of the
 * table. Returns 0, or -1 with err naming the first unknown one and the
 * option it is nearest to ("did you mean"), or listing them all. */
int spw_options_check_names(char *const *env, char *err, size_t errlen);

/* The option nearest to the name (len bytes, prefix SPILLWAY_ in any case)
 * if one is near enough to be a slip of it, else NULL. */
const char *spw_options_suggest(const char *name, size_t len);

/* spw_options_check_names(environ) then spw_options_load(getenv): what the
 * library and the launcher both run, so both refuse the same things with
 * the same line. */
int spw_options_load_environ(struct spw_options *out, char *err, size_t errlen);

/* v as an error line shows it (options.c, options_names.c): printable,
 * one line, cut with "..." to fit buf. */
const char *spw_options_quote(const char *v, char *buf, size_t len);

/* Writes the table (name, default, doc), one option per line: for --help
 * and the README. */
void spw_options_print_table(FILE *f);

/* The limit of device dev whose total memory is total: the per-device
 * SPILLWAY_MEM_LIMIT, else the global one, else fraction x total; never more
 * than total. */
uint64_t spw_options_device_limit(const struct spw_options *o, int dev, uint64_t total);

/* The same, knowing the device's page (the VMM granularity; 0: unknown) and
 * total (0: unknown): never less than one page, never more than total, and
 * a whole number of pages (the pool holds whole pages: rounded down). When
 * that is not what SPILLWAY_MEM_LIMIT asks (or a fraction gives less than
 * a page, or more than total), note gets one line saying what was asked and
 * what is used instead (for a warning); else it is left empty. */
uint64_t spw_options_resolve_limit(const struct spw_options *o, int dev, uint64_t total,
                                   uint64_t page, char *note, size_t len);

/* What a program is told a device with this limit has (cuMemGetInfo's
 * total, cuDeviceTotalMem): SPILLWAY_OVERSUBSCRIBE x limit, rounded down;
 * the limit itself at the default factor of 1. */
uint64_t spw_options_told(const struct spw_options *o, uint64_t limit);

/* Where device dev's limit comes from, as the user wrote it:
 * "SPILLWAY_MEM_LIMIT (1=8G)", "SPILLWAY_MEM_LIMIT=8G" or
 * "SPILLWAY_MEM_FRACTION=0.75". */
void spw_options_limit_source(const struct spw_options *o, int dev, char *buf, size_t len);

/* The info line of device dev once its limit is resolved (README, "The
 * log"): the limit, of the device's total (0: unknown), where it comes
 * from, what programs are told the device has (told) and why: the limit,
 * or SPILLWAY_OVERSUBSCRIBE x it in whole pages, the rest in host memory;
 * pool is 0 where the page pool cannot be made (the factor does not apply
 * there). Returns what snprintf returns. */
int spw_options_describe_limit(const struct spw_options *o, int dev, uint64_t total,
                               uint64_t limit, uint64_t told, int pool, char *buf, size_t len);

/* SPILLWAY_HOST_LIMIT for one of ndev devices (ndev < 1: one) for a process
 * that may have phys bytes of memory (0: unknown; spw_host_memory: the
 * machine's, or its cgroup's limit when lower): auto is half of phys split evenly
 * among the devices, because pinned pages cannot be swapped and a program
 * spilling all of RAM would take the machine down with it; unknown memory
 * gives 0 (no spill rather than a guess). UINT64_MAX: unlimited. */
uint64_t spw_options_host_limit(const struct spw_options *o, int ndev, uint64_t phys);

/* SPILLWAY_HOST_RESERVE for device dev, whose limit is limit and host
 * limit host_limit: auto is 1/32 of the limit, from 128 MiB to 4 GiB (one
 * spill event's worth and more, not a share of the machine); never more
 * than host_limit. When a reserve in bytes is cut to it (and spill is on:
 * else none is pinned), note gets one line naming both values and what is
 * used (for a warning); else it is left empty. */
uint64_t spw_options_host_reserve(const struct spw_options *o, int dev, uint64_t limit,
                                  uint64_t host_limit, char *note, size_t len);

/* The machine's memory in bytes (0: unknown), for spw_host_memory. */
uint64_t spw_options_phys_memory(void);

/* Whether host_limit holds what SPILLWAY_OVERSUBSCRIBE puts past limit
 * (told - limit; always at a factor of 1). Returns 0, or -1 with err
 * holding one line: who (a device, or the variable the limit came from),
 * the figures, and what to change. how, when not NULL, follows the host
 * limit's figure and says where auto's came from (", half of ..."). */
int spw_options_check_host_room(const struct spw_options *o, const char *who, uint64_t limit,
                                uint64_t host_limit, const char *how, char *err, size_t len);

/* How many devices SPILLWAY_MEM_LIMIT's per-device form names that a
 * machine with count devices lacks; when some, note gets one line naming
 * them and the devices there are. */
int spw_options_missing_devices(const struct spw_options *o, int count, char *note, size_t len);

/* Writes the effective configuration as "NAME=value\n" lines (what the
 * stats segment publishes): the table's order, the string options (paths,
 * names: the long ones) last. Returns the length it needed, as snprintf. */
int spw_options_format(const struct spw_options *o, char *buf, size_t len);

/* v in the fewest decimals that parse back to it, in the grammar
 * spw_parse_decimal reads (no exponent); returns what snprintf returns. */
int spw_options_format_decimal(char *b, size_t n, double v);

/* The number grammar of every value spillway reads, variables and the
 * tools' flags alike (README, "Configuration"): decimal digits only, no
 * sign, space, exponent, hex, inf or nan.
 *
 * A decimal number: digits with an optional fraction, a digit on at least
 * one side of the point (2, 0.5, .5, 2.). Returns 0, or -1 if s is not
 * one (or is past a double). */
int spw_parse_decimal(const char *s, double *out);

/* A byte count: digits, optionally followed by K, M, G or T (powers of
 * 1024), itself optionally followed by i, B or iB, all in either case (8G,
 * 8Gi, 8GB, 8GiB, 8gb). Returns 0, or -1 if s is not one or is past 2^64. */
int spw_parse_bytes(const char *s, uint64_t *out);

const char *spw_log_level_name(enum spw_log_level level);
#endif
