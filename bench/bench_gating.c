/*
** bench_gating.c: gating decisions per second on the live state (issue 14;
** src/ctrl/gatectl.c, docs/controllers.md "The gating controller").
**
**   bench-gating [--cycles N] [--steady] [--reserved N] NODES RUNNING BACKLOG
**   bench-gating --latency RATE SECONDS [--qps Q] [--burst B] [--server-delay-ms D]
**                NODES RUNNING BACKLOG
**
** Builds a live state (tly_live_apply of the JSON the API server sends) of
** NODES GPU nodes (8 GPUs each, H200 and A100), RUNNING bound Running pods
** (1 GPU each, 8 cpu, 64Gi, in PodGroups of 8 as KAI's pod-grouper makes
** them), a queue tree of 4 departments x 25 leaf queues with gpu limits and
** an AccountedResource limit (`gpu`, no node labels: checked at admission;
** `gpu-h200` on node labels: not), four PriorityClasses, and a pending
** backlog of BACKLOG gated pods (tally's gate, schedulerName kai-scheduler,
** the queue label, every pod in a PodGroup):
**   - 80 of the 100 leaves are at their gpu limit exactly: their pods are
**     held, and decided again every cycle (the expensive, realistic case);
**   - the other 20 have room for 8 more GPUs: the first workloads there are
**     admitted, the rest held once the room is used;
**   - every tenth workload is a gang of 8 pods (minMember 8; 47% of the
**     pods), the others one pod (minMember 1); of the workloads 70% ask one
**     GPU a pod, 10% a 0.5 fraction, 20% cpu only;
**   - --reserved N (default BACKLOG/20) more pending pods were admitted a
**     moment ago (no gate, the admitted timestamp now, not bound yet): the
**     Reserved bucket, recomputed by every cycle.
** Then times tly_gatectl_cycle() on a fresh fork per cycle, the controller
** created with no API client and a may_write that says no: every workload
** decided, nothing written (ctrl.c's loop without the writes). Prints the
** workloads and pods decided, how many were held (from the controller's own
** tally_gated_pods gauge, which must equal the construction's count), ms per
** cycle (median) and workloads decided per second.
**
** Under callgrind (--instr-atstart=no --collect-atstart=no) only the cycles
** are counted: Collected / (cycles x workloads) is the instructions per
** decided workload (scripts/bench-live.sh).
**
** --latency RATE SECONDS [--qps Q] [--burst B] (default 5000 and 10000):
** create -> ungate latency at a fixed rate of new pods, with the controller
** running as in tally serve and writing to the stand-in server below (see
** run_latency). Prints p50, p99 and max, and how many were ungated.
** --server-delay-ms D: the stand-in answers each request D ms late, as a
** real, etcd-backed API server takes a few ms a write.
**
** --steady: the cycle the leader runs over and over while nothing changes:
** one first cycle with writes to a local stand-in API server (plain HTTP,
** answers 200 to everything) writes every held pod's condition and event
** and every admitted pod's ungate; then the timed cycles may write too but
** have nothing left to write (the held pods' conditions are written, the
** admitted pods are assumed until the watch shows them), so they measure
** the decisions plus the write phase's bookkeeping.
*/
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include) && __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include "bench.h"
#include "ctrl/gatectl.h"
#include "tally/ctrl.h"
#include "tally/arena.h"
#include "tally/gating.h"
#include "tally/kube.h"
#include "tally/live.h"
#include "tally/node.h"

#define DEPTS 4
#define LEAVES 100
#define ROOM_EVERY 5        /* leaf i has room when i % ROOM_EVERY == 0 */
#define ROOM_GPUS 8
#define GANG 8
#define PER_GROUP 8         /* running pods per PodGroup */

static tly_arena *A;
static char NOW[32];

/* Applies one object as a watch event would, parsed in arena a (reset first: one thread each). */
static void apply_in(tly_live *l, const char *json, tly_arena *a)
{
    tly_arena_reset(a);
    tly_node *n = tly_parse_value(json, strlen(json), a);
    if (!n || tly_live_apply(l, TLY_LIVE_UPSERT, n, "bench") != 0) {
        fprintf(stderr, "bench-gating: could not apply %.200s\n", json);
        exit(1);
    }
}

static void apply(tly_live *l, const char *json) { apply_in(l, json, A); }

