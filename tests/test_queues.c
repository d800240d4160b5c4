/*
** test_queues.c: specification tests for the queue policy (src/queues.c,
** include/tally/queues.h) through tly_queues_* directly.
**
** The expected values come from the rules, not from the code: kai-facts.md
** 1.2 (units: cpu in millicores, memory in MB = 10^6 bytes; -1 unlimited,
** any negative memory clamped to unlimited, any other cpu/gpu value a bound),
** 2.3-2.4 (strict comparison, zero requests skipped, limit before quota,
** quota only for non-preemptible workloads, cpu/memory/gpu, leaf to root),
** 2.7 (KAI's exact messages: humanize.FtoaWithDigits(x, 3), i.e. Go's
** strconv.FormatFloat(x, 'f', 3) with trailing zeros dropped; displayName),
** 1.3-1.4 (hierarchy, missing parent, QueueDoesNotExist), contract sections
** 2-3 (AccountedResource limits, gating, Reserved) and the AccountedResource
** seed (effective limit, AccountedResourceNotFound).
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tally/error.h"
#include "tally/quantity.h"
#include "tally/queues.h"
#include "tally/resource.h"
#include "tally/store.h"
#include "testutil.h"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

static tly_store *S;
static tly_queues *QS;

static int teardown(void **state)
{
    (void)state;
    if (QS)
        tly_queues_destroy(QS);
    if (S)
        tly_store_destroy(S);
    QS = NULL;
    S = NULL;
    return 0;
}

static tly_queues *load(const char *yaml)
{
    teardown(NULL);
    S = load_text("queues.yaml", yaml);
    QS = tly_queues_create(S);
    assert_non_null(QS);
    return QS;
}

static uint32_t qidx(const char *name)
{
    int32_t i = tly_queues_find(QS, name);
    if (i < 0)
        fail_msg("queue %s not found", name);
    return (uint32_t)i;
}

static tly_qty Q(const char *s)
{
    tly_qty q;
    if (tly_qty_parse_str(s, &q) != TLY_OK)
        fail_msg("bad quantity %s", s);
    return q;
}

/* Up to 4 accounted amounts per charge in these tests. */
typedef struct {
    tly_qcharge c;
    tly_qty acc[4];
} charge_t;

/* A charge of cpu (cores), memory (bytes) and gpu (devices); "" = 0. */
static charge_t charge(const char *cpu, const char *mem, const char *gpu)
{
    charge_t t;
    memset(&t, 0, sizeof t);
    t.c.res[TLY_QR_CPU] = *cpu ? Q(cpu) : (tly_qty){0, 0};
    t.c.res[TLY_QR_MEMORY] = *mem ? Q(mem) : (tly_qty){0, 0};
    t.c.res[TLY_QR_GPU] = *gpu ? Q(gpu) : (tly_qty){0, 0};
    t.c.all.v = NULL;
    t.c.all.n = 0;
    t.c.accounted = NULL;
    return t;
}

/* The same with AccountedResource amounts (tly_queues_accres order). */
static void charge_acc(charge_t *t, const char *a0, const char *a1)
{
    *t = charge("", "", "");
    t->acc[0] = a0 && *a0 ? Q(a0) : (tly_qty){0, 0};
    t->acc[1] = a1 && *a1 ? Q(a1) : (tly_qty){0, 0};
    t->c.accounted = t->acc;
}

static tly_qverdict check(const char *queue, charge_t *t, bool np, bool reserved)
{
    tly_qverdict v;
    memset(&v, 0, sizeof v);
    tly_queues_check(QS, qidx(queue), &t->c, np, reserved, &v);
    return v;
}

#define assert_ok(v) \
    do { \
        tly_qverdict v_ = (v); \
        if (!v_.ok) \
            fail_msg("expected ok, got %s: %s", v_.reason ? v_.reason : "(null)", \
                     v_.message ? v_.message : "(null)"); \
    } while (0)

#define assert_verdict(v, want_reason, want_message) \
    do { \
        tly_qverdict v_ = (v); \
        assert_false(v_.ok); \
        assert_non_null(v_.reason); \
        assert_string_equal(v_.reason, want_reason); \
        assert_non_null(v_.message); \
        assert_string_equal(v_.message, want_message); \
    } while (0)

#define QHEAD "apiVersion: scheduling.run.ai/v2\nkind: Queue\n"
#define ARHEAD "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n"

/* A queue with only limits (quota -1), cpu/memory/gpu given as YAML scalars. */
static char *limits_queue(char *buf, size_t cap, const char *name, const char *parent, const char *cpu,
                          const char *mem, const char *gpu)
{
    snprintf(buf, cap,
             QHEAD "metadata:\n  name: %s\nspec:\n%s%s%s"
                   "  resources:\n"
                   "    cpu: {quota: -1, limit: %s}\n"
                   "    memory: {quota: -1, limit: %s}\n"
                   "    gpu: {quota: -1, limit: %s}\n",
             name, parent ? "  parentQueue: " : "", parent ? parent : "", parent ? "\n" : "", cpu, mem, gpu);
    return buf;
}

