/* fakecuda: graphs (CUgraph) and their nodes, built by hand or by stream
 * capture (capture.c); instantiation and launch are graph_exec.c's. A node
 * owns a copy of what it was given (a kernel's arguments, as the driver
 * copies them "during this call"), and hands back node-owned arrays, so a
 * program (or spillway) can inspect a captured kernel's pointer arguments
 * with cuGraphKernelNodeGetParams. Edges are plain (no edge data). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/internal.h"

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
static bool body_captured(const struct CUgraphNode_st *n)
{
    for (unsigned b = 0; n->type == CU_GRAPH_NODE_TYPE_CONDITIONAL && b < n->u.cond.size; b++) {
        if (n->u.cond.body[b]->captures)
            return true;
        for (const struct CUgraphNode_st *x = n->u.cond.body[b]->head; x; x = x->next)
            if (body_captured(x))
                return true;
    }
    return false;
}

static bool any_body_captured(const struct CUgraph_st *g)
{
    for (const struct CUgraphNode_st *x = g->head; x; x = x->next)
        if (body_captured(x))
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

/* Whether g has memory allocation or free nodes, which the driver neither
 * clones (cuGraphClone) nor embeds as a child graph (cuGraphAddChildGraphNode):
 * an allocation node's address is its own, never a copy's. */
static bool has_mem_nodes(const struct CUgraph_st *g)
{
    for (const struct CUgraphNode_st *x = g->head; x; x = x->next)
        if (x->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || x->type == CU_GRAPH_NODE_TYPE_MEM_FREE ||
            (x->type == CU_GRAPH_NODE_TYPE_GRAPH && has_mem_nodes(x->u.child)))
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

static void payload_free(struct CUgraphNode_st *n)
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
    payload_free(n);
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

static bool has_dep(const struct CUgraphNode_st *n, const struct CUgraphNode_st *d)
{
    for (size_t i = 0; i < n->ndeps; i++)
        if (n->deps[i] == d)
            return true;
    return false;
}

static bool dep_push(struct CUgraphNode_st *n, struct CUgraphNode_st *d)
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
        if (!dep_push(n, deps[i])) {
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
            ok = dep_push(copies[i], copies[n->deps[j]->idx]);
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

bool fc_graph_owns_alloc(struct CUgraph_st *g, CUdeviceptr ptr)
{
    for (struct CUgraphNode_st *x = g->head; x; x = x->next)
        if (x->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && x->u.alloc.mem->ptr == ptr)
            return true;
    return false;
}

/* ---- graph allocations ---------------------------------------------------- */

CUresult fc_gmem_new(int dev, size_t size, struct fc_gmem **out)
{
    struct fc_gmem *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = fc_alloc_device(size, FC_GRAPH_MEM, NULL, dev, &m->ptr);
    if (r != CUDA_SUCCESS) {
        free(m);
        return r;
    }
    m->size = fc_page_round(size);
    m->dev = dev;
    m->refs = 1;
    pthread_mutex_lock(&fc_lock);
    fc_region_find((uintptr_t)m->ptr)->gmem = m;
    fc_gmem_list_locked(m, true);
    pthread_mutex_unlock(&fc_lock);
    *out = m;
    return CUDA_SUCCESS;
}

void fc_gmem_ref(struct fc_gmem *m)
{
    pthread_mutex_lock(&fc_lock);
    m->refs++;
    pthread_mutex_unlock(&fc_lock);
}

/* Under fc_lock: m goes (no node names it, and it is not live). Its
 * physical memory stays in the device's graph pool (until a trim), as the
 * driver's does when a graph is destroyed. */
void fc_gmem_drop_locked(struct fc_gmem *m)
{
    if (m->mapped)
        fc_devices[m->dev].gm_mapped -= m->size;
    fc_gmem_list_locked(m, false);
    struct fc_region *reg = fc_region_find((uintptr_t)m->ptr);
    if (reg && reg->gmem == m)
        fc_region_release_locked(reg);
    free(m);
}

/* The last node naming m gone: m goes too, unless it is live ("Graph
 * destruction does not automatically free any live graph-allocated
 * memory"): then at its free (fc_gmem_live_locked). */
void fc_gmem_unref(struct fc_gmem *m)
{
    pthread_mutex_lock(&fc_lock);
    if (--m->refs == 0 && !m->live)
        fc_gmem_drop_locked(m);
    pthread_mutex_unlock(&fc_lock);
}

/* A graph allocation is live between its allocation node and its free (a
 * free node, or cuMemFreeAsync/cuMemFree after the launch): a second free
 * without an allocation between is an error, as for any allocation. */
void fc_gmem_mark(CUdeviceptr ptr, bool live)
{
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)ptr);
    if (reg && reg->kind == FC_GRAPH_MEM) {
        reg->freeing = !live;
        if (reg->gmem)
            fc_gmem_live_locked(reg->gmem, live);
    }
    pthread_mutex_unlock(&fc_lock);
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

/* Both node-parameter ABIs: v1 lacks kern and ctx. */
static CUresult kernel_node(struct CUgraphNode_st **out, const CUDA_KERNEL_NODE_PARAMS *p)
{
    *out = NULL;
    if (!p || (p->kernelParams && p->extra)) /* "both ... non-NULL": INVALID_VALUE */
        return CUDA_ERROR_INVALID_VALUE;
    CUfunction f = p->func ? p->func : (CUfunction)(void *)p->kern;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_KERNEL);
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = fc_kernel_call_init(&n->u.kernel, f, (fakecuda_dim3){p->gridDimX, p->gridDimY, p->gridDimZ},
                                     (fakecuda_dim3){p->blockDimX, p->blockDimY, p->blockDimZ},
                                     p->sharedMemBytes, p->kernelParams, p->extra);
    if (r != CUDA_SUCCESS) {
        n->type = CU_GRAPH_NODE_TYPE_EMPTY; /* nothing of its own: no lock needed */
        fc_node_free(n);
        return r == CUDA_ERROR_INVALID_HANDLE ? CUDA_ERROR_INVALID_VALUE : r;
    }
    n->u.kernel.kern = p->func ? NULL : p->kern;
    n->u.kernel.ctx = p->ctx;
    *out = n;
    return CUDA_SUCCESS;
}

