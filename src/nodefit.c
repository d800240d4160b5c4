/*
** nodefit.c: the static node predicates (may this pod go to this node at
** all?) and the per-device GPU model used for KAI GPU sharing.
**
** The predicates follow kube-scheduler's filter plugins for the fields tally
** reads: NodeUnschedulable, node readiness (the not-ready taint the node
** lifecycle controller would add), NodeAffinity (nodeSelector and required
** node affinity) and TaintToleration. The first failing one is the reason,
** in the order of tly_fit_result, so the same pod and node always give the
** same message.
**
** The GPU model keeps, per device, the hundredths still free, the MiB still
** free and whether the device holds shared (fraction or gpu-memory) work.
** Placement is deterministic: whole-GPU pods take the lowest-index untouched
** devices; shared pods bin-pack onto the fullest shared device that still
** has room before opening an untouched one, as KAI's fraction packing does.
** All arithmetic is integer (hundredths and MiB).
*/
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"
#include "tally/nodefit.h"
#include "tally/quantity.h"
#include "tally/resource.h"

/* ---- static predicates ------------------------------------------------- */

/* NULL and "" are the same value: the decoders store an empty value as NULL. */
static bool str_eq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool node_selector_matches(const tly_pod *p, const tly_k8s_node *n)
{
    for (uint32_t i = 0; i < p->node_selector.n; i++) {
        const tly_kv *kv = &p->node_selector.v[i];
        const char *v = tly_kvs_get(&n->meta.labels, kv->key);
        if (!v || !str_eq(v, kv->val))
            return false;
    }
    return true;
}

/*
** One nodeSelectorTerm. Kubernetes: an empty term selects no node (unlike
** an empty label selector, which selects everything), so a term without
** requirements never matches. matchExpressions test the node's labels;
** matchFields the node's name (metadata.name, the only field Kubernetes
** supports; any other key never matches).
*/
bool tly_node_term_matches(const tly_selector *term, const tly_k8s_node *n)
{
    if (term->nreqs == 0 && term->match_labels.n == 0 && term->nfields == 0)
        return false;
    if (term->has_fields && term->nfields == 0)
        return false;  /* matchFields that could not be read: refuse (the safe side) */
    for (uint32_t i = 0; i < term->nfields; i++) {
        const tly_selreq *f = &term->fields[i];
        if (strcmp(f->key, "metadata.name") != 0)
            return false;
        bool in = false;
        for (uint32_t v = 0; v < f->nvalues; v++)
            in = in || (n->meta.name && strcmp(f->values[v], n->meta.name) == 0);
        if (in != (strcmp(f->op, "In") == 0))
            return false;
    }
    return tly_selector_matches(term, &n->meta.labels);
}

static bool node_affinity_matches(const tly_pod *p, const tly_k8s_node *n)
{
    if (p->nnode_affinity_required == 0)
        return true;
    /* Terms are ORed. */
    for (uint32_t i = 0; i < p->nnode_affinity_required; i++)
        if (tly_node_term_matches(&p->node_affinity_required[i], n))
            return true;
    return false;
}

bool tly_tolerates(const tly_toleration *tol, uint32_t ntol, const tly_taint *t)
{
    for (uint32_t i = 0; i < ntol; i++) {
        const tly_toleration *o = &tol[i];
        /* An empty effect tolerates every effect; an empty key every key. */
        if (o->effect && *o->effect && !str_eq(o->effect, t->effect))
            continue;
        if (o->key && *o->key && !str_eq(o->key, t->key))
            continue;
        const char *op = (o->op && *o->op) ? o->op : "Equal";
        if (strcmp(op, "Exists") == 0)
            return true;
        if (strcmp(op, "Equal") == 0 && str_eq(o->value, t->value))
            return true;
        /* Any other operator tolerates nothing, as in ToleratesTaint. */
    }
    return false;
}

/* Only these effects keep a pod off a node; PreferNoSchedule is a score. */
static bool taint_filters(const tly_taint *t)
{
    return t->effect &&
           (strcmp(t->effect, "NoSchedule") == 0 || strcmp(t->effect, "NoExecute") == 0);
}

