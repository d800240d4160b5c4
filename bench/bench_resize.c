/*
** bench_resize.c: resize admission benchmark (issue 5, `make bench`).
**
**   bench-resize [DECISIONS [PODS]]   time DECISIONS decisions (default 200, 10000 pods)
**   bench-resize --state [PODS]       print the generated state (YAML) and exit
**   bench-resize --review             print the review (compact JSON, one line) and exit
**   bench-resize --managed ...        the same, with metadata.managedFields in the review's
**                                     pods as the API server sends them (three managers)
**
** Builds a synthetic cluster in memory (deterministic): 100 nodes, a queue
** tree 4 levels deep (2 departments x 5 divisions x 10 projects x 20 teams:
** 2,112 queues, 2,000 leaves) with finite cpu and memory limits on every
** level, PODS Running kai-scheduler pods (1 cpu, 4Gi each) spread evenly over
** the leaves through the queue label, and one pods/resize AdmissionReview
** raising one of those pods from 1 to 2 cpu. The state goes through the
** normal loader (not timed). Then DECISIONS calls of tly_admit_review_scratch(), the
** engine as `tally serve` calls it (one scratch kept for every decision; `tally admit`
** makes one for its one review), are timed. A decision
** here is everything from the review's bytes to the verdict: decoding the
** JSON review (object and oldObject), the resize rule, building the queue
** ledger from every pod in the state, and the leaf-to-root walk. Writing the
** response is not included. The review is allowed (there is room on every
** level), so every level of the tree is checked.
**
** Instructions per decision: callgrind --toggle-collect=decide counts only
** the decision loop (bench.sh divides by DECISIONS).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/admit.h"
#include "tally/store.h"

#include "bench.h"

#define TOPS 2u
#define DIVS 5u
#define PROJS 10u
#define TEAMS 20u
#define LEAVES (TOPS * DIVS * PROJS * TEAMS)
#define NODES 100u

/* A queue with finite cpu and memory limits (cpu in millicores, memory in bytes). */
static void queue(FILE *f, const char *name, const char *parent, unsigned cpu_cores)
{
    fprintf(f, "---\napiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: %s}\nspec:\n", name);
    if (parent)
        fprintf(f, "  parentQueue: %s\n", parent);
    fprintf(f,
            "  resources:\n    cpu: {quota: -1, limit: %u}\n"
            "    memory: {quota: -1, limit: %llu}\n    gpu: {quota: -1, limit: -1}\n",
            cpu_cores * 1000u, (unsigned long long)cpu_cores * 8ull * 1024 * 1024 * 1024);
}

static void leaf_name(char *buf, size_t n, unsigned leaf)
{
    unsigned t = leaf / (DIVS * PROJS * TEAMS), d = leaf / (PROJS * TEAMS) % DIVS,
             p = leaf / TEAMS % PROJS, l = leaf % TEAMS;
    snprintf(buf, n, "dept%u-div%u-proj%u-team%u", t, d, p, l);
}

static char *build_state(unsigned pods, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    for (unsigned i = 0; i < NODES; i++)
        fprintf(f,
                "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-%03u\nstatus:\n"
                "  allocatable: {cpu: \"256\", memory: 4Ti, pods: \"250\"}\n"
                "  conditions:\n  - {type: Ready, status: \"True\"}\n",
                i);
    /* Limits in cores, 16 per leaf pod slot, so the tree has room on every level. */
    unsigned per_leaf = (pods + LEAVES - 1) / LEAVES * 16 + 16;
    char name[96], parent[96];
    for (unsigned t = 0; t < TOPS; t++) {
        snprintf(name, sizeof name, "dept%u", t);
        queue(f, name, NULL, per_leaf * DIVS * PROJS * TEAMS);
        for (unsigned d = 0; d < DIVS; d++) {
            snprintf(parent, sizeof parent, "dept%u", t);
            snprintf(name, sizeof name, "dept%u-div%u", t, d);
            queue(f, name, parent, per_leaf * PROJS * TEAMS);
            for (unsigned p = 0; p < PROJS; p++) {
                snprintf(parent, sizeof parent, "dept%u-div%u", t, d);
                snprintf(name, sizeof name, "dept%u-div%u-proj%u", t, d, p);
                queue(f, name, parent, per_leaf * TEAMS);
                for (unsigned l = 0; l < TEAMS; l++) {
                    snprintf(parent, sizeof parent, "dept%u-div%u-proj%u", t, d, p);
                    snprintf(name, sizeof name, "dept%u-div%u-proj%u-team%u", t, d, p, l);
                    queue(f, name, parent, per_leaf);
                }
            }
        }
    }
    for (unsigned i = 0; i < pods; i++) {
        leaf_name(name, sizeof name, i % LEAVES);
        fprintf(f,
                "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p-%05u\n  namespace: bench\n"
                "  uid: uid-p-%05u\n  creationTimestamp: \"2026-11-29T10:00:00Z\"\n"
                "  labels: {kai.scheduler/queue: %s}\n"
                "spec:\n  schedulerName: kai-scheduler\n  nodeName: node-%03u\n  containers:\n"
                "  - name: main\n    image: registry.example/train:1\n"
                "    resources:\n      requests: {cpu: \"1\", memory: 4Gi}\n      limits: {memory: 4Gi}\n"
                "status:\n  phase: Running\n  containerStatuses:\n  - name: main\n    ready: true\n"
                "    started: true\n    restartCount: 0\n    image: registry.example/train:1\n"
                "    state: {running: {startedAt: \"2026-11-29T10:00:05Z\"}}\n"
                "    allocatedResources: {cpu: \"1\", memory: 4Gi}\n"
                "    resources:\n      requests: {cpu: \"1\", memory: 4Gi}\n      limits: {memory: 4Gi}\n",
                i, i, name, i % NODES);
    }
    fclose(f);
    return buf;
}

