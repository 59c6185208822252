#include "tools/top_gpumap.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SET TOP_NVML_MAX_GPUS

/* The next comma-separated entry of *s, spaces trimmed, into out. */
static bool next_entry(const char **s, char *out, size_t cap)
{
    const char *p = *s;
    if (!p || !*p)
        return false;
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    *s = comma ? comma + 1 : NULL;
    while (len && isspace((unsigned char)*p))
        p++, len--;
    while (len && isspace((unsigned char)p[len - 1]))
        len--;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, p, len);
    out[len] = '\0';
    return true;
}

static bool is_index(const char *s, long *v)
{
    if (!isdigit((unsigned char)*s))
        return false;
    char *end;
    *v = strtol(s, &end, 10);
    return *end == '\0' && *v >= 0 && *v < 4096;
}

/* A "GPU-..." entry (CUDA also takes a unique prefix) among gpus[set[i]]:
 * its position in set, or -1. */
static int find_uuid(const char *entry, const int *set, int nset, const struct top_gpu *gpus)
{
    size_t len = strlen(entry);
    int found = -1;
    for (int i = 0; i < nset; i++) {
        if (strncmp(gpus[set[i]].uuid, entry, len) == 0) {
            if (found >= 0)
                return -1; /* ambiguous prefix */
            found = i;
        }
    }
    return found;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* The container's devices, in host order (the runtime exposes them and
 * CUDA enumerates them in PCI order); -1 when they cannot be told, 0 when
 * the container has them all (*all set). */
static int container_set(const struct top_gpu_env *e, const struct top_gpu *gpus, unsigned n, int *set,
                         bool *all)
{
    const char *v = e->nvidia_visible;
    *all = !e->in_container || !e->has_nvidia_visible || !*v || strcmp(v, "all") == 0;
    if (*all) {
        for (unsigned i = 0; i < n; i++)
            set[i] = (int)i;
        return (int)n;
    }
    if (strcmp(v, "none") == 0 || strcmp(v, "void") == 0)
        return -1;
    int nset = 0, everything[MAX_SET];
    for (unsigned i = 0; i < n; i++)
        everything[i] = (int)i;
    char entry[128];
    for (const char *s = v; nset < MAX_SET && next_entry(&s, entry, sizeof entry);) {
        long idx;
        int pos;
        if (is_index(entry, &idx) && (n == 0 || idx < (long)n))
            set[nset++] = (int)idx;
        else if (strncmp(entry, "GPU-", 4) == 0 && (pos = find_uuid(entry, everything, (int)n, gpus)) >= 0)
            set[nset++] = pos;
        else
            return -1; /* MIG, a UUID without NVML, or nonsense */
    }
    qsort(set, (size_t)nset, sizeof *set, cmp_int);
    return nset;
}

/* CUDA numbers devices fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID;
 * identical boards keep PCI order either way. */
static bool pci_order(const struct top_gpu_env *e, const int *set, int nset, const struct top_gpu *gpus, unsigned n)
{
    if (strcmp(e->device_order, "PCI_BUS_ID") == 0 || n == 0)
        return true;
    for (int i = 1; i < nset; i++)
        if (strcmp(gpus[set[i]].name, gpus[set[0]].name) != 0)
            return false;
    return true;
}

int top_gpu_host_index(const struct top_gpu_env *e, unsigned ordinal, const struct top_gpu *gpus, unsigned n)
{
    if (!e->known)
        return -1;
    int set[MAX_SET];
    bool all;
    int nset = container_set(e, gpus, n, set, &all);
    if (nset < 0 || !pci_order(e, set, nset, gpus, n))
        return -1;
    /* Without NVML a container that has every device has as many as CUDA
     * says: positions are host indices. */
    bool unbounded = all && n == 0;
    long pos = ordinal;
    if (e->has_cuda_visible) {
        /* CUDA stops at the first entry it cannot use. */
        const char *s = e->cuda_visible;
        char entry[128];
        unsigned k = 0;
        pos = -1;
        while (next_entry(&s, entry, sizeof entry)) {
            long idx;
            int p = -1;
            if (is_index(entry, &idx) && (unbounded || idx < nset))
                p = (int)idx;
            else if (strncmp(entry, "GPU-", 4) == 0 && n > 0)
                p = find_uuid(entry, set, nset, gpus);
            if (p < 0)
                break;
            if (k++ == ordinal) {
                pos = p;
                break;
            }
        }
        if (pos < 0)
            return -1;
    }
    if (unbounded)
        return (int)pos;
    return pos < nset ? set[pos] : -1;
}
