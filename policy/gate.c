/* The work gates: residency changes against the program's work submission,
 * one gate per device.
 *
 * Remapping is not stream ordered, and unmapping a page that in-flight work
 * touches kills the context (docs/design.md, "the remap hazard"). A sync
 * alone cannot make a move safe while other threads keep launching, so
 * every hooked call that submits work runs inside a bracket that holds the
 * gate of each device it runs on or reads, and a move closes the gates of
 * the devices that can reach its pages: the brackets in progress end (their
 * work is then queued and the mover's sync covers it), new ones wait until
 * the move is done.
 *
 * A bracket is on every launch of every thread, so it must not write a
 * shared line: readers count themselves in per-slot counters (a thread's
 * slot is its own cache line most of the time), and check a closed flag
 * the mover sets (Dekker: each side writes its own word, then reads the
 * other's, both sequentially consistent). A mover waits for the counters
 * to drain only until a deadline: a bracket can block inside the driver (a
 * synchronous copy waiting for a kernel that waits for work this very
 * mover's thread has yet to submit), and then the move gives up rather than
 * deadlock (issue 12). Brackets nest per thread (the runtime's copy calls
 * the driver's, both hooked). */
#include <errno.h>
#include <sched.h>
#include <time.h>

#include "policy/internal.h"

#define NEST_MAX 16

static _Thread_local unsigned depth;
static _Thread_local uint64_t held;              /* devices whose gate we hold */
static _Thread_local uint64_t added[NEST_MAX];   /* what each level added */
static _Thread_local int my_slot = -1;

static unsigned slot_of_thread(void)
{
    static _Atomic unsigned next;
    if (my_slot < 0)
        my_slot = (int)(atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) % SW_GATE_SLOTS);
    return (unsigned)my_slot;
}

uint64_t sw_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int sw_gate_init(sw_gate *g)
{
    atomic_init(&g->closed, 0);
    atomic_init(&g->stuck, 0);
    for (int i = 0; i < SW_GATE_SLOTS; i++)
        atomic_init(&g->slot[i].n, 0);
    if (pthread_mutex_init(&g->writer, NULL) || pthread_mutex_init(&g->park, NULL))
        return -1;
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int r = pthread_cond_init(&g->reopened, &a);
    pthread_condattr_destroy(&a);
    return r ? -1 : 0;
}

void sw_gate_destroy(sw_gate *g)
{
    pthread_mutex_destroy(&g->writer);
    pthread_mutex_destroy(&g->park);
    pthread_cond_destroy(&g->reopened);
}

static void enter(sw_gate *g)
{
    _Atomic uint32_t *n = &g->slot[slot_of_thread()].n;
    for (;;) {
        atomic_fetch_add_explicit(n, 1, memory_order_seq_cst);
        if (!atomic_load_explicit(&g->closed, memory_order_seq_cst))
            return;
        atomic_fetch_sub_explicit(n, 1, memory_order_seq_cst);
        pthread_mutex_lock(&g->park);
        while (atomic_load_explicit(&g->closed, memory_order_acquire))
            pthread_cond_wait(&g->reopened, &g->park);
        pthread_mutex_unlock(&g->park);
    }
}

static void leave(sw_gate *g)
{
    atomic_fetch_sub_explicit(&g->slot[slot_of_thread()].n, 1, memory_order_release);
}

void sw_work_begin(sw_policy *p, uint64_t devices)
{
    if (!p)
        return;
    uint64_t add = devices & ~held;
    if (depth < NEST_MAX)
        added[depth] = add;
    else
        add = 0; /* deeper than any real nesting: hold what the levels above hold */
    depth++;
    /* Ascending, as movers close them: a cycle needs a mover, and movers
     * give up at their deadline. */
    for (uint64_t m = add; m; m &= m - 1)
        enter(&p->gate[__builtin_ctzll(m)]);
    held |= add;
}

void sw_work_end(sw_policy *p)
{
    if (!p || !depth)
        return;
    depth--;
    uint64_t add = depth < NEST_MAX ? added[depth] : 0;
    for (uint64_t m = add; m; m &= m - 1)
        leave(&p->gate[__builtin_ctzll(m)]);
    held &= ~add;
}

static bool drained(sw_gate *g)
{
    for (int i = 0; i < SW_GATE_SLOTS; i++)
        if (atomic_load_explicit(&g->slot[i].n, memory_order_seq_cst))
            return false;
    return true;
}

/* The slots of want that count brackets now. */
static uint32_t open_slots(sw_gate *g, uint32_t want)
{
    uint32_t open = 0;
    for (uint32_t m = want; m; m &= m - 1) {
        int i = __builtin_ctz(m);
        if (atomic_load_explicit(&g->slot[i].n, memory_order_seq_cst))
            open |= 1u << i;
    }
    return open;
}

