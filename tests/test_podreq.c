/*
** test_podreq.c: specification tests for a pod's effective request
** (src/podreq.c, contract section 2 "Effective requests").
**
** Each test writes a pod as YAML, loads it through the real decoder (so the
** API server's defaulting, such as requests copied from limits, applies),
** computes its effective request and checks the result. The expected values
** come from k8s-pod-requests.md (aggregation, pod-level resources, overhead),
** kai-facts.md 4.2 (the per-container resize rule) and kai-facts.md 3.1-3.5
** (GPU forms and KAI's admission messages).
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"
#include "tally/error.h"
#include "tally/objects.h"
#include "tally/podreq.h"
#include "tally/quantity.h"
#include "tally/resource.h"
#include "tally/store.h"
#include "testutil.h"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

#define POD_HEAD "apiVersion: v1\nkind: Pod\n"

/* The store and arena of the test being run; released by teardown(). */
static tly_store *S;
static tly_arena *A;

static int teardown(void **state)
{
    (void)state;
    if (A)
        tly_arena_destroy(A);
    if (S)
        tly_store_destroy(S);
    A = NULL;
    S = NULL;
    return 0;
}

/* Loads yaml (one pod, ns1/p) and returns it. */
static const tly_pod *load_pod(const char *yaml)
{
    teardown(NULL);
    S = load_text("test.yaml", yaml);
    A = tly_arena_create(4096);
    const tly_pod *p = tly_store_find(S, TLY_K_POD, "ns1", "p");
    if (!p)
        fail_msg("pod ns1/p not decoded from:\n%s", yaml);
    return p;
}

/* The effective request of pod ns1/p in yaml. */
static tly_podreq compute_sharing(const char *yaml, bool gpu_sharing)
{
    const tly_pod *p = load_pod(yaml);
    tly_podreq r;
    tly_podreq_compute(p, gpu_sharing, tly_store_names(S), A, &r);
    return r;
}

static tly_podreq compute(const char *yaml)
{
    return compute_sharing(yaml, true);
}

/* The request for resource `name` in milli-units, or -1 when absent. */
static int64_t milli(const tly_podreq *r, const char *name)
{
    uint32_t id = tly_names_find(tly_store_names(S), name, strlen(name));
    bool found = false;
    tly_qty q = tly_rlist_get(&r->req, id, &found);
    if (id == TLY_NAME_NONE || !found)
        return -1;
    int64_t m = 0;
    assert_int_equal(tly_qty_milli(q, &m), TLY_OK);
    return m;
}

#define MI (1024LL * 1024 * 1000)   /* 1Mi in milli-bytes */
#define GI (1024LL * MI)

static void expect_valid(const tly_podreq *r)
{
    if (r->invalid)
        fail_msg("unexpectedly invalid: %s: %s", r->reason, r->message);
}

static void expect_invalid(const tly_podreq *r, const char *reason, const char *message)
{
    assert_true(r->invalid);
    assert_string_equal(r->reason, reason);
    assert_string_equal(r->message, message);
    /* A malformed GPU request is not classified. */
    assert_int_equal(r->gpu_kind, TLY_GPU_NONE);
}

/* A one-container pod with the given annotations (a YAML flow map) and resources. */
static tly_podreq gpu_pod_sharing(const char *annotations, const char *resources, bool sharing)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             POD_HEAD
             "metadata: {name: p, namespace: ns1, annotations: %s}\n"
             "spec:\n"
             "  containers:\n"
             "  - {name: main, resources: %s}\n",
             annotations, resources);
    return compute_sharing(yaml, sharing);
}

static tly_podreq gpu_pod(const char *annotations, const char *resources)
{
    return gpu_pod_sharing(annotations, resources, true);
}

static const char CPU_ONLY[] = "{requests: {cpu: 100m}}";

/* ---------------------------------------------------------------------- */
/* Kubernetes aggregation                                                 */
/* ---------------------------------------------------------------------- */

/* App containers add up; every pod also requests one pod slot. */
static void test_app_containers_are_summed(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  containers:\n"
                           "  - {name: a, resources: {requests: {cpu: 500m, memory: 1Gi}}}\n"
                           "  - {name: b, resources: {requests: {cpu: 250m, memory: 512Mi}}}\n"
                           "  - {name: c}\n");
    expect_valid(&r);
    assert_int_equal(milli(&r, "cpu"), 750);
    assert_int_equal(milli(&r, "memory"), GI + 512 * MI);
    assert_int_equal(milli(&r, "pods"), 1000);
    assert_int_equal(r.gpu_kind, TLY_GPU_NONE);
    assert_int_equal(r.gpu_resource, TLY_R_NVIDIA_GPU);
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 0), 0);
}

/* A pod with no resources at all still takes its pod slot. */
static void test_empty_pod_requests_one_pod(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD "metadata: {name: p, namespace: ns1}\n"
                                    "spec: {containers: [{name: a}]}\n");
    expect_valid(&r);
    assert_int_equal(r.req.n, 1);
    assert_int_equal(milli(&r, "pods"), 1000);
}

