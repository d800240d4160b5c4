/*
** test_decode_crd.c: the decoders of the custom and DRA kinds, read through
** the real loader and store: Queue, AccountedResource, kruntimes Runtime and
** Run, and resource.k8s.io ResourceClaim, ResourceClaimTemplate,
** ResourceSlice and DeviceClass.
**
** Each test loads YAML text with tly_store_load_string() and
** tly_store_finish(), then checks the typed struct (tly_store_find) and the
** diagnostics: severity, line, column, field path and exact message, since
** those are what `tally validate` prints (contract section 4).
**
** Every AccountedResource and Queue example of the seed
** (kai-accounted-resource-api.txt) is here verbatim; the rules tested are
** the seed's and contract section 2's (one-of, compatibility, units,
** duplicate resourceRef, the Run request literal rule).
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tally/diag.h"
#include "tally/node.h"
#include "tally/objects.h"
#include "tally/quantity.h"
#include "tally/resource.h"
#include "tally/store.h"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

static tly_store *g_store;

static int teardown(void **state)
{
    (void)state;
    if (g_store)
        tly_store_destroy(g_store);
    g_store = NULL;
    return 0;
}

/* Loads `yaml` as the file "in.yaml" into a fresh store and finishes it. */
static tly_store *load(const char *yaml)
{
    if (g_store)
        tly_store_destroy(g_store);
    g_store = tly_store_create();
    tly_store_load_string(g_store, "in.yaml", yaml, strlen(yaml));
    tly_store_finish(g_store);
    return g_store;
}

static void print_diags(tly_store *s)
{
    tly_diags_print(stderr, tly_store_diags(s), TLY_SEV_NOTE);
}

/* Diagnostics of severity >= min. */
static size_t ndiags(tly_store *s, tly_severity min)
{
    const tly_diags *d = tly_store_diags(s);
    size_t n = 0;
    for (size_t i = 0; i < tly_diags_count(d); i++)
        n += tly_diags_get(d, i)->sev >= min;
    return n;
}

static void assert_no_diags(tly_store *s)
{
    if (tly_diags_count(tly_store_diags(s)) != 0) {
        print_diags(s);
        fail_msg("expected no diagnostics");
    }
}

/* The first diagnostic at `field` (NULL: the first without a field), or NULL. */
static const tly_diag *diag_at(tly_store *s, const char *field)
{
    const tly_diags *d = tly_store_diags(s);
    for (size_t i = 0; i < tly_diags_count(d); i++) {
        const tly_diag *g = tly_diags_get(d, i);
        if (field ? (g->field && strcmp(g->field, field) == 0) : !g->field)
            return g;
    }
    return NULL;
}

/*
** Asserts a diagnostic of severity `sev` at `field` with exactly `msg`;
** line 0 skips the position check.
*/
static void expect_diag(tly_store *s, tly_severity sev, const char *field, const char *msg,
                        uint32_t line, uint32_t col)
{
    const tly_diags *d = tly_store_diags(s);
    for (size_t i = 0; i < tly_diags_count(d); i++) {
        const tly_diag *g = tly_diags_get(d, i);
        if (g->sev != sev || !g->field || strcmp(g->field, field) != 0 ||
            strcmp(g->msg, msg) != 0)
            continue;
        if (line && (g->line != line || g->col != col)) {
            print_diags(s);
            fail_msg("%s: \"%s\" at %u:%u, expected %u:%u", field, msg, g->line, g->col, line,
                     col);
        }
        return;
    }
    print_diags(s);
    fail_msg("no %s at %s: \"%s\"", sev == TLY_SEV_ERROR ? "error" : "warning", field, msg);
}

#define expect_error(s, field, msg) expect_diag(s, TLY_SEV_ERROR, field, msg, 0, 0)

/* Asserts the only error (any warnings aside) is at `field` and starts with `prefix`. */
static void expect_one_error_prefix(tly_store *s, const char *field, const char *prefix)
{
    if (ndiags(s, TLY_SEV_ERROR) != 1) {
        print_diags(s);
        fail_msg("expected exactly one error, at %s", field);
    }
    const tly_diag *g = diag_at(s, field);
    if (!g || g->sev != TLY_SEV_ERROR || strncmp(g->msg, prefix, strlen(prefix)) != 0) {
        print_diags(s);
        fail_msg("expected an error at %s starting \"%s\"", field, prefix);
    }
}

static const char *qstr(tly_qty q)
{
    static char buf[4][TLY_QTY_BUFSZ];
    static int k;
    k = (k + 1) % 4;
    tly_qty_format(q, buf[k], sizeof buf[k]);
    return buf[k];
}

static tly_queue *queue(tly_store *s, const char *name)
{
    tly_queue *q = tly_store_find(s, TLY_K_QUEUE, NULL, name);
    assert_non_null(q);
    return q;
}

static tly_accres *accres(tly_store *s, const char *name)
{
    tly_accres *a = tly_store_find(s, TLY_K_ACCOUNTED_RESOURCE, NULL, name);
    assert_non_null(a);
    return a;
}

static tly_run *run(tly_store *s, const char *name)
{
    tly_run *r = tly_store_find(s, TLY_K_RUN, "default", name);
    assert_non_null(r);
    return r;
}

#define QUEUE_HEAD                                                                             \
    "apiVersion: scheduling.run.ai/v2\n"                                                       \
    "kind: Queue\n"                                                                            \
    "metadata:\n"                                                                              \
    "  name: q\n"

#define ACCRES_HEAD                                                                            \
    "apiVersion: scheduling.run.ai/v1alpha1\n"                                                 \
    "kind: AccountedResource\n"                                                                \
    "metadata:\n"                                                                              \
    "  name: ar\n"

#define RUN_HEAD                                                                               \
    "apiVersion: kruntimes.io/v1alpha1\n"                                                      \
    "kind: Run\n"                                                                              \
    "metadata:\n"                                                                              \
    "  name: r\n"

/* A Run with the given requests map lines (indented 6) and a task mode. */
#define RUN_WITH_REQUESTS(lines)                                                               \
    RUN_HEAD "spec:\n"                                                                         \
             "  runtime: python\n"                                                             \
             "  resources:\n"                                                                  \
             "    requests:\n" lines "  mode:\n"                                               \
             "    task:\n"                                                                     \
             "      args: [\"python\", \"train.py\"]\n"

/* ---------------------------------------------------------------------- */
/* Seed examples                                                          */
/* ---------------------------------------------------------------------- */

static const char *const seed_accres[] = {
    /* Generic GPU count */
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: AccountedResource\n"
    "metadata:\n"
    "  name: gpu\n"
    "spec:\n"
    "  defaults:\n"
    "    limit: \"-1\"\n"
    "  sources:\n"
    "  - resourceName: nvidia.com/gpu\n",
    /* H200 GPUs through device plugin resource plus node label */
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: AccountedResource\n"
    "metadata:\n"
    "  name: gpu-h200\n"
    "spec:\n"
    "  defaults:\n"
    "    limit: \"-1\"\n"
    "  sources:\n"
    "  - resourceName: nvidia.com/gpu\n"
    "    match:\n"
    "      nodeLabels:\n"
    "        nvidia.com/gpu.product: H200\n",
    /* GB200 GPUs through DRA */
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: AccountedResource\n"
    "metadata:\n"
    "  name: gpu-gb200\n"
    "spec:\n"
    "  defaults:\n"
    "    limit: \"-1\"\n"
    "  sources:\n"
    "  - dra:\n"
    "      deviceClassName: gpu.nvidia.com\n"
    "    match:\n"
    "      dra:\n"
    "        deviceAttributes:\n"
    "          productName:\n"
    "            string: GB200\n",
    /* EFA extended resource */
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: AccountedResource\n"
    "metadata:\n"
    "  name: efa\n"
    "spec:\n"
    "  defaults:\n"
    "    limit: \"-1\"\n"
    "  sources:\n"
    "  - resourceName: vpc.amazonaws.com/efa\n",
    /* GPU memory from DRA selected capacity, DRA opaque config, or pod annotation */
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: AccountedResource\n"
    "metadata:\n"
    "  name: gpu-memory\n"
    "spec:\n"
    "  defaults:\n"
    "    limit: \"-1\"\n"
    "  sources:\n"
    "  - dra:\n"
    "      deviceClassName: gpu.nvidia.com\n"
    "    quantity:\n"
    "      dra:\n"
    "        selectedCapacity:\n"
    "          capacityName: memory\n"
    "  - dra:\n"
    "      deviceClassName: gpu.nvidia.com\n"
    "    quantity:\n"
    "      dra:\n"
    "        opaqueConfigField:\n"
    "          driver: gpu.nvidia.com\n"
    "          path: sharing.mpsConfig.defaultPinnedDeviceMemoryLimit\n"
    "          unit: Mi\n"
    "  - podAnnotation:\n"
    "      key: gpu-memory\n"
    "      unit: Mi\n",
    /* GPU memory and GPU compute: the annotation-only pair */
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: AccountedResource\n"
    "metadata:\n"
    "  name: gpu-memory\n"
    "spec:\n"
    "  defaults:\n"
    "    limit: \"-1\"\n"
    "  sources:\n"
    "  - podAnnotation:\n"
    "      key: gpu-memory\n"
    "      unit: Mi\n"
    "---\n"
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: AccountedResource\n"
    "metadata:\n"
    "  name: gpu-compute\n"
    "spec:\n"
    "  defaults:\n"
    "    limit: \"-1\"\n"
    "  sources:\n"
    "  - podAnnotation:\n"
    "      key: gpu-compute\n"
    "      unit: percent\n",
};

