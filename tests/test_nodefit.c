/*
** test_nodefit.c: specification tests for src/nodefit.c: the static node
** predicates (cordon, readiness, nodeSelector, required node affinity,
** taints and tolerations) and the GPU device model behind KAI GPU sharing
** (node GPU memory, whole GPUs, fraction bin-packing, gpu-memory requests).
**
** Nodes and pods are written as YAML and loaded through the real store, as
** `tally simulate` reads them. GPU requests (tly_podreq) are built by hand,
** so these tests depend only on the fields of podreq.h, not on podreq.c.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "tally/nodefit.h"
#include "tally/objects.h"
#include "tally/podreq.h"
#include "tally/store.h"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

/* A Ready node "n" with extra metadata/spec YAML lines spliced in. */
#define READY_NODE(meta, spec)                                                       \
    "apiVersion: v1\n"                                                               \
    "kind: Node\n"                                                                   \
    "metadata:\n"                                                                    \
    "  name: n\n" meta "spec:\n"                                                     \
    "  unschedulable: false\n" spec "status:\n"                                      \
    "  allocatable: {cpu: \"8\", memory: 32Gi, pods: \"110\"}\n"                     \
    "  conditions:\n"                                                                \
    "  - {type: Ready, status: \"True\"}\n"                                          \
    "---\n"

/* A pod "p" in namespace "ns" with the given spec lines. */
#define POD(spec)                                                                    \
    "apiVersion: v1\n"                                                               \
    "kind: Pod\n"                                                                    \
    "metadata: {name: p, namespace: ns}\n"                                           \
    "spec:\n"                                                                        \
    "  containers:\n"                                                                \
    "  - name: c\n"                                                                  \
    "    image: x\n" spec

/*
** Loads the YAML and evaluates pod ns/p on node n. The reported taint lives
** in the store, so the tests that look at it keep the store themselves.
*/
static tly_fit_result fit(const char *yaml)
{
    tly_store *s = load_text("test.yaml", yaml);
    const tly_k8s_node *n = tly_store_find(s, TLY_K_NODE, NULL, "n");
    const tly_pod *p = tly_store_find(s, TLY_K_POD, "ns", "p");
    assert_non_null(n);
    assert_non_null(p);
    tly_fit_result r = tly_nodefit_static(p, n, NULL);
    tly_store_destroy(s);
    return r;
}

/* The GPU devices of a node given as YAML (node "n"). */
static void gpus_of(const char *yaml, tly_gpus *g)
{
    tly_store *s = load_text("test.yaml", yaml);
    const tly_k8s_node *n = tly_store_find(s, TLY_K_NODE, NULL, "n");
    assert_non_null(n);
    tly_gpus_init(g, n);
    tly_store_destroy(s);
}

/* A node with `gpus` nvidia.com/gpu and the gpu.memory label `mem` (NULL: none). */
static void gpu_node(tly_gpus *g, const char *gpus, const char *mem)
{
    char yaml[1024];
    if (mem)
        snprintf(yaml, sizeof yaml,
                 "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n"
                 "    nvidia.com/gpu.memory: \"%s\"\n"
                 "status:\n  allocatable: {nvidia.com/gpu: \"%s\"}\n",
                 mem, gpus);
    else
        snprintf(yaml, sizeof yaml,
                 "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
                 "status:\n  allocatable: {nvidia.com/gpu: \"%s\"}\n",
                 gpus);
    gpus_of(yaml, g);
}

/* The GPU memory a node label gives. */
static uint64_t label_mem(const char *value)
{
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n"
             "    nvidia.com/gpu.memory: \"%s\"\n",
             value);
    tly_store *s = load_text("test.yaml", yaml);
    const tly_k8s_node *n = tly_store_find(s, TLY_K_NODE, NULL, "n");
    assert_non_null(n);
    uint64_t m = tly_node_gpu_memory_mib(n);
    tly_store_destroy(s);
    return m;
}

static tly_podreq whole(uint32_t n)
{
    tly_podreq r;
    memset(&r, 0, sizeof r);
    r.gpu_kind = TLY_GPU_WHOLE;
    r.gpu_resource = TLY_R_NVIDIA_GPU;
    r.gpu_devices = n;
    return r;
}

static tly_podreq fraction(uint32_t hundredths, uint32_t devices)
{
    tly_podreq r;
    memset(&r, 0, sizeof r);
    r.gpu_kind = TLY_GPU_FRACTION;
    r.gpu_resource = TLY_R_NVIDIA_GPU;
    r.gpu_devices = devices;
    r.gpu_portion = hundredths;
    return r;
}

static tly_podreq gpu_memory(uint64_t mib, uint32_t devices)
{
    tly_podreq r;
    memset(&r, 0, sizeof r);
    r.gpu_kind = TLY_GPU_MEMORY;
    r.gpu_resource = TLY_R_NVIDIA_GPU;
    r.gpu_devices = devices;
    r.gpu_memory_mib = mib;
    return r;
}

/* ---------------------------------------------------------------------- */
/* Static predicates                                                      */
/* ---------------------------------------------------------------------- */

