/*
** statusctl.c: the status controller (statusctl.h; contract section 9;
** docs/controllers.md "The status controller"), and the per-queue gauges of
** /metrics ("Queue metrics").
**
** What a queue's status gets, by server-side apply as field manager `tally`
** (PATCH .../queues/NAME/status?fieldManager=tally&force=true), so that KAI's
** own status fields and conditions stay KAI's:
**   - condition AccountedResourcesResolved: True (reason Resolved), or False
**     with reason AccountedResourceNotFound and a message naming every
**     resourceRef of the queue's spec.accountedResources that names no
**     AccountedResource (the queue's own references, as simulate reports);
**   - accountedResources: [{resourceRef, used, limit}], one entry for every
**     AccountedResource in the cluster, in name order: the same set and
**     figures as the queue's `accounted` in `tally simulate -o json`. `used`
**     is the subtree's usage from the live ledger (tly_live_queues: every
**     bound pod), `limit` the effective limit (the queue's entry, else
**     defaults.limit, else "-1": unlimited, KAI's convention), both canonical
**     quantities.
**
** Nothing is written until the served Queue CRD has the fields of
** deploy/patches/queue-status.yaml (status.accountedResources a list-map by
** resourceRef, status.conditions a list-map by type) in the version tally
** writes and in the storage version: without them a real API server prunes
** the first and lets one writer's conditions replace the other's. The
** refusal is logged (error level, again every 5 minutes while it lasts); the
** CRD is read again every few seconds, so applying the patch is enough.
**
** Writes only on change: each queue's content is compared with what the
** server holds as far as this controller knows it: what it last wrote, and
** what a LIST of the queues showed at start, after any pause of the cycles
** (a leadership change, a state not ready) and every minute since. So watch
** lag, a restart or a new leader does not write again what is already there,
** and a condition another writer removed (a merge patch of the whole list)
** is put back within a minute. At most one write per queue per second, and a
** bounded number per cycle, taken round robin, so that a burst of usage
** changes cannot hold up the other controllers of the thread.
*/
#include "statusctl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/arena.h"
#include "tally/error.h"
#include "tally/json.h"
#include "tally/live.h"
#include "tally/metrics.h"
#include "tally/queues.h"
#include "tally/server.h"  /* the log levels the log callback takes */
#include "writes.h"

#define MANAGER "tally"
#define CONDITION "AccountedResourcesResolved"
#define CRD_NAME "queues.scheduling.run.ai"
#define CRD_PATH "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" CRD_NAME
#define PATCH_FILE "deploy/patches/queue-status.yaml"
#define RATE_MS 1000          /* per queue */
#define RECHECK_MS 3000       /* the CRD, while it lacks the fields */
#define RESYNC_MS 60000       /* the CRD and the queues' status, once it has them */
#define REMIND_MS 300000      /* the refusal, logged again while it lasts */
#define GAP_MS 2000           /* cycles this far apart: leadership or readiness was lost meanwhile */
#define MAX_BACKOFF_MS 60000
#define WRITES_PER_CYCLE 16

typedef struct {
    char *name, *uid;
    char *have;              /* tally's fields as the server holds them (digest), or NULL */
    char *cond_status;       /* the condition's status there, and its lastTransitionTime */
    char *ltt;
    int64_t next_ms;         /* no write before (the rate, or a failure's backoff) */
    int fails;
    bool seen;
} qstate;

enum { CRD_UNKNOWN = 0, CRD_OK, CRD_REFUSED };

