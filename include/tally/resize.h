/*
** resize.h: admission of in-place pod resizes (pods/resize) against the
** queue hierarchy, as the KAI in-place resize design does it (seed
** kai-in-place-pod-resize.txt, kai-facts 4.2), with usage taken from tally's
** own ledger of the pods bound in the state, never from Queue.status.
**
** The increase is computed at pod level over regular containers and native
** sidecars: for cpu and memory, if the new spec sum differs from the old
** spec sum, delta = new spec sum - effective old request (the resize rule:
** a pod mid-downsize is still charged its larger size), kept only when
** positive. Moving cpu or memory between containers is no growth; downsizes
** are always admitted. Then, leaf to root (queues without spec.resources
** skipped), per queue: strict mode (blockUpsizeOnBoundedQueues) refuses any
** upsize on a finite limit, or for non-preemptible work a finite quota; the
** limit (every workload) against allocated; the quota (non-preemptible)
** against allocatedNonPreemptible. Strict comparison: equality is admitted.
*/
#ifndef TALLY_RESIZE_H
#define TALLY_RESIZE_H

#include <stdbool.h>

#include "tally/objects.h"
#include "tally/store.h"

typedef struct {
    bool allowed;
    char *message;      /* the rejection (malloc'd), or NULL */
    char *warning;      /* a warning to return (malloc'd), or NULL */
} tly_resize_verdict;

/*
** Decides a resize of `old` (the pod as it runs) to `neu` against state.
** The state's own copy of the pod, if any, is replaced by `old` in the ledger.
*/
void tly_resize_decide(tly_store *state, const tly_pod *neu, const tly_pod *old,
                       tly_resize_verdict *v);
void tly_resize_verdict_free(tly_resize_verdict *v);

#endif
