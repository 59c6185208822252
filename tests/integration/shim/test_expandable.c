/* A program that grows its memory the way PyTorch's expandable segments do
 * (issue 12 item 5), under spillway against fakecuda: one large reserved
 * range, and chunks made by cuMemCreate asking for a POSIX file descriptor
 * handle, mapped one after the other and given access. They are pooled and
 * spill: the program grows past the limit and every byte stays. A chunk it
 * exports (to share with another process) becomes the driver's at the
 * export: the same addresses, the same bytes, a file descriptor whose
 * import shows them too. A FABRIC handle gets the driver's answer.
 *
 * Run by vmm.sh: one 256 MiB device, a 64 MiB limit. */
#include "tests/integration/shim/rig.h"

#include <stdlib.h>
#include <unistd.h>

#define LIMIT (64 * MiB)
#define CHUNK (4 * MiB)
#define NCHUNK 24 /* 96 MiB: half as much again as the limit */
#define RANGE (256 * MiB)

static CUmemAllocationProp fd_prop(void)
{
    CUmemAllocationProp p = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                             .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
    return p;
}

static void grant(CUdeviceptr va, size_t size)
{
    CUmemAccessDesc a = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                         .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(va, size, &a, 1));
}

struct segment {
    CUdeviceptr base;
    CUmemGenericAllocationHandle h[NCHUNK];
    size_t n;
};

/* One more chunk at the end of the segment, filled with its pattern. */
static void grow(struct segment *s)
{
    CUmemAllocationProp prop = fd_prop();
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, CHUNK, &prop, 0));
    CUdeviceptr at = s->base + s->n * CHUNK;
    CU_OK(cuMemMap(at, CHUNK, 0, h, 0));
    grant(at, CHUNK);
    uint32_t *w = rig_expected(CHUNK, 700 + (unsigned)s->n);
    CU_OK(cuMemcpyHtoD(at, w, CHUNK));
    free(w);
    s->h[s->n++] = h;
}

static void expect_all(const struct segment *s, const char *what)
{
    for (size_t i = 0; i < s->n; i++)
        rig_expect_pattern(s->base + i * CHUNK, CHUNK, 700 + (unsigned)i, what);
}

static void grow_past_the_limit(struct segment *s)
{
    rig_setup(0);
    CU_OK(cuMemAddressReserve(&s->base, RANGE, 0, 0, 0));
    s->n = 0;
    while (s->n < NCHUNK)
        grow(s);
}

/* Unmaps the whole segment in one call, releases, frees the range. */
static void shrink(struct segment *s)
{
    CU_OK(cuMemUnmap(s->base, s->n * CHUNK));
    for (size_t i = 0; i < s->n; i++)
        CU_OK(cuMemRelease(s->h[i]));
    CU_OK(cuMemAddressFree(s->base, RANGE));
}

START_TEST(pooled_and_spilled)
{
    struct segment s;
    grow_past_the_limit(&s);
    struct spillway_pool_counters c = rig_pool(0);
    ck_assert_uint_eq(c.in_use_bytes, NCHUNK * CHUNK);
    ck_assert_uint_eq(c.passthrough_count[SPILLWAY_PT_IPC], 0);
    ck_assert_uint_gt(c.spilled_bytes, 0);
    ck_assert_uint_le(c.pool_bytes, LIMIT);
    ck_assert_uint_eq(rig_counters(0).used, NCHUNK * CHUNK);
    expect_all(&s, "a chunk of the grown segment");
    /* It asked for a descriptor handle: that is what it has. */
    CUmemAllocationProp got;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, s.h[3]));
    ck_assert_int_eq(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ck_assert_int_eq(got.location.id, 0);
    shrink(&s);
    ck_assert_uint_eq(rig_counters(0).used, 0);
    ck_assert_uint_eq(rig_pool(0).in_use_bytes, 0);
}
END_TEST

