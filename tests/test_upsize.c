/*
** test_upsize.c: the reserve-upsizes ledger (upsize.h) through the real
** admission path (tly_admit_review_ledger on AdmissionReview JSON).
**
** The race: N threads admit upsizes of N different pods at once against a
** queue with room for exactly K of them. With the ledger exactly K are
** admitted and no admitted set overruns the limit; without it (KAI's
** behaviour, and `tally admit`), every one of them is. Then each way a
** reservation ends: enacted, reverted (by a later state or through the
** webhook), Infeasible, pod gone, timeout; dry runs never reserve, and
** neither does an upsize of a pod the state does not hold.
*/
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "tally/admit.h"
#include "tally/arena.h"
#include "tally/error.h"
#include "tally/live.h"
#include "tally/node.h"
#include "tally/upsize.h"

#define NPODS 16

/* Queue q: cpu limit 10 cores; NPODS pods of 500m each use 8, leaving room for 2 cores. */
static const char *queue_yaml =
    "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata:\n  name: q\nspec:\n  resources:\n"
    "    cpu: {quota: -1, limit: 10000, overQuotaWeight: 1}\n"
    "    memory: {quota: -1, limit: -1, overQuotaWeight: 1}\n"
    "    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n";

/* Pod p<i> at cpu; rv > 0 sets its resourceVersion (the live tests). */
static char *pod_json_rv(int i, const char *cpu, const char *extra_status, int rv)
{
    char *s = NULL, rvs[40] = "";
    if (rv > 0)
        snprintf(rvs, sizeof rvs, ",\"resourceVersion\":\"%d\"", rv);
    if (asprintf(&s,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p%02d\"%s,"
                 "\"namespace\":\"team\",\"uid\":\"uid-p%02d\",\"labels\":{\"kai.scheduler/queue\":\"q\"}},"
                 "\"spec\":{\"schedulerName\":\"kai-scheduler\",\"nodeName\":\"n1\",\"containers\":[{\"name\":"
                 "\"main\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},\"status\":{\"phase\":\"Running\"%s}}",
                 i, rvs, i, cpu, extra_status ? extra_status : "") < 0)
        abort();
    return s;
}

static char *pod_json(int i, const char *cpu, const char *extra_status)
{
    return pod_json_rv(i, cpu, extra_status, 0);
}

/* The state: the queue and NPODS pods at 500m, but pods from..to-1 at cpu `cpu` with `status` (or absent). */
static tly_store *state_range(int from, int to, const char *cpu, const char *status, bool drop)
{
    size_t cap = 1 << 16;
    char *text = malloc(cap);
    size_t len = (size_t)snprintf(text, cap, "%s", queue_yaml);
    for (int i = 0; i < NPODS; i++) {
        bool in = i >= from && i < to;
        if (in && drop)
            continue;
        char *p = pod_json(i, in ? cpu : "500m", in ? status : NULL);
        len += (size_t)snprintf(text + len, cap - len, "---\n%s\n", p);
        free(p);
    }
    tly_store *s = load_text("state", text);
    free(text);
    return s;
}

/* The state with pod `which` (if >= 0) at cpu `cpu` with `status`, or absent (drop). */
static tly_store *state_with(int which, const char *cpu, const char *status, bool drop)
{
    return state_range(which, which + 1, cpu, status, drop);
}

/* A resize review of p<i>, from -> to; rv > 0: the oldObject's resourceVersion. */
static char *review_rv(int i, const char *from, const char *to, bool dry, int rv)
{
    char *o = pod_json_rv(i, to, NULL, rv), *old = pod_json_rv(i, from, NULL, rv), *s = NULL;
    if (asprintf(&s,
                 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
                 "\"uid\":\"r-%02d\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
                 "\"subResource\":\"resize\",\"operation\":\"UPDATE\",\"dryRun\":%s,\"object\":%s,"
                 "\"oldObject\":%s}}",
                 i, dry ? "true" : "false", o, old) < 0)
        abort();
    free(o);
    free(old);
    return s;
}

