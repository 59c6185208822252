/* The driver VMM suite (test_vmm.c): mappings. A page seen the same from
 * every VA it is mapped at, unmaps that must cover whole mappings, one
 * access grant and one unmap over many mappings, and a copy through a
 * mapping without access refused. */
#include "tests/unit/driver/vmm_rig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lines of /proc/self/maps naming fakecuda's memory files. */
static int fakecuda_file_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, "fakecuda-vmm") != NULL;
    if (f)
        fclose(f);
    return n;
}

/* What the two pages of pages_at_two_vas_... hold: the test's model. */
struct two_pages {
    unsigned *page[2];
    size_t words;
};

/* Words [at, at + n) of a VA at which the pages are mapped in `order`. */
static void model_write(struct two_pages *m, const int order[2], size_t at, const unsigned *src,
                        unsigned value, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t w = at + i;
        m->page[order[w / m->words]][w % m->words] = src ? src[i] : value;
    }
}

static void model_check(const struct two_pages *m, const int order[2], const unsigned *back,
                        const char *name);

/* The pages read at va (mapped in `order`) are what the model says. */
static void model_expect(const struct two_pages *m, const int order[2], CUdeviceptr va,
                         const char *name)
{
    unsigned *back = malloc(2 * m->words * sizeof *back);
    ck_assert_ptr_nonnull(back);
    for (size_t i = 0; i < 2; i++) /* a page at a time, and across both */
        CU_OK(cuMemcpyDtoH(back + i * m->words, va + i * m->words * sizeof *back,
                           m->words * sizeof *back));
    model_check(m, order, back, name);
    CU_OK(cuMemcpyDtoH(back, va, 2 * m->words * sizeof *back));
    model_check(m, order, back, name);
    free(back);
}

static void model_check(const struct two_pages *m, const int order[2], const unsigned *back,
                        const char *name)
{
    for (size_t w = 0; w < 2 * m->words; w++) {
        unsigned want = m->page[order[w / m->words]][w % m->words];
        if (back[w] != want)
            ck_abort_msg("word %zu at %s is %#x, expected %#x", w, name, back[w], want);
    }
}

/* A page is seen the same from every VA it is mapped at (a move maps the
 * new page at a scratch VA, copies there, then maps it at the program's
 * VA), and one copy or set across two mappings reaches both pages. Here
 * two pages are mapped at a in one order and at b in the other. */
START_TEST(pages_at_two_vas_see_the_same_copies_and_sets)
{
    size_t g = granularity(), words = g / 4, half = words / 2;
    const int at_a[2] = {0, 1}, at_b[2] = {1, 0};
    struct two_pages m = {{calloc(words, 4), calloc(words, 4)}, words};
    unsigned *buf = malloc(g);
    ck_assert_ptr_nonnull(m.page[0]);
    ck_assert_ptr_nonnull(m.page[1]);
    ck_assert_ptr_nonnull(buf);
    for (size_t i = 0; i < words; i++)
        buf[i] = (unsigned)i * 2654435761u;
    CUdeviceptr a, b;
    CU_OK(cuMemAddressReserve(&a, 2 * g, 0, 0, 0));
    CU_OK(cuMemAddressReserve(&b, 2 * g, 0, 0, 0));
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h[2];
    for (int i = 0; i < 2; i++)
        CU_OK(cuMemCreate(&h[i], g, &p, 0));
    for (int i = 0; i < 2; i++) {
        CU_OK(cuMemMap(a + (size_t)i * g, g, 0, h[at_a[i]], 0));
        CU_OK(cuMemMap(b + (size_t)i * g, g, 0, h[at_b[i]], 0));
    }
    set_rw(a, 2 * g);
    set_rw(b, 2 * g);

    CU_OK(cuMemsetD32(a, 1, 2 * words));
    model_write(&m, at_a, 0, NULL, 1, 2 * words);
    model_expect(&m, at_b, b, "b");
    CU_OK(cuMemcpyHtoD(a + g / 2, buf, g)); /* across both pages */
    model_write(&m, at_a, half, buf, 0, words);
    model_expect(&m, at_b, b, "b");
    CUdeviceptr lin; /* a third buffer: a copy's sides must not overlap */
    CU_OK(cuMemAlloc(&lin, g));
    for (size_t i = 0; i < words; i++)
        buf[i] = ~buf[i];
    CU_OK(cuMemcpyHtoD(lin, buf, g));
    CU_OK(cuMemcpyDtoD(b + g / 4, lin, g)); /* page 1's last 3/4, page 0's first 1/4 */
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemFree(lin));
    model_write(&m, at_b, words / 4, buf, 0, words);
    model_expect(&m, at_a, a, "a");
    CU_OK(cuMemcpyHtoD(b + g + g / 8, buf + words / 2, g / 2)); /* within page 0 */
    model_write(&m, at_b, words + words / 8, buf + words / 2, 0, words / 2);
    CU_OK(cuMemsetD32(a + g + 64, 9, words / 4)); /* within page 1 */
    model_write(&m, at_a, words + 16, NULL, 9, words / 4);
    model_expect(&m, at_b, b, "b");
    CU_OK(cuMemsetD32Async(b + g / 2, 7, words, 0));
    CU_OK(cuCtxSynchronize());
    model_write(&m, at_b, half, NULL, 7, words);
    model_expect(&m, at_a, a, "a");
    model_expect(&m, at_b, b, "b");

    CU_OK(cuMemUnmap(a, 2 * g));
    CU_OK(cuMemUnmap(b, 2 * g));
    for (int i = 0; i < 2; i++)
        CU_OK(cuMemRelease(h[i]));
    if (fakecuda_present()) { /* nothing of the pages is left, mapped or open */
        ck_assert_uint_eq(fakecuda_live_handles(), 0);
        ck_assert_int_eq(fakecuda_file_maps(), 0);
    }
    CU_OK(cuMemAddressFree(a, 2 * g));
    CU_OK(cuMemAddressFree(b, 2 * g));
    free(buf);
    free(m.page[0]);
    free(m.page[1]);
}
END_TEST

