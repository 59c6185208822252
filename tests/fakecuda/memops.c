/* fakecuda: stream memory operations (cuStreamWriteValue32/64,
 * cuStreamWaitValue32/64, cuStreamBatchMemOp), in CUDA 8's ABI (the
 * symbols without suffix, still exported by the driver) and CUDA 11.7's
 * (_v2), each with its _ptsz variant; both ABIs take the same arguments.
 * As the driver documents them: the address is device memory or pinned
 * host memory, aligned to the value's size; a write stores the value in
 * stream order; a wait holds the stream until the condition (GEQ, cyclic
 * on 32 bits; EQ; AND; NOR) holds on the memory. Flags the driver refuses
 * are refused. Not captured: fakecuda has no memory-operation graph node,
 * so on a capturing stream the call fails and invalidates the capture. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fakecuda/internal.h"

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

static void run_batch(void *arg)
{
    struct memop_batch *b = arg;
    for (unsigned i = 0; i < b->n; i++) {
        const struct memop *m = &b->op[i];
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

/* One operation of the batch, checked: CUDA_ERROR_INVALID_VALUE for what
 * the driver refuses. */
static CUresult check(const CUstreamBatchMemOpParams *p, struct memop *out)
{
    switch (p->operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64: {
        unsigned w = p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? 4 : 8;
        unsigned f = p->waitValue.flags;
        if ((f & ~(0xfu | CU_STREAM_WAIT_VALUE_FLUSH)) || (f & 0xf) > CU_STREAM_WAIT_VALUE_NOR ||
            !addr_ok(p->waitValue.address, w))
            return CUDA_ERROR_INVALID_VALUE;
        *out = (struct memop){p->operation, (void *)p->waitValue.address,
                              w == 4 ? p->waitValue.value : p->waitValue.value64, f, w};
        return CUDA_SUCCESS;
    }
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64: {
        unsigned w = p->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? 4 : 8;
        unsigned f = p->writeValue.flags;
        if ((f & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) ||
            !addr_ok(p->writeValue.address, w))
            return CUDA_ERROR_INVALID_VALUE;
        *out = (struct memop){p->operation, (void *)p->writeValue.address,
                              w == 4 ? p->writeValue.value : p->writeValue.value64, f, w};
        return CUDA_SUCCESS;
    }
    default:
        return CUDA_ERROR_NOT_SUPPORTED; /* flushes, barriers: not emulated */
    }
}

static CUresult batch(CUstream h, unsigned count, const CUstreamBatchMemOpParams *ops,
                      unsigned flags, bool ptsz)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags != 0 || !count || count >= 256 || !ops)
        return CUDA_ERROR_INVALID_VALUE; /* "count ... Must be less than 256" */
    struct memop_batch *b = malloc(sizeof *b + count * sizeof b->op[0]);
    if (!b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    b->n = count;
    for (unsigned i = 0; i < count; i++)
        if ((r = check(&ops[i], &b->op[i])) != CUDA_SUCCESS) {
            free(b);
            return r;
        }
    bool capturing = false;
    if ((r = fc_capture_enter(s, &capturing)) != CUDA_SUCCESS) {
        free(b);
        return r;
    }
    if (capturing) {
        free(b);
        return fc_capture_add(s, NULL);
    }
    uint64_t seq = fc_stream_enqueue(s, run_batch, b, NULL);
    /* b is the worker's now: the addresses again from ops. */
    if (fc_check_unmap)
        for (unsigned i = 0; i < count; i++) {
            const CUstreamBatchMemOpParams *p = &ops[i];
            bool w32 = p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
                       p->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32;
            bool wait = p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ||
                        p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_64;
            fc_track_op(s, seq, wait ? p->waitValue.address : p->writeValue.address,
                        w32 ? 4 : 8, 0, 0);
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
