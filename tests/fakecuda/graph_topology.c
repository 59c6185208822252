/* fakecuda: what a graph holds and how its nodes are linked: its nodes
 * and their types, its edges (each node's dependencies and dependents,
 * edges added and removed), a node destroyed, a graph cloned and a node
 * found in a clone. */
#include <string.h>

#include "tests/fakecuda/graph.h"

/* ---- what a graph holds ---------------------------------------------------- */

static bool has_dep(const struct CUgraphNode_st *n, const struct CUgraphNode_st *d)
{
    for (size_t i = 0; i < n->ndeps; i++)
        if (n->deps[i] == d)
            return true;
    return false;
}

FC_EXPORT CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    FC_FAULT(cuGraphNodeGetType);
    if (!type)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    bool known = fc_node_known(hNode);
    if (known)
        *type = hNode->type;
    fc_graph_unlock();
    return known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The end of a list the driver fills for a caller's array of num
 * entries, k of them wanted: the entries past k are NULL (b's too, when
 * two arrays are filled side by side), and the count is what fitted. */
static size_t list_end(CUgraphNode *a, CUgraphNode *b, size_t k, size_t num)
{
    for (size_t i = k; i < num; i++) {
        a[i] = NULL;
        if (b)
            b[i] = NULL;
    }
    return k < num ? k : num;
}

/* Fills nodes (all of g, or its roots) up to *num, the rest of the array
 * NULL, *num the count obtained; nodes NULL: *num is the count. */
static CUresult list_nodes(CUgraph g, CUgraphNode *nodes, size_t *num, bool roots)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!num)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    if (!fc_graph_known(g) && !fc_graph_embedded(g)) {
        fc_graph_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    size_t k = 0;
    for (struct CUgraphNode_st *x = g->head; x; x = x->next) {
        if (roots && x->ndeps)
            continue;
        if (nodes && k < *num)
            nodes[k] = x;
        k++;
    }
    *num = nodes ? list_end(nodes, NULL, k, *num) : k;
    fc_graph_unlock();
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *num)
{
    FC_FAULT(cuGraphGetNodes);
    return list_nodes(g, nodes, num, false);
}

FC_EXPORT CUresult cuGraphGetRootNodes(CUgraph g, CUgraphNode *nodes, size_t *num)
{
    FC_FAULT(cuGraphGetRootNodes);
    return list_nodes(g, nodes, num, true);
}

static CUresult get_edges(CUgraph g, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edata,
                          size_t *num)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!num || (!from) != (!to) || (edata && !from))
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    if (!fc_graph_known(g) && !fc_graph_embedded(g)) {
        fc_graph_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    size_t k = 0;
    for (struct CUgraphNode_st *x = g->head; x; x = x->next)
        for (size_t j = 0; j < x->ndeps; j++, k++)
            if (from && k < *num) {
                from[k] = x->deps[j];
                to[k] = x;
                if (edata)
                    memset(&edata[k], 0, sizeof edata[k]);
            }
    *num = from ? list_end(from, to, k, *num) : k;
    fc_graph_unlock();
    return CUDA_SUCCESS;
}

#undef cuGraphGetEdges
#undef cuGraphNodeGetDependencies
#undef cuGraphNodeGetDependentNodes
#undef cuGraphAddDependencies
#undef cuGraphRemoveDependencies

FC_EXPORT CUresult cuGraphGetEdges(CUgraph g, CUgraphNode *from, CUgraphNode *to, size_t *num)
{
    FC_FAULT(cuGraphGetEdges);
    return get_edges(g, from, to, NULL, num);
}

FC_EXPORT CUresult cuGraphGetEdges_v2(CUgraph g, CUgraphNode *from, CUgraphNode *to,
                                      CUgraphEdgeData *edata, size_t *num)
{
    FC_FAULT(cuGraphGetEdges);
    return get_edges(g, from, to, edata, num);
}

