#include "tools/top_nvml.h"
#include "tools/top_nvml_abi.h"
#include "tools/top_nvml_procs.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct top_nvml_api {
    nvml_return (*init)(void);
    nvml_return (*shutdown)(void);
    const char *(*error_string)(nvml_return);
    nvml_return (*count)(unsigned int *);
    nvml_return (*handle)(unsigned int, nvml_device *);
    nvml_return (*name)(nvml_device, char *, unsigned int);
    nvml_return (*uuid)(nvml_device, char *, unsigned int);
    nvml_return (*utilization)(nvml_device, struct nvml_utilization *);
    nvml_return (*memory)(nvml_device, struct nvml_memory *);
    nvml_return (*temperature)(nvml_device, int, unsigned int *);
    nvml_return (*power)(nvml_device, unsigned int *);
    nvml_return (*power_limit)(nvml_device, unsigned int *);
    nvml_device handles[TOP_NVML_MAX_GPUS];
    struct top_nvml_procs_api procs; /* optional: a driver without them still has the rest */
};

static void fail(struct top_nvml *n, const char *fmt, const char *what)
{
    snprintf(n->error, sizeof n->error, fmt, what);
    top_nvml_close(n);
}

/* Resolves every function; the versioned names are what current drivers
 * export (the unversioned ones are their NVML 1 predecessors). */
static const char *resolve(void *lib, struct top_nvml_api *a)
{
    static const struct { const char *name; size_t off; } fns[] = {
        {"nvmlInit_v2", offsetof(struct top_nvml_api, init)},
        {"nvmlShutdown", offsetof(struct top_nvml_api, shutdown)},
        {"nvmlErrorString", offsetof(struct top_nvml_api, error_string)},
        {"nvmlDeviceGetCount_v2", offsetof(struct top_nvml_api, count)},
        {"nvmlDeviceGetHandleByIndex_v2", offsetof(struct top_nvml_api, handle)},
        {"nvmlDeviceGetName", offsetof(struct top_nvml_api, name)},
        {"nvmlDeviceGetUUID", offsetof(struct top_nvml_api, uuid)},
        {"nvmlDeviceGetUtilizationRates", offsetof(struct top_nvml_api, utilization)},
        {"nvmlDeviceGetMemoryInfo", offsetof(struct top_nvml_api, memory)},
        {"nvmlDeviceGetTemperature", offsetof(struct top_nvml_api, temperature)},
        {"nvmlDeviceGetPowerUsage", offsetof(struct top_nvml_api, power)},
        {"nvmlDeviceGetEnforcedPowerLimit", offsetof(struct top_nvml_api, power_limit)},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        void *f = dlsym(lib, fns[i].name);
        if (!f)
            return fns[i].name;
        memcpy((char *)a + fns[i].off, &f, sizeof f);
    }
    return NULL;
}

/* NVML's strings are NUL-terminated in its buffer; keep printable ASCII
 * only, as the stats reader does, since they reach terminals and labels. */
static void clean_text(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            *s = '?';
}

static void read_identity(struct top_nvml *n, unsigned i)
{
    struct top_gpu *g = &n->gpu[i];
    nvml_device h = n->api->handles[i];
    g->index = i;
    if (n->api->name(h, g->name, sizeof g->name) != 0)
        g->name[0] = '\0';
    if (n->api->uuid(h, g->uuid, sizeof g->uuid) != 0)
        g->uuid[0] = '\0';
    g->name[sizeof g->name - 1] = g->uuid[sizeof g->uuid - 1] = '\0';
    clean_text(g->name);
    clean_text(g->uuid);
}

