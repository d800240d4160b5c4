/*
** runsched.h: the kruntimes Run scheduler and the Runtime Pods' runtimed
** admission, as one engine over a state store.
**
** The scheduler places each Pending Run on a Runtime Pod of its runtime in
** its namespace: prefilter (a cancel request ends the Run Cancelled; the
** request must be valid and the affinity must compile, or the Run ends
** Failed, as kruntimes ends it), filter (the Pod is
** available, every requested resource fits: usage + request <= capacity,
** and required Run affinity holds), score (least loaded: the smallest
** highest utilisation ratio, then the smallest sum of ratios, compared
** exactly; plus preferred Run affinity as kruntimes adds it), reserve
** (assume the request on the Pod) and bind (the Run becomes Scheduled).
** Then each Runtime Pod's runtimed admits its Scheduled Runs with one atomic
** check of the whole request against the Pod's capacity (runtimed.h); a
** Scheduled Run with a cancel request is ended Cancelled instead, before
** that check, and its usage released.
**
** Wake-ups are events: a Run that fits nowhere waits on its (namespace,
** runtime) group and is put back on the work queue only when a Runtime Pod
** of that group changes capacity or availability, or a Run on one of its
** Pods releases usage. A Run that runtimed cannot admit waits on that Pod's
** runtimed and is re-checked only when a local Run ends or the capacity
** changes. Nothing polls.
**
** Assumed assignments (reserved, not yet bound) count in the Pod's usage
** until the bind succeeds (they become the Run's own usage), the bind fails,
** or the Run leaves Pending; there is no per-namespace clean-up that could
** drop another namespace's assumptions.
*/
#ifndef TALLY_RUNSCHED_H
#define TALLY_RUNSCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tally/kruntimes.h"
#include "tally/store.h"

typedef struct tly_runsched tly_runsched;

/* Bounded reasons (contract section 3). */
#define TLY_REASON_INSUFFICIENT_CAPACITY "InsufficientCapacity"
#define TLY_REASON_PODS_UNAVAILABLE "RuntimePodsUnavailable"
#define TLY_REASON_UNSATISFIED_AFFINITY "UnsatisfiedRunAffinity"
#define TLY_REASON_UNSATISFIED_ANTI_AFFINITY "UnsatisfiedRunAntiAffinity"
#define TLY_REASON_INSUFFICIENT_LOCAL "InsufficientLocalCapacity"
#define TLY_REASON_INVALID_RESOURCES "InvalidResources"
/* A cancel request (spec.cancelRequested): kruntimes' reason and message. */
#define TLY_REASON_CANCELLED "Cancelled"
#define TLY_MESSAGE_CANCELLED "cancelled by user"

/* One Run's outcome. */
typedef struct {
    const tly_run *run;
    tly_run_phase phase;
    int32_t pod;             /* index of its Runtime Pod, or -1 */
    const char *assigned;    /* the assigned Pod's name (may name a Pod not in the input) */
    const char *reason;      /* NULL or one of TLY_REASON_* */
    const char *message;     /* NULL or a sentence for a person */
    bool placed;             /* bound by this engine (not in the input already) */
    bool admitted;           /* admitted by runtimed in this engine */
} tly_rs_run_result;

/* One Runtime Pod's accounting. */
typedef struct {
    const tly_pod *pod;
    const char *runtime;
    tly_rpod_state state;
    const tly_rlist *capacity;   /* effective capacity (runs default included) */
    const tly_rvec *used;        /* scheduler's accounting: active + assumed Runs */
    tly_rvec admitted;           /* runtimed's reservations (a snapshot, owned) */
} tly_rs_pod_result;

/*
** Builds the engine over a finished store. `now` is the clock (Unix
** seconds); have_clock false means heartbeats count as fresh. Capacity
** annotation problems become warnings in d (may be NULL).
*/
tly_runsched *tly_runsched_create(tly_store *s, int64_t now, bool have_clock, tly_diags *d);
void tly_runsched_destroy(tly_runsched *rs);

/*
** The load-class index (on by default) files interchangeable Pods together
** so a Run is scored once per class, not once per Pod. Off, every Pod is
** scored on its own with the general exact sums: the reference that the
** property tests and the benchmark compare the index against. Decisions are
** the same either way. Call before the first tly_runsched_run().
*/
void tly_runsched_set_indexed(tly_runsched *rs, bool on);

/*
** Runs the work queue until nothing more can happen: every queued Pending
** Run is scheduled or left waiting, then every Runtime Pod's runtimed admits
** what fits. The first call queues every Pending Run in (creationTimestamp,
** namespace, name) order.
*/
void tly_runsched_run(tly_runsched *rs);

/* Steps of one scheduling cycle, for callers that drive binds themselves. */
/* Finds a Pod for Run i and assumes it there; returns the Pod index or -1. */
int32_t tly_runsched_reserve(tly_runsched *rs, uint32_t i);
/* The bind of Run i succeeded: it is Scheduled on its Pod. */
void tly_runsched_bind(tly_runsched *rs, uint32_t i);
/* The bind of Run i failed: the assumption is released and waiters woken. */
void tly_runsched_bind_failed(tly_runsched *rs, uint32_t i);

/*
** Events. A Run ended (phase Succeeded, Failed, ...): its usage is released
** on the scheduler's ledger and in its Pod's runtimed, and the Runs waiting
** for that capacity are queued. Call tly_runsched_run() to process them.
*/
void tly_runsched_finish(tly_runsched *rs, uint32_t i, tly_run_phase terminal);
/* A Runtime Pod's capacity changed. */
void tly_runsched_set_capacity(tly_runsched *rs, uint32_t pod, const tly_rlist *capacity);

/* Results, Runs in (namespace, name) order and Pods in (namespace, name) order. */
uint32_t tly_runsched_nruns(const tly_runsched *rs);
const tly_rs_run_result *tly_runsched_run_at(const tly_runsched *rs, uint32_t i);
uint32_t tly_runsched_npods(const tly_runsched *rs);
const tly_rs_pod_result *tly_runsched_pod_at(tly_runsched *rs, uint32_t i);
/* Index of a Run by namespace and name, or -1. */
int32_t tly_runsched_find_run(const tly_runsched *rs, const char *ns, const char *name);
int32_t tly_runsched_find_pod(const tly_runsched *rs, const char *ns, const char *name);
/*
** For people (tally explain, the HTML report): every Runtime Pod of Run i's
** runtime with capacity, usage, the projected utilisation ratios for the
** Run's request and the score order, or why each Pod was filtered.
*/
void tly_runsched_explain(tly_runsched *rs, uint32_t i, FILE *out);

/* How many scheduling cycles ran (for tests of the wake-up rule). */
uint64_t tly_runsched_cycles(const tly_runsched *rs);

#endif
