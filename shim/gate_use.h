/* The work gate (policy.h, "spill, fill and the work gate") as the handlers
 * that submit device work use it: launches and graph launches (launch.c),
 * sets (memset.c), copies (copy.c), 2D/3D, peer and batch copies and 2D
 * sets (copy2d.c), stream memory operations, prefetches, discards,
 * attachments, host functions and callbacks (streamops.c): every one is
 * SPW_GATED_HANDLERS below.
 *
 * A page's residency may change only while no submission is in flight
 * (docs/design.md, "The remap hazard": an unmap racing work kills the
 * context), so each submission runs between sw_work_begin and
 * sw_work_end. Its spillway
 * pointers are touched first (they become the last to spill) and filled
 * back when they live on the host: before the bracket, because a fill
 * waits for the brackets in progress and would wait for itself.
 *
 * Nothing of this runs unless some device's pool spills: the handlers ask
 * spw_gate() once (one atomic load) and otherwise forward untouched. */
#ifndef SPILLWAY_SHIM_GATE_USE_H
#define SPILLWAY_SHIM_GATE_USE_H
#include "policy/policy.h"
#include "shim/arenas.h"
#include "shim/pool_range.h"
#include "shim/pool_setup.h"

#include <stdatomic.h>
#include <stdint.h>

/* The policy, once some device's pool spills (pool_setup.h); else NULL and the
 * handlers forward untouched. */
static inline sw_policy *spw_gate(void)
{
    return atomic_load_explicit(&spw_pool_spilling, memory_order_acquire);
}

/* The submission is about to use ptr: touch it, and fill its allocation
 * back to device memory if some of it lives on the host. Never between
 * sw_work_begin and sw_work_end. Returns whether a fill was asked for. */
int spw_gate_use(sw_policy *p, CUdeviceptr ptr);
/* The same for a side whose size is known (copies, sets): bytes > 0 tells
 * the policy where the buffer ends. */
int spw_gate_use_range(sw_policy *p, CUdeviceptr ptr, size_t bytes);
/* The fill half of it, for a pointer sw_touch answered true for. */
void spw_gate_fill(sw_policy *p, CUdeviceptr ptr);

/* After one or more fills: the stats' spill gauges of every spilling
 * device (which one a pointer was on would cost a lookup). */
void spw_gate_filled(void);

/* spw_gate_use_range for the (up to two) device sides of a copy or set of
 * bytes; 0 is no side. A copy or set of 0 bytes touches no memory: nothing
 * to touch or fill (still gated). */
static inline void spw_gate_use2(sw_policy *p, CUdeviceptr a, CUdeviceptr b, size_t bytes)
{
    if (!bytes)
        return;
    int filled = 0;
    if (a)
        filled |= spw_gate_use_range(p, a, bytes);
    if (b && b != a)
        filled |= spw_gate_use_range(p, b, bytes);
    if (filled)
        spw_gate_filled();
}

/* A graph launch about to run exec on the device whose gate is runs_on
 * (its stream's): touches (and fills back) the pool pointers its nodes use
 * (graphs.c); returns the devices for its bracket (runs_on and those
 * pointers'). */
uint64_t spw_graph_use(sw_policy *g, CUgraphExec exec, uint64_t runs_on);

/* The calling thread's current context, and a launch's stream's context,
 * kept when it is a context the program made (contexts.h), so that a move's
 * sync covers its work: once per thread and context (a thread-local
 * compare otherwise). Before the bracket. */
void spw_gate_note_context(void);
void spw_gate_note_stream(CUstream s);

/* The device of the calling thread's current context, or -1 when there is
 * none (or it is past SW_MAX_DEVICES). */
int spw_current_device(void);

/* The device work on stream s runs on: the stream's context's, which need
 * not be the current one (a context-less kernel, CUkernel, "will either be
 * taken from the specified stream or the current context in case of NULL
 * stream"), as spw_driver_stream_device finds it; the current context's
 * for the NULL, legacy and per-thread streams, or when the driver cannot
 * tell. -1: none. */
int spw_stream_device(CUstream s);

/* The gate of that device (0: none): a launch's bracket. */
uint64_t spw_gate_stream_devices(CUstream s);

/* The devices a submission runs on or reads: the current context's, and
 * the pool devices of the (up to two, 0: none) pointers it names. Work on
 * a device that can reach another's pages (peer access) is covered by
 * that device's gate: a move closes the gates of every device that can
 * reach its pages (policy's sw_reach), and so does work that named them
 * from another device without peer access (a copy queued on that device's
 * stream: sw_note_work). */
