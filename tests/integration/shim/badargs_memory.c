/* Bad arguments (badargs.c) to device memory: cuMemAlloc and its kin, the
 * stream-ordered allocator and its pools, pointer attributes, arrays, host
 * memory and the memory sizes. */
#include "tests/integration/shim/badargs.h"

void device_memory(void)
{
    CUdeviceptr p;
    size_t pitch;
    TRY(cuMemAlloc, "null_out", cuMemAlloc_v2, NULL, MiB);
    TRY(cuMemAlloc, "size_0", cuMemAlloc_v2, &p, 0);
    TRY(cuMemAlloc, "size_max", cuMemAlloc_v2, &p, SIZE_MAX);
    TRY(cuMemAlloc, "size_huge", cuMemAlloc_v2, &p, HUGE_SIZE);
    TRY(cuMemAllocPitch, "null_out", cuMemAllocPitch_v2, NULL, &pitch, 1024, 16, 4);
    TRY(cuMemAllocPitch, "null_pitch", cuMemAllocPitch_v2, &p, NULL, 1024, 16, 4);
    TRY(cuMemAllocPitch, "width_0", cuMemAllocPitch_v2, &p, &pitch, 0, 16, 4);
    TRY(cuMemAllocPitch, "height_0", cuMemAllocPitch_v2, &p, &pitch, 1024, 0, 4);
    TRY(cuMemAllocPitch, "element_3", cuMemAllocPitch_v2, &p, &pitch, 1024, 16, 3);
    /* The element sizes the driver takes (4 is every other case's): 0,
     * freed at once (later cases depend on what lies past dptr). */
    p = 0;
    TRY(cuMemAllocPitch, "element_8", cuMemAllocPitch_v2, &p, &pitch, 1024, 16, 8);
    if (p)
        cuMemFree(p);
    p = 0;
    TRY(cuMemAllocPitch, "element_16", cuMemAllocPitch_v2, &p, &pitch, 1024, 16, 16);
    if (p)
        cuMemFree(p);
    TRY(cuMemAllocPitch, "size_huge", cuMemAllocPitch_v2, &p, &pitch, HUGE_SIZE, 1 << 20, 4);
    TRY(cuMemAllocManaged, "null_out", cuMemAllocManaged, NULL, MiB, CU_MEM_ATTACH_GLOBAL);
    TRY(cuMemAllocManaged, "size_0", cuMemAllocManaged, &p, 0, CU_MEM_ATTACH_GLOBAL);
    TRY(cuMemAllocManaged, "flags_0", cuMemAllocManaged, &p, MiB, 0);
    TRY(cuMemAllocManaged, "bad_flags", cuMemAllocManaged, &p, MiB, 0x80);
    TRY(cuMemAllocManaged, "size_max", cuMemAllocManaged, &p, SIZE_MAX, CU_MEM_ATTACH_GLOBAL);
    TRY(cuMemFree, "bad_pointer", cuMemFree_v2, bad);
    TRY(cuMemFree, "null", cuMemFree_v2, 0);
    TRY(cuMemFree, "interior", cuMemFree_v2, inner);
    TRY(cuMemFree, "freed", cuMemFree_v2, just_freed());
}

