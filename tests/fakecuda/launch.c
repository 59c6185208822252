/* fakecuda: kernel launches. A launch is data (struct fc_kernel_call): run
 * at once, or captured into a graph's kernel node and run at each graph
 * launch. The kernels and the functions naming them are kernel.c's. */
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/graph.h"
#include "tests/fakecuda/internal.h"

/* Finds the argument buffer in CU_LAUNCH_PARAM_* extra options. */
static CUresult extra_buffer(void **extra, const unsigned char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            *buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            *len = *(size_t *)extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    return *buf ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Points params[] (or extra[]) into k's own copy of the arguments. */
void fc_kernel_call_rebase(struct fc_kernel_call *k)
{
    memset(k->params, 0, sizeof k->params);
    memset(k->extra, 0, sizeof k->extra);
    if (k->via_extra) {
        k->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
        k->extra[1] = k->args;
        k->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
        k->extra[3] = &k->size;
        k->extra[4] = CU_LAUNCH_PARAM_END;
    }
    for (unsigned i = 0; i < k->fn->nparams; i++)
        k->params[i] = k->args + k->fn->offset[i];
}

/* The driver reads kernelParams (or the extra buffer) at the call: the
 * caller may reuse them at once, so the launch keeps a copy. */
CUresult fc_kernel_call_init(struct fc_kernel_call *k, CUfunction f, fakecuda_dim3 grid,
                             fakecuda_dim3 block, unsigned shmem, void **params, void **extra)
{
    memset(k, 0, sizeof *k);
    struct CUfunc_st *fn = fc_func_resolve(f);
    if (!fn)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z ||
        (size_t)block.x * block.y * block.z > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    size_t total = fn->nparams ? fn->offset[fn->nparams - 1] + fn->size[fn->nparams - 1] : 0;
    const unsigned char *packed = NULL;
    size_t packed_len = 0;
    CUresult r;
    if (!params && extra) {
        if ((r = extra_buffer(extra, &packed, &packed_len)) != CUDA_SUCCESS)
            return r;
        if (packed_len < total)
            return CUDA_ERROR_INVALID_VALUE;
    } else if (!params && fn->nparams) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    k->args = malloc(total ? total : 1);
    if (!k->args)
        return CUDA_ERROR_OUT_OF_MEMORY;
    k->fn = fn;
    k->func = f;
    k->grid = grid;
    k->block = block;
    k->shmem = shmem;
    k->size = total;
    k->via_extra = packed != NULL;
    for (unsigned i = 0; i < fn->nparams; i++)
        memcpy(k->args + fn->offset[i], packed ? packed + fn->offset[i] : params[i], fn->size[i]);
    fc_kernel_call_rebase(k);
    return CUDA_SUCCESS;
}

CUresult fc_kernel_call_copy(struct fc_kernel_call *dst, const struct fc_kernel_call *src)
{
    *dst = *src;
    dst->args = malloc(src->size ? src->size : 1);
    if (!dst->args)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(dst->args, src->args, src->size);
    fc_kernel_call_rebase(dst);
    return CUDA_SUCCESS;
}

void fc_kernel_call_free(struct fc_kernel_call *k)
{
    free(k->args);
    k->args = NULL;
}

void fc_kernel_call_run(const struct fc_kernel_call *k)
{
    /* The kernel gets pointers into a copy of its own: a kernel that writes
     * its parameters must not change what the next graph launch passes. */
    unsigned char stack[256];
    unsigned char *copy = k->size <= sizeof stack ? stack : malloc(k->size);
    if (!copy)
        abort(); /* as fc_stream_enqueue: tests are small */
    memcpy(copy, k->args, k->size);
    void *params[FAKECUDA_MAX_PARAMS] = {0};
    for (unsigned i = 0; i < k->fn->nparams; i++)
        params[i] = copy + k->fn->offset[i];
    k->fn->fn(k->grid, k->block, params);
    if (copy != stack)
        free(copy);
}

static void run_launch(void *arg)
{
    struct fc_kernel_call *k = arg;
    fc_kernel_call_run(k);
    fc_kernel_call_free(k);
    free(k);
}

CUresult fc_launch(CUfunction f, fakecuda_dim3 grid, fakecuda_dim3 block, unsigned shmem, CUstream h,
                   void **params, void **extra, bool ptds)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    struct fc_kernel_call *k = malloc(sizeof *k);
    if (!k)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = fc_kernel_call_init(k, f, grid, block, shmem, params, extra)) != CUDA_SUCCESS) {
        free(k);
        return r;
    }
    bool capturing;
    if ((r = fc_capture_enter(s, &capturing)) != CUDA_SUCCESS || capturing) {
        struct CUgraphNode_st *n = r == CUDA_SUCCESS ? fc_node_new(CU_GRAPH_NODE_TYPE_KERNEL) : NULL;
        if (n) {
            n->u.kernel = *k; /* the node takes the arguments */
            fc_kernel_call_rebase(&n->u.kernel);
            k->args = NULL;
        }
        fc_kernel_call_free(k);
        free(k);
        return r == CUDA_SUCCESS ? fc_capture_add(s, n) : r;
    }
    fc_stream_enqueue(s, run_launch, k, NULL);
    return CUDA_SUCCESS;
}