/* --managed: the reviewed pods carry managedFields. */
static bool g_managed;

/*
** metadata.managedFields of the reviewed pod as a real API server keeps it: the client that
** created it, kube-scheduler's PodScheduled condition, the kubelet's status. Tally reads none
** of it; a real review carries it in object and oldObject (about 1.7 KB each here).
*/
static const char managed_fields[] =
    ",\"managedFields\":[{\"manager\":\"kubectl-client-side-apply\",\"operation\":\"Update\","
    "\"apiVersion\":\"v1\",\"time\":\"2026-11-29T10:00:00Z\",\"fieldsType\":\"FieldsV1\","
    "\"fieldsV1\":{\"f:metadata\":{\"f:annotations\":{\".\":{},\"f:kubectl.kubernetes.io/"
    "last-applied-configuration\":{}},\"f:labels\":{\".\":{},\"f:kai.scheduler/queue\":{}}},"
    "\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"main\\\"}\":{\".\":{},\"f:image\":{},"
    "\"f:imagePullPolicy\":{},\"f:name\":{},\"f:resources\":{\".\":{},\"f:limits\":{\".\":{},"
    "\"f:memory\":{}},\"f:requests\":{\".\":{},\"f:cpu\":{},\"f:memory\":{}}},"
    "\"f:terminationMessagePath\":{},\"f:terminationMessagePolicy\":{}}},\"f:dnsPolicy\":{},"
    "\"f:enableServiceLinks\":{},\"f:restartPolicy\":{},\"f:schedulerName\":{},"
    "\"f:securityContext\":{},\"f:terminationGracePeriodSeconds\":{}}}},"
    "{\"manager\":\"kai-scheduler\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
    "\"time\":\"2026-11-29T10:00:01Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:status\":"
    "{\"f:conditions\":{\".\":{},\"k:{\\\"type\\\":\\\"PodScheduled\\\"}\":{\".\":{},"
    "\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}}}}},"
    "\"subresource\":\"status\"},{\"manager\":\"kubelet\",\"operation\":\"Update\","
    "\"apiVersion\":\"v1\",\"time\":\"2026-11-29T10:00:05Z\",\"fieldsType\":\"FieldsV1\","
    "\"fieldsV1\":{\"f:status\":{\"f:conditions\":{\"k:{\\\"type\\\":\\\"ContainersReady\\\"}\":"
    "{\".\":{},\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}},"
    "\"k:{\\\"type\\\":\\\"Initialized\\\"}\":{\".\":{},\"f:lastProbeTime\":{},"
    "\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}},\"k:{\\\"type\\\":\\\"Ready\\\"}\":"
    "{\".\":{},\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}}},"
    "\"f:containerStatuses\":{},\"f:hostIP\":{},\"f:hostIPs\":{},\"f:phase\":{},\"f:podIP\":{},"
    "\"f:podIPs\":{\".\":{},\"k:{\\\"ip\\\":\\\"10.244.0.12\\\"}\":{\".\":{},\"f:ip\":{}}},"
    "\"f:startTime\":{}}},\"subresource\":\"status\"}]";

