/*
** lease.c: leader election on a Lease (lease.h).
**
** One thread per elector. The state other threads read (leading, term) is
** atomic: `renewed` is the monotonic time of the last successful write of
** the Lease as holder, and leading means it is younger than the renew
** deadline. Every write of the Lease carries the resourceVersion it was read
** at, so the API server's optimistic concurrency decides every race.
*/
#include "tally/lease.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tally/arena.h"
#include "tally/error.h"
#include "tally/json.h"
#include "tally/node.h"

struct tly_lease {
    tly_lease_options o;
    char *ns, *name, *identity;
    pthread_t th;
    bool started;
    atomic_int stop;         /* set by tly_lease_stop, read by the lease thread */
    atomic_int_fast64_t renewed;    /* monotonic ms of the last renewal as holder; 0: not holder */
    atomic_uint_fast64_t term, acquisitions;
    /* what was last observed (the elector's thread only) */
    char *seen_rv;
    int64_t seen_at;                /* monotonic ms when the record last changed */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* metav1.MicroTime: RFC 3339 with microseconds, UTC. */
static void micro_time(char buf[40])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, 40 - n, ".%06ldZ", ts.tv_nsec / 1000);
}

static void say(tly_lease *l, int level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void say(tly_lease *l, int level, const char *event, const char *fmt, ...)
{
    if (!l->o.log)
        return;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    l->o.log(l->o.log_ctx, level, event, msg);
}

static const char *str_at(const tly_node *n, const char *path)
{
    const tly_node *v = n ? tly_node_path(n, path) : NULL;
    return v && v->type == TLY_N_STRING ? v->str : NULL;
}

static long int_at(const tly_node *n, const char *path, long dflt)
{
    const tly_node *v = n ? tly_node_path(n, path) : NULL;
    return v && v->type == TLY_N_INT ? atol(v->str) : dflt;
}

/* The Lease as this replica's: holder, duration, times, transitions; rv for an update. */
static char *lease_body(tly_lease *l, const char *rv, const char *acquired, long transitions,
                        bool release)
{
    char now[40];
    micro_time(now);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        tly_oom();
    tly_json j;
    tly_json_init(&j, f, false);
    tly_json_begin_object(&j);
    tly_json_key(&j, "apiVersion");
    tly_json_string(&j, "coordination.k8s.io/v1");
    tly_json_key(&j, "kind");
    tly_json_string(&j, "Lease");
    tly_json_key(&j, "metadata");
    tly_json_begin_object(&j);
    tly_json_key(&j, "name");
    tly_json_string(&j, l->name);
    tly_json_key(&j, "namespace");
    tly_json_string(&j, l->ns);
    if (rv) {
        tly_json_key(&j, "resourceVersion");
        tly_json_string(&j, rv);
    }
    tly_json_end_object(&j);
    tly_json_key(&j, "spec");
    tly_json_begin_object(&j);
    tly_json_key(&j, "holderIdentity");
    tly_json_string(&j, release ? "" : l->identity);
    tly_json_key(&j, "leaseDurationSeconds");
    tly_json_int(&j, release ? 1 : (l->o.duration_ms + 999) / 1000);
    tly_json_key(&j, "acquireTime");
    tly_json_string(&j, acquired ? acquired : now);
    tly_json_key(&j, "renewTime");
    tly_json_string(&j, now);
    tly_json_key(&j, "leaseTransitions");
    tly_json_int(&j, transitions);
    tly_json_end_object(&j);
    tly_json_end_object(&j);
    fclose(f);
    return buf;
}

static char *lease_path(tly_lease *l, bool item)
{
    return item ? tly_xasprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", l->ns, l->name)
                : tly_xasprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases", l->ns);
}

/* One write of the Lease; true when the server took it. */
static bool write_lease(tly_lease *l, const char *method, const char *body)
{
    char *path = lease_path(l, strcmp(method, "POST") != 0);
    tly_kube_resp r;
    char err[1024];
    int rc = tly_kube_request(l->o.kube, method, path, "application/json", body, strlen(body), &r,
                              err, sizeof err);
    bool ok = rc == TLY_OK && (r.status == 200 || r.status == 201);
    if (rc != TLY_OK)
        say(l, 2, "lease-error", "%s", err);
    else if (!ok && r.status != 409) {
        tly_kube_explain_status(l->o.kube, &r, !strcmp(method, "POST") ? "create" : "update", "leases",
                                err, sizeof err);
        say(l, 2, "lease-error", "%s", err);
    }
    tly_kube_resp_free(&r);
    free(path);
    return ok;
}

static void became(tly_lease *l, bool leader, int64_t now)
{
    bool was = atomic_load(&l->renewed) != 0;
    atomic_store(&l->renewed, leader ? now : 0);
    if (leader && !was) {
        atomic_fetch_add(&l->term, 1);
        atomic_fetch_add(&l->acquisitions, 1);
        say(l, 1, "leader-elected", "%s holds lease %s/%s", l->identity, l->ns, l->name);
    } else if (!leader && was) {
        say(l, 2, "leader-lost", "%s no longer holds lease %s/%s", l->identity, l->ns, l->name);
    }
}

/* One round: read the Lease, then create, renew, take over or wait. */
static void round_once(tly_lease *l)
{
    char *path = lease_path(l, true);
    tly_kube_resp r;
    char err[1024];
    int rc = tly_kube_request(l->o.kube, "GET", path, NULL, NULL, 0, &r, err, sizeof err);
    free(path);
    int64_t now = mono_ms();
    if (rc != TLY_OK || (r.status != 200 && r.status != 404)) {
        if (rc == TLY_OK)
            tly_kube_explain_status(l->o.kube, &r, "get", "leases", err, sizeof err);
        say(l, 2, "lease-error", "%s", err);
        tly_kube_resp_free(&r);
        return;
    }
    if (r.status == 404) {
        tly_kube_resp_free(&r);
        char *body = lease_body(l, NULL, NULL, 0, false);
        if (write_lease(l, "POST", body))
            became(l, true, now);
        free(body);
        return;
    }
    tly_arena *a = tly_arena_create(4096);
    const tly_node *lease = tly_parse_value(r.body, r.len, a);
    const char *holder = str_at(lease, "spec.holderIdentity"), *rv = str_at(lease, "metadata.resourceVersion");
    const char *acquired = str_at(lease, "spec.acquireTime");
    long dur_s = int_at(lease, "spec.leaseDurationSeconds", (l->o.duration_ms + 999) / 1000);
    long transitions = int_at(lease, "spec.leaseTransitions", 0);
    if (rv && (!l->seen_rv || strcmp(rv, l->seen_rv))) {
        free(l->seen_rv);
        l->seen_rv = tly_xstrdup(rv);
        l->seen_at = now;
    }
    bool mine = holder && !strcmp(holder, l->identity);
    bool free_now = !holder || !*holder || now >= l->seen_at + dur_s * 1000;
    if (mine || free_now) {
        char *body = lease_body(l, rv, mine ? acquired : NULL, mine ? transitions : transitions + 1, false);
        if (write_lease(l, "PUT", body))
            became(l, true, now);
        free(body);
    }
    tly_arena_destroy(a);
    tly_kube_resp_free(&r);
}

static void release_lease(tly_lease *l)
{
    char *path = lease_path(l, true);
    tly_kube_resp r;
    char err[512];
    if (tly_kube_request(l->o.kube, "GET", path, NULL, NULL, 0, &r, err, sizeof err) == TLY_OK &&
        r.status == 200) {
        tly_arena *a = tly_arena_create(4096);
        const tly_node *lease = tly_parse_value(r.body, r.len, a);
        const char *holder = str_at(lease, "spec.holderIdentity");
        if (holder && !strcmp(holder, l->identity)) {
            char *body = lease_body(l, str_at(lease, "metadata.resourceVersion"),
                                    str_at(lease, "spec.acquireTime"),
                                    int_at(lease, "spec.leaseTransitions", 0), true);
            if (write_lease(l, "PUT", body))
                say(l, 1, "leader-released", "%s gave up lease %s/%s", l->identity, l->ns, l->name);
            free(body);
        }
        tly_arena_destroy(a);
    }
    tly_kube_resp_free(&r);
    free(path);
}

static void *run(void *arg)
{
    tly_lease *l = arg;
    while (!atomic_load(&l->stop)) {
        round_once(l);
        /* A leader that could not renew within the deadline stops leading. */
        int64_t renewed = atomic_load(&l->renewed);
        if (renewed && mono_ms() - renewed >= l->o.renew_deadline_ms)
            became(l, false, 0);
        for (int64_t end = mono_ms() + l->o.retry_ms; !atomic_load(&l->stop) && mono_ms() < end;) {
            struct timespec ts = {0, 20 * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

tly_lease *tly_lease_start(const tly_lease_options *o)
{
    tly_lease *l = tly_xcalloc(1, sizeof *l);
    l->o = *o;
    if (l->o.duration_ms <= 0)
        l->o.duration_ms = TLY_LEASE_DEFAULT_DURATION_MS;
    if (l->o.renew_deadline_ms <= 0)
        l->o.renew_deadline_ms = TLY_LEASE_DEFAULT_RENEW_MS;
    if (l->o.retry_ms <= 0)
        l->o.retry_ms = TLY_LEASE_DEFAULT_RETRY_MS;
    l->ns = tly_xstrdup(o->ns ? o->ns : "default");
    l->name = tly_xstrdup(o->name ? o->name : "tally");
    if (o->identity) {
        l->identity = tly_xstrdup(o->identity);
    } else {
        char host[256] = "tally";
        gethostname(host, sizeof host - 1);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        l->identity = tly_xasprintf("%s_%ld_%08lx", host, (long)getpid(),
                                    (unsigned long)(ts.tv_nsec ^ (ts.tv_sec << 7)) & 0xffffffffu);
    }
    l->o.ns = l->ns;
    l->o.name = l->name;
    l->o.identity = l->identity;
    l->started = pthread_create(&l->th, NULL, run, l) == 0;
    return l;
}

void tly_lease_stop(tly_lease *l)
{
    if (!l)
        return;
    atomic_store(&l->stop, 1);
    if (l->started)
        pthread_join(l->th, NULL);
    if (atomic_load(&l->renewed)) {
        atomic_store(&l->renewed, 0);  /* stop leading first, then give the Lease up */
        release_lease(l);
    }
    free(l->seen_rv);
    free(l->ns);
    free(l->name);
    free(l->identity);
    free(l);
}

bool tly_lease_leading(const tly_lease *l)
{
    int64_t renewed = atomic_load(&((tly_lease *)l)->renewed);
    return renewed && mono_ms() - renewed < l->o.renew_deadline_ms;
}

uint64_t tly_lease_term(const tly_lease *l) { return atomic_load(&((tly_lease *)l)->term); }
uint64_t tly_lease_acquisitions(const tly_lease *l)
{
    return atomic_load(&((tly_lease *)l)->acquisitions);
}
const char *tly_lease_identity(const tly_lease *l) { return l->identity; }
