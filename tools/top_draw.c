#include "tools/top_draw.h"
#include "tools/top_format.h"
#include "tools/top_layout.h"
#include "tools/top_text.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static attr_t color(const struct ui *u, enum ui_color c)
{
    return u->color ? COLOR_PAIR(c) : A_NORMAL;
}

static attr_t level_color(const struct ui *u, uint64_t used, uint64_t limit)
{
    if (!u->color || limit == 0)
        return A_NORMAL;
    double f = (double)used / (double)limit;
    return color(u, f >= 0.9 ? UI_RED : f >= 0.7 ? UI_YELLOW : UI_GREEN);
}

/* "[|||||    3.2G]" of total width w: the fill shows used/limit, the value
 * sits at the right inside the brackets, as htop does. Without a limit the
 * bar stays empty; unknown (known false) shows "-". */
static void draw_bar_of(const struct ui *u, int y, int x, int w, uint64_t used, uint64_t limit, bool known)
{
    if (w < 8)
        return;
    char val[8] = "-";
    if (known)
        top_fmt_bytes(val, sizeof val, used);
    int inner = w - 2;
    int fill = limit ? (int)((double)inner * ((double)used / (double)limit) + 0.5) : 0;
    if (fill > inner)
        fill = inner;
    char bar[256];
    int vlen = (int)strlen(val);
    for (int i = 0; i < inner && i < (int)sizeof bar - 1; i++)
        bar[i] = i < fill ? '|' : ' ';
    bar[inner] = '\0';
    ui_put(y, x, A_BOLD, "[");
    ui_put(y, x + 1, level_color(u, used, limit) | A_BOLD, "%.*s", inner - vlen, bar);
    ui_put(y, x + 1 + inner - vlen, A_NORMAL, "%s", val);
    ui_put(y, x + w - 1, A_BOLD, "]");
}

static void draw_bar(const struct ui *u, int y, int x, int w, uint64_t used, uint64_t limit)
{
    draw_bar_of(u, y, x, w, used, limit, true);
}

static void clock_text(const struct ui *u, char *out, size_t len)
{
    time_t t = (time_t)u->m->time;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(out, len, "%H:%M:%S", &tm);
}

static void title_bar(const struct ui *u, const char *line)
{
    attr_t a = u->color ? color(u, UI_TITLE) : A_REVERSE;
    attron(a);
    mvhline(0, 0, ' ', COLS);
    attroff(a);
    ui_put(0, 0, a | A_BOLD, "%s", line);
}

/* The title bar of the other views: parts shrink in the order of steps (see
 * top_fit_line), so that what is shown is whole at any width. */
static void title_line(const struct ui *u, const struct top_part *parts, int n, const int *steps, int nsteps)
{
    char line[512];
    top_fit_line(line, sizeof line, COLS, parts, n, steps, nsteps);
    title_bar(u, line);
}

static int draw_devices(const struct ui *u, int y)
{
    const struct top_model *m = u->m;
    int barw = COLS - 58;
    if (barw > 40)
        barw = 40;
    /* Processes not under spillway on a device: how many, after spillway's
     * count; every bar makes room for the longest, so that they line up. */
    int others_w = 0;
    for (size_t i = 0; i < m->ndevices; i++) {
        char n[24];
        int w = m->devices[i].others ? snprintf(n, sizeof n, " +%u other", m->devices[i].others) : 0;
        others_w = w > others_w ? w : others_w;
    }
    barw -= others_w;
    for (size_t i = 0; i < m->ndevices && y < LINES - 4; i++, y++) {
        const struct top_device *d = &m->devices[i];
        char lim[8], pool[8], sp[8], host[8];
        top_fmt_bytes(lim, sizeof lim, d->limit);
        top_fmt_bytes(pool, sizeof pool, d->pool);
        top_fmt_bytes(sp, sizeof sp, d->spilled);
        top_fmt_bytes(host, sizeof host, d->host);
        char others[24] = "";
        if (d->others)
            snprintf(others, sizeof others, " +%u other", d->others);
        ui_put(y, 0, color(u, UI_CYAN) | A_BOLD, "GPU%-2u", d->index);
        int x = 6;
        if (barw >= 8) {
            draw_bar(u, y, x, barw, d->in_use, d->limit);
            x += barw + 1;
        }
        ui_put(y, x, A_NORMAL, "lim %-5s pool %-5s spill %-5s host %-5s %2up%s", lim, pool, sp, host, d->procs,
               others);
        /* Oversubscribed: what the processes are told, where their bytes
         * are and how fast they move, under the figures they are told of. */
        if (d->told > d->limit && y + 1 < LINES - 4) {
            char line[256];
            top_fmt_oversub(line, sizeof line, COLS - 6, d, true);
            ui_put(++y, 6, A_NORMAL, "%s", line);
        }
        /* The device's own view under spillway's, as nvitop shows it. */
        if (d->hw && y + 1 < LINES - 4) {
            char line[256];
            top_fmt_gpu_hw(line, sizeof line, COLS - 6, d->hw);
            ui_put(++y, 6, color(u, UI_CYAN), "%s", line);
        }
    }
    return y;
}