struct tly_statusctl {
    tly_kube *k;
    tly_ctrl_log_fn log;
    void *log_ctx;
    qstate *q;               /* sorted by name */
    size_t n, cap;
    size_t cursor;           /* where the next cycle's writes start */
    int crd;
    char *crd_why;           /* the last refusal logged, and when */
    int64_t said_ms;
    int64_t check_at;        /* next CRD check (and, once CRD_OK, LIST of the queues) */
    int64_t last_cycle_ms;
    bool observed;           /* a LIST of the queues has been read */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A text built with stdio. */
typedef struct {
    char *buf;
    size_t len;
    FILE *f;
} membuf;

static FILE *mb_open(membuf *m)
{
    m->buf = NULL;
    m->len = 0;
    m->f = open_memstream(&m->buf, &m->len);
    if (!m->f)
        tly_oom();
    return m->f;
}

static char *mb_close(membuf *m)
{
    fclose(m->f);
    return m->buf;
}

tly_statusctl *tly_statusctl_create(tly_kube *k, tly_ctrl_log_fn log, void *log_ctx)
{
    tly_statusctl *s = tly_xcalloc(1, sizeof *s);
    s->k = k;
    s->log = log;
    s->log_ctx = log_ctx;
    return s;
}

static void qstate_clear(qstate *q)
{
    free(q->have);
    free(q->cond_status);
    free(q->ltt);
    q->have = q->cond_status = q->ltt = NULL;
}

static void qstate_free(qstate *q)
{
    qstate_clear(q);
    free(q->name);
    free(q->uid);
}

void tly_statusctl_destroy(tly_statusctl *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        qstate_free(&s->q[i]);
    free(s->q);
    free(s->crd_why);
    free(s);
}

static void say(tly_statusctl *s, int level, const char *event, const char *queue, const char *msg)
{
    if (!s->log)
        return;
    const char *kv[] = {"queue", queue, "msg", msg};
    if (queue)
        s->log(s->log_ctx, level, event, kv, 2);
    else
        s->log(s->log_ctx, level, event, kv + 2, 1);
}

/* The state of queue `name`, added (sorted) when new. */
static qstate *state_of(tly_statusctl *s, const char *name)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->q[mid].name, name);
        if (!c)
            return &s->q[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 32;
        s->q = tly_xrealloc(s->q, s->cap * sizeof *s->q);
    }
    memmove(&s->q[lo + 1], &s->q[lo], (s->n - lo) * sizeof *s->q);
    s->n++;
    memset(&s->q[lo], 0, sizeof *s->q);
    s->q[lo].name = tly_xstrdup(name);
    return &s->q[lo];
}

/* Same uid as before, else the queue was made anew: what its status held is forgotten. */
static void same_queue(qstate *q, const char *uid)
{
    if (!uid || (q->uid && !strcmp(q->uid, uid)))
        return;
    if (q->uid)
        qstate_clear(q);
    free(q->uid);
    q->uid = tly_xstrdup(uid);
}

static void set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = v ? tly_xstrdup(v) : NULL;
}

/* ---- what a queue's status should say -------------------------------------------- */

