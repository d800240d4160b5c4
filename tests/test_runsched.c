/*
** test_runsched.c: the Run scheduler's event rules through the C API
** (runsched.h), as the kruntimes seed states them:
**
**  - a Pending Run that fits nowhere is reactivated only by an event: usage
**    released on its (namespace, runtime) or a Runtime Pod capacity change;
**    calling tly_runsched_run() again with nothing changed re-tries nothing
**    (tly_runsched_cycles() does not move);
**  - Reserve/Assume and Bind share one ledger: a failed bind gives the
**    assumed request back exactly;
**  - an assumption is kept until its own Run is bound or released, whatever
**    other namespaces do meanwhile, so it still guards the Pod;
**  - a Scheduled Run that runtimed could not admit is re-checked when a local
**    Run ends;
**  - a cancel request ends a Pending Run (scheduler) or a Scheduled one
**    (runtimed, releasing its usage) Cancelled, before any other check.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "testutil.h"
#include "tally/kruntimes.h"
#include "tally/quantity.h"
#include "tally/resource.h"
#include "tally/runsched.h"

/* ---- input builders ------------------------------------------------------- */

/*
** Every document starts with "---" (tally reports an empty document, such as
** the one after a trailing "---", as an error).
**
** A ready Runtime Pod; caps are annotation lines ("    key: \"value\"\n"). */
#define RT_POD(ns, name, rt, caps)                                                  \
    "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " name "\n  namespace: " ns     \
    "\n  creationTimestamp: \"2026-11-20T09:00:00Z\"\n  labels:\n    runtime: " rt \
    "\n  annotations:\n    owner: tests\n" caps                                    \
    "spec:\n  containers:\n  - name: runtime\n    image: example/runtime:1\n"     \
    "status:\n  phase: Running\n  conditions:\n"                                   \
    "  - type: Ready\n    status: \"True\"\n"                                      \
    "  - type: kruntimes.io/RuntimedReady\n    status: \"True\"\n"                 \
    "    lastProbeTime: \"2026-11-24T12:00:00Z\"\n"

#define CAP(name, value) "    kruntimes.io/capacity." name ": \"" value "\"\n"

/* A Run; req is REQS(...) or "" for a Run without spec.resources. */
#define RUN_HEAD(ns, name, rt, created, req)                                        \
    "---\napiVersion: kruntimes.io/v1alpha1\nkind: Run\nmetadata:\n  name: " name       \
    "\n  namespace: " ns "\n  creationTimestamp: \"" created "\"\n"                \
    "spec:\n  runtime: " rt "\n  mode:\n    task:\n      args: [\"true\"]\n" req

#define REQS(lines) "  resources:\n    requests:\n" lines
#define REQ(name, value) "      " name ": \"" value "\"\n"

#define PENDING "status:\n  phase: Pending\n"

/* status of a Run assigned to pod at time t (phase Scheduled or Running). */
#define ASSIGNED(phase, pod, t)                                                     \
    "status:\n  phase: " phase "\n  assignedPod: " pod "\n  conditions:\n"         \
    "  - type: Scheduled\n    status: \"True\"\n    reason: Assigned\n"            \
    "    lastTransitionTime: \"" t "\"\n"

/* ---- helpers ----------------------------------------------------------------- */

typedef struct {
    tly_store *s;
    tly_runsched *rs;
} fixture;

/* The engine over the input; it must hold exactly `errors` error diagnostics. */
static fixture setup_with_errors(const char *yaml, size_t errors)
{
    fixture f;
    f.s = load_text("test.yaml", yaml);
    assert_non_null(f.s);
    tly_diags *d = tly_store_diags(f.s);
    for (size_t i = 0; errors == 0 && i < tly_diags_count(d); i++)
        if (tly_diags_get(d, i)->sev == TLY_SEV_ERROR)
            print_error("input: %s\n", tly_diags_get(d, i)->msg);
    assert_int_equal(tly_diags_count_sev(tly_store_diags(f.s), TLY_SEV_ERROR), errors);
    int64_t now = tly_store_newest_time(f.s);
    f.rs = tly_runsched_create(f.s, now, now != TLY_NO_TIME, NULL);
    assert_non_null(f.rs);
    return f;
}

