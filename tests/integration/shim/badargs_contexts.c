/* Bad arguments (badargs.c) before a context, to cuGetProcAddress, and to
 * the context and primary context calls. */
#include "tests/integration/shim/badargs.h"

/* Before cuInit, then without a current context: spillway has nothing to
 * look anything up in and must still answer as the driver. */
void no_context(void)
{
    CUdeviceptr p;
    size_t f, t;
    TRY(cuMemAlloc, "before_init", cuMemAlloc_v2, &p, MiB);
    TRY(cuMemGetInfo, "before_init", cuMemGetInfo_v2, &f, &t);
    TRY(cuDeviceTotalMem, "before_init", cuDeviceTotalMem_v2, &t, 0);
    TRY(cuCtxSynchronize, "before_init", cuCtxSynchronize);
    OK(cuInit(0));
    TRY(cuMemAlloc, "no_context", cuMemAlloc_v2, &p, MiB);
    TRY(cuMemAllocManaged, "no_context", cuMemAllocManaged, &p, MiB, CU_MEM_ATTACH_GLOBAL);
    TRY_PT(cuMemAllocAsync, "no_context", cuMemAllocAsync, &p, MiB, NULL);
    TRY(cuMemFree, "no_context", cuMemFree_v2, bad);
    TRY(cuMemGetInfo, "no_context", cuMemGetInfo_v2, &f, &t);
    TRY(cuCtxSynchronize, "no_context", cuCtxSynchronize);
    TRY(cuCtxSynchronize, "no_context", cuCtxSynchronize_v2, NULL);
    TRY_PT(cuMemcpy, "no_context", cuMemcpy, bad, bad, 16);
    TRY_PT(cuMemcpyHtoD, "no_context", cuMemcpyHtoD_v2, bad, host, 16);
    TRY_PT(cuMemsetD8, "no_context", cuMemsetD8_v2, bad, 0, 16);
    TRY(cuMemHostAlloc, "no_context", cuMemHostAlloc, (void **)&p, MiB, 0);
    TRY(cuPointerGetAttribute, "no_context", cuPointerGetAttribute, &t, CU_POINTER_ATTRIBUTE_CONTEXT, bad);
    TRY(cuMemGetAddressRange, "no_context", cuMemGetAddressRange_v2, &p, &t, bad);
}

void get_proc_address(void)
{
    void *fn;
    CUdriverProcAddressQueryResult st;
    TRY(cuGetProcAddress, "null_symbol", cuGetProcAddress_v2, NULL, &fn, 12000, 0, &st);
    TRY(cuGetProcAddress, "null_out", cuGetProcAddress_v2, "cuMemAlloc", NULL, 12000, 0, &st);
    TRY(cuGetProcAddress, "unknown", cuGetProcAddress_v2, "cuNoSuchFunction", &fn, 12000, 0, &st);
    TRY(cuGetProcAddress, "bad_flags", cuGetProcAddress_v2, "cuMemAlloc", &fn, 12000, 0x100, &st);
    TRY(cuGetProcAddress, "version_0", cuGetProcAddress_v2, "cuMemAlloc", &fn, 0, 0, &st);
    TRY(cuGetProcAddress, "version_too_new", cuGetProcAddress_v2, "cuMemAlloc", &fn, 99000, 0, &st);
    TRY(cuGetProcAddress, "null_status", cuGetProcAddress_v2, "cuMemAlloc", &fn, 12000, 0, NULL);
    TRY(cuGetProcAddress, "null_symbol", cuGetProcAddress, NULL, &fn, 12000, 0);
    TRY(cuGetProcAddress, "null_out", cuGetProcAddress, "cuMemAlloc", NULL, 12000, 0);
    TRY(cuGetProcAddress, "unknown", cuGetProcAddress, "cuNoSuchFunction", &fn, 12000, 0);
    TRY(cuGetProcAddress, "bad_flags", cuGetProcAddress, "cuMemAlloc", &fn, 12000, 0x100);
}

void contexts(void)
{
    CUcontext c;
    TRY(cuCtxSynchronize, "bad_context", cuCtxSynchronize_v2, BAD_HANDLE);
    TRY(cuStreamDestroy, "bad_stream", cuStreamDestroy, bad_stream);
    TRY(cuStreamDestroy, "bad_stream", cuStreamDestroy_v2, bad_stream);
    TRY(cuStreamDestroy, "legacy_stream", cuStreamDestroy_v2, CU_STREAM_LEGACY);
    TRY(cuStreamDestroy, "per_thread_stream", cuStreamDestroy_v2, CU_STREAM_PER_THREAD);
    TRY(cuCtxDestroy, "null", cuCtxDestroy, NULL);
    TRY(cuCtxDestroy, "bad_context", cuCtxDestroy, BAD_HANDLE);
    TRY(cuCtxDestroy, "null", cuCtxDestroy_v2, NULL);
    TRY(cuCtxDestroy, "bad_context", cuCtxDestroy_v2, BAD_HANDLE);
    TRY(cuDevicePrimaryCtxRetain, "null_out", cuDevicePrimaryCtxRetain, NULL, 0);
    TRY(cuDevicePrimaryCtxRetain, "device_99", cuDevicePrimaryCtxRetain, &c, 99);
    TRY(cuDevicePrimaryCtxRetain, "device_minus_1", cuDevicePrimaryCtxRetain, &c, -1);
    TRY(cuDevicePrimaryCtxReset, "device_99", cuDevicePrimaryCtxReset, 99);
    TRY(cuDevicePrimaryCtxReset, "device_99", cuDevicePrimaryCtxReset_v2, 99);
    TRY(cuDevicePrimaryCtxReset, "device_minus_1", cuDevicePrimaryCtxReset_v2, -1);
    TRY(cuDevicePrimaryCtxRelease, "device_99", cuDevicePrimaryCtxRelease, 99);
    TRY(cuDevicePrimaryCtxRelease, "device_99", cuDevicePrimaryCtxRelease_v2, 99);
    TRY(cuDevicePrimaryCtxRelease, "device_minus_1", cuDevicePrimaryCtxRelease_v2, -1);
    TRY(cuCtxEnablePeerAccess, "null", cuCtxEnablePeerAccess, NULL, 0);
    TRY(cuCtxEnablePeerAccess, "bad_context", cuCtxEnablePeerAccess, BAD_HANDLE, 0);
    TRY(cuCtxEnablePeerAccess, "self", cuCtxEnablePeerAccess, ctx, 0);
    TRY(cuCtxEnablePeerAccess, "bad_flags", cuCtxEnablePeerAccess, ctx, 1);
}