/* The dependencies of n, or (out) the nodes that depend on it. */
static CUresult neighbours(CUgraphNode n, CUgraphNode *nodes, CUgraphEdgeData *edata, size_t *num,
                           bool out)
{
    if (!num || (edata && !nodes))
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    if (!fc_node_known(n)) {
        fc_graph_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    size_t k = 0;
    if (out) {
        for (struct CUgraphNode_st *x = n->graph->head; x; x = x->next)
            if (has_dep(x, n)) {
                if (nodes && k < *num)
                    nodes[k] = x;
                k++;
            }
    } else {
        for (size_t j = 0; j < n->ndeps; j++, k++)
            if (nodes && k < *num)
                nodes[k] = n->deps[j];
    }
    for (size_t i = 0; nodes && edata && i < *num; i++)
        memset(&edata[i], 0, sizeof edata[i]);
    *num = nodes ? list_end(nodes, NULL, k, *num) : k;
    fc_graph_unlock();
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuGraphNodeGetDependencies(CUgraphNode n, CUgraphNode *d, size_t *num)
{
    FC_FAULT(cuGraphNodeGetDependencies);
    return neighbours(n, d, NULL, num, false);
}

FC_EXPORT CUresult cuGraphNodeGetDependencies_v2(CUgraphNode n, CUgraphNode *d, CUgraphEdgeData *e, size_t *num)
{
    FC_FAULT(cuGraphNodeGetDependencies);
    return neighbours(n, d, e, num, false);
}

FC_EXPORT CUresult cuGraphNodeGetDependentNodes(CUgraphNode n, CUgraphNode *d, size_t *num)
{
    FC_FAULT(cuGraphNodeGetDependentNodes);
    return neighbours(n, d, NULL, num, true);
}

FC_EXPORT CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode n, CUgraphNode *d, CUgraphEdgeData *e, size_t *num)
{
    FC_FAULT(cuGraphNodeGetDependentNodes);
    return neighbours(n, d, e, num, true);
}

/* Edges from[i] -> to[i]. A cycle is accepted here and refused when the
 * graph is instantiated; an edge that exists (or, to remove, does not) is
 * an error, and then no edge changes. */
static CUresult edit_edges(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n,
                           bool add)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (n && (!from || !to))
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    bool ok = fc_graph_open(g);
    for (size_t i = 0; i < n && ok; i++) {
        ok = fc_node_known(from[i]) && fc_node_known(to[i]) && from[i]->graph == g &&
             to[i]->graph == g && from[i] != to[i] && has_dep(to[i], from[i]) != add;
        for (size_t j = 0; j < i && ok; j++)
            ok = !(from[j] == from[i] && to[j] == to[i]);
    }
    for (size_t i = 0; i < n && ok; i++) {
        if (add) {
            if (!fc_node_dep_push(to[i], from[i])) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            continue;
        }
        struct CUgraphNode_st *t = to[i];
        for (size_t j = 0; j < t->ndeps; j++)
            if (t->deps[j] == from[i]) {
                memmove(&t->deps[j], &t->deps[j + 1], (t->ndeps - j - 1) * sizeof *t->deps);
                t->ndeps--;
                break;
            }
    }
    fc_graph_unlock();
    return ok ? r : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuGraphAddDependencies(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n)
{
    FC_FAULT(cuGraphAddDependencies);
    return edit_edges(g, from, to, n, true);
}

FC_EXPORT CUresult cuGraphAddDependencies_v2(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                                             const CUgraphEdgeData *e, size_t n)
{
    FC_FAULT(cuGraphAddDependencies);
    (void)e;
    return edit_edges(g, from, to, n, true);
}

FC_EXPORT CUresult cuGraphRemoveDependencies(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n)
{
    FC_FAULT(cuGraphRemoveDependencies);
    return edit_edges(g, from, to, n, false);
}

FC_EXPORT CUresult cuGraphRemoveDependencies_v2(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                                                const CUgraphEdgeData *e, size_t n)
{
    FC_FAULT(cuGraphRemoveDependencies);
    (void)e;
    return edit_edges(g, from, to, n, false);
}

FC_EXPORT CUresult cuGraphDestroyNode(CUgraphNode hNode)
{
    FC_FAULT(cuGraphDestroyNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    bool known = fc_node_known(hNode);
    if (known && (hNode->graph->captures || fc_node_body_captured(hNode))) {
        fc_graph_unlock();
        return CUDA_ERROR_ILLEGAL_STATE; /* not while a capture adds to it */
    }
    if (known) {
        struct CUgraph_st *g = hNode->graph;
        for (struct CUgraphNode_st **pp = &g->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next)
            if (*pp == hNode) {
                *pp = hNode->next;
                if (g->tail == hNode)
                    g->tail = prev;
                break;
            }
        g->nnodes--;
        for (struct CUgraphNode_st *x = g->head; x; x = x->next)
            for (size_t j = 0; j < x->ndeps; j++)
                if (x->deps[j] == hNode) {
                    memmove(&x->deps[j], &x->deps[j + 1], (x->ndeps - j - 1) * sizeof *x->deps);
                    x->ndeps--;
                    break;
                }
        fc_node_free(hNode);
    }
    fc_graph_unlock();
    return known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuGraphClone(CUgraph *out, CUgraph g)
{
    FC_FAULT(cuGraphClone);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraph_st *c = NULL;
    if (!fc_graph_known(g) || fc_graph_has_mem_nodes(g) || fc_graph_has_conditionals(g))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!(c = fc_graph_clone(g, false)))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    fc_graph_unlock();
    if (r == CUDA_SUCCESS)
        *out = c;
    return r;
}

FC_EXPORT CUresult cuGraphNodeFindInClone(CUgraphNode *out, CUgraphNode orig, CUgraph clone)
{
    FC_FAULT(cuGraphNodeFindInClone);
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *found = NULL;
    if (fc_graph_known(clone))
        for (struct CUgraphNode_st *x = clone->head; x && !found; x = x->next)
            if (x->orig == orig)
                found = x;
    fc_graph_unlock();
    if (found)
        *out = found;
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
