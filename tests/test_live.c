/*
** test_live.c: the live state (include/tally/live.h) under long random
** event sequences.
**
** A small cluster universe (nodes with GPU products and GPU memory, a queue
** tree, AccountedResources on node labels and annotations, PodGroups,
** PriorityClasses, a Config) and up to 40 pods are changed at random: adds,
** updates that move pods between nodes, phases and queues, resizes (status
** resources), deletes of objects that do not exist, the same event twice,
** and relists that drop what the new list lacks. After every event:
**   1. the incremental ledger equals one recomputed from scratch
**      (tly_live_check);
**   2. the live objects are exactly the reference's;
** and every few events a fork is compared with the same objects loaded from
** JSON into an ordinary store, as `tally simulate` would load a dump: the
** fork's resize ledger equals the file store's, and the ledger's
** AccountedResource and cpu/memory sums equal what the pod engine charges
** its Running pods. Forks are held across later events and checked again.
**
** TALLY_LIVE_EVENTS sets the number of events (default 4,000; `make soak`
** runs 10^6). The deliberately wrong delta (TLY_LIVE_FAULT_STALE_CHARGE) is
** shown to be caught.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tally/arena.h"
#include "tally/live.h"
#include "tally/node.h"
#include "tally/podsched.h"
#include "tally/queues.h"
#include "tally/resize.h"
#include "tally/store.h"

#define NPODS 40

static uint64_t seed = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return (uint32_t)(seed % n);
}

/* ---- the reference: every object's JSON by key ------------------------------------ */

#define MAXOBJ 128
typedef struct {
    char key[96];
    char *json;
} refobj;
static refobj ref[MAXOBJ];
static int nref;

static int ref_find(const char *key)
{
    for (int i = 0; i < nref; i++)
        if (!strcmp(ref[i].key, key))
            return i;
    return -1;
}

static void ref_put(const char *key, const char *json)
{
    int i = ref_find(key);
    if (i < 0) {
        i = nref++;
        snprintf(ref[i].key, sizeof ref[i].key, "%s", key);
    } else {
        free(ref[i].json);
    }
    ref[i].json = strdup(json);
}

static void ref_del(const char *key)
{
    int i = ref_find(key);
    if (i < 0)
        return;
    free(ref[i].json);
    ref[i] = ref[--nref];
}

static void ref_clear(void)
{
    for (int i = 0; i < nref; i++)
        free(ref[i].json);
    nref = 0;
}

/* ---- objects ------------------------------------------------------------------ */

static const char *const products[] = {"H200", "A100"};
static const char *const mems[] = {"143771", "81920"};

static void node_json(char *buf, size_t n, int i)
{
    int p = (int)rnd(2);
    snprintf(buf, n,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n%d\",\"labels\":"
             "{\"nvidia.com/gpu.product\":\"%s\",\"nvidia.com/gpu.memory\":\"%s\"}},"
             "\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"512Gi\",\"nvidia.com/gpu\":\"8\","
             "\"pods\":\"110\"}}}",
             i, products[p], mems[rnd(2) ? p : 1 - p]);
}

static void queue_json(char *buf, size_t n, const char *name, const char *parent)
{
    snprintf(buf, n,
             "{\"apiVersion\":\"scheduling.run.ai/v2\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"%s\"},"
             "\"spec\":{%s%s%s\"resources\":{\"cpu\":{\"quota\":-1,\"limit\":-1},\"memory\":{\"quota\":-1,"
             "\"limit\":-1},\"gpu\":{\"quota\":-1,\"limit\":-1}}}}",
             name, parent ? "\"parentQueue\":\"" : "", parent ? parent : "", parent ? "\"," : "");
}

static void accres_json(char *buf, size_t n, int which)
{
    if (which == 0)
        snprintf(buf, n,
                 "{\"apiVersion\":\"scheduling.run.ai/v1alpha1\",\"kind\":\"AccountedResource\","
                 "\"metadata\":{\"name\":\"gpu-h200\"},\"spec\":{\"sources\":[{\"resourceName\":"
                 "\"nvidia.com/gpu\",\"match\":{\"nodeLabels\":{\"nvidia.com/gpu.product\":\"H200\"}}}]}}");
    else if (which == 1)
        snprintf(buf, n,
                 "{\"apiVersion\":\"scheduling.run.ai/v1alpha1\",\"kind\":\"AccountedResource\","
                 "\"metadata\":{\"name\":\"gpu-memory\"},\"spec\":{\"sources\":[{\"podAnnotation\":"
                 "{\"key\":\"gpu-memory\",\"unit\":\"Mi\"}}]}}");
    else
        snprintf(buf, n,
                 "{\"apiVersion\":\"scheduling.run.ai/v1alpha1\",\"kind\":\"AccountedResource\","
                 "\"metadata\":{\"name\":\"compute\"},\"spec\":{\"sources\":[{\"podAnnotation\":"
                 "{\"key\":\"gpu-compute\",\"unit\":\"percent\"}}]}}");
}

