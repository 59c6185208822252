/* spillway-top's interactive ncurses screen. */
#ifndef SPILLWAY_TOOLS_TOP_UI_H
#define SPILLWAY_TOOLS_TOP_UI_H
#include "tools/top_model.h"

struct top_settings {
    double interval;        /* seconds between samples */
    enum top_sort sort;
    bool reverse;
    char filter[128];
    bool color;             /* use colours when the terminal has them */
};

/* Runs until the user quits. Returns the process exit status. */
int top_ui_run(struct top_model *m, struct top_settings *s);
#endif
