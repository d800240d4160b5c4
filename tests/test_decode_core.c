/*
** test_decode_core.c: specification tests for the core kinds' decoders
** (src/decode_node.c, src/decode_pod.c, src/decode_sched.c).
**
** Each test loads YAML text through the real loader and store, exactly as
** `tally validate` and `tally simulate` do, then checks either the decoded
** struct or the diagnostics (line, column, field path, message). The YAML
** is written one line per string literal, so the line numbers asserted in
** the error tests can be read off the source.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tally/decode.h"
#include "tally/diag.h"
#include "tally/objects.h"
#include "tally/quantity.h"
#include "tally/resource.h"
#include "tally/store.h"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

/* A finished store holding the objects of `yaml`. */
static tly_store *load(const char *yaml)
{
    tly_store *s = tly_store_create();
    tly_store_load_string(s, "test.yaml", yaml, strlen(yaml));
    tly_store_finish(s);
    return s;
}

static size_t errors(tly_store *s)
{
    return tly_diags_count_sev(tly_store_diags(s), TLY_SEV_ERROR);
}

static size_t warnings(tly_store *s)
{
    return tly_diags_count_sev(tly_store_diags(s), TLY_SEV_WARNING);
}

/* Prints every diagnostic, so a failing test shows what was reported. */
static void dump(tly_store *s)
{
    tly_diags_print(stderr, tly_store_diags(s), TLY_SEV_NOTE);
}

/* The first diagnostic of severity sev whose field is `field`, or NULL. */
static const tly_diag *diag_at(tly_store *s, tly_severity sev, const char *field)
{
    const tly_diags *d = tly_store_diags(s);
    for (size_t i = 0; i < tly_diags_count(d); i++) {
        const tly_diag *g = tly_diags_get(d, i);
        if (g->sev == sev && g->field && strcmp(g->field, field) == 0)
            return g;
    }
    return NULL;
}

/*
** Asserts an error at `field`, at line:col when line is non-zero, whose
** message contains `text`.
*/
static void expect_error(tly_store *s, const char *field, uint32_t line, uint32_t col,
                         const char *text)
{
    const tly_diag *g = diag_at(s, TLY_SEV_ERROR, field);
    if (!g) {
        dump(s);
        fail_msg("no error at %s", field);
    }
    if (line) {
        assert_int_equal(g->line, line);
        assert_int_equal(g->col, col);
    }
    if (!strstr(g->msg, text)) {
        dump(s);
        fail_msg("error at %s says \"%s\", expected it to contain \"%s\"", field, g->msg, text);
    }
}

static void expect_clean(tly_store *s)
{
    if (errors(s) || warnings(s)) {
        dump(s);
        fail_msg("expected no errors or warnings");
    }
}

/* The amount of resource `name` in l, in milli-units; -1 when absent. */
static int64_t milli(tly_store *s, const tly_rlist *l, const char *name)
{
    uint32_t id = tly_names_find(tly_store_names(s), name, strlen(name));
    if (id == TLY_NAME_NONE)
        return -1;
    bool found = false;
    tly_qty q = tly_rlist_get(l, id, &found);
    if (!found)
        return -1;
    int64_t m = 0;
    assert_int_equal(tly_qty_milli(q, &m), 0);
    return m;
}

static int64_t when(const char *rfc3339)
{
    int64_t t = 0;
    assert_true(tly_parse_time(rfc3339, &t));
    return t;
}

static tly_pod *pod(tly_store *s, const char *ns, const char *name)
{
    tly_pod *p = tly_store_find(s, TLY_K_POD, ns, name);
    if (!p) {
        dump(s);
        fail_msg("pod %s/%s not loaded", ns, name);
    }
    return p;
}

/* ---------------------------------------------------------------------- */
/* Node                                                                   */
/* ---------------------------------------------------------------------- */

static const char gpu_node_yaml[] =
    "apiVersion: v1\n"
    "kind: Node\n"
    "metadata:\n"
    "  name: h200-1\n"
    "  labels:\n"
    "    nvidia.com/gpu.product: NVIDIA-H200\n"
    "    nvidia.com/gpu.memory: \"143771\"\n"
    "spec:\n"
    "  taints:\n"
    "  - key: nvidia.com/gpu\n"
    "    value: present\n"
    "    effect: NoSchedule\n"
    "  - key: node.kubernetes.io/maintenance\n"
    "    effect: PreferNoSchedule\n"
    "status:\n"
    "  allocatable:\n"
    "    cpu: 223800m\n"
    "    memory: 2113929216Ki\n"
    "    nvidia.com/gpu: \"8\"\n"
    "    pods: \"110\"\n"
    "  conditions:\n"
    "  - type: MemoryPressure\n"
    "    status: \"False\"\n"
    "    lastHeartbeatTime: \"2026-11-29T13:29:00Z\"\n"
    "  - type: Ready\n"
    "    status: \"True\"\n"
    "    reason: KubeletReady\n"
    "    lastHeartbeatTime: \"2026-11-29T13:29:33Z\"\n"
    "    lastTransitionTime: \"2026-11-01T08:00:00Z\"\n";