static char *review(int i, const char *from, const char *to, bool dry) { return review_rv(i, from, to, dry, 0); }

/* Decides one review; returns allowed (fails the test on an unreadable review). */
static bool decide(const tly_store *st, const tly_resize_ledger *ledger, const char *body)
{
    tly_admit_result res;
    char err[256];
    int rc = tly_admit_review_ledger(st, ledger, body, strlen(body), &res, err, sizeof err);
    assert_int_equal(rc, 0);
    bool ok = res.allowed;
    tly_admit_result_free(&res);
    return ok;
}

typedef struct {
    const tly_store *state;
    const tly_resize_ledger *ledger;
    pthread_barrier_t *start;
    int pod;
    const char *to;
    bool allowed;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    char *body = review(j->pod, "500m", j->to, false);
    pthread_barrier_wait(j->start);
    tly_admit_result res;
    char err[256];
    int rc = tly_admit_review_ledger(j->state, j->ledger, body, strlen(body), &res, err, sizeof err);
    j->allowed = rc == 0 && res.allowed;
    if (rc == 0)
        tly_admit_result_free(&res);
    free(body);
    return NULL;
}

/* Runs NPODS concurrent upsizes, pod i to to[i]; returns how many were admitted. */
static int race(const tly_store *st, const tly_resize_ledger *ledger, const char *const *to, job *jobs)
{
    pthread_t th[NPODS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, NPODS);
    for (int i = 0; i < NPODS; i++) {
        jobs[i] = (job){st, ledger, &start, i, to[i], false};
        pthread_create(&th[i], NULL, run_job, &jobs[i]);
    }
    int admitted = 0;
    for (int i = 0; i < NPODS; i++) {
        pthread_join(th[i], NULL);
        admitted += jobs[i].allowed;
    }
    pthread_barrier_destroy(&start);
    return admitted;
}

static int64_t milli_of(tly_qty q) { return (int64_t)(q.nanos / 1000000); }

static void exactly_k_of_n(void **unused)
{
    (void)unused;
    tly_store *st = state_with(-1, NULL, NULL, false);
    const char *to[NPODS];
    for (int i = 0; i < NPODS; i++)
        to[i] = "1";  /* +500m each: room for exactly 4 */
    job jobs[NPODS];
    for (int round = 0; round < 20; round++) {
        tly_upsize *u = tly_upsize_create(60000, NULL, NULL);
        assert_int_equal(race(st, tly_upsize_ledger(u), to, jobs), 4);
        assert_int_equal(tly_upsize_count(u), 4);
        tly_upsize_destroy(u);
    }
    /* Without the ledger every decision sees the same 2 cores of room: all 16 pass (the race). */
    assert_int_equal(race(st, NULL, to, jobs), NPODS);
    tly_store_destroy(st);
}

static void mixed_sizes_fit_greedily(void **unused)
{
    (void)unused;
    tly_store *st = state_with(-1, NULL, NULL, false);
    static const char *const sizes[] = {"600m", "700m", "800m", "1", "1100m", "1300m", "1500m", "2",
                                        "2100m", "2500m", "550m", "650m", "900m", "1200m", "1700m", "3"};
    job jobs[NPODS];
    for (int round = 0; round < 20; round++) {
        tly_upsize *u = tly_upsize_create(60000, NULL, NULL);
        race(st, tly_upsize_ledger(u), sizes, jobs);
        int64_t sum = 0;
        for (int i = 0; i < NPODS; i++) {
            char name[8];
            snprintf(name, sizeof name, "p%02d", i);
            tly_qty inc[2];
            bool held = tly_upsize_get(u, "team", name, inc);
            assert_int_equal(held, jobs[i].allowed);
            if (held)
                sum += milli_of(inc[0]);
        }
        assert_true(sum <= 2000);  /* never past the limit */
        /* Decisions are serialised, so a denied upsize did not fit what was admitted before it,
           which is at most the final sum: whatever still fits at the end was admitted. */
        for (int i = 0; i < NPODS; i++) {
            if (jobs[i].allowed)
                continue;
            tly_qty want;
            assert_int_equal(tly_qty_parse_str(sizes[i], &want), 0);
            assert_true(milli_of(want) - 500 > 2000 - sum);
        }
        tly_upsize_destroy(u);
    }
    tly_store_destroy(st);
}