#define OL_FMT "%s quota has reached the allowable limit of %s. Limit is %s, currently %s allocated and workload requested %s"

/* ---------------------------------------------------------------------- */
/* Units                                                                  */
/* ---------------------------------------------------------------------- */

/* cpu limit 2500 millicores = 2.5 cores: 2.5 fits exactly, 2.501 does not. */
static void test_cpu_millicores(void **state)
{
    (void)state;
    char y[512];
    load(limits_queue(y, sizeof y, "q", NULL, "2500", "-1", "-1"));
    charge_t eq = charge("2500m", "", "");
    assert_ok(check("q", &eq, false, false));
    charge_t over = charge("2501m", "", "");
    assert_verdict(check("q", &over, false, false), "OverLimit",
                   "q quota has reached the allowable limit of CPU cores. Limit is 2.5 cores, currently 0 cores "
                   "allocated and workload requested 2.501 cores");
}

/* memory limit 1000 MB = 10^9 bytes (not MiB). */
static void test_memory_megabytes(void **state)
{
    (void)state;
    char y[512];
    load(limits_queue(y, sizeof y, "q", NULL, "-1", "1000", "-1"));
    charge_t g = charge("", "1G", "");
    assert_ok(check("q", &g, false, false));
    charge_t mi953 = charge("", "953Mi", ""); /* 999292928 bytes */
    assert_ok(check("q", &mi953, false, false));
    charge_t mi954 = charge("", "954Mi", ""); /* 1000341504 bytes: over 10^9 */
    assert_verdict(check("q", &mi954, false, false), "OverLimit",
                   "q quota has reached the allowable limit of memory. Limit is 1 GB, currently 0 GB allocated "
                   "and workload requested 1 GB");
    charge_t gi = charge("", "1Gi", "");
    assert_false(check("q", &gi, false, false).ok);
}

/* Any negative memory limit is clamped to -1 (unlimited); quotas too. */
static void test_negative_memory_unlimited(void **state)
{
    (void)state;
    char y[512];
    load(limits_queue(y, sizeof y, "q", NULL, "-1", "-5", "-1"));
    charge_t m = charge("", "1000Ti", "");
    assert_ok(check("q", &m, false, false));
    load(QHEAD "metadata:\n  name: q\nspec:\n  resources:\n"
               "    cpu: {quota: -1, limit: -1}\n    memory: {quota: -3, limit: -1}\n"
               "    gpu: {quota: -1, limit: -1}\n");
    assert_ok(check("q", &m, true, false));
}

/* For cpu and gpu only -1 is unlimited: -2 is a bound every request exceeds. */
static void test_negative_cpu_gpu_bound(void **state)
{
    (void)state;
    char y[512];
    load(limits_queue(y, sizeof y, "q", NULL, "-2", "-1", "-2"));
    charge_t c = charge("1m", "", "");
    assert_verdict(check("q", &c, false, false), "OverLimit",
                   "q quota has reached the allowable limit of CPU cores. Limit is -0.002 cores, currently 0 "
                   "cores allocated and workload requested 0.001 cores");
    charge_t g = charge("", "", "10m");
    assert_verdict(check("q", &g, false, false), "OverLimit",
                   "q quota has reached the allowable limit of GPUs. Limit is -2 GPUs, currently 0 GPUs "
                   "allocated and workload requested 0.01 GPUs");
    /* -1 exactly is unlimited. */
    load(limits_queue(y, sizeof y, "q", NULL, "-1", "-1", "-1"));
    charge_t big = charge("100000", "1000Ti", "1000");
    assert_ok(check("q", &big, false, false));
}

/* Omitted limits under spec.resources are 0 (a hard bound); without
   spec.resources nothing is bounded. */
static void test_omitted_and_absent_resources(void **state)
{
    (void)state;
    load(QHEAD "metadata:\n  name: q\nspec:\n  resources:\n    gpu: {quota: -1, limit: -1}\n");
    charge_t c = charge("100m", "", "");
    assert_verdict(check("q", &c, false, false), "OverLimit",
                   "q quota has reached the allowable limit of CPU cores. Limit is 0 cores, currently 0 cores "
                   "allocated and workload requested 0.1 cores");
    charge_t g = charge("", "", "3");
    assert_ok(check("q", &g, false, false));

    load(QHEAD "metadata:\n  name: q\nspec: {}\n");
    charge_t all = charge("1000", "1000Ti", "1000");
    assert_ok(check("q", &all, true, false));
}

/* ---------------------------------------------------------------------- */
/* Comparison and order                                                   */
/* ---------------------------------------------------------------------- */

/* A zero request never meets a bound, 0 included; equality is admitted. */
static void test_zero_request_and_equality(void **state)
{
    (void)state;
    char y[512];
    load(limits_queue(y, sizeof y, "q", NULL, "0", "0", "2"));
    charge_t gpu_only = charge("", "", "2");
    assert_ok(check("q", &gpu_only, false, false));
    tly_queues_charge(QS, qidx("q"), &gpu_only.c, false, 1);
    charge_t none = charge("", "", "");
    assert_ok(check("q", &none, false, false));
    charge_t one_more = charge("", "", "10m");
    assert_verdict(check("q", &one_more, false, false), "OverLimit",
                   "q quota has reached the allowable limit of GPUs. Limit is 2 GPUs, currently 2 GPUs "
                   "allocated and workload requested 0.01 GPUs");
}

