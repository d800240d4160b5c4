/*
** placeclass.h: the node classes a pod could use, for deciding a limit that
** depends on placement without placing the pod (contract section 3: such a
** limit "gates a pod only where it binds on every node class the pod could
** use"). The gating controller asks; the pod engine answers the same
** question from its own state (podsched.c policy_elsewhere) with the same
** parts:
**   - a node class is nodes that charge every pod the same: the same GPU
**     memory and the same AccountedResource label matches
**     (tly_acc_node_classes, accounted.h);
**   - a pod could use a class when the static predicates (nodefit.h:
**     schedulable, Ready, nodeSelector, required node affinity, taints)
**     hold on one of its nodes, found by constraint through nodeclass.h.
** Room on the nodes is not looked at: whether a class is full is the
** scheduler's business, and a full class still takes the pod once a node of
** it is added or freed.
*/
#ifndef TALLY_PLACECLASS_H
#define TALLY_PLACECLASS_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/objects.h"
#include "tally/queues.h"
#include "tally/store.h"

typedef struct tly_placeclasses tly_placeclasses;

/*
** Over the nodes of s (store order, that is name order), whose GPU memory
** the caller has read once (gpu_mem[i] = tly_node_gpu_memory_mib of node
** i: a label lookup per node, which the caller needs anyway), and the
** AccountedResources of qs. pods[0..npods) are the pods that will be asked
** about: their selectors decide which node labels the static classes read
** (a pod outside them is evaluated node by node, with the same answers).
*/
tly_placeclasses *tly_placeclasses_create(const tly_store *s, const tly_queues *qs, const uint64_t *gpu_mem,
                                          const tly_pod *const *pods, uint32_t npods);
void tly_placeclasses_destroy(tly_placeclasses *pc);

/*
** The node classes pod p could use, as one node of each: the first node, in
** name order, of the class where p passes the static predicates; in the
** order of those nodes. Returns how many (0: the pod fits no node
** statically, a node-fit failure). *out stays valid until the next call or
** destroy.
*/
uint32_t tly_placeclasses_for(tly_placeclasses *pc, const tly_pod *p, const tly_k8s_node *const **out);

/*
** Whether a pod's queue charge can differ from one node to another, and so
** from its workload-level charge: an AccountedResource of qs with a source
** that matches node labels, the gpu-memory AccountedResource (it charges a
** GPU's memory), or nodes whose GPU memory differs (gpu_mem[0..nnodes) as
** above: a gpu-memory request's share follows it). When false the
** workload-level check has said everything, for every pod, and no classes
** need to be built.
*/
bool tly_placement_matters(const tly_queues *qs, const uint64_t *gpu_mem, uint32_t nnodes);

#endif
