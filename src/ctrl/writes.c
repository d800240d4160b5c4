/*
** writes.c: the controllers' API writes (writes.h).
**
** Bodies are written with the JSON writer (json.h), so every string is
** escaped; paths use the object's own namespace and name. The JSON patch of
** an ungate addresses the gate by its index and guards it with a `test` of
** the whole list, which is what makes the removal safe against a gate added
** or removed by anyone else in between: the server refuses the whole patch
** (422) and the controller decides again on fresher state.
*/
#include "writes.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/arena.h"
#include "tally/decode.h"
#include "tally/error.h"
#include "tally/gating.h"
#include "tally/json.h"
#include "strmap.h"

void tly_write_now(char buf[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static tly_write_rc classify(tly_kube *k, const tly_kube_resp *r, const char *verb, const char *what,
                             char *err, size_t errlen)
{
    if (r->status >= 200 && r->status < 300)
        return TLY_WRITE_OK;
    if (r->status == 409 || r->status == 422) {
        tly_kube_explain_status(k, r, verb, what, err, errlen);
        return TLY_WRITE_CONFLICT;
    }
    if (r->status == 404) {
        tly_kube_explain_status(k, r, verb, what, err, errlen);
        return TLY_WRITE_GONE;
    }
    tly_kube_explain_status(k, r, verb, what, err, errlen);
    return TLY_WRITE_FAILED;
}

static tly_write_rc send(tly_kube *k, const char *method, const char *path, const char *ctype,
                         const char *body, const char *verb, const char *what, char *err,
                         size_t errlen)
{
    tly_kube_resp r;
    int rc = tly_kube_request(k, method, path, ctype, body, strlen(body), &r, err, errlen);
    tly_write_rc out = rc == TLY_OK ? classify(k, &r, verb, what, err, errlen) : TLY_WRITE_FAILED;
    tly_kube_resp_free(&r);
    return out;
}

tly_write_rc tly_write_patch(tly_kube *k, const char *path, const char *ctype, const char *body,
                             char *err, size_t errlen)
{
    return send(k, "PATCH", path, ctype, body, "patch", path, err, errlen);
}

/* A JSON text written by fn into a fresh string. */
typedef struct {
    char *buf;
    size_t len;
    FILE *f;
    tly_json j;
} jbuf;

static void jb_open(jbuf *b)
{
    b->buf = NULL;
    b->len = 0;
    b->f = open_memstream(&b->buf, &b->len);
    if (!b->f)
        tly_oom();
    tly_json_init(&b->j, b->f, false);
}

static char *jb_close(jbuf *b)
{
    fclose(b->f);
    return b->buf;
}

/* JSON Pointer escaping of a map key ("~" -> "~0", "/" -> "~1"). */
static void pointer_key(FILE *f, const char *key)
{
    for (const char *c = key; *c; c++) {
        if (*c == '~')
            fputs("~0", f);
        else if (*c == '/')
            fputs("~1", f);
        else
            fputc(*c, f);
    }
}

tly_write_rc tly_write_ungate(tly_kube *k, const tly_pod *p, const char *admitted_at, char *err,
                              size_t errlen)
{
    int32_t at = -1;
    for (uint32_t i = 0; i < p->ngates; i++)
        if (p->gates[i] && !strcmp(p->gates[i], TLY_GATE))
            at = (int32_t)i;
    if (at < 0) {
        snprintf(err, errlen, "pod %s/%s does not carry %s", p->meta.ns, p->meta.name, TLY_GATE);
        return TLY_WRITE_CONFLICT;
    }
    jbuf b;
    jb_open(&b);
    tly_json_begin_array(&b.j);
    /* The gates as they are now, or nothing happens. */
    tly_json_begin_object(&b.j);
    tly_json_key(&b.j, "op");
    tly_json_string(&b.j, "test");
    tly_json_key(&b.j, "path");
    tly_json_string(&b.j, "/spec/schedulingGates");
    tly_json_key(&b.j, "value");
    tly_json_begin_array(&b.j);
    for (uint32_t i = 0; i < p->ngates; i++) {
        tly_json_begin_object(&b.j);
        tly_json_key(&b.j, "name");
        tly_json_string(&b.j, p->gates[i]);
        tly_json_end_object(&b.j);
    }
    tly_json_end_array(&b.j);
    tly_json_end_object(&b.j);
    tly_json_begin_object(&b.j);
    tly_json_key(&b.j, "op");
    tly_json_string(&b.j, "remove");
    tly_json_key(&b.j, "path");
    char gp[64];
    snprintf(gp, sizeof gp, "/spec/schedulingGates/%d", at);
    tly_json_string(&b.j, gp);
    tly_json_end_object(&b.j);
    /* The anchor of the Reserved bucket's expiry. */
    tly_json_begin_object(&b.j);
    tly_json_key(&b.j, "op");
    tly_json_string(&b.j, "add");
    if (p->meta.annotations.n) {
        char *ap = NULL;
        size_t alen = 0;
        FILE *f = open_memstream(&ap, &alen);
        if (!f)
            tly_oom();
        fputs("/metadata/annotations/", f);
        pointer_key(f, TLY_ADMITTED_ANNOTATION);
        fclose(f);
        tly_json_key(&b.j, "path");
        tly_json_string(&b.j, ap);
        free(ap);
        tly_json_key(&b.j, "value");
        tly_json_string(&b.j, admitted_at);
    } else {
        tly_json_key(&b.j, "path");
        tly_json_string(&b.j, "/metadata/annotations");
        tly_json_key(&b.j, "value");
        tly_json_begin_object(&b.j);
        tly_json_key(&b.j, TLY_ADMITTED_ANNOTATION);
        tly_json_string(&b.j, admitted_at);
        tly_json_end_object(&b.j);
    }
    tly_json_end_object(&b.j);
    tly_json_end_array(&b.j);
    char *body = jb_close(&b);
    char *path = tly_xasprintf("/api/v1/namespaces/%s/pods/%s", p->meta.ns, p->meta.name);
    tly_write_rc rc = send(k, "PATCH", path, "application/json-patch+json", body, "patch", "pods", err,
                           errlen);
    free(path);
    free(body);
    return rc;
}

tly_write_rc tly_write_pod_condition(tly_kube *k, const tly_pod *p, const char *type,
                                     const char *status, const char *reason, const char *message,
                                     char *err, size_t errlen)
{
    char now[32];
    tly_write_now(now);
    jbuf b;
    jb_open(&b);
    tly_json_begin_object(&b.j);
    tly_json_key(&b.j, "status");
    tly_json_begin_object(&b.j);
    tly_json_key(&b.j, "conditions");
    tly_json_begin_array(&b.j);
    tly_json_begin_object(&b.j);
    tly_json_key(&b.j, "type");
    tly_json_string(&b.j, type);
    tly_json_key(&b.j, "status");
    tly_json_string(&b.j, status);
    tly_json_key(&b.j, "reason");
    tly_json_string(&b.j, reason);
    tly_json_key(&b.j, "message");
    tly_json_string(&b.j, message ? message : "");
    tly_json_key(&b.j, "lastTransitionTime");
    tly_json_string(&b.j, now);
    tly_json_end_object(&b.j);
    tly_json_end_array(&b.j);
    tly_json_end_object(&b.j);
    tly_json_end_object(&b.j);
    char *body = jb_close(&b);
    char *path = tly_xasprintf("/api/v1/namespaces/%s/pods/%s/status", p->meta.ns, p->meta.name);
    tly_write_rc rc = send(k, "PATCH", path, "application/strategic-merge-patch+json", body, "patch",
                           "pods/status", err, errlen);
    free(path);
    free(body);
    return rc;
}

/*
** An event's name. kubectl's: the object's name and a unique hexadecimal
** suffix (the time in ns). With once: an FNV-1a hash of (uid, once) instead,
** the name cut so that the whole stays a 253-character DNS subdomain.
*/
static char *event_name(const char *name, const char *uid, const char *once)
{
    unsigned long long h;
    if (once) {
        const char *u = uid ? uid : "";
        h = tly_fnv1a(tly_fnv1a(tly_fnv1a(TLY_FNV_SEED, u, strlen(u)), "\x1f", 1), once, strlen(once));
        return tly_xasprintf("%.236s.%016llx", name, h);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h = (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
    return tly_xasprintf("%s.%llx", name, h);
}

tly_write_rc tly_write_event(tly_kube *k, const char *kind, const char *api_version, const char *ns,
                             const char *name, const char *uid, const char *type, const char *reason,
                             const char *message, const char *instance, const char *once, char *err,
                             size_t errlen)
{
    char now[32];
    tly_write_now(now);
    char *ename = event_name(name, uid, once);
    jbuf b;
    jb_open(&b);
    tly_json_begin_object(&b.j);
    tly_json_key(&b.j, "apiVersion");
    tly_json_string(&b.j, "v1");
    tly_json_key(&b.j, "kind");
    tly_json_string(&b.j, "Event");
    tly_json_key(&b.j, "metadata");
    tly_json_begin_object(&b.j);
    tly_json_key(&b.j, "name");
    tly_json_string(&b.j, ename);
    tly_json_key(&b.j, "namespace");
    tly_json_string(&b.j, ns);
    tly_json_end_object(&b.j);
    tly_json_key(&b.j, "involvedObject");
    tly_json_begin_object(&b.j);
    tly_json_key(&b.j, "apiVersion");
    tly_json_string(&b.j, api_version);
    tly_json_key(&b.j, "kind");
    tly_json_string(&b.j, kind);
    tly_json_key(&b.j, "namespace");
    tly_json_string(&b.j, ns);
    tly_json_key(&b.j, "name");
    tly_json_string(&b.j, name);
    if (uid) {
        tly_json_key(&b.j, "uid");
        tly_json_string(&b.j, uid);
    }
    tly_json_end_object(&b.j);
    tly_json_key(&b.j, "type");
    tly_json_string(&b.j, type);
    tly_json_key(&b.j, "reason");
    tly_json_string(&b.j, reason);
    tly_json_key(&b.j, "message");
    tly_json_string(&b.j, message ? message : "");
    tly_json_key(&b.j, "source");
    tly_json_begin_object(&b.j);
    tly_json_key(&b.j, "component");
    tly_json_string(&b.j, "tally");
    tly_json_end_object(&b.j);
    tly_json_key(&b.j, "reportingComponent");
    tly_json_string(&b.j, "tally");
    tly_json_key(&b.j, "reportingInstance");
    tly_json_string(&b.j, instance ? instance : "tally");
    tly_json_key(&b.j, "firstTimestamp");
    tly_json_string(&b.j, now);
    tly_json_key(&b.j, "lastTimestamp");
    tly_json_string(&b.j, now);
    tly_json_key(&b.j, "count");
    tly_json_int(&b.j, 1);
    tly_json_end_object(&b.j);
    char *body = jb_close(&b);
    char *path = tly_xasprintf("/api/v1/namespaces/%s/events", ns);
    tly_write_rc rc = send(k, "POST", path, "application/json", body, "create", "events", err, errlen);
    free(path);
    free(body);
    free(ename);
    return rc;
}

/* The JSON patch's first operation: the Run is still the version the fork holds. */
static void test_rv(tly_json *j, const tly_meta *m)
{
    tly_json_begin_object(j);
    tly_json_key(j, "op");
    tly_json_string(j, "test");
    tly_json_key(j, "path");
    tly_json_string(j, "/metadata/resourceVersion");
    tly_json_key(j, "value");
    tly_json_string(j, m->resource_version ? m->resource_version : "");
    tly_json_end_object(j);
}

/* op `add` of one string member of status (add replaces a member that exists). */
static void set_status_str(tly_json *j, const char *member, const char *value)
{
    char path[64];
    snprintf(path, sizeof path, "/status/%s", member);
    tly_json_begin_object(j);
    tly_json_key(j, "op");
    tly_json_string(j, "add");
    tly_json_key(j, "path");
    tly_json_string(j, path);
    tly_json_key(j, "value");
    tly_json_string(j, value);
    tly_json_end_object(j);
}

/* One status condition to write, as kruntimes' meta.SetStatusCondition sets it. */
typedef struct {
    const char *type, *status, *reason, *message;
} run_cond;

static void condition(tly_json *j, const run_cond *c, const char *since)
{
    tly_json_begin_object(j);
    tly_json_key(j, "type");
    tly_json_string(j, c->type);
    tly_json_key(j, "status");
    tly_json_string(j, c->status);
    tly_json_key(j, "reason");
    tly_json_string(j, c->reason);
    tly_json_key(j, "message");
    tly_json_string(j, c->message);
    tly_json_key(j, "lastTransitionTime");
    tly_json_string(j, since);
    tly_json_end_object(j);
}

/*
** Sets condition c on a Run that has a status: the one of its type is
** replaced where it is, else c is appended (*have_list: the conditions list
** exists). As meta.SetStatusCondition does, lastTransitionTime moves only
** when the status changes.
*/
static void set_condition(tly_json *j, const tly_run *r, const run_cond *c, const char *now,
                          bool *have_list)
{
    int32_t at = -1;
    for (uint32_t i = 0; i < r->conditions.n; i++)
        if (r->conditions.v[i].type && !strcmp(r->conditions.v[i].type, c->type))
            at = (int32_t)i;
    char since[32], path[64];
    snprintf(since, sizeof since, "%s", now);
    if (at >= 0) {
        const tly_condition *old = &r->conditions.v[at];
        if (old->status && !strcmp(old->status, c->status) && old->last_transition != TLY_NO_TIME)
            tly_format_time(old->last_transition, since);
        snprintf(path, sizeof path, "/status/conditions/%d", at);
    }
    tly_json_begin_object(j);
    tly_json_key(j, "op");
    tly_json_string(j, at >= 0 ? "replace" : "add");
    tly_json_key(j, "path");
    tly_json_string(j, at >= 0 ? path : *have_list ? "/status/conditions/-" : "/status/conditions");
    tly_json_key(j, "value");
    bool whole = at < 0 && !*have_list;
    if (whole)
        tly_json_begin_array(j);
    condition(j, c, since);
    if (whole)
        tly_json_end_array(j);
    tly_json_end_object(j);
    *have_list = true;
}

/*
** The Run's status may be absent (a new Run): then it is added whole;
** otherwise its members are set one by one so the others stay, and each
** condition is set as set_condition() says.
*/
static void run_patch_body(tly_json *j, const tly_run *r, const char *const *kv, size_t nkv,
                           const run_cond *conds, size_t nconds)
{
    char now[32];
    tly_write_now(now);
    tly_json_begin_array(j);
    test_rv(j, &r->meta);
    bool has_status = r->phase || r->assigned_pod || r->message || r->conditions.n;
    if (!has_status) {
        tly_json_begin_object(j);
        tly_json_key(j, "op");
        tly_json_string(j, "add");
        tly_json_key(j, "path");
        tly_json_string(j, "/status");
        tly_json_key(j, "value");
        tly_json_begin_object(j);
        for (size_t i = 0; i < nkv; i++) {
            tly_json_key(j, kv[2 * i]);
            tly_json_string(j, kv[2 * i + 1]);
        }
        if (nconds) {
            tly_json_key(j, "conditions");
            tly_json_begin_array(j);
            for (size_t i = 0; i < nconds; i++)
                condition(j, &conds[i], now);
            tly_json_end_array(j);
        }
        tly_json_end_object(j);
        tly_json_end_object(j);
        tly_json_end_array(j);
        return;
    }
    for (size_t i = 0; i < nkv; i++)
        set_status_str(j, kv[2 * i], kv[2 * i + 1]);
    bool have_list = r->conditions.n > 0;
    for (size_t i = 0; i < nconds; i++)
        set_condition(j, r, &conds[i], now, &have_list);
    tly_json_end_array(j);
}

static tly_write_rc run_patch(tly_kube *k, const tly_run *r, const char *body, char *err, size_t errlen)
{
    char *path = tly_xasprintf("/apis/%s/namespaces/%s/runs/%s/status",
                               r->meta.api_version ? r->meta.api_version : "kruntimes.io/v1alpha1",
                               r->meta.ns, r->meta.name);
    tly_write_rc rc = send(k, "PATCH", path, "application/json-patch+json", body, "patch", "runs/status",
                           err, errlen);
    free(path);
    return rc;
}

static tly_write_rc send_run_patch(tly_kube *k, const tly_run *r, const char *const *kv, size_t nkv,
                                   const run_cond *conds, size_t nconds, char *err, size_t errlen);

tly_write_rc tly_write_run_bind(tly_kube *k, const tly_run *r, const char *pod, const char *pod_uid,
                                char *err, size_t errlen)
{
    char *msg = tly_xasprintf("assigned to Runtime Pod %s", pod);
    const char *kv[] = {"phase", "Scheduled", "assignedPod", pod, "assignedPodUID", pod_uid ? pod_uid : "",
                        "message", msg};
    const run_cond c = {"Scheduled", "True", "Assigned", msg};
    tly_write_rc rc = send_run_patch(k, r, kv, 4, &c, 1, err, errlen);
    free(msg);
    return rc;
}

/* Builds the Run status patch (run_patch_body) and sends it. */
static tly_write_rc send_run_patch(tly_kube *k, const tly_run *r, const char *const *kv, size_t nkv,
                                   const run_cond *conds, size_t nconds, char *err, size_t errlen)
{
    jbuf b;
    jb_open(&b);
    run_patch_body(&b.j, r, kv, nkv, conds, nconds);
    char *body = jb_close(&b);
    tly_write_rc rc = run_patch(k, r, body, err, errlen);
    free(body);
    return rc;
}

tly_write_rc tly_write_run_status(tly_kube *k, const tly_run *r, const char *phase, const char *message,
                                  char *err, size_t errlen)
{
    const char *kv[] = {"phase", phase, "message", message ? message : ""};
    return send_run_patch(k, r, kv, 2, NULL, 0, err, errlen);
}

tly_write_rc tly_write_run_terminal(tly_kube *k, const tly_run *r, const char *phase, const char *reason,
                                    const char *message, char *err, size_t errlen)
{
    char now[32];
    tly_write_now(now);
    const char *msg = message ? message : "";
    const char *kv[] = {"phase", phase, "message", msg, "completionTime", now};
    /* runstatus.SetTerminal: Running and Completed, both False, with the reason and message. */
    const run_cond c[] = {{"Running", "False", reason, msg}, {"Completed", "False", reason, msg}};
    return send_run_patch(k, r, kv, 3, c, 2, err, errlen);
}

/* ---- writer threads ------------------------------------------------------------ */

typedef struct job {
    void (*fn)(void *arg);
    void *arg;
    struct job *next;
} job;

struct tly_write_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    job *head, *tail;
    size_t busy, max;        /* jobs queued or running, and the bound */
    bool stop;
    pthread_t *th;
    int nth;
};

static void *pool_run(void *arg)
{
    tly_write_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->work, &p->mu);
        if (!p->head)
            break;
        job *j = p->head;
        p->head = j->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        j->fn(j->arg);
        free(j);
        pthread_mutex_lock(&p->mu);
        p->busy--;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

tly_write_pool *tly_write_pool_create(int threads, int queued)
{
    tly_write_pool *p = tly_xcalloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->max = queued > 0 ? (size_t)queued : 1;
    p->th = tly_xcalloc((size_t)(threads > 0 ? threads : 1), sizeof *p->th);
    for (int i = 0; i < threads; i++)
        if (pthread_create(&p->th[p->nth], NULL, pool_run, p) == 0)
            p->nth++;
    return p;
}

void tly_write_pool_submit(tly_write_pool *p, void (*fn)(void *arg), void *arg)
{
    if (!p || !p->nth) {
        fn(arg);
        return;
    }
    job *j = tly_xmalloc(sizeof *j);
    *j = (job){fn, arg, NULL};
    pthread_mutex_lock(&p->mu);
    while (p->busy >= p->max)
        pthread_cond_wait(&p->done, &p->mu);
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    p->busy++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
}

void tly_write_pool_wait(tly_write_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    while (p->busy)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void tly_write_pool_destroy(tly_write_pool *p)
{
    if (!p)
        return;
    tly_write_pool_wait(p);
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nth; i++)
        pthread_join(p->th[i], NULL);
    free(p->th);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