static void node_json(char *buf, size_t n, long i)
{
    bool h200 = i % 2;
    snprintf(buf, n,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-%05ld\",\"uid\":"
             "\"0c4e2f7a-%04lx-4d1b-8e2f-%012lx\",\"resourceVersion\":\"%ld\",\"labels\":{"
             "\"kubernetes.io/hostname\":\"gpu-%05ld\",\"kubernetes.io/os\":\"linux\",\"kubernetes.io/arch\":"
             "\"amd64\",\"node.kubernetes.io/instance-type\":\"%s\",\"topology.kubernetes.io/zone\":\"z%ld\","
             "\"nvidia.com/gpu.product\":\"%s\",\"nvidia.com/gpu.memory\":\"%s\",\"nvidia.com/gpu.count\":\"8\","
             "\"nvidia.com/gpu.present\":\"true\",\"nvidia.com/cuda.driver.major\":\"550\"}},"
             "\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":\"NoSchedule\"}]},"
             "\"status\":{\"capacity\":{\"cpu\":\"128\",\"memory\":\"2Ti\",\"nvidia.com/gpu\":\"8\",\"pods\":\"110\"},"
             "\"allocatable\":{\"cpu\":\"126\",\"memory\":\"2000Gi\",\"nvidia.com/gpu\":\"8\",\"pods\":\"110\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\","
             "\"lastTransitionTime\":\"2026-11-30T09:00:00Z\"}]}}",
             i, i & 0xffff, i, 100 + i, i, h200 ? "p5e.48xlarge" : "p4d.24xlarge", i % 8,
             h200 ? "NVIDIA-H200" : "NVIDIA-A100-SXM4-80GB", h200 ? "143771" : "81920");
}

/* Leaf queue names: team-00 .. team-99 under dept-0 .. dept-3. */
static void queues(tly_live *l, long running, long margin)
{
    char buf[2048];
    long used = running / LEAVES;  /* GPUs each leaf's running pods hold */
    for (int d = 0; d < DEPTS; d++) {
        snprintf(buf, sizeof buf,
                 "{\"apiVersion\":\"scheduling.run.ai/v2\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"dept-%d\","
                 "\"labels\":{\"kai.scheduler/queue-admission-gating\":\"true\"}},\"spec\":{\"priority\":%d,"
                 "\"resources\":{\"cpu\":{\"quota\":-1,\"limit\":-1,\"overQuotaWeight\":1},\"memory\":{\"quota\":-1,"
                 "\"limit\":-1,\"overQuotaWeight\":1},\"gpu\":{\"quota\":%ld,\"limit\":%ld,\"overQuotaWeight\":1}}}}",
                 d, d == 0 ? 100 : 50, used * (LEAVES / DEPTS), (used + ROOM_GPUS) * (LEAVES / DEPTS) + margin);
        apply(l, buf);
    }
    for (int q = 0; q < LEAVES; q++) {
        long limit = used + (q % ROOM_EVERY == 0 ? ROOM_GPUS : 0);
        snprintf(buf, sizeof buf,
                 "{\"apiVersion\":\"scheduling.run.ai/v2\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"team-%02d\","
                 "\"labels\":{\"kai.scheduler/queue-admission-gating\":\"true\"}},\"spec\":{\"parentQueue\":"
                 "\"dept-%d\",\"priority\":%d,\"resources\":{\"cpu\":{\"quota\":-1,\"limit\":-1,\"overQuotaWeight\":1},"
                 "\"memory\":{\"quota\":-1,\"limit\":-1,\"overQuotaWeight\":1},\"gpu\":{\"quota\":%ld,\"limit\":%ld,"
                 "\"overQuotaWeight\":%d}},\"accountedResources\":[{\"resourceRef\":\"gpu\",\"limit\":\"%ld\"},"
                 "{\"resourceRef\":\"gpu-h200\",\"limit\":\"%ld\"}]}}",
                 q, q % DEPTS, q % 3 == 0 ? 100 : 50, used / 2, limit, 1 + q % 3, limit, limit);
        apply(l, buf);
    }
}

