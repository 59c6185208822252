/* spillway's public introspection API, exported by libspillway.so. A
 * program (or a test) that wants it looks it up with
 * dlsym(RTLD_DEFAULT, "spillway_get_counters"), so that it also runs
 * without spillway. */
#ifndef SPILLWAY_H
#define SPILLWAY_H
#include <stddef.h>
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

/* Why an allocation passed the pool by (index of the arrays below). */
enum spillway_passthrough {
    SPILLWAY_PT_IPC = 0,       /* cuMemCreate asking for a shareable handle type */
    SPILLWAY_PT_MANAGED,       /* cuMemAllocManaged */
    SPILLWAY_PT_CAPTURE,       /* stream-ordered allocation during stream capture */
    SPILLWAY_PT_HOST_LOCATION, /* cuMemCreate on a host location */
    SPILLWAY_PT_DISABLED,      /* the device has no pool (it could not be set up) */
    SPILLWAY_PT_OTHER,         /* special properties (compression, RDMA flags ...) */
    SPILLWAY_PT_ARRAY,         /* a CUDA array or mipmapped array (texture memory) */
    SPILLWAY_PT_COUNT
};

struct spillway_pool_counters {
    uint64_t pool_bytes;    /* device pages the pool holds (0: no pool on the device) */
    uint64_t in_use_bytes;  /* pool memory the program holds (requested sizes) */
    uint64_t pending_bytes; /* freed, waiting for a sync point or an event */
    uint64_t syncs;         /* device synchronizations the pool made */
    uint64_t passthrough_count[SPILLWAY_PT_COUNT]; /* since the start */
    uint64_t passthrough_bytes[SPILLWAY_PT_COUNT];
    /* Spill (SPILLWAY_SPILL): pool pages now in pinned host memory, the
     * pinned host memory the pool holds, and the moves so far (an event is
     * one batch). Freed data keeps its host pages until a sync point (the
     * program's or the pool's) covers the free. */
    uint64_t spilled_bytes;
    uint64_t host_bytes;
    uint64_t spill_bytes, spill_events;
    uint64_t fill_bytes, fill_events;
    /* What the pool holds from the driver besides pages: virtual address
     * space (its arena grows; 0: no pool on the device), its own streams
     * and events. */
    uint64_t va_bytes, streams, events;
};

/* The page pool's view of a device. Returns 0, or -1 for a bad index or
 * before spillway has seen any allocation (all zero then). */
int spillway_get_pool_counters(int device, struct spillway_pool_counters *out);

/* Conditional graph nodes whose bodies spillway holds a record of (made
 * and neither destroyed nor in a destroyed graph): for tests. */
size_t spillway_graph_conditionals(void);

/* TMA descriptors (CUtensorMap) spillway recorded since the process
 * began: each successful cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col,
 * cuTensorMapEncodeIm2colWide and cuTensorMapReplaceAddress that went
 * through it (none with SPILLWAY_DISABLE=1). For tests and the GPU check. */
size_t spillway_tensor_maps(void);

#ifdef __cplusplus
}
#endif
#endif