static bool accres_exists(const tly_queues *qs, const char *name)
{
    uint32_t lo = 0, hi = tly_queues_naccres(qs);
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(tly_queues_accres(qs, mid)->meta.name, name);
        if (!c)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

typedef struct {
    bool resolved;
    char *message;           /* malloc'd */
} verdict;

/* Whether q's resourceRef k repeats an earlier one (named once in the message). */
static bool repeated_ref(const tly_queue *q, uint32_t k)
{
    for (uint32_t j = 0; j < k; j++)
        if (q->accrefs[j].ref && !strcmp(q->accrefs[j].ref, q->accrefs[k].ref))
            return true;
    return false;
}

/*
** The condition: every own resourceRef that names no AccountedResource, in
** spec order; with one, simulate's message word for word.
*/
static verdict resolve(const tly_queues *qs, const tly_queue *q)
{
    membuf m;
    FILE *f = mb_open(&m);
    uint32_t missing = 0;
    for (uint32_t k = 0; k < q->naccrefs; k++) {
        const char *ref = q->accrefs[k].ref;
        if (!ref || !*ref || accres_exists(qs, ref) || repeated_ref(q, k))
            continue;
        fprintf(f, "%s\"%s\"", missing ? ", " : "", ref);
        missing++;
    }
    char *refs = mb_close(&m);
    verdict v = {missing == 0, NULL};
    if (missing)
        v.message = tly_xasprintf("AccountedResource%s %s referenced by spec.accountedResources %s",
                                  missing > 1 ? "s" : "", refs, missing > 1 ? "do not exist" : "does not exist");
    else
        v.message = tly_xstrdup("every AccountedResource referenced by spec.accountedResources exists");
    free(refs);
    return v;
}

static const char *cond_status(const verdict *v) { return v->resolved ? "True" : "False"; }
static const char *cond_reason(const verdict *v) { return v->resolved ? "Resolved" : "AccountedResourceNotFound"; }

/*
** The digest of tally's fields: the condition's status, reason and message,
** then each entry's resourceRef, used and limit, as text in resourceRef
** order; what the server holds is read into the same form (observe_item).
*/
static void digest_cond(FILE *f, const char *status, const char *reason, const char *message)
{
    fprintf(f, "%s\x1f%s\x1f%s\x1e", status ? status : "", reason ? reason : "", message ? message : "");
}

static void digest_entry(FILE *f, const char *ref, const char *used, const char *limit)
{
    fprintf(f, "%s\x1f%s\x1f%s\x1e", ref ? ref : "", used ? used : "", limit ? limit : "");
}

static const char *qtext(tly_qty q, char buf[TLY_QTY_BUFSZ])
{
    tly_qty_format(q, buf, TLY_QTY_BUFSZ);
    return buf;
}

static char *want_digest(const tly_queues *qs, uint32_t i, const verdict *v)
{
    membuf m;
    FILE *f = mb_open(&m);
    digest_cond(f, cond_status(v), cond_reason(v), v->message);
    char u[TLY_QTY_BUFSZ], l[TLY_QTY_BUFSZ];
    for (uint32_t a = 0; a < tly_queues_naccres(qs); a++)
        digest_entry(f, tly_queues_accres(qs, a)->meta.name, qtext(tly_queues_accounted_used(qs, i, a), u),
                     qtext(tly_queues_accounted_limit(qs, i, a), l));
    return mb_close(&m);
}

static void json_condition(tly_json *j, const verdict *v, const char *ltt)
{
    tly_json_key(j, "conditions");
    tly_json_begin_array(j);
    tly_json_begin_object(j);
    tly_json_key(j, "type");
    tly_json_string(j, CONDITION);
    tly_json_key(j, "status");
    tly_json_string(j, cond_status(v));
    tly_json_key(j, "reason");
    tly_json_string(j, cond_reason(v));
    tly_json_key(j, "message");
    tly_json_string(j, v->message);
    tly_json_key(j, "lastTransitionTime");
    tly_json_string(j, ltt);
    tly_json_end_object(j);
    tly_json_end_array(j);
}

static void json_accounted(tly_json *j, const tly_queues *qs, uint32_t i)
{
    tly_json_key(j, "accountedResources");
    tly_json_begin_array(j);
    for (uint32_t a = 0; a < tly_queues_naccres(qs); a++) {
        tly_json_begin_object(j);
        tly_json_key(j, "resourceRef");
        tly_json_string(j, tly_queues_accres(qs, a)->meta.name);
        tly_json_key(j, "used");
        tly_json_qty(j, tly_queues_accounted_used(qs, i, a));
        tly_json_key(j, "limit");
        tly_json_qty(j, tly_queues_accounted_limit(qs, i, a));
        tly_json_end_object(j);
    }
    tly_json_end_array(j);
}

/* The apply body: apiVersion, kind, metadata.name and tally's status fields only. */
static char *apply_body(const tly_queues *qs, uint32_t i, const char *api_version, const verdict *v,
                        const char *ltt)
{
    membuf m;
    tly_json j;
    tly_json_init(&j, mb_open(&m), false);
    tly_json_begin_object(&j);
    tly_json_key(&j, "apiVersion");
    tly_json_string(&j, api_version);
    tly_json_key(&j, "kind");
    tly_json_string(&j, "Queue");
    tly_json_key(&j, "metadata");
    tly_json_begin_object(&j);
    tly_json_key(&j, "name");
    tly_json_string(&j, tly_queues_queue(qs, i)->meta.name);
    tly_json_end_object(&j);
    tly_json_key(&j, "status");
    tly_json_begin_object(&j);
    json_condition(&j, v, ltt);
    json_accounted(&j, qs, i);
    tly_json_end_object(&j);
    tly_json_end_object(&j);
    return mb_close(&m);
}

/* ---- the CRD and what the server holds --------------------------------------------- */

static const char *str_of(const tly_node *n, const char *key)
{
    const tly_node *v = n && n->type == TLY_N_MAP ? tly_node_get(n, key) : NULL;
    return v && tly_node_is_scalar(v) ? v->str : NULL;
}

/* Whether schema property p is a list-map keyed by exactly `key`, with the key required. */
static bool list_map(const tly_node *p, const char *key)
{
    const char *type = str_of(p, "x-kubernetes-list-type");
    const tly_node *keys = p ? tly_node_get(p, "x-kubernetes-list-map-keys") : NULL;
    if (!type || strcmp(type, "map") || !keys || keys->type != TLY_N_SEQ || keys->nkids != 1)
        return false;
    const tly_node *k0 = tly_node_at(keys, 0);
    const tly_node *req = tly_node_path(p, "items.required");
    bool required = false;
    for (uint32_t i = 0; req && req->type == TLY_N_SEQ && i < req->nkids; i++)
        required |= tly_node_is_scalar(tly_node_at(req, i)) && !strcmp(tly_node_at(req, i)->str, key);
    return k0 && k0->type == TLY_N_STRING && !strcmp(k0->str, key) && required;
}

/* NULL when version v of the CRD serves tally's fields, else what it lacks (malloc'd). */
static char *version_lacks(const tly_node *v)
{
    const char *name = str_of(v, "name");
    if (!tly_node_path(v, "subresources.status"))
        return tly_xasprintf("version %s has no status subresource", name);
    const tly_node *st = tly_node_path(v, "schema.openAPIV3Schema.properties.status.properties");
    bool ar = list_map(st ? tly_node_get(st, "accountedResources") : NULL, "resourceRef");
    bool cond = list_map(st ? tly_node_get(st, "conditions") : NULL, "type");
    if (ar && cond)
        return NULL;
    return tly_xasprintf("version %s %s%s%s", name,
                         ar ? "" : "has no status.accountedResources list-map keyed by resourceRef",
                         !ar && !cond ? " and " : "",
                         cond ? "" : "has status.conditions that is not a list-map keyed by type");
}

/* NULL when the version tally writes and the storage version serve tally's fields. */
static char *crd_lacks(const tly_node *crd, const char *version)
{
    const tly_node *vs = tly_node_path(crd, "spec.versions"), *w = NULL, *stored = NULL;
    for (uint32_t i = 0; vs && vs->type == TLY_N_SEQ && i < vs->nkids; i++) {
        const tly_node *x = tly_node_at(vs, i), *flag = tly_node_get(x, "storage");
        const char *name = str_of(x, "name");
        if (name && !strcmp(name, version))
            w = x;
        if (flag && flag->type == TLY_N_BOOL && flag->bval)
            stored = x;
    }
    if (!w)
        return tly_xasprintf("has no version %s", version);
    char *why = version_lacks(w);
    return why || !stored || stored == w ? why : version_lacks(stored);
}

/* Why Queue status cannot be written (malloc'd), or NULL when the served CRD allows it. */
static char *crd_refusal(tly_statusctl *s, const char *version)
{
    char err[1024];
    tly_kube_resp r;
    memset(&r, 0, sizeof r);
    char *why = NULL;
    if (tly_kube_request(s->k, "GET", CRD_PATH, NULL, NULL, 0, &r, err, sizeof err) != TLY_OK) {
        why = tly_xasprintf("cannot read the Queue CRD %s: %s", CRD_NAME, err);
    } else if (r.status == 404) {
        why = tly_xasprintf("the Queue CRD %s is not installed", CRD_NAME);
    } else if (r.status != 200) {
        tly_kube_explain_status(s->k, &r, "get", "customresourcedefinitions.apiextensions.k8s.io", err,
                                sizeof err);
        why = tly_xasprintf("cannot read the Queue CRD %s to check for the fields of %s: %s", CRD_NAME,
                            PATCH_FILE, err);
    } else {
        tly_arena *a = tly_arena_create(64 * 1024);
        const tly_node *crd = tly_parse_value(r.body, r.len, a);
        char *lacks = crd ? crd_lacks(crd, version) : tly_xstrdup("answered something that is not JSON");
        if (lacks)
            why = tly_xasprintf("the served Queue CRD %s %s; apply %s (kubectl patch crd %s --type=json "
                                "--patch-file %s): Queue status is not written until then",
                                CRD_NAME, lacks, PATCH_FILE, CRD_NAME, PATCH_FILE);
        free(lacks);
        tly_arena_destroy(a);
    }
    tly_kube_resp_free(&r);
    return why;
}

/* Reads the served Queue CRD into s->crd, logging when the verdict changes (and as a reminder). */
static void check_crd(tly_statusctl *s, const char *version, int64_t now)
{
    char *why = crd_refusal(s, version);
    if (!why) {
        if (s->crd != CRD_OK)
            say(s, TLY_LOG_INFO, "queue-status-enabled", NULL, "the served Queue CRD has the fields of " PATCH_FILE);
        s->crd = CRD_OK;
        set_str(&s->crd_why, NULL);
        return;
    }
    if (!s->crd_why || strcmp(s->crd_why, why) || now - s->said_ms >= REMIND_MS) {
        say(s, TLY_LOG_ERROR, "queue-status-refused", NULL, why);
        s->said_ms = now;
    }
    s->crd = CRD_REFUSED;
    free(s->crd_why);
    s->crd_why = why;
}

static int cmp_entry(const void *pa, const void *pb)
{
    const char *a = str_of(*(const tly_node *const *)pa, "resourceRef");
    const char *b = str_of(*(const tly_node *const *)pb, "resourceRef");
    return strcmp(a ? a : "", b ? b : "");
}

/* The condition of tally's type in a status, or NULL. */
static const tly_node *own_condition(const tly_node *status)
{
    const tly_node *conds = status ? tly_node_get(status, "conditions") : NULL;
    for (uint32_t i = 0; conds && conds->type == TLY_N_SEQ && i < conds->nkids; i++) {
        const char *type = str_of(tly_node_at(conds, i), "type");
        if (type && !strcmp(type, CONDITION))
            return tly_node_at(conds, i);
    }
    return NULL;
}

/* The digest of what a status holds of tally's fields (c: its condition). */
static char *held_digest(const tly_node *status, const tly_node *c)
{
    membuf m;
    FILE *f = mb_open(&m);
    digest_cond(f, str_of(c, "status"), str_of(c, "reason"), str_of(c, "message"));
    const tly_node *ars = tly_node_get(status, "accountedResources");
    uint32_t n = ars && ars->type == TLY_N_SEQ ? ars->nkids : 0;
    const tly_node **e = tly_xmalloc((n + 1) * sizeof *e);
    for (uint32_t i = 0; i < n; i++)
        e[i] = tly_node_at(ars, i);
    qsort(e, n, sizeof *e, cmp_entry);
    for (uint32_t i = 0; i < n; i++)
        digest_entry(f, str_of(e[i], "resourceRef"), str_of(e[i], "used"), str_of(e[i], "limit"));
    free(e);
    return mb_close(&m);
}

/* One queue of the LIST: what its status holds of tally's fields. */
static int observe_item(void *ctx, const tly_node *item)
{
    tly_statusctl *s = ctx;
    const tly_node *meta = item ? tly_node_get(item, "metadata") : NULL;
    const char *name = str_of(meta, "name");
    if (!name)
        return TLY_OK;  /* NULL: the list restarts; items seen again overwrite */
    qstate *q = state_of(s, name);
    same_queue(q, str_of(meta, "uid"));
    qstate_clear(q);
    const tly_node *st = tly_node_get(item, "status");
    const tly_node *c = own_condition(st);
    if (!c)
        return TLY_OK;  /* nothing of tally's there */
    q->have = held_digest(st, c);
    set_str(&q->cond_status, str_of(c, "status"));
    set_str(&q->ltt, str_of(c, "lastTransitionTime"));
    return TLY_OK;
}

/* LIST of the queues at `version`: what each holds now. */
static bool observe(tly_statusctl *s, const char *version)
{
    tly_kube_kind kk = {.kind = TLY_K_QUEUE, .group = "scheduling.run.ai", .version = version,
                        .resource = "queues", .namespaced = false, .served = true};
    char err[1024], *rv = NULL;
    int64_t date;
    int rc = tly_kube_list(s->k, &kk, 0, observe_item, s, &rv, &date, err, sizeof err);
    free(rv);
    if (rc != TLY_OK)
        say(s, TLY_LOG_WARN, "queue-status-list-failed", NULL, err);
    return rc == TLY_OK;
}

/* The Queue apiVersion the reflector reads (the fork's queues'), else scheduling.run.ai/v2. */
static const char *queue_api_version(tly_store *fork)
{
    const tly_queue *q = tly_store_count(fork, TLY_K_QUEUE) ? tly_store_at(fork, TLY_K_QUEUE, 0) : NULL;
    return q && q->meta.api_version && strchr(q->meta.api_version, '/') ? q->meta.api_version
                                                                        : "scheduling.run.ai/v2";
}

/* ---- the cycle --------------------------------------------------------------------- */

/* The apply of one queue's status; the server's answer. */
static tly_write_rc apply(tly_statusctl *s, const tly_queues *qs, uint32_t i, const char *api_version,
                          const verdict *v, const char *ltt, char *err, size_t errlen)
{
    char *body = apply_body(qs, i, api_version, v, ltt);
    char *path = tly_xasprintf("/apis/%s/queues/%s/status?fieldManager=" MANAGER "&force=true", api_version,
                               tly_queues_queue(qs, i)->meta.name);
    tly_write_rc rc = tly_write_patch(s->k, path, "application/apply-patch+yaml", body, err, errlen);
    free(path);
    free(body);
    return rc;
}

/* After a write: what the server holds now, or when to try again. */
static void written(tly_statusctl *s, qstate *st, tly_write_rc rc, char **digest, const char *status,
                    const char *ltt, int64_t now, const char *err)
{
    if (rc == TLY_WRITE_OK) {
        free(st->have);
        st->have = *digest;
        *digest = NULL;
        set_str(&st->cond_status, status);
        set_str(&st->ltt, ltt);
        st->fails = 0;
        st->next_ms = now + RATE_MS;
        return;
    }
    if (rc == TLY_WRITE_GONE)
        return;  /* the watch will show the queue deleted */
    if (!st->fails)
        say(s, TLY_LOG_WARN, "queue-status-failed", st->name, err);
    st->fails += st->fails < 6;
    int64_t wait = (int64_t)RATE_MS << st->fails;
    st->next_ms = now + (wait < MAX_BACKOFF_MS ? wait : MAX_BACKOFF_MS);
}

/* Writes queue i's status when it changed; returns the write's outcome, or -1 when none was due. */
static int sync_queue(tly_statusctl *s, const tly_queues *qs, uint32_t i, const char *api_version, int64_t now,
                      bool (*may_write)(void *ctx), void *ctx)
{
    qstate *st = state_of(s, tly_queues_queue(qs, i)->meta.name);
    verdict v = resolve(qs, tly_queues_queue(qs, i));
    char *dg = want_digest(qs, i, &v);
    int out = -1;
    if ((!st->have || strcmp(st->have, dg)) && now >= st->next_ms && may_write(ctx)) {
        /* lastTransitionTime moves only when the status does. */
        char stamp[32];
        tly_write_now(stamp);
        const char *status = cond_status(&v);
        char *ltt = tly_xstrdup(st->cond_status && st->ltt && !strcmp(st->cond_status, status) ? st->ltt : stamp);
        char err[1024];
        tly_write_rc rc = apply(s, qs, i, api_version, &v, ltt, err, sizeof err);
        written(s, st, rc, &dg, status, ltt, now, err);
        free(ltt);
        out = (int)rc;
    }
    free(dg);
    free(v.message);
    return out;
}

/* Marks the states of the fork's queues seen (a recreated queue starts afresh). */
static void mark_seen(tly_statusctl *s, const tly_queues *qs)
{
    for (size_t i = 0; i < s->n; i++)
        s->q[i].seen = false;
    for (uint32_t i = 0; i < tly_queues_count(qs); i++) {
        const tly_queue *q = tly_queues_queue(qs, i);
        qstate *st = state_of(s, q->meta.name);
        same_queue(st, q->meta.uid);
        st->seen = true;
    }
}

/* Forgets the queues that are gone. */
static void forget_unseen(tly_statusctl *s)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->q[i].seen)
            s->q[kept++] = s->q[i];
        else
            qstate_free(&s->q[i]);
    }
    s->n = kept;
}

