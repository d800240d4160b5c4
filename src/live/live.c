/*
** live.c: the live state (live.h): objects, indexes and ledger, changed
** one watch event at a time by one writer, read through forks.
**
** What the writer keeps, and who sees it:
**   kinds[k]   ns\x1fname -> object, per kind        forks (persistent)
**   rtpods     ns\x1fruntime\x1fpod (a key only)  forks (persistent)
**   groups     ns\x1fpodgroup\x1fpod (a key only) forks (persistent)
**   rows       queue name -> ledger row (ledger.h)   forks (persistent)
**   a pod's charge now                               writer only, kept in
**                                                    its object's wrapper
**   on_node    node -> {pod key}                     writer only: pods to
**   in_group   ns\x1fgroup -> {pod key}              charge again when their
**                                                    node or PodGroup changes
** The writer-only indexes are hash multimaps (keyindex.h), changed in
** place; the relist's map of kept keys uses a private epoch that never
** moves, so it too is changed in place.
**
** To compute a charge the writer reads its own current state through a
** store view ("head") of the same backend as a fork's; the head caches the
** lists of small kinds (PriorityClasses, Queues, AccountedResources), so it
** is rebuilt whenever an object that is not a pod changes.
*/
#include "tally/live.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "epoch.h"
#include "keyindex.h"
#include "ledger.h"
#include "ptree.h"
#include "tally/arena.h"
#include "tally/crd.h"
#include "tally/decode.h"
#include "tally/error.h"
#include "tally/nodefit.h"
#include "tally/podcharge.h"

/*
** One object of the state and the arena it was decoded into. `charge` is
** the writer's alone (what a pod charges now): readers of a fork never
** touch it, so the writer may change it in an object a fork can see.
*/
typedef struct {
    tly_meta *m;
    tly_arena *a;
    uint64_t born;
    tly_contrib *charge;
} lobj;

/*
** The CustomResourceDefinitions a fork checks reviewed objects against
** (tly_live_set_crds): shared by every fork taken while they were current,
** freed with the last of them.
*/
typedef struct {
    tly_crdset *set;
    atomic_int refs;
} crdref;

static void crdref_drop(crdref *c)
{
    if (c && atomic_fetch_sub(&c->refs, 1) == 1) {
        tly_crdset_destroy(c->set);
        free(c);
    }
}

/* What a fork (or the writer's head) reads. */
typedef struct {
    tly_live *l;
    crdref *crds;            /* a fork's reference, or NULL */
    uint64_t epoch;          /* the fork's; 0 for the head */
    tly_ptree *kinds[TLY_K_COUNT];
    tly_ptree *rtpods;
    tly_ptree *rows;
    tly_ptree *pending;      /* pods with no node that are not terminal */
    tly_ptree *groups;       /* pods by PodGroup */
    tly_ptree *runs_on;      /* Runs by assigned Pod */
    uint64_t seen_rv[TLY_K_COUNT];
    uint64_t ledger_gen;     /* tly_live's, when the fork was taken */
} lview;

