#include "tools/top_json.h"

#include <inttypes.h>
#include <string.h>

static const char *liveness_name(enum spw_liveness l)
{
    return l == SPW_ALIVE ? "alive" : l == SPW_DEAD ? "dead" : "unknown";
}

/* Text is already sanitised to printable ASCII and valid UTF-8 (plus '\n'
 * in config) by the reader, and raw UTF-8 is valid JSON; JSON still needs
 * quotes, backslashes and controls escaped. */
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

/* "key":"value" when value is not empty, after a comma. */
static void json_opt(FILE *f, const char *key, const char *value)
{
    if (!value[0])
        return;
    fprintf(f, ",\"%s\":", key);
    json_string(f, value);
}

static void json_container(FILE *f, const struct top_ident *id)
{
    if (!id->ctr.id[0] && !id->ctr.pod_uid[0])
        return;
    fputs(",\"container\":{\"runtime\":", f);
    json_string(f, id->ctr.runtime);
    fputs(",\"id\":", f);
    json_string(f, id->ctr.id);
    json_opt(f, "pod_uid", id->ctr.pod_uid);
    json_opt(f, "pod", id->pod);
    json_opt(f, "namespace", id->ns);
    json_opt(f, "name", id->container);
    fputc('}', f);
}

static void json_process(FILE *f, const struct top_model *m, const struct top_proc *p)
{
    const struct spw_stats_snapshot *s = &p->snap;
    fprintf(f, "{\"pid\":%d,\"ns_pid\":%d,\"host_pid\":%d,\"uid\":%u,\"user\":", top_proc_pid(p), s->pid,
            s->host_pid, s->uid);
    json_string(f, p->user);
    fputs(",\"command\":", f);
    json_string(f, s->cmdline);
    fprintf(f, ",\"command_truncated\":%s", s->cmdline_truncated ? "true" : "false");
    fprintf(f, ",\"start_time_ticks\":%" PRIu64 ",\"created_unix\":%.3f,\"liveness\":\"%s\",\"segment\":",
            s->start_time, s->created_unix_ns / 1e9, liveness_name(s->liveness));
    json_string(f, s->name);
    fputs(",\"config\":", f);
    json_string(f, s->config);
    fprintf(f, ",\"config_truncated\":%s", s->config_truncated ? "true" : "false");
    json_container(f, &p->ident);
    fputs(",\"devices\":[", f);
    for (uint32_t d = 0; d < s->device_count; d++) {
        bool mapped;
        uint32_t gpu = top_proc_gpu(m, p, d, &mapped);
        fprintf(f, "%s{\"index\":%u", d ? "," : "", d);
        if (mapped) {
            const struct top_gpu *g = top_nvml_gpu(m->nvml, gpu);
            fprintf(f, ",\"gpu\":%u", gpu);
            if (g)
                json_opt(f, "uuid", g->uuid);
        }
        for (unsigned k = 0; k < SPW_C_COUNT; k++)
            fprintf(f, ",\"%s\":%" PRIu64, spw_stats_counter_name((enum spw_counter)k), s->c[d][k]);
        /* With NVML, what the driver says the process holds there (null:
         * it does not say, see top_proc_nvml_used). */
        uint64_t used;
        if (m->nvml && m->nvml->lib) {
            if (top_proc_nvml_used(m, p, d, &used))
                fprintf(f, ",\"nvml_used_bytes\":%" PRIu64, used);
            else
                fputs(",\"nvml_used_bytes\":null", f);
        }
        fputc('}', f);
    }
    fputs("]}", f);
}

/* The processes on g not under spillway that the filter keeps,
 * or why they are not known. */
static void json_others(FILE *f, const struct top_model *m, const struct top_gpu *g)
{
    if (!g->have_procs) {
        json_opt(f, "processes_error", g->procs_error);
        return;
    }
    fputs(",\"other_processes\":[", f);
    bool first = true;
    for (size_t i = 0; i < m->others.n; i++) {
        const struct top_other *o = &m->others.v[i];
        if (o->gpu != g->index || !o->shown)
            continue;
        fprintf(f, "%s{\"pid\":%d,\"used_bytes\":", first ? "" : ",", o->pid);
        if (o->have_used)
            fprintf(f, "%" PRIu64, o->used);
        else
            fputs("null", f);
        fprintf(f, ",\"type\":\"%s%s%s\"", o->compute ? "C" : "", o->compute && o->graphics ? "+" : "",
                o->graphics ? "G" : "");
        /* Who it is when /proc says: left out when it cannot be read. */
        if (o->visible) {
            fputs(",\"user\":", f);
            json_string(f, o->user);
            fputs(",\"command\":", f);
            json_string(f, o->cmdline);
            fprintf(f, ",\"command_truncated\":%s", o->cmdline_truncated ? "true" : "false");
        }
        fputc('}', f);
        first = false;
    }
    fputc(']', f);
}

/* The devices' own figures, when NVML is open; a figure NVML refuses is left out. */
static void json_gpus(FILE *f, const struct top_model *m)
{
    const struct top_nvml *n = m->nvml;
    if (!n || !n->lib)
        return;
    fputs(",\"gpus\":[", f);
    for (unsigned i = 0; i < n->count; i++) {
        const struct top_gpu *g = &n->gpu[i];
        fprintf(f, "%s\n{\"index\":%u,\"uuid\":", i ? "," : "", g->index);
        json_string(f, g->uuid);
        fputs(",\"name\":", f);
        json_string(f, g->name);
        if (g->have_util)
            fprintf(f, ",\"utilization_gpu_percent\":%u,\"utilization_memory_percent\":%u", g->util_gpu, g->util_mem);
        if (g->have_mem)
            fprintf(f, ",\"memory_used_bytes\":%" PRIu64 ",\"memory_total_bytes\":%" PRIu64, g->mem_used,
                    g->mem_total);
        if (g->have_temp)
            fprintf(f, ",\"temperature_celsius\":%u", g->temp_c);
        if (g->have_power)
            fprintf(f, ",\"power_watts\":%.3f", g->power_mw / 1000.0);
        if (g->have_power_limit)
            fprintf(f, ",\"power_limit_watts\":%.3f", g->power_limit_mw / 1000.0);
        json_others(f, m, g);
        fputc('}', f);
    }
    fputs("\n]", f);
}

void top_print_json(FILE *f, const struct top_model *m)
{
    fprintf(f, "{\"abi_version\":%u,\"time\":%.3f,\"skipped_segments\":%zu,\"removed_segments\":%zu,\"processes\":[",
            SPW_STATS_ABI_VERSION, m->time, m->skipped, m->removed);
    bool first = true;
    for (size_t i = 0; i < m->nprocs; i++) {
        if (!m->procs[i]->shown)
            continue;
        fputs(first ? "\n" : ",\n", f);
        first = false;
        json_process(f, m, m->procs[i]);
    }
    fputs("\n]", f);
    json_gpus(f, m);
    fputs("}\n", f);
}