static void test_plain_pod_fits_plain_ready_node(void **state)
{
    (void)state;
    assert_int_equal(fit(READY_NODE("", "") POD("")), TLY_FIT_OK);
    assert_string_equal(tly_fit_result_text(TLY_FIT_OK), "");
}

static void test_cordoned_node_is_unschedulable(void **state)
{
    (void)state;
    const char *y = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
                    "spec: {unschedulable: true}\n"
                    "status:\n  conditions:\n  - {type: Ready, status: \"True\"}\n"
                    "---\n" POD("");
    assert_int_equal(fit(y), TLY_FIT_UNSCHEDULABLE);
    assert_string_equal(tly_fit_result_text(TLY_FIT_UNSCHEDULABLE), "node(s) were unschedulable");
}

static void test_cordon_is_reported_before_not_ready(void **state)
{
    (void)state;
    const char *y = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
                    "spec: {unschedulable: true}\n"
                    "status:\n  conditions:\n  - {type: Ready, status: \"False\"}\n"
                    "---\n" POD("");
    assert_int_equal(fit(y), TLY_FIT_UNSCHEDULABLE);
}

static void test_node_not_ready_false_unknown_or_missing(void **state)
{
    (void)state;
    const char *f = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
                    "status:\n  conditions:\n  - {type: Ready, status: \"False\"}\n"
                    "---\n" POD("");
    const char *u = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
                    "status:\n  conditions:\n  - {type: Ready, status: Unknown}\n"
                    "---\n" POD("");
    const char *none = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
                       "---\n" POD("");
    assert_int_equal(fit(f), TLY_FIT_NOT_READY);
    assert_int_equal(fit(u), TLY_FIT_NOT_READY);
    assert_int_equal(fit(none), TLY_FIT_NOT_READY);
    assert_string_equal(tly_fit_result_text(TLY_FIT_NOT_READY), "node(s) were not ready");
}

static void test_node_selector_every_pair_must_match(void **state)
{
    (void)state;
    const char *match = READY_NODE("  labels: {pool: a100, zone: z1}\n", "")
        POD("  nodeSelector: {pool: a100, zone: z1}\n");
    const char *wrong_value = READY_NODE("  labels: {pool: a100, zone: z1}\n", "")
        POD("  nodeSelector: {pool: h100}\n");
    const char *missing = READY_NODE("  labels: {pool: a100}\n", "")
        POD("  nodeSelector: {pool: a100, zone: z1}\n");
    assert_int_equal(fit(match), TLY_FIT_OK);
    assert_int_equal(fit(wrong_value), TLY_FIT_NODE_SELECTOR);
    assert_int_equal(fit(missing), TLY_FIT_NODE_SELECTOR);
    assert_string_equal(tly_fit_result_text(TLY_FIT_NODE_SELECTOR),
                        "node(s) didn't match Pod's node affinity/selector");
}

/* Two terms, ORed: (gpu In [a100, h100] AND tier NotIn [spot]) OR (special Exists). */
#define TWO_TERM_AFFINITY                                                            \
    "  affinity:\n"                                                                  \
    "    nodeAffinity:\n"                                                            \
    "      requiredDuringSchedulingIgnoredDuringExecution:\n"                        \
    "        nodeSelectorTerms:\n"                                                   \
    "        - matchExpressions:\n"                                                  \
    "          - {key: gpu, operator: In, values: [a100, h100]}\n"                   \
    "          - {key: tier, operator: NotIn, values: [spot]}\n"                     \
    "        - matchExpressions:\n"                                                  \
    "          - {key: special, operator: Exists}\n"

static void test_node_affinity_terms_are_ored(void **state)
{
    (void)state;
    /* First term: In matches, NotIn holds (label absent). */
    assert_int_equal(fit(READY_NODE("  labels: {gpu: h100}\n", "") POD(TWO_TERM_AFFINITY)),
                     TLY_FIT_OK);
    /* First term fails on NotIn; the second (Exists) rescues it. */
    assert_int_equal(fit(READY_NODE("  labels: {gpu: h100, tier: spot, special: \"\"}\n", "")
                                   POD(TWO_TERM_AFFINITY)),
                     TLY_FIT_OK);
    /* First term fails on NotIn, second has no label: no term matches. */
    assert_int_equal(
        fit(READY_NODE("  labels: {gpu: h100, tier: spot}\n", "") POD(TWO_TERM_AFFINITY)),
        TLY_FIT_NODE_AFFINITY);
    /* In does not match a value outside the list. */
    assert_int_equal(fit(READY_NODE("  labels: {gpu: t4}\n", "") POD(TWO_TERM_AFFINITY)),
                     TLY_FIT_NODE_AFFINITY);
    assert_string_equal(tly_fit_result_text(TLY_FIT_NODE_AFFINITY),
                        "node(s) didn't match Pod's node affinity/selector");
}

