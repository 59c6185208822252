#include "tools/top_format.h"
#include "tools/top_layout.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

void top_fmt_bytes(char *out, size_t len, uint64_t v)
{
    static const char units[] = "KMGTPE";
    if (v < 1024) {
        snprintf(out, len, "%uB", (unsigned)v);
        return;
    }
    double x = (double)v;
    int u = -1;
    while (x >= 1024 && u < 5) {
        x /= 1024;
        u++;
    }
    /* 1023.6 would round to "1024": print it as the next unit. */
    if (x >= 1023.5 && u < 5) {
        x /= 1024;
        u++;
    }
    snprintf(out, len, x < 9.95 ? "%.1f%c" : "%.0f%c", x, units[u]);
}

void top_fmt_count_rate(char *out, size_t len, double v)
{
    if (v < 0 || v != v)
        v = 0;
    if (v < 9.95)
        snprintf(out, len, v == 0 ? "0" : "%.1f", v);
    else if (v < 99999.5)
        snprintf(out, len, "%.0f", v);
    else
        top_fmt_bytes(out, len, (uint64_t)v); /* K/M suffix, same scale */
}

void top_fmt_count(char *out, size_t len, uint64_t v)
{
    if (v < 100000)
        snprintf(out, len, "%u", (unsigned)v);
    else
        top_fmt_bytes(out, len, v);
}

static const char *liveness_name(enum spw_liveness l)
{
    return l == SPW_ALIVE ? "alive" : l == SPW_DEAD ? "dead" : "unknown";
}

static void print_device_line(FILE *f, const struct top_device *d)
{
    char lim[8], pool[8], use[8], sp[8], host[8];
    top_fmt_bytes(lim, sizeof lim, d->limit);
    top_fmt_bytes(pool, sizeof pool, d->pool);
    top_fmt_bytes(use, sizeof use, d->in_use);
    top_fmt_bytes(sp, sizeof sp, d->spilled);
    top_fmt_bytes(host, sizeof host, d->host);
    fprintf(f, "GPU %-2u limit %5s  pool %5s  in use %5s  spilled %5s  host %5s  %u proc%s\n", d->index, lim,
            pool, use, sp, host, d->procs, d->procs == 1 ? "" : "s");
}

/* Column layout shared by the header and the rows: 63 characters before
 * the command. */
#define TABLE_FIXED 63

void top_print_table(FILE *f, const struct top_model *m, bool with_rates, int width)
{
    time_t t = (time_t)m->time;
    struct tm tm;
    char when[32];
    localtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(f, "spillway-top  %s  %zu process%s\n", when, m->nprocs, m->nprocs == 1 ? "" : "es");
    for (size_t i = 0; i < m->ndevices; i++)
        print_device_line(f, &m->devices[i]);
    int cmd = width > 0 ? (width - TABLE_FIXED > 8 ? width - TABLE_FIXED : 8) : (int)SPW_STATS_CMDLINE_LEN;
    fprintf(f, "\n%7s %-8s %3s %5s %5s %5s %5s %6s %5s %3s %s\n", "PID", "USER", "GPU", "USED", "LIMIT", "PEAK",
            "SPILL", with_rates ? "ALLC/s" : "ALLOCS", with_rates ? "OUT/s" : "OUT", "OOM", "COMMAND");
    for (size_t i = 0; i < m->nrows; i++) {
        const struct top_row *r = &m->rows[i];
        const uint64_t *c = r->p->snap.c[r->dev];
        char use[8], lim[8], peak[8], sp[8], a[8], s[8];
        top_fmt_bytes(use, sizeof use, c[SPW_C_IN_USE]);
        top_fmt_bytes(lim, sizeof lim, c[SPW_C_LIMIT]);
        top_fmt_bytes(peak, sizeof peak, c[SPW_C_PEAK]);
        top_fmt_bytes(sp, sizeof sp, c[SPW_C_SPILLED]);
        if (with_rates) {
            top_fmt_count_rate(a, sizeof a, r->p->alloc_rate[r->dev]);
            top_fmt_bytes(s, sizeof s, (uint64_t)r->p->spill_rate[r->dev]);
        } else {
            top_fmt_count(a, sizeof a, c[SPW_C_ALLOCS]);
            top_fmt_bytes(s, sizeof s, c[SPW_C_SPILL_BYTES]);
        }
        char command[SPW_STATS_CMDLINE_LEN];
        top_fmt_command(command, sizeof command, r->p->snap.cmdline, cmd);
        fprintf(f, "%7d %-8.8s %3u %5s %5s %5s %5s %6s %5s %3" PRIu64 " %s\n", top_proc_pid(r->p), r->p->user,
                r->dev, use, lim, peak, sp, a, s, c[SPW_C_OOMS] > 999 ? 999 : c[SPW_C_OOMS], command);
    }
    if (m->nrows == 0)
        fprintf(f, "(no processes running under spillway)\n");
}

