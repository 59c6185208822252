/* NCCL's NVLS buffers under spillway against fakecuda: memory made by
 * cuMemCreate (a POSIX file descriptor handle, as NCCL asks) is pooled,
 * and bound to a multicast object by handle (cuMulticastBindMem, and
 * CUDA 13.1's _v2) or by address (cuMulticastBindAddr). The driver cannot
 * bind spillway's handle value nor pool pages that spill may move: the
 * bind makes the handle the driver's first (as an export does), counted
 * once as ipc pass-through, its bytes kept, never spilled afterwards.
 * cuMemAlloc-class pool memory cannot be handed over: its bind by address
 * is refused with CUDA_ERROR_NOT_SUPPORTED.
 *
 * Run by vmm.sh: one 256 MiB device, a 64 MiB limit. */
#include "tests/integration/shim/rig.h"

#include <stdlib.h>
#include <unistd.h>

#define LIMIT (64 * MiB)
#define UCSIZE (8 * MiB)

/* Not in CUDA 13.0's cuda.h. */
CUresult CUDAAPI cuMulticastBindMem_v2(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
                                       size_t mcOffset, CUmemGenericAllocationHandle memHandle,
                                       size_t memOffset, size_t size, unsigned long long flags);

static void grant(CUdeviceptr va, size_t size)
{
    CUmemAccessDesc a = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                         .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va, size, &a, 1));
}

/* What nvlsAllocateMem holds: the unicast buffer and the object. */
struct nvls {
    CUmemAllocationHandleType types;
    CUmemGenericAllocationHandle uc, mc;
    CUdeviceptr ucptr, mcptr;
    size_t mcsize, mcgran;
};

/* The object (a team of one), and the unicast buffer made, mapped, given
 * access and filled with a pattern, as NCCL makes it before the bind. */
