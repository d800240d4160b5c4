/*
** live.h: the live state: the cluster as the watches report it, object by
** object, and the ledger that follows it (src/live/; docs/live.md).
**
**   watch events -> tly_live_apply() -> objects (one persistent map per
**   kind) + indexes + the ledger (what each queue's pods charge)
**                                   |
**                         tly_live_fork() -> a tly_store that every engine
**                         and webhook reads, frozen at that moment
**
** Writers (a reflector thread per kind) apply events one at a time: each
** decodes its object first, then holds the writer lock for that one event
** (microseconds); taking a fork holds the same lock for a few pointer
** copies, so a reader never waits behind a burst and a writer is never held
** up by a reader for longer than that. A fork copies nothing
** per object: the maps are persistent (ptree.h) and the old versions a fork
** can still see are freed only after it is released (epoch.h).
**
** The ledger keeps, per queue name, the sums of what its bound pods charge
** (podcharge.h: cpu, memory and GPUs, every allocated resource, the
** AccountedResources, each also for the non-preemptible pods alone). An event
** changes the sums by the difference between the pod's old and new charge;
** a change to something charges depend on (the pod's node, its PodGroup,
** the PriorityClasses, the AccountedResources, the Config) charges the
** pods it concerns again. Nothing is ever recomputed from scratch, and
** tly_live_check() proves that it never needs to be.
*/
#ifndef TALLY_LIVE_H
#define TALLY_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/node.h"
#include "tally/objects.h"
#include "tally/queues.h"
#include "tally/store.h"

typedef struct tly_live tly_live;

typedef struct {
    const char *scheduler_name;   /* --scheduler-name, or NULL (the Config's, else kai-scheduler) */
    int gating_mode;              /* --queue-admission-gating (tly_gating_mode), or 0 */
} tly_live_options;

tly_live *tly_live_create(const tly_live_options *o);
/* No fork may be alive. */
void tly_live_destroy(tly_live *l);

typedef enum { TLY_LIVE_UPSERT = 0, TLY_LIVE_DELETE = 1 } tly_live_op;

/*
** A writer (any thread; writers are serialized by the writer lock, and the
** object is decoded before the lock is taken): applies one object as the
** API server sent it
** (ADDED and MODIFIED are an upsert, DELETED a delete: only the kind,
** namespace and name of its tree are used then). `name` is what a
** diagnostic calls it (its API path). An object that does not decode is
** kept out and counted; one that decodes with problems is kept, as the
** loader keeps it. Returns TLY_OK, or TLY_EINVAL for a tree that is not an
** object of a kind tally reads.
*/
int tly_live_apply(tly_live *l, tly_live_op op, const tly_node *obj, const char *name);

/*
** A writer, after a LIST or a BOOKMARK of the kind: the state now holds
** everything of that kind up to resourceVersion rv (tly_store_seen_rv).
** Events note their own objects' resourceVersions as they are applied.
*/
void tly_live_note_rv(tly_live *l, int kind, const char *rv);

/*
** A relist of one kind (after a 410, or a watch that could not resume):
** every object the new LIST holds is applied and kept; the ones it does not
** hold vanished while the watch was down and are deleted. Writer only.
*/
typedef struct tly_live_sweep tly_live_sweep;
tly_live_sweep *tly_live_sweep_begin(tly_live *l, int kind);
void tly_live_sweep_keep(tly_live_sweep *sw, const char *ns, const char *name);
/* Deletes what was not kept; returns how many. Frees sw. */
uint32_t tly_live_sweep_end(tly_live *l, tly_live_sweep *sw);
/* Forgets a sweep without deleting anything (the LIST failed or restarted). */
void tly_live_sweep_abort(tly_live_sweep *sw);

/*
** Any thread: the state as of now, as a finished read-only store (store.h).
** tly_store_destroy() releases it. Its resize ledger comes from the live
** ledger (no pass over the pods).
*/
tly_store *tly_live_fork(tly_live *l);

/*
** Replaces the CustomResourceDefinitions that forks taken from now on check
** reviewed objects against (admit.h; crd.h). Takes set (NULL: none); the
** old set is freed once the last fork that holds it is gone. Any thread.
*/
struct tly_crdset;
void tly_live_set_crds(tly_live *l, struct tly_crdset *set);

/*
** The live ledger of a fork as queue sums: a tly_queues over the fork's
** queues and AccountedResources with every ledger row charged to its queue
** and the queue's ancestors (allocated, allocatedNonPreemptible,
** accounted). NULL for a store that is not a fork. Free with
** tly_queues_destroy(). Costs the queues and rows, not the pods.
*/
tly_queues *tly_live_queues(tly_store *fork);

/*
** The fork's pods with no node that are not terminal, in (namespace, name)
** order, into a malloc'd array (the caller frees it; the pods are the
** fork's). Costs the pending pods, not all pods: what the gating controller
** reads every cycle.
*/
uint32_t tly_live_pending(tly_store *fork, tly_pod ***out);
/* The fork's Runs whose status.assignedPod is `pod` in ns (any phase), in name order. */
uint32_t tly_live_runs_on_pod(tly_store *fork, const char *ns, const char *pod, tly_run ***out);
/* The fork's pods whose pod-group-name annotation is `podgroup` in ns (the same ownership). */
uint32_t tly_live_group_pods(tly_store *fork, const char *ns, const char *podgroup, tly_pod ***out);

/*
** Change notification: a version that grows with every applied change, and
** a wait until it differs from `seen` (or timeout_ms passes); returns the
** version then.
*/
uint64_t tly_live_version(tly_live *l);
uint64_t tly_live_wait(tly_live *l, uint64_t seen, long timeout_ms);

/* Objects of a kind now; events applied so far (any thread; for metrics). */
uint32_t tly_live_count(const tly_live *l, int kind);
uint64_t tly_live_applied(const tly_live *l);
/* Objects the decoders refused (kept out of the state). */
uint64_t tly_live_rejected(const tly_live *l);
/*
** How long the writer lock was held, at a quantile (0.5, 0.99, 1.0 for the
** longest) of every event and sweep (fork false) or of every fork (true):
** the upper bound of a power-of-two bucket, in ns; 0 when none yet.
*/
uint64_t tly_live_hold_ns(const tly_live *l, bool fork, double quantile);

/*
** Writer side, for tests: recomputes the ledger from scratch and compares
** it with the incremental one; 0 when equal, else the number of queues that
** differ (a description of the first in why).
*/
int tly_live_check(tly_live *l, char *why, size_t whylen);

/*
** A deliberately wrong delta, kept as a test switch so the property test can
** show it catches one: TLY_LIVE_FAULT_STALE_CHARGE leaves a pod's old charge
** in place when its node changes.
*/
enum { TLY_LIVE_FAULT_NONE = 0, TLY_LIVE_FAULT_STALE_CHARGE = 1 };
void tly_live_set_fault(tly_live *l, int fault);

#endif