typedef struct {
    int64_t now;
} fake_clock;

static int64_t clock_now(void *ctx) { return ((fake_clock *)ctx)->now; }

/* Admits p00 500m -> 1 against st through u; asserts it was reserved. */
static void reserve_p00(const tly_store *st, tly_upsize *u)
{
    char *body = review(0, "500m", "1", false);
    assert_true(decide(st, tly_upsize_ledger(u), body));
    free(body);
    assert_int_equal(tly_upsize_count(u), 1);
}

/*
** A review names any pod it likes: 16 upsizes of a pod the state does not
** hold, each with another uid, are decided (and admitted, as there is room)
** but reserve nothing, so they cannot take the room of real pods; a real
** pod's upsize after them still gets its hold.
*/
static void no_hold_for_unknown_pods(void **unused)
{
    (void)unused;
    tly_store *st = state_with(0, NULL, NULL, true);  /* p00 is not in the state */
    tly_upsize *u = tly_upsize_create(60000, NULL, NULL);
    for (int k = 0; k < NPODS; k++) {
        char *body = review_rv(0, "500m", "1", false, 100 + k);
        tly_admit_result res;
        char err[256];
        assert_int_equal(tly_admit_review_ledger(st, tly_upsize_ledger(u), body, strlen(body), &res, err,
                                                 sizeof err), 0);
        assert_true(res.allowed);
        assert_int_equal(res.nwarnings, 0);  /* the answer tally admit gives */
        tly_admit_result_free(&res);
        free(body);
    }
    assert_int_equal(tly_upsize_count(u), 0);
    char *body = review(1, "500m", "1", false);
    assert_true(decide(st, tly_upsize_ledger(u), body));
    free(body);
    assert_int_equal(tly_upsize_count(u), 1);
    tly_upsize_destroy(u);
    tly_store_destroy(st);
}

static void release_on_reload(void **unused)
{
    (void)unused;
    tly_store *st = state_with(-1, NULL, NULL, false);
    tly_upsize *u = tly_upsize_create(60000, NULL, NULL);
    tly_upsize_released rel;

    /* Enacted: the state shows the new spec, whose effective request covers the reservation. */
    reserve_p00(st, u);
    tly_store *s2 = state_with(0, "1", NULL, false);
    tly_upsize_reconcile(u, s2, &rel);
    assert_int_equal(rel.enacted, 1);
    assert_int_equal(tly_upsize_count(u), 0);
    tly_store_destroy(s2);

    /* Reverted / never landed: a newer state shows the old spec. */
    reserve_p00(st, u);
    tly_upsize_reconcile(u, st, &rel);
    assert_int_equal(rel.reverted, 1);
    assert_int_equal(tly_upsize_count(u), 0);

    /* Infeasible: the kubelet marked the resize impossible; the pod runs at its old size. */
    reserve_p00(st, u);
    s2 = state_with(0, "1",
                    ",\"conditions\":[{\"type\":\"PodResizePending\",\"status\":\"True\",\"reason\":"
                    "\"Infeasible\"}],\"containerStatuses\":[{\"name\":\"main\",\"resources\":{"
                    "\"requests\":{\"cpu\":\"500m\"}},\"allocatedResources\":{\"cpu\":\"500m\"}}]",
                    false);
    tly_upsize_reconcile(u, s2, &rel);
    assert_int_equal(rel.infeasible, 1);
    assert_int_equal(tly_upsize_count(u), 0);
    tly_store_destroy(s2);

    /* In progress (spec new, kubelet still at the old size): max(spec, actual) covers it. */
    reserve_p00(st, u);
    s2 = state_with(0, "1",
                    ",\"containerStatuses\":[{\"name\":\"main\",\"resources\":{\"requests\":{\"cpu\":"
                    "\"500m\"}},\"allocatedResources\":{\"cpu\":\"500m\"}}]",
                    false);
    tly_upsize_reconcile(u, s2, &rel);
    assert_int_equal(rel.enacted, 1);
    tly_store_destroy(s2);

    /* Gone: the pod is no longer in the state. */
    reserve_p00(st, u);
    s2 = state_with(0, NULL, NULL, true);
    tly_upsize_reconcile(u, s2, &rel);
    assert_int_equal(rel.gone, 1);
    assert_int_equal(tly_upsize_count(u), 0);
    tly_store_destroy(s2);

    tly_upsize_destroy(u);
    tly_store_destroy(st);
}

