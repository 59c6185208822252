/* fakecuda: a capture begun (cuStreamBeginCapture, into a graph of its
 * own or of the program's) and ended (cuStreamEndCapture: every fork
 * joined back, or the graph is not handed over). capture.c has the
 * rules. */
#include "tests/fakecuda/capture_state.h"

#include <stdlib.h>

static unsigned long long next_id = 1;

static CUresult begin(CUstream h, bool ptsz, struct CUgraph_st *g, const CUgraphNode *deps,
                      size_t ndeps, CUstreamCaptureMode mode)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED || (ndeps && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    if (fc_stream_is_legacy(s)) /* "Capture may not be initiated if stream is CU_STREAM_LEGACY" */
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    pthread_mutex_lock(&fc_cap_lock);
    fc_graph_lock();
    bool ok = !g || fc_graph_open(g); /* a conditional node's body too */
    for (size_t i = 0; ok && i < ndeps; i++)
        ok = fc_node_known(deps[i]) && deps[i]->graph == g;
    fc_graph_unlock();
    if (!ok) {
        pthread_mutex_unlock(&fc_cap_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (fc_cap_member_of(s)) {
        pthread_mutex_unlock(&fc_cap_lock);
        return CUDA_ERROR_ILLEGAL_STATE;
    }
    struct capture *c = calloc(1, sizeof *c);
    if (c) {
        fc_graph_lock();
        c->graph = g ? g : fc_graph_new(false);
        if (c->graph)
            c->graph->captures++; /* the program may not destroy it meanwhile */
        fc_graph_unlock();
    }
    struct member *m = c && c->graph ? fc_cap_member_new(s, c) : NULL;
    if (!m || !fc_cap_set_deps(m, deps, ndeps)) {
        if (m) { /* undo member_new */
            fc_cap_members = m->next;
            atomic_fetch_sub(&fc_cap_nmembers, 1);
            free(m->deps);
            free(m->edata);
            free(m);
        }
        if (c && c->graph) {
            fc_graph_lock();
            c->graph->captures--;
            if (!g)
                fc_graph_free(c->graph);
            fc_graph_unlock();
        }
        free(c);
        pthread_mutex_unlock(&fc_cap_lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c->id = next_id++;
    c->mode = mode;
    c->thread = pthread_self();
    c->origin = s;
    c->user_graph = g != NULL;
    c->next = fc_captures;
    fc_captures = c;
    pthread_mutex_unlock(&fc_cap_lock);
    return CUDA_SUCCESS;
}

/* Under lock: whether every stream forked into c was joined back, that is
 * whether all their dependencies precede the origin's (are the origin's
 * dependencies or their ancestors). */
static bool joined(struct capture *c)
{
    struct member *o = fc_cap_member_of(c->origin);
    fc_graph_lock();
    struct CUgraph_st *g = c->graph;
    fc_graph_number(g);
    bool *seen = calloc(g->nnodes + 1, sizeof *seen);
    struct CUgraphNode_st **todo = malloc((g->nnodes + 1) * sizeof *todo);
    bool ok = true;
    if (seen && todo) {
        size_t n = 0;
        for (size_t i = 0; i < o->ndeps; i++)
            if (!seen[o->deps[i]->idx]) {
                seen[o->deps[i]->idx] = true;
                todo[n++] = o->deps[i];
            }
        while (n > 0) {
            struct CUgraphNode_st *x = todo[--n];
            for (size_t j = 0; j < x->ndeps; j++)
                if (!seen[x->deps[j]->idx]) {
                    seen[x->deps[j]->idx] = true;
                    todo[n++] = x->deps[j];
                }
        }
        for (struct member *m = fc_cap_members; m && ok; m = m->next)
            if (m->cap == c && m != o)
                for (size_t i = 0; i < m->ndeps && ok; i++)
                    ok = seen[m->deps[i]->idx];
    } /* else: cannot tell, and fakecuda's want of memory must not fail a capture */
    fc_graph_unlock();
    free(seen);
    free(todo);
    return ok;
}

/* Under lock: every stream of c out of capture, its events forgotten. */
static void finish(struct capture *c)
{
    for (struct member **pp = &fc_cap_members; *pp;) {
        struct member *m = *pp;
        if (m->cap == c) {
            *pp = m->next;
            free(m->deps);
            free(m->edata);
            free(m);
            atomic_fetch_sub(&fc_cap_nmembers, 1);
        } else {
            pp = &m->next;
        }
    }
    for (struct captured_event *e = fc_cap_events; e; e = e->next)
        if (e->cap == c) {
            e->cap = NULL;
            free(e->nodes);
            e->nodes = NULL;
            e->n = 0;
        }
    for (struct capture **pp = &fc_captures; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
}

static CUresult end(CUstream h, CUgraph *out, bool ptsz)
{
    struct CUstream_st *s;
    CUresult r = fc_stream_resolve(h, ptsz, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&fc_cap_lock);
    struct member *m = fc_cap_member_of(s);
    struct capture *c = m ? m->cap : NULL;
    if (!c)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (c->origin != s)
        r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    else if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(c->thread, pthread_self()))
        r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    if (r != CUDA_SUCCESS) { /* the capture goes on */
        pthread_mutex_unlock(&fc_cap_lock);
        return r;
    }
    r = c->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
        : !joined(c)   ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED
                       : CUDA_SUCCESS;
    finish(c);
    fc_graph_lock();
    c->graph->captures--;
    if (r != CUDA_SUCCESS && !c->user_graph)
        fc_graph_free(c->graph);
    fc_graph_unlock();
    pthread_mutex_unlock(&fc_cap_lock);
    *out = r == CUDA_SUCCESS ? c->graph : NULL;
    free(c);
    return r;
}

/* cuda.h maps these names to their newest ABI; the old ABIs are exported
 * too, for programs and runtimes built against older headers. */
#undef cuStreamBeginCapture
#undef cuStreamEndCapture
#undef cuStreamBeginCaptureToGraph

#define GLOBAL CU_STREAM_CAPTURE_MODE_GLOBAL
FC_EXPORT CUresult cuStreamBeginCapture(CUstream h) { FC_FAULT(cuStreamBeginCapture); return begin(h, false, NULL, NULL, 0, GLOBAL); }
FC_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream h) { FC_FAULT(cuStreamBeginCapture); return begin(h, true, NULL, NULL, 0, GLOBAL); }
FC_EXPORT CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode m) { FC_FAULT(cuStreamBeginCapture); return begin(h, false, NULL, NULL, 0, m); }
FC_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode m) { FC_FAULT(cuStreamBeginCapture); return begin(h, true, NULL, NULL, 0, m); }

/* The edge data of the dependencies is ignored: fakecuda's edges are plain. */
FC_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream h, CUgraph g, const CUgraphNode *d, const CUgraphEdgeData *e, size_t n, CUstreamCaptureMode m)
{
    FC_FAULT(cuStreamBeginCaptureToGraph);
    (void)e;
    return g ? begin(h, false, g, d, n, m) : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream h, CUgraph g, const CUgraphNode *d, const CUgraphEdgeData *e, size_t n, CUstreamCaptureMode m)
{
    FC_FAULT(cuStreamBeginCaptureToGraph);
    (void)e;
    return g ? begin(h, true, g, d, n, m) : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuStreamEndCapture(CUstream h, CUgraph *g) { FC_FAULT(cuStreamEndCapture); return end(h, g, false); }
FC_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph *g) { FC_FAULT(cuStreamEndCapture); return end(h, g, true); }
