/*
** podsched.c: the pod placement engine under queue policy (podsched.h).
** This is where a pod is matched to a node and its queue charges are
** checked for each candidate node.
**
** State: nodes[] (the store's nodes, name order) with the non-GPU resources
** used by every bound pod and a tly_gpus device model; pods[] (tally's pods,
** (namespace, name) order) with their effective requests; the queues'
** ledger (queues.h). Bound pods are charged first, then pending workloads
** are placed in priority order. A gang is placed tentatively pod by pod
** (each later pod sees the earlier ones' charges, as KAI's statements do)
** and rolled back whole when fewer than its minimum could be placed.
*/
#include "tally/podsched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/accounted.h"
#include "tally/dra.h"
#include "tally/error.h"
#include "tally/gang.h"
#include "tally/nodeclass.h"
#include "tally/nodefit.h"
#include "tally/podcharge.h"
#include "strmap.h"

/*
** Device trials a pod's DRA searches may use on all nodes together: ten
** nodes' worth of the per-node bound (dra.h). Past it the nodes left are
** refused as not searched, and a pod placed nowhere is UnsupportedConstraint.
*/
#define POD_DRA_TRIALS 2000000u


/* One reason nodes were refused, and on how many. */
typedef struct tally_count {
    const char *text;
    uint32_t count;
    uint64_t hash;      /* tly_fnv1a of text: most texts differ here, not after a strcmp */
} tally_count;

/*
** A shape's answer "fits no node" as counts: its reasons (static refusals by
** class, and one per candidate node) and, per candidate node (the position
** in its constraint's candidate list), which of them it is.
*/
typedef struct shape_memo {
    tally_count *cnt;
    uint32_t ncnt, cap;
    uint32_t *why;
} shape_memo;

/* Node k's DRA search for the current pod did not fit, for `why` (podsched's dra_seen). */
struct dra_seen {
    uint64_t epoch;
    const char *why;
};

typedef struct {
    const tly_k8s_node *n;
    tly_rvec used;        /* every resource but GPU devices, from bound and placed pods */
    tly_rvec alloc;       /* the node's allocatable, dense: read for every request on every try */
    tly_gpus gpus;
    uint64_t gpu_mem;     /* MiB per device, 0 when unknown */
    uint64_t free_h;      /* GPU hundredths free: the first bin-pack key */
    tly_i128 free_cpu;    /* allocatable cpu - used cpu, nano-cores: the second */
    uint32_t pos;         /* position in the bin-pack order */
} nstate;

typedef struct {
    tly_ps_result res;
    tly_podreq req;
    tly_dra_choice *dra;     /* its DRA devices: pods with claims only (a choice is 1 KB) */
    const tly_podgroup *pg;
    int32_t subgroup;     /* its leaf subgroup in pg (tly_gang_subgroup_of), or -1 */
    int32_t queue;        /* index in the queues, or -1 */
    uint32_t cid;         /* static constraint id (nodeclass.h), TLY_NC_NONE: node by node */
    uint32_t shape;       /* node shape id (what decides its node fit), UINT32_MAX: none */
    int32_t priority;
    bool non_preemptible;
    bool pending;         /* tally must place it */
    bool done;            /* its state is decided */
    int32_t node;
    tly_qcharge charge;   /* what it was charged (placed or bound) */
    /*
    ** The AccountedResources that can charge it (tly_acc_relevant), when
    ** acc_sparse; a pod with DRA claims is concerned by all of them.
    */
    uint32_t *acc_idx;
    uint32_t nacc_idx;
    uint32_t *job_idx;    /* of those, the ones the workload-level check can charge */
    uint32_t njob_idx;
    bool acc_sparse;
} pstate;

struct tly_podsched {
    tly_store *s;
    tly_names *names;
    tly_arena *a;
    tly_arena *tmp;  /* a unit's workload-level charges: reset per unit */
    tly_queues *qs;
    nstate *nodes;
    uint32_t nnodes;
    pstate *pods;
    uint32_t npods;
    bool gpu_sharing;
    uint64_t max_gpu_mem;
    tly_qty *acc_try, *acc_best;   /* per-node scratch for AccountedResource charges */
    tly_qty *acc_job;              /* scratch for one pod's workload-level charges */
    struct tally_count *counts;    /* per-pod scratch: why nodes were refused */
    tly_acc_match match;           /* AccountedResource node-label matches per node */
    tly_acc_index *accx;           /* which AccountedResources concern which pods */
    uint8_t *ar_unlabeled;         /* per AccountedResource: charges without a node too */
    uint32_t *cls_ars_off, *cls_ars; /* per node class: the AccountedResources matching it */
    uint32_t *cls_idx, *cls_nidx;  /* per node class: this pod's ones among those */
    uint32_t *order;               /* node indices by (free_h, free_cpu, name): fullest first */
    /*
    ** Node classes: nodes with the same GPU memory and the same
    ** AccountedResource label matches charge a pod the same, so within one
    ** pod's scan the queue verdict is computed once per class, not per node.
    */
    uint32_t *node_class, nclasses;
    uint64_t epoch, *cls_epoch;    /* a class's cache entry is valid when its epoch is current */
    int8_t *cls_state;             /* 1 the queues accept, -1 they refuse */
    tly_qverdict *cls_verdict;
    tly_qty *cls_acc;              /* nclasses x naccres charges */
    const char **cls_problem;
    tly_dra *dra;                  /* DRA devices, claims and their charges */
    tly_dra_choice dra_try;        /* the current candidate node's DRA choice */
    /*
    ** A pod's DRA failures in its bin-pack scan, kept for the full scan that
    ** follows when the pod fits nowhere: the same searches of the same
    ** state, so they are not run again (one device search per node). Per
    ** node, the reason and the epoch of the scans it holds for (it holds
    ** while dra_seen[k].epoch == epoch); the texts are in dra_scratch, reset
    ** per pod. Made for the first pod with claims.
    */
    struct dra_seen *dra_seen;
    const char *dra_bound;   /* this pod's DRA search stopped at the bound on some node (why) */
    tly_arena *dra_scratch;
    uint32_t *pg_running;          /* pods Running per PodGroup (store order) */
    uint32_t **sg_running;         /* per PodGroup with subgroups: pods Running per subgroup */
    int32_t *pg_topo_node;         /* per PodGroup: the node of one of its Running pods, or -1 */
    const uint8_t *mask;           /* while a topology domain is tried: its nodes */
    tly_nodeclasses *ncls;         /* static node classes: the predicates once per class */
    const tly_k8s_node **static_nodes;
    tly_strmap relevant_memo;      /* tly_acc_relevant's answers by what it reads of a pod */
    /*
    ** Pods of one node shape (constraint id, requests, GPU request) get the
    ** same answer from every node. When one fit no node, for node reasons
    ** only, its message holds for the next of its shape while no candidate
    ** node has changed: touched[g] is the node changed at node_gen g (every
    ** placement and rollback); shape_gen the node_gen its message was made
    ** at. A later pod of the shape asks again only the candidate nodes that
    ** changed since (shape_answer), and the counts are kept per shape for
    ** that (shape_memo).
    */
    tly_strmap shape_ids;
    uint32_t nshapes;
    uint64_t node_gen, *shape_gen;
    const char **shape_msg;
    struct shape_memo *memo;
    uint32_t *touched, ntouched_cap;
    uint32_t *cand_why;            /* full-scan scratch: per candidate, its reason's index in the counts */
    uint64_t lookup, *seen;        /* per node: the shape_answer call that last asked it */
    const char **insufficient;     /* per resource id: "Insufficient <name>", made when first needed */
    uint32_t ninsufficient;
    tly_ps_unit_hook unit_hook;    /* benchmarks: around each workload's decision */
    void *unit_ctx;
};

/* ---- setup ------------------------------------------------------------------ */