static void release_on_timeout(void **unused)
{
    (void)unused;
    tly_store *st = state_with(-1, NULL, NULL, false);
    fake_clock clk = {1000};
    tly_upsize *u = tly_upsize_create(30000, clock_now, &clk);
    reserve_p00(st, u);
    clk.now += 29999;
    assert_int_equal(tly_upsize_expire(u), 0);
    clk.now += 1;
    assert_int_equal(tly_upsize_expire(u), 1);
    assert_int_equal(tly_upsize_count(u), 0);
    tly_upsize_destroy(u);
    tly_store_destroy(st);
}

static void webhook_updates(void **unused)
{
    (void)unused;
    tly_store *st = state_with(-1, NULL, NULL, false);
    tly_upsize *u = tly_upsize_create(60000, NULL, NULL);
    const tly_resize_ledger *L = tly_upsize_ledger(u);
    tly_qty inc[2];

    /* Dry runs are decided but never reserve. */
    char *b = review(0, "500m", "1", true);
    assert_true(decide(st, L, b));
    free(b);
    assert_int_equal(tly_upsize_count(u), 0);

    /* Two upsizes of one pod add up; its own reservation does not count against it. */
    reserve_p00(st, u);
    b = review(0, "1", "2", false);
    assert_true(decide(st, L, b));
    free(b);
    assert_true(tly_upsize_get(u, "team", "p00", inc));
    assert_int_equal(milli_of(inc[0]), 1500);
    /* The queue is now full (8 + 1.5 = 9.5 of 10): another pod's +600m is denied, +500m fits. */
    b = review(1, "500m", "1100m", false);
    assert_false(decide(st, L, b));
    free(b);
    b = review(1, "500m", "1", false);
    assert_true(decide(st, L, b));
    free(b);

    /* A resize back to the old size through the webhook ends the reservation. */
    b = review(0, "2", "500m", false);
    assert_true(decide(st, L, b));
    free(b);
    assert_false(tly_upsize_get(u, "team", "p00", inc));
    assert_int_equal(tly_upsize_count(u), 1);

    /* `tally admit`'s path (no ledger) never reserves. */
    tly_upsize *v = tly_upsize_create(60000, NULL, NULL);
    b = review(2, "500m", "1", false);
    assert_true(decide(st, NULL, b));
    free(b);
    assert_int_equal(tly_upsize_count(v), 0);
    tly_upsize_destroy(v);

    tly_upsize_destroy(u);
    tly_store_destroy(st);
}