/* Whether writes may go: the CRD has the fields and what the server holds is known. */
static bool prepared(tly_statusctl *s, const char *api_version, int64_t now)
{
    if (now - s->last_cycle_ms > GAP_MS)
        s->check_at = now;  /* another leader may have written meanwhile */
    s->last_cycle_ms = now;
    if (now >= s->check_at) {
        check_crd(s, strchr(api_version, '/') + 1, now);
        s->observed = s->crd == CRD_OK && observe(s, strchr(api_version, '/') + 1);
        s->check_at = now + (s->observed ? RESYNC_MS : RECHECK_MS);
    }
    return s->crd == CRD_OK && s->observed;
}

bool tly_statusctl_cycle(tly_statusctl *s, tly_store *fork, bool (*may_write)(void *ctx), void *ctx)
{
    int64_t now = mono_ms();
    const char *api_version = queue_api_version(fork);
    if (!prepared(s, api_version, now))
        return false;
    tly_queues *qs = tly_live_queues(fork);
    if (!qs)
        return false;
    mark_seen(s, qs);
    /* Round robin from the cursor, a bounded number of writes per cycle. */
    bool changed = false;
    uint32_t n = tly_queues_count(qs), writes = 0;
    uint32_t start = n ? (uint32_t)(s->cursor % n) : 0;
    for (uint32_t k = 0; k < n && writes < WRITES_PER_CYCLE; k++) {
        uint32_t i = (start + k) % n;
        int rc = sync_queue(s, qs, i, api_version, now, may_write, ctx);
        if (rc >= 0) {
            writes++;
            s->cursor = i + 1;
        }
        changed |= rc == TLY_WRITE_CONFLICT;
    }
    forget_unseen(s);
    tly_queues_destroy(qs);
    return changed;
}

