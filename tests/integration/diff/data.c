/* Copies, memsets and kernel launches over live buffers, each mirrored in
 * the buffer's shadow, and the read-backs that check the device against it.
 * Work on one buffer is kept in order across the thread's streams the way a
 * correct program must (an event wait or a stream sync before a buffer
 * moves to another stream), so any wrong byte is spillway's or the
 * driver's, never the program's. */
#include <stdarg.h>
#include <string.h>

#include "tests/integration/diff/diffgen.h"
#include "tests/integration/diff/pattern.h"

void diff_fail(struct diff_thread *t, const char *fmt, ...)
{
    struct diff_run *r = t->run;
    va_list ap;
    va_start(ap, fmt);
    flockfile(r->out);
    fprintf(r->out, "diffgen: FAIL seed %llu thread %u op %llu: ", (unsigned long long)r->o->seed,
            t->index, (unsigned long long)t->op);
    vfprintf(r->out, fmt, ap);
    fputc('\n', r->out);
    funlockfile(r->out);
    fflush(r->out);
    va_end(ap);
    atomic_store(&r->failed, 1);
}

bool diff_cu(struct diff_thread *t, CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return true;
    const char *name = NULL;
    cuGetErrorName(r, &name);
    diff_fail(t, "%s: unexpected error %d (%s)", what, (int)r, name ? name : "?");
    return false;
}

/* The buffer's earlier work (on its last stream) comes before new work on
 * `stream`: half the time through an event (no host wait), else a sync. */
bool diff_order(struct diff_thread *t, struct diff_slot *s, int stream)
{
    int old = s->stream;
    s->stream = stream;
    if (old < 0 || old == stream)
        return true;
    if (t->op & 1) {
        CUresult r = cuEventRecord(t->events[old], t->streams[old]);
        if (r == CUDA_SUCCESS)
            r = cuStreamWaitEvent(t->streams[stream], t->events[old], 0);
        return diff_cu(t, r, "event wait between streams");
    }
    return diff_cu(t, cuStreamSynchronize(t->streams[old]), "stream sync between streams");
}

static void report_mismatch(struct diff_thread *t, const struct diff_slot *s,
                            const struct diff_mismatch *m)
{
    const struct diff_extent *e = &m->ext;
    static const char *const kinds[] = {"unknown", "pattern", "memset"};
    diff_fail(t,
              "data mismatch in allocation t%llu/op%llu (%s, ptr %#llx, %llu bytes): first bad "
              "byte at offset %llu: expected 0x%02x, got 0x%02x; it was written by t%llu/op%llu "
              "(%s %#llx, width %u, xor 0x%02x, extent [%llu, %llu))",
              (unsigned long long)(s->id >> 48), (unsigned long long)(s->id & 0xffffffffffffULL),
              diff_api_name(s->api), (unsigned long long)s->ptr, (unsigned long long)s->size,
              (unsigned long long)m->offset, m->expected, m->got,
              (unsigned long long)(e->writer >> 48), (unsigned long long)(e->writer & 0xffffffffffffULL),
              kinds[e->kind], (unsigned long long)e->value, e->width, e->mask,
              (unsigned long long)e->start, (unsigned long long)e->end);
}

/* Reads [off, off + len) back on `stream` (sync copy on the NULL stream, or
 * an async copy and a stream sync) and compares it with the shadow. */
static bool read_back(struct diff_thread *t, struct diff_slot *s, uint64_t off, uint64_t len,
                      bool async, int stream)
{
    uint64_t chunk = t->run->o->op_max;
    if (!diff_order(t, s, async ? stream : 0))
        return false;
    for (uint64_t done = 0; done < len;) {
        uint64_t c = len - done < chunk ? len - done : chunk;
        CUresult r = async ? cuMemcpyDtoHAsync(t->host, s->ptr + off + done, c, t->streams[stream])
                           : cuMemcpyDtoH(t->host, s->ptr + off + done, c);
        if (r == CUDA_SUCCESS && async)
            r = cuStreamSynchronize(t->streams[stream]);
        if (!diff_cu(t, r, "read back"))
            return false;
        struct diff_mismatch m;
        if (!diff_shadow_check(&s->sh, off + done, c, t->host, &m)) {
            report_mismatch(t, s, &m);
            return false;
        }
        done += c;
    }
    t->c.checks++;
    t->c.bytes_verified += diff_shadow_known(&s->sh, off, len);
    return true;
}

bool diff_verify(struct diff_thread *t, struct diff_slot *s, uint64_t off, uint64_t len)
{
    return read_back(t, s, off, len, false, 0);
}

/* Head, tail and one window picked by `pick`, verify_window bytes in all
 * (the whole buffer when it is smaller, or with --verify-window 0). */
