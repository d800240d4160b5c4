/*
** gen_cluster.c: the realistic GPU cluster of issue 16 (gen_cluster.h).
**
** At SCALE 1: 5,000 nodes (H100, A100, H200 and L40S GPU nodes told apart by
** NVIDIA's feature-discovery labels, a tenth CPU-only; GPU and dedicated
** inference taints, 2% cordoned, 1% not ready), 500 queues in three levels
** (5 departments, 45 projects, 450 teams), 20 AccountedResources and
** 100,000 pods: 50,000 running (10,000 of them the nodes' DaemonSet pods,
** not tally's) and 50,000 pending kai-scheduler pods.
**
** The backlog is shaped the way a busy cluster's is, by the teams' state:
** three in five teams are at their GPU limit with what already runs (their
** pending work is over a limit), a few run non-preemptible work at their
** quota, the rest have room, and of those the pending work asks mostly for
** what the cluster has no room for (gangs of 8-GPU pods on a full product, a
** product being provisioned, more GPUs than a node has free). Most GPU pods
** carry a GPU-product nodeSelector; there are gangs of 4-8 pods, fractional
** and gpu-memory pods, init containers and sidecars. The generator keeps its
** own books of what runs where only to write believable running pods and
** limits: the outcome of each pending pod is the engine's to decide.
**
** Deterministic: a private xorshift PRNG, no libc rand, no clock.
*/
#include "gen_cluster.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng;

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* A number in [0, n). */
static unsigned pick(unsigned n) { return (unsigned)(rnd() % n); }

/* ---- the fleet ------------------------------------------------------------------ */

typedef struct {
    const char *label, *family, *instance, *mem;
    unsigned cpu, mem_gi, efa, cpu_per_gpu, share;  /* share of nodes, percent */
} product;

/* The last entry is the CPU-only pool. */
static const product products[] = {
    {"NVIDIA-H100-80GB-HBM3", "hopper", "p5.48xlarge", "81559", 192, 2000, 32, 22, 35},
    {"NVIDIA-A100-SXM4-80GB", "ampere", "p4de.24xlarge", "81920", 96, 1100, 4, 10, 30},
    {"NVIDIA-H200", "hopper", "p5en.48xlarge", "143771", 192, 2000, 16, 22, 15},
    {"NVIDIA-L40S", "ada-lovelace", "g6e.48xlarge", "46068", 192, 1500, 0, 20, 10},
    {NULL, NULL, "m7i.48xlarge", NULL, 192, 768, 0, 0, 10},
};
#define NPRODUCTS 4
/* A product the pods ask for that no node has yet (nodes being provisioned). */
#define MISSING_PRODUCT "NVIDIA-B200"

static const char *pools[] = {"train", "infer", "dev"};

typedef struct {
    unsigned product;     /* NPRODUCTS: CPU-only */
    unsigned pool, zone;
    int cordoned, not_ready;
    unsigned gpus_free, cpu_free, pods;
} gnode;

static unsigned pick_product(void)
{
    unsigned r = pick(100), acc = 0;
    for (unsigned p = 0; p <= NPRODUCTS; p++) {
        acc += products[p].share;
        if (r < acc)
            return p;
    }
    return NPRODUCTS;
}

