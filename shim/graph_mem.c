/* The driver's graph memory pool, counted against the limit. A graph's
 * memory alloc nodes (made by hand or by cuMemAllocAsync in a capture) get
 * physical memory at the graph's first launch or upload; the driver keeps
 * it reserved across launches, after the graph frees it and after the
 * graph is destroyed, until cuDeviceGraphMemTrim (CUDA programming guide,
 * "Graph Memory Nodes"). That memory is the device's as much as any
 * allocation's, so spillway counts it as pass-through memory (reason
 * "capture", taken out of the pool's pages like the rest), as the driver
 * reports it: CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT.
 *
 * Captured allocations are counted already, from their capture to their
 * free (alloc_async.c), and those a launch backed are inside the reserved
 * figure: what is counted here is reserved - captured live (never below
 * 0), so that graph memory counts max(reserved, captured live): never less
 * than the driver holds, no byte twice. (USED_MEM_CURRENT cannot tell
 * which captured allocations are backed: it moves when the GPU reaches an
 * alloc node, after the launch call.)
 *
 * When: around the launches and uploads of an executable graph with alloc
 * nodes, the first since it was instantiated or updated and the first
 * after each trim of a device it allocates on (a replay reuses what is
 * reserved: nothing to read, one lookup; another device's trim leaves its
 * memory where it was), and after a captured allocation comes or goes.
 * Before such a launch, what it may reserve is held against the limit,
 * so that a launch the limit has no room for is refused
 * (CUDA_ERROR_OUT_OF_MEMORY) instead of passing it; after it, the driver's
 * figure replaces the guess. Should the driver reserve more than the room
 * there is, it is counted anyway (the figures stay true) and a warning
 * says so.
 *
 * Before an allocation spills or is refused on a device where the graph
 * pool holds memory no graph uses, that memory is trimmed first: the
 * driver's idle memory is the cheapest to give back. A program's own trim
 * is recounted. cuDeviceGetGraphMemAttribute stays the driver's. */
#include "shim/graph_mem.h"

#include "shim/capture.h"
#include "shim/handler.h"
#include "shim/log.h"
#include "shim/size_text.h"
#include "policy/limits.h"

#include <pthread.h>
#include <stdlib.h>

#define DEVS SW_MAX_DEVICES
_Static_assert(DEVS <= 64, "a device is a bit of a 64-bit mask here");
#define WHY SW_PT_CAPTURE

_Atomic uint64_t spw_graph_mem_idle_devs;
static _Atomic uint64_t active_devs; /* reserved or counted: captures recount */
static _Atomic unsigned generation = 1; /* trims so far, + 1 */

/* dev was trimmed: its graphs are due again at their next launch (those
 * of other devices are not: their memory is where it was). */
static void trimmed(int dev)
{
    spw_graph_allocs_trimmed(dev, atomic_fetch_add_explicit(&generation, 1, memory_order_relaxed) + 1);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint64_t counted; /* committed as pass-through */
    uint64_t forced;  /* the part of it the pool could not lend */
    uint64_t reserved, used; /* the driver's figures, last read */
    bool warned;
} devs[DEVS];

static void set_bit(_Atomic uint64_t *m, int dev, bool on)
{
    if (on)
        atomic_fetch_or_explicit(m, 1ull << dev, memory_order_relaxed);
    else
        atomic_fetch_and_explicit(m, ~(1ull << dev), memory_order_relaxed);
}

static bool read_figures(int dev, uint64_t *reserved, uint64_t *used)
{
    cuuint64_t r = 0, u = 0;
    if (!spw_drv.cuDeviceGetGraphMemAttribute ||
        spw_drv.cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r) !=
            CUDA_SUCCESS ||
        spw_drv.cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &u) != CUDA_SUCCESS)
        return false;
    *reserved = r;
    *used = u;
    return true;
}

/* Live captured allocations of dev: the capture gauge less what is ours. */
static uint64_t captured_locked(int dev)
{
    uint64_t all = spw_account_pt_bytes(dev, WHY);
    return all > devs[dev].counted ? all - devs[dev].counted : 0;
}

