/*
** runctl.c: kruntimes' Run scheduler on the live state (runctl.h; seed
** kruntimes-run-resource-accounting.txt; docs/controllers.md).
**
** A cycle runs the Run engine (runsched.h: prefilter, filter on every
** requested resource, least-loaded score, reserve) on one fork, then writes
** what kruntimes' scheduler writes:
**   - a Run the engine placed: the bind (phase Scheduled, assignedPod,
**     assignedPodUID, condition Scheduled/Assigned), guarded by the Run's
**     resourceVersion (writes.c);
**   - a Run left Pending: its message, only when it changed;
**   - a Run that cannot run, as kruntimes' scheduler ends it: a cancel
**     request Cancelled and an invalid request Failed/InvalidResources, both
**     as runstatus.SetTerminal writes them (conditions Running and Completed
**     False, completionTime); an affinity that does not compile Failed with
**     "pod selection failed: ..." and nothing else.
** The engine also plays runtimed's admission; those results are not written:
** runtimed claims its Runs itself, through /validate/runs-status.
**
** Assumptions are kept until the watch confirms them: after a cycle that
** bound Runs, the next cycle waits until the fork shows every bound Run out
** of Pending (or 10 s pass), so a Run is never placed twice and a Pod's
** usage never misses a bind in flight. The kruntimes scheduler deployment
** must be scaled to 0 (docs/controllers.md): two schedulers would race.
*/
#include "runctl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/arena.h"
#include "tally/kruntimes.h"
#include "tally/metrics.h"
#include "tally/runsched.h"
#include "writes.h"

#define CONFIRM_MS 10000

typedef struct {
    char *ns, *name, *uid;
    int64_t at_ms;
} bound;

typedef struct {
    char *ns, *runtime, *reason;
    uint64_t n;
} pending_gauge;

typedef struct {
    char *ns, *runtime, *resource;
    double value;
} util_gauge;

/* A write the server refused for this version of the Run: not sent again until it changes. */
typedef struct {
    char *key, *rv;
} refused;