static void test_node_selector_is_checked_before_affinity(void **state)
{
    (void)state;
    const char *y = READY_NODE("  labels: {gpu: t4}\n", "")
        POD("  nodeSelector: {pool: x}\n" TWO_TERM_AFFINITY);
    assert_int_equal(fit(y), TLY_FIT_NODE_SELECTOR);
}

static void test_affinity_term_with_match_fields_tests_the_node_name(void **state)
{
    (void)state;
    /* matchFields: metadata.name In / NotIn, ANDed with the term's expressions. */
#define FIELDS_POD(op, name, extra)                                                \
    POD("  affinity:\n"                                                             \
        "    nodeAffinity:\n"                                                       \
        "      requiredDuringSchedulingIgnoredDuringExecution:\n"                   \
        "        nodeSelectorTerms:\n"                                              \
        "        - matchFields:\n"                                                  \
        "          - {key: metadata.name, operator: " op ", values: [" name "]}\n" extra)
    const char *in_n = READY_NODE("  labels: {gpu: h100}\n", "") FIELDS_POD("In", "n", "");
    assert_int_equal(fit(in_n), TLY_FIT_OK);
    const char *in_other = READY_NODE("  labels: {gpu: h100}\n", "") FIELDS_POD("In", "other", "");
    assert_int_equal(fit(in_other), TLY_FIT_NODE_AFFINITY);
    const char *notin_n = READY_NODE("  labels: {gpu: h100}\n", "") FIELDS_POD("NotIn", "n", "");
    assert_int_equal(fit(notin_n), TLY_FIT_NODE_AFFINITY);
    const char *and_labels = READY_NODE("  labels: {gpu: h100}\n", "")
        FIELDS_POD("In", "n", "          matchExpressions:\n"
                              "          - {key: gpu, operator: In, values: [a100]}\n");
    assert_int_equal(fit(and_labels), TLY_FIT_NODE_AFFINITY);
#undef FIELDS_POD
}

#define GPU_TAINT "  taints:\n  - {key: nvidia.com/gpu, value: present, effect: NoSchedule}\n"

static void test_untolerated_no_schedule_taint_repels(void **state)
{
    (void)state;
    const tly_taint *t = NULL;
    tly_store *s = load_text("t.yaml", READY_NODE("", GPU_TAINT) POD(""));
    const tly_k8s_node *n = tly_store_find(s, TLY_K_NODE, NULL, "n");
    const tly_pod *p = tly_store_find(s, TLY_K_POD, "ns", "p");
    assert_int_equal(tly_nodefit_static(p, n, &t), TLY_FIT_TAINT);
    assert_non_null(t);
    assert_string_equal(t->key, "nvidia.com/gpu");
    /* taint may be NULL when the caller does not want it. */
    assert_int_equal(tly_nodefit_static(p, n, NULL), TLY_FIT_TAINT);
    tly_store_destroy(s);
    assert_string_equal(tly_fit_result_text(TLY_FIT_TAINT), "node(s) had untolerated taint(s)");
}

static void test_no_execute_taint_repels_too(void **state)
{
    (void)state;
    const char *y = READY_NODE("", "  taints:\n  - {key: drain, effect: NoExecute}\n") POD("");
    assert_int_equal(fit(y), TLY_FIT_TAINT);
}

static void test_prefer_no_schedule_taint_is_ignored(void **state)
{
    (void)state;
    const char *y =
        READY_NODE("", "  taints:\n  - {key: maintenance, effect: PreferNoSchedule}\n") POD("");
    assert_int_equal(fit(y), TLY_FIT_OK);
}

static void test_toleration_exists_matches_any_value(void **state)
{
    (void)state;
    const char *y = READY_NODE("", GPU_TAINT)
        POD("  tolerations:\n  - {key: nvidia.com/gpu, operator: Exists}\n");
    assert_int_equal(fit(y), TLY_FIT_OK);
}

static void test_toleration_equal_needs_the_same_value(void **state)
{
    (void)state;
    const char *same = READY_NODE("", GPU_TAINT)
        POD("  tolerations:\n  - {key: nvidia.com/gpu, operator: Equal, value: present}\n");
    /* The operator defaults to Equal. */
    const char *dflt = READY_NODE("", GPU_TAINT)
        POD("  tolerations:\n  - {key: nvidia.com/gpu, value: present}\n");
    const char *other = READY_NODE("", GPU_TAINT)
        POD("  tolerations:\n  - {key: nvidia.com/gpu, operator: Equal, value: absent}\n");
    const char *no_value = READY_NODE("", GPU_TAINT)
        POD("  tolerations:\n  - {key: nvidia.com/gpu, operator: Equal}\n");
    assert_int_equal(fit(same), TLY_FIT_OK);
    assert_int_equal(fit(dflt), TLY_FIT_OK);
    assert_int_equal(fit(other), TLY_FIT_TAINT);
    assert_int_equal(fit(no_value), TLY_FIT_TAINT);
}

