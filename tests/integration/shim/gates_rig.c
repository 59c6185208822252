/* The gates suite's shared helpers (gates_rig.h). */
#include "tests/integration/shim/gates_rig.h"

#include <time.h>

CUcontext setup(int dev)
{
    CUcontext c = rig_setup(dev);
    size_t free_b, total;
    CU_OK(cuMemGetInfo(&free_b, &total));
    ck_assert_msg(total == LIMIT, "device %d's limit is %zu bytes: gates.sh sets %zu", dev, total,
                  (size_t)LIMIT);
    return c;
}

static void sleep_kernel(fakecuda_dim3 g, fakecuda_dim3 b, void **params)
{
    (void)g;
    (void)b;
    unsigned ms = *(unsigned *)params[0];
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

CUfunction sleeper(void)
{
    size_t sz[] = {sizeof(unsigned)};
    ck_assert_int_eq(fakecuda_register_kernel("gates_sleep", sleep_kernel, 1, sz), 0);
    CUmodule m;
    CUfunction f;
    CU_OK(cuModuleLoadData(&m, "fakecuda"));
    CU_OK(cuModuleGetFunction(&f, m, "gates_sleep"));
    return f;
}

void sleep_on(CUstream s, unsigned ms)
{
    void *args[] = {&ms};
    CU_OK(cuLaunchKernel(sleeper(), 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

CUdeviceptr filled(size_t bytes, unsigned seed)
{
    CUdeviceptr p = rig_filled(bytes, seed);
    CU_OK(cuCtxSynchronize());
    return p;
}

CUdeviceptr spill_device0(CUcontext c0)
{
    CU_OK(cuCtxSetCurrent(c0));
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, PAST_BUF));
    ck_assert_uint_gt(rig_pool(0).spill_bytes, 0);
    return x;
}

void spill_device0_leaving_room(CUcontext c0)
{
    CU_OK(cuMemFree(spill_device0(c0)));
    CU_OK(cuCtxSynchronize());
}
