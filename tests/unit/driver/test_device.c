/* Conformance: init, version, devices, attributes, contexts, errors. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stdio.h>

#include "tests/unit/driver/common.h"

START_TEST(not_initialized_before_cuInit)
{
    int n;
    CUdevice d;
    CU_ERR(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    CU_ERR(cuDeviceGet(&d, 0), CUDA_ERROR_NOT_INITIALIZED);
    CU_ERR(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuInit(0));
    CU_OK(cuInit(0)); /* idempotent */
    CU_OK(cuDeviceGetCount(&n));
    ck_assert_int_ge(n, 1);
}
END_TEST

START_TEST(driver_version)
{
    int v = 0;
    CU_OK(cuDriverGetVersion(&v)); /* allowed before cuInit */
    ck_assert_int_ge(v, 12000);
    if (fakecuda_present())
        ck_assert_int_eq(v, 13000);
    CU_ERR(cuDriverGetVersion(NULL), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(devices_and_attributes)
{
    CU_OK(cuInit(0));
    int n;
    CU_OK(cuDeviceGetCount(&n));
    const char *env = getenv("FAKECUDA_DEVICES");
    if (fakecuda_present())
        ck_assert_int_eq(n, env ? atoi(env) : 1);
    CUdevice d;
    CU_ERR(cuDeviceGet(&d, n), CUDA_ERROR_INVALID_DEVICE);
    CU_ERR(cuDeviceGet(&d, -1), CUDA_ERROR_INVALID_DEVICE);
    CU_OK(cuDeviceGet(&d, 0));
    int v;
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d));
    ck_assert_int_eq(v, 1);
    /* Host NUMA: a machine without NUMA answers -1 for the node ("when
     * system does not support NUMA"); spill then asks for host pages
     * without a node. Printed, for the GPU log. */
    int numa_vmm = 0, numa = 0;
    CU_OK(cuDeviceGetAttribute(&numa_vmm, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d));
    CU_OK(cuDeviceGetAttribute(&numa, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, d));
    printf("attributes: host NUMA VMM supported %d, host NUMA node %d\n", numa_vmm, numa);
    ck_assert_int_ge(numa, -1);
    ck_assert(numa_vmm == 0 || numa_vmm == 1);
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d));
    ck_assert_int_eq(v, 1);
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, d));
    ck_assert_int_eq(v, 1);
    CU_ERR(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, n), CUDA_ERROR_INVALID_DEVICE);
    CU_ERR(cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, d), CUDA_ERROR_INVALID_VALUE);
    char name[64];
    CU_OK(cuDeviceGetName(name, sizeof name, d));
    ck_assert_int_gt(strlen(name), 0);
}
END_TEST

START_TEST(total_memory)
{
    CU_OK(cuInit(0));
    size_t total = 0;
    CU_OK(cuDeviceTotalMem(&total, 0));
    ck_assert_uint_ge(total, 64 * MiB);
    if (fakecuda_present()) {
        const char *m = getenv("FAKECUDA_MEM");
        ck_assert_uint_eq(total, m ? strtoull(m, NULL, 10) << 20 : 256 * MiB); /* "<n>M" only */
    }
    CU_ERR(cuDeviceTotalMem(NULL, 0), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(primary_context)
{
    CU_OK(cuInit(0));
    CUcontext cur = (CUcontext)1, a, b;
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_null(cur);
    CUdeviceptr p;
    CU_ERR(cuMemAlloc(&p, 4096), CUDA_ERROR_INVALID_CONTEXT);
    unsigned flags;
    int active = 1;
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_int_eq(active, 0);
    CU_OK(cuDevicePrimaryCtxRetain(&a, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&b, 0));
    ck_assert_ptr_eq(a, b);
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_int_eq(active, 1);
    CU_OK(cuCtxSetCurrent(a));
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, a);
    CUdevice d = -1;
    CU_OK(cuCtxGetDevice(&d));
    ck_assert_int_eq(d, 0);
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemFree(p));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxRelease(0));
}
END_TEST