/* Within one queue: cpu, then memory, then gpu. */
static void test_resource_order(void **state)
{
    (void)state;
    char y[512];
    load(limits_queue(y, sizeof y, "q", NULL, "1000", "1000", "1"));
    charge_t all = charge("2", "2G", "2");
    assert_verdict(check("q", &all, false, false), "OverLimit",
                   "q quota has reached the allowable limit of CPU cores. Limit is 1 cores, currently 0 cores "
                   "allocated and workload requested 2 cores");
    charge_t mg = charge("", "2G", "2");
    assert_verdict(check("q", &mg, false, false), "OverLimit",
                   "q quota has reached the allowable limit of memory. Limit is 1 GB, currently 0 GB "
                   "allocated and workload requested 2 GB");
}

/* Leaf before ancestors; the offending ancestor's numbers and displayName. */
static void test_leaf_to_root(void **state)
{
    (void)state;
    char a[512], b[512], c[512], all[1700];
    limits_queue(a, sizeof a, "org", NULL, "-1", "-1", "3");
    limits_queue(b, sizeof b, "dept", "org", "1000", "-1", "10");
    limits_queue(c, sizeof c, "team", "dept", "500", "-1", "10");
    snprintf(all, sizeof all, "%s---\n%s---\n%s", a, b, c);
    /* dept has a displayName. */
    char *p = strstr(all, "name: dept\nspec:\n");
    assert_non_null(p);
    char y[2048];
    size_t off = (size_t)(p - all) + strlen("name: dept\nspec:\n");
    snprintf(y, sizeof y, "%.*s  displayName: Department\n%s", (int)off, all, all + off);
    load(y);

    charge_t running = charge("", "", "2");
    tly_queues_charge(QS, qidx("team"), &running.c, false, 1);
    /* gpu: team 2+2 <= 10, dept 2+2 <= 10, org 2+2 > 3. */
    charge_t g = charge("", "", "2");
    assert_verdict(check("team", &g, false, false), "OverLimit",
                   "org quota has reached the allowable limit of GPUs. Limit is 3 GPUs, currently 2 GPUs "
                   "allocated and workload requested 2 GPUs");
    /* cpu 2: team (0.5) and dept (1) both over: the leaf is reported. */
    charge_t c2 = charge("2", "", "");
    assert_verdict(check("team", &c2, false, false), "OverLimit",
                   "team quota has reached the allowable limit of CPU cores. Limit is 0.5 cores, currently 0 "
                   "cores allocated and workload requested 2 cores");
    /* A limit check on the leaf comes before any ancestor even for a later
       resource: cpu 0.4 passes team, fails nothing; gpu 2 fails org. */
    charge_t mixed = charge("400m", "", "2");
    assert_verdict(check("team", &mixed, false, false), "OverLimit",
                   "org quota has reached the allowable limit of GPUs. Limit is 3 GPUs, currently 2 GPUs "
                   "allocated and workload requested 2 GPUs");
    /* cpu 0.8: team over (0.5), reported by team; with team at 0.3 used and
       0.2 requested, dept is fine; displayName used for dept. */
    charge_t c08 = charge("800m", "", "");
    tly_qverdict v = check("team", &c08, false, false);
    assert_false(v.ok);
    assert_string_equal(v.message,
                        "team quota has reached the allowable limit of CPU cores. Limit is 0.5 cores, currently 0 "
                        "cores allocated and workload requested 0.8 cores");
    /* Put 0.5 cores on a sibling leaf of dept so dept is the one that fails. */
    teardown(NULL);
    char d[512];
    limits_queue(d, sizeof d, "sib", "dept", "-1", "-1", "-1");
    char y2[2600];
    snprintf(y2, sizeof y2, "%s---\n%s", y, d);
    load(y2);
    charge_t sib = charge("700m", "", "");
    tly_queues_charge(QS, qidx("sib"), &sib.c, false, 1);
    charge_t c04 = charge("400m", "", "");
    assert_verdict(check("team", &c04, false, false), "OverLimit",
                   "Department quota has reached the allowable limit of CPU cores. Limit is 1 cores, currently "
                   "0.7 cores allocated and workload requested 0.4 cores");
}

/* Limits before quotas; quotas only for non-preemptible workloads, against
   allocatedNonPreemptible. */
