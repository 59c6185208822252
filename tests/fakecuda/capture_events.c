/* fakecuda: events in a capture (capture.c has the rules). One recorded
 * on a capturing stream stands for the nodes before it: a wait on it forks
 * another stream into the capture or joins one back; a query or sync of it
 * fails while it does; a capturing stream's wait for an event recorded
 * outside is isolation, or a wait node. */
#include "tests/fakecuda/capture_state.h"

#include <stdlib.h>
#include <string.h>

/* Captured events; with none and no member, no call takes the lock. */
static _Atomic size_t nevents;

static bool none(void)
{
    return atomic_load(&fc_cap_nmembers) == 0 && atomic_load(&nevents) == 0;
}

static struct captured_event *cevent_of(CUevent e)
{
    for (struct captured_event *c = fc_cap_events; c; c = c->next)
        if (c->e == e)
            return c;
    return NULL;
}

/* Under lock: a node for an event (CU_EVENT_RECORD_EXTERNAL, a wait node). */
static CUresult event_node(struct member *m, CUgraphNodeType type, CUevent e)
{
    fc_graph_lock();
    struct CUgraphNode_st *n = fc_node_new(type);
    fc_graph_unlock();
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    n->u.event = e;
    CUresult r = fc_cap_append(m, n);
    if (r != CUDA_SUCCESS && !n->graph) {
        fc_graph_lock();
        fc_node_free(n);
        fc_graph_unlock();
    }
    return r;
}

CUresult fc_capture_event_record(CUevent e, struct CUstream_st *s, unsigned flags, bool *done)
{
    *done = false;
    if (atomic_load(&fc_cap_nmembers) == 0)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&fc_cap_lock);
    struct member *m = fc_cap_member_of(s);
    CUresult r = CUDA_SUCCESS;
    if (m) {
        *done = true;
        if (m->cap->invalidated) {
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else if (flags & CU_EVENT_RECORD_EXTERNAL) {
            r = event_node(m, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e);
        } else {
            struct captured_event *c = cevent_of(e);
            struct CUgraphNode_st **nodes = malloc((m->ndeps + 1) * sizeof *nodes);
            if (!c && nodes && (c = calloc(1, sizeof *c)) != NULL) {
                c->e = e;
                c->next = fc_cap_events;
                fc_cap_events = c;
                atomic_fetch_add(&nevents, 1);
            }
            if (!c || !nodes) {
                free(nodes);
                r = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                if (m->ndeps)
                    memcpy(nodes, m->deps, m->ndeps * sizeof *nodes);
                free(c->nodes);
                c->nodes = nodes;
                c->n = m->ndeps;
                c->cap = m->cap;
            }
        }
    } else if (fc_cap_legacy_conflict(s, true)) {
        *done = true;
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    pthread_mutex_unlock(&fc_cap_lock);
    return r;
}

CUresult fc_capture_event_wait(struct CUstream_st *s, CUevent e, unsigned flags, bool *done)
{
    *done = false;
    if (none())
        return CUDA_SUCCESS;
    pthread_mutex_lock(&fc_cap_lock);
    struct member *m = fc_cap_member_of(s);
    struct captured_event *c = cevent_of(e);
    CUresult r = CUDA_SUCCESS;
    struct fc_dep d;
    if (m && m->cap->invalidated) {
        *done = true;
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else if (!m && fc_cap_legacy_conflict(s, true)) {
        *done = true;
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    } else if (c) {
        *done = true;
        if (!c->cap) { /* its capture is over: it stands for no work there is */
            if (m)
                m->cap->invalidated = true;
            r = m ? CUDA_ERROR_STREAM_CAPTURE_ISOLATION : CUDA_ERROR_CAPTURED_EVENT;
        } else if (m && m->cap != c->cap) {
            m->cap->invalidated = c->cap->invalidated = true;
            r = CUDA_ERROR_STREAM_CAPTURE_MERGE;
        } else if (m) { /* a join */
            r = fc_cap_add_deps(m, c->nodes, c->n) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        } else if (fc_stream_is_legacy(s)) { /* the legacy stream is never captured */
            c->cap->invalidated = true;
            r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        } else { /* a fork: s joins the capture */
            struct member *f = fc_cap_member_new(s, c->cap);
            r = f && fc_cap_set_deps(f, c->nodes, c->n) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        }
    } else if (m && fc_event_dep(e, &d)) {
        *done = true;
        if (flags & CU_EVENT_WAIT_EXTERNAL) {
            r = event_node(m, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e);
        } else {
            m->cap->invalidated = true;
            r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
        }
    } else if (m) {
        *done = true; /* never recorded: it stands for no work, nothing to wait for */
    }
    pthread_mutex_unlock(&fc_cap_lock);
    return r;
}

CUresult fc_capture_event_use(CUevent e)
{
    if (none())
        return CUDA_SUCCESS;
    pthread_mutex_lock(&fc_cap_lock);
    struct captured_event *c = cevent_of(e);
    CUresult r = CUDA_SUCCESS;
    if (c) {
        if (c->cap)
            c->cap->invalidated = true;
        r = CUDA_ERROR_CAPTURED_EVENT;
    } else if (fc_cap_prohibited()) {
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    pthread_mutex_unlock(&fc_cap_lock);
    return r;
}

void fc_capture_event_forget(CUevent e)
{
    if (atomic_load(&nevents) == 0)
        return;
    pthread_mutex_lock(&fc_cap_lock);
    for (struct captured_event **pp = &fc_cap_events; *pp; pp = &(*pp)->next)
        if ((*pp)->e == e) {
            struct captured_event *c = *pp;
            *pp = c->next;
            free(c->nodes);
            free(c);
            atomic_fetch_sub(&nevents, 1);
            break;
        }
    pthread_mutex_unlock(&fc_cap_lock);
}
