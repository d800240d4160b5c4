/*
** upsize.h: the ledger of admitted, not yet enacted pod upsizes, the
** race-free resize mode of `tally serve --reserve-upsizes[=TIMEOUT]` (contract
** section 7, the resize issue's "closing the race").
**
** KAI decides a resize against Queue.status.allocated, which trails the
** scheduler: two upsizes admitted a moment apart both see the same room and
** together overrun a limit. tally decides against its own state instead, but
** that state also trails the cluster (a file re-read on SIGHUP, later a
** watch): an admitted upsize shows up in it only once the API server has
** stored the new spec and tally has re-read it. This ledger closes the gap:
** every admitted upsize reserves its increase here at once, and every later
** decision adds the reservations of the other pods to the queue usage it
** computes from the state. Deciding and reserving happen under one lock, so
** N concurrent upsizes against a queue with room for K admit exactly K.
**
** A reservation, per pod (namespace/name, uid), holds the pod's old spec
** sums, its old effective request (what the state charged it when the first
** upsize was admitted) and the newest admitted size; what it adds is
** max(0, size - base) per resource (cpu, memory), charged to the pod's leaf
** queue and its ancestors. A later admitted resize of the same pod updates
** the size (a resize back to the old size leaves nothing, and the
** reservation goes). Dry-run reviews never reserve.
**
** It is dropped when a newer state (tly_upsize_reconcile, after every swap;
** for a live state only one that has seen the pod after the admission, by
** resourceVersion: store.h tly_store_seen_rv) shows the pod's effective request covering the reserved size (enacted: the
** pod's own charge now carries it), the spec back at the old size (reverted,
** or the resize never landed), the resize marked Infeasible, or the pod gone
** (absent, another uid, terminal); or when TIMEOUT has passed since the last
** admitted upsize of the pod.
**
** Thread-safe: one mutex guards the ledger; tly_upsize_ledger()'s begin()
** takes it and end() releases it, so a decision and its reservation are one
** step for every other thread.
*/
#ifndef TALLY_UPSIZE_H
#define TALLY_UPSIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/node.h"
#include "tally/resize.h"
#include "tally/store.h"

typedef struct tly_upsize tly_upsize;

/* A clock in milliseconds; NULL in tly_upsize_create() means CLOCK_MONOTONIC. */
typedef int64_t (*tly_upsize_clock)(void *ctx);

/* timeout_ms > 0: how long a reservation is held when no state shows its outcome. */
tly_upsize *tly_upsize_create(int64_t timeout_ms, tly_upsize_clock clock, void *clock_ctx);
void tly_upsize_destroy(tly_upsize *u);

/* The hooks to pass to tly_admit_review_ledger(); valid as long as u. */
const tly_resize_ledger *tly_upsize_ledger(tly_upsize *u);

/* Why reservations were dropped by one reconcile or expire call. */
typedef struct {
    size_t enacted, reverted, infeasible, gone, expired;
} tly_upsize_released;

/* Drops the reservations that `state` (a newer state) shows settled, and the expired ones. */
void tly_upsize_reconcile(tly_upsize *u, const tly_store *state, tly_upsize_released *out);
/*
** The same, and from now on every decision through the hooks decides on
** `state` (begin() hands it over, resize.h), in one step under the lock: a
** decision sees the reservations and the state they were reconciled
** against as one pair, whichever state its caller took before a swap. The
** caller keeps `state` alive until the next swap or tly_upsize_destroy();
** once tly_upsize_swap() returns, no decision reads the previous one.
** For a state that replaces the served one (`tally serve --state`, SIGHUP).
*/
void tly_upsize_swap(tly_upsize *u, tly_store *state, tly_upsize_released *out);
/* Drops the expired reservations; returns how many. */
size_t tly_upsize_expire(tly_upsize *u);

/* Number of reservations held. */
size_t tly_upsize_count(tly_upsize *u);
/* The increase reserved for pod ns/name ([0] cpu cores, [1] memory bytes); false if none. */
bool tly_upsize_get(tly_upsize *u, const char *ns, const char *name, tly_qty inc[2]);

/*
** The shared form, for reservations kept where every replica sees them
** (src/ctrl/resv.c): each reservation as one compact JSON object (namespace,
** name, uid, queue, nonPreemptible, spec, base, size as [cpu, memory]
** quantities, since in the ledger's clock's milliseconds, rv), and back.
** Replicas that share reservations use a wall clock (tly_upsize_wall_ms).
*/
typedef void (*tly_upsize_each_fn)(void *ctx, const char *ns, const char *name, const char *value);
void tly_upsize_each(tly_upsize *u, tly_upsize_each_fn fn, void *ctx);
/* Adds one encoded reservation (its parsed tree); TLY_EINVAL (err says why) for a malformed one or a second for a pod. */
int tly_upsize_decode(tly_upsize *u, const tly_node *value, char *err, size_t errlen);
/* CLOCK_REALTIME in milliseconds (ctx unused): a clock replicas share. */
int64_t tly_upsize_wall_ms(void *ctx);

#endif
