/*
** test_invariants.c: property-based invariant tests for both engines
** (issue 7, "The ledger never drifts"; docs/reliability.md).
**
** A seeded generator (xorshift64*, no libc rand) writes random inputs as
** YAML text; each is loaded through the store like any user input and run
** through the engine, and the engine's results are checked against a
** recomputation from scratch:
**
** The pod engine (podsched.h), one random cluster per seed:
**   P1 recomputation: every queue's allocated, allocatedNonPreemptible, the
**      three KAI dimensions and every AccountedResource's used equal the sum
**      over the Running and Bound pods of its subtree, each pod's charge
**      recomputed from tly_podreq_compute, the node's GPU memory and
**      tly_accounted_charges (the pod's own `accounted` too); a Running pod
**      on a node the input lacks is charged the node-independent part (the
**      largest node GPU memory, tly_accounted_charges_job);
**   P2 limits: for every queue, finite spec.resources limit, quota (for
**      allocatedNonPreemptible) and AccountedResource limit, the final usage
**      is at most max(bound, the usage of the Running pods alone);
**   P3 node capacity: per node and resource, Running + Bound pods (any
**      scheduler) stay within max(allocatable, Running alone); GPU hundredths
**      within the device count x 100 when the Running pods themselves fit the
**      node's device model; every Bound pod passes the static predicates of
**      its node and sits in an admissible leaf queue;
**   P4 gangs: a PodGroup's pending pods are Bound together (at least
**      minMember less the Running ones, or all that could be tried) or not at
**      all;
**   P5 determinism: the same seed built and run twice gives the same text and
**      the same decisions, messages and numbers.
**
** The Run engine (runsched.h), one random sequence per seed: Runtime Pods
** (capacity annotations, the JSON form, readiness) and Runs, one run, then
** random events (a Run ends, a Run is cancelled, a Pod's capacity changes,
** nothing happens) each followed by tly_runsched_run; after EVERY step:
**   R1 each Pod's used = the normalized requests of its active Runs;
**   R2 each Pod's admitted = the requests of its Running Runs;
**   R3 admitted never grows past capacity: after a step, admitted <=
**      max(capacity, admitted before the step) per resource, and any
**      resource a Run admitted in this step asks for is within capacity (so
**      only forced re-adoption and capacity shrinks can leave it above);
**   R4 the same for used and the Runs the scheduler placed in this step;
**   R5 a Pending InsufficientCapacity Run fits no available Pod of its group
**      at that moment; RuntimePodsUnavailable means none is available; a
**      Pending Run has a valid request; a placed Run is on an available Pod
**      of its own (namespace, runtime);
**   R6 a step without an event re-tries nothing (cycles do not move);
**   R7 determinism of the whole sequence;
**   R8 the load-class index decides exactly as the plain per-Pod scan does
**      (tly_runsched_set_indexed(rs, false)): same Pods, states, messages.
**
** TALLY_PROPERTY_CASES  number of clusters and of Run sequences (default below);
** TALLY_PROPERTY_SEED   run only this seed (both engines), to reproduce a failure;
** TALLY_PROPERTY_DUMP   a directory: each case's input is written there as
**                       pods-<seed>.yaml / runs-<seed>.yaml (for `tally simulate`);
** TALLY_PROPERTY_VERBOSE=1  print each seed before its case (for a sanitizer stop).
** A failure names the engine, the seed and the property.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "tally/accounted.h"
#include "tally/error.h"
#include "tally/kruntimes.h"
#include "tally/nodefit.h"
#include "tally/podreq.h"
#include "tally/podsched.h"
#include "tally/quantity.h"
#include "tally/queues.h"
#include "tally/resource.h"
#include "tally/runsched.h"

/* Cases per engine in `make test`: about 3 s plain, 10 s under ASan + UBSan on 2 cores. */
#define DEFAULT_CASES 1000

/* ---- configuration and failure reporting ---------------------------------- */

static uint32_t g_cases = DEFAULT_CASES;
static bool g_have_only;
static uint64_t g_only;
static const char *g_dump;
static bool g_verbose;

static char g_fail[4096];
static uint64_t g_seed;
static const char *g_engine = "";

