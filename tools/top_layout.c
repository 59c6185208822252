#include "tools/top_layout.h"
#include "tools/top_width.h"

#include <stdio.h>
#include <string.h>

#define MAX_PARTS 16
#define GAP 2       /* spaces between parts, and at least between the groups */
#define CUT_MARK "..."

/* ---- lines of parts ---- */

static const char *form_at(const struct top_part *p, int level)
{
    const char *f = p->form[level];
    return f ? f : "";
}

/* Moves a part to its next form; false when it has none left. */
static bool shrink(const struct top_part *p, int *level)
{
    if (*level + 1 >= TOP_PART_FORMS || !p->form[*level + 1])
        return false;
    ++*level;
    return true;
}

static int group_width(const struct top_part *parts, const int *level, int n, bool right)
{
    int w = 0;
    bool any = false;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(form_at(&parts[i], level[i]));
        if (parts[i].right != right || l == 0)
            continue;
        w += (int)l + (any ? GAP : 0);
        any = true;
    }
    return w;
}

static int line_width(const struct top_part *parts, const int *level, int n)
{
    int l = group_width(parts, level, n, false), r = group_width(parts, level, n, true);
    return r ? l + (l ? GAP : 0) + r : l;
}

/* Appends the group's parts to out at *pos, joined by GAP spaces; cut
 * replaces the form of part `elastic`. */
static void put_group(char *out, size_t len, size_t *pos, const struct top_part *parts, const int *level,
                      int n, bool right, int elastic, const char *cut)
{
    bool any = false;
    for (int i = 0; i < n; i++) {
        const char *f = i == elastic ? cut : form_at(&parts[i], level[i]);
        if (parts[i].right != right || !*f)
            continue;
        int w = snprintf(out + *pos, len - *pos, "%*s%s", any ? GAP : 0, "", f);
        *pos += w > 0 ? (size_t)w : 0;
        if (*pos >= len)
            *pos = len - 1;
        any = true;
    }
}

/* Cuts the first elastic part so that the line fits, keeping its first word
 * (its label) and at least three characters after it before the mark: less
 * would not say what was there. Returns its index, or -1. */
static int cut_elastic(const struct top_part *parts, const int *level, int n, int excess, char *cut,
                       size_t cutlen)
{
    for (int i = 0; i < n; i++) {
        const char *f = form_at(&parts[i], level[i]);
        int keep = (int)strlen(f) - excess - (int)strlen(CUT_MARK);
        if (!parts[i].elastic || !*f || keep < (int)strcspn(f, " ") + 4)
            continue;
        snprintf(cut, cutlen, "%.*s%s", keep, f, CUT_MARK);
        return i;
    }
    return -1;
}

int top_fit_line(char *out, size_t len, int width, const struct top_part *parts, int nparts,
                 const int *steps, int nsteps)
{
    if (len == 0)
        return 0;
    out[0] = '\0';
    int n = nparts < MAX_PARTS ? nparts : MAX_PARTS;
    int level[MAX_PARTS] = {0};
    for (int s = 0; s < nsteps && line_width(parts, level, n) > width; s++)
        if (steps[s] >= 0 && steps[s] < n)
            shrink(&parts[steps[s]], &level[steps[s]]);
    char cut[256] = "";
    int elastic = -1, total = line_width(parts, level, n);
    if (total > width)
        elastic = cut_elastic(parts, level, n, total - width, cut, sizeof cut);
    size_t pos = 0;
    put_group(out, len, &pos, parts, level, n, false, elastic, cut);
    int right = group_width(parts, level, n, true);
    if (right) {
        int pad = width - (int)pos - right;
        int w = snprintf(out + pos, len - pos, "%*s", pad > GAP ? pad : GAP, "");
        pos += w > 0 ? (size_t)w : 0;
        if (pos >= len)
            pos = len - 1;
        put_group(out, len, &pos, parts, level, n, true, -1, "");
    }
    if (width >= 0 && pos > (size_t)width)
        pos = (size_t)width; /* too narrow for any sensible line */
    out[pos] = '\0';
    return (int)pos;
}