tly_fit_result tly_nodefit_static(const tly_pod *p, const tly_k8s_node *n, const tly_taint **taint)
{
    if (taint)
        *taint = NULL;
    if (n->unschedulable)
        return TLY_FIT_UNSCHEDULABLE;
    /* A node without a Ready condition has never reported: not ready. */
    if (n->ready != 1)
        return TLY_FIT_NOT_READY;
    /* kube-scheduler's filter order: TaintToleration before NodeAffinity. */
    for (uint32_t i = 0; i < n->ntaints; i++) {
        const tly_taint *t = &n->taints[i];
        if (taint_filters(t) && !tly_tolerates(p->tolerations, p->ntolerations, t)) {
            if (taint)
                *taint = t;
            return TLY_FIT_TAINT;
        }
    }
    if (!node_selector_matches(p, n))
        return TLY_FIT_NODE_SELECTOR;
    if (!node_affinity_matches(p, n))
        return TLY_FIT_NODE_AFFINITY;
    return TLY_FIT_OK;
}

const char *tly_fit_result_text(tly_fit_result r)
{
    switch (r) {
    case TLY_FIT_OK:
        return "";
    case TLY_FIT_UNSCHEDULABLE:
        return "node(s) were unschedulable";
    case TLY_FIT_NOT_READY:
        return "node(s) were not ready";
    case TLY_FIT_NODE_SELECTOR:
    case TLY_FIT_NODE_AFFINITY:
        /* kube-scheduler's NodeAffinity plugin says the same for both. */
        return "node(s) didn't match Pod's node affinity/selector";
    case TLY_FIT_TAINT:
        return "node(s) had untolerated taint(s)";
    }
    return "node(s) didn't fit";
}

/* ---- GPU memory label -------------------------------------------------- */

/* 1 TiB expressed in MiB: label values at or above it can only be bytes. */
#define GPU_MEM_BYTES_THRESHOLD 1048576u

uint64_t tly_node_gpu_memory_mib(const tly_k8s_node *n)
{
    const char *s = tly_kvs_get(&n->meta.labels, "nvidia.com/gpu.memory");
    if (!s || !*s)
        return 0;
    /* strconv.ParseInt's rule as KAI uses it: an optional '+', digits, at
       most INT64_MAX; negative values are refused here (no memory). */
    if (*s == '+')
        s++;
    if (!*s)
        return 0;
    uint64_t v = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9')
            return 0;
        unsigned d = (unsigned)(*c - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (v >= GPU_MEM_BYTES_THRESHOLD)
        v /= 1024u * 1024u;
    /* KAI floors to a multiple of 100 MiB (node_info.getNodeGpuMemory). */
    return v - v % 100;
}

/* ---- GPU devices ------------------------------------------------------- */

/*
** More devices than any real node has; a bigger allocatable count (a typo,
** or a fuzzed input) is clamped so that per-node arrays stay small.
*/
#define MAX_GPU_DEVICES 1024u

/* The device count from an allocatable quantity: a non-negative integer. */
static bool device_count(const tly_rlist *alloc, uint32_t id, uint32_t *out)
{
    bool found = false;
    tly_qty q = tly_rlist_get(alloc, id, &found);
    if (!found || q.nanos <= 0 || q.nanos % 1000000000 != 0)
        return false;
    tly_i128 units = q.nanos / 1000000000;
    *out = units > MAX_GPU_DEVICES ? MAX_GPU_DEVICES : (uint32_t)units;
    return true;
}

static void gpus_alloc(tly_gpus *g, uint32_t ndev)
{
    g->ndev = ndev;
    g->free = tly_xcalloc(ndev, sizeof *g->free);
    g->free_mem = tly_xcalloc(ndev, sizeof *g->free_mem);
    g->shared = tly_xcalloc(ndev, sizeof *g->shared);
}

void tly_gpus_init(tly_gpus *g, const tly_k8s_node *n)
{
    uint32_t ndev = 0;
    if (!device_count(&n->allocatable, TLY_R_NVIDIA_GPU, &ndev))
        (void)device_count(&n->allocatable, TLY_R_AMD_GPU, &ndev);
    g->mem_mib = tly_node_gpu_memory_mib(n);
    gpus_alloc(g, ndev);
    for (uint32_t i = 0; i < ndev; i++) {
        g->free[i] = 100;
        g->free_mem[i] = g->mem_mib;
        g->shared[i] = false;
    }
}

void tly_gpus_free(tly_gpus *g)
{
    free(g->free);
    free(g->free_mem);
    free(g->shared);
    memset(g, 0, sizeof *g);
}

void tly_gpus_copy(tly_gpus *dst, const tly_gpus *src)
{
    gpus_alloc(dst, src->ndev);
    dst->mem_mib = src->mem_mib;
    if (src->ndev == 0)
        return;
    memcpy(dst->free, src->free, src->ndev * sizeof *dst->free);
    memcpy(dst->free_mem, src->free_mem, src->ndev * sizeof *dst->free_mem);
    memcpy(dst->shared, src->shared, src->ndev * sizeof *dst->shared);
}

static bool untouched(const tly_gpus *g, uint32_t i)
{
    return g->free[i] == 100 && !g->shared[i];
}

uint32_t tly_gpus_whole_free(const tly_gpus *g)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < g->ndev; i++)
        if (untouched(g, i))
            c++;
    return c;
}