struct tly_live {
    pthread_mutex_t wmu;     /* held by the writer per event, and by fork() */
    tly_epochs ep;           /* versions forks see */
    tly_epochs priv;         /* the writer-only maps (never moves) */
    tly_names *names;
    char *scheduler_name;
    int gating_mode;
    tly_ptree *kinds[TLY_K_COUNT];
    tly_ptree *rtpods;
    tly_ptree *rows;
    tly_ptree *pending;      /* ns\x1fpod -> pod: not bound, not terminal (the gating controller) */
    tly_ptree *groups;       /* ns\x1fpodgroup\x1fpod, keys only (the gating controller's gangs) */
    tly_ptree *runs_on;      /* ns\x1fassignedPod\x1frun -> Run (claim admission) */
    tly_arena *scratch;      /* one charge computation at a time (writer) */
    tly_arena_pool *objarenas; /* each object's arena, reused once it is reclaimed */
    pthread_mutex_t dmu;     /* the decoders' diagnostics list, reused */
    tly_diags *ddiags;
    tly_keyindex *on_node;
    tly_keyindex *in_group;
    /* The writer's view of its own state, and the AccountedResources as a queue set. */
    lview head_ctx;
    tly_store *head;
    tly_queues *qs;
    uint64_t max_gpu_mem;
    uint32_t nmax_gpu_mem;   /* nodes whose GPU memory is max_gpu_mem (when it is not 0) */
    int fault;
    /* figures */
    uint32_t counts[TLY_K_COUNT];
    uint64_t applied, rejected;
    /* The newest resourceVersion applied per kind (store.h tly_store_seen_rv), under wmu. */
    uint64_t seen_rv[TLY_K_COUNT];
    /* A LIST of the kind is being applied: its items come in no resourceVersion order. */
    bool sweeping[TLY_K_COUNT];
    /* Change notification: the version counts applied changes; waiters sleep on `changed`. */
    pthread_mutex_t vmu;
    pthread_cond_t changed;
    uint64_t version;
    /* How long the writer lock was held: per event/sweep and per fork, in log2 ns buckets. */
    uint64_t hold_hist[2][40];
    crdref *crds;            /* the current CRDs (one reference), or NULL; under wmu */
    /*
    ** The resize ledger (a queue set with every row charged) depends on the
    ** queues, AccountedResources, Config and rows only. ledger_gen counts
    ** changes to those (under wmu); forks of one generation share one
    ** ledger, built by the first review that asks (rl under rlmu).
    */
    uint64_t ledger_gen;
    pthread_mutex_t rlmu;
    tly_queues *rl;
    uint64_t rl_gen;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum { HOLD_WRITE = 0, HOLD_FORK = 1 };

static void held_for(tly_live *l, int what, uint64_t t0)
{
    uint64_t d = now_ns() - t0;
    int b = 0;
    while (b < 39 && (1ull << (b + 1)) <= d)
        b++;
    __atomic_add_fetch(&l->hold_hist[what][b], 1, __ATOMIC_RELAXED);
}

static void contrib_drop(tly_contrib *c)
{
    if (c) {
        tly_contrib_free(c);
        free(c);
    }
}

/* ctx is the live state: the object's arena (which holds o too) goes back to its pool. */
static void lobj_free(void *p, void *ctx)
{
    tly_live *l = ctx;
    lobj *o = p;
    contrib_drop(o->charge);
    tly_arena_pool_put(l->objarenas, o->a);
}

/*
** parts[0..n) joined by \x1f into buf, cut to len - 1 bytes as snprintf
** would cut it; without printf, which was a tenth of applying a pod.
*/
static const char *join_key(char *buf, size_t len, const char *const *parts, int n)
{
    size_t w = 0;
    for (int i = 0; i < n && w + 1 < len; i++) {
        if (i)
            buf[w++] = '\x1f';
        size_t l = strlen(parts[i]);
        if (l > len - 1 - w)
            l = len - 1 - w;
        memcpy(buf + w, parts[i], l);
        w += l;
    }
    buf[w] = '\0';
    return buf;
}

/* "ns\x1fname" (ns empty for cluster-scoped kinds) into buf. */
static const char *obj_key(char *buf, size_t len, const char *ns, const char *name)
{
    const char *parts[2] = {ns ? ns : "", name};
    return join_key(buf, len, parts, 2);
}

#define KEYMAX 1024

/* ---- the backend forks and the head read through ------------------------------- */

static uint32_t b_count(void *ctx, int kind)
{
    const lview *v = ctx;
    return tly_ptree_count(v->kinds[kind]);
}

static void *b_find(void *ctx, int kind, const char *ns, const char *name)
{
    const lview *v = ctx;
    char key[KEYMAX];
    const lobj *o = tly_ptree_get(v->kinds[kind], obj_key(key, sizeof key, ns, name));
    return o ? o->m : NULL;
}

typedef struct {
    void **out;
    uint32_t n;
} collect;

static int collect_obj(void *ctx, const char *key, void *val)
{
    (void)key;
    collect *c = ctx;
    c->out[c->n++] = ((lobj *)val)->m;
    return 0;
}

static void b_list(void *ctx, int kind, void **out)
{
    const lview *v = ctx;
    collect c = {out, 0};
    tly_ptree_each(v->kinds[kind], collect_obj, &c);
}

typedef struct {
    tly_pod **v;
    uint32_t n, cap;
} podlist;

static int collect_pod(void *ctx, const char *key, void *val)
{
    (void)key;
    podlist *p = ctx;
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 8;
        p->v = tly_xrealloc(p->v, p->cap * sizeof *p->v);
    }
    p->v[p->n++] = val;
    return 0;
}

/* A member index entry's pod: "ns\x1flabel\x1fname" is pod "ns\x1fname" of kinds[pod]. */
typedef struct {
    const lview *v;
    podlist p;
} memberlist;

static int collect_member(void *ctx, const char *key, void *val)
{
    (void)val;
    memberlist *m = ctx;
    const char *first = strchr(key, '\x1f'), *last = strrchr(key, '\x1f');
    if (!first)
        return 0;
    char pkey[KEYMAX];
    size_t nl = (size_t)(first - key), ml = strlen(last);
    if (nl + ml + 1 > sizeof pkey)
        return 0;
    memcpy(pkey, key, nl);
    memcpy(pkey + nl, last, ml + 1);
    lobj *o = tly_ptree_get(m->v->kinds[TLY_K_POD], pkey);
    return o ? collect_pod(&m->p, pkey, o->m) : 0;
}

/* The entries "ns\x1fmid\x1f*" of tree t, in key order, through fn. */
static void range_under(const tly_ptree *t, const char *ns, const char *mid,
                        int (*fn)(void *ctx, const char *key, void *val), void *ctx)
{
    char lo[KEYMAX], hi[KEYMAX];
    snprintf(lo, sizeof lo, "%s\x1f%s\x1f", ns ? ns : "", mid);
    snprintf(hi, sizeof hi, "%s\x1f%s\x20", ns ? ns : "", mid);
    tly_ptree_range(t, lo, hi, fn, ctx);
}

/* The pods of member index ix (rtpods, groups) under (ns, label), newest versions. */
static uint32_t members_under(const lview *v, const tly_ptree *ix, const char *ns, const char *label,
                              tly_pod ***out)
{
    memberlist m = {.v = v};
    range_under(ix, ns, label, collect_member, &m);
    *out = m.p.v;
    return m.p.n;
}

static uint32_t b_runtime_pods(void *ctx, const char *ns, const char *runtime, tly_pod ***out)
{
    const lview *v = ctx;
    return members_under(v, v->rtpods, ns, runtime, out);
}

static void free_queues(void *qs) { tly_queues_destroy(qs); }

