#include "tools/top_nvml_procs.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the driver's _v3 functions write v3's 32-byte element. NVIDIA
 * changed it without a new version: R510 added the _v3 functions with v2's
 * 24-byte element, R535 (535.43) gave them the 32-byte one
 * (usedGpuCcProtectedMemory), and when nvmlDeviceGetRunningProcessDetailList
 * took that element over, the _v3 functions went back to 24 bytes. So, as
 * nvitop tells them apart (XuehaiPan/nvitop PRs #79, #89, #94): 32 bytes
 * where the confidential-computing calls exist and the detail list does
 * not. A wrong guess cannot write past the array (cap elements of 32
 * bytes are passed, whatever the stride), only misread it. */
static bool v3_writes_cc_element(void *lib)
{
    return dlsym(lib, "nvmlDeviceGetConfComputeMemSizeInfo") != NULL &&
           dlsym(lib, "nvmlDeviceGetRunningProcessDetailList") == NULL;
}

void top_nvml_procs_resolve(void *lib, struct top_nvml_procs_api *a, char names[TOP_NVML_LISTS][96])
{
    static const char *const base[TOP_NVML_LISTS] = {"nvmlDeviceGetComputeRunningProcesses",
                                                     "nvmlDeviceGetGraphicsRunningProcesses"};
    /* Newest first: _v2 (R450) added the MIG instance ids, the
     * unversioned one is NVML 1's. */
    const struct { const char *suffix; size_t stride; } versions[] = {
        {"_v3", v3_writes_cc_element(lib) ? NVML_PROC_V3_SIZE : NVML_PROC_V2_SIZE},
        {"_v2", NVML_PROC_V2_SIZE},
        {"", NVML_PROC_V1_SIZE},
    };
    for (int k = 0; k < TOP_NVML_LISTS; k++) {
        a->fn[k] = NULL;
        names[k][0] = '\0';
        for (size_t v = 0; v < sizeof versions / sizeof versions[0] && !a->fn[k]; v++) {
            char name[48];
            snprintf(name, sizeof name, "%s%s", base[k], versions[v].suffix);
            void *f = dlsym(lib, name);
            if (!f)
                continue;
            memcpy(&a->fn[k], &f, sizeof f);
            a->stride[k] = versions[v].stride;
            snprintf(names[k], 96, "%s (%zu-byte entries)", name, versions[v].stride);
        }
    }
}

/* Room for want elements of the largest kind; false out of memory. */
static bool reserve(struct top_nvml_procs_api *a, unsigned want)
{
    if (want <= a->cap && a->buf)
        return true;
    unsigned char *nb = realloc(a->buf, (size_t)want * NVML_PROC_V3_SIZE);
    if (!nb)
        return false;
    a->buf = nb;
    a->cap = want;
    return true;
}

/* Processes beyond this many on one device are not listed (a driver
 * answering a count that large is answering nonsense). */
#define MAX_PROCS 65536u

/* One list into a->buf: NVML_OK with *count elements, or NVML's error (or
 * -1 out of memory). infoCount is in/out: the room on the way in, the
 * elements written (or, with INSUFFICIENT_SIZE, those there are) on the way
 * out. Processes may start between a call that said how many there are and
 * the next, so the array grows with room to spare and the call is tried
 * again, a few times. */
static nvml_return list_into(struct top_nvml_procs_api *a, nvml_procs_fn fn, nvml_device h, unsigned *count)
{
    if (!reserve(a, a->cap ? a->cap : 32))
        return -1;
    for (int tries = 0;; tries++) {
        unsigned n = a->cap;
        nvml_return r = fn(h, &n, a->buf);
        if (r == NVML_OK) {
            *count = n < a->cap ? n : a->cap;
            return NVML_OK;
        }
        if (r != NVML_ERROR_INSUFFICIENT_SIZE || tries == 3 || n >= MAX_PROCS)
            return r;
        if (!reserve(a, n * 2 + 8 > a->cap ? n * 2 + 8 : a->cap * 2))
            return -1;
    }
}

/* The entry of pid in g, added if new; NULL out of memory. */
static struct top_gpu_proc *entry_of(struct top_gpu *g, int pid, bool *added)
{
    *added = false;
    for (unsigned i = 0; i < g->nprocs; i++)
        if (g->procs[i].pid == pid)
            return &g->procs[i];
    if (g->nprocs == g->procs_cap) {
        unsigned ncap = g->procs_cap ? g->procs_cap * 2 : 16;
        struct top_gpu_proc *np = realloc(g->procs, ncap * sizeof *np);
        if (!np)
            return NULL;
        g->procs = np;
        g->procs_cap = ncap;
    }
    *added = true;
    struct top_gpu_proc *e = &g->procs[g->nprocs++];
    memset(e, 0, sizeof *e);
    e->pid = pid;
    return e;
}

/* Adds list k's count elements to g. A pid twice in one list (a MIG
 * board's instances, listed together) holds the sum; a pid on both lists
 * (a process with both kinds of context) is one process whose memory
 * both report, so it holds the larger. Unknown (NOT_AVAILABLE) makes a
 * sum unknown; the other list's figure stands for it otherwise. */
static bool merge(struct top_gpu *g, const unsigned char *buf, size_t stride, unsigned count, int k)
{
    for (unsigned i = 0; i < count; i++) {
        const unsigned char *el = buf + (size_t)i * stride;
        unsigned int pid;
        unsigned long long used;
        memcpy(&pid, el + NVML_PROC_PID_OFFSET, sizeof pid);
        memcpy(&used, el + NVML_PROC_USED_OFFSET, sizeof used);
        if (pid == 0 || pid > INT_MAX)
            continue; /* no process has it */
        bool known = used != NVML_VALUE_NOT_AVAILABLE, added;
        struct top_gpu_proc *e = entry_of(g, (int)pid, &added);
        if (!e)
            return false;
        bool *on = k == TOP_NVML_COMPUTE ? &e->compute : &e->graphics;
        if (added) {
            e->have_used = known;
            e->used = known ? used : 0;
        } else if (*on) {
            e->have_used = e->have_used && known;
            e->used = e->have_used ? (e->used + used < e->used ? UINT64_MAX : e->used + used) : 0;
        } else if (known && (!e->have_used || used > e->used)) { /* on the other list */
            e->have_used = true;
            e->used = used;
        }
        *on = true;
    }
    return true;
}

static void say(struct top_gpu *g, const char *what, nvml_return r, const char *(*error_string)(nvml_return))
{
    const char *why = r == -1 ? "out of memory" : error_string ? error_string(r) : NULL;
    if (why)
        snprintf(g->procs_error, sizeof g->procs_error, "%s: %s", what, why);
    else
        snprintf(g->procs_error, sizeof g->procs_error, "%s: NVML error %d", what, r);
}

void top_nvml_procs_sample(struct top_nvml_procs_api *a, nvml_device h, struct top_gpu *g,
                           const char *(*error_string)(nvml_return))
{
    g->nprocs = 0;
    g->have_procs = false;
    g->procs_error[0] = '\0';
    if (!a->fn[TOP_NVML_COMPUTE]) {
        snprintf(g->procs_error, sizeof g->procs_error, "this NVML cannot list processes");
        return;
    }
    /* The compute list is the one CUDA programs are on: without it the
     * list is unknown. The graphics list adds what it can: a board
     * without graphics answers NOT_SUPPORTED, which says nothing wrong. */
    for (int k = 0; k < TOP_NVML_LISTS; k++) {
        if (!a->fn[k])
            continue;
        unsigned count = 0;
        nvml_return r = list_into(a, a->fn[k], h, &count);
        if (r == NVML_OK && !merge(g, a->buf, a->stride[k], count, k))
            r = -1;
        if (r == -1 || (r != NVML_OK && k == TOP_NVML_COMPUTE)) {
            say(g, k == TOP_NVML_COMPUTE ? "compute processes" : "graphics processes", r, error_string);
            g->nprocs = 0;
            return;
        }
    }
    g->have_procs = true;
}

void top_nvml_procs_free(struct top_nvml_procs_api *a)
{
    free(a->buf);
    a->buf = NULL;
    a->cap = 0;
}
