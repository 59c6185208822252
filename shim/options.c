/* Parser of the option table (options.def). Pure libc: the launcher links
 * this file and options_names.c (which names exist, and suggestions) alone. */
#include "shim/options.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* What each type accepts, for the error line. */
static const char accepted_bool[] = "1, 0, true, false, yes, no, on or off";
static const char accepted_fraction[] = "a decimal number from 0.000001 to 1, e.g. 0.5";
static const char accepted_factor[] = "a decimal number from 1 to 1000, e.g. 1.5";
static const char accepted_devlimit[] =
    "bytes with an optional K/M/G/T suffix (8G, 512M, 1073741824), "
    "or per device <index>=<bytes>[,...] (0=8G,1=4G), each > 0, index < 64";
static const char accepted_bytes[] = "bytes with an optional K/M/G/T suffix (8G, 512M, 1073741824), auto or unlimited";
static const char accepted_reserve[] = "bytes with an optional K/M/G/T suffix (8G, 512M, 1073741824), or auto";
static const char accepted_loglevel[] = "error, warn, info or debug";
static const char accepted_string[] = "a string shorter than 4096 bytes";

static const char *const level_names[] = {"error", "warn", "info", "debug"};

const char *spw_log_level_name(enum spw_log_level level)
{
    if ((unsigned)level >= sizeof level_names / sizeof level_names[0])
        return "?";
    return level_names[level];
}

/* The number grammar (options.h; README, "Configuration"; spillway(1),
 * ENVIRONMENT) is checked by hand before strtod or strtoull read a number:
 * alone they also took hex (0x0.8, 0x2), exponents, inf and nan, none of
 * which a user means for a fraction, a factor or a size. The digits at s. */
static size_t digits(const char *s)
{
    return strspn(s, "0123456789");
}

int spw_parse_decimal(const char *s, double *out)
{
    size_t whole = digits(s), part = 0;
    const char *p = s + whole;
    if (*p == '.') {
        part = digits(p + 1);
        p += 1 + part;
    }
    if (*p != '\0' || whole + part == 0)
        return -1;
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    /* end short of p: a locale whose decimal point is not '.'. ERANGE: a
     * run of digits past a double (overflow, or a fraction of hundreds of
     * zeros, underflow), a typo. */
    if (end != p || errno == ERANGE || !isfinite(d))
        return -1;
    *out = d;
    return 0;
}

int spw_parse_bytes(const char *s, uint64_t *out)
{
    size_t n = digits(s);
    if (n == 0)
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE)
        return -1;
    const char *end = s + n;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: break;
    }
    /* Then i, B or iB in either case (8Gi as Kubernetes writes it, 8gb as
     * Docker takes it): no memory size is given in bits. */
    if (shift) {
        end++;
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'b' || *end == 'B')
            end++;
    }
    if (*end != '\0')
        return -1;
    if (shift && v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}


/* The parsers of the option types, one signature for options.def's
 * X-macro: 0, or -1 with why (when it can say more than the type's
 * accepted forms) holding what is wrong, for the error line. */
#define NO_WHY (void)why, (void)whylen

static int parse_bool(const char *v, spw_opt_bool *out, char *why, size_t whylen)
{
    NO_WHY;
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(v, yes[i]) == 0) { *out = 1; return 0; }
        if (strcasecmp(v, no[i]) == 0) { *out = 0; return 0; }
    }
    return -1;
}

static int parse_fraction(const char *v, spw_opt_fraction *out, char *why, size_t whylen)
{
    NO_WHY;
    double d;
    /* Below SPW_MIN_FRACTION no device has a page's worth: a typo (a
     * missing digit), not a setting. */
    if (spw_parse_decimal(v, &d) || d < SPW_MIN_FRACTION || d > 1.0)
        return -1;
    *out = d;
    return 0;
}

/* A factor: 1 (the default: nothing oversubscribed) or more; past
 * SPW_MAX_FACTOR a typo. */
static int parse_factor(const char *v, spw_opt_factor *out, char *why, size_t whylen)
{
    NO_WHY;
    double d;
    if (spw_parse_decimal(v, &d) || d < 1.0 || d > SPW_MAX_FACTOR)
        return -1;
    *out = d;
    return 0;
}

/* One "<index>=<bytes>" item of a per-device list, in place. */
static int parse_devlimit_item(char *item, spw_opt_devlimit *out, char *why, size_t whylen)
{
    char *eq = strchr(item, '=');
    if (!eq || eq == item)
        return -1;
    *eq = '\0';
    size_t n = digits(item);
    if (item[n] != '\0' || n > 2)
        return -1;
    unsigned long idx = strtoul(item, NULL, 10);
    uint64_t bytes;
    if (idx >= SW_MAX_DEVICES || spw_parse_bytes(eq + 1, &bytes) || bytes == 0)
        return -1;
    /* The same device twice is a mistake, not an override: which one was
     * meant? */
    if (out->dev[idx]) {
        snprintf(why, whylen, "device %lu is named twice", idx);
        return -1;
    }
    out->dev[idx] = bytes;
    return 0;
}

