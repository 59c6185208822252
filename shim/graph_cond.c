/* Conditional graph nodes (CUDA 12.3's IF and WHILE, 12.8's SWITCH): the
 * bodies a node runs are graphs of the driver's, handed to the program
 * once, in phGraph_out, when the node is made; CUDA 13.0's cuda.h has no
 * call that reads them back from the node. So they are recorded here when
 * cuGraphAddNode(_v2) makes the node (graph_nodes.c), node -> its graph
 * and its bodies, and the graph walk (graph_walk.c) goes into them as into
 * a child graph: what their kernels, copies and sets name is touched at
 * every launch of an executable graph of it, like the rest of its nodes.
 *
 * A record lives as long as its node: it goes at cuGraphDestroyNode of the
 * node and at cuGraphDestroy of its graph, with the records of the nodes
 * inside its bodies (recursively), taken out before the driver frees them
 * (graph_captured.c has the hooks). The driver clones no graph with
 * conditional nodes and embeds none as a child graph (cuda.h), so no node
 * without a record has bodies to miss; one that had (a clone by a driver
 * that allowed it) would be walked without its bodies: gated, not kept
 * hot. Few nodes are conditional (a loop or a branch of a model): a list. */
#include "shim/graph_cond.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct spw_cond {
    CUgraphNode node;
    CUgraph graph;
    unsigned n;
    CUgraph *body;
    struct spw_cond *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct spw_cond *conds;
static _Atomic size_t count;

static void cond_free(struct spw_cond *c)
{
    free(c->body);
    free(c);
}

void spw_graph_cond_made(CUgraphNode node, CUgraph graph, const CUDA_CONDITIONAL_NODE_PARAMS *p)
{
    if (!node || !p->phGraph_out || !p->size)
        return;
    struct spw_cond *c = calloc(1, sizeof *c);
    CUgraph *body = c ? malloc(p->size * sizeof *body) : NULL;
    if (!body) {
        free(c);
        return;
    }
    memcpy(body, p->phGraph_out, p->size * sizeof *body);
    *c = (struct spw_cond){node, graph, p->size, body, NULL};
    struct spw_cond *stale = NULL;
    pthread_mutex_lock(&lock);
    /* A record of a node at this address that went unseen: not this one. */
    for (struct spw_cond **pp = &conds; *pp; pp = &(*pp)->next)
        if ((*pp)->node == node) {
            stale = *pp;
            *pp = stale->next;
            break;
        }
    c->next = conds;
    conds = c;
    if (!stale)
        atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
    if (stale)
        cond_free(stale);
}

CUgraph *spw_graph_cond_bodies(CUgraphNode node, unsigned *n)
{
    CUgraph *out = NULL;
    *n = 0;
    if (!atomic_load_explicit(&count, memory_order_relaxed))
        return NULL;
    pthread_mutex_lock(&lock);
    for (struct spw_cond *c = conds; c; c = c->next)
        if (c->node == node) {
            if ((out = malloc(c->n * sizeof *out)) != NULL) {
                memcpy(out, c->body, c->n * sizeof *out);
                *n = c->n;
            }
            break;
        }
    pthread_mutex_unlock(&lock);
    return out;
}

/* Under lock: the records of graph g (node NULL) or of node, moved onto
 * *taken, then those of the nodes of their bodies, and so on. */
static void take_locked(CUgraph g, CUgraphNode node, struct spw_cond **taken)
{
    for (struct spw_cond **pp = &conds; *pp;) {
        struct spw_cond *c = *pp;
        if (node ? c->node == node : c->graph == g) {
            *pp = c->next;
            c->next = *taken;
            *taken = c;
            for (unsigned i = 0; i < c->n; i++)
                take_locked(c->body[i], NULL, taken);
            pp = &conds; /* the list changed below: from the start again */
        } else {
            pp = &c->next;
        }
    }
}

static struct spw_cond *take(CUgraph g, CUgraphNode node)
{
    if (!atomic_load_explicit(&count, memory_order_relaxed))
        return NULL;
    struct spw_cond *taken = NULL;
    pthread_mutex_lock(&lock);
    take_locked(g, node, &taken);
    for (struct spw_cond *c = taken; c; c = c->next)
        atomic_fetch_sub_explicit(&count, 1, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
    return taken;
}

struct spw_cond *spw_graph_cond_take_graph(CUgraph g)
{
    return g ? take(g, NULL) : NULL;
}

struct spw_cond *spw_graph_cond_take_node(CUgraphNode node)
{
    return node ? take(NULL, node) : NULL;
}

void spw_graph_cond_put_back(struct spw_cond *taken)
{
    pthread_mutex_lock(&lock);
    while (taken) {
        struct spw_cond *c = taken;
        taken = c->next;
        c->next = conds;
        conds = c;
        atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&lock);
}

void spw_graph_cond_drop(struct spw_cond *taken)
{
    while (taken) {
        struct spw_cond *c = taken;
        taken = c->next;
        cond_free(c);
    }
}

void spw_graph_cond_settle(struct spw_cond *taken, CUresult r)
{
    if (r == CUDA_SUCCESS)
        spw_graph_cond_drop(taken);
    else
        spw_graph_cond_put_back(taken);
}

size_t spw_graph_cond_count(void)
{
    return atomic_load_explicit(&count, memory_order_relaxed);
}
