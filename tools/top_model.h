/* spillway-top's model: the processes seen across samples, their rates and
 * history (top_model.c), and the rows (one per process and device) in
 * display order (top_rows.c). No terminal code here, so that every output
 * mode shares it. */
#ifndef SPILLWAY_TOOLS_TOP_MODEL_H
#define SPILLWAY_TOOLS_TOP_MODEL_H
#include "stats/reader.h"
#include "tools/top_ident.h"
#include "tools/top_nvml.h"
#include "tools/top_other.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TOP_HISTORY 512 /* samples kept per process for the graphs */

/* Saturating: hostile values must not wrap the totals. */
static inline uint64_t top_sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

enum top_sort {
    TOP_SORT_PID, TOP_SORT_USER, TOP_SORT_DEVICE, TOP_SORT_IN_USE, TOP_SORT_GPU_MEM, TOP_SORT_PEAK,
    TOP_SORT_SPILLED, TOP_SORT_ALLOC_RATE, TOP_SORT_SPILL_RATE, TOP_SORT_FILL_RATE,
    TOP_SORT_OOMS, TOP_SORT_COMMAND, TOP_SORT_COUNT
};

struct top_proc {
    struct spw_stats_snapshot snap;   /* latest */
    char user[33];
    struct top_ident ident;           /* container, pod, device variables */
    bool seen;                        /* in the latest scan */
    bool shown;                       /* kept by the latest filter (top_model_arrange) */
    bool has_prev;
    double prev_time;
    uint64_t prev_allocs[SPW_STATS_MAX_DEVICES];
    uint64_t prev_spill[SPW_STATS_MAX_DEVICES];
    uint64_t prev_fill[SPW_STATS_MAX_DEVICES];
    uint64_t prev_launches[SPW_STATS_MAX_DEVICES];
    double alloc_rate[SPW_STATS_MAX_DEVICES];   /* per second */
    double launch_rate[SPW_STATS_MAX_DEVICES];  /* kernel and graph launches per second */
    double spill_rate[SPW_STATS_MAX_DEVICES];   /* bytes per second */
    double fill_rate[SPW_STATS_MAX_DEVICES];
    /* Totals over devices, one entry per sample, oldest first from hist_start. */
    uint64_t hist_in_use[TOP_HISTORY];
    uint64_t hist_spilled[TOP_HISTORY];
    size_t hist_len, hist_start;
};

/* A row is a process under spillway on one of its devices (p), or a
 * process NVML lists that is not under spillway (o: p is then NULL). */
struct top_row {
    struct top_proc *p;
    const struct top_other *o;
    uint32_t dev;         /* the device as the process numbers it (its stats index); 0 for o */
    uint32_t gpu;         /* the host's GPU index when known, else dev (see top_proc_gpu) */
};

struct top_device {
    uint32_t index;       /* host GPU index (top_row.gpu) */
    unsigned procs;
    uint64_t limit, pool, in_use, spilled, host;
    uint64_t told;        /* what the processes are told (reported_bytes): > limit when oversubscribed */
    double moves;         /* bytes per second spilled and filled (top_proc_moves) */
    const struct top_gpu *hw; /* NVML's figures for it, or NULL */
    unsigned others;      /* processes on it not under spillway (rows with o) */
    uint64_t others_used; /* the device memory NVML says they hold (those it says it of) */
};

struct top_model {
    const char *dir;       /* the segments' directory */
    unsigned scan_flags;
    struct top_proc **procs;
    size_t nprocs, cap;
    size_t nshown;          /* of them, kept by the latest filter (all until arranged) */
    struct top_row *rows;   /* after top_model_arrange */
    size_t nrows, rows_cap;
    struct top_device *devices; /* after top_model_arrange: as many as the rows' GPU indices, */
    size_t ndevices, devices_cap; /* which come from processes' environments when NVML is off */
    size_t skipped, removed;  /* in the latest scan */
    char last_note[256];      /* latest skip/removal, for the status line */
    char error[256];          /* the directory could not be read, or "" */
    double time;              /* of the latest sample (CLOCK_REALTIME, seconds) */
    struct top_nvml *nvml;    /* the device's own figures, or NULL (top_model_use_nvml) */
    struct top_others others;  /* NVML's processes not under spillway */
    const char *hostname;     /* the exported Hostname label; NULL: gethostname() */
};