/* cuDevicePrimaryCtxRelease: "Releasing a primary context that has not been
 * previously retained will fail with CUDA_ERROR_INVALID_CONTEXT", each retain
 * needs its release, and the last one resets the context (inactive after). */
START_TEST(primary_release_needs_a_retain)
{
    CU_OK(cuInit(0));
    CU_ERR(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext c;
    unsigned flags;
    int active = -1;
    CU_OK(cuDevicePrimaryCtxRetain(&c, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&c, 0));
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_int_eq(active, 1); /* one reference left */
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_int_eq(active, 0);
    CU_ERR(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
}
END_TEST

/* cuDevicePrimaryCtxReset: "Resetting the primary context does not release
 * it, an application that has retained the primary context should
 * explicitly release its usage", and "it is safe for other modules to call
 * cuDevicePrimaryCtxRelease() even after resetting the device": each retain
 * made before the reset still has its release. The context is inactive
 * after the reset (as NVIDIA's driver answers cuDevicePrimaryCtxGetState
 * then) until the next retain. */
START_TEST(primary_reset_keeps_the_retains)
{
    CU_OK(cuInit(0));
    CUcontext c;
    unsigned flags;
    int active = -1;
    CU_OK(cuDevicePrimaryCtxRetain(&c, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&c, 0));
    CU_OK(cuDevicePrimaryCtxReset(0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_int_eq(active, 0);
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxRelease(0));
}
END_TEST

/* Program memory, registered and mapped: it outlives the context (the
 * release unregisters it with the driver, never frees it). */
static CUdeviceptr registered_word(volatile unsigned **host)
{
    static unsigned page[4096 / sizeof(unsigned)] __attribute__((aligned(4096)));
    *host = page;
    CU_OK(cuMemHostRegister(page, sizeof page, CU_MEMHOSTREGISTER_DEVICEMAP));
    CUdeviceptr d;
    CU_OK(cuMemHostGetDevicePointer(&d, page, 0));
    return d;
}

static void *set_after_100ms(void *flag)
{
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    __atomic_store_n((volatile unsigned *)flag, 1u, __ATOMIC_SEQ_CST);
    return NULL;
}

/* The last release resets the context, as cuDevicePrimaryCtxReset does: it
 * finishes the context's work first (what was queued is done when it
 * returns). The stream waits on a flag another thread sets 100 ms later,
 * then writes a word the host reads after the release. */
START_TEST(last_primary_release_finishes_the_contexts_work)
{
    CU_OK(cuInit(0));
    CUcontext c;
    CU_OK(cuDevicePrimaryCtxRetain(&c, 0));
    CU_OK(cuCtxSetCurrent(c));
    struct test_kernels k;
    kernels_load(&k);
    volatile unsigned *flag, *word;
    CUdeviceptr dflag = registered_word(&flag);
    CUdeviceptr dword = dflag + 64;
    word = flag + 16;
    *flag = 0;
    *word = 0;
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    void *args[] = {&dflag};
    CU_OK(cuLaunchKernel(k.wait_flag, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    CU_OK(launch_u32(k.fill_u32, dword, 7, 1, s));
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, set_after_100ms, (void *)flag), 0);
    CU_OK(cuDevicePrimaryCtxRelease(0));
    unsigned seen = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(seen == 7, "the word is %u after the last release, expected 7", seen);
    int active = -1;
    unsigned flags;
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    ck_assert_int_eq(active, 0);
}
END_TEST

/* cuDevicePrimaryCtxReset: "Destroy all allocations and reset all state on
 * the primary context. Explicitly destroys and cleans up all resources
 * associated with the current device in the current process." What was
 * made in the context before the reset is gone after it (asked with the
 * context retained anew, as a program that goes on does): the driver no
 * longer knows the allocation's address, nor the stream, event, module or
 * the module's function. Memory allocated after the next retain works. */
static void expect_context_objects_gone(void (*end)(void))
{
    CU_OK(cuInit(0));
    CUcontext c;
    CU_OK(cuDevicePrimaryCtxRetain(&c, 0));
    CU_OK(cuCtxSetCurrent(c));
    struct test_kernels k;
    kernels_load(&k);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, MiB));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent e;
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CU_OK(launch_u32(k.fill_u32, p, 7, MiB / 4, s));
    CU_OK(cuEventRecord(e, s));
    end();

    CU_OK(cuDevicePrimaryCtxRetain(&c, 0));
    CU_OK(cuCtxSetCurrent(c));
    CUdeviceptr q0;
    CU_OK(cuMemAlloc(&q0, 4096));
    CUcontext owner = NULL;
    CU_ERR(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr base;
    size_t size;
    CU_ERR(cuMemGetAddressRange(&base, &size, p), CUDA_ERROR_NOT_FOUND);
    CU_ERR(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
    CU_ERR(cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
    CUfunction f;
    CU_ERR(cuModuleGetFunction(&f, k.module, "fill_u32"), CUDA_ERROR_INVALID_HANDLE);
    CU_ERR(launch_u32(k.fill_u32, q0, 1, 1, NULL), CUDA_ERROR_INVALID_HANDLE);

    CUdeviceptr q;
    CU_OK(cuMemAlloc(&q, MiB));
    CU_OK(cuMemGetAddressRange(&base, &size, q));
    ck_assert_uint_eq(base, q);
    CU_OK(cuMemsetD32(q, 9, MiB / 4));
    expect_u32(q, 9, MiB / 4);
    CU_OK(cuMemFree(q));
    CU_OK(cuMemFree(q0));
    CU_OK(cuDevicePrimaryCtxRelease(0));
}

static void reset_device0(void)
{
    CU_OK(cuDevicePrimaryCtxReset(0));
}

static void release_device0(void)
{
    CU_OK(cuDevicePrimaryCtxRelease(0));
}

START_TEST(primary_reset_destroys_the_contexts_objects)
{
    expect_context_objects_gone(reset_device0);
}
END_TEST

/* "The context is automatically reset once the last reference to it is
 * released": the same as above. */
START_TEST(last_primary_release_destroys_the_contexts_objects)
{
    expect_context_objects_gone(release_device0);
}
END_TEST

START_TEST(created_contexts_stack)
{
    CU_OK(cuInit(0));
    CUcontext primary, created, popped, cur;
    CU_OK(cuDevicePrimaryCtxRetain(&primary, 0));
    CU_OK(cuCtxPushCurrent(primary));
    CUctxCreateParams params;
    memset(&params, 0, sizeof params); /* both members NULL: a regular context */
    CU_OK(cuCtxCreate(&created, &params, 0, 0)); /* pushed as current */
    ck_assert_ptr_ne(created, primary);
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, created);
    CU_OK(cuCtxPopCurrent(&popped));
    ck_assert_ptr_eq(popped, created);
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, primary);
    CU_OK(cuCtxDestroy(created));
    CU_OK(cuCtxPopCurrent(&popped));
    ck_assert_ptr_eq(popped, primary);
    CU_ERR(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
}
END_TEST

/* A context created over device 0's primary context, pushed current. */
static CUcontext created_over_primary(CUcontext *primary)
{
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(primary, 0));
    CU_OK(cuCtxPushCurrent(*primary));
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    CUcontext created;
    CU_OK(cuCtxCreate(&created, &params, 0, 0));
    return created;
}

/* created's destroy pops it (the primary current again) and frees at
 * least held bytes: the device has that much more free than free_held. */
static void destroy_gives_back(CUcontext created, CUcontext primary, size_t free_held, size_t held)
{
    CUcontext cur;
    size_t free_after, total;
    CU_OK(cuCtxDestroy(created));
    CU_OK(cuCtxGetCurrent(&cur));
    ck_assert_ptr_eq(cur, primary);
    CU_OK(cuMemGetInfo(&free_after, &total));
    ck_assert_msg(free_after >= free_held + held,
                  "free %zu after the destroy, %zu before it: the context's %zu bytes not freed", free_after,
                  free_held, held);
}

/* The primary context created_over_primary pushed, popped and released. */
static void primary_done(void)
{
    CUcontext cur;
    CU_OK(cuCtxPopCurrent(&cur));
    CU_OK(cuDevicePrimaryCtxRelease(0));
}

/* cuCtxDestroy: "Destroys and cleans up all resources associated with the
 * context", among them "memory allocations by cuMemAlloc(),
 * cuMemAllocHost(), cuMemAllocManaged() and cuMemAllocPitch()". What the
 * reference guarantees and a test can see: the device's free memory
 * (cuMemGetInfo, asked in the primary context) rises back by at least
 * what the context allocated. (Passing its pointers or handles afterwards
 * is undefined behaviour: fakecuda answers as for unknown memory and dead
 * handles, asked only of it.) */
START_TEST(destroyed_context_frees_its_memory)
{
    CUcontext primary, created = created_over_primary(&primary);
    size_t free_before, free_held, total;
    CU_OK(cuMemGetInfo(&free_before, &total));
    CUdeviceptr p, q;
    size_t pitch;
    CU_OK(cuMemAlloc(&p, 16 * MiB));
    CU_OK(cuMemAllocPitch(&q, &pitch, 1024, 1024, 4));
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent e;
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuMemsetD32Async(p, 7, 16 * MiB / 4, s));
    CU_OK(cuEventRecord(e, s));
    CU_OK(cuMemGetInfo(&free_held, &total));
    size_t held = 16 * MiB + pitch * 1024;
    ck_assert_msg(free_held + held <= free_before, "free %zu after allocating %zu, %zu before",
                  free_held, held, free_before);
    destroy_gives_back(created, primary, free_held, held);
    if (fakecuda_present()) {
        CUcontext owner;
        CU_ERR(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p),
               CUDA_ERROR_INVALID_VALUE);
        CU_ERR(cuMemFree(q), CUDA_ERROR_INVALID_VALUE);
        CU_ERR(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
        CU_ERR(cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
    }
    primary_done();
}
END_TEST

/* cuCtxDestroy's "resources include CUDA types ... CUarray,
 * CUmipmappedArray ... memory allocations by ... cuMemAllocHost()": the
 * arrays made in a created context give their device memory back at its
 * destroy; its pinned host allocation answers that context as its own
 * while it lives. (Asking about either after the destroy is undefined on
 * a GPU: only fakecuda is asked.) */
START_TEST(destroyed_context_frees_its_arrays_and_pinned_memory)
{
    CUcontext primary, created = created_over_primary(&primary);
    size_t free_before, free_held, total;
    CU_OK(cuMemGetInfo(&free_before, &total));
    /* Within multi_device.sh's 64 MiB devices. */
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 2048, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT,
                                 .NumChannels = 1};
    CUarray a;
    CU_OK(cuArray3DCreate(&a, &d)); /* 8 MiB */
    CUmipmappedArray mm;
    CU_OK(cuMipmappedArrayCreate(&mm, &d, 2)); /* 8 + 2 MiB */
    void *host;
    CU_OK(cuMemAllocHost(&host, 4 * MiB));
    memset(host, 0x5a, 4 * MiB);
    CUcontext owner = NULL;
    CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)(uintptr_t)host));
    ck_assert_ptr_eq(owner, created);
    CU_OK(cuMemGetInfo(&free_held, &total));
    size_t held = 18 * MiB;
    ck_assert_msg(free_held + held <= free_before, "free %zu after making %zu of arrays, %zu before",
                  free_held, held, free_before);
    size_t live_host = fakecuda_present() ? fakecuda_live_host_allocations() : 0;
    destroy_gives_back(created, primary, free_held, held);
    if (fakecuda_present()) {
        CUDA_ARRAY3D_DESCRIPTOR got;
        CU_ERR(cuArray3DGetDescriptor(&got, a), CUDA_ERROR_INVALID_HANDLE);
        CUarray level;
        CU_ERR(cuMipmappedArrayGetLevel(&level, mm, 0), CUDA_ERROR_INVALID_HANDLE);
        CU_ERR(cuMemFreeHost(host), CUDA_ERROR_INVALID_VALUE);
        ck_assert_uint_eq(fakecuda_live_host_allocations(), live_host - 1);
    }
    primary_done();
}
END_TEST

