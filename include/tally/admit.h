/*
** admit.h: admission decisions on Kubernetes AdmissionReviews, shared by
** `tally admit` (one review on stdin) and `tally serve` (the webhook).
**
** A decision is made against a finished, read-only state store (the cluster
** as tally knows it) and never changes it, so many requests can be decided
** at once against one store, and dry-run reviews need no special path.
**
** Handled (contract section 5):
**  - CREATE and UPDATE of Queue, AccountedResource and Run: the validator's
**    per-object rules; the schema and x-kubernetes-validations rules of the
**    object's CustomResourceDefinition when the state holds it (crd.h: a
**    violation denies with the API server's field path and message, a rule
**    tally cannot evaluate is a warning); the cross-object ones with the whole state in
**    view: a Queue may not reference an AccountedResource or parent that is
**    not in the state; a Run's request values must be non-negative integers
**    and its spec.resources (and spec.runtime, spec.mode) cannot change on
**    UPDATE (kruntimes' CEL rule).
** Any other request is allowed with a warning that tally does not decide it.
*/
#ifndef TALLY_ADMIT_H
#define TALLY_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "tally/resize.h"
#include "tally/store.h"

typedef struct {
    char *uid;          /* request.uid, echoed */
    bool allowed;
    char *message;      /* why it was denied (NULL when allowed) */
    char **warnings;
    size_t nwarnings;
    bool dry_run;
    char *kind;         /* request.kind.kind, for logs (may be NULL) */
    char *operation;    /* request.operation, for logs (may be NULL) */
    char *patch;        /* a mutation: the JSON patch to return (patchType JSONPatch), or NULL */
} tly_admit_result;

/*
** Decides the AdmissionReview in body[0..len) against state. Returns TLY_OK
** with *res filled, or TLY_EINVAL when the body is not a readable
** admission.k8s.io/v1 AdmissionReview with a request and a uid (err says
** why). Free the result with tly_admit_result_free().
*/
int tly_admit_review(const tly_store *state, const char *body, size_t len, tly_admit_result *res,
                     char *err, size_t errlen);
/*
** The same with a ledger of admitted upsizes consulted around a pods/resize
** decision (resize.h, upsize.h; `tally serve --reserve-upsizes`). ledger may
** be NULL, which is tly_admit_review().
*/
int tly_admit_review_ledger(const tly_store *state, const tly_resize_ledger *ledger,
                            const char *body, size_t len, tly_admit_result *res, char *err,
                            size_t errlen);
/*
** What a decision works in besides the state and the body: the review's
** parse, the decoded pods of a resize, their resource names and problems.
** A caller that decides many reviews (a webhook worker) keeps one and
** passes it to every decision, which then allocates almost nothing; it is
** reset after each, keeping only its memory. One thread at a time.
*/
typedef struct tly_admit_scratch tly_admit_scratch;
tly_admit_scratch *tly_admit_scratch_create(void);
void tly_admit_scratch_destroy(tly_admit_scratch *sc);
/* tly_admit_review_ledger() in sc; the answer is the same, byte for byte. */
int tly_admit_review_scratch(const tly_store *state, const tly_resize_ledger *ledger, tly_admit_scratch *sc,
                             const char *body, size_t len, tly_admit_result *res, char *err, size_t errlen);

void tly_admit_result_free(tly_admit_result *res);

/* Writes the AdmissionReview response for res (pretty when asked). */
void tly_admit_write_response(FILE *out, const tly_admit_result *res, bool pretty);
/*
** The compact response (tly_admit_write_response(out, res, false), byte for
** byte, newline included) into buf, as snprintf does: returns its length,
** and it is complete and NUL-terminated when that is below cap. No stream,
** no allocation (the webhook answers every review through it).
*/
size_t tly_admit_format_response(const tly_admit_result *res, char *buf, size_t cap);

#endif