static bool failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool failf(const char *fmt, ...)
{
    if (g_fail[0])
        return false;
    int n = snprintf(g_fail, sizeof g_fail, "%s seed %" PRIu64 ": ", g_engine, g_seed);
    if (n < 0 || (size_t)n >= sizeof g_fail)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_fail + n, sizeof g_fail - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

#define CHECK(cond, ...)                 \
    do {                                 \
        if (!(cond))                     \
            return failf(__VA_ARGS__);   \
    } while (0)

/*
** An abort() (ASan's abort_on_error, an assertion in the library) ends the
** process before cmocka can print anything: name the case first, so that
** such a finding is as reproducible as a failed property. UBSan's
** halt_on_error exits without a signal: TALLY_PROPERTY_VERBOSE=1 prints each
** case's seed before it runs, and the last one printed is the culprit.
*/
static volatile sig_atomic_t g_announced;

static void announce_case(void)
{
    if (g_announced)
        return;
    g_announced = 1;
    char buf[128] = "\ntest_invariants: stopped in the ";
    size_t n = strlen(buf);
    for (const char *e = g_engine; *e && n < 60; e++)
        buf[n++] = *e;
    for (const char *e = " case with TALLY_PROPERTY_SEED="; *e; e++)
        buf[n++] = *e;
    char digits[24];
    size_t k = 0;
    uint64_t v = g_seed;
    do {
        digits[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && k < sizeof digits);
    while (k)
        buf[n++] = digits[--k];
    buf[n++] = '\n';
    ssize_t w = write(2, buf, n);
    (void)w;
}

static void on_abort(int sig)
{
    announce_case();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void read_config(void)
{
    const char *c = getenv("TALLY_PROPERTY_CASES");
    if (c && *c)
        g_cases = (uint32_t)strtoul(c, NULL, 10);
    const char *s = getenv("TALLY_PROPERTY_SEED");
    if (s && *s) {
        g_have_only = true;
        g_only = strtoull(s, NULL, 10);
    }
    const char *d = getenv("TALLY_PROPERTY_DUMP");
    g_dump = d && *d ? d : NULL;
    const char *v = getenv("TALLY_PROPERTY_VERBOSE");
    g_verbose = v && *v && strcmp(v, "0") != 0;
}

/* ---- the generator's randomness --------------------------------------------- */

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void rng_seed(rng_t *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed * 0xD1B54A32D192ED03ull ^ stream;
    r->s = splitmix(&x);
    if (!r->s)
        r->s = 1;
}

/* xorshift64* */
static uint64_t rng_next(rng_t *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static uint32_t below(rng_t *r, uint32_t n)
{
    return n ? (uint32_t)((rng_next(r) >> 11) % n) : 0;
}

static bool chance(rng_t *r, uint32_t pct)
{
    return below(r, 100) < pct;
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define PICK(r, a) ((a)[below((r), (uint32_t)NELEM(a))])

/* ---- text ---------------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        size_t room = b->cap - b->n;
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, room, fmt, ap);
        va_end(ap);
        if (k < 0)
            return;
        if ((size_t)k < room) {
            b->n += (size_t)k;
            return;
        }
        b->cap = (b->cap + (size_t)k + 64) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
}

static void sb_free(sbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static const char *qtext(tly_qty q, char *buf)
{
    tly_qty_format(q, buf, TLY_QTY_BUFSZ);
    return buf;
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static void dump_input(const char *kind, uint64_t seed, const sbuf *y)
{
    if (!g_dump)
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s-%" PRIu64 ".yaml", g_dump, kind, seed);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fwrite(y->p, 1, y->n, f);
    fclose(f);
}

/* Loads the text; false (with the first error) when it is not clean input. */
static tly_store *load_clean(const sbuf *y)
{
    tly_store *s = tly_store_create();
    tly_store_load_string(s, "generated.yaml", y->p, y->n);
    tly_store_finish(s);
    tly_diags *d = tly_store_diags(s);
    for (size_t i = 0; i < tly_diags_count(d); i++) {
        const tly_diag *g = tly_diags_get(d, i);
        /* An invalid Run request is an error for validate, and a Run the
           scheduler fails: that one is generated on purpose. */
        if (g->sev == TLY_SEV_ERROR && !strstr(g->msg, "must be a non-negative integer")) {
            failf("the generated input does not load: line %u: %s", g->line, g->msg);
            break;
        }
    }
    return s;
}

/* ---- rvec helpers ---------------------------------------------------------------- */

static void rvec_add_one(tly_rvec *v, uint32_t id, tly_qty q)
{
    tly_rq e = {id, q};
    tly_rlist one = {&e, 1};
    tly_rvec_add_list(v, &one);
}

static void rvec_copy(tly_rvec *dst, const tly_rvec *src)
{
    tly_rvec_clear(dst);
    for (uint32_t id = 0; id < src->n; id++)
        tly_rvec_set(dst, id, src->v[id]);
}

static uint32_t max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* The first id where a and b differ, or TLY_NAME_NONE. */
static uint32_t rvec_diff(const tly_rvec *a, const tly_rvec *b)
{
    uint32_t n = max_u32(a->n, b->n);
    for (uint32_t id = 0; id < n; id++)
        if (tly_qty_cmp(tly_rvec_get(a, id), tly_rvec_get(b, id)) != 0)
            return id;
    return TLY_NAME_NONE;
}

static tly_qty qadd(tly_qty a, tly_qty b)
{
    tly_qty r = a;
    tly_qty_add(a, b, &r);
    return r;
}

static bool gpu_id(uint32_t id) { return id == TLY_R_NVIDIA_GPU || id == TLY_R_AMD_GPU; }

/* ======================================================================== */
/* ==== the pod engine =================================================== */
/* ======================================================================== */

#define MAX_NODES 6
#define MAX_DEV 8
#define MAX_QUEUES 24
#define MAX_PGS 4

typedef struct {
    char name[24];
    bool gpu;
    uint32_t ndev;
    uint64_t mem;                  /* floored MiB, 0 unknown */
    int64_t cpu_m, mem_mi, pods, fpga;   /* budget left for Running pods */
    uint32_t freeh[MAX_DEV];
    bool shared[MAX_DEV];
} gnode;

typedef struct {
    char name[48];
    int parent;
    bool leaf;
} gqueue;

static const char *const TIMES_DAY = "2026-11-24";

/* A device model for the generator's Running pods, close to the engine's, so
   that most inputs are consistent (the checker does not rely on it). */
static bool gen_gpu_take(gnode *n, int kind, uint32_t devices, uint32_t portion)
{
    if (kind == 1) {
        uint32_t have = 0;
        for (uint32_t i = 0; i < n->ndev; i++)
            have += n->freeh[i] == 100 && !n->shared[i];
        if (have < devices)
            return false;
        for (uint32_t i = 0; i < n->ndev && devices; i++)
            if (n->freeh[i] == 100 && !n->shared[i]) {
                n->freeh[i] = 0;
                devices--;
            }
        return true;
    }
    uint32_t pick[MAX_DEV], np = 0;
    for (int pass = 0; pass < 2 && np < devices; pass++)
        for (uint32_t i = 0; i < n->ndev && np < devices; i++) {
            bool ok = pass == 0 ? n->shared[i] && n->freeh[i] >= portion
                                : !n->shared[i] && n->freeh[i] == 100 && portion <= 100;
            if (ok)
                pick[np++] = i;
        }
    if (np < devices)
        return false;
    for (uint32_t k = 0; k < np; k++) {
        n->shared[pick[k]] = true;
        n->freeh[pick[k]] -= portion;
    }
    return true;
}

static void gen_queue_resources(rng_t *r, sbuf *y)
{
    /* positive amounts; -1 and 0 are drawn separately */
    static const char *const cpu[] = {"500", "2000", "4000", "8000", "16000", "32000", "64000"};
    static const char *const mem[] = {"4000", "16000", "64000", "200000", "500000"};
    static const char *const gpu[] = {"1", "2", "3", "4", "6", "8", "0.5", "1.5"};
    static const char *const dims[] = {"cpu", "memory", "gpu"};
    sb_printf(y, "  resources:\n");
    for (int d = 0; d < 3; d++) {
        if (!chance(r, 97))
            continue; /* omitted: a bound of 0 */
        sb_printf(y, "    %s:\n", dims[d]);
        const char *const *vals = d == 0 ? cpu : d == 1 ? mem : gpu;
        uint32_t nv = d == 0 ? (uint32_t)NELEM(cpu) : d == 1 ? (uint32_t)NELEM(mem) : (uint32_t)NELEM(gpu);
        for (int k = 0; k < 2; k++) {
            if (!chance(r, 97))
                continue;
            uint32_t roll = below(r, 100);
            const char *v = roll < 40 ? "-1" : roll < 43 ? "0" : roll < 45 && d == 1 ? "-5" : vals[below(r, nv)];
            sb_printf(y, "      %s: %s\n", k ? "limit" : "quota", v);
        }
        sb_printf(y, "      overQuotaWeight: 1\n");
    }
}

static const char *acc_limit(rng_t *r, const char *name)
{
    static const char *const mem[] = {"-1", "0", "20Gi", "100Gi", "300Gi", "1Ti"};
    static const char *const pct[] = {"-1", "0", "100", "200", "400"};
    static const char *const cnt[] = {"-1", "0", "1", "2", "3", "4", "8", "16"};
    if (!strcmp(name, "gpu-memory") || !strcmp(name, "scratch"))
        return PICK(r, mem);
    if (!strcmp(name, "gpu-compute"))
        return PICK(r, pct);
    return PICK(r, cnt);
}

static void gen_time(rng_t *r, sbuf *y, const char *indent, const char *key, uint32_t hour)
{
    sb_printf(y, "%s%s: '%sT%02u:%02u:%02uZ'\n", indent, key, TIMES_DAY, hour, below(r, 60),
              below(r, 60));
}

/* One container's resources block. */
static void gen_requests(sbuf *y, const char *indent, const char *cpu, const char *mem,
                         uint32_t whole, const char *mig, uint32_t fpga)
{
    if (!cpu && !mem && !whole && !mig && !fpga) {
        sb_printf(y, "%sresources: {}\n", indent);
        return;
    }
    sb_printf(y, "%sresources:\n", indent);
    for (int part = 0; part < 2; part++) {
        if (part == 1 && !whole && !mig && !fpga)
            break;
        sb_printf(y, "%s  %s:\n", indent, part ? "limits" : "requests");
        if (part == 0 && cpu)
            sb_printf(y, "%s    cpu: '%s'\n", indent, cpu);
        if (part == 0 && mem)
            sb_printf(y, "%s    memory: %s\n", indent, mem);
        if (whole)
            sb_printf(y, "%s    nvidia.com/gpu: '%u'\n", indent, whole);
        if (mig)
            sb_printf(y, "%s    %s: '1'\n", indent, mig);
        if (fpga)
            sb_printf(y, "%s    example.com/fpga: '%u'\n", indent, fpga);
    }
}

static void gen_cluster(uint64_t seed, sbuf *y)
{
    rng_t r;
    rng_seed(&r, seed, 0x706f6473ull /* "pods" */);
    static const char *const nss[] = {"ns-a", "ns-b"};

    /* Config: now and then queue-admission gating off or GPU sharing off. */
    uint32_t cfg = below(&r, 12);
    if (cfg == 0)
        sb_printf(y, "---\napiVersion: kai.scheduler/v1\nkind: Config\nmetadata:\n  name: kai-config\n"
                     "spec:\n  global:\n    queueAdmissionGating:\n      enabled: false\n");
    else if (cfg == 1)
        sb_printf(y, "---\napiVersion: kai.scheduler/v1\nkind: Config\nmetadata:\n  name: kai-config\n"
                     "spec:\n  global:\n    gpuSharingMode: Disabled\n");

    /* PriorityClasses; sometimes one is the global default. */
    static const char *const pcs[] = {"low", "high", "urgent"};
    static const int pcv[] = {50, 100, 125};
    int gdef = chance(&r, 15) ? (int)below(&r, 3) : -1;
    for (int i = 0; i < 3; i++)
        sb_printf(y, "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: %s\n"
                     "value: %d\n%s",
                  pcs[i], pcv[i], gdef == i ? "globalDefault: true\n" : "");

    /* AccountedResources. */
    static const char *const accs[] = {"accel", "gpu", "gpu-compute", "gpu-h200", "gpu-memory", "scratch"};
    const char *acc[NELEM(accs)];
    uint32_t nacc = 0;
    for (uint32_t i = 0; i < NELEM(accs); i++) {
        if (!chance(&r, 55))
            continue;
        const char *a = accs[i];
        acc[nacc++] = a;
        sb_printf(y, "---\napiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\nmetadata:\n"
                     "  name: %s\nspec:\n",
                  a);
        if (chance(&r, 60))
            sb_printf(y, "  defaults:\n    limit: '%s'\n", chance(&r, 50) ? "-1" : acc_limit(&r, a));
        sb_printf(y, "  sources:\n");
        if (!strcmp(a, "accel"))
            sb_printf(y, "  - resourceName: example.com/fpga\n  - resourceName: nvidia.com/gpu\n");
        else if (!strcmp(a, "gpu"))
            sb_printf(y, "  - resourceName: nvidia.com/gpu\n");
        else if (!strcmp(a, "gpu-compute"))
            sb_printf(y, "  - podAnnotation:\n      key: gpu-compute\n      unit: percent\n");
        else if (!strcmp(a, "gpu-h200"))
            sb_printf(y, "  - resourceName: nvidia.com/gpu\n    match:\n      nodeLabels:\n"
                         "        nvidia.com/gpu.product: H200\n");
        else if (!strcmp(a, "gpu-memory"))
            sb_printf(y, "  - podAnnotation:\n      key: gpu-memory\n      unit: Mi\n");
        else
            sb_printf(y, "  - podAnnotation:\n      key: scratch\n    quantity:\n      podAnnotation:\n"
                         "        unit: Gi\n");
    }

    /* The queue tree: 1-2 roots, 1-3 children each, some grandchildren. */
    gqueue q[MAX_QUEUES];
    uint32_t nq = 0;
    uint32_t nroots = 1 + below(&r, 2);
    for (uint32_t i = 0; i < nroots && nq < MAX_QUEUES; i++) {
        uint32_t root = nq;
        snprintf(q[nq].name, sizeof q[nq].name, "r%u", i);
        q[nq].parent = -1;
        q[nq++].leaf = true;
        uint32_t nkids = 1 + below(&r, 3);
        for (uint32_t c = 0; c < nkids && nq < MAX_QUEUES; c++) {
            uint32_t kid = nq;
            snprintf(q[nq].name, sizeof q[nq].name, "r%u-c%u", i, c);
            q[nq].parent = (int)root;
            q[nq++].leaf = true;
            q[root].leaf = false;
            if (chance(&r, 30)) {
                uint32_t ng = 1 + below(&r, 2);
                for (uint32_t g = 0; g < ng && nq < MAX_QUEUES; g++) {
                    snprintf(q[nq].name, sizeof q[nq].name, "r%u-c%u-g%u", i, c, g);
                    q[nq].parent = (int)kid;
                    q[nq++].leaf = true;
                    q[kid].leaf = false;
                }
            }
        }
    }
    bool orphan = chance(&r, 10);
    for (uint32_t i = 0; i < nq; i++) {
        sb_printf(y, "---\napiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata:\n  name: %s\n", q[i].name);
        if (chance(&r, 8))
            sb_printf(y, "  labels:\n    kai.scheduler/queue-admission-gating: 'false'\n");
        sb_printf(y, "spec:\n");
        size_t mark = y->n;
        if (q[i].parent >= 0)
            sb_printf(y, "  parentQueue: %s\n", q[q[i].parent].name);
        if (chance(&r, 15))
            sb_printf(y, "  displayName: Team %s\n", q[i].name);
        if (chance(&r, 20))
            sb_printf(y, "  priority: %d\n", (int)PICK(&r, ((const int[]){50, 100, 150})));
        if (chance(&r, 4))
            sb_printf(y, "  admissionGating: false\n");
        if (chance(&r, 45))
            gen_queue_resources(&r, y);
        bool head = false;
        for (uint32_t a = 0; a < nacc; a++) {
            if (!chance(&r, 30))
                continue;
            if (!head)
                sb_printf(y, "  accountedResources:\n");
            head = true;
            sb_printf(y, "  - resourceRef: %s\n    limit: '%s'\n", acc[a],
                      chance(&r, 30) ? "-1" : acc_limit(&r, acc[a]));
        }
        if (chance(&r, 2)) {
            if (!head)
                sb_printf(y, "  accountedResources:\n");
            sb_printf(y, "  - resourceRef: missing-ar\n    limit: '1'\n");
        }
        if (y->n == mark)
            sb_printf(y, "  priority: 100\n"); /* the default: keeps spec a map */
    }
    if (orphan)
        sb_printf(y, "---\napiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata:\n  name: orphan\n"
                     "spec:\n  parentQueue: ghost\n");

    /* Nodes. */
    gnode nodes[MAX_NODES];
    uint32_t nn = 1 + below(&r, 5);
    for (uint32_t i = 0; i < nn; i++) {
        gnode *n = &nodes[i];
        memset(n, 0, sizeof *n);
        snprintf(n->name, sizeof n->name, "node-%u", i);
        n->gpu = chance(&r, 65);
        bool h200 = chance(&r, 50);
        uint32_t cpu = PICK(&r, ((const uint32_t[]){4, 8, 16, 32, 64}));
        uint32_t memg = PICK(&r, ((const uint32_t[]){16, 64, 256}));
        uint32_t pods = chance(&r, 20) ? 1 + below(&r, 4) : 110;
        n->fpga = chance(&r, 20) ? 2 + 2 * below(&r, 2) : 0;
        n->cpu_m = cpu * 1000;
        n->mem_mi = (int64_t)memg * 1024;
        n->pods = pods;
        sb_printf(y, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n", n->name);
        gen_time(&r, y, "  ", "creationTimestamp", 8);
        sb_printf(y, "  labels:\n    kubernetes.io/hostname: %s\n    zone: %s\n", n->name,
                  chance(&r, 50) ? "a" : "b");
        if (n->gpu) {
            n->ndev = PICK(&r, ((const uint32_t[]){1, 2, 4, 8}));
            sb_printf(y, "    nvidia.com/gpu.product: %s\n", h200 ? "H200" : "A100");
            if (chance(&r, 88)) {
                uint64_t raw = h200 ? 143771 : 81920;
                n->mem = raw - raw % 100;
                sb_printf(y, "    nvidia.com/gpu.memory: '%" PRIu64 "'\n", raw);
            }
            for (uint32_t d = 0; d < n->ndev; d++)
                n->freeh[d] = 100;
        }
        bool unsched = chance(&r, 5);
        uint32_t taint = chance(&r, 22) ? 1 + below(&r, 3) : 0;
        if (!unsched && !taint) {
            sb_printf(y, "spec: {}\n");
        } else {
            sb_printf(y, "spec:\n");
            if (unsched)
                sb_printf(y, "  unschedulable: true\n");
            if (taint)
                sb_printf(y, "  taints:\n  - key: dedicated\n    value: gpu\n    effect: %s\n",
                          taint == 1 ? "NoSchedule" : taint == 2 ? "PreferNoSchedule" : "NoExecute");
        }
        sb_printf(y, "status:\n  allocatable:\n    cpu: '%u'\n    memory: %uGi\n    pods: '%u'\n", cpu,
                  memg, pods);
        if (n->gpu)
            sb_printf(y, "    nvidia.com/gpu: '%u'\n", n->ndev);
        if (n->fpga)
            sb_printf(y, "    example.com/fpga: '%" PRId64 "'\n", n->fpga);
        if (chance(&r, 4))
            sb_printf(y, "    nvidia.com/mig-1g.10gb: '2'\n");
        sb_printf(y, "  conditions:\n  - type: Ready\n    status: '%s'\n", chance(&r, 95) ? "True" : "False");
    }

    /* PodGroups. */
    struct {
        char name[16];
        uint32_t ns;
    } pgs[MAX_PGS];
    uint32_t npg = below(&r, MAX_PGS);
    for (uint32_t i = 0; i < npg; i++) {
        snprintf(pgs[i].name, sizeof pgs[i].name, "pg-%u", i);
        pgs[i].ns = below(&r, 2);
        sb_printf(y, "---\napiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata:\n"
                     "  name: %s\n  namespace: %s\n",
                  pgs[i].name, nss[pgs[i].ns]);
        gen_time(&r, y, "  ", "creationTimestamp", 10);
        uint32_t qi;
        do
            qi = below(&r, nq);
        while (!q[qi].leaf && chance(&r, 90));
        sb_printf(y, "spec:\n  queue: %s\n  minMember: %u\n", chance(&r, 5) ? "nope" : q[qi].name,
                  1 + below(&r, 3));
        if (chance(&r, 30))
            sb_printf(y, "  priorityClassName: %s\n", PICK(&r, pcs));
        if (chance(&r, 20))
            sb_printf(y, "  preemptibility: %s\n", chance(&r, 50) ? "preemptible" : "non-preemptible");
    }

    /* Pods. */
    uint32_t npods = 3 + below(&r, 18);
    for (uint32_t i = 0; i < npods; i++) {
        uint32_t ns = below(&r, 2);
        bool ours = chance(&r, 85);
        /* what it asks for */
        static const char *const cpus[] = {"100m", "250m", "500m", "1", "2", "4", "8"};
        static const uint32_t cpum[] = {100, 250, 500, 1000, 2000, 4000, 8000};
        static const char *const mems[] = {"256Mi", "1Gi", "4Gi", "16Gi", "64Gi"};
        static const uint32_t memmi[] = {256, 1024, 4096, 16384, 65536};
        int ci = chance(&r, 70) ? (int)below(&r, NELEM(cpus)) : -1;
        int mi = chance(&r, 65) ? (int)below(&r, NELEM(mems)) : -1;
        uint32_t g = below(&r, 100);
        int kind = 0; /* 0 none, 1 whole, 2 fraction, 3 gpu-memory, 4 invalid, 5 MIG */
        uint32_t whole = 0, devices = 1, portion = 0;
        const char *frac = NULL, *gmem = NULL, *bad = NULL;
        if (g < 40) {
            kind = 0;
        } else if (g < 70) {
            kind = 1;
            whole = devices = PICK(&r, ((const uint32_t[]){1, 1, 2, 4}));
        } else if (g < 85) {
            kind = 2;
            static const char *const fr[] = {"0.25", "0.5", "0.3", "0.75"};
            static const uint32_t fp[] = {25, 50, 30, 75};
            uint32_t k = below(&r, NELEM(fr));
            frac = fr[k];
            portion = fp[k];
            devices = chance(&r, 25) ? 2 : 1;
        } else if (g < 95) {
            kind = 3;
            gmem = PICK(&r, ((const char *const[]){"2000", "20000", "60000"}));
        } else if (g < 98) {
            kind = 4;
            bad = PICK(&r, ((const char *const[]){"1.5", "abc", "0"}));
        } else {
            kind = 5;
        }
        uint32_t fpga = chance(&r, 10) ? 1 + below(&r, 2) : 0;
        int64_t init_cpu = chance(&r, 8) ? 3000 : 0;

        /* bound to a node (Running), terminal, or pending */
        int bound = -1;
        const char *phase = "Pending";
        bool gone = false;
        if (chance(&r, 38)) {
            uint32_t k = below(&r, nn);
            gnode *n = &nodes[k];
            bool force = chance(&r, 8);
            int64_t c = ci >= 0 ? cpum[ci] : 0, m = mi >= 0 ? memmi[mi] : 0;
            if (init_cpu > c)
                c = init_cpu;
            bool fits = c <= n->cpu_m && m <= n->mem_mi && n->pods >= 1 && (int64_t)fpga <= n->fpga;
            gnode save = *n;
            if (fits && kind == 1)
                fits = n->gpu && gen_gpu_take(n, 1, devices, 0);
            else if (fits && kind == 2)
                fits = n->gpu && gen_gpu_take(n, 2, devices, portion);
            else if (fits && kind == 3) {
                uint64_t mem = strtoull(gmem, NULL, 10);
                fits = n->gpu && n->mem && mem <= n->mem &&
                       gen_gpu_take(n, 2, 1, (uint32_t)((100 * mem + n->mem - 1) / n->mem));
            } else if (fits && kind == 5)
                fits = false;
            if (fits || force) {
                if (!fits)
                    *n = save;
                n->cpu_m -= c;
                n->mem_mi -= m;
                n->pods -= 1;
                n->fpga -= fpga;
                bound = (int)k;
                phase = "Running";
                gone = chance(&r, 3);
            } else {
                *n = save;
            }
        }
        if (chance(&r, 6))
            phase = chance(&r, 50) ? "Succeeded" : "Failed";

        sb_printf(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p%02u\n  namespace: %s\n", i, nss[ns]);
        gen_time(&r, y, "  ", "creationTimestamp", 10);
        uint32_t qi = below(&r, nq);
        if (!q[qi].leaf && chance(&r, 95))
            for (uint32_t t = 0; t < nq; t++)
                if (q[(qi + t) % nq].leaf) {
                    qi = (qi + t) % nq;
                    break;
                }
        uint32_t qroll = below(&r, 100);
        if (qroll < 98)
            sb_printf(y, "  labels:\n    kai.scheduler/queue: %s\n",
                      qroll < 2 ? "nope" : qroll < 4 && orphan ? "orphan" : q[qi].name);
        /* annotations */
        int pg = -1;
        if (npg && chance(&r, 40)) {
            uint32_t k = below(&r, npg);
            if (pgs[k].ns == ns)
                pg = (int)k;
        }
        bool ann = pg >= 0 || frac || gmem || bad || chance(&r, 25);
        if (ann) {
            sb_printf(y, "  annotations:\n    owner: generator\n");
            if (pg >= 0)
                sb_printf(y, "    pod-group-name: %s\n", pgs[pg].name);
            if (frac)
                sb_printf(y, "    gpu-fraction: '%s'\n", frac);
            if (frac && devices == 2)
                sb_printf(y, "    gpu-fraction-num-devices: '2'\n");
            if (gmem)
                sb_printf(y, "    gpu-memory: '%s'\n", gmem);
            if (bad)
                sb_printf(y, "    gpu-fraction: '%s'\n", bad);
            if (chance(&r, 15))
                sb_printf(y, "    gpu-compute: '%s'\n", PICK(&r, ((const char *const[]){"50", "150", "lots"})));
            if (chance(&r, 12))
                sb_printf(y, "    scratch: '%s'\n", PICK(&r, ((const char *const[]){"1", "3"})));
        }
        sb_printf(y, "spec:\n  schedulerName: %s\n", ours ? "kai-scheduler" : "default-scheduler");
        if (bound >= 0)
            sb_printf(y, "  nodeName: %s\n", gone ? "gone-node" : nodes[bound].name);
        if (chance(&r, 30))
            sb_printf(y, "  priorityClassName: %s\n",
                      chance(&r, 10) ? "nope" : PICK(&r, pcs));
        if (chance(&r, 15)) {
            uint32_t sel = below(&r, 3);
            sb_printf(y, "  nodeSelector:\n    %s\n",
                      sel == 0 ? "nvidia.com/gpu.product: H200" : sel == 1 ? "nvidia.com/gpu.product: A100" : "zone: a");
        }
        if (chance(&r, 25))
            sb_printf(y, "  tolerations:\n  - key: dedicated\n    operator: Exists\n    effect: NoSchedule\n");
        if (chance(&r, 4))
            sb_printf(y, "  schedulingGates:\n  - name: %s\n",
                      chance(&r, 50) ? "example.com/wait-for-data" : "kai.scheduler/queue-admission");
        if (init_cpu)
            sb_printf(y, "  initContainers:\n  - name: init\n    image: busybox\n"
                         "    resources:\n      requests:\n        cpu: '3'\n");
        if (chance(&r, 4))
            sb_printf(y, "  overhead:\n    cpu: 250m\n");
        sb_printf(y, "  containers:\n  - name: main\n    image: nvcr.io/nvidia/pytorch:25.10-py3\n");
        gen_requests(y, "    ", ci >= 0 ? cpus[ci] : NULL, mi >= 0 ? mems[mi] : NULL, whole,
                     kind == 5 ? "nvidia.com/mig-1g.10gb" : NULL, fpga);
        sb_printf(y, "status:\n  phase: %s\n", phase);
    }
}

/* ---- the pod engine's checks --------------------------------------------- */

/* The pod's charge of AccountedResource k (zero when it is not listed). */
static tly_qty pod_charge(const tly_ps_result *r, uint32_t k)
{
    for (uint32_t e = 0; e < r->ncharges; e++)
        if (r->charges[e].ar == k)
            return r->charges[e].q;
    return (tly_qty){0, TLY_QFMT_DECIMAL_SI};
}

static bool pod_terminal(const tly_pod *p)
{
    return p->phase && (!strcmp(p->phase, "Succeeded") || !strcmp(p->phase, "Failed"));
}

static bool sharing_enabled(const tly_store *s)
{
    const tly_config *c = tly_store_config(s);
    if (!c)
        return true;
    if (c->gpu_sharing_mode && *c->gpu_sharing_mode)
        return strcmp(c->gpu_sharing_mode, "Disabled") != 0;
    return c->gpu_sharing != 0;
}

/* Priority as docs/pods.md states it: PodGroup's class, pod's class, globalDefault, 50. */
static int32_t priority_of(const tly_store *s, const tly_pod *p, const tly_podgroup *pg)
{
    const char *names[2] = {pg ? pg->priority_class_name : NULL, p->priority_class_name};
    for (int k = 0; k < 2; k++) {
        if (!names[k] || !*names[k])
            continue;
        const tly_priority_class *pc = tly_store_find(s, TLY_K_PRIORITY_CLASS, NULL, names[k]);
        if (pc)
            return pc->value;
    }
    for (uint32_t i = 0; i < tly_store_count(s, TLY_K_PRIORITY_CLASS); i++) {
        const tly_priority_class *pc = tly_store_at(s, TLY_K_PRIORITY_CLASS, i);
        if (pc->global_default)
            return pc->value;
    }
    return 50;
}

static bool non_preemptible(const tly_store *s, const tly_pod *p, const tly_podgroup *pg)
{
    if (pg && pg->preemptibility != TLY_PREEMPT_UNSET)
        return pg->preemptibility == TLY_PREEMPT_NON_PREEMPTIBLE;
    return priority_of(s, p, pg) >= 100;
}

/* A queue's sums, recomputed. */
typedef struct {
    tly_rvec alloc, alloc_np;
    tly_qty dim[TLY_QR_COUNT], dim_np[TLY_QR_COUNT];        /* Running + Bound */
    tly_qty run_dim[TLY_QR_COUNT], run_dim_np[TLY_QR_COUNT]; /* Running alone */
    tly_qty *acc, *run_acc;
} qsum;

typedef struct {
    uint32_t clusters, pods, bound, running, gated, unschedulable, invalid, gangs_bound,
        gangs_held, gpu_skipped, over_running;
} pod_stats;

static pod_stats g_ps;

/* How often each reason came up (so a reader sees what the cases exercise). */
static struct {
    const char *reason;
    uint32_t count;
} g_reasons[24];

static void count_reason(const char *reason)
{
    if (!reason)
        return;
    for (uint32_t i = 0; i < NELEM(g_reasons); i++) {
        if (!g_reasons[i].reason) {
            g_reasons[i].reason = reason;  /* the engine's literal, static */
            g_reasons[i].count = 1;
            return;
        }
        if (!strcmp(g_reasons[i].reason, reason)) {
            g_reasons[i].count++;
            return;
        }
    }
}

/* Per-pod recomputed request, on its node. */
typedef struct {
    tly_podreq req;
    bool have;
} preq;

/*
** P3 for GPU devices: can the shared and whole GPU requests on one node be
** arranged on its devices at all? A whole GPU takes a device of its own; a
** shared request takes `devs` distinct devices, `need` hundredths on each
** (and, for gpu-memory, `need_mem` MiB free, charging `charge_mem`). The
** engine's own arrangement is one such packing, so "none exists" is an
** over-commit, whatever order the engine placed things in.
*/
#define MAX_SHARES 48

typedef struct {
    uint32_t need, devs;
    uint64_t need_mem, charge_mem;
} share;

typedef struct {
    uint32_t ndev;
    uint32_t freeh[64];
    uint64_t freem[64];
    const share *items;
    uint32_t nitems;
    uint32_t budget;   /* search steps left: give up (inconclusive) when spent */
} packing;

static int pack(packing *pk, uint32_t item, uint32_t copy, uint32_t from)
{
    if (item == pk->nitems)
        return 1;
    if (pk->budget == 0)
        return -1;
    pk->budget--;
    const share *it = &pk->items[item];
    if (copy == it->devs)
        return pack(pk, item + 1, 0, 0);
    for (uint32_t d = from; d < pk->ndev; d++) {
        if (pk->freeh[d] < it->need || pk->freem[d] < it->need_mem)
            continue;
        /* devices in the same state are interchangeable: try the first only */
        bool seen = false;
        for (uint32_t e = from; e < d && !seen; e++)
            seen = pk->freeh[e] == pk->freeh[d] && pk->freem[e] == pk->freem[d];
        if (seen)
            continue;
        uint32_t h = pk->freeh[d];
        uint64_t m = pk->freem[d];
        pk->freeh[d] -= it->need;
        pk->freem[d] = m > it->charge_mem ? m - it->charge_mem : 0;
        int rc = pack(pk, item, copy + 1, d + 1);
        pk->freeh[d] = h;
        pk->freem[d] = m;
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int cmp_share(const void *a, const void *b)
{
    const share *x = a, *y = b;
    if (x->need != y->need)
        return x->need > y->need ? -1 : 1;
    return x->devs > y->devs ? -1 : x->devs < y->devs;
}

/* Adds r's GPU part; false when there are too many to check. */
static bool add_share(share *sh, uint32_t *nsh, uint32_t *whole, const tly_podreq *r, uint64_t mem)
{
    if (r->gpu_kind == TLY_GPU_WHOLE) {
        *whole += r->gpu_devices;
        return true;
    }
    if (r->gpu_kind != TLY_GPU_FRACTION && r->gpu_kind != TLY_GPU_MEMORY)
        return true;
    if (*nsh == MAX_SHARES)
        return false;
    share *x = &sh[(*nsh)++];
    x->devs = r->gpu_devices;
    if (r->gpu_kind == TLY_GPU_FRACTION) {
        x->need = r->gpu_portion > 100 ? 100 : r->gpu_portion;
        x->need_mem = 0;
        x->charge_mem = mem ? (uint64_t)x->need * mem / 100 : 0;
    } else {
        uint64_t m = r->gpu_memory_mib;
        x->need = mem ? (uint32_t)((100 * m + mem - 1) / mem) : 101;
        x->need_mem = m;
        x->charge_mem = m;
    }
    return true;
}

/* 1 a packing exists, 0 none does, -1 not decided. */
static int packable(const share *sh, uint32_t nsh, uint32_t whole, uint32_t ndev, uint64_t mem)
{
    if (whole > ndev)
        return 0;
    packing pk;
    memset(&pk, 0, sizeof pk);
    pk.ndev = ndev - whole;
    if (pk.ndev > 64)
        return -1;
    for (uint32_t d = 0; d < pk.ndev; d++) {
        pk.freeh[d] = 100;
        pk.freem[d] = mem;
    }
    share sorted[MAX_SHARES];
    memcpy(sorted, sh, nsh * sizeof *sh);
    qsort(sorted, nsh, sizeof *sorted, cmp_share);
    pk.items = sorted;
    pk.nitems = nsh;
    pk.budget = 200000;
    return pack(&pk, 0, 0, 0);
}

static bool check_pods(tly_store *s, tly_podsched *ps, tly_arena *a)
{
    tly_queues *qs = tly_podsched_queues(ps);
    tly_names *names = tly_store_names(s);
    uint32_t nq = tly_queues_count(qs), nacc = tly_queues_naccres(qs), np = tly_podsched_npods(ps);
    bool sharing = sharing_enabled(s);
    char b1[TLY_QTY_BUFSZ], b2[TLY_QTY_BUFSZ], b3[TLY_QTY_BUFSZ];

    qsum *sum = tly_arena_zalloc(a, (nq + 1) * sizeof *sum);
    for (uint32_t q = 0; q < nq; q++) {
        tly_rvec_init(&sum[q].alloc);
        tly_rvec_init(&sum[q].alloc_np);
        sum[q].acc = tly_arena_zalloc(a, (nacc + 1) * sizeof(tly_qty));
        sum[q].run_acc = tly_arena_zalloc(a, (nacc + 1) * sizeof(tly_qty));
    }
    bool ok = true;
    tly_qty *charge = tly_arena_zalloc(a, (nacc + 1) * sizeof(tly_qty));
    const tly_podgroup **pgof = tly_arena_zalloc(a, (np + 1) * sizeof *pgof);
    uint64_t max_mem = 0;
    for (uint32_t k = 0; k < tly_store_count(s, TLY_K_NODE); k++) {
        uint64_t m = tly_node_gpu_memory_mib(tly_store_at(s, TLY_K_NODE, k));
        max_mem = m > max_mem ? m : max_mem;
    }

    /* P1 (collect) and P3's per-pod part. */
    for (uint32_t i = 0; i < np && ok; i++) {
        const tly_ps_result *r = tly_podsched_pod(ps, i);
        const tly_pod *p = r->pod;
        const char *pname = p->meta.name, *pns = p->meta.ns;
        tly_store_pod_queue(s, p, &pgof[i]);
        bool running = !strcmp(r->state, "Running"), bound = !strcmp(r->state, "Bound");
        g_ps.pods++;
        g_ps.bound += bound;
        g_ps.running += running;
        g_ps.gated += !strcmp(r->state, "Gated");
        g_ps.unschedulable += !strcmp(r->state, "Unschedulable");
        g_ps.invalid += !strcmp(r->state, "Invalid");
        count_reason(r->reason);
        const tly_k8s_node *node = r->node ? tly_store_find(s, TLY_K_NODE, NULL, r->node) : NULL;
        int32_t qi = tly_queues_find(qs, r->queue);
        if (bound) {
            if (!node || qi < 0) {
                ok = failf("P3: pod %s/%s is Bound to node %s in queue %s, one of which does not exist",
                           pns, pname, r->node ? r->node : "(none)", r->queue);
                break;
            }
            if (tly_nodefit_static(p, node, NULL) != TLY_FIT_OK) {
                ok = failf("P3: pod %s/%s is Bound to %s, which its static predicates refuse", pns,
                           pname, r->node);
                break;
            }
            tly_qverdict v = {.quiet = true};
            if (tly_queues_admissible(qs, r->queue, &v) != qi) {
                ok = failf("P3: pod %s/%s is Bound in queue %s, which takes no workloads (%s)", pns,
                           pname, r->queue, v.reason ? v.reason : "?");
                break;
            }
        }
        bool charged = ((running && r->node) || (bound && node)) && qi >= 0;
        memset(charge, 0, (nacc + 1) * sizeof(tly_qty));
        if (charged) {
            tly_podreq req;
            tly_podreq_compute(p, sharing, names, a, &req);
            uint64_t mem = node ? tly_node_gpu_memory_mib(node) : max_mem;
            uint64_t h = tly_podreq_gpu_hundredths(&req, mem);
            if (node)
                tly_accounted_charges(qs, p, &req, node, mem, charge, NULL, a);
            else
                tly_accounted_charges_job(qs, p, &req, mem, NULL, 0, charge, a);
            bool npre = non_preemptible(s, p, pgof[i]);
            tly_qty d[TLY_QR_COUNT] = {tly_rlist_get(&req.req, TLY_R_CPU, NULL),
                                       tly_rlist_get(&req.req, TLY_R_MEMORY, NULL), tly_hundredths_qty(h)};
            for (int32_t j = qi; j >= 0; j = tly_queues_parent(qs, (uint32_t)j)) {
                qsum *u = &sum[j];
                for (uint32_t k = 0; k < req.req.n; k++) {
                    uint32_t id = req.req.v[k].id;
                    if (id == TLY_R_PODS || gpu_id(id))
                        continue;
                    rvec_add_one(&u->alloc, id, req.req.v[k].q);
                    if (npre)
                        rvec_add_one(&u->alloc_np, id, req.req.v[k].q);
                }
                if (h > 0) {
                    rvec_add_one(&u->alloc, req.gpu_resource, tly_hundredths_qty(h));
                    if (npre)
                        rvec_add_one(&u->alloc_np, req.gpu_resource, tly_hundredths_qty(h));
                }
                for (int k = 0; k < TLY_QR_COUNT; k++) {
                    u->dim[k] = qadd(u->dim[k], d[k]);
                    if (npre)
                        u->dim_np[k] = qadd(u->dim_np[k], d[k]);
                    if (running) {
                        u->run_dim[k] = qadd(u->run_dim[k], d[k]);
                        if (npre)
                            u->run_dim_np[k] = qadd(u->run_dim_np[k], d[k]);
                    }
                }
                for (uint32_t k = 0; k < nacc; k++) {
                    u->acc[k] = qadd(u->acc[k], charge[k]);
                    if (running)
                        u->run_acc[k] = qadd(u->run_acc[k], charge[k]);
                }
            }
        }
        for (uint32_t e = 0; e < r->ncharges && ok; e++)
            if (tly_qty_is_zero(r->charges[e].q) || r->charges[e].ar >= nacc ||
                (e > 0 && r->charges[e].ar <= r->charges[e - 1].ar))
                ok = failf("P1: pod %s/%s lists AccountedResource charges out of order, out of "
                           "range or zero (entry %u)", pns, pname, e);
        for (uint32_t k = 0; k < nacc && ok; k++)
            if (tly_qty_cmp(pod_charge(r, k), charge[k]) != 0)
                ok = failf("P1: pod %s/%s (%s on %s) reports %s of AccountedResource %s, recomputed %s",
                           pns, pname, r->state, r->node ? r->node : "-", qtext(pod_charge(r, k), b1),
                           tly_queues_accres(qs, k)->meta.name, qtext(charge[k], b2));
    }

    /* P1: the queues' ledgers equal the recomputation; P2: no bound is exceeded. */
    static const char *const dim_name[] = {"cpu", "memory", "gpu"};
    for (uint32_t q = 0; q < nq && ok; q++) {
        const char *qn = tly_queues_queue(qs, q)->meta.name;
        const qsum *u = &sum[q];
        uint32_t id = rvec_diff(tly_queues_allocated(qs, q), &u->alloc);
        if (id != TLY_NAME_NONE) {
            ok = failf("P1: queue %s allocated %s is %s, recomputed from its pods %s", qn,
                       tly_names_str(names, id), qtext(tly_rvec_get(tly_queues_allocated(qs, q), id), b1),
                       qtext(tly_rvec_get(&u->alloc, id), b2));
            break;
        }
        id = rvec_diff(tly_queues_allocated_np(qs, q), &u->alloc_np);
        if (id != TLY_NAME_NONE) {
            ok = failf("P1: queue %s allocatedNonPreemptible %s is %s, recomputed %s", qn,
                       tly_names_str(names, id),
                       qtext(tly_rvec_get(tly_queues_allocated_np(qs, q), id), b1),
                       qtext(tly_rvec_get(&u->alloc_np, id), b2));
            break;
        }
        for (int k = 0; k < TLY_QR_COUNT && ok; k++) {
            tly_qty used = tly_queues_used(qs, q, k, false), used_np = tly_queues_used(qs, q, k, true);
            if (tly_qty_cmp(used, u->dim[k]) != 0 || tly_qty_cmp(used_np, u->dim_np[k]) != 0) {
                ok = failf("P1: queue %s %s usage is %s (non-preemptible %s), recomputed %s", qn,
                           dim_name[k], qtext(used, b1), qtext(used_np, b2), qtext(u->dim[k], b3));
                break;
            }
            tly_qty lim;
            if (tly_queues_bound(qs, q, true, k, &lim) && tly_qty_cmp(used, lim) > 0) {
                if (tly_qty_cmp(used, u->run_dim[k]) > 0) {
                    ok = failf("P2: queue %s %s limit %s exceeded: %s used, %s by Running pods alone", qn,
                               dim_name[k], qtext(lim, b1), qtext(used, b2), qtext(u->run_dim[k], b3));
                    break;
                }
                g_ps.over_running++;
            }
            if (tly_queues_bound(qs, q, false, k, &lim) && tly_qty_cmp(used_np, lim) > 0 &&
                tly_qty_cmp(used_np, u->run_dim_np[k]) > 0) {
                ok = failf("P2: queue %s %s quota %s exceeded by non-preemptible pods: %s, %s by Running "
                           "pods alone",
                           qn, dim_name[k], qtext(lim, b1), qtext(used_np, b2), qtext(u->run_dim_np[k], b3));
                break;
            }
        }
        for (uint32_t k = 0; k < nacc && ok; k++) {
            tly_qty used = tly_queues_accounted_used(qs, q, k);
            const char *an = tly_queues_accres(qs, k)->meta.name;
            if (tly_qty_cmp(used, u->acc[k]) != 0) {
                ok = failf("P1: queue %s AccountedResource %s used is %s, recomputed %s", qn, an,
                           qtext(used, b1), qtext(u->acc[k], b2));
                break;
            }
            tly_qty lim = tly_queues_accounted_limit(qs, q, k);
            if (tly_qty_sign(lim) >= 0 && tly_qty_cmp(used, lim) > 0 && tly_qty_cmp(used, u->run_acc[k]) > 0)
                ok = failf("P2: queue %s AccountedResource %s limit %s exceeded: %s used, %s by Running "
                           "pods alone",
                           qn, an, qtext(lim, b1), qtext(used, b2), qtext(u->run_acc[k], b3));
        }
    }
    for (uint32_t q = 0; q < nq; q++) {
        tly_rvec_free(&sum[q].alloc);
        tly_rvec_free(&sum[q].alloc_np);
    }
    if (!ok)
        return false;

    /* P3: node capacity, Running (any scheduler) + Bound. */
    for (uint32_t k = 0; k < tly_store_count(s, TLY_K_NODE) && ok; k++) {
        const tly_k8s_node *node = tly_store_at(s, TLY_K_NODE, k);
        const char *nn = node->meta.name;
        uint64_t mem = tly_node_gpu_memory_mib(node);
        tly_rvec run, fin;
        tly_rvec_init(&run);
        tly_rvec_init(&fin);
        tly_gpus g;
        tly_gpus_init(&g, node);
        bool consistent = true;
        uint64_t run_h = 0, fin_h = 0;
        share sh[MAX_SHARES];
        uint32_t nsh = 0, whole = 0;
        bool small = true;
        uint32_t non;
        tly_pod *const *on = tly_store_pods_on_node(s, nn, &non);
        for (uint32_t i = 0; i < non; i++) {
            const tly_pod *p = on[i];
            if (pod_terminal(p))
                continue;
            tly_podreq req;
            tly_podreq_compute(p, tly_store_is_tally_pod(s, p) ? sharing : true, names, a, &req);
            for (uint32_t e = 0; e < req.req.n; e++)
                if (!gpu_id(req.req.v[e].id)) {
                    rvec_add_one(&run, req.req.v[e].id, req.req.v[e].q);
                    rvec_add_one(&fin, req.req.v[e].id, req.req.v[e].q);
                }
            if (req.gpu_kind != TLY_GPU_MIG)
                run_h += tly_podreq_gpu_hundredths(&req, mem);
            if (!tly_gpus_place(&g, &req, true))
                consistent = false;
            small = small && add_share(sh, &nsh, &whole, &req, mem);
        }
        fin_h = run_h;
        for (uint32_t i = 0; i < np; i++) {
            const tly_ps_result *r = tly_podsched_pod(ps, i);
            if (strcmp(r->state, "Bound") != 0 || strcmp(r->node, nn) != 0)
                continue;
            tly_podreq req;
            tly_podreq_compute(r->pod, sharing, names, a, &req);
            for (uint32_t e = 0; e < req.req.n; e++)
                if (!gpu_id(req.req.v[e].id))
                    rvec_add_one(&fin, req.req.v[e].id, req.req.v[e].q);
            if (req.gpu_kind != TLY_GPU_MIG)
                fin_h += tly_podreq_gpu_hundredths(&req, mem);
            small = small && add_share(sh, &nsh, &whole, &req, mem);
        }
        for (uint32_t id = 0; id < fin.n && ok; id++) {
            if (gpu_id(id))
                continue;
            tly_qty f = tly_rvec_get(&fin, id), alloc = tly_rlist_get(&node->allocatable, id, NULL);
            if (tly_qty_cmp(f, alloc) > 0 && tly_qty_cmp(f, tly_rvec_get(&run, id)) > 0)
                ok = failf("P3: node %s %s: Running + Bound pods request %s, allocatable %s, Running alone %s",
                           nn, tly_names_str(names, id), qtext(f, b1), qtext(alloc, b2),
                           qtext(tly_rvec_get(&run, id), b3));
        }
        if (ok && !consistent)
            g_ps.gpu_skipped++;
        if (ok && consistent && small && packable(sh, nsh, whole, g.ndev, mem) == 0)
            ok = failf("P3: node %s: its Running and Bound GPU requests (%u whole, %u shared) fit no "
                       "arrangement on its %u devices",
                       nn, whole, nsh, g.ndev);
        if (ok && consistent && fin_h > (uint64_t)g.ndev * 100)
            ok = failf("P3: node %s: GPU devices over-committed: %" PRIu64 " hundredths charged (Running %" PRIu64
                       ") on %u devices",
                       nn, fin_h, run_h, g.ndev);
        tly_gpus_free(&g);
        tly_rvec_free(&run);
        tly_rvec_free(&fin);
    }
    if (!ok)
        return false;

    /* P4: gangs. */
    for (uint32_t k = 0; k < tly_store_count(s, TLY_K_PODGROUP); k++) {
        const tly_podgroup *pg = tly_store_at(s, TLY_K_PODGROUP, k);
        uint32_t running = 0, eligible = 0, bound = 0, members = 0;
        for (uint32_t i = 0; i < np; i++) {
            if (pgof[i] != pg)
                continue;
            const tly_ps_result *r = tly_podsched_pod(ps, i);
            members++;
            if (!strcmp(r->state, "Running")) {
                running++;
                continue;
            }
            if (!strcmp(r->state, "Succeeded") || !strcmp(r->state, "Failed") ||
                !strcmp(r->state, "Invalid") || same_str(r->reason, "SchedulingGated") ||
                same_str(r->reason, "UnsupportedConstraint"))
                continue;
            eligible++;
            bound += !strcmp(r->state, "Bound");
        }
        if (!members)
            continue;
        uint32_t min = pg->min_member > 0 ? (uint32_t)pg->min_member : 1;
        uint32_t need = min > running ? min - running : 1;
        if (need > eligible)
            need = eligible;
        CHECK(bound == 0 || bound >= need,
              "P4: PodGroup %s/%s (minMember %u, %u Running): %u of %u pending pods Bound, fewer than %u",
              pg->meta.ns, pg->meta.name, min, running, bound, eligible, need);
        if (eligible) {
            g_ps.gangs_bound += bound > 0;
            g_ps.gangs_held += bound == 0;
        }
    }
    return true;
}

/* Everything a run decided, as text (P5). */
static char *pods_digest(tly_store *s, tly_podsched *ps)
{
    sbuf d = {0};
    char b[TLY_QTY_BUFSZ];
    tly_queues *qs = tly_podsched_queues(ps);
    tly_names *names = tly_store_names(s);
    uint32_t nacc = tly_queues_naccres(qs);
    for (uint32_t i = 0; i < tly_podsched_npods(ps); i++) {
        const tly_ps_result *r = tly_podsched_pod(ps, i);
        sb_printf(&d, "pod %s/%s q=%s %s node=%s reason=%s msg=%s acc=", r->pod->meta.ns, r->pod->meta.name,
                  r->queue, r->state, r->node ? r->node : "-", r->reason ? r->reason : "-",
                  r->message ? r->message : "-");
        for (uint32_t k = 0; k < nacc; k++)
            sb_printf(&d, "%s,", qtext(pod_charge(r, k), b));
        sb_printf(&d, "\n");
    }
    for (uint32_t q = 0; q < tly_queues_count(qs); q++) {
        sb_printf(&d, "queue %s", tly_queues_queue(qs, q)->meta.name);
        const tly_rvec *v[2] = {tly_queues_allocated(qs, q), tly_queues_allocated_np(qs, q)};
        for (int k = 0; k < 2; k++)
            for (uint32_t id = 0; id < v[k]->n; id++)
                if (!tly_qty_is_zero(v[k]->v[id]))
                    sb_printf(&d, " %s%s=%s", k ? "np:" : "", tly_names_str(names, id), qtext(v[k]->v[id], b));
        for (int k = 0; k < TLY_QR_COUNT; k++)
            sb_printf(&d, " d%d=%s", k, qtext(tly_queues_used(qs, q, k, false), b));
        for (uint32_t k = 0; k < nacc; k++) {
            sb_printf(&d, " %s=%s", tly_queues_accres(qs, k)->meta.name,
                      qtext(tly_queues_accounted_used(qs, q, k), b));
            sb_printf(&d, "/%s", qtext(tly_queues_accounted_limit(qs, q, k), b));
        }
        sb_printf(&d, "\n");
    }
    return d.p ? d.p : calloc(1, 1);
}

/* The first line where two digests differ, for the message. */
static void first_difference(const char *a, const char *b, char *out, size_t len)
{
    while (*a && *a == *b) {
        const char *na = strchr(a, '\n'), *nb = strchr(b, '\n');
        if (!na || !nb || na - a != nb - b || memcmp(a, b, (size_t)(na - a)) != 0)
            break;
        a = na + 1;
        b = nb + 1;
    }
    const char *ea = strchr(a, '\n');
    snprintf(out, len, "%.*s", (int)(ea ? ea - a : (ptrdiff_t)strlen(a)), a);
}

/* One build and run; the digest (caller frees) or NULL. */
static char *pods_once(uint64_t seed, bool check, bool dump)
{
    sbuf y = {0};
    gen_cluster(seed, &y);
    if (dump)
        dump_input("pods", seed, &y);
    tly_store *s = load_clean(&y);
    char *digest = NULL;
    if (!g_fail[0]) {
        tly_podsched *ps = tly_podsched_create(s);
        tly_podsched_run(ps);
        tly_arena *a = tly_arena_create(64 * 1024);
        if (!check || check_pods(s, ps, a))
            digest = pods_digest(s, ps);
        tly_arena_destroy(a);
        tly_podsched_destroy(ps);
    }
    tly_store_destroy(s);
    if (digest) {
        /* the text itself first: the generator must be deterministic too */
        size_t n = y.n;
        char *all = malloc(n + strlen(digest) + 2);
        if (!all)
            abort();
        memcpy(all, y.p, n);
        all[n] = '\x1e';
        strcpy(all + n + 1, digest);
        free(digest);
        digest = all;
    }
    sb_free(&y);
    return digest;
}

static void pod_case(uint64_t seed)
{
    g_engine = "pods";
    g_seed = seed;
    if (g_verbose)
        fprintf(stderr, "pods seed %" PRIu64 "\n", seed);
    g_fail[0] = '\0';
    char *d1 = pods_once(seed, true, true);
    if (d1) {
        char *d2 = pods_once(seed, false, false);
        if (d2 && strcmp(d1, d2) != 0) {
            char line[512];
            first_difference(d1, d2, line, sizeof line);
            failf("P5: the same seed gave different results, first at: %s", line);
        }
        free(d2);
    }
    free(d1);
    g_ps.clusters++;
}

static void report_failure(void)
{
    if (!g_fail[0])
        return;
    print_error("%s\n", g_fail);
    print_error("reproduce: TALLY_PROPERTY_SEED=%" PRIu64 " TALLY_PROPERTY_DUMP=/tmp build/test_invariants"
                " (the input is then /tmp/%s-%" PRIu64 ".yaml)\n",
                g_seed, g_engine, g_seed);
    fail_msg("%s", g_fail);
}

static void test_pod_engine_invariants(void **state)
{
    (void)state;
    memset(&g_ps, 0, sizeof g_ps);
    if (g_have_only) {
        pod_case(g_only);
        report_failure();
        return;
    }
    for (uint32_t k = 1; k <= g_cases; k++) {
        pod_case(k);
        report_failure();
    }
    print_message("pods: %u clusters, %u pods: %u Running, %u Bound, %u Gated, %u Unschedulable, %u Invalid; "
                  "gangs %u placed, %u held; %u nodes with GPU-inconsistent input\n",
                  g_ps.clusters, g_ps.pods, g_ps.running, g_ps.bound, g_ps.gated, g_ps.unschedulable,
                  g_ps.invalid, g_ps.gangs_bound, g_ps.gangs_held, g_ps.gpu_skipped);
    for (uint32_t i = 0; i < NELEM(g_reasons) && g_reasons[i].reason; i++)
        print_message("  %s %u\n", g_reasons[i].reason, g_reasons[i].count);
}

/* ======================================================================== */
/* ==== the Run engine =================================================== */
/* ======================================================================== */

#define MAX_RT_PODS 48

typedef struct {
    char ns[12], name[40], runtime[12];
} grpod;

static const char *const RT_NAMES[] = {"python", "cuda", "jax"};

static void gen_capacity(rng_t *r, sbuf *y)
{
    sb_printf(y, "  annotations:\n    owner: generator\n");
    if (chance(r, 70))
        sb_printf(y, "    kruntimes.io/capacity.runs: '%s'\n",
                  PICK(r, ((const char *const[]){"1", "2", "3", "4", "6", "lots", "0"})));
    if (chance(r, 50))
        sb_printf(y, "    kruntimes.io/capacity.gpu: '%s'\n",
                  PICK(r, ((const char *const[]){"1", "2", "4", "1500m", "-1"})));
    if (chance(r, 20))
        sb_printf(y, "    kruntimes.io/capacity.example.com/gpu: '%s'\n",
                  PICK(r, ((const char *const[]){"1", "2", "0"})));
    if (chance(r, 30)) {
        if (chance(r, 8)) {
            sb_printf(y, "    kruntimes.io/capacities: '{\"example.com/gpu\": \"2\"'\n");
            return;
        }
        static const char *const keys[] = {"example.com/gpu", "gpu", "tpu", "runs"};
        static const char *const vals[] = {"1", "2", "3", "4", "none", "0", "500m", "2500m"};
        sb_printf(y, "    kruntimes.io/capacities: '{");
        bool first = true;
        for (uint32_t k = 0; k < NELEM(keys); k++) {
            if (!chance(r, 50))
                continue;
            sb_printf(y, "%s\"%s\": \"%s\"", first ? "" : ", ", keys[k], PICK(r, vals));
            first = false;
        }
        sb_printf(y, "}'\n");
    }
}

static uint32_t gen_runs(uint64_t seed, sbuf *y)
{
    rng_t r;
    rng_seed(&r, seed, 0x72756e73ull /* "runs" */);
    static const char *const nss[] = {"default", "team"};
    uint32_t nns = chance(&r, 50) ? 2 : 1;
    uint32_t nrt = 2 + below(&r, 2);
    grpod pods[MAX_RT_PODS];
    uint32_t npods = 0;
    for (uint32_t ns = 0; ns < nns; ns++)
        for (uint32_t t = 0; t < nrt; t++) {
            /* Sometimes a fleet from one template (same capacity text), so that
               identical Pods tie and the load-class index has classes to share. */
            bool fleet = chance(&r, 30);
            uint32_t k = fleet ? 4 + below(&r, 9) : below(&r, 4);
            sbuf tmpl = {0};
            if (fleet)
                gen_capacity(&r, &tmpl);
            for (uint32_t i = 0; i < k && npods < MAX_RT_PODS; i++) {
                grpod *p = &pods[npods++];
                snprintf(p->ns, sizeof p->ns, "%s", nss[ns]);
                snprintf(p->name, sizeof p->name, "%s-%u", RT_NAMES[t], i);
                snprintf(p->runtime, sizeof p->runtime, "%s", RT_NAMES[t]);
                sb_printf(y, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\n"
                             "  creationTimestamp: '%sT09:00:05Z'\n",
                          p->name, p->ns, TIMES_DAY);
                if (chance(&r, 4))
                    sb_printf(y, "  deletionTimestamp: '%sT11:00:00Z'\n", TIMES_DAY);
                sb_printf(y, "  labels:\n    runtime: %s\n", p->runtime);
                if (fleet)
                    sb_printf(y, "%s", tmpl.p ? tmpl.p : "");
                else
                    gen_capacity(&r, y);
                sb_printf(y, "spec:\n  containers:\n  - name: runtime\n    image: example/runtime:1\n"
                             "status:\n  phase: %s\n  conditions:\n  - type: Ready\n    status: '%s'\n"
                             "    lastTransitionTime: '%sT09:00:10Z'\n",
                          chance(&r, 92) ? "Running" : "Pending", chance(&r, 92) ? "True" : "False",
                          TIMES_DAY);
                uint32_t hb = below(&r, 100);
                if (hb < 90)
                    sb_printf(y, "  - type: kruntimes.io/RuntimedReady\n    status: '%s'\n"
                                 "    lastProbeTime: '%sT%s'\n",
                              hb < 86 ? "True" : "False", TIMES_DAY, chance(&r, 80) ? "12:00:00Z" : "11:58:00Z");
            }
            sb_free(&tmpl);
        }
    uint32_t nruns = 2 + below(&r, npods > 12 ? 40 : 14);
    for (uint32_t i = 0; i < nruns; i++) {
        uint32_t ns = below(&r, nns);
        const char *rt = chance(&r, 5) ? "ghost" : RT_NAMES[below(&r, nrt)];
        sb_printf(y, "---\napiVersion: kruntimes.io/v1alpha1\nkind: Run\nmetadata:\n  name: run-%02u\n"
                     "  namespace: %s\n",
                  i, nss[ns]);
        gen_time(&r, y, "  ", "creationTimestamp", 11);
        sb_printf(y, "spec:\n  runtime: %s\n  mode:\n    task:\n      args: ['true']\n", rt);
        if (chance(&r, 85)) {
            sb_printf(y, "  resources:\n    requests:\n");
            bool any = false;
            if (chance(&r, 60)) {
                sb_printf(y, "      runs: '%s'\n", PICK(&r, ((const char *const[]){"1", "1", "2", "0"})));
                any = true;
            }
            if (chance(&r, 40)) {
                sb_printf(y, "      gpu: '%s'\n", PICK(&r, ((const char *const[]){"1", "1", "2"})));
                any = true;
            }
            if (chance(&r, 25)) {
                sb_printf(y, "      example.com/gpu: '1'\n");
                any = true;
            }
            if (chance(&r, 15)) {
                sb_printf(y, "      tpu: '%s'\n", PICK(&r, ((const char *const[]){"1", "3"})));
                any = true;
            }
            if (chance(&r, 8)) {
                sb_printf(y, "      memory-slots: '%s'\n", PICK(&r, ((const char *const[]){"2000m", "1.0", "-1"})));
                any = true;
            }
            if (!any)
                sb_printf(y, "      runs: '1'\n");
        }
        uint32_t st = below(&r, 100);
        if (st < 55) {
            if (chance(&r, 50))
                sb_printf(y, "status:\n  phase: Pending\n");
            continue;
        }
        const char *phase = st < 72 ? "Scheduled" : st < 92 ? "Running" : st < 96 ? "Ready" : "Succeeded";
        /* assigned to a Pod of its namespace (usually of its runtime), or to one that is gone */
        const char *on = "gone-0";
        if (npods && chance(&r, 92)) {
            for (uint32_t t = 0; t < 8; t++) {
                const grpod *p = &pods[below(&r, npods)];
                if (strcmp(p->ns, nss[ns]) == 0 && (strcmp(p->runtime, rt) == 0 || chance(&r, 15))) {
                    on = p->name;
                    break;
                }
            }
        }
        sb_printf(y, "status:\n  phase: %s\n  assignedPod: %s\n  conditions:\n  - type: Scheduled\n"
                     "    status: 'True'\n    reason: Assigned\n",
                  phase, on);
        gen_time(&r, y, "    ", "lastTransitionTime", 11);
    }
    return npods;
}

/* ---- the Run engine's checks ------------------------------------------------ */

typedef struct {
    tly_rlist req;
    bool valid;
} rinfo;

typedef struct {
    tly_run_phase *phase;   /* before the step's tly_runsched_run */
    tly_rvec *used, *adm;   /* per Pod, before */
} rsnap;

typedef struct {
    uint32_t sequences, steps, events, placed, admitted, insufficient, local_wait, failed_invalid;
} run_stats;

static run_stats g_rs;

static bool active(tly_run_phase p)
{
    return p == TLY_RUN_SCHEDULED || p == TLY_RUN_RUNNING || p == TLY_RUN_READY;
}

static bool in_group(const tly_rs_pod_result *p, const tly_run *run)
{
    return strcmp(p->pod->meta.ns, run->meta.ns) == 0 && run->runtime && strcmp(p->runtime, run->runtime) == 0;
}

static bool check_runs(tly_store *s, tly_runsched *rs, const rinfo *ri, const rsnap *before, bool initial,
                       tly_arena *a)
{
    tly_names *names = tly_store_names(s);
    uint32_t nr = tly_runsched_nruns(rs), np = tly_runsched_npods(rs);
    char b1[TLY_QTY_BUFSZ], b2[TLY_QTY_BUFSZ], b3[TLY_QTY_BUFSZ];
    bool ok = true;
    for (uint32_t p = 0; p < np && ok; p++) {
        const tly_rs_pod_result *pr = tly_runsched_pod_at(rs, p);
        const char *pn = pr->pod->meta.name;
        if (initial) {
            tly_rlist cap;
            tly_runtime_pod_capacity(pr->pod, names, a, &cap, NULL);
            CHECK(tly_rlist_equal(&cap, pr->capacity) && tly_rlist_equal(pr->capacity, &cap),
                  "the capacity of Pod %s/%s differs from its annotations' recomputation", pr->pod->meta.ns, pn);
        }
        tly_rvec used, adm;
        tly_rvec_init(&used);
        tly_rvec_init(&adm);
        for (uint32_t i = 0; i < nr; i++) {
            const tly_rs_run_result *r = tly_runsched_run_at(rs, i);
            if (r->pod != (int32_t)p || !ri[i].valid)
                continue;
            if (active(r->phase))
                tly_rvec_add_list(&used, &ri[i].req);
            if (r->phase == TLY_RUN_RUNNING || r->phase == TLY_RUN_READY)
                tly_rvec_add_list(&adm, &ri[i].req);
        }
        uint32_t id = rvec_diff(pr->used, &used);
        if (id != TLY_NAME_NONE)
            ok = failf("R1: Pod %s used %s is %s, its active Runs request %s", pn, tly_names_str(names, id),
                       qtext(tly_rvec_get(pr->used, id), b1), qtext(tly_rvec_get(&used, id), b2));
        id = ok ? rvec_diff(&pr->admitted, &adm) : TLY_NAME_NONE;
        if (id != TLY_NAME_NONE)
            ok = failf("R2: Pod %s admitted %s is %s, its Running Runs request %s", pn, tly_names_str(names, id),
                       qtext(tly_rvec_get(&pr->admitted, id), b1), qtext(tly_rvec_get(&adm, id), b2));
        tly_rvec_free(&used);
        tly_rvec_free(&adm);
        if (!ok)
            break;
        /* R3 / R4: nothing grows past capacity. */
        uint32_t n = max_u32(pr->used->n, pr->admitted.n);
        for (id = 0; id < n && ok; id++) {
            tly_qty cap = tly_rlist_get(pr->capacity, id, NULL);
            tly_qty u = tly_rvec_get(pr->used, id), ub = tly_rvec_get(&before->used[p], id);
            tly_qty d = tly_rvec_get(&pr->admitted, id), db = tly_rvec_get(&before->adm[p], id);
            if (tly_qty_cmp(u, cap) > 0 && tly_qty_cmp(u, ub) > 0)
                ok = failf("R4: Pod %s used %s grew to %s over capacity %s (was %s)", pn, tly_names_str(names, id),
                           qtext(u, b1), qtext(cap, b2), qtext(ub, b3));
            else if (tly_qty_cmp(d, cap) > 0 && tly_qty_cmp(d, db) > 0)
                ok = failf("R3: Pod %s admitted %s grew to %s over capacity %s (was %s)", pn,
                           tly_names_str(names, id), qtext(d, b1), qtext(cap, b2), qtext(db, b3));
        }
        for (uint32_t i = 0; i < nr && ok; i++) {
            const tly_rs_run_result *r = tly_runsched_run_at(rs, i);
            if (r->pod != (int32_t)p)
                continue;
            bool placed = before->phase[i] == TLY_RUN_PENDING && active(r->phase);
            bool admitted = before->phase[i] != TLY_RUN_RUNNING && before->phase[i] != TLY_RUN_READY &&
                            r->phase == TLY_RUN_RUNNING;
            g_rs.placed += placed;
            g_rs.admitted += admitted;
            if (placed && (!r->placed || !in_group(pr, r->run) || pr->state != TLY_RPOD_AVAILABLE))
                ok = failf("R5: Run %s/%s was placed on Pod %s, not an available Pod of its runtime %s",
                           r->run->meta.ns, r->run->meta.name, pn, r->run->runtime);
            for (uint32_t e = 0; e < ri[i].req.n && ok; e++) {
                uint32_t rid = ri[i].req.v[e].id;
                tly_qty cap = tly_rlist_get(pr->capacity, rid, NULL);
                if (tly_qty_sign(ri[i].req.v[e].q) <= 0)
                    continue;
                if (placed && tly_qty_cmp(tly_rvec_get(pr->used, rid), cap) > 0)
                    ok = failf("R4: Run %s/%s placed on Pod %s leaves used %s at %s over capacity %s",
                               r->run->meta.ns, r->run->meta.name, pn, tly_names_str(names, rid),
                               qtext(tly_rvec_get(pr->used, rid), b1), qtext(cap, b2));
                else if (admitted && tly_qty_cmp(tly_rvec_get(&pr->admitted, rid), cap) > 0)
                    ok = failf("R3: Run %s/%s admitted on Pod %s leaves admitted %s at %s over capacity %s",
                               r->run->meta.ns, r->run->meta.name, pn, tly_names_str(names, rid),
                               qtext(tly_rvec_get(&pr->admitted, rid), b1), qtext(cap, b2));
            }
        }
    }
    if (!ok)
        return false;
    /* R5: what a Pending Run says is true now. */
    for (uint32_t i = 0; i < nr; i++) {
        const tly_rs_run_result *r = tly_runsched_run_at(rs, i);
        const char *rn = r->run->meta.name, *rns = r->run->meta.ns;
        if (r->phase == TLY_RUN_FAILED && same_str(r->reason, TLY_REASON_INVALID_RESOURCES)) {
            CHECK(!ri[i].valid, "R5: Run %s/%s Failed InvalidResources with a valid request", rns, rn);
            g_rs.failed_invalid += before->phase[i] == TLY_RUN_PENDING;
        }
        if (r->phase == TLY_RUN_SCHEDULED && same_str(r->reason, TLY_REASON_INSUFFICIENT_LOCAL))
            g_rs.local_wait++;
        if (r->phase != TLY_RUN_PENDING)
            continue;
        CHECK(ri[i].valid, "R5: Run %s/%s is still Pending with an invalid request", rns, rn);
        CHECK(r->reason, "R5: Run %s/%s is Pending without a reason (tried, neither placed nor waiting)", rns, rn);
        bool insufficient = same_str(r->reason, TLY_REASON_INSUFFICIENT_CAPACITY);
        bool unavailable = same_str(r->reason, TLY_REASON_PODS_UNAVAILABLE);
        if (!insufficient && !unavailable)
            continue;
        g_rs.insufficient += insufficient;
        uint32_t avail = 0;
        for (uint32_t p = 0; p < np; p++) {
            const tly_rs_pod_result *pr = tly_runsched_pod_at(rs, p);
            if (!in_group(pr, r->run) || pr->state != TLY_RPOD_AVAILABLE)
                continue;
            avail++;
            uint32_t bad;
            CHECK(!insufficient || !tly_rvec_fits(pr->used, &ri[i].req, pr->capacity, &bad),
                  "R5: Run %s/%s is Pending InsufficientCapacity but fits available Pod %s", rns, rn,
                  pr->pod->meta.name);
        }
        CHECK(!unavailable || avail == 0, "R5: Run %s/%s is Pending RuntimePodsUnavailable with %u available Pods",
              rns, rn, avail);
        CHECK(!insufficient || avail > 0, "R5: Run %s/%s is Pending InsufficientCapacity without an available Pod",
              rns, rn);
    }
    return true;
}

static void snap_take(tly_runsched *rs, rsnap *sn)
{
    for (uint32_t i = 0; i < tly_runsched_nruns(rs); i++)
        sn->phase[i] = tly_runsched_run_at(rs, i)->phase;
    for (uint32_t p = 0; p < tly_runsched_npods(rs); p++) {
        const tly_rs_pod_result *pr = tly_runsched_pod_at(rs, p);
        rvec_copy(&sn->used[p], pr->used);
        rvec_copy(&sn->adm[p], &pr->admitted);
    }
}

static void runs_digest(tly_store *s, tly_runsched *rs, sbuf *d)
{
    char b[TLY_QTY_BUFSZ];
    tly_names *names = tly_store_names(s);
    for (uint32_t i = 0; i < tly_runsched_nruns(rs); i++) {
        const tly_rs_run_result *r = tly_runsched_run_at(rs, i);
        sb_printf(d, "run %s/%s %s pod=%s reason=%s msg=%s\n", r->run->meta.ns, r->run->meta.name,
                  tly_run_phase_name(r->phase), r->assigned ? r->assigned : "-", r->reason ? r->reason : "-",
                  r->message ? r->message : "-");
    }
    for (uint32_t p = 0; p < tly_runsched_npods(rs); p++) {
        const tly_rs_pod_result *pr = tly_runsched_pod_at(rs, p);
        sb_printf(d, "pod %s/%s", pr->pod->meta.ns, pr->pod->meta.name);
        for (uint32_t id = 0; id < pr->used->n; id++)
            if (!tly_qty_is_zero(pr->used->v[id]))
                sb_printf(d, " %s=%s", tly_names_str(names, id), qtext(pr->used->v[id], b));
        for (uint32_t id = 0; id < pr->admitted.n; id++)
            if (!tly_qty_is_zero(pr->admitted.v[id]))
                sb_printf(d, " adm:%s=%s", tly_names_str(names, id), qtext(pr->admitted.v[id], b));
        sb_printf(d, "\n");
    }
}

/* A random capacity for set_capacity. */
static void random_capacity(rng_t *r, tly_names *names, tly_arena *a, tly_rlist *out)
{
    out->v = NULL;
    out->n = 0;
    if (chance(r, 88))
        tly_rlist_set(out, a, TLY_R_RUNS,
                      chance(r, 15) ? tly_qty_from_milli(1500, TLY_QFMT_DECIMAL_SI)
                                    : tly_qty_from_int(1 + below(r, 6), TLY_QFMT_DECIMAL_SI));
    static const char *const others[] = {"gpu", "example.com/gpu", "tpu"};
    for (uint32_t k = 0; k < NELEM(others); k++) {
        if (!chance(r, k == 0 ? 55 : 30))
            continue;
        uint32_t id = tly_names_intern(names, others[k], strlen(others[k]));
        tly_rlist_set(out, a, id,
                      chance(r, 15) ? tly_qty_from_milli(500 + 1000 * below(r, 3), TLY_QFMT_DECIMAL_SI)
                                    : tly_qty_from_int(1 + below(r, 4), TLY_QFMT_DECIMAL_SI));
    }
}

/* One sequence; appends its digest to *d. */
static void runs_once(uint64_t seed, bool check, bool dump, bool indexed, sbuf *d)
{
    sbuf y = {0};
    gen_runs(seed, &y);
    if (dump)
        dump_input("runs", seed, &y);
    sb_printf(d, "%s\x1e", y.p ? y.p : "");
    tly_store *s = load_clean(&y);
    sb_free(&y);
    if (g_fail[0]) {
        tly_store_destroy(s);
        return;
    }
    int64_t now = tly_store_newest_time(s);
    tly_runsched *rs = tly_runsched_create(s, now, now != TLY_NO_TIME, NULL);
    tly_runsched_set_indexed(rs, indexed);
    tly_arena *a = tly_arena_create(64 * 1024);
    uint32_t nr = tly_runsched_nruns(rs), np = tly_runsched_npods(rs);
    rinfo *ri = tly_arena_zalloc(a, (nr + 1) * sizeof *ri);
    for (uint32_t i = 0; i < nr; i++) {
        const char *bad = NULL;
        ri[i].valid = tly_run_normalized_request(tly_runsched_run_at(rs, i)->run, a, &ri[i].req, &bad) == TLY_OK;
    }
    rsnap sn;
    sn.phase = tly_arena_zalloc(a, (nr + 1) * sizeof *sn.phase);
    sn.used = calloc(np + 1, sizeof *sn.used);
    sn.adm = calloc(np + 1, sizeof *sn.adm);
    if (!sn.used || !sn.adm)
        abort();
    for (uint32_t p = 0; p < np; p++) {
        tly_rvec_init(&sn.used[p]);
        tly_rvec_init(&sn.adm[p]);
    }
    rng_t r;
    rng_seed(&r, seed, 0x6576656e7473ull /* "events" */);
    uint32_t steps = 1 + 2 + below(&r, 7);
    for (uint32_t step = 0; step < steps && !g_fail[0]; step++) {
        uint32_t events = 0;
        if (step > 0) {
            uint32_t want = below(&r, 3);
            for (uint32_t e = 0; e < want; e++) {
                uint32_t kind = below(&r, 100);
                if (kind < 50) {
                    /* a Run ends: one of the active ones */
                    uint32_t cand[64], nc = 0;
                    for (uint32_t i = 0; i < nr && nc < 64; i++)
                        if (active(tly_runsched_run_at(rs, i)->phase))
                            cand[nc++] = i;
                    if (!nc)
                        continue;
                    static const tly_run_phase ends[] = {TLY_RUN_SUCCEEDED, TLY_RUN_FAILED, TLY_RUN_TIMEOUT,
                                                         TLY_RUN_CANCELLED};
                    tly_runsched_finish(rs, cand[below(&r, nc)], PICK(&r, ends));
                } else if (kind < 60) {
                    /* a Pending Run is cancelled */
                    uint32_t cand[64], nc = 0;
                    for (uint32_t i = 0; i < nr && nc < 64; i++)
                        if (tly_runsched_run_at(rs, i)->phase == TLY_RUN_PENDING)
                            cand[nc++] = i;
                    if (!nc)
                        continue;
                    tly_runsched_finish(rs, cand[below(&r, nc)], TLY_RUN_CANCELLED);
                } else {
                    if (!np)
                        continue;
                    tly_rlist cap;
                    random_capacity(&r, tly_store_names(s), a, &cap);
                    tly_runsched_set_capacity(rs, below(&r, np), &cap);
                }
                events++;
            }
        }
        snap_take(rs, &sn);
        uint64_t cycles = tly_runsched_cycles(rs);
        tly_runsched_run(rs);
        g_rs.steps++;
        g_rs.events += events;
        if (check && step > 0 && events == 0 && tly_runsched_cycles(rs) != cycles) {
            failf("R6: a step without an event ran %" PRIu64 " scheduling cycles (step %u)",
                  tly_runsched_cycles(rs) - cycles, step);
            break;
        }
        if (check && !check_runs(s, rs, ri, &sn, step == 0, a)) {
            size_t n = strlen(g_fail);
            snprintf(g_fail + n, sizeof g_fail - n, " (after step %u of %u)", step, steps);
            break;
        }
        sb_printf(d, "step %u\n", step);
        runs_digest(s, rs, d);
    }
    for (uint32_t p = 0; p < np; p++) {
        tly_rvec_free(&sn.used[p]);
        tly_rvec_free(&sn.adm[p]);
    }
    free(sn.used);
    free(sn.adm);
    tly_arena_destroy(a);
    tly_runsched_destroy(rs);
    tly_store_destroy(s);
}

static void run_case(uint64_t seed)
{
    g_engine = "runs";
    g_seed = seed;
    if (g_verbose)
        fprintf(stderr, "runs seed %" PRIu64 "\n", seed);
    g_fail[0] = '\0';
    sbuf d1 = {0}, d2 = {0}, d3 = {0};
    runs_once(seed, true, true, true, &d1);
    if (!g_fail[0]) {
        runs_once(seed, false, false, true, &d2);
        if (!g_fail[0] && (d1.n != d2.n || memcmp(d1.p, d2.p, d1.n) != 0)) {
            char line[512];
            first_difference(d1.p, d2.p, line, sizeof line);
            failf("R7: the same seed gave different results, first at: %s", line);
        }
    }
    if (!g_fail[0]) {
        runs_once(seed, false, false, false, &d3);
        if (!g_fail[0] && (d1.n != d3.n || memcmp(d1.p, d3.p, d1.n) != 0)) {
            char line[512];
            first_difference(d1.p, d3.p, line, sizeof line);
            failf("R8: the load-class index and the plain per-Pod scan decided differently, "
                  "first at: %s", line);
        }
    }
    sb_free(&d1);
    sb_free(&d2);
    sb_free(&d3);
    g_rs.sequences++;
}

static void test_run_engine_invariants(void **state)
{
    (void)state;
    memset(&g_rs, 0, sizeof g_rs);
    if (g_have_only) {
        run_case(g_only);
        report_failure();
        return;
    }
    for (uint32_t k = 1; k <= g_cases; k++) {
        run_case(k);
        report_failure();
    }
    print_message("runs: %u sequences, %u steps, %u events; %u Runs placed, %u admitted, "
                  "%u Pending InsufficientCapacity checks, %u InsufficientLocalCapacity, %u Failed invalid\n",
                  g_rs.sequences, g_rs.steps, g_rs.events, g_rs.placed, g_rs.admitted, g_rs.insufficient,
                  g_rs.local_wait, g_rs.failed_invalid);
}

int main(void)
{
    read_config();
    signal(SIGABRT, on_abort);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_engine_invariants),
        cmocka_unit_test(test_run_engine_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
