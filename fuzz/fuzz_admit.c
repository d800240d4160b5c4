/*
** fuzz_admit.c: libFuzzer target for the AdmissionReview handler
** (admit.h, resize.h): the same function `tally admit` and `tally serve`
** call. The input is the request body; the state is a small fixed cluster
** (a queue tree with limits, an AccountedResource, a PodGroup, bound pods, a
** Runtime, and a Run CRD with schema bounds, CEL and transition rules, so
** that Run reviews go through crd.c and cel.c too), built once. Every response is written out (to /dev/null) and
** freed. Failures: crashes, sanitizer reports, leaks, and a response
** without a uid for a body that was accepted.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/admit.h"
#include "tally/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *state_yaml =
    "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: root}\n"
    "spec: {resources: {cpu: {quota: 4000, limit: 8000}, memory: {quota: -1, limit: 64000}, "
    "gpu: {quota: 2, limit: 4}}}\n---\n"
    "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: team-a}\n"
    "spec: {parentQueue: root, resources: {cpu: {quota: 1000, limit: 2000}, memory: {quota: -1, "
    "limit: -1}, gpu: {quota: -1, limit: -1}}, accountedResources: [{resourceRef: gpu, limit: '2'}]}\n---\n"
    "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\nmetadata: {name: gpu}\n"
    "spec: {sources: [{resourceName: nvidia.com/gpu}]}\n---\n"
    "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: pg, namespace: team-a}\n"
    "spec: {queue: team-a, minMember: 1}\n---\n"
    "apiVersion: v1\nkind: Pod\nmetadata: {name: trainer, namespace: team-a, annotations: "
    "{pod-group-name: pg}}\nspec: {schedulerName: kai-scheduler, nodeName: n1, containers: [{name: "
    "main, resources: {requests: {cpu: '1', memory: 1Gi}}}]}\nstatus: {phase: Running}\n---\n"
    "apiVersion: kruntimes.io/v1alpha1\nkind: Runtime\nmetadata: {name: python, namespace: default}\n"
    "spec: {capacity: {resources: {runs: '4'}}}\n---\n"
    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: runs.kruntimes.io}\n"
    "spec:\n  group: kruntimes.io\n  names: {kind: Run, plural: runs}\n  versions:\n  - name: v1alpha1\n"
    "    served: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n"
    "          spec:\n            type: object\n            required: [runtime]\n"
    "            x-kubernetes-validations:\n            - {rule: 'self.runtime == oldSelf.runtime'}\n"
    "            - {rule: \"!has(self.source) || !(has(self.source.inline) && has(self.source.repoURL))\"}\n"
    "            properties:\n              runtime: {type: string, maxLength: 63, pattern: '^[a-z]+$'}\n"
    "              priority: {type: integer, maximum: 10}\n"
    "              tags: {type: array, items: {type: string}, x-kubernetes-list-type: set}\n"
    "              ports:\n                type: array\n                x-kubernetes-list-type: map\n"
    "                x-kubernetes-list-map-keys: [name]\n                items:\n"
    "                  type: object\n                  required: [name]\n"
    "                  x-kubernetes-validations: [{rule: 'self.name == oldSelf.name'}]\n"
    "                  properties: {name: {type: string}, port: {type: integer}}\n"
    "              source: {type: object, x-kubernetes-preserve-unknown-fields: true}\n"
    "              mode: {type: object, x-kubernetes-preserve-unknown-fields: true}\n"
    "              resources: {type: object, x-kubernetes-preserve-unknown-fields: true}\n";

static tly_store *state(void)
{
    static tly_store *s;
    if (!s) {
        s = tly_store_create();
        tly_store_load_string(s, "state.yaml", state_yaml, strlen(state_yaml));
        tly_store_finish(s);
    }
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        abort();
    tly_admit_result res;
    char err[256];
    if (tly_admit_review(state(), (const char *)data, size, &res, err, sizeof err) == 0) {
        if (!res.uid)
            abort();
        tly_admit_write_response(sink, &res, size & 1);
        tly_admit_result_free(&res);
    }
    return 0;
}