/* ---- the gauges -------------------------------------------------------------------- */

static void label(FILE *out, const char *s) { tly_metrics_label(out, s); }

/* q as a plain decimal number, exactly (no floating point): 1.5, 0.001, 85899345920, -2. */
static void decimal(FILE *out, tly_qty q)
{
    unsigned __int128 u = q.nanos < 0 ? -(unsigned __int128)q.nanos : (unsigned __int128)q.nanos;
    unsigned __int128 ip = u / 1000000000u;
    unsigned frac = (unsigned)(u % 1000000000u);
    char digits[48];
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + (int)(ip % 10));
        ip /= 10;
    } while (ip);
    if (q.nanos < 0)
        fputc('-', out);
    while (nd)
        fputc(digits[--nd], out);
    if (frac) {
        char f[16];
        snprintf(f, sizeof f, "%09u", frac);
        for (int e = 8; e > 0 && f[e] == '0'; e--)
            f[e] = '\0';
        fprintf(out, ".%s", f);
    }
    fputc('\n', out);
}

static void series(FILE *out, const char *metric, const char *queue, const char *resource, tly_qty v)
{
    fprintf(out, "%s{queue=\"", metric);
    label(out, queue);
    fputs("\",resource=\"", out);
    label(out, resource);
    fputs("\"} ", out);
    decimal(out, v);
}

