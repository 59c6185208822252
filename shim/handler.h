/* What every handler shares: the pass-through test and the thread-local
 * mark that tells the runtime wrappers (cudart.c) that the driver call they
 * caused was counted. */
#ifndef SPILLWAY_SHIM_HANDLER_H
#define SPILLWAY_SHIM_HANDLER_H
#include "shim/account.h"
#include "shim/config.h"
#include "shim/driver.h"
#include "shim/graph_mem.h"
#include "shim/hooks.h"
#include "shim/pool_setup.h"
#include "shim/publish.h"

/* Set by a runtime wrapper around its call of the real runtime; handlers
 * set counted when they accounted the call, so that the wrapper does not. */
struct spw_rt_guard {
    int active;
    int counted;
};
extern _Thread_local struct spw_rt_guard spw_rt_guard;

static inline void spw_mark_counted(void)
{
    if (spw_rt_guard.active)
        spw_rt_guard.counted = 1;
}

/* The device a context-bound allocation goes to in *dev (-1: one
 * accounting does not track, which passes through). When the driver cannot
 * tell (no current context, or it failed), its error is the allocation's:
 * passing through would allocate memory spillway never counted. */
static inline CUresult spw_alloc_device(int *dev)
{
    CUresult r = spw_driver_ctx_device(dev);
    if (r == CUDA_SUCCESS && (*dev < 0 || !spw_account_tracks(*dev)))
        *dev = -1;
    return r;
}

/* Returns the real function or, if there is none, the error to return. */
#define SPW_REAL_OR_RETURN(var, handler)         \
    __typeof__(spw_real.handler) var = SPW_REAL(handler); \
    if (!var)                                    \
        return CUDA_ERROR_NOT_INITIALIZED

/* Device memory about to be allocated on dev: reserve, call, then commit or
 * give back. The allocation is the expression call (a CUresult) and its key
 * the expression key, read only after success. */
#define SPW_ACCOUNTED_ALLOC(kind, dev, bytes, call, key)                       \
    SPW_RESERVED_CALL(spw_account_reserve, dev, bytes, call,                   \
                      spw_account_commit((kind), (uint64_t)(key), (dev), (bytes)), \
                      spw_account_note_oom(dev))

/* The same for pool pages (cuMemCreate served by the pool): a pool that
 * spills is bounded by itself and the host limit, not the byte count (but
 * by what the program is told when oversubscribed: spw_pool_reserve). */
#define SPW_POOL_ALLOC(kind, dev, bytes, call, key)                            \
    SPW_RESERVED_CALL(spw_pool_reserve, dev, bytes, call,                      \
                      spw_account_commit((kind), (uint64_t)(key), (dev), (bytes)), \
                      spw_account_note_pool_oom((dev), (bytes), (int)sw_refusal_reason()))

/* Takes bytes out of the pool and reserves them in the account for
 * memory outside the pool: 0, or -1 with nothing held. */
static inline int spw_hold_passthrough_now(int dev, int reason, uint64_t bytes)
{
    if (spw_pool_lend(dev, reason, bytes))
        return -1;
    if (spw_account_reserve(dev, bytes)) {
        spw_pool_unlend(dev, reason, bytes);
        return -1;
    }
    return 0;
}

/* The same, the driver's idle graph memory given back first when the
 * limit has no room (graph_mem.h). */
static inline int spw_hold_passthrough(int dev, int reason, uint64_t bytes)
{
    spw_graph_mem_make_room(dev, bytes);
    return spw_hold_passthrough_now(dev, reason, bytes);
}

/* Gives back what spw_hold_passthrough held (the driver refused). */
static inline void spw_drop_passthrough(int dev, int reason, uint64_t bytes)
{
    spw_account_unreserve(dev, bytes);
    spw_pool_unlend(dev, reason, bytes);
}

/* A forgotten entry's memory is gone: its bytes leave the count, and the
 * pages it took out of the pool go back. */
static inline void spw_release_passthrough(int dev, uint64_t bytes, int reason)
{
    spw_account_release_pt(dev, bytes, reason);
    spw_pool_unlend(dev, reason, bytes);
    spw_mark_counted();
}

/* The same as SPW_POOL_ALLOC for memory that passes the pool by, counted
 * with its reason (sw_passthrough_reason) in the policy's counters, the
 * debug log and the stats' pass-through gauges. Device memory takes its
 * pages out of the pool first (spw_pool_lend): the driver gets room the
 * pool held. */
