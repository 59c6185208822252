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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
