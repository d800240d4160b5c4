/*
** podsched.h: the pod placement engine under queue policy (KAI's
** allocate action, as tally runs it over a snapshot).
**
** tally places the pods whose schedulerName is its own, one workload at a
** time: a PodGroup's pending pods together (all of its minMember or none),
** any other pod alone; workloads in order of queue priority, then
** PodGroup/pod priority (higher first), creation time, namespace, name.
**
** For each workload: the queue must be usable (exists, a leaf, every
** AccountedResource its path references exists); the whole workload must fit
** its queues' spec.resources (the job-level check, as KAI does); then each
** pod goes to a node that passes the static predicates (nodefit.h), has room
** for every requested resource (GPU devices included, with KAI's fractional
** packing), and on which the pod's charges (its GPUs on that node, every
** AccountedResource that matches there) fit the queue and every ancestor.
** Among those nodes the engine bin-packs: the fewest free GPU hundredths
** left, then the least free CPU left, then the node name.
**
** A workload held by queue policy is Gated (never a node-fit failure, so an
** autoscaler does not add nodes for it) unless queue-admission gating is off,
** where it is Unschedulable with the same reason. One that passed the queue
** checks but fits no node is Unschedulable, and with gating on its request is
** Reserved in its queues for every later workload of the run.
*/
#ifndef TALLY_PODSCHED_H
#define TALLY_PODSCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tally/podreq.h"
#include "tally/queues.h"
#include "tally/store.h"

typedef struct tly_podsched tly_podsched;

typedef struct {
    const tly_pod *pod;
    const char *queue;       /* the pod's queue name */
    const char *state;       /* Running, Bound, Gated, Unschedulable, Invalid, Succeeded, Failed */
    const char *node;        /* NULL when not on a node */
    const char *reason;
    const char *message;
    /* Its non-zero AccountedResource charges, ascending by tly_queues_accres index. */
    const tly_acc_charge *charges;
    uint32_t ncharges;
} tly_ps_result;

tly_podsched *tly_podsched_create(tly_store *s);
void tly_podsched_destroy(tly_podsched *ps);
/* Places what can be placed. */
void tly_podsched_run(tly_podsched *ps);

/*
** For benchmarks: fn(ctx, pods, n, done) is called before (done false) and
** after (done true) each workload is decided, with the indices of its
** pending pods (tly_podsched_pod order). NULL turns it off.
*/
typedef void (*tly_ps_unit_hook)(void *ctx, const uint32_t *pods, uint32_t n, bool done);
void tly_podsched_set_unit_hook(tly_podsched *ps, tly_ps_unit_hook fn, void *ctx);
/* For benchmarks: the DRA search counts of the run so far (tly_dra_search_stats). */
void tly_podsched_dra_stats(const tly_podsched *ps, uint64_t *max, uint64_t *total, uint64_t *tries);

/* tally's pods, in (namespace, name) order. */
uint32_t tly_podsched_npods(const tly_podsched *ps);
const tly_ps_result *tly_podsched_pod(const tly_podsched *ps, uint32_t i);
/* The queues with the run's usage. */
tly_queues *tly_podsched_queues(tly_podsched *ps);
/* Index of one of tally's pods by namespace and name, or -1. */
int32_t tly_podsched_find(const tly_podsched *ps, const char *ns, const char *name);

/*
** For people (tally explain, the HTML report), after tly_podsched_run():
** why pod i is where it is: its queue path with each queue's usage and
** effective limits for what the pod is charged; for a pod not placed, why
** each node refuses it now (grouped by reason) and what would have to change.
*/
void tly_podsched_explain(tly_podsched *ps, uint32_t i, FILE *out);
/* A queue's subtree, usage against every limit, and which pods charge it. */
void tly_podsched_explain_queue(tly_podsched *ps, uint32_t q, FILE *out);

#endif
