#include "tools/top_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Saturating: hostile values must not wrap the totals. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

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
        in_use = sat_add(in_use, c[SPW_C_IN_USE]);
        spilled = sat_add(spilled, c[SPW_C_SPILLED]);
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

bool top_proc_nvml_used(const struct top_model *m, const struct top_proc *p, uint32_t dev, uint64_t *out)
{
    bool mapped;
    /* NVML's pids are those of our pid namespace (the driver translates
     * them, and leaves out processes not in it; drivers before that
     * reported the initial namespace's, the same on the host). Only a pid
     * known to be this process here names it on the list: a segment's own
     * pid is the writer's word, and could name another. */
    if (p->snap.local_pid <= 0)
        return false;
    uint32_t gpu = top_proc_gpu(m, p, dev, &mapped);
    const struct top_gpu_proc *e = mapped ? top_gpu_find_proc(top_nvml_gpu(m->nvml, gpu), p->snap.local_pid) : NULL;
    if (!e || !e->have_used)
        return false;
    *out = e->used;
    return true;
}

int top_row_pid(const struct top_row *r)
{
    return r->p ? top_proc_pid(r->p) : r->o->pid;
}

const char *top_row_user(const struct top_row *r)
{
    return r->p ? r->p->user : r->o->visible ? r->o->user : "?";
}

const char *top_row_command(const struct top_row *r)
{
    return r->p ? r->p->snap.cmdline : r->o->visible ? r->o->cmdline : "?";
}

uint64_t top_row_counter(const struct top_row *r, enum spw_counter k)
{
    if (r->p)
        return r->p->snap.c[r->dev][k];
    return k == SPW_C_IN_USE && r->o->have_used ? r->o->used : 0;
}

