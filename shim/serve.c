/* The hot path: allocations and frees served from the page pool, kept in
 * the one byte count per device (account.c) that the limit, cuMemGetInfo
 * and the stats read. policy/ knows each allocation's size, so the shim
 * keeps no table of its own for pool memory, but for the blocks served
 * from a memory pool, whose usage attributes count them (pool_use.h).
 * With spill the count may pass
 * the limit: the pool never holds more device pages than the limit and
 * moves what does not fit to host memory; it answers out of memory only
 * when the host limit (or host memory) is exhausted too. */
#include "shim/account.h"
#include "shim/ctx_blocks.h"
#include "shim/gate_use.h"
#include "shim/handler.h"
#include "shim/pool_use.h"
#include "shim/pool_setup.h"

int spw_pool_reserve(int dev, uint64_t bytes)
{
    /* Every allocation the pool serves (cuMemAlloc and kin, cuMemCreate):
     * the driver's idle graph memory goes before anything spills or is
     * refused (graph_mem.h). */
    spw_graph_mem_make_room(dev, bytes);
    if (!spw_pool_spills(dev))
        return spw_account_reserve(dev, bytes);
    /* Oversubscribed, the program was told F x the limit and sizes itself
     * to it: that is its cap, and the host limit was checked to hold the
     * part past the limit. At the default factor, spill stays the safety
     * net it was, bounded by the host limit alone. */
    if (spw_config()->oversubscribe > 1.0)
        return spw_account_reserve_told(dev, bytes);
    spw_account_add(dev, bytes);
    return 0;
}

/* The contexts a pool block is allocated or freed in are those its work
 * likely runs in: a sync that releases freed blocks for reuse must cover
 * them (contexts.h). While some pool spills, every gated submission notes
 * the contexts its work runs in, and this is not needed; with spill off
 * nothing else would, and a block freed in a context the program made was
 * handed out under that context's queued work. Once per thread and context
 * (a thread-local compare after the driver's current context otherwise). */
static void note_contexts(int async, CUstream stream)
{
    if (spw_gate())
        return;
    spw_gate_note_context();
    if (async)
        spw_gate_note_stream(stream);
}

CUresult spw_serve_alloc(sw_policy *p, int dev, size_t bytes, int async, CUstream stream,
                         CUdeviceptr *out)
{
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE; /* before reserving: the driver's answer */
    if (spw_pool_reserve(dev, bytes))
        return CUDA_ERROR_OUT_OF_MEMORY;
    note_contexts(async, stream);
    CUdeviceptr ptr;
    CUresult r = async ? sw_alloc_async(p, dev, bytes, stream, &ptr) : sw_alloc(p, dev, bytes, &ptr);
    if (r != CUDA_SUCCESS) {
        spw_account_unreserve(dev, bytes);
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            spw_account_note_pool_oom(dev, bytes, (int)sw_refusal_reason());
        if (spw_pool_spills(dev))
            spw_pool_publish(dev); /* it may have spilled before giving up */
        return r;
    }
    *out = ptr;
    spw_account_commit_pool(dev, bytes);
    spw_pool_publish(dev); /* pool size, and what a spill just moved */
    spw_mark_counted();
    return CUDA_SUCCESS;
}

CUresult spw_serve_free(sw_policy *p, CUdeviceptr ptr, int async, CUstream stream)
{
    int dev;
    size_t bytes;
    note_contexts(async, stream);
    spw_pool_use_ticket pool_use;
    bool from_pool = spw_pool_use_take(ptr, &pool_use);
    CUcontext made_in;
    int made_on;
    spw_ctx_blocks_take(ptr, &made_in, &made_on);
    CUresult r = sw_free_sized(p, ptr, async, stream, &dev, &bytes);
    if (r != CUDA_SUCCESS) {
        if (from_pool)
            spw_pool_use_undo(ptr, &pool_use);
        spw_ctx_blocks_undo(ptr, made_on, made_in);
        return r;
    }
    if (from_pool)
        spw_pool_use_done(&pool_use, sw_footprint(p, dev, bytes));
    spw_account_release(dev, bytes);
    if (spw_pool_spills(dev))
        spw_pool_publish(dev); /* freeing spilled data shrinks the spilled gauge */
    spw_mark_counted();
    return CUDA_SUCCESS;
}