static void nvls_begin(struct nvls *n, CUmemAllocationHandleType types)
{
    rig_setup(0);
    n->types = types;
    CUmulticastObjectProp mp = {.numDevices = 1, .size = UCSIZE, .handleTypes = types};
    CU_OK(cuMulticastGetGranularity(&n->mcgran, &mp, CU_MULTICAST_GRANULARITY_RECOMMENDED));
    n->mcsize = (UCSIZE + n->mcgran - 1) / n->mcgran * n->mcgran;
    mp.size = n->mcsize;
    CU_OK(cuMulticastCreate(&n->mc, &mp));
    CU_OK(cuMulticastAddDevice(n->mc, 0));
    CUmemAllocationProp up = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .requestedHandleTypes = types,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    size_t ucgran;
    CU_OK(cuMemGetAllocationGranularity(&ucgran, &up, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    ck_assert_uint_eq(UCSIZE % ucgran, 0);
    CU_OK(cuMemAddressReserve(&n->ucptr, UCSIZE, ucgran, 0, 0));
    CU_OK(cuMemCreate(&n->uc, UCSIZE, &up, 0));
    CU_OK(cuMemMap(n->ucptr, UCSIZE, 0, n->uc, 0));
    grant(n->ucptr, UCSIZE);
    CU_OK(cuMemsetD8(n->ucptr, 0, UCSIZE));
    uint32_t *w = rig_expected(UCSIZE, 300);
    CU_OK(cuMemcpyHtoD(n->ucptr, w, UCSIZE));
    free(w);
    /* Pooled until now, as any cuMemCreate of plain device memory. */
    ck_assert_uint_eq(rig_pool(0).in_use_bytes, UCSIZE);
    ck_assert_uint_eq(rig_pool(0).passthrough_count[SPILLWAY_PT_IPC], 0);
}

/* After the bind: the handle is the driver's, counted once, its bytes
 * kept; the object mapped, and a write through it reaches the memory. */
static void nvls_check_bound(struct nvls *n)
{
    struct spillway_pool_counters c = rig_pool(0);
    ck_assert_uint_eq(c.in_use_bytes, 0);
    ck_assert_uint_eq(c.passthrough_count[SPILLWAY_PT_IPC], 1);
    ck_assert_uint_eq(c.passthrough_bytes[SPILLWAY_PT_IPC], UCSIZE);
    ck_assert_uint_eq(rig_counters(0).used, UCSIZE);
    rig_expect_pattern(n->ucptr, UCSIZE, 300, "the bound buffer");
    CU_OK(cuMemAddressReserve(&n->mcptr, n->mcsize, n->mcgran, 0, 0));
    CU_OK(cuMemMap(n->mcptr, n->mcsize, 0, n->mc, 0));
    grant(n->mcptr, n->mcsize);
    uint32_t *w = rig_expected(2 * MiB, 301);
    CU_OK(cuMemcpyHtoD(n->mcptr + 2 * MiB, w, 2 * MiB));
    CU_OK(cuCtxSynchronize());
    rig_expect_words(n->ucptr + 2 * MiB, w, 2 * MiB, "a write through the multicast mapping");
    free(w);
    /* Pressure past the limit: pool memory spills, the bound buffer stays
     * on the device with its bytes. */
    CUdeviceptr big[3];
    for (int i = 0; i < 3; i++)
        big[i] = rig_filled(LIMIT / 2, 310 + (unsigned)i);
    ck_assert_uint_gt(rig_pool(0).spilled_bytes, 0);
    ck_assert_uint_eq(rig_resident(n->ucptr, UCSIZE, 0), UCSIZE);
    rig_expect_pattern(n->ucptr, 2 * MiB, 300, "the bound buffer under pressure");
    for (int i = 0; i < 3; i++)
        CU_OK(cuMemFree(big[i]));
    ck_assert_uint_eq(rig_counters(0).used, UCSIZE);
}

/* NCCL's teardown: unbind, unmap and release both. */
static void nvls_end(struct nvls *n)
{
    CU_OK(cuMulticastUnbind(n->mc, 0, 0, UCSIZE));
    CU_OK(cuMemUnmap(n->mcptr, n->mcsize));
    CU_OK(cuMemAddressFree(n->mcptr, n->mcsize));
    CU_OK(cuMemRelease(n->mc));
    CU_OK(cuMemUnmap(n->ucptr, UCSIZE));
    CU_OK(cuMemRelease(n->uc));
    CU_OK(cuMemAddressFree(n->ucptr, UCSIZE));
    ck_assert_uint_eq(rig_counters(0).used, 0);
    ck_assert_uint_eq(rig_pool(0).in_use_bytes, 0);
}

START_TEST(bind_mem_as_nccl_does)
{
    struct nvls n;
    nvls_begin(&n, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CU_OK(cuMulticastBindMem(n.mc, 0, n.uc, 0, UCSIZE, 0));
    nvls_check_bound(&n);
    /* The handle answers as asked, and maps again as the driver's. */
    CUmemAllocationProp got;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, n.uc));
    ck_assert_int_eq(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    nvls_end(&n);
}
END_TEST

START_TEST(bind_mem_v2_as_well)
{
    struct nvls n;
    nvls_begin(&n, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CU_OK(cuMulticastBindMem_v2(n.mc, 0, 0, n.uc, 0, UCSIZE, 0));
    nvls_check_bound(&n);
    nvls_end(&n);
}
END_TEST

/* A team on one node that shares nothing: no handle types on either. */
START_TEST(bind_mem_of_a_plain_handle)
{
    struct nvls n;
    nvls_begin(&n, CU_MEM_HANDLE_TYPE_NONE);
    CU_OK(cuMulticastBindMem(n.mc, 0, n.uc, 0, UCSIZE, 0));
    nvls_check_bound(&n);
    nvls_end(&n);
}
END_TEST

/* NCCL's buffer registration binds by address: the pooled handle mapped
 * there is made the driver's. */
START_TEST(bind_addr_of_a_pooled_mapping)
{
    struct nvls n;
    nvls_begin(&n, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    CU_OK(cuMulticastBindAddr(n.mc, 0, n.ucptr, UCSIZE, 0));
    nvls_check_bound(&n);
    nvls_end(&n);
}
END_TEST

/* A bind the driver refuses for its own arguments leaves the handle
 * pooled: no promotion for a call that cannot succeed. */
START_TEST(bind_refused_for_its_arguments_leaves_the_handle_pooled)
{
    struct nvls n;
    nvls_begin(&n, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ck_assert_int_eq(cuMulticastBindMem(n.mc, 0, n.uc, 0, UCSIZE, 1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMulticastBindMem(n.mc, 0, n.uc, 2 * MiB, UCSIZE, 0),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(cuMulticastBindAddr(n.mc, 0, n.ucptr, UCSIZE, 1), CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(rig_pool(0).in_use_bytes, UCSIZE);
    ck_assert_uint_eq(rig_pool(0).passthrough_count[SPILLWAY_PT_IPC], 0);
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemRelease(n.mc));
    CU_OK(cuMemUnmap(n.ucptr, UCSIZE));
    CU_OK(cuMemRelease(n.uc));
    CU_OK(cuMemAddressFree(n.ucptr, UCSIZE));
    ck_assert_uint_eq(rig_counters(0).used, 0);
}
END_TEST

/* cuMemAlloc memory of the pool: pages that spill may move and other
 * allocations share. Refused; the program (NCCL's registration) falls
 * back on its copy path. */
START_TEST(bind_addr_of_pool_memory_is_refused)
{
    struct nvls n;
    nvls_begin(&n, CU_MEM_HANDLE_TYPE_NONE);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 8 * MiB));
    CUdeviceptr in = (p + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
    ck_assert_int_eq(cuMulticastBindAddr(n.mc, 0, in, 2 * MiB, 0), CUDA_ERROR_NOT_SUPPORTED);
    ck_assert_uint_eq(rig_pool(0).passthrough_count[SPILLWAY_PT_IPC], 0);
    CU_OK(cuMemFree(p));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemRelease(n.mc));
    CU_OK(cuMemUnmap(n.ucptr, UCSIZE));
    CU_OK(cuMemRelease(n.uc));
    CU_OK(cuMemAddressFree(n.ucptr, UCSIZE));
}
END_TEST

/* Exported first (PyTorch's IPC of a segment), bound after: the bind
 * names the driver's handle, nothing is counted twice. */
START_TEST(bind_after_an_export)
{
    struct nvls n;
    nvls_begin(&n, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, n.uc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    close(fd);
    CU_OK(cuMulticastBindMem(n.mc, 0, n.uc, 0, UCSIZE, 0));
    nvls_check_bound(&n);
    nvls_end(&n);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_multicast");
    TCase *tc = tcase_create("multicast");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bind_mem_as_nccl_does);
    tcase_add_test(tc, bind_mem_v2_as_well);
    tcase_add_test(tc, bind_mem_of_a_plain_handle);
    tcase_add_test(tc, bind_addr_of_a_pooled_mapping);
    tcase_add_test(tc, bind_refused_for_its_arguments_leaves_the_handle_pooled);
    tcase_add_test(tc, bind_addr_of_pool_memory_is_refused);
    tcase_add_test(tc, bind_after_an_export);
    suite_add_tcase(s, tc);
    return s;
}