/*
** A fork's resize ledger: the one of its generation if a fork built it
** already, else built here and kept for the next forks. Building it is
** O(queues + rows) (3 ms at 2,112 queues, where a decision is 0.03 ms), so
** building it per review made serve on the live state 200x slower than on
** files. The shared set keeps pointers to the queue objects of the fork that
** built it; they are the same objects in every fork of that generation
** (a queue that changes moves the generation on), so they live as long as
** any fork that can be handed the set.
*/
static void *b_derived(void *ctx, tly_store *s, int slot, void (**destroy)(void *))
{
    const lview *v = ctx;
    tly_live *l = v->l;
    if (slot != TLY_DERIVED_RESIZE_LEDGER)
        return NULL;
    *destroy = free_queues;
    pthread_mutex_lock(&l->rlmu);
    tly_queues *qs = l->rl && l->rl_gen == v->ledger_gen ? tly_queues_retain(l->rl) : NULL;
    pthread_mutex_unlock(&l->rlmu);
    if (qs)
        return qs;
    /* The queues and AccountedResources are few: list them; the pods are the rows. */
    qs = tly_queues_create(s);
    tly_ledger_charge_queues(v->rows, qs);
    tly_queues *old = NULL;
    pthread_mutex_lock(&l->rlmu);
    if (!l->rl || l->rl_gen < v->ledger_gen) {
        old = l->rl;
        l->rl = tly_queues_retain(qs);
        l->rl_gen = v->ledger_gen;
    }
    pthread_mutex_unlock(&l->rlmu);
    tly_queues_destroy(old);
    return qs;
}

static void b_release_fork(void *ctx)
{
    lview *v = ctx;
    crdref_drop(v->crds);
    tly_epochs_release(&v->l->ep, v->epoch);
    free(v);
}

static void b_release_head(void *ctx) { (void)ctx; }

static uint64_t b_seen_rv(void *ctx, int kind)
{
    const lview *v = ctx;
    return kind >= 0 && kind < TLY_K_COUNT ? v->seen_rv[kind] : 0;
}

static const tly_store_backend fork_backend = {
    b_count, b_find, b_list, b_runtime_pods, b_derived, b_release_fork, b_seen_rv,
};
static const tly_store_backend head_backend = {
    b_count, b_find, b_list, b_runtime_pods, NULL, b_release_head, NULL,
};

static const tly_config *first_config(const tly_ptree *configs)
{
    void *val;
    return tly_ptree_at(configs, 0, NULL, &val) ? (const tly_config *)((const lobj *)val)->m : NULL;
}

/* ---- life -------------------------------------------------------------------------- */

tly_live *tly_live_create(const tly_live_options *o)
{
    tly_live *l = tly_xcalloc(1, sizeof *l);
    pthread_mutex_init(&l->wmu, NULL);
    tly_epochs_init(&l->ep);
    tly_epochs_init(&l->priv);
    l->on_node = tly_keyindex_new();
    l->in_group = tly_keyindex_new();
    l->names = tly_names_create();
    l->scheduler_name = o && o->scheduler_name ? tly_xstrdup(o->scheduler_name) : NULL;
    l->gating_mode = o ? o->gating_mode : 0;
    l->head_ctx.l = l;
    l->scratch = tly_arena_create(16 * 1024);
    /* A decoded pod of the benchmark's shape takes 2.1-2.5 KiB: one 3 KiB block. */
    l->objarenas = tly_arena_pool_create(3072, 4096);
    l->ddiags = tly_diags_create();
    pthread_mutex_init(&l->dmu, NULL);
    pthread_mutex_init(&l->vmu, NULL);
    pthread_mutex_init(&l->rlmu, NULL);
    pthread_cond_init(&l->changed, NULL);
    return l;
}

static void drop_head(tly_live *l)
{
    if (l->qs)
        tly_queues_destroy(l->qs);
    l->qs = NULL;
    if (l->head)
        tly_store_destroy(l->head);
    l->head = NULL;
}

/* The writer's current state as a store (rebuilt after a non-pod change). */
static tly_store *head(tly_live *l)
{
    memcpy(l->head_ctx.kinds, l->kinds, sizeof l->kinds);
    l->head_ctx.rtpods = l->rtpods;
    l->head_ctx.rows = l->rows;
    if (!l->head) {
        l->head = tly_store_create_view(&head_backend, &l->head_ctx, l->names,
                                        first_config(l->kinds[TLY_K_CONFIG]), l->scheduler_name);
        tly_store_set_gating_mode(l->head, l->gating_mode);
    }
    return l->head;
}

static tly_queues *head_queues(tly_live *l)
{
    if (!l->qs)
        l->qs = tly_queues_create(head(l));
    return l->qs;
}

static int free_lobj_entry(void *ctx, const char *key, void *val)
{
    (void)key;
    tly_live *l = ctx;
    lobj *o = val;
    tly_epochs_retire(&l->ep, o, o->born, lobj_free, l);
    return 0;
}

void tly_live_destroy(tly_live *l)
{
    if (!l)
        return;
    drop_head(l);
    crdref_drop(l->crds);
    tly_queues_destroy(l->rl);
    pthread_mutex_destroy(&l->rlmu);
    tly_arena_destroy(l->scratch);
    tly_diags_destroy(l->ddiags);
    pthread_mutex_destroy(&l->dmu);
    pthread_mutex_destroy(&l->vmu);
    pthread_cond_destroy(&l->changed);
    tly_ptree_free(&l->ep, l->pending);
    tly_ptree_free(&l->ep, l->groups);
    tly_ptree_free(&l->ep, l->runs_on);
    tly_keyindex_free(l->on_node);
    tly_keyindex_free(l->in_group);
    for (int k = 0; k < TLY_K_COUNT; k++) {
        tly_ptree_each(l->kinds[k], free_lobj_entry, l);
        tly_ptree_free(&l->ep, l->kinds[k]);
    }
    tly_ptree_free(&l->ep, l->rtpods);
    tly_ledger_free(&l->ep, l->rows);
    tly_epochs_reclaim(&l->ep);
    tly_epochs_destroy(&l->ep);
    tly_epochs_destroy(&l->priv);
    tly_arena_pool_destroy(l->objarenas);
    tly_names_destroy(l->names);
    free(l->scheduler_name);
    pthread_mutex_destroy(&l->wmu);
    free(l);
}