static const char *const seed_queues[] = {
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: Queue\n"
    "metadata:\n"
    "  name: team-a\n"
    "spec:\n"
    "  accountedResources:\n"
    "  - resourceRef: gpu\n"
    "    limit: \"16\"\n"
    "  - resourceRef: gpu-h200\n"
    "    limit: \"4\"\n",
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: Queue\n"
    "metadata:\n"
    "  name: team-a\n"
    "spec:\n"
    "  accountedResources:\n"
    "  - resourceRef: gpu-memory\n"
    "    limit: \"320Gi\"\n",
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: Queue\n"
    "metadata:\n"
    "  name: team-a\n"
    "spec:\n"
    "  accountedResources:\n"
    "  - resourceRef: gpu-h200\n"
    "    limit: \"2\"\n",
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: Queue\n"
    "metadata:\n"
    "  name: team-a\n"
    "spec:\n"
    "  accountedResources:\n"
    "  - resourceRef: gpu-memory\n"
    "    limit: \"320Gi\"\n"
    "  - resourceRef: gpu-compute\n"
    "    limit: \"400\"\n",
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: Queue\n"
    "metadata:\n"
    "  name: team-a\n"
    "spec:\n"
    "  accountedResources:\n"
    "  - resourceRef: efa\n"
    "    limit: \"32\"\n",
    "apiVersion: scheduling.run.ai/v1alpha1\n"
    "kind: Queue\n"
    "metadata:\n"
    "  name: team-a\n"
    "spec:\n"
    "  accountedResources:\n"
    "  - resourceRef: gpu\n"
    "    limit: \"16\"\n"
    "  - resourceRef: gpu-h200\n"
    "    limit: \"4\"\n"
    "  - resourceRef: gpu-memory\n"
    "    limit: \"320Gi\"\n",
};

static void test_accres_seed_examples_decode_without_diagnostics(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof seed_accres / sizeof seed_accres[0]; i++) {
        tly_store *s = load(seed_accres[i]);
        assert_no_diags(s);
        assert_true(tly_store_count(s, TLY_K_ACCOUNTED_RESOURCE) >= 1);
        for (uint32_t k = 0; k < tly_store_count(s, TLY_K_ACCOUNTED_RESOURCE); k++) {
            tly_accres *a = tly_store_at(s, TLY_K_ACCOUNTED_RESOURCE, k);
            assert_true(a->has_default_limit);
            assert_string_equal(qstr(a->default_limit), "-1");
            assert_true(a->nsources >= 1);
            for (uint32_t j = 0; j < a->nsources; j++)
                assert_int_not_equal(a->sources[j].kind, TLY_SRC_NONE);
        }
    }
}

/*
** The seed's queues set only accountedResources: they are valid for the API
** server, and the one remark is the contract's warning for a queue without
** spec.resources.
*/
static void test_queue_seed_examples_have_no_errors_only_the_resources_warning(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof seed_queues / sizeof seed_queues[0]; i++) {
        tly_store *s = load(seed_queues[i]);
        assert_int_equal(ndiags(s, TLY_SEV_ERROR), 0);
        assert_int_equal(tly_diags_count(tly_store_diags(s)), 1);
        expect_diag(s, TLY_SEV_WARNING, "spec.resources", "resources must be specified", 5, 1);
        tly_queue *q = queue(s, "team-a");
        assert_true(q->naccrefs >= 1);
        for (uint32_t j = 0; j < q->naccrefs; j++)
            assert_true(q->accrefs[j].has_limit);
    }
}

static void test_accres_seed_gpu_memory_sources_in_detail(void **state)
{
    (void)state;
    tly_store *s = load(seed_accres[4]);
    tly_accres *a = accres(s, "gpu-memory");
    assert_int_equal(a->nsources, 3);

    tly_accsrc *c = &a->sources[0];
    assert_int_equal(c->kind, TLY_SRC_DRA);
    assert_string_equal(c->device_class, "gpu.nvidia.com");
    assert_int_equal(c->qkind, TLY_QSRC_DRA_CAPACITY);
    assert_string_equal(c->capacity_name, "memory");
    assert_int_equal(c->src.line, 9);
    assert_int_equal(c->src.col, 5);

    c = &a->sources[1];
    assert_int_equal(c->qkind, TLY_QSRC_DRA_OPAQUE);
    assert_string_equal(c->opaque_driver, "gpu.nvidia.com");
    assert_string_equal(c->opaque_path, "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit");
    assert_string_equal(c->opaque_unit, "Mi");

    c = &a->sources[2];
    assert_int_equal(c->kind, TLY_SRC_POD_ANNOTATION);
    assert_string_equal(c->annotation_key, "gpu-memory");
    assert_string_equal(c->annotation_unit, "Mi");
    assert_int_equal(c->qkind, TLY_QSRC_NONE);
}

static void test_accres_seed_match_rules_are_kept(void **state)
{
    (void)state;
    tly_store *s = load(seed_accres[1]);
    tly_accsrc *c = &accres(s, "gpu-h200")->sources[0];
    assert_int_equal(c->kind, TLY_SRC_RESOURCE_NAME);
    assert_string_equal(c->resource_name, "nvidia.com/gpu");
    assert_int_equal(c->resource_id, TLY_R_NVIDIA_GPU);
    assert_string_equal(tly_kvs_get(&c->match_node_labels, "nvidia.com/gpu.product"), "H200");

    s = load(seed_accres[2]);
    c = &accres(s, "gpu-gb200")->sources[0];
    assert_int_equal(c->kind, TLY_SRC_DRA);
    assert_int_equal(c->nmatch_attrs, 1);
    assert_string_equal(c->match_attrs[0].name, "productName");
    assert_int_equal(c->match_attrs[0].type, TLY_ATTR_STRING);
    assert_string_equal(c->match_attrs[0].str, "GB200");
}

/* ---------------------------------------------------------------------- */
/* Queue                                                                  */
/* ---------------------------------------------------------------------- */

static void test_queue_v2_fields_are_decoded(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: scheduling.run.ai/v2\n"
                        "kind: Queue\n"
                        "metadata:\n"
                        "  name: team-a\n"
                        "  labels:\n"
                        "    kai.scheduler/queue-admission-gating: \"false\"\n"
                        "spec:\n"
                        "  parentQueue: research\n"
                        "  displayName: Team A\n"
                        "  priority: 200\n"
                        "  admissionGating: true\n"
                        "  resources:\n"
                        "    cpu:\n"
                        "      quota: 4000\n"
                        "      limit: -1\n"
                        "      overQuotaWeight: 1.5\n"
                        "    memory:\n"
                        "      quota: 8000\n"
                        "    gpu:\n"
                        "      quota: 0.7\n"
                        "      limit: 2\n"
                        "  accountedResources:\n"
                        "  - resourceRef: gpu\n"
                        "    limit: \"16\"\n");
    assert_no_diags(s);
    tly_queue *q = queue(s, "team-a");
    assert_string_equal(q->parent, "research");
    assert_int_equal(q->parent_src.line, 8);
    assert_int_equal(q->parent_src.col, 16);
    assert_string_equal(q->parent_src.file, "in.yaml");
    assert_string_equal(q->display_name, "Team A");
    assert_true(q->has_priority);
    assert_int_equal(q->priority, 200);
    assert_int_equal(q->admission_gating, 1);
    assert_string_equal(tly_kvs_get(&q->meta.labels, "kai.scheduler/queue-admission-gating"),
                        "false");

    assert_true(q->has_resources);
    assert_true(q->cpu.has_quota && q->cpu.has_limit && q->cpu.has_weight);
    assert_string_equal(qstr(q->cpu.quota), "4k");
    assert_string_equal(qstr(q->cpu.limit), "-1");
    assert_string_equal(qstr(q->cpu.over_quota_weight), "1500m");
    assert_true(q->memory.has_quota);
    assert_false(q->memory.has_limit);
    assert_false(q->memory.has_weight);
    assert_string_equal(qstr(q->memory.quota), "8k");
    assert_string_equal(qstr(q->gpu.quota), "700m");
    assert_string_equal(qstr(q->gpu.limit), "2");

    assert_int_equal(q->naccrefs, 1);
    assert_string_equal(q->accrefs[0].ref, "gpu");
    assert_true(q->accrefs[0].has_limit);
    assert_string_equal(qstr(q->accrefs[0].limit), "16");
    assert_int_equal(q->accrefs[0].src.line, 23);
    assert_int_equal(q->accrefs[0].src.col, 5);
}

