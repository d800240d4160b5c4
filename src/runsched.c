/*
** runsched.c: the kruntimes Run scheduler and runtimed admission engine
** (runsched.h). This is where a Run is filtered, scored and placed.
**
** Layout of the state:
**   runs[]   one entry per Run of the input, in (namespace, name) order;
**   pods[]   one per Runtime Pod (a Pod with a `runtime` label), same order;
**   groups[] one per (namespace, runtime): its Pods (name order) and the
**            Pending Runs waiting for capacity there.
** The scheduler's usage of a Pod (pods[i].used) is the sum of the full
** requests of the active Runs assigned to it plus the assumed ones; each Run
** remembers whether its request is counted there, so release is exact.
**
** Scoring, as kruntimes does it (kruntimes-facts 3.3): per candidate, the
** exact "load key" over the Pod's advertised resources (the largest
** projected utilisation used/capacity, then their sum; see ratio.h);
** candidates are ranked by key and the rank normalised to 0..100; preferred
** Run affinity adds its own 0..100 score; the highest total wins and ties go
** to the Pod name in byte order. Without preferred affinity this is exactly
** the seed's rule: least highest ratio, then least sum, then name.
**
** The index: load classes. Two available Pods of one group with the same
** capacity list and the same usage of every advertised resource are
** interchangeable for every Run without Run affinity: each passes or fails
** the filter alike and gets the same load key, so only the name can tell
** them apart, and the earlier name wins. The scheduler therefore keeps the
** available Pods of each group in classes keyed by (capacity, usage); a
** class holds its members in a min-heap by Pod index (index order is name
** order inside a group), and a Run is filtered and scored once per live
** class, on the class's first member, instead of once per Pod. A fleet of
** Runtime Pods from one template starts as one class and, as Runs land,
** spreads over as many classes as there are distinct usage vectors: in the
** worst case (every Pod different) one per Pod, which is the plain scan plus
** the upkeep of a hash lookup and a heap move per placement. Each class also
** caches the sum of its current ratios: between two Pods with the same
** capacity list the request adds the same amount to both sums, so the sums
** after the request compare exactly as the cached ones do (docs/runs.md).
** Runs with affinity terms depend on which Runs a Pod hosts, not only on
** its load, and are scored Pod by Pod as before.
*/
#include "tally/runsched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "tally/error.h"
#include "tally/ratio.h"
#include "tally/runtimed.h"

typedef struct {
    tly_rs_run_result res;
    tly_rlist request;      /* normalised; empty when invalid */
    const char *bad;        /* the invalid request's name */
    char *key;              /* "ns/name": runtimed's key */
    int64_t sched_time;     /* its Scheduled condition, or when this engine bound it */
    int32_t group;          /* (ns, spec.runtime), or -1 */
    uint32_t order;         /* position in placement order */
    bool counted;           /* request is in pods[res.pod].used */
    bool assumed;           /* reserved, not yet bound */
    bool queued, waiting;
} rrun;

typedef struct {
    tly_rs_pod_result res;
    tly_rlist cap;
    tly_rvec used;
    tly_runtimed *rd;
    int32_t group;
    int32_t cls;            /* its load class, or -1 when not available */
    uint32_t capkey;        /* interned capacity list: equal lists, equal keys */
    uint32_t hpos;          /* position in its class's heap */
    bool dirty;             /* runtimed has something to (re)check */
} rpod;

/* Available Pods of one group with equal capacity and usage (see above). */
typedef struct {
    uint32_t *heap;         /* members: a min-heap of Pod indices */
    uint32_t n, cap;
    int32_t slot;           /* index in the group's live list, -1 when empty */
    bool have_sum;
    tly_loadkey sum;        /* the members' current ratios (max and sum) */
    uint32_t capkey;
    uint32_t nv;            /* advertised resources */
    uint64_t *v;            /* per advertised resource: capacity, usage (nanos);
                               NULL unless all are in [0, 2^62): see fit_small */
} lclass;

typedef struct {
    const char *ns, *runtime;
    uint32_t *pods;
    uint32_t npods;
    uint32_t navail;        /* available Pods (states do not change in a run) */
    uint32_t *live;         /* classes with members */
    uint32_t nlive, caplive;
    uint32_t *wait;
    uint32_t nwait, capwait;
    uint64_t gen;           /* bumped when any Pod's usage or capacity changes */
    uint64_t grow;          /* bumped when room may have appeared (wake_group) */
} rgroup;

/*
** A request that found no room in a group (the failure memo; see
** refused_before): while the group's `grow` is unchanged only placements
** happened there, which never make room, so an equal request is refused
** again without a scan; while `gen` is unchanged nothing at all changed, so
** the message stays the same too.
*/
typedef struct {
    uint64_t grow, gen;
    char *message;
} refusal;

struct tly_runsched {
    tly_store *s;
    tly_names *names;
    tly_arena *a;
    tly_arena *scratch;     /* per reserve: the aligned requests */
    int64_t now;
    bool have_clock;
    rrun *runs;
    uint32_t nruns;
    rpod *pods;
    uint32_t npods;
    rgroup *groups;
    uint32_t ngroups, capgroups;
    tly_strmap podmap, groupmap, runmap;
    lclass *classes;
    uint32_t nclasses, capclasses;
    tly_strmap classmap, capmap;
    uint32_t ncapkeys;
    tly_strmap refmap;      /* (group, request) -> refusals[] index + 1 */
    refusal *refusals;
    uint32_t nrefusals, caprefusals;
    bool indexed;           /* false: the plain per-Pod scan (the reference) */
    uint32_t *queue;
    uint32_t qhead, qtail, qcap;
    bool started;
    uint64_t cycles;
};

/* ---- setup --------------------------------------------------------------- */

/* The maps' key of (x, y), a NULL part empty. (printf was a tenth of setup at 100,000 Runs.) */
static char *key2(tly_arena *a, const char *x, const char *y)
{
    return tly_arena_join(a, x ? x : "", '\x1f', y ? y : "");
}

static int32_t group_of(tly_runsched *rs, const char *ns, const char *runtime, bool create)
{
    char *k = key2(rs->a, ns, runtime);
    size_t len = strlen(k);
    uintptr_t v = (uintptr_t)tly_strmap_get(&rs->groupmap, k, len);
    if (v)
        return (int32_t)v - 1;
    if (!create)
        return -1;
    if (rs->ngroups == rs->capgroups) {
        rs->capgroups = rs->capgroups ? rs->capgroups * 2 : 8;
        rs->groups = tly_xrealloc(rs->groups, rs->capgroups * sizeof *rs->groups);
    }
    rgroup *g = &rs->groups[rs->ngroups];
    memset(g, 0, sizeof *g);
    g->ns = ns;
    g->runtime = runtime;
    tly_strmap_put(&rs->groupmap, k, len, (void *)(uintptr_t)(rs->ngroups + 1));
    return (int32_t)rs->ngroups++;
}

/* ---- load classes (the index; see the top of the file) --------------------- */

/* The interned id of Pod p's capacity list (ids and values). */
/*
** A resource list as map key bytes, entry by entry (id, then nanos), into k
** (RLIST_KEY_STEP bytes an entry): field by field, since the structs have
** padding. Capacity lists and Run requests are keyed alike.
*/
#define RLIST_KEY_STEP (sizeof(uint32_t) + sizeof(tly_i128))
static void rlist_key(char *k, const tly_rlist *l)
{
    for (uint32_t c = 0; c < l->n; c++) {
        memcpy(k + c * RLIST_KEY_STEP, &l->v[c].id, sizeof(uint32_t));
        memcpy(k + c * RLIST_KEY_STEP + sizeof(uint32_t), &l->v[c].q.nanos, sizeof(tly_i128));
    }
}

static uint32_t capkey_of(tly_runsched *rs, const rpod *p)
{
    size_t len = p->cap.n * RLIST_KEY_STEP;
    char *k = tly_arena_alloc(rs->a, len + 1);
    rlist_key(k, &p->cap);
    uintptr_t v = (uintptr_t)tly_strmap_get(&rs->capmap, k, len);
    if (v)
        return (uint32_t)v - 1;
    tly_strmap_put(&rs->capmap, k, len, (void *)(uintptr_t)(rs->ncapkeys + 1));
    return rs->ncapkeys++;
}

static void heap_set(rpod *pods, lclass *c, uint32_t at, uint32_t pod)
{
    c->heap[at] = pod;
    pods[pod].hpos = at;
}

