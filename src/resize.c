/*
** resize.c: in-place pod resize admission (resize.h).
*/
#include "tally/resize.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/error.h"
#include "tally/podreq.h"
#include "tally/podcharge.h"
#include "tally/queues.h"

static const tly_container_status *status_of(const tly_pod *p, const char *name, bool init)
{
    const tly_container_status *v = init ? p->init_statuses : p->statuses;
    uint32_t n = init ? p->ninit_statuses : p->nstatuses;
    for (uint32_t i = 0; i < n; i++)
        if (v[i].name && !strcmp(v[i].name, name))
            return &v[i];
    return NULL;
}

static tly_qty qmax(tly_qty a, tly_qty b) { return tly_qty_cmp(a, b) >= 0 ? a : b; }

/* One container's effective request of id (the resize rule). */
static tly_qty effective(const tly_pod *p, const tly_container *c, bool init, uint32_t id,
                         bool infeasible)
{
    tly_qty spec = tly_rlist_get(&c->requests, id, NULL);
    const tly_container_status *st = status_of(p, c->name ? c->name : "", init);
    if (!st || (!st->has_resources && !st->has_allocated))
        return spec;
    tly_qty actual = tly_rlist_get(&st->requests, id, NULL);
    tly_qty alloc = tly_rlist_get(&st->allocated, id, NULL);
    tly_qty m = qmax(actual, alloc);
    return infeasible ? m : qmax(spec, m);
}

/* Sums over regular containers and native sidecars: spec, or effective. */
static tly_qty pod_sum(const tly_pod *p, uint32_t id, bool eff)
{
    bool inf = tly_pod_resize_infeasible(p);
    tly_qty sum = {0, TLY_QFMT_DECIMAL_SI};
    for (uint32_t i = 0; i < p->ncontainers; i++) {
        const tly_container *c = &p->containers[i];
        tly_qty_add(sum, eff ? effective(p, c, false, id, inf) : tly_rlist_get(&c->requests, id, NULL),
                    &sum);
    }
    for (uint32_t i = 0; i < p->ninit; i++) {
        const tly_container *c = &p->init_containers[i];
        if (!c->restart_always)
            continue;
        tly_qty_add(sum, eff ? effective(p, c, true, id, inf) : tly_rlist_get(&c->requests, id, NULL),
                    &sum);
    }
    return sum;
}

/* The first resource other than cpu and memory that the resize changes, or NULL. */
static const char *changes_other(const tly_pod *a, const tly_pod *b, const tly_names *names,
                                 const char **container)
{
    const tly_container *sets[2][2] = {{a->containers, a->init_containers},
                                       {b->containers, b->init_containers}};
    uint32_t counts[2][2] = {{a->ncontainers, a->ninit}, {b->ncontainers, b->ninit}};
    for (int k = 0; k < 2; k++) {
        if (counts[0][k] != counts[1][k]) {
            *container = NULL;
            return "containers";
        }
        for (uint32_t i = 0; i < counts[0][k]; i++) {
            const tly_container *x = &sets[0][k][i], *y = &sets[1][k][i];
            const tly_rlist *lists[2][2] = {{&x->requests, &y->requests}, {&x->limits, &y->limits}};
            for (int l = 0; l < 2; l++) {
                tly_rlist u = *lists[l][0], v = *lists[l][1];
                for (int side = 0; side < 2; side++) {
                    const tly_rlist *from = side ? &v : &u, *to = side ? &u : &v;
                    for (uint32_t e = 0; e < from->n; e++) {
                        uint32_t id = from->v[e].id;
                        if (id == TLY_R_CPU || id == TLY_R_MEMORY)
                            continue;
                        if (tly_qty_cmp(from->v[e].q, tly_rlist_get(to, id, NULL)) != 0) {
                            *container = x->name;
                            return tly_names_str(names, id);
                        }
                    }
                }
            }
        }
    }
    return NULL;
}

