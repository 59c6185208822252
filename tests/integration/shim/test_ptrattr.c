/* Pointer attributes of pool memory (issue 12 item 6), under spillway
 * against fakecuda: NCCL's buffer registration and GPUDirect RDMA ask for
 * the mapping behind a pointer (MAPPING_BASE_ADDR, MAPPING_SIZE,
 * MEMORY_BLOCK_ID, IS_GPU_DIRECT_RDMA_CAPABLE). The driver only sees one of
 * spillway's pages there; spillway answers with the program's allocation,
 * by either call, also while its pages live on the host.
 *
 * Run by vmm.sh: one 256 MiB device, a 64 MiB limit. */
#include "tests/integration/shim/rig.h"

#define LIMIT (64 * MiB)

struct mapping {
    CUdeviceptr base;
    size_t size;
    unsigned long long block;
    unsigned rdma;
};

static struct mapping one_by_one(CUdeviceptr p)
{
    struct mapping m = {0};
    void *base = NULL;
    CU_OK(cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, p));
    m.base = (CUdeviceptr)(uintptr_t)base;
    CU_OK(cuPointerGetAttribute(&m.size, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p));
    CU_OK(cuPointerGetAttribute(&m.block, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, p));
    CU_OK(cuPointerGetAttribute(&m.rdma, CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, p));
    return m;
}

static struct mapping all_at_once(CUdeviceptr p)
{
    struct mapping m = {0};
    void *base = NULL;
    CUpointer_attribute a[] = {CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
                               CU_POINTER_ATTRIBUTE_MAPPING_SIZE,
                               CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID,
                               CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE};
    void *data[] = {&base, &m.size, &m.block, &m.rdma};
    CU_OK(cuPointerGetAttributes(4, a, data, p));
    m.base = (CUdeviceptr)(uintptr_t)base;
    return m;
}

static unsigned device_rdma(void)
{
    int v = 0;
    CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 0));
    return v != 0;
}

/* Both calls, at the start and inside, name [base, base + size). */
static void expect_mapping(CUdeviceptr base, size_t size, const char *what)
{
    struct mapping want = one_by_one(base);
    ck_assert_msg(want.base == base && want.size == size, "%s: mapping %#llx+%zu, expected %#llx+%zu",
                  what, (unsigned long long)want.base, want.size, (unsigned long long)base, size);
    ck_assert_uint_eq(want.rdma, device_rdma());
    CUdeviceptr inside[] = {base + size / 2, base + size - 1};
    for (int i = 0; i < 2; i++) {
        struct mapping a = one_by_one(inside[i]), b = all_at_once(inside[i]);
        ck_assert_msg(a.base == base && a.size == size && a.block == want.block &&
                          a.rdma == want.rdma,
                      "%s: one by one at +%llu", what, (unsigned long long)(inside[i] - base));
        ck_assert_msg(b.base == base && b.size == size && b.block == want.block &&
                          b.rdma == want.rdma,
                      "%s: all at once at +%llu", what, (unsigned long long)(inside[i] - base));
    }
}

START_TEST(allocations_answer_with_their_mapping)
{
    rig_setup(0);
    size_t big = 5 * MiB + 123, small = 1000;
    CUdeviceptr p = 0, q = 0;
    CU_OK(cuMemAlloc(&p, big));
    CU_OK(cuMemAlloc(&q, small));
    expect_mapping(p, big, "a 5 MiB allocation");
    expect_mapping(q, small, "a 1000-byte allocation");
    ck_assert_uint_ne(one_by_one(p).block, one_by_one(q).block);
    /* Spilled: the same answers. */
    CUdeviceptr x = rig_filled(LIMIT, 3);
    ck_assert_uint_lt(rig_resident(p, big, 0), big);
    expect_mapping(p, big, "a spilled allocation");
    unsigned type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    ck_assert_uint_eq(type, CU_MEMORYTYPE_DEVICE);
    CU_OK(cuMemFree(x));
    CU_OK(cuMemFree(q));
    CU_OK(cuMemFree(p));
}
END_TEST

START_TEST(program_mappings_answer_with_themselves)
{
    rig_setup(0);
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    CUmemGenericAllocationHandle h;
    CUdeviceptr va = 0;
    CU_OK(cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0));
    CU_OK(cuMemCreate(&h, 6 * MiB, &prop, 0));
    CU_OK(cuMemMap(va + 4 * MiB, 6 * MiB, 0, h, 0));
    CUmemAccessDesc a = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                         .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va + 4 * MiB, 6 * MiB, &a, 1));
    expect_mapping(va + 4 * MiB, 6 * MiB, "a mapping of a pooled handle");
    /* Another handle mapped where the first was: another physical
     * allocation (MEMORY_BLOCK_ID) and another buffer (BUFFER_ID), which a
     * registration cache keyed on them must not take for the first. */
    unsigned long long block = one_by_one(va + 4 * MiB).block, buffer = 0, again = 0;
    CU_OK(cuPointerGetAttribute(&buffer, CU_POINTER_ATTRIBUTE_BUFFER_ID, va + 4 * MiB));
    CU_OK(cuMemUnmap(va + 4 * MiB, 6 * MiB));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemCreate(&h, 6 * MiB, &prop, 0));
    CU_OK(cuMemMap(va + 4 * MiB, 6 * MiB, 0, h, 0));
    CU_OK(cuMemSetAccess(va + 4 * MiB, 6 * MiB, &a, 1));
    expect_mapping(va + 4 * MiB, 6 * MiB, "a second handle at the same address");
    ck_assert_uint_ne(one_by_one(va + 4 * MiB).block, block);
    CU_OK(cuPointerGetAttribute(&again, CU_POINTER_ATTRIBUTE_BUFFER_ID, va + 5 * MiB));
    ck_assert_uint_ne(again, buffer);
    CU_OK(cuMemUnmap(va + 4 * MiB, 6 * MiB));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, 16 * MiB));
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_ptrattr");
    TCase *tc = tcase_create("ptrattr");
    tcase_add_test(tc, allocations_answer_with_their_mapping);
    tcase_add_test(tc, program_mappings_answer_with_themselves);
    suite_add_tcase(s, tc);
    return s;
}
