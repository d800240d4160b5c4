/*
** ctrl.c: the controllers' thread, and their webhook endpoints (ctrl.h).
**
** The thread waits for the live state to change (or 500 ms), then, when the
** state is ready and this replica leads, runs a cycle of every enabled
** controller on one fork. A cycle whose writes met a changed object asks for
** the next one at once. Writes are fenced twice: tly_lease_leading() (the
** renew deadline has not passed) and the term the cycle began in, so a
** replica that lost and regained leadership in between does not act on a
** plan made before.
*/
#include "tally/ctrl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gatectl.h"
#include "runctl.h"
#include "statusctl.h"
#include "tally/arena.h"
#include "tally/error.h"
#include "tally/gating.h"
#include "tally/metrics.h"

#define TICK_MS 500
#define AGAIN_MS 100

struct tly_ctrl {
    tly_ctrl_options o;
    pthread_t th;
    bool started;
    atomic_int stop;         /* set by tly_ctrl_stop, read by the cycle and its writer threads */
    tly_gatectl *gating;
    tly_runctl *runs;
    tly_statusctl *status;
    tly_claims *claims;
    atomic_uint_fast64_t cycles;
    uint64_t term;           /* the lease term of the running cycle */
};

int tly_ctrl_parse(const char *list, char *err, size_t errlen)
{
    int bits = 0;
    const char *p = list;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == 6 && !strncmp(p, "gating", n))
            bits |= TLY_CTRL_GATING;
        else if (n == 6 && !strncmp(p, "status", n))
            bits |= TLY_CTRL_STATUS;
        else if (n == 4 && !strncmp(p, "runs", n))
            bits |= TLY_CTRL_RUNS;
        else if (n) {
            snprintf(err, errlen, "unknown controller '%.*s' (gating, status, runs)", (int)n, p);
            return -1;
        }
        p = comma ? comma + 1 : NULL;
    }
    return bits;
}

static bool may_write(void *ctx)
{
    tly_ctrl *c = ctx;
    if (!c->o.lease)
        return !atomic_load(&c->stop);
    return !atomic_load(&c->stop) && tly_lease_leading(c->o.lease) && tly_lease_term(c->o.lease) == c->term;
}

static bool leading(tly_ctrl *c) { return !c->o.lease || tly_lease_leading(c->o.lease); }

static void *run(void *arg)
{
    tly_ctrl *c = arg;
    uint64_t seen = tly_live_version(c->o.live);
    bool again = false;
    while (!atomic_load(&c->stop)) {
        /* After a refused write the object changed: its watch event is what to wait for. */
        seen = tly_live_wait(c->o.live, seen, again ? AGAIN_MS : TICK_MS);
        again = false;
        if (atomic_load(&c->stop) || !leading(c) || (c->o.ready && !c->o.ready(c->o.ready_ctx)))
            continue;
        c->term = c->o.lease ? tly_lease_term(c->o.lease) : 0;
        tly_store *fork = tly_live_fork(c->o.live);
        if (c->gating)
            again |= tly_gatectl_cycle(c->gating, fork, may_write, c);
        if (c->runs)
            again |= tly_runctl_cycle(c->runs, fork, may_write, c);
        if (c->status)
            again |= tly_statusctl_cycle(c->status, fork, may_write, c);
        tly_store_destroy(fork);
        atomic_fetch_add(&c->cycles, 1);
    }
    return NULL;
}

tly_ctrl *tly_ctrl_start(const tly_ctrl_options *o)
{
    tly_ctrl *c = tly_xcalloc(1, sizeof *c);
    atomic_init(&c->stop, 0);
    c->o = *o;
    if (c->o.reservation_timeout_ms <= 0)
        c->o.reservation_timeout_ms = TLY_CTRL_DEFAULT_RESERVATION_MS;
    if (c->o.controllers & TLY_CTRL_GATING)
        c->gating = tly_gatectl_create(o->kube, c->o.reservation_timeout_ms,
                                       o->lease ? tly_lease_identity(o->lease) : NULL, o->log, o->log_ctx);
    if (c->o.controllers & TLY_CTRL_RUNS) {
        c->runs = tly_runctl_create(o->kube, o->log, o->log_ctx);
        c->claims = tly_claims_create();
        if (o->resv)
            tly_claims_share(c->claims, o->resv);
    }
    if (c->o.controllers & TLY_CTRL_STATUS)
        c->status = tly_statusctl_create(o->kube, o->log, o->log_ctx);
    c->started = pthread_create(&c->th, NULL, run, c) == 0;
    return c;
}

void tly_ctrl_stop(tly_ctrl *c)
{
    if (!c)
        return;
    atomic_store(&c->stop, 1);
    if (c->started)
        pthread_join(c->th, NULL);
    tly_gatectl_destroy(c->gating);
    tly_runctl_destroy(c->runs);
    tly_statusctl_destroy(c->status);
    tly_claims_destroy(c->claims);
    free(c);
}

int tly_ctrl_decide(tly_ctrl *c, int endpoint, const tly_store *state, const char *body, size_t len,
                    tly_admit_result *res, char *err, size_t errlen)
{
    if (endpoint == TLY_EP_MUTATE_PODS && (c->o.controllers & TLY_CTRL_GATING))
        return tly_mutate_review(state, body, len, res, err, errlen);
    /* Claims are decided by every replica (runtimed's update reaches whichever the Service picks). */
    if (endpoint == TLY_EP_RUNS_STATUS && c->claims)
        return tly_claims_review(c->claims, state, body, len, res, err, errlen);
    return TLY_ENOENT;
}

void tly_ctrl_metrics(tly_ctrl *c, FILE *out)
{
    if (c->gating)
        tly_gatectl_metrics(c->gating, out);
    if (c->runs)
        tly_runctl_metrics(c->runs, out);
    /* The queue gauges: read-only, on every replica, once the state is synced (not partial). */
    if (!c->o.ready || c->o.ready(c->o.ready_ctx))
        tly_ctrl_queue_metrics(c->o.live, out);
}

void tly_ctrl_queue_metrics(tly_live *live, FILE *out)
{
    tly_store *fork = tly_live_fork(live);
    tly_statusctl_queue_metrics(fork, out);
    tly_store_destroy(fork);
}

uint64_t tly_ctrl_cycles(const tly_ctrl *c) { return atomic_load(&((tly_ctrl *)c)->cycles); }