uint64_t tly_gpus_used_hundredths(const tly_gpus *g)
{
    uint64_t u = 0;
    for (uint32_t i = 0; i < g->ndev; i++)
        u += 100u - (g->free[i] > 100 ? 100 : g->free[i]);
    return u;
}

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/* Whole GPUs: the lowest-index devices with nothing on them. */
static bool place_whole(tly_gpus *g, uint32_t want, bool take)
{
    if (tly_gpus_whole_free(g) < want)
        return false;
    if (!take)
        return true;
    for (uint32_t i = 0; i < g->ndev && want > 0; i++) {
        if (untouched(g, i)) {
            g->free[i] = 0;
            g->free_mem[i] = 0;
            want--;
        }
    }
    return true;
}

/*
** One device's preference for shared work, smaller first, or UINT64_MAX
** when it cannot take the share: devices that already hold shared work come
** first, the one with the least free room first (bin-packing), then
** untouched devices; ties by index. A device taken by a whole-GPU pod is
** never eligible. The key is unique per device (the index is in it).
*/
static uint64_t share_key(const tly_gpus *g, uint32_t i, uint32_t need, uint64_t need_mem)
{
    if (!g->shared[i] && g->free[i] != 100)
        return UINT64_MAX;
    if (g->free[i] < need || g->free_mem[i] < need_mem)
        return UINT64_MAX;
    uint64_t cls = g->shared[i] ? 0 : 1;
    uint64_t room = g->free[i] > 0xffff ? 0xffff : g->free[i];
    return cls << 48 | room << 32 | i;
}

/*
** Shared work: `want` distinct devices, each giving `need` hundredths and
** `need_mem` MiB; `charge_mem` is what each taken device's free memory goes
** down by. The chosen devices are the `want` smallest keys; they are found
** first without touching anything (take=false must not modify, and a device's
** key changes once it is charged), then charged in one pass.
*/
static bool place_shared(tly_gpus *g, uint32_t want, uint32_t need, uint64_t need_mem,
                         uint64_t charge_mem, bool take)
{
    if (want == 0)
        return true;
    if (want > g->ndev)
        return false;
    uint64_t last = 0;
    bool have_last = false;
    for (uint32_t k = 0; k < want; k++) {
        uint64_t best = UINT64_MAX;
        for (uint32_t i = 0; i < g->ndev; i++) {
            uint64_t key = share_key(g, i, need, need_mem);
            if (key != UINT64_MAX && (!have_last || key > last) && key < best)
                best = key;
        }
        if (best == UINT64_MAX)
            return false;
        last = best;
        have_last = true;
    }
    if (!take)
        return true;
    for (uint32_t i = 0; i < g->ndev; i++) {
        uint64_t key = share_key(g, i, need, need_mem);
        if (key == UINT64_MAX || key > last)
            continue;
        g->shared[i] = true;
        g->free[i] -= need;
        g->free_mem[i] = sub_sat(g->free_mem[i], charge_mem);
    }
    return true;
}

