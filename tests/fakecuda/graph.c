/* fakecuda: graphs (CUgraph) and their nodes, built by hand or by stream
 * capture (capture.c): the graph object (one lock, the live list, nodes
 * made, added, copied and freed, graphs cloned and put in order),
 * cuGraphCreate and cuGraphDestroy. Each node type's own calls are
 * graph_types.c's (memory nodes graph_alloc.c's, batch memory operation
 * nodes graph_memop.c's), a graph's nodes and edges graph_topology.c's;
 * instantiation is graph_exec.c's, launch graph_launch.c's. A node
 * owns a copy of what it was given (a kernel's arguments, as the driver
 * copies them "during this call"), and hands back node-owned arrays, so a
 * program (or spillway) can inspect a captured kernel's pointer arguments
 * with cuGraphKernelNodeGetParams. Edges are plain (no edge data). */
#include <stdlib.h>

#include "tests/fakecuda/graph.h"

/* One lock for every graph, node and executable graph: simple, and tests
 * are small. Handles are validated against the live lists, so a stale one
 * is an error, not a crash. */
static pthread_mutex_t glock = PTHREAD_MUTEX_INITIALIZER;
static struct CUgraph_st *graphs; /* the program's graphs (not internal copies) */

void fc_graph_lock(void)
{
    pthread_mutex_lock(&glock);
}

void fc_graph_unlock(void)
{
    pthread_mutex_unlock(&glock);
}

bool fc_graph_known(struct CUgraph_st *g)
{
    for (struct CUgraph_st *x = graphs; x; x = x->next)
        if (x == g)
            return true;
    return false;
}

/* Whether n is a node of g or of a graph a child graph node of g embeds,
 * or of a conditional node's body (recursively): the driver hands those
 * graphs out (cuGraphChildGraphNodeGetGraph, phGraph_out), and their nodes
 * are nodes like any. */
static bool node_in(const struct CUgraph_st *g, const struct CUgraphNode_st *n)
{
    for (const struct CUgraphNode_st *x = g->head; x; x = x->next) {
        if (x == n || (x->type == CU_GRAPH_NODE_TYPE_GRAPH && node_in(x->u.child, n)))
            return true;
        for (unsigned b = 0; x->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && b < x->u.cond.size; b++)
            if (node_in(x->u.cond.body[b], n))
                return true;
    }
    return false;
}

/* Whether e is the body of a conditional node of g (or of one in a body
 * of g's, recursively). */
static bool body_in(const struct CUgraph_st *g, const struct CUgraph_st *e)
{
    for (const struct CUgraphNode_st *x = g->head; x; x = x->next)
        for (unsigned b = 0; x->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && b < x->u.cond.size; b++)
            if (x->u.cond.body[b] == e || body_in(x->u.cond.body[b], e))
                return true;
    return false;
}

bool fc_graph_open(struct CUgraph_st *g)
{
    if (fc_graph_known(g))
        return true;
    for (struct CUgraph_st *x = graphs; x; x = x->next)
        if (body_in(x, g))
            return true;
    return false;
}

/* "Allowed node types are kernel nodes, empty nodes, child graphs,
 * memsets, memcopies, and conditionals. This applies recursively to child
 * graphs and conditional bodies." */
static bool allowed_in_body(const struct CUgraphNode_st *n)
{
    switch (n->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_MEMSET:
    case CU_GRAPH_NODE_TYPE_MEMCPY:
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
        return true;
    case CU_GRAPH_NODE_TYPE_GRAPH:
        for (const struct CUgraphNode_st *x = n->u.child->head; x; x = x->next)
            if (!allowed_in_body(x))
                return false;
        return true;
    default:
        return false;
    }
}

/* Whether a capture adds to a body of conditional node n (or to a body
 * in one of them): the body may not go meanwhile. */
bool fc_node_body_captured(const struct CUgraphNode_st *n)
{
    for (unsigned b = 0; n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && b < n->u.cond.size; b++) {
        if (n->u.cond.body[b]->captures)
            return true;
        for (const struct CUgraphNode_st *x = n->u.cond.body[b]->head; x; x = x->next)
            if (fc_node_body_captured(x))
                return true;
    }
    return false;
}