/*
** A reload while decisions are in flight (issue 17 item 3). Four upsizes
** fill the queue; a state that shows them enacted is reconciled in; a
** decision that took the old state before the reload and reaches the
** ledger after it must not find the room free. Through
** tly_upsize_reconcile() alone it does (the ledger no longer holds the
** four, the old state does not show them): that was the server's sequence.
** tly_upsize_swap() hands such a decision the new state: denied.
*/
static void fill_four(const tly_store *st, tly_upsize *u)
{
    for (int i = 0; i < 4; i++) {
        char *b = review(i, "500m", "1", false);
        assert_true(decide(st, tly_upsize_ledger(u), b));
        free(b);
    }
    assert_int_equal(tly_upsize_count(u), 4);
}

static void reload_pairs_state_and_holds(void **unused)
{
    (void)unused;
    tly_store *s0 = state_with(-1, NULL, NULL, false), *s1 = state_range(0, 4, "1", NULL, false);
    char *b = review(4, "500m", "1", false);
    tly_upsize_released rel;

    tly_upsize *u = tly_upsize_create(60000, NULL, NULL);
    fill_four(s0, u);
    tly_upsize_reconcile(u, s1, &rel);
    assert_int_equal(rel.enacted, 4);
    assert_true(decide(s0, tly_upsize_ledger(u), b));  /* the hazard: 2.5 of 2 cores admitted */
    tly_upsize_destroy(u);

    u = tly_upsize_create(60000, NULL, NULL);
    tly_upsize_swap(u, s0, NULL);
    fill_four(s0, u);
    tly_upsize_swap(u, s1, &rel);
    assert_int_equal(rel.enacted, 4);
    assert_int_equal(tly_upsize_count(u), 0);
    assert_false(decide(s0, tly_upsize_ledger(u), b));  /* decided on s1, full */
    assert_false(decide(s1, tly_upsize_ledger(u), b));
    assert_int_equal(tly_upsize_count(u), 0);
    tly_upsize_destroy(u);
    free(b);
    tly_store_destroy(s0);
    tly_store_destroy(s1);
}

typedef struct {
    tly_upsize *u;
    tly_store *s1;
    pthread_barrier_t *start;
} swapper;

static void *swap_at_start(void *arg)
{
    swapper *w = arg;
    pthread_barrier_wait(w->start);
    tly_upsize_swap(w->u, w->s1, NULL);
    return NULL;
}

/*
** The same with threads: 12 upsizes decided on the old state (the one they
** took before the reload) while another thread swaps the new state in. Each
** decision runs entirely before the swap (old state, four holds: full) or
** after it (new state: full): none is admitted, in every round.
*/
static void reload_during_decisions(void **unused)
{
    (void)unused;
    tly_store *s0 = state_with(-1, NULL, NULL, false), *s1 = state_range(0, 4, "1", NULL, false);
    const char *to[NPODS];
    for (int i = 0; i < NPODS; i++)
        to[i] = "1";
    for (int round = 0; round < 20; round++) {
        tly_upsize *u = tly_upsize_create(60000, NULL, NULL);
        tly_upsize_swap(u, s0, NULL);
        fill_four(s0, u);
        pthread_t th[NPODS], sw;
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, NPODS - 4 + 1);
        job jobs[NPODS];
        swapper w = {u, s1, &start};
        pthread_create(&sw, NULL, swap_at_start, &w);
        int admitted = 0;
        for (int i = 4; i < NPODS; i++) {
            jobs[i] = (job){s0, tly_upsize_ledger(u), &start, i, to[i], false};
            pthread_create(&th[i], NULL, run_job, &jobs[i]);
        }
        for (int i = 4; i < NPODS; i++) {
            pthread_join(th[i], NULL);
            admitted += jobs[i].allowed;
        }
        pthread_join(sw, NULL);
        pthread_barrier_destroy(&start);
        assert_int_equal(admitted, 0);
        tly_upsize_destroy(u);
    }
    tly_store_destroy(s0);
    tly_store_destroy(s1);
}

/* ---- the shared form and live states (src/ctrl/resv.c keeps holds this way) ------ */

