/*
** accounted.h: what one placement charges to each AccountedResource (the
** AccountedResource seed, contract section 2 "AccountedResources").
**
** For a pod placed on a node, every AccountedResource is evaluated on its
** own and all matching ones are charged (one H200 GPU charges both `gpu` and
** `gpu-h200`). Within one AccountedResource, the matching sources are
** summed:
**   resourceName R  the pod's effective request of R; for a GPU resource
**                   (nvidia.com/gpu, amd.com/gpu) the accepted allocation:
**                   whole GPUs, KAI fractions x devices, gpu-memory pods'
**                   fraction of the chosen node's GPU, in 0.01 steps;
**   podAnnotation   the annotation's number times the unit (a Kubernetes
**                   suffix multiplies; any other word charges the number);
**   dra             devices of the class selected for the pod's claims (DRA
**                   allocation is not evaluated by this build: such pods are
**                   reported as UnsupportedConstraint before charging).
** match.nodeLabels must all equal the chosen node's labels.
** `gpu-memory` is reserved by name: it charges the GPU memory of the
** allocation once, whatever sources it lists: a whole GPU the node's GPU
** memory, a fraction its share of it, a gpu-memory pod its request (MiB,
** charged in bytes).
*/
#ifndef TALLY_ACCOUNTED_H
#define TALLY_ACCOUNTED_H

#include <stdint.h>

#include "tally/objects.h"
#include "tally/podreq.h"
#include "tally/queues.h"

/*
** Fills out[a] for every AccountedResource a (tly_queues_accres order) for
** pod p with request r on node n whose devices have gpu_mem_mib MiB.
** *problem (may be NULL) gets a sentence about data that could not be used
** (an annotation that is not a number), or NULL.
*/
void tly_accounted_charges(const tly_queues *qs, const tly_pod *p, const tly_podreq *r,
                           const tly_k8s_node *n, uint64_t gpu_mem_mib, tly_qty *out,
                           const char **problem, tly_arena *a);

/*
** The part of the charges that does not depend on the node, for the
** workload-level check: sources without match.nodeLabels, GPU amounts with
** the largest node GPU memory (as KAI's job-level check), gpu-memory only for
** gpu-memory requests. A workload over a limit by this part is over it on
** every node: it is held by queue policy, not reported as a node-fit failure.
*/
void tly_accounted_charges_job(const tly_queues *qs, const tly_pod *p, const tly_podreq *r,
                               uint64_t max_gpu_mem_mib, const uint32_t *idx, uint32_t nidx,
                               tly_qty *out, tly_arena *a);

/*
** Which sources' match.nodeLabels hold on which node, computed once per
** node (the engine asks for every candidate node of every pod, and label
** comparisons would dominate). bits[node * nsrc + off[a] + i] is source i of
** AccountedResource a.
*/
typedef struct {
    uint8_t *bits;
    uint32_t *off;
    uint32_t nsrc;
} tly_acc_match;

void tly_acc_match_build(tly_acc_match *m, const tly_queues *qs, const tly_k8s_node *const *nodes,
                         uint32_t nnodes);
void tly_acc_match_free(tly_acc_match *m);
/*
** Node classes by what a placement charges: nodes with the same GPU memory
** (gpu_mem[i], MiB per device) and the same row of m charge every pod the
** same, to its queues and its AccountedResources, so a queue verdict holds
** for the whole class (the pod engine's class cache; the gating
** controller's check of limits that depend on placement). cls[i] gets node
** i's class, numbered in the order of each class's first node; returns how
** many classes there are.
*/
uint32_t tly_acc_node_classes(const tly_acc_match *m, const uint64_t *gpu_mem, uint32_t nnodes, uint32_t *cls);
/*
** tly_accounted_charges with node labels already matched (row = node's bits),
** for the AccountedResources in idx[0..nidx) only (idx NULL: all); the other
** entries of out are not touched.
*/
void tly_accounted_charges_matched(const tly_queues *qs, const tly_pod *p, const tly_podreq *r,
                                   const tly_acc_match *m, uint32_t node, uint64_t gpu_mem_mib,
                                   const uint32_t *idx, uint32_t nidx, tly_qty *out,
                                   const char **problem, tly_arena *a);

/*
** Which AccountedResources can charge a pod at all, known before any node is
** looked at. A source charges a pod only through something the pod has: a
** resourceName source needs that resource among the pod's requests (a GPU
** resource: a GPU request of any form), a podAnnotation source needs the
** annotation, the gpu-memory resource needs a GPU request; dra sources charge
** only pods with claims, which callers treat as concerned by every
** AccountedResource. The index maps resource ids and annotation keys to the
** AccountedResources that read them, so listing a pod's costs what the pod
** has, not how many AccountedResources exist. The engines evaluate and check
** only the listed ones: a placement's cost follows the AccountedResources
** that concern the pod.
*/
typedef struct tly_acc_index tly_acc_index;

/*
** live (may be NULL: all) marks the AccountedResources worth listing: an
** engine leaves out those that can charge nothing in its cluster (every
** source's node labels fail on every node).
*/
tly_acc_index *tly_acc_index_create(const tly_queues *qs, const uint8_t *live);
void tly_acc_index_destroy(tly_acc_index *x);
/*
** The AccountedResources (tly_queues_accres indices, ascending, no repeats)
** that can charge pod p with request r: a superset of those that charge it
** something on some node. Returns the count; *out is allocated in a.
*/
uint32_t tly_acc_relevant(const tly_acc_index *x, const tly_pod *p, const tly_podreq *r,
                          tly_arena *a, uint32_t **out);

/* Whether every label in `want` has the same value on node n (n may be NULL: only an empty want). */
bool tly_node_labels_match(const tly_kvs *want, const tly_k8s_node *n);
/* The multiplier a unit stands for: a Kubernetes suffix ("Mi") or 1 for a word ("percent"). */
tly_qty tly_unit_multiplier(const char *unit);
/* a x b for quantities, rounded away from zero; false on overflow. */
bool tly_qty_times(tly_qty a, tly_qty b, tly_qty *out);

/* Hundredths of a GPU as a quantity (0.01 = 10^7 nano-units). */
tly_qty tly_hundredths_qty(uint64_t h);

#endif