/* Init containers run one at a time before the app: the pod needs the larger of their peak and the app sum, per resource. */
static void test_init_containers_peak(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  initContainers:\n"
                           "  - {name: i1, resources: {requests: {cpu: '2', memory: 100Mi}}}\n"
                           "  - {name: i2, resources: {requests: {cpu: 500m, memory: 3Gi}}}\n"
                           "  containers:\n"
                           "  - {name: a, resources: {requests: {cpu: '1', memory: 1Gi}}}\n"
                           "  - {name: b, resources: {requests: {cpu: 500m, memory: 1Gi}}}\n");
    expect_valid(&r);
    assert_int_equal(milli(&r, "cpu"), 2000);      /* i1 beats 1.5 */
    assert_int_equal(milli(&r, "memory"), 3 * GI); /* i2 beats 2Gi */
}

/*
** Native sidecars (KEP-753): pod = max(sum(app) + sum(sidecars),
** max_i(init_i + sidecars declared before init_i)). A sidecar declared
** after an init container does not run alongside it.
*/
static void test_sidecars_before_an_init_container_add_to_its_peak(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  initContainers:\n"
                           "  - {name: sa, restartPolicy: Always, resources: {requests: {cpu: '1'}}}\n"
                           "  - {name: init, resources: {requests: {cpu: '5'}}}\n"
                           "  - {name: sc, restartPolicy: Always, resources: {requests: {cpu: '2'}}}\n"
                           "  containers:\n"
                           "  - {name: app, resources: {requests: {cpu: '1'}}}\n");
    expect_valid(&r);
    /* steady state 1 + 1 + 2 = 4; init peak 5 + sa 1 = 6 (sc starts later) */
    assert_int_equal(milli(&r, "cpu"), 6000);
}

static void test_sidecars_count_in_the_steady_state(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  initContainers:\n"
                           "  - {name: sa, restartPolicy: Always, resources: {requests: {cpu: '1'}}}\n"
                           "  - {name: init, resources: {requests: {cpu: '2', memory: 8Gi}}}\n"
                           "  - {name: sc, restartPolicy: Always, resources: {requests: {cpu: '2'}}}\n"
                           "  containers:\n"
                           "  - {name: app, resources: {requests: {cpu: '1', memory: 1Gi}}}\n");
    expect_valid(&r);
    /* steady state 1 + 1 + 2 = 4 beats init 2 + 1 = 3 */
    assert_int_equal(milli(&r, "cpu"), 4000);
    /* memory: the init container's 8Gi is the peak */
    assert_int_equal(milli(&r, "memory"), 8 * GI);
}

/* spec.overhead is added on top, creating resources the containers do not name. */
static void test_overhead_is_added(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  overhead: {cpu: 250m, memory: 120Mi, example.com/vm: '1'}\n"
                           "  containers:\n"
                           "  - {name: a, resources: {requests: {cpu: '1'}}}\n");
    expect_valid(&r);
    assert_int_equal(milli(&r, "cpu"), 1250);
    assert_int_equal(milli(&r, "memory"), 120 * MI);
    assert_int_equal(milli(&r, "example.com/vm"), 1000);
}

/*
** Pod-level spec.resources.requests replace the aggregate for cpu, memory
** and hugepages-*; other names there (ephemeral-storage) are ignored, and
** overhead is still added afterwards.
*/
static void test_pod_level_resources_replace_cpu_and_memory(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  resources:\n"
                           "    requests: {cpu: '4', memory: 8Gi, ephemeral-storage: 10Gi}\n"
                           "    limits: {cpu: '4', memory: 8Gi}\n"
                           "  overhead: {cpu: 100m}\n"
                           "  containers:\n"
                           "  - {name: a, resources: {requests: {cpu: '1', memory: 1Gi, "
                           "ephemeral-storage: 1Gi}}}\n");
    expect_valid(&r);
    assert_int_equal(milli(&r, "cpu"), 4100);
    assert_int_equal(milli(&r, "memory"), 8 * GI);
    assert_int_equal(milli(&r, "ephemeral-storage"), GI);
}

/* A pod-level value replaces, it does not take a max: smaller wins too. */
static void test_pod_level_resources_may_be_smaller_than_containers(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  resources: {requests: {cpu: 500m}}\n"
                           "  containers:\n"
                           "  - {name: a, resources: {requests: {cpu: '1', memory: 1Gi}}}\n"
                           "  - {name: b, resources: {requests: {cpu: '1'}}}\n");
    expect_valid(&r);
    assert_int_equal(milli(&r, "cpu"), 500);
    assert_int_equal(milli(&r, "memory"), GI);  /* not set at pod level: aggregate stands */
}

/* ---------------------------------------------------------------------- */
/* In-place resize                                                        */
/* ---------------------------------------------------------------------- */