static void test_limit_before_quota(void **state)
{
    (void)state;
    load(QHEAD "metadata:\n  name: q\nspec:\n  resources:\n"
               "    cpu: {quota: -1, limit: -1}\n    memory: {quota: -1, limit: -1}\n"
               "    gpu: {quota: 1, limit: 2}\n");
    charge_t three = charge("", "", "3");
    assert_verdict(check("q", &three, true, false), "OverLimit",
                   "q quota has reached the allowable limit of GPUs. Limit is 2 GPUs, currently 0 GPUs "
                   "allocated and workload requested 3 GPUs");
    charge_t two = charge("", "", "2");
    assert_verdict(check("q", &two, true, false), "NonPreemptibleOverQuota",
                   "Non-preemptible workload is over quota. Workload requested 2 GPUs, but q quota is 1 GPUs, "
                   "while 0 GPUs are already allocated for non-preemptible pods. Use a preemptible workload to "
                   "go over quota.");
    /* Preemptible: the quota is not checked. */
    assert_ok(check("q", &two, false, false));
    /* Preemptible usage does not count against the quota ... */
    load(QHEAD "metadata:\n  name: q\nspec:\n  resources:\n"
               "    cpu: {quota: -1, limit: -1}\n    memory: {quota: -1, limit: -1}\n"
               "    gpu: {quota: 1, limit: -1}\n");
    charge_t one = charge("", "", "1");
    tly_queues_charge(QS, qidx("q"), &one.c, false, 1);
    assert_ok(check("q", &one, true, false));
    /* ... non-preemptible usage does (strict: 0 + 1 <= 1 was fine, 1 + 0.01 > 1). */
    tly_queues_charge(QS, qidx("q"), &one.c, true, 1);
    charge_t hundredth = charge("", "", "10m");
    assert_verdict(check("q", &hundredth, true, false), "NonPreemptibleOverQuota",
                   "Non-preemptible workload is over quota. Workload requested 0.01 GPUs, but q quota is 1 GPUs, "
                   "while 1 GPUs are already allocated for non-preemptible pods. Use a preemptible workload to "
                   "go over quota.");
}

/* Quota messages for cpu and memory (humanized) and GPU (Go %v of the raw
   request, e.g. 0.59). */
static void test_quota_messages(void **state)
{
    (void)state;
    load(QHEAD "metadata:\n  name: q\nspec:\n  displayName: Build Team\n  resources:\n"
               "    cpu: {quota: 1000, limit: -1}\n    memory: {quota: 1500, limit: -1}\n"
               "    gpu: {quota: 0.5, limit: -1}\n");
    charge_t run = charge("500m", "", "");
    tly_queues_charge(QS, qidx("q"), &run.c, true, 1);
    charge_t c = charge("1500m", "", "");
    assert_verdict(check("q", &c, true, false), "NonPreemptibleOverQuota",
                   "Non-preemptible workload is over quota. Workload requested 1.5 CPU cores, but Build Team "
                   "quota is 1 cores, while 0.5 cores are already allocated for non-preemptible pods. Use a "
                   "preemptible workload to go over quota.");
    charge_t m = charge("", "2G", "");
    assert_verdict(check("q", &m, true, false), "NonPreemptibleOverQuota",
                   "Non-preemptible workload is over quota. Workload requested 2 GB memory, but Build Team quota "
                   "is 1.5 GB, while 0 GB are already allocated for non-preemptible pods. Use a preemptible "
                   "workload to go over quota.");
    charge_t g = charge("", "", "590m");
    assert_verdict(check("q", &g, true, false), "NonPreemptibleOverQuota",
                   "Non-preemptible workload is over quota. Workload requested 0.59 GPUs, but Build Team quota "
                   "is 0.5 GPUs, while 0 GPUs are already allocated for non-preemptible pods. Use a preemptible "
                   "workload to go over quota.");
    /* Equality admitted for quotas too. */
    charge_t half = charge("", "", "500m");
    assert_ok(check("q", &half, true, false));
}

/* ---------------------------------------------------------------------- */
/* Humanized numbers                                                      */
/* ---------------------------------------------------------------------- */

static void test_humanized_numbers(void **state)
{
    (void)state;
    char y[512];
    /* 2.5e9 bytes -> 2.5 GB; 1500 millicores -> 1.5 cores. */
    load(limits_queue(y, sizeof y, "q", NULL, "1000", "2000", "-1"));
    charge_t m = charge("", "2500M", "");
    assert_verdict(check("q", &m, false, false), "OverLimit",
                   "q quota has reached the allowable limit of memory. Limit is 2 GB, currently 0 GB allocated "
                   "and workload requested 2.5 GB");
    charge_t c = charge("1500m", "", "");
    assert_verdict(check("q", &c, false, false), "OverLimit",
                   "q quota has reached the allowable limit of CPU cores. Limit is 1 cores, currently 0 cores "
                   "allocated and workload requested 1.5 cores");
    /* Three decimals at most: 1234567890 bytes -> 1.235 GB; 1234 MB limit. */
    load(limits_queue(y, sizeof y, "q", NULL, "-1", "1234", "-1"));
    charge_t m2 = charge("", "1234567890", "");
    assert_verdict(check("q", &m2, false, false), "OverLimit",
                   "q quota has reached the allowable limit of memory. Limit is 1.234 GB, currently 0 GB "
                   "allocated and workload requested 1.235 GB");
    /* Trailing zeros dropped: 1.2 GB, not 1.200. */
    charge_t m3 = charge("", "1200M", "");
    tly_queues_charge(QS, qidx("q"), &m3.c, false, 1);
    charge_t m4 = charge("", "100M", "");
    assert_verdict(check("q", &m4, false, false), "OverLimit",
                   "q quota has reached the allowable limit of memory. Limit is 1.234 GB, currently 1.2 GB "
                   "allocated and workload requested 0.1 GB");
}