START_TEST(export_makes_a_chunk_the_drivers)
{
    struct segment s;
    grow_past_the_limit(&s);
    /* The oldest chunk went to the host first. */
    ck_assert_uint_lt(rig_resident(s.base, CHUNK, 0), CHUNK);
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, s.h[0], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    ck_assert_int_ge(fd, 0);
    struct spillway_pool_counters c = rig_pool(0);
    ck_assert_uint_eq(c.in_use_bytes, (NCHUNK - 1) * CHUNK);
    ck_assert_uint_eq(c.passthrough_count[SPILLWAY_PT_IPC], 1);
    ck_assert_uint_eq(c.passthrough_bytes[SPILLWAY_PT_IPC], CHUNK);
    ck_assert_uint_eq(rig_counters(0).used, NCHUNK * CHUNK);
    ck_assert_uint_eq(rig_resident(s.base, CHUNK, 0), CHUNK); /* device memory, the driver's */
    expect_all(&s, "a chunk after the export");
    /* Another importer of the descriptor sees the same bytes, both ways. */
    CUmemGenericAllocationHandle imp;
    CU_OK(cuMemImportFromShareableHandle(&imp, (void *)(intptr_t)fd,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    CUdeviceptr other = 0;
    CU_OK(cuMemAddressReserve(&other, CHUNK, 0, 0, 0));
    CU_OK(cuMemMap(other, CHUNK, 0, imp, 0));
    grant(other, CHUNK);
    rig_expect_pattern(other, CHUNK, 700, "the imported chunk");
    CU_OK(cuMemsetD32(other, 0x600df00du, CHUNK / 4));
    uint32_t w = 0;
    CU_OK(cuMemcpyDtoH(&w, s.base + CHUNK - 4, 4));
    ck_assert_uint_eq(w, 0x600df00du);
    CU_OK(cuMemUnmap(other, CHUNK));
    CU_OK(cuMemAddressFree(other, CHUNK));
    CU_OK(cuMemRelease(imp));
    /* A second export is the driver's plain export; the handle still
     * answers as asked. */
    CU_OK(cuMemExportToShareableHandle(&fd, s.h[0], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    close(fd);
    CUmemAllocationProp got;
    CU_OK(cuMemGetAllocationPropertiesFromHandle(&got, s.h[0]));
    ck_assert_int_eq(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    /* Unmapped and mapped again by the program, still the same memory. */
    CU_OK(cuMemUnmap(s.base, CHUNK));
    CU_OK(cuMemMap(s.base, CHUNK, 0, s.h[0], 0));
    grant(s.base, CHUNK);
    CU_OK(cuMemcpyDtoH(&w, s.base, 4));
    ck_assert_uint_eq(w, 0x600df00du);
    /* Access over the whole segment, the driver's chunk among the pooled
     * ones, as PyTorch grants a peer. */
    grant(s.base, s.n * CHUNK);
    shrink(&s);
    ck_assert_uint_eq(rig_counters(0).used, 0);
    ck_assert_uint_eq(rig_pool(0).in_use_bytes, 0);
}
END_TEST

/* A chunk exported before the program granted access to its mapping (the
 * driver exports a handle whatever its mappings): the export works, and
 * once granted the mapping reads and writes the driver's memory. */
START_TEST(export_before_access_is_granted)
{
    rig_setup(0);
    CUmemAllocationProp prop = fd_prop();
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, CHUNK, &prop, 0));
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, CHUNK, 0, 0, 0));
    CU_OK(cuMemMap(va, CHUNK, 0, h, 0));
    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_uint_eq(rig_pool(0).passthrough_count[SPILLWAY_PT_IPC], 1);
    grant(va, CHUNK);
    uint32_t *w = rig_expected(CHUNK, 900);
    CU_OK(cuMemcpyHtoD(va, w, CHUNK));
    free(w);
    rig_expect_pattern(va, CHUNK, 900, "an exported chunk granted after");
    CU_OK(cuMemUnmap(va, CHUNK));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, CHUNK));
    ck_assert_uint_eq(rig_counters(0).used, 0);
}
END_TEST

START_TEST(export_of_a_type_not_asked_for)
{
    rig_setup(0);
    CUmemAllocationProp prop = fd_prop();
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, CHUNK, &prop, 0));
    int fd = -1;
    ck_assert_int_eq(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                     CUDA_ERROR_INVALID_VALUE);
    ck_assert_uint_eq(rig_pool(0).passthrough_count[SPILLWAY_PT_IPC], 0);
    CU_OK(cuMemRelease(h));
}
END_TEST

/* fakecuda has no IMEX channel: the driver's refusal, which programs fall
 * back on, not a pooled handle. */
START_TEST(fabric_gets_the_drivers_answer)
{
    rig_setup(0);
    CUmemAllocationProp prop = fd_prop();
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(cuMemCreate(&h, CHUNK, &prop, 0), CUDA_ERROR_NOT_SUPPORTED);
    ck_assert_uint_eq(rig_counters(0).used, 0);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("shim_expandable");
    TCase *tc = tcase_create("expandable");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, pooled_and_spilled);
    tcase_add_test(tc, export_makes_a_chunk_the_drivers);
    tcase_add_test(tc, export_before_access_is_granted);
    tcase_add_test(tc, export_of_a_type_not_asked_for);
    tcase_add_test(tc, fabric_gets_the_drivers_answer);
    suite_add_tcase(s, tc);
    return s;
}
