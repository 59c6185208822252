/* The driver's graph memory pool against the limit (graph_mem.c). */
#ifndef SPILLWAY_SHIM_GRAPH_MEM_H
#define SPILLWAY_SHIM_GRAPH_MEM_H
#include <cuda.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/limits.h"

/* graphs.c: the devices of e's memory alloc nodes when its launch (or
 * upload) has to settle them (it has some, and was not settled since its
 * instantiation or update, or since a trim of one of their devices), and
 * in bytes_on[dev] for each of them the bytes of its nodes placed there;
 * else 0 (bytes_on untouched), one atomic load while no executable graph
 * has any. uploaded: NULL for an upload, else for a launch, which is not
 * due when it is the first after the upload that settled it: *uploaded is
 * set then (else left alone), and spw_graph_allocs_ran takes it as run
 * once the driver accepted it. */
uint64_t spw_graph_allocs_due(CUgraphExec e, uint64_t bytes_on[SW_MAX_DEVICES], bool *uploaded);
/* e's launch (or upload: !launch) settled it as of trim generation gen
 * (>= 1): not due again until a trim of one of its devices, unless one
 * came after gen. */
void spw_graph_allocs_settled(CUgraphExec e, unsigned gen, bool launch);
/* dev was trimmed, as of trim generation gen: the graphs with alloc nodes
 * on it are due again; those of other devices are not. */
void spw_graph_allocs_trimmed(int dev, unsigned gen);
/* e was launched (the driver accepted the launch): its alloc nodes'
 * allocations may be live (an upload maps their memory but starts none);
 * settled as its upload was, were that its first launch since. */
void spw_graph_allocs_ran(CUgraphExec e);
/* graphs.c: records executable graph e, instantiated from g (its pool
 * pointers, its alloc nodes). */
void spw_graph_record(CUgraphExec e, CUgraph g);
/* graphs.c, for graph_captured.c: whether some executable graph has an
 * alloc node at p; and forgetting e (destroyed), its alloc node addresses
 * in *allocs (the caller frees them) and whether it was ever launched in
 * *ran. */
bool spw_graph_allocs_held(CUdeviceptr p);
size_t spw_graph_forget(CUgraphExec e, CUdeviceptr **allocs, bool *ran);

/* Around a graph launch or upload: before, what its first launch may
 * reserve is held against the limit (0, or OUT_OF_MEMORY: refused, after
 * a trim of the driver's idle graph memory); after, the driver's figure is
 * read and counted instead. */
struct spw_graph_mem_ticket {
    CUgraphExec exec;
    bool launch; /* not an upload; set, like gen, only when devs are */
    bool uploaded; /* the first launch after the upload that settled it */
    unsigned gen;
    uint64_t devs; /* settled after the launch; held[] is read for these only */
    uint64_t held[SW_MAX_DEVICES]; /* held on each device of devs */
};
CUresult spw_graph_mem_before(CUgraphExec e, bool launch, struct spw_graph_mem_ticket *t);
/* stream: the launch's (per_thread: through a _ptsz entry point). */
void spw_graph_mem_after(const struct spw_graph_mem_ticket *t, CUresult r, CUstream stream,
                         int per_thread);

/* Recounts dev after the live captured allocations changed. */
void spw_graph_mem_settle(int dev);

/* A device pointer spillway never counted was freed: a graph allocation
 * a replay made again (its capture's count went with an earlier free),
 * whose memory the graph pool now holds idle on its device (which, the
 * caller cannot tell: each device with graph memory may have some to trim
 * at its limit). One relaxed load while spillway counts none. */
void spw_graph_mem_freed_unknown(void);

/* Before an allocation of bytes on dev spills or is refused: the driver's
 * graph memory no graph uses is given back first (cuDeviceGraphMemTrim)
 * and dev recounted. One relaxed load while spillway counts none. */
extern _Atomic uint64_t spw_graph_mem_idle_devs;
void spw_graph_mem_trim_for(int dev, uint64_t bytes);
static inline void spw_graph_mem_make_room(int dev, uint64_t bytes)
{
    if (dev >= 0 && dev < 64 &&
        (atomic_load_explicit(&spw_graph_mem_idle_devs, memory_order_relaxed) >> dev & 1))
        spw_graph_mem_trim_for(dev, bytes);
}
#endif
