/*
** gatectl.c: the gating controller (gatectl.h; docs/controllers.md).
**
** One cycle, on one fork of the live state:
**
**  1. The queues' usage is the live ledger's (tly_live_queues: every bound
**     pod charged). The Reserved bucket is recomputed from the fork: every
**     pending pod of tally's without tally's gate (admitted, not yet bound)
**     whose admission (the kai.scheduler/queue-admitted-timestamp
**     annotation, else its creation) is younger than --reservation-timeout
**     reserves its charge, and so do the pods this controller ungated that
**     the watch has not shown yet. Nothing is kept across restarts or
**     failovers but that short list: a new leader recomputes the same.
**  2. The gated pods (tally's gate and no other) become workloads: a
**     PodGroup's pods together, any other pod alone. They are decided in the
**     contract's order (queue priority, then workload priority, both higher
**     first, then creation, namespace, name), workloads with members already
**     admitted first (a gang torn by a crash converges first).
**  3. Each workload: its queue must be usable (else it stays gated:
**     QueueDoesNotExist, NonLeafQueue, AccountedResourceNotFound); a queue
**     that is not gated (the predicate of queues.h) admits it at once; a
**     gang waits until its gated pods and its admitted members satisfy it
**     as the pod engine's gang rule says (gang.h: minMember, or subGroups
**     and minSubGroup; the pods of a subgroup below its minimum wait while
**     the PodGroup can run without it); then the
**     workload's charge (the job-level charge simulate checks: requests,
**     GPUs at the largest node GPU memory, AccountedResources without node
**     labels) is checked against every limit, quota and AccountedResource
**     limit with Reserved counted (tly_queues_check), exactly as simulate's
**     workload-level check. Admitted workloads reserve their charge at once,
**     so the workloads after them see it.
**  4. Writes, in that order: an admitted pod's gate is removed by a JSON
**     patch that tests the gates first (writes.c), then its QueueAdmitted
**     condition turns True (Admitted) and an Admitted event is sent; a held
**     pod gets QueueAdmitted False with the verdict's reason and message,
**     and a QueueAdmissionHeld event when the reason changes. A refused
**     patch (the pod changed) ends the cycle's writes. The Admitted event
**     goes before the condition, under a name derived from the pod's uid
**     (writes.h tly_write_event, once): a pod that shows the gate removed and
**     the admitted timestamp but not QueueAdmitted True (its replica died
**     between the writes) is finished by the next cycle of whoever leads,
**     and a second create of its event is refused, so there is one.
**
**     The ungate patches go out in batches of at most UNGATE_BATCH, in the
**     decided order, on UNGATE_THREADS writer threads of their own (a whole
**     batch in flight at once): one leader then ungates several pods per
**     API round trip instead of one (a real API server takes 2-3 ms a
**     write; with 4 threads, 1,000 new pods a second outran the writes at
**     3 ms, docs/controllers.md). The cycle waits for a
**     batch's answers and reads them in order; a refused patch ends the
**     writes after its batch. That is safe for the queues: every admitted
**     workload was checked with all those before it reserved, so a pod
**     admitted next to a refused one only finds more room than it was
**     checked against, and the refused one is decided again next cycle.
**     A pod's condition and event, which admit nothing, go to other writer
**     threads (writes.h tly_write_pool; FOLLOWUP_THREADS, at most
**     FOLLOWUP_QUEUED in flight) while the next ungates go out; each is
**     fenced by may_write again when it is sent, and the cycle waits for all
**     of them before it returns, so the next cycle's writes to a pod never
**     overtake this one's. A follow-up the fence stops is not sent; the
**     held conditions this replica remembers writing are then forgotten, so
**     that what the pods show decides what is written next time.
*/
#include "gatectl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/arena.h"
#include "tally/decode.h"
#include "tally/gang.h"
#include "tally/gating.h"
#include "tally/live.h"
#include "tally/metrics.h"
#include "tally/nodefit.h"
#include "tally/placeclass.h"
#include "tally/podcharge.h"
#include "tally/queues.h"
#include "strmap.h"
#include "writes.h"

#define ASSUME_MS 30000
#define ADMITTED_MESSAGE "admitted by queue policy; the scheduler may place it now"
#define ADMITTED_EVENT "admitted by queue policy: the queue-admission gate was removed"
#define FOLLOWUP_THREADS 16
#define FOLLOWUP_QUEUED 64
#define UNGATE_THREADS 16
#define UNGATE_BATCH 16

typedef struct {
    char *key, *uid, *queue;
    int64_t at;              /* realtime seconds of the ungate */
} assumed;

/* The held condition last written to a pod, so it is written (and its event sent) once. */
typedef struct {
    char *key, *reason, *message;
    bool seen;               /* still held in this cycle */
} written;

typedef struct {
    char *name;
    uint64_t n;
} counter;

typedef struct {
    char *queue, *reason;
    uint64_t n;
} gauge;

struct tly_gatectl {
    tly_kube *k;
    long timeout_ms;
    char *identity;
    tly_ctrl_log_fn log;
    void *log_ctx;
    assumed *as;
    size_t nas, capas;
    written *wr;
    size_t nwr, capwr;
    tly_strmap wrmap;        /* wr[].key -> index + 1 */
    tly_strmap asmap;        /* as[].key -> index + 1 (looked up for every pending pod) */
    tly_write_pool *pool;    /* the follow-up writes (NULL without a client) */
    tly_write_pool *upool;   /* the ungate patches of a batch (NULL without a client) */
    atomic_bool fenced;      /* a follow-up of this cycle was not sent */
    pthread_mutex_t mu;      /* the metrics below, read by /metrics */
    counter *ungates;
    size_t nungates;
    gauge *gated;
    size_t ngated;
};