START_TEST(unmap_must_cover_whole_mappings)
{
    size_t g = granularity();
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h;
    CU_OK(cuMemCreate(&h, 2 * g, &p, 0));
    CU_OK(cuMemMap(va, 2 * g, 0, h, 0));
    ck_assert_int_ne(cuMemUnmap(va, g), CUDA_SUCCESS);
    CU_OK(cuMemUnmap(va, 2 * g));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAddressFree(va, 2 * g));
}
END_TEST

/* One cuMemSetAccess and one cuMemUnmap over many mappings: the driver has
 * no limit on how many one call covers (a pool of 2 MiB pages sets access
 * over a 256 MiB allocation, 128 mappings, at once). */
START_TEST(access_and_unmap_over_many_mappings)
{
    size_t g = granularity(), n = 100;
    CUmemAllocationProp p = prop_device(0);
    CUdeviceptr va;
    CU_OK(cuMemAddressReserve(&va, n * g, 0, 0, 0));
    CUmemGenericAllocationHandle h[100];
    for (size_t i = 0; i < n; i++) {
        CU_OK(cuMemCreate(&h[i], g, &p, 0));
        CU_OK(cuMemMap(va + i * g, g, 0, h[i], 0));
        CU_OK(cuMemRelease(h[i])); /* the mapping keeps it */
    }
    set_rw(va, n * g);
    CU_OK(cuMemsetD32(va, 0x600d, n * g / 4));
    unsigned first = 0, last = 0;
    CU_OK(cuMemcpyDtoH(&first, va, 4));
    CU_OK(cuMemcpyDtoH(&last, va + n * g - 4, 4));
    ck_assert_uint_eq(first, 0x600d);
    ck_assert_uint_eq(last, 0x600d);
    CU_OK(cuMemUnmap(va, n * g));
    CU_OK(cuMemAddressFree(va, n * g));
}
END_TEST

/* The driver refuses a copy through a mapping that got no access (at the
 * call, INVALID_VALUE, or as the copy's error at the sync: an illegal
 * address). spillway's moves must never make one (policy/residency.c,
 * sw_page.noaccess); the policy suites' fake backend refuses it too. */
START_TEST(copy_through_a_mapping_without_access_is_refused)
{
    size_t g = granularity();
    CUdeviceptr va, ok;
    CU_OK(cuMemAddressReserve(&va, 2 * g, 0, 0, 0));
    CUmemAllocationProp p = prop_device(0);
    CUmemGenericAllocationHandle h, h2;
    CU_OK(cuMemCreate(&h, g, &p, 0));
    CU_OK(cuMemCreate(&h2, g, &p, 0));
    CU_OK(cuMemMap(va, g, 0, h, 0));
    ok = va + g;
    CU_OK(cuMemMap(ok, g, 0, h2, 0));
    set_rw(ok, g);
    char buf[16] = {0};
    CUresult r = cuMemcpyDtoH(buf, va, sizeof buf);
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    ck_assert_int_ne(r, CUDA_SUCCESS);
    r = cuMemcpyDtoD(ok, va, sizeof buf);
    if (r == CUDA_SUCCESS)
        r = cuCtxSynchronize();
    ck_assert_int_ne(r, CUDA_SUCCESS);
    if (!fakecuda_present())
        return; /* an illegal address may have ended the context */
    CU_OK(cuMemcpyDtoH(buf, ok, sizeof buf)); /* the accessible one copies */
    CU_OK(cuMemUnmap(va, 2 * g));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemRelease(h2));
    CU_OK(cuMemAddressFree(va, 2 * g));
}
END_TEST

void vmm_mapping_tests(TCase *tc)
{
    tcase_add_test(tc, pages_at_two_vas_see_the_same_copies_and_sets);
    tcase_add_test(tc, unmap_must_cover_whole_mappings);
    tcase_add_test(tc, access_and_unmap_over_many_mappings);
    tcase_add_test(tc, copy_through_a_mapping_without_access_is_refused);
}
