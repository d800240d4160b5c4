/*
** podcharge.h: what a bound pod charges its queues, in one definition for
** every ledger that sums it (contract sections 2-3): the resize ledger of a
** state (resize.c), the live ledger that follows the cluster event by event
** (src/live/ledger.c), and the Running pods the pod engine starts from
** (podsched.c, whose figures the property tests compare with these).
**
** A pod charges its queues when it is one of tally's (its schedulerName),
** bound (spec.nodeName set) and not terminal. Its charge:
**   - queue: tly_store_pod_queue() (the PodGroup's, else the label, else
**     default-queue), and whether it is non-preemptible (the PodGroup's
**     preemptibility, else priority >= 100, the priority from the PodGroup's
**     or the pod's PriorityClass, else the globalDefault class, else 50);
**   - res: cpu, memory and GPUs (devices, in 0.01 steps: a fraction or
**     gpu-memory share counted on the node's GPU memory, or on the largest
**     node GPU memory when the node is unknown), from the effective request
**     (podreq.h);
**   - all: every resource of the effective request except `pods`, GPUs as
**     accepted (the same hundredths, under nvidia.com/gpu or amd.com/gpu);
**   - accounted: every AccountedResource that charges it on its node
**     (accounted.h), or without node labels when the node is unknown.
** DRA claims' devices are not part of it yet (docs/live.md says so); the
** pod engine adds them from its own allocation.
*/
#ifndef TALLY_PODCHARGE_H
#define TALLY_PODCHARGE_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/objects.h"
#include "tally/queues.h"
#include "tally/store.h"

/* Whether p charges its queues (one of tally's, bound, not terminal). */
bool tly_pod_charges_queues(const tly_store *s, const tly_pod *p);
bool tly_pod_terminal(const tly_pod *p);

/* The pod's priority and whether it is non-preemptible (pg: its PodGroup or NULL). */
int32_t tly_pod_priority(const tly_store *s, const tly_pod *p, const tly_podgroup *pg);
bool tly_pod_non_preemptible(const tly_store *s, const tly_pod *p, const tly_podgroup *pg);
/* The same, given the pod's priority (tly_pod_priority). */
bool tly_pod_non_preemptible_at(const tly_pod *p, const tly_podgroup *pg, int32_t priority);

/* Whether KAI GPU sharing is on for this Config (NULL: on). */
bool tly_gpu_sharing_enabled(const tly_config *c);

typedef struct {
    const char *queue;            /* leaf queue name */
    bool non_preemptible;
    tly_qty res[TLY_QR_COUNT];    /* cpu cores, memory bytes, GPU devices */
    tly_rlist all;                /* allocated: every resource, GPU as accepted */
    tly_acc_charge *acc;          /* non-zero AccountedResource charges, ascending index of qs */
    uint32_t nacc;
    const char *problem;          /* data an AccountedResource could not use, or NULL */
} tly_pod_charge;

/*
** The charge of pod p (for which tly_pod_charges_queues holds) bound to node
** n (NULL: not known) in state s, with the AccountedResources of qs.
** max_gpu_mem_mib is the largest node GPU memory of the cluster (used when n
** is NULL). Storage comes from arena a.
*/
void tly_pod_charge_compute(tly_store *s, const tly_queues *qs, const tly_pod *p,
                            const tly_k8s_node *n, uint64_t max_gpu_mem_mib, tly_arena *a,
                            tly_pod_charge *out);

#endif