START_TEST(error_strings)
{
    const char *s = NULL;
    CU_OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
    ck_assert_str_eq(s, "CUDA_ERROR_OUT_OF_MEMORY");
    CU_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
    ck_assert_str_eq(s, "out of memory");
    CU_OK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
    ck_assert_str_eq(s, "CUDA_ERROR_INVALID_VALUE");
    CU_ERR(cuGetErrorString((CUresult)123456, &s), CUDA_ERROR_INVALID_VALUE);
    CU_ERR(cuGetErrorName(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
}
END_TEST

START_TEST(peer_access_needs_two_devices)
{
    CU_OK(cuInit(0));
    int n, can = -1;
    CU_OK(cuDeviceGetCount(&n));
    CU_OK(cuDeviceCanAccessPeer(&can, 0, 0));
    ck_assert_int_eq(can, 0);
    if (n < 2)
        return; /* the suite runs again with FAKECUDA_DEVICES=2 (multi_device.sh) */
    CUcontext c0, c1;
    CU_OK(cuDevicePrimaryCtxRetain(&c0, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&c1, 1));
    CU_OK(cuDeviceCanAccessPeer(&can, 0, 1));
    ck_assert_int_eq(can, 1);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuCtxEnablePeerAccess(c1, 0));
    CU_ERR(cuCtxEnablePeerAccess(c1, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    CU_OK(cuCtxDisablePeerAccess(c1));
    CU_ERR(cuCtxDisablePeerAccess(c1), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);

    /* each device has its own memory */
    size_t free0, free1, total;
    CU_OK(cuMemGetInfo(&free0, &total));
    CU_OK(cuCtxSetCurrent(c1));
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 16 * MiB));
    int ordinal = -1;
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    ck_assert_int_eq(ordinal, 1);
    CU_OK(cuCtxSetCurrent(c0));
    CU_OK(cuMemGetInfo(&free1, &total));
    ck_assert_uint_ge(free1 + 4 * MiB, free0);
    if (fakecuda_present()) {
        ck_assert_uint_eq(fakecuda_device_bytes_used(1), 16 * MiB);
        ck_assert_uint_eq(fakecuda_device_bytes_used(0), 0);
    }
    CU_OK(cuMemFree(p));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("driver_device");
    TCase *tc = tcase_create("device");
    tcase_add_test(tc, not_initialized_before_cuInit);
    tcase_add_test(tc, driver_version);
    tcase_add_test(tc, devices_and_attributes);
    tcase_add_test(tc, total_memory);
    tcase_add_test(tc, primary_context);
    tcase_add_test(tc, primary_release_needs_a_retain);
    tcase_add_test(tc, primary_reset_keeps_the_retains);
    tcase_add_test(tc, last_primary_release_finishes_the_contexts_work);
    tcase_add_test(tc, primary_reset_destroys_the_contexts_objects);
    tcase_add_test(tc, last_primary_release_destroys_the_contexts_objects);
    tcase_add_test(tc, created_contexts_stack);
    tcase_add_test(tc, destroyed_context_frees_its_memory);
    tcase_add_test(tc, destroyed_context_frees_its_arrays_and_pinned_memory);
    tcase_add_test(tc, error_strings);
    tcase_add_test(tc, peer_access_needs_two_devices);
    suite_add_tcase(s, tc);
    return s;
}