/* ---- charges --------------------------------------------------------------------- */

/* The largest GPU memory of any node (for pods on nodes the state lacks), and how many have it. */
typedef struct {
    uint64_t best;
    uint32_t count;
} maxmem;

static int max_mem_of(void *ctx, const char *key, void *val)
{
    (void)key;
    maxmem *mm = ctx;
    uint64_t m = tly_node_gpu_memory_mib((const tly_k8s_node *)((lobj *)val)->m);
    if (m > mm->best) {
        mm->best = m;
        mm->count = 1;
    } else if (m && m == mm->best) {
        mm->count++;
    }
    return 0;
}

/* Pod p's charge now, or NULL when it charges nothing. */
static tly_contrib *charge_of(tly_live *l, const tly_pod *p)
{
    tly_store *s = head(l);
    if (!tly_pod_charges_queues(s, p))
        return NULL;
    const tly_k8s_node *n = tly_store_find(s, TLY_K_NODE, NULL, p->node_name);
    tly_arena_reset(l->scratch);
    tly_pod_charge ch;
    tly_queues *qs = head_queues(l);
    tly_pod_charge_compute(s, qs, p, n, l->max_gpu_mem, l->scratch, &ch);
    tly_contrib *c = tly_xmalloc(sizeof *c);
    tly_contrib_from(c, &ch, qs);
    return c;
}

/*
** The ledger moves from what `from` charged to what `to` charges now (either
** may be NULL: a pod that appears or goes). `to` may be `from` itself: a pod
** charged again because something it depends on changed.
*/
static void recharge(tly_live *l, lobj *from, lobj *to)
{
    tly_contrib *old = from ? from->charge : NULL;
    tly_contrib *neu = to ? charge_of(l, (const tly_pod *)to->m) : NULL;
    if (from)
        from->charge = NULL;
    if (old && neu && tly_contrib_equal(old, neu)) {
        contrib_drop(neu);
        to->charge = old;
        return;
    }
    if (old || neu)
        l->ledger_gen++;
    if (old)
        l->rows = tly_ledger_apply(&l->ep, l->rows, old, -1);
    if (neu)
        l->rows = tly_ledger_apply(&l->ep, l->rows, neu, 1);
    if (to)
        to->charge = neu;
    contrib_drop(old);
}

typedef struct {
    tly_live *l;
    char **keys;
    uint32_t n, cap;
} keylist;

static int collect_key(void *ctx, const char *key, void *val)
{
    keylist *k = ctx;
    if (k->n == k->cap) {
        k->cap = k->cap ? k->cap * 2 : 16;
        k->keys = tly_xrealloc(k->keys, k->cap * sizeof *k->keys);
    }
    k->keys[k->n++] = tly_xstrdup(val ? (const char *)val : key);
    return 0;
}

/* Charges again every pod in the list (its object now, or none when it is gone). */
static void recharge_keys(tly_live *l, keylist *k)
{
    for (uint32_t i = 0; i < k->n; i++) {
        lobj *o = tly_ptree_get(l->kinds[TLY_K_POD], k->keys[i]);
        if (o)
            recharge(l, o, o);
        free(k->keys[i]);
    }
    free(k->keys);
    memset(k, 0, sizeof *k);
}

/* Every pod of one group of a writer-only index, in key order. */
static void recharge_group(tly_live *l, const tly_keyindex *ix, const char *group)
{
    const char **members;
    uint32_t n = tly_keyindex_members(ix, group, &members);
    keylist k = {.l = l};
    for (uint32_t i = 0; i < n; i++)
        collect_key(&k, members[i], NULL);
    free(members);
    recharge_keys(l, &k);
}

/* Every pod (a change to what all charges depend on). */
static int collect_pod_key(void *ctx, const char *key, void *val)
{
    (void)val;
    return collect_key(ctx, key, NULL);
}

static void recharge_all(tly_live *l)
{
    keylist k = {.l = l};
    tly_ptree_each(l->kinds[TLY_K_POD], collect_pod_key, &k);
    recharge_keys(l, &k);
}

/* ---- indexes -------------------------------------------------------------------- */

static void index_set(tly_keyindex *ix, const char *group, const char *pkey, bool on)
{
    if (on)
        tly_keyindex_add(ix, group, pkey);
    else
        tly_keyindex_del(ix, group, pkey);
}

/* The writer-only indexes for pod p (on: added, else removed): which pods to charge again. */
static void index_pod(tly_live *l, const char *pkey, const tly_pod *p, bool on)
{
    if (p->node_name && *p->node_name)
        index_set(l->on_node, p->node_name, pkey, on);
    const char *pg = tly_kvs_get(&p->meta.annotations, "pod-group-name");
    if (pg && *pg) {
        char group[KEYMAX * 2];
        index_set(l->in_group, obj_key(group, sizeof group, p->meta.ns, pg), pkey, on);
    }
}

/*
** The member indexes forks read (Runtime Pods by namespace and runtime
** label, pods by namespace and PodGroup annotation) hold keys only: a
** reader finds each pod by its key in kinds[pod] (collect_member). So a new
** version of a pod changes them only when its label or annotation changes,
** not on every bind or status update (it was a second tree put per event).
*/
static const int member_mark = 1;

