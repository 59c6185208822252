#include "tools/top_prom.h"

#include "stats/reader.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Label values are UTF-8 (the exposition format) and escape backslash,
 * double quote and newline; anything else unprintable or not valid UTF-8
 * (the reader already sanitises segment text; a host name is not checked)
 * becomes '?'. */
static void label_value(FILE *f, const char *s, size_t max)
{
    for (size_t i = 0; i < max && s[i];) {
        unsigned char c = (unsigned char)s[i];
        size_t len = spw_stats_utf8_char(s + i, strnlen(s + i, max - i));
        if (c == '\\' || c == '"')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (len)
            fwrite(s + i, 1, len, f);
        else
            fputc('?', f);
        i += len ? len : 1;
    }
}

/* ,name="value" — left out when value is empty: an empty label is the same
 * series as no label, and shorter. */
static void label(FILE *f, const char *name, const char *value)
{
    if (!value[0])
        return;
    fprintf(f, ",%s=\"", name);
    label_value(f, value, strlen(value));
    fputc('"', f);
}

/* The program name: the first word of the command line without its path,
 * so that label values stay short and series stay few. */
static void command_label(FILE *f, const char *cmdline)
{
    size_t len = strcspn(cmdline, " ");
    const char *base = cmdline;
    for (size_t i = 0; i < len; i++)
        if (cmdline[i] == '/')
            base = cmdline + i + 1;
    fputs(",command=\"", f);
    label_value(f, base, (size_t)(cmdline + len - base));
    fputc('"', f);
}

/* The pid namespace of a process whose pid is not one of ours (its own
 * namespace's: an exporter without the pods' pids, hostPID off, sees
 * every pod's program as pid 1), "" otherwise: the pid label then names
 * the process only together with it. */
static void pid_namespace(const struct top_proc *p, char *out, size_t len)
{
    if (p->snap.local_pid > 0 || !p->snap.pid_ns)
        out[0] = '\0';
    else
        snprintf(out, len, "%llu", (unsigned long long)p->snap.pid_ns);
}

static void series_labels(FILE *f, const struct top_model *m, const struct top_proc *p, uint32_t d,
                          const char *host)
{
    bool mapped;
    uint32_t gpu = top_proc_gpu(m, p, d, &mapped);
    const struct top_gpu *g = mapped ? top_nvml_gpu(m->nvml, gpu) : NULL;
    fprintf(f, "{pid=\"%d\",user=\"", top_proc_pid(p));
    label_value(f, p->user, sizeof p->user);
    fputc('"', f);
    command_label(f, p->snap.cmdline);
    fprintf(f, ",gpu=\"%u\",cuda_device=\"%u\"", gpu, d);
    label(f, "UUID", g ? g->uuid : "");
    label(f, "Hostname", host);
    const struct top_ident *id = &p->ident;
    label(f, "container_id", id->ctr.id);
    label(f, "pod_uid", id->ctr.pod_uid);
    label(f, "pod", id->pod);
    label(f, "namespace", id->ns);
    label(f, "container", id->container);
    char ns[24];
    pid_namespace(p, ns, sizeof ns);
    label(f, "pid_namespace", ns);
    fputc('}', f);
}

/* Two segments shown with the same pid, user and pid namespace label would
 * make two series with one label set, and Prometheus rejects the whole
 * scrape for that; it takes a writer in a pid namespace we cannot see
 * whose pid, in its namespace, equals one of ours. The first one wins. */
static bool duplicate(const struct top_model *m, size_t i)
{
    const struct top_proc *p = m->procs[i];
    char ns[24], other[24];
    pid_namespace(p, ns, sizeof ns);
    for (size_t j = 0; j < i; j++) {
        const struct top_proc *q = m->procs[j];
        if (!q->shown || top_proc_pid(q) != top_proc_pid(p) || q->snap.uid != p->snap.uid)
            continue;
        pid_namespace(q, other, sizeof other);
        if (strcmp(ns, other) == 0)
            return true;
    }
    return false;
}

/* Prometheus wants base units: a counter the layout keeps in ns, us or ms
 * is exported in seconds, renamed to match (stall_ns -> stall_seconds). */
static const struct {
    const char *suffix, *base;
    double per_base;
} units[] = {{"_ns", "_seconds", 1e9}, {"_us", "_seconds", 1e6}, {"_ms", "_seconds", 1e3}};

/* The exported name of counter k ("spillway_" + layout name, in base
 * units, + "_total" for counters); *per_base: what one base unit is in the
 * layout's unit (0: the value is exported as it is). */
static void metric_name(enum spw_counter k, char *out, size_t len, double *per_base)
{
    const char *name = spw_stats_counter_name(k);
    size_t n = strlen(name);
    *per_base = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t sl = strlen(units[i].suffix);
        if (n > sl && strcmp(name + n - sl, units[i].suffix) == 0) {
            snprintf(out, len, "spillway_%.*s%s%s", (int)(n - sl), name, units[i].base,
                     spw_stats_counter_is_gauge(k) ? "" : "_total");
            *per_base = units[i].per_base;
            return;
        }
    }
    snprintf(out, len, "spillway_%s%s", name, spw_stats_counter_is_gauge(k) ? "" : "_total");
}