/* The input itself must be clean, or the test would prove nothing. */
static fixture setup(const char *yaml) { return setup_with_errors(yaml, 0); }

static void teardown(fixture *f)
{
    tly_runsched_destroy(f->rs);
    tly_store_destroy(f->s);
}

static uint32_t run_ix(const fixture *f, const char *ns, const char *name)
{
    int32_t i = tly_runsched_find_run(f->rs, ns, name);
    assert_true(i >= 0);
    return (uint32_t)i;
}

static uint32_t pod_ix(const fixture *f, const char *ns, const char *name)
{
    int32_t i = tly_runsched_find_pod(f->rs, ns, name);
    assert_true(i >= 0);
    return (uint32_t)i;
}

static const tly_rs_run_result *res(const fixture *f, const char *ns, const char *name)
{
    return tly_runsched_run_at(f->rs, run_ix(f, ns, name));
}

static void assert_str(const char *got, const char *want)
{
    if (want == NULL) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
}

/* The Run's phase, assigned Pod name (or NULL) and reason (or NULL). */
static void assert_run(const fixture *f, const char *ns, const char *name, tly_run_phase phase,
                       const char *pod, const char *reason)
{
    const tly_rs_run_result *r = res(f, ns, name);
    assert_non_null(r);
    assert_string_equal(tly_run_phase_name(r->phase), tly_run_phase_name(phase));
    assert_str(r->assigned, pod);
    assert_str(r->reason, reason);
}

/* Integer value of resource `name` in a ledger (0 when absent). */
static int64_t vec_value(const fixture *f, const tly_rvec *v, const char *name)
{
    uint32_t id = tly_names_find(tly_store_names(f->s), name, strlen(name));
    if (id == TLY_NAME_NONE)
        return 0;
    int64_t out = -1;
    assert_int_equal(tly_qty_value(tly_rvec_get(v, id), &out), 0);
    return out;
}

static int64_t used(const fixture *f, const char *ns, const char *pod, const char *resource)
{
    const tly_rs_pod_result *p = tly_runsched_pod_at(f->rs, pod_ix(f, ns, pod));
    assert_non_null(p);
    return vec_value(f, p->used, resource);
}

static int64_t admitted(const fixture *f, const char *ns, const char *pod, const char *resource)
{
    const tly_rs_pod_result *p = tly_runsched_pod_at(f->rs, pod_ix(f, ns, pod));
    assert_non_null(p);
    return vec_value(f, &p->admitted, resource);
}

/* ---- reactivation as events --------------------------------------------------- */

/*
** rt-0 has room for one Run. holder runs there; waiter is Pending. Nothing
** re-tries waiter until holder ends; a non-event (a second run(), the end
** of a Run that held nothing) adds no cycle; the release adds exactly one
** (waiter's) and places it.
*/
static void test_pending_run_wakes_only_on_release(void **state)
{
    (void)state;
    fixture f = setup(
        RT_POD("default", "rt-0", "python", CAP("runs", "1"))
        RUN_HEAD("default", "holder", "python", "2026-11-24T10:00:00Z", REQS(REQ("runs", "1")))
        ASSIGNED("Running", "rt-0", "2026-11-24T10:00:01Z")
        RUN_HEAD("default", "done", "python", "2026-11-24T09:00:00Z", REQS(REQ("runs", "1")))
        "status:\n  phase: Succeeded\n"
        RUN_HEAD("default", "waiter", "python", "2026-11-24T11:00:00Z", REQS(REQ("runs", "1")))
        PENDING);

    tly_runsched_run(f.rs);
    assert_run(&f, "default", "waiter", TLY_RUN_PENDING, NULL, TLY_REASON_INSUFFICIENT_CAPACITY);
    assert_run(&f, "default", "holder", TLY_RUN_RUNNING, "rt-0", NULL);
    assert_int_equal(used(&f, "default", "rt-0", "runs"), 1);
    uint64_t c1 = tly_runsched_cycles(f.rs);
    assert_true(c1 >= 1);

    /* Nothing changed: no Run is re-tried. */
    tly_runsched_run(f.rs);
    tly_runsched_run(f.rs);
    assert_int_equal(tly_runsched_cycles(f.rs), c1);
    assert_run(&f, "default", "waiter", TLY_RUN_PENDING, NULL, TLY_REASON_INSUFFICIENT_CAPACITY);

    /* A Run that held no capacity ends: nothing is released, nothing wakes. */
    tly_runsched_finish(f.rs, run_ix(&f, "default", "done"), TLY_RUN_SUCCEEDED);
    tly_runsched_run(f.rs);
    assert_int_equal(tly_runsched_cycles(f.rs), c1);

    /* holder ends: its usage is released and waiter is re-tried once. */
    tly_runsched_finish(f.rs, run_ix(&f, "default", "holder"), TLY_RUN_SUCCEEDED);
    assert_int_equal(used(&f, "default", "rt-0", "runs"), 0);
    tly_runsched_run(f.rs);
    assert_int_equal(tly_runsched_cycles(f.rs), c1 + 1);
    assert_run(&f, "default", "holder", TLY_RUN_SUCCEEDED, "rt-0", NULL);
    assert_run(&f, "default", "waiter", TLY_RUN_RUNNING, "rt-0", NULL);
    assert_true(res(&f, "default", "waiter")->placed);
    assert_int_equal(used(&f, "default", "rt-0", "runs"), 1);
    assert_int_equal(admitted(&f, "default", "rt-0", "runs"), 1);

    /* And it stays quiet afterwards. */
    tly_runsched_run(f.rs);
    assert_int_equal(tly_runsched_cycles(f.rs), c1 + 1);
    teardown(&f);
}