static void test_queue_defaults_when_fields_are_absent(void **state)
{
    (void)state;
    tly_store *s = load(QUEUE_HEAD "spec:\n"
                                   "  resources: {}\n");
    assert_no_diags(s);
    tly_queue *q = queue(s, "q");
    assert_null(q->parent);
    assert_false(q->has_priority);
    assert_int_equal(q->priority, 100);
    assert_int_equal(q->admission_gating, -1);
    assert_true(q->has_resources);
    assert_false(q->cpu.has_quota || q->cpu.has_limit || q->gpu.has_limit);
    assert_int_equal(q->naccrefs, 0);
}

static void test_queue_admission_gating_false_is_zero(void **state)
{
    (void)state;
    tly_store *s = load(QUEUE_HEAD "spec:\n"
                                   "  resources: {}\n"
                                   "  admissionGating: false\n");
    assert_no_diags(s);
    assert_int_equal(queue(s, "q")->admission_gating, 0);
}

static void test_queue_empty_parent_means_top_level(void **state)
{
    (void)state;
    tly_store *s = load(QUEUE_HEAD "spec:\n"
                                   "  parentQueue: \"\"\n"
                                   "  resources: {}\n");
    assert_no_diags(s);
    assert_null(queue(s, "q")->parent);
}

static void test_queue_without_resources_warns(void **state)
{
    (void)state;
    tly_store *s = load(QUEUE_HEAD "spec:\n"
                                   "  parentQueue: root\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 0);
    expect_diag(s, TLY_SEV_WARNING, "spec.resources", "resources must be specified", 5, 1);
    assert_false(queue(s, "q")->has_resources);
}

static void test_queue_without_spec_warns_at_the_object(void **state)
{
    (void)state;
    tly_store *s = load(QUEUE_HEAD);
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 0);
    expect_diag(s, TLY_SEV_WARNING, "spec.resources", "resources must be specified", 1, 1);
}

static void test_queue_duplicate_resource_ref_is_an_error_at_the_later_entry(void **state)
{
    (void)state;
    tly_store *s = load(QUEUE_HEAD "spec:\n"
                                   "  resources: {}\n"
                                   "  accountedResources:\n"
                                   "  - resourceRef: gpu\n"
                                   "    limit: \"16\"\n"
                                   "  - resourceRef: efa\n"
                                   "    limit: \"4\"\n"
                                   "  - resourceRef: gpu\n"
                                   "    limit: \"8\"\n");
    assert_int_equal(ndiags(s, TLY_SEV_WARNING), 1);
    expect_diag(s, TLY_SEV_ERROR, "spec.accountedResources[2].resourceRef",
                "duplicate resourceRef \"gpu\" (also at spec.accountedResources[0])", 12, 18);
    /* The first entry stays the queue's limit for gpu. */
    tly_queue *q = queue(s, "q");
    assert_int_equal(q->naccrefs, 2);
    assert_string_equal(q->accrefs[0].ref, "gpu");
    assert_string_equal(qstr(q->accrefs[0].limit), "16");
    assert_string_equal(q->accrefs[1].ref, "efa");
}

static void test_queue_accounted_resource_limit_is_required(void **state)
{
    (void)state;
    tly_store *s = load(QUEUE_HEAD "spec:\n"
                                   "  resources: {}\n"
                                   "  accountedResources:\n"
                                   "  - resourceRef: gpu\n");
    expect_one_error_prefix(s, "spec.accountedResources[0].limit", "required field is missing");
    tly_queue *q = queue(s, "q");
    assert_int_equal(q->naccrefs, 1);
    assert_false(q->accrefs[0].has_limit);
}

static void test_queue_accounted_resource_ref_is_required_and_non_empty(void **state)
{
    (void)state;
    tly_store *s = load(QUEUE_HEAD "spec:\n"
                                   "  resources: {}\n"
                                   "  accountedResources:\n"
                                   "  - limit: \"1\"\n");
    expect_one_error_prefix(s, "spec.accountedResources[0].resourceRef",
                            "required field is missing");
    assert_int_equal(queue(s, "q")->naccrefs, 0);

    s = load(QUEUE_HEAD "spec:\n"
                        "  resources: {}\n"
                        "  accountedResources:\n"
                        "  - resourceRef: \"\"\n"
                        "    limit: \"1\"\n");
    expect_one_error_prefix(s, "spec.accountedResources[0].resourceRef", "must not be empty");
}

static void test_queue_limit_must_be_minus_one_or_non_negative(void **state)
{
    (void)state;
    tly_store *s = load(QUEUE_HEAD "spec:\n"
                                   "  resources: {}\n"
                                   "  accountedResources:\n"
                                   "  - resourceRef: a\n"
                                   "    limit: \"-1\"\n"
                                   "  - resourceRef: b\n"
                                   "    limit: \"0\"\n"
                                   "  - resourceRef: c\n"
                                   "    limit: \"-2\"\n"
                                   "  - resourceRef: d\n"
                                   "    limit: -500m\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 2);
    expect_error(s, "spec.accountedResources[2].limit",
                 "must be -1 (unlimited) or a non-negative quantity");
    expect_diag(s, TLY_SEV_ERROR, "spec.accountedResources[3].limit",
                "must be -1 (unlimited) or a non-negative quantity", 15, 12);
    tly_queue *q = queue(s, "q");
    assert_true(q->accrefs[0].has_limit);
    assert_string_equal(qstr(q->accrefs[0].limit), "-1");
    assert_true(q->accrefs[1].has_limit);
    assert_false(q->accrefs[2].has_limit);
}

static void test_queue_limit_must_be_a_quantity(void **state)
{
    (void)state;
    tly_store *s = load(QUEUE_HEAD "spec:\n"
                                   "  resources:\n"
                                   "    gpu:\n"
                                   "      limit: lots\n"
                                   "  accountedResources:\n"
                                   "  - resourceRef: a\n"
                                   "    limit: [1]\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 2);
    assert_non_null(diag_at(s, "spec.resources.gpu.limit"));
    assert_non_null(diag_at(s, "spec.accountedResources[0].limit"));
}

static void test_queue_accounted_resources_entry_must_be_a_map(void **state)
{
    (void)state;
    tly_store *s = load(QUEUE_HEAD "spec:\n"
                                   "  resources: {}\n"
                                   "  accountedResources:\n"
                                   "  - gpu\n");
    expect_one_error_prefix(s, "spec.accountedResources[0]", "must be a map");
}

/* ---------------------------------------------------------------------- */
/* AccountedResource                                                      */
/* ---------------------------------------------------------------------- */

static void test_accres_absent_defaults_limit_means_unlimited(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - resourceName: cpu\n");
    assert_no_diags(s);
    tly_accres *a = accres(s, "ar");
    assert_false(a->has_default_limit);
    assert_string_equal(qstr(a->default_limit), "-1");
    assert_int_equal(a->sources[0].resource_id, TLY_R_CPU);
}

static void test_accres_defaults_limit_is_read(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  defaults:\n"
                                    "    limit: 8\n"
                                    "  sources:\n"
                                    "  - resourceName: example.com/foo\n");
    assert_no_diags(s);
    tly_accres *a = accres(s, "ar");
    assert_true(a->has_default_limit);
    assert_string_equal(qstr(a->default_limit), "8");
    const char *name = tly_names_str(tly_store_names(s), a->sources[0].resource_id);
    assert_string_equal(name, "example.com/foo");
}

static void test_accres_sources_is_required(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  defaults:\n"
                                    "    limit: \"-1\"\n");
    expect_one_error_prefix(s, "spec.sources", "sources is required");

    s = load(ACCRES_HEAD);
    expect_one_error_prefix(s, "spec.sources", "sources is required");
}

static void test_accres_sources_must_not_be_empty(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources: []\n");
    expect_one_error_prefix(s, "spec.sources", "must have at least one source");
}

static void test_accres_source_sets_exactly_one_of_resource_name_dra_pod_annotation(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - resourceName: cpu\n"
                                    "  - resourceName: nvidia.com/gpu\n"
                                    "    dra:\n"
                                    "      deviceClassName: gpu.nvidia.com\n"
                                    "  - match:\n"
                                    "      nodeLabels: {a: b}\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 2);
    expect_diag(s, TLY_SEV_ERROR, "spec.sources[1]",
                "must set exactly one of resourceName, dra, podAnnotation "
                "(found resourceName, dra)",
                8, 5);
    expect_error(s, "spec.sources[2]",
                 "must set exactly one of resourceName, dra, podAnnotation (found none)");
    tly_accres *a = accres(s, "ar");
    assert_int_equal(a->nsources, 3);
    assert_int_equal(a->sources[0].kind, TLY_SRC_RESOURCE_NAME);
    assert_int_equal(a->sources[1].kind, TLY_SRC_NONE);
    assert_int_equal(a->sources[2].kind, TLY_SRC_NONE);
}

