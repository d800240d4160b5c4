/*
** statusctl.h: the status controller (statusctl.c; docs/controllers.md):
** Queue status condition AccountedResourcesResolved and
** status.accountedResources, from the live ledger, by server-side apply;
** and the per-queue gauges of /metrics.
*/
#ifndef TALLY_CTRL_STATUSCTL_H
#define TALLY_CTRL_STATUSCTL_H

#include <stdbool.h>
#include <stdio.h>

#include "gatectl.h"
#include "tally/kube.h"
#include "tally/store.h"

typedef struct tly_statusctl tly_statusctl;

tly_statusctl *tly_statusctl_create(tly_kube *k, tly_ctrl_log_fn log, void *log_ctx);
void tly_statusctl_destroy(tly_statusctl *s);

/*
** One cycle on a fork: checks the served Queue CRD (until it has the fields
** of deploy/patches/queue-status.yaml nothing is written; the refusal is
** logged), then applies the status of every queue whose content differs
** from what the server holds, at most once per queue per second, each write
** only while may_write(ctx). A write held back by the rate goes at a later
** cycle (the thread runs one at least every 500 ms). Returns true when a
** write met a conflict (409).
*/
bool tly_statusctl_cycle(tly_statusctl *s, tly_store *fork, bool (*may_write)(void *ctx), void *ctx);

/*
** The queue gauges of a fork of the live state: tally_queue_accounted_used,
** _limit and _headroom {queue,resource} for every AccountedResource (the
** last two only for a finite limit), and tally_queue_allocated
** {queue,resource}: cpu, memory and every resource some queue is allocated.
*/
void tly_statusctl_queue_metrics(tly_store *fork, FILE *out);

#endif
