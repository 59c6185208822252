/* Bad arguments (badargs.c) to virtual memory management: handles, maps,
 * access, exports, legacy IPC, address range handles and multicast binds. */
#include "tests/integration/shim/badargs.h"

#include <string.h>

void vmm(void)
{
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemAllocationProp far = prop;
    far.location.id = 99;
    CUmemAllocationProp untyped = prop;
    untyped.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    CUmemGenericAllocationHandle h, live;
    const CUmemGenericAllocationHandle bad_h = 0x12345678;
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    size_t gran = 0;
    OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    OK(cuMemCreate(&live, gran, &prop, 0));
    CUdeviceptr va;
    OK(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0));

    TRY(cuMemCreate, "null_out", cuMemCreate, NULL, gran, &prop, 0);
    TRY(cuMemCreate, "null_prop", cuMemCreate, &h, gran, NULL, 0);
    TRY(cuMemCreate, "size_0", cuMemCreate, &h, 0, &prop, 0);
    TRY(cuMemCreate, "unaligned_size", cuMemCreate, &h, 12345, &prop, 0);
    TRY(cuMemCreate, "size_huge", cuMemCreate, &h, HUGE_SIZE, &prop, 0);
    TRY(cuMemCreate, "device_99", cuMemCreate, &h, gran, &far, 0);
    TRY(cuMemCreate, "bad_type", cuMemCreate, &h, gran, &untyped, 0);
    TRY(cuMemCreate, "bad_flags", cuMemCreate, &h, gran, &prop, 0x100);
    TRY(cuMemRelease, "bad_handle", cuMemRelease, bad_h);
    TRY(cuMemRelease, "null", cuMemRelease, 0);
    TRY(cuMemMap, "unreserved", cuMemMap, bad, gran, 0, live, 0);
    TRY(cuMemMap, "bad_handle", cuMemMap, va, gran, 0, bad_h, 0);
    TRY(cuMemMap, "size_0", cuMemMap, va, 0, 0, live, 0);
    TRY(cuMemMap, "past_handle", cuMemMap, va, 2 * gran, 0, live, 0);
    TRY(cuMemMap, "bad_offset", cuMemMap, va, gran, gran, live, 0);
    TRY(cuMemMap, "bad_flags", cuMemMap, va, gran, 0, live, 1);
    TRY(cuMemMap, "on_pool", cuMemMap, dptr, gran, 0, live, 0);
    TRY(cuMemUnmap, "bad_pointer", cuMemUnmap, bad, gran);
    TRY(cuMemUnmap, "unmapped", cuMemUnmap, va, gran);
    TRY(cuMemUnmap, "size_0", cuMemUnmap, va, 0);
    TRY(cuMemSetAccess, "bad_pointer", cuMemSetAccess, bad, gran, &acc, 1);
    TRY(cuMemSetAccess, "unmapped", cuMemSetAccess, va, gran, &acc, 1);
    TRY(cuMemSetAccess, "null_desc", cuMemSetAccess, va, gran, NULL, 1);
    TRY(cuMemSetAccess, "count_0", cuMemSetAccess, va, gran, &acc, 0);
    TRY(cuMemRetainAllocationHandle, "null_out", cuMemRetainAllocationHandle, NULL, (void *)(uintptr_t)dptr);
    TRY(cuMemRetainAllocationHandle, "bad_pointer", cuMemRetainAllocationHandle, &h, (void *)(uintptr_t)bad);
    TRY(cuMemRetainAllocationHandle, "unmapped", cuMemRetainAllocationHandle, &h, (void *)(uintptr_t)va);
    /* cuMemAlloc memory is no VMM mapping to the program, whatever spillway
     * serves it from. */
    TRY(cuMemRetainAllocationHandle, "mem_alloc", cuMemRetainAllocationHandle, &h, (void *)(uintptr_t)dptr);
    TRY(cuMemRetainAllocationHandle, "mem_alloc_interior", cuMemRetainAllocationHandle, &h,
        (void *)(uintptr_t)inner);
    CUmemAllocationProp got;
    TRY(cuMemGetAllocationPropertiesFromHandle, "null_out", cuMemGetAllocationPropertiesFromHandle, NULL, live);
    TRY(cuMemGetAllocationPropertiesFromHandle, "bad_handle", cuMemGetAllocationPropertiesFromHandle, &got, bad_h);
    TRY(cuMemGetAllocationPropertiesFromHandle, "null", cuMemGetAllocationPropertiesFromHandle, &got, 0);
    int fd;
    TRY(cuMemExportToShareableHandle, "null_out", cuMemExportToShareableHandle, NULL, live,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    TRY(cuMemExportToShareableHandle, "bad_handle", cuMemExportToShareableHandle, &fd, bad_h,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    /* live was made without requestedHandleTypes: not exportable. */
    TRY(cuMemExportToShareableHandle, "not_requested", cuMemExportToShareableHandle, &fd, live,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    TRY(cuMemExportToShareableHandle, "bad_type", cuMemExportToShareableHandle, &fd, live,
        (CUmemAllocationHandleType)0x40, 0);
    TRY(cuMemExportToShareableHandle, "bad_flags", cuMemExportToShareableHandle, &fd, live,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1);

    /* Legacy IPC (fakecuda has none: ABSENT alone; under spillway the
     * hooks' answers, badargs.sh's known differences). No case exports
     * live memory: that would pin it for good. */
    CUipcMemHandle ih, spw_ih;
    memset(&ih, 0, sizeof ih);
    memset(&spw_ih, 0x5a, sizeof spw_ih);
    memcpy(spw_ih.reserved, "SPWIPC\1\0", 8); /* spillway's magic, nonsense after it */
    CUdeviceptr ip;
    TRY(cuIpcGetMemHandle, "null_out", cuIpcGetMemHandle, NULL, dptr);
    TRY(cuIpcGetMemHandle, "bad_ptr", cuIpcGetMemHandle, &ih, bad);
    TRY(cuIpcGetMemHandle, "freed", cuIpcGetMemHandle, &ih, gap);
    TRY(cuIpcGetMemHandle, "null_ptr", cuIpcGetMemHandle, &ih, 0);
    TRY(cuIpcOpenMemHandle, "zero_handle", cuIpcOpenMemHandle, &ip, ih, 0);
    TRY(cuIpcOpenMemHandle, "spw_null_out", cuIpcOpenMemHandle, NULL, spw_ih, 0);
    TRY(cuIpcOpenMemHandle, "spw_no_exporter", cuIpcOpenMemHandle, &ip, spw_ih, 0);
    TRY(cuIpcOpenMemHandle, "zero_handle", cuIpcOpenMemHandle_v2, &ip, ih, 0);
    TRY(cuIpcOpenMemHandle, "spw_null_out", cuIpcOpenMemHandle_v2, NULL, spw_ih, 0);
    TRY(cuIpcOpenMemHandle, "spw_bad_flags", cuIpcOpenMemHandle_v2, &ip, spw_ih, 0x80);
    TRY(cuIpcOpenMemHandle, "spw_no_exporter", cuIpcOpenMemHandle_v2, &ip, spw_ih,
        CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    TRY(cuIpcCloseMemHandle, "bad_ptr", cuIpcCloseMemHandle, bad);
    TRY(cuIpcCloseMemHandle, "null_ptr", cuIpcCloseMemHandle, 0);
    TRY(cuIpcCloseMemHandle, "pool_ptr", cuIpcCloseMemHandle, dptr);

    /* dptr: 1 MiB of cuMemAlloc memory, the pool's under spillway; gap
     * freed. */
    const CUmemRangeHandleType dma_buf = CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD;
    TRY(cuMemGetHandleForAddressRange, "null_out", cuMemGetHandleForAddressRange, NULL, dptr, 4096, dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "bad_type", cuMemGetHandleForAddressRange, &fd, dptr, 4096,
        (CUmemRangeHandleType)99, 0);
    TRY(cuMemGetHandleForAddressRange, "bad_flags", cuMemGetHandleForAddressRange, &fd, dptr, 4096, dma_buf, 8);
    TRY(cuMemGetHandleForAddressRange, "pcie_flag", cuMemGetHandleForAddressRange, &fd, dptr, 4096, dma_buf,
        CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE);
    TRY(cuMemGetHandleForAddressRange, "unaligned", cuMemGetHandleForAddressRange, &fd, dptr + 256, 4096,
        dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "unaligned_size", cuMemGetHandleForAddressRange, &fd, dptr, 100, dma_buf,
        0);
    TRY(cuMemGetHandleForAddressRange, "size_0", cuMemGetHandleForAddressRange, &fd, dptr, 0, dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "null_ptr", cuMemGetHandleForAddressRange, &fd, 0, 4096, dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "bad_ptr", cuMemGetHandleForAddressRange, &fd, bad, 4096, dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "freed", cuMemGetHandleForAddressRange, &fd, just_freed(), 4096, dma_buf,
        0);
    /* Past dptr's end into the memory after it (the pool's next block). */
    TRY(cuMemGetHandleForAddressRange, "past_end", cuMemGetHandleForAddressRange, &fd, dptr, 2 * MiB, dma_buf, 0);
    TRY(cuMemGetHandleForAddressRange, "huge", cuMemGetHandleForAddressRange, &fd, dptr, (size_t)1 << 62,
        dma_buf, 0);
    /* A bad start above every mapping and a size past all memory: the
     * driver's answer at once (spillway once walked such a range in 64 KiB
     * steps: 2^46 of them). */
    TRY(cuMemGetHandleForAddressRange, "huge_bad_ptr", cuMemGetHandleForAddressRange, &fd,
        (CUdeviceptr)0xffff00000000ull, (size_t)1 << 62, dma_buf, 0);

    TRY(cuMulticastBindMem, "bad_mc", cuMulticastBindMem, bad_h, 0, live, 0, gran, 0);
    TRY(cuMulticastBindMem, "null_mc", cuMulticastBindMem, 0, 0, live, 0, gran, 0);
    TRY(cuMulticastBindMem, "null_mem", cuMulticastBindMem, bad_h, 0, 0, 0, gran, 0);
    TRY(cuMulticastBindAddr, "bad_mc", cuMulticastBindAddr, bad_h, 0, dptr, gran, 0);
    TRY(cuMulticastBindAddr, "bad_pointer", cuMulticastBindAddr, bad_h, 0, bad, gran, 0);
    TRY(cuMulticastBindMem_v2, "bad_mc", cuMulticastBindMem_v2, bad_h, 0, 0, live, 0, gran, 0);
    TRY(cuMulticastBindMem_v2, "device_99", cuMulticastBindMem_v2, bad_h, 99, 0, live, 0, gran, 0);
    TRY(cuMulticastBindAddr_v2, "bad_mc", cuMulticastBindAddr_v2, bad_h, 0, 0, dptr, gran, 0);
    TRY(cuMulticastBindAddr_v2, "device_99", cuMulticastBindAddr_v2, bad_h, 99, 0, dptr, gran, 0);

    OK(cuMemAddressFree(va, 2 * gran));
    OK(cuMemRelease(live));
}