static void test_toleration_effect_must_match_when_set(void **state)
{
    (void)state;
    const char *right = READY_NODE("", GPU_TAINT)
        POD("  tolerations:\n  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n");
    const char *wrong = READY_NODE("", GPU_TAINT)
        POD("  tolerations:\n  - {key: nvidia.com/gpu, operator: Exists, effect: NoExecute}\n");
    assert_int_equal(fit(right), TLY_FIT_OK);
    assert_int_equal(fit(wrong), TLY_FIT_TAINT);
}

static void test_every_filtering_taint_must_be_tolerated(void **state)
{
    (void)state;
    const char *y = READY_NODE("", "  taints:\n"
                                   "  - {key: a, effect: NoSchedule}\n"
                                   "  - {key: b, effect: NoExecute}\n")
        POD("  tolerations:\n  - {key: a, operator: Exists}\n");
    tly_store *s = load_text("t.yaml", y);
    const tly_taint *t = NULL;
    assert_int_equal(tly_nodefit_static(tly_store_find(s, TLY_K_POD, "ns", "p"),
                                        tly_store_find(s, TLY_K_NODE, NULL, "n"), &t),
                     TLY_FIT_TAINT);
    assert_non_null(t);
    assert_string_equal(t->key, "b");
    tly_store_destroy(s);
}

static void test_empty_key_exists_tolerates_everything(void **state)
{
    (void)state;
    const char *y = READY_NODE("", "  taints:\n"
                                   "  - {key: a, value: x, effect: NoSchedule}\n"
                                   "  - {key: b, effect: NoExecute}\n")
        POD("  tolerations:\n  - {operator: Exists}\n");
    assert_int_equal(fit(y), TLY_FIT_OK);
}

static void test_tolerates_directly(void **state)
{
    (void)state;
    tly_taint t = {.key = "k", .value = "v", .effect = "NoSchedule"};
    assert_false(tly_tolerates(NULL, 0, &t));
    tly_toleration tol[2] = {
        {.key = "other", .op = "Exists"},
        {.key = "k", .op = NULL, .value = "v"},  /* operator unset means Equal */
    };
    assert_true(tly_tolerates(tol, 2, &t));
    assert_false(tly_tolerates(tol, 1, &t));
    /* Empty value on both sides: Equal holds. */
    tly_taint novalue = {.key = "k", .value = NULL, .effect = "NoExecute"};
    tly_toleration eq = {.key = "k", .op = "Equal", .value = NULL};
    assert_true(tly_tolerates(&eq, 1, &novalue));
}

/* ---------------------------------------------------------------------- */
/* Node GPU memory                                                        */
/* ---------------------------------------------------------------------- */

static void test_gpu_memory_label_is_floored_to_100_mib(void **state)
{
    (void)state;
    assert_int_equal(label_mem("143771"), 143700);  /* H200 */
    assert_int_equal(label_mem("81920"), 81900);    /* A100 80GB */
    assert_int_equal(label_mem("100"), 100);
    assert_int_equal(label_mem("99"), 0);
    assert_int_equal(label_mem("+81920"), 81900);  /* ParseInt takes a sign */
}

static void test_gpu_memory_label_in_bytes_is_converted(void **state)
{
    (void)state;
    /*
    ** 80 GiB in bytes: at least 1 TiB-in-MiB, so it is bytes: 81920 MiB,
    ** which KAI then floors like any other value (getNodeGpuMemory floors
    ** after the conversion).
    */
    assert_int_equal(label_mem("85899345920"), 81900);
    /* Just below the threshold is still MiB. */
    assert_int_equal(label_mem("1048575"), 1048500);
    assert_int_equal(label_mem("1048576"), 0);  /* 1 MiB in bytes, floored */
}

static void test_gpu_memory_missing_or_bad_label_is_zero(void **state)
{
    (void)state;
    tly_store *s = load_text("t.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n");
    assert_int_equal(tly_node_gpu_memory_mib(tly_store_find(s, TLY_K_NODE, NULL, "n")), 0);
    tly_store_destroy(s);
    assert_int_equal(label_mem(""), 0);
    assert_int_equal(label_mem("80Gi"), 0);
    assert_int_equal(label_mem("-81920"), 0);
    assert_int_equal(label_mem("819.2"), 0);
    assert_int_equal(label_mem("+"), 0);
    assert_int_equal(label_mem("9223372036854775808"), 0);  /* beyond int64 */
    assert_int_equal(label_mem("99999999999999999999999"), 0);
}

/* ---------------------------------------------------------------------- */
/* GPU devices                                                            */
/* ---------------------------------------------------------------------- */

static void test_devices_come_from_allocatable(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "8", "81920");
    assert_int_equal(g.ndev, 8);
    assert_int_equal(g.mem_mib, 81900);
    for (uint32_t i = 0; i < g.ndev; i++) {
        assert_int_equal(g.free[i], 100);
        assert_int_equal(g.free_mem[i], 81900);
        assert_false(g.shared[i]);
    }
    assert_int_equal(tly_gpus_whole_free(&g), 8);
    assert_int_equal(tly_gpus_used_hundredths(&g), 0);
    tly_gpus_free(&g);

    gpus_of("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
            "status:\n  allocatable: {amd.com/gpu: \"4\"}\n",
            &g);
    assert_int_equal(g.ndev, 4);
    assert_int_equal(g.mem_mib, 0);
    tly_gpus_free(&g);

    gpus_of("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
            "status:\n  allocatable: {cpu: \"4\"}\n",
            &g);
    assert_int_equal(g.ndev, 0);
    tly_podreq one = whole(1);
    assert_false(tly_gpus_place(&g, &one, true));
    tly_gpus_free(&g);
}