tly_gatectl *tly_gatectl_create(tly_kube *k, long reservation_timeout_ms, const char *identity,
                                tly_ctrl_log_fn log, void *log_ctx)
{
    tly_gatectl *g = tly_xcalloc(1, sizeof *g);
    g->k = k;
    g->timeout_ms = reservation_timeout_ms;
    g->identity = tly_xstrdup(identity ? identity : "tally");
    g->log = log;
    g->log_ctx = log_ctx;
    tly_strmap_init(&g->wrmap);
    tly_strmap_init(&g->asmap);
    atomic_init(&g->fenced, false);
    g->pool = k ? tly_write_pool_create(FOLLOWUP_THREADS, FOLLOWUP_QUEUED) : NULL;
    g->upool = k ? tly_write_pool_create(UNGATE_THREADS, UNGATE_BATCH) : NULL;
    pthread_mutex_init(&g->mu, NULL);
    return g;
}

static void free_gauges(gauge *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].queue);
        free(v[i].reason);
    }
    free(v);
}

void tly_gatectl_destroy(tly_gatectl *g)
{
    if (!g)
        return;
    tly_write_pool_destroy(g->upool);
    tly_write_pool_destroy(g->pool);
    for (size_t i = 0; i < g->nas; i++) {
        free(g->as[i].key);
        free(g->as[i].uid);
        free(g->as[i].queue);
    }
    free(g->as);
    for (size_t i = 0; i < g->nwr; i++) {
        free(g->wr[i].key);
        free(g->wr[i].reason);
        free(g->wr[i].message);
    }
    free(g->wr);
    tly_strmap_free(&g->wrmap);
    tly_strmap_free(&g->asmap);
    for (size_t i = 0; i < g->nungates; i++)
        free(g->ungates[i].name);
    free(g->ungates);
    free_gauges(g->gated, g->ngated);
    pthread_mutex_destroy(&g->mu);
    free(g->identity);
    free(g);
}

static char *pod_key(const tly_pod *p) { return tly_xasprintf("%s/%s", p->meta.ns, p->meta.name); }

/* ---- the decision ---------------------------------------------------------------- */

typedef struct {
    const tly_pod *pod;
    char *group;             /* "ns/podgroup" or "ns/pod" */
    const tly_podgroup *pg;
    int32_t sg;              /* its leaf subgroup in pg (tly_gang_subgroup_of), or -1 */
    tly_pod_charge *jc;      /* its workload-level charge, once decide() has computed it */
    const tly_qverdict *why; /* refused on every node class it could use (placement_refusals) */
} cand;

typedef struct {
    cand *c;                 /* its pods, adjacent in the candidate array */
    uint32_t n;
    bool partial;            /* some member is admitted already */
    int32_t qprio, prio;
    int64_t created;
    const char *queue;
} workload;

typedef struct {
    const tly_pod *pod;
    const char *queue;
    bool admit;
    const char *reason, *message;
} action;

typedef struct {
    tly_gatectl *g;
    tly_store *s;
    tly_queues *qs;
    tly_arena *a;
    uint64_t max_mem;
    int64_t now;
    action *acts;
    size_t nacts, capacts;
    const tly_pod **fin;     /* admissions to finish (admission_unfinished) */
    cand *cand;              /* the gated pods of the cycle */
    uint32_t ncand;
    tly_placeclasses *pc;    /* the node classes, built when first needed */
    uint64_t *gpu_mem;       /* per node (store order): its GPU memory, MiB */
    uint32_t nnodes;
    size_t nfin;
    bool (*may_write)(void *ctx);
    void *ctx;
} cycle;


static int64_t anchor_of(const tly_pod *p)
{
    const char *ts = tly_kvs_get(&p->meta.annotations, TLY_ADMITTED_ANNOTATION);
    int64_t t;
    if (ts && tly_parse_time(ts, &t))
        return t;
    return p->meta.created != TLY_NO_TIME ? p->meta.created : 0;
}

static bool admitted_shown(const tly_pod *p)
{
    const tly_condition *c = tly_conditions_find(&p->conditions, "QueueAdmitted");
    return c && c->status && !strcmp(c->status, "True");
}

/*
** An admission begun and not finished: the gate is gone and the admitted
** timestamp stamped (the ungate patch succeeded), but QueueAdmitted is not
** True (the replica that removed the gate died before its follow-up writes,
** or they failed). The leader writes the Admitted event (under its one name)
** and the condition, so every admitted pod ends with exactly one of each.
*/
static bool admission_unfinished(const tly_pod *p)
{
    return !tly_pod_has_gate(p, TLY_GATE) && !tly_pod_has_foreign_gate(p) &&
           tly_kvs_get(&p->meta.annotations, TLY_ADMITTED_ANNOTATION) && !admitted_shown(p);
}

static assumed *find_assumed(tly_gatectl *g, const tly_pod *p)
{
    char key[512];
    int n = snprintf(key, sizeof key, "%s/%s", p->meta.ns, p->meta.name);
    if (n < 0 || (size_t)n >= sizeof key)
        return NULL;  /* longer than any valid namespace and name */
    uintptr_t i = (uintptr_t)tly_strmap_get(&g->asmap, key, (size_t)n);
    if (!i)
        return NULL;
    assumed *x = &g->as[i - 1];
    return !x->uid || !p->meta.uid || !strcmp(x->uid, p->meta.uid) ? x : NULL;
}

