/* What the views draw with: colours, the usage bar, the title bar and
 * the clock shown in titles. The views: the list (top_draw_list.c, its
 * GPU lines in top_draw_gpus.c), the detail view (top_draw_detail.c), the
 * help and the bottom line (top_draw_help.c). */
#include "tools/top_draw.h"
#include "tools/top_format.h"
#include "tools/top_text.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

attr_t ui_color(const struct ui *u, enum ui_color c)
{
    return u->color ? COLOR_PAIR(c) : A_NORMAL;
}

static attr_t level_color(const struct ui *u, uint64_t used, uint64_t limit)
{
    if (!u->color || limit == 0)
        return A_NORMAL;
    double f = (double)used / (double)limit;
    return ui_color(u, f >= 0.9 ? UI_RED : f >= 0.7 ? UI_YELLOW : UI_GREEN);
}

/* "[|||||    3.2G]" of total width w: the fill shows used/limit, the value
 * sits at the right inside the brackets, as htop does. Without a limit the
 * bar stays empty; unknown (known false) shows "-". */
void ui_draw_bar_of(const struct ui *u, int y, int x, int w, uint64_t used, uint64_t limit, bool known)
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

void ui_draw_bar(const struct ui *u, int y, int x, int w, uint64_t used, uint64_t limit)
{
    ui_draw_bar_of(u, y, x, w, used, limit, true);
}

void ui_clock_text(const struct ui *u, char *out, size_t len)
{
    time_t t = (time_t)u->m->time;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(out, len, "%H:%M:%S", &tm);
}

void ui_title_bar(const struct ui *u, const char *line)
{
    attr_t a = u->color ? ui_color(u, UI_TITLE) : A_REVERSE;
    attron(a);
    mvhline(0, 0, ' ', COLS);
    attroff(a);
    ui_put(0, 0, a | A_BOLD, "%s", line);
}

/* The title bar of the other views: parts shrink in the order of steps (see
 * top_fit_line), so that what is shown is whole at any width. */
void ui_title_line(const struct ui *u, const struct top_part *parts, int n, const int *steps, int nsteps)
{
    char line[512];
    top_fit_line(line, sizeof line, COLS, parts, n, steps, nsteps);
    ui_title_bar(u, line);
}
