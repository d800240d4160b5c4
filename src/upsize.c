/*
** upsize.c: the ledger of admitted upsizes (upsize.h).
**
** A small array under one mutex: the number of reservations is the number
** of upsizes admitted in the last state refresh or TIMEOUT, a handful even
** on a busy cluster, so linear scans beat any index. begin() builds the
** extras array for the decision in a buffer owned by the ledger; it stays
** valid until end(), which is why the lock spans both. With a paired state
** (tly_upsize_swap) begin() also hands the decision that state, read under
** the same lock that the swap and its reconciliation take.
*/
#include "tally/upsize.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/error.h"
#include "tally/json.h"
#include "tally/node.h"
#include "tally/podreq.h"

typedef struct {
    char *ns, *name, *uid;   /* uid may be NULL */
    char *queue;
    bool non_preemptible;
    tly_qty spec[2];         /* old spec sums, to see a revert */
    tly_qty base[2];         /* old effective request */
    tly_qty size[2];         /* newest admitted size */
    int64_t since;           /* ms, the last admitted upsize */
    uint64_t rv;             /* the pod's resourceVersion it was admitted at (tly_rv_number), or 0 */
} reservation;

struct tly_upsize {
    pthread_mutex_t mu;
    int64_t timeout_ms;
    tly_upsize_clock clock;
    void *clock_ctx;
    reservation *v;
    size_t n, cap;
    tly_store *paired;        /* the state decisions pair with the reservations (tly_upsize_swap), or NULL */
    tly_resize_extra *extra;  /* begin()'s answer, valid until end() */
    size_t extra_cap;
    tly_resize_ledger hooks;
};