/* Pod p's cpu and memory charge (its effective request), its queue and preemptibility. */
static void pod_charge(tly_store *s, const tly_pod *p, tly_arena *a, tly_qty out[2], const char **queue,
                       bool *np)
{
    tly_pod_charge c;
    tly_pod_charge_compute(s, NULL, p, NULL, 0, a, &c);
    out[0] = c.res[TLY_QR_CPU];
    out[1] = c.res[TLY_QR_MEMORY];
    *queue = c.queue;
    *np = c.non_preemptible;
}

/*
** The ledger every resize decision against one state starts from: the
** queues with every bound, running tally pod of the state charged. Built
** once per state (tly_store_derived) and only read afterwards, so decisions
** run concurrently against it; a decision applies its own adjustments (the
** reviewed pod as oldObject instead of the state's copy, reserved upsizes)
** along the one path it checks.
*/
tly_queues *tly_resize_ledger_build(tly_store *s)
{
    tly_queues *qs = tly_queues_create(s);
    tly_arena *a = tly_arena_create(64 * 1024);
    for (uint32_t i = 0; i < tly_store_count(s, TLY_K_POD); i++) {
        const tly_pod *p = tly_store_at(s, TLY_K_POD, i);
        if (!tly_pod_charges_queues(s, p))
            continue;
        tly_qty ch[2];
        const char *qn;
        bool np;
        pod_charge(s, p, a, ch, &qn, &np);
        int32_t q = tly_queues_find(qs, qn);
        if (q < 0)
            continue;
        tly_qcharge c;
        memset(&c, 0, sizeof c);
        c.res[TLY_QR_CPU] = ch[0];
        c.res[TLY_QR_MEMORY] = ch[1];
        tly_queues_charge(qs, (uint32_t)q, &c, np, 1);
        tly_arena_reset(a);
    }
    tly_arena_destroy(a);
    return qs;
}

static void *build_ledger(tly_store *s) { return tly_resize_ledger_build(s); }
static void free_ledger(void *qs) { tly_queues_destroy(qs); }

/* Whether queue j is queue q or one of its ancestors. */
static bool on_path(const tly_queues *qs, int32_t q, int32_t j)
{
    for (uint32_t steps = 0; q >= 0 && steps <= tly_queues_count(qs); steps++) {
        if (q == j)
            return true;
        q = tly_queues_parent(qs, (uint32_t)q);
    }
    return false;
}

/* Adds sign * ch to adj[k] (and adj_np[k] when np) for queue j when j is on q's path. */
static void adjust(const tly_queues *qs, int32_t q, int32_t j, const tly_qty ch[2], bool np,
                   int sign, tly_qty adj[2], tly_qty adj_np[2])
{
    if (q < 0 || !on_path(qs, q, j))
        return;
    for (int k = 0; k < 2; k++) {
        if (sign > 0) {
            tly_qty_add(adj[k], ch[k], &adj[k]);
            if (np)
                tly_qty_add(adj_np[k], ch[k], &adj_np[k]);
        } else {
            tly_qty_sub(adj[k], ch[k], &adj[k]);
            if (np)
                tly_qty_sub(adj_np[k], ch[k], &adj_np[k]);
        }
    }
}

/*
** q in units of 10^-scale nanos (6: milli, 9: whole), rounded up, as exact
** decimal text in buf: a value past 64 bits prints whole, never wrapped.
*/
static const char *units(tly_qty q, int scale, char buf[48])
{
    tly_i128 div = scale == 6 ? 1000000 : 1000000000;
    tly_i128 v = q.nanos / div;
    if (q.nanos % div > 0)
        v++;
    unsigned __int128 u = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
    char tmp[48];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    int k = 0;
    if (v < 0)
        buf[k++] = '-';
    while (n)
        buf[k++] = tmp[--n];
    buf[k] = '\0';
    return buf;
}

#define milli(q) units((q), 6, (char[48]){0})
#define bytes(q) units((q), 9, (char[48]){0})