static void test_accres_resource_name_source_takes_no_quantity(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - resourceName: nvidia.com/gpu\n"
                                    "    quantity:\n"
                                    "      podAnnotation:\n"
                                    "        unit: Mi\n");
    expect_one_error_prefix(s, "spec.sources[0].quantity",
                            "a resourceName source takes no quantity");
    assert_int_equal(accres(s, "ar")->sources[0].qkind, TLY_QSRC_NONE);
}

static void test_accres_quantity_dra_only_with_a_dra_source(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - podAnnotation:\n"
                                    "      key: gpu-memory\n"
                                    "    quantity:\n"
                                    "      dra:\n"
                                    "        selectedCapacity:\n"
                                    "          capacityName: memory\n");
    expect_one_error_prefix(s, "spec.sources[0].quantity.dra",
                            "quantity.dra is only allowed with a dra source");
    tly_accsrc *c = &accres(s, "ar")->sources[0];
    assert_int_equal(c->kind, TLY_SRC_POD_ANNOTATION);
    assert_int_equal(c->qkind, TLY_QSRC_NONE);
    assert_null(c->capacity_name);
}

static void test_accres_match_dra_only_with_a_dra_source(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - resourceName: nvidia.com/gpu\n"
                                    "    match:\n"
                                    "      dra:\n"
                                    "        deviceAttributes:\n"
                                    "          productName: {string: H200}\n");
    expect_one_error_prefix(s, "spec.sources[0].match.dra",
                            "match.dra is only allowed with a dra source");
    assert_int_equal(accres(s, "ar")->sources[0].nmatch_attrs, 0);
}

static void test_accres_quantity_pod_annotation_only_with_a_pod_annotation_source(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - dra:\n"
                                    "      deviceClassName: gpu.nvidia.com\n"
                                    "    quantity:\n"
                                    "      podAnnotation:\n"
                                    "        unit: Mi\n");
    expect_one_error_prefix(s, "spec.sources[0].quantity.podAnnotation",
                            "quantity.podAnnotation is only allowed with a podAnnotation source");
    tly_accsrc *c = &accres(s, "ar")->sources[0];
    assert_int_equal(c->qkind, TLY_QSRC_NONE);
    assert_null(c->qty_annotation_unit);
}

static void test_accres_quantity_pod_annotation_unit_overrides_or_agrees(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - podAnnotation:\n"
                                    "      key: gpu-memory\n"
                                    "    quantity:\n"
                                    "      podAnnotation:\n"
                                    "        unit: Gi\n"
                                    "  - podAnnotation:\n"
                                    "      key: gpu-memory\n"
                                    "      unit: Mi\n"
                                    "    quantity:\n"
                                    "      podAnnotation:\n"
                                    "        unit: Mi\n");
    assert_no_diags(s);
    tly_accres *a = accres(s, "ar");
    assert_int_equal(a->sources[0].qkind, TLY_QSRC_POD_ANNOTATION);
    assert_string_equal(a->sources[0].qty_annotation_unit, "Gi");
    assert_null(a->sources[0].annotation_unit);
    assert_string_equal(a->sources[1].qty_annotation_unit, "Mi");
}

static void test_accres_pod_annotation_units_that_differ_are_an_error(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - podAnnotation:\n"
                                    "      key: gpu-memory\n"
                                    "      unit: Mi\n"
                                    "    quantity:\n"
                                    "      podAnnotation:\n"
                                    "        unit: Gi\n");
    expect_one_error_prefix(s, "spec.sources[0].quantity.podAnnotation.unit",
                            "unit \"Gi\" conflicts with podAnnotation.unit \"Mi\"");
    assert_int_equal(diag_at(s, "spec.sources[0].quantity.podAnnotation.unit")->line, 12);
}

static void test_accres_unit_is_a_suffix_or_any_word_of_letters(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - podAnnotation: {key: a, unit: Ki}\n"
                                    "  - podAnnotation: {key: b, unit: m}\n"
                                    "  - podAnnotation: {key: c, unit: percent}\n"
                                    "  - podAnnotation: {key: d, unit: GPUs}\n");
    assert_no_diags(s);
    assert_string_equal(accres(s, "ar")->sources[2].annotation_unit, "percent");
}

static void test_accres_unit_must_be_a_non_empty_word_of_letters(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - podAnnotation: {key: a, unit: 10Mi}\n"
                                    "  - podAnnotation: {key: b, unit: \"\"}\n"
                                    "  - podAnnotation: {key: c, unit: per-cent}\n"
                                    "  - dra: {deviceClassName: x}\n"
                                    "    quantity:\n"
                                    "      dra:\n"
                                    "        opaqueConfigField: {driver: d, path: p, unit: \"M i\"}\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 4);
    const char *msg = "invalid unit \"10Mi\": expected a Kubernetes suffix (n, u, m, k, M, G, T, "
                      "P, E, Ki, Mi, Gi, Ti, Pi, Ei) or a word of letters such as percent";
    expect_diag(s, TLY_SEV_ERROR, "spec.sources[0].podAnnotation.unit", msg, 7, 35);
    assert_non_null(diag_at(s, "spec.sources[1].podAnnotation.unit"));
    assert_non_null(diag_at(s, "spec.sources[2].podAnnotation.unit"));
    assert_non_null(diag_at(s, "spec.sources[3].quantity.dra.opaqueConfigField.unit"));
    assert_null(accres(s, "ar")->sources[0].annotation_unit);
}

static void test_accres_quantity_dra_sets_exactly_one_of_capacity_or_opaque_field(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - dra:\n"
                                    "      deviceClassName: gpu.nvidia.com\n"
                                    "    quantity:\n"
                                    "      dra:\n"
                                    "        selectedCapacity: {capacityName: memory}\n"
                                    "        opaqueConfigField: {driver: d, path: p}\n"
                                    "  - dra:\n"
                                    "      deviceClassName: gpu.nvidia.com\n"
                                    "    quantity:\n"
                                    "      dra: {}\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 2);
    expect_error(s, "spec.sources[0].quantity.dra",
                 "must set exactly one of selectedCapacity, opaqueConfigField "
                 "(found selectedCapacity, opaqueConfigField)");
    expect_error(s, "spec.sources[1].quantity.dra",
                 "must set exactly one of selectedCapacity, opaqueConfigField (found none)");
    assert_int_equal(accres(s, "ar")->sources[0].qkind, TLY_QSRC_NONE);
}

static void test_accres_dra_quantity_rules_have_required_fields(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - dra:\n"
                                    "      deviceClassName: gpu.nvidia.com\n"
                                    "    quantity:\n"
                                    "      dra:\n"
                                    "        selectedCapacity: {}\n"
                                    "  - dra:\n"
                                    "      deviceClassName: gpu.nvidia.com\n"
                                    "    quantity:\n"
                                    "      dra:\n"
                                    "        opaqueConfigField: {unit: Mi}\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 3);
    expect_error(s, "spec.sources[0].quantity.dra.selectedCapacity.capacityName",
                 "required field is missing");
    expect_error(s, "spec.sources[1].quantity.dra.opaqueConfigField.driver",
                 "required field is missing");
    expect_error(s, "spec.sources[1].quantity.dra.opaqueConfigField.path",
                 "required field is missing");
}

static void test_accres_source_kinds_have_required_fields(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - dra: {}\n"
                                    "  - podAnnotation: {unit: Mi}\n"
                                    "  - podAnnotation: {key: \"\"}\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 3);
    expect_error(s, "spec.sources[0].dra.deviceClassName", "required field is missing");
    expect_error(s, "spec.sources[1].podAnnotation.key", "required field is missing");
    expect_error(s, "spec.sources[2].podAnnotation.key", "must not be empty");
    tly_accres *a = accres(s, "ar");
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(a->sources[i].kind, TLY_SRC_NONE);
}

static void test_accres_resource_name_must_be_a_kubernetes_resource_name(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - resourceName: nvidia.com/gpu/extra\n"
                                    "  - resourceName: -cpu\n"
                                    "  - resourceName: Example.COM/gpu\n"
                                    "  - resourceName: \"\"\n"
                                    "  - resourceName: example.com/\n"
                                    "  - resourceName: hugepages-2Mi\n"
                                    "  - resourceName: requests.nvidia.com/gpu\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 5);
    for (int i = 0; i < 5; i++) {
        char field[64];
        snprintf(field, sizeof field, "spec.sources[%d].resourceName", i);
        const tly_diag *g = diag_at(s, field);
        assert_non_null(g);
        assert_true(strncmp(g->msg, "invalid resource name \"", 23) == 0);
    }
    tly_accres *a = accres(s, "ar");
    assert_int_equal(a->sources[0].kind, TLY_SRC_NONE);
    assert_int_equal(a->sources[5].kind, TLY_SRC_RESOURCE_NAME);
    assert_int_equal(a->sources[6].kind, TLY_SRC_RESOURCE_NAME);
}