static void heap_up(rpod *pods, lclass *c, uint32_t at)
{
    uint32_t x = c->heap[at];
    while (at > 0 && x < c->heap[(at - 1) / 2]) {
        heap_set(pods, c, at, c->heap[(at - 1) / 2]);
        at = (at - 1) / 2;
    }
    heap_set(pods, c, at, x);
}

static void heap_down(rpod *pods, lclass *c, uint32_t at)
{
    uint32_t x = c->heap[at];
    for (;;) {
        uint32_t l = 2 * at + 1, m = l;
        if (l >= c->n)
            break;
        if (l + 1 < c->n && c->heap[l + 1] < c->heap[l])
            m = l + 1;
        if (c->heap[m] > x)
            break;
        heap_set(pods, c, at, c->heap[m]);
        at = m;
    }
    heap_set(pods, c, at, x);
}

/* Takes Pod pi out of its class; an emptied class leaves its group's list. */
static void class_leave(tly_runsched *rs, uint32_t pi)
{
    rpod *p = &rs->pods[pi];
    if (p->cls < 0)
        return;
    lclass *c = &rs->classes[p->cls];
    uint32_t at = p->hpos, last = c->heap[--c->n];
    if (at < c->n) {
        heap_set(rs->pods, c, at, last);
        heap_up(rs->pods, c, at);
        heap_down(rs->pods, c, rs->pods[last].hpos);
    }
    if (c->n == 0) {
        rgroup *g = &rs->groups[p->group];
        uint32_t moved = g->live[--g->nlive];
        g->live[c->slot] = moved;
        rs->classes[moved].slot = c->slot;
        c->slot = -1;
    }
    p->cls = -1;
}

/*
** Puts available Pod pi into the class of its current capacity and usage,
** creating the class the first time that load is seen in the group.
*/
static void class_join(tly_runsched *rs, uint32_t pi)
{
    rpod *p = &rs->pods[pi];
    if (p->res.state != TLY_RPOD_AVAILABLE)
        return;
    /* Key: group, capacity key, then the usage of each advertised resource. */
    size_t len = 2 * sizeof(uint32_t) + p->cap.n * sizeof(tly_i128);
    char stackbuf[512], *k = len <= sizeof stackbuf ? stackbuf : tly_xmalloc(len);
    memcpy(k, &p->group, sizeof(uint32_t));
    memcpy(k + sizeof(uint32_t), &p->capkey, sizeof(uint32_t));
    for (uint32_t c = 0; c < p->cap.n; c++) {
        tly_i128 u = tly_rvec_get(&p->used, p->cap.v[c].id).nanos;
        memcpy(k + 2 * sizeof(uint32_t) + c * sizeof u, &u, sizeof u);
    }
    uintptr_t v = (uintptr_t)tly_strmap_get(&rs->classmap, k, len);
    uint32_t ci;
    if (v) {
        ci = (uint32_t)v - 1;
    } else {
        if (rs->nclasses == rs->capclasses) {
            rs->capclasses = rs->capclasses ? rs->capclasses * 2 : 64;
            rs->classes = tly_xrealloc(rs->classes, rs->capclasses * sizeof *rs->classes);
        }
        ci = rs->nclasses++;
        lclass *c = &rs->classes[ci];
        memset(c, 0, sizeof *c);
        c->slot = -1;
        c->capkey = p->capkey;
        c->nv = p->cap.n;
        c->v = tly_arena_alloc(rs->a, (2 * p->cap.n + 1) * sizeof *c->v);
        for (uint32_t e = 0; e < p->cap.n && c->v; e++) {
            tly_i128 cq = p->cap.v[e].q.nanos, u = tly_rvec_get(&p->used, p->cap.v[e].id).nanos;
            if (cq < 0 || u < 0 || (cq >> 62) || (u >> 62)) {
                c->v = NULL;
                break;
            }
            c->v[2 * e] = (uint64_t)cq;
            c->v[2 * e + 1] = (uint64_t)u;
        }
        char *kept = tly_arena_alloc(rs->a, len);
        memcpy(kept, k, len);
        tly_strmap_put(&rs->classmap, kept, len, (void *)(uintptr_t)(ci + 1));
    }
    if (k != stackbuf)
        free(k);
    lclass *c = &rs->classes[ci];
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 4;
        c->heap = tly_xrealloc(c->heap, c->cap * sizeof *c->heap);
    }
    if (c->n == 0) {
        rgroup *g = &rs->groups[p->group];
        if (g->nlive == g->caplive) {
            g->caplive = g->caplive ? g->caplive * 2 : 8;
            g->live = tly_xrealloc(g->live, g->caplive * sizeof *g->live);
        }
        c->slot = (int32_t)g->nlive;
        g->live[g->nlive++] = ci;
    }
    p->cls = (int32_t)ci;
    c->heap[c->n] = pi;
    p->hpos = c->n++;
    heap_up(rs->pods, c, p->hpos);
}

/* Pod pi's usage or capacity changed: move it to the class that now fits. */
static void reclass(tly_runsched *rs, uint32_t pi)
{
    rs->groups[rs->pods[pi].group].gen++;
    class_leave(rs, pi);
    class_join(rs, pi);
}

static int64_t scheduled_time(const tly_run *r)
{
    const tly_condition *c = tly_conditions_find(&r->conditions, "Scheduled");
    if (c && c->last_transition != TLY_NO_TIME)
        return c->last_transition;
    return r->meta.created;
}

static int cmp_placement(const void *pa, const void *pb, void *ctx)
{
    const rrun *runs = ctx;
    const tly_run *a = runs[*(const uint32_t *)pa].res.run, *b = runs[*(const uint32_t *)pb].res.run;
    if (a->meta.created != b->meta.created)
        return a->meta.created < b->meta.created ? -1 : 1;
    int c = strcmp(a->meta.ns, b->meta.ns);
    return c ? c : strcmp(a->meta.name, b->meta.name);
}

/* (creationTimestamp, index): the placement order when index order is (namespace, name) order. */
static int cmp_created(const void *pa, const void *pb, void *ctx)
{
    const rrun *runs = ctx;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    int64_t ca = runs[a].res.run->meta.created, cb = runs[b].res.run->meta.created;
    if (ca != cb)
        return ca < cb ? -1 : 1;
    return a < b ? -1 : a > b;
}

/*
** Sorts order[0..n) into placement order. A store lists its Runs in
** (namespace, name) order, which makes the index the tie break and spares
** two strcmp per comparison (a third of setup at 100,000 Runs); that order
** is checked here, not assumed.
*/
static void sort_placement(tly_runsched *rs, uint32_t *order, uint32_t n)
{
    bool by_index = true;
    for (uint32_t i = 1; i < n && by_index; i++) {
        const tly_meta *a = &rs->runs[i - 1].res.run->meta, *b = &rs->runs[i].res.run->meta;
        int c = strcmp(a->ns ? a->ns : "", b->ns ? b->ns : "");
        by_index = c < 0 || (c == 0 && strcmp(a->name, b->name) < 0);
    }
    qsort_r(order, n, sizeof *order, by_index ? cmp_created : cmp_placement, rs->runs);
}