static void podgroup_json(char *buf, size_t n, int i)
{
    snprintf(buf, n,
             "{\"apiVersion\":\"scheduling.run.ai/v2alpha2\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":"
             "\"pg%d\",\"namespace\":\"t\"},\"spec\":{\"queue\":\"%s\",\"minMember\":1%s}}",
             i, rnd(2) ? "qa" : "qb", rnd(3) == 0 ? ",\"preemptibility\":\"non-preemptible\"" : "");
}

static void prio_json(char *buf, size_t n, int i)
{
    snprintf(buf, n,
             "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{\"name\":"
             "\"%s\"},\"value\":%d%s}",
             i ? "high" : "low", i ? 100 + (int)rnd(100) : (int)rnd(120),
             rnd(4) == 0 ? ",\"globalDefault\":true" : "");
}

static void pod_json(char *buf, size_t n, int i)
{
    static const char *const phases[] = {"Running", "Running", "Pending", "Succeeded", "Failed"};
    char ann[256] = "", gpu[64] = "", status[256] = "", node[32] = "", labels[128] = "";
    int g = (int)rnd(4);
    if (g == 1)
        snprintf(gpu, sizeof gpu, ",\"nvidia.com/gpu\":\"%u\"", 1 + rnd(2));
    size_t al = 0;
    if (g == 2)
        al += (size_t)snprintf(ann + al, sizeof ann - al, "\"gpu-fraction\":\"0.%u\",", 1 + rnd(9));
    if (g == 3)
        al += (size_t)snprintf(ann + al, sizeof ann - al, "\"gpu-memory\":\"%u\",", 1000 * (1 + rnd(40)));
    if (rnd(2))
        al += (size_t)snprintf(ann + al, sizeof ann - al, "\"gpu-compute\":\"%u\",", rnd(100));
    if (rnd(3) == 0)
        al += (size_t)snprintf(ann + al, sizeof ann - al, "\"pod-group-name\":\"pg%u\",", rnd(3));
    if (al)
        ann[al - 1] = '\0';
    uint32_t nd = rnd(6);
    if (nd < 5)
        snprintf(node, sizeof node, ",\"nodeName\":\"n%u\"", nd);  /* n3 and n4 may not exist */
    size_t ll = 0;
    if (rnd(3))
        ll += (size_t)snprintf(labels, sizeof labels, "\"kai.scheduler/queue\":\"%s\",",
                               rnd(2) ? "qa" : rnd(2) ? "qb" : "r");
    if (rnd(3) == 0)
        ll += (size_t)snprintf(labels + ll, sizeof labels - ll, "\"runtime\":\"rt%u\",", rnd(2));
    if (ll)
        labels[ll - 1] = '\0';
    unsigned cpu = 1 + rnd(8);
    if (rnd(4) == 0)
        snprintf(status, sizeof status,
                 ",\"containerStatuses\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%u\"}}}]",
                 1 + rnd(8));
    snprintf(buf, n,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p%d\",\"namespace\":\"t\","
             "\"labels\":{%s},\"annotations\":{%s}},\"spec\":{\"schedulerName\":\"%s\"%s%s,"
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%u\",\"memory\":"
             "\"%uGi\"%s}}}]},\"status\":{\"phase\":\"%s\"%s}}",
             i, labels, ann, rnd(8) ? "kai-scheduler" : "default-scheduler", node,
             rnd(3) ? (rnd(2) ? ",\"priorityClassName\":\"high\"" : ",\"priorityClassName\":\"low\"") : "",
             cpu, 1 + rnd(16), gpu, phases[rnd(5)], status);
}

/* ---- driving the live state ----------------------------------------------------- */

static void apply_json(tly_live *l, const char *key, const char *json, bool del)
{
    tly_arena *a = tly_arena_create(16384);
    tly_node *n = tly_parse_value(json, strlen(json), a);
    assert_non_null(n);
    assert_int_equal(tly_live_apply(l, del ? TLY_LIVE_DELETE : TLY_LIVE_UPSERT, n, key), 0);
    tly_arena_destroy(a);
    if (del)
        ref_del(key);
    else
        ref_put(key, json);
}

