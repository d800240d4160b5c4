/*
** placeclass.c: the node classes a pod could use (placeclass.h).
**
** Built once per decision round over the nodes: the AccountedResource label
** matches (tly_acc_match_build), the charge classes (tly_acc_node_classes)
** and the static classes (nodeclass.h). A pod's answer is the first node of
** each charge class among the nodes its constraint passes, which nodeclass.h
** lists once per constraint; pods of one constraint share the answer, so
** it is kept per constraint id. A pod that nodeclass.h cannot classify
** (matchFields) is evaluated node by node.
*/
#include "tally/placeclass.h"

#include <stdlib.h>
#include <string.h>

#include "tally/accounted.h"
#include "tally/arena.h"
#include "tally/nodeclass.h"
#include "tally/nodefit.h"

typedef struct {
    const tly_k8s_node **nodes;  /* NULL: not computed yet */
    uint32_t n;
} answer;

struct tly_placeclasses {
    const tly_k8s_node **nodes;
    uint32_t nnodes;
    uint32_t *cls;               /* per node: its charge class */
    uint32_t ncls;
    tly_nodeclasses *ncls_static;
    answer *by_cid;              /* per constraint id */
    uint32_t ncid;
    answer scratch;              /* a pod evaluated node by node */
    uint8_t *seen;               /* per charge class, while one answer is built */
};

tly_placeclasses *tly_placeclasses_create(const tly_store *s, const tly_queues *qs, const uint64_t *gpu_mem,
                                          const tly_pod *const *pods, uint32_t npods)
{
    tly_placeclasses *pc = tly_xcalloc(1, sizeof *pc);
    pc->nnodes = tly_store_count(s, TLY_K_NODE);
    pc->nodes = tly_xmalloc((pc->nnodes + 1) * sizeof *pc->nodes);
    for (uint32_t i = 0; i < pc->nnodes; i++)
        pc->nodes[i] = tly_store_at(s, TLY_K_NODE, i);
    tly_acc_match match;
    tly_acc_match_build(&match, qs, pc->nodes, pc->nnodes);
    pc->cls = tly_xmalloc((pc->nnodes + 1) * sizeof *pc->cls);
    pc->ncls = tly_acc_node_classes(&match, gpu_mem, pc->nnodes, pc->cls);
    tly_acc_match_free(&match);
    pc->ncls_static = tly_nodeclasses_create(pc->nodes, pc->nnodes, pods, npods);
    pc->seen = tly_xmalloc(pc->ncls + 1);
    pc->scratch.nodes = tly_xmalloc((pc->ncls + 1) * sizeof *pc->scratch.nodes);
    return pc;
}

void tly_placeclasses_destroy(tly_placeclasses *pc)
{
    if (!pc)
        return;
    for (uint32_t i = 0; i < pc->ncid; i++)
        free(pc->by_cid[i].nodes);
    free(pc->by_cid);
    free(pc->scratch.nodes);
    free(pc->seen);
    tly_nodeclasses_destroy(pc->ncls_static);
    free(pc->cls);
    free(pc->nodes);
    free(pc);
}

/* Appends node k to answer a when its charge class is not in a yet. */
static void note(tly_placeclasses *pc, answer *a, uint32_t k)
{
    uint32_t c = pc->cls[k];
    if (pc->seen[c])
        return;
    pc->seen[c] = 1;
    a->nodes[a->n++] = pc->nodes[k];
}

uint32_t tly_placeclasses_for(tly_placeclasses *pc, const tly_pod *p, const tly_k8s_node *const **out)
{
    memset(pc->seen, 0, pc->ncls + 1);
    uint32_t cid = tly_nodeclasses_constraint(pc->ncls_static, p);
    if (cid == TLY_NC_NONE) {
        pc->scratch.n = 0;
        for (uint32_t k = 0; k < pc->nnodes && pc->scratch.n < pc->ncls; k++) {
            const tly_taint *taint;
            if (tly_nodefit_static(p, pc->nodes[k], &taint) == TLY_FIT_OK)
                note(pc, &pc->scratch, k);
        }
        *out = pc->scratch.nodes;
        return pc->scratch.n;
    }
    if (cid >= pc->ncid) {
        pc->by_cid = tly_xrealloc(pc->by_cid, (cid + 1) * sizeof *pc->by_cid);
        memset(pc->by_cid + pc->ncid, 0, (cid + 1 - pc->ncid) * sizeof *pc->by_cid);
        pc->ncid = cid + 1;
    }
    answer *a = &pc->by_cid[cid];
    if (!a->nodes) {
        uint32_t ncand;
        const uint32_t *cand = tly_nodeclasses_candidates(pc->ncls_static, cid, &ncand);
        a->nodes = tly_xmalloc((pc->ncls + 1) * sizeof *a->nodes);
        for (uint32_t j = 0; j < ncand && a->n < pc->ncls; j++)
            note(pc, a, cand[j]);
    }
    *out = a->nodes;
    return a->n;
}

bool tly_placement_matters(const tly_queues *qs, const uint64_t *gpu_mem, uint32_t nnodes)
{
    for (uint32_t k = 0; k < tly_queues_naccres(qs); k++) {
        if (tly_queues_accres_is_gpu_memory(qs, k))
            return true;
        const tly_accres *ar = tly_queues_accres(qs, k);
        for (uint32_t i = 0; i < ar->nsources; i++)
            if (ar->sources[i].match_node_labels.n > 0)
                return true;
    }
    for (uint32_t i = 1; i < nnodes; i++)
        if (gpu_mem[i] != gpu_mem[0])
            return true;
    return false;
}
