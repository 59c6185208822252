/* Parser of the option table (options.def). Pure libc: the launcher links
 * this file alone. */
#include "shim/options.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* What each type accepts, for the error line. */
static const char accepted_bool[] = "1, 0, true, false, yes, no, on or off";
static const char accepted_fraction[] = "a number greater than 0 and at most 1, e.g. 0.5";
static const char accepted_devlimit[] =
    "bytes with an optional K/M/G/T suffix (8G, 512M, 1073741824), "
    "or per device <index>=<bytes>[,...] (0=8G,1=4G), each > 0, index < 64";
static const char accepted_bytes[] = "bytes with an optional K/M/G/T suffix (8G, 512M, 1073741824), auto or unlimited";
static const char accepted_loglevel[] = "error, warn, info or debug";
static const char accepted_string[] = "a string shorter than 4096 bytes";

static const char *const level_names[] = {"error", "warn", "info", "debug"};

const char *spw_log_level_name(enum spw_log_level level)
{
    if ((unsigned)level >= sizeof level_names / sizeof level_names[0])
        return "?";
    return level_names[level];
}

int spw_parse_bytes(const char *s, uint64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -1;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift && (*end == 'i' || *end == 'I') && toupper((unsigned char)end[1]) == 'B')
        end += 2;
    else if (shift && toupper((unsigned char)*end) == 'B')
        end++;
    if (*end != '\0')
        return -1;
    if (shift && n > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)n << shift;
    return 0;
}

static int parse_bool(const char *v, spw_opt_bool *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(v, yes[i]) == 0) { *out = 1; return 0; }
        if (strcasecmp(v, no[i]) == 0) { *out = 0; return 0; }
    }
    return -1;
}

static int parse_fraction(const char *v, spw_opt_fraction *out)
{
    if (!isdigit((unsigned char)*v) && *v != '.')
        return -1;
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || *end != '\0' || !isfinite(d) || d <= 0.0 || d > 1.0)
        return -1;
    *out = d;
    return 0;
}

/* One "<index>=<bytes>" item of a per-device list, in place. */
static int parse_devlimit_item(char *item, spw_opt_devlimit *out)
{
    char *eq = strchr(item, '=');
    if (!eq || eq == item)
        return -1;
    *eq = '\0';
    for (const char *p = item; *p; p++)
        if (!isdigit((unsigned char)*p))
            return -1;
    unsigned long idx = strtoul(item, NULL, 10);
    uint64_t bytes;
    if (idx >= SPW_MAX_DEVICES || strlen(item) > 2 || spw_parse_bytes(eq + 1, &bytes) || bytes == 0)
        return -1;
    if (out->dev[idx])
        return -1; /* the same device twice is a mistake, not an override */
    out->dev[idx] = bytes;
    return 0;
}

static int parse_devlimit(const char *v, spw_opt_devlimit *out)
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
        if (parse_devlimit_item(item, out))
            return -1;
    /* strtok_r skips empty items: "0=1G,,1=2G" or a trailing comma are typos. */
    size_t commas = 0;
    for (const char *p = v; *p; p++)
        commas += *p == ',';
    return n > 0 && commas + 1 == (size_t)n ? 0 : -1;
}

static int parse_bytes(const char *v, spw_opt_bytes *out)
{
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

static int parse_loglevel(const char *v, spw_opt_loglevel *out)
{
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
        if (strcasecmp(v, level_names[i]) == 0) {
            *out = (enum spw_log_level)i;
            return 0;
        }
    return -1;
}

static int parse_string(const char *v, spw_opt_string *out)
{
    size_t n = strlen(v);
    if (n >= sizeof *out)
        return -1;
    memcpy(*out, v, n + 1);
    return 0;
}

/* Copies v into buf for the error line: printable, one line, bounded. */
static const char *quote_value(const char *v, char *buf, size_t len)
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

static void set_error(char *err, size_t errlen, const char *name, const char *value,
                      const char *accepted)
{
    char q[128];
    if (err && errlen)
        snprintf(err, errlen, "invalid %s='%s': accepted: %s", name, quote_value(value, q, sizeof q),
                 accepted);
}

int spw_options_load(struct spw_options *out, char *(*get)(const char *name), char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *v;
#define SPW_OPTION(name, field, type, def, doc)                                   \
    v = get ? get(#name) : NULL;                                                  \
    if (!v || !*v)                                                                \
        v = def;                                                                  \
    if (parse_##type(v, &out->field)) {                                           \
        set_error(err, errlen, #name, v, accepted_##type);                        \
        return -1;                                                                \
    }
#include "shim/options.def"
#undef SPW_OPTION
    return 0;
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
static int format_fraction(char *b, size_t n, const spw_opt_fraction *v) { return snprintf(b, n, "%g", *v); }
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
static int format_devlimit(char *b, size_t n, const spw_opt_devlimit *v)
{
    if (v->all)
        return snprintf(b, n, "%llu", (unsigned long long)v->all);
    int used = 0;
    for (int d = 0; d < SPW_MAX_DEVICES; d++) {
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

int spw_options_format(const struct spw_options *o, char *buf, size_t len)
{
    int used = 0;
    size_t off;
    if (len)
        buf[0] = '\0';
#define SPW_OPTION(name, field, type, def, doc)                                       \
    off = (size_t)used < len ? (size_t)used : len;                                    \
    used += snprintf(buf + off, len - off, "%s=", #name);                             \
    off = (size_t)used < len ? (size_t)used : len;                                    \
    used += format_##type(buf + off, len - off, &o->field);                           \
    off = (size_t)used < len ? (size_t)used : len;                                    \
    used += snprintf(buf + off, len - off, "\n");
#include "shim/options.def"
#undef SPW_OPTION
    return used;
}

uint64_t spw_options_device_limit(const struct spw_options *o, int dev, uint64_t total)
{
    uint64_t limit;
    if (dev >= 0 && dev < SPW_MAX_DEVICES && o->mem_limit.dev[dev])
        limit = o->mem_limit.dev[dev];
    else if (o->mem_limit.all)
        limit = o->mem_limit.all;
    else
        limit = (uint64_t)((double)total * o->mem_fraction);
    return limit < total ? limit : total;
}