/* The header, with the sort column set apart as htop does. */
static void header_row(const struct ui *u, int y, const struct top_columns *c)
{
    attr_t a = A_REVERSE | A_BOLD;
    attron(a);
    mvhline(y, 0, ' ', COLS);
    attroff(a);
    int x = 0;
    for (int k = 0; k < TOP_COL_COUNT; k++) {
        const struct top_col_info *ci = top_col_info((enum top_col)k);
        if (!c->shown[k])
            continue;
        attr_t at = ci->sort == u->s->sort ? (u->color ? color(u, UI_TITLE) | A_BOLD : A_BOLD) : a;
        int w = k == TOP_COL_COMMAND ? (int)strlen(ci->title) : c->width[k];
        ui_put(y, x, at, ci->left ? "%-*s" : "%*s", w, ci->title);
        x += c->width[k] + 1;
    }
}

/* The text of cell k of a row (not IN USE, drawn as a bar, nor COMMAND).
 * A process not under spillway has only pid, user, GPU and NVML's figure. */
static void cell_text(const struct ui *u, char *out, size_t len, enum top_col k, const struct top_row *r)
{
    uint64_t nvml;
    out[0] = '\0';
    switch (k) {
    case TOP_COL_PID: snprintf(out, len, "%d", top_row_pid(r)); return;
    case TOP_COL_USER: snprintf(out, len, "%.8s", top_row_user(r)); return;
    case TOP_COL_GPU: snprintf(out, len, "%u", r->gpu); return;
    case TOP_COL_GPU_MEM:
        if (top_row_nvml_used(u->m, r, &nvml))
            top_fmt_bytes(out, len, nvml);
        else
            snprintf(out, len, "-");
        return;
    default: break;
    }
    if (!r->p)
        return;
    const uint64_t *v = r->p->snap.c[r->dev];
    switch (k) {
    case TOP_COL_PEAK: top_fmt_bytes(out, len, v[SPW_C_PEAK]); break;
    case TOP_COL_SPILL: top_fmt_bytes(out, len, v[SPW_C_SPILLED]); break;
    case TOP_COL_ALLOC_RATE: top_fmt_count_rate(out, len, r->p->alloc_rate[r->dev]); break;
    case TOP_COL_SPILL_RATE: top_fmt_byte_rate(out, len, r->p->spill_rate[r->dev]); break;
    case TOP_COL_FILL_RATE: top_fmt_byte_rate(out, len, r->p->fill_rate[r->dev]); break;
    case TOP_COL_OOM:
        snprintf(out, len, "%llu", (unsigned long long)(v[SPW_C_OOMS] > 999 ? 999 : v[SPW_C_OOMS]));
        break;
    default: break;
    }
}

/* The columns only spillway has figures for (PEAK to OOM): a process not
 * under spillway says so across them, in the longest words that fit. */
static bool spillway_only(int k)
{
    return k >= TOP_COL_PEAK && k <= TOP_COL_OOM;
}

