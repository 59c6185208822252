/* The processes seen across samples: their segments, rates and history,
 * NVML's figures for them and the GPUs' processes not under spillway. The
 * rows made of them are top_rows.c's. */
#include "tools/top_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void top_model_init(struct top_model *m, const char *dir, unsigned scan_flags)
{
    memset(m, 0, sizeof *m);
    m->dir = dir;
    m->scan_flags = scan_flags;
}

void top_model_use_nvml(struct top_model *m, struct top_nvml *n)
{
    m->nvml = n;
}

void top_model_free(struct top_model *m)
{
    for (size_t i = 0; i < m->nprocs; i++)
        free(m->procs[i]);
    free(m->procs);
    free(m->rows);
    free(m->devices);
    top_others_free(&m->others);
    memset(m, 0, sizeof *m);
}

static struct top_proc *find_proc(struct top_model *m, const struct spw_stats_snapshot *s)
{
    for (size_t i = 0; i < m->nprocs; i++) {
        struct top_proc *p = m->procs[i];
        /* The name carries uid and pid; the start time tells a reused pid. */
        if (strcmp(p->snap.name, s->name) == 0 && p->snap.start_time == s->start_time)
            return p;
    }
    return NULL;
}

static struct top_proc *add_proc(struct top_model *m, const struct spw_stats_snapshot *s)
{
    if (m->nprocs == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 16;
        struct top_proc **np = realloc(m->procs, ncap * sizeof *np);
        if (!np)
            return NULL;
        m->procs = np;
        m->cap = ncap;
    }
    struct top_proc *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    top_user_name(s->uid, p->user, sizeof p->user);
    m->procs[m->nprocs++] = p;
    return p;
}

/* Rate of a counter between two samples; a counter that went backwards
 * (a hostile or restarted writer) gives 0 rather than a huge figure. */
static double rate(uint64_t now, uint64_t prev, double dt)
{
    return now >= prev && dt > 0 ? (double)(now - prev) / dt : 0.0;
}

/* Kernel and graph launches together: what the process submits. */
static uint64_t launches(const uint64_t *c)
{
    return c[SPW_C_LAUNCHES] + c[SPW_C_GRAPH_LAUNCHES];
}

static void update_proc(struct top_proc *p, const struct spw_stats_snapshot *s, double mono_now)
{
    p->snap = *s;
    p->seen = true;
    p->shown = true; /* until a filter says otherwise */
    /* Once its pid is known here: a process's container and start-up
     * environment do not change. */
    if (!p->ident.probed)
        top_ident_probe(&p->ident, s->local_pid);
    double dt = mono_now - p->prev_time;
    uint64_t in_use = 0, spilled = 0;
    for (uint32_t d = 0; d < s->device_count; d++) {
        const uint64_t *c = s->c[d];
        if (p->has_prev) {
            p->alloc_rate[d] = rate(c[SPW_C_ALLOCS], p->prev_allocs[d], dt);
            p->spill_rate[d] = rate(c[SPW_C_SPILL_BYTES], p->prev_spill[d], dt);
            p->fill_rate[d] = rate(c[SPW_C_FILL_BYTES], p->prev_fill[d], dt);
            p->launch_rate[d] = rate(launches(c), p->prev_launches[d], dt);
        }
        p->prev_launches[d] = launches(c);
        p->prev_allocs[d] = c[SPW_C_ALLOCS];
        p->prev_spill[d] = c[SPW_C_SPILL_BYTES];
        p->prev_fill[d] = c[SPW_C_FILL_BYTES];
        in_use = top_sat_add(in_use, c[SPW_C_IN_USE]);
        spilled = top_sat_add(spilled, c[SPW_C_SPILLED]);
    }
    p->has_prev = true;
    p->prev_time = mono_now;
    size_t slot = (p->hist_start + p->hist_len) % TOP_HISTORY;
    p->hist_in_use[slot] = in_use;
    p->hist_spilled[slot] = spilled;
    if (p->hist_len < TOP_HISTORY)
        p->hist_len++;
    else
        p->hist_start = (p->hist_start + 1) % TOP_HISTORY;
}

double top_oversubscribe(const uint64_t *c)
{
    return c[SPW_C_LIMIT] && c[SPW_C_REPORTED] > c[SPW_C_LIMIT]
               ? (double)c[SPW_C_REPORTED] / (double)c[SPW_C_LIMIT]
               : 1.0;
}

uint64_t top_on_device(const uint64_t *c)
{
    return c[SPW_C_IN_USE] > c[SPW_C_SPILLED] ? c[SPW_C_IN_USE] - c[SPW_C_SPILLED] : 0;
}

double top_proc_moves(const struct top_proc *p, uint32_t dev)
{
    return dev < SPW_STATS_MAX_DEVICES ? p->spill_rate[dev] + p->fill_rate[dev] : 0.0;
}

uint64_t top_proc_hist(const struct top_proc *p, const uint64_t *ring, size_t i)
{
    return i < p->hist_len ? ring[(p->hist_start + i) % TOP_HISTORY] : 0;
}

int top_proc_pid(const struct top_proc *p)
{
    return p->snap.local_pid > 0 ? (int)p->snap.local_pid : p->snap.host_pid;
}

bool top_model_nvml_procs(const struct top_model *m)
{
    return top_nvml_have_procs(m->nvml);
}

/* NVML's figure for p on its device dev, or false with why there is none
 * written to why (len bytes; why may be NULL). */
