/* fork() of a program under spillway (issue 12 item 9), against fakecuda,
 * whose driver refuses every call in a child forked after cuInit, as
 * NVIDIA's does (tests/unit/driver/test_fork.c). A process with a spilling
 * pool (a 64 MiB limit, more than that allocated, its syncer and host-page
 * reserve threads running) forks; its children exit through exit()
 * (spillway's atexit and the driver's teardown run), or call CUDA and must
 * get the driver's error at once, or exec a CUDA program under spillway;
 * meanwhile the parent allocates, copies, launches and syncs, alone or from
 * several threads that keep spilling. Both sides must finish, the parent's
 * data stay exact, and its stats segment stay its own: still there, and
 * equal to the counters the parent keeps in-process.
 *
 * Run by fork.sh, one case per process under a timeout (SPW_TEST_FORK_ONLY).
 * Children report by exit status only (a Check assertion in a child would
 * report into the parent's test) and carry an alarm; the parent gives each
 * a deadline and fails the test, killing it, when it is still running: a
 * deadlock.
 *
 * The cases are here; the parent's CUDA, data and stats segment are
 * fork_rig.c's, the children fork_children.c's and the busy threads
 * fork_crowd.c's (fork_rig.h). */
#include "tests/integration/shim/fork_rig.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the cases ----------------------------------------------------------- */

/* A process with a pool that has spilled forks; the child exits at once,
 * through exit(); the parent goes on using the pool meanwhile. */
START_TEST(child_exits_while_parent_works)
{
    setup();
    struct data d;
    data_new(&d);
    ck_assert_uint_gt(segment()->c[0][SPW_C_SPILLED], 0);
    pid_t pid = fork_child(CHILD_EXIT, &d);
    for (unsigned round = 0; round < 8; round++)
        parent_round(&d, round);
    expect_reaped(pid);
    data_check(&d);
    expect_stats_intact(&pid, 1);
}
END_TEST

/* The child calls CUDA on the parent's pool: every call is refused with
 * the driver's error, at once; then it exits. */
START_TEST(child_calls_cuda_and_gets_an_error)
{
    setup();
    struct data d;
    data_new(&d);
    CU_OK(launch_step(d.step, d.buf[2], BUF, 5, d.s)); /* in flight at the fork */
    for (size_t i = 0; i < BUF / 4; i++)
        d.want[2][i] = rig_step(d.want[2][i], 5);
    pid_t pid = fork_child(CHILD_CUDA, &d);
    for (unsigned round = 0; round < 8; round++)
        parent_round(&d, round);
    expect_reaped(pid);
    data_check(&d);
    expect_stats_intact(&pid, 1);
}
END_TEST

#define FORKS 50

/* Threads allocate, spill, fill and launch without a pause while the main
 * thread forks 50 times (children that exit, and children that call CUDA)
 * and the launching thread forks too: a fork finds locks held, gates
 * closed, brackets open and moves half done in the parent. */
START_TEST(forks_while_threads_allocate_and_spill)
{
    setup();
    struct data d;
    data_new(&d);
    uint64_t spills = segment()->c[0][SPW_C_SPILL_EVENTS];
    struct crowd c;
    crowd_start(&c, &d);
    pid_t pids[FORKS];
    for (unsigned i = 0; i < FORKS; i++) {
        pids[i] = fork_child(i % 2 ? CHILD_CUDA : CHILD_EXIT, &d);
        expect_reaped(pids[i]);
        pause_ms(i % 5);
    }
    crowd_stop(&c);
    data_check(&d);
    ck_assert_uint_gt(segment()->c[0][SPW_C_SPILL_EVENTS], spills); /* it did spill meanwhile */
    expect_stats_intact(pids, FORKS);
}
END_TEST

/* The child execs a CUDA program: spillway starts afresh in it (LD_PRELOAD
 * carried), with a pool, spill and a stats segment of its own, while the
 * parent's threads keep spilling. */
START_TEST(child_execs_a_cuda_program)
{
    setup();
    struct data d;
    data_new(&d);
    struct crowd c;
    crowd_start(&c, &d);
    pid_t pid = fork_child(CHILD_EXEC, &d);
    expect_reaped(pid);
    crowd_stop(&c);
    data_check(&d);
    expect_stats_intact(&pid, 1);
}
END_TEST

/* A fork before the program initialized CUDA (spillway has loaded the
 * driver, nothing more): the child may use CUDA through spillway as any
 * process, with a pool and a stats segment of its own. */
START_TEST(child_forked_before_cuda_uses_its_own)
{
    void *fn = NULL;
    ck_assert_msg(dlsym(RTLD_DEFAULT, "spillway_get_counters") != NULL, "not under spillway");
    CU_OK(cuGetProcAddress("cuMemAlloc", &fn, 12000, 0, NULL)); /* loads the driver */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        child_alarm();
        exit(fresh_cuda_program());
    }
    expect_reaped(pid);
    setup();
    struct data d;
    data_new(&d);
    data_check(&d);
    expect_stats_intact(&pid, 1);
}
END_TEST

Suite *test_suite(void)
{
    if (getenv("SPW_TEST_FORK_FRESH")) /* exec'd by child_execs */
        exit(fresh_cuda_program());
    Suite *s = suite_create("shim_fork");
    const char *only = getenv("SPW_TEST_FORK_ONLY");
    TCase *tc = tcase_create(only ? only : "fork");
    tcase_set_timeout(tc, 120);
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"exit", child_exits_while_parent_works},
        {"cuda", child_calls_cuda_and_gets_an_error},
        {"crowd", forks_while_threads_allocate_and_spill},
        {"exec", child_execs_a_cuda_program},
        {"before", child_forked_before_cuda_uses_its_own},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!only || strcmp(only, cases[i].name) == 0)
            tcase_add_test(tc, cases[i].test);
    suite_add_tcase(s, tc);
    return s;
}
