/* fakecuda: conditional graph nodes' handles (cuGraphConditionalHandleCreate)
 * and the value device code sets through them (cudaGraphSetConditional; a
 * fake kernel calls fakecuda_graph_set_conditional). The nodes themselves
 * are graph_types.c's (made by cuGraphAddNode, graph_node.c), run by
 * graph_launch.c: IF runs body 0 when the value is non-zero (body 1, if it
 * has two, when it is zero), WHILE runs body 0 as long as the value is
 * non-zero (checked before each iteration), SWITCH runs body n when the
 * value is n < size. "Applied at the beginning of each graph execution if
 * CU_GRAPH_COND_ASSIGN_DEFAULT is set": a handle without the flag keeps
 * the value it had (its default before the first launch).
 *
 * A handle is a pointer to its record, validated against the list of
 * them. Records stay until the process ends: an executable graph keeps its
 * nodes' handles after the graph they were created for went. */
#include <stdatomic.h>
#include <stdlib.h>

#include "tests/fakecuda/graph.h"

struct fc_cond_handle {
    struct CUgraph_st *graph; /* the graph it was created for (compared, never read) */
    CUcontext ctx;
    unsigned def, flags;
    _Atomic unsigned value;
    struct fc_cond_handle *next;
};

static pthread_mutex_t hlock = PTHREAD_MUTEX_INITIALIZER;
static struct fc_cond_handle *handles;

struct fc_cond_handle *fc_cond_handle_of(CUgraphConditionalHandle h)
{
    struct fc_cond_handle *found = NULL;
    pthread_mutex_lock(&hlock);
    for (struct fc_cond_handle *x = handles; x && !found; x = x->next)
        if ((CUgraphConditionalHandle)(uintptr_t)x == h)
            found = x;
    pthread_mutex_unlock(&hlock);
    return found;
}

struct CUgraph_st *fc_cond_handle_graph(const struct fc_cond_handle *h)
{
    return h->graph;
}

CUcontext fc_cond_handle_ctx(const struct fc_cond_handle *h)
{
    return h->ctx;
}

unsigned fc_cond_value(const struct fc_cond_handle *h)
{
    return atomic_load((_Atomic unsigned *)&h->value);
}

void fc_cond_launch_reset(const struct CUgraphNode_st *n, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (n[i].type != CU_GRAPH_NODE_TYPE_CONDITIONAL)
            continue;
        struct fc_cond_handle *h = n[i].u.cond.handle;
        if (h->flags & CU_GRAPH_COND_ASSIGN_DEFAULT)
            atomic_store(&h->value, h->def);
        for (unsigned b = 0; b < n[i].u.cond.size; b++)
            for (const struct CUgraphNode_st *x = n[i].u.cond.body[b]->head; x; x = x->next)
                fc_cond_launch_reset(x, 1);
    }
}

/* "Currently must be CU_GRAPH_COND_ASSIGN_DEFAULT or 0"; the graph one the
 * program may add to (a conditional node's body too); ctx NULL: the
 * current context. */
FC_EXPORT CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle *out, CUgraph g, CUcontext ctx,
                                                  unsigned int def, unsigned int flags)
{
    FC_FAULT(cuGraphConditionalHandleCreate);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || (flags & ~(unsigned)CU_GRAPH_COND_ASSIGN_DEFAULT))
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx)
        ctx = fc_ctx_top();
    if (!ctx || !fc_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    bool open = fc_graph_open(g);
    fc_graph_unlock();
    if (!open)
        return CUDA_ERROR_INVALID_VALUE;
    struct fc_cond_handle *h = calloc(1, sizeof *h);
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    h->graph = g;
    h->ctx = ctx;
    h->def = def;
    h->flags = flags;
    atomic_init(&h->value, def);
    pthread_mutex_lock(&hlock);
    h->next = handles;
    handles = h;
    pthread_mutex_unlock(&hlock);
    *out = (CUgraphConditionalHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}

/* Test hook: cudaGraphSetConditional(handle, value) from a fake kernel.
 * -1 for a handle that is none. */
FC_EXPORT int fakecuda_graph_set_conditional(unsigned long long handle, unsigned value)
{
    struct fc_cond_handle *h = fc_cond_handle_of(handle);
    if (!h)
        return -1;
    atomic_store(&h->value, value);
    return 0;
}