/* Text is already sanitised to printable ASCII (plus '\n' in config) by the
 * reader; JSON still needs quotes and backslashes escaped. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void json_process(FILE *f, const struct top_proc *p)
{
    const struct spw_stats_snapshot *s = &p->snap;
    fprintf(f, "{\"pid\":%d,\"ns_pid\":%d,\"host_pid\":%d,\"uid\":%u,\"user\":", top_proc_pid(p), s->pid,
            s->host_pid, s->uid);
    json_string(f, p->user);
    fputs(",\"command\":", f);
    json_string(f, s->cmdline);
    fprintf(f, ",\"start_time_ticks\":%" PRIu64 ",\"created_unix\":%.3f,\"liveness\":\"%s\",\"segment\":",
            s->start_time, s->created_unix_ns / 1e9, liveness_name(s->liveness));
    json_string(f, s->name);
    fputs(",\"config\":", f);
    json_string(f, s->config);
    fputs(",\"devices\":[", f);
    for (uint32_t d = 0; d < s->device_count; d++) {
        fprintf(f, "%s{\"index\":%u", d ? "," : "", d);
        for (unsigned k = 0; k < SPW_C_COUNT; k++)
            fprintf(f, ",\"%s\":%" PRIu64, spw_stats_counter_name((enum spw_counter)k), s->c[d][k]);
        fputc('}', f);
    }
    fputs("]}", f);
}

void top_print_json(FILE *f, const struct top_model *m)
{
    fprintf(f, "{\"abi_version\":%u,\"time\":%.3f,\"skipped_segments\":%zu,\"removed_segments\":%zu,\"processes\":[",
            SPW_STATS_ABI_VERSION, m->time, m->skipped, m->removed);
    for (size_t i = 0; i < m->nprocs; i++) {
        fputs(i ? ",\n" : "\n", f);
        json_process(f, m->procs[i]);
    }
    fputs("\n]}\n", f);
}

/* Label values escape backslash, double quote and newline. */
static void prom_label(FILE *f, const char *s, size_t max)
{
    for (size_t i = 0; s[i] && i < max; i++) {
        if (s[i] == '\\' || s[i] == '"')
            fprintf(f, "\\%c", s[i]);
        else if (s[i] == '\n')
            fputs("\\n", f);
        else
            fputc(s[i], f);
    }
}

/* The program name: the first word of the command line without its path,
 * so that label values stay short and series stay few. */
static void prom_command(FILE *f, const char *cmdline)
{
    size_t len = strcspn(cmdline, " ");
    const char *base = cmdline;
    for (size_t i = 0; i < len; i++)
        if (cmdline[i] == '/')
            base = cmdline + i + 1;
    prom_label(f, base, (size_t)(cmdline + len - base));
}

void top_print_prometheus(FILE *f, const struct top_model *m)
{
    for (unsigned k = 0; k < SPW_C_COUNT; k++) {
        enum spw_counter ck = (enum spw_counter)k;
        int gauge = spw_stats_counter_is_gauge(ck);
        const char *name = spw_stats_counter_name(ck);
        fprintf(f, "# HELP spillway_%s%s %s\n# TYPE spillway_%s%s %s\n", name, gauge ? "" : "_total",
                spw_stats_counter_help(ck), name, gauge ? "" : "_total", gauge ? "gauge" : "counter");
        for (size_t i = 0; i < m->nprocs; i++) {
            const struct top_proc *p = m->procs[i];
            for (uint32_t d = 0; d < p->snap.device_count; d++) {
                fprintf(f, "spillway_%s%s{pid=\"%d\",user=\"", name, gauge ? "" : "_total", top_proc_pid(p));
                prom_label(f, p->user, sizeof p->user);
                fprintf(f, "\",gpu=\"%u\",command=\"", d);
                prom_command(f, p->snap.cmdline);
                fprintf(f, "\"} %" PRIu64 "\n", p->snap.c[d][k]);
            }
        }
    }
    fprintf(f, "# HELP spillway_processes processes publishing spillway stats\n"
               "# TYPE spillway_processes gauge\nspillway_processes %zu\n",
            m->nprocs);
    fprintf(f, "# HELP spillway_skipped_segments stats segments skipped as invalid in this scan\n"
               "# TYPE spillway_skipped_segments gauge\nspillway_skipped_segments %zu\n",
            m->skipped);
}
