/* Conformance: multicast objects (NVLink SHARP), as NCCL's NVLS transport
 * uses them: cuMulticastCreate, cuMulticastAddDevice, memory bound by
 * handle and by address, the object mapped with cuMemMap, unbound and
 * released. The driver's argument rules are checked on any device that
 * reports CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED; where it is 0 (a PCIe
 * card, no NVSwitch) the object cannot be made and the tests end there.
 * What a write through the multicast mapping does is checked on fakecuda
 * only (on a GPU that is a kernel's multimem store). Tests that need two
 * devices return at once with one: multi_device.sh runs the suite with
 * FAKECUDA_DEVICES=2. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/driver/common.h"

static int supported(void)
{
    int v = -1;
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0));
    ck_assert(v == 0 || v == 1);
    return v;
}

static CUmulticastObjectProp mc_prop(unsigned ndev, size_t size)
{
    CUmulticastObjectProp p;
    memset(&p, 0, sizeof p);
    p.numDevices = ndev;
    p.size = size;
    p.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; /* NCCL's */
    return p;
}

static size_t mc_granularity(CUmulticastGranularity_flags option)
{
    CUmulticastObjectProp p = mc_prop(1, 0);
    size_t g = 0;
    CU_OK(cuMulticastGetGranularity(&g, &p, option));
    return g;
}

static CUmemAllocationProp mem_prop(int dev, CUmemAllocationHandleType types)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    p.requestedHandleTypes = types;
    return p;
}

static void grant(CUdeviceptr va, size_t size, int dev)
{
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = dev;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_OK(cuMemSetAccess(va, size, &d, 1));
}

/* One device's memory as NCCL makes it: a POSIX_FD handle mapped at a
 * range of its own, given access, zeroed. */
struct member {
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    size_t size;
};