uint64_t spw_gate_devices(CUdeviceptr a, CUdeviceptr b);
/* The gate of pointer p's pool device (0: none), noting that work running
 * on devices `on` and `also` (-1: none) names it, as spw_gate_devices does
 * for the current context's. */
uint64_t spw_gate_side_on(CUdeviceptr p, int on, int also);

/* The same for work queued on stream s, which runs on s's device
 * (spw_stream_device) rather than the current context's: a copy may be
 * issued to a stream of another device ("a memory copy will succeed even
 * if it is issued to a stream that is not associated to the current
 * device", CUDA programming guide), and a move of the pages it names must
 * then close and sync that device. Also notes s's context (a context the
 * program made need not be current). Before the bracket. */
uint64_t spw_gate_devices_on(CUstream s, CUdeviceptr a, CUdeviceptr b);

/* r = call, bracketed on the gates of devices when g (a spw_gate()
 * answer) is not NULL. */
#define SPW_GATED_CALL(g, devices, r, call) \
    do {                                    \
        if (g)                              \
            sw_work_begin((g), (devices));  \
        (r) = (call);                       \
        if (g)                              \
            sw_work_end(g);                 \
    } while (0)

/* Up to SPW_MAX_SIDES pointers one submission names (2D copies, batches,
 * stream memory operations): each touched and filled back before the
 * bracket; a submission naming more has the rest only gated: their pool
 * devices are kept in `more`, so that the bracket holds their gates and
 * their moves sync the device the work runs on, as for the first ones.
 * Every side whose extent is known, past p too, has its range checked as
 * it is added (pool_range.h): a batch of any length is refused as the
 * driver alone refuses it, with the operation it names (a batch's failIdx). */
#define SPW_MAX_SIDES 64
typedef struct spw_sides {
    CUdeviceptr p[SPW_MAX_SIDES];
    size_t bytes[SPW_MAX_SIDES]; /* what the side reaches from p (0: not known) */
    unsigned n;
    uint64_t more;     /* the pool devices of the sides past p */
    size_t op;         /* the batch operation whose sides are being added */
    CUresult refused;  /* the first side's range refusal (0: none) */
    size_t refused_op; /* the operation of that side */
} spw_sides;

/* No sides yet. Only p[] and bytes[] below n are ever read: the rest
 * (1 KiB) is left as it is rather than cleared on every submission. */
static inline void spw_sides_init(spw_sides *s)
{
    s->n = 0;
    s->more = 0;
    s->op = 0;
    s->refused = CUDA_SUCCESS;
    s->refused_op = 0;
}

/* The pool device of a side p (-1: none): its arena's (a few compares),
 * else the device of the pool page mapped there (a program mapping on pool
 * pages, as JAX's arena, lies in no arena). */
static inline int spw_side_pool_device(CUdeviceptr p)
{
    int d = spw_arena_device(p);
    return d >= 0 ? d : sw_page_device(spw_pool_policy(), p);
}

/* A side whose extent is known: bytes from p on (spw_gate_use_range). */
static inline void spw_side_range(spw_sides *s, CUdeviceptr p, size_t bytes)
{
    if (!p)
        return;
    if (bytes && !s->refused && (s->refused = spw_pool_range_check(p, bytes)) != CUDA_SUCCESS)
        s->refused_op = s->op;
    if (s->n < SPW_MAX_SIDES) {
        s->bytes[s->n] = bytes;
        s->p[s->n++] = p;
        return;
    }
    int d = spw_side_pool_device(p);
    if (d >= 0 && d < SW_MAX_DEVICES)
        s->more |= 1ull << d;
}

static inline void spw_side(spw_sides *s, CUdeviceptr p)
{
    spw_side_range(s, p, 0);
}

/* The memory a stream memory operation names: *addr, and the 4 or 8 bytes
 * of its value there; 0 for one that names none (a flush, a barrier). */
static inline size_t spw_memop_reach(const CUstreamBatchMemOpParams *op, CUdeviceptr *addr)
{
    switch (op->operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        *addr = op->waitValue.address;
        return op->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? 4 : 8;
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        *addr = op->writeValue.address;
        return op->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? 4 : 8;
    default:
        *addr = 0;
        return 0;
    }
}

/* The sides of n stream memory operations (cuStreamBatchMemOp, or a batch
 * memory operation node's, which cuda.h sends to it "for what these nodes
 * can do"): each value's range is checked as a copy's (a write to a freed
 * pool allocation would land in whatever the pool put there since). A
 * count of 256 or more the driver refuses ("must be less than 256"): such
 * an array is not read at all. */