/* One random event; key names the object as kind/ns/name. */
static void random_event(tly_live *l)
{
    char buf[4096], key[96];
    uint32_t r = rnd(100);
    if (r < 60) {
        int i = (int)rnd(NPODS);
        snprintf(key, sizeof key, "Pod/t/p%d", i);
        pod_json(buf, sizeof buf, i);
        bool del = rnd(6) == 0;
        if (del && ref_find(key) < 0 && rnd(2))
            del = false;
        apply_json(l, key, buf, del);
        if (rnd(10) == 0)
            apply_json(l, key, buf, del);  /* the same event twice */
    } else if (r < 68) {
        int i = (int)rnd(5);
        snprintf(key, sizeof key, "Node//n%d", i);
        node_json(buf, sizeof buf, i);
        apply_json(l, key, buf, rnd(5) == 0);
    } else if (r < 74) {
        static const char *const qn[] = {"r", "qa", "qb", "default-queue"};
        int i = (int)rnd(4);
        snprintf(key, sizeof key, "Queue//%s", qn[i]);
        queue_json(buf, sizeof buf, qn[i], i == 1 || i == 2 ? "r" : NULL);
        apply_json(l, key, buf, rnd(4) == 0);
    } else if (r < 80) {
        int i = (int)rnd(3);
        static const char *const an[] = {"gpu-h200", "gpu-memory", "compute"};
        snprintf(key, sizeof key, "AccountedResource//%s", an[i]);
        accres_json(buf, sizeof buf, i);
        apply_json(l, key, buf, rnd(3) == 0);
    } else if (r < 87) {
        int i = (int)rnd(3);
        snprintf(key, sizeof key, "PodGroup/t/pg%d", i);
        podgroup_json(buf, sizeof buf, i);
        apply_json(l, key, buf, rnd(4) == 0);
    } else if (r < 93) {
        int i = (int)rnd(2);
        snprintf(key, sizeof key, "PriorityClass//%s", i ? "high" : "low");
        prio_json(buf, sizeof buf, i);
        apply_json(l, key, buf, rnd(4) == 0);
    } else if (r < 96) {
        /* A delete of something that was never there. */
        snprintf(buf, sizeof buf,
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"ghost%u\",\"namespace\":\"t\"}}",
                 rnd(1000));
        snprintf(key, sizeof key, "Pod/t/ghost");
        tly_arena *a = tly_arena_create(4096);
        tly_node *n = tly_parse_value(buf, strlen(buf), a);
        assert_int_equal(tly_live_apply(l, TLY_LIVE_DELETE, n, key), 0);
        tly_arena_destroy(a);
    } else {
        /* A relist of the pods: some survive (some changed, some new), the rest vanish. */
        tly_live_sweep *sw = tly_live_sweep_begin(l, TLY_K_POD);
        bool kept[NPODS] = {false};
        for (int i = 0; i < NPODS; i++) {
            snprintf(key, sizeof key, "Pod/t/p%d", i);
            bool present = ref_find(key) >= 0;
            if ((!present && rnd(8)) || (present && rnd(4) == 0))
                continue;
            char name[16];
            snprintf(name, sizeof name, "p%d", i);
            tly_live_sweep_keep(sw, "t", name);
            kept[i] = true;
            if (!present || rnd(3) == 0) {
                pod_json(buf, sizeof buf, i);
                apply_json(l, key, buf, false);
            }
        }
        uint32_t gone = tly_live_sweep_end(l, sw), expect = 0;
        for (int i = 0; i < NPODS; i++) {
            snprintf(key, sizeof key, "Pod/t/p%d", i);
            if (!kept[i] && ref_find(key) >= 0) {
                ref_del(key);
                expect++;
            }
        }
        assert_int_equal(gone, expect);
    }
}

/* The reference as one JSON List, loaded into an ordinary store. */
static tly_store *reference_store(void)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    len += (size_t)snprintf(buf, cap, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
    for (int i = 0; i < nref; i++) {
        size_t need = strlen(ref[i].json) + 4;
        if (len + need >= cap) {
            cap = (len + need) * 2;
            buf = realloc(buf, cap);
        }
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", ref[i].json);
    }
    if (len + 4 >= cap)
        buf = realloc(buf, cap + 4);
    len += (size_t)snprintf(buf + len, 4, "]}");
    tly_store *s = tly_store_create();
    tly_store_load_json(s, "ref.json", buf, len);
    tly_store_finish(s);
    free(buf);
    return s;
}

static void *no_build(tly_store *s)
{
    (void)s;
    fail_msg("a fork builds its resize ledger from the live ledger");
    return NULL;
}

