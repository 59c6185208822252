/* fakecuda: executable graphs: the live list, instantiation (it copies
 * the graph and fixes an order that respects every edge; a cycle is
 * refused) and destruction. A launch is graph_launch.c's; a change to an
 * executable graph (its nodes' parameters, cuGraphExecUpdate)
 * graph_exec_update.c's. */
#include <stdlib.h>

#include "tests/fakecuda/graph.h"

static struct CUgraphExec_st *execs; /* under the graph lock */

bool fc_exec_known(struct CUgraphExec_st *x)
{
    for (struct CUgraphExec_st *e = execs; e; e = e->next)
        if (e == x)
            return true;
    return false;
}

FC_EXPORT size_t fakecuda_live_graph_execs(void)
{
    size_t n = 0;
    fc_graph_lock();
    for (struct CUgraphExec_st *x = execs; x; x = x->next)
        n++;
    fc_graph_unlock();
    return n;
}

/* ---- instantiation -------------------------------------------------------- */

#define INSTANTIATE_FLAGS                                                                     \
    (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |   \
     CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

/* Checks every child graph for a cycle too (a child's cycle is the parent's). */
static CUresult acyclic(struct CUgraph_st *g)
{
    size_t n;
    CUresult err;
    struct CUgraphNode_st **order = fc_graph_order(g, &n, &err);
    free(order);
    for (struct CUgraphNode_st *x = g->head; x && err == CUDA_SUCCESS; x = x->next) {
        if (x->type == CU_GRAPH_NODE_TYPE_GRAPH)
            err = acyclic(x->u.child);
        for (unsigned b = 0; x->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && b < x->u.cond.size; b++)
            if (err == CUDA_SUCCESS)
                err = acyclic(x->u.cond.body[b]);
    }
    return err;
}
void fc_exec_graph_gone_locked(const struct CUgraph_st *g)
{
    for (struct CUgraphExec_st *x = execs; x; x = x->next)
        if (x->mem_src == g)
            x->mem_src = NULL;
}

/* "If hGraph contains any allocation or free nodes, there can be at most
 * one executable graph in existence for that graph at a time. An attempt
 * to instantiate a second executable graph before destroying the first
 * with cuGraphExecDestroy will result in an error" (cuGraphInstantiate);
 * of a graph with conditional nodes, "only one instantiation of the graph
 * may exist at any point in time" (CU_GRAPH_NODE_TYPE_CONDITIONAL).
 * The reference names no code: INVALID_VALUE here, the tests assert only
 * the failure. */
static CUresult one_exec_at_a_time(const struct CUgraph_st *g, bool *mem)
{
    *mem = fc_graph_has_mem_nodes(g) || fc_graph_has_conditionals(g);
    if (*mem)
        for (struct CUgraphExec_st *x = execs; x; x = x->next)
            if (x->mem_src == g)
                return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
    bool mem = false;
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || (flags & ~(unsigned long long)INSTANTIATE_FLAGS))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fc_graph_lock();
    if (!fc_graph_known(g))
        r = CUDA_ERROR_INVALID_VALUE;
    else if ((r = one_exec_at_a_time(g, &mem)) != CUDA_SUCCESS)
        ;
    else if ((r = acyclic(g)) == CUDA_SUCCESS && !(x->g = fc_graph_clone(g, true)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && !(x->order = fc_graph_order(x->g, &x->n, &r)) && x->g->nnodes)
        r = r != CUDA_SUCCESS ? r : CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        x->magic = FC_MAGIC_EXEC;
        x->flags = flags;
        x->mem_src = mem ? g : NULL;
        x->next = execs;
        execs = x;
        *out = x;
    } else {
        if (x->g)
            fc_graph_free(x->g);
        free(x->order);
        free(x);
    }
    fc_graph_unlock();
    return r;
}

#undef cuGraphInstantiate
FC_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
    FC_FAULT(cuGraphInstantiate);
    return instantiate(out, g, flags);
}

/* The CUDA 10 and 11 ABIs: an error node and a log instead of flags. */
static CUresult instantiate_logged(CUgraphExec *out, CUgraph g, CUgraphNode *err_node, char *log,
                                   size_t log_size)
{
    CUresult r = instantiate(out, g, 0);
    if (err_node)
        *err_node = NULL;
    if (log && log_size)
        log[0] = '\0';
    return r;
}

FC_EXPORT CUresult cuGraphInstantiate(CUgraphExec *out, CUgraph g, CUgraphNode *e, char *log, size_t n)
{
    FC_FAULT(cuGraphInstantiate);
    return instantiate_logged(out, g, e, log, n);
}

FC_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *out, CUgraph g, CUgraphNode *e, char *log, size_t n)
{
    FC_FAULT(cuGraphInstantiate);
    return instantiate_logged(out, g, e, log, n);
}

static CUresult exec_destroy(CUgraphExec x);

static CUresult instantiate_with_params(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p,
                                        bool ptsz)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) {
        struct CUstream_st *s; /* the upload stream must be one */
        CUresult r = fc_stream_resolve(p->hUploadStream, ptsz, &s);
        if (r != CUDA_SUCCESS)
            return r;
    }
    CUresult r = instantiate(out, g, p->flags);
    /* "Automatically upload the graph after instantiation": its memory is
     * reserved now, as cuGraphUpload reserves it; an upload that fails
     * leaves no executable graph behind. */
    if (r == CUDA_SUCCESS && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) &&
        (r = fc_exec_upload(*out, p->hUploadStream, ptsz)) != CUDA_SUCCESS)
        exec_destroy(*out);
    p->hErrNode_out = NULL;
    p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}

FC_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    FC_FAULT(cuGraphInstantiateWithParams);
    return instantiate_with_params(out, g, p, false);
}

FC_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    FC_FAULT(cuGraphInstantiateWithParams);
    return instantiate_with_params(out, g, p, true);
}

FC_EXPORT CUresult cuGraphExecGetFlags(CUgraphExec x, cuuint64_t *flags)
{
    FC_FAULT(cuGraphExecGetFlags);
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    bool known = fc_exec_known(x);
    if (known)
        *flags = x->flags;
    fc_graph_unlock();
    return known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult exec_destroy(CUgraphExec x)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    bool known = fc_exec_known(x);
    if (known) {
        for (struct CUgraphExec_st **pp = &execs; *pp; pp = &(*pp)->next)
            if (*pp == x) {
                *pp = x->next;
                break;
            }
        fc_graph_free(x->g);
        free(x->order);
        x->magic = 0;
        free(x);
    }
    fc_graph_unlock();
    return known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuGraphExecDestroy(CUgraphExec x)
{
    FC_FAULT(cuGraphExecDestroy);
    return exec_destroy(x);
}