tly_runsched *tly_runsched_create(tly_store *s, int64_t now, bool have_clock, tly_diags *d)
{
    tly_runsched *rs = tly_xcalloc(1, sizeof *rs);
    rs->s = s;
    rs->names = tly_store_names(s);
    rs->a = tly_arena_create(64 * 1024);
    rs->scratch = tly_arena_create(4096);
    rs->now = now;
    rs->have_clock = have_clock;
    rs->indexed = true;
    tly_strmap_init(&rs->podmap);
    tly_strmap_init(&rs->groupmap);
    tly_strmap_init(&rs->runmap);
    tly_strmap_init(&rs->classmap);
    tly_strmap_init(&rs->capmap);
    tly_strmap_init(&rs->refmap);

    /* Runtime Pods: every Pod with a `runtime` label. */
    uint32_t np = tly_store_count(s, TLY_K_POD);
    uint32_t nrt = 0;  /* size for the Runtime Pods only: most Pods of a dump are not */
    for (uint32_t i = 0; i < np; i++) {
        const char *rt = tly_kvs_get(&((const tly_pod *)tly_store_at(s, TLY_K_POD, i))->meta.labels,
                                     "runtime");
        nrt += rt && *rt;
    }
    rs->pods = tly_xcalloc(nrt + 1, sizeof *rs->pods);
    for (uint32_t i = 0; i < np; i++) {
        const tly_pod *p = tly_store_at(s, TLY_K_POD, i);
        const char *rt = tly_kvs_get(&p->meta.labels, "runtime");
        if (!rt || !*rt)
            continue;
        rpod *q = &rs->pods[rs->npods];
        q->res.pod = p;
        q->res.runtime = rt;
        q->res.state = tly_runtime_pod_state(p, now, have_clock);
        tly_runtime_pod_capacity(p, rs->names, rs->a, &q->cap, d);
        tly_rvec_init(&q->used);
        tly_rvec_init(&q->res.admitted);
        q->res.capacity = &q->cap;
        q->res.used = &q->used;
        q->rd = tly_runtimed_create(&q->cap);
        q->group = group_of(rs, p->meta.ns, rt, true);
        q->cls = -1;
        q->capkey = capkey_of(rs, q);
        rgroup *g = &rs->groups[q->group];
        g->navail += q->res.state == TLY_RPOD_AVAILABLE;
        g->pods = tly_xrealloc(g->pods, (g->npods + 1) * sizeof *g->pods);
        g->pods[g->npods++] = rs->npods;
        char *k = key2(rs->a, p->meta.ns, p->meta.name);
        tly_strmap_put(&rs->podmap, k, strlen(k), (void *)(uintptr_t)(rs->npods + 1));
        rs->npods++;
    }

    uint32_t nr = tly_store_count(s, TLY_K_RUN);
    rs->runs = tly_xcalloc(nr + 1, sizeof *rs->runs);
    rs->nruns = nr;
    for (uint32_t i = 0; i < nr; i++) {
        rrun *r = &rs->runs[i];
        const tly_run *run = tly_store_at(s, TLY_K_RUN, i);
        r->res.run = run;
        r->res.phase = tly_run_phase_of(run);
        r->res.pod = -1;
        r->res.assigned = (run->assigned_pod && *run->assigned_pod) ? run->assigned_pod : NULL;
        r->key = tly_arena_join(rs->a, run->meta.ns, '/', run->meta.name);
        r->sched_time = scheduled_time(run);
        r->group = run->runtime ? group_of(rs, run->meta.ns, run->runtime, true) : -1;
        if (tly_run_normalized_request(run, rs->a, &r->request, &r->bad) != TLY_OK) {
            r->request.n = 0;
        } else {
            r->bad = NULL;
        }
        char *k = key2(rs->a, run->meta.ns, run->meta.name);
        tly_strmap_put(&rs->runmap, k, strlen(k), (void *)(uintptr_t)(i + 1));
        if (r->res.assigned) {
            char *pk = key2(rs->a, run->meta.ns, r->res.assigned);
            uintptr_t pi = (uintptr_t)tly_strmap_get(&rs->podmap, pk, strlen(pk));
            if (pi)
                r->res.pod = (int32_t)pi - 1;
        }
        /* Active Runs consume their full request on their Pod (an invalid
           request adds nothing, as kruntimes does). */
        if (tly_run_is_active(run) && r->res.pod >= 0 && !r->bad) {
            tly_rvec_add_list(&rs->pods[r->res.pod].used, &r->request);
            r->counted = true;
        }
        /* runtimed re-adopts the Runs it already runs, fitting or not. */
        if ((r->res.phase == TLY_RUN_RUNNING || r->res.phase == TLY_RUN_READY) && r->res.pod >= 0 &&
            !r->bad)
            tly_runtimed_force(rs->pods[r->res.pod].rd, r->key, &r->request);
        if (r->res.phase == TLY_RUN_SCHEDULED && r->res.pod >= 0)
            rs->pods[r->res.pod].dirty = true;
    }
    /* The usage is complete: file the available Pods in their classes. */
    for (uint32_t i = 0; i < rs->npods; i++)
        class_join(rs, i);
    /* Placement order: (creationTimestamp, namespace, name). */
    uint32_t *order = tly_xmalloc((nr + 1) * sizeof *order);
    for (uint32_t i = 0; i < nr; i++)
        order[i] = i;
    sort_placement(rs, order, nr);
    for (uint32_t i = 0; i < nr; i++)
        rs->runs[order[i]].order = i;
    rs->queue = order;  /* reused as the work queue's first contents */
    rs->qcap = nr + 1;
    rs->qtail = nr;
    for (uint32_t i = 0; i < nr; i++)
        rs->runs[i].queued = true;
    return rs;
}

void tly_runsched_destroy(tly_runsched *rs)
{
    if (!rs)
        return;
    for (uint32_t i = 0; i < rs->npods; i++) {
        tly_rvec_free(&rs->pods[i].used);
        tly_rvec_free(&rs->pods[i].res.admitted);
        tly_runtimed_destroy(rs->pods[i].rd);
    }
    for (uint32_t i = 0; i < rs->ngroups; i++) {
        free(rs->groups[i].pods);
        free(rs->groups[i].wait);
        free(rs->groups[i].live);
    }
    for (uint32_t i = 0; i < rs->nclasses; i++) {
        free(rs->classes[i].heap);
        tly_loadkey_free(&rs->classes[i].sum);
    }
    free(rs->classes);
    tly_strmap_free(&rs->classmap);
    tly_strmap_free(&rs->capmap);
    tly_strmap_free(&rs->refmap);
    free(rs->refusals);
    free(rs->groups);
    free(rs->pods);
    free(rs->runs);
    free(rs->queue);
    tly_strmap_free(&rs->podmap);
    tly_strmap_free(&rs->groupmap);
    tly_strmap_free(&rs->runmap);
    tly_arena_destroy(rs->scratch);
    tly_arena_destroy(rs->a);
    free(rs);
}

/* ---- the work queue and wake-ups ------------------------------------------ */

static void enqueue(tly_runsched *rs, uint32_t i)
{
    if (rs->runs[i].queued)
        return;
    if (rs->qtail == rs->qcap) {
        /* Compact, then grow if still full. */
        uint32_t n = rs->qtail - rs->qhead;
        memmove(rs->queue, rs->queue + rs->qhead, n * sizeof *rs->queue);
        rs->qhead = 0;
        rs->qtail = n;
        if (rs->qtail == rs->qcap) {
            rs->qcap = rs->qcap * 2 + 8;
            rs->queue = tly_xrealloc(rs->queue, rs->qcap * sizeof *rs->queue);
        }
    }
    rs->queue[rs->qtail++] = i;
    rs->runs[i].queued = true;
}

static int cmp_order(const void *pa, const void *pb, void *ctx)
{
    const rrun *runs = ctx;
    uint32_t a = runs[*(const uint32_t *)pa].order, b = runs[*(const uint32_t *)pb].order;
    return a < b ? -1 : a > b;
}

/* Capacity may have appeared in group g: its waiting Runs go back on the queue. */
static void wake_group(tly_runsched *rs, int32_t gi)
{
    if (gi < 0)
        return;
    rgroup *g = &rs->groups[gi];
    g->grow++;
    if (g->nwait == 0)
        return;
    qsort_r(g->wait, g->nwait, sizeof *g->wait, cmp_order, rs->runs);
    for (uint32_t k = 0; k < g->nwait; k++) {
        rs->runs[g->wait[k]].waiting = false;
        enqueue(rs, g->wait[k]);
    }
    g->nwait = 0;
}

static void wait_in_group(tly_runsched *rs, uint32_t i)
{
    rrun *r = &rs->runs[i];
    if (r->group < 0 || r->waiting)
        return;
    rgroup *g = &rs->groups[r->group];
    if (g->nwait == g->capwait) {
        g->capwait = g->capwait ? g->capwait * 2 : 8;
        g->wait = tly_xrealloc(g->wait, g->capwait * sizeof *g->wait);
    }
    g->wait[g->nwait++] = i;
    r->waiting = true;
}

/* ---- filter --------------------------------------------------------------- */

/* Is there an active or assumed Run in ns on pod `podname` matching sel? */
static bool hosts_match(const tly_runsched *rs, const char *ns, const char *podname,
                        const tly_selector *sel, uint32_t self)
{
    for (uint32_t j = 0; j < rs->nruns; j++) {
        const rrun *o = &rs->runs[j];
        if (j == self || strcmp(o->res.run->meta.ns, ns) != 0)
            continue;
        bool target = o->assumed || tly_run_is_active(o->res.run) ||
                      o->res.phase == TLY_RUN_SCHEDULED || o->res.phase == TLY_RUN_RUNNING ||
                      o->res.phase == TLY_RUN_READY;
        const char *on = o->res.pod >= 0 ? rs->pods[o->res.pod].res.pod->meta.name : o->res.assigned;
        if (!target || !on)
            continue;
        if (podname && strcmp(on, podname) != 0)
            continue;
        if (tly_selector_matches(sel, &o->res.run->meta.labels))
            return true;
    }
    return false;
}