int top_list_title(char *out, size_t len, int width, const struct top_title *t)
{
    char procs[32], procs_short[24], every[32], every_short[24], sort[48], filter[160] = "";
    if (t->nshown != t->nprocs) {
        snprintf(procs, sizeof procs, "%zu of %zu proc%s", t->nshown, t->nprocs, t->nprocs == 1 ? "" : "s");
        snprintf(procs_short, sizeof procs_short, "%zu/%zup", t->nshown, t->nprocs);
    } else {
        snprintf(procs, sizeof procs, "%zu proc%s", t->nprocs, t->nprocs == 1 ? "" : "s");
        snprintf(procs_short, sizeof procs_short, "%zup", t->nprocs);
    }
    snprintf(every, sizeof every, "every %.1fs", t->interval);
    snprintf(every_short, sizeof every_short, "%.1fs", t->interval);
    snprintf(sort, sizeof sort, "sort %s %s", top_sort_name(t->sort), t->reverse ? "^" : "v");
    if (t->filter && t->filter[0])
        snprintf(filter, sizeof filter, "filter %s", t->filter);
    enum { NAME, CLOCK, PROCS, EVERY, SORT, FILTER, KEYS };
    const struct top_part parts[] = {
        [NAME] = {{" spillway-top"}, false, false},
        [CLOCK] = {{t->clock, ""}, false, false},
        [PROCS] = {{procs, procs_short}, false, false},
        [EVERY] = {{every, every_short, ""}, false, false},
        [SORT] = {{sort}, false, false},
        [FILTER] = {{filter}, false, true},
        [KEYS] = {{"h help  q quit ", "h help ", ""}, true, false},
    };
    static const int steps[] = {KEYS, KEYS, EVERY, EVERY, CLOCK, PROCS};
    return top_fit_line(out, len, width, parts, (int)(sizeof parts / sizeof parts[0]), steps,
                        (int)(sizeof steps / sizeof steps[0]));
}

/* ---- the process list's columns ---- */

static const struct top_col_info columns[TOP_COL_COUNT] = {
    [TOP_COL_PID] = {"PID", 7, false, TOP_SORT_PID},
    [TOP_COL_USER] = {"USER", 8, true, TOP_SORT_USER},
    [TOP_COL_GPU] = {"GPU", 3, false, TOP_SORT_DEVICE},
    [TOP_COL_IN_USE] = {"IN USE", TOP_BAR_MIN, true, TOP_SORT_IN_USE},
    [TOP_COL_GPU_MEM] = {"GPU MEM", 7, false, TOP_SORT_GPU_MEM},
    [TOP_COL_PEAK] = {"PEAK", 5, false, TOP_SORT_PEAK},
    [TOP_COL_SPILL] = {"SPILL", 5, false, TOP_SORT_SPILLED},
    [TOP_COL_ALLOC_RATE] = {"ALLC/s", 6, false, TOP_SORT_ALLOC_RATE},
    [TOP_COL_SPILL_RATE] = {"SPL/s", 5, false, TOP_SORT_SPILL_RATE},
    [TOP_COL_FILL_RATE] = {"FIL/s", 5, false, TOP_SORT_FILL_RATE},
    [TOP_COL_OOM] = {"OOM", 3, false, TOP_SORT_OOMS},
    [TOP_COL_COMMAND] = {"COMMAND", 0, true, TOP_SORT_COMMAND},
};

const struct top_col_info *top_col_info(enum top_col k)
{
    return &columns[(unsigned)k < TOP_COL_COUNT ? k : TOP_COL_COMMAND];
}

/* Columns given up, first to last, when the command would get less than
 * TOP_CMD_MIN: the detail view still has every figure, whereas a command
 * cut to a dozen characters no longer tells processes apart. NVML's
 * figure goes first: spillway's own come before the driver's. */