static int64_t monotonic_ms(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tly_upsize_wall_ms(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_ms(const tly_upsize *u) { return u->clock(u->clock_ctx); }

/* max(0, size - base) per resource. */
static void increase(const reservation *r, tly_qty inc[2])
{
    for (int k = 0; k < 2; k++) {
        tly_qty d = {0, TLY_QFMT_DECIMAL_SI};
        if (tly_qty_sub(r->size[k], r->base[k], &d) != TLY_OK || tly_qty_sign(d) < 0)
            d = (tly_qty){0, TLY_QFMT_DECIMAL_SI};
        inc[k] = d;
    }
}

static bool holds_anything(const reservation *r)
{
    tly_qty inc[2];
    increase(r, inc);
    return tly_qty_sign(inc[0]) > 0 || tly_qty_sign(inc[1]) > 0;
}

static reservation *find(tly_upsize *u, const char *ns, const char *name)
{
    for (size_t i = 0; i < u->n; i++)
        if (!strcmp(u->v[i].ns, ns) && !strcmp(u->v[i].name, name))
            return &u->v[i];
    return NULL;
}

static void drop(tly_upsize *u, size_t i)
{
    reservation *r = &u->v[i];
    free(r->ns);
    free(r->name);
    free(r->uid);
    free(r->queue);
    u->v[i] = u->v[--u->n];
}

/* Caller holds the lock. */
static size_t expire_locked(tly_upsize *u)
{
    int64_t now = now_ms(u);
    size_t dropped = 0;
    for (size_t i = 0; i < u->n;) {
        if (now - u->v[i].since >= u->timeout_ms) {
            drop(u, i);
            dropped++;
        } else {
            i++;
        }
    }
    return dropped;
}

static const tly_resize_extra *ledger_begin(void *ctx, const tly_pod *old, tly_store **state, size_t *n)
{
    tly_upsize *u = ctx;
    pthread_mutex_lock(&u->mu);
    /* The state the reservations were reconciled against, not the one the caller took earlier. */
    if (u->paired)
        *state = u->paired;
    expire_locked(u);
    if (u->extra_cap < u->n) {
        u->extra_cap = u->n * 2;
        u->extra = tly_xrealloc(u->extra, u->extra_cap * sizeof *u->extra);
    }
    size_t k = 0;
    for (size_t i = 0; i < u->n; i++) {
        const reservation *r = &u->v[i];
        /* The reviewed pod's oldObject already carries its own admitted size. */
        if (!strcmp(r->ns, old->meta.ns ? old->meta.ns : "") &&
            !strcmp(r->name, old->meta.name ? old->meta.name : ""))
            continue;
        tly_resize_extra *e = &u->extra[k++];
        e->queue = r->queue;
        e->non_preemptible = r->non_preemptible;
        increase(r, e->inc);
    }
    *n = k;
    return u->extra;
}

static void ledger_end(void *ctx, const tly_pod *old, const tly_resize_verdict *v, bool dry_run)
{
    tly_upsize *u = ctx;
    const char *ns = old->meta.ns ? old->meta.ns : "", *name = old->meta.name ? old->meta.name : "";
    if (dry_run || !v->allowed || !v->sized)
        goto out;
    reservation *r = find(u, ns, name);
    if (!r && !v->in_state)
        goto out;  /* no hold for a pod the state does not hold (admit.c) */
    if (r) {
        /* A later resize of a reserved pod: the reservation follows its newest size. */
        bool grows = tly_qty_cmp(v->size[0], r->size[0]) > 0 || tly_qty_cmp(v->size[1], r->size[1]) > 0;
        memcpy(r->size, v->size, sizeof r->size);
        if (v->queue) {
            free(r->queue);
            r->queue = tly_xstrdup(v->queue);
            r->non_preemptible = v->non_preemptible;
        }
        if (grows)
            r->since = now_ms(u);
        r->rv = tly_rv_number(old->meta.resource_version);
        if (!holds_anything(r))
            drop(u, (size_t)(r - u->v));
        goto out;
    }
    if (!v->queue)
        goto out;  /* no queue check ran: nothing to protect */
    reservation nr = {0};
    memcpy(nr.spec, v->spec, sizeof nr.spec);
    memcpy(nr.base, v->base, sizeof nr.base);
    memcpy(nr.size, v->size, sizeof nr.size);
    if (!holds_anything(&nr))
        goto out;  /* a downsize or a redistribution */
    nr.ns = tly_xstrdup(ns);
    nr.name = tly_xstrdup(name);
    nr.uid = old->meta.uid ? tly_xstrdup(old->meta.uid) : NULL;
    nr.queue = tly_xstrdup(v->queue);
    nr.non_preemptible = v->non_preemptible;
    nr.since = now_ms(u);
    nr.rv = tly_rv_number(old->meta.resource_version);
    if (u->n == u->cap) {
        u->cap = u->cap ? u->cap * 2 : 8;
        u->v = tly_xrealloc(u->v, u->cap * sizeof *u->v);
    }
    u->v[u->n++] = nr;
out:
    pthread_mutex_unlock(&u->mu);
}

tly_upsize *tly_upsize_create(int64_t timeout_ms, tly_upsize_clock clock, void *clock_ctx)
{
    tly_upsize *u = calloc(1, sizeof *u);
    if (!u)
        tly_oom();
    pthread_mutex_init(&u->mu, NULL);
    u->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
    u->clock = clock ? clock : monotonic_ms;
    u->clock_ctx = clock_ctx;
    u->hooks.ctx = u;
    u->hooks.begin = ledger_begin;
    u->hooks.end = ledger_end;
    return u;
}

void tly_upsize_destroy(tly_upsize *u)
{
    if (!u)
        return;
    while (u->n)
        drop(u, u->n - 1);
    free(u->v);
    free(u->extra);
    pthread_mutex_destroy(&u->mu);
    free(u);
}

const tly_resize_ledger *tly_upsize_ledger(tly_upsize *u) { return &u->hooks; }

static bool terminal(const tly_pod *p)
{
    return p->phase && (!strcmp(p->phase, "Succeeded") || !strcmp(p->phase, "Failed"));
}

/*
** What a state says about one reservation: the counter to bump when it is
** settled, NULL while it must be held. A state that follows the cluster by
** watch (tly_store_seen_rv) may trail the API server, whose oldObject the
** decision saw: such a state settles a reservation only once it has seen
** the pod after the admission (its resourceVersion is newer), or, for a pod
** it does not hold, once it has seen pods past that point. Otherwise "spec
** still the old size" would read a lagging state as a revert.
*/
static size_t *settled(const reservation *r, const tly_store *state, tly_upsize_released *rel)
{
    const tly_pod *p = tly_store_find(state, TLY_K_POD, r->ns, r->name);
    if (p && r->uid && p->meta.uid && strcmp(r->uid, p->meta.uid) != 0)
        return &rel->gone;  /* another pod of that name: the reserved one was deleted */
    uint64_t seen = tly_store_seen_rv(state, TLY_K_POD);
    if (seen && r->rv) {
        if (!p)
            return seen > r->rv ? &rel->gone : NULL;
        if (tly_rv_number(p->meta.resource_version) <= r->rv)
            return NULL;
    } else if (seen) {
        return NULL;  /* an unordered resourceVersion: only the timeout settles it */
    }
    if (!p || terminal(p))
        return &rel->gone;
    if (tly_pod_resize_infeasible(p))
        return &rel->infeasible;
    tly_qty spec[2], eff[2];
    tly_resize_pod_size(p, spec, eff);
    if (tly_qty_cmp(eff[0], r->size[0]) >= 0 && tly_qty_cmp(eff[1], r->size[1]) >= 0)
        return &rel->enacted;
    if (tly_qty_cmp(spec[0], r->spec[0]) == 0 && tly_qty_cmp(spec[1], r->spec[1]) == 0)
        return &rel->reverted;
    return NULL;
}

/* Caller holds the lock. */
static void reconcile_locked(tly_upsize *u, const tly_store *state, tly_upsize_released *rel)
{
    rel->expired = expire_locked(u);
    for (size_t i = 0; i < u->n;) {
        size_t *why = settled(&u->v[i], state, rel);
        if (why) {
            (*why)++;
            drop(u, i);
        } else {
            i++;
        }
    }
}

void tly_upsize_reconcile(tly_upsize *u, const tly_store *state, tly_upsize_released *out)
{
    tly_upsize_released rel = {0};
    pthread_mutex_lock(&u->mu);
    reconcile_locked(u, state, &rel);
    pthread_mutex_unlock(&u->mu);
    if (out)
        *out = rel;
}

/*
** One step under the lock: no decision can begin() between the reservations
** being settled by `state` and `state` becoming the one decisions read, so
** none sees the settled increases gone while deciding on a state that does
** not show them yet (issue 17 item 3).
*/
void tly_upsize_swap(tly_upsize *u, tly_store *state, tly_upsize_released *out)
{
    tly_upsize_released rel = {0};
    pthread_mutex_lock(&u->mu);
    reconcile_locked(u, state, &rel);
    u->paired = state;
    pthread_mutex_unlock(&u->mu);
    if (out)
        *out = rel;
}

size_t tly_upsize_expire(tly_upsize *u)
{
    pthread_mutex_lock(&u->mu);
    size_t n = expire_locked(u);
    pthread_mutex_unlock(&u->mu);
    return n;
}

size_t tly_upsize_count(tly_upsize *u)
{
    pthread_mutex_lock(&u->mu);
    size_t n = u->n;
    pthread_mutex_unlock(&u->mu);
    return n;
}

bool tly_upsize_get(tly_upsize *u, const char *ns, const char *name, tly_qty inc[2])
{
    pthread_mutex_lock(&u->mu);
    reservation *r = find(u, ns, name);
    if (r)
        increase(r, inc);
    pthread_mutex_unlock(&u->mu);
    return r != NULL;
}

/* ---- the shared form (tly_upsize_encode / tly_upsize_decode) --------------------- */

static void put_pair(tly_json *j, const char *key, const tly_qty q[2])
{
    tly_json_key(j, key);
    tly_json_begin_array(j);
    tly_json_qty(j, q[0]);
    tly_json_qty(j, q[1]);
    tly_json_end_array(j);
}

static char *encode(const reservation *r)
{
    tly_jbuf b;
    tly_jbuf_open(&b);
    tly_json *j = &b.j;
    tly_json_begin_object(j);
    tly_json_kv(j, "namespace", r->ns);
    tly_json_kv(j, "name", r->name);
    tly_json_kv(j, "uid", r->uid);
    tly_json_kv(j, "queue", r->queue);
    tly_json_key(j, "nonPreemptible");
    tly_json_bool(j, r->non_preemptible);
    put_pair(j, "spec", r->spec);
    put_pair(j, "base", r->base);
    put_pair(j, "size", r->size);
    tly_json_key(j, "since");
    tly_json_int(j, (long long)r->since);
    char rv[24];
    snprintf(rv, sizeof rv, "%llu", (unsigned long long)r->rv);
    tly_json_kv(j, "rv", r->rv ? rv : NULL);
    tly_json_end_object(j);
    return tly_jbuf_close(&b);
}

void tly_upsize_each(tly_upsize *u, tly_upsize_each_fn fn, void *ctx)
{
    pthread_mutex_lock(&u->mu);
    for (size_t i = 0; i < u->n; i++) {
        char *v = encode(&u->v[i]);
        fn(ctx, u->v[i].ns, u->v[i].name, v);
        free(v);
    }
    pthread_mutex_unlock(&u->mu);
}

static bool get_str(const tly_node *o, const char *key, bool nullable, char **out)
{
    const tly_node *v = tly_node_get(o, key);
    *out = NULL;
    if (v && v->type == TLY_N_STRING) {
        *out = tly_xstrdup(v->str);
        return true;
    }
    return nullable && (!v || v->type == TLY_N_NULL);
}

static bool get_pair(const tly_node *o, const char *key, tly_qty q[2])
{
    const tly_node *v = tly_node_get(o, key);
    if (!v || v->type != TLY_N_SEQ || v->nkids != 2)
        return false;
    for (int k = 0; k < 2; k++) {
        const tly_node *e = tly_node_at(v, (uint32_t)k);
        if (!e || e->type != TLY_N_STRING || tly_qty_parse_str(e->str, &q[k]) != TLY_OK)
            return false;
    }
    return true;
}

int tly_upsize_decode(tly_upsize *u, const tly_node *o, char *err, size_t errlen)
{
    reservation r = {0};
    char *rv = NULL;
    const tly_node *since = o ? tly_node_get(o, "since") : NULL, *np = o ? tly_node_get(o, "nonPreemptible") : NULL;
    bool ok = o && o->type == TLY_N_MAP && get_str(o, "namespace", false, &r.ns) &&
              get_str(o, "name", false, &r.name) && get_str(o, "uid", true, &r.uid) &&
              get_str(o, "queue", false, &r.queue) && get_str(o, "rv", true, &rv) &&
              get_pair(o, "spec", r.spec) && get_pair(o, "base", r.base) && get_pair(o, "size", r.size) &&
              since && since->type == TLY_N_INT && (!np || np->type == TLY_N_BOOL);
    if (ok) {
        r.since = strtoll(since->str, NULL, 10);
        r.non_preemptible = np && np->bval;
        r.rv = tly_rv_number(rv);
        pthread_mutex_lock(&u->mu);
        if (find(u, r.ns, r.name)) {
            ok = false;
        } else {
            if (u->n == u->cap) {
                u->cap = u->cap ? u->cap * 2 : 8;
                u->v = tly_xrealloc(u->v, u->cap * sizeof *u->v);
            }
            u->v[u->n++] = r;
        }
        pthread_mutex_unlock(&u->mu);
        if (!ok)
            snprintf(err, errlen, "a second reservation for pod %s/%s", r.ns, r.name);
    } else {
        snprintf(err, errlen, "not an upsize reservation (want namespace, name, uid, queue, nonPreemptible, "
                 "spec, base, size, since, rv)");
    }
    if (!ok) {
        free(r.ns);
        free(r.name);
        free(r.uid);
        free(r.queue);
    }
    free(rv);
    return ok ? TLY_OK : TLY_EINVAL;
}