/* The log's millisecond stamp agrees with gmtime_r and reads back through tly_parse_time. */
static void test_format_time_ms_matches_gmtime_and_parses_back(void **state)
{
    (void)state;
    /* One instant a week and an hour, from 1600 to 2400, leap days and centuries included. */
    for (int64_t t = -11676096000LL; t < 13574563200LL; t += 7 * 86400 + 3607) {
        int ms = (int)((t % 1000 + 1000) % 1000);
        char got[32], want[48];
        tly_format_time_ms(t, ms, got);
        time_t tt = (time_t)t;
        struct tm tm;
        assert_non_null(gmtime_r(&tt, &tm));
        snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
        assert_string_equal(got, want);
        int64_t back = 0;
        assert_true(tly_parse_time(got, &back));
        assert_int_equal(back, t);
    }
    char buf[32];
    tly_format_time_ms(0, 5, buf);
    assert_string_equal(buf, "1970-01-01T00:00:00.005Z");
    tly_format_time_ms(951782400, 999, buf); /* 2000-02-29, a leap day of a 400-year century */
    assert_string_equal(buf, "2000-02-29T00:00:00.999Z");
}

static void test_gpu_node_reads_allocatable_taints_and_readiness(void **state)
{
    (void)state;
    tly_store *s = load(gpu_node_yaml);
    expect_clean(s);
    tly_k8s_node *n = tly_store_find(s, TLY_K_NODE, NULL, "h200-1");
    assert_non_null(n);

    assert_int_equal(milli(s, &n->allocatable, "cpu"), 223800);
    assert_int_equal(milli(s, &n->allocatable, "nvidia.com/gpu"), 8000);
    assert_int_equal(milli(s, &n->allocatable, "pods"), 110000);
    assert_int_equal(milli(s, &n->allocatable, "memory"), 2113929216LL * 1024 * 1000);

    assert_int_equal(n->ntaints, 2);
    assert_string_equal(n->taints[0].key, "nvidia.com/gpu");
    assert_string_equal(n->taints[0].value, "present");
    assert_string_equal(n->taints[0].effect, "NoSchedule");
    assert_string_equal(n->taints[1].key, "node.kubernetes.io/maintenance");
    assert_null(n->taints[1].value);
    assert_string_equal(n->taints[1].effect, "PreferNoSchedule");

    assert_false(n->unschedulable);
    assert_int_equal(n->ready, 1);
    assert_int_equal(n->ready_heartbeat, when("2026-11-29T13:29:33Z"));
    assert_int_equal(n->conditions.n, 2);
    assert_string_equal(n->conditions.v[0].type, "MemoryPressure");
    tly_store_destroy(s);
}

static void test_node_without_ready_condition_has_unknown_readiness(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Node\n"
                        "metadata: {name: bare}\n");
    expect_clean(s);
    tly_k8s_node *n = tly_store_find(s, TLY_K_NODE, NULL, "bare");
    assert_non_null(n);
    assert_int_equal(n->ready, -1);
    assert_true(n->ready_heartbeat == TLY_NO_TIME);
    assert_int_equal(n->ntaints, 0);
    assert_int_equal(n->allocatable.n, 0);
    tly_store_destroy(s);
}

static void test_node_ready_unknown_and_cordon_keep_pods_away(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Node\n"
                        "metadata: {name: lost}\n"
                        "spec: {unschedulable: true}\n"
                        "status:\n"
                        "  conditions:\n"
                        "  - {type: Ready, status: Unknown, reason: NodeStatusUnknown}\n"
                        "  - {type: Ready, status: \"True\"}\n");
    expect_clean(s);
    tly_k8s_node *n = tly_store_find(s, TLY_K_NODE, NULL, "lost");
    assert_non_null(n);
    assert_true(n->unschedulable);
    /* The first Ready condition decides. */
    assert_int_equal(n->ready, 0);
    assert_true(n->ready_heartbeat == TLY_NO_TIME);
    tly_store_destroy(s);
}

static void test_node_taint_needs_a_key_and_a_known_effect(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"               /* 1 */
                        "kind: Node\n"                    /* 2 */
                        "metadata: {name: n1}\n"          /* 3 */
                        "spec:\n"                         /* 4 */
                        "  taints:\n"                     /* 5 */
                        "  - key: a\n"                    /* 6 */
                        "    effect: NoScheduling\n"      /* 7 */
                        "  - {effect: NoExecute, value: v}\n" /* 8 */
                        "  - key: b\n"                    /* 9 */
                        "  - key: c\n"                    /* 10 */
                        "    effect: NoExecute\n");       /* 11 */
    expect_error(s, "spec.taints[0].effect", 7, 13, "must be one of NoSchedule, PreferNoSchedule");
    expect_error(s, "spec.taints[1].key", 0, 0, "required field is missing");
    expect_error(s, "spec.taints[2].effect", 0, 0, "required field is missing");
    assert_int_equal(errors(s), 3);
    tly_k8s_node *n = tly_store_find(s, TLY_K_NODE, NULL, "n1");
    assert_non_null(n);
    /* Only the good taint is kept. */
    assert_int_equal(n->ntaints, 1);
    assert_string_equal(n->taints[0].key, "c");
    assert_null(n->taints[0].value);
    tly_store_destroy(s);
}

/* ---------------------------------------------------------------------- */
/* Pod: what is read                                                      */
/* ---------------------------------------------------------------------- */