/*
** A release in another runtime (or another namespace) is not an event for
** this Run: kruntimes wakes only the Pending Runs of the same namespace and
** spec.runtime.
*/
static void test_release_elsewhere_does_not_wake(void **state)
{
    (void)state;
    fixture f = setup(
        RT_POD("default", "py-0", "python", CAP("runs", "1"))
        RT_POD("default", "go-0", "golang", CAP("runs", "1"))
        RT_POD("other", "py-0", "python", CAP("runs", "1"))
        RUN_HEAD("default", "py-holder", "python", "2026-11-24T10:00:00Z", "")
        ASSIGNED("Running", "py-0", "2026-11-24T10:00:01Z")
        RUN_HEAD("default", "go-holder", "golang", "2026-11-24T10:00:00Z", "")
        ASSIGNED("Running", "go-0", "2026-11-24T10:00:01Z")
        RUN_HEAD("other", "py-holder", "python", "2026-11-24T10:00:00Z", "")
        ASSIGNED("Running", "py-0", "2026-11-24T10:00:01Z")
        RUN_HEAD("default", "py-waiter", "python", "2026-11-24T11:00:00Z", "")
        PENDING);

    tly_runsched_run(f.rs);
    assert_run(&f, "default", "py-waiter", TLY_RUN_PENDING, NULL, TLY_REASON_INSUFFICIENT_CAPACITY);
    uint64_t c1 = tly_runsched_cycles(f.rs);

    tly_runsched_finish(f.rs, run_ix(&f, "default", "go-holder"), TLY_RUN_SUCCEEDED);
    tly_runsched_run(f.rs);
    tly_runsched_finish(f.rs, run_ix(&f, "other", "py-holder"), TLY_RUN_FAILED);
    tly_runsched_run(f.rs);
    assert_int_equal(tly_runsched_cycles(f.rs), c1);
    assert_run(&f, "default", "py-waiter", TLY_RUN_PENDING, NULL, TLY_REASON_INSUFFICIENT_CAPACITY);
    assert_int_equal(used(&f, "other", "py-0", "runs"), 0);
    assert_int_equal(used(&f, "default", "py-0", "runs"), 1);

    tly_runsched_finish(f.rs, run_ix(&f, "default", "py-holder"), TLY_RUN_CANCELLED);
    tly_runsched_run(f.rs);
    assert_int_equal(tly_runsched_cycles(f.rs), c1 + 1);
    assert_run(&f, "default", "py-waiter", TLY_RUN_RUNNING, "py-0", NULL);
    teardown(&f);
}

