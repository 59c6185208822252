/* The rows spillway-top shows, whichever the output: one per process and
 * device in use and one per process not under spillway, what each says
 * (pid, user, command, counters, NVML's figure), which the filter keeps,
 * their order, and each GPU's sums over them. */
#include "tools/top_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* A device of a process is a row when its counters show it in use, or
 * when NVML says the process holds memory there (a CUDA context on a
 * device it has not allocated on): else the GPU's memory held by one of
 * spillway's processes would be nobody's row, and not one of the others
 * either (top_others_update leaves spillway's pids out). */
static bool shows_device(const struct top_model *m, const struct top_proc *p, uint32_t d)
{
    uint64_t used;
    return top_device_in_use(p->snap.c[d]) || (top_proc_nvml_used(m, p, d, &used) && used > 0);
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
        d->others_used = top_sat_add(d->others_used, r->o->have_used ? r->o->used : 0);
        return true;
    }
    const uint64_t *c = r->p->snap.c[r->dev];
    d->procs++;
    d->limit = top_sat_add(d->limit, c[SPW_C_LIMIT]);
    d->pool = top_sat_add(d->pool, c[SPW_C_POOL]);
    d->in_use = top_sat_add(d->in_use, c[SPW_C_IN_USE]);
    d->spilled = top_sat_add(d->spilled, c[SPW_C_SPILLED]);
    d->host = top_sat_add(d->host, c[SPW_C_HOST]);
    /* A process whose limit is not known yet is told nothing yet: its
     * limit stands for it, so that the device is not oversubscribed by a
     * missing figure. */
    d->told = top_sat_add(d->told, c[SPW_C_REPORTED] ? c[SPW_C_REPORTED] : c[SPW_C_LIMIT]);
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
            if (shows_device(m, p, d) && !push_proc_row(m, p, d))
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