/* KAI formats with Go's strconv.FormatFloat(x/1e9, 'f', 3): the float64 of
   1.2345 is just below it, so 1234500000 bytes prints 1.234 (and 1000500000
   prints 1). */
static void test_humanized_go_rounding(void **state)
{
    (void)state;
    char y[512];
    load(limits_queue(y, sizeof y, "q", NULL, "-1", "1000", "-1"));
    charge_t m = charge("", "1234500000", "");
    assert_verdict(check("q", &m, false, false), "OverLimit",
                   "q quota has reached the allowable limit of memory. Limit is 1 GB, currently 0 GB allocated "
                   "and workload requested 1.234 GB");
    charge_t m2 = charge("", "1000500000", "");
    assert_verdict(check("q", &m2, false, false), "OverLimit",
                   "q quota has reached the allowable limit of memory. Limit is 1 GB, currently 0 GB allocated "
                   "and workload requested 1 GB");
}

/* ---------------------------------------------------------------------- */
/* Ledger                                                                 */
/* ---------------------------------------------------------------------- */

#define TREE_WITH_AR \
    ARHEAD "metadata:\n  name: efa\nspec:\n  defaults:\n    limit: \"-1\"\n  sources:\n" \
           "  - resourceName: vpc.amazonaws.com/efa\n---\n" \
    ARHEAD "metadata:\n  name: gpu\nspec:\n  defaults:\n    limit: \"6\"\n  sources:\n" \
           "  - resourceName: nvidia.com/gpu\n---\n" \
    QHEAD "metadata:\n  name: root\nspec:\n  accountedResources:\n  - resourceRef: efa\n    limit: \"32\"\n---\n" \
    QHEAD "metadata:\n  name: mid\nspec:\n  parentQueue: root\n---\n" \
    QHEAD "metadata:\n  name: leaf\nspec:\n  parentQueue: mid\n  accountedResources:\n" \
          "  - resourceRef: gpu\n    limit: \"4\"\n---\n" \
    QHEAD "metadata:\n  name: other\nspec:\n  parentQueue: mid\n"

/* Charging a leaf charges every ancestor; uncharging restores zero. */
static void test_charge_uncharge_symmetry(void **state)
{
    (void)state;
    load(TREE_WITH_AR);
    assert_int_equal(tly_queues_naccres(QS), 2);
    assert_string_equal(tly_queues_accres(QS, 0)->meta.name, "efa");
    assert_string_equal(tly_queues_accres(QS, 1)->meta.name, "gpu");

    uint32_t cpu_id = TLY_R_CPU, gpu_id = TLY_R_NVIDIA_GPU;
    tly_rq items[2] = {{.id = cpu_id, .q = Q("1500m")}, {.id = gpu_id, .q = Q("2")}};

    charge_t t;
    charge_acc(&t, "8", "2");
    t.c.res[TLY_QR_CPU] = Q("1500m");
    t.c.res[TLY_QR_GPU] = Q("2");
    t.c.all.v = items;
    t.c.all.n = 2;

    const char *chain[] = {"leaf", "mid", "root"};
    for (int k = 0; k < 2; k++)
        tly_queues_charge(QS, qidx("leaf"), &t.c, k == 1, 1);
    for (int i = 0; i < 3; i++) {
        uint32_t q = qidx(chain[i]);
        assert_true(tly_qty_cmp(tly_rvec_get(tly_queues_allocated(QS, q), cpu_id), Q("3")) == 0);
        assert_true(tly_qty_cmp(tly_rvec_get(tly_queues_allocated(QS, q), gpu_id), Q("4")) == 0);
        assert_true(tly_qty_cmp(tly_rvec_get(tly_queues_allocated_np(QS, q), cpu_id), Q("1500m")) == 0);
        assert_true(tly_qty_cmp(tly_queues_accounted_used(QS, q, 0), Q("16")) == 0);
        assert_true(tly_qty_cmp(tly_queues_accounted_used(QS, q, 1), Q("4")) == 0);
    }
    /* The sibling is untouched. */
    uint32_t other = qidx("other");
    assert_true(tly_qty_is_zero(tly_rvec_get(tly_queues_allocated(QS, other), cpu_id)));
    assert_true(tly_qty_is_zero(tly_queues_accounted_used(QS, other, 0)));

    for (int k = 0; k < 2; k++)
        tly_queues_charge(QS, qidx("leaf"), &t.c, k == 1, -1);
    for (int i = 0; i < 3; i++) {
        uint32_t q = qidx(chain[i]);
        assert_true(tly_qty_is_zero(tly_rvec_get(tly_queues_allocated(QS, q), cpu_id)));
        assert_true(tly_qty_is_zero(tly_rvec_get(tly_queues_allocated(QS, q), gpu_id)));
        assert_true(tly_qty_is_zero(tly_rvec_get(tly_queues_allocated_np(QS, q), cpu_id)));
        assert_true(tly_qty_is_zero(tly_queues_accounted_used(QS, q, 0)));
        assert_true(tly_qty_is_zero(tly_queues_accounted_used(QS, q, 1)));
    }
}

