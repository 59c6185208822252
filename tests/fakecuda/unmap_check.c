/* fakecuda: the unmap hazard check (FAKECUDA_CHECK_UNMAP=1), on the
 * stream state (stream_state.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/stream_state.h"

/* ---- unmap hazards (FAKECUDA_CHECK_UNMAP=1) ----
 * On a GPU, unmapping memory that a queued or running copy still uses
 * faults the copy and kills the context (docs/design.md, "The remap
 * hazard"). Here the copy's worker would fault only if it has not run
 * yet: a race. With the check on, every
 * copy and set is remembered until the host has seen it complete (a wait
 * returned, or a query answered "done", after it completed), and unmapping
 * memory one of the others still uses stops the process with a message:
 * the hazard is caught whether or not the worker was fast. */
struct tracked {
    struct CUstream_st *s;
    uint64_t seq;
    uintptr_t base[2];
    size_t size[2];
    struct tracked *next;
};

bool fc_check_unmap;
static struct tracked *tracked; /* under lock */

__attribute__((constructor)) static void check_unmap_environment(void)
{
    const char *v = getenv("FAKECUDA_CHECK_UNMAP");
    fc_check_unmap = v && *v && strcmp(v, "0") != 0;
}

FC_EXPORT int fakecuda_check_unmap(int on)
{
    bool was = fc_check_unmap;
    fc_check_unmap = on != 0;
    return was;
}

void fc_track_op(struct CUstream_st *s, uint64_t seq, uintptr_t a, size_t an, uintptr_t b,
                 size_t bn)
{
    struct tracked *t = malloc(sizeof *t);
    if (!t)
        abort(); /* as fc_stream_enqueue: tests are small */
    *t = (struct tracked){s, seq, {a, b}, {an, bn}, NULL};
    pthread_mutex_lock(&fc_stream_lock);
    t->next = tracked;
    tracked = t;
    pthread_mutex_unlock(&fc_stream_lock);
}

void fc_host_saw_locked(void)
{
    for (struct tracked **pp = &tracked; *pp;) {
        struct tracked *t = *pp;
        if (t->s->completed >= t->seq) {
            *pp = t->next;
            free(t);
        } else {
            pp = &t->next;
        }
    }
}

static bool overlap(uintptr_t a, size_t an, uintptr_t b, size_t bn)
{
    return an && bn && a < b + bn && b < a + an;
}

void fc_unmap_check(uintptr_t addr, size_t size)
{
    pthread_mutex_lock(&fc_stream_lock);
    for (struct tracked *t = tracked; t; t = t->next)
        for (int i = 0; i < 2; i++)
            if (overlap(addr, size, t->base[i], t->size[i])) {
                fprintf(stderr,
                        "fakecuda: HAZARD: cuMemUnmap(%#lx, %zu) while work %llu of stream %p "
                        "uses [%#lx, +%zu) and the host has not seen it complete: on a GPU "
                        "the unmap faults that work and kills the context\n",
                        (unsigned long)addr, size, (unsigned long long)t->seq, (void *)t->s,
                        (unsigned long)t->base[i], t->size[i]);
                abort();
            }
    pthread_mutex_unlock(&fc_stream_lock);
}