static void other_marker(int y, int x, int w, attr_t a)
{
    static const char *const forms[] = {"not under spillway", "no spillway", "-"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        if ((int)strlen(forms[i]) <= w || i + 1 == sizeof forms / sizeof forms[0]) {
            ui_put(y, x, a | A_DIM, "%-*s", w, forms[i]);
            return;
        }
}

static void process_row(const struct ui *u, int y, const struct top_row *r, const struct top_columns *c,
                        bool selected)
{
    attr_t a = selected ? A_REVERSE : A_NORMAL;
    if (selected) {
        attron(a);
        mvhline(y, 0, ' ', COLS);
        attroff(a);
    }
    int x = 0, marker_x = -1;
    for (int k = 0; k < TOP_COL_COUNT; k++) {
        const struct top_col_info *ci = top_col_info((enum top_col)k);
        if (!c->shown[k])
            continue;
        char text[SPW_STATS_CMDLINE_LEN];
        if (!r->p && spillway_only(k)) {
            if (marker_x < 0)
                marker_x = x;
        } else if (marker_x >= 0) {
            other_marker(y, marker_x, x - 1 - marker_x, a);
            marker_x = -1;
        }
        if (k == TOP_COL_IN_USE) {
            /* A process not under spillway: NVML's figure, with no limit
             * to fill the bar against. */
            if (r->p)
                draw_bar(u, y, x, c->width[k], r->p->snap.c[r->dev][SPW_C_IN_USE], r->p->snap.c[r->dev][SPW_C_LIMIT]);
            else
                draw_bar_of(u, y, x, c->width[k], r->o->used, 0, r->o->have_used);
        } else if (k == TOP_COL_COMMAND) {
            top_fmt_command(text, sizeof text, top_row_command(r), c->width[k]);
            ui_put(y, x, a, "%s", text);
        } else if (r->p || !spillway_only(k)) {
            cell_text(u, text, sizeof text, (enum top_col)k, r);
            attr_t oom = k == TOP_COL_OOM && top_row_counter(r, SPW_C_OOMS) ? color(u, UI_RED) | A_BOLD : A_NORMAL;
            ui_put(y, x, a | oom, ci->left ? "%-*s" : "%*s", c->width[k], text);
        }
        x += c->width[k] + 1;
    }
}

static void list_title(const struct ui *u)
{
    char when[16], line[512];
    clock_text(u, when, sizeof when);
    const struct top_title t = {when, u->m->nprocs, u->s->interval, u->s->sort, u->s->reverse, u->s->filter};
    top_list_title(line, sizeof line, COLS, &t);
    title_bar(u, line);
}

void ui_draw_list(struct ui *u)
{
    struct top_model *m = u->m;
    list_title(u);
    int y = draw_devices(u, 1);
    struct top_columns c;
    top_list_columns(COLS, u->s->sort, top_model_nvml_procs(m), &c);
    header_row(u, y++, &c);
    int visible = LINES - 1 - y;
    if (visible < 1)
        return;
    if (u->selected < u->first)
        u->first = u->selected < 0 ? 0 : u->selected;
    if (u->selected >= u->first + visible)
        u->first = u->selected - visible + 1;
    for (int i = 0; i < visible && (size_t)(u->first + i) < m->nrows; i++)
        process_row(u, y + i, &m->rows[u->first + i], &c, u->first + i == u->selected);
    /* While the directory cannot be read there are no rows, and the reason
     * stands where they would be. */
    if (m->error[0])
        ui_put(y + 1, 2, A_BOLD | color(u, UI_RED), "%s", m->error);
    else if (m->nrows == 0)
        ui_put(y + 1, 2, A_NORMAL, top_model_empty_note(m));
}

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
            ui_put(y + h - 1 - r, x0 + (int)(i - first), color(u, col) | (u->color ? A_REVERSE : A_NORMAL),
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
 * what spillway does not count (the CUDA context, the pool's free part). */
static int detail_nvml(const struct top_model *m, const struct top_proc *p, uint32_t d, int y)
{
    if (!top_model_nvml_procs(m))
        return y;
    uint64_t used, on = top_on_device(p->snap.c[d]);
    if (!top_proc_nvml_used(m, p, d, &used)) {
        ui_put(y++, 4, A_DIM, "NVML: no figure for this process on this GPU");
        return y;
    }
    char dev[8], in_use[8], diff[8];
    top_fmt_bytes(dev, sizeof dev, used);
    top_fmt_bytes(in_use, sizeof in_use, on);
    top_fmt_bytes(diff, sizeof diff, used >= on ? used - on : on - used);
    ui_put(y++, 4, A_DIM, "NVML: %s on the device, %s %s than the %s in use there (context, pool)", dev, diff,
           used >= on ? "more" : "less", in_use);
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
    clock_text(u, when, sizeof when);
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
    title_line(u, parts, (int)(sizeof parts / sizeof parts[0]), steps, (int)(sizeof steps / sizeof steps[0]));
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

void ui_draw_help(struct ui *u)
{
    char when[16];
    clock_text(u, when, sizeof when);
    enum { NAME, CLOCK, HELP, KEYS };
    const struct top_part parts[] = {
        [NAME] = {{" spillway-top"}, false, false},
        [CLOCK] = {{when, ""}, false, false},
        [HELP] = {{"help"}, false, false},
        [KEYS] = {{"any key returns ", ""}, true, false},
    };
    static const int steps[] = {CLOCK, KEYS};
    title_line(u, parts, (int)(sizeof parts / sizeof parts[0]), steps, (int)(sizeof steps / sizeof steps[0]));
    static const char *const lines[] = {
        "q, F10          quit (in the detail view: back to the list)",
        "h, ?, F1        this help",
        "Up/Down, j/k    select; PgUp/PgDn, Home/End or g/G jump (details: scroll)",
        "Enter, d, Right details: all counters, history of in use and spilled",
        "Esc, Left       back to the list",
        "s or >, <       next / previous sort column (shown in the title)",
        "r               reverse the sort order",
        "P, M, S         sort by pid, by memory in use, by spilled memory",
        "/               filter by pid, user or command (Enter keeps, Esc undoes)",
        "c               clear the filter",
        "K               send SIGTERM to the selected process (asks y/N)",
        "+, -, space     double / halve the refresh interval; refresh now",
        "",
        "IN USE  bar of in use against the limit; GPU MEM the driver's (NVML)",
        "PEAK    highest in use      SPILL   bytes now in host memory",
        "ALLC/s  allocations/second  SPL/s, FIL/s  bytes/s spilled, filled",
        "OOM     allocations refused",
        "GPU lines add up every process on the device (p = processes); under",
        "each, oversubscribed: xF, what processes are told (F x lim), bytes on",
        "device and host, moves/s; with NVML: the device's own utilization,",
        "memory of all processes, temperature and power (host GPU numbers),",
        "and rows and a +N count for the processes not under spillway.",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ui_put(2 + (int)i, 2, A_NORMAL, "%s", lines[i]);
}

/* The bottom line's key hints: help and quit stay, the others go first. */
static void key_hints(int y)
{
    enum { HELP, DETAILS, SORT, FILTER, KILL, QUIT };
    const struct top_part parts[] = {
        [HELP] = {{"h help"}, false, false},     [DETAILS] = {{"Enter details", ""}, false, false},
        [SORT] = {{"s sort", ""}, false, false}, [FILTER] = {{"/ filter", ""}, false, false},
        [KILL] = {{"K kill", ""}, false, false}, [QUIT] = {{"q quit"}, false, false},
    };
    static const int steps[] = {DETAILS, KILL, SORT, FILTER};
    char line[128];
    top_fit_line(line, sizeof line, COLS, parts, 6, steps, 4);
    ui_put(y, 0, A_DIM, "%s", line);
}

void ui_draw_status(struct ui *u)
{
    int y = LINES - 1;
    struct top_model *m = u->m;
    if (u->confirm_kill)
        ui_put(y, 0, A_BOLD | color(u, UI_RED), "Send SIGTERM to pid %d? [y/N]", (int)u->kill_pid);
    else if (u->editing_filter)
        ui_put(y, 0, A_BOLD, "Filter: %s_", u->s->filter);
    else if (u->message[0])
        ui_put(y, 0, A_BOLD, "%s", u->message);
    else if (m->error[0])
        ui_put(y, 0, color(u, UI_RED), "%s", m->error);
    else if (m->skipped)
        ui_put(y, 0, color(u, UI_YELLOW), "%zu invalid segment%s skipped (last: %s)", m->skipped,
            m->skipped == 1 ? "" : "s", m->last_note);
    else
        key_hints(y);
}