#define SPW_PASSTHROUGH_ALLOC(kind, dev, bytes, reason, what, call, key)                  \
    do {                                                                                  \
        spw_publish_ensure();                                                             \
        if (spw_hold_passthrough((dev), (reason), (bytes)))                               \
            return CUDA_ERROR_OUT_OF_MEMORY;                                              \
        CUresult spw_r_ = (call);                                                         \
        if (spw_r_ == CUDA_SUCCESS) {                                                     \
            spw_account_commit_pt((kind), (uint64_t)(key), (dev), (bytes), (reason));     \
            spw_pool_passthrough((dev), (reason), (bytes), (what));                       \
            spw_mark_counted();                                                           \
            if ((reason) == SW_PT_CAPTURE) /* the graph pool may hold it already */        \
                spw_graph_mem_settle(dev);                                                \
        } else {                                                                          \
            spw_drop_passthrough((dev), (reason), (bytes));                               \
            if (spw_r_ == CUDA_ERROR_OUT_OF_MEMORY)                                       \
                spw_account_note_oom(dev);                                                \
        }                                                                                 \
        return spw_r_;                                                                    \
    } while (0)

/* Host memory the driver has just handed out past the pool (cuMemCreate
 * on a host location, a host memory pool): never refused, counted as host
 * memory under key, and as a pass-through of reason why on device noted
 * (-1: none). */
static inline void spw_host_passthrough(enum spw_kind kind, uint64_t key, uint64_t bytes, int noted,
                                        sw_passthrough_reason why, const char *what)
{
    spw_account_reserve(SPILLWAY_HOST, bytes);
    spw_account_commit_pt(kind, key, SPILLWAY_HOST, bytes, why);
    spw_pool_passthrough(noted, why, bytes, what);
    spw_mark_counted();
}

/* All of the above: reserve bytes on dev (reserve: spw_account_reserve
 * or spw_pool_reserve), make the call, then settle (the statement
 * committed) or give the reservation back (and on out-of-memory run the
 * statement refused, which counts it by reason). */
#define SPW_RESERVED_CALL(reserve, dev, bytes, call, committed, refused) \
    do {                                                                 \
        spw_publish_ensure();                                            \
        if (reserve((dev), (bytes)))                                     \
            return CUDA_ERROR_OUT_OF_MEMORY;                             \
        CUresult spw_r_ = (call);                                        \
        if (spw_r_ == CUDA_SUCCESS) {                                    \
            committed;                                                   \
            spw_mark_counted();                                          \
        } else {                                                         \
            spw_account_unreserve((dev), (bytes));                       \
            if (spw_r_ == CUDA_ERROR_OUT_OF_MEMORY)                      \
                refused;                                                 \
        }                                                                \
        return spw_r_;                                                   \
    } while (0)

/* A free of key: forget it first (so that a new allocation the driver
 * gives the same key cannot be confused with it), call, then release (and
 * give pass-through bytes back to the pool), or restore the entry if the
 * driver refused. */
#define SPW_ACCOUNTED_FREE(kind, key, call)                                   \
    do {                                                                      \
        int spw_dev_, spw_why_;                                               \
        uint64_t spw_bytes_;                                                  \
        int spw_known_ = spw_account_forget_pt((kind), (uint64_t)(key), &spw_dev_, \
                                               &spw_bytes_, &spw_why_) == 0;  \
        CUresult spw_r_ = (call);                                             \
        if (spw_known_) {                                                     \
            if (spw_r_ == CUDA_SUCCESS) {                                     \
                spw_release_passthrough(spw_dev_, spw_bytes_, spw_why_);      \
                if (spw_why_ == SW_PT_CAPTURE) /* still the graph pool's? */  \
                    spw_graph_mem_settle(spw_dev_);                           \
            } else {                                                          \
                spw_account_restore_pt((kind), (uint64_t)(key), spw_dev_, spw_bytes_, \
                                       spw_why_);                             \
            }                                                                 \
        } else if ((kind) == SPW_KIND_DEVPTR && spw_r_ == CUDA_SUCCESS) {     \
            spw_graph_mem_freed_unknown(); /* a graph allocation a replay made? */ \
        }                                                                     \
        return spw_r_;                                                        \
    } while (0)
#endif
