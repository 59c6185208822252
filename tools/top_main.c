/* spillway-top: command line, then the interactive screen, one of the
 * non-interactive outputs (--once, --json, --prometheus) or the HTTP
 * exporter (--serve). */
#include "shim/options.h"
#include "tools/top_format.h"
#include "tools/top_json.h"
#include "tools/top_listen.h"
#include "tools/top_model.h"
#include "tools/top_prom.h"
#include "tools/top_serve.h"
#include "tools/top_ui.h"

#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define VERSION "0.1"

enum mode { MODE_UI, MODE_ONCE, MODE_JSON, MODE_PROMETHEUS, MODE_SERVE };

struct args {
    enum mode mode;
    struct top_settings ui;
    bool interval_given;
    const char *dir;
    unsigned scan_flags;
    bool nvml;                     /* show the devices' own figures when NVML is there */
    struct sockaddr_storage serve; /* --serve's address */
    socklen_t serve_len;
    const char *hostname;          /* --hostname */
};

static char *unset(const char *name)
{
    (void)name;
    return NULL;
}

static void usage(FILE *f)
{
    /* SPILLWAY_STATS_DIR's default, as the option table has it. */
    static struct spw_options defaults;
    char err[256];
    if (spw_options_load(&defaults, unset, err, sizeof err) != 0)
        snprintf(defaults.stats_dir, sizeof defaults.stats_dir, "?");
    fprintf(f,
            "Usage: spillway-top [OPTION]...\n"
            "Show the GPU memory of processes running under spillway (and, with NVML,\n"
            "of the GPUs' other processes).\n\n"
            "  -1, --once           print one table and exit\n"
            "  -j, --json           print every process and counter as JSON and exit\n"
            "  -p, --prometheus     print Prometheus text format and exit (node_exporter\n"
            "                       textfile collector)\n"
            "      --serve ADDR:PORT  serve the same on http://ADDR:PORT/metrics until\n"
            "                       stopped; a bare PORT listens on 127.0.0.1 only,\n"
            "                       0.0.0.0:PORT on every interface%s\n"
            "      --hostname NAME  the Hostname label of --prometheus and --serve (default:\n"
            "                       this host's name; in a pod, pass the node's name)\n"
            "  -d, --interval SEC   seconds between refreshes (default 1; 0.1 to 3600);\n"
            "                       with --once, sample twice SEC apart and show rates\n"
            "  -s, --sort KEY       pid, user, gpu, in-use (default), gpu-mem, peak,\n"
            "                       spilled, alloc-rate, spill-rate, fill-rate, ooms, command\n"
            "  -r, --reverse        reverse the sort order\n"
            "  -f, --filter TEXT    only processes whose pid, user or command contains TEXT\n"
            "      --dir DIR        segment directory (default $SPILLWAY_STATS_DIR or %s)\n"
            "  -a, --all-users      include other users' processes (needs root)\n"
            "      --keep-dead      do not remove segments left by dead processes\n"
            "      --no-color       no colours (also when NO_COLOR is set)\n"
            "      --no-nvml        do not show the devices' own figures nor their\n"
            "                       processes (NVML)\n"
            "  -h, --help           this help\n"
            "  -V, --version        version\n\n"
            "Keys: q quit, h/? help, arrows/j/k move (in details: scroll), Enter details,\n"
            "s/< > sort column, r reverse, / filter, K kill (asks first), +/- interval.\n"
            "See spillway-top(1).\n",
            top_serve_available() ? "" : "\n                       (not available: built without libmicrohttpd)",
            defaults.stats_dir);
}

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "spillway-top: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'spillway-top --help'.\n");
    return 2;
}

/* Seconds, in the number grammar of spillway's variables (shim/options.h:
 * decimal digits and a point; no hex, exponent, sign, inf or nan). */
static int parse_interval(const char *s, double *out)
{
    double v;
    if (spw_parse_decimal(s, &v) != 0 || v < 0.1 || v > 3600)
        return -1;
    *out = v;
    return 0;
}

static const char *const mode_flag[] = {[MODE_ONCE] = "--once", [MODE_JSON] = "--json",
                                        [MODE_PROMETHEUS] = "--prometheus", [MODE_SERVE] = "--serve"};

