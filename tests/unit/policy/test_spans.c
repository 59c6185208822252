/* Spans (policy/spans.c) under their sequence lock: a reader racing a
 * writer that inserts spans never takes a half-moved array for a
 * consistent one. White-box: spans have no API of their own above the
 * policy (launches reach them through sw_touch). */
#include <pthread.h>
#include <stdatomic.h>

#include "policy/internal.h"
#include "tests/unit/policy/helpers.h"

enum { STEP = 4096, SPANS = 6000, ROUNDS = 12 };

typedef struct race {
    sw_spans *s;
    CUdeviceptr va, end;
    _Atomic int done;
    uint64_t reads, torn;
    CUdeviceptr bad_ptr, bad_start, bad_end;
} race;

/* Each new start is the lowest yet: it goes in at index 1 and every
 * other pointer of the array moves one place (the widest window). */
static void *writer(void *arg)
{
    race *r = arg;
    for (int k = SPANS; k >= 1; k--) {
        CUdeviceptr end;
        (void)sw_spans_touch(P, r->s, r->va + (CUdeviceptr)k * STEP, &end);
    }
    atomic_store(&r->done, 1);
    return NULL;
}

/* What a consistent array answers for ptr: the span it lies in, ending at
 * the next start or at the mapping's end, both on the grid of starts. */
static void *reader(void *arg)
{
    race *r = arg;
    uint64_t seed = 42;
    while (!atomic_load(&r->done)) {
        CUdeviceptr ptr = r->va + (rnd(&seed) % (SPANS + 1)) * STEP + STEP / 2, start, end;
        (void)sw_spans_at(r->s, ptr, &start, &end);
        r->reads++;
        bool ok = start <= ptr && ptr < end && end <= r->end && (start - r->va) % STEP == 0 &&
                  (end == r->end || (end - r->va) % STEP == 0);
        if (!ok && !r->torn++) {
            r->bad_ptr = ptr;
            r->bad_start = start;
            r->bad_end = end;
        }
    }
    return NULL;
}

/* Rounds of the race: a reordering that lets a reader through shows in
 * some rounds only (a few reads in tens of thousands). */
START_TEST(readers_never_see_a_half_moved_array)
{
    env_up(4, false, 0);
    for (int round = 0; round < ROUNDS; round++) {
        sw_heat h = {0};
        race r = {.va = ((CUdeviceptr)1 << 40) + ((CUdeviceptr)round << 32)};
        r.end = r.va + (CUdeviceptr)(SPANS + 2) * STEP;
        r.s = sw_spans_new(P, r.va, (size_t)(r.end - r.va), &h);
        ck_assert_ptr_nonnull(r.s);
        pthread_t w, rd;
        ck_assert_int_eq(pthread_create(&rd, NULL, reader, &r), 0);
        ck_assert_int_eq(pthread_create(&w, NULL, writer, &r), 0);
        pthread_join(w, NULL);
        pthread_join(rd, NULL);
        ck_assert_msg(r.torn == 0,
                      "round %d: %llu of %llu reads inconsistent; first: %#llx in [%#llx, %#llx)",
                      round, (unsigned long long)r.torn, (unsigned long long)r.reads,
                      (unsigned long long)r.bad_ptr, (unsigned long long)r.bad_start,
                      (unsigned long long)r.bad_end);
        /* Every start is there, in order, once the writer is done. */
        for (int k = 0; k <= SPANS; k++) {
            CUdeviceptr ptr = r.va + (CUdeviceptr)k * STEP + 1, start, end;
            (void)sw_spans_at(r.s, ptr, &start, &end);
            ck_assert_uint_eq(start, ptr - 1);
            ck_assert_uint_eq(end, k == SPANS ? r.end : ptr - 1 + STEP);
        }
    }
    env_down();
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("policy_spans");
    TCase *tc = tcase_create("spans");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, readers_never_see_a_half_moved_array);
    suite_add_tcase(s, tc);
    return s;
}
