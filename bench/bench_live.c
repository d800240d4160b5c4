/*
** bench_live.c: watch events applied to the live state (include/tally/live.h).
**
**   bench-live [--moves] PODS EVENTS [FORKS]
**   bench-live --webhook PODS EVENTS_PER_S REVIEWS_PER_S SECONDS
**   bench-live --pod I      prints pod I of the stream (to see what is measured)
**
** Builds a cluster of PODS running pods (about 4 KB of compact JSON each, as
** the API server sends a pod, managedFields included: pod_json) on PODS/50
** GPU nodes in 100 queues, applied as ADDED events. Then applies EVENTS
** watch events of pods' lifecycles (event_json: deleted, added, bound,
** Running, then Succeeded, which releases the charge, or a resize status:
** the kubelet's new container resources). Each event's JSON ({"type":"MODIFIED","object":{...}} and a
** newline) is written before the clock starts; what is timed is what the
** reflector does per event: the framer finds the event in the stream, then
** parse, decode, apply (objects, indexes, ledger). Meanwhile FORKS
** forks are taken at even intervals and held for the next interval, so the
** writer pays its copy-on-write as it would with webhooks reading.
**
** Prints events/s and the writer's longest hold of its lock; under
** callgrind (scripts/bench.sh) the instructions per event at two sizes
** tell whether an event's cost grows with the cluster.
**
** --webhook: the decision latency of the webhook on the live state while
** events stream in. One thread applies events at EVENTS_PER_S (paced, as
** the watch delivers them), another decides a pods/resize review at
** REVIEWS_PER_S (open loop: each review is due at a fixed time, and its
** latency counts from then, so a review kept waiting is charged for it):
** take a fork, tly_admit_review() on it, release it. The same run with no
** events is the baseline; both print p50/p99/max.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/admit.h"

#if defined(__has_include) && __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include "bench.h"
#include "tally/arena.h"
#include "tally/kube.h"
#include "tally/live.h"
#include "tally/node.h"

#define NODES_PER 50
#define QUEUES 100

/*
** One pod as the API server sends it for a Job's worker on a GPU node, about
** 4 KB of compact JSON (issue 13's size): metadata with labels, annotations
** (KAI's pod-grouper's pod-group-name among them: every pod of a KAI cluster
** has one, one PodGroup per Job),
** an owner reference and the managedFields of its two writers (the Job
** controller and the kubelet, as server-side field sets with escaped keys),
** a spec with two containers (command, args, env, ports, volume mounts,
** requests and limits), volumes, tolerations and the defaults the API server
** fills in, and a status with five conditions and a container status per
** container. phase: 0 Pending, 1 Running, 2 Succeeded; node: its nodeName
** (NULL: none); cpu_status: the kubelet's actuated cpu after a resize (0:
** no resources in the status).
*/
static size_t pod_json(char *buf, size_t n, long i, int phase, const char *node, int cpu_status)
{
    static const char *const phases[] = {"Pending", "Running", "Succeeded"};
    char nodefield[64] = "", res[256] = "";
    if (node)
        snprintf(nodefield, sizeof nodefield, "\"nodeName\":\"%s\",", node);
    if (cpu_status)
        snprintf(res, sizeof res,
                 "\"resources\":{\"requests\":{\"cpu\":\"%d\",\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"1\"},"
                 "\"limits\":{\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"1\"}},\"allocatedResources\":"
                 "{\"cpu\":\"%d\",\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"1\"},",
                 cpu_status, cpu_status);
    /* A Job's eight workers share its namespace and queue (and PodGroup). */
    long job = i / 8, q = job % QUEUES, rank = i % 8;
    return (size_t)snprintf(
        buf, n,
        "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"train-%06ld-worker-%ld\","
        "\"generateName\":\"train-%06ld-worker-\",\"namespace\":\"team-%02ld\",\"uid\":"
        "\"6b1f0c9e-%04lx-4c2a-9f3e-%012lx\",\"resourceVersion\":\"%ld\",\"creationTimestamp\":"
        "\"2026-11-30T10:00:00Z\",\"labels\":{\"app\":\"train\",\"kai.scheduler/queue\":\"q%02ld\","
        "\"batch.kubernetes.io/job-name\":\"train-%06ld\",\"batch.kubernetes.io/controller-uid\":"
        "\"a860ea7d-5227-4ce1-80f5-%012lx\",\"batch.kubernetes.io/job-completion-index\":\"%ld\","
        "\"team\":\"team-%02ld\"},\"annotations\":{\"gpu-compute\":\"50\","
        "\"pod-group-name\":\"pg-train-%06ld\","
        "\"batch.kubernetes.io/job-completion-index\":\"%ld\","
        "\"kubectl.kubernetes.io/default-container\":\"main\"},\"ownerReferences\":[{\"apiVersion\":\"batch/v1\","
        "\"kind\":\"Job\",\"name\":\"train-%06ld\",\"uid\":\"a860ea7d-5227-4ce1-80f5-%012lx\","
        "\"controller\":true,\"blockOwnerDeletion\":true}],\"managedFields\":[{\"manager\":"
        "\"kube-controller-manager\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":"
        "\"2026-11-30T10:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{"
        "\"f:annotations\":{},\"f:generateName\":{},"
        "\"f:labels\":{\".\":{},\"f:app\":{},\"f:job-name\":{}},\"f:ownerReferences\":{\".\":{},"
        "\"k:{\\\"uid\\\":\\\"a860ea7d-5227-4ce1-80f5-%012lx\\\"}\":{}}},\"f:spec\":{\"f:containers\":{"
        "\"k:{\\\"name\\\":\\\"main\\\"}\":{\".\":{},\"f:env\":{},\"f:image\":{},"
        "\"f:name\":{},\"f:resources\":{}},\"k:{\\\"name\\\":\\\"sidecar\\\"}\":{\".\":{},"
        "\"f:image\":{},\"f:name\":{},\"f:resources\":{}}},\"f:schedulerName\":{},"
        "\"f:volumes\":{}}}},"
        "{\"manager\":\"kubelet\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":"
        "\"2026-11-30T10:00:06Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:status\":{"
        "\"f:conditions\":{},"
        "\"f:containerStatuses\":{},"
        "\"f:hostIP\":{},\"f:phase\":{},\"f:podIP\":{},\"f:podIPs\":{},\"f:startTime\":{}}},"
        "\"subresource\":\"status\"}]},"
        "\"spec\":{\"volumes\":[{\"name\":\"data\",\"persistentVolumeClaim\":{\"claimName\":"
        "\"data-%06ld\"}},{\"name\":\"kube-api-access\",\"projected\":{\"sources\":[{"
        "\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}}],"
        "\"defaultMode\":420}}],\"containers\":[{\"name\":\"main\",\"image\":\"registry.example/train:1\","
        "\"command\":[\"python\",\"-m\",\"train\"],\"args\":[\"--epochs=10\",\"--batch-size=64\"],"
        "\"env\":[{\"name\":\"RANK\",\"value\":\"%ld\"},{\"name\":\"WORLD_SIZE\",\"value\":\"8\"},"
        "{\"name\":\"MASTER_PORT\",\"value\":\"29500\"}],\"resources\":{\"limits\":{\"memory\":\"16Gi\","
        "\"nvidia.com/gpu\":\"1\"},\"requests\":{\"cpu\":\"%ld\",\"memory\":\"16Gi\",\"nvidia.com/gpu\":"
        "\"1\"}},\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\"},{\"name\":"
        "\"kube-api-access\",\"readOnly\":true,\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\"}],"
        "\"imagePullPolicy\":\"IfNotPresent\"},{\"name\":\"sidecar\",\"image\":\"registry.example/log:2\","
        "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}},\"imagePullPolicy\":\"IfNotPresent\"}],"
        "\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":30,"
        "\"dnsPolicy\":\"ClusterFirst\",\"serviceAccountName\":\"default\","
        "%s\"securityContext\":{},\"schedulerName\":\"kai-scheduler\",\"tolerations\":[{\"key\":"
        "\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"},{\"key\":"
        "\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
        "\"tolerationSeconds\":300}],\"priorityClassName\":\"train\","
        "\"priority\":50,\"preemptionPolicy\":\"PreemptLowerPriority\"},"
        "\"status\":{\"phase\":\"%s\",\"conditions\":[{\"type\":\"Initialized\",\"status\":\"True\",\"lastTransitionTime\":"
        "\"2026-11-30T10:00:02Z\"},{\"type\":\"Ready\",\"status\":\"True\","
        "\"lastTransitionTime\":\"2026-11-30T10:00:06Z\"},{\"type\":\"ContainersReady\",\"status\":"
        "\"True\",\"lastTransitionTime\":\"2026-11-30T10:00:06Z\"},{\"type\":"
        "\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":"
        "\"2026-11-30T10:00:01Z\"}],\"hostIP\":\"10.0.%ld.%ld\","
        "\"podIP\":\"10.244.%ld.%ld\",\"startTime\":"
        "\"2026-11-30T10:00:02Z\",\"containerStatuses\":[{\"name\":\"main\",\"state\":{\"running\":{"
        "\"startedAt\":\"2026-11-30T10:00:05Z\"}},\"ready\":true,\"restartCount\":0,"
        "\"image\":\"registry.example/train:1\",\"imageID\":\"registry.example/train@sha256:"
        "4f1d2c3b5a6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708\",\"containerID\":"
        "\"containerd://%08lx\",%s\"started\":true},{\"name\":\"sidecar\",\"state\":{\"running\":{"
        "\"startedAt\":\"2026-11-30T10:00:04Z\"}},\"ready\":true,\"restartCount\":0,"
        "\"image\":\"registry.example/log:2\",\"imageID\":\"registry.example/log@sha256:"
        "9a8b7c6d5e4f30211a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081\",\"containerID\":"
        "\"containerd://%08lx\",\"started\":true}],\"qosClass\":\"Burstable\"}}",
        i, rank, i, q, i & 0xffff, i, 1000 + i, q, job, job, rank, q, job, rank, job, job, job, i, rank,
        1 + i % 4, nodefield, phases[phase], (i / 250) % 250, i % 250, (i / 250) % 250, i % 250, i,
        res, i + 1);
}