/* A downsize in progress: the container still runs at the larger size, which is charged. */
static void test_resize_charges_actual_when_larger_than_spec(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  containers:\n"
                           "  - {name: a, resources: {requests: {cpu: '1', memory: 1Gi}}}\n"
                           "status:\n"
                           "  containerStatuses:\n"
                           "  - name: a\n"
                           "    resources: {requests: {cpu: '2', memory: 1Gi}}\n"
                           "    allocatedResources: {cpu: '1', memory: 2Gi}\n");
    expect_valid(&r);
    assert_int_equal(milli(&r, "cpu"), 2000);        /* actual */
    assert_int_equal(milli(&r, "memory"), 2 * GI);   /* allocated */
}

/* An upsize not yet actuated: the spec is larger and is charged. */
static void test_resize_charges_spec_when_larger_than_actual(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  containers:\n"
                           "  - {name: a, resources: {requests: {cpu: '3'}}}\n"
                           "status:\n"
                           "  conditions:\n"
                           "  - {type: PodResizePending, status: 'True', reason: Deferred}\n"
                           "  containerStatuses:\n"
                           "  - name: a\n"
                           "    resources: {requests: {cpu: '1'}}\n"
                           "    allocatedResources: {cpu: '1'}\n");
    expect_valid(&r);
    /* Deferred is no resize status at all: max(spec, actual). */
    assert_int_equal(milli(&r, "cpu"), 3000);
}

/*
** The max is taken per container, then summed (KAI's resize design), not
** over separately summed totals as upstream does: a downsize of one
** container and an upsize of another are both charged at their larger size.
*/
static void test_resize_max_is_per_container(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  containers:\n"
                           "  - {name: a, resources: {requests: {cpu: '1'}}}\n"
                           "  - {name: b, resources: {requests: {cpu: '2'}}}\n"
                           "status:\n"
                           "  containerStatuses:\n"
                           "  - {name: b, resources: {requests: {cpu: '1'}}}\n"
                           "  - {name: a, resources: {requests: {cpu: '2'}}}\n");
    expect_valid(&r);
    assert_int_equal(milli(&r, "cpu"), 4000);  /* 2 + 2; upstream would say max(3, 3) = 3 */
}

/* A status without resources or allocatedResources leaves the spec alone. */
static void test_status_without_resources_keeps_spec(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  containers:\n"
                           "  - {name: a, resources: {requests: {cpu: '1'}}}\n"
                           "status:\n"
                           "  containerStatuses:\n"
                           "  - {name: a, resources: {limits: {cpu: '8'}}}\n");
    expect_valid(&r);
    assert_int_equal(milli(&r, "cpu"), 1000);
}

/* An Infeasible resize is never granted: only what runs (actual, allocated) is charged. */
static void test_infeasible_upsize_charges_actual_only(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  containers:\n"
                           "  - {name: a, resources: {requests: {cpu: '64', memory: 1Gi}}}\n"
                           "  - {name: b, resources: {requests: {cpu: '1'}}}\n"
                           "status:\n"
                           "  conditions:\n"
                           "  - {type: PodResizePending, status: 'True', reason: Infeasible}\n"
                           "  containerStatuses:\n"
                           "  - name: a\n"
                           "    resources: {requests: {cpu: '2'}}\n"
                           "    allocatedResources: {cpu: '2'}\n");
    expect_valid(&r);
    /* a: max(actual 2, allocated 2); its spec memory is not charged either.
       b has no status: spec. */
    assert_int_equal(milli(&r, "cpu"), 3000);
    assert_int_equal(milli(&r, "memory"), -1);
}

/* The first PodResizePending condition decides, whatever its status. */
static void test_resize_infeasible_condition_rules(void **state)
{
    (void)state;
    assert_true(tly_pod_resize_infeasible(load_pod(
        POD_HEAD "metadata: {name: p, namespace: ns1}\n"
                 "spec: {containers: [{name: a}]}\n"
                 "status:\n"
                 "  conditions:\n"
                 "  - {type: Ready, status: 'True', reason: Infeasible}\n"
                 "  - {type: PodResizePending, status: 'False', reason: Infeasible}\n")));
    assert_false(tly_pod_resize_infeasible(load_pod(
        POD_HEAD "metadata: {name: p, namespace: ns1}\n"
                 "spec: {containers: [{name: a}]}\n"
                 "status:\n"
                 "  conditions:\n"
                 "  - {type: PodResizePending, status: 'True', reason: Deferred}\n"
                 "  - {type: PodResizePending, status: 'True', reason: Infeasible}\n")));
    assert_false(tly_pod_resize_infeasible(load_pod(
        POD_HEAD "metadata: {name: p, namespace: ns1}\n"
                 "spec: {containers: [{name: a}]}\n"
                 "status:\n"
                 "  conditions:\n"
                 "  - {type: PodResizeInProgress, status: 'True'}\n")));
}

