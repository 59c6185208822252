/* Allocation and free by every API, with the program-visible live bytes
 * the judge needs: a refusal is weighed against what the program held
 * while its call ran, whatever the other threads did meanwhile. */
#include "tests/fakecuda/fakecuda.h"
#include "tests/integration/diff/diffgen.h"

#define PITCH_ALIGN 512u /* the driver's texture pitch alignment */

uint64_t diff_pitch_size(uint64_t size, uint64_t h)
{
    uint64_t width = size / h ? size / h : 1;
    return (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN * h;
}

uint64_t diff_visible_size(const struct diff_run *r, int api, uint64_t size, uint64_t pitch_h)
{
    if (api == API_PITCH)
        return diff_pitch_size(size, pitch_h);
    if (api == API_VMM)
        return (size + r->gran - 1) / r->gran * r->gran;
    return size;
}

static uint64_t device_bytes(void)
{
    return fakecuda_device_bytes_used ? fakecuda_device_bytes_used(0) : 0;
}

/* Program VMM as JAX's arena does it: reserve, create, map, grant access. */
static CUresult alloc_vmm(uint64_t size, CUdeviceptr *va, CUmemGenericAllocationHandle *h)
{
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUresult r = cuMemAddressReserve(va, size, 0, 0, 0);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = cuMemCreate(h, size, &prop, 0)) != CUDA_SUCCESS) {
        cuMemAddressFree(*va, size);
        return r;
    }
    r = cuMemMap(*va, size, 0, *h, 0);
    if (r == CUDA_SUCCESS) {
        CUmemAccessDesc d = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
        if ((r = cuMemSetAccess(*va, size, &d, 1)) != CUDA_SUCCESS)
            cuMemUnmap(*va, size);
    }
    if (r != CUDA_SUCCESS) {
        cuMemRelease(*h);
        cuMemAddressFree(*va, size);
    }
    return r;
}

static CUresult call_alloc(struct diff_thread *t, int api, uint64_t size, uint64_t pitch_h,
                           CUstream s, struct diff_slot *out)
{
    size_t pitch;
    switch (api) {
    case API_ALLOC: return cuMemAlloc(&out->ptr, size);
    case API_PITCH: {
        /* element size cycles with the row count: deterministic, all three seen */
        unsigned elem = 4u << (pitch_h % 3);
        uint64_t width = size / pitch_h ? size / pitch_h : 1;
        return cuMemAllocPitch(&out->ptr, &pitch, width, pitch_h, elem);
    }
    case API_ASYNC: return cuMemAllocAsync(&out->ptr, size, s);
    case API_POOL: return cuMemAllocFromPoolAsync(&out->ptr, size, t->pool, s);
    default: return alloc_vmm(size, &out->ptr, &out->handle);
    }
}

static bool record(struct diff_thread *t, struct diff_record rec)
{
    if (t->nrec == t->reccap) {
        size_t cap = t->reccap ? t->reccap * 2 : 1024;
        struct diff_record *n = realloc(t->rec, cap * sizeof *n);
        if (!n)
            return false;
        t->rec = n;
        t->reccap = cap;
    }
    t->rec[t->nrec++] = rec;
    return true;
}

bool diff_alloc(struct diff_thread *t, int api, uint64_t size, uint64_t pitch_h, int stream,
                struct diff_slot *out, CUresult *res)
{
    struct diff_run *r = t->run;
    uint64_t vis = diff_visible_size(r, api, size, pitch_h);
    uint64_t l0 = atomic_load(&r->live), a0 = atomic_load(&r->alloc_total), d0 = device_bytes();
    *out = (struct diff_slot){.size = vis, .id = diff_op_id(t->index, t->op), .api = api,
                              .stream = api == API_ASYNC || api == API_POOL ? stream : -1};
    CUresult rc = call_alloc(t, api, api == API_VMM ? vis : size, pitch_h, t->streams[stream], out);
    uint64_t a1 = atomic_load(&r->alloc_total);
    *res = rc;
    if (rc == CUDA_SUCCESS) {
        atomic_fetch_add(&r->alloc_total, vis);
        diff_atomic_max(&r->peak_live, atomic_fetch_add(&r->live, vis) + vis);
        t->c.allocs[api]++;
    } else {
        out->ptr = 0;
        t->c.refused[api] += rc == CUDA_ERROR_OUT_OF_MEMORY;
    }
    diff_note_device(t, d0);
    struct diff_record rec = {.op = t->op, .size = vis, .live_lower = l0, .live_upper = l0 + (a1 - a0),
                              .seq = atomic_fetch_add(&r->seq, 1), .api = (uint32_t)api,
                              .result = (int32_t)rc};
    if (!record(t, rec))
        return diff_cu(t, CUDA_ERROR_OUT_OF_MEMORY, "host memory for the trace");
    if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY)
        return true;
    return diff_cu(t, rc, "allocation");
}

static CUresult free_vmm(struct diff_thread *t, struct diff_slot *s)
{
    /* cuMemUnmap is not stream ordered: the program waits for its work */
    CUresult r = s->stream >= 0 ? cuStreamSynchronize(t->streams[s->stream]) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        r = cuMemUnmap(s->ptr, s->size);
    if (r == CUDA_SUCCESS)
        r = cuMemRelease(s->handle);
    if (r == CUDA_SUCCESS)
        r = cuMemAddressFree(s->ptr, s->size);
    return r;
}

bool diff_free(struct diff_thread *t, struct diff_slot *s, bool cross, int stream)
{
    struct diff_run *r = t->run;
    bool async_kind = s->api == API_ASYNC || s->api == API_POOL;
    uint64_t d0 = device_bytes();
    CUresult rc;
    if (s->api == API_VMM) {
        rc = free_vmm(t, s);
    } else if (async_kind != cross) {
        if (!diff_order(t, s, stream))
            return false;
        rc = cuMemFreeAsync(s->ptr, t->streams[stream]);
    } else {
        rc = cuMemFree(s->ptr);
    }
    t->c.frees_cross += cross && s->api != API_VMM;
    if (!diff_cu(t, rc, "free"))
        return false;
    atomic_fetch_sub(&r->live, s->size);
    diff_note_device(t, d0);
    return true;
}