static const char resize_pod_yaml[] =
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata:\n"
    "  name: train-0\n"
    "  namespace: team-a\n"
    "  annotations: {pod-group-name: pg-train}\n"
    "spec:\n"
    "  schedulerName: kai-scheduler\n"
    "  priorityClassName: train\n"
    "  priority: 50\n"
    "  nodeName: h200-1\n"
    "  overhead: {cpu: 250m, memory: 120Mi}\n"
    "  resources:\n"
    "    requests: {cpu: \"6\", memory: 20Gi}\n"
    "    limits: {cpu: \"8\", memory: 24Gi}\n"
    "  initContainers:\n"
    "  - name: fetch\n"
    "    resources:\n"
    "      requests: {cpu: \"2\", memory: 1Gi}\n"
    "  - name: proxy\n"
    "    restartPolicy: Always\n"
    "    resources:\n"
    "      requests: {cpu: 500m, memory: 256Mi}\n"
    "      limits: {cpu: \"1\", memory: 256Mi}\n"
    "  containers:\n"
    "  - name: trainer\n"
    "    resources:\n"
    "      requests: {cpu: \"4\", memory: 16Gi, nvidia.com/gpu: \"1\"}\n"
    "      limits: {cpu: \"6\", memory: 16Gi, nvidia.com/gpu: \"1\"}\n"
    "  schedulingGates:\n"
    "  - name: kai.scheduler/queue-admission\n"
    "status:\n"
    "  phase: Running\n"
    "  startTime: \"2026-11-29T12:00:00Z\"\n"
    "  conditions:\n"
    "  - type: PodResizePending\n"
    "    status: \"True\"\n"
    "    reason: Deferred\n"
    "    lastTransitionTime: \"2026-11-29T13:00:00Z\"\n"
    "  - type: Ready\n"
    "    status: \"True\"\n"
    "  containerStatuses:\n"
    "  - name: trainer\n"
    "    allocatedResources: {cpu: \"4\", memory: 16Gi, nvidia.com/gpu: \"1\"}\n"
    "    resources:\n"
    "      requests: {cpu: \"3\", memory: 16Gi}\n"
    "      limits: {cpu: \"6\", memory: 16Gi}\n"
    "  initContainerStatuses:\n"
    "  - name: fetch\n"
    "  - name: proxy\n"
    "    allocatedResources: {cpu: 500m, memory: 256Mi}\n";

static void test_pod_sidecar_marks_restart_always(void **state)
{
    (void)state;
    tly_store *s = load(resize_pod_yaml);
    expect_clean(s);
    tly_pod *p = pod(s, "team-a", "train-0");
    assert_int_equal(p->ninit, 2);
    assert_string_equal(p->init_containers[0].name, "fetch");
    assert_false(p->init_containers[0].restart_always);
    assert_string_equal(p->init_containers[1].name, "proxy");
    assert_true(p->init_containers[1].restart_always);
    assert_int_equal(milli(s, &p->init_containers[1].requests, "cpu"), 500);
    assert_int_equal(milli(s, &p->init_containers[1].limits, "cpu"), 1000);
    assert_int_equal(p->ncontainers, 1);
    assert_string_equal(p->containers[0].name, "trainer");
    assert_int_equal(milli(s, &p->containers[0].requests, "nvidia.com/gpu"), 1000);
    tly_store_destroy(s);
}

static void test_pod_reads_overhead_and_pod_level_resources(void **state)
{
    (void)state;
    tly_store *s = load(resize_pod_yaml);
    tly_pod *p = pod(s, "team-a", "train-0");
    assert_int_equal(milli(s, &p->overhead, "cpu"), 250);
    assert_int_equal(milli(s, &p->overhead, "memory"), 120LL * 1024 * 1024 * 1000);
    assert_true(p->has_pod_resources);
    assert_int_equal(milli(s, &p->pod_requests, "cpu"), 6000);
    assert_int_equal(milli(s, &p->pod_limits, "cpu"), 8000);
    assert_int_equal(milli(s, &p->pod_limits, "memory"), 24LL * 1024 * 1024 * 1024 * 1000);
    tly_store_destroy(s);
}

static void test_pod_reads_scheduling_fields(void **state)
{
    (void)state;
    tly_store *s = load(resize_pod_yaml);
    tly_pod *p = pod(s, "team-a", "train-0");
    assert_string_equal(p->scheduler_name, "kai-scheduler");
    assert_string_equal(p->priority_class_name, "train");
    assert_true(p->has_priority);
    assert_int_equal(p->priority, 50);
    assert_string_equal(p->node_name, "h200-1");
    assert_int_equal(p->ngates, 1);
    assert_string_equal(p->gates[0], "kai.scheduler/queue-admission");
    assert_false(p->has_pod_affinity);
    assert_false(p->has_topology_spread);
    tly_store_destroy(s);
}

static void test_pod_status_keeps_actuated_and_allocated_resources(void **state)
{
    (void)state;
    tly_store *s = load(resize_pod_yaml);
    tly_pod *p = pod(s, "team-a", "train-0");
    assert_string_equal(p->phase, "Running");
    assert_int_equal(p->start_time, when("2026-11-29T12:00:00Z"));

    const tly_condition *c = tly_conditions_find(&p->conditions, "PodResizePending");
    assert_non_null(c);
    assert_string_equal(c->reason, "Deferred");
    assert_int_equal(c->last_transition, when("2026-11-29T13:00:00Z"));

    assert_int_equal(p->nstatuses, 1);
    const tly_container_status *st = &p->statuses[0];
    assert_string_equal(st->name, "trainer");
    assert_true(st->has_resources);
    assert_int_equal(milli(s, &st->requests, "cpu"), 3000);
    assert_int_equal(milli(s, &st->limits, "cpu"), 6000);
    assert_true(st->has_allocated);
    assert_int_equal(milli(s, &st->allocated, "cpu"), 4000);
    assert_int_equal(milli(s, &st->allocated, "nvidia.com/gpu"), 1000);

    /* A status without resources says so: "not reported" is not "zero". */
    assert_int_equal(p->ninit_statuses, 2);
    assert_string_equal(p->init_statuses[0].name, "fetch");
    assert_false(p->init_statuses[0].has_resources);
    assert_false(p->init_statuses[0].has_allocated);
    assert_true(p->init_statuses[1].has_allocated);
    assert_false(p->init_statuses[1].has_resources);
    tly_store_destroy(s);
}

