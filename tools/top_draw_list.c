/* The process list: its title, the header with the sort column set apart,
 * and a row per process and GPU (or per process not under spillway). */
#include "tools/top_draw.h"
#include "tools/top_format.h"
#include "tools/top_layout.h"
#include "tools/top_text.h"

#include <stdio.h>
#include <string.h>

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
        attr_t at = ci->sort == u->s->sort ? (u->color ? ui_color(u, UI_TITLE) | A_BOLD : A_BOLD) : a;
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
                ui_draw_bar(u, y, x, c->width[k], r->p->snap.c[r->dev][SPW_C_IN_USE], r->p->snap.c[r->dev][SPW_C_LIMIT]);
            else
                ui_draw_bar_of(u, y, x, c->width[k], r->o->used, 0, r->o->have_used);
        } else if (k == TOP_COL_COMMAND) {
            top_fmt_command(text, sizeof text, top_row_command(r), c->width[k]);
            ui_put(y, x, a, "%s", text);
        } else if (r->p || !spillway_only(k)) {
            cell_text(u, text, sizeof text, (enum top_col)k, r);
            attr_t oom = k == TOP_COL_OOM && top_row_counter(r, SPW_C_OOMS) ? ui_color(u, UI_RED) | A_BOLD : A_NORMAL;
            ui_put(y, x, a | oom, ci->left ? "%-*s" : "%*s", c->width[k], text);
        }
        x += c->width[k] + 1;
    }
}

static void list_title(const struct ui *u)
{
    char when[16], line[512];
    ui_clock_text(u, when, sizeof when);
    const struct top_title t = {when, u->m->nprocs, u->m->nshown, u->s->interval, u->s->sort, u->s->reverse, u->s->filter};
    top_list_title(line, sizeof line, COLS, &t);
    ui_title_bar(u, line);
}

void ui_draw_list(struct ui *u)
{
    struct top_model *m = u->m;
    list_title(u);
    int y = ui_draw_gpus(u, 1);
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
        ui_put(y + 1, 2, A_BOLD | ui_color(u, UI_RED), "%s", m->error);
    else if (m->nrows == 0)
        ui_put(y + 1, 2, A_NORMAL, top_model_empty_note(m));
}
