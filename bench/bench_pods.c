/*
** bench_pods.c: pod placement benchmark under queue policy (`make bench`).
**
**   bench-pods NODES LEAF_QUEUES ACCOUNTED_RESOURCES PODS [UNRELATED]
**   bench-pods --emit NODES LEAF_QUEUES ACCOUNTED_RESOURCES PODS [UNRELATED]
**   bench-pods --realistic SCALE [SEED [once]]
**   bench-pods --file FILE [once]
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
** --realistic builds issue 16's cluster (gen_cluster.c, the bytes that
** `tally-gen cluster SCALE SEED` writes) and times the same engine, printing
** the pending pods decided per second over all outcomes and, from the time
** each workload's decision took (tly_podsched_set_unit_hook), per outcome:
** Bound, Gated, Unschedulable (Invalid and the rest under "other"). Times
** are the thread's CPU time (the machine is shared); wall time is shown too.
**
** --file loads FILE (bench/gen_dra_heavy.py writes the DRA-heavy cluster of
** issue 18) and times the same engine with the same split, UnsupportedConstraint
** (the DRA search reached tally's bound of 200,000 device trials on a node)
** counted apart from Unschedulable, and the DRA device trials per pod of each
** outcome, the searches (one per pod and node tried) and the most trials one
** search made. once: the engine alone, for callgrind (--toggle-collect=place).
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

#include <sys/resource.h>

#include "tally/podsched.h"
#include "tally/store.h"

#include "bench.h"
#include "gen_cluster.h"

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

/* ---- the realistic cluster -------------------------------------------------------- */

enum { O_BOUND, O_GATED, O_UNSCHED, O_UNSUP, O_OTHER, O_COUNT };
static const char *outcome_names[O_COUNT] = {"Bound", "Gated", "Unschedulable", "UnsupportedConstraint",
                                             "other"};

typedef struct {
    tly_podsched *ps;
    uint32_t *pods, n;     /* the workload being decided (place_unit compacts its array) */
    double t0;
    uint64_t s0;           /* DRA device trials before it */
    bool unsup;            /* count UnsupportedConstraint apart from Unschedulable */
    double secs[O_COUNT];  /* decision time, split over the outcomes of each workload's pods */
    uint64_t steps[O_COUNT];
    unsigned count[O_COUNT];
} unit_clock;

/* CPU seconds of this thread: steadier than wall time on a shared machine. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Minor page faults of the process so far: fresh arena pages the kernel zeroes. */
static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static int outcome(const tly_ps_result *r, bool unsup)
{
    const char *st = r->state;
    if (!strcmp(st, "Unschedulable"))
        return unsup && r->reason && !strcmp(r->reason, "UnsupportedConstraint") ? O_UNSUP : O_UNSCHED;
    return !strcmp(st, "Bound") ? O_BOUND : !strcmp(st, "Gated") ? O_GATED : O_OTHER;
}

static uint64_t dra_trials(const tly_podsched *ps)
{
    uint64_t max, total, tries;
    tly_podsched_dra_stats(ps, &max, &total, &tries);
    return total;
}

static void on_unit(void *ctx, const uint32_t *pods, uint32_t n, bool done)
{
    unit_clock *c = ctx;
    if (!done) {
        memcpy(c->pods, pods, n * sizeof *pods);
        c->n = n;
        c->s0 = dra_trials(c->ps);
        c->t0 = cpu_s();
        return;
    }
    double dt = cpu_s() - c->t0;
    uint64_t ds = dra_trials(c->ps) - c->s0;
    for (uint32_t k = 0; k < c->n; k++) {
        int o = outcome(tly_podsched_pod(c->ps, c->pods[k]), c->unsup);
        c->secs[o] += dt / c->n;
        c->steps[o] += ds / c->n;
        c->count[o]++;
    }
}

/* Runs the engine over s with the unit clock: per outcome counts, CPU seconds, DRA trials. */
static void clocked(tly_store *s, unit_clock *c)
{
    c->pods = tly_xmalloc((tly_store_count(s, TLY_K_POD) + 1) * sizeof *c->pods);
    c->ps = tly_podsched_create(s);
    tly_podsched_set_unit_hook(c->ps, on_unit, c);
    tly_podsched_run(c->ps);
}