static void classes(tly_live *l)
{
    static const char *const pcs[][2] = {{"train", "50"}, {"build-preemptible", "75"}, {"build", "100"},
                                         {"inference", "125"}};
    char buf[512];
    for (size_t i = 0; i < sizeof pcs / sizeof *pcs; i++) {
        snprintf(buf, sizeof buf,
                 "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"%s\"},"
                 "\"value\":%s,\"preemptionPolicy\":\"PreemptLowerPriority\",\"globalDefault\":false}",
                 pcs[i][0], pcs[i][1]);
        apply(l, buf);
    }
    apply(l, "{\"apiVersion\":\"scheduling.run.ai/v1alpha1\",\"kind\":\"AccountedResource\",\"metadata\":"
             "{\"name\":\"gpu\"},\"spec\":{\"defaults\":{\"limit\":\"-1\"},\"sources\":[{\"resourceName\":"
             "\"nvidia.com/gpu\"}]}}");
    apply(l, "{\"apiVersion\":\"scheduling.run.ai/v1alpha1\",\"kind\":\"AccountedResource\",\"metadata\":"
             "{\"name\":\"gpu-h200\"},\"spec\":{\"defaults\":{\"limit\":\"-1\"},\"sources\":[{\"resourceName\":"
             "\"nvidia.com/gpu\",\"match\":{\"nodeLabels\":{\"nvidia.com/gpu.product\":\"NVIDIA-H200\"}}}]}}");
}

static void podgroup_in(tly_live *l, tly_arena *a, const char *ns, const char *name, int q, int min,
                        const char *pc)
{
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"scheduling.run.ai/v2alpha2\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\",\"labels\":{\"kai.scheduler/queue\":\"team-%02d\"}},\"spec\":{\"queue\":"
             "\"team-%02d\",\"minMember\":%d,\"priorityClassName\":\"%s\"}}",
             name, ns, q, q, min, pc);
    apply_in(l, buf, a);
}

static void podgroup(tly_live *l, const char *ns, const char *name, int q, int min, const char *pc)
{
    podgroup_in(l, A, ns, name, q, min, pc);
}

typedef enum { RUNNING, GATED, RESERVED } pod_kind;

/* One pod as the API server sends it. gpu: 2 = one GPU, 1 = a 0.5 fraction, 0 = cpu only. */
static void pod_json(char *buf, size_t n, const char *name, const char *ns, int q, const char *group,
                     pod_kind kind, const char *node, int gpu, long seq)
{
    char extra_ann[160] = "", gates[96] = "", nodefield[48] = "", conds[512];
    if (gpu == 1)
        snprintf(extra_ann, sizeof extra_ann, ",\"gpu-fraction\":\"0.5\"");
    if (kind == RESERVED)
        snprintf(extra_ann + strlen(extra_ann), sizeof extra_ann - strlen(extra_ann), ",\"%s\":\"%s\"",
                 TLY_ADMITTED_ANNOTATION, NOW);
    if (kind == GATED)
        snprintf(gates, sizeof gates, "\"schedulingGates\":[{\"name\":\"%s\"}],", TLY_GATE);
    if (node)
        snprintf(nodefield, sizeof nodefield, "\"nodeName\":\"%s\",", node);
    if (kind == RUNNING)
        snprintf(conds, sizeof conds,
                 "\"phase\":\"Running\",\"hostIP\":\"10.0.%ld.%ld\",\"podIP\":\"10.244.%ld.%ld\",\"startTime\":"
                 "\"2026-11-30T10:00:02Z\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\","
                 "\"lastTransitionTime\":\"2026-11-30T10:00:01Z\"},{\"type\":\"Ready\",\"status\":\"True\","
                 "\"lastTransitionTime\":\"2026-11-30T10:00:06Z\"}]",
                 (seq / 250) % 250, seq % 250, (seq / 250) % 250, seq % 250);
    else if (kind == GATED)
        snprintf(conds, sizeof conds,
                 "\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":"
                 "\"SchedulingGated\",\"message\":\"Scheduling is blocked due to non-empty scheduling gates\","
                 "\"lastTransitionTime\":\"2026-11-30T11:00:00Z\"}]");
    else  /* RESERVED: what the watch shows once the admitting controller's writes are done */
        snprintf(conds, sizeof conds,
                 "\"phase\":\"Pending\",\"conditions\":[{\"type\":\"QueueAdmitted\",\"status\":\"True\","
                 "\"reason\":\"Admitted\",\"message\":\"admitted by queue policy; the scheduler may place it now\","
                 "\"lastTransitionTime\":\"%s\"}]", NOW);
    /* Created one second apart, in seq order (the contract's order within a queue). */
    char created[32];
    time_t t = (time_t)1795000000 + (time_t)seq;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char res[160];
    if (gpu == 2)
        snprintf(res, sizeof res, "\"requests\":{\"cpu\":\"8\",\"memory\":\"64Gi\",\"nvidia.com/gpu\":\"1\"},"
                                  "\"limits\":{\"memory\":\"64Gi\",\"nvidia.com/gpu\":\"1\"}");
    else
        snprintf(res, sizeof res, "\"requests\":{\"cpu\":\"4\",\"memory\":\"16Gi\"},\"limits\":{\"memory\":\"16Gi\"}");
    snprintf(buf, n,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":"
             "\"6b1f0c9e-%04lx-4c2a-9f3e-%012lx\",\"resourceVersion\":\"%ld\",\"creationTimestamp\":"
             "\"%s\",\"labels\":{\"app\":\"train\",\"kai.scheduler/queue\":\"team-%02d\","
             "\"batch.kubernetes.io/job-name\":\"%s\",\"team\":\"%s\"},\"annotations\":{\"pod-group-name\":\"%s\","
             "\"kubectl.kubernetes.io/default-container\":\"main\"%s},\"ownerReferences\":[{\"apiVersion\":"
             "\"batch/v1\",\"kind\":\"Job\",\"name\":\"%s\",\"uid\":\"a860ea7d-5227-4ce1-80f5-%012lx\","
             "\"controller\":true,\"blockOwnerDeletion\":true}]},\"spec\":{\"schedulerName\":\"kai-scheduler\","
             "%s%s\"priorityClassName\":\"train\",\"restartPolicy\":\"Never\",\"tolerations\":[{\"key\":"
             "\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":"
             "\"main\",\"image\":\"registry.example/train:1\",\"resources\":{%s}},{\"name\":\"sidecar\",\"image\":"
             "\"registry.example/log:2\",\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}}}]},"
             "\"status\":{%s}}",
             name, ns, seq & 0xffff, seq, 1000 + seq, created, q, group, ns, group, extra_ann, group, seq, gates, nodefield,
             res, conds);
}