/* Remembers that pod key (owned from here) was admitted at `at`. */
static void assume(tly_gatectl *g, char *key, const char *uid, const char *queue, int64_t at)
{
    if (g->nas == g->capas) {
        g->capas = g->capas ? g->capas * 2 : 32;
        g->as = tly_xrealloc(g->as, g->capas * sizeof *g->as);
    }
    g->as[g->nas++] = (assumed){key, uid ? tly_xstrdup(uid) : NULL, tly_xstrdup(queue), at};
    tly_strmap_put(&g->asmap, key, strlen(key), (void *)(uintptr_t)g->nas);
}

/* The job-level charge of pod p into *c (storage in the cycle's arena). */
static void job_charge(cycle *cy, const tly_pod *p, tly_pod_charge *c)
{
    tly_pod_charge_compute(cy->s, cy->qs, p, NULL, cy->max_mem, cy->a, c);
}

/* sum += one pod's charge, in the form tly_queues_check reads (dense AccountedResources). */
static void add_charge(cycle *cy, tly_qcharge *sum, const tly_pod_charge *c)
{
    uint32_t nacc = tly_queues_naccres(cy->qs);
    if (!sum->accounted)
        sum->accounted = tly_arena_zalloc(cy->a, (nacc + 1) * sizeof *sum->accounted);
    for (int r = 0; r < TLY_QR_COUNT; r++)
        tly_qty_add(sum->res[r], c->res[r], &sum->res[r]);
    tly_rlist out;
    if (tly_rlist_add(&sum->all, &c->all, cy->a, &out) == 0)
        sum->all = out;
    for (uint32_t i = 0; i < c->nacc; i++)
        tly_qty_add(sum->accounted[c->acc[i].ar], c->acc[i].q, &sum->accounted[c->acc[i].ar]);
}

/* Reserves pod p's charge on its queue (an admitted pod that is not bound yet). */
static void reserve_pod(cycle *cy, const tly_pod *p)
{
    const tly_podgroup *pg;
    int32_t q = tly_queues_find(cy->qs, tly_store_pod_queue(cy->s, p, &pg));
    if (q < 0)
        return;
    tly_pod_charge c;
    job_charge(cy, p, &c);
    tly_qcharge sum;
    memset(&sum, 0, sizeof sum);
    add_charge(cy, &sum, &c);
    tly_queues_reserve(cy->qs, (uint32_t)q, &sum, c.non_preemptible);
}

static void act(cycle *cy, const workload *w, bool admit, const char *reason, const char *message)
{
    for (uint32_t i = 0; i < w->n; i++) {
        if (cy->nacts == cy->capacts) {
            cy->capacts = cy->capacts ? cy->capacts * 2 : 64;
            cy->acts = tly_xrealloc(cy->acts, cy->capacts * sizeof *cy->acts);
        }
        cy->acts[cy->nacts++] = (action){w->c[i].pod, w->queue, admit, reason, message};
    }
}

/*
** Members of first's PodGroup that count as admitted: not terminal and
** without tally's gate (or ungated by this replica a moment ago). With
** count (pg->nsubgroups entries, may be NULL), each is also counted in its
** leaf subgroup, as the pod engine counts a PodGroup's running pods.
*/
static uint32_t admitted_members(cycle *cy, const tly_pod *first, const tly_podgroup *pg, uint32_t *count)
{
    const char *pgname = tly_kvs_get(&first->meta.annotations, "pod-group-name");
    tly_pod **pods = NULL;
    uint32_t n = tly_live_group_pods(cy->s, first->meta.ns, pgname, &pods), k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (tly_pod_terminal(pods[i]) ||
            (tly_pod_has_gate(pods[i], TLY_GATE) && !find_assumed(cy->g, pods[i])))
            continue;
        k++;
        int32_t sg = count ? tly_gang_subgroup_of(pg, pods[i]) : -1;
        if (sg >= 0)
            count[sg]++;
    }
    free(pods);
    return k;
}

/*
** w's pods reordered, stably, so that those with first[i] set come first
** (first[] is indexed by the pods' order before the call); returns how many.
** The gang rule and the placement refusals both split a workload this way.
*/
static uint32_t partition(workload *w, const bool *first)
{
    cand *tmp = tly_xmalloc((w->n + 1) * sizeof *tmp);
    uint32_t m = 0, lead = 0;
    for (uint32_t pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < w->n; i++)
            if (first[i] == (pass == 0))
                tmp[m++] = w->c[i];
        if (pass == 0)
            lead = m;
    }
    memcpy(w->c, tmp, w->n * sizeof *tmp);
    free(tmp);
    return lead;
}

/*
** The gang rule, as the pod engine applies it (gang.h): whether w's gated
** pods together with the members already admitted make the PodGroup
** satisfied. Without subgroups that is minMember pods. With subgroups,
** every subgroup and the PodGroup as tly_gang_satisfied says; the pods of a
** subgroup that cannot run (below its minimum, or under a parent that is)
** are moved behind the others and *admit is how many may go, the rest
** waiting, gated, for their subgroup's other pods. False: the whole gang
** waits, with nothing written, until the rest of its pods exist.
*/
static bool gang_ready(cycle *cy, workload *w, const tly_podgroup *pg, uint32_t *admit)
{
    *admit = w->n;
    if (!pg->nsubgroups) {
        uint32_t min = pg->min_member > 0 ? (uint32_t)pg->min_member : 1;
        uint32_t have = admitted_members(cy, w->c[0].pod, pg, NULL);
        return have >= min || have + w->n >= min;
    }
    uint32_t *count = tly_xcalloc(pg->nsubgroups + 1, sizeof *count);
    uint8_t *keep = tly_xcalloc(pg->nsubgroups + 1, 1);
    uint32_t total = admitted_members(cy, w->c[0].pod, pg, count) + w->n;
    for (uint32_t i = 0; i < w->n; i++)
        if (w->c[i].sg >= 0)
            count[w->c[i].sg]++;
    bool ok = tly_gang_satisfied(pg, count, total, keep, NULL);
    if (ok) {
        /* The pods that may run first, in their order. */
        bool *first = tly_xmalloc((w->n + 1) * sizeof *first);
        for (uint32_t i = 0; i < w->n; i++)
            first[i] = w->c[i].sg < 0 || keep[w->c[i].sg];
        *admit = partition(w, first);
        free(first);
    }
    free(count);
    free(keep);
    return ok && *admit > 0;
}

