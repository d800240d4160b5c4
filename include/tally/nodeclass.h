/*
** nodeclass.h: static node classes for the pod engine.
**
** The static predicates (nodefit.h) read a node's schedulability, readiness,
** taints and the labels that pods select on, and a pod's tolerations,
** nodeSelector and required node affinity. Nodes that agree on all of those
** (labels only for the keys some pod's selector names) are one class: every
** such pod gets the same static answer on all of them. Pods with the same
** tolerations and selectors share a constraint id. The answer for (constraint,
** class) is computed once, on the class's first node, so a scan of 5,000
** nodes reads a byte per node instead of comparing label strings, and the
** nodes a constraint can use at all are listed once (ascending index).
**
** A pod whose selectors use matchFields (the node's name) gets TLY_NC_NONE and
** is evaluated node by node, as before.
*/
#ifndef TALLY_NODECLASS_H
#define TALLY_NODECLASS_H

#include <stdint.h>

#include "tally/nodefit.h"
#include "tally/objects.h"

#define TLY_NC_NONE UINT32_MAX

typedef struct tly_nodeclasses tly_nodeclasses;

/* Classes of nodes[0..nnodes) for the label keys that the selectors of pods[0..npods) name. */
tly_nodeclasses *tly_nodeclasses_create(const tly_k8s_node *const *nodes, uint32_t nnodes,
                                        const tly_pod *const *pods, uint32_t npods);
void tly_nodeclasses_destroy(tly_nodeclasses *nc);

uint32_t tly_nodeclasses_count(const tly_nodeclasses *nc);
/* The class of node i, and how many nodes a class has. */
uint32_t tly_nodeclasses_of(const tly_nodeclasses *nc, uint32_t node);
uint32_t tly_nodeclasses_size(const tly_nodeclasses *nc, uint32_t cls);

/*
** Pod p's constraint id (pods with equal tolerations, nodeSelector and
** required node affinity share one), or TLY_NC_NONE when p must be evaluated
** node by node (matchFields, or a selector key the classes were not built for).
*/
uint32_t tly_nodeclasses_constraint(tly_nodeclasses *nc, const tly_pod *p);

/* tly_nodefit_static() of constraint c's pods on class cls; *taint (may be NULL) as there. */
tly_fit_result tly_nodeclasses_fit(tly_nodeclasses *nc, uint32_t c, uint32_t cls, const tly_taint **taint);

/* The nodes, ascending, of the classes where constraint c passes the static predicates. */
const uint32_t *tly_nodeclasses_candidates(tly_nodeclasses *nc, uint32_t c, uint32_t *n);
/* Those classes, ascending. */
const uint32_t *tly_nodeclasses_passing(tly_nodeclasses *nc, uint32_t c, uint32_t *n);
/*
** Per node, 1 when it is one of those candidates: what a scan in another
** order (the pod engine's bin-pack order) reads to skip the others.
*/
const uint8_t *tly_nodeclasses_node_ok(tly_nodeclasses *nc, uint32_t c);

#endif
