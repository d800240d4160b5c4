/*
** test_placeclass.c: src/placeclass.c, the node classes a pod could use
** (placeclass.h), and tly_acc_node_classes (accounted.h), which the pod
** engine and the gating controller share: which nodes charge a pod alike,
** which of those classes the static predicates let a pod use, and when a
** charge can depend on placement at all.
**
** The cluster, loaded through the real store: two H200 nodes alike, an A100,
** an A100 tainted pool=t, an A100 with another GPU memory, and an
** AccountedResource on H200 nodes.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tally/accounted.h"
#include "tally/nodefit.h"
#include "tally/placeclass.h"
#include "tally/queues.h"

#define NODE(name, product, mib, spec)                                                                   \
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: " name "\n"                                          \
    "  labels: {nvidia.com/gpu.product: " product ", nvidia.com/gpu.memory: '" mib "'}\n"                \
    "spec: {" spec "}\n"                                                                                 \
    "status:\n  allocatable: {cpu: '8', memory: 32Gi, pods: '110', nvidia.com/gpu: '8'}\n"              \
    "  conditions: [{type: Ready, status: 'True'}]\n---\n"

#define POD(name, spec)                                                                                  \
    "apiVersion: v1\nkind: Pod\nmetadata: {name: " name ", namespace: ns}\n"                             \
    "spec:\n  schedulerName: kai-scheduler\n" spec                                                       \
    "  containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: '1'}, "                   \
    "limits: {nvidia.com/gpu: '1'}}}]\n---\n"

#define H200_AR                                                                                          \
    "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\nmetadata: {name: gpu-h200}\n"     \
    "spec:\n  defaults: {limit: '-1'}\n"                                                                 \
    "  sources: [{resourceName: nvidia.com/gpu, match: {nodeLabels: {nvidia.com/gpu.product: H200}}}]\n---\n"

static const char *CLUSTER =
    H200_AR
    NODE("a100-1", "A100", "81920", "")
    NODE("a100-40", "A100", "40960", "")
    NODE("a100-t", "A100", "81920", "taints: [{key: pool, value: t, effect: NoSchedule}]")
    NODE("h200-1", "H200", "143771", "")
    NODE("h200-2", "H200", "143771", "")
    POD("any", "")
    POD("h200", "  nodeSelector: {nvidia.com/gpu.product: H200}\n")
    POD("tainted", "  nodeSelector: {nvidia.com/gpu.product: A100}\n"
                   "  tolerations: [{key: pool, operator: Exists}]\n")
    POD("nowhere", "  nodeSelector: {nvidia.com/gpu.product: B200}\n")
    POD("byname", "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                  "        nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [h200-2]}]}]\n");

typedef struct {
    tly_store *s;
    tly_queues *qs;
    uint64_t mem[8];
    uint32_t nnodes;
    tly_placeclasses *pc;
} fixture;

static void setup(fixture *f, const char *yaml)
{
    f->s = load_text("t.yaml", yaml);
    f->qs = tly_queues_create(f->s);
    f->nnodes = tly_store_count(f->s, TLY_K_NODE);
    assert_true(f->nnodes <= 8);
    for (uint32_t i = 0; i < f->nnodes; i++)
        f->mem[i] = tly_node_gpu_memory_mib(tly_store_at(f->s, TLY_K_NODE, i));
    const tly_pod *pods[8];
    uint32_t np = tly_store_count(f->s, TLY_K_POD);
    assert_true(np <= 8);
    for (uint32_t i = 0; i < np; i++)
        pods[i] = tly_store_at(f->s, TLY_K_POD, i);
    f->pc = tly_placeclasses_create(f->s, f->qs, f->mem, pods, np);
}

static void teardown(fixture *f)
{
    tly_placeclasses_destroy(f->pc);
    tly_queues_destroy(f->qs);
    tly_store_destroy(f->s);
}

/* The nodes tly_placeclasses_for answers for pod ns/name, comma-separated. */
static const char *classes(fixture *f, const char *name)
{
    static char buf[256];
    const tly_k8s_node *const *nodes;
    uint32_t n = tly_placeclasses_for(f->pc, tly_store_find(f->s, TLY_K_POD, "ns", name), &nodes);
    buf[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, nodes[i]->meta.name);
    }
    return buf;
}

static void test_nodes_alike_are_one_class(void **state)
{
    (void)state;
    fixture f;
    setup(&f, CLUSTER);
    tly_acc_match m;
    const tly_k8s_node *nodes[8];
    for (uint32_t i = 0; i < f.nnodes; i++)
        nodes[i] = tly_store_at(f.s, TLY_K_NODE, i);
    tly_acc_match_build(&m, f.qs, nodes, f.nnodes);
    uint32_t cls[8];
    /* a100-1 and a100-t charge alike (the taint is not a charge); a100-40 has other GPUs; the H200s match. */
    assert_int_equal(tly_acc_node_classes(&m, f.mem, f.nnodes, cls), 3);
    assert_int_equal(cls[0], 0);
    assert_int_equal(cls[1], 1);
    assert_int_equal(cls[2], 0);
    assert_int_equal(cls[3], 2);
    assert_int_equal(cls[4], 2);
    tly_acc_match_free(&m);
    teardown(&f);
}

static void test_a_pod_uses_the_classes_its_static_predicates_allow(void **state)
{
    (void)state;
    fixture f;
    setup(&f, CLUSTER);
    /* One node per class, the first in name order where the pod passes; the tainted A100 is not. */
    assert_string_equal(classes(&f, "any"), "a100-1,a100-40,h200-1");
    assert_string_equal(classes(&f, "h200"), "h200-1");
    assert_string_equal(classes(&f, "tainted"), "a100-1,a100-40");
    assert_string_equal(classes(&f, "nowhere"), "");
    /* matchFields: evaluated node by node, with the same answer shape. */
    assert_string_equal(classes(&f, "byname"), "h200-2");
    /* Asked again (the per-constraint answer is kept): the same. */
    assert_string_equal(classes(&f, "h200"), "h200-1");
    teardown(&f);
}

static void test_placement_matters_only_when_a_charge_can_differ(void **state)
{
    (void)state;
    fixture f;
    setup(&f, CLUSTER);
    assert_true(tly_placement_matters(f.qs, f.mem, f.nnodes));  /* gpu-h200 matches node labels */
    teardown(&f);
    /* No AccountedResource and one GPU memory: nothing depends on the node. */
    setup(&f, NODE("a", "A100", "81920", "") NODE("b", "A100", "81920", "") POD("any", ""));
    assert_false(tly_placement_matters(f.qs, f.mem, f.nnodes));
    teardown(&f);
    /* GPU memories that differ: a gpu-memory request's share would. */
    setup(&f, NODE("a", "A100", "81920", "") NODE("b", "A100", "40960", "") POD("any", ""));
    assert_true(tly_placement_matters(f.qs, f.mem, f.nnodes));
    teardown(&f);
    /* No nodes at all: no class to use. */
    setup(&f, POD("any", ""));
    assert_false(tly_placement_matters(f.qs, f.mem, f.nnodes));
    assert_string_equal(classes(&f, "any"), "");
    teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodes_alike_are_one_class),
        cmocka_unit_test(test_a_pod_uses_the_classes_its_static_predicates_allow),
        cmocka_unit_test(test_placement_matters_only_when_a_charge_can_differ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