/* dst = a copy of src (its storage, in the cycle's arena, not shared). */
static void copy_charge(cycle *cy, tly_qcharge *dst, const tly_qcharge *src)
{
    uint32_t nacc = tly_queues_naccres(cy->qs);
    *dst = *src;
    dst->accounted = tly_arena_zalloc(cy->a, (nacc + 1) * sizeof *dst->accounted);
    if (src->accounted)
        memcpy(dst->accounted, src->accounted, nacc * sizeof *dst->accounted);
}

/*
** The limits that depend on placement (contract section 3), for the first
** n pods of w, which passed the workload-level check: each pod's charge on
** each node class it could use (placeclass.h), on top of the queues as they
** stand (Reserved included) and the workload-level charges of the pods of
** w accepted before it, as the pod engine checks a pod on a node after the
** gang's earlier pods. A pod refused on every class it could use is held by
** queue policy: no node that could be added would run it (its verdict, the
** refusal on the first such node in name order, goes to c[i].why). A pod
** that some class accepts goes to the scheduler, which applies the limit
** where it binds the pod; so does a pod no node takes statically (a
** node-fit failure). Returns how many pods were refused.
*/
static uint32_t placement_refusals(cycle *cy, workload *w, uint32_t n, uint32_t q, bool np)
{
    if (!cy->pc) {
        if (!tly_placement_matters(cy->qs, cy->gpu_mem, cy->nnodes))
            return 0;
        const tly_pod **pods = tly_xmalloc((cy->ncand + 1) * sizeof *pods);
        for (uint32_t i = 0; i < cy->ncand; i++)
            pods[i] = cy->cand[i].pod;
        cy->pc = tly_placeclasses_create(cy->s, cy->qs, cy->gpu_mem, pods, cy->ncand);
        free(pods);
    }
    tly_qcharge before;
    memset(&before, 0, sizeof before);
    uint32_t refused = 0;
    for (uint32_t i = 0; i < n; i++) {
        cand *c = &w->c[i];
        const tly_k8s_node *const *nodes;
        uint32_t ncls = tly_placeclasses_for(cy->pc, c->pod, &nodes);
        tly_qverdict first = {.ok = ncls == 0};
        for (uint32_t k = 0; k < ncls && !first.ok; k++) {
            tly_pod_charge pc;
            tly_pod_charge_compute(cy->s, cy->qs, c->pod, nodes[k], cy->max_mem, cy->a, &pc);
            tly_qcharge sum;
            copy_charge(cy, &sum, &before);
            add_charge(cy, &sum, &pc);
            tly_qverdict v;
            memset(&v, 0, sizeof v);
            tly_queues_check(cy->qs, q, &sum, np, true, &v);
            if (v.ok || k == 0)
                first = v;
        }
        if (first.ok) {
            add_charge(cy, &before, c->jc);
            continue;
        }
        tly_qverdict *keep = tly_arena_alloc(cy->a, sizeof *keep);
        *keep = first;
        c->why = keep;
        refused++;
    }
    return refused;
}

/* w's pods reordered so that those with why == NULL come first (stable); returns how many. */
static uint32_t accepted_first(workload *w)
{
    bool *first = tly_xmalloc((w->n + 1) * sizeof *first);
    for (uint32_t i = 0; i < w->n; i++)
        first[i] = !w->c[i].why;
    uint32_t ok = partition(w, first);
    free(first);
    return ok;
}

/* Admits w's first n pods, reserving their workload-level charges. */
static void admit_pods(cycle *cy, const workload *w, uint32_t n, uint32_t q, bool np)
{
    tly_qcharge adm;
    memset(&adm, 0, sizeof adm);
    for (uint32_t i = 0; i < n; i++)
        add_charge(cy, &adm, w->c[i].jc);
    workload kept = *w;
    kept.n = n;
    tly_queues_reserve(cy->qs, q, &adm, np);
    act(cy, &kept, true, NULL, NULL);
}