/* A counter's help; one exported in seconds says seconds where the
 * layout's help names its own unit ("in nanoseconds"). */
static void help_text(FILE *f, const char *help, bool in_seconds)
{
    static const char *const own[] = {"in nanoseconds", "in microseconds", "in milliseconds"};
    for (size_t i = 0; in_seconds && i < sizeof own / sizeof own[0]; i++) {
        const char *at = strstr(help, own[i]);
        if (at) {
            fprintf(f, "%.*sin seconds%s", (int)(at - help), help, at + strlen(own[i]));
            return;
        }
    }
    fputs(help, f);
}

static void counter_family(FILE *f, const struct top_model *m, enum spw_counter k, const char *host)
{
    char name[128];
    double per_base;
    metric_name(k, name, sizeof name, &per_base);
    fprintf(f, "# HELP %s ", name);
    help_text(f, spw_stats_counter_help(k), per_base > 0);
    fprintf(f, "\n# TYPE %s %s\n", name, spw_stats_counter_is_gauge(k) ? "gauge" : "counter");
    for (size_t i = 0; i < m->nprocs; i++) {
        const struct top_proc *p = m->procs[i];
        if (!p->shown || duplicate(m, i))
            continue;
        bool none = true;
        for (uint32_t d = 0; d < p->snap.device_count && none; d++)
            none = !top_device_in_use(p->snap.c[d]);
        for (uint32_t d = 0; d < p->snap.device_count; d++) {
            /* Devices in use, or the first one: every process shows. */
            if (!top_device_in_use(p->snap.c[d]) && !(none && d == 0))
                continue;
            fputs(name, f);
            series_labels(f, m, p, d, host);
            if (per_base > 0)
                fprintf(f, " %.9g\n", (double)p->snap.c[d][k] / per_base);
            else
                fprintf(f, " %" PRIu64 "\n", p->snap.c[d][k]);
        }
    }
}

static void gpu_info(FILE *f, const struct top_nvml *n, const char *host)
{
    if (!n || !n->lib || n->count == 0)
        return;
    fputs("# HELP spillway_gpu_info the host's GPUs as NVML names them (value 1)\n"
          "# TYPE spillway_gpu_info gauge\n",
          f);
    for (unsigned i = 0; i < n->count; i++) {
        const struct top_gpu *g = &n->gpu[i];
        fprintf(f, "spillway_gpu_info{gpu=\"%u\"", g->index);
        label(f, "UUID", g->uuid);
        label(f, "model_name", g->name);
        label(f, "Hostname", host);
        fputs("} 1\n", f);
    }
}

/* Per GPU whose processes NVML can list, the device memory it says the
 * ones not under spillway hold (those --filter keeps): "who else is using
 * this GPU", beside DCGM_FI_DEV_FB_USED and spillway_in_use_bytes. */
static void gpu_others(FILE *f, const struct top_model *m, const char *host)
{
    const struct top_nvml *n = m->nvml;
    if (!top_model_nvml_procs(m))
        return;
    fputs("# HELP spillway_gpu_other_processes_used_bytes device memory NVML reports held by the GPU's processes "
          "not under spillway (those --filter keeps; one NVML gives no figure for counts 0)\n"
          "# TYPE spillway_gpu_other_processes_used_bytes gauge\n",
          f);
    for (unsigned i = 0; i < n->count; i++) {
        const struct top_gpu *g = &n->gpu[i];
        if (!g->have_procs)
            continue;
        uint64_t used = 0;
        for (size_t j = 0; j < m->others.n; j++) {
            const struct top_other *o = &m->others.v[j];
            if (o->gpu == g->index && o->shown && o->have_used)
                used = top_sat_add(used, o->used);
        }
        fprintf(f, "spillway_gpu_other_processes_used_bytes{gpu=\"%u\"", g->index);
        label(f, "UUID", g->uuid);
        label(f, "Hostname", host);
        fprintf(f, "} %" PRIu64 "\n", used);
    }
}

void top_print_prometheus(FILE *f, const struct top_model *m)
{
    char host[256] = "";
    if (m->hostname)
        snprintf(host, sizeof host, "%s", m->hostname);
    else if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    for (unsigned k = 0; k < SPW_C_COUNT; k++)
        counter_family(f, m, (enum spw_counter)k, host);
    gpu_info(f, m->nvml, host);
    gpu_others(f, m, host);
    /* The processes exported above: --filter's, once each. */
    size_t shown = 0;
    for (size_t i = 0; i < m->nprocs; i++)
        shown += m->procs[i]->shown && !duplicate(m, i);
    fprintf(f, "# HELP spillway_processes processes publishing spillway stats (those --filter keeps)\n"
               "# TYPE spillway_processes gauge\nspillway_processes %zu\n",
            shown);
    fprintf(f, "# HELP spillway_skipped_segments stats segments skipped as invalid in this scan\n"
               "# TYPE spillway_skipped_segments gauge\nspillway_skipped_segments %zu\n",
            m->skipped);
}