#define SPW_MEMOPS_MAX 256
static inline void spw_memop_sides(spw_sides *s, const CUstreamBatchMemOpParams *ops, unsigned n)
{
    for (unsigned i = 0; ops && n < SPW_MEMOPS_MAX && i < n; i++) {
        CUdeviceptr a;
        size_t bytes = spw_memop_reach(&ops[i], &a);
        if (bytes)
            spw_side_range(s, a, bytes);
    }
}

/* Touches and fills back the sides of work queued on stream (NULL for a
 * synchronous call); returns the devices for the bracket (the stream's, as
 * spw_gate_devices_on, and the sides'). */
uint64_t spw_gate_use_sides(sw_policy *g, const spw_sides *s, CUstream stream);

/* One gated handler and its per-thread variant, the shape of every
 * submission: handler (hooks.def), its parameters and the forwarded
 * arguments; check, statements run first whatever the pool, which may
 * return the driver's refusal of a range in pool memory (pool_range.h)
 * with r; use, statements run before the bracket when some pool spills
 * (g is the policy) that touch and fill back what the submission names and
 * set `devices` to the devices it may reach (and a launch `runs_on`, the
 * gate of the device it runs on, which its count reuses); result, what the
 * handler returns (r: the driver's answer). Without a spilling pool: one
 * atomic load and the check, then the driver. */
#define SPW_CHECKED_HANDLER(handler, params, args, check, use, result) \
    CUresult handler params                                             \
    {                                                                   \
        SPW_REAL_OR_RETURN(real, handler);                              \
        CUresult r = CUDA_SUCCESS;                                      \
        check;                                                          \
        sw_policy *g = spw_gate();                                      \
        uint64_t devices = 0, runs_on = 0;                              \
        (void)runs_on;                                                  \
        if (g) {                                                        \
            use;                                                        \
            spw_gate_note_context();                                    \
        }                                                               \
        SPW_GATED_CALL(g, devices, r, real args);                       \
        return result;                                                  \
    }
#define SPW_CHECKED_HANDLERS(handler, params, args, check, use, result) \
    SPW_CHECKED_HANDLER(handler, params, args, check, use, result)      \
    SPW_CHECKED_HANDLER(handler##_pt, params, args, check, use, result)
#define SPW_GATED_HANDLER(handler, params, args, use, result) \
    SPW_CHECKED_HANDLER(handler, params, args, (void)0, use, result)
#define SPW_GATED_HANDLERS(handler, params, args, use, result) \
    SPW_CHECKED_HANDLERS(handler, params, args, (void)0, use, result)

/* The check of one copy or set: each of two device pointers (0: none)
 * with the bytes it reaches. */
#define SPW_RANGES_CHECK(a, b, bytes)                                          \
    do {                                                                       \
        if ((r = spw_pool_range_check((a), (bytes))) != CUDA_SUCCESS ||        \
            (r = spw_pool_range_check((b), (bytes))) != CUDA_SUCCESS)          \
            return r;                                                          \
    } while (0)

/* The same for a submission on stream (NULL: a synchronous call) whose
 * pointers collect adds to the sides s (spw_side(s, p)), refused first
 * when a side's range was (spw_side_range), the refused operation's index
 * then stored through fail_idx when it is not NULL (a batch's failIdx, as
 * the driver sets it); _THEN: returning result instead of the driver's
 * answer r (a counting step that returns r). */
#define SPW_SIDES_HANDLERS_FAIL(handler, params, args, stream, collect, result, fail_idx)           \
    SPW_CHECKED_HANDLERS(handler, params, args,                                                    \
                         spw_sides s_; spw_sides *s = &s_; spw_sides_init(s); collect;             \
                         if ((r = s->refused) != CUDA_SUCCESS) {                                   \
                             size_t *fail_ = (fail_idx);                                           \
                             if (fail_)                                                            \
                                 *fail_ = s->refused_op;                                           \
                             return r;                                                             \
                         },                                                                        \
                         devices = spw_gate_use_sides(g, s, (stream)), result)
#define SPW_SIDES_HANDLERS_THEN(handler, params, args, stream, collect, result) \
    SPW_SIDES_HANDLERS_FAIL(handler, params, args, stream, collect, result, NULL)
#define SPW_SIDES_HANDLERS(handler, params, args, stream, collect) \
    SPW_SIDES_HANDLERS_THEN(handler, params, args, stream, collect, r)
#endif