static bool nvml_used(const struct top_model *m, const struct top_proc *p, uint32_t dev, uint64_t *out, char *why,
                      size_t len)
{
    char none[1];
    if (!why)
        why = none, len = sizeof none;
    bool mapped;
    /* NVML's pids are those of our pid namespace (the driver translates
     * them, and leaves out processes not in it; drivers before that
     * reported the initial namespace's, the same on the host). Only a pid
     * known to be this process here names it on the list: a segment's own
     * pid is the writer's word, and could name another. */
    if (p->snap.local_pid <= 0) {
        snprintf(why, len, "its pid is not seen here");
        return false;
    }
    uint32_t gpu = top_proc_gpu(m, p, dev, &mapped);
    const struct top_gpu *g = mapped ? top_nvml_gpu(m->nvml, gpu) : NULL;
    const struct top_gpu_proc *e = top_gpu_find_proc(g, p->snap.local_pid);
    if (!mapped)
        snprintf(why, len, "its host GPU cannot be told");
    else if (!g)
        snprintf(why, len, "no GPU %u in NVML", gpu);
    else if (!g->have_procs)
        snprintf(why, len, "GPU %u's processes cannot be listed (%s)", gpu, g->procs_error);
    else if (!e)
        snprintf(why, len, "not on GPU %u's list", gpu);
    else if (!e->have_used)
        snprintf(why, len, "listed on GPU %u without one", gpu);
    if (!e || !e->have_used)
        return false;
    *out = e->used;
    return true;
}

bool top_proc_nvml_used(const struct top_model *m, const struct top_proc *p, uint32_t dev, uint64_t *out)
{
    return nvml_used(m, p, dev, out, NULL, 0);
}

void top_proc_nvml_why(const struct top_model *m, const struct top_proc *p, uint32_t dev, char *why, size_t len)
{
    uint64_t used;
    if (nvml_used(m, p, dev, &used, why, len) && len)
        why[0] = '\0';
}

uint32_t top_proc_gpu(const struct top_model *m, const struct top_proc *p, uint32_t dev, bool *mapped)
{
    const struct top_nvml *n = m->nvml && m->nvml->lib ? m->nvml : NULL;
    int host = top_gpu_host_index(&p->ident.gpu_env, dev, n ? n->gpu : NULL, n ? n->count : 0);
    if (mapped)
        *mapped = host >= 0;
    return host >= 0 ? (uint32_t)host : dev;
}

struct note_relay {
    struct top_model *m;
    spw_stats_note_fn note;
    void *ctx;
};

static void relay_note(void *ctx, const char *name, const char *why)
{
    struct note_relay *r = ctx;
    snprintf(r->m->last_note, sizeof r->m->last_note, "%s: %s", name, why);
    if (r->note)
        r->note(r->ctx, name, why);
}

static void drop_unseen(struct top_model *m)
{
    size_t keep = 0;
    for (size_t i = 0; i < m->nprocs; i++) {
        if (m->procs[i]->seen)
            m->procs[keep++] = m->procs[i];
        else
            free(m->procs[i]);
    }
    m->nprocs = m->nshown = keep;
}

/* Whether pid is a process under spillway here (top_others_update). */
static bool is_ours(void *ctx, int pid)
{
    const struct top_model *m = ctx;
    for (size_t i = 0; i < m->nprocs; i++)
        if (m->procs[i]->snap.local_pid == pid)
            return true;
    return false;
}

int top_model_sample(struct top_model *m, double mono_now, spw_stats_note_fn note, void *ctx)
{
    struct spw_stats_list list;
    struct note_relay relay = {m, note, ctx};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m->time = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    m->error[0] = '\0';
    if (spw_stats_scan(m->dir, m->scan_flags, &list, relay_note, &relay, m->error, sizeof m->error) != 0) {
        /* Nothing is known while the directory cannot be read: rows kept
         * from the last sample (dead processes among them) would pass for
         * the present. */
        for (size_t i = 0; i < m->nprocs; i++)
            m->procs[i]->seen = false;
        drop_unseen(m);
        /* Nor which of NVML's processes are spillway's. */
        top_others_free(&m->others);
        return -1;
    }
    for (size_t i = 0; i < m->nprocs; i++)
        m->procs[i]->seen = false;
    int rc = 0;
    for (size_t i = 0; i < list.n; i++) {
        struct top_proc *p = find_proc(m, &list.items[i]);
        if (!p)
            p = add_proc(m, &list.items[i]);
        if (!p) {
            snprintf(m->error, sizeof m->error, "out of memory");
            rc = -1;
            break;
        }
        update_proc(p, &list.items[i], mono_now);
    }
    m->skipped = list.skipped;
    m->removed = list.removed;
    spw_stats_list_free(&list);
    drop_unseen(m);
    if (m->nvml)
        top_nvml_sample(m->nvml);
    /* After the scan: a process is under spillway when this sample's
     * segments say so. */
    if (m->nvml && top_others_update(&m->others, m->nvml, is_ours, m) != 0 && rc == 0) {
        snprintf(m->error, sizeof m->error, "out of memory");
        rc = -1;
    }
    return rc;
}

/* Anything but the limit and the figure the program is told: the library
 * resolves those for every device it can see (they go into the config it
 * publishes, and JAX asks every device's memory at start), so a process
 * of eight visible GPUs that used one showed on all eight. */
bool top_device_in_use(const uint64_t *c)
{
    for (unsigned k = 0; k < SPW_C_COUNT; k++)
        if (k != SPW_C_LIMIT && k != SPW_C_REPORTED && c[k])
            return true;
    return false;
}
