#include "tests/unit/driver/common.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/unit/driver/kernels_ptx.h"

CUcontext test_ctx;

void driver_setup(void)
{
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(&test_ctx, 0));
    CU_OK(cuCtxSetCurrent(test_ctx));
}

void driver_teardown(void)
{
    CU_OK(cuCtxSynchronize());
}

void fakecuda_kernels_register(void); /* kernels.c */

void kernels_load(struct test_kernels *k)
{
    if (fakecuda_present())
        fakecuda_kernels_register();
    CU_OK(cuModuleLoadData(&k->module, kernels_ptx));
    CU_OK(cuModuleGetFunction(&k->fill_u32, k->module, "fill_u32"));
    CU_OK(cuModuleGetFunction(&k->add_u32, k->module, "add_u32"));
    CU_OK(cuModuleGetFunction(&k->wait_flag, k->module, "wait_flag"));
}

CUresult launch_u32(CUfunction f, CUdeviceptr p, unsigned v, size_t n, CUstream s)
{
    unsigned long long count = n;
    void *args[] = {&p, &v, &count};
    return cuLaunchKernel(f, 64, 1, 1, 128, 1, 1, 0, s, args, NULL);
}

void flag_new(struct flag *f)
{
    void *h;
    CU_OK(cuMemHostAlloc(&h, sizeof(unsigned), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    f->host = h;
    *f->host = 0;
    CU_OK(cuMemHostGetDevicePointer(&f->dev, h, 0));
}

void flag_release(struct flag *f)
{
    __atomic_store_n(f->host, 1u, __ATOMIC_SEQ_CST);
}

void stream_block(const struct test_kernels *k, struct flag *f, CUstream s)
{
    void *args[] = {&f->dev};
    CU_OK(cuLaunchKernel(k->wait_flag, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

void expect_u32(CUdeviceptr p, unsigned v, size_t n)
{
    unsigned *buf = malloc(n * sizeof *buf);
    ck_assert_ptr_nonnull(buf);
    CU_OK(cuMemcpyDtoH(buf, p, n * sizeof *buf));
    for (size_t i = 0; i < n; i++)
        if (buf[i] != v)
            ck_abort_msg("word %zu of %zu is %u, expected %u", i, n, buf[i], v);
    free(buf);
}

static void pause_1ms(void)
{
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

void expect_event_pending(CUevent e)
{
    for (int i = 0; i < 50; i++) {
        CU_ERR(cuEventQuery(e), CUDA_ERROR_NOT_READY);
        pause_1ms();
    }
}

void expect_stream_pending(CUstream s)
{
    for (int i = 0; i < 50; i++) {
        CU_ERR(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
        pause_1ms();
    }
}

CUmemAllocationProp prop_device(int dev)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

void set_rw(CUdeviceptr va, size_t size)
{
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_OK(cuMemSetAccess(va, size, &d, 1));
}