static int32_t node_index(const tly_podsched *ps, const char *name)
{
    uint32_t lo = 0, hi = ps->nnodes;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ps->nodes[mid].n->meta.name, name);
        if (c == 0)
            return (int32_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static bool is_gpu_id(uint32_t id) { return id == TLY_R_NVIDIA_GPU || id == TLY_R_AMD_GPU; }

/* A pod's DRA choice, freed with its storage (NULL: none). */
static void free_choice(tly_dra_choice *c)
{
    if (!c)
        return;
    tly_dra_choice_free(c);
    free(c);
}

/* ---- the bin-pack order ------------------------------------------------------ */

static void refresh_keys(nstate *n)
{
    uint64_t total = (uint64_t)n->gpus.ndev * 100, used = tly_gpus_used_hundredths(&n->gpus);
    n->free_h = total > used ? total - used : 0;
    n->free_cpu = tly_rvec_get(&n->alloc, TLY_R_CPU).nanos -
                  tly_rvec_get(&n->used, TLY_R_CPU).nanos;
}

static int node_key_cmp(const nstate *a, uint32_t ia, const nstate *b, uint32_t ib)
{
    if (a->free_h != b->free_h)
        return a->free_h < b->free_h ? -1 : 1;
    if (a->free_cpu != b->free_cpu)
        return a->free_cpu < b->free_cpu ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

static int cmp_order(const void *pa, const void *pb, void *ctx)
{
    const nstate *nodes = ctx;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return node_key_cmp(&nodes[a], a, &nodes[b], b);
}

/*
** Node k's keys changed: move it to its place in the order. Only the nodes
** between its old and new places shift (a placement usually moves a node a
** short way: bin-packing fills the fullest nodes first).
*/
/* The first position in [lo, hi) whose node sorts after node k (the order is sorted there). */
static uint32_t first_after(const tly_podsched *ps, uint32_t lo, uint32_t hi, uint32_t k)
{
    const uint32_t *o = ps->order;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (node_key_cmp(&ps->nodes[o[mid]], o[mid], &ps->nodes[k], k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void reorder(tly_podsched *ps, uint32_t k)
{
    nstate *n = &ps->nodes[k];
    refresh_keys(n);
    uint32_t *o = ps->order, pos = n->pos, to = pos;
    if (pos > 0 && node_key_cmp(&ps->nodes[o[pos - 1]], o[pos - 1], n, k) > 0) {
        to = first_after(ps, 0, pos, k);  /* earlier */
        memmove(o + to + 1, o + to, (pos - to) * sizeof *o);
    } else if (pos + 1 < ps->nnodes && node_key_cmp(&ps->nodes[o[pos + 1]], o[pos + 1], n, k) < 0) {
        to = first_after(ps, pos + 1, ps->nnodes, k) - 1;  /* later */
        memmove(o + pos, o + pos + 1, (to - pos) * sizeof *o);
    }
    o[to] = k;
    uint32_t from = to < pos ? to : pos, last = to < pos ? pos : to;
    for (uint32_t i = from; i <= last; i++)
        ps->nodes[o[i]].pos = i;
}

/* Position of a PodGroup in the store's (namespace, name) order. */
static uint32_t pg_index(const tly_store *s, const tly_podgroup *pg)
{
    uint32_t lo = 0, hi = tly_store_count(s, TLY_K_PODGROUP);
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const tly_podgroup *x = tly_store_at(s, TLY_K_PODGROUP, mid);
        int c = strcmp(x->meta.ns, pg->meta.ns);
        if (!c)
            c = strcmp(x->meta.name, pg->meta.name);
        if (!c)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static void put32(char **w, uint32_t v)
{
    memcpy(*w, &v, sizeof v);
    *w += sizeof v;
}

/* A remembered answer of tly_acc_relevant. */
typedef struct {
    uint32_t *idx;
    uint32_t n;
} relevant_memo;

/*
** tly_acc_relevant for pod p, remembered by what it reads of a pod: whether
** it asks for GPUs, the ids of its non-zero requests, its annotation keys.
** Pods of one template share the answer (its list is read only), instead
** of merging the index lists again for each of 90,000 pods.
*/
static uint32_t relevant(tly_podsched *ps, const pstate *p, uint32_t **out)
{
    const tly_podreq *r = &p->req;
    const tly_kvs *ann = &p->res.pod->meta.annotations;
    size_t len = (r->req.n + 2) * sizeof(uint32_t);
    for (uint32_t i = 0; i < ann->n; i++)
        len += strlen(ann->v[i].key) + 1;
    char stack[512], *key = len <= sizeof stack ? stack : tly_xmalloc(len), *w = key;
    put32(&w, r->gpu_kind != TLY_GPU_NONE);
    for (uint32_t i = 0; i < r->req.n; i++)
        if (tly_qty_sign(r->req.v[i].q) != 0)
            put32(&w, r->req.v[i].id);
    put32(&w, UINT32_MAX);  /* the end of the ids: no id is UINT32_MAX */
    for (uint32_t i = 0; i < ann->n; i++) {
        size_t n = strlen(ann->v[i].key) + 1;
        memcpy(w, ann->v[i].key, n);
        w += n;
    }
    len = (size_t)(w - key);
    relevant_memo *m = tly_strmap_get(&ps->relevant_memo, key, len);
    if (!m) {
        m = tly_arena_alloc(ps->a, sizeof *m);
        m->n = tly_acc_relevant(ps->accx, p->res.pod, r, ps->a, &m->idx);
        char *kept = tly_arena_alloc(ps->a, len);
        memcpy(kept, key, len);
        tly_strmap_put(&ps->relevant_memo, kept, len, m);
    }
    if (key != stack)
        free(key);
    *out = m->idx;
    return m->n;
}

/* What pod p charges its queues on node `node` (-1: job level, the largest node GPU memory). */
static void make_charge(tly_podsched *ps, pstate *p, int32_t node, bool with_accounted,
                        tly_qcharge *c, const char **problem, tly_arena *a)
{
    memset(c, 0, sizeof *c);
    uint64_t mem = node >= 0 ? ps->nodes[node].gpu_mem : ps->max_gpu_mem;
    uint64_t h = tly_podreq_gpu_hundredths(&p->req, mem);
    c->res[TLY_QR_CPU] = tly_rlist_get(&p->req.req, TLY_R_CPU, NULL);
    c->res[TLY_QR_MEMORY] = tly_rlist_get(&p->req.req, TLY_R_MEMORY, NULL);
    c->res[TLY_QR_GPU] = tly_hundredths_qty(h);
    c->all.v = tly_arena_alloc(a, (p->req.req.n + 2) * sizeof *c->all.v);
    c->all.n = 0;
    for (uint32_t i = 0; i < p->req.req.n; i++) {
        uint32_t id = p->req.req.v[i].id;
        if (id == TLY_R_PODS || is_gpu_id(id))
            continue;
        c->all.v[c->all.n++] = p->req.req.v[i];
    }
    if (h > 0)
        tly_rlist_set(&c->all, a, p->req.gpu_resource, c->res[TLY_QR_GPU]);
    if (with_accounted && node >= 0) {
        /* Into the scratch: only the listed entries (all for a pod with claims). */
        uint32_t *idx = NULL, nidx = 0;
        if (p->res.pod->nclaims == 0)
            nidx = relevant(ps, p, &idx);
        else
            memset(ps->acc_try, 0, tly_queues_naccres(ps->qs) * sizeof *ps->acc_try);
        c->accounted = ps->acc_try;
        c->acc_idx = idx;
        c->nacc_idx = nidx;
        tly_accounted_charges_matched(ps->qs, p->res.pod, &p->req, &ps->match, (uint32_t)node, mem,
                                      idx, nidx, c->accounted, problem, a);
    }
}

/*
** c's non-zero AccountedResource charges packed into the arena (what a pod
** keeps: its size follows the AccountedResources that charge it); c then
** refers to the packed list only.
*/
static void pack_charge(tly_podsched *ps, tly_qcharge *c)
{
    uint32_t nacc = tly_queues_naccres(ps->qs), n = 0, count = tly_qcharge_nacc(c, nacc);
    for (uint32_t e = 0; e < count; e++) {
        tly_qty q;
        tly_qcharge_acc(c, e, &q);
        n += !tly_qty_is_zero(q);
    }
    tly_acc_charge *l = tly_arena_alloc(ps->a, (n + 1) * sizeof *l);
    n = 0;
    for (uint32_t e = 0; e < count; e++) {
        tly_qty q;
        uint32_t a = tly_qcharge_acc(c, e, &q);
        if (!tly_qty_is_zero(q))
            l[n++] = (tly_acc_charge){a, q};
    }
    c->accounted = NULL;
    c->acc_idx = NULL;
    c->nacc_idx = 0;
    c->acc_list = l;
    c->nacc_list = n;
}

/*
** What a DRA choice adds to a charge: its GPU devices count as whole GPUs in
** the gpu dimension and for every AccountedResource source on nvidia.com/gpu
** (or amd.com/gpu) that matches the node; dra sources charge their devices;
** gpu-memory the devices' memory capacity.
*/
static void add_dra(tly_podsched *ps, const pstate *p, uint32_t node, const tly_dra_choice *ch,
                    tly_qty res[TLY_QR_COUNT], tly_qty *acc, const char **problem)
{
    uint32_t g = tly_dra_gpu_devices(ch);
    if (g)
        tly_qty_add(res[TLY_QR_GPU], tly_hundredths_qty((uint64_t)g * 100), &res[TLY_QR_GPU]);
    if (!acc)
        return;
    const uint8_t *row = ps->match.bits + (size_t)node * ps->match.nsrc;
    for (uint32_t k = 0; k < tly_queues_naccres(ps->qs); k++) {
        const tly_accres *ar = tly_queues_accres(ps->qs, k);
        if (tly_queues_accres_is_gpu_memory(ps->qs, k)) {
            tly_qty_add(acc[k], tly_dra_gpu_memory(ch), &acc[k]);
            continue;
        }
        for (uint32_t i = 0; i < ar->nsources && g; i++) {
            const tly_accsrc *src = &ar->sources[i];
            if (src->kind == TLY_SRC_RESOURCE_NAME &&
                (src->resource_id == TLY_R_NVIDIA_GPU || src->resource_id == TLY_R_AMD_GPU) &&
                row[ps->match.off[k] + i])
                tly_qty_add(acc[k], tly_qty_from_int(g, TLY_QFMT_DECIMAL_SI), &acc[k]);
        }
    }
    const char *dp = NULL;
    tly_dra_charges(ps->dra, ps->qs, p->res.pod, ch, acc, &dp);
    if (dp && problem && !*problem)
        *problem = dp;
}

/*
** The charge of pod p on node `node` for checking only: the three KAI
** dimensions and the AccountedResources (into acc, caller's buffer). No
** allocation: this runs for every candidate node.
*/
static void node_charge(tly_podsched *ps, const pstate *p, uint32_t node, tly_qcharge *c,
                        tly_qty *acc, const uint32_t *idx, uint32_t nidx, const char **problem)
{
    memset(c, 0, sizeof *c);
    uint64_t mem = ps->nodes[node].gpu_mem;
    c->res[TLY_QR_CPU] = tly_rlist_get(&p->req.req, TLY_R_CPU, NULL);
    c->res[TLY_QR_MEMORY] = tly_rlist_get(&p->req.req, TLY_R_MEMORY, NULL);
    c->res[TLY_QR_GPU] = tly_hundredths_qty(tly_podreq_gpu_hundredths(&p->req, mem));
    c->accounted = acc;
    if (p->acc_sparse) {
        c->acc_idx = idx;
        c->nacc_idx = nidx;
    }
    tly_accounted_charges_matched(ps->qs, p->res.pod, &p->req, &ps->match, node, mem, c->acc_idx,
                                  c->nacc_idx, acc, problem, ps->a);
    if (p->res.pod->nclaims > 0)
        add_dra(ps, p, node, &ps->dra_try, c->res, acc, problem);
}

/*
** Copies pod p's AccountedResource charges on node class cl from src to dst:
** only the entries in the class's list for the pod when p is sparse.
*/
static void copy_acc(const tly_podsched *ps, const pstate *p, uint32_t cl, tly_qty *dst,
                     const tly_qty *src)
{
    uint32_t nacc = tly_queues_naccres(ps->qs);
    if (!p->acc_sparse) {
        memcpy(dst, src, nacc * sizeof *dst);
        return;
    }
    const uint32_t *idx = ps->cls_idx + (size_t)cl * nacc;
    for (uint32_t e = 0; e < ps->cls_nidx[cl]; e++)
        dst[idx[e]] = src[idx[e]];
}

/* The class's list for pod p: p's AccountedResources that match node class cl. */
static void class_list(tly_podsched *ps, const pstate *p, uint32_t cl)
{
    const uint32_t *a = p->acc_idx, *b = ps->cls_ars + ps->cls_ars_off[cl];
    uint32_t na = p->nacc_idx, nb = ps->cls_ars_off[cl + 1] - ps->cls_ars_off[cl], i = 0, j = 0, n = 0;
    uint32_t *out = ps->cls_idx + (size_t)cl * tly_queues_naccres(ps->qs);
    while (i < na && j < nb) {
        if (a[i] < b[j]) {
            i++;
        } else if (b[j] < a[i]) {
            j++;
        } else {
            out[n++] = a[i];
            i++;
            j++;
        }
    }
    ps->cls_nidx[cl] = n;
}

/*
** sum += c. The accounted part stays sparse while both are: the sum's
** index list becomes the union of the two (both ascending).
*/
static void add_charge(tly_qcharge *sum, const tly_qcharge *c, tly_arena *a, uint32_t nacc)
{
    for (int r = 0; r < TLY_QR_COUNT; r++)
        tly_qty_add(sum->res[r], c->res[r], &sum->res[r]);
    if (tly_qcharge_nacc(c, nacc)) {
        bool fresh = !sum->accounted;
        if (fresh)
            sum->accounted = tly_arena_zalloc(a, (nacc + 1) * sizeof(tly_qty));
        for (uint32_t e = 0; e < tly_qcharge_nacc(c, nacc); e++) {
            tly_qty q;
            uint32_t k = tly_qcharge_acc(c, e, &q);
            tly_qty_add(sum->accounted[k], q, &sum->accounted[k]);
        }
        if (c->acc_list) {
            sum->acc_idx = NULL;  /* the sum is dense from here on */
            sum->nacc_idx = 0;
        } else if (fresh) {
            sum->acc_idx = c->acc_idx;
            sum->nacc_idx = c->nacc_idx;
        } else if (!c->acc_idx || !sum->acc_idx) {
            sum->acc_idx = NULL;
            sum->nacc_idx = 0;
        } else {
            uint32_t *u = tly_arena_alloc(a, (sum->nacc_idx + c->nacc_idx + 1) * sizeof *u);
            uint32_t i = 0, j = 0, n = 0;
            while (i < sum->nacc_idx || j < c->nacc_idx) {
                uint32_t x = i < sum->nacc_idx ? sum->acc_idx[i] : UINT32_MAX;
                uint32_t y = j < c->nacc_idx ? c->acc_idx[j] : UINT32_MAX;
                u[n++] = x < y ? x : y;
                i += x <= y;
                j += y <= x;
            }
            sum->acc_idx = u;
            sum->nacc_idx = n;
        }
    }
    tly_rlist out;
    if (tly_rlist_add(&sum->all, &c->all, a, &out) == TLY_OK)
        sum->all = out;
}

/*
** Pod p's AccountedResource lists: the ones that can charge it, and of those
** the ones that charge without a node. A pod with DRA claims may be charged
** by any AccountedResource and keeps dense charges (acc_sparse false).
*/
static void pod_lists(tly_podsched *ps, pstate *p)
{
    p->acc_sparse = p->res.pod->nclaims == 0;
    if (!p->acc_sparse)
        return;
    p->nacc_idx = relevant(ps, p, &p->acc_idx);
    p->job_idx = tly_arena_alloc(ps->a, (p->nacc_idx + 1) * sizeof *p->job_idx);
    p->njob_idx = 0;
    for (uint32_t e = 0; e < p->nacc_idx; e++)
        if (ps->ar_unlabeled[p->acc_idx[e]])
            p->job_idx[p->njob_idx++] = p->acc_idx[e];
}

/*
** What pod p charges without a node (the workload-level check and
** reservations), from arena a: ps->a for a charge the pod keeps, ps->tmp for
** one that only a decision reads.
*/
static void job_charge(tly_podsched *ps, pstate *p, tly_qcharge *c, tly_arena *a)
{
    uint32_t nacc = tly_queues_naccres(ps->qs);
    make_charge(ps, p, -1, false, c, NULL, a);
    /* Scratch: the entries in the list are all written; readers read only those. */
    c->accounted = p->acc_sparse ? ps->acc_job : tly_arena_zalloc(a, (nacc + 1) * sizeof(tly_qty));
    if (p->acc_sparse) {
        c->acc_idx = p->job_idx;
        c->nacc_idx = p->njob_idx;
    }
    tly_accounted_charges_job(ps->qs, p->res.pod, &p->req, ps->max_gpu_mem, c->acc_idx, c->nacc_idx,
                              c->accounted, a);
    /* KAI's workload-level check counts the GPUs the pod's DRA claims ask for. */
    uint32_t g = p->res.pod->nclaims ? tly_dra_job_gpus(ps->dra, p->res.pod, p->res.queue) : 0;
    if (g) {
        tly_qty gq = tly_hundredths_qty((uint64_t)g * 100), sum;
        tly_qty_add(c->res[TLY_QR_GPU], gq, &c->res[TLY_QR_GPU]);
        tly_qty_add(tly_rlist_get(&c->all, TLY_R_NVIDIA_GPU, NULL), gq, &sum);
        tly_rlist_set(&c->all, a, TLY_R_NVIDIA_GPU, sum);
    }
}

static void use_node(nstate *n, const tly_podreq *r, int sign)
{
    for (uint32_t i = 0; i < r->req.n; i++) {
        if (is_gpu_id(r->req.v[i].id))
            continue;
        tly_rlist one = {(tly_rq *)&r->req.v[i], 1};
        if (sign > 0)
            tly_rvec_add_list(&n->used, &one);
        else
            tly_rvec_sub_list(&n->used, &one);
    }
}

/*
** The running pods' GPU parts, gathered while the pods are read and laid out
** per node once all are known (tly_gpus_layout), so that a node's layout does
** not depend on the order, or the names, of its pods.
*/
typedef struct {
    tly_gpu_use *v;
    uint32_t *node;
    uint32_t n, cap;
} gpu_uses;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct values of p's labels runai-gpu-group and runai-gpu-group/<x>, sorted. */
static const char **gpu_groups(tly_arena *a, const tly_pod *p, uint32_t *n)
{
    static const char key[] = "runai-gpu-group";
    const tly_kvs *l = &p->meta.labels;
    const char **v = NULL;
    *n = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        const char *k = l->v[i].key, *val = l->v[i].val;
        if (!val || !*val || strncmp(k, key, sizeof key - 1) != 0 || (k[sizeof key - 1] && k[sizeof key - 1] != '/'))
            continue;
        if (!v)
            v = tly_arena_alloc(a, l->n * sizeof *v);
        v[(*n)++] = val;
    }
    if (*n < 2)
        return v;
    qsort(v, *n, sizeof *v, cmp_str);
    uint32_t m = 1;
    for (uint32_t i = 1; i < *n; i++)
        if (strcmp(v[i], v[m - 1]) != 0)
            v[m++] = v[i];
    *n = m;
    return v;
}

/* Records a bound pod's GPU part on node ni (nothing when it has none). */
static void gpu_use_add(tly_podsched *ps, gpu_uses *gu, const tly_pod *p, const tly_podreq *r, uint32_t ni)
{
    if (r->gpu_kind != TLY_GPU_WHOLE && r->gpu_kind != TLY_GPU_FRACTION && r->gpu_kind != TLY_GPU_MEMORY)
        return;
    if (gu->n == gu->cap) {
        gu->cap = gu->cap ? 2 * gu->cap : 64;
        gu->v = tly_xrealloc(gu->v, gu->cap * sizeof *gu->v);
        gu->node = tly_xrealloc(gu->node, gu->cap * sizeof *gu->node);
    }
    tly_podreq *copy = tly_arena_alloc(ps->a, sizeof *copy);
    *copy = *r;
    tly_gpu_use *u = &gu->v[gu->n];
    u->req = copy;
    u->groups = r->gpu_kind == TLY_GPU_WHOLE ? NULL : gpu_groups(ps->a, p, &u->ngroups);
    if (r->gpu_kind == TLY_GPU_WHOLE)
        u->ngroups = 0;
    gu->node[gu->n++] = ni;
}

/* Lays out each node's running GPU pods and frees the list. */
static void gpu_uses_layout(tly_podsched *ps, gpu_uses *gu)
{
    uint32_t *start = tly_xcalloc(ps->nnodes + 2, sizeof *start);
    for (uint32_t k = 0; k < gu->n; k++)
        start[gu->node[k] + 2]++;
    for (uint32_t i = 2; i <= ps->nnodes + 1; i++)
        start[i] += start[i - 1];
    tly_gpu_use *by = tly_xmalloc((gu->n + 1) * sizeof *by);
    for (uint32_t k = 0; k < gu->n; k++)
        by[start[gu->node[k] + 1]++] = gu->v[k];
    for (uint32_t i = 0; i < ps->nnodes; i++)
        if (start[i + 1] > start[i])
            (void)tly_gpus_layout(&ps->nodes[i].gpus, by + start[i], start[i + 1] - start[i]);
    free(by);
    free(start);
    free(gu->v);
    free(gu->node);
}

/* A Running pod of a PodGroup: counted for its gang, its subgroup and its topology domain. */
static void count_running(tly_podsched *ps, const pstate *q, int32_t node)
{
    uint32_t pgi = pg_index(ps->s, q->pg);
    ps->pg_running[pgi]++;
    if (q->subgroup >= 0) {
        if (!ps->sg_running[pgi])
            ps->sg_running[pgi] = tly_xcalloc(q->pg->nsubgroups + 1, sizeof **ps->sg_running);
        ps->sg_running[pgi][q->subgroup]++;
    }
    if (node >= 0 && ps->pg_topo_node[pgi] < 0)
        ps->pg_topo_node[pgi] = node;
}

/*
** The static node classes for the pending pods' selectors, and each pending
** pod's constraint id (the others are never tried on a node).
*/
static void static_classes(tly_podsched *ps)
{
    const tly_k8s_node **nl = tly_xmalloc((ps->nnodes + 1) * sizeof *nl);
    const tly_pod **pl = tly_xmalloc((ps->npods + 1) * sizeof *pl);
    uint32_t np = 0;
    for (uint32_t i = 0; i < ps->nnodes; i++)
        nl[i] = ps->nodes[i].n;
    for (uint32_t i = 0; i < ps->npods; i++)
        if (ps->pods[i].pending)
            pl[np++] = ps->pods[i].res.pod;
    ps->ncls = tly_nodeclasses_create(nl, ps->nnodes, pl, np);
    free(pl);
    ps->static_nodes = nl;  /* the classes read them: kept until destroy */
    for (uint32_t i = 0; i < ps->npods; i++)
        ps->pods[i].cid = ps->pods[i].pending ? tly_nodeclasses_constraint(ps->ncls, ps->pods[i].res.pod)
                                              : TLY_NC_NONE;
}

/*
** Pod p's node shape id: what misfit() reads of a pod, exactly (its
** constraint id, every request's id and amount, the GPU request). None for
** pods evaluated node by node or with DRA claims (their devices are chosen
** per node).
*/
static uint32_t node_shape(tly_podsched *ps, const pstate *p)
{
    if (p->cid == TLY_NC_NONE || p->res.pod->nclaims > 0)
        return UINT32_MAX;
    const tly_podreq *r = &p->req;
    size_t len = 7 * sizeof(uint32_t) + sizeof r->gpu_memory_mib + r->req.n * (sizeof(uint32_t) + sizeof(tly_i128));
    char *key = tly_xmalloc(len), *w = key;
    put32(&w, p->cid);
    put32(&w, r->gpu_kind);
    put32(&w, r->gpu_resource);
    put32(&w, r->gpu_devices);
    put32(&w, r->gpu_portion);
    put32(&w, r->mig_gpus);
    memcpy(w, &r->gpu_memory_mib, sizeof r->gpu_memory_mib);
    w += sizeof r->gpu_memory_mib;
    put32(&w, r->req.n);
    for (uint32_t i = 0; i < r->req.n; i++) {
        put32(&w, r->req.v[i].id);
        memcpy(w, &r->req.v[i].q.nanos, sizeof(tly_i128));
        w += sizeof(tly_i128);
    }
    uintptr_t v = (uintptr_t)tly_strmap_get(&ps->shape_ids, key, len);
    if (!v) {
        char *kept = tly_arena_alloc(ps->a, len);
        memcpy(kept, key, len);
        v = ++ps->nshapes;
        tly_strmap_put(&ps->shape_ids, kept, len, (void *)v);
    }
    free(key);
    return (uint32_t)v - 1;
}

/* The shapes of the pending pods and their (empty) answers. */
static void node_shapes(tly_podsched *ps)
{
    tly_strmap_init(&ps->shape_ids);
    for (uint32_t i = 0; i < ps->npods; i++)
        ps->pods[i].shape = ps->pods[i].pending ? node_shape(ps, &ps->pods[i]) : UINT32_MAX;
    ps->shape_gen = tly_xcalloc(ps->nshapes + 1, sizeof *ps->shape_gen);
    ps->shape_msg = tly_xcalloc(ps->nshapes + 1, sizeof *ps->shape_msg);
    ps->memo = tly_xcalloc(ps->nshapes + 1, sizeof *ps->memo);
    ps->cand_why = tly_xmalloc((ps->nnodes + 1) * sizeof *ps->cand_why);
    ps->seen = tly_xcalloc(ps->nnodes + 1, sizeof *ps->seen);
}

tly_podsched *tly_podsched_create(tly_store *s)
{
    tly_podsched *ps = tly_xcalloc(1, sizeof *ps);
    ps->s = s;
    ps->names = tly_store_names(s);
    ps->a = tly_arena_create(256 * 1024);
    ps->tmp = tly_arena_create(64 * 1024);
    ps->qs = tly_queues_create(s);
    ps->acc_try = tly_arena_zalloc(ps->a, (tly_queues_naccres(ps->qs) + 1) * sizeof(tly_qty));
    ps->acc_best = tly_arena_zalloc(ps->a, (tly_queues_naccres(ps->qs) + 1) * sizeof(tly_qty));
    ps->gpu_sharing = tly_gpu_sharing_enabled(tly_store_config(s));
    ps->nnodes = tly_store_count(s, TLY_K_NODE);
    ps->nodes = tly_xcalloc(ps->nnodes + 1, sizeof *ps->nodes);
    /* Reasons are few distinct strings; one slot per node is the most there can be. */
    ps->counts = tly_xcalloc(ps->nnodes + 1, sizeof *ps->counts);
    for (uint32_t i = 0; i < ps->nnodes; i++) {
        nstate *n = &ps->nodes[i];
        n->n = tly_store_at(s, TLY_K_NODE, i);
        tly_rvec_init(&n->used);
        tly_rvec_init(&n->alloc);
        (void)tly_rvec_add_list(&n->alloc, &n->n->allocatable);
        tly_gpus_init(&n->gpus, n->n);
        n->gpu_mem = tly_node_gpu_memory_mib(n->n);
        if (n->gpu_mem > ps->max_gpu_mem)
            ps->max_gpu_mem = n->gpu_mem;
    }
    const tly_k8s_node **nl = tly_xmalloc((ps->nnodes + 1) * sizeof *nl);
    for (uint32_t i = 0; i < ps->nnodes; i++)
        nl[i] = ps->nodes[i].n;
    tly_acc_match_build(&ps->match, ps->qs, nl, ps->nnodes);
    free(nl);
    uint32_t nacc = tly_queues_naccres(ps->qs);
    /*
    ** Per AccountedResource: does it charge without a node too (a source
    ** without match.nodeLabels, or gpu-memory), and can it charge anything
    ** here at all (that, or a source whose labels hold on some node)? The
    ** ones that cannot are left out of every pod's list.
    */
    ps->ar_unlabeled = tly_xcalloc(nacc + 1, 1);
    uint8_t *live = tly_xcalloc(nacc + 1, 1);
    for (uint32_t k = 0; k < nacc; k++) {
        const tly_accres *ar = tly_queues_accres(ps->qs, k);
        ps->ar_unlabeled[k] = tly_queues_accres_is_gpu_memory(ps->qs, k);
        for (uint32_t i = 0; i < ar->nsources; i++)
            if (ar->sources[i].match_node_labels.n == 0)
                ps->ar_unlabeled[k] = 1;
        live[k] = ps->ar_unlabeled[k];
    }
    for (uint32_t i = 0; i < ps->nnodes; i++)
        for (uint32_t k = 0; k < nacc; k++)
            for (uint32_t j = 0; !live[k] && j < tly_queues_accres(ps->qs, k)->nsources; j++)
                live[k] = ps->match.bits[(size_t)i * ps->match.nsrc + ps->match.off[k] + j];
    ps->accx = tly_acc_index_create(ps->qs, live);
    tly_strmap_init(&ps->relevant_memo);
    free(live);
    ps->acc_job = tly_arena_zalloc(ps->a, (nacc + 1) * sizeof(tly_qty));
    uint32_t npg = tly_store_count(s, TLY_K_PODGROUP);
    ps->pg_running = tly_xcalloc(npg + 1, sizeof *ps->pg_running);
    ps->sg_running = tly_xcalloc(npg + 1, sizeof *ps->sg_running);
    ps->pg_topo_node = tly_xmalloc((npg + 1) * sizeof *ps->pg_topo_node);
    for (uint32_t i = 0; i <= npg; i++)
        ps->pg_topo_node[i] = -1;
    ps->dra = tly_dra_create(s);
    tly_dra_choice_init(&ps->dra_try);
    uint32_t np = tly_store_count(s, TLY_K_POD);
    ps->pods = tly_xcalloc(np + 1, sizeof *ps->pods);
    gpu_uses gu = {0};
    for (uint32_t i = 0; i < np; i++) {
        const tly_pod *p = tly_store_at(s, TLY_K_POD, i);
        bool bound = p->node_name && *p->node_name && !tly_pod_terminal(p);
        bool ours = tly_store_is_tally_pod(s, p);
        if (!ours && !bound)
            continue;
        tly_podreq req;
        tly_podreq_compute(p, ours ? ps->gpu_sharing : true, ps->names, ps->a, &req);
        int32_t ni = bound ? node_index(ps, p->node_name) : -1;
        if (ni >= 0) {
            use_node(&ps->nodes[ni], &req, 1);
            if (!tly_pod_is_gpu_reservation(p))
                gpu_use_add(ps, &gu, p, &req, (uint32_t)ni);
        }
        tly_dra_choice *dch = NULL;
        if (p->nclaims > 0) {
            dch = tly_xmalloc(sizeof *dch);
            tly_dra_choice_init(dch);
        }
        if (bound && p->nclaims > 0) {
            /* Devices of bound pods are in use, and their claims charged to their queue. */
            const char *why;
            const char *qn = ours ? tly_store_pod_queue(s, p, NULL) : NULL;
            if (tly_dra_try(ps->dra, p, p->node_name, qn, dch, &why) == 1)
                tly_dra_commit(ps->dra, dch);
        }
        if (!ours) {
            free_choice(dch);
            continue;
        }
        pstate *q = &ps->pods[ps->npods++];
        q->req = req;
        q->dra = dch;
        q->res.pod = p;
        q->res.queue = tly_store_pod_queue(s, p, &q->pg);
        q->subgroup = tly_gang_subgroup_of(q->pg, p);
        q->queue = tly_queues_find(ps->qs, q->res.queue);
        q->priority = tly_pod_priority(s, p, q->pg);
        q->non_preemptible = tly_pod_non_preemptible_at(p, q->pg, q->priority);
        q->node = ni;
        if (tly_pod_terminal(p)) {
            q->res.state = !strcmp(p->phase, "Succeeded") ? "Succeeded" : "Failed";
            q->done = true;
        } else if (bound) {
            q->res.state = "Running";
            if (q->pg)
                count_running(ps, q, ni);
            q->res.node = p->node_name;
            q->done = true;
            if (ni < 0)
                tly_diags_add(tly_store_diags(s), TLY_SEV_NOTE, p->meta.src.file, p->meta.src.line,
                              p->meta.src.col, "Pod",
                              tly_arena_printf(ps->a, "%s/%s", p->meta.ns, p->meta.name), "spec.nodeName",
                              "runs on node %s, which is not in the input; its queue is charged what does "
                              "not depend on the node (its requests, and AccountedResources without node labels)",
                              p->node_name);
            if (q->queue >= 0 && ni < 0) {
                /*
                ** The resources are in use wherever the node is: charge what
                ** the workload-level check charges (GPU shares with the
                ** largest node GPU memory, sources without node labels), as
                ** the resize ledger counts every bound pod.
                */
                pod_lists(ps, q);
                job_charge(ps, q, &q->charge, ps->a);
                pack_charge(ps, &q->charge);
                tly_queues_charge(ps->qs, (uint32_t)q->queue, &q->charge, q->non_preemptible, 1);
                q->res.charges = q->charge.acc_list;
                q->res.ncharges = q->charge.nacc_list;
            }
            if (q->queue >= 0 && ni >= 0) {
                const char *problem;
                make_charge(ps, q, ni, true, &q->charge, &problem, ps->a);
                if (q->dra && q->dra->nclaims) {
                    add_dra(ps, q, (uint32_t)ni, q->dra, q->charge.res, q->charge.accounted, &problem);
                    uint32_t g = tly_dra_gpu_devices(q->dra);
                    if (g) {
                        tly_qty cur = tly_rlist_get(&q->charge.all, TLY_R_NVIDIA_GPU, NULL), sum;
                        tly_qty_add(cur, tly_hundredths_qty((uint64_t)g * 100), &sum);
                        tly_rlist_set(&q->charge.all, ps->a, TLY_R_NVIDIA_GPU, sum);
                    }
                }
                pack_charge(ps, &q->charge);
                tly_queues_charge(ps->qs, (uint32_t)q->queue, &q->charge, q->non_preemptible, 1);
                q->res.charges = q->charge.acc_list;
                q->res.ncharges = q->charge.nacc_list;
                if (problem)
                    q->res.message = problem;
            }
        } else {
            q->pending = true;
            pod_lists(ps, q);
        }
    }
    gpu_uses_layout(ps, &gu);
    static_classes(ps);
    node_shapes(ps);
    /* Node classes by (GPU memory, AccountedResource match row). */
    ps->node_class = tly_xmalloc((ps->nnodes + 1) * sizeof *ps->node_class);
    uint64_t *mem = tly_xmalloc((ps->nnodes + 1) * sizeof *mem);
    for (uint32_t i = 0; i < ps->nnodes; i++)
        mem[i] = ps->nodes[i].gpu_mem;
    ps->nclasses = tly_acc_node_classes(&ps->match, mem, ps->nnodes, ps->node_class);
    free(mem);
    /* Per node class, the AccountedResources with a source whose labels hold there. */
    ps->cls_ars_off = tly_xmalloc((ps->nclasses + 1) * sizeof *ps->cls_ars_off);
    ps->cls_ars = tly_xmalloc(((size_t)ps->nclasses * nacc + 1) * sizeof *ps->cls_ars);
    uint32_t nars = 0;
    for (uint32_t c = 0; c < ps->nclasses; c++) {
        uint32_t r = 0;
        while (ps->node_class[r] != c)
            r++;
        const uint8_t *row = ps->match.bits + (size_t)r * ps->match.nsrc;
        ps->cls_ars_off[c] = nars;
        for (uint32_t k = 0; k < nacc; k++) {
            bool m = tly_queues_accres_is_gpu_memory(ps->qs, k);
            for (uint32_t i = 0; !m && i < tly_queues_accres(ps->qs, k)->nsources; i++)
                m = row[ps->match.off[k] + i];
            if (m)
                ps->cls_ars[nars++] = k;
        }
    }
    ps->cls_ars_off[ps->nclasses] = nars;
    ps->cls_idx = tly_xmalloc(((size_t)ps->nclasses * nacc + 1) * sizeof *ps->cls_idx);
    ps->cls_nidx = tly_xcalloc(ps->nclasses + 1, sizeof *ps->cls_nidx);
    ps->cls_epoch = tly_xcalloc(ps->nclasses + 1, sizeof *ps->cls_epoch);
    ps->cls_state = tly_xcalloc(ps->nclasses + 1, sizeof *ps->cls_state);
    ps->cls_verdict = tly_xcalloc(ps->nclasses + 1, sizeof *ps->cls_verdict);
    ps->cls_acc = tly_xcalloc((size_t)(ps->nclasses + 1) * (nacc + 1), sizeof *ps->cls_acc);
    ps->cls_problem = tly_xcalloc(ps->nclasses + 1, sizeof *ps->cls_problem);
    ps->order = tly_xmalloc((ps->nnodes + 1) * sizeof *ps->order);
    for (uint32_t i = 0; i < ps->nnodes; i++) {
        refresh_keys(&ps->nodes[i]);
        ps->order[i] = i;
    }
    qsort_r(ps->order, ps->nnodes, sizeof *ps->order, cmp_order, ps->nodes);
    for (uint32_t i = 0; i < ps->nnodes; i++)
        ps->nodes[ps->order[i]].pos = i;
    return ps;
}

/* The shapes' kept answers (shape_memo). */
static void free_memos(tly_podsched *ps)
{
    for (uint32_t i = 0; i < ps->nshapes; i++) {
        free(ps->memo[i].cnt);
        free(ps->memo[i].why);
    }
    free(ps->memo);
}

void tly_podsched_destroy(tly_podsched *ps)
{
    if (!ps)
        return;
    for (uint32_t i = 0; i < ps->nnodes; i++) {
        tly_rvec_free(&ps->nodes[i].used);
        tly_rvec_free(&ps->nodes[i].alloc);
        tly_gpus_free(&ps->nodes[i].gpus);
    }
    free(ps->nodes);
    free(ps->counts);
    free(ps->order);
    free(ps->node_class);
    free(ps->cls_epoch);
    free(ps->cls_state);
    free(ps->cls_verdict);
    free(ps->cls_acc);
    free(ps->cls_problem);
    free(ps->ar_unlabeled);
    free(ps->cls_ars_off);
    free(ps->cls_ars);
    free(ps->cls_idx);
    free(ps->cls_nidx);
    for (uint32_t i = 0; i < ps->npods; i++)
        free_choice(ps->pods[i].dra);
    tly_dra_choice_free(&ps->dra_try);
    tly_dra_destroy(ps->dra);
    for (uint32_t i = 0; i < tly_store_count(ps->s, TLY_K_PODGROUP); i++)
        free(ps->sg_running[i]);
    free(ps->sg_running);
    free(ps->pg_topo_node);
    free(ps->pg_running);
    tly_acc_match_free(&ps->match);
    tly_nodeclasses_destroy(ps->ncls);
    tly_strmap_free(&ps->shape_ids);
    tly_strmap_free(&ps->relevant_memo);
    free(ps->shape_gen);
    free(ps->shape_msg);
    free_memos(ps);
    free(ps->touched);
    free(ps->cand_why);
    free(ps->seen);
    free(ps->dra_seen);
    tly_arena_destroy(ps->dra_scratch);
    free(ps->insufficient);
    free(ps->static_nodes);
    tly_acc_index_destroy(ps->accx);
    free(ps->pods);
    tly_queues_destroy(ps->qs);
    tly_arena_destroy(ps->a);
    tly_arena_destroy(ps->tmp);
    free(ps);
}

/* ---- decisions ----------------------------------------------------------------- */

static void decide(pstate *p, const char *state, const char *reason, const char *message)
{
    p->res.state = state;
    p->res.reason = reason;
    p->res.message = message;
    p->done = true;
}

/* A queue-policy verdict: Gated, or Unschedulable when gating is off. */
static void held(tly_podsched *ps, pstate *p, const tly_qverdict *v)
{
    /* A pod of a queue that does not exist is gated whenever gating is on (KAI's D10). */
    bool gating = p->queue >= 0 ? tly_queues_gating(ps->qs, (uint32_t)p->queue)
                                : tly_gating_mode_of(ps->s) != TLY_GATING_OFF;
    decide(p, gating ? "Gated" : "Unschedulable", v->reason, v->message);
}

static const char *foreign_gate(const tly_pod *p)
{
    for (uint32_t i = 0; i < p->ngates; i++)
        if (strcmp(p->gates[i], "kai.scheduler/queue-admission") != 0)
            return p->gates[i];
    return NULL;
}

/* The static predicates of pod p on node k: once per (constraint, class) where p has one. */
static tly_fit_result static_fit(tly_podsched *ps, const pstate *p, uint32_t k, const tly_taint **taint)
{
    if (p->cid == TLY_NC_NONE)
        return tly_nodefit_static(p->res.pod, ps->nodes[k].n, taint);
    return tly_nodeclasses_fit(ps->ncls, p->cid, tly_nodeclasses_of(ps->ncls, k), taint);
}

/* "node(s) had untolerated taint {key: value}", or the predicate's text. */
static const char *static_text(tly_fit_result f, const tly_taint *taint, char *buf, size_t len)
{
    if (f == TLY_FIT_TAINT && taint) {
        /* kube-scheduler names the taint: "had untolerated taint {key: value}". */
        snprintf(buf, len, "node(s) had untolerated taint {%s: %s}", taint->key,
                 taint->value ? taint->value : "");
        return buf;
    }
    return tly_fit_result_text(f);
}

/*
** "Insufficient <resource>", made once per resource in the engine's arena:
** the full scan of a pod that fits nowhere refuses thousands of nodes for a
** few of these, and counts them by address (count_reasons).
*/
static const char *insufficient(tly_podsched *ps, uint32_t id)
{
    if (id >= ps->ninsufficient) {
        uint32_t n = id + 16;
        ps->insufficient = tly_xrealloc(ps->insufficient, n * sizeof *ps->insufficient);
        memset(ps->insufficient + ps->ninsufficient, 0, (n - ps->ninsufficient) * sizeof *ps->insufficient);
        ps->ninsufficient = n;
    }
    if (!ps->insufficient[id])
        ps->insufficient[id] = tly_arena_printf(ps->a, "Insufficient %s", tly_names_str(ps->names, id));
    return ps->insufficient[id];
}

/* The value of a dense vector's entry id, in nano-units (absent: 0). */
static inline tly_i128 rvec_nanos(const tly_rvec *v, uint32_t id)
{
    return id < v->n ? v->v[id].nanos : 0;
}

/*
** Whether request r (> 0) fits beside what node n already runs: used + r no
** more than allocatable, a sum beyond the largest quantity never fitting.
** tly_qty_add and tly_qty_cmp say the same; inline, because every try of
** every pod runs it for each of its requests.
*/
static inline bool room_for(const nstate *n, const tly_rq *r)
{
    tly_i128 total;
    return !__builtin_add_overflow(rvec_nanos(&n->used, r->id), r->q.nanos, &total) &&
           total <= rvec_nanos(&n->alloc, r->id);
}

/*
** Static or resource misfit of pod p on node n: NULL when it fits.
** static_ok: the caller knows n passes the static predicates (a candidate of
** p's constraint), so they are not read again.
*/
static const char *misfit(tly_podsched *ps, const pstate *p, const nstate *n, char *buf, size_t len,
                          bool static_ok)
{
    const tly_taint *taint = NULL;
    tly_fit_result f = static_ok ? TLY_FIT_OK : static_fit(ps, p, (uint32_t)(n - ps->nodes), &taint);
    /* No buffer: the caller only asks whether it fits (the reason is not shown). */
    if (!buf && f != TLY_FIT_OK)
        return "";
    if (f != TLY_FIT_OK)
        return static_text(f, taint, buf, len);
    for (uint32_t i = 0; i < p->req.req.n; i++) {
        const tly_rq *r = &p->req.req.v[i];
        if (is_gpu_id(r->id) || tly_qty_sign(r->q) <= 0)
            continue;
        if (!room_for(n, r))
            return buf ? insufficient(ps, r->id) : "";
    }
    if (p->req.gpu_kind != TLY_GPU_NONE && p->req.gpu_kind != TLY_GPU_MIG &&
        !tly_gpus_place((tly_gpus *)&n->gpus, &p->req, false)) {
        if (p->req.gpu_kind == TLY_GPU_MEMORY && n->gpu_mem == 0)
            return "node(s) without GPU memory information (nvidia.com/gpu.memory)";
        return buf ? insufficient(ps, p->req.gpu_resource) : "";
    }
    return NULL;
}

/* kube-scheduler sorts the whole "<count> <reason>" strings. */
static int cmp_count(const void *a, const void *b)
{
    const tally_count *x = a, *y = b;
    char bx[256], by[256];
    snprintf(bx, sizeof bx, "%u %s", x->count, x->text);
    snprintf(by, sizeof by, "%u %s", y->count, y->text);
    return strcmp(bx, by);
}

/* "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint(s)." */
static char *unschedulable_message(tly_podsched *ps, tally_count *c, uint32_t nc)
{
    qsort(c, nc, sizeof *c, cmp_count);
    /* Room for every reason in full (a DRA reason can be long). */
    size_t cap = 64, len = 0;
    for (uint32_t i = 0; i < nc; i++)
        cap += strlen(c[i].text) + 16;
    char *buf = tly_arena_alloc(ps->a, cap);
    len += (size_t)snprintf(buf, cap, "0/%u nodes are available", ps->nnodes);
    for (uint32_t i = 0; i < nc && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s %u %s", i ? "," : ":", c[i].count, c[i].text);
    if (len < cap)
        snprintf(buf + len, cap - len, ".");
    return buf;
}

/*
** n more nodes refused for `text`. A stable text (a literal, or one of the
** engine's canonical reasons) outlives the count and is kept as is, so the
** next node refused for it is counted by one pointer compare; the others (a
** caller's buffer) are copied. Equal texts at other addresses still count
** together (the string compare), as kube-scheduler counts by text.
*/
static uint32_t count_reasons(tally_count **c, uint32_t *nc, const char *text, bool stable, uint32_t n,
                              tly_arena *a)
{
    /*
    ** A text appears once in c, so the first equal entry is the only one.
    ** DRA reasons name their node and are all different, with long common
    ** prefixes: comparing hashes first keeps this from being n strcmp's
    ** per refused node (about 500,000 per pod at 1,000 nodes).
    */
    for (uint32_t i = 0; i < *nc; i++)
        if ((*c)[i].text == text) {
            (*c)[i].count += n;
            return i;
        }
    uint64_t h = 0;
    if (*nc < 16) {  /* a few texts: strcmp stops at their first difference */
        for (uint32_t i = 0; i < *nc; i++)
            if (!strcmp((*c)[i].text, text)) {
                (*c)[i].count += n;
                return i;
            }
        h = tly_fnv1a(TLY_FNV_SEED, text, strlen(text));
    } else {
        h = tly_fnv1a(TLY_FNV_SEED, text, strlen(text));
        for (uint32_t i = 0; i < *nc; i++)
            if ((*c)[i].hash == h && !strcmp((*c)[i].text, text)) {
                (*c)[i].count += n;
                return i;
            }
    }
    (*c)[*nc] = (tally_count){stable ? text : tly_arena_strdup(a, text), n, h};
    return (*nc)++;
}

/* One more node refused for `text`; the index of its count. */
static uint32_t count_reason(tally_count **c, uint32_t *nc, const char *text, bool stable, tly_arena *a)
{
    return count_reasons(c, nc, text, stable, 1, a);
}

typedef struct {
    uint32_t pod;
    int32_t node;
    tly_gpus before;     /* the node's devices before this placement */
} placement;

/* Node k's state changed: the shapes' answers are asked about it again (shape_answer). */
static void touch_node(tly_podsched *ps, uint32_t k)
{
    if (ps->node_gen == ps->ntouched_cap) {
        ps->ntouched_cap = ps->ntouched_cap ? 2 * ps->ntouched_cap : 1024;
        ps->touched = tly_xrealloc(ps->touched, ps->ntouched_cap * sizeof *ps->touched);
    }
    ps->touched[ps->node_gen++] = k;
}

/* Keeps the full scan's counts and per-candidate reasons as the shape's answer (before they are sorted). */
static void shape_keep(tly_podsched *ps, const pstate *p, const tally_count *c, uint32_t nc, uint32_t ncand)
{
    shape_memo *m = &ps->memo[p->shape];
    if (nc + 8 > m->cap) {
        m->cap = nc + 8;
        m->cnt = tly_xrealloc(m->cnt, m->cap * sizeof *m->cnt);
    }
    memcpy(m->cnt, c, nc * sizeof *c);
    m->ncnt = nc;
    if (!m->why)
        m->why = tly_xmalloc((ncand + 1) * sizeof *m->why);
    memcpy(m->why, ps->cand_why, ncand * sizeof *m->why);
}

/* The index of `text` among the shape's reasons, added with no node when new (texts here are stable). */
static uint32_t memo_reason(shape_memo *m, const char *text)
{
    uint64_t h = tly_fnv1a(TLY_FNV_SEED, text, strlen(text));
    for (uint32_t i = 0; i < m->ncnt; i++)
        if (m->cnt[i].text == text || (m->cnt[i].hash == h && !strcmp(m->cnt[i].text, text)))
            return i;
    if (m->ncnt == m->cap) {
        m->cap = 2 * m->cap + 8;
        m->cnt = tly_xrealloc(m->cnt, m->cap * sizeof *m->cnt);
    }
    m->cnt[m->ncnt] = (tally_count){text, 0, h};
    return m->ncnt++;
}

/* Position of node k in the ascending candidate list cand[0..n) (k is in it). */
static uint32_t cand_pos(const uint32_t *cand, uint32_t n, uint32_t k)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cand[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
** The message of p's shape when it still holds, or NULL. The candidate nodes
** changed since it was made are asked again, and the shape's counts follow
** their new reasons (placing a pod can turn a node's "Insufficient
** nvidia.com/gpu" into "Insufficient cpu"); a node that now takes the pod's
** requests ends the answer (the full scan then runs: the queues may accept).
** The message is what a full scan would give: the same counts, sorted.
*/
static const char *shape_answer(tly_podsched *ps, const pstate *p)
{
    if (p->shape == UINT32_MAX || !ps->shape_msg[p->shape] || ps->mask)
        return NULL;  /* within a topology domain the answer is the domain's, not the shape's */
    uint64_t from = ps->shape_gen[p->shape];
    if (from == ps->node_gen)
        return ps->shape_msg[p->shape];
    shape_memo *m = &ps->memo[p->shape];
    const uint8_t *ok = tly_nodeclasses_node_ok(ps->ncls, p->cid);
    uint32_t ncand;
    const uint32_t *cand = tly_nodeclasses_candidates(ps->ncls, p->cid, &ncand);
    char buf[160];
    bool changed = false;
    ps->lookup++;
    for (uint64_t g = from; g < ps->node_gen; g++) {
        uint32_t k = ps->touched[g];
        if (!ok[k] || ps->seen[k] == ps->lookup)
            continue;
        ps->seen[k] = ps->lookup;
        const char *why = misfit(ps, p, &ps->nodes[k], buf, sizeof buf, true);
        if (!why) {
            ps->shape_msg[p->shape] = NULL;
            return NULL;
        }
        uint32_t j = cand_pos(cand, ncand, k), r = memo_reason(m, why);
        if (r != m->why[j]) {
            m->cnt[m->why[j]].count--;
            m->cnt[r].count++;
            m->why[j] = r;
            changed = true;
        }
    }
    ps->shape_gen[p->shape] = ps->node_gen;
    if (changed) {
        uint32_t nc = 0;
        for (uint32_t i = 0; i < m->ncnt; i++)
            if (m->cnt[i].count)
                ps->counts[nc++] = m->cnt[i];
        ps->shape_msg[p->shape] = unschedulable_message(ps, ps->counts, nc);
    }
    return ps->shape_msg[p->shape];
}

/* The nodes whose class the static predicates refuse pod p, counted by reason, class by class. */
static void static_refusals(tly_podsched *ps, const pstate *p, tally_count **counts, uint32_t *nc)
{
    char buf[160];
    for (uint32_t c = 0; c < tly_nodeclasses_count(ps->ncls); c++) {
        const tly_taint *taint;
        tly_fit_result f = tly_nodeclasses_fit(ps->ncls, p->cid, c, &taint);
        if (f != TLY_FIT_OK)
            count_reasons(counts, nc, static_text(f, taint, buf, sizeof buf), false,
                          tly_nodeclasses_size(ps->ncls, c), ps->a);
    }
}

/*
** What try_node does with the pod's DRA search on the node: search
** (DRA_SEARCH), search and keep a failure's reason for this pod's scans
** (DRA_KEEP: the bin-pack scan), or read the reason kept by this pod's
** earlier scan where there is one, else search (DRA_REUSE: the full scan).
*/
typedef enum { DRA_SEARCH, DRA_KEEP, DRA_REUSE } dra_memo;

/*
** Can pod p go to node k now? 1 yes; 0 no for node reasons (why in *why);
** -1 no for queue policy (verdict in *v, message formatted unless quiet);
** -2 the pod's DRA claims use something tally does not evaluate (why).
** The AccountedResource charges on k are left in ps->acc_try.
*/
static int class_check(tly_podsched *ps, const pstate *p, uint32_t k, bool gating, tly_qverdict *v,
                       const char **problem);

static int try_node(tly_podsched *ps, const pstate *p, uint32_t k, bool gating, tly_qverdict *v,
                    const char **why, char *buf, size_t len, const char **problem, bool static_ok,
                    dra_memo memo)
{
    if (ps->mask && !ps->mask[k]) {
        *why = "node(s) outside the topology domain tried";
        return 0;
    }
    *why = misfit(ps, p, &ps->nodes[k], buf, len, static_ok);
    if (*why)
        return 0;
    bool claims = p->res.pod->nclaims > 0;
    if (claims) {
        /* The pod's DRA claims on this node: devices of the requested classes. */
        if (memo == DRA_REUSE && ps->dra_seen && ps->dra_seen[k].epoch == ps->epoch) {
            *why = ps->dra_seen[k].why;
            return 0;
        }
        int r = tly_dra_try(ps->dra, p->res.pod, ps->nodes[k].n->meta.name, p->res.queue,
                            &ps->dra_try, why);
        if (r == TLY_DRA_BOUND) {
            /* Not evaluated here: this node is refused, the others are still tried. */
            if (!ps->dra_bound)
                ps->dra_bound = tly_arena_strdup(ps->a, *why);
            r = 0;
        }
        if (r == 0) {
            if (memo == DRA_KEEP)  /* *why lasts until the next try: copied */
                ps->dra_seen[k] = (struct dra_seen){ps->epoch, tly_arena_strdup(ps->dra_scratch, *why)};
            return 0;
        }
        if (r < 0)
            return -2;
        *why = NULL;
    }
    return class_check(ps, p, k, gating, v, problem);
}

/*
** The queue verdict for pod p on node k's class (1 accepted, -1 refused,
** with *v and *problem), from the class cache while it holds for this pod.
*/
static int class_check(tly_podsched *ps, const pstate *p, uint32_t k, bool gating, tly_qverdict *v,
                       const char **problem)
{
    bool claims = p->res.pod->nclaims > 0;
    uint32_t cl = ps->node_class[k], nacc = tly_queues_naccres(ps->qs);
    tly_qty *acc = ps->cls_acc + (size_t)cl * (nacc + 1);
    /* A pod with claims is charged by the devices chosen on each node: no class cache. */
    if (!claims && ps->cls_epoch[cl] == ps->epoch &&
        (ps->cls_state[cl] > 0 || v->quiet || ps->cls_verdict[cl].message)) {
        *problem = ps->cls_problem[cl];
        if (ps->cls_state[cl] > 0) {
            copy_acc(ps, p, cl, ps->acc_try, acc);
            v->ok = true;
            return 1;
        }
        bool quiet = v->quiet;
        *v = ps->cls_verdict[cl];
        v->quiet = quiet;
        return -1;
    }
    tly_qcharge c;
    if (p->acc_sparse)
        class_list(ps, p, cl);
    node_charge(ps, p, k, &c, ps->acc_try, ps->cls_idx + (size_t)cl * nacc, ps->cls_nidx[cl],
                problem);
    tly_queues_check(ps->qs, (uint32_t)p->queue, &c, p->non_preemptible, gating, v);
    ps->cls_epoch[cl] = ps->epoch;
    ps->cls_state[cl] = v->ok ? 1 : -1;
    ps->cls_verdict[cl] = *v;
    ps->cls_problem[cl] = *problem;
    copy_acc(ps, p, cl, acc, ps->acc_try);
    return v->ok ? 1 : -1;
}

/*
** For a pod that fits no node and that a placement-dependent limit refused on
** some: whether the limits bind on every node class the pod could use (the
** static predicates hold there). NULL when they do: the pod is held by queue
** policy. Otherwise some class the pod could use accepts it and only room is
** missing there, so it is a node-fit failure, and the result is the messages
** of the limits that bind on the other classes (distinct, sorted), which the
** pod's message names beside the node-fit reasons (contract section 3).
*/
static const char *policy_elsewhere(tly_podsched *ps, const pstate *p, bool gating)
{
    uint8_t *seen = tly_xcalloc(ps->nclasses + 1, 1);
    const char **msg = tly_xmalloc((ps->nclasses + 1) * sizeof *msg);
    uint32_t nmsg = 0;
    bool spared = false;
    for (uint32_t k = 0; k < ps->nnodes; k++) {
        uint32_t cl = ps->node_class[k];
        const tly_taint *taint;
        /* The static predicates by class where the pod has a constraint id: a byte read per node. */
        if (seen[cl] || (ps->mask && !ps->mask[k]) || static_fit(ps, p, k, &taint) != TLY_FIT_OK)
            continue;
        seen[cl] = 1;
        tly_qverdict v = {.quiet = false};
        const char *problem = NULL;
        if (class_check(ps, p, k, gating, &v, &problem) > 0)
            spared = true;
        else if (v.message)
            msg[nmsg++] = v.message;
    }
    const char *out = NULL;
    if (spared) {
        qsort(msg, nmsg, sizeof *msg, cmp_str);
        size_t cap = 1;
        for (uint32_t i = 0; i < nmsg; i++)
            cap += strlen(msg[i]) + 1;
        char *b = tly_arena_alloc(ps->a, cap), *w = b;
        for (uint32_t i = 0; i < nmsg; i++) {
            if (i && !strcmp(msg[i], msg[i - 1]))
                continue;
            w += sprintf(w, "%s%s", w == b ? "" : " ", msg[i]);
        }
        *w = 0;
        out = b;
    }
    free(seen);
    free(msg);
    return out;
}

/*
** Tries to place pod p now; on success applies it and fills *pl.
**
** Fast path: the nodes are kept in bin-pack order (fewest free GPU
** hundredths, then least free CPU, then name), and for every request but
** gpu-memory the pod takes the same GPU amount on every node, so the first
** node in that order where it fits is the best one: scan from the first node
** with enough free GPU and stop there. A gpu-memory pod (its GPU share
** depends on the node) and a pod that fits nowhere take the full scan, which
** also counts the reasons for the message.
*/
static bool place_pod(tly_podsched *ps, uint32_t pi, bool gating, placement *pl,
                      tly_qverdict *policy, bool *any_policy, char **nodes_msg,
                      const char **unsupported)
{
    pstate *p = &ps->pods[pi];
    char buf[160];
    const char *why, *problem = NULL, *best_problem = NULL;
    int32_t best = -1;
    ps->epoch++;  /* the class cache holds for this pod's scans, while nothing changes */
    ps->dra_bound = NULL;
    if (ps->dra)
        tly_dra_set_budget(ps->dra, POD_DRA_TRIALS);
    const char *known = shape_answer(ps, p);
    if (known) {
        *nodes_msg = (char *)known;
        return false;
    }
    if (p->req.gpu_kind != TLY_GPU_MEMORY) {
        uint64_t h = tly_podreq_gpu_hundredths(&p->req, 0);
        uint32_t lo = 0, hi = ps->nnodes;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (ps->nodes[ps->order[mid]].free_h < h)
                lo = mid + 1;
            else
                hi = mid;
        }
        /* A pod with claims keeps its DRA failures for the full scan (dra_seen). */
        dra_memo memo = DRA_SEARCH;
        if (p->res.pod->nclaims) {
            if (!ps->dra_seen) {
                ps->dra_seen = tly_xcalloc(ps->nnodes + 1, sizeof *ps->dra_seen);
                ps->dra_scratch = tly_arena_create(64 * 1024);
            }
            tly_arena_reset(ps->dra_scratch);
            memo = DRA_KEEP;
        }
        /* Nodes the static predicates refuse are skipped by a byte (no reason is kept here). */
        const uint8_t *ok = p->cid != TLY_NC_NONE ? tly_nodeclasses_node_ok(ps->ncls, p->cid) : NULL;
        for (uint32_t i = lo; i < ps->nnodes && best < 0; i++) {
            uint32_t k = ps->order[i];
            if (ok && !ok[k])
                continue;
            tly_qverdict v = {.quiet = true};
            int r = try_node(ps, p, k, gating, &v, &why, NULL, 0, &problem, ok != NULL, memo);
            if (r == -2) {
                *unsupported = tly_arena_strdup(ps->a, why);
                return false;
            }
            if (r == 1) {
                best = (int32_t)k;
                best_problem = problem;
                tly_qty *t = ps->acc_best;
                ps->acc_best = ps->acc_try;
                ps->acc_try = t;
            }
        }
    }
    if (best < 0) {
        /* The full scan, in name order: the best node for a gpu-memory pod, or
           why the pod fits nowhere. */
        tally_count *counts = ps->counts;
        uint32_t nc = 0;
        uint64_t best_free = 0;
        tly_i128 best_cpu = 0;
        /* Nodes the static predicates refuse are counted by class; the rest are tried in name order. */
        uint32_t ncand = ps->nnodes;
        const uint32_t *cand = NULL;
        if (p->cid != TLY_NC_NONE) {
            cand = tly_nodeclasses_candidates(ps->ncls, p->cid, &ncand);
            static_refusals(ps, p, &counts, &nc);
        }
        for (uint32_t j = 0; j < ncand; j++) {
            uint32_t k = cand ? cand[j] : j;
            tly_qverdict v = {.quiet = *any_policy};
            int r = try_node(ps, p, k, gating, &v, &why, buf, sizeof buf, &problem, cand != NULL,
                             DRA_REUSE);
            if (r == -2) {
                *unsupported = tly_arena_strdup(ps->a, why);
                return false;
            }
            if (r == 0) {
                /* Not stable: a taint text in buf, or a DRA reason in the try's choice. */
                ps->cand_why[j] = count_reason(&counts, &nc, why, why != buf && !p->res.pod->nclaims, ps->a);
                continue;
            }
            if (r < 0) {
                if (!*any_policy)
                    *policy = v;
                *any_policy = true;
                count_reason(&counts, &nc, v.reason, true, ps->a);  /* a literal (queues.c) */
                continue;
            }
            nstate *n = &ps->nodes[k];
            uint64_t h = tly_podreq_gpu_hundredths(&p->req, n->gpu_mem);
            uint64_t free_after = n->free_h > h ? n->free_h - h : 0;
            tly_i128 cpu_after = n->free_cpu - tly_rlist_get(&p->req.req, TLY_R_CPU, NULL).nanos;
            if (best < 0 || free_after < best_free || (free_after == best_free && cpu_after < best_cpu)) {
                best = (int32_t)k;
                best_free = free_after;
                best_cpu = cpu_after;
                best_problem = problem;
                tly_qty *t = ps->acc_best;
                ps->acc_best = ps->acc_try;
                ps->acc_try = t;
            }
        }
        if (best < 0 && ps->dra_bound) {
            /* Some node was not searched to the end: not evaluated, not unschedulable. */
            *unsupported = ps->dra_bound;
            return false;
        }
        if (best < 0) {
            bool keep = p->shape != UINT32_MAX && !*any_policy && !ps->mask;
            if (keep)
                shape_keep(ps, p, counts, nc, ncand);
            *nodes_msg = unschedulable_message(ps, counts, nc);
            const char *where;
            if (*any_policy && !p->res.pod->nclaims && (where = policy_elsewhere(ps, p, gating))) {
                /* Not queue policy: a node of the class the limit spares would run it. */
                *nodes_msg = tly_arena_printf(ps->a, "%s %s", *nodes_msg, where);
                *any_policy = false;
            } else if (keep) {
                /* Node reasons only: the answer of every pod of this shape until a candidate changes. */
                ps->shape_msg[p->shape] = *nodes_msg;
                ps->shape_gen[p->shape] = ps->node_gen;
            }
            return false;
        }
    }
    nstate *n = &ps->nodes[best];
    pl->pod = pi;
    pl->node = best;
    tly_qcharge best_charge;
    make_charge(ps, p, best, false, &best_charge, NULL, ps->a);
    /* The charges on the chosen node's class, packed: what the pod keeps. */
    uint32_t bcl = ps->node_class[best];
    best_charge.accounted = ps->acc_best;
    if (p->acc_sparse) {
        best_charge.acc_idx = ps->cls_idx + (size_t)bcl * tly_queues_naccres(ps->qs);
        best_charge.nacc_idx = ps->cls_nidx[bcl];
    }
    pack_charge(ps, &best_charge);
    if (p->res.pod->nclaims > 0) {
        /* Choose the devices on the chosen node again (the scan moved on) and take them. */
        const char *dwhy;
        tly_dra_set_budget(ps->dra, UINT64_MAX);  /* it fit within the budget once already */
        tly_dra_choice_free(p->dra);
        tly_dra_choice_init(p->dra);
        tly_dra_try(ps->dra, p->res.pod, n->n->meta.name, p->res.queue, p->dra, &dwhy);
        tly_dra_commit(ps->dra, p->dra);
        uint32_t g = tly_dra_gpu_devices(p->dra);
        if (g) {
            tly_qty gq = tly_hundredths_qty((uint64_t)g * 100), cur, sum;
            tly_qty_add(best_charge.res[TLY_QR_GPU], gq, &best_charge.res[TLY_QR_GPU]);
            cur = tly_rlist_get(&best_charge.all, TLY_R_NVIDIA_GPU, NULL);
            tly_qty_add(cur, gq, &sum);
            tly_rlist_set(&best_charge.all, ps->a, TLY_R_NVIDIA_GPU, sum);
        }
    }
    tly_gpus_copy(&pl->before, &n->gpus);
    touch_node(ps, (uint32_t)best);
    use_node(n, &p->req, 1);
    tly_gpus_place(&n->gpus, &p->req, true);
    reorder(ps, (uint32_t)best);
    tly_queues_charge(ps->qs, (uint32_t)p->queue, &best_charge, p->non_preemptible, 1);
    p->charge = best_charge;
    p->node = best;
    if (best_problem)
        p->res.message = best_problem;
    return true;
}

static void undo(tly_podsched *ps, placement *pl)
{
    pstate *p = &ps->pods[pl->pod];
    nstate *n = &ps->nodes[pl->node];
    touch_node(ps, (uint32_t)pl->node);
    use_node(n, &p->req, -1);
    tly_gpus_free(&n->gpus);
    n->gpus = pl->before;
    reorder(ps, (uint32_t)pl->node);
    tly_queues_charge(ps->qs, (uint32_t)p->queue, &p->charge, p->non_preemptible, -1);
    if (p->dra && p->dra->nclaims) {
        tly_dra_undo(ps->dra, p->dra);
        tly_dra_choice_free(p->dra);
        tly_dra_choice_init(p->dra);
    }
    p->node = -1;
    p->res.message = NULL;
}

/* ---- gangs ------------------------------------------------------------------------- */

/* One attempt at placing a unit's pods, and what each pod met. */
typedef struct {
    placement *pl;          /* the placements made, in order */
    uint32_t placed;
    char **msgs;            /* per pod: why no node fits */
    bool *pol;              /* per pod: refused by queue policy */
    tly_qverdict *pols;
    const char **unsup;     /* per pod: UnsupportedConstraint (then decided) */
    tly_qverdict policy;    /* the first policy refusal */
    bool any_policy;
    const char *gang_msg;   /* why the gang as a whole cannot run, or NULL */
    const char *topo_msg;   /* why no topology domain takes it, or NULL */
} attempt;

static void attempt_init(tly_podsched *ps, attempt *at, uint32_t n)
{
    memset(at, 0, sizeof *at);
    at->pl = tly_xmalloc((n + 1) * sizeof *at->pl);
    at->msgs = tly_arena_zalloc(ps->a, n * sizeof *at->msgs);
    at->pol = tly_arena_zalloc(ps->a, n * sizeof *at->pol);
    at->pols = tly_arena_zalloc(ps->a, n * sizeof *at->pols);
    at->unsup = tly_arena_zalloc(ps->a, n * sizeof *at->unsup);
}

/* Places the unit's pods in order, leaving out those with skip[k] set. */
static void attempt_run(tly_podsched *ps, const uint32_t *unit, uint32_t n, bool gating,
                        const uint8_t *skip, attempt *at)
{
    at->placed = 0;
    at->any_policy = false;
    for (uint32_t k = 0; k < n; k++) {
        at->msgs[k] = NULL;
        at->pol[k] = false;
        if ((skip && skip[k]) || ps->pods[unit[k]].done)
            continue;
        bool anyp = false;
        tly_qverdict pv = {0};
        if (place_pod(ps, unit[k], gating, &at->pl[at->placed], &pv, &anyp, &at->msgs[k], &at->unsup[k])) {
            at->placed++;
            continue;
        }
        if (at->unsup[k]) {
            decide(&ps->pods[unit[k]], "Unschedulable", "UnsupportedConstraint", at->unsup[k]);
            continue;
        }
        at->pol[k] = anyp;
        at->pols[k] = pv;
        if (anyp && !at->any_policy) {
            at->policy = pv;
            at->any_policy = true;
        }
    }
}

/* Takes every placement of the attempt back, newest first. */
static void attempt_undo(tly_podsched *ps, attempt *at)
{
    for (uint32_t k = at->placed; k-- > 0;)
        undo(ps, &at->pl[k]);
    at->placed = 0;
}

static void bind_placed(tly_podsched *ps, attempt *at)
{
    for (uint32_t k = 0; k < at->placed; k++) {
        pstate *p = &ps->pods[at->pl[k].pod];
        tly_gpus_free(&at->pl[k].before);
        p->res.node = ps->nodes[p->node].n->meta.name;
        p->res.charges = p->charge.acc_list;
        p->res.ncharges = p->charge.nacc_list;
        decide(p, "Bound", NULL, p->res.message);
    }
}

/* The running pods of pg per subgroup (count[i]) and in all (the return value). */
static uint32_t running_in_subgroups(const tly_podsched *ps, const tly_podgroup *pg, uint32_t *count)
{
    uint32_t pgi = pg_index(ps->s, pg);
    for (uint32_t i = 0; i < pg->nsubgroups; i++)
        count[i] = ps->sg_running && ps->sg_running[pgi] ? ps->sg_running[pgi][i] : 0;
    return ps->pg_running[pgi];
}

/*
** For a PodGroup with subgroups: the pods each leaf subgroup needs for its
** minimum go first, in unit order, then the rest, so that optional pods of
** one subgroup cannot take the room another's minimum needs.
*/
static void order_required_first(tly_podsched *ps, const tly_podgroup *pg, uint32_t *unit, uint32_t n)
{
    uint32_t *left = tly_xcalloc(pg->nsubgroups + 1, sizeof *left);
    (void)running_in_subgroups(ps, pg, left);
    for (uint32_t i = 0; i < pg->nsubgroups; i++)
        left[i] = tly_gang_subgroup_need(pg, i, left[i]);
    uint32_t *tmp = tly_xmalloc((n + 1) * sizeof *tmp), m = 0;
    uint8_t *first = tly_xcalloc(n + 1, 1);
    for (uint32_t k = 0; k < n; k++) {
        int32_t sg = ps->pods[unit[k]].subgroup;
        if (sg < 0 || left[sg] > 0) {
            first[k] = 1;
            if (sg >= 0)
                left[sg]--;
        }
    }
    for (uint32_t pass = 1; pass <= 2; pass++)
        for (uint32_t k = 0; k < n; k++)
            if (first[k] == (pass == 1))
                tmp[m++] = unit[k];
    memcpy(unit, tmp, n * sizeof *unit);
    free(tmp);
    free(first);
    free(left);
}

/*
** Whether the placed pods satisfy the gang. For subgroups, keep[k] (per pod
** of the unit) says which placed pods may stay: the others belong to a
** subgroup below its minimum. The message of a shortfall goes to at->gang_msg.
*/
static bool gang_satisfied(tly_podsched *ps, const tly_podgroup *pg, const uint32_t *unit, uint32_t n,
                           uint32_t need, attempt *at, uint8_t *drop)
{
    if (!pg || pg->nsubgroups == 0) {
        if (at->placed >= need)
            return true;
        if (pg)
            at->gang_msg = tly_arena_printf(ps->a, "PodGroup %s needs %u pods placed together; only %u fit. ",
                                            pg->meta.name, need, at->placed);
        return false;
    }
    uint32_t *count = tly_xcalloc(pg->nsubgroups + 1, sizeof *count);
    uint8_t *keep = tly_xcalloc(pg->nsubgroups + 1, 1);
    uint32_t total = running_in_subgroups(ps, pg, count);
    for (uint32_t k = 0; k < at->placed; k++) {
        int32_t sg = ps->pods[at->pl[k].pod].subgroup;
        if (sg >= 0)
            count[sg]++;
    }
    total += at->placed;
    int32_t short_of = -1;
    bool ok = tly_gang_satisfied(pg, count, total, keep, &short_of);
    for (uint32_t k = 0; k < n; k++) {
        int32_t sg = ps->pods[unit[k]].subgroup;
        drop[k] = ok && sg >= 0 && !keep[sg];
    }
    if (!ok && short_of >= 0 && !tly_gang_has_children(pg, (uint32_t)short_of)) {
        int32_t mm = pg->subgroups[short_of].min_member;
        uint32_t m = mm > 0 ? (uint32_t)mm : 0;
        at->gang_msg = tly_arena_printf(ps->a, "SubGroup %s of PodGroup %s needs %u pods placed together; only %u fit. ",
                                        pg->subgroups[short_of].name, pg->meta.name, m, count[short_of]);
    } else if (!ok && short_of >= 0) {
        const tly_subgroup *g = &pg->subgroups[short_of];
        at->gang_msg = tly_arena_printf(ps->a, "SubGroup %s of PodGroup %s needs %s of its subgroups placed; fewer can be. ",
                                        g->name, pg->meta.name,
                                        g->min_subgroup >= 0 ? tly_arena_printf(ps->a, "%d", g->min_subgroup) : "all");
    } else if (!ok) {
        at->gang_msg = tly_arena_printf(ps->a, "PodGroup %s cannot run: %s. ", pg->meta.name,
                                        pg->min_subgroup >= 0 ? "fewer of its subgroups than minSubGroup can be placed"
                                                              : "fewer pods than minMember can be placed");
    }
    free(count);
    free(keep);
    return ok;
}

/*
** Places a gang: its pods in order; for subgroups, again without the pods of
** the subgroups that fall short of their minimum, until what is placed
** holds (each round drops at least one subgroup, so there are at most as
** many rounds as subgroups). False, with everything taken back, when the
** gang cannot run.
*/
static bool place_gang(tly_podsched *ps, const uint32_t *unit, uint32_t n, bool gating, uint32_t need,
                       attempt *at)
{
    const tly_podgroup *pg = ps->pods[unit[0]].pg;
    if (pg && !pg->nsubgroups && need > n) {
        at->gang_msg = tly_arena_printf(ps->a, "PodGroup %s needs %u pods placed together; only %u exist. ",
                                        pg->meta.name, need, n);
        return false;
    }
    uint8_t *skip = tly_arena_zalloc(ps->a, n + 1), *drop = tly_arena_zalloc(ps->a, n + 1);
    for (uint32_t round = 0;; round++) {
        attempt_run(ps, unit, n, gating, skip, at);
        if (!gang_satisfied(ps, pg, unit, n, need, at, drop)) {
            attempt_undo(ps, at);
            return false;
        }
        bool more = false;
        for (uint32_t k = 0; k < n; k++)
            if (drop[k] && !skip[k]) {
                skip[k] = 1;
                more = more || ps->pods[unit[k]].node >= 0;
            }
        if (!more || round > pg->nsubgroups)
            break;
        attempt_undo(ps, at);
    }
    for (uint32_t k = 0; k < n; k++) {
        int32_t sg = ps->pods[unit[k]].subgroup;
        if (skip[k] && !ps->pods[unit[k]].done && sg >= 0) {
            int32_t mm = pg->subgroups[sg].min_member;
            at->msgs[k] = tly_arena_printf(ps->a, "SubGroup %s of PodGroup %s cannot reach its minMember %d; none of its pods is placed",
                                           pg->subgroups[sg].name, pg->meta.name, mm > 0 ? mm : 0);
            at->pol[k] = false;
        }
    }
    return true;
}

/* ---- required topology -------------------------------------------------------------- */

/* One node in a topology domain: the value of the level's label. */
typedef struct {
    const char *value;
    uint32_t node;
} domain_node;

static int cmp_domain_node(const void *a, const void *b)
{
    const domain_node *x = a, *y = b;
    int c = strcmp(x->value, y->value);
    return c ? c : (x->node > y->node) - (x->node < y->node);
}

/* A domain: a run of domain_nodes with one value, and what is free in it. */
typedef struct {
    uint32_t first, n;
    uint64_t free_h;
    tly_i128 free_cpu;
} domain;

/* Fullest first, as KAI bin-packs domains; then by the label value. */
static int cmp_domain(const void *pa, const void *pb, void *ctx)
{
    const domain *a = pa, *b = pb;
    const domain_node *dn = ctx;
    if (a->free_h != b->free_h)
        return a->free_h < b->free_h ? -1 : 1;
    if (a->free_cpu != b->free_cpu)
        return a->free_cpu < b->free_cpu ? -1 : 1;
    return strcmp(dn[a->first].value, dn[b->first].value);
}

/*
** The domains of topology label `key`, fullest first: nodes with the same
** value of it. *nd receives the nodes (grouped by domain); *missing counts the
** nodes without the label.
*/
static domain *topology_domains(tly_podsched *ps, const char *key, domain_node **nd, uint32_t *ndom,
                                uint32_t *missing)
{
    domain_node *v = tly_xmalloc((ps->nnodes + 1) * sizeof *v);
    uint32_t nv = 0;
    *missing = 0;
    for (uint32_t k = 0; k < ps->nnodes; k++) {
        const char *val = tly_kvs_get(&ps->nodes[k].n->meta.labels, key);
        if (val)
            v[nv++] = (domain_node){val, k};
        else
            (*missing)++;
    }
    qsort(v, nv, sizeof *v, cmp_domain_node);
    domain *d = tly_xmalloc((nv + 1) * sizeof *d);
    uint32_t m = 0;
    for (uint32_t i = 0; i < nv; i++) {
        if (i == 0 || strcmp(v[i].value, v[i - 1].value) != 0)
            d[m++] = (domain){i, 0, 0, 0};
        const nstate *n = &ps->nodes[v[i].node];
        d[m - 1].n++;
        d[m - 1].free_h += n->free_h;
        d[m - 1].free_cpu += n->free_cpu;
    }
    qsort_r(d, m, sizeof *d, cmp_domain, v);
    *nd = v;
    *ndom = m;
    return d;
}

/*
** A PodGroup whose spec.topologyConstraint.requiredTopologyLevel names a node
** label: every pod runs in one domain of it (nodes with one value), on nodes
** that have the label. The pods already running fix the domain. Domains are
** tried fullest first and the first where the gang holds is taken, so the
** chosen one is the fullest that fits (KAI's domain bin-packing). The
** Topology CRD is not read: a domain is one value of the label, so racks named
** alike in two zones are one domain here.
*/
static bool place_in_domain(tly_podsched *ps, const uint32_t *unit, uint32_t n, bool gating, uint32_t need,
                            attempt *at)
{
    const tly_podgroup *pg = ps->pods[unit[0]].pg;
    const char *key = pg->required_topology;
    domain_node *dn;
    uint32_t nd, missing;
    domain *d = topology_domains(ps, key, &dn, &nd, &missing);
    int32_t fixed = ps->pg_topo_node ? ps->pg_topo_node[pg_index(ps->s, pg)] : -1;
    const char *fixed_val = fixed >= 0 ? tly_kvs_get(&ps->nodes[fixed].n->meta.labels, key) : NULL;
    uint8_t *mask = tly_xcalloc(ps->nnodes + 1, 1);
    bool ok = false;
    uint32_t tried = 0;
    for (uint32_t i = 0; i < nd && !ok; i++) {
        if (fixed >= 0 && (!fixed_val || strcmp(fixed_val, dn[d[i].first].value) != 0))
            continue;
        tried++;
        memset(mask, 0, ps->nnodes);
        for (uint32_t j = 0; j < d[i].n; j++)
            mask[dn[d[i].first + j].node] = 1;
        ps->mask = mask;
        at->gang_msg = NULL;
        ok = place_gang(ps, unit, n, gating, need, at);
    }
    ps->mask = NULL;
    if (!ok && !at->any_policy) {
        const char *lack = missing ? tly_arena_printf(ps->a, "; %u node(s) lack the label", missing) : "";
        if (fixed >= 0)
            at->topo_msg = tly_arena_printf(
                ps->a, "PodGroup %s requires its pods in one %s domain and its running pods are in %s%s%s: the rest do not fit there%s",
                pg->meta.name, key, fixed_val ? "domain " : "", fixed_val ? fixed_val : "no domain (their node lacks the label)",
                "", lack);
        else
            at->topo_msg = tly_arena_printf(ps->a, "PodGroup %s requires its pods in one %s domain: none of the %u domain(s) fits them%s",
                                            pg->meta.name, key, tried, lack);
    }
    free(mask);
    free(d);
    free(dn);
    return ok;
}

/*
** A required topology constraint on a subgroup is not evaluated (only the
** PodGroup's own is): the message that says so, or NULL.
*/
static const char *subgroup_topology(tly_podsched *ps, const tly_podgroup *pg)
{
    for (uint32_t i = 0; pg && i < pg->nsubgroups; i++)
        if (pg->subgroups[i].required_topology)
            return tly_arena_printf(ps->a, "SubGroup %s of PodGroup %s has a required topology constraint (%s), which tally does not evaluate",
                                    pg->subgroups[i].name, pg->meta.name, pg->subgroups[i].required_topology);
    return NULL;
}

/*
** a then b, in the arena. Every pod of a gang that cannot run gets one (the
** gang's reason before its own message): printf's "%s%s" of a long node
** message cost 9,600 instructions a pod. Callers pass b itself when a is
** empty (messages are read only).
*/
static char *join2(tly_arena *ar, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *out = tly_arena_alloc(ar, la + lb + 1);
    memcpy(out, a, la);
    memcpy(out + la, b, lb + 1);
    return out;
}

/* Places one workload: the pending pods in unit[0..n). */
static void place_unit(tly_podsched *ps, uint32_t *unit, uint32_t n)
{
    pstate *first = &ps->pods[unit[0]];
    const tly_podgroup *pg = first->pg;
    /* Per-pod refusals that no queue or node can change. */
    uint32_t m = 0;
    for (uint32_t k = 0; k < n; k++) {
        pstate *p = &ps->pods[unit[k]];
        const char *gate = foreign_gate(p->res.pod);
        if (gate) {
            decide(p, "Gated", "SchedulingGated",
                   tly_arena_printf(ps->a, "the pod has the scheduling gate %s, which is not tally's; it is not placed until the gate is removed", gate));
        } else if (p->req.invalid) {
            decide(p, "Invalid", p->req.reason, p->req.message);
        } else if (p->res.pod->nclaims && tly_dra_pod_invalid(ps->dra, p->res.pod)) {
            decide(p, "Invalid", "InvalidResources", tly_dra_pod_invalid(ps->dra, p->res.pod));
        } else if (p->res.pod->has_pod_affinity || p->res.pod->has_topology_spread) {
            decide(p, "Unschedulable", "UnsupportedConstraint",
                   p->res.pod->has_pod_affinity
                       ? "the pod has required pod affinity or anti-affinity, which tally does not evaluate"
                       : "the pod has a DoNotSchedule topology spread constraint, which tally does not evaluate");
        } else {
            unit[m++] = unit[k];
        }
    }
    if (m == 0)
        return;
    n = m;
    const char *sgt = subgroup_topology(ps, pg);
    if (sgt) {
        for (uint32_t k = 0; k < n; k++)
            decide(&ps->pods[unit[k]], "Unschedulable", "UnsupportedConstraint", sgt);
        return;
    }
    uint32_t running = pg ? ps->pg_running[pg_index(ps->s, pg)] : 0;
    uint32_t min_member = pg ? (uint32_t)(pg->min_member > 0 ? pg->min_member : 1) : 1;
    /* Placed together or not at all: fewer pods than the minimum wait for the rest (as KAI). */
    uint32_t need = min_member > running ? min_member - running : 1;
    if (pg && pg->nsubgroups)
        order_required_first(ps, pg, unit, n);

    tly_qverdict v;
    int32_t q = tly_queues_admissible(ps->qs, first->res.queue, &v);
    if (q < 0) {
        for (uint32_t k = 0; k < n; k++)
            held(ps, &ps->pods[unit[k]], &v);
        return;
    }
    bool gating = tly_queues_gating(ps->qs, (uint32_t)q);
    /* A claim shared with pods of another queue would blur whose usage it is. */
    for (uint32_t k = 0; k < n; k++) {
        char *msg = NULL;  /* owned by the DRA handle */
        if (ps->pods[unit[k]].res.pod->nclaims > 0 &&
            !tly_dra_claim_queue_check(ps->dra, ps->pods[unit[k]].res.pod, first->res.queue, &msg)) {
            tly_qverdict sv = {.reason = "SharedResourceClaimAcrossQueues",
                               .message = tly_arena_strdup(ps->a, msg ? msg : "shared claim")};
            for (uint32_t j = 0; j < n; j++)
                held(ps, &ps->pods[unit[j]], &sv);
            return;
        }
    }
    /* Job level: the whole workload against spec.resources. */
    tly_qcharge sum;
    memset(&sum, 0, sizeof sum);
    uint32_t nacc = tly_queues_naccres(ps->qs);
    /* The sum is read by the checks only (a reservation copies it): from the scratch. */
    tly_arena_reset(ps->tmp);
    if (n == 1) {
        job_charge(ps, &ps->pods[unit[0]], &sum, ps->tmp);
    } else {
        for (uint32_t k = 0; k < n; k++) {
            tly_qcharge c;
            job_charge(ps, &ps->pods[unit[k]], &c, ps->tmp);
            add_charge(&sum, &c, ps->tmp, nacc);
        }
    }
    bool np = first->non_preemptible;
    v.quiet = false;
    tly_queues_check(ps->qs, (uint32_t)q, &sum, np, gating, &v);
    if (!v.ok) {
        for (uint32_t k = 0; k < n; k++)
            held(ps, &ps->pods[unit[k]], &v);
        return;
    }
    attempt at;
    attempt_init(ps, &at, n);
    const char *topo = pg ? pg->required_topology : NULL;
    bool ok;
    if (topo)
        ok = place_in_domain(ps, unit, n, gating, need, &at);
    else
        ok = place_gang(ps, unit, n, gating, need, &at);
    if (ok) {
        bind_placed(ps, &at);
        for (uint32_t k = 0; k < n; k++) {
            pstate *p = &ps->pods[unit[k]];
            if (p->done)
                continue;
            if (at.pol[k])
                held(ps, p, &at.pols[k]);
            else
                decide(p, "Unschedulable", "Unschedulable",
                       at.msgs[k] ? at.msgs[k] : at.gang_msg ? at.gang_msg : "no node fits it");
        }
        free(at.pl);
        return;
    }
    free(at.pl);
    const char *gang = at.gang_msg ? at.gang_msg : "";
    for (uint32_t k = 0; k < n; k++) {
        pstate *p = &ps->pods[unit[k]];
        if (p->done)
            continue;  /* already decided: UnsupportedConstraint */
        if (at.any_policy) {
            tly_qverdict gv = at.policy;
            /* The first refusal of a full scan is never quiet: its message is set. */
            gv.message = *gang ? join2(ps->a, gang, at.policy.message) : at.policy.message;
            held(ps, p, &gv);
        } else {
            const char *m2 = at.msgs[k] ? at.msgs[k] : "the other pods of its PodGroup do not fit";
            decide(p, "Unschedulable", "Unschedulable",
                   at.topo_msg ? at.topo_msg : *gang ? join2(ps->a, gang, m2) : m2);
        }
    }
    /* Passed the queue checks but fits no node: Reserved for later workloads.
       Pods refused as UnsupportedConstraint are not waiting for room: they
       reserve nothing. */
    if (!at.any_policy && gating) {
        tly_qcharge rsv;
        memset(&rsv, 0, sizeof rsv);
        bool any = false;
        for (uint32_t k = 0; k < n; k++) {
            if (at.unsup[k])
                continue;
            tly_qcharge c;
            pstate *p = &ps->pods[unit[k]];
            job_charge(ps, p, &c, ps->tmp);
            add_charge(&rsv, &c, ps->tmp, nacc);
            any = true;
        }
        if (any)
            tly_queues_reserve(ps->qs, (uint32_t)q, &rsv, np);
    }
}

/* ---- order ------------------------------------------------------------------------- */

typedef struct {
    uint32_t *pods;
    uint32_t n;
    int32_t qprio, prio;
    int64_t created;
    const char *ns, *name;
} unit_t;

static int cmp_unit(const void *pa, const void *pb)
{
    const unit_t *a = pa, *b = pb;
    if (a->qprio != b->qprio)
        return a->qprio > b->qprio ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    if (a->created != b->created)
        return a->created < b->created ? -1 : 1;
    int c = strcmp(a->ns, b->ns);
    return c ? c : strcmp(a->name, b->name);
}

void tly_podsched_run(tly_podsched *ps)
{
    unit_t *units = tly_xcalloc(ps->npods + 1, sizeof *units);
    uint32_t nu = 0;
    uint32_t *slots = tly_xmalloc((ps->npods + 1) * sizeof *slots);
    uint32_t used = 0;
    bool *taken = tly_xcalloc(ps->npods + 1, sizeof *taken);
    /* Each PodGroup's pending pods, in pod order, as linked lists (one pass). */
    uint32_t npg = tly_store_count(ps->s, TLY_K_PODGROUP);
    uint32_t *head = tly_xmalloc((npg + 1) * sizeof *head), *tail = tly_xmalloc((npg + 1) * sizeof *tail);
    uint32_t *next = tly_xmalloc((ps->npods + 1) * sizeof *next);
    for (uint32_t g = 0; g < npg; g++)
        head[g] = tail[g] = UINT32_MAX;
    for (uint32_t i = 0; i < ps->npods; i++) {
        next[i] = UINT32_MAX;
        if (!ps->pods[i].pending || !ps->pods[i].pg)
            continue;
        uint32_t g = pg_index(ps->s, ps->pods[i].pg);
        if (head[g] == UINT32_MAX)
            head[g] = i;
        else
            next[tail[g]] = i;
        tail[g] = i;
    }
    for (uint32_t i = 0; i < ps->npods; i++) {
        if (!ps->pods[i].pending || taken[i])
            continue;
        unit_t *u = &units[nu++];
        u->pods = slots + used;
        const tly_podgroup *pg = ps->pods[i].pg;
        for (uint32_t j = pg ? head[pg_index(ps->s, pg)] : i; j != UINT32_MAX; j = pg ? next[j] : UINT32_MAX) {
            u->pods[u->n++] = j;
            taken[j] = true;
        }
        used += u->n;
        pstate *p = &ps->pods[i];
        int32_t qi = p->queue;
        const tly_queue *queue = qi >= 0 ? tly_queues_queue(ps->qs, (uint32_t)qi) : NULL;
        u->qprio = queue && queue->has_priority ? queue->priority : 100;
        u->prio = p->priority;
        u->created = pg && pg->meta.created != TLY_NO_TIME ? pg->meta.created : p->res.pod->meta.created;
        u->ns = p->res.pod->meta.ns;
        u->name = pg ? pg->meta.name : p->res.pod->meta.name;
    }
    free(head);
    free(tail);
    free(next);
    qsort(units, nu, sizeof *units, cmp_unit);
    for (uint32_t k = 0; k < nu; k++) {
        if (ps->unit_hook)
            ps->unit_hook(ps->unit_ctx, units[k].pods, units[k].n, false);
        place_unit(ps, units[k].pods, units[k].n);
        if (ps->unit_hook)
            ps->unit_hook(ps->unit_ctx, units[k].pods, units[k].n, true);
    }
    free(taken);
    free(slots);
    free(units);
}

void tly_podsched_set_unit_hook(tly_podsched *ps, tly_ps_unit_hook fn, void *ctx)
{
    ps->unit_hook = fn;
    ps->unit_ctx = ctx;
}

uint32_t tly_podsched_npods(const tly_podsched *ps) { return ps->npods; }
const tly_ps_result *tly_podsched_pod(const tly_podsched *ps, uint32_t i) { return &ps->pods[i].res; }
tly_queues *tly_podsched_queues(tly_podsched *ps) { return ps->qs; }

/* ---- explanations ------------------------------------------------------------------ */

void tly_podsched_dra_stats(const tly_podsched *ps, uint64_t *max, uint64_t *total, uint64_t *tries)
{
    tly_dra_search_stats(ps->dra, max, total, tries);
}

int32_t tly_podsched_find(const tly_podsched *ps, const char *ns, const char *name)
{
    uint32_t lo = 0, hi = ps->npods;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const tly_meta *m = &ps->pods[mid].res.pod->meta;
        int c = strcmp(m->ns, ns);
        if (!c)
            c = strcmp(m->name, name);
        if (!c)
            return (int32_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static const char *qfmt(tly_qty q, char *buf)
{
    tly_qty_format(q, buf, TLY_QTY_BUFSZ);
    return buf;
}

/* spec.resources dimensions, named so they do not read like AccountedResources. */
static const char *dim_name(int r)
{
    return r == TLY_QR_CPU ? "resources.cpu" : r == TLY_QR_MEMORY ? "resources.memory" : "resources.gpu";
}

/* What a queue-policy verdict means, short: "gpu-h200 limit of queue team-a (4/4, requesting 1)". */
static char *verdict_text(tly_podsched *ps, const tly_qverdict *v)
{
    char u[TLY_QTY_BUFSZ], b[TLY_QTY_BUFSZ], r[TLY_QTY_BUFSZ];
    const char *qn = v->queue >= 0 ? tly_queues_queue(ps->qs, (uint32_t)v->queue)->meta.name : "?";
    const char *what = v->bound == TLY_QBOUND_ACCOUNTED
                           ? tly_queues_accres(ps->qs, (uint32_t)v->dim)->meta.name
                           : dim_name(v->dim);
    return tly_arena_printf(ps->a, "%s %s of queue %s (%s/%s, requesting %s)", what,
                            v->bound == TLY_QBOUND_QUOTA ? "quota" : "limit", qn,
                            qfmt(v->used, u), qfmt(v->bound_value, b), qfmt(v->request, r));
}

static void print_path(tly_podsched *ps, const pstate *p, int32_t node, FILE *out)
{
    char a[TLY_QTY_BUFSZ], b[TLY_QTY_BUFSZ], c[TLY_QTY_BUFSZ];
    tly_qcharge ch;
    bool have = false;
    if (node >= 0) {
        memset(ps->acc_try, 0, tly_queues_naccres(ps->qs) * sizeof *ps->acc_try);
        node_charge(ps, p, (uint32_t)node, &ch, ps->acc_try, p->acc_idx, p->nacc_idx, NULL);
        have = true;
    }
    for (int32_t j = p->queue; j >= 0; j = tly_queues_parent(ps->qs, (uint32_t)j)) {
        fprintf(out, "  %s\n", tly_queues_queue(ps->qs, (uint32_t)j)->meta.name);
        for (int r = 0; r < TLY_QR_COUNT; r++) {
            tly_qty lim, quo;
            bool hl = tly_queues_bound(ps->qs, (uint32_t)j, true, r, &lim);
            bool hq = tly_queues_bound(ps->qs, (uint32_t)j, false, r, &quo);
            char d[TLY_QTY_BUFSZ];
            fprintf(out, "    %-16s used %s, limit %s, quota %s (non-preemptible used %s)", dim_name(r),
                    qfmt(tly_queues_used(ps->qs, (uint32_t)j, r, false), a),
                    hl ? qfmt(lim, b) : "unlimited", hq ? qfmt(quo, c) : "unlimited",
                    qfmt(tly_queues_used(ps->qs, (uint32_t)j, r, true), d));
            if (have && tly_qty_sign(ch.res[r]) > 0)
                fprintf(out, "; this pod %s", qfmt(ch.res[r], b));
            fprintf(out, "\n");
        }
        for (uint32_t k = 0; k < tly_queues_naccres(ps->qs); k++) {
            tly_qty lim = tly_queues_accounted_limit(ps->qs, (uint32_t)j, k);
            bool charged = have && tly_qty_sign(ch.accounted[k]) > 0;
            if (tly_qty_sign(lim) < 0 && !charged)
                continue;
            fprintf(out, "    %-16s used %s, limit %s", tly_queues_accres(ps->qs, k)->meta.name,
                    qfmt(tly_queues_accounted_used(ps->qs, (uint32_t)j, k), a),
                    tly_qty_sign(lim) < 0 ? "unlimited" : qfmt(lim, b));
            if (charged)
                fprintf(out, "; this pod %s", qfmt(ch.accounted[k], c));
            fprintf(out, "\n");
        }
    }
}

/*
** The devices a placed pod's ResourceClaims get on its node (issue 18:
** explain says which), claim by claim in the pod's order, each device as
** the allocation result names it (request, driver/pool/device).
*/
static void explain_devices(const tly_dra_choice *c, FILE *out)
{
    if (!c->nclaims)
        return;
    fprintf(out, "  devices on %s:\n", c->node ? c->node : "?");
    for (uint32_t k = 0; k < c->nclaims; k++) {
        const tly_dra_claim_choice *cl = &c->claims[k];
        fprintf(out, "    ResourceClaim %s/%s (pod claim %s%s)%s\n", cl->ns, cl->name,
                cl->pod_claim ? cl->pod_claim : "?", cl->from_template ? ", from a template" : "",
                cl->preallocated ? ": allocated before this run" : "");
        if (!cl->ndevs)
            fprintf(out, "      no devices\n");
        for (uint32_t d = cl->first; d < cl->first + cl->ndevs; d++) {
            const tly_dra_dev *dv = &c->devs[d];
            fprintf(out, "      request %s: %s/%s/%s%s%s%s\n", dv->request ? dv->request : "?",
                    dv->driver ? dv->driver : "?", dv->pool ? dv->pool : "?",
                    dv->device ? dv->device : "?", dv->device_class ? " (class " : "",
                    dv->device_class ? dv->device_class : "", dv->device_class ? ")" : "");
            if (dv->admin_access)
                fprintf(out, "        admin access: shares the device, does not hold it\n");
        }
    }
}

void tly_podsched_explain(tly_podsched *ps, uint32_t i, FILE *out)
{
    pstate *p = &ps->pods[i];
    const tly_pod *pod = p->res.pod;
    char a[TLY_QTY_BUFSZ];
    fprintf(out, "Pod %s/%s\n", pod->meta.ns, pod->meta.name);
    fprintf(out, "  queue %s%s%s, priority %d, %s\n", p->res.queue, p->pg ? ", PodGroup " : "",
            p->pg ? p->pg->meta.name : "", p->priority,
            p->non_preemptible ? "non-preemptible (quotas apply)" : "preemptible");
    fprintf(out, "  state %s", p->res.state ? p->res.state : "?");
    if (p->res.node)
        fprintf(out, " on %s", p->res.node);
    if (p->res.reason)
        fprintf(out, " (%s)", p->res.reason);
    fprintf(out, "\n");
    if (p->res.message)
        fprintf(out, "  %s\n", p->res.message);
    fprintf(out, "  requests:");
    for (uint32_t k = 0; k < p->req.req.n; k++)
        fprintf(out, " %s %s", tly_names_str(ps->names, p->req.req.v[k].id), qfmt(p->req.req.v[k].q, a));
    if (p->req.gpu_kind == TLY_GPU_FRACTION)
        fprintf(out, " gpu-fraction %u.%02u x %u", p->req.gpu_portion / 100, p->req.gpu_portion % 100,
                p->req.gpu_devices);
    else if (p->req.gpu_kind == TLY_GPU_MEMORY)
        fprintf(out, " gpu-memory %lluMi x %u", (unsigned long long)p->req.gpu_memory_mib,
                p->req.gpu_devices);
    fprintf(out, "\n");
    if (p->node >= 0 && p->dra)
        explain_devices(p->dra, out);

    bool placed = p->node >= 0 || (p->res.state && !strcmp(p->res.state, "Running"));
    if (p->queue < 0) {
        fprintf(out, "\nWhat would have to change:\n  - create queue %s (or point the pod at an existing leaf queue)\n",
                p->res.queue);
        return;
    }
    if (placed || !p->pending) {
        int32_t node = p->node >= 0 ? p->node : (p->res.node ? node_index(ps, p->res.node) : -1);
        fprintf(out, "\nQueue path (usage after the run; what this pod is charged):\n");
        print_path(ps, p, node, out);
        return;
    }
    fprintf(out, "\nQueue path (usage after the run):\n");
    print_path(ps, p, -1, out);
    if (p->req.invalid || !strcmp(p->res.state, "Invalid")) {
        fprintf(out, "\nWhat would have to change:\n  - fix the pod's spec: %s\n", p->res.message);
        return;
    }
    tly_qverdict v;
    if (tly_queues_admissible(ps->qs, p->res.queue, &v) < 0) {
        fprintf(out, "\nWhat would have to change:\n");
        if (!strcmp(v.reason, "AccountedResourceNotFound"))
            fprintf(out, "  - create the missing AccountedResource, or remove the reference: %s\n", v.message);
        else
            fprintf(out, "  - %s\n", v.message);
        return;
    }
    /* Every node now, grouped by why. */
    ps->epoch++;
    bool gating = tly_queues_gating(ps->qs, (uint32_t)p->queue);
    tally_count *counts = ps->counts;
    uint32_t nc = 0, fits = 0;
    char buf[160];
    tly_qverdict first = {0};
    bool have_first = false;
    for (uint32_t k = 0; k < ps->nnodes; k++) {
        const char *why, *problem;
        tly_qverdict nv = {.quiet = true};
        int r = try_node(ps, p, k, gating, &nv, &why, buf, sizeof buf, &problem, false, DRA_SEARCH);
        if (r == 1) {
            fits++;
            continue;
        }
        if (r == -1) {
            if (!have_first)
                first = nv;
            have_first = true;
            why = verdict_text(ps, &nv);
        }
        count_reason(&counts, &nc, why, false, ps->a);  /* -2: the unsupported DRA claim text */
    }
    fprintf(out, "\nNodes now (%u):\n", ps->nnodes);
    if (fits)
        fprintf(out, "  %u node%s would take the pod now (it was decided earlier in the run)\n", fits,
                fits == 1 ? "" : "s");
    qsort(counts, nc, sizeof *counts, cmp_count);
    for (uint32_t k = 0; k < nc; k++)
        fprintf(out, "  %u node%s: %s\n", counts[k].count, counts[k].count == 1 ? "" : "s", counts[k].text);
    fprintf(out, "\nWhat would have to change:\n");
    if (have_first) {
        char u[TLY_QTY_BUFSZ], need[TLY_QTY_BUFSZ], over[TLY_QTY_BUFSZ];
        tly_qty total, excess;
        tly_qty_add(first.used, first.request, &total);
        tly_qty_sub(total, first.bound_value, &excess);
        const char *qn = tly_queues_queue(ps->qs, (uint32_t)first.queue)->meta.name;
        const char *what = first.bound == TLY_QBOUND_ACCOUNTED
                               ? tly_queues_accres(ps->qs, (uint32_t)first.dim)->meta.name
                               : dim_name(first.dim);
        fprintf(out, "  - raise the %s %s of queue %s from %s to at least %s, or free %s of it in its subtree\n",
                what, first.bound == TLY_QBOUND_QUOTA ? "quota" : "limit", qn,
                qfmt(first.bound_value, u), qfmt(total, need), qfmt(excess, over));
        if (first.bound == TLY_QBOUND_QUOTA)
            fprintf(out, "  - or make the workload preemptible (quotas bind only non-preemptible work)\n");
    }
    bool resources = false;
    for (uint32_t k = 0; k < nc; k++)
        if (!strncmp(counts[k].text, "Insufficient ", 13)) {
            fprintf(out, "  - free %s on a node that passes the other checks, or add such a node\n",
                    counts[k].text + 13);
            resources = true;
        }
    bool devices = false;
    for (uint32_t k = 0; k < nc && !devices; k++)
        devices = strstr(counts[k].text, "ResourceClaim") || strstr(counts[k].text, "devices");
    if (devices) {
        fprintf(out, "  - the pod's ResourceClaims do not allocate on the nodes above: free or publish "
                     "(ResourceSlices) devices that match them, or change the claims' counts, "
                     "constraints or selectors as the reasons say\n");
        resources = true;
    }
    /* Label, taint and state refusals matter only when nothing else is in the way. */
    bool labels = false;
    for (uint32_t k = 0; k < nc && !have_first && !resources && !labels; k++)
        if (!strncmp(counts[k].text, "node(s)", 7)) {
            fprintf(out, "  - nodes refuse the pod by their labels, taints or state (%s): change the pod's "
                        "nodeSelector/affinity/tolerations or the nodes\n", counts[k].text);
            labels = true;
        }
    if (!have_first && !resources && !labels)
        fprintf(out, "  - nothing tally can name beyond the reasons above\n");
}

void tly_podsched_explain_queue(tly_podsched *ps, uint32_t q, FILE *out)
{
    char a[TLY_QTY_BUFSZ], b[TLY_QTY_BUFSZ], c[TLY_QTY_BUFSZ];
    const tly_queue *queue = tly_queues_queue(ps->qs, q);
    fprintf(out, "Queue %s", queue->meta.name);
    if (queue->display_name)
        fprintf(out, " (%s)", queue->display_name);
    fprintf(out, "%s%s\n", queue->parent ? ", parent " : ", top level", queue->parent ? queue->parent : "");
    if (tly_queues_missing_ref(ps->qs, q))
        fprintf(out, "  AccountedResourcesResolved=False: AccountedResource \"%s\" does not exist\n",
                tly_queues_missing_ref(ps->qs, q));
    fprintf(out, "\nUsage over the subtree against the limits:\n");
    for (int r = 0; r < TLY_QR_COUNT; r++) {
        tly_qty lim, quo;
        char d[TLY_QTY_BUFSZ];
        bool hl = tly_queues_bound(ps->qs, q, true, r, &lim), hq = tly_queues_bound(ps->qs, q, false, r, &quo);
        fprintf(out, "  %-16s used %s (non-preemptible %s), limit %s, quota %s\n", dim_name(r),
                qfmt(tly_queues_used(ps->qs, q, r, false), a), qfmt(tly_queues_used(ps->qs, q, r, true), b),
                hl ? qfmt(lim, c) : "unlimited", hq ? qfmt(quo, d) : "unlimited");
    }
    for (uint32_t k = 0; k < tly_queues_naccres(ps->qs); k++) {
        tly_qty lim = tly_queues_accounted_limit(ps->qs, q, k);
        fprintf(out, "  %-16s used %s, limit %s\n", tly_queues_accres(ps->qs, k)->meta.name,
                qfmt(tly_queues_accounted_used(ps->qs, q, k), a), tly_qty_sign(lim) < 0 ? "unlimited" : qfmt(lim, b));
    }
    fprintf(out, "\nSubtree:\n");
    uint32_t children = 0;
    for (uint32_t j = 0; j < tly_queues_count(ps->qs); j++) {
        int depth = 0;
        int32_t x = (int32_t)j;
        while (x >= 0 && (uint32_t)x != q && depth < 64) {
            x = tly_queues_parent(ps->qs, (uint32_t)x);
            depth++;
        }
        if (x < 0 || depth == 0)
            continue;
        fprintf(out, "  %*s%s\n", depth * 2 - 2, "", tly_queues_queue(ps->qs, j)->meta.name);
        children++;
    }
    if (!children)
        fprintf(out, "  (a leaf queue)\n");
    fprintf(out, "\nPods charged to the subtree:\n");
    uint32_t shown = 0;
    for (uint32_t i = 0; i < ps->npods; i++) {
        const pstate *p = &ps->pods[i];
        if (!p->res.state || (strcmp(p->res.state, "Running") && strcmp(p->res.state, "Bound")))
            continue;
        int32_t x = p->queue;
        while (x >= 0 && (uint32_t)x != q)
            x = tly_queues_parent(ps->qs, (uint32_t)x);
        if (x < 0)
            continue;
        shown++;
        fprintf(out, "  %s/%s (%s, %s on %s): cpu %s, memory %s, GPUs %s", p->res.pod->meta.ns,
                p->res.pod->meta.name, p->res.queue, p->res.state, p->res.node ? p->res.node : "-",
                qfmt(p->charge.res[TLY_QR_CPU], a), qfmt(p->charge.res[TLY_QR_MEMORY], b),
                qfmt(p->charge.res[TLY_QR_GPU], c));
        for (uint32_t e = 0; e < p->res.ncharges; e++)
            if (tly_qty_sign(p->res.charges[e].q) > 0)
                fprintf(out, ", %s %s", tly_queues_accres(ps->qs, p->res.charges[e].ar)->meta.name,
                        qfmt(p->res.charges[e].q, a));
        fprintf(out, "\n");
    }
    if (!shown)
        fprintf(out, "  (none)\n");
}
