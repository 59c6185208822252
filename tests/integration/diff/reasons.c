/* Stated refusal reasons from spillway's log (see reasons.h). */
#include "tests/integration/diff/reasons.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const names[R_COUNT] = {
    [R_NONE] = "none", [R_LIMIT] = "limit", [R_HOST_LIMIT] = "host-limit",
    [R_ADDRESS_SPACE] = "address-space", [R_TOO_LARGE] = "too-large",
    [R_DRIVER] = "driver", [R_UNSTATED] = "unstated",
};

const char *diff_reason_name(int reason)
{
    return reason >= 0 && reason < R_COUNT ? names[reason] : "?";
}

bool diff_reasons_begin(struct diff_reasons *r)
{
    const char *dir = getenv("TMPDIR");
    snprintf(r->path, sizeof r->path, "%s/diffgen-log.XXXXXX", dir && *dir ? dir : "/tmp");
    r->fd = mkstemp(r->path);
    if (r->fd < 0)
        return false;
    fflush(stderr);
    r->saved_stderr = dup(STDERR_FILENO);
    if (r->saved_stderr < 0 || dup2(r->fd, STDERR_FILENO) < 0)
        return false;
    r->active = true;
    return true;
}

/* The size at p, as spillway writes one (shim/size_text.h): "4097 bytes",
 * "1 byte", "32 MiB", "1.5 GiB", or "4.0 KiB (4097 bytes)" (a rounded
 * figure, the exact count after it); or the plain "<number> bytes" of
 * lines before size_text.c. false if p starts none. */
static bool size_at(const char *p, uint64_t *bytes)
{
    static const char units[] = "KMGTPE";
    char *end;
    unsigned long long whole = strtoull(p, &end, 10), tenths = 0;
    bool decimal = end[0] == '.' && end[1] >= '0' && end[1] <= '9';
    if (decimal) {
        tenths = (unsigned long long)(end[1] - '0');
        end += 2;
    }
    if (!decimal && (strncmp(end, " bytes", 6) == 0 || strncmp(end, " byte", 5) == 0)) {
        *bytes = whole;
        return true;
    }
    const char *u = end[0] == ' ' && end[1] ? strchr(units, end[1]) : NULL;
    if (!u || strncmp(end + 2, "iB", 2) != 0)
        return false;
    end += 4;
    if (strncmp(end, " (", 2) == 0) { /* rounded: the exact count follows */
        char *count_end;
        unsigned long long exact = strtoull(end + 2, &count_end, 10);
        if (count_end > end + 2 && strncmp(count_end, " bytes)", 7) == 0) {
            *bytes = exact;
            return true;
        }
    }
    unsigned shift = 10 * (unsigned)(u - units + 1);
    *bytes = (whole << shift) + (tenths << shift) / 10;
    return true;
}

/* The first size after "out of memory", the requested size in every
 * refusal line. */
static bool bytes_of(const char *s, uint64_t *bytes)
{
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || (p > s && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.')))
            continue;
        if (size_at(p, bytes))
            return true;
    }
    return false;
}

/* The reason's own name in parentheses, "(host-limit)", as spillway's
 * refusal lines give it since the policy carries reasons. */
static int named_reason(const char *s)
{
    for (int r = R_LIMIT; r < R_UNSTATED; r++) {
        char want[32];
        snprintf(want, sizeof want, "(%s)", names[r]);
        if (strstr(s, want))
            return r;
    }
    return -1;
}

int diff_reason_of_line(const char *line, uint64_t *bytes)
{
    const char *oom = strstr(line, "out of memory");
    if (!oom || !bytes_of(oom, bytes))
        return -1;
    int named = named_reason(oom);
    if (named >= 0)
        return named;
    /* Older lines: by their words, most specific first (the pool's line of
     * 04f325f names the limit and SPILLWAY_HOST_LIMIT both). */
    if (strstr(oom, "larger than"))
        return R_TOO_LARGE;
    if (strstr(oom, "address space"))
        return R_ADDRESS_SPACE;
    if (strstr(oom, "SPILLWAY_HOST_LIMIT") || strstr(oom, "host memory"))
        return R_HOST_LIMIT;
    if (strstr(oom, "driver"))
        return R_DRIVER;
    if (strstr(oom, "limit") || strstr(oom, "no room"))
        return R_LIMIT;
    return R_UNSTATED;
}

static void add_line(struct diff_reasons *r, uint64_t bytes, int reason)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        struct diff_stated *l = realloc(r->lines, cap * sizeof *l);
        if (!l)
            return;
        r->lines = l;
        r->cap = cap;
    }
    r->lines[r->n++] = (struct diff_stated){bytes, (uint8_t)reason, false};
    r->stated[reason]++;
}

static void parse(struct diff_reasons *r, FILE *f)
{
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        uint64_t bytes;
        int reason = diff_reason_of_line(line, &bytes);
        /* the rest of the debug log stays in the file (kept when the run fails) */
        if (reason >= 0 && strstr(line, "spillway: "))
            add_line(r, bytes, reason);
    }
    free(line);
}

bool diff_reasons_end(struct diff_reasons *r, bool keep)
{
    if (!r->active)
        return true;
    r->active = false;
    fflush(stderr);
    dup2(r->saved_stderr, STDERR_FILENO);
    close(r->saved_stderr);
    FILE *f = fdopen(r->fd, "r");
    if (!f)
        return false;
    rewind(f);
    parse(r, f);
    fclose(f);
    if (keep)
        fprintf(stderr, "diffgen: spillway's log of this run: %s\n", r->path);
    else
        unlink(r->path);
    return true;
}

int diff_reasons_take(struct diff_reasons *r, uint64_t bytes)
{
    for (size_t i = 0; i < r->n; i++)
        if (!r->lines[i].used && r->lines[i].bytes == bytes) {
            r->lines[i].used = true;
            return r->lines[i].reason;
        }
    return R_UNSTATED;
}
