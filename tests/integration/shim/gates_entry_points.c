/* The gates suite (test_gates.c): every submission passes the gate, by
 * every entry point. A copy or set of nothing fills nothing back; stream
 * memory operations of CUDA 8's ABI, decompression batches, managed
 * memory's prefetches, discards and attachments and stream callbacks, and
 * captures begun through CUDA 10.0's ABI reach spillway. */
#include "tests/integration/shim/driver_api.h"
#include "tests/integration/shim/gates_rig.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- stream memory operations, CUDA 8's ABI ------------------------------- */

#undef cuStreamWriteValue32
#undef cuStreamWaitValue32
#undef cuStreamBatchMemOp
CUresult cuStreamWriteValue32(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
CUresult cuStreamWriteValue32_ptsz(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
CUresult cuStreamWaitValue32(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
CUresult cuStreamBatchMemOp(CUstream, unsigned int, CUstreamBatchMemOpParams *, unsigned int);
typedef CUresult (*write32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

/* The first address of [p, p + bytes) whose page lives on the host. */
static CUdeviceptr spilled_at(CUdeviceptr p, size_t bytes)
{
    for (CUdeviceptr a = p; a < p + bytes; a += 2 * MiB)
        if (fakecuda_mapped_location(a) != 0)
            return a;
    ck_abort_msg("nothing of the buffer spilled");
    return 0;
}

/* Device 0 set up, a BUF buffer of pattern 5 partly spilled (more
 * pressure after the spill, then room to fill into), and a stream of its
 * own: *c0, *s. */
static CUdeviceptr partly_spilled(CUcontext *c0, CUstream *s)
{
    *c0 = setup(0);
    CUdeviceptr b = filled(BUF, 5);
    spill_device0(*c0);
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, BIT_MORE));
    CU_OK(cuMemFree(x));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
    return b;
}

/* A program built with CUDA 8-11.6 headers (-lcuda) or a runtime asking
 * cuGetProcAddress for a version before 11.7 gets the unsuffixed ABI: it
 * is spillway's, and like every submission it touches what it names, so
 * that spilled data it is about to use is filled back first (then gated). */
/* A copy or set of 0 bytes touches no memory (the driver does nothing):
 * the spilled buffer it names stays where it is, no fill and no sync. */
START_TEST(an_empty_copy_or_set_fills_nothing_back)
{
    CUcontext c0;
    CUstream s;
    CUdeviceptr b = partly_spilled(&c0, &s);
    CUdeviceptr a = spilled_at(b, BUF);
    size_t before = rig_resident(b, BUF, 0);
    char host[4];
    CU_OK(cuMemcpyDtoH(host, a, 0));
    CU_OK(cuMemcpyHtoDAsync(a, host, 0, s));
    CU_OK(cuMemcpyDtoD(a, a + 4096, 0));
    CU_OK(cuMemsetD32(a, 0, 0));
    CU_OK(cuMemsetD8Async(a, 0, 0, s));
    /* 2D and 3D: no width, no row or no slice is nothing either. */
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = a;
    c.srcPitch = 4096;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = host;
    c.dstPitch = 4096;
    c.WidthInBytes = 4;
    CU_OK(cuMemcpy2D(&c)); /* Height 0 */
    c.Height = 1;
    c.WidthInBytes = 0;
    CU_OK(cuMemcpy2DAsync(&c, s));
    CUDA_MEMCPY3D c3;
    memset(&c3, 0, sizeof c3);
    c3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c3.dstDevice = a;
    c3.srcMemoryType = CU_MEMORYTYPE_HOST;
    c3.srcHost = host;
    c3.WidthInBytes = 4;
    c3.Height = 1;
    CU_OK(cuMemcpy3D(&c3)); /* Depth 0 */
    CU_OK(cuMemsetD2D8(a, 4096, 0, 0, 4));
    CU_OK(cuMemsetD2D32Async(a, 4096, 0, 4, 0, s));
    CU_OK(cuStreamSynchronize(s));
    ck_assert_uint_eq(rig_resident(b, BUF, 0), before);
    ck_assert_int_ne(fakecuda_mapped_location(a), 0);
    rig_expect_pattern(b, BUF, 5, "the buffer");
}
END_TEST

START_TEST(memops_of_cuda_8_pass_the_gate)
{
    CUcontext c0;
    CUstream s;
    CUdeviceptr b = partly_spilled(&c0, &s);
    void *pfn = NULL;
    CUdriverProcAddressQueryResult q;
    CU_OK(cuGetProcAddress("cuStreamWriteValue32", &pfn, 11000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    void *ppt = NULL;
    CU_OK(cuGetProcAddress("cuStreamWriteValue32", &ppt, 11000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q));
    write32_fn ways[] = {cuStreamWriteValue32, cuStreamWriteValue32_ptsz, (write32_fn)pfn,
                         (write32_fn)ppt};
    for (unsigned i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        ck_assert_msg(spw_in_spillway((void *)ways[i]), "way %u is the driver's", i);
        CUdeviceptr a = spilled_at(b, BUF);
        CU_OK(ways[i](s, a, 0xc0ffee00u + i, 0));
        CU_OK(cuStreamSynchronize(s));
        ck_assert_msg(fakecuda_mapped_location(a) == 0, "way %u: not filled back", i);
        uint32_t got;
        CU_OK(cuMemcpyDtoH(&got, a, sizeof got));
        ck_assert_uint_eq(got, 0xc0ffee00u + i);
        spill_device0_leaving_room(c0); /* away again for the next way */
    }
    ck_assert(spw_in_spillway((void *)cuStreamWaitValue32));
    ck_assert(spw_in_spillway((void *)cuStreamBatchMemOp));
    CUstreamBatchMemOpParams op[2];
    memset(op, 0, sizeof op);
    op[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    op[0].writeValue.address = b;
    op[0].writeValue.value = 77;
    op[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    op[1].waitValue.address = b;
    op[1].waitValue.value = 77;
    op[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
    CU_OK(cuStreamBatchMemOp(s, 2, op, 0));
    CU_OK(cuStreamWaitValue32(s, b, 77, CU_STREAM_WAIT_VALUE_GEQ));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
}
END_TEST

/* ---- decompression batches ------------------------------------------------ */

#undef cuMemBatchDecompressAsync
CUresult cuMemBatchDecompressAsync(CUmemDecompressParams *, size_t, unsigned, size_t *, CUstream);
CUresult cuMemBatchDecompressAsync_ptsz(CUmemDecompressParams *, size_t, unsigned, size_t *, CUstream);
typedef CUresult (*decompress_fn)(CUmemDecompressParams *, size_t, unsigned, size_t *, CUstream);

/* A batch names pool memory (cuMemAlloc memory is what the driver wants
 * there) to read and write asynchronously, like a copy: by every way of
 * calling it, it reaches spillway, and its spilled source comes back
 * before the submission (fakecuda, like every device without the
 * decompression engine, then refuses the batch itself). */
START_TEST(a_decompression_batch_passes_the_gate)
{
    if (!rig_driver_has(12080))
        return; /* no cuMemBatchDecompressAsync */
    CUcontext c0;
    CUstream s;
    CUdeviceptr b = partly_spilled(&c0, &s), act;
    CU_OK(cuMemAlloc(&act, 4096));
    spill_device0_leaving_room(c0); /* act may have taken the free page */
    void *pfn = NULL;
    CUdriverProcAddressQueryResult q;
    CU_OK(cuGetProcAddress("cuMemBatchDecompressAsync", &pfn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    decompress_fn ways[] = {cuMemBatchDecompressAsync, cuMemBatchDecompressAsync_ptsz, (decompress_fn)pfn};
    for (unsigned i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        ck_assert_msg(spw_in_spillway((void *)ways[i]), "way %u is the driver's", i);
        CUdeviceptr a = spilled_at(b, BUF);
        CUmemDecompressParams p;
        memset(&p, 0, sizeof p);
        p.srcNumBytes = 4096;
        p.dstNumBytes = 4096;
        /* The spilled address as the source, then as the destination. */
        p.src = i % 2 ? NULL : (const void *)(uintptr_t)a;
        p.dst = i % 2 ? (void *)(uintptr_t)a : NULL;
        p.dstActBytes = (cuuint32_t *)(uintptr_t)act;
        p.algo = CU_MEM_DECOMPRESS_ALGORITHM_DEFLATE;
        size_t at = 0;
        ck_assert_int_eq(ways[i](&p, 1, 0, &at, s), CUDA_ERROR_NOT_SUPPORTED);
        ck_assert_msg(fakecuda_mapped_location(a) == 0, "way %u: not filled back", i);
        spill_device0_leaving_room(c0);
    }
    CU_OK(cuStreamDestroy(s));
    rig_expect_pattern(b, BUF, 5, "the buffer decompression named");
}
END_TEST

/* ---- managed memory's prefetches, discards and attachments; callbacks ------ */

/* CUDA 8's prefetch (cuda.h maps the name to the _v2), the _v2's and the
 * batches' per-thread variants, which cuda.h declares only for its own
 * build. */
#undef cuMemPrefetchAsync
#undef cuMemPrefetchBatchAsync
#undef cuMemDiscardBatchAsync
#undef cuMemDiscardAndPrefetchBatchAsync
CUresult cuMemPrefetchAsync(CUdeviceptr, size_t, CUdevice, CUstream);
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr, size_t, CUdevice, CUstream);
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream);
CUresult cuMemPrefetchBatchAsync(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *, size_t,
                                 unsigned long long, CUstream);
CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *, size_t,
                                      unsigned long long, CUstream);
CUresult cuMemDiscardBatchAsync(CUdeviceptr *, size_t *, size_t, unsigned long long, CUstream);
CUresult cuMemDiscardBatchAsync_ptsz(CUdeviceptr *, size_t *, size_t, unsigned long long, CUstream);
CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *, size_t,
                                           unsigned long long, CUstream);
CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *,
                                                size_t, unsigned long long, CUstream);
#undef cuStreamAttachMemAsync
#undef cuStreamAddCallback
CUresult cuStreamAttachMemAsync_ptsz(CUstream, CUdeviceptr, size_t, unsigned int);
CUresult cuStreamAddCallback_ptsz(CUstream, CUstreamCallback, void *, unsigned int);

/* Each entry point of a prefetch, discard or attachment of managed
 * memory, or a stream callback (ordered work that names no pool memory),
 * with the cuGetProcAddress name and version that answer it (CUDA 8's
 * prefetch up to 12.1, the _v2 from 12.2, the batches from 13.0), and
 * whether it is the per-thread variant. */
enum managed_way {
    MW_V1, MW_V1_PT, MW_V2, MW_V2_PT, MW_BATCH, MW_BATCH_PT, MW_DISCARD, MW_DISCARD_PT, MW_BOTH, MW_BOTH_PT,
    MW_ATTACH, MW_ATTACH_PT, MW_CALLBACK, MW_CALLBACK_PT, MW_COUNT
};
static const struct {
    const char *symbol, *base;
    int version, per_thread;
    void *fn;
} managed_ways[MW_COUNT] = {
    {"cuMemPrefetchAsync", "cuMemPrefetchAsync", 8000, 0, (void *)cuMemPrefetchAsync},
    {"cuMemPrefetchAsync_ptsz", "cuMemPrefetchAsync", 8000, 1, (void *)cuMemPrefetchAsync_ptsz},
    {"cuMemPrefetchAsync_v2", "cuMemPrefetchAsync", 12020, 0, (void *)cuMemPrefetchAsync_v2},
    {"cuMemPrefetchAsync_v2_ptsz", "cuMemPrefetchAsync", 12020, 1, (void *)cuMemPrefetchAsync_v2_ptsz},
    {"cuMemPrefetchBatchAsync", "cuMemPrefetchBatchAsync", 13000, 0, (void *)cuMemPrefetchBatchAsync},
    {"cuMemPrefetchBatchAsync_ptsz", "cuMemPrefetchBatchAsync", 13000, 1, (void *)cuMemPrefetchBatchAsync_ptsz},
    {"cuMemDiscardBatchAsync", "cuMemDiscardBatchAsync", 13000, 0, (void *)cuMemDiscardBatchAsync},
    {"cuMemDiscardBatchAsync_ptsz", "cuMemDiscardBatchAsync", 13000, 1, (void *)cuMemDiscardBatchAsync_ptsz},
    {"cuMemDiscardAndPrefetchBatchAsync", "cuMemDiscardAndPrefetchBatchAsync", 13000, 0,
     (void *)cuMemDiscardAndPrefetchBatchAsync},
    {"cuMemDiscardAndPrefetchBatchAsync_ptsz", "cuMemDiscardAndPrefetchBatchAsync", 13000, 1,
     (void *)cuMemDiscardAndPrefetchBatchAsync_ptsz},
    {"cuStreamAttachMemAsync", "cuStreamAttachMemAsync", 6000, 0, (void *)cuStreamAttachMemAsync},
    {"cuStreamAttachMemAsync_ptsz", "cuStreamAttachMemAsync", 6000, 1, (void *)cuStreamAttachMemAsync_ptsz},
    {"cuStreamAddCallback", "cuStreamAddCallback", 5000, 0, (void *)cuStreamAddCallback},
    {"cuStreamAddCallback_ptsz", "cuStreamAddCallback", 5000, 1, (void *)cuStreamAddCallback_ptsz},
};

/* The ways this driver has: the batches are CUDA 13.0's (gates.sh also
 * runs on a 12.7 driver). */
static int managed_way_there(int w)
{
    return managed_ways[w].version <= 12020 || rig_driver_has(13000);
}

/* Every way reaches spillway's handler: the exported symbol (a -lcuda
 * program), dlsym of the driver's handle (XLA, TensorFlow), and
 * cuGetProcAddress at its version, and at the version before the next
 * ABI for CUDA 8's prefetch, else 13.0's (the CUDA runtime, PyTorch), each
 * the handler of the same ABI and variant. */
START_TEST(unpooled_ordered_work_reaches_spillway)
{
    setup(0);
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(drv);
    char missed[2048] = "";
#define MISSED(...) snprintf(missed + strlen(missed), sizeof missed - strlen(missed), __VA_ARGS__)
    for (int w = 0; w < MW_COUNT; w++) {
        if (!managed_way_there(w))
            continue;
        const char *sym = managed_ways[w].symbol;
        void *fn = managed_ways[w].fn;
        if (!spw_in_spillway(fn))
            MISSED(" %s", sym);
        if (dlsym(drv, sym) != fn)
            MISSED(" dlsym(%s)", sym);
        cuuint64_t flags =
            managed_ways[w].per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
        int versions[2] = {managed_ways[w].version, managed_ways[w].version == 8000 ? 12010 : 13000};
        for (int v = 0; v < 2; v++) {
            void *pfn = NULL;
            CUdriverProcAddressQueryResult q;
            CU_OK(cuGetProcAddress(managed_ways[w].base, &pfn, versions[v], flags, &q));
            if (pfn != fn)
                MISSED(" cuGetProcAddress(%s,%d%s)", managed_ways[w].base, versions[v],
                       managed_ways[w].per_thread ? ",pt" : "");
        }
    }
#undef MISSED
    dlclose(drv);
    ck_assert_msg(!missed[0], "not spillway's handler of the same ABI:%s", missed);
}
END_TEST

struct managed_call {
    int way;
    CUcontext c0;
    CUstream s;
    CUdeviceptr m; /* managed memory */
    CUresult r;
    uint64_t spilled_after; /* device 0's spill_bytes when the call returned */
};

static void CUDA_CB no_callback(CUstream s, CUresult status, void *arg)
{
    (void)s;
    (void)status;
    (void)arg;
}

static void *call_managed_way(void *arg)
{
    struct managed_call *c = arg;
    CU_OK(cuCtxSetCurrent(c->c0));
    CUmemLocation dev0 = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CUdeviceptr dptrs[1] = {c->m};
    size_t sizes[1] = {64 * 1024}, idxs[1] = {0};
    switch (c->way) {
    case MW_V1: c->r = cuMemPrefetchAsync(c->m, 64 * 1024, 0, c->s); break;
    case MW_V1_PT: c->r = cuMemPrefetchAsync_ptsz(c->m, 64 * 1024, 0, c->s); break;
    case MW_V2: c->r = cuMemPrefetchAsync_v2(c->m, 64 * 1024, dev0, 0, c->s); break;
    case MW_V2_PT: c->r = cuMemPrefetchAsync_v2_ptsz(c->m, 64 * 1024, dev0, 0, c->s); break;
    case MW_BATCH: c->r = cuMemPrefetchBatchAsync(dptrs, sizes, 1, &dev0, idxs, 1, 0, c->s); break;
    case MW_BATCH_PT: c->r = cuMemPrefetchBatchAsync_ptsz(dptrs, sizes, 1, &dev0, idxs, 1, 0, c->s); break;
    case MW_DISCARD: c->r = cuMemDiscardBatchAsync(dptrs, sizes, 1, 0, c->s); break;
    case MW_DISCARD_PT: c->r = cuMemDiscardBatchAsync_ptsz(dptrs, sizes, 1, 0, c->s); break;
    case MW_BOTH: c->r = cuMemDiscardAndPrefetchBatchAsync(dptrs, sizes, 1, &dev0, idxs, 1, 0, c->s); break;
    case MW_BOTH_PT: c->r = cuMemDiscardAndPrefetchBatchAsync_ptsz(dptrs, sizes, 1, &dev0, idxs, 1, 0, c->s); break;
    case MW_ATTACH: c->r = cuStreamAttachMemAsync(c->s, c->m, 0, CU_MEM_ATTACH_GLOBAL); break;
    case MW_ATTACH_PT: c->r = cuStreamAttachMemAsync_ptsz(c->s, c->m, 0, CU_MEM_ATTACH_GLOBAL); break;
    case MW_CALLBACK: c->r = cuStreamAddCallback(c->s, no_callback, NULL, 0); break;
    default: c->r = cuStreamAddCallback_ptsz(c->s, no_callback, NULL, 0); break;
    }
    c->spilled_after = rig_pool(0).spill_bytes;
    return NULL;
}

static void *move_device0(void *arg)
{
    spill_device0(*(CUcontext *)arg);
    return NULL;
}

/* Each way is gated: called while device 0's gate is closed for a move (its
 * mover's sync, which waits for a 600 ms kernel, has begun: the gate
 * closes before it), it returns only once the move is done, its pages
 * spilled. A way that went around the gate returns during the sync,
 * before anything spilled. Managed memory and callbacks are never the
 * pool's, so only the bracket can show. */
START_TEST(unpooled_ordered_work_waits_for_a_move)
{
    CUcontext c0 = setup(0);
    CUdeviceptr m;
    CU_OK(cuMemAllocManaged(&m, 64 * 1024, CU_MEM_ATTACH_GLOBAL));
    CUdeviceptr b = filled(BUF, 5);
    CUstream s, busy;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&busy, CU_STREAM_NON_BLOCKING));
    ck_assert_uint_eq(rig_pool(0).spill_bytes, 0);
    sleep_on(busy, 600);
    long long syncs = fakecuda_calls("cuCtxSynchronize");
    pthread_t mover;
    ck_assert_int_eq(pthread_create(&mover, NULL, move_device0, &c0), 0);
    for (int i = 0; i < 10000 && fakecuda_calls("cuCtxSynchronize") == syncs; i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(fakecuda_calls("cuCtxSynchronize") > syncs, "no move began its sync in 10 s");
    ck_assert_msg(rig_pool(0).spill_bytes == 0, "the move ended before the ways were called");
    struct managed_call calls[MW_COUNT];
    pthread_t t[MW_COUNT];
    for (int w = 0; w < MW_COUNT; w++) {
        calls[w] = (struct managed_call){.way = w, .c0 = c0, .s = s, .m = m, .r = CUDA_ERROR_UNKNOWN};
        if (managed_way_there(w))
            ck_assert_int_eq(pthread_create(&t[w], NULL, call_managed_way, &calls[w]), 0);
    }
    for (int w = 0; w < MW_COUNT; w++)
        if (managed_way_there(w))
            ck_assert_int_eq(pthread_join(t[w], NULL), 0);
    ck_assert_int_eq(pthread_join(mover, NULL), 0);
    char ungated[512] = "";
    for (int w = 0; w < MW_COUNT; w++) {
        if (!managed_way_there(w))
            continue;
        ck_assert_msg(calls[w].r == CUDA_SUCCESS, "%s: %d", managed_ways[w].symbol, (int)calls[w].r);
        if (!calls[w].spilled_after)
            snprintf(ungated + strlen(ungated), sizeof ungated - strlen(ungated), " %s", managed_ways[w].symbol);
    }
    ck_assert_msg(!ungated[0], "returned during the move (not gated):%s", ungated);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuStreamDestroy(busy));
    CU_OK(cuMemFree(m));
    rig_expect_pattern(b, BUF, 5, "the spilled buffer");
}
END_TEST

/* ---- captures begun through CUDA 10.0's ABI -------------------------------- */

#undef cuStreamBeginCapture
CUresult cuStreamBeginCapture(CUstream);
CUresult cuStreamBeginCapture_ptsz(CUstream);
typedef CUresult (*begin_v1_fn)(CUstream);

/* A capture (A, RELAXED) stays live while another one (B) is begun through
 * the mode-less ABI and ended: spillway must still count A, so an
 * allocation past the limit gets host pages without a spill (a sync would
 * invalidate A), and A ends intact. Uncounted, B's end took A's count. */
START_TEST(a_capture_begun_without_a_mode_is_counted)
{
    CUcontext c0 = setup(0);
    (void)c0;
    CUdeviceptr b = filled(BUF, 4);
    void *pfn = NULL, *ppt = NULL;
    CUdriverProcAddressQueryResult q;
    CU_OK(cuGetProcAddress("cuStreamBeginCapture", &pfn, 10000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    CU_OK(cuGetProcAddress("cuStreamBeginCapture", &ppt, 10000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q));
    begin_v1_fn ways[] = {cuStreamBeginCapture, cuStreamBeginCapture_ptsz, (begin_v1_fn)pfn,
                          (begin_v1_fn)ppt};
    for (unsigned i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        CUstream sa, sb;
        CU_OK(cuStreamCreate(&sa, CU_STREAM_NON_BLOCKING));
        CU_OK(cuStreamCreate(&sb, CU_STREAM_NON_BLOCKING));
        CU_OK(cuStreamBeginCapture_v2(sa, CU_STREAM_CAPTURE_MODE_RELAXED));
        CU_OK(cuMemsetD32Async(b, i, 16, sa));
        CU_OK(ways[i](sb));
        CU_OK(cuMemsetD32Async(b + 64, i, 16, sb));
        CUgraph gb = NULL, ga = NULL;
        CU_OK(cuStreamEndCapture(sb, &gb));
        CUdeviceptr x;
        CU_OK(cuMemAlloc(&x, PAST_BUF)); /* past the limit, while A captures */
        ck_assert_msg(rig_pool(0).spill_bytes == 0, "way %u: spilled during a capture", i);
        CU_OK(cuStreamEndCapture(sa, &ga));
        ck_assert_ptr_nonnull(ga);
        CU_OK(cuGraphDestroy(ga));
        CU_OK(cuGraphDestroy(gb));
        CU_OK(cuMemFree(x));
        CU_OK(cuStreamDestroy(sa));
        CU_OK(cuStreamDestroy(sb));
    }
}
END_TEST

void gates_entry_point_tests(TCase *tc, TCase *reach)
{
    tcase_add_test(tc, an_empty_copy_or_set_fills_nothing_back);
    tcase_add_test(tc, memops_of_cuda_8_pass_the_gate);
    tcase_add_test(tc, a_decompression_batch_passes_the_gate);
    tcase_add_test(tc, unpooled_ordered_work_waits_for_a_move);
    tcase_add_test(tc, a_capture_begun_without_a_mode_is_counted);
    tcase_add_test(reach, unpooled_ordered_work_reaches_spillway);
}