typedef struct {
    char name[96], ns[32], group[96];
    int q, gpu;
    long seq;
} admitted;

typedef struct {
    long workloads, pods, held, gangs, held_workloads;
    admitted *adm;           /* the pods the first cycle admits */
    long nadm;
} shape;

static shape build(tly_live *l, long nodes, long running, long backlog, long reserved)
{
    char buf[8192], name[96], group[96], ns[32], node[32];
    for (long i = 0; i < nodes; i++) {
        node_json(buf, sizeof buf, i);
        apply(l, buf);
    }
    classes(l);
    queues(l, running, backlog + reserved);  /* the departments never bind */
    long per_node = nodes ? (running + nodes - 1) / nodes : 0;
    for (long i = 0; i < running; i++) {
        int q = (int)(i % LEAVES);
        long job = i / (PER_GROUP * LEAVES) * LEAVES + q;  /* 8 pods of one queue per job */
        snprintf(ns, sizeof ns, "ns-%02d", q);
        snprintf(group, sizeof group, "pg-run-%06ld", job);
        snprintf(name, sizeof name, "run-%06ld-%ld", job, (i / LEAVES) % PER_GROUP);
        snprintf(node, sizeof node, "gpu-%05ld", i / per_node);
        if ((i / LEAVES) % PER_GROUP == 0)
            podgroup(l, ns, group, q, PER_GROUP, "train");
        pod_json(buf, sizeof buf, name, ns, q, group, RUNNING, node, 2, i);
        apply(l, buf);
    }
    /*
    ** The backlog. Workload w goes to leaf (w * 7) % 100; every tenth
    ** workload is a gang of 8. Held pods are counted as the controller
    ** decides them: a full leaf holds everything; a leaf with room admits
    ** (in the contract's order) until the room is used. The order of a
    ** leaf's workloads is their creation, which follows w here (one
    ** PriorityClass per workload), so the first ones that fit win.
    */
    shape sh = {0};
    long room[LEAVES];  /* GPU hundredths left in each leaf */
    for (int q = 0; q < LEAVES; q++)
        room[q] = q % ROOM_EVERY == 0 ? ROOM_GPUS * 100 : 0;
    long seq = running;
    for (long w = 0; sh.pods < backlog; w++) {
        int q = (int)((w * 7) % LEAVES);
        bool gang = w % 10 == 9 && backlog - sh.pods >= GANG;
        int members = gang ? GANG : 1;
        snprintf(ns, sizeof ns, "ns-%02d", q);
        snprintf(group, sizeof group, "pg-%s-%06ld", gang ? "gang" : "job", w);
        podgroup(l, ns, group, q, members, "train");
        int gpu = gang ? 2 : w % 10 < 7 ? 2 : w % 10 == 7 ? 1 : 0;
        long need = (long)members * (gpu == 2 ? 100 : gpu == 1 ? 50 : 0);
        bool admit = need <= room[q];
        for (int m = 0; m < members; m++) {
            snprintf(name, sizeof name, "%s-%d", group + 3, m);
            pod_json(buf, sizeof buf, name, ns, q, group, GATED, NULL, gpu, seq);
            if (admit) {
                sh.adm = tly_xrealloc(sh.adm, (size_t)(sh.nadm + 1) * sizeof *sh.adm);
                admitted *x = &sh.adm[sh.nadm++];
                snprintf(x->name, sizeof x->name, "%s", name);
                snprintf(x->ns, sizeof x->ns, "%s", ns);
                snprintf(x->group, sizeof x->group, "%s", group);
                x->q = q;
                x->gpu = gpu;
                x->seq = seq;
            }
            seq++;
            apply(l, buf);
        }
        if (admit) {
            room[q] -= need;
        } else {
            sh.held += members;
            sh.held_workloads++;
        }
        sh.workloads++;
        sh.gangs += gang;
        sh.pods += members;
    }
    /* The Reserved bucket: admitted a moment ago, not bound yet (in full leaves: they use no room). */
    for (long r = 0; r < reserved; r++) {
        int q = (int)(1 + (r * 5) % LEAVES);
        if (q % ROOM_EVERY == 0)
            q++;
        snprintf(ns, sizeof ns, "ns-%02d", q);
        snprintf(group, sizeof group, "pg-rsv-%06ld", r);
        snprintf(name, sizeof name, "rsv-%06ld-0", r);
        podgroup(l, ns, group, q, 1, "train");
        pod_json(buf, sizeof buf, name, ns, q, group, RESERVED, NULL, 2, seq++);
        apply(l, buf);
    }
    return sh;
}