static void node_json(char *buf, size_t n, long i)
{
    snprintf(buf, n,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-%05ld\",\"labels\":"
             "{\"nvidia.com/gpu.product\":\"%s\",\"nvidia.com/gpu.memory\":\"81920\"}},\"status\":"
             "{\"allocatable\":{\"cpu\":\"128\",\"memory\":\"1Ti\",\"nvidia.com/gpu\":\"8\",\"pods\":\"110\"}}}",
             i, i % 2 ? "H200" : "A100");
}

/*
** What a reflector does with the bytes of its watch stream (src/live/reflector.c,
** on_bytes and on_event): the framer cuts the stream into events, each is
** parsed, its type and object read, and the object applied.
*/
typedef struct {
    tly_live *l;
    tly_arena *a;
    tly_jframer *fr;
    long applied;
} watcher;

static void watcher_init(watcher *w, tly_live *l)
{
    *w = (watcher){.l = l, .a = tly_arena_create(64 * 1024), .fr = tly_jframer_create(0)};
}

static void watcher_free(watcher *w)
{
    tly_jframer_destroy(w->fr);
    tly_arena_destroy(w->a);
}

static int on_event(void *ctx, const char *value, size_t len)
{
    watcher *w = ctx;
    tly_arena_reset(w->a);
    tly_node *ev = tly_parse_api_value(value, len, w->a);
    const tly_node *type = ev ? tly_node_get(ev, "type") : NULL;
    const tly_node *obj = ev ? tly_node_get(ev, "object") : NULL;
    if (!type || !obj || type->type != TLY_N_STRING ||
        tly_live_apply(w->l, strcmp(type->str, "DELETED") ? TLY_LIVE_UPSERT : TLY_LIVE_DELETE, obj,
                       "bench") != 0) {
        fprintf(stderr, "bench-live: could not apply the event %.*s\n", (int)(len > 200 ? 200 : len),
                value);
        exit(1);
    }
    w->applied++;
    return 0;
}