static bool same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static void index_member(tly_live *l, tly_ptree **ix, const char *label, const tly_pod *p, bool on)
{
    char key[KEYMAX * 2];
    const char *parts[3] = {p->meta.ns, label, p->meta.name};
    /* A label too long for the key would cut the pod's name off: not indexed (not a valid name). */
    if (strlen(p->meta.ns) + strlen(label) + strlen(p->meta.name) + 3 > sizeof key)
        return;
    join_key(key, sizeof key, parts, 3);
    void *prev;
    *ix = on ? tly_ptree_put(&l->ep, *ix, key, (void *)&member_mark, &prev)
             : tly_ptree_del(&l->ep, *ix, key, &prev);
}

/* Moves pod old -> neu (either NULL) in member index ix by the label each has (NULL: none). */
static void reindex_member(tly_live *l, tly_ptree **ix, const tly_pod *old, const char *ol,
                           const tly_pod *neu, const char *nl)
{
    if (old && neu && same_str(ol, nl))
        return;
    if (old && ol)
        index_member(l, ix, ol, old, false);
    if (neu && nl)
        index_member(l, ix, nl, neu, true);
}

static void index_fork_pod(tly_live *l, const tly_pod *old, const tly_pod *neu)
{
    reindex_member(l, &l->rtpods, old, old ? tly_kvs_get(&old->meta.labels, "runtime") : NULL,
                   neu, neu ? tly_kvs_get(&neu->meta.labels, "runtime") : NULL);
    reindex_member(l, &l->groups, old, old ? tly_kvs_get(&old->meta.annotations, "pod-group-name") : NULL,
                   neu, neu ? tly_kvs_get(&neu->meta.annotations, "pod-group-name") : NULL);
}

static bool is_pending(const tly_pod *p)
{
    return (!p->node_name || !*p->node_name) && !tly_pod_terminal(p);
}

/* The pending index holds the pod object itself: refreshed on every change of a pending pod. */
static void index_pending(tly_live *l, const char *pkey, const tly_pod *old, const tly_pod *neu)
{
    void *prev;
    if (neu && is_pending(neu))
        l->pending = tly_ptree_put(&l->ep, l->pending, pkey, (void *)neu, &prev);
    else if (old && is_pending(old))
        l->pending = tly_ptree_del(&l->ep, l->pending, pkey, &prev);
}

/* ---- applying events -------------------------------------------------------------- */

/* Whether a node change can change what its pods charge (labels, GPU memory). */
static bool node_charge_changed(const tly_k8s_node *a, const tly_k8s_node *b)
{
    if (!a || !b)
        return true;
    if (tly_node_gpu_memory_mib(a) != tly_node_gpu_memory_mib(b) || a->meta.labels.n != b->meta.labels.n)
        return true;
    for (uint32_t i = 0; i < a->meta.labels.n; i++) {
        const char *v = tly_kvs_get(&b->meta.labels, a->meta.labels.v[i].key);
        if (!v || strcmp(v, a->meta.labels.v[i].val))
            return true;
    }
    return false;
}

/* Whether the two versions of a pod sit at the same places of the writer's indexes. */
static bool same_index_keys(const tly_pod *a, const tly_pod *b)
{
    return same_str(a->node_name, b->node_name) &&
           same_str(tly_kvs_get(&a->meta.annotations, "pod-group-name"),
                    tly_kvs_get(&b->meta.annotations, "pod-group-name")) &&
           same_str(tly_kvs_get(&a->meta.labels, "runtime"), tly_kvs_get(&b->meta.labels, "runtime"));
}

static void after_pod(tly_live *l, const char *key, lobj *oldo, lobj *newo)
{
    const tly_pod *old = oldo ? (const tly_pod *)oldo->m : NULL;
    const tly_pod *neu = newo ? (const tly_pod *)newo->m : NULL;
    index_pending(l, key, old, neu);
    bool same = old && neu && same_index_keys(old, neu);
    if (old && !same)
        index_pod(l, key, old, false);
    if (neu && !same)
        index_pod(l, key, neu, true);
    index_fork_pod(l, old, neu);
    bool moved = old && neu && old->node_name && neu->node_name && strcmp(old->node_name, neu->node_name);
    if (moved && l->fault == TLY_LIVE_FAULT_STALE_CHARGE) {
        newo->charge = oldo->charge;   /* the test switch: the old charge stays */
        oldo->charge = NULL;
        return;
    }
    recharge(l, oldo, newo);
}

/*
** The largest GPU memory of any node, kept with how many nodes have it, so
** that a node event costs O(1): only when the last node at the maximum
** leaves or shrinks are the nodes scanned again. (A scan per node event made
** a sync of 20,000 nodes quadratic, and every kubelet status update of a
** large cluster a walk over all its nodes.)
*/
static void track_max_mem(tly_live *l, const tly_k8s_node *old, const tly_k8s_node *neu)
{
    uint64_t om = old ? tly_node_gpu_memory_mib(old) : 0, nm = neu ? tly_node_gpu_memory_mib(neu) : 0;
    if (old && om && om == l->max_gpu_mem)
        l->nmax_gpu_mem--;
    if (neu && nm > l->max_gpu_mem) {
        l->max_gpu_mem = nm;
        l->nmax_gpu_mem = 1;
    } else if (neu && nm && nm == l->max_gpu_mem) {
        l->nmax_gpu_mem++;
    }
    if (l->max_gpu_mem && !l->nmax_gpu_mem) {
        maxmem m = {0, 0};
        tly_ptree_each(l->kinds[TLY_K_NODE], max_mem_of, &m);
        l->max_gpu_mem = m.best;
        l->nmax_gpu_mem = m.count;
    }
}

