/*
** bench_pods.c: pod placement benchmark under queue policy (`make bench`).
**
**   bench-pods NODES LEAF_QUEUES ACCOUNTED_RESOURCES PODS [UNRELATED]
**   bench-pods --emit NODES LEAF_QUEUES ACCOUNTED_RESOURCES PODS [UNRELATED]
**
** Builds a synthetic cluster in memory (deterministic): NODES nodes of two
** GPU products (H200 and A100, 8 GPUs each, zone labels), a queue tree three
** levels deep (LEAF_QUEUES leaves under LEAF_QUEUES/10 projects under
** LEAF_QUEUES/100 departments) with spec.resources limits and
** AccountedResource limits, ACCOUNTED_RESOURCES AccountedResources (gpu,
** gpu-h200, gpu-a100, gpu-memory, efa, then per-zone CPU resources), and
** PODS pending kai-scheduler pods (whole GPUs, fractions, CPU-only). Loads
** it through the normal loader (not timed), then times the engine
** (tly_podsched_create + run) and prints pods per second. With --emit it
** only writes that input (multi-document YAML) to stdout, so the real
** command line can run on the same cluster (`tally simulate FILE`).
**
** UNRELATED (default 0) adds that many AccountedResources that concern none
** of the pods on any node, with limits in every leaf queue: half charge
** resources no pod requests (example.com/fpga-N), half charge cpu only on
** nodes with a label no node has (rack: rN). They show what a placement
** pays for AccountedResources that do not match it.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/podsched.h"
#include "tally/store.h"

#include "bench.h"

static char *build(unsigned nodes, unsigned leaves, unsigned ars, unsigned pods, unsigned unrelated,
                   size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    unsigned zones = 8;
    for (unsigned i = 0; i < nodes; i++) {
        int h200 = i % 2 == 0;
        fprintf(f,
                "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-%05u\n  labels:\n"
                "    nvidia.com/gpu.product: %s\n    nvidia.com/gpu.memory: \"%s\"\n    zone: z%u\n"
                "status:\n  allocatable: {cpu: \"192\", memory: 2Ti, pods: \"256\", nvidia.com/gpu: \"8\"%s}\n"
                "  conditions:\n  - {type: Ready, status: \"True\"}\n",
                i, h200 ? "H200" : "A100", h200 ? "143771" : "81920", i % zones,
                h200 ? ", vpc.amazonaws.com/efa: \"16\"" : "");
    }
    const char *fixed[] = {"gpu", "gpu-h200", "gpu-a100", "gpu-memory", "efa"};
    for (unsigned a = 0; a < ars; a++) {
        if (a < 5) {
            const char *src = a == 0 ? "  - resourceName: nvidia.com/gpu\n"
                              : a == 1 ? "  - resourceName: nvidia.com/gpu\n    match:\n      nodeLabels: {nvidia.com/gpu.product: H200}\n"
                              : a == 2 ? "  - resourceName: nvidia.com/gpu\n    match:\n      nodeLabels: {nvidia.com/gpu.product: A100}\n"
                              : a == 3 ? "  - podAnnotation: {key: gpu-memory, unit: Mi}\n"
                                       : "  - resourceName: vpc.amazonaws.com/efa\n";
            fprintf(f, "---\napiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n"
                       "metadata: {name: %s}\nspec:\n  defaults: {limit: \"-1\"}\n  sources:\n%s",
                    fixed[a], src);
        } else {
            fprintf(f, "---\napiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n"
                       "metadata: {name: cpu-z%u}\nspec:\n  defaults: {limit: \"-1\"}\n  sources:\n"
                       "  - resourceName: cpu\n    match:\n      nodeLabels: {zone: z%u}\n",
                    a, a % zones);
        }
    }
    for (unsigned u = 0; u < unrelated; u++) {
        if (u % 2 == 0)
            fprintf(f, "---\napiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n"
                       "metadata: {name: unrelated-%u}\nspec:\n  defaults: {limit: \"-1\"}\n  sources:\n"
                       "  - resourceName: example.com/fpga-%u\n",
                    u, u);
        else
            fprintf(f, "---\napiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n"
                       "metadata: {name: unrelated-%u}\nspec:\n  defaults: {limit: \"-1\"}\n  sources:\n"
                       "  - resourceName: cpu\n    match:\n      nodeLabels: {rack: r%u}\n",
                    u, u);
    }
    unsigned mids = leaves / 10 ? leaves / 10 : 1, tops = leaves / 100 ? leaves / 100 : 1;
    for (unsigned t = 0; t < tops; t++)
        fprintf(f, "---\napiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: dept-%u}\n"
                   "spec:\n  resources:\n    cpu: {quota: -1, limit: -1}\n    memory: {quota: -1, limit: -1}\n"
                   "    gpu: {quota: -1, limit: %u}\n",
                t, 40 * 10 * 10);
    for (unsigned m = 0; m < mids; m++)
        fprintf(f, "---\napiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: proj-%u}\n"
                   "spec:\n  parentQueue: dept-%u\n  resources:\n    cpu: {quota: -1, limit: -1}\n"
                   "    memory: {quota: -1, limit: -1}\n    gpu: {quota: -1, limit: -1}\n"
                   "  accountedResources:\n  - {resourceRef: gpu-h200, limit: \"200\"}\n",
                m, m % tops);
    for (unsigned l = 0; l < leaves; l++) {
        fprintf(f, "---\napiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: team-%u}\n"
                   "spec:\n  parentQueue: proj-%u\n  resources:\n    cpu: {quota: 100000, limit: -1}\n"
                   "    memory: {quota: -1, limit: -1}\n    gpu: {quota: 16, limit: 64}\n"
                   "  accountedResources:\n  - {resourceRef: gpu, limit: \"64\"}\n",
                l, l % mids);
        if (ars > 3)
            fprintf(f, "  - {resourceRef: gpu-memory, limit: \"8Ti\"}\n");
        for (unsigned u = 0; u < unrelated; u++)
            fprintf(f, "  - {resourceRef: unrelated-%u, limit: \"100\"}\n", u);
    }
    unsigned x = 7;
    for (unsigned i = 0; i < pods; i++) {
        x = x * 1103515245u + 12345u;
        unsigned kind = (x >> 16) % 10;
        const char *res = kind < 6 ? ", nvidia.com/gpu: \"1\"" : "";
        const char *ann = kind >= 6 && kind < 8 ? "\n  annotations: {gpu-fraction: \"0.5\"}" : "";
        fprintf(f,
                "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p-%06u\n  namespace: bench\n"
                "  creationTimestamp: \"2026-11-29T10:00:00Z\"\n  labels: {kai.scheduler/queue: team-%u}%s\n"
                "spec:\n  schedulerName: kai-scheduler\n  containers:\n  - name: c\n"
                "    resources:\n      requests: {cpu: \"4\", memory: 32Gi%s}\n      limits: {memory: 32Gi%s}\n",
                i, x % leaves, ann, res, res);
    }
    fclose(f);
    return buf;
}

/* The engine alone (callgrind counts this function: --toggle-collect=place). */
__attribute__((noinline)) static tly_podsched *place(tly_store *s)
{
    tly_podsched *ps = tly_podsched_create(s);
    tly_podsched_run(ps);
    return ps;
}

