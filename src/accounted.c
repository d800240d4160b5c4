/*
** accounted.c: AccountedResource charges for one placement (accounted.h).
*/
#include "tally/accounted.h"

#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "tally/error.h"

tly_qty tly_hundredths_qty(uint64_t h)
{
    return (tly_qty){(tly_i128)h * 10000000, TLY_QFMT_DECIMAL_SI};
}

bool tly_node_labels_match(const tly_kvs *want, const tly_k8s_node *n)
{
    for (uint32_t i = 0; i < want->n; i++) {
        const char *v = n ? tly_kvs_get(&n->meta.labels, want->v[i].key) : NULL;
        if (!v || strcmp(v, want->v[i].val) != 0)
            return false;
    }
    return true;
}

/* The multiplier a unit stands for: a Kubernetes suffix ("Mi") or 1 for a word. */
tly_qty tly_unit_multiplier(const char *unit)
{
    tly_qty one = tly_qty_from_int(1, TLY_QFMT_DECIMAL_SI), m;
    if (!unit || !*unit)
        return one;
    char buf[32];
    if (strlen(unit) > 8)
        return one;
    snprintf(buf, sizeof buf, "1%s", unit);
    if (tly_qty_parse_str(buf, &m) == TLY_OK)
        return m;
    return one;  /* a word such as "percent": the number as it is */
}

/* a x b for quantities, rounded away from zero; false on overflow. */
bool tly_qty_times(tly_qty a, tly_qty b, tly_qty *out)
{
    tly_i128 p;
    if (__builtin_mul_overflow(a.nanos, b.nanos, &p)) {
        /* Retry with b in whole units when it is whole (the usual Mi, Gi). */
        if (b.nanos % 1000000000 != 0 ||
            __builtin_mul_overflow(a.nanos, b.nanos / 1000000000, &p))
            return false;
        *out = (tly_qty){p, b.fmt};
        return true;
    }
    tly_i128 r = p / 1000000000;
    if (p % 1000000000)
        r += p < 0 ? -1 : 1;
    *out = (tly_qty){r, b.fmt};
    return true;
}

static tly_qty gpu_memory_charge(const tly_podreq *r, uint64_t mem)
{
    uint64_t mib = 0;
    switch (r->gpu_kind) {
    case TLY_GPU_WHOLE: mib = (uint64_t)r->gpu_devices * mem; break;
    case TLY_GPU_FRACTION: mib = ((uint64_t)r->gpu_portion * mem + 99) / 100 * r->gpu_devices; break;
    case TLY_GPU_MEMORY: mib = r->gpu_memory_mib * r->gpu_devices; break;
    default: break;
    }
    return (tly_qty){(tly_i128)mib * 1048576 * 1000000000, TLY_QFMT_BINARY_SI};
}

/* The charges; `matched(src index)` says whether a source's node labels hold. */
static void charges(const tly_queues *qs, const tly_pod *p, const tly_podreq *r,
                    const tly_k8s_node *n, const tly_acc_match *m, uint32_t node,
                    uint64_t gpu_mem_mib, const uint32_t *idx, uint32_t nidx, tly_qty *out,
                    const char **problem, tly_arena *a, bool job)
{
    if (problem)
        *problem = NULL;
    uint64_t gpu_h = tly_podreq_gpu_hundredths(r, gpu_mem_mib);
    const uint8_t *row = m ? m->bits + (size_t)node * m->nsrc : NULL;
    uint32_t count = idx ? nidx : tly_queues_naccres(qs);
    for (uint32_t e = 0; e < count; e++) {
        uint32_t k = idx ? idx[e] : e;
        const tly_accres *ar = tly_queues_accres(qs, k);
        tly_qty sum = {0, TLY_QFMT_DECIMAL_SI};
        if (tly_queues_accres_is_gpu_memory(qs, k)) {
            /* At job level only a gpu-memory request is known without a node. */
            out[k] = job && r->gpu_kind != TLY_GPU_MEMORY ? sum : gpu_memory_charge(r, gpu_mem_mib);
            continue;
        }
        for (uint32_t i = 0; i < ar->nsources; i++) {
            const tly_accsrc *src = &ar->sources[i];
            if (job ? src->match_node_labels.n > 0
                    : row ? !row[m->off[k] + i] : !tly_node_labels_match(&src->match_node_labels, n))
                continue;
            tly_qty c = {0, TLY_QFMT_DECIMAL_SI};
            if (src->kind == TLY_SRC_RESOURCE_NAME) {
                if ((src->resource_id == TLY_R_NVIDIA_GPU || src->resource_id == TLY_R_AMD_GPU)) {
                    /* MIG instances count as G whole nvidia.com/gpu each. */
                    bool mig = r->gpu_kind == TLY_GPU_MIG && src->resource_id == TLY_R_NVIDIA_GPU;
                    if (mig || (r->gpu_kind != TLY_GPU_NONE && r->gpu_kind != TLY_GPU_MIG &&
                                r->gpu_resource == src->resource_id))
                        c = tly_hundredths_qty(gpu_h);
                } else {
                    c = tly_rlist_get(&r->req, src->resource_id, NULL);
                }
            } else if (src->kind == TLY_SRC_POD_ANNOTATION) {
                const char *v = tly_kvs_get(&p->meta.annotations, src->annotation_key);
                if (!v)
                    continue;
                tly_qty num;
                const char *unit = src->qty_annotation_unit ? src->qty_annotation_unit
                                                            : src->annotation_unit;
                if (tly_qty_parse_str(v, &num) != TLY_OK || tly_qty_sign(num) < 0 ||
                    !tly_qty_times(num, tly_unit_multiplier(unit), &c)) {
                    if (problem)
                        *problem = tly_arena_printf(
                            a, "annotation %s=\"%s\" is not a non-negative number; AccountedResource %s charges nothing for it",
                            src->annotation_key, v, ar->meta.name);
                    continue;
                }
            }
            tly_qty s2;
            if (tly_qty_add(sum, c, &s2) == TLY_OK)
                sum = s2;
        }
        out[k] = sum;
    }
}