static void decide(cycle *cy, workload *w)
{
    tly_qverdict v;
    memset(&v, 0, sizeof v);
    int32_t q = tly_queues_admissible(cy->qs, w->queue, &v);
    if (q < 0) {
        act(cy, w, false, v.reason, v.message);
        return;
    }
    const tly_podgroup *pg = w->c[0].pg;
    if (!tly_queues_gating(cy->qs, (uint32_t)q)) {
        act(cy, w, true, NULL, NULL);  /* gated for a queue that is not: ungated unconditionally */
        return;
    }
    uint32_t admit = w->n;
    if (pg && !gang_ready(cy, w, pg, &admit))
        return;  /* the gang is not all there yet: it waits, gated, with nothing written */
    /*
    ** The job-level check sums every gated pod of the workload, those of a
    ** subgroup that must wait included, as the pod engine sums a unit's
    ** pending pods; what is reserved is what is admitted.
    */
    tly_qcharge sum;
    memset(&sum, 0, sizeof sum);
    bool np = false;
    for (uint32_t i = 0; i < w->n; i++) {
        w->c[i].jc = tly_arena_alloc(cy->a, sizeof *w->c[i].jc);
        w->c[i].why = NULL;
        job_charge(cy, w->c[i].pod, w->c[i].jc);
        np = w->c[i].jc->non_preemptible;
        add_charge(cy, &sum, w->c[i].jc);
    }
    tly_queues_check(cy->qs, (uint32_t)q, &sum, np, true, &v);
    if (!v.ok) {
        act(cy, w, false, v.reason, v.message);  /* the whole unit, as simulate holds it */
        return;
    }
    if (!placement_refusals(cy, w, admit, (uint32_t)q, np)) {
        admit_pods(cy, w, admit, (uint32_t)q, np);
        return;
    }
    /*
    ** Some pods are refused wherever they could go. A single pod is held. A
    ** gang is decided again without them, as the pod engine's gang goes on
    ** with the pods it could place: if it still holds, the rest are admitted
    ** and the refused pods held one by one; else the whole gang is held.
    */
    uint32_t ok = accepted_first(w), again = 0;
    workload rest = *w;
    rest.n = ok;
    const tly_qverdict *why = w->c[ok].why;
    if (pg && ok > 0 && gang_ready(cy, &rest, pg, &again)) {
        admit_pods(cy, &rest, again, (uint32_t)q, np);
        for (uint32_t i = ok; i < w->n; i++) {
            workload one = *w;
            one.c = &w->c[i];
            one.n = 1;
            act(cy, &one, false, w->c[i].why->reason, w->c[i].why->message);
        }
        return;
    }
    /* The pod engine's sentence for a gang short of pods, then the limit's. */
    const char *msg = why->message ? why->message : "", *pre = "";
    if (pg && !pg->nsubgroups) {
        uint32_t min = pg->min_member > 0 ? (uint32_t)pg->min_member : 1;
        uint32_t have = admitted_members(cy, w->c[0].pod, pg, NULL);
        pre = tly_arena_printf(cy->a, "PodGroup %s needs %u pods placed together; only %u fit. ", pg->meta.name,
                               min > have ? min - have : 1, ok);
    } else if (pg) {
        pre = tly_arena_printf(cy->a, "PodGroup %s cannot run without the pods its queue's limits refuse on every node they could use. ",
                               pg->meta.name);
    }
    act(cy, w, false, why->reason, *pre ? tly_arena_printf(cy->a, "%s%s", pre, msg) : msg);
}

static int cmp_cand(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    int c = strcmp(a->group, b->group);
    if (!c)
        c = strcmp(a->pod->meta.name, b->pod->meta.name);
    return c;
}

static int cmp_workload(const void *pa, const void *pb)
{
    const workload *a = pa, *b = pb;
    if (a->partial != b->partial)
        return a->partial ? -1 : 1;
    if (a->qprio != b->qprio)
        return a->qprio > b->qprio ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    if (a->created != b->created)
        return a->created < b->created ? -1 : 1;
    int c = strcmp(a->c[0].pod->meta.ns, b->c[0].pod->meta.ns);
    return c ? c : strcmp(a->c[0].pod->meta.name, b->c[0].pod->meta.name);
}

/*
** Each node's GPU memory into cy->gpu_mem, read once a cycle (a label
** lookup per node), and the largest, as the job-level check charges
** gpu-memory pods.
*/
static void read_gpu_mem(cycle *cy)
{
    cy->nnodes = tly_store_count(cy->s, TLY_K_NODE);
    cy->gpu_mem = tly_xmalloc((cy->nnodes + 1) * sizeof *cy->gpu_mem);
    cy->max_mem = 0;
    for (uint32_t i = 0; i < cy->nnodes; i++) {
        cy->gpu_mem[i] = tly_node_gpu_memory_mib(tly_store_at(cy->s, TLY_K_NODE, i));
        if (cy->gpu_mem[i] > cy->max_mem)
            cy->max_mem = cy->gpu_mem[i];
    }
}

/* Drops the assumptions the fork has caught up with (or that are too old to trust). */
static void prune_assumed(tly_gatectl *g, tly_store *s, int64_t now)
{
    size_t k = 0;
    for (size_t i = 0; i < g->nas; i++) {
        assumed *x = &g->as[i];
        const char *slash = strchr(x->key, '/');
        char ns[256];
        snprintf(ns, sizeof ns, "%.*s", (int)(slash - x->key), x->key);
        const tly_pod *p = tly_store_find(s, TLY_K_POD, ns, slash + 1);
        /* Kept until the condition shows too: until then collect would finish it again. */
        bool shown = !p || (x->uid && p->meta.uid && strcmp(x->uid, p->meta.uid)) ||
                     (!tly_pod_has_gate(p, TLY_GATE) && admitted_shown(p));
        if (shown || (now - x->at) * 1000 > ASSUME_MS) {
            free(x->key);
            free(x->uid);
            free(x->queue);
            continue;
        }
        g->as[k++] = *x;
    }
    if (k != g->nas) {
        tly_strmap_free(&g->asmap);
        for (size_t i = 0; i < k; i++)
            tly_strmap_put(&g->asmap, g->as[i].key, strlen(g->as[i].key), (void *)(uintptr_t)(i + 1));
    }
    g->nas = k;
}

