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
** are always admitted, and so is any resize of a pod that is not bound yet
** (no nodeName: it holds nothing, so it pushes no queue). Then, leaf to
** root (queues without spec.resources skipped), per queue: strict mode
** (blockUpsizeOnBoundedQueues) refuses any upsize on a finite limit, or
** for non-preemptible work a finite quota; the
** limit (every workload) against allocated; the quota (non-preemptible)
** against allocatedNonPreemptible. Strict comparison: equality is admitted.
*/
#ifndef TALLY_RESIZE_H
#define TALLY_RESIZE_H

#include <stdbool.h>

#include "tally/objects.h"
#include "tally/queues.h"
#include "tally/store.h"

typedef struct {
    bool allowed;
    char *message;      /* the rejection (malloc'd), or NULL */
    char *warning;      /* a warning to return (malloc'd), or NULL */
    /*
    ** What the resize is, for a ledger of admitted upsizes (upsize.h). Pod-level
    ** sums over regular containers and native sidecars, [0] cpu, [1] memory.
    */
    bool sized;            /* size, spec and base are set (false: containers differ) */
    tly_qty size[2];       /* the new spec sums */
    tly_qty spec[2];       /* the old spec sums */
    tly_qty base[2];       /* the old effective request, what the ledger charges the pod */
    char *queue;           /* leaf queue the increase was checked on (malloc'd), or NULL when
                              no queue check ran (downsize, validateQuota false, missing queue) */
    bool non_preemptible;
    bool in_state;         /* set by the caller before a ledger's end(): the state holds this pod
                              (same namespace, name and uid); only such a pod's upsize is reserved */
} tly_resize_verdict;

/*
** An increase the state does not show yet (an upsize admitted but not yet
** enacted, `tally serve --reserve-upsizes`): cpu in cores and memory in bytes
** charged to leaf `queue` and its ancestors before the limits are checked.
*/
typedef struct {
    const char *queue;
    tly_qty inc[2];
    bool non_preemptible;
} tly_resize_extra;

/*
** A ledger of admitted increases consulted around one decision. begin() is
** called with the reviewed pod before the decision and returns the increases
** to add (none for that pod itself: its oldObject already carries them); it
** may take a lock that end() releases, so decide-and-record is atomic.
** *state is the state the caller would decide against; begin() may point
** it at another, the state its increases were last reconciled against
** (valid until end()), so that the increases and the state the decision
** reads are one consistent pair: a state swapped in, and the increases it
** settles dropped, between the caller taking its state and begin() would
** otherwise leave those increases counted by neither. end() sees the
** verdict and whether the review was a dry run.
*/
typedef struct {
    void *ctx;
    const tly_resize_extra *(*begin)(void *ctx, const tly_pod *old, tly_store **state, size_t *n);
    void (*end)(void *ctx, const tly_pod *old, const tly_resize_verdict *v, bool dry_run);
} tly_resize_ledger;

/*
** Decides a resize of `old` (the pod as it runs) to `neu` against state.
** The state's own copy of the pod, if any, is replaced by `old` in the ledger.
** names is the table both pods' resource ids come from (one for the two).
*/
void tly_resize_decide(tly_store *state, const tly_names *names, const tly_pod *neu,
                       const tly_pod *old, tly_resize_verdict *v);
/* The same with extra increases charged first (extra may be NULL when n is 0). */
void tly_resize_decide_extra(tly_store *state, const tly_names *names, const tly_pod *neu,
                             const tly_pod *old, const tly_resize_extra *extra, size_t n,
                             tly_resize_verdict *v);
/*
** The same with the decision's temporaries in the caller's arena a (the
** webhook's per-worker scratch), which it leaves allocated, not reset.
*/
void tly_resize_decide_in(tly_store *state, const tly_names *names, const tly_pod *neu, const tly_pod *old,
                          const tly_resize_extra *extra, size_t n, tly_arena *a, tly_resize_verdict *v);
void tly_resize_verdict_free(tly_resize_verdict *v);
/*
** The ledger every decision against s starts from, made from s's pods: its
** queues with every bound, running tally pod's cpu and memory charged. Free
** with tly_queues_destroy(). Decisions get it once per state through
** tly_store_derived(); a live fork gets it from the live ledger instead.
*/
tly_queues *tly_resize_ledger_build(tly_store *s);

/* A pod's spec sums and effective request (the resize rule), [0] cpu, [1] memory. */
void tly_resize_pod_size(const tly_pod *p, tly_qty spec[2], tly_qty eff[2]);

#endif