/* ---- a stand-in API server for --steady: plain HTTP/1.1, 200 and {} to every request ---- */

/* --latency: told of each request (its head at req) once it is answered; set before any request. */
static void (*REQ_HOOK)(const char *req);
/* --server-delay-ms: each answer waits this long (a real server's write latency; connections in parallel). */
static long DELAY_US;

static void *serve_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[65536];
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = '\0';
        for (;;) {
            char *end = strstr(buf, "\r\n\r\n");
            if (!end)
                break;
            size_t head = (size_t)(end + 4 - buf), body = 0;
            for (char *p = buf; p < end; p = strstr(p, "\r\n") + 2)
                if (!strncasecmp(p, "Content-Length:", 15))
                    body = (size_t)atol(p + 15);
            if (have < head + body)
                break;
            static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
            if (DELAY_US > 0)
                usleep((useconds_t)DELAY_US);
            if (write(fd, ok, sizeof ok - 1) < 0)
                goto out;
            if (REQ_HOOK)
                REQ_HOOK(buf);
            memmove(buf, buf + head + body, have - head - body);
            have -= head + body;
            buf[have] = '\0';
        }
    }
out:
    close(fd);
    return NULL;
}

static void *serve_all(void *arg)
{
    int ls = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            return NULL;
        pthread_t th;
        pthread_create(&th, NULL, serve_conn, (void *)(intptr_t)fd);
        pthread_detach(th);
    }
}

static tly_kube *stand_in(double qps, int burst)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 16) ||
        getsockname(ls, (struct sockaddr *)&sa, &sl)) {
        perror("bench-gating: stand-in server");
        exit(1);
    }
    pthread_t th;
    pthread_create(&th, NULL, serve_all, (void *)(intptr_t)ls);
    pthread_detach(th);
    char path[] = "/tmp/bench-gating-kubeconfig-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        perror("bench-gating: kubeconfig");
        exit(1);
    }
    fprintf(f, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"http://127.0.0.1:%d\"}\n"
               "users:\n- name: u\n  user: {token: bench}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
               "current-context: x\n",
            ntohs(sa.sin_port));
    fclose(f);
    tly_kube_source src = {.kubeconfig = path};
    tly_kube_config *cfg;
    tly_kube *k;
    char err[1024];
    tly_kube_options o = {.qps = qps, .burst = burst};
    if (tly_kube_config_load(&src, &cfg, err, sizeof err) || tly_kube_create(cfg, &o, &k, err, sizeof err)) {
        fprintf(stderr, "bench-gating: %s\n", err);
        exit(1);
    }
    unlink(path);
    return k;
}

static bool never(void *ctx) { (void)ctx; return false; }
static bool always(void *ctx) { (void)ctx; return true; }