static CUDA_KERNEL_NODE_PARAMS from_v1(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    CUDA_KERNEL_NODE_PARAMS q;
    memset(&q, 0, sizeof q);
    q.func = p->func;
    q.gridDimX = p->gridDimX;
    q.gridDimY = p->gridDimY;
    q.gridDimZ = p->gridDimZ;
    q.blockDimX = p->blockDimX;
    q.blockDimY = p->blockDimY;
    q.blockDimZ = p->blockDimZ;
    q.sharedMemBytes = p->sharedMemBytes;
    q.kernelParams = p->kernelParams;
    q.extra = p->extra;
    return q;
}

#undef cuGraphAddKernelNode
#undef cuGraphKernelNodeGetParams
#undef cuGraphKernelNodeSetParams

static CUresult add_kernel_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *n;
    if ((r = kernel_node(&n, p)) != CUDA_SUCCESS)
        return r;
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                           size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphAddKernelNode);
    return add_kernel_node(out, g, deps, ndeps, p);
}

FC_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                        size_t ndeps, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    FC_FAULT(cuGraphAddKernelNode);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS q = from_v1(p);
    return add_kernel_node(out, g, deps, ndeps, &q);
}

/* Under glock. */
struct CUgraphNode_st *fc_node_of(CUgraphNode n, CUgraphNodeType type)
{
    return fc_node_known(n) && n->type == type ? n : NULL;
}

/* The Get/SetParams of nodes whose parameters are one plain struct: copies
 * size bytes out of (or into) the member at offset off of a known node of
 * that type, under the graph lock; INVALID_VALUE for another node, as the
 * driver. */