static void test_accres_device_attribute_sets_exactly_one_value_type(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  sources:\n"
                                    "  - dra:\n"
                                    "      deviceClassName: gpu.nvidia.com\n"
                                    "    match:\n"
                                    "      dra:\n"
                                    "        deviceAttributes:\n"
                                    "          productName: {string: H200}\n"
                                    "          cudaMajor: {int: 12}\n"
                                    "          mig: {bool: false}\n"
                                    "          driverVersion: {version: 1.2.3}\n"
                                    "          both: {string: a, int: 1}\n"
                                    "          neither: {}\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 2);
    expect_error(s, "spec.sources[0].match.dra.deviceAttributes.both",
                 "must set exactly one of string, int, bool, version (found string, int)");
    expect_error(s, "spec.sources[0].match.dra.deviceAttributes.neither",
                 "must set exactly one of string, int, bool, version (found none)");
    tly_accsrc *c = &accres(s, "ar")->sources[0];
    assert_int_equal(c->nmatch_attrs, 4);
    assert_int_equal(c->match_attrs[1].type, TLY_ATTR_INT);
    assert_int_equal(c->match_attrs[1].ival, 12);
    assert_int_equal(c->match_attrs[2].type, TLY_ATTR_BOOL);
    assert_false(c->match_attrs[2].bval);
    assert_int_equal(c->match_attrs[3].type, TLY_ATTR_VERSION);
    assert_string_equal(c->match_attrs[3].str, "1.2.3");
}

static void test_accres_negative_default_limit_other_than_minus_one_is_an_error(void **state)
{
    (void)state;
    tly_store *s = load(ACCRES_HEAD "spec:\n"
                                    "  defaults: {limit: \"-3\"}\n"
                                    "  sources:\n"
                                    "  - resourceName: cpu\n");
    expect_one_error_prefix(s, "spec.defaults.limit",
                            "must be -1 (unlimited) or a non-negative quantity");
    assert_false(accres(s, "ar")->has_default_limit);
}

/* ---------------------------------------------------------------------- */
/* kruntimes Runtime and Run                                              */
/* ---------------------------------------------------------------------- */

static void test_runtime_capacity_resources_are_read(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: kruntimes.io/v1alpha1\n"
                        "kind: Runtime\n"
                        "metadata:\n"
                        "  name: python\n"
                        "  namespace: ml\n"
                        "spec:\n"
                        "  capacity:\n"
                        "    resources:\n"
                        "      runs: \"4\"\n"
                        "      example.com/gpu: 1\n");
    /* Read, with one warning: a name with '/' cannot be projected to a Pod annotation. */
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 0);
    assert_int_equal(ndiags(s, TLY_SEV_WARNING), 1);
    const tly_diag *w = tly_diags_get(tly_store_diags(s), 0);
    assert_string_equal(w->field, "spec.capacity.resources.example.com/gpu");
    assert_non_null(strstr(w->msg, "cannot be projected to a Pod annotation"));
    tly_runtime *rt = tly_store_find(s, TLY_K_RUNTIME, "ml", "python");
    assert_non_null(rt);
    assert_string_equal(qstr(tly_rlist_get(&rt->capacity, TLY_R_RUNS, NULL)), "4");
    uint32_t gpu = tly_names_find(tly_store_names(s), "example.com/gpu", 15);
    assert_string_equal(qstr(tly_rlist_get(&rt->capacity, gpu, NULL)), "1");
}

static void test_run_seed_example_decodes(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: kruntimes.io/v1alpha1\n"
                        "kind: Run\n"
                        "metadata:\n"
                        "  name: job-1\n"
                        "spec:\n"
                        "  runtime: python\n"
                        "  resources:\n"
                        "    requests:\n"
                        "      runs: \"1\"\n"
                        "      example.com/gpu: \"1\"\n"
                        "  mode:\n"
                        "    task:\n"
                        "      args: [\"python\", \"train.py\"]\n");
    assert_no_diags(s);
    tly_run *r = run(s, "job-1");
    assert_string_equal(r->runtime, "python");
    assert_string_equal(r->mode, "task");
    assert_true(r->has_resources);
    assert_int_equal(r->nrequests, 2);
    assert_string_equal(r->requests[0].name, "runs");
    assert_int_equal(r->requests[0].id, TLY_R_RUNS);
    assert_int_equal(r->requests[0].src.line, 9);
    assert_string_equal(r->requests[1].name, "example.com/gpu");
    assert_true(r->requests[1].valid);
    assert_null(r->phase);
}

static void test_run_integer_requests_are_valid_in_any_literal_form(void **state)
{
    (void)state;
    tly_store *s = load(RUN_WITH_REQUESTS("      a: \"1\"\n"
                                          "      b: 1k\n"
                                          "      c: \"1e3\"\n"
                                          "      d: 1Ki\n"
                                          "      e: 1e3\n"
                                          "      f: 0\n"
                                          "      g: 7\n"));
    assert_no_diags(s);
    tly_run *r = run(s, "r");
    static const char *const text[] = {"1", "1k", "1e3", "1Ki", "1e3", "0", "7"};
    static const char *const canon[] = {"1", "1k", "1e3", "1Ki", "1e3", "0", "7"};
    assert_int_equal(r->nrequests, 7);
    for (uint32_t i = 0; i < 7; i++) {
        assert_true(r->requests[i].valid);
        assert_string_equal(r->requests[i].text, text[i]);
        assert_string_equal(qstr(r->requests[i].q), canon[i]);
    }
}

static void test_run_non_integer_or_negative_requests_are_invalid(void **state)
{
    (void)state;
    tly_store *s = load(RUN_WITH_REQUESTS("      runs: 2000m\n"
                                          "      example.com/gpu: \"1.0\"\n"
                                          "      mem: \"-1\"\n"
                                          "      flt: 1.0\n"
                                          "      junk: lots\n"));
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 5);
    expect_diag(s, TLY_SEV_ERROR, "spec.resources.requests.runs",
                "resource request \"runs\" must be a non-negative integer", 9, 13);
    expect_error(s, "spec.resources.requests.example.com/gpu",
                 "resource request \"example.com/gpu\" must be a non-negative integer");
    expect_error(s, "spec.resources.requests.mem",
                 "resource request \"mem\" must be a non-negative integer");
    expect_error(s, "spec.resources.requests.flt",
                 "resource request \"flt\" must be a non-negative integer");
    expect_error(s, "spec.resources.requests.junk",
                 "resource request \"junk\" must be a non-negative integer");
    tly_run *r = run(s, "r");
    assert_int_equal(r->nrequests, 5);
    for (uint32_t i = 0; i < 5; i++)
        assert_false(r->requests[i].valid);
    /* The literal is kept, and what parses is kept too (for messages). */
    assert_string_equal(r->requests[0].text, "2000m");
    assert_string_equal(qstr(r->requests[0].q), "2");
    assert_string_equal(r->requests[1].text, "1.0");
    assert_string_equal(r->requests[2].text, "-1");
}

static void test_run_mode_sets_exactly_one_of_task_or_function(void **state)
{
    (void)state;
    tly_store *s = load(RUN_HEAD "spec:\n"
                                 "  runtime: python\n"
                                 "  mode:\n"
                                 "    function:\n"
                                 "      handler: main.handle\n");
    assert_no_diags(s);
    assert_string_equal(run(s, "r")->mode, "function");

    s = load(RUN_HEAD "spec:\n"
                      "  runtime: python\n"
                      "  mode:\n"
                      "    task: {args: [a]}\n"
                      "    function: {handler: h}\n");
    expect_one_error_prefix(s, "spec.mode", "exactly one of task or function must be set");
    assert_null(run(s, "r")->mode);

    s = load(RUN_HEAD "spec:\n"
                      "  runtime: python\n"
                      "  mode: {}\n");
    expect_one_error_prefix(s, "spec.mode", "exactly one of task or function must be set");

    s = load(RUN_HEAD "spec:\n"
                      "  runtime: python\n");
    expect_one_error_prefix(s, "spec.mode", "required field is missing");

    s = load(RUN_HEAD "spec:\n"
                      "  runtime: python\n"
                      "  mode: {task: 1}\n");
    expect_one_error_prefix(s, "spec.mode.task", "expected a map");
}

static void test_run_runtime_is_a_required_label_value(void **state)
{
    (void)state;
    tly_store *s = load(RUN_HEAD "spec:\n"
                                 "  mode: {task: {}}\n");
    expect_one_error_prefix(s, "spec.runtime", "required field is missing");

    s = load(RUN_HEAD "spec:\n"
                      "  runtime: -python\n"
                      "  mode: {task: {}}\n");
    expect_one_error_prefix(s, "spec.runtime", "invalid runtime \"-python\"");
    assert_null(run(s, "r")->runtime);

    s = load(RUN_HEAD "spec:\n"
                      "  runtime: "
                      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
                      "  mode: {task: {}}\n");
    expect_one_error_prefix(s, "spec.runtime", "must be 1 to 63 characters long (got 64)");

    s = load(RUN_HEAD "spec:\n"
                      "  runtime: py_3.12-x\n"
                      "  mode: {task: {}}\n");
    assert_no_diags(s);
    assert_string_equal(run(s, "r")->runtime, "py_3.12-x");
}