/* The held pods by the controller's own gauge (tally_gated_pods). */
static long gauge_held(tly_gatectl *g)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tly_gatectl_metrics(g, f);
    fclose(f);
    long held = 0;
    for (char *p = strstr(text, "\ntally_gated_pods{"); p; p = strstr(p + 1, "\ntally_gated_pods{"))
        held += atol(strchr(p, '}') + 1);
    free(text);
    return held;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    tly_live *l;
    tly_gatectl *g;
    const shape *sh;
    bool steady;
    int cycles;
    double *ms;
    long decided;
} runner;

static void *run_cycles(void *arg)
{
    runner *r = arg;
    const shape *sh = r->sh;
    r->decided = sh->workloads;
    if (r->steady) {
        tly_store *fork = tly_live_fork(r->l);
        double s = now_s();
        tly_gatectl_cycle(r->g, fork, always, NULL);
        printf("first cycle with writes (to a local stand-in server: %ld ungates, %ld held conditions and "
               "events): %.1f ms\n",
               sh->nadm, sh->held, (now_s() - s) * 1e3);
        tly_store_destroy(fork);
        /* What the watch then shows: the admitted pods ungated, with their timestamp (Reserved). */
        char buf[8192];
        for (long j = 0; j < sh->nadm; j++) {
            const admitted *x = &sh->adm[j];
            pod_json(buf, sizeof buf, x->name, x->ns, x->q, x->group, RESERVED, NULL, x->gpu, x->seq);
            apply(r->l, buf);
        }
        r->decided = sh->held_workloads;
    }
    CALLGRIND_START_INSTRUMENTATION;
    for (int c = 0; c < r->cycles; c++) {
        tly_store *fork = tly_live_fork(r->l);
        double s = now_s();
        CALLGRIND_TOGGLE_COLLECT;
        tly_gatectl_cycle(r->g, fork, r->steady ? always : never, NULL);
        CALLGRIND_TOGGLE_COLLECT;
        r->ms[c] = (now_s() - s) * 1e3;
        tly_store_destroy(fork);
    }
    return NULL;
}

/*
** ---- --latency RATE SECONDS: create -> ungate at a fixed rate, tally's part ----
**
** The state as above, plus a leaf team-100 (under dept-0) with no limits
** whose pods ask no GPU: every pod put there is admitted. The gating
** controller runs as `tally serve --controllers gating` runs it (ctrl.c's
** thread, tly_ctrl_start), its writes going to the stand-in server. A feeder
** thread applies RATE gated pods a second for SECONDS (each with its
** PodGroup, as KAI's pod-grouper makes them), each at its due time; the
** stand-in notes when each one's ungate PATCH arrives and then applies the
** pod as the watch would show it (gate gone, admitted timestamp). Latency is
** from the pod's ADDED being applied to its ungate arriving. What it leaves
** out is the API server's: its watch delivery and its own handling of the
** patch (the stand-in answers at once).
*/
#define LAT_LEAF LEAVES  /* team-100 */

typedef struct {
    tly_live *l;
    long n;
    double rate, t0;
    double *applied, *ungated;  /* per pod, now_s(); 0: not yet */
    long done;
    pthread_mutex_t mu;         /* ungated, done, and arena a */
    tly_arena *a;               /* the stand-in's applies */
    double last_req;            /* when the stand-in last answered (under mu) */
} latency;

static latency *LAT;

static void lat_pod(char *buf, size_t n, long k, pod_kind kind)
{
    char name[32], group[32];
    snprintf(name, sizeof name, "lat-%07ld", k);
    snprintf(group, sizeof group, "pg-lat-%07ld", k);
    pod_json(buf, n, name, "ns-lat", LAT_LEAF, group, kind, NULL, 0, 5000000 + k);
}

/* The stand-in's hook: an ungate of pod lat-K is noted, then shown by the "watch". */
static void lat_request(const char *req)
{
    static const char pre[] = "PATCH /api/v1/namespaces/ns-lat/pods/lat-";
    double t = now_s();
    char *end = NULL;
    long k = strncmp(req, pre, sizeof pre - 1) ? -1 : strtol(req + sizeof pre - 1, &end, 10);
    bool ungate = k >= 0 && k < LAT->n && *end == ' ';
    char buf[8192];
    if (ungate)
        lat_pod(buf, sizeof buf, k, RESERVED);
    pthread_mutex_lock(&LAT->mu);
    LAT->last_req = t;
    if (ungate && LAT->ungated[k] == 0) {
        LAT->ungated[k] = t;
        LAT->done++;
        apply_in(LAT->l, buf, LAT->a);
    }
    pthread_mutex_unlock(&LAT->mu);
}