static void reopen(sw_gate *g)
{
    atomic_store_explicit(&g->closed, 0, memory_order_seq_cst);
    pthread_mutex_lock(&g->park);
    pthread_cond_broadcast(&g->reopened);
    pthread_mutex_unlock(&g->park);
}

static struct timespec abs_of(uint64_t deadline_ns)
{
    struct timespec ts = {(time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull)};
    return ts;
}

/* The writer lock, waited for until the deadline (CLOCK_MONOTONIC). Under
 * ThreadSanitizer the same deadline on CLOCK_REALTIME: neither gcc 12's nor
 * clang 14's intercepts pthread_mutex_clocklock, so it would not see the
 * lock taken (false reports at the unlock, and the ordering the lock gives
 * unseen). gcc says so with __SANITIZE_THREAD__, clang with __has_feature. */
#if defined(__SANITIZE_THREAD__)
#define SW_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SW_UNDER_TSAN 1
#endif
#endif
static bool lock_writer(sw_gate *g, uint64_t deadline_ns)
{
    if (deadline_ns == UINT64_MAX)
        return pthread_mutex_lock(&g->writer) == 0;
#ifdef SW_UNDER_TSAN
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t now = sw_now_ns(), left = deadline_ns > now ? deadline_ns - now : 0;
    struct timespec ts = abs_of((uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec + left);
    return pthread_mutex_timedlock(&g->writer, &ts) == 0;
#else
    struct timespec ts = abs_of(deadline_ns);
    return pthread_mutex_clocklock(&g->writer, CLOCK_MONOTONIC, &ts) == 0;
#endif
}

/* A close of device dev's gate ran into its deadline with the brackets of
 * slots open: the gate is overdue until they drain (sw_gate_stuck). The
 * gate's bits first, the policy's after: a clear that raced with this sees
 * them and sets the policy's bit again. */
static void mark_stuck(sw_policy *p, int dev, uint32_t slots)
{
    if (!slots)
        return;
    atomic_fetch_or(&p->gate[dev].stuck, slots);
    atomic_fetch_or(&p->gates_stuck, 1ull << dev);
}

static CUresult close_one(sw_policy *p, int dev, uint64_t deadline_ns)
{
    sw_gate *g = &p->gate[dev];
    if (!lock_writer(g, deadline_ns))
        return CUDA_ERROR_NOT_READY; /* another mover: its own wait marks what it finds */
    atomic_store_explicit(&g->closed, 1, memory_order_seq_cst);
    for (unsigned spins = 0; !drained(g); spins++) {
        if (sw_now_ns() >= deadline_ns) {
            uint32_t open = open_slots(g, UINT32_MAX);
            reopen(g);
            pthread_mutex_unlock(&g->writer);
            mark_stuck(p, dev, open);
            return CUDA_ERROR_NOT_READY;
        }
        if (spins < 64) {
            sched_yield();
        } else {
            struct timespec pause = {0, 20000};
            nanosleep(&pause, NULL);
        }
    }
    return CUDA_SUCCESS;
}

CUresult sw_gate_close(sw_policy *p, uint64_t devices, uint64_t deadline_ns)
{
    if (devices & held)
        return CUDA_ERROR_NOT_PERMITTED; /* would wait for itself */
    for (uint64_t m = devices; m; m &= m - 1) {
        int d = __builtin_ctzll(m);
        CUresult r = close_one(p, d, deadline_ns);
        if (r != CUDA_SUCCESS) {
            sw_gate_open(p, devices & (((uint64_t)1 << d) - 1));
            return r;
        }
    }
    return CUDA_SUCCESS;
}

void sw_gate_open(sw_policy *p, uint64_t devices)
{
    for (uint64_t m = devices; m; m &= m - 1) {
        sw_gate *g = &p->gate[__builtin_ctzll(m)];
        reopen(g);
        pthread_mutex_unlock(&g->writer);
    }
}


uint64_t sw_gate_stuck(sw_policy *p, uint64_t devices)
{
    uint64_t stuck = 0;
    for (uint64_t m = atomic_load_explicit(&p->gates_stuck, memory_order_relaxed) & devices; m;
         m &= m - 1) {
        int d = __builtin_ctzll(m);
        sw_gate *g = &p->gate[d];
        uint32_t slots = atomic_load(&g->stuck);
        /* Cleared only as seen: a mover that marked slots since makes the
         * exchange fail, and the gate stays overdue. */
        if (open_slots(g, slots) || !atomic_compare_exchange_strong(&g->stuck, &slots, 0)) {
            stuck |= 1ull << d;
            continue;
        }
        atomic_fetch_and(&p->gates_stuck, ~(1ull << d));
        if (atomic_load(&g->stuck)) /* marked between the exchange and the clear */
            atomic_fetch_or(&p->gates_stuck, 1ull << d);
    }
    return stuck;
}