static void grow_locked(int dev, uint64_t grow, uint64_t in_hand)
{
    uint64_t use = grow < in_hand ? grow : in_hand, extra = grow - use;
    if (extra && spw_hold_passthrough_now(dev, WHY, extra)) { /* under lock: no trim */
        spw_account_add(dev, extra); /* the driver's already: counted, past the limit */
        devs[dev].forced += extra;
        char b[SPW_SIZE_TEXT_MAX];
        if (!devs[dev].warned)
            spw_warn("device %d: the driver's graph memory pool reserved %s more than "
                     "the limit has room for (counted; cuDeviceGraphMemTrim gives it back)",
                     dev, spw_size_text(b, sizeof b, extra));
        devs[dev].warned = true;
    }
    spw_account_commit_unkeyed_pt(dev, grow, WHY);
    if (in_hand > use)
        spw_drop_passthrough(dev, WHY, in_hand - use);
}

static void shrink_locked(int dev, uint64_t shrink)
{
    uint64_t f = shrink < devs[dev].forced ? shrink : devs[dev].forced;
    devs[dev].forced -= f;
    if (f) { /* never lent: only the count goes */
        spw_account_release_pt(dev, f, WHY);
        spw_mark_counted();
    }
    if (shrink > f)
        spw_release_passthrough(dev, shrink - f, WHY);
}

/* Counts what the driver reserves now; in_hand: bytes held for it before a
 * launch (spw_hold_passthrough), used or given back here; trimmed: right
 * after a trim. */
static void settle_locked(int dev, uint64_t in_hand, bool trimmed)
{
    uint64_t reserved, used;
    if (!read_figures(dev, &reserved, &used)) {
        if (in_hand)
            spw_drop_passthrough(dev, WHY, in_hand);
        return;
    }
    uint64_t cap = captured_locked(dev);
    uint64_t target = reserved > cap ? reserved - cap : 0, counted = devs[dev].counted;
    if (target > counted) {
        grow_locked(dev, target - counted, in_hand);
    } else {
        if (in_hand)
            spw_drop_passthrough(dev, WHY, in_hand);
        if (counted > target)
            shrink_locked(dev, counted - target);
    }
    devs[dev].counted = target;
    devs[dev].reserved = reserved;
    devs[dev].used = used;
    set_bit(&active_devs, dev, reserved || target);
    /* Whether a trim may give some back: right after a launch the driver's
     * used figure lags (it moves as the GPU reaches the nodes), so any;
     * after a trim, what it left is in use until the next launch. */
    set_bit(&spw_graph_mem_idle_devs, dev, target && (!trimmed || reserved > used));
    spw_pool_publish(dev); /* the pages lent or given back */
}

static bool counted_dev(int dev)
{
    return dev >= 0 && dev < DEVS && spw_account_tracks(dev);
}

void spw_graph_mem_settle(int dev)
{
    if (!counted_dev(dev) || !(atomic_load_explicit(&active_devs, memory_order_relaxed) >> dev & 1))
        return;
    pthread_mutex_lock(&lock);
    settle_locked(dev, 0, false);
    pthread_mutex_unlock(&lock);
}

void spw_graph_mem_freed_unknown(void)
{
    uint64_t active = atomic_load_explicit(&active_devs, memory_order_relaxed);
    if (active)
        atomic_fetch_or_explicit(&spw_graph_mem_idle_devs, active, memory_order_relaxed);
}

static void trim(int dev)
{
    if (!spw_drv.cuDeviceGraphMemTrim || spw_drv.cuDeviceGraphMemTrim(dev) != CUDA_SUCCESS)
        return;
    trimmed(dev);
    pthread_mutex_lock(&lock);
    settle_locked(dev, 0, true);
    pthread_mutex_unlock(&lock);
}

/* Whether bytes more on dev would pass the limit: the pool would spill or
 * refuse. */
