/*
** ctrl.h: the controllers of the live mode (src/ctrl/; contract section 9;
** docs/controllers.md): what the lease holder writes to the cluster, and the
** webhook endpoints that belong to them.
**
** One thread runs the enabled controllers in cycles: after the live state
** changes (tly_live_wait) and at least every 500 ms, when the state is ready
** (every kind synced, no watch broken too long) and this replica leads
** (tly_lease_leading). Each cycle decides on one fork of the live state;
** before each write it checks that it still leads and that its term has not
** changed since the fork was taken. A write the server refuses because the
** object changed (409, or a failed JSON patch `test`: 422) ends the cycle's
** writes; the next cycle decides again on fresher state.
*/
#ifndef TALLY_CTRL_H
#define TALLY_CTRL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "tally/admit.h"
#include "tally/kube.h"
#include "tally/lease.h"
#include "tally/live.h"

enum { TLY_CTRL_GATING = 1, TLY_CTRL_STATUS = 2, TLY_CTRL_RUNS = 4 };

/* "gating,status" -> the bits; -1 with err set for an unknown name. */
int tly_ctrl_parse(const char *list, char *err, size_t errlen);

#define TLY_CTRL_DEFAULT_RESERVATION_MS (10 * 60 * 1000)

typedef struct tly_ctrl tly_ctrl;

typedef struct {
    tly_kube *kube;               /* not owned */
    tly_live *live;               /* not owned */
    tly_lease *lease;             /* not owned; NULL: this replica always leads (--leader-elect=false) */
    unsigned controllers;         /* TLY_CTRL_* bits */
    long reservation_timeout_ms;  /* --reservation-timeout; 0: the default (10 min) */
    /* Whether decisions may be made (the reflectors are synced). */
    bool (*ready)(void *ctx);
    void *ready_ctx;
    /* Where admitted claims are held for every replica (resv.h); NULL: this replica only. */
    struct tly_resv *resv;
    void (*log)(void *ctx, int level, const char *event, const char *const *kv, size_t nkv);
    void *log_ctx;
} tly_ctrl_options;

tly_ctrl *tly_ctrl_start(const tly_ctrl_options *o);
void tly_ctrl_stop(tly_ctrl *c);

/*
** The webhook endpoints of the controllers (server.h tly_server_source
** decide): /mutate/pods with `gating`, /validate/runs-status with `runs`.
** TLY_ENOENT when the endpoint's controller is not enabled.
*/
int tly_ctrl_decide(tly_ctrl *c, int endpoint, const tly_store *state, const char *body, size_t len,
                    tly_admit_result *res, char *err, size_t errlen);

/*
** Prometheus text for the controllers' metrics (contract section 9), and the
** queue gauges of tly_ctrl_queue_metrics once the state is synced.
*/
void tly_ctrl_metrics(tly_ctrl *c, FILE *out);

/*
** The per-queue gauges (tally_queue_accounted_used, _limit, _headroom,
** tally_queue_allocated) from a fresh fork of the live state: costs the
** queues and the ledger's rows, not the pods. Any replica, whichever
** controllers run: without a tly_ctrl, serve calls this itself (when synced).
*/
void tly_ctrl_queue_metrics(tly_live *live, FILE *out);

/* Cycles run so far (tests). */
uint64_t tly_ctrl_cycles(const tly_ctrl *c);

#endif
