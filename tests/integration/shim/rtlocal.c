/* The shared runtime loaded only in a library's local scope (Python loads
 * extension modules with RTLD_LOCAL, and their libcudart with them): the
 * library's cudaMalloc reaches spillway's, which must still find the real
 * runtime. Run under spillway with SPILLWAY_MEM_LIMIT=64M by rtlocal.sh;
 * exits 0 when the runtime works and counts are right. */
#include "shim/spillway.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define MiB (1ull << 20)

#define EXPECT(cond)                                           \
    do {                                                       \
        if (!(cond)) {                                         \
            fprintf(stderr, "rtlocal: failed: %s\n", #cond);   \
            return 1;                                          \
        }                                                      \
    } while (0)

int main(void)
{
    const char *b = getenv("SPW_TEST_BUILD");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/integration/libshim_rtuser.so", b && *b ? b : "build");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    EXPECT(h != NULL);
    EXPECT(dlsym(RTLD_DEFAULT, "cudaMalloc") != NULL); /* spillway's, global */
    int (*rt_malloc)(void **, size_t) = (int (*)(void **, size_t))dlsym(h, "rtuser_malloc");
    int (*rt_free)(void *) = (int (*)(void *))dlsym(h, "rtuser_free");
    int (*rt_info)(size_t *, size_t *) = (int (*)(size_t *, size_t *))dlsym(h, "rtuser_mem_get_info");
    int (*counters)(int, struct spillway_counters *) =
        (int (*)(int, struct spillway_counters *))dlsym(RTLD_DEFAULT, "spillway_get_counters");
    EXPECT(rt_malloc && rt_free && rt_info && counters);
    void *p = NULL;
    int e = rt_malloc(&p, 16 * MiB);
    if (e != 0)
        fprintf(stderr, "rtlocal: cudaMalloc returned %d\n", e);
    EXPECT(e == 0 && p != NULL);
    struct spillway_counters c;
    EXPECT(counters(0, &c) == 0 && c.used == 16 * MiB && c.allocs == 1);
    size_t f = 0, t = 0;
    EXPECT(rt_info(&f, &t) == 0 && t == 64 * MiB && f == 48 * MiB);
    void *q = NULL;
    EXPECT(rt_malloc(&q, 64 * MiB) == 2 /* cudaErrorMemoryAllocation */);
    EXPECT(rt_free(p) == 0);
    EXPECT(counters(0, &c) == 0 && c.used == 0 && c.frees == 1);
    printf("rtlocal: ok\n");
    return 0;
}
