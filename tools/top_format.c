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

/* v as a uint64_t without an out-of-range conversion (undefined). */
static uint64_t clamp_u64(double v)
{
    if (!(v > 0)) /* and NaN */
        return 0;
    return v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
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
        top_fmt_bytes(out, len, clamp_u64(v)); /* K/M suffix, same scale */
}

void top_fmt_byte_rate(char *out, size_t len, double v)
{
    top_fmt_bytes(out, len, clamp_u64(v));
}

void top_fmt_count(char *out, size_t len, uint64_t v)
{
    if (v < 100000)
        snprintf(out, len, "%u", (unsigned)v);
    else
        top_fmt_bytes(out, len, v);
}

int top_fmt_gpu_hw(char *out, size_t len, int width, const struct top_gpu *g)
{
    char util[24] = "", mem[64] = "", mem_short[32] = "", temp[16] = "", power[32] = "", power_short[16] = "";
    char used[8], total[8];
    if (g->have_util)
        snprintf(util, sizeof util, "util %u%%", g->util_gpu);
    if (g->have_mem) {
        top_fmt_bytes(used, sizeof used, g->mem_used);
        top_fmt_bytes(total, sizeof total, g->mem_total);
        snprintf(mem, sizeof mem, "mem %s/%s all procs", used, total);
        snprintf(mem_short, sizeof mem_short, "mem %s/%s", used, total);
    }
    if (g->have_temp)
        snprintf(temp, sizeof temp, "%uC", g->temp_c);
    if (g->have_power) {
        snprintf(power_short, sizeof power_short, "%uW", (g->power_mw + 500) / 1000);
        if (g->have_power_limit)
            snprintf(power, sizeof power, "%uW/%uW", (g->power_mw + 500) / 1000, (g->power_limit_mw + 500) / 1000);
        else
            snprintf(power, sizeof power, "%s", power_short);
    }
    /* "NVIDIA " starts every current board's name and says nothing here. */
    const char *name = g->name[0] ? g->name : "GPU";
    const char *short_name = strncmp(name, "NVIDIA ", 7) == 0 ? name + 7 : name;
    enum { NAME, UTIL, MEM, TEMP, POWER };
    const struct top_part parts[] = {
        [NAME] = {{name, short_name}, false, true},
        [UTIL] = {{util}, false, false},
        [MEM] = {{mem, mem_short}, false, false},
        [TEMP] = {{temp}, false, false},
        [POWER] = {{power, power_short}, false, false},
    };
    static const int steps[] = {MEM, NAME, POWER};
    return top_fit_line(out, len, width, parts, 5, steps, 3);
}

int top_fmt_oversub(char *out, size_t len, int width, const struct top_device *d, bool rates)
{
    char factor[32], factor_short[16], told[24], dev[32], dev_short[24], host[32], host_short[24],
        moves[32] = "", moves_short[24] = "", b[8];
    double f = d->limit ? (double)d->told / (double)d->limit : 1.0;
    snprintf(factor, sizeof factor, "oversubscribed x%.3g", f);
    snprintf(factor_short, sizeof factor_short, "x%.3g", f);
    top_fmt_bytes(b, sizeof b, d->told);
    snprintf(told, sizeof told, "told %s", b);
    top_fmt_bytes(b, sizeof b, d->in_use > d->spilled ? d->in_use - d->spilled : 0);
    snprintf(dev, sizeof dev, "on device %s", b);
    snprintf(dev_short, sizeof dev_short, "dev %s", b);
    top_fmt_bytes(b, sizeof b, d->spilled);
    snprintf(host, sizeof host, "on host %s", b);
    snprintf(host_short, sizeof host_short, "host %s", b);
    if (rates) {
        top_fmt_byte_rate(b, sizeof b, d->moves);
        snprintf(moves, sizeof moves, "moves %s/s", b);
        snprintf(moves_short, sizeof moves_short, "mov %s/s", b);
    }
    enum { FACTOR, TOLD, DEV, HOST, MOVES };
    const struct top_part parts[] = {
        [FACTOR] = {{factor, factor_short}, false, false},
        [TOLD] = {{told}, false, false},
        [DEV] = {{dev, dev_short}, false, false},
        [HOST] = {{host, host_short}, false, false},
        [MOVES] = {{moves, moves_short}, false, false},
    };
    static const int steps[] = {FACTOR, DEV, HOST, MOVES};
    return top_fit_line(out, len, width, parts, 5, steps, 4);
}

/* --once's line under a GPU: its own figures, as wide as the table. */
static void print_hw_line(FILE *f, const struct top_gpu *g, int width)
{
    char line[256];
    top_fmt_gpu_hw(line, sizeof line, width > 0 ? width - 7 : 200, g);
    fprintf(f, "       %s\n", line);
}

/* A GPU's line of width columns (0: any): spillway's sums, then the
 * processes not under spillway on it, on a line of their own where the
 * terminal would wrap them. */
