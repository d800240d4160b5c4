/*
** claims.c: claim admission for runtimed, /validate/runs-status (runctl.h;
** seed kruntimes-run-resource-accounting.txt step 5; kruntimes-facts 4).
**
** runtimed claims a Run with one optimistic status update, Scheduled ->
** Running, before it starts it, and checks nothing but a count of Runs.
** This webhook makes that update the seed's atomic multi-resource check: the
** claim's whole request (every resource, `runs` 1 when unsaid), plus what
** the Runs Running or Ready on the same Pod hold, plus the claims this
** server admitted that the live state does not show yet, must fit the Pod's
** capacity (its annotations, kruntimes.h). A claim that does not fit is
** denied; runtimed then leaves the Run Scheduled and retries, as it does
** when its count is full.
**
** Decisions are serialized by one mutex (decide and record together), so
** two claims reviewed at once never both take the last room. A held claim
** is dropped when the state shows the Run Running or Ready (then it counts
** from the state), or ended, or gone, or after 30 s. In live mode the held
** claims are shared by every replica (tly_claims_share, resv.h): each
** review is then a transaction on the "claims" entry of the reservations
** ConfigMap, and a live state settles a claim only once it has seen the Run
** after the claim's resourceVersion, so a lagging replica keeps it.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runctl.h"
#include "tally/arena.h"
#include "tally/error.h"
#include "tally/json.h"
#include "tally/kruntimes.h"
#include "tally/live.h"
#include "tally/resv.h"

#define HOLD_MS 30000

typedef struct {
    char *ns, *pod, *run, *uid;
    tly_rq *req;             /* ids of the state's names (shared by every fork) */
    uint32_t nreq;
    int64_t at_ms;
    uint64_t rv;             /* the Run's resourceVersion when claimed (tly_rv_number), or 0 */
} held;

struct tly_claims {
    pthread_mutex_t mu;
    held *h;
    size_t n, cap;
    tly_resv *shared;        /* NULL: this replica's claims only */
};