static int parse_devlimit(const char *v, spw_opt_devlimit *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    if (*v == '\0')
        return 0;
    if (!strchr(v, '='))
        return spw_parse_bytes(v, &out->all) || out->all == 0 ? -1 : 0;
    char buf[1024];
    if (strlen(v) >= sizeof buf)
        return -1;
    strcpy(buf, v);
    char *save = NULL;
    int n = 0;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save), n++)
        if (parse_devlimit_item(item, out, why, whylen))
            return -1;
    /* strtok_r skips empty items: "0=1G,,1=2G" or a trailing comma are typos. */
    size_t commas = 0;
    for (const char *p = v; *p; p++)
        commas += *p == ',';
    return n > 0 && commas + 1 == (size_t)n ? 0 : -1;
}

static int parse_bytes(const char *v, spw_opt_bytes *out, char *why, size_t whylen)
{
    NO_WHY;
    if (strcasecmp(v, "unlimited") == 0) {
        *out = UINT64_MAX;
        return 0;
    }
    if (strcasecmp(v, "auto") == 0) {
        *out = SPW_BYTES_AUTO;
        return 0;
    }
    int r = spw_parse_bytes(v, out);
    return r == 0 && *out >= SPW_BYTES_AUTO ? -1 : r; /* the keywords' values */
}

/* A reserve: bytes or auto, as its doc says. Not unlimited, which the
 * bytes type takes: a reserve is pinned ahead of need, and an unlimited
 * one pinned the whole host limit (with SPILLWAY_HOST_LIMIT=unlimited,
 * host memory until the driver refused). */
static int parse_reserve(const char *v, spw_opt_reserve *out, char *why, size_t whylen)
{
    if (strcasecmp(v, "unlimited") == 0)
        return -1;
    return parse_bytes(v, out, why, whylen);
}

static int parse_loglevel(const char *v, spw_opt_loglevel *out, char *why, size_t whylen)
{
    NO_WHY;
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
        if (strcasecmp(v, level_names[i]) == 0) {
            *out = (enum spw_log_level)i;
            return 0;
        }
    return -1;
}

static int parse_string(const char *v, spw_opt_string *out, char *why, size_t whylen)
{
    NO_WHY;
    size_t n = strlen(v);
    if (n >= sizeof *out)
        return -1;
    memcpy(*out, v, n + 1);
    return 0;
}

/* Copies v into buf for the error line: printable, one line, bounded. */
const char *spw_options_quote(const char *v, char *buf, size_t len)
{
    size_t i = 0;
    for (; v[i] && i + 4 < len; i++)
        buf[i] = isprint((unsigned char)v[i]) ? v[i] : '?';
    if (v[i]) {
        strcpy(buf + (i > 3 ? i - 3 : 0), "...");
        return buf;
    }
    buf[i] = '\0';
    return buf;
}

/* why: what is wrong, when the parser could say more than the accepted
 * forms ("" otherwise). */
static void set_error(char *err, size_t errlen, const char *name, const char *value,
                      const char *why, const char *accepted)
{
    char q[128];
    if (err && errlen)
        snprintf(err, errlen, "invalid %s='%s': %s%saccepted: %s", name,
                 spw_options_quote(value, q, sizeof q), why, *why ? "; " : "", accepted);
}

/* An empty value is refused rather than read as unset: `VAR=` is what a
 * script leaves when the variable it meant to expand is missing. */
static void set_empty_error(char *err, size_t errlen, const char *name, const char *def,
                            const char *accepted)
{
    if (err && errlen)
        snprintf(err, errlen, "invalid %s='': empty; unset it for the default (%s); accepted: %s",
                 name, *def ? def : "none", accepted);
}

static int check_combinations(const struct spw_options *o, char *err, size_t errlen);