/* Non-restartable init containers keep their spec; sidecars follow the resize rule. */
static void test_init_containers_keep_spec_sidecars_resize(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  initContainers:\n"
                           "  - {name: init, resources: {requests: {memory: 1Gi}}}\n"
                           "  - {name: side, restartPolicy: Always, resources: {requests: {cpu: '1'}}}\n"
                           "  containers:\n"
                           "  - {name: app, resources: {requests: {cpu: '1'}}}\n"
                           "status:\n"
                           "  initContainerStatuses:\n"
                           "  - {name: init, resources: {requests: {memory: 16Gi}}}\n"
                           "  - {name: side, resources: {requests: {cpu: '3'}}}\n");
    expect_valid(&r);
    assert_int_equal(milli(&r, "memory"), GI);    /* spec, not the 16Gi status */
    assert_int_equal(milli(&r, "cpu"), 4000);     /* app 1 + sidecar max(1, 3) */
}

/* ---------------------------------------------------------------------- */
/* Whole GPUs                                                             */
/* ---------------------------------------------------------------------- */

/* A GPU pod usually writes only the limit; the request defaults to it. */
static void test_limits_only_gpu_pod(void **state)
{
    (void)state;
    tly_podreq r = gpu_pod("{}", "{limits: {nvidia.com/gpu: '2'}}");
    const tly_pod *p = tly_store_find(S, TLY_K_POD, "ns1", "p");
    bool found = false;
    tly_qty q = tly_rlist_get(&p->containers[0].requests, TLY_R_NVIDIA_GPU, &found);
    assert_true(found);  /* the decoder's defaulting */
    int64_t v = 0;
    assert_int_equal(tly_qty_value(q, &v), TLY_OK);
    assert_int_equal(v, 2);

    expect_valid(&r);
    assert_int_equal(r.gpu_kind, TLY_GPU_WHOLE);
    assert_int_equal(r.gpu_resource, TLY_R_NVIDIA_GPU);
    assert_int_equal(r.gpu_devices, 2);
    assert_int_equal(milli(&r, "nvidia.com/gpu"), 2000);  /* stays in req */
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 0), 200);
}

static void test_amd_gpus(void **state)
{
    (void)state;
    tly_podreq r = gpu_pod("{}", "{limits: {amd.com/gpu: '1'}}");
    expect_valid(&r);
    assert_int_equal(r.gpu_kind, TLY_GPU_WHOLE);
    assert_int_equal(r.gpu_resource, TLY_R_AMD_GPU);
    assert_int_equal(r.gpu_devices, 1);
    assert_int_equal(milli(&r, "amd.com/gpu"), 1000);
}

/* Whole GPUs of init containers count through the init peak. */
static void test_whole_gpus_follow_aggregation(void **state)
{
    (void)state;
    tly_podreq r = compute(POD_HEAD
                           "metadata: {name: p, namespace: ns1}\n"
                           "spec:\n"
                           "  initContainers:\n"
                           "  - {name: i, resources: {limits: {nvidia.com/gpu: '4'}}}\n"
                           "  containers:\n"
                           "  - {name: a, resources: {limits: {nvidia.com/gpu: '1'}}}\n"
                           "  - {name: b, resources: {limits: {nvidia.com/gpu: '2'}}}\n");
    expect_valid(&r);
    assert_int_equal(r.gpu_kind, TLY_GPU_WHOLE);
    assert_int_equal(r.gpu_devices, 4);
}

/* A fractional whole-GPU count cannot be accounted (the API server rejects it too). */
static void test_non_integer_whole_gpu_is_invalid(void **state)
{
    (void)state;
    tly_podreq r = gpu_pod("{}", "{limits: {nvidia.com/gpu: 500m}}");
    assert_true(r.invalid);
    assert_string_equal(r.reason, "InvalidResources");
    assert_non_null(strstr(r.message, "nvidia.com/gpu"));
    assert_int_equal(r.gpu_kind, TLY_GPU_NONE);
    assert_int_equal(milli(&r, "nvidia.com/gpu"), 500);  /* still the effective request */
}

/* An explicit 0 is not a GPU request. */
static void test_zero_gpus_is_no_gpu(void **state)
{
    (void)state;
    tly_podreq r = gpu_pod("{}", "{limits: {nvidia.com/gpu: '0'}}");
    expect_valid(&r);
    assert_int_equal(r.gpu_kind, TLY_GPU_NONE);
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 0), 0);
}

/* ---------------------------------------------------------------------- */
/* KAI GPU sharing                                                        */
/* ---------------------------------------------------------------------- */

static const char SHARING[] = "InvalidGPUSharingRequest";
static const char BAD_FRACTION[] =
    "gpu-fraction annotation value must be a positive number smaller than 1.0";
static const char BAD_MEMORY[] = "gpu-memory annotation value must be a positive integer greater than 0";
static const char NOT_A_FLOAT[] =
    "gpu-fraction annotation value must be a float written with a decimal point or a scientific "
    "notation .given value: ";