/* Feeds one piece of the watch stream. */
static void watch_feed(watcher *w, const char *bytes, size_t len)
{
    if (tly_jframer_feed(w->fr, bytes, len, on_event, w) != 0) {
        fprintf(stderr, "bench-live: the framer refused the stream\n");
        exit(1);
    }
}

/* The watch event {"type": TYPE, "object": the pod}, with the API server's newline. */
static size_t pod_event(char *buf, size_t n, const char *type, long i, int phase, const char *node,
                        int cpu_status)
{
    int head = snprintf(buf, n, "{\"type\":\"%s\",\"object\":", type);
    size_t len = (size_t)head + pod_json(buf + head, n - (size_t)head, i, phase, node, cpu_status);
    if (len + 3 > n) {
        fprintf(stderr, "bench-live: an event does not fit its buffer\n");
        exit(1);
    }
    memcpy(buf + len, "}\n", 3);
    return len + 2;
}

static void small(tly_live *l, tly_arena *a, const char *json)
{
    tly_arena_reset(a);
    tly_node *n = tly_parse_value(json, strlen(json), a);
    if (!n || tly_live_apply(l, TLY_LIVE_UPSERT, n, "bench") != 0) {
        fprintf(stderr, "bench-live: could not apply %s\n", json);
        exit(1);
    }
}