/* The output flag given (m), unless another was: each names a whole way
 * of running, and the last silently winning would hide a slip. Returns -1
 * to go on, or an exit status. */
static int set_mode(struct args *a, enum mode m)
{
    if (a->mode != MODE_UI && a->mode != m) {
        fprintf(stderr, "spillway-top: %s and %s cannot be combined: give one\n", mode_flag[a->mode],
                mode_flag[m]);
        fprintf(stderr, "Try 'spillway-top --help'.\n");
        return 2;
    }
    a->mode = m;
    return -1;
}

/* Returns -1 to go on, or an exit status. */
static int parse_args(int argc, char **argv, struct args *a)
{
    enum { OPT_DIR = 256, OPT_KEEP_DEAD, OPT_NO_COLOR, OPT_SERVE, OPT_NO_NVML, OPT_HOSTNAME };
    static const struct option longs[] = {
        {"once", no_argument, NULL, '1'},          {"json", no_argument, NULL, 'j'},
        {"prometheus", no_argument, NULL, 'p'},    {"interval", required_argument, NULL, 'd'},
        {"sort", required_argument, NULL, 's'},    {"reverse", no_argument, NULL, 'r'},
        {"filter", required_argument, NULL, 'f'},  {"dir", required_argument, NULL, OPT_DIR},
        {"all-users", no_argument, NULL, 'a'},     {"keep-dead", no_argument, NULL, OPT_KEEP_DEAD},
        {"no-color", no_argument, NULL, OPT_NO_COLOR}, {"help", no_argument, NULL, 'h'},
        {"serve", required_argument, NULL, OPT_SERVE}, {"no-nvml", no_argument, NULL, OPT_NO_NVML},
        {"hostname", required_argument, NULL, OPT_HOSTNAME},
        {"version", no_argument, NULL, 'V'},       {NULL, 0, NULL, 0}};
    opterr = 0;
    int c, rc = -1, li = -1;
    while ((c = getopt_long(argc, argv, ":1jpd:s:rf:ahV", longs, &li)) != -1) {
        /* An empty value is what a script leaves when the variable it meant
         * to expand is missing (--dir "$DIR"): refused, as the library
         * refuses SPILLWAY_STATS_DIR=, rather than read as a value. */
        if (optarg && !*optarg) {
            char name[32];
            if (li >= 0)
                snprintf(name, sizeof name, "--%s", longs[li].name);
            else
                snprintf(name, sizeof name, "-%c", c);
            return bad_usage("option '%s' needs a value, got an empty one", name);
        }
        li = -1;
        switch (c) {
        case '1': rc = set_mode(a, MODE_ONCE); break;
        case 'j': rc = set_mode(a, MODE_JSON); break;
        case 'p': rc = set_mode(a, MODE_PROMETHEUS); break;
        case 'd':
            if (parse_interval(optarg, &a->ui.interval) != 0)
                return bad_usage("invalid interval '%s': expected a decimal number of seconds from 0.1 to 3600", optarg);
            a->interval_given = true;
            break;
        case 's':
            if (top_sort_parse(optarg, &a->ui.sort) != 0)
                return bad_usage("invalid sort key '%s': expected pid, user, gpu, in-use, gpu-mem, peak, "
                                 "spilled, alloc-rate, spill-rate, fill-rate, ooms or command", optarg);
            break;
        case 'r': a->ui.reverse = true; break;
        case 'f': snprintf(a->ui.filter, sizeof a->ui.filter, "%s", optarg); break;
        case OPT_DIR: a->dir = optarg; break;
        case 'a': a->scan_flags |= SPW_SCAN_ALL_USERS; break;
        case OPT_KEEP_DEAD: a->scan_flags &= ~(unsigned)SPW_SCAN_REMOVE_DEAD; break;
        case OPT_NO_COLOR: a->ui.color = false; break;
        case OPT_NO_NVML: a->nvml = false; break;
        case OPT_HOSTNAME: a->hostname = optarg; break;
        case OPT_SERVE: {
            char why[160];
            if (!top_serve_available())
                return bad_usage("--serve is not available: this spillway-top was built without "
                                 "libmicrohttpd%s", "");
            if (top_listen_parse(optarg, &a->serve, &a->serve_len, why, sizeof why) != 0)
                return bad_usage("%s", why);
            rc = set_mode(a, MODE_SERVE);
            break;
        }
        case 'h': usage(stdout); return 0;
        case 'V': printf("spillway-top " VERSION " (stats ABI %u)\n", SPW_STATS_ABI_VERSION); return 0;
        case ':': return bad_usage("option '%s' needs a value", argv[optind - 1]);
        default: return bad_usage("unknown option '%s'", argv[optind - 1]);
        }
        if (rc >= 0)
            return rc;
    }
    if (optind < argc)
        return bad_usage("unexpected argument '%s'", argv[optind]);
    return -1;
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void note_stderr(void *ctx, const char *name, const char *why)
{
    (void)ctx;
    fprintf(stderr, "spillway-top: skipped %s: %s\n", name, why);
}

static int terminal_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 0;
}

