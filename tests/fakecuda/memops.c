/* fakecuda: stream memory operations (cuStreamWriteValue32/64,
 * cuStreamWaitValue32/64, cuStreamBatchMemOp), in CUDA 8's ABI (the
 * symbols without suffix, still exported by the driver) and CUDA 11.7's
 * (_v2), each with its _ptsz variant; both ABIs take the same arguments.
 * As the driver documents them: the address is device memory or pinned
 * host memory, aligned to the value's size; a write stores the value in
 * stream order; a wait holds the stream until the condition (GEQ, cyclic
 * on 32 bits; EQ; AND; NOR) holds on the memory. Flags the driver refuses
 * are refused. The same checks and the same running serve batch memory
 * operation nodes (graph_memop.c). On a capturing stream each call
 * becomes one batch memory operation node (CU_GRAPH_NODE_TYPE_BATCH_MEM_OP)
 * of its operations as given, in the stream's context, flags 0: its values
 * are replayed as captured at every launch. The reference says nothing of
 * it; the real driver's users rely on it (NCCL's CE collectives and RMA,
 * src/ce_coll.cc and src/rma/rma_ce.cc, issue cuStreamBatchMemOp on the
 * capturing stream of a graph-captured plan, a reset write after each wait
 * because the captured values replay; programs count one such node per
 * call in their captured graphs: tests/gpu/README.md, item 22). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fakecuda/graph.h"

struct memop {
    CUstreamBatchMemOpType type;
    void *addr;
    uint64_t value;
    unsigned flags;
    unsigned width; /* 4 or 8 */
};

struct memop_batch {
    unsigned n;
    struct memop op[];
};

static uint64_t load(const struct memop *m)
{
    return m->width == 4 ? __atomic_load_n((uint32_t *)m->addr, __ATOMIC_ACQUIRE)
                         : __atomic_load_n((uint64_t *)m->addr, __ATOMIC_ACQUIRE);
}

static int wait_done(const struct memop *m)
{
    uint64_t v = load(m);
    switch (m->flags & 0xf) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        return m->width == 4 ? (int32_t)((uint32_t)v - (uint32_t)m->value) >= 0
                             : (int64_t)(v - m->value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
        return v == m->value;
    case CU_STREAM_WAIT_VALUE_AND:
        return (v & m->value) != 0;
    default: /* NOR */
        return ~(v | m->value) != 0;
    }
}

static void run_one(const struct memop *m)
{
    if (m->type == CU_STREAM_MEM_OP_WRITE_VALUE_32)
        __atomic_store_n((uint32_t *)m->addr, (uint32_t)m->value, __ATOMIC_RELEASE);
    else if (m->type == CU_STREAM_MEM_OP_WRITE_VALUE_64)
        __atomic_store_n((uint64_t *)m->addr, m->value, __ATOMIC_RELEASE);
    else
        while (!wait_done(m)) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
}

static void run_batch(void *arg)
{
    struct memop_batch *b = arg;
    for (unsigned i = 0; i < b->n; i++)
        run_one(&b->op[i]);
    free(b);
}

static bool addr_ok(uintptr_t a, unsigned width)
{
    if (!a || a % width)
        return false;
    pthread_mutex_lock(&fc_lock);
    bool ok = fc_device_range_ok(a, width) || fc_is_pinned_host(a);
    pthread_mutex_unlock(&fc_lock);
    return ok;
}

/* What one operation does; false for one that names no memory (flushes,
 * barriers), which fakecuda does not emulate. */
static bool decode(const CUstreamBatchMemOpParams *p, struct memop *out)
{
    switch (p->operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64: {
        unsigned w = p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? 4 : 8;
        *out = (struct memop){p->operation, (void *)p->waitValue.address,
                              w == 4 ? p->waitValue.value : p->waitValue.value64, p->waitValue.flags, w};
        return true;
    }
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64: {
        unsigned w = p->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? 4 : 8;
        *out = (struct memop){p->operation, (void *)p->writeValue.address,
                              w == 4 ? p->writeValue.value : p->writeValue.value64, p->writeValue.flags, w};
        return true;
    }
    default:
        return false;
    }
}

/* One operation, checked: CUDA_ERROR_INVALID_VALUE for what the driver
 * refuses. */
