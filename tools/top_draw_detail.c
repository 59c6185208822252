/* The detail view of one process under spillway: who it is, its command
 * and config whole, every counter per GPU, history graphs of in use and
 * spilled; it scrolls when taller than the screen. */
#include "tools/top_draw.h"
#include "tools/top_format.h"
#include "tools/top_layout.h"
#include "tools/top_text.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

const struct top_proc *ui_detail_proc(const struct ui *u)
{
    for (size_t i = 0; i < u->m->nprocs; i++) {
        const struct top_proc *p = u->m->procs[i];
        if (p->snap.start_time == u->detail_start && strcmp(p->snap.name, u->detail_name) == 0)
            return p;
    }
    return NULL;
}

/* A bar graph of the last samples of ring, h rows tall, scaled to scale. */
static void draw_graph(const struct ui *u, int y, int h, const struct top_proc *p, const uint64_t *ring,
                       uint64_t scale, enum ui_color col)
{
    int w = COLS - 8;
    if (w < 4 || h < 1 || scale == 0)
        return;
    char top[8], mid[8];
    top_fmt_bytes(top, sizeof top, scale);
    top_fmt_bytes(mid, sizeof mid, scale / 2);
    ui_put(y, 0, A_NORMAL, "%6s", top);
    if (h > 2)
        ui_put(y + h / 2, 0, A_NORMAL, "%6s", mid);
    ui_put(y + h - 1, 0, A_NORMAL, "%6s", "0");
    size_t n = p->hist_len;
    size_t first = n > (size_t)w ? n - (size_t)w : 0;
    int x0 = 7 + w - (int)(n - first);
    for (size_t i = first; i < n; i++) {
        double v = (double)top_proc_hist(p, ring, i) / (double)scale;
        int filled = (int)(v * h + 0.5);
        if (filled > h)
            filled = h;
        if (v > 0 && filled == 0)
            filled = 1; /* a non-zero value is always visible */
        for (int r = 0; r < filled; r++)
            ui_put(y + h - 1 - r, x0 + (int)(i - first), ui_color(u, col) | (u->color ? A_REVERSE : A_NORMAL),
                u->color ? " " : "#");
    }
}

static uint64_t hist_max(const struct top_proc *p, const uint64_t *ring)
{
    uint64_t mx = 0;
    for (size_t i = 0; i < p->hist_len; i++)
        if (top_proc_hist(p, ring, i) > mx)
            mx = top_proc_hist(p, ring, i);
    return mx;
}

/* How spill went: events, pages per event, the pool's syncs, the time
 * submissions were held, host pages pinned while someone waited,
 * refusals by reason, and waits and moves that went wrong. */
static int detail_spill(const uint64_t *c, int y)
{
    uint64_t ev = c[SPW_C_SPILL_EVENTS], pg = c[SPW_C_SPILL_BYTES] >> 21;
    char per[16] = "-";
    if (ev)
        snprintf(per, sizeof per, "%.1f", (double)pg / (double)ev);
    ui_put(y++, 4, A_DIM,
        "spill events %llu (%s pages each)  fills %llu  syncs %llu  stalled %.3f s  host-page waits %llu",
        (unsigned long long)ev, per, (unsigned long long)c[SPW_C_FILL_EVENTS],
        (unsigned long long)c[SPW_C_SYNCS], (double)c[SPW_C_STALL_NS] * 1e-9,
        (unsigned long long)c[SPW_C_HOST_WAITS]);
    if (c[SPW_C_OOMS])
        ui_put(y++, 4, A_DIM, "refused: limit %llu  host limit %llu  address space %llu  too large %llu  driver %llu",
            (unsigned long long)c[SPW_C_OOM_LIMIT], (unsigned long long)c[SPW_C_OOM_HOST_LIMIT],
            (unsigned long long)c[SPW_C_OOM_ADDRESS], (unsigned long long)c[SPW_C_OOM_TOO_LARGE],
            (unsigned long long)c[SPW_C_OOM_DRIVER]);
    /* Only when something went wrong: a device that stayed busy past the
     * patience, or a driver that refused a move's calls. */
    if (c[SPW_C_WAIT_TIMEOUTS] || c[SPW_C_BACKOFFS] || c[SPW_C_SPILL_FAULTS] || c[SPW_C_FAULTED]) {
        char kept[16];
        top_fmt_bytes(kept, sizeof kept, c[SPW_C_FAULTED]);
        ui_put(y++, 4, A_DIM, "waits timed out %llu  backed off %llu  spills refused %llu  kept out by faults %s",
            (unsigned long long)c[SPW_C_WAIT_TIMEOUTS], (unsigned long long)c[SPW_C_BACKOFFS],
            (unsigned long long)c[SPW_C_SPILL_FAULTS], kept);
    }
    return y;
}

