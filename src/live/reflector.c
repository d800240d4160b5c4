/*
** reflector.c: list and watch every kind into the live state
** (reflector.h).
**
** One thread per kind, so a slow or broken watch of one kind never holds
** another up; the live state serializes their events. Everything a reader
** of the figures (readiness, /metrics) looks at is an atomic.
**
** The resourceVersion a watch resumes from is the newest one seen: the
** list's, then every event's object, then every bookmark's. The watch
** stream is cut into events by a framer as bytes arrive, and each event is
** parsed, applied and dropped: memory follows the largest event.
*/
#include "tally/reflector.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/arena.h"
#include "tally/crd.h"
#include "tally/diag.h"
#include "tally/error.h"
#include "tally/objects.h"

#define NKINDS 14
#define LOG_INFO 1
#define LOG_WARN 2

enum { EV_ADDED, EV_MODIFIED, EV_DELETED, EV_BOOKMARK, EV_ERROR, EV_TYPES };
static const char *const ev_names[EV_TYPES] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

typedef struct {
    struct tly_reflectors *set;
    int index;
    pthread_t th;
    bool started;
    /* where the kind is served (valid once served) */
    int kind;
    char group[128], version[32], resource[128];
    tly_kube_kind kk;
    char *rv;
    uint64_t seed;
    /* figures, read by other threads */
    atomic_int served, synced, known;   /* known: discovery has answered once */
    atomic_uint_fast64_t ev[EV_TYPES];
    atomic_uint_fast64_t lists, relists, restarts;
    atomic_int_fast64_t broken_since;   /* monotonic ms of the first failure, 0 when fine */
    atomic_int_fast64_t last_event;     /* monotonic ms, 0 when none yet */
} refl;

