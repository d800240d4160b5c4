/*
** upsizes.c: /validate/pods-resize with upsize reservations shared by every
** replica (resv.h tly_resv_upsize_review).
**
** Each attempt of the transaction takes a fork of the live state that has
** seen pods at least as far as the entry's watermark, rebuilds upsize.h's
** ledger from the entry's holds, drops what that fork shows settled
** (upsize.h: by resourceVersion, so a lagging fork keeps a hold; a drop
** raises the watermark to the fork's), decides the review with that ledger
** exactly as one replica does with its own, and asks for a write when the
** decision added or changed a hold. The ledger's clock is the wall clock,
** so a hold's age means the same on every replica.
*/
#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"
#include "tally/error.h"
#include "tally/node.h"
#include "tally/resv.h"
#include "tally/upsize.h"

typedef struct {
    tly_resv *r;
    int64_t timeout_ms;
    const tly_store *state;  /* the server's fork: only to answer a review no fork could decide */
    tly_store *fork;         /* this attempt's */
    const char *body;
    size_t len;
    tly_admit_result res;
    bool decided;
    int rc;              /* of the decision itself (TLY_EINVAL: a bad review) */
    char *err;
    size_t errlen;
    char why[512];       /* why no fork could be had, or "" */
} txn;

typedef struct {
    char **v;
    size_t n, cap;
} lines;

static void add_line(void *ctx, const char *ns, const char *name, const char *value)
{
    (void)ns;
    (void)name;
    lines *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = tly_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = tly_xstrdup(value);
}

/* The ledger as the entry's text. */
static char *text_of(tly_upsize *u, uint64_t seen)
{
    lines l = {0};
    tly_upsize_each(u, add_line, &l);
    char *out = tly_resv_entry_text(seen, l.v, l.n);
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i]);
    free(l.v);
    return out;
}

/* The ledger from the entry's text; a hold that does not read is dropped (the next write forgets it). */
static tly_upsize *ledger_of(const char *text, int64_t timeout_ms, uint64_t *seen)
{
    tly_upsize *u = tly_upsize_create(timeout_ms, tly_upsize_wall_ms, NULL);
    tly_arena *a = tly_arena_create(strlen(text) + 1024);
    const tly_node *holds = tly_resv_entry_parse(text, a, seen);
    char err[256];
    for (uint32_t i = 0; holds && i < holds->nkids; i++)
        (void)tly_upsize_decode(u, tly_node_at(holds, i), err, sizeof err);
    tly_arena_destroy(a);
    return u;
}

static int step(void *ctx, const char *text, bool fresh, char **out)
{
    txn *t = ctx;
    if (t->decided)
        tly_admit_result_free(&t->res);
    t->decided = false;
    tly_store_destroy(t->fork);
    uint64_t seen;
    tly_upsize *u = ledger_of(text, t->timeout_ms, &seen);
    t->fork = tly_resv_fork(t->r, TLY_K_POD, seen, t->why, sizeof t->why);
    if (!t->fork) {
        tly_upsize_destroy(u);
        return TLY_RESV_DONE;  /* answered as a denial by the caller */
    }
    tly_upsize_released rel;
    tly_upsize_reconcile(u, t->fork, &rel);
    if (rel.enacted + rel.reverted + rel.infeasible + rel.gone > 0) {
        uint64_t mine = tly_store_seen_rv(t->fork, TLY_K_POD);
        seen = mine > seen ? mine : seen;
    }
    char *before = text_of(u, seen);
    t->rc = tly_admit_review_ledger(t->fork, tly_upsize_ledger(u), t->body, t->len, &t->res, t->err,
                                    t->errlen);
    int s = TLY_RESV_DONE;
    if (t->rc == TLY_OK) {
        t->decided = true;
        char *after = text_of(u, seen);
        if (!t->res.allowed && !fresh && tly_upsize_count(u)) {
            s = TLY_RESV_FRESH;  /* denied with holds from a copy that may be stale: once more, fresh */
        } else if (strcmp(before, after) != 0) {
            s = TLY_RESV_WRITE;
            *out = after;
            after = NULL;
        }
        free(after);
    }
    free(before);
    tly_upsize_destroy(u);
    return s;
}

static void deny(tly_admit_result *res, const char *why)
{
    res->allowed = false;
    free(res->message);
    res->message = tly_xasprintf("tally could not record the reservation this upsize needs, so it is not "
                                 "admitted: %s; retry the resize", why);
}

int tly_resv_upsize_review(tly_resv *r, const tly_store *state, const char *body, size_t len,
                           tly_admit_result *res, char *err, size_t errlen)
{
    txn t = {.r = r, .timeout_ms = tly_resv_upsize_timeout(r), .state = state, .body = body, .len = len,
             .err = err, .errlen = errlen};
    char why[512];
    int rc = tly_resv_run(r, "upsizes", step, &t, why, sizeof why);
    tly_store_destroy(t.fork);
    if (rc == TLY_OK && !t.decided && t.why[0]) {
        rc = TLY_ETIMEOUT;
        snprintf(why, sizeof why, "%s", t.why);
    }
    if (!t.decided && rc != TLY_OK) {
        /* No decision could be made with the holds: decide without them only to answer, as a denial. */
        t.rc = tly_admit_review_ledger(state, NULL, body, len, &t.res, err, errlen);
        t.decided = t.rc == TLY_OK;
    }
    if (!t.decided)
        return t.rc;
    *res = t.res;
    if (rc != TLY_OK && res->allowed)
        deny(res, why);
    return TLY_OK;
}
