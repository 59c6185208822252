/* A fake NVML for spillway-top's tests, as fakecuda is for the shim: a
 * library named libnvidia-ml.so.1 exporting the NVML functions spillway-top
 * opens, answering with figures from the environment so that the screen is
 * deterministic.
 *
 *   FAKENVML_DEVICES  devices separated by ';', each a list of key=value
 *                     separated by ',': name, uuid, util (percent), memutil
 *                     (percent), used, total (bytes, K/M/G suffixes), temp
 *                     (C), power, plimit (milliwatts). A value "na" makes
 *                     NVML answer NOT_SUPPORTED for it. Unset: one device
 *                     with the defaults below.
 *   FAKENVML_INIT     an NVML error number nvmlInit_v2 returns (e.g. 9, the
 *                     driver is not loaded).
 *   FAKENVML_PROCS    a file of the processes on the devices, read again at
 *                     every call (a test may change it while spillway-top
 *                     runs), one per line: "GPU PID USED [c|g|cg]" (USED in
 *                     bytes with K/M/G, or "na": NVML_VALUE_NOT_AVAILABLE;
 *                     c: on the compute list, the default, g: the graphics
 *                     one, cg: both), or "GPU error N": both lists answer
 *                     NVML error N (4: no permission). No file: none.
 *   FAKENVML_LOG      a file each process-list call appends a line to:
 *                     "FUNCTION dev=I in=N -> RESULT out=M".
 *
 * The process lists are those of a driver of FAKENVML_DRIVER (a build
 * flag; module.mk builds one library each): 0 (the default) a current
 * one, whose _v3 functions write 24-byte elements and which has
 * nvmlDeviceGetRunningProcessDetailList; 535 R535's, whose _v3 functions
 * wrote 32-byte ones (usedGpuCcProtectedMemory); 470 one with _v2 but no
 * _v3 (R450 to R495); 418 one with only the unversioned functions. Each
 * keeps NVML's protocol: infoCount in and out, INSUFFICIENT_SIZE with the
 * count when the array is too small, SUCCESS with none for 0 and NULL.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKENVML_DRIVER
#define FAKENVML_DRIVER 0
#endif

#define EXPORT __attribute__((visibility("default")))
#define MAX_DEV 16

enum { OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, INSUFFICIENT_SIZE = 7 };

struct dev {
    char name[96], uuid[96];
    long long util, memutil, used, total, temp, power, plimit; /* -1: not supported */
};
struct nvml_utilization { unsigned int gpu, memory; };
struct nvml_memory { unsigned long long total, free, used; };

static struct dev devs[MAX_DEV];
static unsigned ndevs;
static int initialised;

static long long parse_value(const char *v)
{
    if (strcmp(v, "na") == 0)
        return -1;
    char *end;
    long long x = strtoll(v, &end, 10);
    switch (*end) {
    case 'K': x <<= 10; break;
    case 'M': x <<= 20; break;
    case 'G': x <<= 30; break;
    default: break;
    }
    return x;
}

static void set_field(struct dev *d, const char *key, const char *val)
{
    if (strcmp(key, "name") == 0)
        snprintf(d->name, sizeof d->name, "%s", val);
    else if (strcmp(key, "uuid") == 0)
        snprintf(d->uuid, sizeof d->uuid, "%s", val);
    else if (strcmp(key, "util") == 0)
        d->util = parse_value(val);
    else if (strcmp(key, "memutil") == 0)
        d->memutil = parse_value(val);
    else if (strcmp(key, "used") == 0)
        d->used = parse_value(val);
    else if (strcmp(key, "total") == 0)
        d->total = parse_value(val);
    else if (strcmp(key, "temp") == 0)
        d->temp = parse_value(val);
    else if (strcmp(key, "power") == 0)
        d->power = parse_value(val);
    else if (strcmp(key, "plimit") == 0)
        d->plimit = parse_value(val);
    else
        fprintf(stderr, "fakenvml: unknown key '%s'\n", key);
}

static void defaults(struct dev *d, unsigned i)
{
    snprintf(d->name, sizeof d->name, "Fake GPU %u", i);
    snprintf(d->uuid, sizeof d->uuid, "GPU-fa6e0000-0000-4000-8000-%012u", i);
    d->util = 45;
    d->memutil = 20;
    d->used = 30ll << 30;
    d->total = 80ll << 30;
    d->temp = 67;
    d->power = 250000;
    d->plimit = 700000;
}

