/* fakecuda: a stand-in for collectives across devices (fakecuda.h). An
 * NCCL all-reduce is a kernel on each device that spins until the kernels
 * of its peers have started: work on one device waits for work another
 * thread (or the same thread, later) has yet to launch on another device,
 * and nothing in the stream graph says so. A device sync on one device
 * then waits for a launch on another; if the thread that would make that
 * launch is the one waiting, a GPU hangs for good. Here the kernel blocks
 * its stream's worker the same way, but gives up after a timeout, says so
 * on stderr and counts it, so that a test of that deadlock fails instead
 * of hanging. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tests/fakecuda/internal.h"

/* One round of a key: launches arrive until nranks have, then all go. */
struct rendezvous {
    unsigned long long key;
    unsigned nranks;
    unsigned arrived;
    unsigned long long round;
    struct rendezvous *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct rendezvous *all;
static unsigned timeout_ms = 10000;
static unsigned long long timeouts;

static void init(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC); /* a timeout the wall clock cannot stretch */
    pthread_cond_init(&cond, &a);
    pthread_condattr_destroy(&a);
    const char *v = getenv("FAKECUDA_COLLECTIVE_TIMEOUT_MS");
    if (v) {
        char *end;
        unsigned long ms = strtoul(v, &end, 10);
        if (end == v || *end || ms == 0 || ms > 3600000) {
            fprintf(stderr, "fakecuda: FAKECUDA_COLLECTIVE_TIMEOUT_MS=%s: expected 1..3600000\n", v);
            exit(2);
        }
        timeout_ms = (unsigned)ms;
    }
}

/* Under lock. */
static struct rendezvous *rendezvous_of(unsigned long long key, unsigned nranks)
{
    for (struct rendezvous *r = all; r; r = r->next)
        if (r->key == key)
            return r;
    struct rendezvous *r = calloc(1, sizeof *r);
    if (!r)
        abort(); /* as fc_stream_enqueue: tests are small */
    r->key = key;
    r->nranks = nranks;
    r->next = all;
    all = r;
    return r;
}

/* (unsigned long long key, unsigned nranks, unsigned *status) */
static void collective(fakecuda_dim3 grid, fakecuda_dim3 block, void **params)
{
    (void)grid;
    (void)block;
    unsigned long long key = *(unsigned long long *)params[0];
    unsigned nranks = *(unsigned *)params[1];
    unsigned *status = *(unsigned **)params[2];
    pthread_once(&once, init);
    pthread_mutex_lock(&lock);
    struct rendezvous *r = rendezvous_of(key, nranks ? nranks : 1);
    unsigned long long round = r->round;
    unsigned result = FAKECUDA_COLLECTIVE_DONE;
    if (++r->arrived >= r->nranks) {
        r->arrived = 0;
        r->round++;
        pthread_cond_broadcast(&cond);
    } else {
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        int err = 0;
        while (r->round == round && err != ETIMEDOUT)
            err = pthread_cond_timedwait(&cond, &lock, &deadline);
        if (r->round == round) { /* nobody came: leave the round as it was */
            r->arrived--;
            timeouts++;
            result = FAKECUDA_COLLECTIVE_TIMED_OUT;
            fprintf(stderr,
                    "fakecuda: collective %llu timed out after %u ms with %u of %u ranks: the "
                    "others were never launched (on a GPU, a hang)\n",
                    key, timeout_ms, r->arrived + 1, r->nranks);
        }
    }
    pthread_mutex_unlock(&lock);
    if (status)
        __atomic_store_n(status, result, __ATOMIC_SEQ_CST);
}

FC_EXPORT int fakecuda_register_collective(const char *name)
{
    static const size_t sizes[] = {sizeof(unsigned long long), sizeof(unsigned), sizeof(void *)};
    pthread_once(&once, init);
    return fakecuda_register_kernel(name, collective, 3, sizes);
}

FC_EXPORT unsigned fakecuda_collective_timeout_ms(unsigned ms)
{
    pthread_once(&once, init);
    pthread_mutex_lock(&lock);
    unsigned was = timeout_ms;
    if (ms)
        timeout_ms = ms;
    pthread_mutex_unlock(&lock);
    return was;
}

FC_EXPORT unsigned long long fakecuda_collective_timeouts(void)
{
    pthread_mutex_lock(&lock);
    unsigned long long n = timeouts;
    pthread_mutex_unlock(&lock);
    return n;
}