typedef struct {
    char text[8192];
    size_t len;
} dump;

static void dump_one(void *ctx, const char *ns, const char *name, const char *value)
{
    (void)ns;
    (void)name;
    dump *d = ctx;
    d->len += (size_t)snprintf(d->text + d->len, sizeof d->text - d->len, "%s\n", value);
}

static int decode_text(tly_upsize *u, const char *json)
{
    tly_arena *a = tly_arena_create(4096);
    const tly_node *n = tly_parse_value(json, strlen(json), a);
    char err[256];
    int rc = n ? tly_upsize_decode(u, n, err, sizeof err) : TLY_EINVAL;
    tly_arena_destroy(a);
    return rc;
}

static void shared_form_round_trip(void **unused)
{
    (void)unused;
    tly_store *st = state_with(-1, NULL, NULL, false);
    tly_upsize *u = tly_upsize_create(60000, tly_upsize_wall_ms, NULL);
    char *b = review_rv(3, "500m", "1200m", false, 77);
    assert_true(decide(st, tly_upsize_ledger(u), b));
    free(b);
    dump d1 = {.len = 0};
    tly_upsize_each(u, dump_one, &d1);
    assert_non_null(strstr(d1.text, "\"rv\":\"77\""));
    assert_non_null(strstr(d1.text, "\"size\":[\"1200m\""));

    /* Decoded into another ledger, it encodes the same and holds the same increase. */
    tly_upsize *v = tly_upsize_create(60000, tly_upsize_wall_ms, NULL);
    d1.text[d1.len - 1] = 0;
    assert_int_equal(decode_text(v, d1.text), TLY_OK);
    dump d2 = {.len = 0};
    tly_upsize_each(v, dump_one, &d2);
    assert_string_equal(d1.text, strtok(d2.text, "\n"));
    tly_qty inc[2];
    assert_true(tly_upsize_get(v, "team", "p03", inc));
    assert_int_equal(milli_of(inc[0]), 700);
    /* A second hold for the pod, and malformed ones, are refused. */
    assert_int_equal(decode_text(v, d1.text), TLY_EINVAL);
    assert_int_equal(decode_text(v, "{\"namespace\":\"team\",\"name\":\"x\"}"), TLY_EINVAL);
    assert_int_equal(decode_text(v, "[1]"), TLY_EINVAL);
    assert_int_equal(tly_upsize_count(v), 1);
    tly_upsize_destroy(v);
    tly_upsize_destroy(u);
    tly_store_destroy(st);
}

static void live_put(tly_live *l, const char *json, bool del)
{
    tly_arena *a = tly_arena_create(16384);
    tly_node *n = tly_parse_value(json, strlen(json), a);
    assert_non_null(n);
    assert_int_equal(tly_live_apply(l, del ? TLY_LIVE_DELETE : TLY_LIVE_UPSERT, n, "test"), TLY_OK);
    tly_arena_destroy(a);
}

/* A live state with the queue and the pods, p<i> at resourceVersion 10 + i. */
static tly_live *live_state(void)
{
    tly_live *l = tly_live_create(NULL);
    live_put(l,
             "{\"apiVersion\":\"scheduling.run.ai/v2\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"q\","
             "\"resourceVersion\":\"5\"},\"spec\":{\"resources\":{\"cpu\":{\"quota\":-1,\"limit\":10000,"
             "\"overQuotaWeight\":1},\"memory\":{\"quota\":-1,\"limit\":-1,\"overQuotaWeight\":1},"
             "\"gpu\":{\"quota\":-1,\"limit\":-1,\"overQuotaWeight\":1}}}}",
             false);
    for (int i = 0; i < NPODS; i++) {
        char *p = pod_json_rv(i, "500m", NULL, 10 + i);
        live_put(l, p, false);
        free(p);
    }
    return l;
}

