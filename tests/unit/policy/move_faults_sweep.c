/* The move-faults suite (test_move_faults.c): the sweep, every driver step
 * of a spill or fill refused in turn, each case in a child. */
#include "tests/unit/policy/move_faults_rig.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

/* One case of the sweep, in a child: NULL when every invariant held, else
 * what broke. Its pages are 64 KiB: a move makes the same driver calls,
 * page by page, whatever their size, and 840 cases of 2 MiB pages spent a
 * minute and a half of the suite copying bytes and faulting them in. */
#define SWEEP_PG ((size_t)64 << 10)

static const char *sweep_case(const char *op, int skip, int times, CUresult err, bool fill_back)
{
    sw_device_config cfg = {.limit = 8 * SWEEP_PG, .host_limit = 16 * SWEEP_PG, .spill = true};
    env_up_paged(&cfg, SWEEP_PG, 8);
    CUdeviceptr a;
    if (sw_alloc(P, 0, 4 * SWEEP_PG, &a) != CUDA_SUCCESS)
        return "alloc";
    fill(a, 4 * SWEEP_PG, 3);
    if (fill_back && sw_set_residency(P, a, 4, SW_RES_HOST) != CUDA_SUCCESS)
        return "spill before the fill";
    fake_fail_after(FB, op, skip, err, times);
    (void)sw_set_residency(P, a, 4, fill_back ? SW_RES_DEVICE : SW_RES_HOST);
    fake_fail_clear(FB);
    for (int i = 0; i < 4; i++)
        if (!fake_mapped_handle(FB, a + (CUdeviceptr)i * SWEEP_PG))
            return "a VA left unmapped";
    if (!verify(a, 4 * SWEEP_PG, 3))
        return "bytes lost";
    if (fstats().violations)
        return fake_violation(FB);
    if (sw_set_residency(P, a, 4, SW_RES_DEVICE) != CUDA_SUCCESS || !verify(a, 4 * SWEEP_PG, 3))
        return "filled back afterwards";
    if (sw_free(P, a) != CUDA_SUCCESS)
        return "free";
    if (sw_policy_destroy(P) != CUDA_SUCCESS)
        return "destroy";
    fake_stats s = fstats();
    if (s.violations)
        return fake_violation(FB);
    if (s.live_dev_pages || s.live_host_pages || s.live_mappings)
        return "a page or mapping leaked";
    return NULL;
}

/* One driver step of a 4-page spill or fill refused, once to three times in
 * a row, after 0 to 9 calls of it passed, with two error codes (UNKNOWN
 * among them: the driver's, not a sentinel of ours). */
START_TEST(every_refused_step_of_a_move_keeps_the_bytes)
{
    static const char *ops[] = {"map", "unmap", "set_access", "copy", "stream_sync", "synchronize",
                                "page_create"};
    static const CUresult errs[] = {CUDA_ERROR_UNKNOWN, CUDA_ERROR_OUT_OF_MEMORY};
    int failed = 0, cases = 0;
    for (int back = 0; back < 2; back++)
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
            for (size_t e = 0; e < 2; e++)
                for (int skip = 0; skip < 10; skip++)
                    for (int times = 1; times <= 3; times++) {
                        fflush(stdout);
                        pid_t pid = fork();
                        ck_assert_int_ge(pid, 0);
                        if (pid == 0) {
                            const char *why = sweep_case(ops[o], skip, times, errs[e], back);
                            if (why)
                                printf("%s refused (%d) after %d, %d time(s), %s: %s\n", ops[o],
                                       (int)errs[e], skip, times, back ? "fill" : "spill", why);
                            fflush(stdout);
                            _exit(why ? 1 : 0);
                        }
                        int st;
                        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
                        cases++;
                        if (!WIFEXITED(st) || WEXITSTATUS(st)) {
                            if (!WIFEXITED(st))
                                printf("%s refused (%d) after %d, %d time(s), %s: died (status %d)\n",
                                       ops[o], (int)errs[e], skip, times, back ? "fill" : "spill", st);
                            failed++;
                        }
                    }
    ck_assert_msg(failed == 0, "%d of %d cases broke an invariant (listed above)", failed, cases);
}
END_TEST

void move_faults_sweep_tests(TCase *tc)
{
    tcase_add_test(tc, every_refused_step_of_a_move_keeps_the_bytes);
}
