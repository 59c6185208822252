/* fakecuda: the launch API of CUDA 2.0, deprecated but still in cuda.h and
 * the driver: a function's block shape, dynamic shared memory and argument
 * bytes are state of the function, set by cuFuncSetBlockShape,
 * cuFuncSetSharedSize and cuParamSet{Size,i,f,v}, and cuLaunch,
 * cuLaunchGrid and cuLaunchGridAsync launch it with that state: here, as
 * cuLaunchKernel with the bytes as its CU_LAUNCH_PARAM_BUFFER_POINTER. A
 * program using them submits work like any other (spillway must gate it). */
#include <string.h>

#include "tests/fakecuda/internal.h"

#define MAX_FUNCS 128
#define PARAM_BYTES 4096 /* the driver's limit for these calls */

struct legacy {
    CUfunction f;
    fakecuda_dim3 block;
    unsigned shmem;
    size_t size;
    unsigned char bytes[PARAM_BYTES];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct legacy state[MAX_FUNCS];
static unsigned nstate;

/* Under the lock: f's state, made (block 1x1x1, no bytes) the first time;
 * NULL when f is no function or the table is full. */
static struct legacy *state_of(CUfunction f)
{
    if (!fc_func_resolve(f))
        return NULL;
    for (unsigned i = 0; i < nstate; i++)
        if (state[i].f == f)
            return &state[i];
    if (nstate == MAX_FUNCS)
        return NULL;
    struct legacy *l = &state[nstate++];
    memset(l, 0, sizeof *l);
    l->f = f;
    l->block = (fakecuda_dim3){1, 1, 1};
    return l;
}

/* f's state with the lock held, or NULL (unlocked, *r the error). */
static struct legacy *lock_state(CUfunction f, CUresult *r)
{
    if ((*r = fc_initialized()) != CUDA_SUCCESS)
        return NULL;
    pthread_mutex_lock(&lock);
    struct legacy *l = state_of(f);
    if (!l) {
        pthread_mutex_unlock(&lock);
        *r = CUDA_ERROR_INVALID_HANDLE;
    }
    return l;
}

static CUresult unlock(CUresult r)
{
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult put(CUfunction f, int offset, const void *p, size_t n)
{
    CUresult r;
    struct legacy *l = lock_state(f, &r);
    if (!l)
        return r;
    if (offset < 0 || (size_t)offset + n > PARAM_BYTES || (n && !p))
        return unlock(CUDA_ERROR_INVALID_VALUE);
    memcpy(l->bytes + offset, p, n);
    return unlock(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuFuncSetBlockShape(CUfunction f, int x, int y, int z)
{
    FC_FAULT(cuFuncSetBlockShape);
    CUresult r;
    struct legacy *l = lock_state(f, &r);
    if (!l)
        return r;
    if (x <= 0 || y <= 0 || z <= 0)
        return unlock(CUDA_ERROR_INVALID_VALUE);
    l->block = (fakecuda_dim3){(unsigned)x, (unsigned)y, (unsigned)z};
    return unlock(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuFuncSetSharedSize(CUfunction f, unsigned int bytes)
{
    FC_FAULT(cuFuncSetSharedSize);
    CUresult r;
    struct legacy *l = lock_state(f, &r);
    if (!l)
        return r;
    l->shmem = bytes;
    return unlock(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuParamSetSize(CUfunction f, unsigned int numbytes)
{
    FC_FAULT(cuParamSetSize);
    CUresult r;
    struct legacy *l = lock_state(f, &r);
    if (!l)
        return r;
    if (numbytes > PARAM_BYTES)
        return unlock(CUDA_ERROR_INVALID_VALUE);
    l->size = numbytes;
    return unlock(CUDA_SUCCESS);
}

FC_EXPORT CUresult cuParamSeti(CUfunction f, int offset, unsigned int value)
{
    FC_FAULT(cuParamSeti);
    return put(f, offset, &value, sizeof value);
}

FC_EXPORT CUresult cuParamSetf(CUfunction f, int offset, float value)
{
    FC_FAULT(cuParamSetf);
    return put(f, offset, &value, sizeof value);
}

FC_EXPORT CUresult cuParamSetv(CUfunction f, int offset, void *ptr, unsigned int numbytes)
{
    FC_FAULT(cuParamSetv);
    return put(f, offset, ptr, numbytes);
}

/* The launch with f's state as it is now: the bytes are copied at the call,
 * as the driver reads them then. */
static CUresult launch_grid(CUfunction f, int w, int h, CUstream s)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (w <= 0 || h <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct legacy *l = lock_state(f, &r);
    if (!l)
        return r;
    struct legacy now = *l;
    unlock(CUDA_SUCCESS);
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, now.bytes, CU_LAUNCH_PARAM_BUFFER_SIZE, &now.size,
                     CU_LAUNCH_PARAM_END};
    return fc_launch(f, (fakecuda_dim3){(unsigned)w, (unsigned)h, 1}, now.block, now.shmem, s, NULL, extra,
                     false);
}

FC_EXPORT CUresult cuLaunch(CUfunction f)
{
    FC_FAULT(cuLaunch);
    return launch_grid(f, 1, 1, NULL);
}

FC_EXPORT CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height)
{
    FC_FAULT(cuLaunchGrid);
    return launch_grid(f, grid_width, grid_height, NULL);
}

FC_EXPORT CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream)
{
    FC_FAULT(cuLaunchGridAsync);
    return launch_grid(f, grid_width, grid_height, hStream);
}
