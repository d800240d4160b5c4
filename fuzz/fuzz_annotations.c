/*
** fuzz_annotations.c: libFuzzer target for the readers of annotation
** values: kruntimes capacity annotations (the per-resource form and the
** JSON object kruntimes.io/capacities, through tly_runtime_pod_capacity),
** the small-value parser tly_parse_value with path lookups as the
** opaque-config reader does them, and AccountedResource podAnnotation
** charges (a number times a unit). The input is the annotation value.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tally/accounted.h"
#include "tally/kruntimes.h"
#include "tally/podreq.h"
#include "tally/queues.h"
#include "tally/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *ars_yaml =
    "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\nmetadata: {name: mem}\n"
    "spec: {sources: [{podAnnotation: {key: gpu-memory, unit: Mi}}]}\n---\n"
    "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\nmetadata: {name: compute}\n"
    "spec: {sources: [{podAnnotation: {key: gpu-compute, unit: percent}}]}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tly_store *s;
    static tly_queues *qs;
    if (!s) {
        s = tly_store_create();
        tly_store_load_string(s, "ars.yaml", ars_yaml, strlen(ars_yaml));
        tly_store_finish(s);
        qs = tly_queues_create(s);
    }
    char *v = malloc(size + 1);
    if (!v)
        return 0;
    memcpy(v, data, size);
    v[size] = '\0';
    tly_arena *a = tly_arena_create(0);

    /* A pod carrying the value in every annotation the readers look at. */
    tly_kv kv[4] = {{"kruntimes.io/capacities", v}, {"kruntimes.io/capacity.example.com/gpu", v},
                    {"gpu-memory", v}, {"gpu-compute", v}};
    tly_pod pod;
    memset(&pod, 0, sizeof pod);
    pod.meta.kind = TLY_K_POD;
    pod.meta.name = "p";
    pod.meta.ns = "default";
    pod.meta.annotations.v = kv;
    pod.meta.annotations.n = 4;
    tly_rlist cap;
    tly_runtime_pod_capacity(&pod, tly_store_names(s), a, &cap, NULL);

    tly_node *n = tly_parse_value(v, size, a);
    if (n) {
        (void)tly_node_path(n, "sharing.mpsConfig.defaultPinnedDeviceMemoryLimit");
        (void)tly_node_path(n, "a.b.c.d.e.f.g");
    }

    tly_podreq r;
    memset(&r, 0, sizeof r);
    tly_qty out[4];
    const char *problem = NULL;
    tly_accounted_charges(qs, &pod, &r, NULL, 0, out, &problem, a);
    tly_arena_destroy(a);
    free(v);
    return 0;
}