static const enum top_col drop_order[] = {TOP_COL_GPU_MEM, TOP_COL_ALLOC_RATE, TOP_COL_FILL_RATE,
                                          TOP_COL_SPILL_RATE, TOP_COL_PEAK};

static int command_width(int width, const struct top_columns *c)
{
    int used = 0;
    for (int k = 0; k < TOP_COL_COMMAND; k++)
        if (c->shown[k])
            used += c->width[k] + 1;
    return width - used > 0 ? width - used : 0;
}

void top_list_columns(int width, enum top_sort sort, bool gpu_mem, struct top_columns *c)
{
    for (int k = 0; k < TOP_COL_COUNT; k++) {
        c->shown[k] = true;
        c->width[k] = columns[k].width;
    }
    c->shown[TOP_COL_GPU_MEM] = gpu_mem;
    for (size_t i = 0; i < sizeof drop_order / sizeof drop_order[0]; i++) {
        if (command_width(width, c) >= TOP_CMD_MIN)
            break;
        if (columns[drop_order[i]].sort != sort)
            c->shown[drop_order[i]] = false;
    }
    int spare = command_width(width, c) - TOP_CMD_ROOMY;
    if (spare > 0)
        c->width[TOP_COL_IN_USE] += spare < TOP_BAR_MAX - TOP_BAR_MIN ? spare : TOP_BAR_MAX - TOP_BAR_MIN;
    c->width[TOP_COL_COMMAND] = command_width(width, c);
}

/* ---- the command ---- */

/* A word that names a file by path: not an option (-x, --x=/a/b) nor an
 * assignment (key=/a/b) nor a URL, whose last component is not empty. Its
 * directories can go; the rest of an option or assignment could not. */
static bool path_word(const char *w, size_t n)
{
    const char *slash = memrchr(w, '/', n);
    if (n == 0 || w[0] == '-' || !slash || slash == w + n - 1 || memchr(w, '=', n))
        return false;
    for (size_t i = 0; i + 2 < n; i++)
        if (w[i] == ':' && w[i + 1] == '/' && w[i + 2] == '/')
            return false;
    return true;
}

/* Copies cmdline to out with the directories of path words removed: of the
 * first word only, or of every one. Spacing is kept as it is. */
static void strip_dirs(char *out, size_t len, const char *cmdline, bool every_word)
{
    size_t pos = 0;
    const char *p = cmdline;
    for (bool first = true; *p && pos + 1 < len; first = false) {
        size_t spaces = strspn(p, " ");
        size_t n = strcspn(p + spaces, " ");
        const char *w = p + spaces, *shown = w;
        if ((first || every_word) && path_word(w, n))
            shown = (const char *)memrchr(w, '/', n) + 1;
        int wrote = snprintf(out + pos, len - pos, "%.*s%.*s", (int)spaces, p, (int)(w + n - shown), shown);
        pos += wrote > 0 ? (size_t)wrote : 0;
        p = w + n;
    }
    out[pos < len ? pos : len - 1] = '\0';
}

/* Cuts s after cap columns, never inside a character. */
static void cut_columns(char *s, size_t cap)
{
    s[top_width_fit(s, strlen(s), cap, NULL)] = '\0';
}

/* Columns of s on a terminal (top_width.h: a wide character, CJK say,
 * takes two). */
static size_t columns_of(const char *s)
{
    return top_width_of(s, strlen(s));
}

void top_fmt_command(char *out, size_t len, const char *cmdline, int width)
{
    if (len == 0)
        return;
    size_t cap = width > 0 ? (size_t)width : 0;
    snprintf(out, len, "%s", cmdline);
    if (columns_of(out) > cap)
        strip_dirs(out, len, cmdline, false);
    if (columns_of(out) > cap)
        strip_dirs(out, len, cmdline, true);
    if (columns_of(out) > cap)
        cut_columns(out, cap);
}