struct tly_reflectors {
    tly_reflectors_options o;
    atomic_int stop;         /* set by tly_reflectors_stop, read by every reflector thread */
    refl r[NKINDS];
    int n;
    pthread_t crd_th;        /* crd_run */
    bool crd_started;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void logk(refl *r, int level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void logk(refl *r, int level, const char *event, const char *fmt, ...)
{
    const tly_reflectors_options *o = &r->set->o;
    if (!o->log)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    o->log(o->log_ctx, level, event, tly_kind_name(r->kind), msg);
}

/* Sleeps up to ms, waking early when the set is stopped. */
static void nap_set(const struct tly_reflectors *s, int64_t ms)
{
    int64_t end = mono_ms() + ms;
    while (!atomic_load(&s->stop)) {
        int64_t left = end - mono_ms();
        if (left <= 0)
            return;
        struct timespec ts = {0, (long)(left > 100 ? 100 : left) * 1000000};
        nanosleep(&ts, NULL);
    }
}

static void nap(refl *r, int64_t ms) { nap_set(r->set, ms); }

static uint64_t rnd(refl *r)
{
    r->seed ^= r->seed << 13;
    r->seed ^= r->seed >> 7;
    r->seed ^= r->seed << 17;
    return r->seed;
}

/* The next backoff: doubling from 200 ms to the maximum, with jitter of up to half. */
static int64_t backoff(refl *r, int64_t *cur)
{
    int64_t max = r->set->o.backoff_max_ms > 0 ? r->set->o.backoff_max_ms : 30000;
    int64_t b = *cur ? *cur : 200;
    *cur = b * 2 > max ? max : b * 2;
    return b / 2 + (int64_t)(rnd(r) % (uint64_t)(b / 2 + 1));
}

static void mark_broken(refl *r)
{
    int_fast64_t zero = 0;
    atomic_compare_exchange_strong(&r->broken_since, &zero, mono_ms());
}

static void mark_fine(refl *r) { atomic_store(&r->broken_since, 0); }

static void set_rv(refl *r, const char *rv)
{
    if (!rv || !*rv)
        return;
    free(r->rv);
    r->rv = tly_xstrdup(rv);
}

static const char *str_at(const tly_node *n, const char *key)
{
    const tly_node *v = n ? tly_node_get(n, key) : NULL;
    return v && v->type == TLY_N_STRING ? v->str : NULL;
}

/* ---- discovery ------------------------------------------------------------------- */

/* Asks where the kind is served; 1 served, 0 absent, -1 the server could not say. */
static int discover(refl *r)
{
    char err[1024];
    tly_kube_discovery *d;
    if (tly_kube_discover(r->set->o.kube, &d, err, sizeof err) != TLY_OK) {
        logk(r, LOG_WARN, "discovery-failed", "%s", err);
        return -1;
    }
    const tly_kube_kind *kk = NULL;
    for (uint32_t i = 0; i < tly_kube_discovery_count(d); i++)
        if (tly_kube_discovery_at(d, i)->kind == r->kind)
            kk = tly_kube_discovery_at(d, i);
    int served = kk && kk->served;
    if (served) {
        snprintf(r->group, sizeof r->group, "%s", kk->group);
        snprintf(r->version, sizeof r->version, "%s", kk->version);
        snprintf(r->resource, sizeof r->resource, "%s", kk->resource);
        r->kk = *kk;
        r->kk.group = r->group;
        r->kk.version = r->version;
        r->kk.resource = r->resource;
    }
    tly_kube_discovery_free(d);
    return served;
}

/* ---- LIST ----------------------------------------------------------------------- */

typedef struct {
    refl *r;
    tly_live_sweep *sw;
} list_ctx;

static int on_item(void *ctx, const tly_node *it)
{
    list_ctx *x = ctx;
    refl *r = x->r;
    tly_live *live = r->set->o.live;
    if (!it) {
        /* The list restarts (its snapshot expired): forget what it had kept. */
        tly_live_sweep_abort(x->sw);
        x->sw = tly_live_sweep_begin(live, r->kind);
        return TLY_OK;
    }
    const tly_node *md = tly_node_get(it, "metadata");
    const char *ns = str_at(md, "namespace"), *name = str_at(md, "name");
    if (!name)
        return TLY_OK;
    char *path = tly_kube_object_path(&r->kk, ns, name);
    tly_live_apply(live, TLY_LIVE_UPSERT, it, path);
    free(path);
    tly_live_sweep_keep(x->sw, tly_kind_namespaced(r->kind) ? ns : NULL, name);
    return atomic_load(&r->set->stop) ? TLY_EINVAL : TLY_OK;
}

/* Lists the kind; 0 listed, 404 not served any more, -1 failed. */
static int list_kind(refl *r)
{
    tly_live *live = r->set->o.live;
    list_ctx x = {r, tly_live_sweep_begin(live, r->kind)};
    char err[1024], *rv = NULL;
    int rc = tly_kube_list(r->set->o.kube, &r->kk, r->set->o.page, on_item, &x, &rv, NULL, err,
                           sizeof err);
    if (rc != TLY_OK) {
        tly_live_sweep_abort(x.sw);
        if (!atomic_load(&r->set->stop))
            logk(r, LOG_WARN, "list-failed", "%s", err);
        return rc == TLY_ENOENT ? 404 : -1;
    }
    uint32_t gone = tly_live_sweep_end(live, x.sw);
    set_rv(r, rv);
    tly_live_note_rv(live, r->kind, rv);
    free(rv);
    if (atomic_fetch_add(&r->lists, 1) > 0) {
        atomic_fetch_add(&r->relists, 1);
        logk(r, LOG_INFO, "relisted", "%u objects, %u deleted that vanished while the watch was down",
             tly_live_count(live, r->kind), gone);
    }
    return 0;
}

/* ---- WATCH ---------------------------------------------------------------------- */

typedef struct {
    refl *r;
    tly_jframer *fr;
    tly_arena *a;
    bool expired;       /* an ERROR event with 410 */
    bool got_bytes;
} watch_ctx;

static int on_event(void *ctx, const char *value, size_t len)
{
    watch_ctx *w = ctx;
    refl *r = w->r;
    tly_arena_reset(w->a);
    tly_node *ev = tly_parse_api_value(value, len, w->a);
    const char *type = ev ? str_at(ev, "type") : NULL;
    tly_node *obj = ev ? (tly_node *)tly_node_get(ev, "object") : NULL;
    if (!type || !obj || obj->type != TLY_N_MAP) {
        logk(r, LOG_WARN, "watch-event-unreadable", "an event that is not {type, object}; restarting");
        return TLY_EINVAL;
    }
    int t = 0;
    while (t < EV_TYPES && strcmp(type, ev_names[t]))
        t++;
    if (t == EV_TYPES)
        return TLY_OK;  /* a type this client does not know: skip it, as client-go does */
    atomic_fetch_add(&r->ev[t], 1);
    atomic_store(&r->last_event, mono_ms());
    if (t == EV_ERROR) {
        const tly_node *code = tly_node_get(obj, "code");
        w->expired = code && code->str && !strcmp(code->str, "410");
        logk(r, LOG_WARN, "watch-error", "%s", str_at(obj, "message") ? str_at(obj, "message") : "ERROR event");
        return TLY_EINVAL;
    }
    const tly_node *md = tly_node_get(obj, "metadata");
    set_rv(r, str_at(md, "resourceVersion"));
    if (t == EV_BOOKMARK) {
        tly_live_note_rv(r->set->o.live, r->kind, str_at(md, "resourceVersion"));
        return TLY_OK;
    }
    const char *ns = str_at(md, "namespace"), *name = str_at(md, "name");
    if (!name)
        return TLY_OK;
    char *path = tly_kube_object_path(&r->kk, ns, name);
    tly_live_apply(r->set->o.live, t == EV_DELETED ? TLY_LIVE_DELETE : TLY_LIVE_UPSERT, obj, path);
    free(path);
    return TLY_OK;
}

static int on_bytes(void *ctx, const char *data, size_t len)
{
    watch_ctx *w = ctx;
    if (!w->got_bytes) {
        w->got_bytes = true;
        mark_fine(w->r);
    }
    return tly_jframer_feed(w->fr, data, len, on_event, w);
}

/* One watch; what to do next: 0 watch again, 1 relist, 2 not served, -1 back off. */
static int watch_once(refl *r)
{
    const tly_reflectors_options *o = &r->set->o;
    long timeout = o->watch_timeout_s > 0 ? o->watch_timeout_s : 300 + (long)(rnd(r) % 300);
    char *base = tly_kube_kind_path(&r->kk);
    char *path = tly_xasprintf("%s?watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%ld",
                               base, r->rv ? r->rv : "0", timeout);
    free(base);
    watch_ctx w = {.r = r, .fr = tly_jframer_create(0), .a = tly_arena_create(64 * 1024)};
    tly_kube_resp resp;
    char err[1024];
    int rc = tly_kube_stream(o->kube, path, on_bytes, &w, &r->set->stop,
                             o->idle_ms > 0 ? o->idle_ms : 90000, &resp, err, sizeof err);
    int next;
    if (atomic_load(&r->set->stop)) {
        next = 0;
    } else if (w.expired || resp.status == 410) {
        logk(r, LOG_INFO, "watch-expired", "resourceVersion %s is too old: relisting", r->rv ? r->rv : "");
        next = 1;
    } else if (resp.status == 404) {
        next = 2;
    } else if (rc == TLY_OK && resp.status == 200 && tly_jframer_pending(w.fr) == 0 && !w.expired) {
        next = 0;  /* the server ended the watch at its timeout */
    } else {
        if (resp.status && resp.status != 200) {
            char why[1024];
            tly_kube_explain_status(o->kube, &resp, "watch", r->resource, why, sizeof why);
            logk(r, LOG_WARN, "watch-failed", "%s", why);
        } else {
            logk(r, LOG_WARN, "watch-broken", "%s", rc == TLY_OK ? "the stream ended inside an event" : err);
        }
        next = -1;
    }
    tly_kube_resp_free(&resp);
    tly_jframer_destroy(w.fr);
    tly_arena_destroy(w.a);
    free(path);
    return next;
}

/* ---- the thread ----------------------------------------------------------------- */

/* The kind went away (its CRD was removed): everything of it is deleted. */
static void forget_kind(refl *r)
{
    tly_live *live = r->set->o.live;
    tly_live_sweep_end(live, tly_live_sweep_begin(live, r->kind));
    atomic_store(&r->served, 0);
    logk(r, LOG_WARN, "kind-removed", "%s/%s %s is no longer served; its objects are gone",
         r->group, r->version, r->resource);
}

/* Waits until the kind is served; false when stopped. */
static bool until_served(refl *r, int64_t *bo)
{
    const tly_reflectors_options *o = &r->set->o;
    bool said_absent = false;
    while (!atomic_load(&r->set->stop)) {
        int s = discover(r);
        if (s > 0) {
            atomic_store(&r->served, 1);
            atomic_store(&r->known, 1);
            logk(r, LOG_INFO, "kind-served", "at %s%s%s (%s)", r->group, *r->group ? "/" : "",
                 r->version, r->resource);
            return true;
        }
        if (s == 0) {
            atomic_store(&r->known, 1);
            atomic_store(&r->synced, 1);   /* an absent kind counts as synced */
            mark_fine(r);
            *bo = 0;
            if (!said_absent)
                logk(r, LOG_INFO, "kind-absent", "not served by the API server (its CRD is not installed); "
                     "checked again every %ld s", (o->recheck_ms > 0 ? o->recheck_ms : 30000) / 1000);
            said_absent = true;
            nap(r, o->recheck_ms > 0 ? o->recheck_ms : 30000);
        } else {
            mark_broken(r);
            nap(r, backoff(r, bo));
        }
    }
    return false;
}

static void *run(void *arg)
{
    refl *r = arg;
    int64_t bo = 0;
    while (!atomic_load(&r->set->stop)) {
        if (!atomic_load(&r->served) && !until_served(r, &bo))
            break;
        int lr = list_kind(r);
        if (lr == 404) {
            forget_kind(r);
            continue;
        }
        if (lr != 0) {
            mark_broken(r);
            nap(r, backoff(r, &bo));
            continue;
        }
        atomic_store(&r->synced, 1);
        mark_fine(r);
        for (;;) {
            int next = watch_once(r);
            if (atomic_load(&r->set->stop) || next == 1)
                break;
            if (next == 2) {
                forget_kind(r);
                break;
            }
            if (next < 0) {
                atomic_fetch_add(&r->restarts, 1);
                mark_broken(r);
                nap(r, backoff(r, &bo));
            } else {
                bo = 0;
            }
        }
    }
    return NULL;
}

/* ---- the CustomResourceDefinitions -------------------------------------------------- */

typedef struct {
    tly_crdset *set;
} crd_ctx;

static int on_crd(void *ctx, const tly_node *it)
{
    crd_ctx *x = ctx;
    if (!it) {
        /* The LIST restarted: forget what it gave so far. */
        tly_crdset_destroy(x->set);
        x->set = tly_crdset_create();
        return TLY_OK;
    }
    const char *name = str_at(tly_node_get(it, "metadata"), "name");
    char *path = tly_xasprintf("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s", name ? name : "");
    tly_diags *dg = tly_diags_create();  /* a CRD tally cannot use is simply not used */
    tly_crdset_add(x->set, it, path, dg);
    tly_diags_destroy(dg);
    free(path);
    return TLY_OK;
}

/* One LIST of the CRDs of tally's groups into the live state; false when it failed (err). */
static bool list_crds(tly_reflectors *s, char *err, size_t errlen)
{
    tly_kube_discovery *d;
    if (tly_kube_discover(s->o.kube, &d, err, errlen) != TLY_OK)
        return false;
    bool ok = true;
    if (tly_kube_discovery_crds(d)->served) {
        crd_ctx x = {tly_crdset_create()};
        char *rv = NULL;
        ok = tly_kube_list_crds(s->o.kube, d, s->o.page, on_crd, &x, &rv, NULL, err, errlen) == TLY_OK;
        free(rv);
        if (ok) {
            tly_live_set_crds(s->o.live, x.set);
            x.set = NULL;
        }
        tly_crdset_destroy(x.set);
    }
    tly_kube_discovery_free(d);
    return ok;
}

/*
** The CRDs that the object webhooks check reviewed objects against: listed
** at start and again every recheck period (30 s), since they change only
** when an operator installs or upgrades one. A failed LIST keeps the last
** set and is logged once until one succeeds again. They do not count for
** readiness: the API server has already checked every object against its
** CRD before it calls a webhook, so a decision without them is no weaker
** than one on a state that has none.
*/
static void *crd_run(void *arg)
{
    tly_reflectors *s = arg;
    bool failing = false;
    long period = s->o.recheck_ms ? s->o.recheck_ms : 30000;
    while (!atomic_load(&s->stop)) {
        char err[1024] = "";
        bool ok = list_crds(s, err, sizeof err);
        if (!ok && !failing && s->o.log)
            s->o.log(s->o.log_ctx, LOG_WARN, "crds-failed", "CustomResourceDefinition", err);
        failing = !ok;
        nap_set(s, period);
    }
    return NULL;
}

/* The kinds of contract section 2, in the order discovery lists them. */
tly_reflectors *tly_reflectors_start(const tly_reflectors_options *o)
{
    tly_reflectors *s = tly_xcalloc(1, sizeof *s);
    s->o = *o;
    static const int kinds[NKINDS] = {
        TLY_K_NAMESPACE, TLY_K_NODE, TLY_K_POD, TLY_K_PRIORITY_CLASS, TLY_K_CONFIG, TLY_K_QUEUE,
        TLY_K_ACCOUNTED_RESOURCE, TLY_K_PODGROUP, TLY_K_DEVICE_CLASS, TLY_K_RESOURCE_SLICE,
        TLY_K_RESOURCE_CLAIM, TLY_K_RESOURCE_CLAIM_TEMPLATE, TLY_K_RUNTIME, TLY_K_RUN,
    };
    s->n = NKINDS;
    for (int i = 0; i < NKINDS; i++) {
        refl *r = &s->r[i];
        r->set = s;
        r->index = i;
        r->kind = kinds[i];
        r->seed = 0x9e3779b97f4a7c15ull ^ ((uint64_t)(i + 1) * 0xbf58476d1ce4e5b9ull) ^ (uint64_t)mono_ms();
        r->started = pthread_create(&r->th, NULL, run, r) == 0;
    }
    s->crd_started = pthread_create(&s->crd_th, NULL, crd_run, s) == 0;
    return s;
}

void tly_reflectors_stop(tly_reflectors *s)
{
    if (!s)
        return;
    atomic_store(&s->stop, 1);
    if (s->crd_started)
        pthread_join(s->crd_th, NULL);
    for (int i = 0; i < s->n; i++) {
        if (s->r[i].started)
            pthread_join(s->r[i].th, NULL);
        free(s->r[i].rv);
    }
    free(s);
}

bool tly_reflectors_ready(const tly_reflectors *s, long stale_ms, char *why, size_t whylen)
{
    int64_t now = mono_ms();
    for (int i = 0; i < s->n; i++) {
        const refl *r = &s->r[i];
        int64_t since = atomic_load(&r->broken_since);
        if (!atomic_load(&r->synced)) {
            snprintf(why, whylen, "%s has not been listed yet", tly_kind_name(r->kind));
            return false;
        }
        if (since && now - since > stale_ms) {
            snprintf(why, whylen, "the watch of %s has been broken for %lld s", tly_kind_name(r->kind),
                     (long long)((now - since) / 1000));
            return false;
        }
    }
    if (whylen)
        why[0] = '\0';
    return true;
}

void tly_reflectors_stats(const tly_reflectors *s, int kind, tly_reflector_stats *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < s->n; i++) {
        const refl *r = &s->r[i];
        if (r->kind != kind)
            continue;
        out->served = atomic_load(&r->served);
        out->synced = atomic_load(&r->synced);
        out->added = atomic_load(&r->ev[EV_ADDED]);
        out->modified = atomic_load(&r->ev[EV_MODIFIED]);
        out->deleted = atomic_load(&r->ev[EV_DELETED]);
        out->bookmarks = atomic_load(&r->ev[EV_BOOKMARK]);
        out->errors = atomic_load(&r->ev[EV_ERROR]);
        out->lists = atomic_load(&r->lists);
        out->relists = atomic_load(&r->relists);
        out->restarts = atomic_load(&r->restarts);
        int64_t since = atomic_load(&r->broken_since);
        out->broken_ms = since ? mono_ms() - since : 0;
    }
}

void tly_reflectors_metrics(const tly_reflectors *s, FILE *out)
{
    fputs("# HELP tally_watch_events_total Watch events applied to the live state, by kind and type.\n"
          "# TYPE tally_watch_events_total counter\n", out);
    for (int i = 0; i < s->n; i++)
        for (int t = 0; t < EV_TYPES; t++)
            fprintf(out, "tally_watch_events_total{kind=\"%s\",type=\"%s\"} %llu\n",
                    tly_kind_name(s->r[i].kind), ev_names[t],
                    (unsigned long long)atomic_load(&s->r[i].ev[t]));
    fputs("# HELP tally_watch_relists_total LISTs after the first (a watch that could not resume).\n"
          "# TYPE tally_watch_relists_total counter\n", out);
    for (int i = 0; i < s->n; i++)
        fprintf(out, "tally_watch_relists_total{kind=\"%s\"} %llu\n", tly_kind_name(s->r[i].kind),
                (unsigned long long)atomic_load(&s->r[i].relists));
    fputs("# HELP tally_watch_restarts_total Watches that broke and were started again.\n"
          "# TYPE tally_watch_restarts_total counter\n", out);
    for (int i = 0; i < s->n; i++)
        fprintf(out, "tally_watch_restarts_total{kind=\"%s\"} %llu\n", tly_kind_name(s->r[i].kind),
                (unsigned long long)atomic_load(&s->r[i].restarts));
    fputs("# HELP tally_watch_last_event_age_seconds Seconds since the last watch event of the kind.\n"
          "# TYPE tally_watch_last_event_age_seconds gauge\n", out);
    int64_t now = mono_ms();
    for (int i = 0; i < s->n; i++) {
        int64_t last = atomic_load(&s->r[i].last_event);
        if (last)
            fprintf(out, "tally_watch_last_event_age_seconds{kind=\"%s\"} %.3f\n",
                    tly_kind_name(s->r[i].kind), (double)(now - last) / 1000.0);
    }
    fputs("# HELP tally_objects Objects of each kind in the live state.\n"
          "# TYPE tally_objects gauge\n", out);
    for (int i = 0; i < s->n; i++)
        fprintf(out, "tally_objects{kind=\"%s\"} %u\n", tly_kind_name(s->r[i].kind),
                tly_live_count(s->o.live, s->r[i].kind));
}