static CUresult node_copy(CUgraphNode hNode, CUgraphNodeType type, size_t off, void *buf, size_t size,
                          bool set)
{
    if (!buf)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *n = fc_node_of(hNode, type);
    if (n && set)
        memcpy((char *)n + off, buf, size);
    else if (n)
        memcpy(buf, (const char *)n + off, size);
    fc_graph_unlock();
    return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
/* The pointer comparison makes the compiler check that the member has the
 * caller's type, as the assignments these replace did. */
#define NODE_MEMBER_IS(member, ptr) ((void)sizeof(&((struct CUgraphNode_st *)0)->member == (ptr)))
#define NODE_GET(h, type, member, out)                                                      \
    (NODE_MEMBER_IS(member, out),                                                           \
     node_copy(h, type, offsetof(struct CUgraphNode_st, member), out, sizeof *(out), false))
#define NODE_SET(h, type, member, in)                                                       \
    (NODE_MEMBER_IS(member, in),                                                            \
     node_copy(h, type, offsetof(struct CUgraphNode_st, member), (void *)(in), sizeof *(in), true))

static CUresult kernel_get(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *n = fc_node_of(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    if (n) {
        const struct fc_kernel_call *k = &n->u.kernel;
        memset(p, 0, sizeof *p);
        p->func = k->kern ? NULL : k->func;
        p->kern = k->kern;
        p->ctx = k->ctx;
        p->gridDimX = k->grid.x;
        p->gridDimY = k->grid.y;
        p->gridDimZ = k->grid.z;
        p->blockDimX = k->block.x;
        p->blockDimY = k->block.y;
        p->blockDimZ = k->block.z;
        p->sharedMemBytes = k->shmem;
        /* Node-owned, valid until the node changes or goes, as documented. */
        p->kernelParams = k->via_extra ? NULL : (void **)k->params;
        p->extra = k->via_extra ? (void **)k->extra : NULL;
    }
    fc_graph_unlock();
    return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphKernelNodeGetParams);
    return kernel_get(n, p);
}

FC_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    FC_FAULT(cuGraphKernelNodeGetParams);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS q;
    CUresult r = kernel_get(n, &q);
    if (r == CUDA_SUCCESS) {
        memset(p, 0, sizeof *p);
        p->func = q.func ? q.func : (CUfunction)(void *)q.kern;
        p->gridDimX = q.gridDimX;
        p->gridDimY = q.gridDimY;
        p->gridDimZ = q.gridDimZ;
        p->blockDimX = q.blockDimX;
        p->blockDimY = q.blockDimY;
        p->blockDimZ = q.blockDimZ;
        p->sharedMemBytes = q.sharedMemBytes;
        p->kernelParams = q.kernelParams;
        p->extra = q.extra;
    }
    return r;
}

/* Replaces a kernel node's parameters (graph or executable graph node). */
CUresult fc_kernel_node_set(struct CUgraphNode_st *n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    struct CUgraphNode_st *x;
    CUresult r = kernel_node(&x, p);
    if (r != CUDA_SUCCESS)
        return r;
    fc_kernel_call_free(&n->u.kernel);
    n->u.kernel = x->u.kernel; /* moved: the node's arrays must point at it */
    fc_kernel_call_rebase(&n->u.kernel);
    x->type = CU_GRAPH_NODE_TYPE_EMPTY;
    fc_node_free(x);
    return CUDA_SUCCESS;
}

static CUresult kernel_set(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *n = fc_node_of(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    r = n ? fc_kernel_node_set(n, p) : CUDA_ERROR_INVALID_VALUE;
    fc_graph_unlock();
    return r;
}

FC_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphKernelNodeSetParams);
    return kernel_set(n, p);
}

FC_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    FC_FAULT(cuGraphKernelNodeSetParams);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS q = from_v1(p);
    return kernel_set(n, &q);
}

FC_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                        size_t ndeps, const CUDA_MEMCPY3D *p, CUcontext ctx)
{
    FC_FAULT(cuGraphAddMemcpyNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = fc_copy3d_check(p)) != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEMCPY);
    if (n) {
        n->u.copy.p = *p;
        n->u.copy.ctx = ctx;
    }
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *p)
{
    FC_FAULT(cuGraphMemcpyNodeGetParams);
    return NODE_GET(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, u.copy.p, p);
}

FC_EXPORT CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *p)
{
    FC_FAULT(cuGraphMemcpyNodeSetParams);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fc_copy3d_check(p);
    if (r != CUDA_SUCCESS)
        return r;
    return NODE_SET(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, u.copy.p, p);
}

FC_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                        size_t ndeps, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    FC_FAULT(cuGraphAddMemsetNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx && !fc_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((r = fc_memset2d_check(p)) != CUDA_SUCCESS)
        return r;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEMSET);
    if (n) {
        n->u.set.p = *p;
        n->u.set.ctx = ctx;
    }
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphMemsetNodeGetParams);
    return NODE_GET(hNode, CU_GRAPH_NODE_TYPE_MEMSET, u.set.p, p);
}

FC_EXPORT CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphMemsetNodeSetParams);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = fc_memset2d_check(p);
    if (r != CUDA_SUCCESS)
        return r;
    return NODE_SET(hNode, CU_GRAPH_NODE_TYPE_MEMSET, u.set.p, p);
}

