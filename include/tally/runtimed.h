/*
** runtimed.h: runtimed's Pod-local admission cache (kruntimes seed,
** "Runtime Admission", implementation step 5, which upstream never built).
**
** One tly_runtimed per Runtime Pod. It holds the Pod's annotated capacity,
** the reservations of the Runs that Pod executes (keyed by a Run key such as
** "namespace/name" or the Run UID; the cache does not interpret it) and their
** sum, the Pod's usage. Before claiming a Scheduled Run, runtimed calls
** tly_runtimed_reserve(): one atomic check-and-reserve under the cache's
** mutex, so two Runs assigned at once by a stale scheduler can never both be
** admitted into room that only one of them fits. Every function is
** thread-safe; the handle is opaque.
**
** Admission rule: a request fits when, for every resource with a positive
** quantity, usage + request <= capacity. A resource the Pod does not
** advertise has capacity zero, so a Run asking for it never fits. Zero
** entries are ignored (and not recorded); negative entries are rejected with
** TLY_EINVAL, since a negative reservation would lower usage and let other
** Runs overcommit.
**
** Waiters as events, not polling. Upstream requeues a capacity-blocked Run
** every second. Here a Run that does not fit is put on the cache's wait list
** (tly_runtimed_reserve_or_wait() does the check and the enlisting in one
** critical section). Room can appear only through two calls: a release (a
** local Run reached a terminal state, was deleted or is NotFound) and a
** capacity change (the Pod's annotations changed). The caller of either
** checks tly_runtimed_has_waiters() and, if true, takes the waiters with
** tly_runtimed_take_waiters() and retries each with reserve_or_wait(); those
** that still do not fit go back on the list. Nothing wakes on a timer.
**
** Why reserve_or_wait() rather than reserve() then wait(): between a failed
** reserve() and a later wait(), another thread may release, find the wait
** list empty and return, leaving the Run waiting for an event that already
** happened (a lost wake-up). Doing both under one lock closes that window:
** a release either precedes the check (and its room was seen) or follows the
** enlisting (and sees the waiter).
*/
#ifndef TALLY_RUNTIMED_H
#define TALLY_RUNTIMED_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/arena.h"
#include "tally/resource.h"

/*
** The positive "does not fit" outcome of tly_runtimed_reserve(): not an
** error (the Run stays Scheduled), so it is distinct from the negative
** TLY_E* codes.
*/
#define TLY_RUNTIMED_NO_FIT 1

typedef struct tly_runtimed tly_runtimed;

/* A cache for a Pod with this capacity (copied; may be NULL for none). */
tly_runtimed *tly_runtimed_create(const tly_rlist *capacity);
/* Frees the cache, its reservations and its wait list. */
void tly_runtimed_destroy(tly_runtimed *rd);

/*
** Atomic check-and-reserve. If run_key already holds a reservation: TLY_OK,
** nothing changes (upstream's "already active"; the request is not compared).
** Else if every positive entry of request fits: records a copy of key and
** request, adds it to usage, drops run_key from the wait list, TLY_OK.
** Else TLY_RUNTIMED_NO_FIT, *bad_id (may be NULL) = the lowest id that does
** not fit, nothing changes. TLY_EINVAL for a NULL key or request or a
** negative entry.
*/
int tly_runtimed_reserve(tly_runtimed *rd, const char *run_key,
                         const tly_rlist *request, uint32_t *bad_id);

/* Same, and on TLY_RUNTIMED_NO_FIT also adds run_key to the wait list. */
int tly_runtimed_reserve_or_wait(tly_runtimed *rd, const char *run_key,
                                 const tly_rlist *request, uint32_t *bad_id);

/*
** Records a reservation without the capacity check: for the Runs runtimed
** re-adopts when it starts (they already run, so they count even if they
** now exceed capacity). Idempotent like reserve (a held key is left as is).
** TLY_OK; TLY_EINVAL as for reserve; TLY_ERANGE if usage would overflow.
*/
int tly_runtimed_force(tly_runtimed *rd, const char *run_key,
                       const tly_rlist *request);

/*
** Removes run_key's reservation and subtracts exactly what was added.
** Returns whether one existed (a second release of the same key is a no-op
** that returns false, so nothing is ever subtracted twice). If it returns
** true, the caller should recheck the waiters (tly_runtimed_has_waiters()).
*/
bool tly_runtimed_release(tly_runtimed *rd, const char *run_key);

/*
** Replaces the capacity (copied). Existing reservations stay even if they no
** longer fit; only later reserve() calls see the new capacity. The caller
** should then recheck the waiters.
*/
void tly_runtimed_set_capacity(tly_runtimed *rd, const tly_rlist *capacity);

bool tly_runtimed_holds(const tly_runtimed *rd, const char *run_key);
/* The number of reservations held. */
uint32_t tly_runtimed_count(const tly_runtimed *rd);
/*
** A consistent snapshot of usage (the sum of all reservations), copied into
** out under the lock. out must have been tly_rvec_init()ed; its old contents
** are replaced; the caller frees it with tly_rvec_free().
*/
void tly_runtimed_usage(const tly_runtimed *rd, tly_rvec *out);
/* A copy of the capacity, its entries allocated from arena a. */
void tly_runtimed_capacity(const tly_runtimed *rd, tly_rlist *out, tly_arena *a);

/* Adds run_key to the wait list (no duplicates; ignored if already held). */
void tly_runtimed_wait(tly_runtimed *rd, const char *run_key);
/* Whether any Run is waiting. */
bool tly_runtimed_has_waiters(const tly_runtimed *rd);
/*
** Moves the waiting keys, oldest first, into a new array *keys_out (NULL
** when there are none) and empties the list. Returns their number. Free
** with tly_runtimed_free_keys().
*/
uint32_t tly_runtimed_take_waiters(tly_runtimed *rd, char ***keys_out);
void tly_runtimed_free_keys(char **keys, uint32_t n);

#endif