/*
** A capacity change wakes the waiting Runs of the Pod's group: here the Pod
** starts to advertise the resource the Run asks for.
*/
static void test_capacity_change_wakes_pending_run(void **state)
{
    (void)state;
    fixture f = setup(
        RT_POD("default", "rt-0", "python", CAP("runs", "4"))
        RUN_HEAD("default", "gpu-run", "python", "2026-11-24T11:00:00Z",
                 REQS(REQ("runs", "1") REQ("example.com/gpu", "1")))
        PENDING);

    tly_runsched_run(f.rs);
    assert_run(&f, "default", "gpu-run", TLY_RUN_PENDING, NULL, TLY_REASON_INSUFFICIENT_CAPACITY);
    assert_non_null(strstr(res(&f, "default", "gpu-run")->message, "example.com/gpu"));
    uint64_t c1 = tly_runsched_cycles(f.rs);
    tly_runsched_run(f.rs);
    assert_int_equal(tly_runsched_cycles(f.rs), c1);

    tly_names *names = tly_store_names(f.s);
    tly_arena *a = tly_store_arena(f.s);
    tly_rlist cap = {0};
    tly_rlist_set(&cap, a, TLY_R_RUNS, tly_qty_from_int(4, TLY_QFMT_DECIMAL_SI));
    tly_rlist_set(&cap, a, tly_names_intern(names, "example.com/gpu", strlen("example.com/gpu")),
                  tly_qty_from_int(1, TLY_QFMT_DECIMAL_SI));
    tly_runsched_set_capacity(f.rs, pod_ix(&f, "default", "rt-0"), &cap);
    tly_runsched_run(f.rs);

    assert_int_equal(tly_runsched_cycles(f.rs), c1 + 1);
    assert_run(&f, "default", "gpu-run", TLY_RUN_RUNNING, "rt-0", NULL);
    assert_int_equal(used(&f, "default", "rt-0", "example.com/gpu"), 1);
    assert_int_equal(admitted(&f, "default", "rt-0", "example.com/gpu"), 1);
    assert_int_equal(admitted(&f, "default", "rt-0", "runs"), 1);
    teardown(&f);
}

/* ---- reserve / bind ----------------------------------------------------------- */

/* Reserve assumes the full request on the Pod; a failed bind gives it back. */
static void test_bind_failure_releases_assumption(void **state)
{
    (void)state;
    fixture f = setup(
        RT_POD("default", "rt-0", "python", CAP("runs", "2") CAP("gpu", "1"))
        RUN_HEAD("default", "first", "python", "2026-11-24T11:00:00Z",
                 REQS(REQ("runs", "1") REQ("gpu", "1")))
        PENDING
        RUN_HEAD("default", "second", "python", "2026-11-24T11:00:01Z",
                 REQS(REQ("runs", "1") REQ("gpu", "1")))
        PENDING);

    uint32_t first = run_ix(&f, "default", "first"), second = run_ix(&f, "default", "second");
    uint32_t pod = pod_ix(&f, "default", "rt-0");
    assert_int_equal(used(&f, "default", "rt-0", "runs"), 0);
    assert_int_equal(used(&f, "default", "rt-0", "gpu"), 0);

    assert_int_equal(tly_runsched_reserve(f.rs, first), (int32_t)pod);
    assert_int_equal(used(&f, "default", "rt-0", "runs"), 1);
    assert_int_equal(used(&f, "default", "rt-0", "gpu"), 1);
    /* The assumption counts: second cannot have the only gpu. */
    assert_int_equal(tly_runsched_reserve(f.rs, second), -1);
    assert_run(&f, "default", "second", TLY_RUN_PENDING, NULL, TLY_REASON_INSUFFICIENT_CAPACITY);

    tly_runsched_bind_failed(f.rs, first);
    assert_int_equal(used(&f, "default", "rt-0", "runs"), 0);
    assert_int_equal(used(&f, "default", "rt-0", "gpu"), 0);
    assert_run(&f, "default", "first", TLY_RUN_PENDING, NULL, NULL);
    assert_false(res(&f, "default", "first")->placed);

    /* The room is really free again: second can take it. */
    assert_int_equal(tly_runsched_reserve(f.rs, second), (int32_t)pod);
    tly_runsched_bind(f.rs, second);
    assert_run(&f, "default", "second", TLY_RUN_SCHEDULED, "rt-0", NULL);
    assert_int_equal(used(&f, "default", "rt-0", "gpu"), 1);

    /* A second bind_failed of the released Run changes nothing. */
    tly_runsched_bind_failed(f.rs, first);
    assert_int_equal(used(&f, "default", "rt-0", "runs"), 1);

    tly_runsched_run(f.rs);
    assert_run(&f, "default", "second", TLY_RUN_RUNNING, "rt-0", NULL);
    assert_run(&f, "default", "first", TLY_RUN_PENDING, NULL, TLY_REASON_INSUFFICIENT_CAPACITY);
    assert_int_equal(used(&f, "default", "rt-0", "runs"), 1);
    assert_int_equal(admitted(&f, "default", "rt-0", "gpu"), 1);
    teardown(&f);
}

