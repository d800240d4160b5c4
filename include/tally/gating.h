/*
** gating.h: queue-admission gating on pods (KAI's queue-admission-gating
** design, contract sections 3 and 9), the parts the webhook and the gating
** controller share.
**
** The gate is `kai.scheduler/queue-admission`. /mutate/pods adds it at pod
** CREATE to tally's pods whose queue is gated by the one predicate of
** queues.h (tly_queue_gated), or whose queue cannot be known yet (no queue
** label and no PodGroup annotation, a PodGroup that does not exist yet, a
** queue that does not exist). It computes no quota: that is the
** controller's, on a consistent state. Other gates are never touched.
** Removal stamps `kai.scheduler/queue-admitted-timestamp`, the anchor of the
** Reserved bucket's expiry (--reservation-timeout).
*/
#ifndef TALLY_GATING_H
#define TALLY_GATING_H

#include <stdbool.h>
#include <stddef.h>

#include "tally/admit.h"
#include "tally/objects.h"
#include "tally/store.h"

#define TLY_GATE "kai.scheduler/queue-admission"
#define TLY_ADMITTED_ANNOTATION "kai.scheduler/queue-admitted-timestamp"

/* Whether p carries gate `name`; whether it carries any gate that is not tally's. */
bool tly_pod_has_gate(const tly_pod *p, const char *name);
bool tly_pod_has_foreign_gate(const tly_pod *p);

/*
** Whether a new pod gets tally's gate (the /mutate/pods rule above). Pods
** that are not tally's never do.
*/
bool tly_gate_on_create(const tly_store *s, const tly_pod *p);

/*
** Decides a pod CREATE AdmissionReview for /mutate/pods against state:
** always allowed; when the gate is to be added, res->patch holds the JSON
** patch (the response carries it base64-encoded with patchType JSONPatch).
** TLY_EINVAL with err set when the body is not a readable review.
*/
int tly_mutate_review(const tly_store *state, const char *body, size_t len, tly_admit_result *res,
                      char *err, size_t errlen);

#endif