/* What the process is told of the device (SPILLWAY_OVERSUBSCRIBE x the
 * limit), where its bytes are, and how fast they move between the two. */
static int detail_oversub(const struct top_proc *p, uint32_t d, int y)
{
    const uint64_t *c = p->snap.c[d];
    char told[8], dev[8], host[8], moves[8];
    top_fmt_bytes(told, sizeof told, c[SPW_C_REPORTED]);
    top_fmt_bytes(dev, sizeof dev, top_on_device(c));
    top_fmt_bytes(host, sizeof host, c[SPW_C_SPILLED]);
    top_fmt_byte_rate(moves, sizeof moves, top_proc_moves(p, d));
    ui_put(y++, 4, A_DIM, "told %s (x%.3g the limit)  on device %s  on host %s  moves %s/s", told,
        top_oversubscribe(c), dev, host, moves);
    return y;
}

/* What the driver says the process holds on the device (NVML), against
 * what spillway has in use there (in use less spilled): the difference is
 * what spillway does not count (the CUDA context, the pool's free part),
 * said where the line has room for it; or why there is no figure. */
static int detail_nvml(const struct top_model *m, const struct top_proc *p, uint32_t d, int y)
{
    /* Wherever NVML is open, as --json's nvml_used_bytes: NVML refusing
     * every GPU's list is worth saying too (GPU MEM then is no column). */
    if (!m->nvml || !m->nvml->lib)
        return y;
    uint64_t used, on = top_on_device(p->snap.c[d]);
    if (!top_proc_nvml_used(m, p, d, &used)) {
        char why[160];
        top_proc_nvml_why(m, p, d, why, sizeof why);
        ui_put(y++, 4, A_DIM, "NVML: no figure: %s", why);
        return y;
    }
    char dev[8], in_use[8], diff[8], line[128];
    top_fmt_bytes(dev, sizeof dev, used);
    top_fmt_bytes(in_use, sizeof in_use, on);
    top_fmt_bytes(diff, sizeof diff, used >= on ? used - on : on - used);
    int n = snprintf(line, sizeof line, "NVML: %s on the device, %s %s than the %s in use there", dev, diff,
                     used >= on ? "more" : "less", in_use);
    static const char what[] = " (context, pool)";
    bool room = n > 0 && 4 + n + (int)sizeof what - 1 <= COLS;
    ui_put(y++, 4, A_DIM, "%s%s", line, used > on && room ? what : "");
    return y;
}