static int realistic(unsigned scale, uint64_t seed, bool once)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    gen_cluster(f, scale, seed);
    fclose(f);
    tly_store *s = bench_load_as("bench-pods", "cluster.json", text, len);
    /* Plain timing first (no hook), then the split with the hook on a fresh engine. */
    double t0 = now_s(), c0 = cpu_s();
    long f0 = minor_faults();
    /* once (callgrind) counts place(); otherwise create and run are timed apart. */
    tly_podsched *ps = once ? place(s) : tly_podsched_create(s);
    double cm = cpu_s();
    long f1 = minor_faults();
    if (!once)
        tly_podsched_run(ps);
    double t1 = now_s(), c1 = cpu_s();
    long f2 = minor_faults();
    unsigned pending = 0;
    for (uint32_t i = 0; i < tly_podsched_npods(ps); i++) {
        const char *st = tly_podsched_pod(ps, i)->state;
        pending += strcmp(st, "Running") && strcmp(st, "Succeeded") && strcmp(st, "Failed");
    }
    tly_podsched_destroy(ps);
    printf("realistic: scale %u, %u nodes, %u pods, %u pending: decided in %.3f s CPU (%.3f s wall): %.0f pods/s\n",
           scale, tly_store_count(s, TLY_K_NODE), tly_store_count(s, TLY_K_POD), pending, c1 - c0, t1 - t0,
           pending / (c1 - c0));
    printf("realistic: create %.3f s CPU (%ld page faults), run %.3f s CPU (%ld page faults)\n", cm - c0, f1 - f0,
           c1 - cm, f2 - f1);
    if (once) {
        /* Under callgrind: the instructions of one run are what is wanted. */
        tly_store_destroy(s);
        return 0;
    }
    unit_clock c = {0};
    clocked(s, &c);
    for (int o = 0; o < O_COUNT; o++)
        if (o != O_UNSUP)
            printf("outcome %s: %u pods, %.3f s: %.0f pods/s\n", outcome_names[o], c.count[o], c.secs[o],
                   c.secs[o] > 0 ? c.count[o] / c.secs[o] : 0.0);
    tly_podsched_destroy(c.ps);
    free(c.pods);
    tly_store_destroy(s);
    return 0;
}

/*
** --file FILE [once]: the engine over a generated file (bench/gen_dra_heavy.py),
** timed with the unit clock: per outcome, with UnsupportedConstraint (the DRA
** search reached tally's bound on a node and stopped there) apart from
** Unschedulable, and the DRA search counts (tly_podsched_dra_stats).
*/
static int from_file(const char *path, bool once)
{
    tly_store *s = tly_store_create();
    tly_store_load_path(s, path);
    tly_store_finish(s);
    size_t errs = tly_diags_count_sev(tly_store_diags(s), TLY_SEV_ERROR);
    if (errs) {
        fprintf(stderr, "bench-pods: %s has %zu errors\n", path, errs);
        tly_diags_print(stderr, tly_store_diags(s), TLY_SEV_ERROR);
        return 1;
    }
    if (once) {
        tly_podsched_destroy(place(s));
        tly_store_destroy(s);
        return 0;
    }
    unit_clock c = {.unsup = true};
    double t0 = now_s(), c0 = cpu_s();
    clocked(s, &c);
    double t1 = now_s(), c1 = cpu_s();
    unsigned pending = 0;
    for (int o = 0; o < O_COUNT; o++)
        pending += c.count[o];
    uint64_t max, total, tries;
    tly_podsched_dra_stats(c.ps, &max, &total, &tries);
    printf("file: %u nodes, %u pending pods: decided in %.3f s CPU (%.3f s wall): %.0f pods/s\n",
           tly_store_count(s, TLY_K_NODE), pending, c1 - c0, t1 - t0, pending / (c1 - c0));
    printf("dra searches: %llu, device trials %llu, most in one search %llu\n", (unsigned long long)tries,
           (unsigned long long)total, (unsigned long long)max);
    for (int o = 0; o < O_COUNT; o++)
        printf("outcome %s: %u pods, %.3f s: %.0f pods/s, %.0f device trials/pod\n", outcome_names[o],
               c.count[o], c.secs[o], c.secs[o] > 0 ? c.count[o] / c.secs[o] : 0.0,
               c.count[o] ? (double)c.steps[o] / c.count[o] : 0.0);
    tly_podsched_destroy(c.ps);
    free(c.pods);
    tly_store_destroy(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--file"))
        return from_file(argv[2], argc > 3 && !strcmp(argv[3], "once"));
    if (argc > 2 && !strcmp(argv[1], "--realistic"))
        return realistic((unsigned)atoi(argv[2]), argc > 3 ? strtoull(argv[3], NULL, 10) : 42,
                         argc > 4 && !strcmp(argv[4], "once"));
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
