/* Validation and decoding of a copied-out segment image. Everything here
 * treats the bytes as hostile: every field is checked before it is used and
 * nothing is dereferenced outside [buf, buf + len). */
#include "stats/reader.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reject(char *why, size_t whylen, const char *fmt, ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static uint64_t get_u64(const unsigned char *b, size_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

static uint32_t get_u32(const unsigned char *b, size_t off)
{
    uint32_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

#define HOFF(field) offsetof(struct spw_stats_header, field)

/* Code points a terminal or a viewer would act on rather than show: the C1
 * controls (U+0080..U+009F: CSI is U+009B), and the line separators and
 * bidirectional controls (U+2028, U+2029, U+200E, U+200F, U+202A..U+202E,
 * U+2066..U+2069: text that reorders what follows it on screen). */
static int acts_on_display(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

size_t spw_stats_utf8_char(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    if (n == 0)
        return 0;
    if (s[0] < 0x80)
        return s[0] >= 0x20 && s[0] < 0x7f;
    /* Lead byte: length, the bits it carries, and the range its first
     * continuation byte must be in (no overlong form, no surrogate, nothing
     * past U+10FFFF). */
    size_t len;
    uint32_t cp;
    unsigned char lo = 0x80, hi = 0xbf;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2, cp = s[0] & 0x1fu;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3, cp = s[0] & 0x0fu, lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4, cp = s[0] & 0x07u, lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    return acts_on_display(cp) ? 0 : len;
}

static bool ends_with(const char *s, const char *mark)
{
    size_t n = strlen(s), m = strlen(mark);
    return n >= m && strcmp(s + n - m, mark) == 0;
}

/* Copies a NUL-terminated text field, passing printable ASCII and valid
 * UTF-8 through and replacing anything else a terminal could interpret
 * (controls, DEL, invalid UTF-8 byte by byte) by '?'; keep_newlines for
 * config. */
static int copy_text(char *dst, const unsigned char *src, size_t cap, int keep_newlines)
{
    const unsigned char *nul = memchr(src, '\0', cap);
    if (!nul)
        return -1;
    size_t n = (size_t)(nul - src);
    for (size_t i = 0; i < n;) {
        size_t len = spw_stats_utf8_char((const char *)src + i, n - i);
        if (len) {
            memcpy(dst + i, src + i, len);
            i += len;
        } else {
            dst[i] = keep_newlines && src[i] == '\n' ? '\n' : '?';
            i++;
        }
    }
    dst[n] = '\0';
    return 0;
}

/* One decimal number of at most max_digits digits, spelled one way (no
 * leading zero: "spillway.0.01" would be a second segment of pid 1), at
 * *p; advances *p past it. 0 or -1. */
static int parse_number(const char **p, int max_digits, unsigned long long *v)
{
    const char *s = *p;
    if (!isdigit((unsigned char)*s) || (s[0] == '0' && isdigit((unsigned char)s[1])))
        return -1;
    *v = 0;
    for (int digits = 0; isdigit((unsigned char)*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (++digits > max_digits || *v > (ULLONG_MAX - d) / 10)
            return -1;
        *v = *v * 10 + d;
    }
    *p = s;
    return 0;
}

int spw_stats_parse_name(const char *name, uint32_t *uid, int32_t *pid, uint64_t *pid_ns)
{
    size_t plen = strlen(SPW_STATS_NAME_PREFIX);
    if (strncmp(name, SPW_STATS_NAME_PREFIX, plen) != 0)
        return -1;
    const char *p = name + plen;
    unsigned long long u, n, ns = 0;
    if (parse_number(&p, 10, &u) != 0 || *p++ != '.' || parse_number(&p, 10, &n) != 0)
        return -1;
    /* The namespace-qualified name (SPW_STATS_NAME_NS_FORMAT). */
    if (*p == '.') {
        p++;
        if (parse_number(&p, 20, &ns) != 0 || ns == 0)
            return -1;
    }
    if (*p != '\0' || u > UINT32_MAX || n == 0 || n > INT32_MAX)
        return -1;
    *uid = (uint32_t)u;
    *pid = (int32_t)n;
    *pid_ns = ns;
    return 0;
}

static int check_geometry(const unsigned char *b, size_t len, char *why, size_t whylen)
{
    uint32_t abi = get_u32(b, HOFF(abi_version));
    if (abi != SPW_STATS_ABI_VERSION)
        return reject(why, whylen, "ABI version %u, this reader knows %u", abi, SPW_STATS_ABI_VERSION);
    uint32_t hs = get_u32(b, HOFF(header_size));
    if (hs != sizeof(struct spw_stats_header))
        return reject(why, whylen, "header size %u, expected %zu", hs, sizeof(struct spw_stats_header));
    uint32_t ds = get_u32(b, HOFF(device_size));
    if (ds != sizeof(struct spw_stats_device))
        return reject(why, whylen, "device size %u, expected %zu (%u counters, then %u lanes each for %u of them)",
                      ds, sizeof(struct spw_stats_device), (unsigned)SPW_C_COUNT, SPW_STATS_LANES,
                      (unsigned)SPW_L_COUNT);
    uint32_t cc = get_u32(b, HOFF(counter_count));
    if (cc != SPW_C_COUNT)
        return reject(why, whylen, "counter count %u, expected %u", cc, (unsigned)SPW_C_COUNT);
    uint32_t nd = get_u32(b, HOFF(device_count));
    if (nd < 1 || nd > SPW_STATS_MAX_DEVICES)
        return reject(why, whylen, "device count %u out of range 1..%u", nd, SPW_STATS_MAX_DEVICES);
    uint64_t total = get_u64(b, HOFF(total_size));
    if (total != spw_stats_total_size(nd))
        return reject(why, whylen, "total size %llu does not match %u devices",
                      (unsigned long long)total, nd);
    if (total != len)
        return reject(why, whylen, "total size %llu but file has %zu bytes (truncated or grown)",
                      (unsigned long long)total, len);
    return 0;
}

static int check_identity(const unsigned char *b, uint32_t file_uid, struct spw_stats_snapshot *out,
                          char *why, size_t whylen)
{
    out->uid = get_u32(b, HOFF(uid));
    if (out->uid != file_uid)
        return reject(why, whylen, "uid field %u but file owned by uid %u", out->uid, file_uid);
    out->pid = (int32_t)get_u32(b, HOFF(pid));
    out->host_pid = (int32_t)get_u32(b, HOFF(host_pid));
    if (out->pid <= 0 || out->host_pid <= 0)
        return reject(why, whylen, "invalid pid %d / host pid %d", out->pid, out->host_pid);
    out->pid_ns = get_u64(b, HOFF(pid_ns));
    out->start_time = get_u64(b, HOFF(start_time));
    out->created_unix_ns = get_u64(b, HOFF(created_unix_ns));
    out->device_count = get_u32(b, HOFF(device_count));
    out->liveness = SPW_UNKNOWN;
    out->local_pid = 0;
    return 0;
}

int spw_stats_decode_owner(const void *buf, size_t len, uint32_t file_uid,
                           struct spw_stats_snapshot *out, char *why, size_t whylen)
{
    const unsigned char *b = buf;
    if (len < sizeof(struct spw_stats_header))
        return reject(why, whylen, "%zu bytes, shorter than the header", len);
    uint64_t magic = get_u64(b, HOFF(magic));
    if (magic != SPW_STATS_MAGIC)
        return reject(why, whylen, magic == 0 ? "not initialised" : "bad magic %016llx",
                      (unsigned long long)magic);
    if (check_geometry(b, len, why, whylen) != 0)
        return -1;
    out->cmdline[0] = out->config[0] = '\0';
    out->cmdline_truncated = out->config_truncated = false;
    return check_identity(b, file_uid, out, why, whylen);
}

int spw_stats_text_busy(const void *buf, size_t len)
{
    return len >= sizeof(struct spw_stats_header) &&
           (get_u64((const unsigned char *)buf, HOFF(text_generation)) & 1) != 0;
}

int spw_stats_decode(const void *buf, size_t len, uint32_t file_uid,
                     struct spw_stats_snapshot *out, char *why, size_t whylen)
{
    const unsigned char *b = buf;
    if (spw_stats_decode_owner(buf, len, file_uid, out, why, whylen) != 0)
        return -1;
    if (spw_stats_text_busy(buf, len))
        return reject(why, whylen, "text fields are being rewritten");
    if (copy_text(out->cmdline, b + HOFF(cmdline), SPW_STATS_CMDLINE_LEN, 0) != 0)
        return reject(why, whylen, "command line not terminated");
    if (copy_text(out->config, b + HOFF(config), SPW_STATS_CONFIG_LEN, 1) != 0)
        return reject(why, whylen, "config not terminated");
    /* The marks of a cut (layout.h); the copy kept every byte's place. */
    out->cmdline_truncated = strlen(out->cmdline) >= SPW_STATS_CMDLINE_LEN - SPW_STATS_CMDLINE_CUT_SLACK &&
                             ends_with(out->cmdline, SPW_STATS_CMDLINE_CUT);
    out->config_truncated = ends_with(out->config, SPW_STATS_CONFIG_CUT);
    /* check_geometry made len exactly the header and device_count devices. */
    for (uint32_t d = 0; d < out->device_count; d++)
        for (unsigned k = 0; k < SPW_C_COUNT; k++)
            out->c[d][k] = spw_stats_device_value(b + spw_stats_device_offset(d), (enum spw_counter)k);
    return 0;
}

static const char *const counter_names[] = {
#define SPW_X(e, n, k, h) #n,
    SPW_STATS_COUNTERS(SPW_X)
#undef SPW_X
};
static const char *const counter_helps[] = {
#define SPW_X(e, n, k, h) h,
    SPW_STATS_COUNTERS(SPW_X)
#undef SPW_X
};
#define SPW_KIND_GAUGE 1
#define SPW_KIND_COUNTER 0
static const int counter_gauge[] = {
#define SPW_X(e, n, k, h) SPW_KIND_##k,
    SPW_STATS_COUNTERS(SPW_X)
#undef SPW_X
};

const char *spw_stats_counter_name(enum spw_counter k)
{
    return (unsigned)k < SPW_C_COUNT ? counter_names[k] : "?";
}

const char *spw_stats_counter_help(enum spw_counter k)
{
    return (unsigned)k < SPW_C_COUNT ? counter_helps[k] : "?";
}

int spw_stats_counter_is_gauge(enum spw_counter k)
{
    return (unsigned)k < SPW_C_COUNT ? counter_gauge[k] : 0;
}