#define DIM(x, y, z) ((fakecuda_dim3){(x), (y), (z)})

FC_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                  unsigned by, unsigned bz, unsigned shmem, CUstream h, void **params,
                                  void **extra)
{
    FC_FAULT(cuLaunchKernel);
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE; /* one form or the other, documented */
    return fc_launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), shmem, h, params, extra, false);
}

FC_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                       unsigned by, unsigned bz, unsigned shmem, CUstream h,
                                       void **params, void **extra)
{
    FC_FAULT(cuLaunchKernel);
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    return fc_launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), shmem, h, params, extra, true);
}

/* A cooperative launch runs like any other here: fakecuda runs the whole
 * grid in one call, so its blocks can always synchronize. */
FC_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                             unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                             CUstream h, void **params)
{
    FC_FAULT(cuLaunchCooperativeKernel);
    return fc_launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), shmem, h, params, NULL, false);
}

FC_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                  unsigned gz, unsigned bx, unsigned by,
                                                  unsigned bz, unsigned shmem, CUstream h,
                                                  void **params)
{
    FC_FAULT(cuLaunchCooperativeKernel);
    return fc_launch(f, DIM(gx, gy, gz), DIM(bx, by, bz), shmem, h, params, NULL, true);
}

/* CUDA 9.0's multi-device cooperative launch (deprecated since 11.3, still
 * exported): one kernel per device, each on a stream the program created
 * ("the NULL stream or CU_STREAM_LEGACY or CU_STREAM_PER_THREAD cannot be
 * used"), no two on one device, the same code, grid, block and shared
 * memory everywhere. Unless the flags say otherwise, no kernel begins
 * before the prior work of every stream named is complete, and no later
 * work of any of them begins before every kernel is: each kernel's op
 * first waits for the others' markers (queued behind their prior work),
 * and an op after each kernel waits for the other kernels. fakecuda's
 * kernels need no grid-wide synchronisation across devices (each runs
 * its whole grid in one call). Not capturable: a capturing stream gets
 * the capture's refusal. */
struct multi_launch {
    struct fc_kernel_call k;
    struct fc_dep wait[FC_MAX_DEVICES];
    unsigned nwait;
};

static void run_multi_wait(void *arg)
{
    struct multi_launch *m = arg;
    for (unsigned i = 0; i < m->nwait; i++)
        fc_dep_wait(&m->wait[i]);
}

static void run_multi_launch(void *arg)
{
    struct multi_launch *m = arg;
    run_multi_wait(m);
    fc_kernel_call_run(&m->k);
    fc_kernel_call_free(&m->k);
    free(m);
}

static void run_multi_after(void *arg)
{
    run_multi_wait(arg);
    free(arg);
}

static void run_nothing(void *arg)
{
    (void)arg;
}