enum { G_USED = 0, G_LIMIT, G_HEADROOM, G_COUNT };

/* Gauge g of queue i and AccountedResource a into *v; false when it has no series (unlimited). */
static bool accounted_value(const tly_queues *qs, uint32_t i, uint32_t a, int g, tly_qty *v)
{
    tly_qty used = tly_queues_accounted_used(qs, i, a), lim = tly_queues_accounted_limit(qs, i, a);
    if (g == G_USED) {
        *v = used;
        return true;
    }
    if (tly_qty_sign(lim) < 0)
        return false;
    *v = lim;
    return g == G_LIMIT || tly_qty_sub(lim, used, v) == TLY_OK;
}

static void accounted_gauges(const tly_queues *qs, FILE *out)
{
    static const char *const help[G_COUNT][2] = {
        {"tally_queue_accounted_used", "What a queue's subtree uses of an AccountedResource (bound pods)."},
        {"tally_queue_accounted_limit", "A queue's effective limit of an AccountedResource (absent: unlimited)."},
        {"tally_queue_accounted_headroom", "Limit minus used of an AccountedResource (absent: unlimited)."},
    };
    for (int g = 0; g < G_COUNT; g++) {
        fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", help[g][0], help[g][1], help[g][0]);
        for (uint32_t i = 0; i < tly_queues_count(qs); i++)
            for (uint32_t a = 0; a < tly_queues_naccres(qs); a++) {
                tly_qty v;
                if (accounted_value(qs, i, a, g, &v))
                    series(out, help[g][0], tly_queues_queue(qs, i)->meta.name,
                           tly_queues_accres(qs, a)->meta.name, v);
            }
    }
}