/* Reconciles u against a fork of l now; returns what it released. */
static tly_upsize_released settle(tly_live *l, tly_upsize *u)
{
    tly_store *f = tly_live_fork(l);
    tly_upsize_released rel;
    tly_upsize_reconcile(u, f, &rel);
    tly_store_destroy(f);
    return rel;
}

/*
** A live state trails the API server: the webhook's oldObject (resourceVersion
** 100) is newer than the fork's pod (10). "Spec at the old size" there is
** not a revert; only a state that has seen the pod after 100 settles it.
*/
static void lagging_live_state_keeps_holds(void **unused)
{
    (void)unused;
    tly_live *l = live_state();
    tly_store *f = tly_live_fork(l);
    assert_int_equal(tly_store_seen_rv(f, TLY_K_POD), 10 + NPODS - 1);
    tly_upsize *u = tly_upsize_create(60000, NULL, NULL);
    char *b = review_rv(0, "500m", "1", false, 100);
    assert_true(decide(f, tly_upsize_ledger(u), b));
    free(b);
    tly_store_destroy(f);
    tly_upsize_released rel = settle(l, u);
    assert_int_equal(tly_upsize_count(u), 1);
    assert_int_equal(rel.reverted + rel.enacted + rel.gone, 0);

    /* Another pod's event moves the pods' resourceVersion on; p00 itself is still old: held. */
    char *p = pod_json_rv(1, "500m", NULL, 150);
    live_put(l, p, false);
    free(p);
    settle(l, u);
    assert_int_equal(tly_upsize_count(u), 1);
    /* p00 seen after the admission at the old size: the resize never landed. */
    p = pod_json_rv(0, "500m", NULL, 160);
    live_put(l, p, false);
    free(p);
    rel = settle(l, u);
    assert_int_equal(rel.reverted, 1);
    assert_int_equal(tly_upsize_count(u), 0);

    /* Enacted only once the pod is seen at the new size after the admission. */
    f = tly_live_fork(l);
    b = review_rv(0, "500m", "1", false, 160);
    assert_true(decide(f, tly_upsize_ledger(u), b));
    free(b);
    tly_store_destroy(f);
    p = pod_json_rv(0, "1", NULL, 170);
    live_put(l, p, false);
    free(p);
    rel = settle(l, u);
    assert_int_equal(rel.enacted, 1);

    /* A pod the state no longer holds is gone only once the pods have been seen past the admission. */
    f = tly_live_fork(l);
    b = review_rv(2, "500m", "1", false, 300);
    assert_true(decide(f, tly_upsize_ledger(u), b));
    free(b);
    tly_store_destroy(f);
    p = pod_json_rv(2, "500m", NULL, 180);
    live_put(l, p, true);
    free(p);
    settle(l, u);
    assert_int_equal(tly_upsize_count(u), 1);
    tly_live_note_rv(l, TLY_K_POD, "301");
    rel = settle(l, u);
    assert_int_equal(rel.gone, 1);
    assert_int_equal(tly_upsize_count(u), 0);

    /* A resourceVersion that is not a number: nothing but the timeout settles it. */
    assert_int_equal(tly_rv_number("12a"), 0);
    assert_int_equal(tly_rv_number(""), 0);
    assert_int_equal(tly_rv_number("18446744073709551615"), 0);
    assert_int_equal(tly_rv_number("42"), 42);
    tly_upsize_destroy(u);
    tly_live_destroy(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exactly_k_of_n),
        cmocka_unit_test(mixed_sizes_fit_greedily),
        cmocka_unit_test(no_hold_for_unknown_pods),
        cmocka_unit_test(release_on_reload),
        cmocka_unit_test(release_on_timeout),
        cmocka_unit_test(webhook_updates),
        cmocka_unit_test(reload_pairs_state_and_holds),
        cmocka_unit_test(reload_during_decisions),
        cmocka_unit_test(shared_form_round_trip),
        cmocka_unit_test(lagging_live_state_keeps_holds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