/* The clock of held claims: the wall clock when replicas share them, else a monotonic one. */
static int64_t now_ms(const tly_claims *c)
{
    struct timespec ts;
    clock_gettime(c->shared ? CLOCK_REALTIME : CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

tly_claims *tly_claims_create(void)
{
    tly_claims *c = tly_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void held_free(held *x)
{
    free(x->ns);
    free(x->pod);
    free(x->run);
    free(x->uid);
    free(x->req);
}

void tly_claims_share(tly_claims *c, tly_resv *r) { c->shared = r; }

static void clear(tly_claims *c)
{
    for (size_t i = 0; i < c->n; i++)
        held_free(&c->h[i]);
    c->n = 0;
}

void tly_claims_destroy(tly_claims *c)
{
    if (!c)
        return;
    clear(c);
    free(c->h);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/*
** Whether the state shows what became of a held claim: the Run Running or
** Ready (it counts from the state now), ended, or gone. A live state must
** have seen the Run after the claim (upsize.h's rule for upsizes).
*/
static bool shown(const held *x, const tly_store *state)
{
    const tly_run *r = tly_store_find(state, TLY_K_RUN, x->ns, x->run);
    if (r && x->uid && r->meta.uid && strcmp(x->uid, r->meta.uid))
        return true;
    uint64_t seen = tly_store_seen_rv(state, TLY_K_RUN);
    if (seen && x->rv && (r ? tly_rv_number(r->meta.resource_version) <= x->rv : seen <= x->rv))
        return false;
    return !r || tly_run_phase_of(r) != TLY_RUN_SCHEDULED;
}

/* Drops the held claims the state now shows (or that are too old); returns how many it showed. */
static size_t prune(tly_claims *c, const tly_store *state)
{
    size_t k = 0, by_state = 0;
    int64_t now = now_ms(c);
    for (size_t i = 0; i < c->n; i++) {
        held *x = &c->h[i];
        bool seen = shown(x, state);
        by_state += seen;
        if (seen || now - x->at_ms > HOLD_MS) {
            held_free(x);
            continue;
        }
        c->h[k++] = *x;
    }
    c->n = k;
    return by_state;
}

/* The Run's request in the state's resource ids; NULL name in *bad when valid. */
static bool request_of(const tly_run *run, tly_names *names, tly_arena *a, tly_rlist *out, const char **bad)
{
    out->v = NULL;
    out->n = 0;
    *bad = NULL;
    for (uint32_t i = 0; i < run->nrequests; i++) {
        const tly_run_request *q = &run->requests[i];
        if (!q->valid) {
            *bad = q->name;
            return false;
        }
        if (tly_qty_sign(q->q) > 0)
            tly_rlist_set(out, a, tly_names_intern(names, q->name, strlen(q->name)), q->q);
    }
    bool found;
    tly_qty runs = tly_rlist_get(out, TLY_R_RUNS, &found);
    if (!found || tly_qty_sign(runs) <= 0)
        tly_rlist_set(out, a, TLY_R_RUNS, tly_qty_from_int(1, TLY_QFMT_DECIMAL_SI));
    return true;
}

/* What the Pod holds: Runs Running or Ready on it (the claimant aside) and the held claims. */
static void usage_of(tly_claims *c, tly_store *state, const tly_run *claim, tly_arena *a, tly_rvec *use)
{
    tly_run **runs = NULL;
    uint32_t n = tly_live_runs_on_pod(state, claim->meta.ns, claim->assigned_pod, &runs);
    for (uint32_t i = 0; i < n; i++) {
        tly_run_phase ph = tly_run_phase_of(runs[i]);
        if ((ph != TLY_RUN_RUNNING && ph != TLY_RUN_READY) || !strcmp(runs[i]->meta.name, claim->meta.name))
            continue;
        tly_rlist r;
        const char *bad;
        if (tly_run_normalized_request(runs[i], a, &r, &bad) == TLY_OK)
            tly_rvec_add_list(use, &r);
    }
    free(runs);
    for (size_t i = 0; i < c->n; i++) {
        const held *x = &c->h[i];
        if (!strcmp(x->ns, claim->meta.ns) && !strcmp(x->pod, claim->assigned_pod) && strcmp(x->run, claim->meta.name)) {
            tly_rlist r = {x->req, x->nreq};
            tly_rvec_add_list(use, &r);
        }
    }
}

static held *add_held(tly_claims *c)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->h = tly_xrealloc(c->h, c->cap * sizeof *c->h);
    }
    held *x = &c->h[c->n++];
    memset(x, 0, sizeof *x);
    return x;
}

/* run is the claim (request.object); rv the Run's resourceVersion before it (request.oldObject's). */
static void hold(tly_claims *c, const tly_run *run, const tly_rlist *req, const char *rv)
{
    held *x = add_held(c);
    x->ns = tly_xstrdup(run->meta.ns);
    x->pod = tly_xstrdup(run->assigned_pod);
    x->run = tly_xstrdup(run->meta.name);
    x->uid = run->meta.uid ? tly_xstrdup(run->meta.uid) : NULL;
    x->req = tly_xmalloc((req->n + 1) * sizeof *x->req);
    memcpy(x->req, req->v, req->n * sizeof *x->req);
    x->nreq = req->n;
    x->at_ms = now_ms(c);
    x->rv = tly_rv_number(rv);
}

static char *qtext(tly_qty q, tly_arena *a)
{
    char buf[TLY_QTY_BUFSZ];
    tly_qty_format(q, buf, sizeof buf);
    return tly_arena_strdup(a, buf);
}

/* The decision on one claim: NULL when it fits, else why not. */
static char *decide_claim(tly_claims *c, tly_store *state, const tly_run *run, const char *rv, bool dry,
                          tly_arena *a)
{
    if (!run->assigned_pod || !*run->assigned_pod)
        return tly_xasprintf("claim of Run %s/%s refused: it names no assignedPod", run->meta.ns, run->meta.name);
    const tly_pod *pod = tly_store_find(state, TLY_K_POD, run->meta.ns, run->assigned_pod);
    if (!pod)
        return tly_xasprintf("claim of Run %s/%s refused: Pod %s is not in namespace %s as tally sees it "
                             "(deleted, or not seen yet); runtimed keeps the Run Scheduled and retries",
                             run->meta.ns, run->meta.name, run->assigned_pod, run->meta.ns);
    tly_names *names = tly_store_names(state);
    tly_rlist req, cap;
    const char *bad;
    if (!request_of(run, names, a, &req, &bad))
        return tly_xasprintf("claim of Run %s/%s refused: resource request \"%s\" must be a non-negative integer",
                             run->meta.ns, run->meta.name, bad);
    tly_runtime_pod_capacity(pod, names, a, &cap, NULL);
    tly_rvec use;
    tly_rvec_init(&use);
    usage_of(c, state, run, a, &use);
    uint32_t id = 0;
    char *why = NULL;
    if (!tly_rvec_fits(&use, &req, &cap, &id)) {
        const char *name = tly_names_str(names, id);
        why = tly_xasprintf("claim of Run %s/%s refused: it needs %s %s on Runtime Pod %s, which has %s of "
                            "which %s is held by Runs Running or Ready and claims admitted in the last 30 s; "
                            "runtimed keeps the Run Scheduled and retries",
                            run->meta.ns, run->meta.name, name ? name : "?",
                            qtext(tly_rlist_get(&req, id, NULL), a), pod->meta.name,
                            qtext(tly_rlist_get(&cap, id, NULL), a), qtext(tly_rvec_get(&use, id), a));
    } else if (!dry) {
        hold(c, run, &req, rv);
    }
    tly_rvec_free(&use);
    return why;
}

static const char *str_at(const tly_node *n, const char *path);

/* ---- claims shared by every replica (the "claims" entry of resv.h's ConfigMap) ---- */

static char *encode_one(const held *x, tly_names *names)
{
    tly_jbuf b;
    tly_jbuf_open(&b);
    tly_json_begin_object(&b.j);
    tly_json_kv(&b.j, "namespace", x->ns);
    tly_json_kv(&b.j, "run", x->run);
    tly_json_kv(&b.j, "pod", x->pod);
    tly_json_kv(&b.j, "uid", x->uid);
    tly_json_key(&b.j, "request");
    tly_rlist req = {x->req, x->nreq};
    tly_json_rlist(&b.j, &req, names);
    tly_json_key(&b.j, "since");
    tly_json_int(&b.j, (long long)x->at_ms);
    char rv[24];
    snprintf(rv, sizeof rv, "%llu", (unsigned long long)x->rv);
    tly_json_kv(&b.j, "rv", x->rv ? rv : NULL);
    tly_json_end_object(&b.j);
    return tly_jbuf_close(&b);
}

/* The held claims as the entry's text (resv.h). */
static char *encode_all(tly_claims *c, tly_names *names, uint64_t seen)
{
    char **v = tly_xmalloc((c->n + 1) * sizeof *v);
    for (size_t i = 0; i < c->n; i++)
        v[i] = encode_one(&c->h[i], names);
    char *out = tly_resv_entry_text(seen, v, c->n);
    for (size_t i = 0; i < c->n; i++)
        free(v[i]);
    free(v);
    return out;
}

static bool load_one(tly_claims *c, const tly_node *o, tly_names *names)
{
    const char *ns = o ? str_at(o, "namespace") : NULL, *run = o ? str_at(o, "run") : NULL;
    const char *pod = o ? str_at(o, "pod") : NULL;
    const tly_node *req = o ? tly_node_get(o, "request") : NULL, *since = o ? tly_node_get(o, "since") : NULL;
    if (!ns || !run || !pod || !req || req->type != TLY_N_MAP || !since || since->type != TLY_N_INT)
        return false;
    held *x = add_held(c);
    x->ns = tly_xstrdup(ns);
    x->run = tly_xstrdup(run);
    x->pod = tly_xstrdup(pod);
    x->uid = str_at(o, "uid") ? tly_xstrdup(str_at(o, "uid")) : NULL;
    x->req = tly_xmalloc((req->nkids + 1) * sizeof *x->req);
    for (const tly_node *k = req->kids; k; k = k->next) {
        tly_qty q;
        if (k->type != TLY_N_STRING || tly_qty_parse_str(k->str, &q) != TLY_OK) {
            held_free(x);
            c->n--;
            return false;
        }
        x->req[x->nreq++] = (tly_rq){tly_names_intern(names, k->key, strlen(k->key)), q};
    }
    x->at_ms = strtoll(since->str, NULL, 10);
    x->rv = tly_rv_number(str_at(o, "rv"));
    return true;
}

/* The held claims from the entry's text; one that does not read is left out (the next write forgets it). */
static void load_all(tly_claims *c, const char *text, tly_names *names, uint64_t *seen)
{
    clear(c);
    tly_arena *a = tly_arena_create(strlen(text) + 1024);
    const tly_node *holds = tly_resv_entry_parse(text, a, seen);
    for (uint32_t i = 0; holds && i < holds->nkids; i++)
        (void)load_one(c, tly_node_at(holds, i), names);
    tly_arena_destroy(a);
}

typedef struct {
    tly_claims *c;
    tly_store *fork;         /* this attempt's (resv.h tly_resv_fork) */
    const tly_run *run;
    const char *rv;
    bool dry, decided;
    tly_arena *a;
    char *why;
    char lag[512];           /* why no fork could be had, or "" */
} claim_txn;

static int claim_step(void *ctx, const char *text, bool fresh, char **out)
{
    claim_txn *t = ctx;
    free(t->why);
    t->why = NULL;
    t->decided = false;
    tly_store_destroy(t->fork);
    uint64_t seen;
    /* The names are the live state's, shared by every fork. */
    tly_store *probe = tly_resv_fork(t->c->shared, TLY_K_RUN, 0, t->lag, sizeof t->lag);
    load_all(t->c, text, tly_store_names(probe), &seen);
    tly_store_destroy(probe);
    t->fork = tly_resv_fork(t->c->shared, TLY_K_RUN, seen, t->lag, sizeof t->lag);
    if (!t->fork)
        return TLY_RESV_DONE;
    tly_names *names = tly_store_names(t->fork);
    if (prune(t->c, t->fork)) {
        uint64_t mine = tly_store_seen_rv(t->fork, TLY_K_RUN);
        seen = mine > seen ? mine : seen;
    }
    size_t holds = t->c->n;
    char *before = encode_all(t->c, names, seen);
    t->why = decide_claim(t->c, t->fork, t->run, t->rv, t->dry, t->a);
    t->decided = true;
    char *after = encode_all(t->c, names, seen);
    int s = TLY_RESV_DONE;
    if (t->why && !fresh && holds) {
        s = TLY_RESV_FRESH;
    } else if (strcmp(before, after)) {
        s = TLY_RESV_WRITE;
        *out = after;
        after = NULL;
    }
    free(before);
    free(after);
    return s;
}

/* The decision with the held claims of every replica; NULL when it fits, else why not. */
static char *decide_shared(tly_claims *c, const tly_run *run, const char *rv, bool dry, tly_arena *a)
{
    claim_txn t = {.c = c, .run = run, .rv = rv, .dry = dry, .a = a};
    char err[512];
    int rc = tly_resv_run(c->shared, "claims", claim_step, &t, err, sizeof err);
    tly_store_destroy(t.fork);
    if (rc == TLY_OK && !t.decided)
        snprintf(err, sizeof err, "%s", t.lag);
    if (rc == TLY_OK && t.decided)
        return t.why;
    free(t.why);
    return tly_xasprintf("claim of Run %s/%s refused: tally could not record it with the claims of the other "
                         "replicas (%s); runtimed keeps the Run Scheduled and retries",
                         run->meta.ns, run->meta.name, err);
}

static const char *str_at(const tly_node *n, const char *path)
{
    const tly_node *v = n ? tly_node_path(n, path) : NULL;
    return v && v->type == TLY_N_STRING ? v->str : NULL;
}

/* A Run decoded from a review's object (its own store, freed by the caller). */
static const tly_run *run_of(const tly_node *obj, const char *name, tly_store **s)
{
    *s = tly_store_create_one(NULL);
    if (obj && obj->type == TLY_N_MAP)
        tly_store_load_object(*s, name, obj);
    tly_store_finish(*s);
    return tly_store_count(*s, TLY_K_RUN) ? tly_store_at(*s, TLY_K_RUN, 0) : NULL;
}

int tly_claims_review(tly_claims *c, const tly_store *state, const char *body, size_t len,
                      tly_admit_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    tly_arena *a = tly_arena_create(16 * 1024);
    const tly_node *review = tly_parse_api_value(body, len, a);
    const tly_node *req = review ? tly_node_get(review, "request") : NULL;
    const char *uid = str_at(req, "uid");
    if (!review || !str_at(review, "kind") || strcmp(str_at(review, "kind"), "AdmissionReview") || !uid) {
        snprintf(err, errlen, "expected an admission.k8s.io/v1 AdmissionReview with a request uid");
        tly_arena_destroy(a);
        return TLY_EINVAL;
    }
    res->uid = tly_xstrdup(uid);
    res->allowed = true;
    const char *kind = str_at(req, "kind.kind"), *op = str_at(req, "operation");
    res->kind = kind ? tly_xstrdup(kind) : NULL;
    res->operation = op ? tly_xstrdup(op) : NULL;
    const tly_node *dry = tly_node_get(req, "dryRun");
    res->dry_run = dry && dry->type == TLY_N_BOOL && dry->bval;
    tly_store *ns = NULL, *os = NULL;
    const tly_run *neu = run_of(tly_node_get(req, "object"), "request.object", &ns);
    const tly_run *old = run_of(tly_node_get(req, "oldObject"), "request.oldObject", &os);
    bool claim = kind && !strcmp(kind, "Run") && op && !strcmp(op, "UPDATE") && neu && old &&
                 tly_run_phase_of(old) == TLY_RUN_SCHEDULED && tly_run_phase_of(neu) == TLY_RUN_RUNNING;
    if (claim) {
        const char *rv = old->meta.resource_version;
        pthread_mutex_lock(&c->mu);
        char *why;
        if (c->shared) {
            why = decide_shared(c, neu, rv, res->dry_run, a);
        } else {
            prune(c, state);
            why = decide_claim(c, (tly_store *)state, neu, rv, res->dry_run, a);
        }
        pthread_mutex_unlock(&c->mu);
        if (why) {
            res->allowed = false;
            res->message = why;
        }
    }
    tly_store_destroy(ns);
    tly_store_destroy(os);
    tly_arena_destroy(a);
    return TLY_OK;
}