static void *build_like_file(tly_store *s);

static bool rvec_same(const tly_rvec *a, const tly_rvec *b)
{
    uint32_t n = a->n > b->n ? a->n : b->n;
    for (uint32_t id = 0; id < n; id++)
        if (tly_qty_cmp(tly_rvec_get(a, id), tly_rvec_get(b, id)))
            return false;
    return true;
}

/* The full ledger (allocated, non-preemptible, accounted) against the pod engine's. */
static void compare_full(tly_store *fork, const tly_queues *eq)
{
    tly_queues *lq = tly_live_queues(fork);
    assert_int_equal(tly_queues_count(lq), tly_queues_count(eq));
    assert_int_equal(tly_queues_naccres(lq), tly_queues_naccres(eq));
    for (uint32_t q = 0; q < tly_queues_count(eq); q++) {
        const char *name = tly_queues_queue(eq, q)->meta.name;
        if (!rvec_same(tly_queues_allocated(lq, q), tly_queues_allocated(eq, q)))
            fail_msg("queue %s: allocated differs from the engine's", name);
        if (!rvec_same(tly_queues_allocated_np(lq, q), tly_queues_allocated_np(eq, q)))
            fail_msg("queue %s: allocatedNonPreemptible differs from the engine's", name);
        for (uint32_t a = 0; a < tly_queues_naccres(eq); a++)
            if (tly_qty_cmp(tly_queues_accounted_used(lq, q, a), tly_queues_accounted_used(eq, q, a)))
                fail_msg("queue %s: accounted %s differs from the engine's", name,
                         tly_queues_accres(eq, a)->meta.name);
    }
    tly_queues_destroy(lq);
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(tly_pod *const *)a)->meta.name, (*(tly_pod *const *)b)->meta.name);
}

/* got[0..n) are the fork's current versions of want[0..m)'s pods, in the same order. */
static void same_pods(tly_store *fork, tly_pod *const *got, uint32_t n, tly_pod *const *want,
                      uint32_t m, const char *what)
{
    if (n != m)
        fail_msg("%s: %u pods in the fork, %u in the file store", what, n, m);
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(got[i]->meta.name, want[i]->meta.name))
            fail_msg("%s: pod %u is %s, want %s", what, i, got[i]->meta.name, want[i]->meta.name);
        if (got[i] != tly_store_find(fork, TLY_K_POD, "t", got[i]->meta.name))
            fail_msg("%s: pod %s is not its current version", what, got[i]->meta.name);
    }
}

/*
** The member indexes (Runtime Pods by runtime label, pods by PodGroup) hold
** keys only: what a fork finds through them is what the file store holds,
** each pod in its newest version.
*/
static void compare_members(tly_store *fork, tly_store *file)
{
    char rt[8];
    for (int i = 0; i < 2; i++) {
        snprintf(rt, sizeof rt, "rt%d", i);
        uint32_t n = 0, m = 0;
        tly_pod *const *got = tly_store_runtime_pods(fork, "t", rt, &n);
        tly_pod *const *want = tly_store_runtime_pods(file, "t", rt, &m);
        same_pods(fork, got, n, want, m, rt);
    }
    uint32_t np = tly_store_count(file, TLY_K_POD);
    tly_pod **want = calloc(np + 1, sizeof *want);
    for (int g = 0; g < 3; g++) {
        char pg[8];
        snprintf(pg, sizeof pg, "pg%d", g);
        uint32_t m = 0;
        for (uint32_t i = 0; i < np; i++) {
            tly_pod *p = tly_store_at(file, TLY_K_POD, i);
            const char *a = tly_kvs_get(&p->meta.annotations, "pod-group-name");
            if (a && !strcmp(a, pg))
                want[m++] = p;
        }
        qsort(want, m, sizeof *want, by_name);
        tly_pod **got = NULL;
        uint32_t n = tly_live_group_pods(fork, "t", pg, &got);
        same_pods(fork, got, n, want, m, pg);
        free(got);
    }
    free(want);
}