void tly_accounted_charges(const tly_queues *qs, const tly_pod *p, const tly_podreq *r,
                           const tly_k8s_node *n, uint64_t gpu_mem_mib, tly_qty *out,
                           const char **problem, tly_arena *a)
{
    charges(qs, p, r, n, NULL, 0, gpu_mem_mib, NULL, 0, out, problem, a, false);
}

void tly_accounted_charges_job(const tly_queues *qs, const tly_pod *p, const tly_podreq *r,
                               uint64_t max_gpu_mem_mib, const uint32_t *idx, uint32_t nidx,
                               tly_qty *out, tly_arena *a)
{
    charges(qs, p, r, NULL, NULL, 0, max_gpu_mem_mib, idx, nidx, out, NULL, a, true);
}

void tly_accounted_charges_matched(const tly_queues *qs, const tly_pod *p, const tly_podreq *r,
                                   const tly_acc_match *m, uint32_t node, uint64_t gpu_mem_mib,
                                   const uint32_t *idx, uint32_t nidx, tly_qty *out,
                                   const char **problem, tly_arena *a)
{
    charges(qs, p, r, NULL, m, node, gpu_mem_mib, idx, nidx, out, problem, a, false);
}

/* ---- which AccountedResources concern a pod --------------------------------- */

/* A growable list of AccountedResource indices. */
typedef struct {
    uint32_t *v;
    uint32_t n, cap;
} idxlist;

static void idx_push(idxlist *l, uint32_t k)
{
    if (l->n && l->v[l->n - 1] == k)
        return;  /* one AccountedResource with two sources on the same thing */
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->v = tly_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = k;
}

struct tly_acc_index {
    idxlist *by_res;       /* per resource id: ARs with a resourceName source on it */
    uint32_t nres;
    idxlist gpu;           /* ARs a GPU request may charge: GPU sources, gpu-memory */
    idxlist *by_ann;       /* per distinct annotation key (annmap value - 1) */
    uint32_t nann;
    tly_strmap annmap;
};

tly_acc_index *tly_acc_index_create(const tly_queues *qs, const uint8_t *live)
{
    tly_acc_index *x = tly_xcalloc(1, sizeof *x);
    tly_strmap_init(&x->annmap);
    uint32_t na = tly_queues_naccres(qs);
    for (uint32_t k = 0; k < na; k++) {
        const tly_accres *ar = tly_queues_accres(qs, k);
        if (live && !live[k])
            continue;
        if (tly_queues_accres_is_gpu_memory(qs, k)) {
            idx_push(&x->gpu, k);
            continue;
        }
        for (uint32_t i = 0; i < ar->nsources; i++) {
            const tly_accsrc *src = &ar->sources[i];
            if (src->kind == TLY_SRC_RESOURCE_NAME) {
                uint32_t id = src->resource_id;
                if (id == TLY_R_NVIDIA_GPU || id == TLY_R_AMD_GPU) {
                    idx_push(&x->gpu, k);
                    continue;
                }
                if (id >= x->nres) {
                    uint32_t n = id + 1;
                    x->by_res = tly_xrealloc(x->by_res, n * sizeof *x->by_res);
                    memset(x->by_res + x->nres, 0, (n - x->nres) * sizeof *x->by_res);
                    x->nres = n;
                }
                idx_push(&x->by_res[id], k);
            } else if (src->kind == TLY_SRC_POD_ANNOTATION && src->annotation_key) {
                const char *key = src->annotation_key;
                uintptr_t v = (uintptr_t)tly_strmap_get(&x->annmap, key, strlen(key));
                if (!v) {
                    x->by_ann = tly_xrealloc(x->by_ann, (x->nann + 1) * sizeof *x->by_ann);
                    memset(&x->by_ann[x->nann], 0, sizeof *x->by_ann);
                    v = ++x->nann;
                    tly_strmap_put(&x->annmap, key, strlen(key), (void *)v);
                }
                idx_push(&x->by_ann[v - 1], k);
            }
        }
    }
    return x;
}