static void load(void)
{
    const char *spec = getenv("FAKENVML_DEVICES");
    ndevs = 0;
    if (!spec || !*spec) {
        defaults(&devs[ndevs++], 0);
        return;
    }
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save_dev;
    for (char *dspec = strtok_r(buf, ";", &save_dev); dspec && ndevs < MAX_DEV;
         dspec = strtok_r(NULL, ";", &save_dev)) {
        struct dev *d = &devs[ndevs];
        defaults(d, ndevs++);
        char *save_kv;
        for (char *kv = strtok_r(dspec, ",", &save_kv); kv; kv = strtok_r(NULL, ",", &save_kv)) {
            char *eq = strchr(kv, '=');
            if (!eq)
                continue;
            *eq = '\0';
            set_field(d, kv, eq + 1);
        }
    }
}

/* Handles are 1-based device numbers, so that NULL is never valid. */
static struct dev *dev_of(void *h)
{
    size_t i = (size_t)h;
    return initialised && i >= 1 && i <= ndevs ? &devs[i - 1] : NULL;
}

EXPORT int nvmlInit_v2(void)
{
    const char *fail = getenv("FAKENVML_INIT");
    if (fail && atoi(fail) != 0)
        return atoi(fail);
    load();
    initialised = 1;
    return OK;
}
EXPORT int nvmlInit(void) { return nvmlInit_v2(); }

EXPORT int nvmlShutdown(void)
{
    if (!initialised)
        return UNINITIALIZED;
    initialised = 0;
    return OK;
}

EXPORT const char *nvmlErrorString(int r)
{
    switch (r) {
    case OK: return "Success";
    case UNINITIALIZED: return "Uninitialized";
    case NOT_SUPPORTED: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case INSUFFICIENT_SIZE: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
    }
}

EXPORT int nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (!initialised)
        return UNINITIALIZED;
    *count = ndevs;
    return OK;
}

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h)
{
    if (!initialised)
        return UNINITIALIZED;
    if (i >= ndevs || !h)
        return INVALID_ARGUMENT;
    *h = (void *)(size_t)(i + 1);
    return OK;
}

static int copy_text(const char *s, char *out, unsigned int len)
{
    if (strlen(s) + 1 > len)
        return INSUFFICIENT_SIZE;
    memcpy(out, s, strlen(s) + 1);
    return OK;
}

EXPORT int nvmlDeviceGetName(void *h, char *out, unsigned int len)
{
    struct dev *d = dev_of(h);
    return d ? copy_text(d->name, out, len) : INVALID_ARGUMENT;
}

EXPORT int nvmlDeviceGetUUID(void *h, char *out, unsigned int len)
{
    struct dev *d = dev_of(h);
    return d ? copy_text(d->uuid, out, len) : INVALID_ARGUMENT;
}

EXPORT int nvmlDeviceGetUtilizationRates(void *h, struct nvml_utilization *u)
{
    struct dev *d = dev_of(h);
    if (!d)
        return INVALID_ARGUMENT;
    if (d->util < 0 || d->memutil < 0)
        return NOT_SUPPORTED;
    u->gpu = (unsigned)d->util;
    u->memory = (unsigned)d->memutil;
    return OK;
}

EXPORT int nvmlDeviceGetMemoryInfo(void *h, struct nvml_memory *m)
{
    struct dev *d = dev_of(h);
    if (!d)
        return INVALID_ARGUMENT;
    if (d->used < 0 || d->total < 0)
        return NOT_SUPPORTED;
    m->total = (unsigned long long)d->total;
    m->used = (unsigned long long)d->used;
    m->free = m->total > m->used ? m->total - m->used : 0;
    return OK;
}

static int answer(long long v, unsigned int *out)
{
    if (v < 0)
        return NOT_SUPPORTED;
    *out = (unsigned)v;
    return OK;
}

EXPORT int nvmlDeviceGetTemperature(void *h, int sensor, unsigned int *t)
{
    struct dev *d = dev_of(h);
    return !d || sensor != 0 ? INVALID_ARGUMENT : answer(d->temp, t);
}

EXPORT int nvmlDeviceGetPowerUsage(void *h, unsigned int *mw)
{
    struct dev *d = dev_of(h);
    return d ? answer(d->power, mw) : INVALID_ARGUMENT;
}

EXPORT int nvmlDeviceGetEnforcedPowerLimit(void *h, unsigned int *mw)
{
    struct dev *d = dev_of(h);
    return d ? answer(d->plimit, mw) : INVALID_ARGUMENT;
}

/* ---- processes ---- */

enum { LIST_COMPUTE = 1, LIST_GRAPHICS = 2 };
#define NOT_AVAILABLE 0xffffffffffffffffull
#define MAX_PROCS 4096

struct proc {
    unsigned pid;
    unsigned long long used;
};