struct tly_runctl {
    tly_kube *k;
    refused *rf;
    size_t nrf;
    tly_ctrl_log_fn log;
    void *log_ctx;
    bound *b;
    size_t nb, capb;
    pthread_mutex_t mu;      /* the gauges, read by /metrics */
    pending_gauge *pg;
    size_t npg;
    util_gauge *ug;
    size_t nug;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

tly_runctl *tly_runctl_create(tly_kube *k, tly_ctrl_log_fn log, void *log_ctx)
{
    tly_runctl *r = tly_xcalloc(1, sizeof *r);
    r->k = k;
    r->log = log;
    r->log_ctx = log_ctx;
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

static void free_gauges(tly_runctl *r)
{
    for (size_t i = 0; i < r->npg; i++) {
        free(r->pg[i].ns);
        free(r->pg[i].runtime);
        free(r->pg[i].reason);
    }
    free(r->pg);
    for (size_t i = 0; i < r->nug; i++) {
        free(r->ug[i].ns);
        free(r->ug[i].runtime);
        free(r->ug[i].resource);
    }
    free(r->ug);
    r->pg = NULL;
    r->ug = NULL;
    r->npg = r->nug = 0;
}

void tly_runctl_destroy(tly_runctl *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nb; i++) {
        free(r->b[i].ns);
        free(r->b[i].name);
        free(r->b[i].uid);
    }
    free(r->b);
    for (size_t i = 0; i < r->nrf; i++) {
        free(r->rf[i].key);
        free(r->rf[i].rv);
    }
    free(r->rf);
    free_gauges(r);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static void say(tly_runctl *r, int level, const char *event, const tly_run *run, const char *msg)
{
    char key[512];
    snprintf(key, sizeof key, "%s/%s", run->meta.ns, run->meta.name);
    const char *kv[] = {"run", key, "msg", msg};
    if (r->log)
        r->log(r->log_ctx, level, event, kv, 2);
}

/* Whether every bind of the last cycles shows in the fork (or is too old to wait for). */
static bool confirmed(tly_runctl *r, tly_store *fork)
{
    size_t k = 0;
    int64_t now = mono_ms();
    for (size_t i = 0; i < r->nb; i++) {
        bound *x = &r->b[i];
        const tly_run *run = tly_store_find(fork, TLY_K_RUN, x->ns, x->name);
        bool shown = !run || tly_run_phase_of(run) != TLY_RUN_PENDING ||
                     (run->assigned_pod && *run->assigned_pod) ||
                     (x->uid && run->meta.uid && strcmp(x->uid, run->meta.uid));
        if (shown || now - x->at_ms > CONFIRM_MS) {
            free(x->ns);
            free(x->name);
            free(x->uid);
            continue;
        }
        r->b[k++] = *x;
    }
    r->nb = k;
    return k == 0;
}

static void remember(tly_runctl *r, const tly_run *run)
{
    if (r->nb == r->capb) {
        r->capb = r->capb ? r->capb * 2 : 32;
        r->b = tly_xrealloc(r->b, r->capb * sizeof *r->b);
    }
    r->b[r->nb++] = (bound){tly_xstrdup(run->meta.ns), tly_xstrdup(run->meta.name),
                            run->meta.uid ? tly_xstrdup(run->meta.uid) : NULL, mono_ms()};
}

static char *run_key(const tly_run *run) { return tly_xasprintf("%s/%s", run->meta.ns, run->meta.name); }

/* Whether this version of the Run was refused before (then nothing is sent again). */
static bool was_refused(tly_runctl *r, const tly_run *run)
{
    char *key = run_key(run);
    bool hit = false;
    for (size_t i = 0; i < r->nrf && !hit; i++)
        hit = !strcmp(r->rf[i].key, key) && run->meta.resource_version &&
              !strcmp(r->rf[i].rv, run->meta.resource_version);
    free(key);
    return hit;
}

static void note_refused(tly_runctl *r, const tly_run *run)
{
    char *key = run_key(run);
    size_t i = 0;
    while (i < r->nrf && strcmp(r->rf[i].key, key))
        i++;
    if (i == r->nrf) {
        r->rf = tly_xrealloc(r->rf, (r->nrf + 1) * sizeof *r->rf);
        r->rf[r->nrf++] = (refused){key, NULL};
    } else {
        free(key);
    }
    free(r->rf[i].rv);
    r->rf[i].rv = tly_xstrdup(run->meta.resource_version ? run->meta.resource_version : "");
}

/* Writes one Run's outcome; false when the Run changed under the write. */
static bool write_run(tly_runctl *r, tly_runsched *rs, const tly_rs_run_result *res)
{
    const tly_run *run = res->run;
    char err[1024];
    if (was_refused(r, run))
        return true;
    tly_write_rc rc = TLY_WRITE_OK;
    if (res->placed && res->pod >= 0) {
        const tly_rs_pod_result *p = tly_runsched_pod_at(rs, (uint32_t)res->pod);
        rc = tly_write_run_bind(r->k, run, p->pod->meta.name, p->pod->meta.uid, err, sizeof err);
        if (rc == TLY_WRITE_OK) {
            remember(r, run);
            say(r, 1, "run-bound", run, p->pod->meta.name);
        }
    } else if ((res->phase == TLY_RUN_FAILED || res->phase == TLY_RUN_CANCELLED) && res->reason) {
        rc = tly_write_run_terminal(r->k, run, tly_run_phase_name(res->phase), res->reason, res->message,
                                    err, sizeof err);
    } else if (res->phase == TLY_RUN_FAILED) {
        /* A PreFilter failure: kruntimes writes the phase and message only. */
        rc = tly_write_run_status(r->k, run, "Failed", res->message, err, sizeof err);
    } else if (res->phase == TLY_RUN_PENDING && res->message &&
               (!run->message || strcmp(run->message, res->message))) {
        rc = tly_write_run_status(r->k, run, "Pending", res->message, err, sizeof err);
    }
    if (rc != TLY_WRITE_OK) {
        say(r, rc == TLY_WRITE_FAILED ? 2 : 1, "run-write-refused", run, err);
        note_refused(r, run);
    }
    return rc != TLY_WRITE_CONFLICT;
}

static void count_pending(pending_gauge **v, size_t *n, const tly_rs_run_result *res)
{
    const char *reason = res->reason ? res->reason : "Pending";
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*v)[i].ns, res->run->meta.ns) && !strcmp((*v)[i].runtime, res->run->runtime) &&
            !strcmp((*v)[i].reason, reason)) {
            (*v)[i].n++;
            return;
        }
    *v = tly_xrealloc(*v, (*n + 1) * sizeof **v);
    (*v)[(*n)++] = (pending_gauge){tly_xstrdup(res->run->meta.ns), tly_xstrdup(res->run->runtime),
                                   tly_xstrdup(reason), 1};
}