/* 0 passes, 1 fails required affinity, 2 fails required anti-affinity. */
static int affinity_filter(const tly_runsched *rs, uint32_t i, const tly_pod *pod)
{
    const tly_run *run = rs->runs[i].res.run;
    for (uint32_t t = 0; t < run->naffinity_required; t++) {
        const tly_selector *sel = &run->affinity_required[t].selector;
        if (hosts_match(rs, run->meta.ns, pod->meta.name, sel, i))
            continue;
        /* Seedable: nothing anywhere matches and the Run matches itself. */
        if (!hosts_match(rs, run->meta.ns, NULL, sel, i) &&
            tly_selector_matches(sel, &run->meta.labels))
            continue;
        return 1;
    }
    for (uint32_t t = 0; t < run->nanti_required; t++)
        if (hosts_match(rs, run->meta.ns, pod->meta.name, &run->anti_required[t].selector, i))
            return 2;
    return 0;
}

static int64_t preferred_raw(const tly_runsched *rs, uint32_t i, const tly_pod *pod)
{
    const tly_run *run = rs->runs[i].res.run;
    int64_t raw = 0;
    for (uint32_t t = 0; t < run->naffinity_preferred; t++)
        if (hosts_match(rs, run->meta.ns, pod->meta.name, &run->affinity_preferred[t].selector, i))
            raw += run->affinity_preferred[t].weight;
    for (uint32_t t = 0; t < run->nanti_preferred; t++)
        if (!hosts_match(rs, run->meta.ns, pod->meta.name, &run->anti_preferred[t].selector, i))
            raw += run->anti_preferred[t].weight;
    return raw;
}

/* ---- score ---------------------------------------------------------------- */

typedef struct {
    uint32_t pod;
    tly_frac max;       /* highest projected ratio (unreduced) */
    tly_loadkey key;
    int64_t total;
} cand;

static void load_key(const rpod *p, const tly_rlist *req, tly_loadkey *k)
{
    tly_loadkey_init(k);
    for (uint32_t c = 0; c < p->cap.n; c++) {
        const tly_rq *cap = &p->cap.v[c];
        if (tly_qty_sign(cap->q) <= 0)
            continue;
        tly_qty used;
        if (tly_qty_add(tly_rvec_get(&p->used, cap->id), tly_rlist_get(req, cap->id, NULL),
                        &used) != TLY_OK)
            continue;
        if (tly_qty_sign(used) <= 0)
            continue;
        tly_loadkey_add(k, tly_frac_make(used.nanos, cap->q.nanos));
    }
}

static int cmp_cand_key(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    int c = tly_loadkey_cmp(&a->key, &b->key);
    /* Stable: equal keys keep name order (candidates come in name order). */
    return c ? c : (a->pod < b->pod ? -1 : a->pod > b->pod);
}

/*
** Filter and the first half of the score in one pass over the Pod's
** capacity (both lists are sorted by id): does every positive request fit
** (usage + request <= capacity; a resource the Pod does not advertise never
** fits), and what is the highest projected ratio (usage + request) /
** capacity over the advertised resources? The ratio is left unreduced:
** exact comparison does not need lowest terms, and skipping the gcd is what
** keeps the common case cheap.
*/
static bool fit_max(const rpod *p, const tly_rlist *req, tly_frac *max)
{
    tly_frac best = {0, 1};
    uint32_t j = 0;
    for (uint32_t c = 0; c < p->cap.n; c++) {
        const tly_rq *cap = &p->cap.v[c];
        tly_i128 rq = 0;
        for (; j < req->n && req->v[j].id < cap->id; j++)
            if (req->v[j].q.nanos > 0)
                return false;
        if (j < req->n && req->v[j].id == cap->id)
            rq = req->v[j++].q.nanos;
        tly_i128 u = cap->id < p->used.n ? p->used.v[cap->id].nanos : 0, used;
        if (__builtin_add_overflow(u, rq, &used))
            return false;
        if (rq > 0 && used > cap->q.nanos)
            return false;
        if (cap->q.nanos <= 0 || used <= 0)
            continue;
        tly_frac f = {(tly_u128)used, (tly_u128)cap->q.nanos};
        if (tly_frac_cmp(f, best) > 0)
            best = f;
    }
    for (; j < req->n; j++)
        if (req->v[j].q.nanos > 0)
            return false;
    *max = best;
    return true;
}

/*
** A Run's request laid out along one capacity list (capkey): the amount per
** advertised resource, and whether the request can fit at all (it asks
** nothing positive that the list lacks, and every amount is below 2^62).
** Built once per Run and capacity list, then shared by every class of it.
*/
typedef struct {
    uint32_t capkey;
    bool valid, possible;
    uint64_t *amt;
    int32_t *at;            /* per request entry: its index in the capacity list, or -1 */
} aligned_req;

static void align_request(tly_arena *a, const tly_rlist *capl, uint32_t capkey,
                          const tly_rlist *req, aligned_req *out)
{
    out->capkey = capkey;
    out->valid = true;
    out->possible = true;
    out->amt = tly_arena_zalloc(a, (capl->n + 1) * sizeof *out->amt);
    out->at = tly_arena_alloc(a, (req->n + 1) * sizeof *out->at);
    for (uint32_t q = 0; q < req->n; q++)
        out->at[q] = -1;
    uint32_t j = 0;
    for (uint32_t c = 0; c < capl->n; c++) {
        for (; j < req->n && req->v[j].id < capl->v[c].id; j++)
            if (req->v[j].q.nanos > 0)
                out->possible = false;
        if (j < req->n && req->v[j].id == capl->v[c].id) {
            out->at[j] = (int32_t)c;
            tly_i128 q = req->v[j++].q.nanos;
            if (q < 0 || (q >> 62))
                out->valid = false;
            else
                out->amt[c] = (uint64_t)q;
        }
    }
    for (; j < req->n; j++)
        if (req->v[j].q.nanos > 0)
            out->possible = false;
}

/*
** fit_max() on a class whose values all lie in [0, 2^62), with the request
** aligned to its capacity list: 64-bit sums and one 128-bit cross product
** per resource. Gives exactly what fit_max() gives on any of its Pods.
*/
static bool fit_small(const lclass *c, const aligned_req *ar, tly_frac *max)
{
    if (!ar->possible)
        return false;
    uint64_t bn = 0, bd = 1;
    for (uint32_t e = 0; e < c->nv; e++) {
        uint64_t cap = c->v[2 * e], t = c->v[2 * e + 1] + ar->amt[e];
        if (ar->amt[e] > 0 && t > cap)
            return false;
        if (cap == 0 || t == 0)
            continue;
        if ((tly_u128)t * bd > (tly_u128)bn * cap) {
            bn = t;
            bd = cap;
        }
    }
    *max = (tly_frac){bn, bd};
    return true;
}

/*
** The sum of Pod p's projected ratios as one unreduced fraction, in whole
** units: den = the product of the capacities, num = the sum of each usage
** times the other capacities. Exact; false when a value is not a whole
** number of units below 2^32 or the product would overflow, and the caller
** falls back to the general (gcd and bignum) sum of ratio.h. Ties on the
** highest ratio are common (balanced Pods), and this keeps them cheap.
*/
static bool sum_units(const rpod *p, const tly_rlist *req, tly_frac *out)
{
    const uint64_t unit = 1000000000;
    uint64_t used[16], cap[16];
    uint32_t n = 0;
    for (uint32_t c = 0; c < p->cap.n; c++) {
        const tly_rq *e = &p->cap.v[c];
        if (e->q.nanos <= 0)
            continue;
        tly_i128 u = tly_rvec_get(&p->used, e->id).nanos + tly_rlist_get(req, e->id, NULL).nanos;
        if (u <= 0)
            continue;
        /* 64-bit arithmetic: 128-bit division is a library call. */
        if (n == 16 || (e->q.nanos >> 62) || (u >> 62))
            return false;
        uint64_t c64 = (uint64_t)e->q.nanos, u64 = (uint64_t)u;
        if (c64 % unit || u64 % unit || c64 / unit >= (1ull << 32) || u64 / unit >= (1ull << 32))
            return false;
        cap[n] = c64 / unit;
        used[n++] = u64 / unit;
    }
    tly_u128 den = 1, num = 0;
    for (uint32_t i = 0; i < n; i++)
        if (__builtin_mul_overflow(den, (tly_u128)cap[i], &den))
            return false;
    for (uint32_t i = 0; i < n; i++) {
        tly_u128 term = used[i];
        for (uint32_t j = 0; j < n; j++)
            if (j != i && __builtin_mul_overflow(term, (tly_u128)cap[j], &term))
                return false;
        if (__builtin_add_overflow(num, term, &num))
            return false;
    }
    *out = (tly_frac){num, den};
    return true;
}