static bool at_limit(int dev, uint64_t bytes)
{
    sw_policy *p = spw_pool_policy();
    uint64_t held = p ? sw_held_bytes(p, dev) : spw_account_used(dev), limit = spw_limit(dev);
    return held > limit || bytes > limit - held;
}

void spw_graph_mem_trim_for(int dev, uint64_t bytes)
{
    if (counted_dev(dev) && at_limit(dev, bytes)) {
        spw_debug("device %d: giving back the driver's idle graph memory before %llu bytes",
                  dev, (unsigned long long)bytes);
        trim(dev);
    }
}

/* What a first launch of a graph with bytes of alloc nodes may add to dev's
 * count, max(reserved, captured): at most bytes more reserved. (The driver
 * may reuse idle reserved memory instead: the launch's settle then gives
 * the difference back.) */
static uint64_t may_add(int dev, uint64_t bytes)
{
    pthread_mutex_lock(&lock);
    uint64_t r = devs[dev].reserved, cap = captured_locked(dev);
    pthread_mutex_unlock(&lock);
    uint64_t now = r > cap ? r : cap, then = r + bytes > cap ? r + bytes : cap;
    return then - now;
}

CUresult spw_graph_mem_before(CUgraphExec e, bool launch, struct spw_graph_mem_ticket *t)
{
    t->exec = e;
    t->devs = 0;
    t->uploaded = false;
    /* first: one load on a replay; held[] is written only when due */
    uint64_t on = spw_graph_allocs_due(e, t->held, launch ? &t->uploaded : NULL);
    if (!on || spw_disabled())
        return CUDA_SUCCESS;
    t->launch = launch;
    spw_publish_ensure();
    /* Each device is held what the nodes placed on it may add. */
    for (int dev = 0; dev < DEVS; dev++) {
        if (!(on >> dev & 1) || !counted_dev(dev))
            continue;
        uint64_t need = may_add(dev, t->held[dev]);
        t->held[dev] = need;
        if (need && spw_hold_passthrough(dev, WHY, need)) { /* trims first */
            spw_graph_mem_after(t, CUDA_ERROR_OUT_OF_MEMORY, NULL, 0); /* what the others hold */
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        t->devs |= 1ull << dev;
    }
    /* The launch comes after any trim the holds made room with: settled as
     * of that generation, or every replay would be due again (and trim its
     * own idle memory, which the driver then maps again). */
    t->gen = atomic_load_explicit(&generation, memory_order_relaxed);
    return CUDA_SUCCESS;
}

/* After a launch or upload that was due. Not inlined: a replay's after
 * would set up its frame. */
__attribute__((noinline)) static void settle_due(const struct spw_graph_mem_ticket *t, CUresult r, CUstream stream,
                       int per_thread)
{
    /* A launch into a capture reserves nothing (it becomes a child graph
     * node): settled unless its own stream captures (another stream's
     * capture leaves it a launch, or each replay during the capture would
     * be held again, and at the limit trim the graph's own idle memory). */
    if (r == CUDA_SUCCESS && (!spw_capture_active() || spw_capture_not_in(stream, per_thread)))
        spw_graph_allocs_settled(t->exec, t->gen, t->launch);
    /* Its allocations may be live from now on (graph_captured.c): into a
     * capture too, conservatively. Not after an upload: "the lifetime of
     * an allocation begins when GPU execution reaches the allocating graph
     * node" (programming guide), and the program cannot free one that did
     * not begin. */
    if (r == CUDA_SUCCESS && t->launch)
        spw_graph_allocs_ran(t->exec);
    for (int dev = 0; dev < DEVS; dev++)
        if (t->devs >> dev & 1) {
            pthread_mutex_lock(&lock);
            settle_locked(dev, t->held[dev], false);
            pthread_mutex_unlock(&lock);
        }
}

void spw_graph_mem_after(const struct spw_graph_mem_ticket *t, CUresult r, CUstream stream,
                         int per_thread)
{
    /* Apart, so that a replay (nothing due) costs a test or two. */
    if (t->devs)
        settle_due(t, r, stream, per_thread);
    else if (t->uploaded && r == CUDA_SUCCESS) /* a launch refused ran nothing */
        spw_graph_allocs_ran(t->exec);
}

#define UPLOAD_HANDLER(handler, per_thread)                       \
    CUresult handler(CUgraphExec hGraphExec, CUstream hStream)    \
    {                                                             \
        SPW_REAL_OR_RETURN(real, handler);                        \
        struct spw_graph_mem_ticket t;                            \
        CUresult r = spw_graph_mem_before(hGraphExec, false, &t); \
        if (r != CUDA_SUCCESS)                                    \
            return r;                                             \
        r = real(hGraphExec, hStream);                            \
        spw_graph_mem_after(&t, r, hStream, per_thread);          \
        return r;                                                 \
    }
UPLOAD_HANDLER(spw_h_graph_upload, 0)
UPLOAD_HANDLER(spw_h_graph_upload_pt, 1)

CUresult spw_h_device_graph_mem_trim(CUdevice device)
{
    SPW_REAL_OR_RETURN(real, spw_h_device_graph_mem_trim);
    CUresult r = real(device);
    if (r != CUDA_SUCCESS || spw_disabled() || !counted_dev(device))
        return r;
    trimmed(device);
    pthread_mutex_lock(&lock);
    settle_locked(device, 0, true);
    pthread_mutex_unlock(&lock);
    return r;
}

/* CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD uploads the graph into the params'
 * stream after the instantiation, which reserves its alloc nodes' memory
 * in the graph pool (cuGraphUpload's doing, documented as the same): done
 * as an instantiation and then spillway's upload (above), so that
 * the reservation is held against the limit (refused without room) and
 * counted from then on, not from the first launch. An upload that fails
 * leaves no executable graph behind, the instantiation's result an error. */
static CUresult instantiate_then_upload(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p,
                                        __typeof__(spw_real.spw_h_graph_instantiate_with_params) real,
                                        CUresult (*upload)(CUgraphExec, CUstream))
{
    CUDA_GRAPH_INSTANTIATE_PARAMS plain = *p;
    plain.flags &= ~(cuuint64_t)CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    CUresult r = real(out, g, &plain);
    p->hErrNode_out = plain.hErrNode_out;
    p->result_out = plain.result_out;
    if (r != CUDA_SUCCESS)
        return r;
    spw_graph_record(*out, g);
    r = upload(*out, p->hUploadStream);
    if (r != CUDA_SUCCESS) { /* never ran, its graph the program's: nothing to settle */
        CUdeviceptr *allocs;
        bool ran;
        spw_graph_forget(*out, &allocs, &ran);
        free(allocs);
        __typeof__(spw_real.spw_h_graph_exec_destroy) destroy = SPW_REAL(spw_h_graph_exec_destroy);
        if (destroy)
            destroy(*out);
        p->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
    }
    return r;
}

#define WITH_PARAMS(handler, upload)                                                      \
    CUresult handler(CUgraphExec *phGraphExec, CUgraph hGraph,                            \
                     CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)                    \
    {                                                                                     \
        SPW_REAL_OR_RETURN(real, handler);                                                \
        if (phGraphExec && instantiateParams &&                                           \
            (instantiateParams->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) &&            \
            !spw_disabled())                                                              \
            return instantiate_then_upload(phGraphExec, hGraph, instantiateParams, real,  \
                                           upload);                                       \
        CUresult r = real(phGraphExec, hGraph, instantiateParams);                        \
        if (r == CUDA_SUCCESS && phGraphExec)                                             \
            spw_graph_record(*phGraphExec, hGraph);                                       \
        return r;                                                                         \
    }
WITH_PARAMS(spw_h_graph_instantiate_with_params, spw_h_graph_upload)
WITH_PARAMS(spw_h_graph_instantiate_with_params_pt, spw_h_graph_upload_pt)