void stream_ordered(void)
{
    CUdeviceptr p;
    CUmemoryPool mp;
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemPoolProps far = props;
    far.location.id = 99;
    CUmemPoolProps untyped = props;
    untyped.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
    CUmemLocation here = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
    CUmemLocation nowhere = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 99};
    CUmemAccessDesc acc = {.location = here, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUmemAccessDesc acc_far = {.location = nowhere, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUmemAccessDesc acc_bad = {.location = here, .flags = 7};
    cuuint64_t v = 0;

    TRY_PT(cuMemAllocAsync, "null_out", cuMemAllocAsync, NULL, MiB, stream);
    TRY_PT(cuMemAllocAsync, "size_0", cuMemAllocAsync, &p, 0, stream);
    TRY_PT(cuMemAllocAsync, "size_huge", cuMemAllocAsync, &p, HUGE_SIZE, stream);
    TRY_PT(cuMemAllocAsync, "bad_stream", cuMemAllocAsync, &p, MiB, bad_stream);
    TRY_PT(cuMemAllocFromPoolAsync, "null_out", cuMemAllocFromPoolAsync, NULL, MiB, pool, stream);
    TRY_PT(cuMemAllocFromPoolAsync, "null_pool", cuMemAllocFromPoolAsync, &p, MiB, NULL, stream);
    TRY_PT(cuMemAllocFromPoolAsync, "bad_pool", cuMemAllocFromPoolAsync, &p, MiB, BAD_HANDLE, stream);
    TRY_PT(cuMemAllocFromPoolAsync, "size_0", cuMemAllocFromPoolAsync, &p, 0, pool, stream);
    TRY_PT(cuMemAllocFromPoolAsync, "size_huge", cuMemAllocFromPoolAsync, &p, HUGE_SIZE, pool, stream);
    TRY_PT(cuMemAllocFromPoolAsync, "bad_stream", cuMemAllocFromPoolAsync, &p, MiB, pool, bad_stream);
    TRY_PT(cuMemFreeAsync, "bad_pointer", cuMemFreeAsync, bad, stream);
    TRY_PT(cuMemFreeAsync, "null", cuMemFreeAsync, 0, stream);
    TRY_PT(cuMemFreeAsync, "interior", cuMemFreeAsync, inner, stream);
    TRY_PT(cuMemFreeAsync, "freed", cuMemFreeAsync, just_freed(), stream);
    TRY_PT(cuMemFreeAsync, "bad_stream", cuMemFreeAsync, dptr, bad_stream);

    TRY(cuMemPoolCreate, "null_out", cuMemPoolCreate, NULL, &props);
    TRY(cuMemPoolCreate, "null_props", cuMemPoolCreate, &mp, NULL);
    TRY(cuMemPoolCreate, "device_99", cuMemPoolCreate, &mp, &far);
    TRY(cuMemPoolCreate, "bad_type", cuMemPoolCreate, &mp, &untyped);
    TRY(cuMemPoolDestroy, "null", cuMemPoolDestroy, NULL);
    TRY(cuMemPoolDestroy, "bad_pool", cuMemPoolDestroy, BAD_HANDLE);
    TRY(cuDeviceGetDefaultMemPool, "null_out", cuDeviceGetDefaultMemPool, NULL, 0);
    TRY(cuDeviceGetDefaultMemPool, "device_99", cuDeviceGetDefaultMemPool, &mp, 99);
    TRY(cuDeviceGetMemPool, "null_out", cuDeviceGetMemPool, NULL, 0);
    TRY(cuDeviceGetMemPool, "device_99", cuDeviceGetMemPool, &mp, 99);
    TRY(cuDeviceSetMemPool, "device_99", cuDeviceSetMemPool, 99, pool);
    TRY(cuDeviceSetMemPool, "null_pool", cuDeviceSetMemPool, 0, NULL);
    TRY(cuDeviceSetMemPool, "bad_pool", cuDeviceSetMemPool, 0, BAD_HANDLE);
    TRY(cuMemGetDefaultMemPool, "null_out", cuMemGetDefaultMemPool, NULL, &here, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetDefaultMemPool, "null_location", cuMemGetDefaultMemPool, &mp, NULL, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetDefaultMemPool, "device_99", cuMemGetDefaultMemPool, &mp, &nowhere, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetDefaultMemPool, "bad_type", cuMemGetDefaultMemPool, &mp, &here, CU_MEM_ALLOCATION_TYPE_INVALID);
    TRY(cuMemGetMemPool, "null_out", cuMemGetMemPool, NULL, &here, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetMemPool, "null_location", cuMemGetMemPool, &mp, NULL, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetMemPool, "device_99", cuMemGetMemPool, &mp, &nowhere, CU_MEM_ALLOCATION_TYPE_PINNED);
    TRY(cuMemGetMemPool, "bad_type", cuMemGetMemPool, &mp, &here, CU_MEM_ALLOCATION_TYPE_INVALID);
    TRY(cuMemSetMemPool, "null_location", cuMemSetMemPool, NULL, CU_MEM_ALLOCATION_TYPE_PINNED, pool);
    TRY(cuMemSetMemPool, "device_99", cuMemSetMemPool, &nowhere, CU_MEM_ALLOCATION_TYPE_PINNED, pool);
    TRY(cuMemSetMemPool, "null_pool", cuMemSetMemPool, &here, CU_MEM_ALLOCATION_TYPE_PINNED, NULL);
    TRY(cuMemSetMemPool, "bad_pool", cuMemSetMemPool, &here, CU_MEM_ALLOCATION_TYPE_PINNED, BAD_HANDLE);
    TRY(cuMemPoolSetAccess, "null_pool", cuMemPoolSetAccess, NULL, &acc, 1);
    TRY(cuMemPoolSetAccess, "bad_pool", cuMemPoolSetAccess, BAD_HANDLE, &acc, 1);
    TRY(cuMemPoolSetAccess, "null_map", cuMemPoolSetAccess, pool, NULL, 1);
    TRY(cuMemPoolSetAccess, "device_99", cuMemPoolSetAccess, pool, &acc_far, 1);
    TRY(cuMemPoolSetAccess, "bad_flags", cuMemPoolSetAccess, pool, &acc_bad, 1);
    TRY(cuMemPoolGetAttribute, "null_pool", cuMemPoolGetAttribute, NULL, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v);
    TRY(cuMemPoolGetAttribute, "bad_pool", cuMemPoolGetAttribute, BAD_HANDLE, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v);
    TRY(cuMemPoolGetAttribute, "null_value", cuMemPoolGetAttribute, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, NULL);
    TRY(cuMemPoolGetAttribute, "bad_attr", cuMemPoolGetAttribute, pool, (CUmemPool_attribute)999, &v);
    TRY(cuMemPoolSetAttribute, "null_pool", cuMemPoolSetAttribute, NULL, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
    TRY(cuMemPoolSetAttribute, "bad_pool", cuMemPoolSetAttribute, BAD_HANDLE, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
    TRY(cuMemPoolSetAttribute, "null_value", cuMemPoolSetAttribute, pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, NULL);
    TRY(cuMemPoolSetAttribute, "bad_attr", cuMemPoolSetAttribute, pool, (CUmemPool_attribute)999, &v);
    /* Read-only attributes: only their resets (to 0) are settable. */
    v = 12345;
    TRY(cuMemPoolSetAttribute, "set_used_current", cuMemPoolSetAttribute, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v);
    TRY(cuMemPoolSetAttribute, "set_used_high_nonzero", cuMemPoolSetAttribute, pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v);
}

void pointers(void)
{
    CUdeviceptr base;
    size_t size;
    unsigned long long v = 0;
    CUcontext c;
    TRY(cuMemGetAddressRange, "bad_pointer", cuMemGetAddressRange_v2, &base, &size, bad);
    TRY(cuMemGetAddressRange, "freed", cuMemGetAddressRange_v2, &base, &size, just_freed());
    TRY(cuMemGetAddressRange, "null", cuMemGetAddressRange_v2, &base, &size, 0);
    TRY(cuMemGetAddressRange, "null_outs", cuMemGetAddressRange_v2, NULL, NULL, inner);
    TRY(cuMemGetAddressRange, "past_end", cuMemGetAddressRange_v2, &base, &size, dptr + MiB);
    TRY(cuPointerGetAttribute, "null_data", cuPointerGetAttribute, NULL, CU_POINTER_ATTRIBUTE_CONTEXT, dptr);
    TRY(cuPointerGetAttribute, "bad_pointer", cuPointerGetAttribute, &c, CU_POINTER_ATTRIBUTE_CONTEXT, bad);
    TRY(cuPointerGetAttribute, "freed", cuPointerGetAttribute, &c, CU_POINTER_ATTRIBUTE_CONTEXT, just_freed());
    TRY(cuPointerGetAttribute, "null", cuPointerGetAttribute, &c, CU_POINTER_ATTRIBUTE_CONTEXT, 0);
    TRY(cuPointerGetAttribute, "bad_attr", cuPointerGetAttribute, &v, (CUpointer_attribute)999, dptr);
    TRY(cuPointerGetAttribute, "past_end", cuPointerGetAttribute, &v, CU_POINTER_ATTRIBUTE_RANGE_SIZE, dptr + MiB);
    /* The mapping of cuMemAlloc memory: under spillway the program's
     * allocation, not the pool page the driver sees (shim/pointer.c). */
    TRY(cuPointerGetAttribute, "mem_alloc_mapping", cuPointerGetAttribute, &v,
        CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, dptr);
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    CUpointer_attribute bad_attrs[] = {(CUpointer_attribute)999};
    unsigned mt = 77;
    size_t rs = 77;
    void *data[] = {&mt, &rs};
    TRY(cuPointerGetAttributes, "count_0", cuPointerGetAttributes, 0, attrs, data, dptr);
    TRY(cuPointerGetAttributes, "null_attrs", cuPointerGetAttributes, 2, NULL, data, dptr);
    TRY(cuPointerGetAttributes, "null_data", cuPointerGetAttributes, 2, attrs, NULL, dptr);
    TRY(cuPointerGetAttributes, "bad_attr", cuPointerGetAttributes, 1, bad_attrs, data, dptr);
    /* No error for a pointer the driver does not know: the values say so. */
    TRY(cuPointerGetAttributes, "bad_pointer", cuPointerGetAttributes, 2, attrs, data, bad);
    printf("cuPointerGetAttributes/cuPointerGetAttributes/bad_pointer_values type %u size %zu\n", mt, rs);
    mt = 77, rs = 77;
    TRY(cuPointerGetAttributes, "freed", cuPointerGetAttributes, 2, attrs, data, just_freed());
    printf("cuPointerGetAttributes/cuPointerGetAttributes/freed_values type %u size %zu\n", mt, rs);
    int one = 1;
    TRY(cuPointerSetAttribute, "bad_pointer", cuPointerSetAttribute, &one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, bad);
    TRY(cuPointerSetAttribute, "freed", cuPointerSetAttribute, &one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, just_freed());
    TRY(cuPointerSetAttribute, "null_value", cuPointerSetAttribute, NULL, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, dptr);
    TRY(cuPointerSetAttribute, "read_only_attr", cuPointerSetAttribute, &one, CU_POINTER_ATTRIBUTE_CONTEXT, dptr);
    TRY(cuPointerSetAttribute, "bad_attr", cuPointerSetAttribute, &one, (CUpointer_attribute)999, dptr);
}

void arrays(void)
{
    CUarray a;
    CUmipmappedArray mm;
    CUDA_ARRAY_DESCRIPTOR d0 = {.Width = 0, .Height = 0, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    CUDA_ARRAY_DESCRIPTOR dfmt = {.Width = 64, .Height = 64, .Format = (CUarray_format)0x7777, .NumChannels = 1};
    CUDA_ARRAY_DESCRIPTOR dch = {.Width = 64, .Height = 64, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 3};
    CUDA_ARRAY_DESCRIPTOR dhuge = {.Width = 1 << 30, .Height = 1 << 30, .Format = CU_AD_FORMAT_FLOAT,
                                   .NumChannels = 4};
    CUDA_ARRAY3D_DESCRIPTOR e0 = {.Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    CUDA_ARRAY3D_DESCRIPTOR efmt = {.Width = 64, .Format = (CUarray_format)0x7777, .NumChannels = 1};
    CUDA_ARRAY3D_DESCRIPTOR eflags = {.Width = 64, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1,
                                      .Flags = 0x80000000u};
    CUDA_ARRAY3D_DESCRIPTOR ehuge = {.Width = 1 << 30, .Height = 1 << 30, .Depth = 1 << 30,
                                     .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    CUDA_ARRAY3D_DESCRIPTOR eok = {.Width = 64, .Height = 64, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                   .NumChannels = 1};
    TRY(cuArrayCreate, "null_out", cuArrayCreate_v2, NULL, &d0);
    TRY(cuArrayCreate, "null_desc", cuArrayCreate_v2, &a, NULL);
    TRY(cuArrayCreate, "width_0", cuArrayCreate_v2, &a, &d0);
    TRY(cuArrayCreate, "bad_format", cuArrayCreate_v2, &a, &dfmt);
    TRY(cuArrayCreate, "channels_3", cuArrayCreate_v2, &a, &dch);
    TRY(cuArrayCreate, "size_huge", cuArrayCreate_v2, &a, &dhuge);
    TRY(cuArray3DCreate, "null_out", cuArray3DCreate_v2, NULL, &eok);
    TRY(cuArray3DCreate, "null_desc", cuArray3DCreate_v2, &a, NULL);
    TRY(cuArray3DCreate, "width_0", cuArray3DCreate_v2, &a, &e0);
    TRY(cuArray3DCreate, "bad_format", cuArray3DCreate_v2, &a, &efmt);
    TRY(cuArray3DCreate, "bad_flags", cuArray3DCreate_v2, &a, &eflags);
    TRY(cuArray3DCreate, "size_huge", cuArray3DCreate_v2, &a, &ehuge);
    TRY(cuMipmappedArrayCreate, "null_out", cuMipmappedArrayCreate, NULL, &eok, 2);
    TRY(cuMipmappedArrayCreate, "null_desc", cuMipmappedArrayCreate, &mm, NULL, 2);
    TRY(cuMipmappedArrayCreate, "levels_0", cuMipmappedArrayCreate, &mm, &eok, 0);
    TRY(cuMipmappedArrayCreate, "levels_99", cuMipmappedArrayCreate, &mm, &eok, 99);
    TRY(cuMipmappedArrayCreate, "width_0", cuMipmappedArrayCreate, &mm, &e0, 2);
    TRY(cuMipmappedArrayCreate, "size_huge", cuMipmappedArrayCreate, &mm, &ehuge, 1);
    TRY(cuArrayDestroy, "null", cuArrayDestroy, NULL);
    TRY(cuArrayDestroy, "bad_array", cuArrayDestroy, BAD_HANDLE);
    TRY(cuMipmappedArrayDestroy, "null", cuMipmappedArrayDestroy, NULL);
    TRY(cuMipmappedArrayDestroy, "bad_array", cuMipmappedArrayDestroy, BAD_HANDLE);
}

/* No registration with undefined flags or of unmapped memory: what the
 * driver does with them is not documented (fakecuda registers them). */
void host_memory(void)
{
    void *hp;
    static char page[3 * 4096] __attribute__((aligned(4096)));
    TRY(cuMemHostAlloc, "null_out", cuMemHostAlloc, NULL, MiB, 0);
    TRY(cuMemHostAlloc, "size_0", cuMemHostAlloc, &hp, 0, 0);
    TRY(cuMemHostAlloc, "bad_flags", cuMemHostAlloc, &hp, MiB, 0x80);
    TRY(cuMemHostAlloc, "size_huge", cuMemHostAlloc, &hp, HUGE_SIZE, 0);
    TRY(cuMemAllocHost, "null_out", cuMemAllocHost_v2, NULL, MiB);
    TRY(cuMemAllocHost, "size_0", cuMemAllocHost_v2, &hp, 0);
    TRY(cuMemAllocHost, "size_huge", cuMemAllocHost_v2, &hp, HUGE_SIZE);
    TRY(cuMemFreeHost, "bad_pointer", cuMemFreeHost, (void *)(uintptr_t)bad);
    TRY(cuMemFreeHost, "null", cuMemFreeHost, NULL);
    TRY(cuMemFreeHost, "interior", cuMemFreeHost, (char *)pinned + 256);
    TRY(cuMemFreeHost, "device_pointer", cuMemFreeHost, (void *)(uintptr_t)dptr);
    TRY(cuMemHostRegister, "null", cuMemHostRegister_v2, NULL, 4096, 0);
    TRY(cuMemHostRegister, "size_0", cuMemHostRegister_v2, page, 0, 0);
    TRY(cuMemHostRegister, "pinned", cuMemHostRegister_v2, pinned, 4096, 0);
    OK(cuMemHostRegister(page, sizeof page, 0));
    TRY(cuMemHostRegister, "registered", cuMemHostRegister_v2, page, sizeof page, 0);
    TRY(cuMemHostRegister, "overlap", cuMemHostRegister_v2, page + 4096, 4096, 0);
    TRY(cuMemHostUnregister, "interior", cuMemHostUnregister, page + 4096);
    OK(cuMemHostUnregister(page));
    TRY(cuMemHostUnregister, "null", cuMemHostUnregister, NULL);
    TRY(cuMemHostUnregister, "unregistered", cuMemHostUnregister, page);
    TRY(cuMemHostUnregister, "pinned", cuMemHostUnregister, pinned);
}

void sizes(void)
{
    size_t f, t;
    TRY(cuMemGetInfo, "null_both", cuMemGetInfo_v2, NULL, NULL);
    TRY(cuMemGetInfo, "null_free", cuMemGetInfo_v2, NULL, &t);
    TRY(cuMemGetInfo, "null_total", cuMemGetInfo_v2, &f, NULL);
    TRY(cuDeviceTotalMem, "null_out", cuDeviceTotalMem_v2, NULL, 0);
    TRY(cuDeviceTotalMem, "device_99", cuDeviceTotalMem_v2, &t, 99);
    TRY(cuDeviceTotalMem, "device_minus_1", cuDeviceTotalMem_v2, &t, -1);
}