/*
** kruntimes drops every other namespace's assumptions at each cycle
** (kruntimes-facts 3.4); the seed says an assumption lasts until its Run is
** observed. team-a's reserved, unbound Run must keep guarding team-a/rt-0
** while team-b schedules on its own rt-0.
*/
static void test_assumption_survives_other_namespace(void **state)
{
    (void)state;
    fixture f = setup(
        RT_POD("team-a", "rt-0", "python", CAP("runs", "1"))
        RT_POD("team-b", "rt-0", "python", CAP("runs", "1"))
        RUN_HEAD("team-a", "a-1", "python", "2026-11-24T11:00:00Z", "") PENDING
        RUN_HEAD("team-a", "a-2", "python", "2026-11-24T11:00:02Z", "") PENDING
        RUN_HEAD("team-b", "b-1", "python", "2026-11-24T11:00:01Z", "") PENDING);

    uint32_t a1 = run_ix(&f, "team-a", "a-1"), a2 = run_ix(&f, "team-a", "a-2");
    uint32_t b1 = run_ix(&f, "team-b", "b-1");
    uint32_t pa = pod_ix(&f, "team-a", "rt-0"), pb = pod_ix(&f, "team-b", "rt-0");
    assert_true(pa != pb);

    assert_int_equal(tly_runsched_reserve(f.rs, a1), (int32_t)pa); /* assumed, not bound */
    assert_int_equal(tly_runsched_reserve(f.rs, b1), (int32_t)pb);  /* same-named Pod, team-b */
    tly_runsched_bind(f.rs, b1);
    assert_run(&f, "team-b", "b-1", TLY_RUN_SCHEDULED, "rt-0", NULL);

    /* a-1's assumption still counts on team-a/rt-0, and only there. */
    assert_int_equal(used(&f, "team-a", "rt-0", "runs"), 1);
    assert_int_equal(used(&f, "team-b", "rt-0", "runs"), 1);
    assert_int_equal(tly_runsched_reserve(f.rs, a2), -1);
    assert_run(&f, "team-a", "a-2", TLY_RUN_PENDING, NULL, TLY_REASON_INSUFFICIENT_CAPACITY);
    assert_int_equal(used(&f, "team-a", "rt-0", "runs"), 1);

    tly_runsched_bind(f.rs, a1);
    tly_runsched_run(f.rs);
    assert_run(&f, "team-a", "a-1", TLY_RUN_RUNNING, "rt-0", NULL);
    assert_run(&f, "team-a", "a-2", TLY_RUN_PENDING, NULL, TLY_REASON_INSUFFICIENT_CAPACITY);
    assert_run(&f, "team-b", "b-1", TLY_RUN_RUNNING, "rt-0", NULL);
    assert_int_equal(used(&f, "team-a", "rt-0", "runs"), 1);
    assert_int_equal(admitted(&f, "team-a", "rt-0", "runs"), 1);
    assert_int_equal(admitted(&f, "team-b", "rt-0", "runs"), 1);
    teardown(&f);
}

/* ---- runtimed admission --------------------------------------------------------- */