static void gen_nodes(FILE *f, gnode *nodes, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        gnode *g = &nodes[i];
        g->product = pick_product();
        unsigned pr = pick(100);
        g->pool = g->product == NPRODUCTS ? 0 : pr < 70 ? 0 : pr < 90 ? 1 : 2;
        g->zone = pick(4);
        unsigned st = pick(100);
        g->cordoned = st < 2;
        g->not_ready = st == 2;
        const product *p = &products[g->product];
        g->gpus_free = g->product == NPRODUCTS ? 0 : 8;
        g->cpu_free = p->cpu;
        fprintf(f, ",\n{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%05u\","
                   "\"uid\":\"%016" PRIx64 "\",\"creationTimestamp\":\"2026-10-%02uT%02u:00:00Z\",\"labels\":{"
                   "\"beta.kubernetes.io/arch\":\"amd64\",\"beta.kubernetes.io/os\":\"linux\","
                   "\"kubernetes.io/arch\":\"amd64\",\"kubernetes.io/os\":\"linux\","
                   "\"kubernetes.io/hostname\":\"node-%05u\",\"node.kubernetes.io/instance-type\":\"%s\","
                   "\"topology.kubernetes.io/region\":\"us-east-1\",\"topology.kubernetes.io/zone\":\"us-east-1%c\","
                   "\"cluster.example.com/pool\":\"%s\",\"cluster.example.com/rack\":\"r%03u\"",
                i, rnd(), 1 + pick(28), pick(24), i, p->instance, 'a' + g->zone,
                g->product == NPRODUCTS ? "cpu" : pools[g->pool], i / 40);
        if (g->product < NPRODUCTS)
            fprintf(f, ",\"nvidia.com/gpu.present\":\"true\",\"nvidia.com/gpu.product\":\"%s\","
                       "\"nvidia.com/gpu.family\":\"%s\",\"nvidia.com/gpu.memory\":\"%s\",\"nvidia.com/gpu.count\":\"8\","
                       "\"nvidia.com/cuda.driver.major\":\"550\",\"nvidia.com/cuda.runtime.major\":\"12\","
                       "\"nvidia.com/mig.capable\":\"%s\",\"nvidia.com/gpu.sharing-strategy\":\"none\","
                       "\"feature.node.kubernetes.io/pci-10de.present\":\"true\"",
                    p->label, p->family, p->mem, g->product == 3 ? "false" : "true");
        fprintf(f, "}},\"spec\":{\"providerID\":\"aws:///us-east-1%c/i-%016" PRIx64 "\"", 'a' + g->zone, rnd());
        if (g->cordoned)
            fprintf(f, ",\"unschedulable\":true");
        /* Taints as the cluster's controllers and its admins set them. */
        const char *sep = "";
        fprintf(f, ",\"taints\":[");
        if (g->product < NPRODUCTS) {
            fprintf(f, "{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":\"NoSchedule\"}");
            sep = ",";
        }
        if (g->pool == 1 && g->product < NPRODUCTS) {
            fprintf(f, "%s{\"key\":\"dedicated\",\"value\":\"inference\",\"effect\":\"NoSchedule\"}", sep);
            sep = ",";
        }
        if (g->cordoned) {
            fprintf(f, "%s{\"key\":\"node.kubernetes.io/unschedulable\",\"effect\":\"NoSchedule\"}", sep);
            sep = ",";
        }
        if (g->not_ready)
            fprintf(f, "%s{\"key\":\"node.kubernetes.io/not-ready\",\"effect\":\"NoExecute\"}", sep);
        char extra[96] = "";
        if (g->product < NPRODUCTS && p->efa)
            snprintf(extra, sizeof extra, ",\"nvidia.com/gpu\":\"8\",\"vpc.amazonaws.com/efa\":\"%u\"", p->efa);
        else if (g->product < NPRODUCTS)
            snprintf(extra, sizeof extra, ",\"nvidia.com/gpu\":\"8\"");
        fprintf(f, "]},\"status\":{\"allocatable\":{\"cpu\":\"%u\",\"memory\":\"%uGi\",\"pods\":\"110\","
                   "\"ephemeral-storage\":\"3455000Mi\"%s},\"capacity\":{\"cpu\":\"%u\",\"memory\":\"%uGi\","
                   "\"pods\":\"110\",\"ephemeral-storage\":\"3750000Mi\"%s},\"conditions\":["
                   "{\"type\":\"MemoryPressure\",\"status\":\"False\"},{\"type\":\"DiskPressure\",\"status\":\"False\"},"
                   "{\"type\":\"Ready\",\"status\":\"%s\",\"lastTransitionTime\":\"2026-10-01T00:00:00Z\"}],"
                   "\"nodeInfo\":{\"kubeletVersion\":\"v1.31.2\",\"containerRuntimeVersion\":\"containerd://1.7.22\"}}}",
                p->cpu, p->mem_gi, extra, p->cpu, p->mem_gi, extra, g->not_ready ? "False" : "True");
    }
}

/* ---- queues and AccountedResources ---------------------------------------------- */

enum { Q_FULL, Q_QUOTA, Q_ROOM };

