/* The work gate: residency changes against the program's work submission.
 *
 * Remapping is not stream ordered, and unmapping a page that in-flight work
 * touches kills the context (DESIGN.md "Spill"). A sync alone cannot make a
 * move safe while other threads keep launching, so every hooked call that
 * submits work runs inside a bracket that holds the gate shared, and a move
 * closes it: the brackets in progress end (their work is then queued and
 * the mover's sync covers it), new ones wait until the move is done.
 *
 * Brackets nest per thread (the runtime's copy calls the driver's, both
 * hooked) at the cost of a thread-local counter; the lock prefers writers,
 * or a program launching from many threads could hold a move off forever. */
#include "policy/internal.h"

static _Thread_local unsigned depth;

int sw_gate_init(sw_policy *p)
{
    pthread_rwlockattr_t a;
    if (pthread_rwlockattr_init(&a))
        return -1;
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    int r = pthread_rwlock_init(&p->gate, &a);
    pthread_rwlockattr_destroy(&a);
    return r ? -1 : 0;
}

void sw_gate_destroy(sw_policy *p)
{
    pthread_rwlock_destroy(&p->gate);
}

void sw_work_begin(sw_policy *p)
{
    if (p && depth++ == 0)
        pthread_rwlock_rdlock(&p->gate);
}

void sw_work_end(sw_policy *p)
{
    if (p && depth && --depth == 0)
        pthread_rwlock_unlock(&p->gate);
}

CUresult sw_gate_close(sw_policy *p)
{
    if (depth)
        return CUDA_ERROR_NOT_PERMITTED; /* would wait for itself */
    pthread_rwlock_wrlock(&p->gate);
    return CUDA_SUCCESS;
}

void sw_gate_open(sw_policy *p)
{
    pthread_rwlock_unlock(&p->gate);
}