FC_EXPORT CUresult cuGraphAddHostNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                      size_t ndeps, const CUDA_HOST_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphAddHostNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p || !p->fn)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_HOST);
    if (n)
        n->u.host = *p;
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphHostNodeGetParams);
    return NODE_GET(hNode, CU_GRAPH_NODE_TYPE_HOST, u.host, p);
}

FC_EXPORT CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphHostNodeSetParams);
    if (!p || !p->fn)
        return CUDA_ERROR_INVALID_VALUE;
    return NODE_SET(hNode, CU_GRAPH_NODE_TYPE_HOST, u.host, p);
}

FC_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps)
{
    FC_FAULT(cuGraphAddEmptyNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    return fc_graph_add_node(out, g, deps, ndeps, fc_node_new(CU_GRAPH_NODE_TYPE_EMPTY));
}

/* The node keeps a copy of the child graph: the program may destroy its own. */
FC_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                            size_t ndeps, CUgraph child)
{
    FC_FAULT(cuGraphAddChildGraphNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    fc_graph_lock();
    struct CUgraphNode_st *n = NULL;
    if (!fc_graph_known(child) || child == g || has_mem_nodes(child) || fc_graph_has_conditionals(child)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if ((n = fc_node_new(CU_GRAPH_NODE_TYPE_GRAPH)) != NULL &&
               !(n->u.child = fc_graph_clone(child, true))) {
        fc_node_free(n);
        n = NULL;
    }
    fc_graph_unlock();
    return r != CUDA_SUCCESS ? r : fc_graph_add_node(out, g, deps, ndeps, n);
}

/* A conditional node: the handle one created for g or a graph g is a
 * body of (recursively: "associated with a conditional node in this graph
 * or one of its children"), for ctx ("must match context used to create
 * the handle"); size 1 for WHILE, 1 or 2 for IF, any above 0 for SWITCH.
 * Its bodies are empty graphs the node owns, written to phGraph_out (the
 * node's own array, valid as long as the node). */
CUresult fc_graph_add_conditional(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                  CUDA_CONDITIONAL_NODE_PARAMS *p)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    bool size_ok = p->type == CU_GRAPH_COND_TYPE_WHILE    ? p->size == 1
                   : p->type == CU_GRAPH_COND_TYPE_IF     ? p->size == 1 || p->size == 2
                   : p->type == CU_GRAPH_COND_TYPE_SWITCH ? p->size > 0
                                                          : false;
    struct fc_cond_handle *h = fc_cond_handle_of(p->handle);
    CUcontext ctx = p->ctx ? p->ctx : fc_ctx_top();
    if (!size_ok || !h || ctx != fc_cond_handle_ctx(h))
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    bool ok = fc_graph_open(g);
    bool mine = false;
    for (struct CUgraph_st *a = ok ? g : NULL; a && !mine; a = a->owner ? a->owner->graph : NULL)
        mine = a == fc_cond_handle_graph(h);
    struct CUgraphNode_st *n = ok && mine ? fc_node_new(CU_GRAPH_NODE_TYPE_CONDITIONAL) : NULL;
    if (n) {
        n->u.cond.handle = h;
        n->u.cond.type = p->type;
        n->u.cond.body = calloc(p->size, sizeof *n->u.cond.body);
        for (unsigned b = 0; n->u.cond.body && b < p->size; b++) {
            if (!(n->u.cond.body[b] = fc_graph_new(true)))
                break;
            n->u.cond.body[b]->owner = n;
            n->u.cond.size = b + 1; /* what payload_free frees */
        }
        r = n->u.cond.size == p->size ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (n && r != CUDA_SUCCESS) {
        fc_node_free(n);
        n = NULL;
    }
    fc_graph_unlock();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ok || !mine)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraph *body = n ? n->u.cond.body : NULL;
    if ((r = fc_graph_add_node(out, g, deps, ndeps, n)) == CUDA_SUCCESS)
        p->phGraph_out = body;
    return r;
}

/* The node's own graph, not a copy: what the program reads of it (its
 * nodes, their parameters, its edges) is the node's. fakecuda lets only
 * those queries and parameter changes through on it, not new nodes. */
FC_EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph)
{
    FC_FAULT(cuGraphChildGraphNodeGetGraph);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!phGraph)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    struct CUgraphNode_st *n = fc_node_of(hNode, CU_GRAPH_NODE_TYPE_GRAPH);
    if (n)
        *phGraph = n->u.child;
    fc_graph_unlock();
    return n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult add_event_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                               CUevent e, CUgraphNodeType type)
{
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (fc_event_check(e) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *n = fc_node_new(type);
    if (n)
        n->u.event = e;
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                             size_t ndeps, CUevent e)
{
    FC_FAULT(cuGraphAddEventRecordNode);
    return add_event_node(out, g, deps, ndeps, e, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

FC_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                           size_t ndeps, CUevent e)
{
    FC_FAULT(cuGraphAddEventWaitNode);
    return add_event_node(out, g, deps, ndeps, e, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

/* The allocation is made now and lives as long as a graph object has the
 * node (the graph, its clones, their executable graphs): fakecuda's model
 * of "the allocation is owned by the graph". */
FC_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                          size_t ndeps, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphAddMemAllocNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!p || p->bytesize == 0 || p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        p->poolProps.handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return CUDA_ERROR_INVALID_VALUE;
    if (fc_check_device(p->poolProps.location.id) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    fc_graph_lock();
    bool known = fc_graph_known(g);
    fc_graph_unlock();
    if (!known || !out)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if ((r = fc_gmem_new(p->poolProps.location.id, p->bytesize, &n->u.alloc.mem)) != CUDA_SUCCESS) {
        fc_graph_lock();
        fc_node_free(n);
        fc_graph_unlock();
        return r;
    }
    p->dptr = n->u.alloc.mem->ptr;
    n->u.alloc.p = *p;
    n->u.alloc.p.accessDescs = NULL;
    n->u.alloc.p.accessDescCount = 0;
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
    FC_FAULT(cuGraphMemAllocNodeGetParams);
    return NODE_GET(hNode, CU_GRAPH_NODE_TYPE_MEM_ALLOC, u.alloc.p, p);
}

static bool is_graph_alloc(CUdeviceptr p)
{
    pthread_mutex_lock(&fc_lock);
    struct fc_region *reg = fc_region_find((uintptr_t)p);
    bool ok = reg && reg->kind == FC_GRAPH_MEM && reg->base == (uintptr_t)p;
    pthread_mutex_unlock(&fc_lock);
    return ok;
}

FC_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                         size_t ndeps, CUdeviceptr dptr)
{
    FC_FAULT(cuGraphAddMemFreeNode);
    CUresult r = fc_initialized();
    if (r != CUDA_SUCCESS)
        return r;
    if (!is_graph_alloc(dptr)) /* "must be ... the address of a graph allocation" */
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphNode_st *n = fc_node_new(CU_GRAPH_NODE_TYPE_MEM_FREE);
    if (n)
        n->u.free_ptr = dptr;
    return fc_graph_add_node(out, g, deps, ndeps, n);
}

FC_EXPORT CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr)
{
    FC_FAULT(cuGraphMemFreeNodeGetParams);
    return NODE_GET(hNode, CU_GRAPH_NODE_TYPE_MEM_FREE, u.free_ptr, dptr);
}

/* ---- what a graph holds ---------------------------------------------------- */

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
    if (nodes) {
        for (size_t i = k; i < *num; i++)
            nodes[i] = NULL;
        if (k > *num)
            k = *num;
    }
    *num = k;
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
    if (from) {
        for (size_t i = k; i < *num; i++)
            from[i] = to[i] = NULL;
        if (k > *num)
            k = *num;
    }
    *num = k;
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
    if (nodes) {
        for (size_t i = 0; i < *num && edata; i++)
            memset(&edata[i], 0, sizeof edata[i]);
        for (size_t i = k; i < *num; i++)
            nodes[i] = NULL;
        if (k > *num)
            k = *num;
    }
    *num = k;
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
            if (!dep_push(to[i], from[i])) {
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
    if (known && (hNode->graph->captures || body_captured(hNode))) {
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
    if (!fc_graph_known(g) || has_mem_nodes(g) || fc_graph_has_conditionals(g))
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

static CUresult event_of(CUgraphNode hNode, CUgraphNodeType type, CUevent *e)
{
    return NODE_GET(hNode, type, u.event, e);
}

FC_EXPORT CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode n, CUevent *e)
{
    FC_FAULT(cuGraphEventRecordNodeGetEvent);
    return event_of(n, CU_GRAPH_NODE_TYPE_EVENT_RECORD, e);
}

FC_EXPORT CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode n, CUevent *e)
{
    FC_FAULT(cuGraphEventWaitNodeGetEvent);
    return event_of(n, CU_GRAPH_NODE_TYPE_WAIT_EVENT, e);
}
