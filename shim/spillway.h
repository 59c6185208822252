/* spillway's public introspection API, exported by libspillway.so. A
 * program (or a test) that wants it looks it up with
 * dlsym(RTLD_DEFAULT, "spillway_get_counters"), so that it also runs
 * without spillway. */
#ifndef SPILLWAY_H
#define SPILLWAY_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPILLWAY_HOST (-1) /* the device index of pinned host memory */

struct spillway_counters {
    uint64_t limit;  /* bytes the process may use on the device (0 for host: none) */
    uint64_t used;   /* bytes allocated now (including allocations in flight) */
    uint64_t peak;   /* highest `used` seen at an allocation */
    uint64_t allocs; /* allocations counted */
    uint64_t frees;  /* frees counted */
    uint64_t ooms;   /* allocations that failed for lack of memory */
};

/* Fills *out for a device index or SPILLWAY_HOST. Returns 0, or -1 for an
 * index spillway does not track. */
int spillway_get_counters(int device, struct spillway_counters *out);

#ifdef __cplusplus
}
#endif
#endif