/* Collects the candidates and reserves the admitted pending pods; returns the candidates. */
static cand *collect(cycle *cy, uint32_t *ncand)
{
    tly_pod **pods = NULL;
    uint32_t n = tly_live_pending(cy->s, &pods);
    cand *c = tly_xmalloc((n + 1) * sizeof *c);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const tly_pod *p = pods[i];
        if (!tly_store_is_tally_pod(cy->s, p))
            continue;
        bool ours = tly_pod_has_gate(p, TLY_GATE);
        assumed *x = ours && cy->g->nas ? find_assumed(cy->g, p) : NULL;
        if (ours && !x) {
            if (tly_pod_has_foreign_gate(p))
                continue;  /* another component's gate: never touched */
            const tly_podgroup *pg;
            tly_store_pod_queue(cy->s, p, &pg);
            c[k].pod = p;
            c[k].pg = pg;
            c[k].sg = tly_gang_subgroup_of(pg, p);
            c[k].jc = NULL;
            c[k].why = NULL;
            c[k].group = pg ? tly_arena_printf(cy->a, "%s/%s", p->meta.ns, pg->meta.name)
                            : tly_arena_printf(cy->a, "%s/%s\x1f", p->meta.ns, p->meta.name);
            k++;
            continue;
        }
        if (tly_pod_has_foreign_gate(p) && !x)
            continue;  /* not admitted by queue policy: held by someone else */
        /* Not finished yet, and not by this replica a moment ago (its writes may be on their way). */
        if (!ours && admission_unfinished(p) && !(cy->g->nas && find_assumed(cy->g, p))) {
            cy->fin = tly_xrealloc(cy->fin, (cy->nfin + 1) * sizeof *cy->fin);
            cy->fin[cy->nfin++] = p;
        }
        int64_t anchor = x ? x->at : anchor_of(p);
        if ((cy->now - anchor) * 1000 < cy->g->timeout_ms)
            reserve_pod(cy, p);
    }
    free(pods);
    qsort(c, k, sizeof *c, cmp_cand);
    *ncand = k;
    return c;
}

static workload *group(cycle *cy, cand *c, uint32_t n, uint32_t *nw)
{
    workload *w = tly_xmalloc((n + 1) * sizeof *w);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i + 1;
        while (j < n && !strcmp(c[j].group, c[i].group))
            j++;
        workload *x = &w[k++];
        memset(x, 0, sizeof *x);
        x->c = &c[i];
        x->n = j - i;
        const tly_podgroup *pg = c[i].pg;
        x->queue = tly_store_pod_queue(cy->s, c[i].pod, NULL);
        const tly_queue *q = tly_store_find(cy->s, TLY_K_QUEUE, NULL, x->queue);
        x->qprio = q ? q->priority : 0;
        x->prio = tly_pod_priority(cy->s, c[i].pod, pg);
        x->created = c[i].pod->meta.created;
        for (uint32_t m = i; m < j; m++)
            if (c[m].pod->meta.created < x->created)
                x->created = c[m].pod->meta.created;
        x->partial = pg && admitted_members(cy, c[i].pod, pg, NULL) > 0;
        i = j;
    }
    qsort(w, k, sizeof *w, cmp_workload);
    *nw = k;
    return w;
}

/* ---- writes ---------------------------------------------------------------------- */

static written *written_for(tly_gatectl *g, const char *key)
{
    uintptr_t i = (uintptr_t)tly_strmap_get(&g->wrmap, key, strlen(key));
    return i ? &g->wr[i - 1] : NULL;
}

/*
** A pod's QueueAdmitted condition and, when etype is set, its event: sent
** by a writer thread, fenced again. The strings and the pod are the
** cycle's (the fork, the verdicts), alive until the cycle has waited.
*/
typedef struct {
    tly_gatectl *g;
    const tly_pod *pod;
    const char *status, *reason, *message;
    const char *etype, *ereason, *emessage;
    bool admitted;           /* status True: the Admitted event, once */
    bool (*may_write)(void *ctx);
    void *ctx;
} followup;

static void send_followup(void *arg)
{
    followup *f = arg;
    tly_gatectl *g = f->g;
    char err[1024];
    if (!f->may_write(f->ctx)) {
        atomic_store(&g->fenced, true);
    } else if (f->admitted) {
        /*
        ** The event first, under a name it can have once: a replica killed
        ** between the two leaves the condition not True, and the leader after
        ** it finishes the admission (collect) without a second event.
        */
        tly_write_event(g->k, "Pod", "v1", f->pod->meta.ns, f->pod->meta.name, f->pod->meta.uid, f->etype,
                        f->ereason, f->emessage, g->identity, "Admitted", err, sizeof err);
        tly_write_pod_condition(g->k, f->pod, "QueueAdmitted", f->status, f->reason, f->message, err, sizeof err);
    } else {
        tly_write_pod_condition(g->k, f->pod, "QueueAdmitted", f->status, f->reason, f->message, err, sizeof err);
        if (f->etype)
            tly_write_event(g->k, "Pod", "v1", f->pod->meta.ns, f->pod->meta.name, f->pod->meta.uid, f->etype,
                            f->ereason, f->emessage, g->identity, NULL, err, sizeof err);
    }
    free(f);
}

static void followup_submit(cycle *cy, const tly_pod *p, const char *status, const char *reason,
                            const char *message, const char *etype, const char *ereason, const char *emessage)
{
    followup *f = tly_xmalloc(sizeof *f);
    *f = (followup){cy->g, p, status, reason, message, etype, ereason, emessage, !strcmp(status, "True"),
                    cy->may_write, cy->ctx};
    tly_write_pool_submit(cy->g->pool, send_followup, f);
}