static void test_whole_gpus_take_lowest_free_devices_until_exhausted(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "4", "81920");
    tly_podreq two = whole(2), three = whole(3);
    assert_true(tly_gpus_place(&g, &two, true));
    assert_int_equal(g.free[0], 0);
    assert_int_equal(g.free[1], 0);
    assert_int_equal(g.free_mem[0], 0);
    assert_int_equal(g.free[2], 100);
    assert_int_equal(tly_gpus_whole_free(&g), 2);
    assert_int_equal(tly_gpus_used_hundredths(&g), 200);
    /* Three do not fit in the two left; nothing changes. */
    assert_false(tly_gpus_place(&g, &three, true));
    assert_int_equal(tly_gpus_whole_free(&g), 2);
    assert_true(tly_gpus_place(&g, &two, true));
    assert_int_equal(tly_gpus_whole_free(&g), 0);
    assert_int_equal(tly_gpus_used_hundredths(&g), 400);
    tly_podreq one = whole(1);
    assert_false(tly_gpus_place(&g, &one, true));
    tly_gpus_free(&g);
}

static void test_two_halves_share_one_device(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "2", "81920");
    tly_podreq half = fraction(50, 1);
    assert_true(tly_gpus_place(&g, &half, true));
    assert_true(tly_gpus_place(&g, &half, true));
    assert_int_equal(g.free[0], 0);
    assert_true(g.shared[0]);
    assert_int_equal(g.free_mem[0], 81900 - 2 * 40950);
    assert_int_equal(g.free[1], 100);
    assert_false(g.shared[1]);
    assert_int_equal(tly_gpus_used_hundredths(&g), 100);
    tly_gpus_free(&g);
}

static void test_point_seven_then_half_need_two_devices(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "2", "81920");
    tly_podreq a = fraction(70, 1), b = fraction(50, 1);
    assert_true(tly_gpus_place(&g, &a, true));
    assert_true(tly_gpus_place(&g, &b, true));
    assert_int_equal(g.free[0], 30);
    assert_int_equal(g.free[1], 50);
    assert_int_equal(tly_gpus_used_hundredths(&g), 120);
    assert_int_equal(tly_gpus_whole_free(&g), 0);
    tly_gpus_free(&g);
}

static void test_fractions_bin_pack_onto_the_fullest_shared_device(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "3", "81920");
    tly_podreq p60 = fraction(60, 1), p50 = fraction(50, 1), p20 = fraction(20, 1);
    assert_true(tly_gpus_place(&g, &p60, true));  /* dev 0: 40 free */
    assert_true(tly_gpus_place(&g, &p50, true));  /* dev 1: 50 free */
    /* 0.2 fits both; dev 0 has the least room, so it goes there. */
    assert_true(tly_gpus_place(&g, &p20, true));
    assert_int_equal(g.free[0], 20);
    assert_int_equal(g.free[1], 50);
    assert_int_equal(g.free[2], 100);
    tly_gpus_free(&g);
}

static void test_whole_gpu_cannot_use_a_shared_device(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "1", "81920");
    tly_podreq tiny = fraction(1, 1), one = whole(1);
    assert_true(tly_gpus_place(&g, &tiny, true));
    assert_int_equal(tly_gpus_whole_free(&g), 0);
    assert_false(tly_gpus_place(&g, &one, false));
    tly_gpus_free(&g);

    /* Nor can a fraction use a device a whole-GPU pod holds. */
    gpu_node(&g, "1", "81920");
    assert_true(tly_gpus_place(&g, &one, true));
    assert_false(tly_gpus_place(&g, &tiny, false));
    tly_gpus_free(&g);
}

static void test_num_devices_needs_distinct_devices(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "2", "81920");
    tly_podreq two_halves = fraction(50, 2);
    assert_true(tly_gpus_place(&g, &two_halves, true));
    assert_int_equal(g.free[0], 50);
    assert_int_equal(g.free[1], 50);
    assert_true(g.shared[0]);
    assert_true(g.shared[1]);
    tly_gpus_free(&g);

    /* 0.3 on each of two devices does not fit on one device with 1.0 free. */
    gpu_node(&g, "1", "81920");
    tly_podreq two_small = fraction(30, 2);
    assert_false(tly_gpus_place(&g, &two_small, true));
    assert_int_equal(g.free[0], 100);
    assert_false(g.shared[0]);
    tly_gpus_free(&g);
}