int spw_options_load(struct spw_options *out, char *(*get)(const char *name), char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *v;
    char why[128];
#define SPW_OPTION(name, field, type, def, doc)                                   \
    v = get ? get(#name) : NULL;                                                  \
    if (v && !*v) {                                                               \
        set_empty_error(err, errlen, #name, def, accepted_##type);                \
        return -1;                                                                \
    }                                                                             \
    if (!v)                                                                       \
        v = def;                                                                  \
    why[0] = '\0';                                                                \
    if (parse_##type(v, &out->field, why, sizeof why)) {                          \
        set_error(err, errlen, #name, v, why, accepted_##type);                   \
        return -1;                                                                \
    }
#include "shim/options.def"
#undef SPW_OPTION
    return check_combinations(out, err, errlen);
}

int spw_options_load_environ(struct spw_options *out, char *err, size_t errlen)
{
    if (spw_options_check_names(environ, err, errlen))
        return -1;
    return spw_options_load(out, getenv, err, errlen);
}

void spw_options_print_table(FILE *f)
{
#define SPW_OPTION(name, field, type, def, doc) \
    fprintf(f, "%-22s %-13s %s\n", #name, *def ? def : "(none)", doc);
#include "shim/options.def"
#undef SPW_OPTION
}

/* Formatters: the inverse of the parsers, one value per call. */
static int format_bool(char *b, size_t n, const spw_opt_bool *v) { return snprintf(b, n, "%d", *v); }
/* The fewest decimals that parse back to v, in the grammar the parser
 * reads (no exponent: %g wrote the smallest fraction as 1e-06, which a
 * user could not give back). %g's six digits alone had published
 * 0.1234567 as 0.123457, and a factor of 1.0000001 as 1. Fractions and
 * factors (1e-6 to 1000) need at most 23 places. */
int spw_options_format_decimal(char *b, size_t n, double v)
{
    char t[64];
    for (int places = 0; places <= 40; places++) {
        snprintf(t, sizeof t, "%.*f", places, v);
        if (strtod(t, NULL) == v)
            break;
    }
    return snprintf(b, n, "%s", t);
}
static int format_fraction(char *b, size_t n, const spw_opt_fraction *v) { return spw_options_format_decimal(b, n, *v); }
static int format_factor(char *b, size_t n, const spw_opt_factor *v) { return spw_options_format_decimal(b, n, *v); }
static int format_loglevel(char *b, size_t n, const spw_opt_loglevel *v)
{
    return snprintf(b, n, "%s", spw_log_level_name(*v));
}
static int format_string(char *b, size_t n, const spw_opt_string *v) { return snprintf(b, n, "%s", *v); }
static int format_bytes(char *b, size_t n, const spw_opt_bytes *v)
{
    if (*v == UINT64_MAX)
        return snprintf(b, n, "unlimited");
    if (*v == SPW_BYTES_AUTO)
        return snprintf(b, n, "auto");
    return snprintf(b, n, "%llu", (unsigned long long)*v);
}
static int format_reserve(char *b, size_t n, const spw_opt_reserve *v) { return format_bytes(b, n, v); }
static int format_devlimit(char *b, size_t n, const spw_opt_devlimit *v)
{
    if (v->all)
        return snprintf(b, n, "%llu", (unsigned long long)v->all);
    int used = 0;
    for (int d = 0; d < SW_MAX_DEVICES; d++) {
        if (!v->dev[d])
            continue;
        size_t off = (size_t)used < n ? (size_t)used : n;
        used += snprintf(b + off, n - off, "%s%d=%llu", used ? "," : "", d,
                         (unsigned long long)v->dev[d]);
    }
    if (used == 0 && n)
        b[0] = '\0';
    return used;
}

/* Strings (paths, names) last: they are long where the others are a few
 * bytes, and a reader whose space runs out (the stats segment's config
 * field) keeps the short ones, the limits among them. */
#define SPW_OPT_LAST_string 1
#define SPW_OPT_LAST_bool 0
#define SPW_OPT_LAST_fraction 0
#define SPW_OPT_LAST_factor 0
#define SPW_OPT_LAST_devlimit 0
#define SPW_OPT_LAST_bytes 0
#define SPW_OPT_LAST_reserve 0
#define SPW_OPT_LAST_loglevel 0

int spw_options_format(const struct spw_options *o, char *buf, size_t len)
{
    int used = 0;
    size_t off;
    if (len)
        buf[0] = '\0';
    for (int last = 0; last < 2; last++) {
#define SPW_OPTION(name, field, type, def, doc)                                       \
    if (SPW_OPT_LAST_##type == last) {                                                \
        off = (size_t)used < len ? (size_t)used : len;                                \
        used += snprintf(buf + off, len - off, "%s=", #name);                         \
        off = (size_t)used < len ? (size_t)used : len;                                \
        used += format_##type(buf + off, len - off, &o->field);                       \
        off = (size_t)used < len ? (size_t)used : len;                                \
        used += snprintf(buf + off, len - off, "\n");                                 \
    }
#include "shim/options.def"
#undef SPW_OPTION
    }
    return used;
}

static int check_combinations(const struct spw_options *o, char *err, size_t errlen)
{
    if (o->oversubscribe <= 1.0)
        return 0;
    /* Memory past the limit is host pages, and only spill maps them.
     * Whether the host limit holds them waits for the device (spw_limit):
     * a limit in bytes above the device is cut to it, and only the part
     * past the limit applied needs host memory, so no byte count can be
     * refused before the device is seen. */
    if (!o->spill) {
        if (err && errlen)
            snprintf(err, errlen,
                     "invalid SPILLWAY_OVERSUBSCRIBE=%g with SPILLWAY_SPILL=0: memory past the "
                     "limit lives in pinned host memory, which needs spill (unset one of them)",
                     o->oversubscribe);
        return -1;
    }
    return 0;
}
