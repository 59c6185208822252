/* Fitting spillway-top's screen into the terminal's width: lines made of
 * parts that shrink whole (title, key hints), the columns of the process
 * list, and the command as its column can show it. No curses here, so that
 * the rules are unit-tested at any width. */
#ifndef SPILLWAY_TOOLS_TOP_LAYOUT_H
#define SPILLWAY_TOOLS_TOP_LAYOUT_H
#include "tools/top_model.h"

#include <stdbool.h>
#include <stddef.h>

#define TOP_PART_FORMS 3

/* One element of a line. */
struct top_part {
    const char *form[TOP_PART_FORMS]; /* longest first; NULL ends the list; "" leaves it out */
    bool right;                       /* in the group kept against the right edge */
    bool elastic;                     /* may be cut, ending in "...", once nothing else can shrink */
};

/* Lays out parts on one line of width columns into out (len bytes): left
 * parts joined by two spaces, the right ones at the right edge at least two
 * spaces further. While the line is too wide, the shrink steps are taken in
 * order (each names a part, which moves to its next form); then an elastic
 * part is cut. Only a line that still does not fit is cut at the edge.
 * Returns the length written. */
int top_fit_line(char *out, size_t len, int width, const struct top_part *parts, int nparts,
                 const int *steps, int nsteps);

/* What the list's title shows. */
struct top_title {
    const char *clock;  /* "HH:MM:SS" */
    size_t nprocs;
    size_t nshown;      /* of them, kept by the filter: "1 of 4 procs" when fewer */
    double interval;    /* seconds */
    enum top_sort sort;
    bool reverse;
    const char *filter; /* "" or NULL: none */
};

/* The list's title line for width columns (see top_fit_line): the key
 * hints go first (the bottom line has them too), then the interval, the
 * clock, the long form of the process count (with a filter that keeps
 * fewer, "1 of 4 procs", as --once says it); the sort and the filter stay,
 * a filter too long for the line is cut visibly. Returns the length. */
int top_list_title(char *out, size_t len, int width, const struct top_title *t);

/* The columns of the process list, in screen order. */
enum top_col {
    TOP_COL_PID, TOP_COL_USER, TOP_COL_GPU, TOP_COL_IN_USE, TOP_COL_GPU_MEM, TOP_COL_PEAK, TOP_COL_SPILL,
    TOP_COL_ALLOC_RATE, TOP_COL_SPILL_RATE, TOP_COL_FILL_RATE, TOP_COL_OOM, TOP_COL_COMMAND,
    TOP_COL_COUNT
};

struct top_col_info {
    const char *title;
    int width;           /* fixed width; the bar's least for IN USE; 0 for COMMAND */
    bool left;           /* left-aligned */
    enum top_sort sort;  /* the sort key it shows */
};

const struct top_col_info *top_col_info(enum top_col k);

/* The command column never gets less than this while a rate column can
 * make room; the in-use bar grows only once the command has TOP_CMD_ROOMY. */
#define TOP_CMD_MIN 20
#define TOP_CMD_ROOMY 60
#define TOP_BAR_MIN 10
#define TOP_BAR_MAX 30

struct top_columns {
    bool shown[TOP_COL_COUNT];
    int width[TOP_COL_COUNT]; /* IN USE: the bar; COMMAND: what the others leave */
};

/* The columns for a terminal width columns wide, sorted by sort (whose
 * column is always shown). GPU MEM (NVML's figure) only with gpu_mem: NVML
 * has per-process figures. Columns are separated by one space. */
void top_list_columns(int width, enum top_sort sort, bool gpu_mem, struct top_columns *c);

/* The command as a column width columns wide shows it (out: len bytes):
 * whole when it fits; else the program without its directory; else also
 * path arguments without theirs; then cut at the edge, never inside a
 * character. Columns as a terminal gives them (top_width.h): a wide
 * character takes two under a UTF-8 LC_CTYPE. */
void top_fmt_command(char *out, size_t len, const char *cmdline, int width);
#endif
