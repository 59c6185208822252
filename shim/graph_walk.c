/* Visiting every node of a graph (graph_walk.h). */
#include "shim/graph_walk.h"

#include "shim/driver.h"
#include "shim/graph_cond.h"

#include <stdlib.h>

bool spw_graph_walk(CUgraph g, int depth,
                    void (*visit)(CUgraphNode node, CUgraphNodeType type, void *arg), void *arg)
{
    size_t n = 0;
    if (!spw_drv.cuGraphGetNodes || spw_drv.cuGraphGetNodes(g, NULL, &n) != CUDA_SUCCESS)
        return false;
    if (!n)
        return true;
    CUgraphNode *nodes = malloc(n * sizeof *nodes);
    if (!nodes || spw_drv.cuGraphGetNodes(g, nodes, &n) != CUDA_SUCCESS) {
        free(nodes);
        return false;
    }
    bool all = true;
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType t;
        CUgraph child;
        if (!spw_drv.cuGraphNodeGetType || spw_drv.cuGraphNodeGetType(nodes[i], &t) != CUDA_SUCCESS) {
            all = false;
            continue;
        }
        visit(nodes[i], t, arg);
        if (t == CU_GRAPH_NODE_TYPE_CONDITIONAL && depth < SPW_GRAPH_MAX_DEPTH) {
            /* Its bodies as recorded when it was made (graph_cond.c); none
             * recorded: not walked (they hold no allocation nodes, which
             * the driver refuses in a body, so no caller's record misses
             * more than their heat). */
            unsigned nb;
            CUgraph *body = spw_graph_cond_bodies(nodes[i], &nb);
            for (unsigned b = 0; b < nb; b++)
                if (!spw_graph_walk(body[b], depth + 1, visit, arg))
                    all = false;
            free(body);
            continue;
        }
        if (t != CU_GRAPH_NODE_TYPE_GRAPH || depth >= SPW_GRAPH_MAX_DEPTH)
            continue;
        if (!spw_drv.cuGraphChildGraphNodeGetGraph ||
            spw_drv.cuGraphChildGraphNodeGetGraph(nodes[i], &child) != CUDA_SUCCESS ||
            !spw_graph_walk(child, depth + 1, visit, arg))
            all = false;
    }
    free(nodes);
    return all;
}