static void test_gpu_memory_request_charges_ceil_hundredths(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "1", "81920");
    tly_podreq m = gpu_memory(20000, 1);
    assert_true(tly_gpus_place(&g, &m, true));
    /* ceil(100 * 20000 / 81900) = ceil(24.42) = 25 */
    assert_int_equal(g.free[0], 75);
    assert_int_equal(g.free_mem[0], 81900 - 20000);
    assert_true(g.shared[0]);
    assert_int_equal(tly_gpus_used_hundredths(&g), 25);
    /* Three more fit by hundredths (4 x 25 = 100) and by memory (80000). */
    assert_true(tly_gpus_place(&g, &m, true));
    assert_true(tly_gpus_place(&g, &m, true));
    assert_true(tly_gpus_place(&g, &m, true));
    assert_int_equal(g.free[0], 0);
    assert_int_equal(g.free_mem[0], 1900);
    assert_false(tly_gpus_place(&g, &m, false));
    tly_gpus_free(&g);
}

static void test_gpu_memory_needs_the_memory_not_only_the_hundredths(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "1", "1000");
    /* Set by hand: 50 hundredths free but only 300 MiB (charged elsewhere). */
    g.shared[0] = true;
    g.free[0] = 50;
    g.free_mem[0] = 300;
    tly_podreq m = gpu_memory(400, 1);  /* 40 hundredths, 400 MiB */
    assert_false(tly_gpus_place(&g, &m, true));
    tly_podreq small = gpu_memory(300, 1);
    assert_true(tly_gpus_place(&g, &small, true));
    assert_int_equal(g.free[0], 20);
    assert_int_equal(g.free_mem[0], 0);
    tly_gpus_free(&g);
}

static void test_gpu_memory_without_the_label_does_not_fit(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "8", NULL);
    assert_int_equal(g.mem_mib, 0);
    tly_podreq m = gpu_memory(1, 1);
    assert_false(tly_gpus_place(&g, &m, true));
    /* A fraction still fits; free memory stays 0 as there is none known. */
    tly_podreq half = fraction(50, 1);
    assert_true(tly_gpus_place(&g, &half, true));
    assert_int_equal(g.free[0], 50);
    assert_int_equal(g.free_mem[0], 0);
    tly_gpus_free(&g);
}

static void test_gpu_memory_larger_than_the_device_does_not_fit(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "2", "81920");
    tly_podreq m = gpu_memory(81901, 1);
    assert_false(tly_gpus_place(&g, &m, true));
    tly_podreq exact = gpu_memory(81900, 1);
    assert_true(tly_gpus_place(&g, &exact, true));
    assert_int_equal(g.free[0], 0);
    /* A device filled by shared work is still not a whole free device. */
    assert_int_equal(tly_gpus_whole_free(&g), 1);
    tly_gpus_free(&g);
}

static void test_none_and_mig_always_place(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "0", "81920");
    tly_podreq r;
    memset(&r, 0, sizeof r);
    r.gpu_kind = TLY_GPU_NONE;
    assert_true(tly_gpus_place(&g, &r, true));
    r.gpu_kind = TLY_GPU_MIG;
    r.mig_gpus = 3;
    assert_true(tly_gpus_place(&g, &r, true));
    assert_int_equal(g.ndev, 0);
    tly_gpus_free(&g);
}

static void test_check_only_leaves_state_untouched(void **state)
{
    (void)state;
    tly_gpus g, before;
    gpu_node(&g, "3", "81920");
    tly_podreq a = fraction(70, 1), w = whole(1);
    assert_true(tly_gpus_place(&g, &a, true));
    tly_gpus_copy(&before, &g);
    tly_podreq reqs[] = {whole(2), whole(3), fraction(20, 1), fraction(50, 3),
                         gpu_memory(20000, 2), gpu_memory(90000, 1)};
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        (void)tly_gpus_place(&g, &reqs[i], false);
        assert_memory_equal(g.free, before.free, 3 * sizeof *g.free);
        assert_memory_equal(g.free_mem, before.free_mem, 3 * sizeof *g.free_mem);
        assert_memory_equal(g.shared, before.shared, 3 * sizeof *g.shared);
    }
    assert_true(tly_gpus_place(&g, &w, false));
    assert_int_equal(tly_gpus_whole_free(&g), 2);
    tly_gpus_free(&before);
    tly_gpus_free(&g);
}

static void test_copy_is_deep(void **state)
{
    (void)state;
    tly_gpus g, c;
    gpu_node(&g, "2", "81920");
    memset(&c, 0xa5, sizeof c);  /* the destination may be uninitialised */
    tly_gpus_copy(&c, &g);
    assert_int_equal(c.ndev, 2);
    assert_int_equal(c.mem_mib, 81900);
    assert_ptr_not_equal(c.free, g.free);
    tly_podreq w = whole(1), half = fraction(50, 1);
    assert_true(tly_gpus_place(&c, &w, true));
    assert_true(tly_gpus_place(&c, &half, true));
    /* The original is unchanged. */
    assert_int_equal(tly_gpus_whole_free(&g), 2);
    assert_int_equal(g.free[0], 100);
    assert_int_equal(g.free[1], 100);
    assert_false(g.shared[1]);
    assert_int_equal(tly_gpus_used_hundredths(&c), 150);
    tly_gpus_free(&c);
    tly_gpus_free(&g);
    assert_int_equal(g.ndev, 0);
    assert_null(g.free);
}