/*
** Sum of ratios of candidate k against the best so far (-1, 0, 1), exactly.
** The best's sum is computed once per best (*bs, *have).
*/
/*
** The current ratios of class ci (max and sum over the advertised resources
** in use), computed once: a class's load never changes.
*/
static const tly_loadkey *class_sum(const tly_runsched *rs, int32_t ci)
{
    lclass *c = &rs->classes[ci];
    if (!c->have_sum) {
        const tly_rlist none = {0};
        load_key(&rs->pods[c->heap[0]], &none, &c->sum);
        c->have_sum = true;
    }
    return &c->sum;
}

/*
** Sum of ratios of candidate k against the best so far (-1, 0, 1), exactly,
** once their highest ratios are equal. Pods of one class have equal sums.
** Pods with the same capacity list get the same addition from the request,
** so their sums compare as their classes' cached ones do. Otherwise both sums
** are computed (the best's once per best: *bs, *have).
*/
static int cmp_sums(const tly_runsched *rs, const rpod *k, const rpod *best,
                    const tly_rlist *req, tly_frac *bs, int *have)
{
    if (rs->indexed && k->cls >= 0 && k->cls == best->cls)
        return 0;
    if (rs->indexed && k->cls >= 0 && best->cls >= 0 && k->capkey == best->capkey)
        return tly_loadkey_cmp_sum(class_sum(rs, k->cls), class_sum(rs, best->cls));
    if (*have == 0)
        *have = sum_units(best, req, bs) ? 1 : -1;
    tly_frac fk;
    if (*have == 1 && sum_units(k, req, &fk))
        return tly_frac_cmp(fk, *bs);
    tly_loadkey ka, kb;
    load_key(k, req, &ka);
    load_key(best, req, &kb);
    /* The maxima are equal here, so the key comparison is the sums'. */
    int c = tly_loadkey_cmp(&ka, &kb);
    tly_loadkey_free(&ka);
    tly_loadkey_free(&kb);
    return c;
}

/*
** The seed's rule over the candidates: the least highest ratio; on a tie
** the least sum of ratios (computed only then); on a tie the earlier name
** (the lower Pod index: candidates from the class index come in no order).
*/
static uint32_t choose_least_loaded(const tly_runsched *rs, uint32_t i, const cand *c, uint32_t n)
{
    const tly_rlist *req = &rs->runs[i].request;
    uint32_t best = 0;
    tly_frac best_sum;
    int have = 0; /* 0 not computed, 1 in best_sum, -1 needs the general path */
    for (uint32_t k = 1; k < n; k++) {
        int cmp = tly_frac_cmp(c[k].max, c[best].max);
        if (cmp > 0)
            continue;
        if (cmp == 0) {
            int sc = cmp_sums(rs, &rs->pods[c[k].pod], &rs->pods[c[best].pod], req, &best_sum,
                              &have);
            if (sc > 0 || (sc == 0 && c[k].pod > c[best].pod))
                continue;
        }
        best = k;
        have = 0;
    }
    return c[best].pod;
}

/* Chooses among n candidates; returns the Pod index. */
static uint32_t choose(const tly_runsched *rs, uint32_t i, cand *c, uint32_t n)
{
    const tly_run *run = rs->runs[i].res.run;
    if (run->naffinity_preferred == 0 && run->nanti_preferred == 0)
        return choose_least_loaded(rs, i, c, n);
    /* kruntimes' aggregation: rank-normalised LeastLoaded + PreferredRunAffinity. */
    for (uint32_t k = 0; k < n; k++)
        load_key(&rs->pods[c[k].pod], &rs->runs[i].request, &c[k].key);
    qsort(c, n, sizeof *c, cmp_cand_key);
    for (uint32_t k = 0, start = 0; k < n; k++) {
        if (k > 0 && tly_loadkey_cmp(&c[k].key, &c[k - 1].key) != 0)
            start = k;
        c[k].total = n == 1 ? 100 : (int64_t)(n - 1 - start) * 100 / (int64_t)(n - 1);
    }
    int64_t max = 0;
    int64_t *raw = tly_xmalloc(n * sizeof *raw);
    for (uint32_t k = 0; k < n; k++) {
        raw[k] = preferred_raw(rs, i, rs->pods[c[k].pod].res.pod);
        if (raw[k] > max)
            max = raw[k];
    }
    for (uint32_t k = 0; k < n; k++)
        c[k].total += max > 0 ? raw[k] * 100 / max : 0;
    free(raw);
    uint32_t best = 0;
    for (uint32_t k = 1; k < n; k++) {
        const char *nb = rs->pods[c[best].pod].res.pod->meta.name;
        const char *nk = rs->pods[c[k].pod].res.pod->meta.name;
        if (c[k].total > c[best].total || (c[k].total == c[best].total && strcmp(nk, nb) < 0))
            best = k;
    }
    uint32_t pod = c[best].pod;
    for (uint32_t k = 0; k < n; k++)
        tly_loadkey_free(&c[k].key);
    return pod;
}

/* ---- one scheduling cycle -------------------------------------------------- */

static void set_pending(tly_runsched *rs, uint32_t i, const char *reason, char *message)
{
    rrun *r = &rs->runs[i];
    r->res.reason = reason;
    r->res.message = message;
    wait_in_group(rs, i);
}

static char *qty_text(tly_arena *a, tly_qty q)
{
    char buf[TLY_QTY_BUFSZ];
    tly_qty_format(q, buf, sizeof buf);
    return tly_arena_strdup(a, buf);
}

/* Does request entry req block Pod p: usage + request above capacity (0 when not advertised)? */
static bool pod_blocked(const rpod *p, const tly_rq *req)
{
    tly_qty total;
    return tly_qty_add(tly_rvec_get(&p->used, req->id), req->q, &total) != TLY_OK ||
           tly_qty_cmp(total, tly_rlist_get(&p->cap, req->id, NULL)) > 0;
}

/*
** Counts, per entry of request r, the available Pods of group g it blocks
** (count[q]). The reference scan asks every Pod; the index asks each live
** class once, since its members share capacity and the usage of everything
** they advertise, with the aligned 64-bit values when the class has them. An
** entry the class does not advertise depends on usage outside the class key,
** so its members are asked one by one.
*/
static void count_blocked(tly_runsched *rs, const rrun *r, const rgroup *g, uint32_t *count)
{
    const tly_rlist *req = &r->request;
    if (!rs->indexed) {
        for (uint32_t k = 0; k < g->npods; k++) {
            const rpod *p = &rs->pods[g->pods[k]];
            if (p->res.state != TLY_RPOD_AVAILABLE)
                continue;
            for (uint32_t q = 0; q < req->n; q++)
                count[q] += pod_blocked(p, &req->v[q]);
        }
        return;
    }
    tly_arena_reset(rs->scratch);
    aligned_req ar = {0};
    for (uint32_t k = 0; k < g->nlive; k++) {
        const lclass *lc = &rs->classes[g->live[k]];
        const rpod *rep = &rs->pods[lc->heap[0]];
        if (!ar.amt || ar.capkey != lc->capkey)
            align_request(rs->scratch, &rep->cap, lc->capkey, req, &ar);
        for (uint32_t q = 0; q < req->n; q++) {
            int32_t e = ar.at[q];
            if (e >= 0 && lc->v && ar.valid) {
                count[q] += lc->v[2 * e + 1] + ar.amt[e] > lc->v[2 * e] ? lc->n : 0;
            } else if (e >= 0) {
                count[q] += pod_blocked(rep, &req->v[q]) ? lc->n : 0;
            } else {
                for (uint32_t m = 0; m < lc->n; m++)
                    count[q] += pod_blocked(&rs->pods[lc->heap[m]], &req->v[q]);
            }
        }
    }
}

/*
** The most of resource id free on one available Pod of group g (*most), and
** whether any available Pod advertises it. Members of a class have the same
** capacity and usage of what they advertise, so the index asks one per class:
** its first Pod by name, as the reference scan would find it first.
*/
static bool most_free(tly_runsched *rs, const rgroup *g, uint32_t id, tly_qty *most)
{
    bool advertised = false, any = false;
    uint32_t n = rs->indexed ? g->nlive : g->npods, at = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t pi = rs->indexed ? rs->classes[g->live[k]].heap[0] : g->pods[k];
        const rpod *p = &rs->pods[pi];
        if (p->res.state != TLY_RPOD_AVAILABLE)
            continue;
        bool found;
        tly_qty cap = tly_rlist_get(&p->cap, id, &found);
        if (!found)
            continue;
        advertised = true;
        tly_qty free_q;
        if (tly_qty_sub(cap, tly_rvec_get(&p->used, id), &free_q) != TLY_OK)
            continue;
        /* Equal amounts: the first Pod by name, whose quantity's format is the one shown. */
        int c = any ? tly_qty_cmp(free_q, *most) : 1;
        if (c > 0 || (c == 0 && pi < at)) {
            *most = free_q;
            at = pi;
        }
        any = true;
    }
    return advertised;
}