static void test_pod_without_status_has_no_phase_and_no_start_time(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: p, namespace: ns}\n"
                        "spec:\n"
                        "  containers: [{name: c}]\n");
    expect_clean(s);
    tly_pod *p = pod(s, "ns", "p");
    assert_null(p->phase);
    assert_true(p->start_time == TLY_NO_TIME);
    assert_null(p->node_name);
    assert_false(p->has_priority);
    assert_false(p->has_pod_resources);
    /* The API server's default scheduler. */
    assert_string_equal(p->scheduler_name, "default-scheduler");
    tly_store_destroy(s);
}

static void test_pod_limit_without_request_defaults_the_request(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: gpu, namespace: ns}\n"
                        "spec:\n"
                        "  containers:\n"
                        "  - name: c\n"
                        "    resources:\n"
                        "      requests: {cpu: \"1\"}\n"
                        "      limits: {cpu: \"2\", nvidia.com/gpu: 2}\n");
    expect_clean(s);
    tly_pod *p = pod(s, "ns", "gpu");
    /* The request written stays; the missing one is copied from the limit. */
    assert_int_equal(milli(s, &p->containers[0].requests, "cpu"), 1000);
    assert_int_equal(milli(s, &p->containers[0].requests, "nvidia.com/gpu"), 2000);
    tly_store_destroy(s);
}

static void test_pod_level_limit_defaults_request_only_where_no_container_asks(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: plr, namespace: ns}\n"
                        "spec:\n"
                        "  resources:\n"
                        "    limits: {cpu: \"4\", memory: 8Gi}\n"
                        "  containers:\n"
                        "  - name: c\n"
                        "    resources: {requests: {cpu: \"1\"}}\n");
    expect_clean(s);
    tly_pod *p = pod(s, "ns", "plr");
    assert_true(p->has_pod_resources);
    /* No container asks for memory: the pod-level request is the limit. */
    assert_int_equal(milli(s, &p->pod_requests, "memory"), 8LL * 1024 * 1024 * 1024 * 1000);
    /* A container asks for cpu: the containers' aggregate stands. */
    assert_int_equal(milli(s, &p->pod_requests, "cpu"), -1);
    tly_store_destroy(s);
}

static void test_pod_tolerations_and_node_affinity(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: aff, namespace: ns}\n"
                        "spec:\n"
                        "  containers: [{name: c}]\n"
                        "  nodeSelector:\n"
                        "    nvidia.com/gpu.product: NVIDIA-H200\n"
                        "  tolerations:\n"
                        "  - key: nvidia.com/gpu\n"
                        "    operator: Exists\n"
                        "    effect: NoSchedule\n"
                        "  - key: dedicated\n"
                        "    value: ml\n"
                        "  - operator: Exists\n"
                        "  affinity:\n"
                        "    nodeAffinity:\n"
                        "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                        "        nodeSelectorTerms:\n"
                        "        - matchExpressions:\n"
                        "          - {key: topology.kubernetes.io/zone, operator: In, "
                        "values: [a, b]}\n"
                        "        - matchExpressions:\n"
                        "          - {key: gpu-class, operator: Exists}\n"
                        "      preferredDuringSchedulingIgnoredDuringExecution:\n"
                        "      - weight: 1\n"
                        "        preference:\n"
                        "          matchExpressions: [{key: x, operator: Exists}]\n");
    expect_clean(s);
    tly_pod *p = pod(s, "ns", "aff");
    assert_string_equal(tly_kvs_get(&p->node_selector, "nvidia.com/gpu.product"), "NVIDIA-H200");

    assert_int_equal(p->ntolerations, 3);
    assert_string_equal(p->tolerations[0].key, "nvidia.com/gpu");
    assert_string_equal(p->tolerations[0].op, "Exists");
    assert_string_equal(p->tolerations[0].effect, "NoSchedule");
    /* The operator defaults to Equal; no effect means every effect. */
    assert_string_equal(p->tolerations[1].op, "Equal");
    assert_string_equal(p->tolerations[1].value, "ml");
    assert_null(p->tolerations[1].effect);
    /* No key with Exists tolerates every taint. */
    assert_null(p->tolerations[2].key);
    assert_string_equal(p->tolerations[2].op, "Exists");

    /* Required terms are ORed; preferred terms are not constraints. */
    assert_int_equal(p->nnode_affinity_required, 2);
    assert_int_equal(p->node_affinity_required[0].nreqs, 1);
    assert_string_equal(p->node_affinity_required[0].reqs[0].key, "topology.kubernetes.io/zone");
    assert_string_equal(p->node_affinity_required[0].reqs[0].op, "In");
    assert_int_equal(p->node_affinity_required[0].reqs[0].nvalues, 2);
    assert_string_equal(p->node_affinity_required[1].reqs[0].op, "Exists");
    tly_store_destroy(s);
}

