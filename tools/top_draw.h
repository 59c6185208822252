/* State of the interactive screen and the drawing of its views. */
#ifndef SPILLWAY_TOOLS_TOP_DRAW_H
#define SPILLWAY_TOOLS_TOP_DRAW_H
#include "tools/top_ui.h"

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
#endif