static void log_kv(tly_gatectl *g, int level, const char *event, const char *pod, const char *msg)
{
    const char *kv[] = {"pod", pod, "msg", msg};
    if (g->log)
        g->log(g->log_ctx, level, event, kv, 2);
}

static void count_ungate(tly_gatectl *g, const char *queue)
{
    pthread_mutex_lock(&g->mu);
    size_t i = 0;
    while (i < g->nungates && strcmp(g->ungates[i].name, queue))
        i++;
    if (i == g->nungates) {
        g->ungates = tly_xrealloc(g->ungates, (g->nungates + 1) * sizeof *g->ungates);
        g->ungates[g->nungates++] = (counter){tly_xstrdup(queue), 0};
    }
    g->ungates[i].n++;
    pthread_mutex_unlock(&g->mu);
}

/*
** One ungate patch of a batch, sent by a writer thread (fenced again when
** it goes out); its answer is read by the cycle's thread (ungate_done).
*/
typedef struct {
    const cycle *cy;
    const action *a;
    bool sent;
    tly_write_rc rc;
    char now[32], err[1024];
} ungate_job;

static void send_ungate(void *arg)
{
    ungate_job *j = arg;
    if ((j->sent = j->cy->may_write(j->cy->ctx)))
        j->rc = tly_write_ungate(j->cy->g->k, j->a->pod, j->now, j->err, sizeof j->err);
}

/*
** What one ungate's answer means, on the cycle's thread: a pod admitted
** (remembered, counted, its condition and event sent), or false when the
** writes must end: the fence stopped it, or the server refused the patch
** (*refused: the pod changed; a pod that is gone ends nothing).
*/
static bool ungate_done(cycle *cy, const ungate_job *j, bool *refused)
{
    tly_gatectl *g = cy->g;
    if (!j->sent)
        return false;
    char *key = pod_key(j->a->pod);
    if (j->rc != TLY_WRITE_OK) {
        log_kv(g, j->rc == TLY_WRITE_FAILED ? 2 : 1, "ungate-refused", key, j->err);
        free(key);
        *refused |= j->rc != TLY_WRITE_GONE;
        return j->rc == TLY_WRITE_GONE;
    }
    assume(g, tly_xstrdup(key), j->a->pod->meta.uid, j->a->queue, cy->now);
    count_ungate(g, j->a->queue);
    log_kv(g, 1, "ungated", key, j->a->queue);
    followup_submit(cy, j->a->pod, "True", "Admitted", ADMITTED_MESSAGE,
                    "Normal", "Admitted", ADMITTED_EVENT);
    free(key);
    return true;
}

/* Sends the batch's n ungates at once and reads their answers in order; false: end the writes. */
static bool ungate_batch(cycle *cy, ungate_job *jobs, size_t n, bool *refused)
{
    for (size_t i = 0; i < n; i++)
        tly_write_pool_submit(cy->g->upool, send_ungate, &jobs[i]);
    tly_write_pool_wait(cy->g->upool);
    bool go_on = true;
    for (size_t i = 0; i < n; i++)
        go_on &= ungate_done(cy, &jobs[i], refused);
    return go_on;
}

static void write_held(cycle *cy, const action *a);

/*
** The cycle's writes in the decided order: ungates in batches, held pods'
** follow-ups as they come (until the fence stops them). Returns true
** when the server refused an ungate (the pod changed).
*/
static bool write_actions(cycle *cy)
{
    ungate_job jobs[UNGATE_BATCH];
    size_t n = 0;
    bool go_on = true, refused = false;
    for (size_t i = 0; i < cy->nacts && go_on && cy->may_write(cy->ctx); i++) {
        const action *a = &cy->acts[i];
        if (!a->admit) {
            write_held(cy, a);
            continue;
        }
        jobs[n] = (ungate_job){.cy = cy, .a = a};
        tly_write_now(jobs[n].now);
        if (++n == UNGATE_BATCH) {
            go_on = ungate_batch(cy, jobs, n, &refused);
            n = 0;
        }
    }
    if (n)
        ungate_batch(cy, jobs, n, &refused);
    return refused;
}

/* Finishes an admission another replica (or an earlier try) began. */
static void write_finish(cycle *cy, const tly_pod *p)
{
    tly_gatectl *g = cy->g;
    const char *q = tly_store_pod_queue(cy->s, p, NULL);
    char *key = pod_key(p);
    log_kv(g, 1, "admission-finished", key, q ? q : "");
    assume(g, key, p->meta.uid, q ? q : "", anchor_of(p));
    followup_submit(cy, p, "True", "Admitted", ADMITTED_MESSAGE,
                    "Normal", "Admitted", ADMITTED_EVENT);
}

