/* Under spillway with the spy driver (drvself.sh): the program's dlsym of a
 * hooked name gets spillway's handler, the driver's own dlsym of the same
 * name gets the driver's function. Exits 0 when both hold. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *object_of(void *p)
{
    Dl_info info;
    return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "";
}

int main(void)
{
    const char *driver = getenv("SPILLWAY_DRIVER");
    void *spy = driver ? dlopen(driver, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!spy) {
        fprintf(stderr, "drvself: cannot load the spy driver\n");
        return 1;
    }
    void *program_view = dlsym(spy, "cuMemAllocAsync");
    void *(*self_lookup)(void) = (void *(*)(void))dlsym(spy, "spy_self_lookup");
    void *driver_view = self_lookup ? self_lookup() : NULL;
    int ok = strstr(object_of(program_view), "libspillway.so") &&
             strstr(object_of(driver_view), "libspydriver.so");
    printf("drvself: program sees %s, driver sees %s: %s\n", object_of(program_view),
           object_of(driver_view), ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