static void after_node(tly_live *l, const tly_k8s_node *old, const tly_k8s_node *neu)
{
    uint64_t before = l->max_gpu_mem;
    track_max_mem(l, old, neu);
    if (l->max_gpu_mem != before) {
        recharge_all(l);  /* pods on nodes the state lacks are charged at the largest GPU memory */
        return;
    }
    if ((!old && !neu) || !node_charge_changed(old, neu))
        return;
    recharge_group(l, l->on_node, neu ? neu->meta.name : old->meta.name);
}

/* Runs by the Pod they are assigned to (the object itself, so every version replaces it). */
static void index_run(tly_live *l, const tly_run *r, bool on)
{
    if (!r || !r->assigned_pod || !*r->assigned_pod)
        return;
    char key[KEYMAX * 2];
    snprintf(key, sizeof key, "%s\x1f%s\x1f%s", r->meta.ns, r->assigned_pod, r->meta.name);
    void *prev;
    l->runs_on = on ? tly_ptree_put(&l->ep, l->runs_on, key, (void *)r, &prev)
                    : tly_ptree_del(&l->ep, l->runs_on, key, &prev);
}

static void after_other(tly_live *l, int kind, const tly_meta *old, const tly_meta *neu)
{
    const tly_meta *m = neu ? neu : old;
    if (!m)
        return;  /* a delete of something that was not there */
    if (kind == TLY_K_RUN) {
        index_run(l, (const tly_run *)old, false);
        index_run(l, (const tly_run *)neu, true);
        return;
    }
    if (kind == TLY_K_PODGROUP) {
        char group[KEYMAX * 2];
        recharge_group(l, l->in_group, obj_key(group, sizeof group, m->ns, m->name));
    } else if (kind == TLY_K_PRIORITY_CLASS || kind == TLY_K_CONFIG ||
               kind == TLY_K_ACCOUNTED_RESOURCE) {
        recharge_all(l);
    }
}

/* Replaces or removes one object and updates everything that depends on it. */
static void change(tly_live *l, int kind, const char *key, lobj *neu)
{
    void *prev = NULL;
    l->kinds[kind] = neu ? tly_ptree_put(&l->ep, l->kinds[kind], key, neu, &prev)
                         : tly_ptree_del(&l->ep, l->kinds[kind], key, &prev);
    lobj *old = prev;
    if (kind != TLY_K_POD)
        drop_head(l);  /* the head's lists of small kinds are stale now */
    if (kind != TLY_K_POD && kind != TLY_K_NODE)
        l->ledger_gen++;  /* queues, AccountedResources, Config (and rarer kinds: to be safe) */
    const tly_meta *om = old ? old->m : NULL, *nm = neu ? neu->m : NULL;
    if (kind == TLY_K_POD)
        after_pod(l, key, old, neu);
    else if (kind == TLY_K_NODE)
        after_node(l, (const tly_k8s_node *)om, (const tly_k8s_node *)nm);
    else
        after_other(l, kind, om, nm);
    __atomic_store_n(&l->counts[kind], tly_ptree_count(l->kinds[kind]), __ATOMIC_RELAXED);
    if (old)
        tly_epochs_retire(&l->ep, old, old->born, lobj_free, l);
}

/* Decodes obj into an arena of its own; NULL when it is not an object tally reads. */
static lobj *decode(tly_live *l, const tly_node *obj, const char *name)
{
    tly_arena *a = tly_arena_pool_get(l->objarenas);
    tly_diags *d = NULL;
    pthread_mutex_t *dm = NULL;
    if (pthread_mutex_trylock(&l->dmu) == 0) {
        dm = &l->dmu;
        d = l->ddiags;
    } else {
        d = tly_diags_create();  /* another reflector is decoding: a list of its own */
    }
    tly_decode_env env = {.arena = a, .names = l->names, .diags = d,
                          .file = tly_arena_strdup(a, name ? name : "-")};
    int errors = 0;
    tly_meta *m = tly_decode_object(&env, obj, &errors);
    if (dm) {
        tly_diags_clear(d);
        pthread_mutex_unlock(dm);
    } else {
        tly_diags_destroy(d);
    }
    if (!m) {
        tly_arena_pool_put(l->objarenas, a);
        return NULL;
    }
    lobj *o = tly_arena_zalloc(a, sizeof *o);
    o->m = m;
    o->a = a;
    o->born = tly_epochs_cur(&l->ep);
    return o;
}

/* Wakes whoever waits for a change (the controllers). */
static void notify(tly_live *l)
{
    pthread_mutex_lock(&l->vmu);
    l->version++;
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&l->vmu);
}

uint64_t tly_live_version(tly_live *l)
{
    pthread_mutex_lock(&l->vmu);
    uint64_t v = l->version;
    pthread_mutex_unlock(&l->vmu);
    return v;
}

uint64_t tly_live_wait(tly_live *l, uint64_t seen, long timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (timeout_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&l->vmu);
    while (l->version == seen && pthread_cond_timedwait(&l->changed, &l->vmu, &until) == 0)
        ;
    uint64_t v = l->version;
    pthread_mutex_unlock(&l->vmu);
    return v;
}

/*
** Ends a change: the writer's lock is released before the large arrays the
** writer-only indexes let go of are freed (unmapping them took milliseconds;
** keyindex.c), so a reader taking a fork never waits for that.
*/
static void unlock_writer(tly_live *l)
{
    void *j1 = tly_keyindex_junk(l->on_node), *j2 = tly_keyindex_junk(l->in_group);
    pthread_mutex_unlock(&l->wmu);
    tly_keyindex_junk_free(j1);
    tly_keyindex_junk_free(j2);
}