static int cmp_name(const void *pa, const void *pb, void *names)
{
    return strcmp(tly_names_str(names, *(const uint32_t *)pa), tly_names_str(names, *(const uint32_t *)pb));
}

/*
** The resources of tally_queue_allocated, in name order: cpu and memory
** always, any other that some queue is allocated now (so every queue has a
** series of a resource in use, 0 where it has none).
*/
static uint32_t allocated_ids(const tly_queues *qs, const tly_names *names, uint32_t **out)
{
    uint32_t nn = tly_names_count(names), k = 0;
    bool *use = tly_xcalloc(nn + 1, sizeof *use);
    use[TLY_R_CPU] = use[TLY_R_MEMORY] = true;
    for (uint32_t i = 0; i < tly_queues_count(qs); i++) {
        const tly_rvec *al = tly_queues_allocated(qs, i);
        for (uint32_t id = 0; id < al->n && id < nn; id++)
            use[id] |= !tly_qty_is_zero(al->v[id]);
    }
    uint32_t *ids = tly_xmalloc((nn + 1) * sizeof *ids);
    for (uint32_t id = 0; id < nn; id++)
        if (use[id])
            ids[k++] = id;
    free(use);
    qsort_r(ids, k, sizeof *ids, cmp_name, (void *)names);
    *out = ids;
    return k;
}