static int detail_counters(const struct ui *u, const struct top_proc *p, int y)
{
    const struct spw_stats_snapshot *s = &p->snap;
    ui_put(y++, 0, A_REVERSE | A_BOLD, "%-3s %6s %6s %6s %6s %6s %6s %7s %7s %4s %6s %6s", "GPU", "LIMIT", "POOL",
        "IN USE", "PEAK", "SPILL", "HOST", "ALLOCS", "FREES", "OOM", "OUT", "IN");
    for (uint32_t d = 0; d < s->device_count; d++) {
        const uint64_t *c = s->c[d];
        char b[8][8];
        enum spw_counter ks[8] = {SPW_C_LIMIT, SPW_C_POOL, SPW_C_IN_USE, SPW_C_PEAK, SPW_C_SPILLED, SPW_C_HOST,
                                  SPW_C_SPILL_BYTES, SPW_C_FILL_BYTES};
        for (int k = 0; k < 8; k++)
            top_fmt_bytes(b[k], sizeof b[k], c[ks[k]]);
        char al[8], fr[8];
        top_fmt_count(al, sizeof al, c[SPW_C_ALLOCS]);
        top_fmt_count(fr, sizeof fr, c[SPW_C_FREES]);
        ui_put(y++, 0, A_NORMAL, "%-3u %6s %6s %6s %6s %6s %6s %7s %7s %4llu %6s %6s", top_proc_gpu(u->m, p, d, NULL), b[0], b[1], b[2], b[3], b[4],
            b[5], al, fr, (unsigned long long)(c[SPW_C_OOMS] > 9999 ? 9999 : c[SPW_C_OOMS]), b[6], b[7]);
        char h2d[8], d2h[8], d2d[8], ipc[8], man[8], cap[8], oth[8];
        top_fmt_bytes(h2d, sizeof h2d, c[SPW_C_COPY_HTOD]);
        top_fmt_bytes(d2h, sizeof d2h, c[SPW_C_COPY_DTOH]);
        top_fmt_bytes(d2d, sizeof d2d, c[SPW_C_COPY_DTOD]);
        top_fmt_bytes(ipc, sizeof ipc, c[SPW_C_PASS_IPC]);
        top_fmt_bytes(man, sizeof man, c[SPW_C_PASS_MANAGED]);
        top_fmt_bytes(cap, sizeof cap, c[SPW_C_PASS_CAPTURE]);
        top_fmt_bytes(oth, sizeof oth, c[SPW_C_PASS_OTHER]);
        ui_put(y++, 4, A_DIM, "copy H2D %s D2H %s D2D %s  passthru ipc %s mgd %s capt %s other %s", h2d, d2h, d2d,
            ipc, man, cap, oth);
        char kl[8], gl[8], lr[12];
        top_fmt_count(kl, sizeof kl, c[SPW_C_LAUNCHES]);
        top_fmt_count(gl, sizeof gl, c[SPW_C_GRAPH_LAUNCHES]);
        top_fmt_count_rate(lr, sizeof lr, p->launch_rate[d]);
        ui_put(y++, 4, A_DIM, "launches %s  graph launches %s  %s/s", kl, gl, lr);
        y = detail_oversub(p, d, y);
        y = detail_nvml(u->m, p, d, y);
        y = detail_spill(c, y);
    }
    return y;
}

/* "containerd 0123456789ab  pod ns/name container NAME", or false. */
static bool container_text(const struct top_ident *id, char *out, size_t len)
{
    if (!id->ctr.id[0] && !id->ctr.pod_uid[0])
        return false;
    int n = snprintf(out, len, "%s %.12s", id->ctr.runtime[0] ? id->ctr.runtime : "id", id->ctr.id[0] ? id->ctr.id : "-");
    if (n > 0 && (size_t)n < len && id->ctr.pod_uid[0])
        n += snprintf(out + n, len - (size_t)n, "  pod %s%s%s", id->ns, id->ns[0] ? "/" : "",
                      id->pod[0] ? id->pod : id->ctr.pod_uid);
    if (n > 0 && (size_t)n < len && id->container[0])
        snprintf(out + n, len - (size_t)n, " container %s", id->container);
    return true;
}