static void member_new(struct member *m, int dev, size_t size)
{
    CUmemAllocationProp p = mem_prop(dev, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    m->size = size;
    CU_OK(cuMemAddressReserve(&m->va, size, 0, 0, 0));
    CU_OK(cuMemCreate(&m->h, size, &p, 0));
    CU_OK(cuMemMap(m->va, size, 0, m->h, 0));
    grant(m->va, size, dev);
    CU_OK(cuMemsetD8(m->va, 0, size));
}

static void member_free(struct member *m)
{
    CU_OK(cuMemUnmap(m->va, m->size));
    CU_OK(cuMemRelease(m->h));
    CU_OK(cuMemAddressFree(m->va, m->size));
}

START_TEST(attribute_and_granularity)
{
    if (fakecuda_present())
        ck_assert_int_eq(supported(), 1); /* an H100 SXM's answer, fakecuda's default */
    if (!supported())
        return;
    size_t min = mc_granularity(CU_MULTICAST_GRANULARITY_MINIMUM);
    size_t rec = mc_granularity(CU_MULTICAST_GRANULARITY_RECOMMENDED);
    ck_assert_uint_gt(min, 0);
    ck_assert_uint_ge(rec, min);
    ck_assert_uint_eq(rec % min, 0);
    CUmulticastObjectProp p = mc_prop(1, min);
    size_t g;
    CU_ERR(cuMulticastGetGranularity(NULL, &p, CU_MULTICAST_GRANULARITY_MINIMUM),
           CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMulticastGetGranularity(&g, NULL, CU_MULTICAST_GRANULARITY_MINIMUM),
           CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMulticastGetGranularity(&g, &p, (CUmulticastGranularity_flags)7),
           CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(create_checks_its_arguments)
{
    CUmemGenericAllocationHandle mc;
    if (!supported()) {
        CUmulticastObjectProp p = mc_prop(1, 2 * MiB);
        CU_ERR(cuMulticastCreate(&mc, &p), CUDA_ERROR_NOT_SUPPORTED);
        return;
    }
    size_t min = mc_granularity(CU_MULTICAST_GRANULARITY_MINIMUM);
    CUmulticastObjectProp p = mc_prop(1, min);
    CU_ERR(cuMulticastCreate(NULL, &p), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMulticastCreate(&mc, NULL), CUDA_ERROR_INVALID_VALUE);
    p.size = 0;
    CU_ERR(cuMulticastCreate(&mc, &p), CUDA_ERROR_INVALID_VALUE);
    p.size = min + min / 2;
    CU_ERR(cuMulticastCreate(&mc, &p), CUDA_ERROR_INVALID_VALUE);
    p = mc_prop(0, min);
    CU_ERR(cuMulticastCreate(&mc, &p), CUDA_ERROR_INVALID_VALUE);
    p = mc_prop(1, min);
    p.flags = 1;
    CU_ERR(cuMulticastCreate(&mc, &p), CUDA_ERROR_INVALID_VALUE);
    p.flags = 0;
    CU_OK(cuMulticastCreate(&mc, &p));
    CU_ERR(cuMulticastAddDevice(mc, -1), CUDA_ERROR_INVALID_DEVICE);
    CU_OK(cuMulticastAddDevice(mc, 0));
    CU_OK(cuMemRelease(mc));
    if (fakecuda_present())
        ck_assert_uint_eq(fakecuda_live_handles(), 0);
}
END_TEST

/* NCCL's nvlsAllocateMem on one device: the team of one is complete, the
 * memory bound by handle, the object mapped, then unbound and released.
 * Every argument rule of the bind is tried on the way. */
START_TEST(bind_mem_as_nccl_does)
{
    if (!supported())
        return;
    size_t min = mc_granularity(CU_MULTICAST_GRANULARITY_MINIMUM);
    size_t rec = mc_granularity(CU_MULTICAST_GRANULARITY_RECOMMENDED);
    size_t dev0 = fakecuda_present() ? fakecuda_device_bytes_used(0) : 0;
    size_t ucsize = 2 * min, mcsize = (ucsize + rec - 1) / rec * rec;
    CUmulticastObjectProp p = mc_prop(1, mcsize);
    CUmemGenericAllocationHandle mc;
    CU_OK(cuMulticastCreate(&mc, &p));
    CU_OK(cuMulticastAddDevice(mc, 0));
    struct member m;
    member_new(&m, 0, ucsize);
    /* A handle the driver does not know (released), misaligned offsets
     * and sizes, past the memory or the object, flags: refused. */
    CUmemAllocationProp fp = mem_prop(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CUmemGenericAllocationHandle gone;
    CU_OK(cuMemCreate(&gone, min, &fp, 0));
    CU_OK(cuMemRelease(gone));
    CU_ERR(cuMulticastBindMem(mc, 0, gone, 0, min, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMulticastBindMem(mc, 0, m.h, min / 2, min, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMulticastBindMem(mc, min / 2, m.h, 0, min, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMulticastBindMem(mc, 0, m.h, 0, min / 2, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMulticastBindMem(mc, 0, m.h, min, ucsize, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMulticastBindMem(mc, mcsize - min, m.h, 0, ucsize, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMulticastBindMem(mc, 0, m.h, 0, ucsize, 1), CUDA_ERROR_INVALID_VALUE);
    /* "Externally shareable ... multicast objects can be bound only to
     * externally shareable memory." */
    CUmemAllocationProp np = mem_prop(0, CU_MEM_HANDLE_TYPE_NONE);
    CUmemGenericAllocationHandle plain;
    CU_OK(cuMemCreate(&plain, min, &np, 0));
    ck_assert_int_ne(cuMulticastBindMem(mc, 0, plain, 0, min, 0), CUDA_SUCCESS);
    CU_OK(cuMemRelease(plain));
    CU_OK(cuMulticastBindMem(mc, 0, m.h, 0, ucsize, 0));
    CUdeviceptr mcva;
    CU_OK(cuMemAddressReserve(&mcva, mcsize, min, 0, 0));
    CU_OK(cuMemMap(mcva, mcsize, 0, mc, 0));
    grant(mcva, mcsize, 0);
    if (fakecuda_present()) /* the object holds no memory of its own */
        ck_assert_uint_eq(fakecuda_device_bytes_used(0), dev0 + ucsize);
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMulticastUnbind(mc, 0, 0, ucsize));
    CU_OK(cuMemUnmap(mcva, mcsize));
    CU_OK(cuMemAddressFree(mcva, mcsize));
    CU_OK(cuMemRelease(mc));
    member_free(&m);
    if (fakecuda_present()) {
        ck_assert_uint_eq(fakecuda_device_bytes_used(0), dev0);
        ck_assert_uint_eq(fakecuda_live_handles(), 0);
    }
}
END_TEST

/* NCCL's buffer registration: memory bound by its mapped address. */
START_TEST(bind_addr_takes_mapped_memory)
{
    if (!supported())
        return;
    size_t min = mc_granularity(CU_MULTICAST_GRANULARITY_MINIMUM);
    CUmulticastObjectProp p = mc_prop(1, 2 * min);
    CUmemGenericAllocationHandle mc;
    CU_OK(cuMulticastCreate(&mc, &p));
    CU_OK(cuMulticastAddDevice(mc, 0));
    struct member m;
    member_new(&m, 0, 2 * min);
    CU_ERR(cuMulticastBindAddr(mc, 0, m.va + min / 2, min, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMulticastBindAddr(mc, 0, m.va + min, 2 * min, 0), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuMulticastBindAddr(mc, 0, m.va, min, 1), CUDA_ERROR_INVALID_VALUE);
    /* Not cuMemCreate memory: refused. */
    CUdeviceptr legacy;
    CU_OK(cuMemAlloc(&legacy, 4 * min));
    CUdeviceptr inside = (legacy + min - 1) / min * min;
    ck_assert_int_ne(cuMulticastBindAddr(mc, 0, inside, min, 0), CUDA_SUCCESS);
    CU_OK(cuMemFree(legacy));
    CU_OK(cuMulticastBindAddr(mc, 0, m.va + min, min, 0));
    CU_OK(cuMulticastUnbind(mc, 0, 0, min));
    CU_OK(cuMemRelease(mc));
    member_free(&m);
    if (fakecuda_present())
        ck_assert_uint_eq(fakecuda_live_handles(), 0);
}
END_TEST

/* fakecuda only: a copy or set through the multicast mapping reaches the
 * memory of every device bound there; an unbound device's memory keeps
 * what it had. With one device the team is that device. */
START_TEST(writes_through_the_mapping_reach_every_member)
{
    if (!fakecuda_present())
        return;
    int ndev = 0;
    CU_OK(cuDeviceGetCount(&ndev));
    size_t dev0 = fakecuda_device_bytes_used(0);
    size_t min = mc_granularity(CU_MULTICAST_GRANULARITY_MINIMUM);
    size_t size = 2 * min;
    CUmulticastObjectProp p = mc_prop((unsigned)ndev, size);
    CUmemGenericAllocationHandle mc;
    CU_OK(cuMulticastCreate(&mc, &p));
    for (int d = 0; d < ndev; d++)
        CU_OK(cuMulticastAddDevice(mc, d));
    struct member m[8];
    for (int d = 0; d < ndev; d++) {
        member_new(&m[d], d, size);
        CU_OK(cuMulticastBindMem(mc, 0, m[d].h, 0, size, 0));
    }
    CUdeviceptr mcva;
    CU_OK(cuMemAddressReserve(&mcva, size, min, 0, 0));
    CU_OK(cuMemMap(mcva, size, 0, mc, 0));
    grant(mcva, size, 0);
    CU_OK(cuMemsetD32(mcva, 0x5eed5eedu, size / 4));
    unsigned words[4] = {1, 2, 3, 4};
    CU_OK(cuMemcpyHtoD(mcva + min + 64, words, sizeof words));
    for (int d = 0; d < ndev; d++) {
        expect_u32(m[d].va, 0x5eed5eedu, min / 4);
        unsigned got[4];
        CU_OK(cuMemcpyDtoH(got, m[d].va + min + 64, sizeof got));
        ck_assert_mem_eq(got, words, sizeof words);
    }
    /* A read through the mapping gives a member's bytes. */
    unsigned back[4];
    CU_OK(cuMemcpyDtoH(back, mcva + min + 64, sizeof back));
    ck_assert_mem_eq(back, words, sizeof words);
    if (ndev > 1) {
        CU_OK(cuMulticastUnbind(mc, 1, 0, size));
        CU_OK(cuMemsetD32(mcva, 7, size / 4));
        CU_OK(cuCtxSynchronize());
        expect_u32(m[0].va, 7, size / 4);
        expect_u32(m[1].va, 0x5eed5eedu, min / 4);
    }
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemUnmap(mcva, size));
    CU_OK(cuMemAddressFree(mcva, size));
    CU_OK(cuMemRelease(mc)); /* the bindings left go with it */
    for (int d = 0; d < ndev; d++)
        member_free(&m[d]);
    ck_assert_uint_eq(fakecuda_live_handles(), 0);
    ck_assert_uint_eq(fakecuda_device_bytes_used(0), dev0);
}
END_TEST

/* fakecuda only: a binding holds its memory as a mapping does, until the
 * unbind. */
START_TEST(bound_memory_outlives_its_release)
{
    if (!fakecuda_present() || !supported())
        return;
    size_t min = mc_granularity(CU_MULTICAST_GRANULARITY_MINIMUM);
    CUmulticastObjectProp p = mc_prop(1, min);
    CUmemGenericAllocationHandle mc, h;
    CU_OK(cuMulticastCreate(&mc, &p));
    CU_OK(cuMulticastAddDevice(mc, 0));
    CUmemAllocationProp fp = mem_prop(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    size_t dev0 = fakecuda_device_bytes_used(0);
    CU_OK(cuMemCreate(&h, min, &fp, 0));
    CU_OK(cuMulticastBindMem(mc, 0, h, 0, min, 0));
    CU_OK(cuMemRelease(h));
    ck_assert_uint_eq(fakecuda_device_bytes_used(0), dev0 + min);
    CU_OK(cuMulticastUnbind(mc, 0, 0, min));
    ck_assert_uint_eq(fakecuda_device_bytes_used(0), dev0);
    CU_OK(cuMemRelease(mc));
    ck_assert_uint_eq(fakecuda_live_handles(), 0);
}
END_TEST

struct bind_arg {
    CUcontext ctx;
    CUmemGenericAllocationHandle mc, mem;
    size_t size;
    volatile int done;
    CUresult r;
};

static void *bind_thread(void *arg)
{
    struct bind_arg *a = arg;
    cuCtxSetCurrent(a->ctx);
    a->r = cuMulticastBindMem(a->mc, 0, a->mem, 0, a->size, 0);
    __atomic_store_n(&a->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* "Any calls to cuMulticastBindMem ... will block until all devices have
 * been added." Two devices. */
START_TEST(bind_waits_for_the_whole_team)
{
    int ndev = 0;
    CU_OK(cuDeviceGetCount(&ndev));
    if (ndev < 2 || !supported())
        return;
    size_t min = mc_granularity(CU_MULTICAST_GRANULARITY_MINIMUM);
    CUmulticastObjectProp p = mc_prop(2, min);
    struct bind_arg a = {.ctx = test_ctx, .size = min};
    CU_OK(cuMulticastCreate(&a.mc, &p));
    CU_OK(cuMulticastAddDevice(a.mc, 0));
    CUmemAllocationProp fp = mem_prop(0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CU_OK(cuMemCreate(&a.mem, min, &fp, 0));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, bind_thread, &a), 0);
    struct timespec ms100 = {0, 100 * 1000 * 1000};
    nanosleep(&ms100, NULL);
    ck_assert_int_eq(__atomic_load_n(&a.done, __ATOMIC_SEQ_CST), 0);
    CU_OK(cuMulticastAddDevice(a.mc, 1));
    pthread_join(t, NULL);
    CU_OK(a.r);
    CU_OK(cuMulticastUnbind(a.mc, 0, 0, min));
    CU_OK(cuMemRelease(a.mem));
    CU_OK(cuMemRelease(a.mc));
}
END_TEST

/* fakecuda only: FAKECUDA_MULTICAST=0 is a device without multicast. */
START_TEST(multicast_can_be_switched_off)
{
    if (!fakecuda_present())
        return;
    setenv("FAKECUDA_MULTICAST", "0", 1);
    CU_OK(cuInit(0));
    ck_assert_int_eq(supported(), 0);
    CUmulticastObjectProp p = mc_prop(1, 2 * MiB);
    CUmemGenericAllocationHandle mc;
    size_t g;
    CU_ERR(cuMulticastCreate(&mc, &p), CUDA_ERROR_NOT_SUPPORTED);
    CU_ERR(cuMulticastGetGranularity(&g, &p, CU_MULTICAST_GRANULARITY_MINIMUM),
           CUDA_ERROR_NOT_SUPPORTED);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_multicast");
    TCase *tc = tcase_create("multicast");
    tcase_add_checked_fixture(tc, driver_setup, driver_teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, attribute_and_granularity);
    tcase_add_test(tc, create_checks_its_arguments);
    tcase_add_test(tc, bind_mem_as_nccl_does);
    tcase_add_test(tc, bind_addr_takes_mapped_memory);
    tcase_add_test(tc, writes_through_the_mapping_reach_every_member);
    tcase_add_test(tc, bound_memory_outlives_its_release);
    tcase_add_test(tc, bind_waits_for_the_whole_team);
    suite_add_tcase(s, tc);
    TCase *off = tcase_create("off");
    tcase_add_test(off, multicast_can_be_switched_off);
    suite_add_tcase(s, off);
    return s;
}