static void allocated_gauges(const tly_queues *qs, const tly_names *names, FILE *out)
{
    fputs("# HELP tally_queue_allocated What a queue's subtree is allocated (bound pods), by resource, in the "
          "resource's units (cpu in cores, memory in bytes).\n# TYPE tally_queue_allocated gauge\n", out);
    uint32_t *ids;
    uint32_t n = allocated_ids(qs, names, &ids);
    for (uint32_t i = 0; i < tly_queues_count(qs); i++)
        for (uint32_t r = 0; r < n; r++)
            series(out, "tally_queue_allocated", tly_queues_queue(qs, i)->meta.name, tly_names_str(names, ids[r]),
                   tly_rvec_get(tly_queues_allocated(qs, i), ids[r]));
    free(ids);
}

/*
** A Queue's spec.resources value in the units of tally_queue_allocated:
** KAI's cpu millicores to cores, its memory MB (10^6 bytes) to bytes, GPUs
** as they are. False when there is no series: unset, -1 (unlimited) or any
** negative value, or a cpu value finer than a nano-core (not exact).
*/
static bool spec_value(const tly_queue_resource *r, bool quota, int scale, tly_qty *v)
{
    tly_qty q = quota ? r->quota : r->limit;
    if (!(quota ? r->has_quota : r->has_limit) || tly_qty_sign(q) < 0)
        return false;
    if (scale < 0) {
        if (q.nanos % 1000)
            return false;
        q.nanos /= 1000;
    } else if (scale > 0) {
        if (q.nanos > TLY_QTY_MAX_NANOS / 1000000)
            return false;
        q.nanos *= 1000000;
    }
    *v = q;
    return true;
}

/* tally_queue_limit and tally_queue_quota: each queue's own spec.resources. */
static void spec_gauges(const tly_queues *qs, FILE *out)
{
    static const char *const names[] = {"cpu", "memory", "nvidia.com/gpu"};
    static const int scales[] = {-1, 1, 0};
    for (int g = 0; g < 2; g++) {
        const char *metric = g ? "tally_queue_quota" : "tally_queue_limit";
        fprintf(out, "# HELP %s A queue's own spec.resources %s, in the units of tally_queue_allocated; absent "
                     "when unlimited.\n# TYPE %s gauge\n", metric, g ? "quota" : "limit", metric);
        for (uint32_t i = 0; i < tly_queues_count(qs); i++) {
            const tly_queue *q = tly_queues_queue(qs, i);
            const tly_queue_resource *r[] = {&q->cpu, &q->memory, &q->gpu};
            tly_qty v;
            for (int k = 0; k < 3; k++)
                if (q->has_resources && spec_value(r[k], g == 1, scales[k], &v))
                    series(out, metric, q->meta.name, names[k], v);
        }
    }
}

void tly_statusctl_queue_metrics(tly_store *fork, FILE *out)
{
    tly_queues *qs = tly_live_queues(fork);
    if (!qs)
        return;
    accounted_gauges(qs, out);
    allocated_gauges(qs, tly_store_names(fork), out);
    spec_gauges(qs, out);
    tly_queues_destroy(qs);
}