/* ---------------------------------------------------------------------- */
/* The running pods' layout                                               */
/* ---------------------------------------------------------------------- */

/* The node's free hundredths per device, sorted (which index is which does not matter). */
static void sorted_free(const tly_gpus *g, uint32_t *out)
{
    for (uint32_t i = 0; i < g->ndev; i++)
        out[i] = g->free[i];
    for (uint32_t i = 1; i < g->ndev; i++)
        for (uint32_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
            uint32_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
}

static void test_layout_packs_ungrouped_shares_whatever_their_order(void **state)
{
    (void)state;
    /* 0.5, 0.3, 0.5, 0.7 on 2 devices: 0.7 + 0.3 and 0.5 + 0.5, in every order. */
    tly_podreq r[4] = {fraction(50, 1), fraction(30, 1), fraction(50, 1), fraction(70, 1)};
    static const uint8_t perm[][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}, {2, 3, 0, 1}, {0, 2, 1, 3}};
    for (size_t k = 0; k < sizeof perm / sizeof perm[0]; k++) {
        tly_gpus g;
        gpu_node(&g, "2", "81920");
        tly_gpu_use u[4];
        for (int i = 0; i < 4; i++)
            u[i] = (tly_gpu_use){&r[perm[k][i]], NULL, 0};
        assert_int_equal(tly_gpus_layout(&g, u, 4), 0);
        assert_int_equal(g.free[0], 0);
        assert_int_equal(g.free[1], 0);
        tly_podreq tenth = fraction(10, 1);
        assert_false(tly_gpus_place(&g, &tenth, false));
        tly_gpus_free(&g);
    }
}

static void test_layout_gives_each_gpu_group_its_own_device(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "2", "81920");
    tly_podreq half = fraction(50, 1);
    const char *g1[] = {"group-1"}, *g2[] = {"group-2"};
    tly_gpu_use u[2] = {{&half, g1, 1}, {&half, g2, 1}};
    assert_int_equal(tly_gpus_layout(&g, u, 2), 0);
    assert_int_equal(g.free[0], 50);
    assert_int_equal(g.free[1], 50);
    tly_podreq one = whole(1), other_half = fraction(50, 1);
    assert_false(tly_gpus_place(&g, &one, false));
    assert_true(tly_gpus_place(&g, &other_half, false));
    tly_gpus_free(&g);
}

static void test_layout_sums_one_group_on_one_device(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "2", "81920");
    tly_podreq a = fraction(30, 1), b = fraction(40, 1);
    const char *grp[] = {"shared"};
    tly_gpu_use u[2] = {{&a, grp, 1}, {&b, grp, 1}};
    assert_int_equal(tly_gpus_layout(&g, u, 2), 0);
    uint32_t f[2];
    sorted_free(&g, f);
    assert_int_equal(f[0], 30);
    assert_int_equal(f[1], 100);
    assert_int_equal(tly_gpus_whole_free(&g), 1);
    tly_gpus_free(&g);
}

static void test_layout_multi_device_fraction_takes_each_of_its_groups(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "3", "81920");
    tly_podreq two = fraction(50, 2);
    const char *grp[] = {"g-a", "g-b"};
    tly_gpu_use u[1] = {{&two, grp, 2}};
    assert_int_equal(tly_gpus_layout(&g, u, 1), 0);
    uint32_t f[3];
    sorted_free(&g, f);
    assert_int_equal(f[0], 50);
    assert_int_equal(f[1], 50);
    assert_int_equal(f[2], 100);
    tly_gpus_free(&g);
}

static void test_layout_whole_gpus_before_groups(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "2", "81920");
    tly_podreq one = whole(1), tenth = fraction(10, 1);
    const char *grp[] = {"g"};
    tly_gpu_use u[2] = {{&tenth, grp, 1}, {&one, NULL, 0}};
    assert_int_equal(tly_gpus_layout(&g, u, 2), 0);
    assert_int_equal(tly_gpus_whole_free(&g), 0);
    assert_int_equal(tly_gpus_used_hundredths(&g), 110);
    tly_gpus_free(&g);
}

