/* The interactive screen: event loop, key handling and the three views
 * (process list, per-process detail with history graphs, help). Drawing of
 * each view lives in top_draw*.c. */
#include "tools/top_ui.h"
#include "tools/top_draw.h"

#include <curses.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Set by the signal handler, read by the loop: the only way a handler may
 * talk to it. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void init_colors(struct ui *u)
{
    u->color = u->s->color && has_colors();
    if (!u->color)
        return;
    start_color();
    /* The terminal's own background when it has one (-1), else black. */
    short bg = use_default_colors() == OK ? -1 : COLOR_BLACK;
    init_pair(UI_GREEN, COLOR_GREEN, bg);
    init_pair(UI_YELLOW, COLOR_YELLOW, bg);
    init_pair(UI_RED, COLOR_RED, bg);
    init_pair(UI_CYAN, COLOR_CYAN, bg);
    init_pair(UI_TITLE, COLOR_BLACK, COLOR_CYAN);
}

/* Remembers the selected row by identity, so that it survives re-sorting. */
static void remember_selection(struct ui *u)
{
    struct top_model *m = u->m;
    if (u->selected < 0 || (size_t)u->selected >= m->nrows) {
        u->sel_name[0] = '\0';
        return;
    }
    const struct top_row *r = &m->rows[u->selected];
    u->sel_other_pid = r->o ? r->o->pid : 0;
    u->sel_gpu = r->gpu;
    u->sel_name[0] = '\0';
    if (r->o)
        return;
    snprintf(u->sel_name, sizeof u->sel_name, "%s", r->p->snap.name);
    u->sel_start = r->p->snap.start_time;
    u->sel_dev = r->dev;
}

static bool is_selected(const struct ui *u, const struct top_row *r)
{
    if (r->o)
        return u->sel_other_pid && r->o->pid == u->sel_other_pid && r->gpu == u->sel_gpu;
    return u->sel_name[0] && r->dev == u->sel_dev && r->p->snap.start_time == u->sel_start &&
           strcmp(r->p->snap.name, u->sel_name) == 0;
}

static void restore_selection(struct ui *u)
{
    struct top_model *m = u->m;
    for (size_t i = 0; i < m->nrows && (u->sel_name[0] || u->sel_other_pid); i++) {
        const struct top_row *r = &m->rows[i];
        if (is_selected(u, r)) {
            u->selected = (int)i;
            return;
        }
    }
    if (u->selected >= (int)m->nrows)
        u->selected = (int)m->nrows - 1;
    if (u->selected < 0 && m->nrows > 0)
        u->selected = 0;
}

static void rearrange(struct ui *u)
{
    remember_selection(u);
    top_model_arrange(u->m, u->s->sort, u->s->reverse, u->s->filter);
    restore_selection(u);
}

static void sample(struct ui *u)
{
    remember_selection(u);
    top_model_sample(u->m, mono_now(), NULL, NULL);
    top_model_arrange(u->m, u->s->sort, u->s->reverse, u->s->filter);
    restore_selection(u);
    if (u->view == VIEW_DETAIL && !ui_detail_proc(u)) {
        u->view = VIEW_LIST;
        if (!u->m->error[0]) /* else unknown: the list shows why */
            snprintf(u->message, sizeof u->message, "process %s has exited", u->detail_name);
    }
}

/* In the detail view the same keys scroll it (it is taller than the screen
 * on a small one, or with a long command or config); ui_draw_detail keeps
 * the scroll within the view. */
static void move_selection(struct ui *u, int delta)
{
    if (u->view == VIEW_DETAIL) {
        long s = (long)u->detail_scroll + delta;
        u->detail_scroll = s < 0 ? 0 : s > u->detail_height ? u->detail_height : (int)s;
        return;
    }
    int n = (int)u->m->nrows;
    long s = (long)u->selected + delta;
    u->selected = n == 0 ? -1 : s < 0 ? 0 : s >= n ? n - 1 : (int)s;
}