void tly_resize_pod_size(const tly_pod *p, tly_qty spec[2], tly_qty eff[2])
{
    const uint32_t ids[2] = {TLY_R_CPU, TLY_R_MEMORY};
    for (int k = 0; k < 2; k++) {
        spec[k] = pod_sum(p, ids[k], false);
        eff[k] = pod_sum(p, ids[k], true);
    }
}

/*
** E(new) (the new spec, no resize in progress) and E(old), cpu and memory,
** as queues charge them; *queue and *np are old's, which the check reuses
** as the reviewed pod's own charge.
*/
static void effective_pair(tly_store *state, const tly_pod *neu, const tly_pod *old, tly_arena *a,
                           tly_qty e_new[2], tly_qty e_old[2], const char **queue, bool *np)
{
    const char *q;
    bool n;
    tly_pod spec_only = *neu;
    spec_only.statuses = spec_only.init_statuses = NULL;
    spec_only.nstatuses = spec_only.ninit_statuses = 0;
    pod_charge(state, &spec_only, a, e_new, &q, &n);
    pod_charge(state, old, a, e_old, queue, np);
}

void tly_resize_decide(tly_store *state, const tly_names *names, const tly_pod *neu,
                       const tly_pod *old, tly_resize_verdict *v)
{
    tly_resize_decide_extra(state, names, neu, old, NULL, 0, v);
}

void tly_resize_decide_extra(tly_store *state, const tly_names *names, const tly_pod *neu,
                             const tly_pod *old, const tly_resize_extra *extra, size_t nextra,
                             tly_resize_verdict *v)
{
    tly_arena *a = tly_arena_create(16 * 1024);
    tly_resize_decide_in(state, names, neu, old, extra, nextra, a, v);
    tly_arena_destroy(a);
}

/* The queue named qn: the index found for `known` (named kn) when it is the same name. */
static int32_t find_queue(const tly_queues *qs, const char *qn, const char *kn, int32_t known)
{
    if (kn && qn && !strcmp(qn, kn))
        return known;
    return tly_queues_find(qs, qn);
}