/* The cluster: queues, a PriorityClass, an AccountedResource, nodes, and `pods` running pods. */
static void build_cluster(tly_live *l, tly_arena *a, long pods)
{
    char buf[16384];
    long nodes = pods / NODES_PER + 1;
    long long heap0 = bench_heap_in_use();
    for (long q = 0; q < QUEUES; q++) {
        snprintf(buf, sizeof buf,
                 "{\"apiVersion\":\"scheduling.run.ai/v2\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"q%02ld\"},"
                 "\"spec\":{\"resources\":{\"cpu\":{\"quota\":-1,\"limit\":-1},\"memory\":{\"quota\":-1,"
                 "\"limit\":-1},\"gpu\":{\"quota\":-1,\"limit\":-1}}}}",
                 q);
        small(l, a, buf);
    }
    small(l, a, "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":"
                "{\"name\":\"train\"},\"value\":50}");
    small(l, a, "{\"apiVersion\":\"scheduling.run.ai/v1alpha1\",\"kind\":\"AccountedResource\",\"metadata\":"
                "{\"name\":\"gpu-h200\"},\"spec\":{\"sources\":[{\"resourceName\":\"nvidia.com/gpu\","
                "\"match\":{\"nodeLabels\":{\"nvidia.com/gpu.product\":\"H200\"}}}]}}");
    for (long i = 0; i < nodes; i++) {
        node_json(buf, sizeof buf, i);
        small(l, a, buf);
    }
    watcher w;
    watcher_init(&w, l);
    double t0 = now_s();
    size_t bytes = 0;
    for (long i = 0; i < pods; i++) {
        char node[32];
        snprintf(node, sizeof node, "gpu-%05ld", i / NODES_PER);
        size_t len = pod_event(buf, sizeof buf, "ADDED", i, 1, node, 0);
        bytes += len;
        watch_feed(&w, buf, len);
    }
    double sync = now_s() - t0;
    watcher_free(&w);
    printf("sync: %ld pods (%.0f bytes each as ADDED events) applied in %.2f s: %.0f pods/s\n", pods,
           (double)bytes / (double)pods, sync, (double)pods / sync);
    /* The live state's memory: objects, indexes, ledger, and what the epochs still hold. */
    long long heap = bench_heap_in_use() - heap0;
    printf("heap: %.1f MB for the live state of %ld pods and %ld nodes: %.0f bytes a pod (its node's "
           "share and the indexes included)\n",
           (double)heap / 1e6, pods, nodes, (double)heap / (double)pods);
}

/*
** The streams of events. LIFECYCLE (the default) is what a cluster of Jobs
** sends: pods come and go. Five pods are in flight at a time, each taking
** five steps, interleaved (A0 B0 C0 D0 E0 A1 B1 ...): the old pod of its
** slot is DELETED (its last state), the new one is ADDED pending (no node),
** bound (nodeName: the slot's node, which never changes while a pod lives,
** as nodeName is immutable once set), Running, and then Succeeded (even
** generations) or given a resize status while Running (odd ones). The m-th
** lifecycle takes slot m x 7919 mod PODS, so consecutive pods are far apart
** in every index, and is generation m / PODS + 1 of its slot (the sync's
** pods are generation 0; pod index slot + generation x PODS).
**
** MOVES (--moves) is the stream of 2026-12-02 and before: MODIFIED events
** only, each putting an existing pod on another node. That cannot happen
** (nodeName is immutable), but it is a stress of the writer's node index,
** since every event moves a pod there; kept to compare with earlier figures.
*/
enum { LIFECYCLE, MOVES };