/* A team's state: 60% at their GPU limit, 6% at their non-preemptible quota, 34% with room. */
static int leaf_kind(unsigned l)
{
    unsigned r = l % 50;
    return r < 30 ? Q_FULL : r < 33 ? Q_QUOTA : Q_ROOM;
}

typedef struct {
    uint64_t gpu_h;       /* GPU hundredths of its running pods */
    uint64_t np_gpu_h;    /* of those, non-preemptible */
} gleaf;

static void gen_accres(FILE *f)
{
    static const char *head = ",\n{\"apiVersion\":\"scheduling.run.ai/v1alpha1\",\"kind\":\"AccountedResource\","
                              "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"defaults\":{\"limit\":\"-1\"},\"sources\":[";
    const char *short_names[] = {"h100", "a100", "h200", "l40s"};
    fprintf(f, head, "gpu");
    fprintf(f, "{\"resourceName\":\"nvidia.com/gpu\"}]}}");
    for (unsigned p = 0; p < NPRODUCTS; p++) {
        char name[32];
        snprintf(name, sizeof name, "gpu-%s", short_names[p]);
        fprintf(f, head, name);
        fprintf(f, "{\"resourceName\":\"nvidia.com/gpu\",\"match\":{\"nodeLabels\":{\"nvidia.com/gpu.product\":\"%s\"}}}]}}",
                products[p].label);
    }
    fprintf(f, head, "gpu-memory");
    fprintf(f, "{\"podAnnotation\":{\"key\":\"gpu-memory\",\"unit\":\"Mi\"}}]}}");
    fprintf(f, head, "efa");
    fprintf(f, "{\"resourceName\":\"vpc.amazonaws.com/efa\"}]}}");
    for (unsigned p = 0; p < 3; p++) {
        char name[32];
        snprintf(name, sizeof name, "cpu-%s", pools[p]);
        fprintf(f, head, name);
        fprintf(f, "{\"resourceName\":\"cpu\",\"match\":{\"nodeLabels\":{\"cluster.example.com/pool\":\"%s\"}}}]}}",
                pools[p]);
        snprintf(name, sizeof name, "memory-%s", pools[p]);
        fprintf(f, head, name);
        fprintf(f, "{\"resourceName\":\"memory\",\"match\":{\"nodeLabels\":{\"cluster.example.com/pool\":\"%s\"}}}]}}",
                pools[p]);
    }
    for (unsigned z = 0; z < 4; z++) {
        char name[32];
        snprintf(name, sizeof name, "gpu-zone-%c", 'a' + z);
        fprintf(f, head, name);
        fprintf(f, "{\"resourceName\":\"nvidia.com/gpu\",\"match\":{\"nodeLabels\":{\"topology.kubernetes.io/zone\":\"us-east-1%c\"}}}]}}",
                'a' + z);
    }
    fprintf(f, head, "gpu-compute");
    fprintf(f, "{\"podAnnotation\":{\"key\":\"gpu-compute\"}}]}}");
    fprintf(f, head, "ephemeral-storage");
    fprintf(f, "{\"resourceName\":\"ephemeral-storage\"}]}}");
    /* 1 + 4 + 1 + 1 + 6 + 4 + 1 + 1 = 19, and one that no pod requests. */
    fprintf(f, head, "rdma");
    fprintf(f, "{\"resourceName\":\"rdma/ib\"}]}}");
}

/* A GPU count in hundredths as a queue quantity: whole, or with two decimals. */
static void gpus_text(char *buf, size_t n, uint64_t h)
{
    if (h % 100)
        snprintf(buf, n, "%" PRIu64 ".%02" PRIu64, h / 100, h % 100);
    else
        snprintf(buf, n, "%" PRIu64, h / 100);
}