static const char BAD_COUNT[] = "fraction count annotation value must be a positive integer greater than 0";

static void expect_fraction(const char *text, uint32_t hundredths)
{
    char ann[128];
    snprintf(ann, sizeof ann, "{gpu-fraction: '%s'}", text);
    tly_podreq r = gpu_pod(ann, CPU_ONLY);
    expect_valid(&r);
    assert_int_equal(r.gpu_kind, TLY_GPU_FRACTION);
    assert_int_equal(r.gpu_portion, hundredths);
    assert_int_equal(r.gpu_devices, 1);
    assert_int_equal(milli(&r, "nvidia.com/gpu"), -1);  /* fractions are not in req */
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 0), hundredths);
}

/* Fractions round half away from zero to 0.01 devices, exactly from the decimal text. */
static void test_fraction_rounding(void **state)
{
    (void)state;
    expect_fraction("0.5", 50);
    expect_fraction("0.125", 13);
    expect_fraction("0.333", 33);
    expect_fraction("0.005", 1);
    expect_fraction("0.995", 100);
    expect_fraction("0.01", 1);
    expect_fraction(".25", 25);
    expect_fraction("5e-1", 50);
    expect_fraction("0.0050000001", 1);
    expect_fraction("0.0049999999999", 0);  /* exact: not rounded up to a nano-unit first */
}

/*
** One row of tests/vectors/gpu-fraction.tsv: the annotation's text, KAI's
** verdict (ok; range: "must be a positive number smaller than 1.0"; format:
** "must be a float written with a decimal point ..., given value: <text>"),
** and for ok the hundredths charged and the exact value as NUM/10^SCALE.
*/
static void check_fraction_row(const char *where, char **col)
{
    char *yaml = malloc(strlen(col[0]) + 512);
    assert_non_null(yaml);
    sprintf(yaml,
            POD_HEAD
            "metadata: {name: p, namespace: ns1, annotations: {gpu-fraction: '%s'}}\n"
            "spec:\n  containers:\n  - {name: main, resources: %s}\n",
            col[0], CPU_ONLY);
    tly_podreq r = compute(yaml);
    free(yaml);
    char msg[2048];
    if (strcmp(col[1], "ok") == 0) {
        if (r.invalid)
            fail_msg("%s: '%.40s' rejected: %s", where, col[0], r.message);
        assert_int_equal(r.gpu_kind, TLY_GPU_FRACTION);
        if (r.gpu_portion != (uint32_t)atoi(col[2]))
            fail_msg("%s: '%.40s' charged %u hundredths, not %s", where, col[0], r.gpu_portion, col[2]);
        if (strcmp(col[3], "-") != 0) {
            char exact[64];
            snprintf(exact, sizeof exact, "%llu/10^%u", (unsigned long long)r.gpu_frac_num,
                     r.gpu_frac_scale);
            if (strcmp(exact, col[3]) != 0)
                fail_msg("%s: '%.40s' held as %s, not %s", where, col[0], exact, col[3]);
        }
        return;
    }
    if (strcmp(col[1], "range") == 0)
        snprintf(msg, sizeof msg, "%s", BAD_FRACTION);
    else
        snprintf(msg, sizeof msg, "%s%s", NOT_A_FLOAT, col[0]);
    if (!r.invalid || strcmp(r.message, msg) != 0)
        fail_msg("%s: '%.40s': expected \"%.120s\", got \"%.120s\"", where, col[0], msg,
                 r.invalid ? r.message : "(accepted)");
    assert_string_equal(r.reason, SHARING);
    assert_int_equal(r.gpu_kind, TLY_GPU_NONE);
}

/*
** KAI's verdict on every text of the vector file: its validator's own
** table, then Go's float syntax and float64 rounding at both bounds.
*/
static void test_fraction_vectors(void **state)
{
    (void)state;
    char path[4096], *line = NULL;
    size_t cap = 0;
    unsigned lineno = 0, rows = 0;
    snprintf(path, sizeof path, "%s/gpu-fraction.tsv", TALLY_VECTOR_DIR);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        fail_msg("cannot open %s", path);
    while (getline(&line, &cap, fp) != -1) {
        if (++lineno == 1)
            continue;  /* the "# " header */
        line[strcspn(line, "\n")] = '\0';
        /* Empty until split: a short row fails below, and Release's -O2 cannot see fail_msg end it. */
        char empty[] = "", *col[6] = {empty, empty, empty, empty, empty, empty};
        int n = 0;
        for (char *c = line; n < 6; n++) {
            col[n] = c;
            c = strchr(c, '\t');
            if (!c)
                break;
            *c++ = '\0';
        }
        if (n != 5)
            fail_msg("%s:%u: expected 6 columns", path, lineno);
        char where[64];
        snprintf(where, sizeof where, "gpu-fraction.tsv:%u", lineno);
        check_fraction_row(where, col);
        rows++;
    }
    free(line);
    fclose(fp);
    assert_true(rows >= 70);
}