bool top_row_nvml_used(const struct top_model *m, const struct top_row *r, uint64_t *out)
{
    if (r->p)
        return top_proc_nvml_used(m, r->p, r->dev, out);
    *out = r->o->used;
    return r->o->have_used;
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

const char *top_model_empty_note(const struct top_model *m)
{
    return m->nprocs ? "(no process matches the filter)" : "(no processes running under spillway)";
}

/* Whether a row's pid, user or command has filter in it (the last two in
 * any case); no filter keeps all. */
static bool matches(const struct top_row *r, const char *filter)
{
    if (!filter || !*filter)
        return true;
    char pid[16];
    snprintf(pid, sizeof pid, "%d", top_row_pid(r));
    return strstr(pid, filter) || strcasestr(top_row_user(r), filter) || strcasestr(top_row_command(r), filter);
}

static bool push_row(struct top_model *m, const struct top_row *r)
{
    if (m->nrows == m->rows_cap) {
        size_t ncap = m->rows_cap ? m->rows_cap * 2 : 32;
        struct top_row *nr = realloc(m->rows, ncap * sizeof *nr);
        if (!nr)
            return false;
        m->rows = nr;
        m->rows_cap = ncap;
    }
    m->rows[m->nrows++] = *r;
    return true;
}

static bool push_proc_row(struct top_model *m, struct top_proc *p, uint32_t dev)
{
    return push_row(m, &(struct top_row){p, NULL, dev, top_proc_gpu(m, p, dev, NULL)});
}

/* The device row of GPU index gpu, added if new; NULL out of memory. */
static struct top_device *device_of(struct top_model *m, uint32_t gpu)
{
    for (size_t i = 0; i < m->ndevices; i++)
        if (m->devices[i].index == gpu)
            return &m->devices[i];
    if (m->ndevices == m->devices_cap) {
        size_t ncap = m->devices_cap ? m->devices_cap * 2 : 8;
        struct top_device *nd = realloc(m->devices, ncap * sizeof *nd);
        if (!nd)
            return NULL;
        m->devices = nd;
        m->devices_cap = ncap;
    }
    return &m->devices[m->ndevices++];
}

static bool add_to_device(struct top_model *m, const struct top_row *r)
{
    size_t before = m->ndevices;
    struct top_device *d = device_of(m, r->gpu);
    if (!d)
        return false;
    if (m->ndevices > before) {
        memset(d, 0, sizeof *d);
        d->index = r->gpu;
        d->hw = top_nvml_gpu(m->nvml, r->gpu);
    }
    if (r->o) {
        d->others++;
        d->others_used = sat_add(d->others_used, r->o->have_used ? r->o->used : 0);
        return true;
    }
    const uint64_t *c = r->p->snap.c[r->dev];
    d->procs++;
    d->limit = sat_add(d->limit, c[SPW_C_LIMIT]);
    d->pool = sat_add(d->pool, c[SPW_C_POOL]);
    d->in_use = sat_add(d->in_use, c[SPW_C_IN_USE]);
    d->spilled = sat_add(d->spilled, c[SPW_C_SPILLED]);
    d->host = sat_add(d->host, c[SPW_C_HOST]);
    /* A process whose limit is not known yet is told nothing yet: its
     * limit stands for it, so that the device is not oversubscribed by a
     * missing figure. */
    d->told = sat_add(d->told, c[SPW_C_REPORTED] ? c[SPW_C_REPORTED] : c[SPW_C_LIMIT]);
    d->moves += top_proc_moves(r->p, r->dev);
    return true;
}

static int by_index(const void *a, const void *b)
{
    const struct top_device *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* qsort has no context argument: the key lives here for one sort call. */
static enum top_sort sort_key;
static int sort_sign;
static const struct top_model *sort_model;

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }
static int cmp_dbl(double a, double b) { return a < b ? -1 : a > b; }

/* A row's rate; processes not under spillway have none. */
static double row_rate(const struct top_row *r, const double *rates)
{
    return r->p ? rates[r->dev] : 0.0;
}

static uint64_t row_nvml(const struct top_row *r)
{
    uint64_t v;
    return top_row_nvml_used(sort_model, r, &v) ? v : 0;
}

static int cmp_rows(const void *va, const void *vb)
{
    const struct top_row *a = va, *b = vb;
    const struct top_proc *pa = a->p, *pb = b->p;
    int c = 0;
    switch (sort_key) {
    case TOP_SORT_PID: c = cmp_u64((uint64_t)top_row_pid(a), (uint64_t)top_row_pid(b)); break;
    case TOP_SORT_USER: c = strcmp(top_row_user(a), top_row_user(b)); break;
    case TOP_SORT_DEVICE: c = cmp_u64(a->gpu, b->gpu); break;
    case TOP_SORT_IN_USE: c = -cmp_u64(top_row_counter(a, SPW_C_IN_USE), top_row_counter(b, SPW_C_IN_USE)); break;
    case TOP_SORT_GPU_MEM: c = -cmp_u64(row_nvml(a), row_nvml(b)); break;
    case TOP_SORT_PEAK: c = -cmp_u64(top_row_counter(a, SPW_C_PEAK), top_row_counter(b, SPW_C_PEAK)); break;
    case TOP_SORT_SPILLED: c = -cmp_u64(top_row_counter(a, SPW_C_SPILLED), top_row_counter(b, SPW_C_SPILLED)); break;
    case TOP_SORT_ALLOC_RATE: c = -cmp_dbl(row_rate(a, pa ? pa->alloc_rate : NULL), row_rate(b, pb ? pb->alloc_rate : NULL)); break;
    case TOP_SORT_SPILL_RATE: c = -cmp_dbl(row_rate(a, pa ? pa->spill_rate : NULL), row_rate(b, pb ? pb->spill_rate : NULL)); break;
    case TOP_SORT_FILL_RATE: c = -cmp_dbl(row_rate(a, pa ? pa->fill_rate : NULL), row_rate(b, pb ? pb->fill_rate : NULL)); break;
    case TOP_SORT_OOMS: c = -cmp_u64(top_row_counter(a, SPW_C_OOMS), top_row_counter(b, SPW_C_OOMS)); break;
    case TOP_SORT_COMMAND: c = strcmp(top_row_command(a), top_row_command(b)); break;
    default: break;
    }
    /* Ties in a stable, predictable order: pid, spillway's rows first,
     * then the device. */
    if (c == 0)
        c = cmp_u64((uint64_t)top_row_pid(a), (uint64_t)top_row_pid(b));
    if (c == 0)
        c = (a->o != NULL) - (b->o != NULL);
    if (c == 0)
        c = cmp_u64(a->dev, b->dev) * 2 + cmp_u64(a->gpu, b->gpu);
    return c * sort_sign;
}

void top_model_arrange(struct top_model *m, enum top_sort key, bool reverse, const char *filter)
{
    m->nrows = 0;
    m->ndevices = 0;
    m->nshown = 0;
    for (size_t i = 0; i < m->nprocs; i++) {
        struct top_proc *p = m->procs[i];
        if (!(p->shown = matches(&(struct top_row){p, NULL, 0, 0}, filter)))
            continue;
        m->nshown++;
        size_t before = m->nrows;
        for (uint32_t d = 0; d < p->snap.device_count; d++)
            if (top_device_in_use(p->snap.c[d]) && !push_proc_row(m, p, d))
                return;
        if (m->nrows == before && !push_proc_row(m, p, 0))
            return;
    }
    for (size_t i = 0; i < m->others.n; i++) {
        struct top_other *o = &m->others.v[i];
        const struct top_row r = {NULL, o, 0, o->gpu};
        if ((o->shown = matches(&r, filter)) && !push_row(m, &r))
            return;
    }
    for (size_t i = 0; i < m->nrows; i++)
        if (!add_to_device(m, &m->rows[i]))
            break; /* out of memory: the devices seen so far */
    sort_key = key;
    sort_sign = reverse ? -1 : 1;
    sort_model = m;
    if (m->nrows > 1)
        qsort(m->rows, m->nrows, sizeof *m->rows, cmp_rows);
    if (m->ndevices > 1)
        qsort(m->devices, m->ndevices, sizeof *m->devices, by_index);
}

static const char *const sort_names[TOP_SORT_COUNT] = {
    "PID", "USER", "GPU", "IN USE", "GPU MEM", "PEAK", "SPILLED", "ALLOC/s", "SPILL/s", "FILL/s", "OOM", "COMMAND"};
static const char *const sort_args[TOP_SORT_COUNT] = {
    "pid", "user", "gpu", "in-use", "gpu-mem", "peak", "spilled", "alloc-rate", "spill-rate", "fill-rate", "ooms",
    "command"};

const char *top_sort_name(enum top_sort key)
{
    return (unsigned)key < TOP_SORT_COUNT ? sort_names[key] : "?";
}

const char *top_sort_arg(enum top_sort key)
{
    return (unsigned)key < TOP_SORT_COUNT ? sort_args[key] : "?";
}

int top_sort_parse(const char *arg, enum top_sort *out)
{
    for (int k = 0; k < TOP_SORT_COUNT; k++)
        if (strcmp(arg, sort_args[k]) == 0) {
            *out = (enum top_sort)k;
            return 0;
        }
    return -1;
}