static size_t lifecycle_event(char *buf, size_t n, long e, long pods)
{
    long r = e / 5, step = r % 5, m = (r / 5) * 5 + e % 5;
    long slot = (m * 7919) % pods, gen = m / pods + 1, i = slot + gen * pods;
    char node[32];
    snprintf(node, sizeof node, "gpu-%05ld", slot / NODES_PER);
    switch (step) {
    case 0: {
        /* The old pod's last state: the sync's pods run, later ones ended by their step 4. */
        long g = gen - 1, old = slot + g * pods;
        bool resized = g > 0 && g % 2 == 1;
        return pod_event(buf, n, "DELETED", old, g == 0 || resized ? 1 : 2, node, resized ? 3 : 0);
    }
    case 1: return pod_event(buf, n, "ADDED", i, 0, NULL, 0);
    case 2: return pod_event(buf, n, "MODIFIED", i, 0, node, 0);
    case 3: return pod_event(buf, n, "MODIFIED", i, 1, node, 0);
    default:
        return gen % 2 == 0 ? pod_event(buf, n, "MODIFIED", i, 2, node, 0)
                            : pod_event(buf, n, "MODIFIED", i, 1, node, 3);
    }
}

/* The e-th event of the MOVES stream: a bind, a phase change or a resize status, each moving the pod. */
static size_t move_event(char *buf, size_t n, long e, long pods)
{
    long nodes = pods / NODES_PER + 1, i = (e * 7919) % pods;
    char node[32];
    snprintf(node, sizeof node, "gpu-%05ld", (i + e) % nodes);
    int kind = (int)(e % 3);
    return kind == 0   ? pod_event(buf, n, "MODIFIED", i, 1, node, 0)
           : kind == 1 ? pod_event(buf, n, "MODIFIED", i, 2, node, 0)
                       : pod_event(buf, n, "MODIFIED", i, 1, node, 2 + (int)(e % 5));
}

static size_t event_json(char *buf, size_t n, long e, long pods, int stream)
{
    return stream == MOVES ? move_event(buf, n, e, pods) : lifecycle_event(buf, n, e, pods);
}