/* gpu-fraction-num-devices: the same fraction on each of N devices. */
static void test_fraction_on_several_devices(void **state)
{
    (void)state;
    tly_podreq r = gpu_pod("{gpu-fraction: '0.5', gpu-fraction-num-devices: '2'}", CPU_ONLY);
    expect_valid(&r);
    assert_int_equal(r.gpu_kind, TLY_GPU_FRACTION);
    assert_int_equal(r.gpu_portion, 50);
    assert_int_equal(r.gpu_devices, 2);
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 0), 100);

    r = gpu_pod("{gpu-fraction: '0.5', gpu-fraction-num-devices: '0'}", CPU_ONLY);
    expect_invalid(&r, SHARING, BAD_COUNT);
    r = gpu_pod("{gpu-fraction: '0.5', gpu-fraction-num-devices: '-1'}", CPU_ONLY);
    expect_invalid(&r, SHARING, BAD_COUNT);
    r = gpu_pod("{gpu-fraction: '0.5', gpu-fraction-num-devices: '1.5'}", CPU_ONLY);
    expect_invalid(&r, SHARING, BAD_COUNT);
    r = gpu_pod("{gpu-memory: '1000', gpu-fraction-num-devices: two}", CPU_ONLY);
    expect_invalid(&r, SHARING, BAD_COUNT);
}

/* gpu-memory: MiB on each device; charged as ceil(100 x mem / node memory) hundredths. */
static void test_gpu_memory(void **state)
{
    (void)state;
    tly_podreq r = gpu_pod("{gpu-memory: '350'}", CPU_ONLY);
    expect_valid(&r);
    assert_int_equal(r.gpu_kind, TLY_GPU_MEMORY);
    assert_int_equal(r.gpu_memory_mib, 350);
    assert_int_equal(r.gpu_devices, 1);
    assert_int_equal(milli(&r, "nvidia.com/gpu"), -1);
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 600), 59);   /* 58.33 up */
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 400), 88);   /* 87.5 up */
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 350), 100);
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 0), 0);      /* node memory unknown */

    r = gpu_pod("{gpu-memory: '350', gpu-fraction-num-devices: '2'}", CPU_ONLY);
    expect_valid(&r);
    assert_int_equal(r.gpu_devices, 2);
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 600), 118);
}

/* gpu-memory must be a plain positive integer (Go's ParseUint, base 10). */
static void test_gpu_memory_values_rejected(void **state)
{
    (void)state;
    static const char *const bad[] = {"0", "-1", "1.5", "1Gi", "+5", "abc", "", "18446744073709551616"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char ann[128];
        snprintf(ann, sizeof ann, "{gpu-memory: '%s'}", bad[i]);
        tly_podreq r = gpu_pod(ann, CPU_ONLY);
        expect_invalid(&r, SHARING, BAD_MEMORY);
    }
}

/* The combination rules, with KAI's texts. */
static void test_fraction_with_whole_gpus_is_rejected(void **state)
{
    (void)state;
    static const char msg[] =
        "cannot have both GPU fraction request and whole GPU resource request/limit";
    tly_podreq r = gpu_pod("{gpu-fraction: '0.5'}", "{limits: {nvidia.com/gpu: '1'}}");
    expect_invalid(&r, SHARING, msg);
    /* Naming the resource is enough, even with 0 devices. */
    r = gpu_pod("{gpu-fraction: '0.5'}", "{limits: {nvidia.com/gpu: '0'}}");
    expect_invalid(&r, SHARING, msg);
    /* The combination is checked before the value. */
    r = gpu_pod("{gpu-fraction: 'lots'}", "{limits: {nvidia.com/gpu: '1'}}");
    expect_invalid(&r, SHARING, msg);
}

static void test_memory_with_fraction_or_whole_gpus_is_rejected(void **state)
{
    (void)state;
    static const char msg[] = "cannot request both GPU and GPU memory";
    tly_podreq r = gpu_pod("{gpu-fraction: '0.5', gpu-memory: '1024'}", CPU_ONLY);
    expect_invalid(&r, SHARING, msg);
    /* KAI checks gpu-memory against whole GPUs with this same message. */
    r = gpu_pod("{gpu-memory: '1024'}", "{limits: {nvidia.com/gpu: '1'}}");
    expect_invalid(&r, SHARING, msg);
}

static void test_num_devices_alone_is_rejected(void **state)
{
    (void)state;
    static const char msg[] =
        "cannot request multiple fractional devices without specifying fraction portion or "
        "gpu-memory";
    tly_podreq r = gpu_pod("{gpu-fraction-num-devices: '2'}", CPU_ONLY);
    expect_invalid(&r, SHARING, msg);
    /* KAI rejects the annotation's presence, whatever its value. */
    r = gpu_pod("{gpu-fraction-num-devices: '1'}", CPU_ONLY);
    expect_invalid(&r, SHARING, msg);
}