/*
** Explains why no available Pod fits: the resource that blocked the most
** Pods (ties by name), with the most that any Pod has free.
*/
static char *capacity_message(tly_runsched *rs, uint32_t i, const rgroup *g)
{
    const rrun *r = &rs->runs[i];
    uint32_t stackcount[16], *count = r->request.n <= 16 ? stackcount : tly_xmalloc(r->request.n * sizeof *count);
    memset(count, 0, r->request.n * sizeof *count);
    count_blocked(rs, r, g, count);
    uint32_t best_id = TLY_NAME_NONE, best_count = 0;
    for (uint32_t q = 0; q < r->request.n; q++) {
        const tly_rq *req = &r->request.v[q];
        const char *name = tly_names_str(rs->names, req->id);
        if (count[q] > best_count ||
            (count[q] == best_count && count[q] > 0 && strcmp(name, tly_names_str(rs->names, best_id)) < 0)) {
            best_count = count[q];
            best_id = req->id;
        }
    }
    if (count != stackcount)
        free(count);
    if (best_id == TLY_NAME_NONE)
        return tly_arena_printf(rs->a, "no available Runtime Pod of runtime \"%s\" fits the Run",
                                g->runtime);
    const char *name = tly_names_str(rs->names, best_id);
    tly_qty most = {0, TLY_QFMT_DECIMAL_SI};
    if (!most_free(rs, g, best_id, &most))
        return tly_arena_printf(rs->a,
                                "no available Runtime Pod of runtime \"%s\" advertises %s",
                                g->runtime, name);
    if (tly_qty_sign(most) < 0)
        most = (tly_qty){0, TLY_QFMT_DECIMAL_SI};
    return tly_arena_printf(rs->a,
                            "no available Runtime Pod of runtime \"%s\" has room for %s "
                            "(requested %s, the most free on one Pod is %s)",
                            g->runtime, name,
                            qty_text(rs->a, tly_rlist_get(&r->request, best_id, NULL)),
                            qty_text(rs->a, most));
}

static char *unavailable_message(tly_runsched *rs, const rgroup *g)
{
    uint32_t counts[TLY_RPOD_STALE_HEARTBEAT + 1] = {0};
    for (uint32_t k = 0; k < g->npods; k++)
        counts[rs->pods[g->pods[k]].res.state]++;
    char buf[256];
    size_t len = 0;
    for (int st = TLY_RPOD_NOT_RUNNING; st <= TLY_RPOD_STALE_HEARTBEAT; st++) {
        if (!counts[st])
            continue;
        int n = snprintf(buf + len, sizeof buf - len, "%s%u %s", len ? ", " : "", counts[st],
                         tly_rpod_state_text((tly_rpod_state)st));
        if (n > 0 && (size_t)n < sizeof buf - len)
            len += (size_t)n;
    }
    return tly_arena_printf(rs->a, "no available Runtime Pod for runtime \"%s\" (%u %s: %s)",
                            g->runtime, g->npods, g->npods == 1 ? "Pod" : "Pods", buf);
}

/*
** The checks kruntimes' scheduler makes before it looks at any Pod, in its
** order (kruntimes-facts 3.1): a cancel request ends the Run Cancelled, an
** invalid request Failed/InvalidResources, an affinity it cannot compile
** Failed with no reason (its scheduler writes only the phase and message).
** Returns whether the Run ended.
*/
static bool prefilter_ends(tly_runsched *rs, rrun *r)
{
    const tly_run *run = r->res.run;
    if (run->cancel_requested) {
        r->res.phase = TLY_RUN_CANCELLED;
        r->res.reason = TLY_REASON_CANCELLED;
        r->res.message = TLY_MESSAGE_CANCELLED;
        return true;
    }
    if (r->bad) {
        r->res.phase = TLY_RUN_FAILED;
        r->res.reason = TLY_REASON_INVALID_RESOURCES;
        r->res.message = tly_arena_printf(rs->a, "resource request \"%s\" must be a non-negative integer",
                                          r->bad);
        return true;
    }
    if (run->affinity_error) {
        r->res.phase = TLY_RUN_FAILED;
        r->res.message = run->affinity_error;
        return true;
    }
    return false;
}

/*
** The failure memo's entry for Run r's request in its group (refusal, at the
** top), created empty when the request is new there. The pointer is good
** until the next entry is created.
*/
static refusal *refusal_of(tly_runsched *rs, const rrun *r)
{
    /* The group, then the request as rlist_key lays it out. */
    size_t len = sizeof r->group + r->request.n * RLIST_KEY_STEP;
    char stackbuf[512], *k = len <= sizeof stackbuf ? stackbuf : tly_xmalloc(len);
    memcpy(k, &r->group, sizeof r->group);
    rlist_key(k + sizeof r->group, &r->request);
    uintptr_t v = (uintptr_t)tly_strmap_get(&rs->refmap, k, len);
    if (!v) {
        if (rs->nrefusals == rs->caprefusals) {
            rs->caprefusals = rs->caprefusals ? rs->caprefusals * 2 : 16;
            rs->refusals = tly_xrealloc(rs->refusals, rs->caprefusals * sizeof *rs->refusals);
        }
        rs->refusals[rs->nrefusals] = (refusal){UINT64_MAX, UINT64_MAX, NULL};
        char *kept = tly_arena_alloc(rs->a, len);
        memcpy(kept, k, len);
        v = ++rs->nrefusals;
        tly_strmap_put(&rs->refmap, kept, len, (void *)v);
    }
    if (k != stackbuf)
        free(k);
    return &rs->refusals[v - 1];
}

/*
** Whether the failure memo refuses Run i (no affinity terms) without a
** scan: an equal request found no room in its group and no room has
** appeared since. Then the Run is left Pending with the message of the
** group's current state, made again only when the group changed.
*/
static bool refused_before(tly_runsched *rs, uint32_t i, const rgroup *g)
{
    refusal *f = refusal_of(rs, &rs->runs[i]);
    if (f->grow != g->grow || g->navail == 0)
        return false;
    if (f->gen != g->gen) {
        f->message = capacity_message(rs, i, g);
        f->gen = g->gen;
    }
    set_pending(rs, i, TLY_REASON_INSUFFICIENT_CAPACITY, f->message);
    return true;
}