static void detail_title(const struct ui *u, const struct top_proc *p)
{
    char when[16], pid[32];
    ui_clock_text(u, when, sizeof when);
    snprintf(pid, sizeof pid, "PID %d", top_proc_pid(p));
    bool alive = p->snap.liveness == SPW_ALIVE;
    enum { NAME, CLOCK, PID, LIVENESS, KEYS };
    const struct top_part parts[] = {
        [NAME] = {{" spillway-top"}, false, false},
        [CLOCK] = {{when, ""}, false, false},
        [PID] = {{pid}, false, false},
        [LIVENESS] = {{alive ? "alive" : "liveness unknown", alive ? "alive" : "unknown"}, false, false},
        [KEYS] = {{"Esc back  q quit ", "Esc back ", ""}, true, false},
    };
    static const int steps[] = {KEYS, LIVENESS, CLOCK, KEYS};
    ui_title_line(u, parts, (int)(sizeof parts / sizeof parts[0]), steps, (int)(sizeof steps / sizeof steps[0]));
}

static int detail_body(struct ui *u, const struct top_proc *p)
{
    const struct spw_stats_snapshot *s = &p->snap;
    char when[32];
    time_t t = (time_t)(s->created_unix_ns / 1000000000u);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    char pids[64] = "";
    if (s->pid != top_proc_pid(p) || s->host_pid != top_proc_pid(p))
        snprintf(pids, sizeof pids, "  pid %d in its namespace, %d outer", s->pid, s->host_pid);
    ui_put(1, 0, A_NORMAL, "user %s (uid %u)  started %s%s", p->user, s->uid, when, pids);
    /* Whole (README, spillway-top(1)): the command over as many rows as
     * it needs, the config an entry at a time; the view scrolls. */
    int y = ui_put_wrapped(2, A_BOLD, "command: ", s->cmdline, "", 0);
    y = ui_put_wrapped(y, A_NORMAL, "config: ", s->config[0] ? s->config : "(none)", "\n", 2);
    char ctr[256];
    if (container_text(&p->ident, ctr, sizeof ctr))
        ui_put(y, 0, A_NORMAL, "container: %s", ctr);
    y = detail_counters(u, p, y + 1);
    uint64_t limit = 0, mx_use = hist_max(p, p->hist_in_use), mx_sp = hist_max(p, p->hist_spilled);
    for (uint32_t d = 0; d < s->device_count; d++)
        limit += s->c[d][SPW_C_LIMIT];
    /* The graphs share what the screen has left, 3 rows each at least:
     * on a small screen they are scrolled to. */
    int h = (LINES - 1 - y - 2) / 2;
    if (h < 3)
        h = 3;
    char now[8], mx[8];
    top_fmt_bytes(now, sizeof now, top_proc_hist(p, p->hist_in_use, p->hist_len - 1));
    top_fmt_bytes(mx, sizeof mx, mx_use);
    ui_put(y++, 0, A_BOLD, "In use: now %s, max %s over %zu samples", now, mx, p->hist_len);
    draw_graph(u, y, h, p, p->hist_in_use, limit > mx_use ? limit : mx_use, UI_GREEN);
    y += h;
    top_fmt_bytes(now, sizeof now, top_proc_hist(p, p->hist_spilled, p->hist_len - 1));
    top_fmt_bytes(mx, sizeof mx, mx_sp);
    ui_put(y++, 0, A_BOLD, "Spilled: now %s, max %s", now, mx);
    draw_graph(u, y, h, p, p->hist_spilled, mx_sp, UI_YELLOW);
    return y + h;
}

void ui_draw_detail(struct ui *u)
{
    const struct top_proc *p = ui_detail_proc(u);
    if (!p)
        return;
    detail_title(u, p);
    /* Rows 1 .. LINES - 2 scroll; the last scroll keeps the end in view
     * (the height is the last drawing's: the same process, give or take a
     * device line). */
    int rows = LINES - 2, most = u->detail_height - 1 - rows;
    if (u->detail_scroll > most)
        u->detail_scroll = most;
    if (u->detail_scroll < 0)
        u->detail_scroll = 0;
    ui_viewport(u->detail_scroll, 1, LINES - 1);
    u->detail_height = detail_body(u, p);
    ui_viewport(0, 0, 0);
    if (u->detail_height - 1 - u->detail_scroll > rows)
        ui_put(LINES - 2, COLS > 12 ? COLS - 12 : 0, A_REVERSE, " more: Down ");
}
