/* The way frameworks reach the driver: dlopen("libcuda.so.1", RTLD_LOCAL)
 * and dlsym on that handle, with no libcuda linked, so that the driver is
 * not in the process's global scope. Prints what device 0 is said to have:
 *   dlprobe: devtotal BYTES
 * strict.sh runs it under spillway with an unloadable SPILLWAY_DRIVER. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

typedef int (*init_fn)(unsigned);
typedef int (*total_fn)(size_t *, int);

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlprobe: %s\n", dlerror());
        return 1;
    }
    init_fn init = (init_fn)dlsym(h, "cuInit");
    total_fn total = (total_fn)dlsym(h, "cuDeviceTotalMem_v2");
    size_t bytes = 0;
    int r = init && total ? init(0) : -1;
    if (r == 0)
        r = total(&bytes, 0);
    if (r != 0) {
        fprintf(stderr, "dlprobe: error %d\n", r);
        return 1;
    }
    printf("dlprobe: devtotal %zu\n", bytes);
    return 0;
}