/* The fork and the file store agree: objects, the resize ledger, the engine's charges. */
static void compare_with_file(tly_store *fork)
{
    tly_store *file = reference_store();
    compare_members(fork, file);
    for (int k = 0; k < TLY_K_COUNT; k++)
        assert_int_equal(tly_store_count(fork, k), tly_store_count(file, k));
    const tly_queues *lq = tly_store_derived(fork, TLY_DERIVED_RESIZE_LEDGER, no_build, NULL);
    const tly_queues *fq = build_like_file(file);
    tly_podsched *ps = tly_podsched_create(file);
    const tly_queues *eq = tly_podsched_queues(ps);
    assert_int_equal(tly_queues_count(lq), tly_queues_count(fq));
    for (uint32_t q = 0; q < tly_queues_count(fq); q++) {
        for (int r = TLY_QR_CPU; r <= TLY_QR_MEMORY; r++) {
            for (int np = 0; np < 2; np++) {
                tly_qty a = tly_queues_used(lq, q, r, np), b = tly_queues_used(fq, q, r, np);
                tly_qty c = tly_queues_used(eq, q, r, np);
                if (tly_qty_cmp(a, b) || tly_qty_cmp(a, c))
                    fail_msg("queue %s dim %d np %d: live %lld, file %lld, engine %lld",
                             tly_queues_queue(fq, q)->meta.name, r, np, (long long)(a.nanos / 1000000),
                             (long long)(b.nanos / 1000000), (long long)(c.nanos / 1000000));
            }
        }
    }
    compare_full(fork, eq);
    tly_podsched_destroy(ps);
    tly_queues_destroy((tly_queues *)fq);
    tly_store_destroy(file);
}

/* The file store's resize ledger, made the way resize.c makes it from the pods. */
static void *build_like_file(tly_store *s) { return tly_resize_ledger_build(s); }

/*
** After every event: the resize ledger a fork is handed (kept by the live
** state for every fork of its generation, live.c b_derived) equals one built
** from the fork's own pods. Fails if an event that changes the ledger left
** the generation where it was, so that a fork got an older one.
*/
static void shared_ledger_is_current(tly_live *l)
{
    tly_store *f = tly_live_fork(l);
    const tly_queues *lq = tly_store_derived(f, TLY_DERIVED_RESIZE_LEDGER, no_build, NULL);
    tly_queues *fq = tly_resize_ledger_build(f);
    assert_int_equal(tly_queues_count(lq), tly_queues_count(fq));
    for (uint32_t q = 0; q < tly_queues_count(fq); q++)
        for (int r = TLY_QR_CPU; r <= TLY_QR_MEMORY; r++)
            for (int np = 0; np < 2; np++)
                if (tly_qty_cmp(tly_queues_used(lq, q, r, np), tly_queues_used(fq, q, r, np)))
                    fail_msg("queue %s: the shared resize ledger is not the fork's",
                             tly_queues_queue(fq, q)->meta.name);
    tly_queues_destroy(fq);
    tly_store_destroy(f);
}

static long events_wanted(void)
{
    const char *e = getenv("TALLY_LIVE_EVENTS");
    return e && atol(e) > 0 ? atol(e) : 4000;
}

static void random_sequences(void **state)
{
    (void)state;
    tly_live *l = tly_live_create(NULL);
    char why[256];
    long n = events_wanted();
    tly_store *held = NULL;
    int held_count = 0;
    for (long i = 0; i < n; i++) {
        random_event(l);
        int d = tly_live_check(l, why, sizeof why);
        if (d)
            fail_msg("event %ld: %s", i, why);
        shared_ledger_is_current(l);
        if (i % 50 == 0) {
            tly_store *f = tly_live_fork(l);
            compare_with_file(f);
            /* A second fork of the same moment shares the first one's ledger. */
            tly_store *f2 = tly_live_fork(l);
            assert_ptr_equal(tly_store_derived(f2, TLY_DERIVED_RESIZE_LEDGER, no_build, NULL),
                             tly_store_derived(f, TLY_DERIVED_RESIZE_LEDGER, no_build, NULL));
            tly_store_destroy(f2);
            if (held) {
                /* A fork held across 50 events still shows what it showed. */
                assert_int_equal(tly_store_count(held, TLY_K_POD), held_count);
                tly_store_destroy(held);
            }
            held = f;
            held_count = (int)tly_store_count(f, TLY_K_POD);
        }
    }
    if (held)
        tly_store_destroy(held);
    tly_live_destroy(l);
    ref_clear();
}

/* The wrong delta (a moved pod keeps its old charge) is caught. */
static void stale_charge_is_caught(void **state)
{
    (void)state;
    tly_live *l = tly_live_create(NULL);
    tly_live_set_fault(l, TLY_LIVE_FAULT_STALE_CHARGE);
    char why[256];
    bool caught = false;
    for (long i = 0; i < 20000 && !caught; i++) {
        random_event(l);
        caught = tly_live_check(l, why, sizeof why) != 0;
    }
    assert_true(caught);
    tly_live_destroy(l);
    ref_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_sequences),
        cmocka_unit_test(stale_charge_is_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
