/*
** writes.h: the API writes the controllers make (src/ctrl/), each one call
** that says plainly whether the server took it.
*/
#ifndef TALLY_CTRL_WRITES_H
#define TALLY_CTRL_WRITES_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/kube.h"
#include "tally/objects.h"

/* What a write came to. */
typedef enum {
    TLY_WRITE_OK = 0,
    TLY_WRITE_CONFLICT,   /* 409, or 422 from a failed JSON patch test: the object changed */
    TLY_WRITE_GONE,       /* 404 */
    TLY_WRITE_FAILED      /* anything else (err says what) */
} tly_write_rc;

/* PATCH of an object path (with "/status" for the subresource) in the given content type. */
tly_write_rc tly_write_patch(tly_kube *k, const char *path, const char *ctype, const char *body,
                             char *err, size_t errlen);

/*
** Removes tally's gate from pod p and stamps the admitted annotation, with a
** JSON patch whose first operation tests that the gates are still exactly
** what p shows: another component's gate is never removed, and a stale pod
** is never acted on (the test fails: TLY_WRITE_CONFLICT).
*/
tly_write_rc tly_write_ungate(tly_kube *k, const tly_pod *p, const char *admitted_at, char *err,
                              size_t errlen);

/* Sets condition `type` on the pod's status (strategic merge: the other conditions stay). */
tly_write_rc tly_write_pod_condition(tly_kube *k, const tly_pod *p, const char *type,
                                     const char *status, const char *reason, const char *message,
                                     char *err, size_t errlen);

/*
** A core v1 Event about object (kind, ns, name, uid) from component tally.
** once NULL: kubectl's naming, the object's name and a unique suffix. Else
** the name is derived from (name, uid, once) alone, so the event can be
** created once only: a second attempt (a new leader finishing what a killed
** one began) is refused with 409 (TLY_WRITE_CONFLICT), and there is still
** exactly one.
*/
tly_write_rc tly_write_event(tly_kube *k, const char *kind, const char *api_version, const char *ns,
                             const char *name, const char *uid, const char *type, const char *reason,
                             const char *message, const char *instance, const char *once, char *err,
                             size_t errlen);

/*
** kruntimes' bind of a Pending Run to a Runtime Pod, as its scheduler writes
** it: status.phase Scheduled, assignedPod, assignedPodUID and condition
** Scheduled/Assigned, by a JSON patch whose first operation tests the Run's
** resourceVersion (optimistic concurrency: a Run that changed since the fork
** is TLY_WRITE_CONFLICT and decided again).
*/
tly_write_rc tly_write_run_bind(tly_kube *k, const tly_run *r, const char *pod, const char *pod_uid,
                                char *err, size_t errlen);

/*
** status.phase and status.message only, nothing else: what kruntimes'
** scheduler writes for a Run left Pending (what it waits for) and for one
** whose affinity it cannot compile (Failed, "pod selection failed: ...",
** no condition, no completionTime). Same resourceVersion test.
*/
tly_write_rc tly_write_run_status(tly_kube *k, const tly_run *r, const char *phase, const char *message,
                                  char *err, size_t errlen);

/*
** A terminal phase as kruntimes' runstatus.SetTerminal writes it (Failed
** with InvalidResources, Cancelled with Cancelled): phase, message,
** completionTime, and conditions Running and Completed, both False with the
** reason and message. Same resourceVersion test.
*/
tly_write_rc tly_write_run_terminal(tly_kube *k, const tly_run *r, const char *phase, const char *reason,
                                    const char *message, char *err, size_t errlen);

/*
** Writer threads for the writes that may go out while others are in flight:
** the follow-ups of a decision (a pod's condition and its event), which
** admit nothing, and a batch of ungate patches whose answers the caller
** reads after waiting (gatectl.c). A job's own writes go one after another, in the order it
** sends them; jobs run in any order relative to each other, on `threads`
** threads sharing the client (its pool of connections and its rate limit).
** At most `queued` jobs wait or run at once: a submit beyond that waits for
** one to finish, so what a job checks when it was submitted is at most that
** many jobs old when it runs. tly_write_pool_wait() returns once every job
** submitted so far has finished: a caller that waits before it decides
** again never has two writes to one object in flight. Without threads
** (NULL, or none could start) a job runs at once in the caller.
*/
typedef struct tly_write_pool tly_write_pool;
tly_write_pool *tly_write_pool_create(int threads, int queued);
/* Runs fn(arg) on a writer thread; fn frees what arg owns. */
void tly_write_pool_submit(tly_write_pool *p, void (*fn)(void *arg), void *arg);
void tly_write_pool_wait(tly_write_pool *p);
/* Waits for the jobs, then ends the threads. NULL is a no-op. */
void tly_write_pool_destroy(tly_write_pool *p);

/* RFC 3339 of now, UTC, seconds ("2026-12-01T20:10:25Z"). */
void tly_write_now(char buf[32]);

#endif