static void gen_queues(FILE *f, unsigned scale, const gleaf *leaves)
{
    unsigned depts = 5 * scale, projs = 45 * scale, nleaves = 450 * scale;
    for (unsigned d = 0; d < depts; d++)
        fprintf(f, ",\n{\"apiVersion\":\"scheduling.run.ai/v2\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"dept-%u\"},"
                   "\"spec\":{\"displayName\":\"Department %u\",\"resources\":{\"cpu\":{\"quota\":-1,\"limit\":-1},"
                   "\"memory\":{\"quota\":-1,\"limit\":-1},\"gpu\":{\"quota\":-1,\"limit\":-1}},"
                   "\"accountedResources\":[{\"resourceRef\":\"gpu-h200\",\"limit\":\"%u\"}]}}",
                d, d, 4000);
    for (unsigned p = 0; p < projs; p++)
        fprintf(f, ",\n{\"apiVersion\":\"scheduling.run.ai/v2\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"proj-%u\"},"
                   "\"spec\":{\"parentQueue\":\"dept-%u\",\"resources\":{\"cpu\":{\"quota\":-1,\"limit\":-1},"
                   "\"memory\":{\"quota\":-1,\"limit\":-1},\"gpu\":{\"quota\":-1,\"limit\":-1}},"
                   "\"accountedResources\":[{\"resourceRef\":\"gpu-l40s\",\"limit\":\"%u\"},"
                   "{\"resourceRef\":\"efa\",\"limit\":\"-1\"}]}}",
                p, p % depts, 200);
    for (unsigned l = 0; l < nleaves; l++) {
        const gleaf *g = &leaves[l];
        int kind = leaf_kind(l);
        char limit[32], quota[32];
        /* At the limit: what runs, rounded up to whole GPUs. */
        uint64_t lim_h = kind == Q_FULL ? (g->gpu_h + 99) / 100 * 100 : g->gpu_h + 40000;
        uint64_t quo_h = kind == Q_QUOTA ? (g->np_gpu_h + 99) / 100 * 100 : g->gpu_h / 2;
        gpus_text(limit, sizeof limit, lim_h);
        gpus_text(quota, sizeof quota, quo_h);
        fprintf(f, ",\n{\"apiVersion\":\"scheduling.run.ai/v2\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"team-%u\","
                   "\"labels\":{\"cluster.example.com/cost-center\":\"cc-%u\"}},"
                   "\"spec\":{\"parentQueue\":\"proj-%u\",\"resources\":{\"cpu\":{\"quota\":-1,\"limit\":-1},"
                   "\"memory\":{\"quota\":-1,\"limit\":-1},\"gpu\":{\"quota\":%s,\"limit\":%s}},"
                   "\"accountedResources\":[{\"resourceRef\":\"gpu\",\"limit\":\"%s\"},"
                   "{\"resourceRef\":\"gpu-memory\",\"limit\":\"-1\"},{\"resourceRef\":\"cpu-train\",\"limit\":\"-1\"}]}}",
                l, l % 97, l % projs, quota, limit, limit);
    }
}

/* ---- pods ---------------------------------------------------------------------- */

enum { S_CPU, S_WHOLE, S_FRACTION, S_GPUMEM };

typedef struct {
    unsigned shape, gpus;        /* gpus: whole devices, or devices shared */
    unsigned frac_h;             /* S_FRACTION: hundredths of one device (50 or 25) */
    unsigned gpu_mem;            /* S_GPUMEM, MiB */
    unsigned cpu_m, mem_gi;
    int product;                 /* nodeSelector product: -1 none, NPRODUCTS the missing one */
    int pool;                    /* nodeSelector pool (inference: with its toleration), -1 none */
    int np;                      /* non-preemptible (priority class build) */
    int init, sidecar;
} pshape;

static unsigned g_uid;

