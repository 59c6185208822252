/* The names of the option table (options.def): which SPILLWAY_* variables
 * exist, and for one that does not, the one probably meant ("did you
 * mean"). Pure libc, like options.c: the launcher links both. */
#include "shim/options.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const option_names[] = {
#define SPW_OPTION(name, field, type, def, doc) #name,
#include "shim/options.def"
#undef SPW_OPTION
};
#define OPTION_COUNT (sizeof option_names / sizeof option_names[0])
#define PREFIX "SPILLWAY_"
#define PREFIX_LEN (sizeof PREFIX - 1)
#define NAME_MAX_LEN 64 /* longer names get no suggestion */

/* Optimal string alignment distance (edits, adjacent swaps count one),
 * ignoring case: "MEM_LIMT" is 1 from "MEM_LIMIT", "MEM_LIMTI" too. Three
 * rolling rows: this may run in a library constructor, on any stack. */
static size_t edit_distance(const char *a, size_t n, const char *b, size_t m)
{
    size_t rows[3][NAME_MAX_LEN + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        int ai = toupper((unsigned char)a[i - 1]);
        for (size_t j = 1; j <= m; j++) {
            int bj = toupper((unsigned char)b[j - 1]);
            size_t best = prev[j - 1] + (ai != bj);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ai == toupper((unsigned char)b[j - 2]) &&
                toupper((unsigned char)a[i - 2]) == bj && prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[m];
}

static int contains_nocase(const char *hay, size_t hn, const char *needle, size_t nn)
{
    for (size_t i = 0; nn && i + nn <= hn; i++)
        if (strncasecmp(hay + i, needle, nn) == 0)
            return 1;
    return 0;
}

const char *spw_options_suggest(const char *name, size_t len)
{
    if (len < PREFIX_LEN || strncasecmp(name, PREFIX, PREFIX_LEN) != 0 || len > NAME_MAX_LEN)
        return NULL;
    const char *u = name + PREFIX_LEN;
    size_t un = len - PREFIX_LEN, best_d = SIZE_MAX;
    const char *best = NULL;
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const char *k = option_names[i] + PREFIX_LEN;
        size_t kn = strlen(k), d = edit_distance(u, un, k, kn);
        /* A few slips for the name's length, or a part of it ("LIMIT",
         * "FRACTION"); anything else would be a guess. */
        int near = d * 3 <= kn || (un >= 3 && (contains_nocase(k, kn, u, un) ||
                                               contains_nocase(u, un, k, kn)));
        if (near && d < best_d) {
            best_d = d;
            best = option_names[i];
        }
    }
    return best;
}

/* "SPILLWAY_A, SPILLWAY_B, ..." into buf. */
static void list_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < OPTION_COUNT && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", option_names[i]);
}

static int known_name(const char *name, size_t len)
{
    for (size_t i = 0; i < OPTION_COUNT; i++)
        if (strlen(option_names[i]) == len && strncmp(option_names[i], name, len) == 0)
            return 1;
    return 0;
}

/* The error line for the unknown variable e (its name is len bytes). */
static void unknown_error(const char *e, size_t len, char *err, size_t errlen)
{
    char shown[96], qn[96], qv[64], hint[512];
    size_t n = len < sizeof shown - 1 ? len : sizeof shown - 1;
    memcpy(shown, e, n);
    shown[n] = '\0';
    const char *near = spw_options_suggest(e, len);
    if (near) {
        snprintf(hint, sizeof hint, "did you mean %s?", near);
    } else {
        char names[400];
        list_names(names, sizeof names);
        snprintf(hint, sizeof hint, "spillway's variables are %s", names);
    }
    snprintf(err, errlen, "unknown variable %s (set to '%s'): %s", spw_options_quote(shown, qn, sizeof qn),
             spw_options_quote(e[len] ? e + len + 1 : "", qv, sizeof qv), hint);
}

int spw_options_check_names(char *const *env, char *err, size_t errlen)
{
    for (; env && *env; env++) {
        const char *e = *env;
        size_t len = strcspn(e, "=");
        /* Any case: spillway_mem_limit is as much a slip as a misspelling. */
        if (len < PREFIX_LEN || strncasecmp(e, PREFIX, PREFIX_LEN) != 0 || known_name(e, len))
            continue;
        if (err && errlen)
            unknown_error(e, len, err, errlen);
        return -1;
    }
    return 0;
}