static void open_detail(struct ui *u)
{
    if (u->selected < 0 || (size_t)u->selected >= u->m->nrows)
        return;
    const struct top_row *r = &u->m->rows[u->selected];
    if (r->o) {
        /* Its row has all NVML says of it (a figure, or "-" for none). */
        snprintf(u->message, sizeof u->message, "pid %d is not under spillway: its row is all there is",
                 r->o->pid);
        return;
    }
    snprintf(u->detail_name, sizeof u->detail_name, "%s", r->p->snap.name);
    u->detail_start = r->p->snap.start_time;
    u->detail_scroll = 0;
    u->view = VIEW_DETAIL;
}

static void ask_kill(struct ui *u)
{
    const struct top_row *r = u->view != VIEW_DETAIL && u->selected >= 0 && (size_t)u->selected < u->m->nrows
                                  ? &u->m->rows[u->selected] : NULL;
    /* Only a process under spillway: its segment's start time and user
     * are what make the signal safe against a reused pid. */
    if (r && r->o) {
        snprintf(u->message, sizeof u->message, "pid %d is not under spillway: K signals only spillway's processes",
                 r->o->pid);
        return;
    }
    const struct top_proc *p = u->view == VIEW_DETAIL ? ui_detail_proc(u) : r ? r->p : NULL;
    if (!p)
        return;
    if (p->snap.local_pid <= 0) {
        snprintf(u->message, sizeof u->message, "cannot kill: pid %d is not in this pid namespace", p->snap.pid);
        return;
    }
    u->kill_pid = p->snap.local_pid;
    u->kill_start = p->snap.start_time;
    u->kill_uid = p->snap.uid;
    u->confirm_kill = true;
}

static void do_kill(struct ui *u)
{
    u->confirm_kill = false;
    /* The pid may have been reused since the question was asked. */
    if (spw_proc_liveness(u->kill_pid, u->kill_start) != SPW_ALIVE) {
        snprintf(u->message, sizeof u->message, "pid %d has already exited", (int)u->kill_pid);
        return;
    }
    /* Nor is it signalled unless it still runs as the segment's user. */
    if (spw_proc_has_uid(u->kill_pid, u->kill_uid) != 1) {
        snprintf(u->message, sizeof u->message, "pid %d no longer runs as uid %u", (int)u->kill_pid,
                 (unsigned)u->kill_uid);
        return;
    }
    if (kill(u->kill_pid, SIGTERM) == 0)
        snprintf(u->message, sizeof u->message, "sent SIGTERM to pid %d", (int)u->kill_pid);
    else
        snprintf(u->message, sizeof u->message, "kill %d: %s", (int)u->kill_pid, strerror(errno));
}

/* Filter editing: keys go to the filter, applied as it is typed. */
static void edit_filter(struct ui *u, int ch)
{
    char *f = u->s->filter;
    size_t len = strlen(f);
    if (ch == '\n' || ch == KEY_ENTER) {
        u->editing_filter = false;
    } else if (ch == 27) {
        snprintf(f, sizeof u->s->filter, "%s", u->saved_filter);
        u->editing_filter = false;
    } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        /* A character at a time: a UTF-8 one's continuation bytes go
         * with its first. */
        while (len && ((unsigned char)f[len - 1] & 0xc0) == 0x80)
            len--;
        f[len ? len - 1 : 0] = '\0';
    } else if (((ch >= 0x20 && ch < 0x7f) || (ch >= 0x80 && ch <= 0xff)) && len + 1 < sizeof u->s->filter) {
        /* UTF-8 comes a byte at a time (a command with "/home/josé" or
         * CJK is matched by what it shows). */
        f[len] = (char)ch;
        f[len + 1] = '\0';
    }
    rearrange(u);
}

static void change_interval(struct ui *u, double factor)
{
    double v = u->s->interval * factor;
    u->s->interval = v < 0.1 ? 0.1 : v > 3600 ? 3600 : v;
    snprintf(u->message, sizeof u->message, "interval %.1fs", u->s->interval);
}

/* The next or previous column's key. GPU MEM is a column only while NVML
 * lists processes: without it the rows would be in an order no column
 * shows, under a title naming one that is not there. */
static void cycle_sort(struct ui *u, int step)
{
    int k = (int)u->s->sort;
    do
        k = (k + step + TOP_SORT_COUNT) % TOP_SORT_COUNT;
    while (k == TOP_SORT_GPU_MEM && !top_model_nvml_procs(u->m));
    u->s->sort = (enum top_sort)k;
    rearrange(u);
}

