#include "tools/top_other.h"
#include "tools/top_ident.h"

#include "stats/procinfo.h"
#include "stats/reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* /proc/<pid>/cmdline, NUL-separated, into clen bytes as the stats reader
 * keeps a command: arguments joined by one space, anything not printable
 * ASCII nor valid UTF-8 as '?', so that it is safe on a terminal and in
 * JSON and labels. A process that has ended but holds its memory until it
 * is reaped (a zombie) has no command line: "[name]" then, as ps shows it.
 * One that does not fit is cut as the stats writer cuts a segment's
 * (stats/layout.h): between characters, marked SPW_STATS_CMDLINE_CUT, *cut
 * set; so a long command line reads the same in every row. */
static bool read_cmdline(int pid, char *out, size_t clen, bool *cut)
{
    /* Room for a byte more than fits (it tells a longer command line),
     * and the NUL spw_proc_read ends with. */
    char raw[SPW_STATS_CMDLINE_LEN + 2], text[SPW_STATS_CMDLINE_LEN + 1];
    ssize_t n = spw_proc_read(pid, "cmdline", raw, sizeof raw);
    if (n == 0 && (n = spw_proc_read(pid, "comm", raw + 1, 33)) > 0) {
        raw[0] = '[';
        n = n - (raw[n] == '\n') + 1; /* the name ends in a newline */
        raw[n++] = ']';
    }
    if (n < 0)
        return false;
    while (n > 0 && raw[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (raw[i] == '\0')
            raw[i] = ' ';
    size_t pos = 0; /* no longer than raw: a character is kept or one '?' */
    for (size_t i = 0; i < (size_t)n;) {
        size_t len = spw_stats_utf8_char(raw + i, (size_t)n - i);
        if (len) {
            memcpy(text + pos, raw + i, len);
            pos += len;
            i += len;
        } else {
            text[pos++] = '?';
            i++;
        }
    }
    *cut = spw_cmdline_fit(out, clen, text, pos);
    return true;
}

bool top_other_identity(int pid, char *user, size_t ulen, char *cmdline, size_t clen, bool *cut)
{
    uint32_t uid;
    user[0] = cmdline[0] = '\0';
    *cut = false;
    if (spw_proc_effective_uid(pid, &uid) != 0 || !read_cmdline(pid, cmdline, clen, cut))
        return false;
    top_user_name(uid, user, ulen);
    return true;
}

static const struct top_other *find_old(const struct top_others *o, int pid, uint64_t start)
{
    for (size_t i = 0; i < o->n; i++)
        if (o->v[i].pid == pid && o->v[i].start == start && o->v[i].visible)
            return &o->v[i];
    return NULL;
}

static bool add(struct top_others *o, const struct top_others *old, uint32_t gpu, const struct top_gpu_proc *gp)
{
    if (o->n == o->cap) {
        size_t ncap = o->cap ? o->cap * 2 : 8;
        struct top_other *nv = realloc(o->v, ncap * sizeof *nv);
        if (!nv)
            return false;
        o->v = nv;
        o->cap = ncap;
    }
    struct top_other *e = &o->v[o->n++];
    memset(e, 0, sizeof *e);
    e->gpu = gpu;
    e->pid = gp->pid;
    e->have_used = gp->have_used;
    e->used = gp->used;
    e->compute = gp->compute;
    e->graphics = gp->graphics;
    e->shown = true;
    /* Its start time names the process behind the pid: a pid reused since
     * the last sample is another process, read again. */
    if (spw_proc_start_time(e->pid, &e->start) != 0)
        return true; /* not visible here: listed as NVML has it, command "?" */
    const struct top_other *was = find_old(old, e->pid, e->start);
    if (was) {
        e->visible = true;
        memcpy(e->user, was->user, sizeof e->user);
        memcpy(e->cmdline, was->cmdline, sizeof e->cmdline);
        e->cmdline_truncated = was->cmdline_truncated;
    } else {
        e->visible = top_other_identity(e->pid, e->user, sizeof e->user, e->cmdline, sizeof e->cmdline,
                                        &e->cmdline_truncated);
    }
    return true;
}

int top_others_update(struct top_others *o, const struct top_nvml *n, top_is_ours_fn is_ours, void *ctx)
{
    struct top_others old = *o;
    memset(o, 0, sizeof *o);
    int rc = 0;
    for (unsigned i = 0; n && n->lib && i < n->count && rc == 0; i++) {
        const struct top_gpu *g = &n->gpu[i];
        for (unsigned j = 0; g->have_procs && j < g->nprocs && rc == 0; j++)
            if (!is_ours(ctx, g->procs[j].pid) && !add(o, &old, g->index, &g->procs[j]))
                rc = -1;
    }
    top_others_free(&old);
    return rc;
}

void top_others_free(struct top_others *o)
{
    free(o->v);
    memset(o, 0, sizeof *o);
}