bool diff_verify_sampled(struct diff_thread *t, struct diff_slot *s, uint64_t pick)
{
    uint64_t w = t->run->o->verify_window, size = s->size;
    if (w == 0 || size <= w)
        return diff_verify(t, s, 0, size);
    uint64_t edge = w / 4, mid = w - 2 * edge;
    uint64_t moff = edge + pick % (size - 2 * edge - mid + 1);
    return diff_verify(t, s, 0, edge) && diff_verify(t, s, moff, mid) &&
           diff_verify(t, s, size - edge, edge);
}

bool diff_dtoh(struct diff_thread *t, struct diff_slot *s, uint64_t off, uint64_t len, bool async,
               int stream)
{
    return read_back(t, s, off, len, async, stream);
}

bool diff_htod(struct diff_thread *t, struct diff_slot *s, uint64_t off, uint64_t len, uint64_t seed,
               bool async, int stream, int variant)
{
    for (uint64_t i = 0; i < len; i++)
        t->host[i] = diff_pat_byte(seed, i);
    if (!diff_order(t, s, async ? stream : 0))
        return false;
    CUdeviceptr d = s->ptr + off;
    CUstream st = t->streams[stream];
    CUresult r;
    if (variant & 1) /* untyped: spillway tells host from device itself */
        r = async ? cuMemcpyAsync(d, (CUdeviceptr)t->host, len, st) : cuMemcpy(d, (CUdeviceptr)t->host, len);
    else
        r = async ? cuMemcpyHtoDAsync(d, t->host, len, st) : cuMemcpyHtoD(d, t->host, len);
    if (!diff_cu(t, r, "host to device copy"))
        return false;
    struct diff_extent g = {.kind = GEN_PAT, .value = seed, .writer = diff_op_id(t->index, t->op)};
    return diff_shadow_write(&s->sh, off, len, g) || diff_cu(t, CUDA_ERROR_OUT_OF_MEMORY, "shadow");
}

bool diff_dtod(struct diff_thread *t, struct diff_slot *a, uint64_t aoff, struct diff_slot *b,
               uint64_t boff, uint64_t len, bool async, int stream, int variant)
{
    int st = async ? stream : 0;
    if (!diff_order(t, a, st) || !diff_order(t, b, st))
        return false;
    CUdeviceptr src = a->ptr + aoff, dst = b->ptr + boff;
    CUstream s = t->streams[stream];
    CUresult r;
    if (variant & 1)
        r = async ? cuMemcpyAsync(dst, src, len, s) : cuMemcpy(dst, src, len);
    else
        r = async ? cuMemcpyDtoDAsync(dst, src, len, s) : cuMemcpyDtoD(dst, src, len);
    if (!diff_cu(t, r, "device to device copy"))
        return false;
    return diff_shadow_copy(&b->sh, boff, &a->sh, aoff, len, 0, diff_op_id(t->index, t->op)) ||
           diff_cu(t, CUDA_ERROR_OUT_OF_MEMORY, "shadow");
}

static CUresult call_memset(CUdeviceptr d, uint32_t v, uint64_t n, unsigned width, bool async, CUstream s)
{
    if (width == 1)
        return async ? cuMemsetD8Async(d, (unsigned char)v, n, s) : cuMemsetD8(d, (unsigned char)v, n);
    if (width == 2)
        return async ? cuMemsetD16Async(d, (unsigned short)v, n, s) : cuMemsetD16(d, (unsigned short)v, n);
    return async ? cuMemsetD32Async(d, v, n, s) : cuMemsetD32(d, v, n);
}

/* off is rounded up to the width, len down: the driver's alignment rules. */
bool diff_memset(struct diff_thread *t, struct diff_slot *s, uint64_t off, uint64_t len,
                 unsigned width, uint32_t value, bool async, int stream)
{
    uint64_t start = (off + width - 1) / width * width;
    if (start >= off + len || (off + len - start) < width) {
        t->c.skipped++;
        return true;
    }
    uint64_t n = (off + len - start) / width;
    if (!diff_order(t, s, async ? stream : 0))
        return false;
    if (!diff_cu(t, call_memset(s->ptr + start, value, n, width, async, t->streams[stream]), "memset"))
        return false;
    uint64_t mask = width == 4 ? 0xffffffffULL : width == 2 ? 0xffffULL : 0xffULL;
    struct diff_extent g = {.kind = GEN_CONST, .value = value & mask, .width = (uint8_t)width,
                            .writer = diff_op_id(t->index, t->op)};
    return diff_shadow_write(&s->sh, start, n * width, g) || diff_cu(t, CUDA_ERROR_OUT_OF_MEMORY, "shadow");
}