static void test_run_affinity_terms_are_read(void **state)
{
    (void)state;
    tly_store *s = load(RUN_HEAD "spec:\n"
                                 "  runtime: python\n"
                                 "  mode: {task: {}}\n"
                                 "  affinity:\n"
                                 "    runAffinity:\n"
                                 "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                                 "      - labelSelector:\n"
                                 "          matchLabels: {team: a}\n"
                                 "        topologyKey: kruntimes.io/runtime-pod\n"
                                 "    runAntiAffinity:\n"
                                 "      preferredDuringSchedulingIgnoredDuringExecution:\n"
                                 "      - weight: 50\n"
                                 "        runAffinityTerm:\n"
                                 "          labelSelector:\n"
                                 "            matchExpressions:\n"
                                 "            - {key: big, operator: Exists}\n"
                                 "          topologyKey: kruntimes.io/runtime-pod\n");
    assert_no_diags(s);
    tly_run *r = run(s, "r");
    assert_int_equal(r->naffinity_required, 1);
    assert_int_equal(r->naffinity_preferred, 0);
    assert_string_equal(tly_kvs_get(&r->affinity_required[0].selector.match_labels, "team"), "a");
    assert_string_equal(r->affinity_required[0].topology_key, "kruntimes.io/runtime-pod");
    assert_int_equal(r->affinity_required[0].weight, 0);
    assert_int_equal(r->nanti_required, 0);
    assert_int_equal(r->nanti_preferred, 1);
    assert_int_equal(r->anti_preferred[0].weight, 50);
    assert_int_equal(r->anti_preferred[0].selector.nreqs, 1);
    assert_string_equal(r->anti_preferred[0].selector.reqs[0].op, "Exists");
}

static void test_run_affinity_term_rules(void **state)
{
    (void)state;
    tly_store *s = load(RUN_HEAD "spec:\n"
                                 "  runtime: python\n"
                                 "  mode: {task: {}}\n"
                                 "  affinity:\n"
                                 "    runAffinity:\n"
                                 "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                                 "      - labelSelector: {}\n"
                                 "        topologyKey: kruntimes.io/runtime-pod\n"
                                 "      - labelSelector: {matchLabels: {a: b}}\n"
                                 "        topologyKey: kubernetes.io/hostname\n"
                                 "      - topologyKey: kruntimes.io/runtime-pod\n"
                                 "      preferredDuringSchedulingIgnoredDuringExecution:\n"
                                 "      - weight: 0\n"
                                 "        runAffinityTerm:\n"
                                 "          labelSelector: {matchLabels: {a: b}}\n"
                                 "          topologyKey: kruntimes.io/runtime-pod\n"
                                 "      - runAffinityTerm:\n"
                                 "          labelSelector: {matchLabels: {a: b}}\n"
                                 "          topologyKey: kruntimes.io/runtime-pod\n");
    const char *req = "spec.affinity.runAffinity.requiredDuringSchedulingIgnoredDuringExecution";
    const char *pref = "spec.affinity.runAffinity.preferredDuringSchedulingIgnoredDuringExecution";
    char f[256];
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 5);
    snprintf(f, sizeof f, "%s[0].labelSelector", req);
    expect_error(s, f, "must not be empty: set matchLabels or matchExpressions");
    snprintf(f, sizeof f, "%s[1].topologyKey", req);
    expect_error(s, f, "unsupported value \"kubernetes.io/hostname\": must be "
                       "\"kruntimes.io/runtime-pod\"");
    snprintf(f, sizeof f, "%s[2].labelSelector", req);
    expect_error(s, f, "required field is missing");
    snprintf(f, sizeof f, "%s[0].weight", pref);
    expect_error(s, f, "must be between 1 and 100 (got 0)");
    snprintf(f, sizeof f, "%s[1].weight", pref);
    expect_error(s, f, "required field is missing");
    tly_run *r = run(s, "r");
    assert_int_equal(r->naffinity_required, 0);
    assert_int_equal(r->naffinity_preferred, 0);
}

static void test_run_status_is_read(void **state)
{
    (void)state;
    tly_store *s = load(RUN_HEAD "spec:\n"
                                 "  runtime: python\n"
                                 "  mode: {task: {}}\n"
                                 "status:\n"
                                 "  phase: Scheduled\n"
                                 "  assignedPod: python-rt-0\n"
                                 "  message: assigned\n"
                                 "  conditions:\n"
                                 "  - type: Scheduled\n"
                                 "    status: \"True\"\n"
                                 "    reason: Assigned\n"
                                 "    lastTransitionTime: \"2026-01-02T03:04:05Z\"\n");
    assert_no_diags(s);
    tly_run *r = run(s, "r");
    assert_string_equal(r->phase, "Scheduled");
    assert_string_equal(r->assigned_pod, "python-rt-0");
    assert_string_equal(r->message, "assigned");
    const tly_condition *c = tly_conditions_find(&r->conditions, "Scheduled");
    assert_non_null(c);
    assert_string_equal(c->reason, "Assigned");
    assert_int_equal(c->last_transition, 1767323045);
}

static void test_run_phase_is_an_enum_that_allows_empty(void **state)
{
    (void)state;
    tly_store *s = load(RUN_HEAD "spec: {runtime: python, mode: {task: {}}}\n"
                                 "status: {phase: \"\"}\n");
    assert_no_diags(s);
    assert_string_equal(run(s, "r")->phase, "");

    s = load(RUN_HEAD "spec: {runtime: python, mode: {task: {}}}\n"
                      "status: {phase: Sleeping}\n");
    expect_one_error_prefix(s, "status.phase", "\"Sleeping\" is not allowed");
}

/* ---------------------------------------------------------------------- */
/* DRA                                                                    */
/* ---------------------------------------------------------------------- */

static void test_resource_slice_v1_attributes_and_capacity(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: resource.k8s.io/v1\n"
                        "kind: ResourceSlice\n"
                        "metadata:\n"
                        "  name: node-1-gpu\n"
                        "spec:\n"
                        "  driver: gpu.nvidia.com\n"
                        "  nodeName: node-1\n"
                        "  pool:\n"
                        "    name: node-1\n"
                        "    generation: 1\n"
                        "    resourceSliceCount: 1\n"
                        "  devices:\n"
                        "  - name: gpu-0\n"
                        "    attributes:\n"
                        "      productName: {string: NVIDIA GB200}\n"
                        "      cudaComputeCapability: {version: 10.0.0}\n"
                        "      index: {int: 0}\n"
                        "      mig: {bool: false}\n"
                        "    capacity:\n"
                        "      memory: {value: 180Gi}\n"
                        "  - name: gpu-1\n");
    assert_no_diags(s);
    tly_resource_slice *rs = tly_store_find(s, TLY_K_RESOURCE_SLICE, NULL, "node-1-gpu");
    assert_non_null(rs);
    assert_string_equal(rs->driver, "gpu.nvidia.com");
    assert_string_equal(rs->pool, "node-1");
    assert_string_equal(rs->node_name, "node-1");
    assert_false(rs->all_nodes);
    assert_int_equal(rs->ndevices, 2);
    tly_device *d = &rs->devices[0];
    assert_string_equal(d->name, "gpu-0");
    assert_int_equal(d->nattrs, 4);
    assert_string_equal(d->attrs[0].name, "productName");
    assert_string_equal(d->attrs[0].str, "NVIDIA GB200");
    assert_int_equal(d->attrs[1].type, TLY_ATTR_VERSION);
    assert_int_equal(d->attrs[2].type, TLY_ATTR_INT);
    assert_int_equal(d->attrs[3].type, TLY_ATTR_BOOL);
    assert_int_equal(d->ncapacity, 1);
    assert_string_equal(d->capacity[0].name, "memory");
    assert_int_equal(d->capacity[0].id, TLY_R_MEMORY);
    assert_string_equal(qstr(d->capacity[0].value), "180Gi");
    assert_int_equal(rs->devices[1].nattrs, 0);
}