int tly_live_apply(tly_live *l, tly_live_op op, const tly_node *obj, const char *name)
{
    lobj *o = decode(l, obj, name);
    if (!o) {
        __atomic_add_fetch(&l->rejected, 1, __ATOMIC_RELAXED);
        return TLY_EINVAL;
    }
    char key[KEYMAX];
    obj_key(key, sizeof key, o->m->ns, o->m->name);
    int kind = o->m->kind;
    pthread_mutex_lock(&l->wmu);
    uint64_t t0 = now_ns();
    o->born = tly_epochs_cur(&l->ep);
    uint64_t rv = tly_rv_number(o->m->resource_version);
    if (!l->sweeping[kind] && rv > l->seen_rv[kind])
        l->seen_rv[kind] = rv;
    if (op == TLY_LIVE_DELETE) {
        change(l, kind, key, NULL);
        tly_epochs_retire(&l->ep, o, o->born, lobj_free, l);
    } else {
        change(l, kind, key, o);
    }
    tly_epochs_reclaim(&l->ep);
    held_for(l, HOLD_WRITE, t0);
    unlock_writer(l);
    __atomic_add_fetch(&l->applied, 1, __ATOMIC_RELAXED);
    notify(l);
    return TLY_OK;
}

void tly_live_note_rv(tly_live *l, int kind, const char *rv)
{
    uint64_t v = tly_rv_number(rv);
    if (kind < 0 || kind >= TLY_K_COUNT || !v)
        return;
    pthread_mutex_lock(&l->wmu);
    if (v > l->seen_rv[kind])
        l->seen_rv[kind] = v;
    pthread_mutex_unlock(&l->wmu);
}

/* ---- relists --------------------------------------------------------------------- */

struct tly_live_sweep {
    tly_live *l;
    int kind;
    tly_ptree *kept;      /* keys the new LIST holds (writer-only map) */
};

tly_live_sweep *tly_live_sweep_begin(tly_live *l, int kind)
{
    tly_live_sweep *sw = tly_xcalloc(1, sizeof *sw);
    sw->l = l;
    sw->kind = kind;
    pthread_mutex_lock(&l->wmu);
    l->sweeping[kind] = true;
    pthread_mutex_unlock(&l->wmu);
    return sw;
}

void tly_live_sweep_keep(tly_live_sweep *sw, const char *ns, const char *name)
{
    char key[KEYMAX];
    void *prev;
    /* The private epoch never moves and is only used by whoever holds the writer lock. */
    pthread_mutex_lock(&sw->l->wmu);
    sw->kept = tly_ptree_put(&sw->l->priv, sw->kept, obj_key(key, sizeof key, ns, name), (void *)1,
                             &prev);
    pthread_mutex_unlock(&sw->l->wmu);
}

void tly_live_sweep_abort(tly_live_sweep *sw)
{
    if (!sw)
        return;
    pthread_mutex_lock(&sw->l->wmu);
    tly_ptree_free(&sw->l->priv, sw->kept);
    sw->l->sweeping[sw->kind] = false;
    pthread_mutex_unlock(&sw->l->wmu);
    free(sw);
}

typedef struct {
    const tly_ptree *kept;
    keylist gone;
} sweep_ctx;

static int not_kept(void *ctx, const char *key, void *val)
{
    (void)val;
    sweep_ctx *c = ctx;
    return tly_ptree_get(c->kept, key) ? 0 : collect_key(&c->gone, key, NULL);
}

uint32_t tly_live_sweep_end(tly_live *l, tly_live_sweep *sw)
{
    pthread_mutex_lock(&l->wmu);
    uint64_t t0 = now_ns();
    sweep_ctx c = {.kept = sw->kept};
    tly_ptree_each(l->kinds[sw->kind], not_kept, &c);
    for (uint32_t i = 0; i < c.gone.n; i++) {
        change(l, sw->kind, c.gone.keys[i], NULL);
        free(c.gone.keys[i]);
    }
    tly_ptree_free(&l->priv, sw->kept);
    l->sweeping[sw->kind] = false;
    tly_epochs_reclaim(&l->ep);
    held_for(l, HOLD_WRITE, t0);
    unlock_writer(l);
    free(c.gone.keys);
    uint32_t n = c.gone.n;
    free(sw);
    __atomic_add_fetch(&l->applied, n, __ATOMIC_RELAXED);
    notify(l);
    return n;
}

/* ---- readers ---------------------------------------------------------------------- */

tly_store *tly_live_fork(tly_live *l)
{
    lview *v = tly_xcalloc(1, sizeof *v);
    v->l = l;
    pthread_mutex_lock(&l->wmu);
    uint64_t t0 = now_ns();
    memcpy(v->kinds, l->kinds, sizeof v->kinds);
    v->rtpods = l->rtpods;
    v->rows = l->rows;
    v->pending = l->pending;
    v->groups = l->groups;
    v->runs_on = l->runs_on;
    memcpy(v->seen_rv, l->seen_rv, sizeof v->seen_rv);
    v->ledger_gen = l->ledger_gen;
    if ((v->crds = l->crds))
        atomic_fetch_add(&v->crds->refs, 1);
    const tly_config *cfg = first_config(l->kinds[TLY_K_CONFIG]);
    v->epoch = tly_epochs_fork(&l->ep);
    held_for(l, HOLD_FORK, t0);
    pthread_mutex_unlock(&l->wmu);
    tly_store *s = tly_store_create_view(&fork_backend, v, l->names, cfg, l->scheduler_name);
    tly_store_set_gating_mode(s, l->gating_mode);
    if (v->crds)
        tly_store_use_crds(s, v->crds->set);
    return s;
}