/* One pod, as the API server lists it (compact). node < 0: pending. */
static void pod(FILE *f, const char *name, unsigned leaf, const pshape *s, long node, const char *pg,
                unsigned created)
{
    char res[160];
    if (s->shape == S_WHOLE)
        snprintf(res, sizeof res, ",\"nvidia.com/gpu\":\"%u\"", s->gpus);
    else
        res[0] = 0;
    fprintf(f, ",\n{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-%u\","
               "\"uid\":\"%08x-%016" PRIx64 "\",\"creationTimestamp\":\"2026-11-%02uT%02u:%02u:%02uZ\","
               "\"labels\":{\"kai.scheduler/queue\":\"team-%u\",\"app\":\"%s\"}",
            name, leaf, ++g_uid, rnd(), 1 + created / 86400 % 28, created / 3600 % 24, created / 60 % 60,
            created % 60, leaf, s->shape == S_CPU ? "etl" : "trainer");
    fprintf(f, ",\"annotations\":{\"cluster.example.com/owner\":\"user-%u\"", leaf * 7 % 1000);
    if (pg)
        fprintf(f, ",\"pod-group-name\":\"%s\"", pg);
    if (s->shape == S_FRACTION)
        fprintf(f, ",\"gpu-fraction\":\"0.%02u\"", s->frac_h);
    if (s->shape == S_GPUMEM)
        fprintf(f, ",\"gpu-memory\":\"%u\"", s->gpu_mem);
    fprintf(f, "}},\"spec\":{\"schedulerName\":\"kai-scheduler\",\"priorityClassName\":\"%s\"",
            s->np ? "build" : "train");
    if (node >= 0)
        fprintf(f, ",\"nodeName\":\"node-%05ld\"", node);
    if (s->product >= 0 || s->pool >= 0) {
        fprintf(f, ",\"nodeSelector\":{");
        if (s->product >= 0)
            fprintf(f, "\"nvidia.com/gpu.product\":\"%s\"", s->product < NPRODUCTS ? products[s->product].label
                                                                              : MISSING_PRODUCT);
        if (s->pool >= 0)
            fprintf(f, "%s\"cluster.example.com/pool\":\"%s\"", s->product >= 0 ? "," : "", pools[s->pool]);
        fprintf(f, "}");
    }
    fprintf(f, ",\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
               "\"effect\":\"NoExecute\",\"tolerationSeconds\":300}");
    if (s->shape != S_CPU)
        fprintf(f, ",{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}");
    if (s->pool == 1)
        fprintf(f, ",{\"key\":\"dedicated\",\"operator\":\"Equal\",\"value\":\"inference\",\"effect\":\"NoSchedule\"}");
    fprintf(f, "]");
    if (s->init || s->sidecar) {
        fprintf(f, ",\"initContainers\":[");
        if (s->init)
            fprintf(f, "{\"name\":\"fetch-dataset\",\"image\":\"registry.example.com/tools/fetch:1.4\","
                       "\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"4Gi\"}}}");
        if (s->sidecar)
            fprintf(f, "%s{\"name\":\"log-shipper\",\"image\":\"registry.example.com/tools/vector:0.42\","
                       "\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"512Mi\"}}}",
                    s->init ? "," : "");
        fprintf(f, "]");
    }
    fprintf(f, ",\"containers\":[{\"name\":\"main\",\"image\":\"nvcr.io/nvidia/pytorch:25.10-py3\","
               "\"resources\":{\"requests\":{\"cpu\":\"%um\",\"memory\":\"%uGi\",\"ephemeral-storage\":\"20Gi\"%s},"
               "\"limits\":{\"memory\":\"%uGi\"%s}}}]}",
            s->cpu_m, s->mem_gi, res, s->mem_gi, res);
    if (node >= 0)
        fprintf(f, ",\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\"},"
                   "{\"type\":\"Ready\",\"status\":\"True\"}],\"startTime\":\"2026-11-28T00:00:00Z\"}}");
    else
        fprintf(f, ",\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
                   "\"reason\":\"Unschedulable\"}]}}");
}

static void pod_group(FILE *f, const char *name, unsigned leaf, unsigned min_member, int np)
{
    fprintf(f, ",\n{\"apiVersion\":\"scheduling.run.ai/v2alpha2\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"%s\","
               "\"namespace\":\"team-%u\",\"labels\":{\"kai.scheduler/queue\":\"team-%u\"}},"
               "\"spec\":{\"minMember\":%u,\"queue\":\"team-%u\",\"priorityClassName\":\"%s\"}}",
            name, leaf, leaf, min_member, leaf, np ? "build" : "train");
}

/* The GPU hundredths a shape takes. */
static uint64_t shape_h(const pshape *s)
{
    if (s->shape == S_WHOLE)
        return 100ull * s->gpus;
    if (s->shape == S_FRACTION)
        return s->frac_h;
    if (s->shape == S_GPUMEM)
        return 25;  /* about: 20,000 MiB of an 80 GB GPU */
    return 0;
}

static void extras(pshape *s)
{
    s->init = pick(100) < 30;
    s->sidecar = pick(100) < 20;
}