int32_t tly_runsched_reserve(tly_runsched *rs, uint32_t i)
{
    rrun *r = &rs->runs[i];
    rs->cycles++;
    if (r->res.phase != TLY_RUN_PENDING || r->assumed)
        return -1;
    const tly_run *run = r->res.run;
    r->res.reason = NULL;
    r->res.message = NULL;
    if (!run->runtime)
        return -1;  /* kruntimes skips a Run without spec.runtime */
    if (prefilter_ends(rs, r))
        return -1;
    if (r->group < 0)
        return -1;
    rgroup *g = &rs->groups[r->group];
    if (g->npods == 0) {
        set_pending(rs, i, TLY_REASON_PODS_UNAVAILABLE,
                    tly_arena_printf(rs->a,
                                     "no Runtime Pods for runtime \"%s\" (no Pod labelled "
                                     "runtime=%s in namespace %s)",
                                     g->runtime, g->runtime, g->ns));
        return -1;
    }
    bool by_class = rs->indexed && run->naffinity_required == 0 && run->nanti_required == 0 &&
                    run->naffinity_preferred == 0 && run->nanti_preferred == 0;
    if (by_class && refused_before(rs, i, g))
        return -1;
    cand *c = tly_xmalloc((g->npods + 1) * sizeof *c);
    uint32_t n = 0, navail = 0, naff = 0, nanti = 0;
    if (by_class) {
        /* The index: one candidate per live class, its first Pod by name. */
        navail = g->navail;
        tly_arena_reset(rs->scratch);
        aligned_req ar = {0};
        for (uint32_t k = 0; k < g->nlive; k++) {
            const lclass *lc = &rs->classes[g->live[k]];
            uint32_t pi = lc->heap[0];
            tly_frac max;
            if (lc->v && (!ar.amt || ar.capkey != lc->capkey))
                align_request(rs->scratch, &rs->pods[pi].cap, lc->capkey, &r->request, &ar);
            if (lc->v && ar.valid ? !fit_small(lc, &ar, &max)
                                  : !fit_max(&rs->pods[pi], &r->request, &max))
                continue;
            c[n].pod = pi;
            c[n++].max = max;
        }
    }
    for (uint32_t k = 0; !by_class && k < g->npods; k++) {
        rpod *p = &rs->pods[g->pods[k]];
        if (p->res.state != TLY_RPOD_AVAILABLE)
            continue;
        navail++;
        tly_frac max;
        if (!fit_max(p, &r->request, &max))
            continue;
        int af = affinity_filter(rs, i, p->res.pod);
        if (af == 1) {
            naff++;
            continue;
        }
        if (af == 2) {
            nanti++;
            continue;
        }
        c[n].pod = g->pods[k];
        c[n++].max = max;
    }
    if (n == 0) {
        free(c);
        if (navail == 0)
            set_pending(rs, i, TLY_REASON_PODS_UNAVAILABLE, unavailable_message(rs, g));
        else if (naff)
            set_pending(rs, i, TLY_REASON_UNSATISFIED_AFFINITY,
                        tly_arena_printf(rs->a,
                                         "no available Runtime Pod of runtime \"%s\" with room "
                                         "for the Run satisfies its required Run affinity",
                                         g->runtime));
        else if (nanti)
            set_pending(rs, i, TLY_REASON_UNSATISFIED_ANTI_AFFINITY,
                        tly_arena_printf(rs->a,
                                         "every available Runtime Pod of runtime \"%s\" with room "
                                         "for the Run violates its required Run anti-affinity",
                                         g->runtime));
        else {
            char *why = capacity_message(rs, i, g);
            if (by_class)
                *refusal_of(rs, r) = (refusal){g->grow, g->gen, why};
            set_pending(rs, i, TLY_REASON_INSUFFICIENT_CAPACITY, why);
        }
        return -1;
    }
    uint32_t pod = choose(rs, i, c, n);
    free(c);
    /* Reserve: re-check on the chosen Pod, then assume the request there. */
    rpod *p = &rs->pods[pod];
    if (!tly_rvec_fits(&p->used, &r->request, &p->cap, NULL))
        return -1;
    tly_rvec_add_list(&p->used, &r->request);
    reclass(rs, pod);
    r->counted = true;
    r->assumed = true;
    r->res.pod = (int32_t)pod;
    return (int32_t)pod;
}

void tly_runsched_bind(tly_runsched *rs, uint32_t i)
{
    rrun *r = &rs->runs[i];
    if (!r->assumed)
        return;
    r->assumed = false;
    r->res.phase = TLY_RUN_SCHEDULED;
    r->res.assigned = rs->pods[r->res.pod].res.pod->meta.name;
    r->res.placed = true;
    r->sched_time = rs->have_clock ? rs->now : 0;
    rs->pods[r->res.pod].dirty = true;
}

static void uncount(tly_runsched *rs, rrun *r)
{
    if (r->counted && r->res.pod >= 0) {
        tly_rvec_sub_list(&rs->pods[r->res.pod].used, &r->request);
        reclass(rs, (uint32_t)r->res.pod);
        r->counted = false;
    }
}

void tly_runsched_bind_failed(tly_runsched *rs, uint32_t i)
{
    rrun *r = &rs->runs[i];
    if (!r->assumed)
        return;
    uncount(rs, r);
    r->assumed = false;
    int32_t g = rs->pods[r->res.pod].group;
    r->res.pod = -1;
    wake_group(rs, g);
    enqueue(rs, i);
}

/* ---- runtimed admission ----------------------------------------------------- */

static int cmp_sched(const void *pa, const void *pb, void *ctx)
{
    const rrun *runs = ctx;
    const rrun *a = &runs[*(const uint32_t *)pa], *b = &runs[*(const uint32_t *)pb];
    if (a->sched_time != b->sched_time)
        return a->sched_time < b->sched_time ? -1 : 1;
    return strcmp(a->res.run->meta.name, b->res.run->meta.name);
}

/*
** Pod pi's runtimed admits its Scheduled Runs, sched[0..n) (index order;
** sorted here), oldest Scheduled first.
*/
static void admit_pod(tly_runsched *rs, uint32_t pi, uint32_t *sched, uint32_t n)
{
    rpod *p = &rs->pods[pi];
    p->dirty = false;
    /* The waiters are re-checked with the rest; the list only records them. */
    char **keys;
    uint32_t nk = tly_runtimed_take_waiters(p->rd, &keys);
    tly_runtimed_free_keys(keys, nk);
    qsort_r(sched, n, sizeof *sched, cmp_sched, rs->runs);
    for (uint32_t k = 0; k < n; k++) {
        rrun *r = &rs->runs[sched[k]];
        if (p->res.state != TLY_RPOD_AVAILABLE) {
            r->res.reason = NULL;
            r->res.message = tly_arena_printf(
                rs->a, "assigned to Runtime Pod %s, which is %s: runtimed admits the Run when it is available",
                p->res.pod->meta.name, tly_rpod_state_text(p->res.state));
            continue;
        }
        if (r->res.run->cancel_requested) {
            /* runtimed ends a cancelled Run before its capacity check, without claiming it. */
            tly_runsched_finish(rs, sched[k], TLY_RUN_CANCELLED);
            r->res.reason = TLY_REASON_CANCELLED;
            r->res.message = TLY_MESSAGE_CANCELLED;
            continue;
        }
        if (r->bad) {
            /* kruntimes' scheduler would have failed it; runtimed cannot size it. */
            r->res.reason = NULL;
            r->res.message = tly_arena_printf(rs->a, "resource request \"%s\" must be a non-negative integer; runtimed cannot admit it", r->bad);
            continue;
        }
        uint32_t bad = TLY_NAME_NONE;
        int rc = tly_runtimed_reserve(p->rd, r->key, &r->request, &bad);
        if (rc == TLY_OK) {
            r->res.phase = TLY_RUN_RUNNING;
            r->res.reason = NULL;
            r->res.message = NULL;
            r->res.admitted = true;
            continue;
        }
        tly_runtimed_wait(p->rd, r->key);
        tly_rvec use;
        tly_rvec_init(&use);
        tly_runtimed_usage(p->rd, &use);
        tly_qty free_q;
        if (tly_qty_sub(tly_rlist_get(&p->cap, bad, NULL), tly_rvec_get(&use, bad), &free_q) != TLY_OK ||
            tly_qty_sign(free_q) < 0)
            free_q = (tly_qty){0, TLY_QFMT_DECIMAL_SI};
        tly_rvec_free(&use);
        r->res.reason = TLY_REASON_INSUFFICIENT_LOCAL;
        r->res.message = tly_arena_printf(
            rs->a, "runtimed on %s has no room for %s (requested %s, %s free); the Run stays Scheduled until a local Run ends or capacity changes",
            p->res.pod->meta.name, tly_names_str(rs->names, bad),
            qty_text(rs->a, tly_rlist_get(&r->request, bad, NULL)), qty_text(rs->a, free_q));
    }
}

/*
** Every dirty Pod admits its Scheduled Runs. The Runs are filed by Pod once
** (a counting sort in index order), not looked for in every Run per Pod:
** admitting on one Pod changes only that Pod's Runs, so the lists stay true.
** Returns whether any Pod was dirty.
*/
static bool admit_dirty(tly_runsched *rs)
{
    uint32_t first = 0;
    while (first < rs->npods && !rs->pods[first].dirty)
        first++;
    if (first == rs->npods)
        return false;
    uint32_t *start = tly_xcalloc(rs->npods + 2, sizeof *start);
    uint32_t *byp = tly_xmalloc((rs->nruns + 1) * sizeof *byp);
    for (uint32_t i = 0; i < rs->nruns; i++) {
        const rrun *r = &rs->runs[i];
        if (r->res.pod >= 0 && r->res.phase == TLY_RUN_SCHEDULED && !r->assumed)
            start[r->res.pod + 2]++;
    }
    for (uint32_t p = 0; p < rs->npods; p++)
        start[p + 2] += start[p + 1];
    for (uint32_t i = 0; i < rs->nruns; i++) {
        const rrun *r = &rs->runs[i];
        if (r->res.pod >= 0 && r->res.phase == TLY_RUN_SCHEDULED && !r->assumed)
            byp[start[r->res.pod + 1]++] = i;
    }
    /* start[p] .. start[p + 1] are now Pod p's Runs. */
    for (uint32_t p = first; p < rs->npods; p++)
        if (rs->pods[p].dirty)
            admit_pod(rs, p, byp + start[p], start[p + 1] - start[p]);
    free(byp);
    free(start);
    return true;
}