void tly_live_set_crds(tly_live *l, tly_crdset *set)
{
    crdref *c = NULL;
    if (set) {
        c = tly_xmalloc(sizeof *c);
        c->set = set;
        atomic_init(&c->refs, 1);
    }
    pthread_mutex_lock(&l->wmu);
    crdref *old = l->crds;
    l->crds = c;
    pthread_mutex_unlock(&l->wmu);
    crdref_drop(old);
}

tly_queues *tly_live_queues(tly_store *fork)
{
    lview *v = tly_store_view_ctx(fork);
    if (!v || !v->epoch)
        return NULL;
    tly_queues *qs = tly_queues_create(fork);
    tly_ledger_charge_full(v->rows, qs);
    return qs;
}

uint32_t tly_live_pending(tly_store *fork, tly_pod ***out)
{
    lview *v = tly_store_view_ctx(fork);
    *out = NULL;
    if (!v)
        return 0;
    podlist p = {0};
    tly_ptree_each(v->pending, collect_pod, &p);
    *out = p.v;
    return p.n;
}

uint32_t tly_live_group_pods(tly_store *fork, const char *ns, const char *podgroup, tly_pod ***out)
{
    lview *v = tly_store_view_ctx(fork);
    *out = NULL;
    if (!v)
        return 0;
    return members_under(v, v->groups, ns, podgroup, out);
}

uint32_t tly_live_runs_on_pod(tly_store *fork, const char *ns, const char *pod, tly_run ***out)
{
    lview *v = tly_store_view_ctx(fork);
    *out = NULL;
    if (!v)
        return 0;
    podlist p = {0};
    range_under(v->runs_on, ns, pod, collect_pod, &p);
    *out = (tly_run **)p.v;
    return p.n;
}

uint32_t tly_live_count(const tly_live *l, int kind)
{
    return kind >= 0 && kind < TLY_K_COUNT ? __atomic_load_n(&l->counts[kind], __ATOMIC_RELAXED) : 0;
}

uint64_t tly_live_applied(const tly_live *l) { return __atomic_load_n(&l->applied, __ATOMIC_RELAXED); }
uint64_t tly_live_rejected(const tly_live *l) { return __atomic_load_n(&l->rejected, __ATOMIC_RELAXED); }
uint64_t tly_live_hold_ns(const tly_live *l, bool fork, double quantile)
{
    const uint64_t *h = l->hold_hist[fork ? HOLD_FORK : HOLD_WRITE];
    uint64_t total = 0, seen = 0;
    for (int b = 0; b < 40; b++)
        total += __atomic_load_n(&h[b], __ATOMIC_RELAXED);
    if (!total)
        return 0;
    uint64_t want = (uint64_t)((double)total * quantile);
    if (want >= total)
        want = total - 1;
    for (int b = 0; b < 40; b++) {
        seen += __atomic_load_n(&h[b], __ATOMIC_RELAXED);
        if (seen > want)
            return 1ull << (b + 1);  /* the bucket's upper bound */
    }
    return UINT64_MAX;
}

void tly_live_set_fault(tly_live *l, int fault) { l->fault = fault; }

/* ---- the check --------------------------------------------------------------------- */

typedef struct {
    tly_live *l;
    tly_epochs *e;
    tly_ptree *rows;
} fresh;

static int add_fresh(void *ctx, const char *key, void *val)
{
    (void)key;
    fresh *f = ctx;
    tly_contrib *c = charge_of(f->l, (const tly_pod *)((lobj *)val)->m);
    if (c) {
        f->rows = tly_ledger_apply(f->e, f->rows, c, 1);
        contrib_drop(c);
    }
    return 0;
}

typedef struct {
    const tly_ptree *other;
    int diffs;
    char *why;
    size_t whylen;
} cmp_ctx;

static int cmp_rows(void *ctx, const char *key, void *val)
{
    cmp_ctx *c = ctx;
    const tly_qrow *b = tly_ptree_get(c->other, key);
    if (!b || !tly_qrow_equal(val, b)) {
        if (!c->diffs)
            snprintf(c->why, c->whylen, "queue %s: the incremental row differs from one made from scratch%s",
                     key, b ? "" : " (missing on one side)");
        c->diffs++;
    }
    return 0;
}

int tly_live_check(tly_live *l, char *why, size_t whylen)
{
    pthread_mutex_lock(&l->wmu);
    tly_epochs e;
    tly_epochs_init(&e);
    fresh f = {l, &e, NULL};
    tly_ptree_each(l->kinds[TLY_K_POD], add_fresh, &f);
    cmp_ctx a = {f.rows, 0, why, whylen}, b = {l->rows, 0, why, whylen};
    tly_ptree_each(l->rows, cmp_rows, &a);
    b.diffs = a.diffs;
    tly_ptree_each(f.rows, cmp_rows, &b);
    tly_ledger_free(&e, f.rows);
    tly_epochs_destroy(&e);
    /* The largest GPU memory, kept per node event, against a scan of the nodes. */
    maxmem m = {0, 0};
    tly_ptree_each(l->kinds[TLY_K_NODE], max_mem_of, &m);
    if (m.best != l->max_gpu_mem || (m.best && m.count != l->nmax_gpu_mem)) {
        if (!b.diffs && whylen)
            snprintf(why, whylen, "largest node GPU memory: kept %llu Mi on %u nodes, the nodes say "
                     "%llu Mi on %u", (unsigned long long)l->max_gpu_mem, l->nmax_gpu_mem,
                     (unsigned long long)m.best, m.count);
        b.diffs++;
    }
    pthread_mutex_unlock(&l->wmu);
    if (!b.diffs && whylen)
        why[0] = '\0';
    return b.diffs;
}