/* A running GPU pod that fits in `room` free GPUs of node g. */
static pshape running_gpu_shape(const gnode *g, unsigned room)
{
    pshape s = {0};
    s.product = pick(100) < 85 ? (int)g->product : -1;
    s.pool = g->pool == 1 ? 1 : -1;
    unsigned r = pick(100);
    s.shape = S_WHOLE;
    s.gpus = r < 8 && room == 8 ? 8 : r < 20 && room >= 4 ? 4 : r < 38 && room >= 2 ? 2 : 1;
    if (r >= 38 && r < 50) {
        s.shape = S_FRACTION;
        s.frac_h = 50;
    } else if (r >= 50 && r < 55 && g->product != 3) {
        s.shape = S_GPUMEM;
        s.gpu_mem = 20000;
    }
    s.cpu_m = (s.shape == S_WHOLE ? s.gpus : 1) * products[g->product].cpu_per_gpu * 1000 / 2;
    s.mem_gi = (s.shape == S_WHOLE ? s.gpus : 1) * 64;
    extras(&s);
    return s;
}

static void daemonsets(FILE *f, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        for (unsigned d = 0; d < 2; d++)
            fprintf(f, ",\n{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-%05u\","
                       "\"namespace\":\"kube-system\",\"uid\":\"%08x-%016" PRIx64 "\",\"labels\":{\"app\":\"%s\"},"
                       "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"name\":\"%s\","
                       "\"uid\":\"ds-%u\",\"controller\":true}]},\"spec\":{\"nodeName\":\"node-%05u\","
                       "\"priorityClassName\":\"system-node-critical\",\"containers\":[{\"name\":\"main\","
                       "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"200Mi\"}}}]},"
                       "\"status\":{\"phase\":\"Running\"}}",
                    d ? "node-exporter" : "kube-proxy", i, ++g_uid, rnd(), d ? "node-exporter" : "kube-proxy",
                    d ? "node-exporter" : "kube-proxy", d, i);
}

/* The running kai-scheduler pods, node by node; the teams' books in leaves[]. */
static void running(FILE *f, gnode *nodes, unsigned nn, unsigned nleaves, gleaf *leaves)
{
    char name[64];
    unsigned seq = 0;
    for (unsigned i = 0; i < nn; i++) {
        gnode *g = &nodes[i];
        if (g->product == NPRODUCTS) {
            /* CPU nodes: ETL and data loaders, a few cores each. */
            for (unsigned k = 0; k < 34; k++) {
                pshape s = {.shape = S_CPU, .product = -1, .pool = -1, .cpu_m = 1000 * (1 + pick(4)), .mem_gi = 8};
                extras(&s);
                unsigned leaf = pick(nleaves);
                snprintf(name, sizeof name, "etl-%07u", seq++);
                pod(f, name, leaf, &s, i, NULL, 2000000 + pick(400000));
            }
            continue;
        }
        /* About two in three GPU nodes are full; the rest have 1-4 GPUs free. */
        unsigned keep = pick(100) < 65 ? 0 : 1 + pick(4);
        while (g->gpus_free > keep) {
            pshape s = running_gpu_shape(g, g->gpus_free - keep);
            unsigned leaf = pick(nleaves);
            s.np = leaf_kind(leaf) == Q_QUOTA;
            unsigned copies = s.shape == S_WHOLE ? 1 : 2;  /* two halves share a device */
            for (unsigned c = 0; c < copies; c++) {
                snprintf(name, sizeof name, "run-%07u", seq++);
                pod(f, name, leaf, &s, i, NULL, 2000000 + pick(400000));
                leaves[leaf].gpu_h += shape_h(&s);
                if (s.np)
                    leaves[leaf].np_gpu_h += shape_h(&s);
            }
            g->gpus_free -= s.shape == S_WHOLE ? s.gpus : 1;
        }
    }
}