/* The reviewed pod, p-00000, as compact JSON with its spec cpu request set to `cpu`. */
static void pod_json(FILE *f, const char *cpu, int generation)
{
    char leaf[96];
    leaf_name(leaf, sizeof leaf, 0);
    fprintf(f,
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-00000\","
            "\"namespace\":\"bench\",\"uid\":\"uid-p-00000\",\"generation\":%d,"
            "\"creationTimestamp\":\"2026-11-29T10:00:00Z\",\"labels\":{\"kai.scheduler/queue\":\"%s\"}%s},"
            "\"spec\":{\"schedulerName\":\"kai-scheduler\",\"nodeName\":\"node-000\",\"containers\":"
            "[{\"name\":\"main\",\"image\":\"registry.example/train:1\",\"resources\":{\"requests\":"
            "{\"cpu\":\"%s\",\"memory\":\"4Gi\"},\"limits\":{\"memory\":\"4Gi\"}}}]},"
            "\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"main\",\"ready\":true,"
            "\"started\":true,\"restartCount\":0,\"image\":\"registry.example/train:1\","
            "\"state\":{\"running\":{\"startedAt\":\"2026-11-29T10:00:05Z\"}},"
            "\"allocatedResources\":{\"cpu\":\"1\",\"memory\":\"4Gi\"},\"resources\":{\"requests\":"
            "{\"cpu\":\"1\",\"memory\":\"4Gi\"},\"limits\":{\"memory\":\"4Gi\"}}}]}}",
            generation, leaf, g_managed ? managed_fields : "", cpu);
}

static char *build_review(size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    fputs("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
          "{\"uid\":\"bench-resize-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
          "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
          "\"subResource\":\"resize\",\"requestKind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
          "\"requestResource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
          "\"requestSubResource\":\"resize\",\"name\":\"p-00000\",\"namespace\":\"bench\","
          "\"operation\":\"UPDATE\",\"userInfo\":{\"username\":\"kubernetes-admin\",\"groups\":"
          "[\"system:masters\",\"system:authenticated\"]},\"object\":",
          f);
    pod_json(f, "2", 2);
    fputs(",\"oldObject\":", f);
    pod_json(f, "1", 1);
    fputs(",\"dryRun\":false,\"options\":{\"apiVersion\":\"meta.k8s.io/v1\",\"kind\":\"UpdateOptions\"}}}",
          f);
    fclose(f);
    return buf;
}

/*
** The decision loop (callgrind counts this function: --toggle-collect=decide). One scratch for
** every decision, as each worker of `tally serve` keeps one (admit.h).
*/
__attribute__((noinline)) static unsigned decide(const tly_store *s, tly_admit_scratch *sc, const char *review,
                                                 size_t len, unsigned n)
{
    unsigned allowed = 0;
    char err[256];
    for (unsigned i = 0; i < n; i++) {
        tly_admit_result res;
        if (tly_admit_review_scratch(s, NULL, sc, review, len, &res, err, sizeof err) != 0) {
            fprintf(stderr, "bench-resize: review refused: %s\n", err);
            exit(1);
        }
        allowed += res.allowed;
        tly_admit_result_free(&res);
    }
    return allowed;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--managed")) {
        g_managed = true;
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    if (argc > 1 && !strcmp(argv[1], "--review")) {
        size_t len;
        char *r = build_review(&len);
        fwrite(r, 1, len, stdout);
        putchar('\n');
        free(r);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "--state")) {
        size_t len;
        char *t = build_state(argc > 2 ? (unsigned)atoi(argv[2]) : 10000u, &len);
        fwrite(t, 1, len, stdout);
        free(t);
        return 0;
    }
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 200u;
    unsigned pods = argc > 2 ? (unsigned)atoi(argv[2]) : 10000u;
    if (n == 0 || pods == 0) {
        fprintf(stderr, "usage: bench-resize [--managed] [DECISIONS [PODS]] | --state [PODS] | [--managed] --review\n");
        return 2;
    }
    size_t len, rlen;
    char *text = build_state(pods, &len);
    tly_store *s = bench_load("bench-resize", text, len);
    char *review = build_review(&rlen);
    /* One decision first, to check the verdict (and warm the caches). */
    tly_admit_result res;
    char err[256];
    if (tly_admit_review(s, review, rlen, &res, err, sizeof err) != 0) {
        fprintf(stderr, "bench-resize: review refused: %s\n", err);
        return 1;
    }
    if (!res.allowed || res.nwarnings) {
        fprintf(stderr, "bench-resize: expected an allowed review without warnings, got allowed=%d "
                        "message=%s warnings=%zu%s%s\n",
                res.allowed, res.message ? res.message : "-", res.nwarnings,
                res.nwarnings ? ": " : "", res.nwarnings ? res.warnings[0] : "");
        return 1;
    }
    tly_admit_result_free(&res);
    tly_admit_scratch *sc = tly_admit_scratch_create();
    double t0 = now_s();
    unsigned allowed = decide(s, sc, review, rlen, n);
    double t1 = now_s();
    tly_admit_scratch_destroy(sc);
    printf("resize: %u queues (4 levels, %u leaves), %u running pods, review %zu bytes: "
           "%u decisions (%u allowed) in %.3f s, %.1f us/decision: %.0f decisions/s\n",
           TOPS + TOPS * DIVS + TOPS * DIVS * PROJS + LEAVES, LEAVES, pods, rlen, n, allowed, t1 - t0,
           (t1 - t0) * 1e6 / n, n / (t1 - t0));
    free(review);
    tly_store_destroy(s);
    return 0;
}