FC_EXPORT CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *list, unsigned int n,
                                                        unsigned int flags)
{
    FC_FAULT(cuLaunchCooperativeKernelMultiDevice);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!list || !n || n > (unsigned)fc_ndevices ||
        (flags & ~(unsigned)(CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC |
                             CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s[FC_MAX_DEVICES];
    bool used[FC_MAX_DEVICES] = {false};
    for (unsigned i = 0; i < n; i++) {
        const CUDA_LAUNCH_PARAMS *l = &list[i];
        if (!l->hStream || l->hStream == CU_STREAM_LEGACY || l->hStream == CU_STREAM_PER_THREAD)
            return CUDA_ERROR_INVALID_VALUE;
        if ((r = fc_stream_resolve(l->hStream, false, &s[i])) != CUDA_SUCCESS)
            return r;
        int dev = fc_stream_device(s[i]);
        if (dev < 0 || dev >= FC_MAX_DEVICES || used[dev])
            return CUDA_ERROR_INVALID_VALUE;
        used[dev] = true;
        struct CUfunc_st *fn = fc_func_resolve(l->function);
        if (!fn)
            return CUDA_ERROR_INVALID_HANDLE;
        if (i && (fn->fn != fc_func_resolve(list[0].function)->fn || l->gridDimX != list[0].gridDimX ||
                  l->gridDimY != list[0].gridDimY || l->gridDimZ != list[0].gridDimZ ||
                  l->blockDimX != list[0].blockDimX || l->blockDimY != list[0].blockDimY ||
                  l->blockDimZ != list[0].blockDimZ || l->sharedMemBytes != list[0].sharedMemBytes))
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned i = 0; i < n; i++) {
        bool capturing;
        if ((r = fc_capture_enter(s[i], &capturing)) != CUDA_SUCCESS)
            return r;
        if (capturing)
            return fc_capture_add(s[i], NULL);
    }
    struct multi_launch *m[FC_MAX_DEVICES] = {NULL};
    for (unsigned i = 0; i < n && r == CUDA_SUCCESS; i++) {
        const CUDA_LAUNCH_PARAMS *l = &list[i];
        if (!(m[i] = calloc(1, sizeof *m[i])))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else if ((r = fc_kernel_call_init(&m[i]->k, l->function, DIM(l->gridDimX, l->gridDimY, l->gridDimZ),
                                          DIM(l->blockDimX, l->blockDimY, l->blockDimZ), l->sharedMemBytes,
                                          l->kernelParams, NULL)) != CUDA_SUCCESS) {
            free(m[i]);
            m[i] = NULL;
        }
    }
    if (r != CUDA_SUCCESS) {
        for (unsigned i = 0; i < n; i++)
            if (m[i]) {
                fc_kernel_call_free(&m[i]->k);
                free(m[i]);
            }
        return r;
    }
    struct fc_dep done[FC_MAX_DEVICES];
    if (!(flags & CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC)) {
        for (unsigned i = 0; i < n; i++)
            done[i] = (struct fc_dep){s[i], fc_stream_enqueue(s[i], run_nothing, NULL, NULL)};
        for (unsigned i = 0; i < n; i++)
            for (unsigned j = 0; j < n; j++)
                if (j != i)
                    m[i]->wait[m[i]->nwait++] = done[j];
    }
    for (unsigned i = 0; i < n; i++)
        done[i] = (struct fc_dep){s[i], fc_stream_enqueue(s[i], run_multi_launch, m[i], NULL)};
    if (!(flags & CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC) && n > 1)
        for (unsigned i = 0; i < n; i++) {
            struct multi_launch *after = calloc(1, sizeof *after);
            if (!after)
                abort(); /* as fc_stream_enqueue: tests are small */
            for (unsigned j = 0; j < n; j++)
                if (j != i)
                    after->wait[after->nwait++] = done[j];
            fc_stream_enqueue(s[i], run_multi_after, after, NULL);
        }
    return CUDA_SUCCESS;
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra, bool ptds)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    return fc_launch(f, DIM(c->gridDimX, c->gridDimY, c->gridDimZ),
                  DIM(c->blockDimX, c->blockDimY, c->blockDimZ), c->sharedMemBytes, c->hStream,
                  params, extra, ptds);
}

FC_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    FC_FAULT(cuLaunchKernelEx);
    return launch_ex(c, f, params, extra, false);
}

FC_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    FC_FAULT(cuLaunchKernelEx);
    return launch_ex(c, f, params, extra, true);
}