static void test_mps_needs_a_shared_request(void **state)
{
    (void)state;
    tly_podreq r = gpu_pod("{mps: 'true'}", "{limits: {nvidia.com/gpu: '1'}}");
    expect_invalid(&r, SHARING, "MPS is only supported with GPU fraction request");
    r = gpu_pod("{mps: 'true', gpu-fraction: '0.25'}", CPU_ONLY);
    expect_valid(&r);
    assert_int_equal(r.gpu_portion, 25);
    r = gpu_pod("{mps: 'true', gpu-memory: '2048'}", CPU_ONLY);
    expect_valid(&r);
    r = gpu_pod("{mps: 'false'}", CPU_ONLY);
    expect_valid(&r);
    assert_int_equal(r.gpu_kind, TLY_GPU_NONE);
}

/*
** With GPU sharing disabled, a gpu-fraction or gpu-memory pod is refused
** before anything else is checked; a well-formed request is still
** described (a bound pod of that kind still holds its share of a device).
*/
static void test_gpu_sharing_disabled(void **state)
{
    (void)state;
    static const char msg[] =
        "attempting to create a pod ns1/p with gpu sharing request, while GPU sharing is disabled";
    tly_podreq r = gpu_pod_sharing("{gpu-fraction: '0.5'}", CPU_ONLY, false);
    assert_true(r.invalid);
    assert_string_equal(r.reason, "GPUSharingDisabled");
    assert_string_equal(r.message, msg);
    assert_int_equal(r.gpu_kind, TLY_GPU_FRACTION);
    assert_int_equal(r.gpu_portion, 50);

    r = gpu_pod_sharing("{gpu-memory: 'x'}", CPU_ONLY, false);
    expect_invalid(&r, "GPUSharingDisabled", msg);

    /* Whole GPUs and plain pods are not sharing. */
    r = gpu_pod_sharing("{}", "{limits: {nvidia.com/gpu: '1'}}", false);
    expect_valid(&r);
    assert_int_equal(r.gpu_kind, TLY_GPU_WHOLE);
    /* num-devices alone is not a sharing request; it is malformed. */
    r = gpu_pod_sharing("{gpu-fraction-num-devices: '2'}", CPU_ONLY, false);
    assert_string_equal(r.reason, SHARING);
}

/* ---------------------------------------------------------------------- */
/* MIG                                                                    */
/* ---------------------------------------------------------------------- */

/* Each nvidia.com/mig-<G>g.<M>gb instance is charged as G GPUs. */
static void test_mig_instances_count_their_slices(void **state)
{
    (void)state;
    tly_podreq r = gpu_pod("{}", "{limits: {nvidia.com/mig-3g.40gb: '2'}}");
    expect_valid(&r);
    assert_int_equal(r.gpu_kind, TLY_GPU_MIG);
    assert_int_equal(r.mig_gpus, 6);
    assert_int_equal(milli(&r, "nvidia.com/mig-3g.40gb"), 2000);  /* stays in req by name */
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 0), 600);

    r = compute(POD_HEAD
                "metadata: {name: p, namespace: ns1}\n"
                "spec:\n"
                "  containers:\n"
                "  - {name: a, resources: {limits: {nvidia.com/mig-3g.40gb: '2'}}}\n"
                "  - {name: b, resources: {limits: {nvidia.com/mig-1g.10gb: '1'}}}\n");
    expect_valid(&r);
    assert_int_equal(r.mig_gpus, 7);
}

static void test_names_that_are_not_mig(void **state)
{
    (void)state;
    static const char *const names[] = {"nvidia.com/mig-3g.40gbx", "nvidia.com/mig-g.40gb",
                                        "nvidia.com/mig-3g40gb", "nvidia.com/mig-3g.gb",
                                        "example.com/mig-3g.40gb"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char res[128];
        snprintf(res, sizeof res, "{limits: {%s: '1'}}", names[i]);
        tly_podreq r = gpu_pod("{}", res);
        assert_int_equal(r.gpu_kind, TLY_GPU_NONE);
    }
}

/* ---------------------------------------------------------------------- */
/* Hundredths                                                             */
/* ---------------------------------------------------------------------- */

static void test_gpu_hundredths_per_kind(void **state)
{
    (void)state;
    tly_podreq r;
    memset(&r, 0, sizeof r);
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 600), 0);
    r.gpu_kind = TLY_GPU_WHOLE;
    r.gpu_devices = 2;
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 600), 200);
    r.gpu_kind = TLY_GPU_FRACTION;
    r.gpu_portion = 50;
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 0), 100);
    r.gpu_kind = TLY_GPU_MEMORY;
    r.gpu_devices = 1;
    r.gpu_memory_mib = 350;
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 600), 59);
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 400), 88);
    r.gpu_memory_mib = UINT64_MAX;  /* 100 x mem does not wrap */
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 100), UINT64_MAX);
    r.gpu_kind = TLY_GPU_MIG;
    r.mig_gpus = 6;
    assert_int_equal(tly_podreq_gpu_hundredths(&r, 0), 600);
}