static void sample_one(const struct top_nvml_api *a, nvml_device h, struct top_gpu *g)
{
    struct nvml_utilization u;
    g->have_util = a->utilization(h, &u) == 0;
    if (g->have_util) {
        g->util_gpu = u.gpu > 100 ? 100 : u.gpu;
        g->util_mem = u.memory > 100 ? 100 : u.memory;
    }
    struct nvml_memory m;
    g->have_mem = a->memory(h, &m) == 0 && m.total > 0;
    if (g->have_mem) {
        g->mem_used = m.used > m.total ? m.total : m.used;
        g->mem_total = m.total;
    }
    g->have_temp = a->temperature(h, NVML_TEMPERATURE_GPU, &g->temp_c) == 0;
    g->have_power = a->power(h, &g->power_mw) == 0;
    g->have_power_limit = a->power_limit(h, &g->power_limit_mw) == 0 && g->power_limit_mw > 0;
}

int top_nvml_open(struct top_nvml *n, const char *lib)
{
    memset(n, 0, sizeof *n);
    n->lib = dlopen(lib ? lib : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        snprintf(n->error, sizeof n->error, "no NVML: %s", dlerror());
        return -1;
    }
    n->api = calloc(1, sizeof *n->api);
    if (!n->api)
        return fail(n, "NVML: %s", "out of memory"), -1;
    const char *missing = resolve(n->lib, n->api);
    if (missing)
        return fail(n, "NVML lacks %s", missing), -1;
    top_nvml_procs_resolve(n->lib, &n->api->procs, n->procs_api);
    nvml_return r = n->api->init();
    if (r != 0) {
        /* Not initialised: nvmlShutdown must not be called. */
        char why[96];
        snprintf(why, sizeof why, "%s", n->api->error_string ? n->api->error_string(r) : "error");
        n->api->shutdown = NULL;
        return fail(n, "NVML init failed: %s", why), -1;
    }
    unsigned count = 0;
    if (n->api->count(&count) != 0)
        return fail(n, "NVML: %s", "cannot count devices"), -1;
    n->count = count > TOP_NVML_MAX_GPUS ? TOP_NVML_MAX_GPUS : count;
    for (unsigned i = 0; i < n->count; i++) {
        if (n->api->handle(i, &n->api->handles[i]) != 0) {
            n->count = i; /* a device NVML cannot open ends the list */
            break;
        }
        read_identity(n, i);
        /* The figures now, for whoever shows them before the first sample;
         * the process lists wait for it (each is a driver call per device,
         * and a refresh makes one of each). */
        sample_one(n->api, n->api->handles[i], &n->gpu[i]);
    }
    return 0;
}

void top_nvml_sample(struct top_nvml *n)
{
    if (!n->lib)
        return;
    for (unsigned i = 0; i < n->count; i++) {
        sample_one(n->api, n->api->handles[i], &n->gpu[i]);
        top_nvml_procs_sample(&n->api->procs, n->api->handles[i], &n->gpu[i], n->api->error_string);
    }
}

void top_nvml_close(struct top_nvml *n)
{
    if (n->api && n->api->shutdown)
        n->api->shutdown();
    if (n->api)
        top_nvml_procs_free(&n->api->procs);
    for (unsigned i = 0; i < TOP_NVML_MAX_GPUS; i++) {
        free(n->gpu[i].procs);
        n->gpu[i].procs = NULL;
        n->gpu[i].nprocs = n->gpu[i].procs_cap = 0;
        n->gpu[i].have_procs = false;
    }
    free(n->api);
    n->api = NULL;
    if (n->lib)
        dlclose(n->lib);
    n->lib = NULL;
    n->count = 0;
}

const struct top_gpu *top_nvml_gpu(const struct top_nvml *n, unsigned index)
{
    return n && n->lib && index < n->count ? &n->gpu[index] : NULL;
}

const struct top_gpu_proc *top_gpu_find_proc(const struct top_gpu *g, int pid)
{
    for (unsigned i = 0; g && g->have_procs && i < g->nprocs; i++)
        if (g->procs[i].pid == pid)
            return &g->procs[i];
    return NULL;
}

bool top_nvml_have_procs(const struct top_nvml *n)
{
    for (unsigned i = 0; n && n->lib && i < n->count; i++)
        if (n->gpu[i].have_procs)
            return true;
    return false;
}