void tly_resize_decide_in(tly_store *state, const tly_names *names, const tly_pod *neu, const tly_pod *old,
                          const tly_resize_extra *extra, size_t nextra, tly_arena *a, tly_resize_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->allowed = true;
    const char *container = NULL;
    const char *other = changes_other(old, neu, names, &container);
    if (other) {
        v->allowed = false;
        v->message = !strcmp(other, "containers")
                         ? tly_xasprintf("resize rejected: pod %s/%s: a resize cannot add or remove containers",
                               neu->meta.ns, neu->meta.name)
                         : tly_xasprintf("resize rejected: pod %s/%s: only cpu and memory can be resized in "
                               "place, but %s of container %s changes",
                               neu->meta.ns, neu->meta.name, other, container ? container : "?");
        return;
    }
    const uint32_t ids[2] = {TLY_R_CPU, TLY_R_MEMORY};
    for (int k = 0; k < 2; k++)
        v->size[k] = pod_sum(neu, ids[k], false);  /* the new size; its effective request is not needed */
    tly_resize_pod_size(old, v->spec, v->base);
    v->sized = true;
    const tly_config *cfg = tly_store_config(state);
    if (cfg && cfg->validate_quota == 0)
        return;  /* validateQuota: false admits every resize */
    /*
    ** A pod that is not bound (oldObject without nodeName) holds nothing on
    ** any queue: its resize pushes no queue, strict mode included, and the
    ** scheduler places it at its new size under queue policy (contract
    ** section 5). No queue is checked, so no ledger reserves an increase.
    */
    if (!old->node_name || !*old->node_name)
        return;
    bool strict = cfg && cfg->block_upsize == 1;

    /*
    ** The increase, per resource: E(new) - E(old) (contract section 5), each
    ** the pod's effective request as its queue is charged it (init-container
    ** peak, sidecars, overhead, pod-level resources): E(old) of the pod as it
    ** stands, resize state and all; E(new) of the new spec as if no resize
    ** were in progress. Raising a container under a larger init container
    ** adds nothing, as in KAI.
    */
    tly_qty delta[2], e_old[2], e_new[2];
    bool grows = false, changed[2];
    for (int k = 0; k < 2; k++)
        changed[k] = tly_qty_cmp(v->size[k], v->spec[k]) != 0;
    if (!changed[0] && !changed[1])
        return;  /* the same spec sums: a redistribution between containers, or nothing */
    const char *old_queue;
    bool e_np;
    effective_pair(state, neu, old, a, e_new, e_old, &old_queue, &e_np);
    for (int k = 0; k < 2; k++) {
        tly_qty d;
        delta[k] = (tly_qty){0, TLY_QFMT_DECIMAL_SI};
        if (changed[k] && tly_qty_sub(e_new[k], e_old[k], &d) == TLY_OK && tly_qty_sign(d) > 0) {
            delta[k] = d;
            grows = true;
        }
    }
    if (!grows)
        return;  /* downsizes and redistribution are always admitted */

    const tly_podgroup *pg = NULL;
    const char *pgname = tly_kvs_get(&old->meta.annotations, "pod-group-name");
    const char *qname = tly_store_pod_queue(state, old, &pg);
    if (pgname && !pg) {
        v->warning = tly_xasprintf("PodGroup %s of pod %s/%s is not in the state; the resize is admitted "
                         "unchecked", pgname, old->meta.ns, old->meta.name);
        return;
    }
    const tly_queues *qs = tly_store_derived(state, TLY_DERIVED_RESIZE_LEDGER, build_ledger, free_ledger);
    int32_t q = tly_queues_find(qs, qname);
    if (q < 0) {
        v->warning = tly_xasprintf("queue %s of pod %s/%s is not in the state; the resize is admitted unchecked",
                         qname, old->meta.ns, old->meta.name);
        return;
    }
    /* The state's own copy of the reviewed pod leaves the ledger ... */
    const tly_pod *stale = tly_store_find(state, TLY_K_POD, old->meta.ns, old->meta.name);
    tly_qty stale_ch[2] = {{0, 0}, {0, 0}}, old_ch[2] = {{0, 0}, {0, 0}};
    int32_t stale_q = -1, old_q = -1;
    bool stale_np = false, old_np = false;
    if (stale && tly_pod_charges_queues(state, stale)) {
        const char *sq;
        pod_charge(state, stale, a, stale_ch, &sq, &stale_np);
        stale_q = find_queue(qs, sq, qname, q);
    }
    /* ... and the pod counts as it runs (oldObject; it is bound, see above), unless terminal. */
    if (!tly_pod_terminal(old)) {
        memcpy(old_ch, e_old, sizeof old_ch);  /* E(old) is the charge */
        old_np = e_np;
        old_q = find_queue(qs, old_queue, qname, q);
    }
    /* An ancestor missing from the state cannot be checked: say so, as KAI logs it. */
    for (int32_t j = q; j >= 0; j = tly_queues_parent(qs, (uint32_t)j)) {
        const tly_queue *qq = tly_queues_queue(qs, (uint32_t)j);
        if (tly_queues_parent(qs, (uint32_t)j) < 0 && qq->parent && *qq->parent) {
            v->warning = tly_xasprintf("parent queue %s of queue %s is not in the state; its limits are not "
                             "checked", qq->parent, qq->meta.name);
            break;
        }
    }
    bool np = tly_pod_non_preemptible(state, old, pg);
    v->queue = tly_xstrdup(qname);
    v->non_preemptible = np;
    const char *pgshow = pg ? pg->meta.name : "<none>";
    const char *pod = tly_arena_join(a, old->meta.ns, '/', old->meta.name);
    const int dims[2] = {TLY_QR_CPU, TLY_QR_MEMORY};
    for (int32_t j = q; j >= 0 && v->allowed; j = tly_queues_parent(qs, (uint32_t)j)) {
        if (!tly_queues_has_resources(qs, (uint32_t)j))
            continue;
        const char *qn = tly_queues_queue(qs, (uint32_t)j)->meta.name;
        /* This decision's view of queue j: the shared ledger, the reviewed pod as it runs
           instead of the state's copy, and the upsizes admitted but not yet seen. */
        tly_qty adj[2] = {{0, 0}, {0, 0}}, adj_np[2] = {{0, 0}, {0, 0}};
        adjust(qs, stale_q, j, stale_ch, stale_np, -1, adj, adj_np);
        adjust(qs, old_q, j, old_ch, old_np, 1, adj, adj_np);
        for (size_t i = 0; i < nextra; i++)
            adjust(qs, tly_queues_find(qs, extra[i].queue), j, extra[i].inc, extra[i].non_preemptible,
                   1, adj, adj_np);
        tly_qty lim, quo;
        /* 1. Strict mode: no upsize on a finite limit, or a finite quota for non-preemptible work. */
        for (int k = 0; k < 2 && strict && v->allowed; k++) {
            if (tly_qty_sign(delta[k]) <= 0)
                continue;
            if (tly_queues_bound(qs, (uint32_t)j, true, dims[k], &lim)) {
                v->allowed = false;
                v->message = k == 0 ? tly_xasprintf("resize rejected: pod %s (PodGroup %s) CPU upsize not permitted on queue %s with finite CPU limit (%sm)",
                                          pod, pgshow, qn, milli(lim))
                                    : tly_xasprintf("resize rejected: pod %s (PodGroup %s) memory upsize not permitted on queue %s with finite memory limit (%s bytes)",
                                          pod, pgshow, qn, bytes(lim));
            } else if (np && tly_queues_bound(qs, (uint32_t)j, false, dims[k], &quo)) {
                v->allowed = false;
                v->message = k == 0 ? tly_xasprintf("resize rejected: pod %s (PodGroup %s) non-preemptible CPU upsize not permitted on queue %s with finite CPU quota (%sm)",
                                          pod, pgshow, qn, milli(quo))
                                    : tly_xasprintf("resize rejected: pod %s (PodGroup %s) non-preemptible memory upsize not permitted on queue %s with finite memory quota (%s bytes)",
                                          pod, pgshow, qn, bytes(quo));
            }
        }
        /* 2. Limit, every workload. 3. Quota, non-preemptible workloads. */
        for (int pass = 0; pass < 2 && v->allowed; pass++) {
            bool quota = pass == 1;
            if (quota && !np)
                break;
            for (int k = 0; k < 2 && v->allowed; k++) {
                tly_qty bound, total;
                if (tly_qty_sign(delta[k]) <= 0 ||
                    !tly_queues_bound(qs, (uint32_t)j, !quota, dims[k], &bound))
                    continue;
                tly_qty used = tly_queues_used(qs, (uint32_t)j, dims[k], quota);
                tly_qty_add(used, quota ? adj_np[k] : adj[k], &used);
                if (tly_qty_add(used, delta[k], &total) == TLY_OK && tly_qty_cmp(total, bound) <= 0)
                    continue;
                v->allowed = false;
                const char *what = quota ? "AllocatedNonPreemptible" : "Allocated";
                const char *over = quota ? "quota" : "limit";
                v->message = k == 0 ? tly_xasprintf("resize rejected: pod %s (PodGroup %s) CPU upsize would push queue %s %s (%sm + %sm) over %s (%sm)",
                                          pod, pgshow, qn, what, milli(used), milli(delta[k]), over, milli(bound))
                                    : tly_xasprintf("resize rejected: pod %s (PodGroup %s) memory upsize would push queue %s %s (%s + %s bytes) over %s (%s bytes)",
                                          pod, pgshow, qn, what, bytes(used), bytes(delta[k]), over, bytes(bound));
            }
        }
    }
}

void tly_resize_verdict_free(tly_resize_verdict *v)
{
    free(v->message);
    free(v->warning);
    free(v->queue);
    memset(v, 0, sizeof *v);
}