/*
** The share r asks of each of its devices on g: hundredths `need`, MiB a
** device must have free `need_mem`, MiB it takes `charge_mem`. False when r
** is not a shared request or cannot be one here (a gpu-memory request on a
** node of unknown or smaller GPU memory: KAI rejects it there).
*/
static bool share_of(const tly_gpus *g, const tly_podreq *r, uint32_t *need, uint64_t *need_mem,
                     uint64_t *charge_mem)
{
    if (r->gpu_kind == TLY_GPU_FRACTION) {
        uint32_t portion = r->gpu_portion > 100 ? 100 : r->gpu_portion;
        *need = portion;
        *need_mem = 0;
        /* Unknown memory stays 0 free; there is nothing to charge. */
        *charge_mem = g->mem_mib ? (uint64_t)portion * g->mem_mib / 100 : 0;
        return true;
    }
    if (r->gpu_kind != TLY_GPU_MEMORY)
        return false;
    uint64_t mem = r->gpu_memory_mib;
    if (g->mem_mib == 0 || mem > g->mem_mib || mem > UINT64_MAX / 100)
        return false;
    /* ceil(100 * mem / node memory) hundredths, exactly, as KAI charges it. */
    *need = (uint32_t)(100 * mem / g->mem_mib + (100 * mem % g->mem_mib != 0));
    *need_mem = mem;
    *charge_mem = mem;
    return true;
}

bool tly_gpus_place(tly_gpus *g, const tly_podreq *r, bool take)
{
    uint32_t need;
    uint64_t need_mem, charge_mem;
    switch (r->gpu_kind) {
    case TLY_GPU_WHOLE:
        return place_whole(g, r->gpu_devices, take);
    case TLY_GPU_FRACTION:
    case TLY_GPU_MEMORY:
        if (!share_of(g, r, &need, &need_mem, &charge_mem))
            return false;
        return place_shared(g, r->gpu_devices, need, need_mem, charge_mem, take);
    case TLY_GPU_NONE:
    case TLY_GPU_MIG:
    default:
        /* MIG instances are node resources, not devices of this model. */
        return true;
    }
}

/* ---- the running pods' layout ------------------------------------------ */

/*
** What a running pod takes of each shared device. A gpu-memory pod on a
** node whose GPU memory is unknown (or smaller than its request) ran
** anyway: it is taken to fill its device, since what it really uses there
** cannot be known and offering that room to others could over-commit it.
*/
static void running_share(const tly_gpus *g, const tly_podreq *r, uint32_t *need, uint64_t *mem)
{
    uint64_t need_mem;
    if (!share_of(g, r, need, &need_mem, mem)) {
        *need = 100;
        *mem = g->mem_mib;
    }
}

/* Charges one share to device i, down to nothing (an over-full input). */
static void charge_device(tly_gpus *g, uint32_t i, uint32_t need, uint64_t mem)
{
    g->shared[i] = true;
    g->free[i] = g->free[i] > need ? g->free[i] - need : 0;
    g->free_mem[i] = sub_sat(g->free_mem[i], mem);
}

/*
** A share that fits nowhere: the device with the most room that a whole-GPU
** pod has not taken (ties: lowest index) takes it. False when every device
** is taken whole, where there is nothing left to charge.
*/
static bool force_share(tly_gpus *g, uint32_t need, uint64_t mem)
{
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < g->ndev; i++) {
        if (!g->shared[i] && g->free[i] != 100)
            continue;
        if (best == UINT32_MAX || g->free[i] > g->free[best])
            best = i;
    }
    if (best == UINT32_MAX)
        return false;
    charge_device(g, best, need, mem);
    return true;
}

/* Whole GPUs of running pods; past the node's devices, none is left. */
static uint32_t layout_whole(tly_gpus *g, const tly_gpu_use *u, uint32_t n)
{
    uint32_t over = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (u[k].req->gpu_kind != TLY_GPU_WHOLE)
            continue;
        uint32_t want = u[k].req->gpu_devices, have = tly_gpus_whole_free(g);
        if (want > have) {
            want = have;
            over++;
        }
        place_whole(g, want, true);
    }
    return over;
}