static void test_pod_flags_constraints_tally_does_not_evaluate(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: spread, namespace: ns}\n"
                        "spec:\n"
                        "  containers: [{name: c}]\n"
                        "  affinity:\n"
                        "    podAntiAffinity:\n"
                        "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                        "      - topologyKey: kubernetes.io/hostname\n"
                        "        labelSelector: {matchLabels: {app: x}}\n"
                        "  topologySpreadConstraints:\n"
                        "  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}\n"
                        "  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n"
                        "---\n"
                        "apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: soft, namespace: ns}\n"
                        "spec:\n"
                        "  containers: [{name: c}]\n"
                        "  affinity:\n"
                        "    podAffinity:\n"
                        "      preferredDuringSchedulingIgnoredDuringExecution:\n"
                        "      - weight: 10\n"
                        "        podAffinityTerm: {topologyKey: zone}\n"
                        "  topologySpreadConstraints:\n"
                        "  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}\n");
    expect_clean(s);
    tly_pod *hard = pod(s, "ns", "spread");
    assert_true(hard->has_pod_affinity);
    assert_true(hard->has_topology_spread);
    tly_pod *soft = pod(s, "ns", "soft");
    assert_false(soft->has_pod_affinity);
    assert_false(soft->has_topology_spread);
    tly_store_destroy(s);
}

static void test_pod_resource_claims_name_one_source_each(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: dra, namespace: ns}\n"
                        "spec:\n"
                        "  containers: [{name: c}]\n"
                        "  resourceClaims:\n"
                        "  - name: gpu\n"
                        "    resourceClaimTemplateName: single-gpu\n"
                        "  - name: shared\n"
                        "    resourceClaimName: shared-nic\n");
    expect_clean(s);
    tly_pod *p = pod(s, "ns", "dra");
    assert_int_equal(p->nclaims, 2);
    assert_string_equal(p->claims[0].name, "gpu");
    assert_null(p->claims[0].claim_name);
    assert_string_equal(p->claims[0].template_name, "single-gpu");
    assert_string_equal(p->claims[1].name, "shared");
    assert_string_equal(p->claims[1].claim_name, "shared-nic");
    assert_null(p->claims[1].template_name);
    tly_store_destroy(s);
}

static void test_list_of_two_pods_loads_both(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: List\n"
                        "items:\n"
                        "- apiVersion: v1\n"
                        "  kind: Pod\n"
                        "  metadata: {name: b, namespace: ns}\n"
                        "  spec: {containers: [{name: c}]}\n"
                        "- apiVersion: v1\n"
                        "  kind: Pod\n"
                        "  metadata: {name: a, namespace: ns}\n"
                        "  spec:\n"
                        "    containers:\n"
                        "    - name: c\n"
                        "      resources: {requests: {cpu: 100m}}\n");
    expect_clean(s);
    assert_int_equal(tly_store_count(s, TLY_K_POD), 2);
    /* Finished stores are in (namespace, name) order. */
    tly_pod *first = tly_store_at(s, TLY_K_POD, 0);
    tly_pod *second = tly_store_at(s, TLY_K_POD, 1);
    assert_string_equal(first->meta.name, "a");
    assert_string_equal(second->meta.name, "b");
    assert_int_equal(milli(s, &first->containers[0].requests, "cpu"), 100);
    tly_store_destroy(s);
}

/* ---------------------------------------------------------------------- */
/* Pod: what is rejected                                                  */
/* ---------------------------------------------------------------------- */

static void test_bad_quantity_names_the_field_line_and_column(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"                        /* 1 */
                        "kind: Pod\n"                              /* 2 */
                        "metadata: {name: p, namespace: ns}\n"     /* 3 */
                        "spec:\n"                                  /* 4 */
                        "  containers:\n"                          /* 5 */
                        "  - name: c\n"                            /* 6 */
                        "    resources:\n"                         /* 7 */
                        "      requests:\n"                        /* 8 */
                        "        cpu: 2 cores\n"                   /* 9 */
                        "        memory: 1Gi\n");                  /* 10 */
    expect_error(s, "spec.containers[0].resources.requests.cpu", 9, 14, "quantity");
    assert_int_equal(errors(s), 1);
    /* The pod is kept with what could be read. */
    tly_pod *p = pod(s, "ns", "p");
    assert_int_equal(milli(s, &p->containers[0].requests, "cpu"), -1);
    assert_true(milli(s, &p->containers[0].requests, "memory") > 0);
    tly_store_destroy(s);
}

static void test_wrong_types_are_reported_at_the_value(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"                        /* 1 */
                        "kind: Pod\n"                              /* 2 */
                        "metadata: {name: p, namespace: ns}\n"     /* 3 */
                        "spec:\n"                                  /* 4 */
                        "  priority: high\n"                       /* 5 */
                        "  nodeSelector: [a]\n"                    /* 6 */
                        "  containers:\n"                          /* 7 */
                        "  - name: c\n"                            /* 8 */
                        "    resources: 1\n");                     /* 9 */
    expect_error(s, "spec.priority", 5, 13, "expected an integer");
    expect_error(s, "spec.nodeSelector", 6, 17, "expected a map");
    expect_error(s, "spec.containers[0].resources", 9, 16, "expected a map");
    assert_int_equal(errors(s), 3);
    tly_store_destroy(s);
}