void tly_acc_index_destroy(tly_acc_index *x)
{
    if (!x)
        return;
    for (uint32_t i = 0; i < x->nres; i++)
        free(x->by_res[i].v);
    for (uint32_t i = 0; i < x->nann; i++)
        free(x->by_ann[i].v);
    free(x->by_res);
    free(x->by_ann);
    free(x->gpu.v);
    tly_strmap_free(&x->annmap);
    free(x);
}

/*
** dst[0..*n) := the union of dst[0..*n) and l (both ascending), through tmp.
** Merging the few sorted lists a pod touches is cheaper than sorting.
*/
static void merge_into(uint32_t *dst, uint32_t *n, const idxlist *l, uint32_t *tmp)
{
    if (*n == 0) {
        if (l->n)
            memcpy(dst, l->v, l->n * sizeof *dst);
        *n = l->n;
        return;
    }
    uint32_t i = 0, j = 0, m = 0;
    while (i < *n || j < l->n) {
        uint32_t x = i < *n ? dst[i] : UINT32_MAX, y = j < l->n ? l->v[j] : UINT32_MAX;
        tmp[m++] = x < y ? x : y;
        i += x <= y;
        j += y <= x;
    }
    memcpy(dst, tmp, m * sizeof *tmp);
    *n = m;
}

/* The annotation list of key, or NULL. */
static const idxlist *ann_list(const tly_acc_index *x, const char *key)
{
    uintptr_t v = x->nann ? (uintptr_t)tly_strmap_get(&x->annmap, key, strlen(key)) : 0;
    return v ? &x->by_ann[v - 1] : NULL;
}

uint32_t tly_acc_relevant(const tly_acc_index *x, const tly_pod *p, const tly_podreq *r,
                          tly_arena *a, uint32_t **out)
{
    /* Sizes first (each list once per thing the pod has), then merge. */
    uint32_t total = 0;
    if (r->gpu_kind != TLY_GPU_NONE)
        total += x->gpu.n;
    for (uint32_t i = 0; i < r->req.n; i++)
        if (r->req.v[i].id < x->nres && tly_qty_sign(r->req.v[i].q) != 0)
            total += x->by_res[r->req.v[i].id].n;
    for (uint32_t i = 0; i < p->meta.annotations.n; i++) {
        const idxlist *l = ann_list(x, p->meta.annotations.v[i].key);
        total += l ? l->n : 0;
    }
    uint32_t *buf = tly_arena_alloc(a, (total + 1) * sizeof *buf), n = 0;
    uint32_t stack[256], *tmp = total < 256 ? stack : tly_xmalloc((total + 1) * sizeof *tmp);
    if (r->gpu_kind != TLY_GPU_NONE)
        merge_into(buf, &n, &x->gpu, tmp);
    for (uint32_t i = 0; i < r->req.n; i++)
        if (r->req.v[i].id < x->nres && tly_qty_sign(r->req.v[i].q) != 0)
            merge_into(buf, &n, &x->by_res[r->req.v[i].id], tmp);
    for (uint32_t i = 0; i < p->meta.annotations.n; i++) {
        const idxlist *l = ann_list(x, p->meta.annotations.v[i].key);
        if (l)
            merge_into(buf, &n, l, tmp);
    }
    if (tmp != stack)
        free(tmp);
    *out = buf;
    return n;
}

void tly_acc_match_build(tly_acc_match *m, const tly_queues *qs, const tly_k8s_node *const *nodes,
                         uint32_t nnodes)
{
    uint32_t na = tly_queues_naccres(qs);
    m->off = tly_xmalloc((na + 1) * sizeof *m->off);
    m->nsrc = 0;
    for (uint32_t k = 0; k < na; k++) {
        m->off[k] = m->nsrc;
        m->nsrc += tly_queues_accres(qs, k)->nsources;
    }
    m->bits = tly_xcalloc((size_t)nnodes * m->nsrc + 1, 1);
    for (uint32_t n = 0; n < nnodes; n++)
        for (uint32_t k = 0; k < na; k++) {
            const tly_accres *ar = tly_queues_accres(qs, k);
            for (uint32_t i = 0; i < ar->nsources; i++)
                m->bits[(size_t)n * m->nsrc + m->off[k] + i] =
                    tly_node_labels_match(&ar->sources[i].match_node_labels, nodes[n]);
        }
}

uint32_t tly_acc_node_classes(const tly_acc_match *m, const uint64_t *gpu_mem, uint32_t nnodes, uint32_t *cls)
{
    /* Classes are few (GPU models times label sets): a scan of the representatives per node. */
    uint32_t *rep = tly_xmalloc((nnodes + 1) * sizeof *rep), n = 0;
    for (uint32_t i = 0; i < nnodes; i++) {
        const uint8_t *row = m->bits + (size_t)i * m->nsrc;
        uint32_t c = 0;
        for (; c < n; c++)
            if (gpu_mem[rep[c]] == gpu_mem[i] && !memcmp(m->bits + (size_t)rep[c] * m->nsrc, row, m->nsrc))
                break;
        if (c == n)
            rep[n++] = i;
        cls[i] = c;
    }
    free(rep);
    return n;
}

void tly_acc_match_free(tly_acc_match *m)
{
    free(m->bits);
    free(m->off);
    m->bits = NULL;
    m->off = NULL;
}