static bool any_body_captured(const struct CUgraph_st *g)
{
    for (const struct CUgraphNode_st *x = g->head; x; x = x->next)
        if (fc_node_body_captured(x))
            return true;
    return false;
}

/* Whether g has conditional nodes: such a graph "cannot be used in a child
 * node", "cannot be cloned", and has one executable graph at a time. */
bool fc_graph_has_conditionals(const struct CUgraph_st *g)
{
    for (const struct CUgraphNode_st *x = g->head; x; x = x->next)
        if (x->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
            return true;
    return false;
}

bool fc_node_known(struct CUgraphNode_st *n)
{
    for (struct CUgraph_st *g = graphs; g; g = g->next)
        if (node_in(g, n))
            return true;
    return false;
}

static bool embeds(const struct CUgraph_st *g, const struct CUgraph_st *e)
{
    for (const struct CUgraphNode_st *x = g->head; x; x = x->next) {
        if (x->type == CU_GRAPH_NODE_TYPE_GRAPH && (x->u.child == e || embeds(x->u.child, e)))
            return true;
        for (unsigned b = 0; x->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && b < x->u.cond.size; b++)
            if (x->u.cond.body[b] == e || embeds(x->u.cond.body[b], e))
                return true;
    }
    return false;
}

bool fc_graph_embedded(struct CUgraph_st *g)
{
    for (struct CUgraph_st *x = graphs; x; x = x->next)
        if (embeds(x, g))
            return true;
    return false;
}

FC_EXPORT size_t fakecuda_live_graphs(void)
{
    size_t n = 0;
    fc_graph_lock();
    for (struct CUgraph_st *g = graphs; g; g = g->next)
        n++;
    fc_graph_unlock();
    return n;
}

struct CUgraph_st *fc_graph_new(bool internal)
{
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->magic = FC_MAGIC_GRAPH;
    g->internal = internal;
    if (!internal) {
        g->next = graphs;
        graphs = g;
    }
    return g;
}

struct CUgraphNode_st *fc_node_new(CUgraphNodeType type)
{
    struct CUgraphNode_st *n = calloc(1, sizeof *n);
    if (n) {
        n->magic = FC_MAGIC_NODE;
        n->type = type;
    }
    return n;
}

void fc_node_payload_free(struct CUgraphNode_st *n)
{
    switch (n->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        fc_kernel_call_free(&n->u.kernel);
        break;
    case CU_GRAPH_NODE_TYPE_GRAPH:
        if (n->u.child)
            fc_graph_free(n->u.child);
        n->u.child = NULL;
        break;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        if (n->u.alloc.mem)
            fc_gmem_unref(n->u.alloc.mem);
        n->u.alloc.mem = NULL;
        break;
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
        for (unsigned b = 0; n->u.cond.body && b < n->u.cond.size; b++)
            if (n->u.cond.body[b])
                fc_graph_free(n->u.cond.body[b]);
        free(n->u.cond.body);
        n->u.cond.body = NULL;
        break;
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        fc_memop_node_free(&n->u.memop);
        break;
    default:
        break;
    }
}

void fc_node_free(struct CUgraphNode_st *n)
{
    fc_node_payload_free(n);
    free(n->deps);
    n->magic = 0;
    free(n);
}

CUresult fc_node_payload_copy(struct CUgraphNode_st *dst, const struct CUgraphNode_st *src)
{
    dst->u = src->u;
    switch (src->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        return fc_kernel_call_copy(&dst->u.kernel, &src->u.kernel);
    case CU_GRAPH_NODE_TYPE_GRAPH:
        dst->u.child = fc_graph_clone(src->u.child, true);
        return dst->u.child ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        fc_gmem_ref(src->u.alloc.mem);
        return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: {
        /* Out of memory: nothing of its own left (callers free the node
         * as an empty one). */
        struct CUgraph_st **body = calloc(src->u.cond.size, sizeof *body);
        for (unsigned b = 0; body && b < src->u.cond.size; b++) {
            if (!(body[b] = fc_graph_clone(src->u.cond.body[b], true))) {
                while (b--)
                    fc_graph_free(body[b]);
                free(body);
                body = NULL;
                break;
            }
            body[b]->owner = dst;
        }
        dst->u.cond.body = body;
        if (!body)
            dst->u.cond.size = 0;
        return body ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        return fc_memop_node_copy(&dst->u.memop, &src->u.memop);
    default:
        return CUDA_SUCCESS;
    }
}

bool fc_node_dep_push(struct CUgraphNode_st *n, struct CUgraphNode_st *d)
{
    if (n->ndeps == n->depcap) {
        size_t cap = n->depcap ? 2 * n->depcap : 4;
        struct CUgraphNode_st **x = realloc(n->deps, cap * sizeof *x);
        if (!x)
            return false;
        n->deps = x;
        n->depcap = cap;
    }
    n->deps[n->ndeps++] = d;
    return true;
}

CUresult fc_graph_add(struct CUgraph_st *g, struct CUgraphNode_st *n,
                      struct CUgraphNode_st *const *deps, size_t ndeps)
{
    if (g->owner && !allowed_in_body(n))
        return CUDA_ERROR_INVALID_VALUE; /* by a call or a capture into the body */
    for (size_t i = 0; i < ndeps; i++) {
        if (!deps[i] || deps[i]->magic != FC_MAGIC_NODE || deps[i]->graph != g)
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; j++) /* "may not have any duplicate entries" */
            if (deps[j] == deps[i])
                return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < ndeps; i++)
        if (!fc_node_dep_push(n, deps[i])) {
            n->ndeps = 0;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    n->graph = g;
    if (g->tail)
        g->tail->next = n;
    else
        g->head = n;
    g->tail = n;
    g->nnodes++;
    return CUDA_SUCCESS;
}

void fc_graph_free(struct CUgraph_st *g)
{
    for (struct CUgraphNode_st *n = g->head, *next; n; n = next) {
        next = n->next;
        fc_node_free(n);
    }
    for (struct CUgraph_st **pp = &graphs; *pp; pp = &(*pp)->next)
        if (*pp == g) {
            *pp = g->next;
            break;
        }
    g->magic = 0;
    free(g);
}

void fc_graph_number(struct CUgraph_st *g)
{
    size_t i = 0;
    for (struct CUgraphNode_st *x = g->head; x; x = x->next)
        x->idx = i++;
}

struct CUgraph_st *fc_graph_clone(struct CUgraph_st *g, bool internal)
{
    struct CUgraph_st *c = fc_graph_new(internal);
    struct CUgraphNode_st **copies = calloc(g->nnodes + 1, sizeof *copies);
    bool ok = c && copies;
    size_t i = 0;
    fc_graph_number(g);
    for (struct CUgraphNode_st *n = g->head; n && ok; n = n->next, i++) {
        struct CUgraphNode_st *x = fc_node_new(n->type);
        ok = x && fc_node_payload_copy(x, n) == CUDA_SUCCESS;
        if (!ok) {
            if (x) {
                x->type = CU_GRAPH_NODE_TYPE_EMPTY; /* nothing of its own to free */
                fc_node_free(x);
            }
            break;
        }
        x->orig = n;
        x->disabled = n->disabled;
        copies[i] = x;
        fc_graph_add(c, x, NULL, 0);
    }
    i = 0;
    for (struct CUgraphNode_st *n = g->head; n && ok; n = n->next, i++)
        for (size_t j = 0; j < n->ndeps && ok; j++)
            ok = fc_node_dep_push(copies[i], copies[n->deps[j]->idx]);
    free(copies);
    if (!ok && c) {
        fc_graph_free(c);
        c = NULL;
    }
    return c;
}

/* Kahn's algorithm over the edges reversed (a node lists its dependencies,
 * the order needs its dependents), nodes taken in the order they were added
 * whenever several are ready: linear in nodes and edges, as graphs captured
 * from real programs have thousands of nodes. */
struct CUgraphNode_st **fc_graph_order(struct CUgraph_st *g, size_t *n, CUresult *err)
{
    *n = 0;
    *err = CUDA_SUCCESS;
    size_t nn = g->nnodes, ne = 0;
    for (struct CUgraphNode_st *x = g->head; x; x = x->next)
        ne += x->ndeps;
    struct CUgraphNode_st **order = malloc((nn + 1) * sizeof *order);
    struct CUgraphNode_st **by_idx = malloc((nn + 1) * sizeof *by_idx);
    size_t *indeg = calloc(nn + 1, sizeof *indeg), *start = calloc(nn + 2, sizeof *start);
    size_t *out = malloc((ne + 1) * sizeof *out);
    if (!order || !by_idx || !indeg || !start || !out) {
        free(order);
        order = NULL;
        *err = CUDA_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    fc_graph_number(g);
    for (struct CUgraphNode_st *x = g->head; x; x = x->next) {
        by_idx[x->idx] = x;
        indeg[x->idx] = x->ndeps;
        for (size_t j = 0; j < x->ndeps; j++)
            start[x->deps[j]->idx + 1]++;
    }
    for (size_t i = 0; i < nn; i++)
        start[i + 1] += start[i];
    size_t *cursor = calloc(nn + 1, sizeof *cursor);
    if (!cursor) {
        free(order);
        order = NULL;
        *err = CUDA_ERROR_OUT_OF_MEMORY;
        goto done;
    }
    for (struct CUgraphNode_st *x = g->head; x; x = x->next)
        for (size_t j = 0; j < x->ndeps; j++) {
            size_t d = x->deps[j]->idx;
            out[start[d] + cursor[d]++] = x->idx;
        }
    free(cursor);
    /* order doubles as the queue: [head, k) ready and not yet expanded */
    size_t k = 0;
    for (size_t i = 0; i < nn; i++)
        if (indeg[i] == 0)
            order[k++] = by_idx[i];
    for (size_t head = 0; head < k; head++) {
        size_t i = order[head]->idx;
        for (size_t e = start[i]; e < start[i + 1]; e++)
            if (--indeg[out[e]] == 0)
                order[k++] = by_idx[out[e]];
    }
    if (k < nn) {
        free(order);
        order = NULL;
        *err = CUDA_ERROR_INVALID_VALUE; /* a cycle: refused at instantiation */
    } else {
        *n = k;
    }
done:
    free(by_idx);
    free(indeg);
    free(start);
    free(out);
    return order;
}

/* ---- building graphs ------------------------------------------------------ */

FC_EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    FC_FAULT(cuGraphCreate);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!phGraph || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraph_st *g = fc_graph_new(false);
    fc_graph_unlock();
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = g;
    return CUDA_SUCCESS;
}

FC_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
    FC_FAULT(cuGraphDestroy);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    bool known = fc_graph_known(hGraph);
    /* "All operations other than destroy and node removal are permitted on
     * the graph while the capture sequence is in progress." */
    if (known && (hGraph->captures || any_body_captured(hGraph)))
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (known) {
        fc_exec_graph_gone_locked(hGraph); /* a new graph at its address is another */
        fc_graph_free(hGraph);
    } else
        r = CUDA_ERROR_INVALID_VALUE;
    fc_graph_unlock();
    return r;
}

/* Adds n (built by the caller, detached) to g: the checks every
 * cuGraphAdd*Node makes, then the node is g's or freed. */
CUresult fc_graph_add_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                         struct CUgraphNode_st *n)
{
    CUresult r = CUDA_SUCCESS;
    fc_graph_lock();
    if (!n)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    else if (!out || !fc_graph_open(g) || (ndeps && !deps))
        r = CUDA_ERROR_INVALID_VALUE;
    else
        r = fc_graph_add(g, n, deps, ndeps);
    if (r == CUDA_SUCCESS)
        *out = n;
    else if (n)
        fc_node_free(n);
    fc_graph_unlock();
    return r;
}