static void test_resource_slice_v1beta1_nests_device_content_under_basic(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: resource.k8s.io/v1beta1\n"
                        "kind: ResourceSlice\n"
                        "metadata:\n"
                        "  name: s\n"
                        "spec:\n"
                        "  driver: gpu.nvidia.com\n"
                        "  allNodes: true\n"
                        "  pool: {name: shared, generation: 0, resourceSliceCount: 1}\n"
                        "  devices:\n"
                        "  - name: gpu-0\n"
                        "    basic:\n"
                        "      attributes:\n"
                        "        productName: {string: H200}\n"
                        "        bad: {string: a, bool: true}\n"
                        "      capacity:\n"
                        "        memory:\n"
                        "          value: 141Gi\n");
    expect_one_error_prefix(s, "spec.devices[0].basic.attributes.bad",
                            "must set exactly one of string, int, bool, version");
    tly_resource_slice *rs = tly_store_find(s, TLY_K_RESOURCE_SLICE, NULL, "s");
    assert_non_null(rs);
    assert_true(rs->all_nodes);
    assert_null(rs->node_name);
    assert_int_equal(rs->ndevices, 1);
    assert_int_equal(rs->devices[0].nattrs, 1);
    assert_string_equal(rs->devices[0].attrs[0].str, "H200");
    assert_int_equal(rs->devices[0].ncapacity, 1);
    assert_string_equal(qstr(rs->devices[0].capacity[0].value), "141Gi");
}

static void test_resource_slice_requires_driver_and_pool(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: resource.k8s.io/v1\n"
                        "kind: ResourceSlice\n"
                        "metadata: {name: s}\n"
                        "spec:\n"
                        "  nodeName: n\n"
                        "  devices:\n"
                        "  - attributes: {}\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 3);
    expect_error(s, "spec.driver", "required field is missing");
    expect_error(s, "spec.pool", "required field is missing");
    expect_error(s, "spec.devices[0].name", "required field is missing");
}

static const char claim_v1[] =
    "apiVersion: resource.k8s.io/v1\n"
    "kind: ResourceClaim\n"
    "metadata:\n"
    "  name: gpu-claim\n"
    "  namespace: team-a\n"
    "spec:\n"
    "  devices:\n"
    "    requests:\n"
    "    - name: gpus\n"
    "      exactly:\n"
    "        deviceClassName: gpu.nvidia.com\n"
    "        allocationMode: ExactCount\n"
    "        count: 2\n"
    "        selectors:\n"
    "        - cel:\n"
    "            expression: device.attributes[\"gpu.nvidia.com\"].productName == \"H200\"\n"
    "    - name: any\n"
    "      firstAvailable:\n"
    "      - name: big\n"
    "        deviceClassName: big.example.com\n"
    "      - name: small\n"
    "        deviceClassName: small.example.com\n"
    "    config:\n"
    "    - requests: [gpus]\n"
    "      opaque:\n"
    "        driver: gpu.nvidia.com\n"
    "        parameters:\n"
    "          apiVersion: resource.nvidia.com/v1beta1\n"
    "          kind: GpuConfig\n"
    "          sharing:\n"
    "            strategy: MPS\n"
    "            mpsConfig:\n"
    "              defaultPinnedDeviceMemoryLimit: 10Gi\n"
    "status:\n"
    "  allocation:\n"
    "    devices:\n"
    "      results:\n"
    "      - request: gpus\n"
    "        driver: gpu.nvidia.com\n"
    "        pool: node-1\n"
    "        device: gpu-0\n"
    "      - request: gpus\n"
    "        driver: gpu.nvidia.com\n"
    "        pool: node-1\n"
    "        device: gpu-1\n"
    "      config:\n"
    "      - source: FromClaim\n"
    "        requests: [gpus]\n"
    "        opaque:\n"
    "          driver: gpu.nvidia.com\n"
    "          parameters: {sharing: {mpsConfig: {defaultPinnedDeviceMemoryLimit: 20Gi}}}\n"
    "  reservedFor:\n"
    "  - resource: pods\n"
    "    name: train-0\n"
    "    uid: 1234\n";

static void test_resource_claim_v1_allocation_result_and_opaque_config(void **state)
{
    (void)state;
    /* uid: 1234 is a number, not a string: the one error. */
    tly_store *s = load(claim_v1);
    expect_one_error_prefix(s, "status.reservedFor[0].uid", "expected a string");

    tly_resource_claim *c = tly_store_find(s, TLY_K_RESOURCE_CLAIM, "team-a", "gpu-claim");
    assert_non_null(c);
    assert_int_equal(c->spec.nrequests, 2);
    tly_device_request *r = &c->spec.requests[0];
    assert_string_equal(r->name, "gpus");
    assert_string_equal(r->device_class, "gpu.nvidia.com");
    assert_string_equal(r->allocation_mode, "ExactCount");
    assert_int_equal(r->count, 2);
    assert_int_equal(r->nselectors, 1);
    assert_string_equal(r->selectors[0],
                        "device.attributes[\"gpu.nvidia.com\"].productName == \"H200\"");
    assert_false(r->first_available);
    r = &c->spec.requests[1];
    assert_string_equal(r->name, "any");
    assert_true(r->first_available);
    assert_null(r->device_class);

    assert_int_equal(c->spec.nconfig, 1);
    tly_opaque_config *cfg = &c->spec.config[0];
    assert_string_equal(cfg->driver, "gpu.nvidia.com");
    assert_int_equal(cfg->nrequests, 1);
    assert_string_equal(cfg->requests[0], "gpus");
    assert_non_null(cfg->parameters);
    const tly_node *lim = tly_node_path(cfg->parameters, "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit");
    assert_non_null(lim);
    assert_string_equal(lim->str, "10Gi");

    assert_true(c->allocated);
    assert_int_equal(c->nresults, 2);
    assert_string_equal(c->results[1].request, "gpus");
    assert_string_equal(c->results[1].driver, "gpu.nvidia.com");
    assert_string_equal(c->results[1].pool, "node-1");
    assert_string_equal(c->results[1].device, "gpu-1");
    assert_int_equal(c->nalloc_config, 1);
    lim = tly_node_path(c->alloc_config[0].parameters,
                        "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit");
    assert_non_null(lim);
    assert_string_equal(lim->str, "20Gi");
    /* The malformed consumer reference is left out. */
    assert_int_equal(c->nreserved_for, 0);
}

static void test_resource_claim_reserved_for_is_read(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: resource.k8s.io/v1\n"
                        "kind: ResourceClaim\n"
                        "metadata: {name: c}\n"
                        "spec: {devices: {requests: [{name: g, exactly: {deviceClassName: x}}]}}\n"
                        "status:\n"
                        "  reservedFor:\n"
                        "  - {resource: pods, name: p0, uid: u0}\n"
                        "  - {resource: pods, name: p1, uid: u1}\n");
    assert_no_diags(s);
    tly_resource_claim *c = tly_store_find(s, TLY_K_RESOURCE_CLAIM, "default", "c");
    assert_non_null(c);
    assert_false(c->allocated);
    assert_int_equal(c->spec.requests[0].count, 1);
    assert_string_equal(c->spec.requests[0].allocation_mode, "ExactCount");
    assert_int_equal(c->nreserved_for, 2);
    assert_string_equal(c->reserved_for[1].name, "p1");
    assert_string_equal(c->reserved_for[1].uid, "u1");
}

static void test_resource_claim_v1beta1_request_fields_sit_on_the_request(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: resource.k8s.io/v1beta1\n"
                        "kind: ResourceClaim\n"
                        "metadata: {name: c}\n"
                        "spec:\n"
                        "  devices:\n"
                        "    requests:\n"
                        "    - name: all-gpus\n"
                        "      deviceClassName: gpu.nvidia.com\n"
                        "      allocationMode: All\n"
                        "    - name: one\n"
                        "      deviceClassName: gpu.nvidia.com\n"
                        "      selectors:\n"
                        "      - cel: {expression: \"true\"}\n");
    assert_no_diags(s);
    tly_resource_claim *c = tly_store_find(s, TLY_K_RESOURCE_CLAIM, "default", "c");
    assert_non_null(c);
    assert_int_equal(c->spec.nrequests, 2);
    assert_string_equal(c->spec.requests[0].allocation_mode, "All");
    assert_string_equal(c->spec.requests[0].device_class, "gpu.nvidia.com");
    assert_int_equal(c->spec.requests[1].count, 1);
    assert_int_equal(c->spec.requests[1].nselectors, 1);
}

static void test_resource_claim_v1_request_sets_exactly_or_first_available(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: resource.k8s.io/v1\n"
                        "kind: ResourceClaim\n"
                        "metadata: {name: c}\n"
                        "spec:\n"
                        "  devices:\n"
                        "    requests:\n"
                        "    - name: gpus\n"
                        "      deviceClassName: gpu.nvidia.com\n"
                        "    - name: n\n"
                        "      exactly: {deviceClassName: x, count: 0}\n"
                        "    - name: m\n"
                        "      exactly: {deviceClassName: x, allocationMode: Some}\n");
    assert_int_equal(ndiags(s, TLY_SEV_ERROR), 4);
    expect_error(s, "spec.devices.requests[0]", "must set exactly one of exactly or firstAvailable");
    assert_non_null(diag_at(s, "spec.devices.requests[0].deviceClassName"));
    expect_error(s, "spec.devices.requests[1].exactly.count", "must be greater than zero (got 0)");
    assert_non_null(diag_at(s, "spec.devices.requests[2].exactly.allocationMode"));
}