static void test_layout_of_an_over_full_node_offers_nothing_more(void **state)
{
    (void)state;
    /* Three 0.6 shares cannot be laid out on two devices: the third is forced. */
    tly_gpus g;
    gpu_node(&g, "2", "81920");
    tly_podreq r = fraction(60, 1);
    tly_gpu_use u[3] = {{&r, NULL, 0}, {&r, NULL, 0}, {&r, NULL, 0}};
    assert_int_equal(tly_gpus_layout(&g, u, 3), 1);
    uint32_t f[2];
    sorted_free(&g, f);
    assert_int_equal(f[0], 0);
    assert_int_equal(f[1], 40);
    tly_gpus_free(&g);
    /* Three groups on two devices; more whole GPUs than the node has. */
    gpu_node(&g, "2", "81920");
    const char *a[] = {"a"}, *b[] = {"b"}, *c[] = {"c"};
    tly_podreq half = fraction(50, 1), three = whole(3);
    tly_gpu_use v[3] = {{&half, a, 1}, {&half, b, 1}, {&half, c, 1}};
    assert_int_equal(tly_gpus_layout(&g, v, 3), 1);
    assert_int_equal(tly_gpus_used_hundredths(&g), 150);
    tly_gpus_free(&g);
    gpu_node(&g, "2", "81920");
    tly_gpu_use w[2] = {{&three, NULL, 0}, {&half, a, 1}};
    assert_int_equal(tly_gpus_layout(&g, w, 2), 2);
    assert_int_equal(tly_gpus_used_hundredths(&g), 200);
    tly_gpus_free(&g);
}

static void test_layout_gpu_memory_pod_charges_its_memory(void **state)
{
    (void)state;
    tly_gpus g;
    gpu_node(&g, "1", "81920");
    tly_podreq m = gpu_memory(40000, 1);
    const char *grp[] = {"g"};
    tly_gpu_use u[1] = {{&m, grp, 1}};
    assert_int_equal(tly_gpus_layout(&g, u, 1), 0);
    assert_int_equal(g.free[0], 100 - 49);  /* ceil(100 x 40000 / 81900) = 49 */
    assert_int_equal(g.free_mem[0], 81900 - 40000);
    tly_gpus_free(&g);
    /* Unknown GPU memory: the running gpu-memory pod is taken to fill its device. */
    gpu_node(&g, "2", NULL);
    tly_gpu_use v[1] = {{&m, NULL, 0}};
    assert_int_equal(tly_gpus_layout(&g, v, 1), 0);
    assert_int_equal(tly_gpus_used_hundredths(&g), 100);
    tly_gpus_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_pod_fits_plain_ready_node),
        cmocka_unit_test(test_layout_packs_ungrouped_shares_whatever_their_order),
        cmocka_unit_test(test_layout_gives_each_gpu_group_its_own_device),
        cmocka_unit_test(test_layout_sums_one_group_on_one_device),
        cmocka_unit_test(test_layout_multi_device_fraction_takes_each_of_its_groups),
        cmocka_unit_test(test_layout_whole_gpus_before_groups),
        cmocka_unit_test(test_layout_of_an_over_full_node_offers_nothing_more),
        cmocka_unit_test(test_layout_gpu_memory_pod_charges_its_memory),
        cmocka_unit_test(test_cordoned_node_is_unschedulable),
        cmocka_unit_test(test_cordon_is_reported_before_not_ready),
        cmocka_unit_test(test_node_not_ready_false_unknown_or_missing),
        cmocka_unit_test(test_node_selector_every_pair_must_match),
        cmocka_unit_test(test_node_affinity_terms_are_ored),
        cmocka_unit_test(test_node_selector_is_checked_before_affinity),
        cmocka_unit_test(test_affinity_term_with_match_fields_tests_the_node_name),
        cmocka_unit_test(test_untolerated_no_schedule_taint_repels),
        cmocka_unit_test(test_no_execute_taint_repels_too),
        cmocka_unit_test(test_prefer_no_schedule_taint_is_ignored),
        cmocka_unit_test(test_toleration_exists_matches_any_value),
        cmocka_unit_test(test_toleration_equal_needs_the_same_value),
        cmocka_unit_test(test_toleration_effect_must_match_when_set),
        cmocka_unit_test(test_every_filtering_taint_must_be_tolerated),
        cmocka_unit_test(test_empty_key_exists_tolerates_everything),
        cmocka_unit_test(test_tolerates_directly),
        cmocka_unit_test(test_gpu_memory_label_is_floored_to_100_mib),
        cmocka_unit_test(test_gpu_memory_label_in_bytes_is_converted),
        cmocka_unit_test(test_gpu_memory_missing_or_bad_label_is_zero),
        cmocka_unit_test(test_devices_come_from_allocatable),
        cmocka_unit_test(test_whole_gpus_take_lowest_free_devices_until_exhausted),
        cmocka_unit_test(test_two_halves_share_one_device),
        cmocka_unit_test(test_point_seven_then_half_need_two_devices),
        cmocka_unit_test(test_fractions_bin_pack_onto_the_fullest_shared_device),
        cmocka_unit_test(test_whole_gpu_cannot_use_a_shared_device),
        cmocka_unit_test(test_num_devices_needs_distinct_devices),
        cmocka_unit_test(test_gpu_memory_request_charges_ceil_hundredths),
        cmocka_unit_test(test_gpu_memory_needs_the_memory_not_only_the_hundredths),
        cmocka_unit_test(test_gpu_memory_without_the_label_does_not_fit),
        cmocka_unit_test(test_gpu_memory_larger_than_the_device_does_not_fit),
        cmocka_unit_test(test_none_and_mig_always_place),
        cmocka_unit_test(test_check_only_leaves_state_untouched),
        cmocka_unit_test(test_copy_is_deep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