static void sleep_until_s(double t)
{
    struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
    }
}

static void *lat_feed(void *arg)
{
    latency *L = arg;
    tly_arena *a = tly_arena_create(64 * 1024);
    char buf[8192], group[32];
    for (long k = 0; k < L->n; k++) {
        sleep_until_s(L->t0 + (double)k / L->rate);
        snprintf(group, sizeof group, "pg-lat-%07ld", k);
        podgroup_in(L->l, a, "ns-lat", group, LAT_LEAF, 1, "train");
        lat_pod(buf, sizeof buf, k, GATED);
        apply_in(L->l, buf, a);
        L->applied[k] = now_s();
    }
    tly_arena_destroy(a);
    return NULL;
}

/*
** Waits until the stand-in has answered a request after `since` and then had
** none for quiet seconds (or limit seconds passed): the controller's first
** cycles (the backlog's writes) are over.
*/
static void lat_wait_quiet(double since, double quiet, double limit)
{
    double end = now_s() + limit;
    for (;;) {
        usleep(50000);
        pthread_mutex_lock(&LAT->mu);
        double last = LAT->last_req;
        pthread_mutex_unlock(&LAT->mu);
        /* A backlog with nothing to write writes nothing: its first cycle is over within a tick. */
        bool none = last <= since && now_s() - since >= 3 * quiet + 0.5;
        if ((last > since && now_s() - last >= quiet) || none || now_s() >= end)
            return;
    }
}

static int run_latency(tly_live *l, double rate, double secs, double qps, int burst)
{
    apply(l, "{\"apiVersion\":\"scheduling.run.ai/v2\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"team-100\","
             "\"labels\":{\"kai.scheduler/queue-admission-gating\":\"true\"}},\"spec\":{\"parentQueue\":"
             "\"dept-0\",\"resources\":{\"cpu\":{\"quota\":-1,\"limit\":-1,\"overQuotaWeight\":1},"
             "\"memory\":{\"quota\":-1,\"limit\":-1,\"overQuotaWeight\":1},\"gpu\":{\"quota\":0,\"limit\":-1,"
             "\"overQuotaWeight\":1}}}}");
    latency L = {.l = l, .n = (long)(rate * secs), .rate = rate, .a = tly_arena_create(64 * 1024)};
    L.applied = tly_xcalloc((size_t)L.n + 1, sizeof(double));
    L.ungated = tly_xcalloc((size_t)L.n + 1, sizeof(double));
    pthread_mutex_init(&L.mu, NULL);
    LAT = &L;
    REQ_HOOK = lat_request;
    tly_kube *k = stand_in(qps, burst);
    tly_ctrl_options o = {.kube = k, .live = l, .controllers = TLY_CTRL_GATING};
    tly_ctrl *c = tly_ctrl_start(&o);
    /* The backlog's first cycle (its ungates, conditions and events) before the clock starts. */
    double s0 = now_s();
    lat_wait_quiet(s0, 0.5, 120);
    printf("first cycles done in %.1f s\n", now_s() - s0);
    L.t0 = now_s() + 0.05;
    pthread_t th;
    if (pthread_create(&th, NULL, lat_feed, &L) != 0) {
        perror("bench-gating: feeder");
        return 1;
    }
    pthread_join(th, NULL);
    double end = now_s() + 30;
    for (;;) {
        pthread_mutex_lock(&L.mu);
        long done = L.done;
        pthread_mutex_unlock(&L.mu);
        if (done >= L.n || now_s() >= end)
            break;
        usleep(10000);
    }
    tly_ctrl_stop(c);
    double *ms = tly_xmalloc(((size_t)L.n + 1) * sizeof *ms);
    long m = 0;
    for (long i = 0; i < L.n; i++)
        if (L.ungated[i] > 0)
            ms[m++] = (L.ungated[i] - L.applied[i]) * 1e3;
    qsort(ms, (size_t)m, sizeof *ms, cmp_double);
    printf("latency: rate %.0f pods/s for %.0f s (qps %.0f, burst %d): %ld of %ld ungated; create -> ungate "
           "p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
           rate, secs, qps, burst, m, L.n, m ? ms[m / 2] : 0, m ? ms[(size_t)((double)m * 0.99)] : 0,
           m ? ms[m - 1] : 0);
    int rc = m == L.n ? 0 : 1;
    tly_kube_destroy(k);
    /* No request can come now (the controller stopped, its client is gone): unhook L. */
    pthread_mutex_lock(&L.mu);
    REQ_HOOK = NULL;
    LAT = NULL;
    pthread_mutex_unlock(&L.mu);
    free(ms);
    free(L.applied);
    free(L.ungated);
    tly_arena_destroy(L.a);
    return rc;
}