static CUresult check(const CUstreamBatchMemOpParams *p)
{
    struct memop m;
    if (!decode(p, &m))
        return CUDA_ERROR_NOT_SUPPORTED; /* flushes, barriers: not emulated */
    bool wait = m.type == CU_STREAM_MEM_OP_WAIT_VALUE_32 || m.type == CU_STREAM_MEM_OP_WAIT_VALUE_64;
    bool flags_ok = wait ? !(m.flags & ~(0xfu | CU_STREAM_WAIT_VALUE_FLUSH)) &&
                               (m.flags & 0xf) <= CU_STREAM_WAIT_VALUE_NOR
                         : !(m.flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER);
    return flags_ok && addr_ok((uintptr_t)m.addr, m.width) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult fc_memops_check(const CUstreamBatchMemOpParams *ops, unsigned count)
{
    if (!count || count >= FC_MEMOPS_MAX || !ops)
        return CUDA_ERROR_INVALID_VALUE; /* "count ... Must be less than 256" */
    for (unsigned i = 0; i < count; i++) {
        CUresult r = check(&ops[i]);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

void fc_memops_run(const CUstreamBatchMemOpParams *ops, unsigned count)
{
    struct memop m;
    for (unsigned i = 0; i < count; i++)
        if (decode(&ops[i], &m))
            run_one(&m);
}

struct fc_use fc_memop_use(const CUstreamBatchMemOpParams *op)
{
    struct memop m;
    bool named = decode(op, &m);
    return (struct fc_use){{named ? (uintptr_t)m.addr : 0, 0}, {named ? m.width : 0, 0}};
}

/* The node a capture makes of a checked batch on s: its operations copied
 * (the caller's array is the caller's again when the call returns); NULL
 * when out of memory. */
static struct CUgraphNode_st *captured(struct CUstream_st *s, const CUstreamBatchMemOpParams *ops,
                                       unsigned count)
{
    struct fc_memop_node m, in = {(CUstreamBatchMemOpParams *)ops, count, 0, fc_stream_ctx(s)};
    if (fc_memop_node_copy(&m, &in) != CUDA_SUCCESS)
        return NULL;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
    if (n)
        n->u.memop = m;
    else
        fc_memop_node_free(&m);
    return n;
}

static CUresult batch(CUstream h, unsigned count, const CUstreamBatchMemOpParams *ops,
                      unsigned flags, bool ptsz)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = fc_memops_check(ops, count)) != CUDA_SUCCESS)
        return r;
    bool capturing = false;
    if ((r = fc_capture_enter(s, &capturing)) != CUDA_SUCCESS)
        return r;
    if (capturing)
        return fc_capture_add(s, captured(s, ops, count));
    struct memop_batch *b = malloc(sizeof *b + count * sizeof b->op[0]);
    if (!b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    b->n = count;
    for (unsigned i = 0; i < count; i++)
        decode(&ops[i], &b->op[i]);
    uint64_t seq = fc_stream_enqueue(s, run_batch, b, NULL);
    /* b is the worker's now: the addresses again from ops. */
    for (unsigned i = 0; fc_check_unmap && i < count; i++) {
        struct fc_use u = fc_memop_use(&ops[i]);
        fc_track_op(s, seq, u.base[0], u.size[0], 0, 0);
    }
    return CUDA_SUCCESS;
}

static CUresult one(CUstream h, CUdeviceptr a, uint64_t v, unsigned flags, CUstreamBatchMemOpType t,
                    bool ptsz)
{
    CUstreamBatchMemOpParams p;
    memset(&p, 0, sizeof p);
    p.operation = t;
    if (t == CU_STREAM_MEM_OP_WAIT_VALUE_32 || t == CU_STREAM_MEM_OP_WAIT_VALUE_64) {
        p.waitValue.address = a;
        p.waitValue.flags = flags;
        if (t == CU_STREAM_MEM_OP_WAIT_VALUE_32)
            p.waitValue.value = (cuuint32_t)v;
        else
            p.waitValue.value64 = v;
    } else {
        p.writeValue.address = a;
        p.writeValue.flags = flags;
        if (t == CU_STREAM_MEM_OP_WRITE_VALUE_32)
            p.writeValue.value = (cuuint32_t)v;
        else
            p.writeValue.value64 = v;
    }
    /* The single calls take their flags in the operation, not the batch's. */
    return batch(h, 1, &p, 0, ptsz);
}

#define W32 CU_STREAM_MEM_OP_WRITE_VALUE_32
#define W64 CU_STREAM_MEM_OP_WRITE_VALUE_64
#define A32 CU_STREAM_MEM_OP_WAIT_VALUE_32
#define A64 CU_STREAM_MEM_OP_WAIT_VALUE_64
#define MEMOPS(sfx, pt)                                                                             \
    FC_EXPORT CUresult cuStreamWriteValue32##sfx(CUstream h, CUdeviceptr a, cuuint32_t v, unsigned f) \
    {                                                                                               \
        FC_FAULT(cuStreamWriteValue32);                                                             \
        return one(h, a, v, f, W32, pt);                                                            \
    }                                                                                               \
    FC_EXPORT CUresult cuStreamWriteValue64##sfx(CUstream h, CUdeviceptr a, cuuint64_t v, unsigned f) \
    {                                                                                               \
        FC_FAULT(cuStreamWriteValue64);                                                             \
        return one(h, a, v, f, W64, pt);                                                            \
    }                                                                                               \
    FC_EXPORT CUresult cuStreamWaitValue32##sfx(CUstream h, CUdeviceptr a, cuuint32_t v, unsigned f) \
    {                                                                                               \
        FC_FAULT(cuStreamWaitValue32);                                                              \
        return one(h, a, v, f, A32, pt);                                                            \
    }                                                                                               \
    FC_EXPORT CUresult cuStreamWaitValue64##sfx(CUstream h, CUdeviceptr a, cuuint64_t v, unsigned f) \
    {                                                                                               \
        FC_FAULT(cuStreamWaitValue64);                                                              \
        return one(h, a, v, f, A64, pt);                                                            \
    }                                                                                               \
    FC_EXPORT CUresult cuStreamBatchMemOp##sfx(CUstream h, unsigned n,                              \
                                               CUstreamBatchMemOpParams *ops, unsigned f)           \
    {                                                                                               \
        FC_FAULT(cuStreamBatchMemOp);                                                               \
        return batch(h, n, ops, f, pt);                                                             \
    }

#undef cuStreamWriteValue32
#undef cuStreamWriteValue64
#undef cuStreamWaitValue32
#undef cuStreamWaitValue64
#undef cuStreamBatchMemOp
MEMOPS(, false)
MEMOPS(_ptsz, true)
MEMOPS(_v2, false)
MEMOPS(_v2_ptsz, true)
