/* The help view and the bottom line: key hints, or the question, message
 * or filter being typed that stands in their place. */
#include "tools/top_draw.h"
#include "tools/top_layout.h"
#include "tools/top_text.h"

void ui_draw_help(struct ui *u)
{
    char when[16];
    ui_clock_text(u, when, sizeof when);
    enum { NAME, CLOCK, HELP, KEYS };
    const struct top_part parts[] = {
        [NAME] = {{" spillway-top"}, false, false},
        [CLOCK] = {{when, ""}, false, false},
        [HELP] = {{"help"}, false, false},
        [KEYS] = {{"any key returns ", ""}, true, false},
    };
    static const int steps[] = {CLOCK, KEYS};
    ui_title_line(u, parts, (int)(sizeof parts / sizeof parts[0]), steps, (int)(sizeof steps / sizeof steps[0]));
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
        "K               send SIGTERM to the selected process under spillway (asks y/N)",
        "+, -, space     double / halve the refresh interval; refresh now",
        "",
        "IN USE  bar of in use against the limit; GPU MEM the driver's (NVML)",
        "PEAK    highest in use      SPILL   bytes now in host memory  OOM  refused",
        "ALLC/s  allocations/second  SPL/s, FIL/s  bytes/s spilled, filled",
        "GPU lines add up every process on the device (p = processes); under",
        "each, oversubscribed: xF, what processes are told (F x lim), bytes on",
        "device and host, moves/s; with NVML: the device's own utilization,",
        "memory of all processes, temperature and power (host GPU numbers),",
        "and rows and a +N count for the processes not under spillway.",
    };
    /* 21 lines: whole at 24 rows, above the bottom line; a shorter
     * screen loses the last ones rather than have them under it. */
    for (size_t i = 0; i < sizeof lines / sizeof lines[0] && 2 + (int)i < LINES - 1; i++)
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
        ui_put(y, 0, A_BOLD | ui_color(u, UI_RED), "Send SIGTERM to pid %d? [y/N]", (int)u->kill_pid);
    else if (u->editing_filter)
        ui_put(y, 0, A_BOLD, "Filter: %s_", u->s->filter);
    else if (u->message[0])
        ui_put(y, 0, A_BOLD, "%s", u->message);
    else if (m->error[0])
        ui_put(y, 0, ui_color(u, UI_RED), "%s", m->error);
    else if (m->skipped)
        ui_put(y, 0, ui_color(u, UI_YELLOW), "%zu invalid segment%s skipped (last: %s)", m->skipped,
            m->skipped == 1 ? "" : "s", m->last_note);
    else
        key_hints(y);
}