static void test_resource_claim_template_reads_spec_spec(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: resource.k8s.io/v1beta2\n"
                        "kind: ResourceClaimTemplate\n"
                        "metadata: {name: t, namespace: ns}\n"
                        "spec:\n"
                        "  spec:\n"
                        "    devices:\n"
                        "      requests:\n"
                        "      - name: g\n"
                        "        exactly: {deviceClassName: gpu.nvidia.com, count: 4}\n"
                        "      - name: bad\n"
                        "        exactly: {}\n");
    expect_one_error_prefix(s, "spec.spec.devices.requests[1].exactly.deviceClassName",
                            "required field is missing");
    tly_claim_template *t = tly_store_find(s, TLY_K_RESOURCE_CLAIM_TEMPLATE, "ns", "t");
    assert_non_null(t);
    assert_int_equal(t->spec.nrequests, 2);
    assert_int_equal(t->spec.requests[0].count, 4);
}

static void test_device_class_selectors(void **state)
{
    (void)state;
    tly_store *s = load("apiVersion: resource.k8s.io/v1\n"
                        "kind: DeviceClass\n"
                        "metadata: {name: gpu.nvidia.com}\n"
                        "spec:\n"
                        "  selectors:\n"
                        "  - cel:\n"
                        "      expression: device.driver == \"gpu.nvidia.com\"\n"
                        "  - cel: {}\n");
    expect_one_error_prefix(s, "spec.selectors[1].cel.expression", "required field is missing");
    tly_device_class *dc = tly_store_find(s, TLY_K_DEVICE_CLASS, NULL, "gpu.nvidia.com");
    assert_non_null(dc);
    assert_int_equal(dc->nselectors, 1);
    assert_string_equal(dc->selectors[0], "device.driver == \"gpu.nvidia.com\"");
}

/* ---------------------------------------------------------------------- */
/* Robustness                                                             */
/* ---------------------------------------------------------------------- */

/*
** Every field of the wrong shape (a list for a map, a map for a string, a
** scalar for a list) is an error and decoding goes on: the object is still
** stored and nothing crashes (this test matters most under ASan).
*/
static void test_malformed_shapes_are_errors_never_crashes(void **state)
{
    (void)state;
    static const char *const docs[] = {
        QUEUE_HEAD "spec: [1]\n",
        QUEUE_HEAD "spec: {parentQueue: [a], priority: high, resources: [], "
                   "accountedResources: {a: b}, admissionGating: yes}\n",
        QUEUE_HEAD "spec: {resources: {cpu: 1, gpu: {quota: {}}}, accountedResources: [[], ~]}\n",
        ACCRES_HEAD "spec: {sources: {a: b}, defaults: [1]}\n",
        ACCRES_HEAD "spec: {sources: [1, ~, [], {resourceName: [x]}, {dra: x}, {podAnnotation: []}]}\n",
        ACCRES_HEAD "spec: {sources: [{dra: {deviceClassName: x}, match: [], quantity: 3}]}\n",
        ACCRES_HEAD "spec: {sources: [{dra: {deviceClassName: x}, match: {nodeLabels: [a], "
                    "dra: {deviceAttributes: {a: 1, b: [], c: {int: x}}}}, "
                    "quantity: {dra: {selectedCapacity: 1, opaqueConfigField: []}}}]}\n",
        RUN_HEAD "spec: 3\nstatus: []\n",
        RUN_HEAD "spec: {runtime: 5, resources: {requests: [1]}, mode: [], affinity: []}\n",
        RUN_HEAD "spec: {runtime: a, resources: {requests: {a: [], b: {}, c: true, d: ~}}, "
                 "mode: {task: 1},\n"
                 "  affinity: {runAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [1, "
                 "{labelSelector: 1, topologyKey: 2}],\n"
                 "    preferredDuringSchedulingIgnoredDuringExecution: [1, {weight: x, "
                 "runAffinityTerm: 2}]}, runAntiAffinity: 1}}\n",
        "apiVersion: kruntimes.io/v1alpha1\nkind: Runtime\nmetadata: {name: r}\n"
        "spec: {capacity: {resources: [1]}}\n",
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\n"
        "spec: {devices: {requests: [1, {name: a, exactly: 1, firstAvailable: 2}, "
        "{name: b, firstAvailable: [1, {}]}], config: [1, {opaque: []}, {opaque: {}}]}}\n"
        "status: {allocation: {devices: {results: [1, {}], config: 2}}, reservedFor: {}}\n",
        "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata: {name: c}\n"
        "spec: {devices: {requests: [{name: a, count: -1, allocationMode: All, "
        "selectors: [1, {cel: 1}]}]}}\n",
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t}\n"
        "spec: {spec: []}\n",
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
        "spec: {driver: [], pool: 1, nodeName: {}, allNodes: 1, devices: [1, {name: d, "
        "basic: 1}, {name: e, attributes: [], capacity: {m: [], n: {value: x}, o: {}}}]}\n",
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: d}\n"
        "spec: {selectors: {}}\n",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        tly_store *s = load(docs[i]);
        if (ndiags(s, TLY_SEV_ERROR) == 0) {
            print_diags(s);
            fail_msg("document %zu: expected errors", i);
        }
        uint32_t stored = 0;
        for (int k = 0; k < TLY_K_COUNT; k++)
            stored += tly_store_count(s, k);
        assert_int_equal(stored, 1);
    }
}

/* ---------------------------------------------------------------------- */

#define T(fn) cmocka_unit_test_teardown(fn, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_accres_seed_examples_decode_without_diagnostics),
        T(test_queue_seed_examples_have_no_errors_only_the_resources_warning),
        T(test_accres_seed_gpu_memory_sources_in_detail),
        T(test_accres_seed_match_rules_are_kept),
        T(test_queue_v2_fields_are_decoded),
        T(test_queue_defaults_when_fields_are_absent),
        T(test_queue_admission_gating_false_is_zero),
        T(test_queue_empty_parent_means_top_level),
        T(test_queue_without_resources_warns),
        T(test_queue_without_spec_warns_at_the_object),
        T(test_queue_duplicate_resource_ref_is_an_error_at_the_later_entry),
        T(test_queue_accounted_resource_limit_is_required),
        T(test_queue_accounted_resource_ref_is_required_and_non_empty),
        T(test_queue_limit_must_be_minus_one_or_non_negative),
        T(test_queue_limit_must_be_a_quantity),
        T(test_queue_accounted_resources_entry_must_be_a_map),
        T(test_accres_absent_defaults_limit_means_unlimited),
        T(test_accres_defaults_limit_is_read),
        T(test_accres_sources_is_required),
        T(test_accres_sources_must_not_be_empty),
        T(test_accres_source_sets_exactly_one_of_resource_name_dra_pod_annotation),
        T(test_accres_resource_name_source_takes_no_quantity),
        T(test_accres_quantity_dra_only_with_a_dra_source),
        T(test_accres_match_dra_only_with_a_dra_source),
        T(test_accres_quantity_pod_annotation_only_with_a_pod_annotation_source),
        T(test_accres_quantity_pod_annotation_unit_overrides_or_agrees),
        T(test_accres_pod_annotation_units_that_differ_are_an_error),
        T(test_accres_unit_is_a_suffix_or_any_word_of_letters),
        T(test_accres_unit_must_be_a_non_empty_word_of_letters),
        T(test_accres_quantity_dra_sets_exactly_one_of_capacity_or_opaque_field),
        T(test_accres_dra_quantity_rules_have_required_fields),
        T(test_accres_source_kinds_have_required_fields),
        T(test_accres_resource_name_must_be_a_kubernetes_resource_name),
        T(test_accres_device_attribute_sets_exactly_one_value_type),
        T(test_accres_negative_default_limit_other_than_minus_one_is_an_error),
        T(test_runtime_capacity_resources_are_read),
        T(test_run_seed_example_decodes),
        T(test_run_integer_requests_are_valid_in_any_literal_form),
        T(test_run_non_integer_or_negative_requests_are_invalid),
        T(test_run_mode_sets_exactly_one_of_task_or_function),
        T(test_run_runtime_is_a_required_label_value),
        T(test_run_affinity_terms_are_read),
        T(test_run_affinity_term_rules),
        T(test_run_status_is_read),
        T(test_run_phase_is_an_enum_that_allows_empty),
        T(test_resource_slice_v1_attributes_and_capacity),
        T(test_resource_slice_v1beta1_nests_device_content_under_basic),
        T(test_resource_slice_requires_driver_and_pool),
        T(test_resource_claim_v1_allocation_result_and_opaque_config),
        T(test_resource_claim_reserved_for_is_read),
        T(test_resource_claim_v1beta1_request_fields_sit_on_the_request),
        T(test_resource_claim_v1_request_sets_exactly_or_first_available),
        T(test_resource_claim_template_reads_spec_spec),
        T(test_device_class_selectors),
        T(test_malformed_shapes_are_errors_never_crashes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