/* A pending workload's shape for a team of the given kind. */
static pshape pending_shape(int kind, unsigned *members)
{
    pshape s = {0};
    s.pool = -1;
    s.np = kind == Q_QUOTA;
    unsigned r = pick(100);
    *members = 1;
    s.product = (int)pick(NPRODUCTS);
    if (kind == Q_ROOM && pick(100) < 10)
        s.product = NPRODUCTS;  /* waiting for nodes being provisioned */
    if (r < 30) {
        /* A gang of 4-8 pods, mostly 8 GPUs each (a node per pod). */
        *members = 4 + pick(5);
        s.shape = S_WHOLE;
        unsigned g = pick(100);
        s.gpus = g < 55 ? 8 : g < 80 ? 4 : 1 + pick(2);
    } else if (r < 58) {
        s.shape = S_WHOLE;
        s.gpus = pick(100) < 70 ? 1 : 2 + 2 * pick(2);
    } else if (r < 68) {
        s.shape = S_FRACTION;
        s.frac_h = pick(2) ? 50 : 25;
    } else if (r < 74) {
        s.shape = S_GPUMEM;
        s.gpu_mem = 10000 + 10000 * pick(3);
        if (s.product == 3)
            s.product = 0;
    } else {
        s.shape = S_CPU;
        s.product = -1;
    }
    if (s.shape != S_CPU && pick(100) < 10)
        s.product = -1;  /* any GPU will do */
    if (s.shape != S_CPU && pick(100) < 8)
        s.pool = 1;      /* inference, on the dedicated nodes */
    unsigned per = s.shape == S_WHOLE ? s.gpus : 1;
    s.cpu_m = s.shape == S_CPU ? 1000 * (1 + pick(6)) : per * 8000;
    s.mem_gi = s.shape == S_CPU ? 4 * (1 + pick(8)) : per * 64;
    extras(&s);
    return s;
}

/* Pending workloads up to `target` pods, spread over the teams by kind. */
static void pending(FILE *f, unsigned nleaves, unsigned target)
{
    char name[64], pg[64];
    unsigned made = 0, w = 0;
    while (made < target) {
        unsigned r = pick(100);
        int kind = r < 64 ? Q_FULL : r < 68 ? Q_QUOTA : Q_ROOM;
        unsigned leaf;
        do
            leaf = pick(nleaves);
        while (leaf_kind(leaf) != kind);
        unsigned members;
        pshape s = pending_shape(kind, &members);
        if (members > target - made)
            members = target - made;
        unsigned created = 2400000 + pick(200000);
        if (members > 1) {
            snprintf(pg, sizeof pg, "pg-job-%06u", w);
            pod_group(f, pg, leaf, members, s.np);
        }
        for (unsigned k = 0; k < members; k++) {
            snprintf(name, sizeof name, "job-%06u-%u", w, k);
            pod(f, name, leaf, &s, -1, members > 1 ? pg : NULL, created);
        }
        made += members;
        w++;
    }
}

static void fixed_objects(FILE *f, unsigned nleaves)
{
    fprintf(f, "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"train\"},\"value\":50}");
    fprintf(f, ",\n{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"build\"},\"value\":100}");
    fprintf(f, ",\n{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":\"system-node-critical\"},\"value\":2000001000}");
    fprintf(f, ",\n{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"kube-system\"}}");
    for (unsigned l = 0; l < nleaves; l++)
        fprintf(f, ",\n{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team-%u\"}}", l);
}

void gen_cluster(FILE *f, unsigned scale, uint64_t seed)
{
    g_rng = 0x2545f4914f6cdd1dull ^ (seed * 0x9e3779b97f4a7c15ull);
    if (!g_rng)
        g_rng = 1;
    g_uid = 0;
    if (scale == 0)
        scale = 1;
    unsigned nn = 5000 * scale, nleaves = 450 * scale;
    gnode *nodes = calloc(nn, sizeof *nodes);
    gleaf *leaves = calloc(nleaves, sizeof *leaves);
    if (!nodes || !leaves) {
        fprintf(stderr, "gen_cluster: out of memory\n");
        exit(1);
    }
    fprintf(f, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"},\"items\":[\n");
    fixed_objects(f, nleaves);
    gen_nodes(f, nodes, nn);
    gen_accres(f);
    daemonsets(f, nn);
    /* The queues' limits follow what runs, so the running pods are made first (in memory). */
    char *body = NULL;
    size_t blen = 0;
    FILE *mf = open_memstream(&body, &blen);
    running(mf, nodes, nn, nleaves, leaves);
    pending(mf, nleaves, 50000 * scale);
    fclose(mf);
    gen_queues(f, scale, leaves);
    fwrite(body, 1, blen, f);
    fprintf(f, "\n]}\n");
    free(body);
    free(nodes);
    free(leaves);
}