/* Utilisation per (namespace, runtime, resource): used / capacity summed over the runtime's Pods. */
static void utilisation(tly_runsched *rs, tly_names *names, util_gauge **v, size_t *n)
{
    typedef struct {
        const char *ns, *rt;
        uint32_t id;
        double used, cap;
    } acc;
    acc *a = NULL;
    size_t na = 0;
    for (uint32_t i = 0; i < tly_runsched_npods(rs); i++) {
        const tly_rs_pod_result *p = tly_runsched_pod_at(rs, i);
        for (uint32_t e = 0; p->capacity && e < p->capacity->n; e++) {
            uint32_t id = p->capacity->v[e].id;
            size_t j = 0;
            while (j < na && (a[j].id != id || strcmp(a[j].ns, p->pod->meta.ns) || strcmp(a[j].rt, p->runtime)))
                j++;
            if (j == na) {
                a = tly_xrealloc(a, (na + 1) * sizeof *a);
                a[na++] = (acc){p->pod->meta.ns, p->runtime, id, 0, 0};
            }
            /* A gauge for people: a ratio of exact quantities, shown as a float. */
            a[j].cap += (double)p->capacity->v[e].q.nanos / 1e9;
            a[j].used += (double)tly_rvec_get(p->used, id).nanos / 1e9;
        }
    }
    for (size_t j = 0; j < na; j++) {
        *v = tly_xrealloc(*v, (*n + 1) * sizeof **v);
        (*v)[(*n)++] = (util_gauge){tly_xstrdup(a[j].ns), tly_xstrdup(a[j].rt),
                                    tly_xstrdup(tly_names_str(names, a[j].id)),
                                    a[j].cap > 0 ? a[j].used / a[j].cap : 0};
    }
    free(a);
}

bool tly_runctl_cycle(tly_runctl *r, tly_store *fork, bool (*may_write)(void *ctx), void *ctx)
{
    if (!confirmed(r, fork))
        return false;  /* a bind is still on its way back through the watch */
    int64_t now = tly_store_clock(fork);
    if (now == TLY_NO_TIME)
        now = (int64_t)time(NULL);
    tly_runsched *rs = tly_runsched_create(fork, now, true, NULL);
    tly_runsched_run(rs);
    bool changed = false;
    pending_gauge *pg = NULL;
    size_t npg = 0;
    for (uint32_t i = 0; i < tly_runsched_nruns(rs); i++) {
        const tly_rs_run_result *res = tly_runsched_run_at(rs, i);
        if (tly_run_phase_of(res->run) != TLY_RUN_PENDING)
            continue;  /* only Pending Runs are the scheduler's */
        if (res->phase == TLY_RUN_PENDING)
            count_pending(&pg, &npg, res);
        if (!changed && may_write(ctx))
            changed = !write_run(r, rs, res);
    }
    util_gauge *ug = NULL;
    size_t nug = 0;
    utilisation(rs, tly_store_names(fork), &ug, &nug);
    pthread_mutex_lock(&r->mu);
    free_gauges(r);
    r->pg = pg;
    r->npg = npg;
    r->ug = ug;
    r->nug = nug;
    pthread_mutex_unlock(&r->mu);
    tly_runsched_destroy(rs);
    return changed;
}

void tly_runctl_metrics(tly_runctl *r, FILE *out)
{
    pthread_mutex_lock(&r->mu);
    fputs("# HELP tally_runs_pending Pending Runs by namespace, runtime and reason.\n"
          "# TYPE tally_runs_pending gauge\n", out);
    for (size_t i = 0; i < r->npg; i++)
    {
        /* A Run's spec.runtime is any string: escaped. */
        fputs("tally_runs_pending{namespace=\"", out);
        tly_metrics_label(out, r->pg[i].ns);
        fputs("\",runtime=\"", out);
        tly_metrics_label(out, r->pg[i].runtime);
        fprintf(out, "\",reason=\"%s\"} %llu\n", r->pg[i].reason, (unsigned long long)r->pg[i].n);
    }
    fputs("# HELP tally_runtime_utilization Used over capacity of a runtime's Pods, by resource.\n"
          "# TYPE tally_runtime_utilization gauge\n", out);
    for (size_t i = 0; i < r->nug; i++)
    {
        fputs("tally_runtime_utilization{namespace=\"", out);
        tly_metrics_label(out, r->ug[i].ns);
        fputs("\",runtime=\"", out);
        tly_metrics_label(out, r->ug[i].runtime);
        fputs("\",resource=\"", out);
        tly_metrics_label(out, r->ug[i].resource);
        fprintf(out, "\"} %.6f\n", r->ug[i].value);
    }
    pthread_mutex_unlock(&r->mu);
}