/* The processes of device dev on list `list` from FAKENVML_PROCS (at most
 * max); the count, or -N for "GPU error N". */
static int read_procs(unsigned dev, int list, struct proc *out, int max)
{
    const char *path = getenv("FAKENVML_PROCS");
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (!f)
        return 0;
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned gpu, pid;
        char second[32], third[32], kind[8] = "c";
        if (line[0] == '#' || sscanf(line, "%u %31s %31s %7s", &gpu, second, third, kind) < 3 || gpu != dev)
            continue;
        if (strcmp(second, "error") == 0) {
            n = -atoi(third);
            break;
        }
        if (sscanf(second, "%u", &pid) != 1)
            continue;
        if (!((strchr(kind, 'c') && list == LIST_COMPUTE) || (strchr(kind, 'g') && list == LIST_GRAPHICS)))
            continue;
        if (n < max) {
            long long v = parse_value(third);
            out[n].pid = pid;
            out[n].used = v < 0 ? NOT_AVAILABLE : (unsigned long long)v;
            n++;
        }
    }
    fclose(f);
    return n;
}

static void log_call(const char *fn, void *h, unsigned in, int r, unsigned out)
{
    const char *path = getenv("FAKENVML_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    fprintf(f, "%s dev=%zu in=%u -> %d out=%u\n", fn, (size_t)h - 1, in, r, out);
    fclose(f);
}

/* One element of `size` bytes: pid at 0, usedGpuMemory at 8, and for v2
 * and later the MIG instance ids (none: 0xFFFFFFFF), for R535's v3 the
 * protected memory (0: no confidential computing). */
static void put_element(unsigned char *el, size_t size, const struct proc *p)
{
    memset(el, 0, size);
    memcpy(el, &p->pid, sizeof p->pid);
    memcpy(el + 8, &p->used, sizeof p->used);
    if (size >= 24)
        memset(el + 16, 0xff, 8);
}

static int list(const char *fn, void *h, unsigned int *count, void *infos, int which, size_t size)
{
    struct dev *d = dev_of(h);
    if (!d || !count)
        return INVALID_ARGUMENT;
    static struct proc procs[MAX_PROCS];
    unsigned in = *count;
    int n = read_procs((unsigned)((size_t)h - 1), which, procs, MAX_PROCS);
    int r = OK;
    if (n < 0)
        r = -n;
    else if (*count < (unsigned)n) {
        *count = (unsigned)n;
        r = INSUFFICIENT_SIZE;
    } else if (n > 0 && !infos) {
        r = INVALID_ARGUMENT;
    } else {
        for (int i = 0; i < n; i++)
            put_element((unsigned char *)infos + (size_t)i * size, size, &procs[i]);
        *count = (unsigned)n;
    }
    log_call(fn, h, in, r, *count);
    return r;
}

#define LIST_FN(name, which, size)                                              \
    EXPORT int name(void *h, unsigned int *count, void *infos)                  \
    {                                                                           \
        return list(#name, h, count, infos, which, size);                       \
    }

LIST_FN(nvmlDeviceGetComputeRunningProcesses, LIST_COMPUTE, 16)
LIST_FN(nvmlDeviceGetGraphicsRunningProcesses, LIST_GRAPHICS, 16)
#if FAKENVML_DRIVER != 418
LIST_FN(nvmlDeviceGetComputeRunningProcesses_v2, LIST_COMPUTE, 24)
LIST_FN(nvmlDeviceGetGraphicsRunningProcesses_v2, LIST_GRAPHICS, 24)
#endif
#if FAKENVML_DRIVER == 0 || FAKENVML_DRIVER == 535
#define V3_SIZE (FAKENVML_DRIVER == 535 ? 32 : 24)
LIST_FN(nvmlDeviceGetComputeRunningProcesses_v3, LIST_COMPUTE, V3_SIZE)
LIST_FN(nvmlDeviceGetGraphicsRunningProcesses_v3, LIST_GRAPHICS, V3_SIZE)
/* Present from R535 on; what they answer does not matter here: their
 * presence is what tells which element _v3 writes. */
EXPORT int nvmlDeviceGetConfComputeMemSizeInfo(void *h, void *info)
{
    (void)info;
    return dev_of(h) ? NOT_SUPPORTED : INVALID_ARGUMENT;
}
#endif
#if FAKENVML_DRIVER == 0
EXPORT int nvmlDeviceGetRunningProcessDetailList(void *h, void *plist)
{
    (void)plist;
    return dev_of(h) ? NOT_SUPPORTED : INVALID_ARGUMENT;
}
#endif