/*
** A stale assignment: stuck is Scheduled on rt-0 although holder already uses
** the Pod's only gpu. runtimed leaves it Scheduled (InsufficientLocalCapacity)
** and admits it when holder ends. That re-check is runtimed's, not a
** scheduling cycle.
*/
static void test_runtimed_waiter_admitted_when_local_run_finishes(void **state)
{
    (void)state;
    fixture f = setup(
        RT_POD("default", "rt-0", "python", CAP("runs", "4") CAP("gpu", "1"))
        RUN_HEAD("default", "holder", "python", "2026-11-24T10:00:00Z",
                 REQS(REQ("runs", "1") REQ("gpu", "1")))
        ASSIGNED("Running", "rt-0", "2026-11-24T10:00:01Z")
        RUN_HEAD("default", "stuck", "python", "2026-11-24T10:30:00Z",
                 REQS(REQ("runs", "1") REQ("gpu", "1")))
        ASSIGNED("Scheduled", "rt-0", "2026-11-24T10:30:01Z"));

    tly_runsched_run(f.rs);
    assert_run(&f, "default", "stuck", TLY_RUN_SCHEDULED, "rt-0", TLY_REASON_INSUFFICIENT_LOCAL);
    assert_false(res(&f, "default", "stuck")->admitted);
    assert_int_equal(used(&f, "default", "rt-0", "gpu"), 2);     /* the scheduler counts both */
    assert_int_equal(admitted(&f, "default", "rt-0", "gpu"), 1); /* runtimed only holder */
    uint64_t c1 = tly_runsched_cycles(f.rs);

    tly_runsched_run(f.rs);
    assert_run(&f, "default", "stuck", TLY_RUN_SCHEDULED, "rt-0", TLY_REASON_INSUFFICIENT_LOCAL);
    assert_int_equal(tly_runsched_cycles(f.rs), c1);

    tly_runsched_finish(f.rs, run_ix(&f, "default", "holder"), TLY_RUN_SUCCEEDED);
    tly_runsched_run(f.rs);
    assert_run(&f, "default", "stuck", TLY_RUN_RUNNING, "rt-0", NULL);
    assert_null(res(&f, "default", "stuck")->message);
    assert_true(res(&f, "default", "stuck")->admitted);
    assert_int_equal(tly_runsched_cycles(f.rs), c1);
    assert_int_equal(used(&f, "default", "rt-0", "gpu"), 1);
    assert_int_equal(admitted(&f, "default", "rt-0", "gpu"), 1);
    assert_int_equal(admitted(&f, "default", "rt-0", "runs"), 1);
    teardown(&f);
}

/*
** runtimed admits in (Scheduled time, name) order and a Run that does not fit
** does not block a later one that does; a capacity change re-checks the
** waiter.
*/
static void test_runtimed_order_and_capacity_recheck(void **state)
{
    (void)state;
    fixture f = setup(
        RT_POD("default", "rt-0", "python", CAP("runs", "3") CAP("gpu", "1"))
        RUN_HEAD("default", "a-late", "python", "2026-11-24T10:00:00Z",
                 REQS(REQ("runs", "1") REQ("gpu", "1")))
        ASSIGNED("Scheduled", "rt-0", "2026-11-24T10:00:09Z")
        RUN_HEAD("default", "z-early", "python", "2026-11-24T10:00:05Z",
                 REQS(REQ("runs", "1") REQ("gpu", "1")))
        ASSIGNED("Scheduled", "rt-0", "2026-11-24T10:00:06Z")
        RUN_HEAD("default", "m-cpu", "python", "2026-11-24T10:00:00Z", REQS(REQ("runs", "1")))
        ASSIGNED("Scheduled", "rt-0", "2026-11-24T10:00:10Z"));

    tly_runsched_run(f.rs);
    assert_run(&f, "default", "z-early", TLY_RUN_RUNNING, "rt-0", NULL);
    assert_run(&f, "default", "a-late", TLY_RUN_SCHEDULED, "rt-0", TLY_REASON_INSUFFICIENT_LOCAL);
    assert_run(&f, "default", "m-cpu", TLY_RUN_RUNNING, "rt-0", NULL);
    assert_int_equal(admitted(&f, "default", "rt-0", "runs"), 2);
    assert_int_equal(admitted(&f, "default", "rt-0", "gpu"), 1);

    tly_names *names = tly_store_names(f.s);
    tly_arena *a = tly_store_arena(f.s);
    tly_rlist cap = {0};
    tly_rlist_set(&cap, a, TLY_R_RUNS, tly_qty_from_int(3, TLY_QFMT_DECIMAL_SI));
    tly_rlist_set(&cap, a, tly_names_intern(names, "gpu", 3), tly_qty_from_int(2, TLY_QFMT_DECIMAL_SI));
    tly_runsched_set_capacity(f.rs, pod_ix(&f, "default", "rt-0"), &cap);
    tly_runsched_run(f.rs);
    assert_run(&f, "default", "a-late", TLY_RUN_RUNNING, "rt-0", NULL);
    assert_int_equal(admitted(&f, "default", "rt-0", "runs"), 3);
    assert_int_equal(admitted(&f, "default", "rt-0", "gpu"), 2);
    teardown(&f);
}