/*
** A pod whose partial sums outgrow podreq.c's stack scratch (256 entries):
** three containers of 100 extended resources each, and an init container on
** half of them. The sums past the buffer come from the arena; the answer is
** the same: 1 + 2 + 3 = 6 per resource, 7 where the init container asks more.
*/
static void test_many_resources_past_the_scratch(void **state)
{
    (void)state;
    size_t cap = 64 * 1024, len = 0;
    char *yaml = malloc(cap);
    assert_non_null(yaml);
    len += (size_t)snprintf(yaml + len, cap - len,
                            POD_HEAD "metadata: {name: p, namespace: ns1}\nspec:\n  initContainers:\n"
                            "  - name: init\n    resources:\n      requests:\n");
    for (int k = 0; k < 50; k++)
        len += (size_t)snprintf(yaml + len, cap - len, "        example.com/r%d: \"7\"\n", k);
    len += (size_t)snprintf(yaml + len, cap - len, "  containers:\n");
    for (int c = 1; c <= 3; c++) {
        len += (size_t)snprintf(yaml + len, cap - len,
                                "  - name: c%d\n    resources:\n      requests:\n", c);
        for (int k = 0; k < 100; k++)
            len += (size_t)snprintf(yaml + len, cap - len, "        example.com/r%d: \"%d\"\n", k, c);
    }
    assert_true(len < cap);
    tly_podreq r = compute(yaml);
    free(yaml);
    expect_valid(&r);
    assert_int_equal(r.req.n, 101);  /* 100 resources and pods */
    for (int k = 0; k < 100; k++) {
        char name[32];
        snprintf(name, sizeof name, "example.com/r%d", k);
        assert_int_equal(milli(&r, name), k < 50 ? 7000 : 6000);
    }
    assert_int_equal(milli(&r, "pods"), 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_app_containers_are_summed, teardown),
        cmocka_unit_test_teardown(test_empty_pod_requests_one_pod, teardown),
        cmocka_unit_test_teardown(test_init_containers_peak, teardown),
        cmocka_unit_test_teardown(test_sidecars_before_an_init_container_add_to_its_peak, teardown),
        cmocka_unit_test_teardown(test_sidecars_count_in_the_steady_state, teardown),
        cmocka_unit_test_teardown(test_overhead_is_added, teardown),
        cmocka_unit_test_teardown(test_pod_level_resources_replace_cpu_and_memory, teardown),
        cmocka_unit_test_teardown(test_pod_level_resources_may_be_smaller_than_containers,
                                  teardown),
        cmocka_unit_test_teardown(test_resize_charges_actual_when_larger_than_spec, teardown),
        cmocka_unit_test_teardown(test_resize_charges_spec_when_larger_than_actual, teardown),
        cmocka_unit_test_teardown(test_resize_max_is_per_container, teardown),
        cmocka_unit_test_teardown(test_status_without_resources_keeps_spec, teardown),
        cmocka_unit_test_teardown(test_infeasible_upsize_charges_actual_only, teardown),
        cmocka_unit_test_teardown(test_resize_infeasible_condition_rules, teardown),
        cmocka_unit_test_teardown(test_init_containers_keep_spec_sidecars_resize, teardown),
        cmocka_unit_test_teardown(test_limits_only_gpu_pod, teardown),
        cmocka_unit_test_teardown(test_amd_gpus, teardown),
        cmocka_unit_test_teardown(test_whole_gpus_follow_aggregation, teardown),
        cmocka_unit_test_teardown(test_non_integer_whole_gpu_is_invalid, teardown),
        cmocka_unit_test_teardown(test_zero_gpus_is_no_gpu, teardown),
        cmocka_unit_test_teardown(test_fraction_rounding, teardown),
        cmocka_unit_test_teardown(test_fraction_vectors, teardown),
        cmocka_unit_test_teardown(test_fraction_on_several_devices, teardown),
        cmocka_unit_test_teardown(test_gpu_memory, teardown),
        cmocka_unit_test_teardown(test_gpu_memory_values_rejected, teardown),
        cmocka_unit_test_teardown(test_fraction_with_whole_gpus_is_rejected, teardown),
        cmocka_unit_test_teardown(test_memory_with_fraction_or_whole_gpus_is_rejected, teardown),
        cmocka_unit_test_teardown(test_num_devices_alone_is_rejected, teardown),
        cmocka_unit_test_teardown(test_mps_needs_a_shared_request, teardown),
        cmocka_unit_test_teardown(test_gpu_sharing_disabled, teardown),
        cmocka_unit_test_teardown(test_mig_instances_count_their_slices, teardown),
        cmocka_unit_test_teardown(test_names_that_are_not_mig, teardown),
        cmocka_unit_test_teardown(test_gpu_hundredths_per_kind, teardown),
        cmocka_unit_test_teardown(test_many_resources_past_the_scratch, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
