/* State of the interactive screen and the drawing of its views (the
 * list: top_draw_list.c and top_draw_gpus.c; the detail view:
 * top_draw_detail.c; the help and the bottom line: top_draw_help.c), and
 * what they draw with (top_draw.c). */
#ifndef SPILLWAY_TOOLS_TOP_DRAW_H
#define SPILLWAY_TOOLS_TOP_DRAW_H
#include "tools/top_layout.h"
#include "tools/top_ui.h"

#include <curses.h>
#include <sys/types.h>

enum ui_view { VIEW_LIST, VIEW_DETAIL, VIEW_HELP };
enum ui_color { UI_GREEN = 1, UI_YELLOW, UI_RED, UI_CYAN, UI_TITLE };

struct ui {
    struct top_model *m;
    struct top_settings *s;
    enum ui_view view, help_from;
    bool color;
    int selected;              /* index into m->rows, -1 when empty */
    int first;                 /* first row shown (scrolling) */
    char sel_name[64];         /* identity of the selected row across re-sorts */
    uint64_t sel_start;
    uint32_t sel_dev;
    int sel_other_pid;         /* or of a process not under spillway: pid and GPU */
    uint32_t sel_gpu;
    char detail_name[64];      /* the process the detail view shows */
    uint64_t detail_start;
    int detail_scroll;         /* rows of the detail view scrolled off the top */
    int detail_height;         /* rows the detail view took when last drawn */
    bool editing_filter;
    char saved_filter[128];
    bool confirm_kill;
    pid_t kill_pid;
    uint64_t kill_start;
    uint32_t kill_uid; /* the segment's user: a process of another is not signalled */
    bool force_sample;
    char message[160];         /* one-shot status message */
};

/* After setlocale and initscr: whether text outside ASCII is drawn as it
 * is (a wide ncurses under a UTF-8 locale) or as '?'. */
void ui_draw_init(void);
void ui_draw_list(struct ui *u);
void ui_draw_detail(struct ui *u);
void ui_draw_help(struct ui *u);
void ui_draw_status(struct ui *u);

/* The process the detail view shows, or NULL once it has gone. */
const struct top_proc *ui_detail_proc(const struct ui *u);

/* ---- shared by the views (top_draw.c) ---- */

/* Colour pair c, or no attribute without colours. */
attr_t ui_color(const struct ui *u, enum ui_color c);
/* "[|||||    3.2G]" of total width w at (y, x): the fill shows
 * used/limit, the value sits at the right inside the brackets, as htop
 * does. Without a limit the bar stays empty; unknown (known false) shows
 * "-". Nothing below 8 columns. */
void ui_draw_bar_of(const struct ui *u, int y, int x, int w, uint64_t used, uint64_t limit, bool known);
void ui_draw_bar(const struct ui *u, int y, int x, int w, uint64_t used, uint64_t limit);
/* The latest sample's time as "HH:MM:SS". */
void ui_clock_text(const struct ui *u, char *out, size_t len);
/* Row 0 in the title's colours, with line on it. */
void ui_title_bar(const struct ui *u, const char *line);
/* The title bar of a view: parts shrink in the order of steps (see
 * top_fit_line), so that what is shown is whole at any width. */
void ui_title_line(const struct ui *u, const struct top_part *parts, int n, const int *steps, int nsteps);

/* The list's GPU lines from row y (top_draw_gpus.c); returns the row
 * after them. */
int ui_draw_gpus(const struct ui *u, int y);
#endif
