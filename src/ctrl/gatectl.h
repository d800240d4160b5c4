/*
** gatectl.h: the gating controller (gatectl.c): queue-admission gating
** decided on the live state, as KAI's `ungate` action would decide it.
*/
#ifndef TALLY_CTRL_GATECTL_H
#define TALLY_CTRL_GATECTL_H

#include <stdbool.h>
#include <stdio.h>

#include "tally/kube.h"
#include "tally/store.h"

typedef struct tly_gatectl tly_gatectl;

/* Logs one line: event and key/value pairs (server.h's logfmt). */
typedef void (*tly_ctrl_log_fn)(void *ctx, int level, const char *event, const char *const *kv,
                                size_t nkv);

tly_gatectl *tly_gatectl_create(tly_kube *k, long reservation_timeout_ms, const char *identity,
                                tly_ctrl_log_fn log, void *log_ctx);
void tly_gatectl_destroy(tly_gatectl *g);

/*
** One cycle on a fork of the live state: every workload of gated pods
** decided in order, then the writes (each only while may_write(ctx) says
** this replica still leads in the term the cycle started in). Returns true
** when the state changed under a write (another cycle should follow soon).
*/
bool tly_gatectl_cycle(tly_gatectl *g, tly_store *fork, bool (*may_write)(void *ctx), void *ctx);

/* tally_gated_pods{queue,reason} and tally_ungates_total{queue}. */
void tly_gatectl_metrics(tly_gatectl *g, FILE *out);

#endif