int main(int argc, char **argv)
{
    int cycles = 5, i = 1;
    long reserved = -1;
    bool steady = false;
    double lat_rate = 0, lat_secs = 0, qps = 5000;
    int burst = 10000;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--cycles") && i + 1 < argc)
            cycles = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reserved") && i + 1 < argc)
            reserved = atol(argv[++i]);
        else if (!strcmp(argv[i], "--steady"))
            steady = true;
        else if (!strcmp(argv[i], "--latency") && i + 2 < argc) {
            lat_rate = atof(argv[++i]);
            lat_secs = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--qps") && i + 1 < argc)
            qps = atof(argv[++i]);
        else if (!strcmp(argv[i], "--burst") && i + 1 < argc)
            burst = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--server-delay-ms") && i + 1 < argc)
            DELAY_US = (long)(atof(argv[++i]) * 1000);
        else
            break;
    }
    if (argc - i != 3 || cycles < 1) {
        fprintf(stderr, "usage: bench-gating [--cycles N] [--steady] [--reserved N] [--latency RATE SECONDS "
                        "[--qps Q] [--burst B] [--server-delay-ms D]] NODES RUNNING BACKLOG\n");
        return 2;
    }
    long nodes = atol(argv[i]), running = atol(argv[i + 1]), backlog = atol(argv[i + 2]);
    if (reserved < 0)
        reserved = backlog / 20;
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(NOW, sizeof NOW, "%Y-%m-%dT%H:%M:%SZ", &tm);
    A = tly_arena_create(64 * 1024);
    tly_live *l = tly_live_create(NULL);
    double t0 = now_s();
    shape sh = build(l, nodes, running, backlog, reserved);
    printf("state: %ld nodes, %ld running pods, %d queues (%d leaves, %d at their gpu limit), backlog %ld gated "
           "pods in %ld workloads (%ld gangs of %d), %ld reserved; built in %.1f s\n",
           nodes, running, DEPTS + LEAVES, LEAVES, LEAVES - LEAVES / ROOM_EVERY, sh.pods, sh.workloads, sh.gangs,
           GANG, reserved, now_s() - t0);
    if (lat_rate > 0 && lat_secs > 0) {
        int rc = run_latency(l, lat_rate, lat_secs, qps, burst);
        free(sh.adm);
        tly_live_destroy(l);
        tly_arena_destroy(A);
        return rc;
    }
    tly_kube *k = steady ? stand_in(0, 0) : NULL;
    tly_gatectl *g = tly_gatectl_create(k, 600000, "bench", NULL, NULL);
    runner r = {.l = l, .g = g, .sh = &sh, .steady = steady, .cycles = cycles,
                .ms = tly_xmalloc((size_t)cycles * sizeof(double))};
    /* On a thread of its own, as in tally serve (ctrl.c): malloc then uses a thread arena, as there. */
    pthread_t th;
    if (pthread_create(&th, NULL, run_cycles, &r) != 0) {
        perror("bench-gating: thread");
        return 1;
    }
    pthread_join(th, NULL);
    double *ms = r.ms;
    long decided = r.decided;
    qsort(ms, (size_t)cycles, sizeof *ms, cmp_double);
    long held = gauge_held(g);
    double med = ms[cycles / 2];
    printf("cycle%s: %ld workloads decided (%ld pods held, %ld admitted%s): median %.2f ms per cycle (min "
           "%.2f, max %.2f, %d cycles): %.0f workloads/s, %.2f us per workload\n",
           steady ? " (steady: the held pods' conditions written, the admitted ones shown ungated)" : " (decide only)",
           decided, held, steady ? 0 : sh.pods - held, steady ? " before" : "", med, ms[0], ms[cycles - 1], cycles,
           med > 0 ? (double)decided / med * 1e3 : 0.0, decided ? med * 1e3 / (double)decided : 0.0);
    printf("workloads %ld\n", decided);
    int rc = 0;
    if (held != sh.held) {
        fprintf(stderr, "bench-gating: the controller held %ld pods, the construction %ld\n", held, sh.held);
        rc = 1;
    }
    free(ms);
    free(sh.adm);
    tly_gatectl_destroy(g);
    tly_kube_destroy(k);
    tly_live_destroy(l);
    tly_arena_destroy(A);
    return rc;
}