/* A held pod: its condition (and an event when the reason changes), once. */
static void write_held(cycle *cy, const action *a)
{
    tly_gatectl *g = cy->g;
    char *key = pod_key(a->pod);
    const tly_condition *c = tly_conditions_find(&a->pod->conditions, "QueueAdmitted");
    written *w = written_for(g, key);
    bool same_shown = c && c->status && !strcmp(c->status, "False") && c->reason && !strcmp(c->reason, a->reason) &&
                      c->message && a->message && !strcmp(c->message, a->message);
    bool same_written = w && !strcmp(w->reason, a->reason) && !strcmp(w->message, a->message ? a->message : "");
    if (w)
        w->seen = true;
    if (same_shown || same_written) {
        free(key);
        return;
    }
    const char *before = w ? w->reason : c ? c->reason : NULL;
    bool event = !before || strcmp(before, a->reason);
    followup_submit(cy, a->pod, "False", a->reason, a->message, event ? "Warning" : NULL, "QueueAdmissionHeld",
                    a->message);
    if (!w) {
        if (g->nwr == g->capwr) {
            g->capwr = g->capwr ? g->capwr * 2 : 32;
            g->wr = tly_xrealloc(g->wr, g->capwr * sizeof *g->wr);
        }
        w = &g->wr[g->nwr++];
        w->key = key;
        key = NULL;
        w->reason = w->message = NULL;
        tly_strmap_put(&g->wrmap, w->key, strlen(w->key), (void *)(uintptr_t)g->nwr);
    }
    free(w->reason);
    free(w->message);
    w->reason = tly_xstrdup(a->reason);
    w->message = tly_xstrdup(a->message ? a->message : "");
    w->seen = true;
    free(key);
}

/* Forgets the written conditions of pods that are no longer held. */
static void prune_written(tly_gatectl *g)
{
    size_t k = 0;
    for (size_t i = 0; i < g->nwr; i++) {
        if (g->wr[i].seen) {
            g->wr[i].seen = false;
            g->wr[k++] = g->wr[i];
        } else {
            free(g->wr[i].key);
            free(g->wr[i].reason);
            free(g->wr[i].message);
        }
    }
    if (k != g->nwr) {
        tly_strmap_free(&g->wrmap);
        for (size_t i = 0; i < k; i++)
            tly_strmap_put(&g->wrmap, g->wr[i].key, strlen(g->wr[i].key), (void *)(uintptr_t)(i + 1));
    }
    g->nwr = k;
}

/* tally_gated_pods: the held pods of this cycle by queue and reason. */
static void set_gauges(tly_gatectl *g, const action *acts, size_t n)
{
    gauge *v = NULL;
    size_t nv = 0;
    for (size_t i = 0; i < n; i++) {
        if (acts[i].admit)
            continue;
        size_t j = 0;
        while (j < nv && (strcmp(v[j].queue, acts[i].queue) || strcmp(v[j].reason, acts[i].reason)))
            j++;
        if (j == nv) {
            v = tly_xrealloc(v, (nv + 1) * sizeof *v);
            v[nv++] = (gauge){tly_xstrdup(acts[i].queue), tly_xstrdup(acts[i].reason), 0};
        }
        v[j].n++;
    }
    pthread_mutex_lock(&g->mu);
    gauge *old = g->gated;
    size_t nold = g->ngated;
    g->gated = v;
    g->ngated = nv;
    pthread_mutex_unlock(&g->mu);
    free_gauges(old, nold);
}

bool tly_gatectl_cycle(tly_gatectl *g, tly_store *fork, bool (*may_write)(void *ctx), void *ctx)
{
    cycle cy = {.g = g, .s = fork, .now = (int64_t)time(NULL), .may_write = may_write, .ctx = ctx};
    cy.qs = tly_live_queues(fork);
    if (!cy.qs)
        return false;
    cy.a = tly_arena_create(64 * 1024);
    read_gpu_mem(&cy);
    prune_assumed(g, fork, cy.now);
    uint32_t ncand, nw;
    cand *c = collect(&cy, &ncand);
    cy.cand = c;
    cy.ncand = ncand;
    workload *w = group(&cy, c, ncand, &nw);
    for (uint32_t i = 0; i < nw; i++)
        decide(&cy, &w[i]);
    for (size_t i = 0; i < cy.nfin && may_write(ctx); i++)
        write_finish(&cy, cy.fin[i]);
    bool changed = write_actions(&cy);
    tly_write_pool_wait(g->pool);  /* the follow-ups borrow the fork and the verdicts */
    if (atomic_exchange(&g->fenced, false))
        for (size_t i = 0; i < g->nwr; i++)
            g->wr[i].seen = false;  /* forgotten by prune_written */
    prune_written(g);
    set_gauges(g, cy.acts, cy.nacts);
    free(cy.acts);
    free(cy.fin);
    free(w);
    free(c);
    tly_placeclasses_destroy(cy.pc);
    free(cy.gpu_mem);
    tly_queues_destroy(cy.qs);
    tly_arena_destroy(cy.a);
    return changed;
}

void tly_gatectl_metrics(tly_gatectl *g, FILE *out)
{
    pthread_mutex_lock(&g->mu);
    fputs("# HELP tally_gated_pods Pods held at the queue-admission gate, by queue and reason.\n"
          "# TYPE tally_gated_pods gauge\n", out);
    for (size_t i = 0; i < g->ngated; i++)
    {
        /* The queue may come from a PodGroup's spec.queue, any string: escaped. */
        fputs("tally_gated_pods{queue=\"", out);
        tly_metrics_label(out, g->gated[i].queue);
        fprintf(out, "\",reason=\"%s\"} %llu\n", g->gated[i].reason, (unsigned long long)g->gated[i].n);
    }
    fputs("# HELP tally_ungates_total Pods whose queue-admission gate tally removed, by queue.\n"
          "# TYPE tally_ungates_total counter\n", out);
    for (size_t i = 0; i < g->nungates; i++)
    {
        fputs("tally_ungates_total{queue=\"", out);
        tly_metrics_label(out, g->ungates[i].name);
        fprintf(out, "\"} %llu\n", (unsigned long long)g->ungates[i].n);
    }
    pthread_mutex_unlock(&g->mu);
}