/* Effective AccountedResource limit: the queue's entry, else defaults.limit,
   else -1; checked leaf to root with the canonical quantities in the text. */
static void test_accounted_limits(void **state)
{
    (void)state;
    load(TREE_WITH_AR);
    char buf[TLY_QTY_BUFSZ];
    tly_qty_format(tly_queues_accounted_limit(QS, qidx("leaf"), 1), buf, sizeof buf);
    assert_string_equal(buf, "4");
    tly_qty_format(tly_queues_accounted_limit(QS, qidx("mid"), 1), buf, sizeof buf);
    assert_string_equal(buf, "6");
    tly_qty_format(tly_queues_accounted_limit(QS, qidx("root"), 0), buf, sizeof buf);
    assert_string_equal(buf, "32");
    tly_qty_format(tly_queues_accounted_limit(QS, qidx("leaf"), 0), buf, sizeof buf);
    assert_string_equal(buf, "-1");

    charge_t four;
    charge_acc(&four, "", "4");
    assert_ok(check("leaf", &four, false, false)); /* equality */
    charge_t five;
    charge_acc(&five, "", "5");
    assert_verdict(check("leaf", &five, false, false), "OverLimit",
                   "leaf has reached the limit of AccountedResource gpu. Limit is 4, currently 0 used and "
                   "workload requested 5");
    /* other has no entry: mid's default 6 and its own default 6 apply. */
    charge_t seven;
    charge_acc(&seven, "", "7");
    assert_verdict(check("other", &seven, false, false), "OverLimit",
                   "other has reached the limit of AccountedResource gpu. Limit is 6, currently 0 used and "
                   "workload requested 7");
    /* root caps efa for the subtree. */
    charge_t e;
    charge_acc(&e, "20", "");
    tly_queues_charge(QS, qidx("other"), &e.c, false, 1);
    charge_t e2;
    charge_acc(&e2, "13", "");
    assert_verdict(check("leaf", &e2, false, false), "OverLimit",
                   "root has reached the limit of AccountedResource efa. Limit is 32, currently 20 used and "
                   "workload requested 13");
    charge_t e3;
    charge_acc(&e3, "12", "");
    assert_ok(check("leaf", &e3, false, false));
}

/* AccountedResource limits are checked after spec.resources quotas. */
static void test_accounted_after_quota(void **state)
{
    (void)state;
    load(ARHEAD "metadata:\n  name: gpu\nspec:\n  sources:\n  - resourceName: nvidia.com/gpu\n---\n" QHEAD
         "metadata:\n  name: q\nspec:\n  resources:\n    cpu: {quota: -1, limit: -1}\n"
         "    memory: {quota: -1, limit: -1}\n    gpu: {quota: 1, limit: 8}\n"
         "  accountedResources:\n  - resourceRef: gpu\n    limit: \"1\"\n");
    charge_t t;
    charge_acc(&t, "2", "");
    t.c.res[TLY_QR_GPU] = Q("2");
    assert_string_equal(check("q", &t, true, false).reason, "NonPreemptibleOverQuota");
    assert_string_equal(check("q", &t, false, false).reason, "OverLimit");
    assert_non_null(strstr(check("q", &t, false, false).message, "AccountedResource gpu"));
}

/* Reserved amounts count only when asked (gating on) and show in the text. */
static void test_reserved(void **state)
{
    (void)state;
    char y[512];
    load(limits_queue(y, sizeof y, "q", NULL, "-1", "-1", "4"));
    charge_t big = charge("", "", "3");
    tly_queues_reserve(QS, qidx("q"), &big.c, false);
    charge_t two = charge("", "", "2");
    assert_ok(check("q", &two, false, false));
    assert_verdict(check("q", &two, false, true), "OverLimit",
                   "q quota has reached the allowable limit of GPUs. Limit is 4 GPUs, currently 3 GPUs "
                   "allocated and workload requested 2 GPUs");
    charge_t one = charge("", "", "1");
    assert_ok(check("q", &one, false, true));
    /* Reserved is not allocated. */
    assert_true(tly_qty_is_zero(tly_rvec_get(tly_queues_allocated(QS, qidx("q")), TLY_R_NVIDIA_GPU)));
}

/* Reserved on a child counts on its ancestors; non-preemptible reserved
   counts against quotas. */