static int run_batch(struct top_model *m, const struct args *a)
{
    if (top_model_sample(m, mono_now(), note_stderr, NULL) != 0) {
        fprintf(stderr, "spillway-top: %s\n", m->error);
        return 1;
    }
    bool rates = a->mode == MODE_ONCE && a->interval_given;
    if (rates) {
        struct timespec ts = {(time_t)a->ui.interval, (long)((a->ui.interval - (time_t)a->ui.interval) * 1e9)};
        nanosleep(&ts, NULL);
        if (top_model_sample(m, mono_now(), NULL, NULL) != 0) {
            fprintf(stderr, "spillway-top: %s\n", m->error);
            return 1;
        }
    }
    top_model_arrange(m, a->ui.sort, a->ui.reverse, a->ui.filter);
    if (a->mode == MODE_ONCE) {
        /* The user's character set, so that the command's cut at the
         * terminal's edge counts a wide character (CJK) as the two columns
         * the terminal gives it (top_width.h). Only LC_CTYPE: numbers are
         * written the one way the docs show them. */
        setlocale(LC_CTYPE, "");
        top_print_table(stdout, m, rates, terminal_width());
    }
    else if (a->mode == MODE_JSON)
        top_print_json(stdout, m);
    else
        top_print_prometheus(stdout, m);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "spillway-top: write error: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct args a = {.mode = MODE_UI,
                     .ui = {.interval = 1.0, .sort = TOP_SORT_IN_USE, .color = true},
                     .scan_flags = SPW_SCAN_REMOVE_DEAD,
                     .nvml = true};
    const char *nc = getenv("NO_COLOR");
    if (nc && *nc)
        a.ui.color = false;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    /* The environment as the library and the launcher judge it: a misspelt
     * SPILLWAY_STATS_DIR would otherwise send us to another directory, to
     * show nothing there. */
    struct spw_options opts;
    char err[512];
    if (spw_options_load_environ(&opts, err, sizeof err) != 0) {
        fprintf(stderr, "spillway-top: %s\n", err);
        return 2;
    }
    if (a.mode == MODE_UI && !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "spillway-top: standard output is not a terminal; use --once, --json or --prometheus\n");
        return 2;
    }
    struct top_model m;
    top_model_init(&m, a.dir ? a.dir : opts.stats_dir, a.scan_flags);
    m.hostname = a.hostname;
    /* No NVML (no driver, no GPU) is the common case on a test machine and
     * not worth a word: the device line is simply not shown. */
    static struct top_nvml nvml;
    if (a.nvml && top_nvml_open(&nvml, NULL) == 0)
        top_model_use_nvml(&m, &nvml);
    if (a.mode == MODE_UI)
        rc = top_ui_run(&m, &a.ui);
    else if (a.mode == MODE_SERVE)
        rc = top_serve(&m, a.ui.filter, (const struct sockaddr *)&a.serve, a.serve_len);
    else
        rc = run_batch(&m, &a);
    top_model_free(&m);
    top_nvml_close(&nvml);
    return rc;
}