/* Returns false when the user quits. */
static bool handle_key(struct ui *u, int ch)
{
    u->message[0] = '\0';
    if (u->confirm_kill) {
        if (ch == 'y' || ch == 'Y')
            do_kill(u);
        else
            u->confirm_kill = false;
        return true;
    }
    if (u->editing_filter) {
        edit_filter(u, ch);
        return true;
    }
    if (u->view == VIEW_HELP) { /* any key, q included, leaves the help */
        u->view = u->help_from;
        return true;
    }
    switch (ch) {
    case 'q': case 'Q': case KEY_F(10):
        if (u->view == VIEW_DETAIL) {
            u->view = VIEW_LIST;
            return true;
        }
        return false;
    case 'h': case '?': case KEY_F(1):
        u->help_from = u->view;
        u->view = VIEW_HELP;
        break;
    case 27: case KEY_LEFT: case KEY_BACKSPACE:
        u->view = VIEW_LIST;
        break;
    case KEY_UP: case 'k': move_selection(u, -1); break;
    case KEY_DOWN: case 'j': move_selection(u, 1); break;
    case KEY_PPAGE: move_selection(u, -(LINES / 2)); break;
    case KEY_NPAGE: move_selection(u, LINES / 2); break;
    case KEY_HOME: case 'g': move_selection(u, INT_MIN / 2); break;
    case KEY_END: case 'G': move_selection(u, INT_MAX / 2); break;
    case '\n': case KEY_ENTER: case KEY_RIGHT: case 'd':
        if (u->view == VIEW_LIST)
            open_detail(u);
        else
            u->view = VIEW_LIST;
        break;
    case 's': case '>': case '.': cycle_sort(u, 1); break;
    case '<': case ',': cycle_sort(u, -1); break;
    case 'r': u->s->reverse = !u->s->reverse; rearrange(u); break;
    case 'P': u->s->sort = TOP_SORT_PID; rearrange(u); break;
    case 'M': u->s->sort = TOP_SORT_IN_USE; rearrange(u); break;
    case 'S': u->s->sort = TOP_SORT_SPILLED; rearrange(u); break;
    case '/':
        snprintf(u->saved_filter, sizeof u->saved_filter, "%s", u->s->filter);
        u->editing_filter = true;
        break;
    case 'c': u->s->filter[0] = '\0'; rearrange(u); break;
    case 'K': ask_kill(u); break;
    case '+': case '=': change_interval(u, 2); break;
    case '-': change_interval(u, 0.5); break;
    case ' ': u->force_sample = true; break;
    default: break;
    }
    return true;
}

static void draw(struct ui *u)
{
    erase();
    if (u->view == VIEW_HELP)
        ui_draw_help(u);
    else if (u->view == VIEW_DETAIL)
        ui_draw_detail(u);
    else
        ui_draw_list(u);
    ui_draw_status(u);
    refresh();
}

int top_ui_run(struct top_model *m, struct top_settings *s)
{
    struct ui u;
    memset(&u, 0, sizeof u);
    u.m = m;
    u.s = s;
    u.selected = 0;
    install_signals();
    /* The user's locale, so that a wide ncurses draws UTF-8 text (a command
     * with /home/josé) as it is; numbers stay written the one way the docs
     * show them. */
    setlocale(LC_ALL, "");
    setlocale(LC_NUMERIC, "C");
    if (!initscr()) {
        fprintf(stderr, "spillway-top: cannot initialise the terminal\n");
        return 1;
    }
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    init_colors(&u);
    ui_draw_init();
    sample(&u);
    double next = mono_now() + s->interval;
    bool running = true;
    while (running && !stop_requested) {
        draw(&u);
        double wait = next - mono_now();
        timeout(wait <= 0 ? 0 : (int)(wait * 1000) + 1);
        int ch = getch();
        /* A resize is no key: it is drawn at the top of the loop, and
         * must not leave the help nor answer the kill question. */
        if (ch != ERR && ch != KEY_RESIZE)
            running = handle_key(&u, ch);
        if (u.force_sample || mono_now() >= next) {
            u.force_sample = false;
            sample(&u);
            next = mono_now() + s->interval;
        }
    }
    endwin();
    return 0;
}