static void test_reserved_ancestors_and_quota(void **state)
{
    (void)state;
    load(QHEAD "metadata:\n  name: p\nspec:\n  resources:\n    cpu: {quota: -1, limit: -1}\n"
               "    memory: {quota: -1, limit: -1}\n    gpu: {quota: 2, limit: 5.5}\n---\n" QHEAD
               "metadata:\n  name: a\nspec:\n  parentQueue: p\n---\n" QHEAD
               "metadata:\n  name: b\nspec:\n  parentQueue: p\n");
    charge_t three = charge("", "", "3");
    tly_queues_reserve(QS, qidx("a"), &three.c, false);
    charge_t g3 = charge("", "", "3");
    assert_verdict(check("b", &g3, false, true), "OverLimit",
                   "p quota has reached the allowable limit of GPUs. Limit is 5.5 GPUs, currently 3 GPUs "
                   "allocated and workload requested 3 GPUs");
    charge_t g2 = charge("", "", "2");
    assert_ok(check("b", &g2, true, true)); /* preemptible reserved is not in the np ledger */
    charge_t one = charge("", "", "1");
    tly_queues_reserve(QS, qidx("a"), &one.c, true);
    charge_t g15 = charge("", "", "1500m");
    assert_verdict(check("b", &g15, true, true), "NonPreemptibleOverQuota",
                   "Non-preemptible workload is over quota. Workload requested 1.5 GPUs, but p quota is 2 GPUs, "
                   "while 1 GPUs are already allocated for non-preemptible pods. Use a preemptible workload to "
                   "go over quota.");
}

/* ---------------------------------------------------------------------- */
/* Gating                                                                 */
/* ---------------------------------------------------------------------- */

#define CONFIG_OFF \
    "apiVersion: kai.scheduler/v1\nkind: Config\nmetadata:\n  name: kai-config\nspec:\n  global:\n" \
    "    queueAdmissionGating:\n      enabled: false\n---\n"
#define CONFIG_ON \
    "apiVersion: kai.scheduler/v1\nkind: Config\nmetadata:\n  name: kai-config\nspec:\n  global:\n" \
    "    queueAdmissionGating:\n      enabled: true\n---\n"
#define GATING_QUEUES \
    QHEAD "metadata:\n  name: plain\nspec: {}\n---\n" \
    QHEAD "metadata:\n  name: label-off\n  labels:\n    kai.scheduler/queue-admission-gating: \"false\"\nspec: {}\n---\n" \
    QHEAD "metadata:\n  name: label-on\n  labels:\n    kai.scheduler/queue-admission-gating: \"true\"\nspec: {}\n---\n" \
    QHEAD "metadata:\n  name: spec-off\nspec:\n  admissionGating: false\n---\n" \
    QHEAD "metadata:\n  name: spec-on\nspec:\n  admissionGating: true\n"

static void test_gating_rules(void **state)
{
    (void)state;
    load(GATING_QUEUES);
    assert_true(tly_queues_gating(QS, qidx("plain")));
    assert_false(tly_queues_gating(QS, qidx("label-off")));
    assert_true(tly_queues_gating(QS, qidx("label-on")));
    assert_false(tly_queues_gating(QS, qidx("spec-off")));
    assert_true(tly_queues_gating(QS, qidx("spec-on")));

    load(CONFIG_ON GATING_QUEUES);
    assert_true(tly_queues_gating(QS, qidx("plain")));
    assert_false(tly_queues_gating(QS, qidx("label-off")));
    assert_false(tly_queues_gating(QS, qidx("spec-off")));

    load(CONFIG_OFF GATING_QUEUES);
    assert_false(tly_queues_gating(QS, qidx("plain")));
    assert_false(tly_queues_gating(QS, qidx("label-on")));
    assert_false(tly_queues_gating(QS, qidx("spec-on")));
}

/* ---------------------------------------------------------------------- */
/* Tree and admissibility                                                 */
/* ---------------------------------------------------------------------- */

static void test_admissible(void **state)
{
    (void)state;
    load(ARHEAD "metadata:\n  name: gpu\nspec:\n  sources:\n  - resourceName: nvidia.com/gpu\n---\n" QHEAD
         "metadata:\n  name: parent\nspec: {}\n---\n" QHEAD
         "metadata:\n  name: child\nspec:\n  parentQueue: parent\n  accountedResources:\n"
         "  - resourceRef: gpu\n    limit: \"-1\"\n");
    tly_qverdict v;
    assert_int_equal(tly_queues_admissible(QS, "child", &v), (int32_t)qidx("child"));
    assert_true(v.ok);
    assert_int_equal(tly_queues_parent(QS, qidx("child")), (int32_t)qidx("parent"));
    assert_int_equal(tly_queues_parent(QS, qidx("parent")), -1);

    assert_int_equal(tly_queues_admissible(QS, "parent", &v), -1);
    assert_false(v.ok);
    assert_string_equal(v.reason, "NonLeafQueue");
    assert_non_null(strstr(v.message, "parent"));

    assert_int_equal(tly_queues_admissible(QS, "nowhere", &v), -1);
    assert_string_equal(v.reason, "QueueDoesNotExist");
    assert_string_equal(v.message, "Queue 'nowhere' does not exist");
    assert_null(tly_queues_missing_ref(QS, qidx("child")));
}

/* A queue whose parent is missing is dropped with its whole subtree (KAI's
   orphan cleanup): a workload sees "Queue '<name>' does not exist". */