static void test_bad_phase_lists_the_allowed_values(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: p, namespace: ns}\n"
                        "spec: {containers: [{name: c}]}\n"
                        "status: {phase: Done}\n");
    expect_error(s, "status.phase", 5, 17,
                 "must be one of Pending, Running, Succeeded, Failed, Unknown");
    assert_null(pod(s, "ns", "p")->phase);
    tly_store_destroy(s);
}

static void test_container_needs_a_name(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: p, namespace: ns}\n"
                        "spec:\n"
                        "  containers:\n"
                        "  - name: a\n"
                        "  - image: busybox\n"
                        "    resources: {requests: {cpu: \"1\"}}\n");
    expect_error(s, "spec.containers[1].name", 0, 0, "required field is missing");
    assert_int_equal(errors(s), 1);
    /* Its resources still count. */
    tly_pod *p = pod(s, "ns", "p");
    assert_int_equal(p->ncontainers, 2);
    assert_int_equal(milli(s, &p->containers[1].requests, "cpu"), 1000);
    tly_store_destroy(s);
}

static void test_pod_needs_at_least_one_container(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: empty, namespace: ns}\n"
                        "spec:\n"
                        "  containers: []\n"
                        "---\n"
                        "apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: none, namespace: ns}\n"
                        "spec: {nodeName: n1}\n");
    assert_int_equal(errors(s), 2);
    expect_error(s, "spec.containers", 5, 15, "must have at least one container");
    tly_store_destroy(s);
}

static void test_container_names_must_be_unique(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: p, namespace: ns}\n"
                        "spec:\n"
                        "  initContainers: [{name: a}]\n"
                        "  containers: [{name: b}, {name: a}]\n");
    expect_error(s, "spec.containers[1].name", 0, 0, "duplicate container name \"a\"");
    assert_int_equal(errors(s), 1);
    tly_store_destroy(s);
}

static void test_request_above_limit_is_an_error(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"                              /* 1 */
                        "kind: Pod\n"                                    /* 2 */
                        "metadata: {name: p, namespace: ns}\n"           /* 3 */
                        "spec:\n"                                        /* 4 */
                        "  containers:\n"                                /* 5 */
                        "  - name: c\n"                                  /* 6 */
                        "    resources:\n"                               /* 7 */
                        "      requests: {cpu: 1500m, memory: 1Gi}\n"    /* 8 */
                        "      limits: {cpu: \"1\", memory: 2Gi}\n");    /* 9 */
    expect_error(s, "spec.containers[0].resources.requests.cpu", 8, 23,
                 "must be less than or equal to cpu limit of 1");
    assert_int_equal(errors(s), 1);
    tly_store_destroy(s);
}

static void test_device_request_must_equal_its_limit(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: p, namespace: ns}\n"
                        "spec:\n"
                        "  containers:\n"
                        "  - name: below\n"
                        "    resources:\n"
                        "      requests: {nvidia.com/gpu: 1}\n"
                        "      limits: {nvidia.com/gpu: 2}\n"
                        "  - name: nolimit\n"
                        "    resources:\n"
                        "      requests: {vpc.amazonaws.com/efa: 1}\n"
                        "  - name: half\n"
                        "    resources:\n"
                        "      limits: {nvidia.com/gpu: 500m}\n");
    expect_error(s, "spec.containers[0].resources.requests.nvidia.com/gpu", 8, 34,
                 "must be equal to nvidia.com/gpu limit of 2");
    expect_error(s, "spec.containers[1].resources.requests.vpc.amazonaws.com/efa", 0, 0,
                 "limit must be set");
    expect_error(s, "spec.containers[2].resources.limits.nvidia.com/gpu", 0, 0,
                 "must be an integer");
    assert_int_equal(errors(s), 3);
    tly_store_destroy(s);
}

static void test_unknown_unprefixed_resource_is_an_error(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: p, namespace: ns}\n"
                        "spec:\n"
                        "  containers:\n"
                        "  - name: c\n"
                        "    resources: {limits: {gpu: 1, memory: -1Gi}}\n");
    expect_error(s, "spec.containers[0].resources.limits.gpu", 0, 0,
                 "must be a standard resource for containers");
    expect_error(s, "spec.containers[0].resources.limits.memory", 0, 0,
                 "must be greater than or equal to 0");
    tly_store_destroy(s);
}

static void test_init_container_restart_policy_must_be_always(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: p, namespace: ns}\n"
                        "spec:\n"
                        "  initContainers:\n"
                        "  - name: i\n"
                        "    restartPolicy: OnFailure\n"
                        "  containers: [{name: c}]\n");
    expect_error(s, "spec.initContainers[0].restartPolicy", 7, 20, "must be Always");
    assert_false(pod(s, "ns", "p")->init_containers[0].restart_always);
    tly_store_destroy(s);
}

static void test_claim_with_both_sources_is_an_error(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: p, namespace: ns}\n"
                        "spec:\n"
                        "  containers: [{name: c}]\n"
                        "  resourceClaims:\n"
                        "  - name: both\n"
                        "    resourceClaimName: a\n"
                        "    resourceClaimTemplateName: b\n"
                        "  - name: neither\n"
                        "  - resourceClaimName: c\n");
    expect_error(s, "spec.resourceClaims[0].resourceClaimTemplateName", 9, 32,
                 "must not be set together with resourceClaimName");
    expect_error(s, "spec.resourceClaims[1]", 0, 0, "exactly one of");
    expect_error(s, "spec.resourceClaims[2].name", 0, 0, "required field is missing");
    assert_int_equal(errors(s), 3);
    assert_int_equal(pod(s, "ns", "p")->nclaims, 0);
    tly_store_destroy(s);
}