/* One group's pods, in the order the groups are laid out. */
typedef struct {
    const char *group;
    uint32_t need;
    uint64_t mem;
} group_part;

static int cmp_group_part(const void *a, const void *b)
{
    return strcmp(((const group_part *)a)->group, ((const group_part *)b)->group);
}

/*
** The GPU groups: every group is one device, opened untouched and charged
** the shares of all its pods. Groups are taken in name order only to be
** deterministic: devices are alike, so which index a group gets changes no
** answer. A group with no untouched device left is forced (force_share).
*/
static uint32_t layout_groups(tly_gpus *g, const tly_gpu_use *u, uint32_t n)
{
    uint32_t np = 0, over = 0;
    for (uint32_t k = 0; k < n; k++)
        np += u[k].ngroups;
    if (np == 0)
        return 0;
    group_part *parts = tly_xmalloc(np * sizeof *parts);
    np = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t need;
        uint64_t mem;
        running_share(g, u[k].req, &need, &mem);
        for (uint32_t j = 0; j < u[k].ngroups; j++)
            parts[np++] = (group_part){u[k].groups[j], need, mem};
    }
    qsort(parts, np, sizeof *parts, cmp_group_part);
    uint32_t dev = UINT32_MAX;
    for (uint32_t i = 0; i < np; i++) {
        if (i == 0 || strcmp(parts[i].group, parts[i - 1].group) != 0) {
            dev = UINT32_MAX;
            for (uint32_t d = 0; d < g->ndev && dev == UINT32_MAX; d++)
                if (untouched(g, d))
                    dev = d;
        }
        if (dev != UINT32_MAX)
            charge_device(g, dev, parts[i].need, parts[i].mem);
        else {
            (void)force_share(g, parts[i].need, parts[i].mem);
            over++;
        }
    }
    free(parts);
    return over;
}

/* The devices a shared pod takes beyond its groups. */
static uint32_t ungrouped_devices(const tly_gpu_use *u)
{
    return u->req->gpu_devices > u->ngroups ? u->req->gpu_devices - u->ngroups : 0;
}

/*
** Shares without a group: largest first. Pods equal in all three keys take
** the same from the same devices, so their order (qsort's) changes nothing.
*/
static int cmp_share(const void *pa, const void *pb, void *ctx)
{
    const tly_gpus *g = ctx;
    const tly_gpu_use *a = pa, *b = pb;
    uint32_t na, nb, wa = ungrouped_devices(a), wb = ungrouped_devices(b);
    uint64_t ma, mb;
    running_share(g, a->req, &na, &ma);
    running_share(g, b->req, &nb, &mb);
    if (na != nb)
        return na > nb ? -1 : 1;
    if (ma != mb)
        return ma > mb ? -1 : 1;
    if (wa != wb)
        return wa > wb ? -1 : 1;
    return 0;
}

/* A shared pod's devices beyond its groups, packed or forced. */
static bool layout_ungrouped(tly_gpus *g, const tly_gpu_use *u)
{
    uint32_t need;
    uint64_t mem;
    running_share(g, u->req, &need, &mem);
    uint32_t want = ungrouped_devices(u);
    if (want == 0 || place_shared(g, want, need, 0, mem, true))
        return true;
    for (uint32_t j = 0; j < want; j++)
        (void)force_share(g, need, mem);
    return false;
}

static bool is_shared(const tly_podreq *r)
{
    return r->gpu_kind == TLY_GPU_FRACTION || r->gpu_kind == TLY_GPU_MEMORY;
}

uint32_t tly_gpus_layout(tly_gpus *g, tly_gpu_use *uses, uint32_t n)
{
    /* Shared pods to the front, then by share: the order of the last step. */
    uint32_t ns = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (is_shared(uses[k].req)) {
            tly_gpu_use t = uses[ns];
            uses[ns++] = uses[k];
            uses[k] = t;
        }
    }
    uint32_t over = layout_whole(g, uses + ns, n - ns);
    over += layout_groups(g, uses, ns);
    qsort_r(uses, ns, sizeof *uses, cmp_share, g);
    for (uint32_t k = 0; k < ns; k++)
        over += !layout_ungrouped(g, &uses[k]);
    return over;
}