int main(int argc, char **argv)
{
    int emit = argc > 1 && !strcmp(argv[1], "--emit");
    if (argc < 5 + emit) {
        fprintf(stderr, "usage: bench-pods [--emit] NODES LEAF_QUEUES ACCOUNTED_RESOURCES PODS [UNRELATED]\n");
        return 2;
    }
    unsigned nodes = (unsigned)atoi(argv[1 + emit]), leaves = (unsigned)atoi(argv[2 + emit]),
             ars = (unsigned)atoi(argv[3 + emit]), pods = (unsigned)atoi(argv[4 + emit]);
    unsigned unrelated = argc > 5 + emit ? (unsigned)atoi(argv[5 + emit]) : 0;
    size_t len;
    char *text = build(nodes, leaves, ars, pods, unrelated, &len);
    if (emit) {
        int ok = fwrite(text, 1, len, stdout) == len;
        free(text);
        return ok && fflush(stdout) == 0 ? 0 : 1;
    }
    tly_store *s = bench_load("bench-pods", text, len);
    double t0 = now_s();
    tly_podsched *ps = place(s);
    double t1 = now_s();
    unsigned bound = 0, gated = 0, unsched = 0;
    for (uint32_t i = 0; i < tly_podsched_npods(ps); i++) {
        const char *st = tly_podsched_pod(ps, i)->state;
        bound += !strcmp(st, "Bound");
        gated += !strcmp(st, "Gated");
        unsched += !strcmp(st, "Unschedulable");
    }
    printf("pods: %u nodes, %u leaf queues, %u AccountedResources (+%u unrelated), %u pods: %u bound, %u gated, "
           "%u unschedulable in %.3f s: %.0f pods/s\n",
           nodes, leaves, ars, unrelated, pods, bound, gated, unsched, t1 - t0, pods / (t1 - t0));
    tly_podsched_destroy(ps);
    tly_store_destroy(s);
    return 0;
}