static void test_toleration_rules(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: p, namespace: ns}\n"
                        "spec:\n"
                        "  containers: [{name: c}]\n"
                        "  tolerations:\n"
                        "  - {key: a, operator: Like}\n"
                        "  - {key: a, effect: Never}\n"
                        "  - {value: x}\n"
                        "  - {key: a, operator: Exists, value: x}\n"
                        "  - {key: ok, operator: Equal, value: v, effect: NoExecute}\n");
    expect_error(s, "spec.tolerations[0].operator", 0, 0, "must be one of Exists, Equal");
    expect_error(s, "spec.tolerations[1].effect", 0, 0, "NoSchedule");
    expect_error(s, "spec.tolerations[2].operator", 0, 0, "must be Exists when key is empty");
    expect_error(s, "spec.tolerations[3].value", 0, 0, "must be empty when operator is Exists");
    assert_int_equal(errors(s), 4);
    tly_pod *p = pod(s, "ns", "p");
    assert_int_equal(p->ntolerations, 1);
    assert_string_equal(p->tolerations[0].key, "ok");
    tly_store_destroy(s);
}

static void test_required_node_affinity_needs_a_term(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Pod\n"
                        "metadata: {name: p, namespace: ns}\n"
                        "spec:\n"
                        "  containers: [{name: c}]\n"
                        "  affinity:\n"
                        "    nodeAffinity:\n"
                        "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                        "        nodeSelectorTerms: []\n");
    expect_error(s,
                 "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                 "nodeSelectorTerms",
                 9, 28, "must have at least one node selector term");
    tly_store_destroy(s);
}

/* ---------------------------------------------------------------------- */
/* PriorityClass, PodGroup, Config, Namespace                             */
/* ---------------------------------------------------------------------- */

static void test_priority_class_reads_value_and_global_default(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: scheduling.k8s.io/v1\n"
                        "kind: PriorityClass\n"
                        "metadata: {name: inference}\n"
                        "value: 125\n"
                        "globalDefault: true\n"
                        "---\n"
                        "apiVersion: scheduling.k8s.io/v1\n"
                        "kind: PriorityClass\n"
                        "metadata: {name: novalue}\n");
    tly_priority_class *pc = tly_store_find(s, TLY_K_PRIORITY_CLASS, NULL, "inference");
    assert_non_null(pc);
    assert_int_equal(pc->value, 125);
    assert_true(pc->global_default);
    expect_error(s, "value", 0, 0, "required field is missing");
    assert_int_equal(errors(s), 1);
    tly_store_destroy(s);
}

static void test_podgroup_min_member_defaults_to_one(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: scheduling.run.ai/v2alpha2\n"
                        "kind: PodGroup\n"
                        "metadata: {name: pg-train, namespace: team-a}\n"
                        "spec:\n"
                        "  queue: team-a\n"
                        "  priorityClassName: build\n"
                        "---\n"
                        "apiVersion: scheduling.run.ai/v2alpha2\n"
                        "kind: PodGroup\n"
                        "metadata: {name: gang, namespace: team-a}\n"
                        "spec: {queue: team-b, minMember: 4, preemptibility: non-preemptible}\n");
    expect_clean(s);
    tly_podgroup *pg = tly_store_find(s, TLY_K_PODGROUP, "team-a", "pg-train");
    assert_non_null(pg);
    assert_string_equal(pg->queue, "team-a");
    assert_int_equal(pg->min_member, 1);
    assert_string_equal(pg->priority_class_name, "build");
    assert_int_equal(pg->preemptibility, TLY_PREEMPT_UNSET);
    tly_podgroup *gang = tly_store_find(s, TLY_K_PODGROUP, "team-a", "gang");
    assert_non_null(gang);
    assert_int_equal(gang->min_member, 4);
    assert_int_equal(gang->preemptibility, TLY_PREEMPT_NON_PREEMPTIBLE);
    tly_store_destroy(s);
}

static void test_podgroup_rejects_bad_preemptibility_and_negative_min_member(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: scheduling.run.ai/v2alpha2\n"
                        "kind: PodGroup\n"
                        "metadata: {name: pg, namespace: ns}\n"
                        "spec:\n"
                        "  minMember: -1\n"
                        "  preemptibility: sometimes\n");
    expect_error(s, "spec.minMember", 5, 14, "must be greater than or equal to 0");
    expect_error(s, "spec.preemptibility", 6, 19, "preemptible, non-preemptible");
    tly_podgroup *pg = tly_store_find(s, TLY_K_PODGROUP, "ns", "pg");
    assert_non_null(pg);
    assert_int_equal(pg->min_member, 1);
    assert_int_equal(pg->preemptibility, TLY_PREEMPT_UNSET);
    tly_store_destroy(s);
}

