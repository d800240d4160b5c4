/*
** runctl.h: the Run scheduler on the live state (runctl.c) and claim
** admission for runtimed (claims.c), the `runs` controller.
*/
#ifndef TALLY_CTRL_RUNCTL_H
#define TALLY_CTRL_RUNCTL_H

#include <stdbool.h>
#include <stdio.h>

#include "gatectl.h"
#include "tally/admit.h"
#include "tally/kube.h"
#include "tally/store.h"

typedef struct tly_runctl tly_runctl;

tly_runctl *tly_runctl_create(tly_kube *k, tly_ctrl_log_fn log, void *log_ctx);
void tly_runctl_destroy(tly_runctl *r);
/* One cycle (see runctl.c); true when another should follow soon. */
bool tly_runctl_cycle(tly_runctl *r, tly_store *fork, bool (*may_write)(void *ctx), void *ctx);
/* tally_runs_pending{namespace,runtime,reason}, tally_runtime_utilization{namespace,runtime,resource}. */
void tly_runctl_metrics(tly_runctl *r, FILE *out);

typedef struct tly_claims tly_claims;

tly_claims *tly_claims_create(void);
/* Keeps the held claims in the shared reservations (resv.h) from now on (live mode). */
typedef struct tly_resv tly_resv;
void tly_claims_share(tly_claims *c, tly_resv *r);
void tly_claims_destroy(tly_claims *c);
/*
** Decides a Run status UPDATE for /validate/runs-status (contract section 9):
** a claim (Scheduled -> Running) is allowed iff its whole request, plus the
** Runs Running or Ready on its assignedPod, plus the claims this server
** admitted that the state does not show yet (held at most 30 s), fits the
** Pod's capacity; an unknown Pod is denied; every other update passes.
*/
int tly_claims_review(tly_claims *c, const tly_store *state, const char *body, size_t len,
                      tly_admit_result *res, char *err, size_t errlen);

#endif