static void sleep_until(double t)
{
    double d = t - now_s();
    if (d > 0) {
        struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

typedef struct {
    tly_live *l;
    tly_arena *a;
    long pods;
    double rate, until;
    atomic_int stop;
    long applied;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int synced, go;          /* the sync is applied; the stream may start */
} streamer;

/*
** The pods reflector's thread: it applies the initial sync, then (once told
** to go) the stream, as tally serve's reflector LISTs and then WATCHes on
** one thread. The objects of both come from this thread's heap, so the
** stream reuses what the versions it replaces free.
*/
static void *stream_events(void *arg)
{
    streamer *st = arg;
    build_cluster(st->l, st->a, st->pods);
    pthread_mutex_lock(&st->mu);
    st->synced = 1;
    pthread_cond_broadcast(&st->cv);
    while (!st->go)
        pthread_cond_wait(&st->cv, &st->mu);
    pthread_mutex_unlock(&st->mu);
    st->until += now_s();
    watcher w;
    watcher_init(&w, st->l);
    char buf[16384];
    double t0 = now_s();
    for (long e = 0; !atomic_load(&st->stop) && now_s() < st->until; e++) {
        sleep_until(t0 + (double)e / st->rate);
        size_t len = event_json(buf, sizeof buf, e, st->pods, LIFECYCLE);
        watch_feed(&w, buf, len);
        st->applied++;
    }
    watcher_free(&w);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Decides reviews at `rate` for `seconds`; returns the latencies (seconds, sorted) in *out. */
typedef struct {
    double *late, *fork, *decide;   /* per review: woken after its due time, taking the fork, the rest */
} parts;

static size_t decide_at(tly_live *l, const char *review, size_t rlen, double rate, double seconds,
                        double **out, parts *pt)
{
    size_t n = (size_t)(rate * seconds), allowed = 0;
    double *lat = tly_xmalloc((n + 1) * sizeof *lat), t0 = now_s();
    pt->late = tly_xmalloc((n + 1) * sizeof *pt->late);
    pt->fork = tly_xmalloc((n + 1) * sizeof *pt->fork);
    pt->decide = tly_xmalloc((n + 1) * sizeof *pt->decide);
    for (size_t k = 0; k < n; k++) {
        double due = t0 + (double)k / rate;
        sleep_until(due);
        double woke = now_s();
        tly_store *fork = tly_live_fork(l);
        double forked = now_s();
        tly_admit_result res;
        char err[256];
        if (tly_admit_review(fork, review, rlen, &res, err, sizeof err) == 0) {
            allowed += res.allowed;
            tly_admit_result_free(&res);
        }
        tly_store_destroy(fork);
        double done = now_s();
        lat[k] = done - due;
        pt->late[k] = woke > due ? woke - due : 0;
        pt->fork[k] = forked - woke;
        pt->decide[k] = done - forked;
    }
    if (allowed != n)
        fprintf(stderr, "bench-live: %zu of %zu reviews allowed (expected all)\n", allowed, n);
    qsort(lat, n, sizeof *lat, cmp_double);
    qsort(pt->late, n, sizeof *lat, cmp_double);
    qsort(pt->fork, n, sizeof *lat, cmp_double);
    qsort(pt->decide, n, sizeof *lat, cmp_double);
    *out = lat;
    return n;
}

static void report(const char *what, const double *lat, size_t n, parts *pt)
{
    printf("%s: %zu reviews: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", what, n, lat[n / 2] * 1e3,
           lat[n * 99 / 100] * 1e3, lat[n - 1] * 1e3);
    /* Each part's own percentiles (they need not come from the same reviews). */
    printf("  parts p50/p99 ms: woken late %.3f/%.3f, fork %.3f/%.3f, decision %.3f/%.3f\n",
           pt->late[n / 2] * 1e3, pt->late[n * 99 / 100] * 1e3, pt->fork[n / 2] * 1e3,
           pt->fork[n * 99 / 100] * 1e3, pt->decide[n / 2] * 1e3, pt->decide[n * 99 / 100] * 1e3);
    free(pt->late);
    free(pt->fork);
    free(pt->decide);
}

static int webhook_mode(long pods, double erate, double rrate, double seconds)
{
    tly_live *l = tly_live_create(NULL);
    tly_arena *a = tly_arena_create(64 * 1024);
    streamer st = {.l = l, .a = a, .pods = pods, .rate = erate, .until = seconds + 1};
    pthread_mutex_init(&st.mu, NULL);
    pthread_cond_init(&st.cv, NULL);
    pthread_t th;
    pthread_create(&th, NULL, stream_events, &st);
    pthread_mutex_lock(&st.mu);
    while (!st.synced)
        pthread_cond_wait(&st.cv, &st.mu);
    pthread_mutex_unlock(&st.mu);
    size_t rlen = 0;
    char *review = NULL;
    {
        static char old[16384], neu[16384];
        pod_json(old, sizeof old, 0, 1, "gpu-00000", 0);
        pod_json(neu, sizeof neu, 0, 1, "gpu-00000", 0);
        char *p = strstr(neu, "\"requests\":{\"cpu\":\"1\"");
        if (p)
            p[19] = '2';
        review = tly_xasprintf("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                               "\"request\":{\"uid\":\"bench\",\"kind\":{\"group\":\"\",\"version\":\"v1\","
                               "\"kind\":\"Pod\"},\"subResource\":\"resize\",\"operation\":\"UPDATE\","
                               "\"name\":\"train-000000-worker-0\",\"namespace\":\"team-00\",\"object\":%s,"
                               "\"oldObject\":%s}}",
                               neu, old);
        rlen = strlen(review);
    }
    double *idle, *busy;
    parts pt;
    size_t n = decide_at(l, review, rlen, rrate, seconds, &idle, &pt);
    report("idle", idle, n, &pt);
    pthread_mutex_lock(&st.mu);
    st.go = 1;
    pthread_cond_broadcast(&st.cv);
    pthread_mutex_unlock(&st.mu);
    n = decide_at(l, review, rlen, rrate, seconds, &busy, &pt);
    atomic_store(&st.stop, 1);
    pthread_join(th, NULL);
    char what[96];
    snprintf(what, sizeof what, "with %.0f events/s (%ld applied)", erate, st.applied);
    report(what, busy, n, &pt);
    printf("p99 busy / idle: %.2f\n", busy[n * 99 / 100] / idle[n * 99 / 100]);
    free(idle);
    free(busy);
    free(review);
    tly_arena_destroy(a);
    tly_live_destroy(l);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--pod")) {
        /* One pod of the stream as it is sent (to look at its size and content). */
        char buf[16384];
        pod_json(buf, sizeof buf, atol(argv[2]), 1, "gpu-00000", 2);
        puts(buf);
        return 0;
    }
    if (argc >= 6 && !strcmp(argv[1], "--webhook"))
        return webhook_mode(atol(argv[2]), atof(argv[3]), atof(argv[4]), atof(argv[5]));
    int stream = LIFECYCLE;
    if (argc > 1 && !strcmp(argv[1], "--moves")) {
        stream = MOVES;
        argv++;
        argc--;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: bench-live [--moves] PODS EVENTS [FORKS] | --webhook PODS EVENTS/S "
                        "REVIEWS/S SECONDS\n");
        return 2;
    }
    long pods = atol(argv[1]), events = atol(argv[2]), forks = argc > 3 ? atol(argv[3]) : 0;
    tly_live *l = tly_live_create(NULL);
    tly_arena *a = tly_arena_create(64 * 1024);
    char buf[16384];
    build_cluster(l, a, pods);
    double timed = 0;
    long every = forks ? events / forks : 0;
    /* Under callgrind (--instr-atstart=no --collect-atstart=no) only the reflector's work is counted. */
    CALLGRIND_START_INSTRUMENTATION;
    tly_store *held = NULL;
    watcher w;
    watcher_init(&w, l);
    size_t bytes = 0;
    for (long e = 0; e < events; e++) {
        size_t len = event_json(buf, sizeof buf, e, pods, stream);
        bytes += len;
        double s = now_s();
        CALLGRIND_TOGGLE_COLLECT;
        watch_feed(&w, buf, len);
        CALLGRIND_TOGGLE_COLLECT;
        timed += now_s() - s;
        if (every && e % every == 0) {
            if (held)
                tly_store_destroy(held);
            held = tly_live_fork(l);
        }
    }
    if (held)
        tly_store_destroy(held);
    watcher_free(&w);
    /* A lifecycle stream ends with at most the five pods in flight missing (deleted, not added yet). */
    long left = (long)tly_live_count(l, TLY_K_POD);
    if (stream == LIFECYCLE && (left > pods || left < pods - 5)) {
        fprintf(stderr, "bench-live: %ld pods at the end, want %ld to %ld\n", left, pods - 5, pods);
        return 1;
    }
    printf("events: %ld pod events (%s; %.0f bytes each) at %ld pods: %.0f events/s, "
           "%.2f us each, %.0f MB/s\n",
           events, stream == MOVES ? "moves: bind, phase, resize, each to another node"
                                   : "lifecycles: delete, add, bind, run, end or resize",
           (double)bytes / (double)events, pods, (double)events / timed,
           timed * 1e6 / (double)events, (double)bytes / 1e6 / timed);
    printf("writer lock held per event: p50 <= %.1f us, p99 <= %.1f us, max <= %.1f us; per fork "
           "(%ld taken): p99 <= %.1f us, max <= %.1f us\n",
           (double)tly_live_hold_ns(l, false, 0.5) / 1e3, (double)tly_live_hold_ns(l, false, 0.99) / 1e3,
           (double)tly_live_hold_ns(l, false, 1.0) / 1e3, forks,
           (double)tly_live_hold_ns(l, true, 0.99) / 1e3, (double)tly_live_hold_ns(l, true, 1.0) / 1e3);
    tly_arena_destroy(a);
    tly_live_destroy(l);
    return 0;
}
