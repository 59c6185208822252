#include "bench/util.h"

#include "bench/gpuapi.h"
#include "shim/options.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The product's own parser: a size means the same on a benchmark's
 * command line as in SPILLWAY_MEM_LIMIT. */
int parse_size(const char *s, uint64_t *out)
{
    return spw_parse_bytes(s, out);
}

int parse_sizes(const char *s, uint64_t *out, int max)
{
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == max || parse_size(t, &out[n]) || out[n] == 0)
            return -1;
        n++;
    }
    return n;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

uint64_t percentile(uint64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_u64);
    size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

void die_gpu(const char *what, int err)
{
    fprintf(stderr, "%s: error %d (%s)\n", what, err, gpu_error_string(err));
    printf("RESULT error=1 what=%s code=%d\n", what, err);
    fflush(stdout);
    exit(1);
}

int wait_for_go(int timeout_s)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    if (poll(&p, 1, timeout_s * 1000) <= 0)
        return -1;
    char line[64];
    return fgets(line, sizeof line, stdin) ? 0 : -1;
}