/* ---- cancel requests and PreFilter failures ------------------------------------- */

#define CANCEL "  cancelRequested: true\n"
#define IN_WITHOUT_VALUES                                                              \
    "  affinity:\n    runAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n" \
    "      - topologyKey: kruntimes.io/runtime-pod\n        labelSelector:\n"            \
    "          matchExpressions:\n          - key: app\n            operator: In\n"

/*
** rt-0 has room for one Run, held by `cancelled`, which is Scheduled there
** with a cancel request. runtimed ends it Cancelled without claiming it, the
** scheduler's usage of rt-0 drops, and that release wakes `waiter`, which is
** placed and admitted in the same run.
*/
static void test_cancelled_scheduled_run_frees_its_pod(void **state)
{
    (void)state;
    fixture f = setup(
        RT_POD("default", "rt-0", "python", CAP("runs", "1"))
        RUN_HEAD("default", "cancelled", "python", "2026-11-24T10:00:00Z", CANCEL)
        ASSIGNED("Scheduled", "rt-0", "2026-11-24T10:00:01Z")
        RUN_HEAD("default", "waiter", "python", "2026-11-24T11:00:00Z", "")
        PENDING);

    tly_runsched_run(f.rs);
    assert_run(&f, "default", "cancelled", TLY_RUN_CANCELLED, "rt-0", TLY_REASON_CANCELLED);
    assert_string_equal(res(&f, "default", "cancelled")->message, TLY_MESSAGE_CANCELLED);
    assert_false(res(&f, "default", "cancelled")->admitted);
    assert_run(&f, "default", "waiter", TLY_RUN_RUNNING, "rt-0", NULL);
    assert_int_equal(used(&f, "default", "rt-0", "runs"), 1);
    assert_int_equal(admitted(&f, "default", "rt-0", "runs"), 1);
    teardown(&f);
}

/*
** kruntimes' order before any Pod is looked at: cancel, then the request,
** then the affinity. With no Runtime Pod at all, a Run whose affinity does
** not compile still ends Failed (not RuntimePodsUnavailable).
*/
static void test_prefilter_order_without_pods(void **state)
{
    (void)state;
    fixture f = setup_with_errors(
        RUN_HEAD("default", "both-cancelled", "python", "2026-11-24T10:00:00Z",
                 CANCEL REQS(REQ("runs", "2000m")) IN_WITHOUT_VALUES)
        RUN_HEAD("default", "both", "python", "2026-11-24T10:00:01Z",
                 REQS(REQ("runs", "2000m")) IN_WITHOUT_VALUES)
        RUN_HEAD("default", "affinity", "python", "2026-11-24T10:00:02Z", IN_WITHOUT_VALUES),
        5);

    tly_runsched_run(f.rs);
    assert_run(&f, "default", "both-cancelled", TLY_RUN_CANCELLED, NULL, TLY_REASON_CANCELLED);
    assert_run(&f, "default", "both", TLY_RUN_FAILED, NULL, TLY_REASON_INVALID_RESOURCES);
    assert_run(&f, "default", "affinity", TLY_RUN_FAILED, NULL, NULL);
    assert_string_equal(res(&f, "default", "affinity")->message,
                        "pod selection failed: pre-filter run affinity: parse run affinity selector: "
                        "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty");
    teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pending_run_wakes_only_on_release),
        cmocka_unit_test(test_release_elsewhere_does_not_wake),
        cmocka_unit_test(test_capacity_change_wakes_pending_run),
        cmocka_unit_test(test_bind_failure_releases_assumption),
        cmocka_unit_test(test_assumption_survives_other_namespace),
        cmocka_unit_test(test_runtimed_waiter_admitted_when_local_run_finishes),
        cmocka_unit_test(test_runtimed_order_and_capacity_recheck),
        cmocka_unit_test(test_cancelled_scheduled_run_frees_its_pod),
        cmocka_unit_test(test_prefilter_order_without_pods),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
