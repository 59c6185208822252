/* The way frameworks reach the driver: dlopen("libcuda.so.1", RTLD_LOCAL)
 * and dlsym on that handle, with no libcuda linked, so that the driver is
 * not in the process's global scope; and only entry points every driver
 * since CUDA 7 has, so that it also runs on an old one (olddriver.sh).
 *   dlprobe             prints "dlprobe: devtotal BYTES" of device 0
 *   dlprobe fill CHUNK  also allocates CHUNK bytes at a time on device 0
 *                       until refused: "dlprobe: fill bytes B err E",
 *                       then "dlprobe: devtotal after BYTES"
 * strict.sh runs it with an unloadable SPILLWAY_DRIVER. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long devptr;

int main(int argc, char **argv)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlprobe: %s\n", dlerror());
        return 1;
    }
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*total)(size_t *, int) = (int (*)(size_t *, int))dlsym(h, "cuDeviceTotalMem_v2");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(h, "cuDevicePrimaryCtxRetain");
    int (*set_current)(void *) = (int (*)(void *))dlsym(h, "cuCtxSetCurrent");
    int (*alloc)(devptr *, size_t) = (int (*)(devptr *, size_t))dlsym(h, "cuMemAlloc_v2");
    if (!init || !total || !retain || !set_current || !alloc) {
        fprintf(stderr, "dlprobe: the driver lacks an entry point\n");
        return 1;
    }
    size_t bytes = 0;
    int r = init(0);
    if (r == 0)
        r = total(&bytes, 0);
    if (r != 0) {
        fprintf(stderr, "dlprobe: error %d\n", r);
        return 1;
    }
    printf("dlprobe: devtotal %zu\n", bytes);
    if (argc < 3 || strcmp(argv[1], "fill") != 0)
        return 0;
    size_t chunk = strtoull(argv[2], NULL, 0), held = 0;
    void *ctx;
    r = retain(&ctx, 0);
    if (r == 0)
        r = set_current(ctx);
    for (devptr p; r == 0 && chunk && (r = alloc(&p, chunk)) == 0;)
        held += chunk;
    printf("dlprobe: fill bytes %zu err %d\n", held, r);
    if (total(&bytes, 0) == 0)
        printf("dlprobe: devtotal after %zu\n", bytes);
    return 0;
}