static void test_config_switches_start_unset(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: kai.scheduler/v1\n"
                        "kind: Config\n"
                        "metadata: {name: kai-config}\n"
                        "spec: {}\n");
    expect_clean(s);
    const tly_config *c = tly_store_config(s);
    assert_non_null(c);
    assert_int_equal(c->validate_quota, -1);
    assert_int_equal(c->block_upsize, -1);
    assert_int_equal(c->gpu_sharing, -1);
    assert_int_equal(c->gating_enabled, -1);
    assert_null(c->gpu_sharing_mode);
    assert_null(c->scheduler_name);
    assert_null(c->queue_label_key);
    tly_store_destroy(s);
}

static void test_config_reads_every_switch(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: kai.scheduler/v1\n"
                        "kind: Config\n"
                        "metadata: {name: kai-config}\n"
                        "spec:\n"
                        "  admission:\n"
                        "    gpuSharing: false\n"
                        "    inPlacePodResize:\n"
                        "      validateQuota: false\n"
                        "      blockUpsizeOnBoundedQueues: true\n"
                        "  global:\n"
                        "    gpuSharingMode: HAMi\n"
                        "    schedulerName: tally-test\n"
                        "    queueLabelKey: example.com/queue\n"
                        "    queueAdmissionGating: {enabled: false}\n");
    expect_clean(s);
    const tly_config *c = tly_store_config(s);
    assert_non_null(c);
    assert_int_equal(c->validate_quota, 0);
    assert_int_equal(c->block_upsize, 1);
    assert_int_equal(c->gpu_sharing, 0);
    assert_int_equal(c->gating_enabled, 0);
    assert_string_equal(c->gpu_sharing_mode, "HAMi");
    assert_string_equal(c->scheduler_name, "tally-test");
    assert_string_equal(c->queue_label_key, "example.com/queue");
    tly_store_destroy(s);
}

static void test_config_switch_of_wrong_type_stays_unset(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: kai.scheduler/v1\n"
                        "kind: Config\n"
                        "metadata: {name: kai-config}\n"
                        "spec:\n"
                        "  admission:\n"
                        "    inPlacePodResize: {validateQuota: 1}\n");
    expect_error(s, "spec.admission.inPlacePodResize.validateQuota", 6, 39, "boolean");
    const tly_config *c = tly_store_config(s);
    assert_non_null(c);
    assert_int_equal(c->validate_quota, -1);
    tly_store_destroy(s);
}

static void test_namespace_is_read(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: v1\n"
                        "kind: Namespace\n"
                        "metadata: {name: team-a, labels: {tier: gold}}\n");
    expect_clean(s);
    tly_namespace *ns = tly_store_find(s, TLY_K_NAMESPACE, NULL, "team-a");
    assert_non_null(ns);
    assert_string_equal(tly_kvs_get(&ns->meta.labels, "tier"), "gold");
    tly_store_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_node_reads_allocatable_taints_and_readiness),
        cmocka_unit_test(test_node_without_ready_condition_has_unknown_readiness),
        cmocka_unit_test(test_node_ready_unknown_and_cordon_keep_pods_away),
        cmocka_unit_test(test_node_taint_needs_a_key_and_a_known_effect),
        cmocka_unit_test(test_pod_sidecar_marks_restart_always),
        cmocka_unit_test(test_pod_reads_overhead_and_pod_level_resources),
        cmocka_unit_test(test_pod_reads_scheduling_fields),
        cmocka_unit_test(test_pod_status_keeps_actuated_and_allocated_resources),
        cmocka_unit_test(test_pod_without_status_has_no_phase_and_no_start_time),
        cmocka_unit_test(test_format_time_ms_matches_gmtime_and_parses_back),
        cmocka_unit_test(test_pod_limit_without_request_defaults_the_request),
        cmocka_unit_test(test_pod_level_limit_defaults_request_only_where_no_container_asks),
        cmocka_unit_test(test_pod_tolerations_and_node_affinity),
        cmocka_unit_test(test_pod_flags_constraints_tally_does_not_evaluate),
        cmocka_unit_test(test_pod_resource_claims_name_one_source_each),
        cmocka_unit_test(test_list_of_two_pods_loads_both),
        cmocka_unit_test(test_bad_quantity_names_the_field_line_and_column),
        cmocka_unit_test(test_wrong_types_are_reported_at_the_value),
        cmocka_unit_test(test_bad_phase_lists_the_allowed_values),
        cmocka_unit_test(test_container_needs_a_name),
        cmocka_unit_test(test_pod_needs_at_least_one_container),
        cmocka_unit_test(test_container_names_must_be_unique),
        cmocka_unit_test(test_request_above_limit_is_an_error),
        cmocka_unit_test(test_device_request_must_equal_its_limit),
        cmocka_unit_test(test_unknown_unprefixed_resource_is_an_error),
        cmocka_unit_test(test_init_container_restart_policy_must_be_always),
        cmocka_unit_test(test_claim_with_both_sources_is_an_error),
        cmocka_unit_test(test_toleration_rules),
        cmocka_unit_test(test_required_node_affinity_needs_a_term),
        cmocka_unit_test(test_priority_class_reads_value_and_global_default),
        cmocka_unit_test(test_podgroup_min_member_defaults_to_one),
        cmocka_unit_test(test_podgroup_rejects_bad_preemptibility_and_negative_min_member),
        cmocka_unit_test(test_config_switches_start_unset),
        cmocka_unit_test(test_config_reads_every_switch),
        cmocka_unit_test(test_config_switch_of_wrong_type_stays_unset),
        cmocka_unit_test(test_namespace_is_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