void top_model_init(struct top_model *m, const char *dir, unsigned scan_flags);
void top_model_free(struct top_model *m);

/* Samples NVML along with the segments (n stays the caller's; opened). */
void top_model_use_nvml(struct top_model *m, struct top_nvml *n);

/* Scans the segments and updates rates and history. mono_now is a monotonic
 * time in seconds (for rates). 0, or -1 with m->error set and no process
 * left (the directory could not be read: nothing is known). Notes about
 * skipped segments go to note (may be NULL) and m->last_note. */
int top_model_sample(struct top_model *m, double mono_now, spw_stats_note_fn note, void *ctx);

/* Rebuilds m->rows: one per process and device in use (at least one per
 * process), and one per process not under spillway on a device (m->others),
 * kept if filter (NULL/"" for all) is a substring of the pid, the user or
 * the command, sorted by key (descending for sizes and rates, ascending for
 * names and ids; reverse flips it). Also fills m->devices, and marks the
 * processes kept (shown, nshown; others' shown): every output shows those. */
void top_model_arrange(struct top_model *m, enum top_sort key, bool reverse, const char *filter);

/* What an output with no rows says: no process, or none the filter kept. */
const char *top_model_empty_note(const struct top_model *m);

/* Whether a process's device's counters show it in use (any counter but
 * the limit and the told size: a pool, memory, an allocation, a launch, a
 * refusal): the devices rows and series show. */
bool top_device_in_use(const uint64_t *c);

const char *top_sort_name(enum top_sort key);  /* column title */
const char *top_sort_arg(enum top_sort key);   /* --sort value */
int top_sort_parse(const char *arg, enum top_sort *out);

/* Oversubscription (SPILLWAY_OVERSUBSCRIBE) as a device's counters c show
 * it, derived so that no figure is published twice: the factor is what the
 * program is told over the limit (1 without a limit); its bytes on the
 * device are those in use that are not spilled, its bytes on the host the
 * spilled ones. */
double top_oversubscribe(const uint64_t *c);
uint64_t top_on_device(const uint64_t *c);
/* Bytes per second p moved between device dev and the host, both ways
 * (spilled and filled): the rate of spill_bytes + fill_bytes. */
double top_proc_moves(const struct top_proc *p, uint32_t dev);

/* History sample i (0 = oldest) of p. */
uint64_t top_proc_hist(const struct top_proc *p, const uint64_t *ring, size_t i);

/* pid to show: the pid in our namespace when known, else the host pid. */
int top_proc_pid(const struct top_proc *p);

/* Whether NVML's per-process figures are there to show: it is open, its
 * pids are ours, and it could list some device's processes. */
bool top_model_nvml_procs(const struct top_model *m);
/* The device memory NVML says p holds on its device dev (CUDA context,
 * spillway's pool and all): false when unknown (NVML off or unable, the
 * device's host index not known, the process not on NVML's list, or NVML
 * does not say). */
bool top_proc_nvml_used(const struct top_model *m, const struct top_proc *p, uint32_t dev, uint64_t *out);
/* Why that figure is unknown, in a few words for the detail view ("" when
 * it is known). */
void top_proc_nvml_why(const struct top_model *m, const struct top_proc *p, uint32_t dev, char *why, size_t len);

/* A row's pid, user, command, counter k (others have only IN USE: NVML's
 * figure, 0 when unknown) and NVML figure, whichever kind it is. */
int top_row_pid(const struct top_row *r);
const char *top_row_user(const struct top_row *r);
const char *top_row_command(const struct top_row *r);
uint64_t top_row_counter(const struct top_row *r, enum spw_counter k);
bool top_row_nvml_used(const struct top_model *m, const struct top_row *r, uint64_t *out);

/* The host GPU index of p's device dev (see top_gpumap.h): *mapped tells
 * whether it could be told; when not, dev itself is returned. */
uint32_t top_proc_gpu(const struct top_model *m, const struct top_proc *p, uint32_t dev, bool *mapped);
#endif