/* ---- the loop and events ---------------------------------------------------- */

void tly_runsched_run(tly_runsched *rs)
{
    for (;;) {
        while (rs->qhead < rs->qtail) {
            uint32_t i = rs->queue[rs->qhead++];
            rs->runs[i].queued = false;
            if (tly_runsched_reserve(rs, i) >= 0)
                tly_runsched_bind(rs, i);
        }
        bool any = admit_dirty(rs);
        if (!any || rs->qhead == rs->qtail)
            break;
    }
}

void tly_runsched_finish(tly_runsched *rs, uint32_t i, tly_run_phase terminal)
{
    rrun *r = &rs->runs[i];
    bool was_active = r->counted || r->assumed;
    uncount(rs, r);
    r->assumed = false;
    r->res.phase = terminal;
    r->res.reason = NULL;
    r->res.message = NULL;
    if (r->res.pod >= 0) {
        rpod *p = &rs->pods[r->res.pod];
        if (tly_runtimed_release(p->rd, r->key) || tly_runtimed_has_waiters(p->rd))
            p->dirty = true;
        if (was_active)
            wake_group(rs, p->group);
    }
}

void tly_runsched_set_capacity(tly_runsched *rs, uint32_t pod, const tly_rlist *capacity)
{
    rpod *p = &rs->pods[pod];
    p->cap.v = tly_arena_alloc(rs->a, (capacity->n + 1) * sizeof *p->cap.v);
    if (capacity->n)
        memcpy(p->cap.v, capacity->v, capacity->n * sizeof *p->cap.v);
    p->cap.n = capacity->n;
    p->capkey = capkey_of(rs, p);
    reclass(rs, pod);
    tly_runtimed_set_capacity(p->rd, &p->cap);
    p->dirty = true;
    wake_group(rs, p->group);
}

/* ---- results ------------------------------------------------------------------ */

void tly_runsched_set_indexed(tly_runsched *rs, bool on) { rs->indexed = on; }

uint32_t tly_runsched_nruns(const tly_runsched *rs) { return rs->nruns; }

const tly_rs_run_result *tly_runsched_run_at(const tly_runsched *rs, uint32_t i)
{
    return i < rs->nruns ? &rs->runs[i].res : NULL;
}

uint32_t tly_runsched_npods(const tly_runsched *rs) { return rs->npods; }

const tly_rs_pod_result *tly_runsched_pod_at(tly_runsched *rs, uint32_t i)
{
    if (i >= rs->npods)
        return NULL;
    rpod *p = &rs->pods[i];
    tly_rvec_clear(&p->res.admitted);
    tly_runtimed_usage(p->rd, &p->res.admitted);
    return &p->res;
}

/* The index stored under key2(ns, name) in map, or -1. */
static int32_t find_in(const tly_strmap *map, const char *ns, const char *name)
{
    char buf[512];
    int len = snprintf(buf, sizeof buf, "%s\x1f%s", ns, name);
    if (len < 0 || (size_t)len >= sizeof buf)
        return -1;
    uintptr_t v = (uintptr_t)tly_strmap_get(map, buf, (size_t)len);
    return (int32_t)v - 1;
}

int32_t tly_runsched_find_run(const tly_runsched *rs, const char *ns, const char *name)
{
    return find_in(&rs->runmap, ns, name);
}

int32_t tly_runsched_find_pod(const tly_runsched *rs, const char *ns, const char *name)
{
    return find_in(&rs->podmap, ns, name);
}

uint64_t tly_runsched_cycles(const tly_runsched *rs) { return rs->cycles; }

/* ---- explanations ------------------------------------------------------------ */

static const char *qfmt_buf(tly_qty q, char *buf)
{
    tly_qty_format(q, buf, TLY_QTY_BUFSZ);
    return buf;
}

/* num/den as a decimal with three digits (display only; decisions use ratio.h). */
static void ratio_text(tly_i128 num, tly_i128 den, char *buf, size_t len)
{
    if (den <= 0) {
        snprintf(buf, len, "-");
        return;
    }
    tly_i128 t = num * 1000 / den;
    snprintf(buf, len, "%lld.%03lld", (long long)(t / 1000), (long long)(t % 1000));
}

void tly_runsched_explain(tly_runsched *rs, uint32_t i, FILE *out)
{
    rrun *r = &rs->runs[i];
    const tly_run *run = r->res.run;
    char a[TLY_QTY_BUFSZ], b[TLY_QTY_BUFSZ], c[TLY_QTY_BUFSZ];
    fprintf(out, "Run %s/%s (runtime %s)\n", run->meta.ns, run->meta.name, run->runtime ? run->runtime : "-");
    fprintf(out, "  phase %s", tly_run_phase_name(r->res.phase));
    if (r->res.assigned)
        fprintf(out, " on %s", r->res.assigned);
    if (r->res.reason)
        fprintf(out, " (%s)", r->res.reason);
    fprintf(out, "\n");
    if (r->res.message)
        fprintf(out, "  %s\n", r->res.message);
    if (r->bad) {
        fprintf(out, "  request %s is not a non-negative integer: fix spec.resources.requests\n", r->bad);
        return;
    }
    fprintf(out, "  request:");
    for (uint32_t k = 0; k < r->request.n; k++)
        fprintf(out, " %s %s", tly_names_str(rs->names, r->request.v[k].id), qty_text(rs->a, r->request.v[k].q));
    fprintf(out, "\n");
    if (r->group < 0)
        return;
    const rgroup *g = &rs->groups[r->group];
    fprintf(out, "\nRuntime Pods of runtime %s in namespace %s (%u):\n", g->runtime, g->ns, g->npods);
    if (!g->npods)
        fprintf(out, "  none: label Pods runtime=%s in namespace %s\n", g->runtime, g->ns);
    /* For a Pending Run: the projected load on each Pod that would take it, in score order. */
    cand *cands = tly_xmalloc((g->npods + 1) * sizeof *cands);
    uint32_t n = 0;
    for (uint32_t k = 0; k < g->npods; k++) {
        const rpod *p = &rs->pods[g->pods[k]];
        fprintf(out, "  %s: %s\n", p->res.pod->meta.name, tly_rpod_state_text(p->res.state));
        for (uint32_t e = 0; e < p->cap.n; e++) {
            const tly_rq *cap = &p->cap.v[e];
            tly_qty used = tly_rvec_get(&p->used, cap->id), req = tly_rlist_get(&r->request, cap->id, NULL), proj = used;
            char ratio[32];
            tly_qty_add(used, req, &proj);
            ratio_text(proj.nanos, cap->q.nanos, ratio, sizeof ratio);
            fprintf(out, "      %-20s capacity %s, used %s, +%s => %s\n", tly_names_str(rs->names, cap->id),
                    qfmt_buf(cap->q, a), qfmt_buf(used, b), qfmt_buf(req, c), ratio);
        }
        if (p->res.state != TLY_RPOD_AVAILABLE)
            continue;
        tly_frac max;
        if (r->res.phase == TLY_RUN_PENDING && !fit_max(p, &r->request, &max)) {
            for (uint32_t q = 0; q < r->request.n; q++) {
                bool found;
                tly_qty cap = tly_rlist_get(&p->cap, r->request.v[q].id, &found), tot;
                tly_qty_add(tly_rvec_get(&p->used, r->request.v[q].id), r->request.v[q].q, &tot);
                if (!found)
                    fprintf(out, "      filtered: does not advertise %s\n", tly_names_str(rs->names, r->request.v[q].id));
                else if (tly_qty_cmp(tot, cap) > 0)
                    fprintf(out, "      filtered: no room for %s\n", tly_names_str(rs->names, r->request.v[q].id));
            }
            continue;
        }
        if (r->res.phase == TLY_RUN_PENDING) {
            int af = affinity_filter(rs, i, p->res.pod);
            if (af) {
                fprintf(out, "      filtered: %s\n", af == 1 ? "required Run affinity" : "required Run anti-affinity");
                continue;
            }
            cands[n].pod = g->pods[k];
            cands[n++].max = max;
        }
    }
    if (n > 1) {
        /* The score order: choose() repeatedly over what is left. */
        fprintf(out, "\nScore order (least loaded first):");
        for (uint32_t left = n; left > 0; left--) {
            uint32_t best = choose(rs, i, cands, left), at = 0;
            for (uint32_t k = 0; k < left; k++)
                if (cands[k].pod == best)
                    at = k;
            fprintf(out, " %s", rs->pods[best].res.pod->meta.name);
            cands[at] = cands[left - 1];
        }
        fprintf(out, "\n");
    }
    free(cands);
}