static void test_missing_parent_subtree(void **state)
{
    (void)state;
    load(QHEAD "metadata:\n  name: orphan\nspec:\n  parentQueue: gone\n---\n" QHEAD
               "metadata:\n  name: grandchild\nspec:\n  parentQueue: orphan\n---\n" QHEAD
               "metadata:\n  name: fine\nspec: {}\n");
    tly_qverdict v;
    assert_true(tly_queues_admissible(QS, "fine", &v) >= 0);
    assert_int_equal(tly_queues_admissible(QS, "grandchild", &v), -1);
    assert_string_equal(v.reason, "QueueDoesNotExist");
    assert_int_equal(tly_queues_admissible(QS, "orphan", &v), -1);
    assert_string_equal(v.reason, "QueueDoesNotExist");
    /* orphan is not a leaf either, but the missing parent wins; the message
       names the missing queue (KAI says only "does not exist", as it drops
       the subtree from its snapshot; tally says what to create). */
    assert_string_equal(v.message,
                        "Queue 'orphan' cannot take workloads: its parent queue 'gone' does not exist");
    assert_int_equal(tly_queues_admissible(QS, "grandchild", &v), -1);
    assert_string_equal(v.message, "Queue 'grandchild' cannot take workloads: the parent queue "
                                   "'gone' of its ancestor 'orphan' does not exist");
}

/* A parentQueue cycle is unusable too. */
static void test_parent_cycle(void **state)
{
    (void)state;
    load(QHEAD "metadata:\n  name: a\nspec:\n  parentQueue: b\n---\n" QHEAD
               "metadata:\n  name: b\nspec:\n  parentQueue: a\n---\n" QHEAD
               "metadata:\n  name: c\nspec:\n  parentQueue: a\n");
    tly_qverdict v;
    assert_int_equal(tly_queues_admissible(QS, "c", &v), -1);
    assert_string_equal(v.reason, "QueueDoesNotExist");
}

/* An unresolved resourceRef blocks the queue (even with limit -1), and an
   ancestor's blocks the subtree. */
static void test_missing_accounted_resource(void **state)
{
    (void)state;
    load(QHEAD "metadata:\n  name: dept\nspec:\n  accountedResources:\n  - resourceRef: fpga-pool\n"
               "    limit: \"4\"\n---\n" QHEAD
               "metadata:\n  name: team\nspec:\n  parentQueue: dept\n---\n" QHEAD
               "metadata:\n  name: solo\nspec:\n  accountedResources:\n  - resourceRef: gpu-h100\n"
               "    limit: \"-1\"\n");
    tly_qverdict v;
    assert_int_equal(tly_queues_admissible(QS, "solo", &v), -1);
    assert_string_equal(v.reason, "AccountedResourceNotFound");
    assert_string_equal(v.message, "queue solo references AccountedResource \"gpu-h100\", which does not exist; "
                                   "workloads in the queue are held until it exists");
    assert_int_equal(tly_queues_admissible(QS, "team", &v), -1);
    assert_string_equal(v.reason, "AccountedResourceNotFound");
    assert_string_equal(v.message, "queue dept references AccountedResource \"fpga-pool\", which does not "
                                   "exist; workloads in its subtree are held until it exists");
    assert_string_equal(tly_queues_missing_ref(QS, qidx("solo")), "gpu-h100");
    assert_string_equal(tly_queues_missing_ref(QS, qidx("dept")), "fpga-pool");
    assert_null(tly_queues_missing_ref(QS, qidx("team")));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_cpu_millicores, teardown),
        cmocka_unit_test_teardown(test_memory_megabytes, teardown),
        cmocka_unit_test_teardown(test_negative_memory_unlimited, teardown),
        cmocka_unit_test_teardown(test_negative_cpu_gpu_bound, teardown),
        cmocka_unit_test_teardown(test_omitted_and_absent_resources, teardown),
        cmocka_unit_test_teardown(test_zero_request_and_equality, teardown),
        cmocka_unit_test_teardown(test_resource_order, teardown),
        cmocka_unit_test_teardown(test_leaf_to_root, teardown),
        cmocka_unit_test_teardown(test_limit_before_quota, teardown),
        cmocka_unit_test_teardown(test_quota_messages, teardown),
        cmocka_unit_test_teardown(test_humanized_numbers, teardown),
        cmocka_unit_test_teardown(test_humanized_go_rounding, teardown),
        cmocka_unit_test_teardown(test_charge_uncharge_symmetry, teardown),
        cmocka_unit_test_teardown(test_accounted_limits, teardown),
        cmocka_unit_test_teardown(test_accounted_after_quota, teardown),
        cmocka_unit_test_teardown(test_reserved, teardown),
        cmocka_unit_test_teardown(test_reserved_ancestors_and_quota, teardown),
        cmocka_unit_test_teardown(test_gating_rules, teardown),
        cmocka_unit_test_teardown(test_admissible, teardown),
        cmocka_unit_test_teardown(test_missing_parent_subtree, teardown),
        cmocka_unit_test_teardown(test_parent_cycle, teardown),
        cmocka_unit_test_teardown(test_missing_accounted_resource, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