static void print_device_line(FILE *f, const struct top_device *d, int width)
{
    char lim[8], pool[8], use[8], sp[8], host[8], line[160], others[64] = "";
    top_fmt_bytes(lim, sizeof lim, d->limit);
    top_fmt_bytes(pool, sizeof pool, d->pool);
    top_fmt_bytes(use, sizeof use, d->in_use);
    top_fmt_bytes(sp, sizeof sp, d->spilled);
    top_fmt_bytes(host, sizeof host, d->host);
    /* A GPU with only processes not under spillway: no sums of spillway's
     * (a limit of 0B would read as a limit). */
    int n;
    if (d->procs)
        n = snprintf(line, sizeof line, "GPU %-2u limit %5s  pool %5s  in use %5s  spilled %5s  host %5s  %u proc%s",
                     d->index, lim, pool, use, sp, host, d->procs, d->procs == 1 ? "" : "s");
    else
        n = snprintf(line, sizeof line, "GPU %-2u 0 procs", d->index);
    if (d->others) {
        char used[8];
        top_fmt_bytes(used, sizeof used, d->others_used);
        snprintf(others, sizeof others, "%u not under spillway using %s", d->others, used);
    }
    if (!others[0])
        fprintf(f, "%s\n", line);
    else if (width <= 0 || n + 2 + (int)strlen(others) <= width)
        fprintf(f, "%s, %s\n", line, others);
    else
        fprintf(f, "%s\n       %s\n", line, others);
}

/* Column layout shared by the header and the rows: 63 characters before
 * the command, 70 with GPUMEM (NVML's figure). A process not under
 * spillway has its LIMIT to OOM columns say so. */
#define TABLE_FIXED 63
#define GPUMEM_WIDTH 7
#define SPILLWAY_ONLY_WIDTH 34

static void print_row(FILE *f, const struct top_model *m, const struct top_row *r, bool with_rates, bool gpu_mem,
                      int cmd)
{
    char use[8] = "-", nvml[8] = "-", command[SPW_STATS_CMDLINE_LEN];
    uint64_t v;
    bool known = top_row_nvml_used(m, r, &v);
    if (known)
        top_fmt_bytes(nvml, sizeof nvml, v);
    if (r->p || known) /* a process not under spillway: NVML's figure, if it says */
        top_fmt_bytes(use, sizeof use, top_row_counter(r, SPW_C_IN_USE));
    top_fmt_command(command, sizeof command, top_row_command(r), cmd);
    fprintf(f, "%7d %-8.8s %3u %5s", top_row_pid(r), top_row_user(r), r->gpu, use);
    if (gpu_mem)
        fprintf(f, " %6s", nvml);
    if (!r->p) {
        fprintf(f, " %-*s %s\n", SPILLWAY_ONLY_WIDTH, "not under spillway", command);
        return;
    }
    const uint64_t *c = r->p->snap.c[r->dev];
    char lim[8], peak[8], sp[8], a[8], s[8];
    top_fmt_bytes(lim, sizeof lim, c[SPW_C_LIMIT]);
    top_fmt_bytes(peak, sizeof peak, c[SPW_C_PEAK]);
    top_fmt_bytes(sp, sizeof sp, c[SPW_C_SPILLED]);
    if (with_rates) {
        top_fmt_count_rate(a, sizeof a, r->p->alloc_rate[r->dev]);
        top_fmt_byte_rate(s, sizeof s, r->p->spill_rate[r->dev]);
    } else {
        top_fmt_count(a, sizeof a, c[SPW_C_ALLOCS]);
        top_fmt_bytes(s, sizeof s, c[SPW_C_SPILL_BYTES]);
    }
    fprintf(f, " %5s %5s %5s %6s %5s %3" PRIu64 " %s\n", lim, peak, sp, a, s,
            c[SPW_C_OOMS] > 999 ? 999 : c[SPW_C_OOMS], command);
}

void top_print_table(FILE *f, const struct top_model *m, bool with_rates, int width)
{
    time_t t = (time_t)m->time;
    struct tm tm;
    char when[32];
    localtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    if (m->nshown != m->nprocs) /* a filter: what it kept, of all */
        fprintf(f, "spillway-top  %s  %zu of %zu process%s\n", when, m->nshown, m->nprocs,
                m->nprocs == 1 ? "" : "es");
    else
        fprintf(f, "spillway-top  %s  %zu process%s\n", when, m->nprocs, m->nprocs == 1 ? "" : "es");
    for (size_t i = 0; i < m->ndevices; i++) {
        print_device_line(f, &m->devices[i], width);
        if (m->devices[i].told > m->devices[i].limit) {
            char line[256];
            top_fmt_oversub(line, sizeof line, width > 0 ? width - 7 : 200, &m->devices[i], with_rates);
            fprintf(f, "       %s\n", line);
        }
        if (m->devices[i].hw)
            print_hw_line(f, m->devices[i].hw, width);
    }
    bool gpu_mem = top_model_nvml_procs(m);
    int fixed = TABLE_FIXED + (gpu_mem ? GPUMEM_WIDTH : 0);
    int cmd = width > 0 ? (width - fixed > 8 ? width - fixed : 8) : (int)SPW_STATS_CMDLINE_LEN;
    fprintf(f, "\n%7s %-8s %3s %5s", "PID", "USER", "GPU", "USED");
    if (gpu_mem)
        fprintf(f, " %6s", "GPUMEM");
    fprintf(f, " %5s %5s %5s %6s %5s %3s %s\n", "LIMIT", "PEAK", "SPILL", with_rates ? "ALLC/s" : "ALLOCS",
            with_rates ? "OUT/s" : "OUT", "OOM", "COMMAND");
    for (size_t i = 0; i < m->nrows; i++)
        print_row(f, m, &m->rows[i], with_rates, gpu_mem, cmd);
    if (m->nrows == 0)
        fprintf(f, "%s\n", top_model_empty_note(m));
}
