/*
** nodeclass.c: static node classes and pod constraint ids (nodeclass.h).
**
** Both are found by interning an exact encoding of what the static
** predicates read: for a node, unschedulable, ready, every taint (key, value,
** effect, in order: the first untolerated one names the message) and the
** value of each selected label key (or its absence); for a pod, every
** toleration, the nodeSelector pairs and the required node affinity terms.
** Strings are written with their length, NULL apart from "", so two
** encodings are equal only when the predicates cannot tell the objects apart.
** The answers are filled in lazily: most (constraint, class) pairs are never
** asked for.
*/
#include "tally/nodeclass.h"

#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "tally/arena.h"

/* One constraint's answers, per class (-1: not computed yet). */
typedef struct {
    const tly_pod *pod;   /* its first pod: any of its pods gives the same answers */
    int8_t *fit;
    const tly_taint **taint;
    uint32_t *cand;       /* candidate nodes, once listed */
    uint32_t ncand;
    uint32_t *pass;       /* the classes they are in */
    uint32_t npass;
    uint8_t *ok;          /* per node: 1 when it is a candidate */
    bool listed;
} ncon;

typedef struct {
    char *b;
    size_t n, cap;
} buf;

struct tly_nodeclasses {
    tly_arena *a;
    const tly_k8s_node *const *nodes;
    uint32_t nnodes;
    const char **keys;    /* the selected label keys, sorted */
    uint32_t nkeys;
    uint32_t *cls;        /* per node */
    uint32_t *rep;        /* per class: its first node */
    uint32_t *size;       /* per class: its node count */
    uint32_t ncls;
    tly_strmap con_ids;   /* pod encoding -> constraint id + 1 */
    ncon *cons;
    uint32_t ncons, capcons;
    buf enc;              /* the encoding buffer, kept across pods: one allocation, not one per pod */
};

/* ---- encodings ------------------------------------------------------------------ */

static void put(buf *o, const void *p, size_t n)
{
    if (o->n + n > o->cap) {
        o->cap = (o->n + n) * 2 + 64;
        o->b = tly_xrealloc(o->b, o->cap);
    }
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

/* A string with its length; NULL as a length no string has. */
static void put_str(buf *o, const char *s)
{
    uint32_t len = s ? (uint32_t)strlen(s) : UINT32_MAX;
    put(o, &len, sizeof len);
    if (s)
        put(o, s, len);
}

static void put_u32(buf *o, uint32_t v) { put(o, &v, sizeof v); }

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Adds the label keys p's selectors name to keys[] (duplicates removed later). */
static void collect_keys(const tly_pod *p, const char ***keys, uint32_t *n, uint32_t *cap)
{
    uint32_t need = p->node_selector.n;
    for (uint32_t t = 0; t < p->nnode_affinity_required; t++)
        need += p->node_affinity_required[t].nreqs + p->node_affinity_required[t].match_labels.n;
    if (*n + need > *cap) {
        *cap = (*n + need) * 2 + 16;
        *keys = tly_xrealloc(*keys, *cap * sizeof **keys);
    }
    for (uint32_t i = 0; i < p->node_selector.n; i++)
        (*keys)[(*n)++] = p->node_selector.v[i].key;
    for (uint32_t t = 0; t < p->nnode_affinity_required; t++) {
        const tly_selector *s = &p->node_affinity_required[t];
        for (uint32_t i = 0; i < s->nreqs; i++)
            (*keys)[(*n)++] = s->reqs[i].key;
        for (uint32_t i = 0; i < s->match_labels.n; i++)
            (*keys)[(*n)++] = s->match_labels.v[i].key;
    }
}

static bool has_key(const tly_nodeclasses *nc, const char *k)
{
    return k && bsearch(&k, nc->keys, nc->nkeys, sizeof *nc->keys, cmp_str) != NULL;
}

static void encode_node(const tly_nodeclasses *nc, const tly_k8s_node *n, buf *o)
{
    o->n = 0;
    put_u32(o, n->unschedulable);
    put_u32(o, (uint32_t)(int32_t)n->ready);
    put_u32(o, n->ntaints);
    for (uint32_t i = 0; i < n->ntaints; i++) {
        put_str(o, n->taints[i].key);
        put_str(o, n->taints[i].value);
        put_str(o, n->taints[i].effect);
    }
    for (uint32_t k = 0; k < nc->nkeys; k++)
        put_str(o, tly_kvs_get(&n->meta.labels, nc->keys[k]));
}

static void encode_selector(const tly_selector *s, buf *o)
{
    put_u32(o, s->nreqs);
    for (uint32_t i = 0; i < s->nreqs; i++) {
        put_str(o, s->reqs[i].key);
        put_str(o, s->reqs[i].op);
        put_u32(o, s->reqs[i].nvalues);
        for (uint32_t v = 0; v < s->reqs[i].nvalues; v++)
            put_str(o, s->reqs[i].values[v]);
    }
    put_u32(o, s->match_labels.n);
    for (uint32_t i = 0; i < s->match_labels.n; i++) {
        put_str(o, s->match_labels.v[i].key);
        put_str(o, s->match_labels.v[i].val);
    }
}

/* false: p cannot share answers (matchFields, or a key without classes). */
static bool encode_pod(const tly_nodeclasses *nc, const tly_pod *p, buf *o)
{
    o->n = 0;
    put_u32(o, p->ntolerations);
    for (uint32_t i = 0; i < p->ntolerations; i++) {
        const tly_toleration *t = &p->tolerations[i];
        put_str(o, t->key);
        put_str(o, t->op);
        put_str(o, t->value);
        put_str(o, t->effect);
    }
    put_u32(o, p->node_selector.n);
    for (uint32_t i = 0; i < p->node_selector.n; i++) {
        if (!has_key(nc, p->node_selector.v[i].key))
            return false;
        put_str(o, p->node_selector.v[i].key);
        put_str(o, p->node_selector.v[i].val);
    }
    put_u32(o, p->nnode_affinity_required);
    for (uint32_t t = 0; t < p->nnode_affinity_required; t++) {
        const tly_selector *s = &p->node_affinity_required[t];
        if (s->has_fields || s->nfields)
            return false;
        for (uint32_t i = 0; i < s->nreqs; i++)
            if (!has_key(nc, s->reqs[i].key))
                return false;
        for (uint32_t i = 0; i < s->match_labels.n; i++)
            if (!has_key(nc, s->match_labels.v[i].key))
                return false;
        encode_selector(s, o);
    }
    return true;
}

/* ---- classes ---------------------------------------------------------------------- */

/* The sorted, distinct label keys that the pods' selectors name. */
static void build_keys(tly_nodeclasses *nc, const tly_pod *const *pods, uint32_t npods)
{
    const char **keys = NULL;
    uint32_t n = 0, cap = 0;
    for (uint32_t i = 0; i < npods; i++)
        collect_keys(pods[i], &keys, &n, &cap);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (keys[i])
            keys[m++] = keys[i];
    if (m)
        qsort(keys, m, sizeof *keys, cmp_str);
    uint32_t d = 0;
    for (uint32_t i = 0; i < m; i++)
        if (d == 0 || strcmp(keys[d - 1], keys[i]) != 0)
            keys[d++] = keys[i];
    nc->keys = keys;
    nc->nkeys = d;
}

static void build_classes(tly_nodeclasses *nc)
{
    tly_strmap ids;
    tly_strmap_init(&ids);
    buf o = {0};
    nc->cls = tly_xmalloc((nc->nnodes + 1) * sizeof *nc->cls);
    nc->rep = tly_xmalloc((nc->nnodes + 1) * sizeof *nc->rep);
    nc->size = tly_xcalloc(nc->nnodes + 1, sizeof *nc->size);
    for (uint32_t i = 0; i < nc->nnodes; i++) {
        encode_node(nc, nc->nodes[i], &o);
        uintptr_t id = (uintptr_t)tly_strmap_get(&ids, o.b, o.n);
        if (!id) {
            char *key = tly_arena_alloc(nc->a, o.n + 1);
            memcpy(key, o.b, o.n);
            nc->rep[nc->ncls] = i;
            id = ++nc->ncls;
            tly_strmap_put(&ids, key, o.n, (void *)id);
        }
        nc->cls[i] = (uint32_t)id - 1;
        nc->size[id - 1]++;
    }
    free(o.b);
    tly_strmap_free(&ids);
}

tly_nodeclasses *tly_nodeclasses_create(const tly_k8s_node *const *nodes, uint32_t nnodes,
                                        const tly_pod *const *pods, uint32_t npods)
{
    tly_nodeclasses *nc = tly_xcalloc(1, sizeof *nc);
    nc->a = tly_arena_create(64 * 1024);
    nc->nodes = nodes;
    nc->nnodes = nnodes;
    tly_strmap_init(&nc->con_ids);
    build_keys(nc, pods, npods);
    build_classes(nc);
    return nc;
}

void tly_nodeclasses_destroy(tly_nodeclasses *nc)
{
    if (!nc)
        return;
    for (uint32_t c = 0; c < nc->ncons; c++) {
        free(nc->cons[c].fit);
        free(nc->cons[c].taint);
        free(nc->cons[c].cand);
        free(nc->cons[c].pass);
        free(nc->cons[c].ok);
    }
    free(nc->cons);
    free(nc->enc.b);
    tly_strmap_free(&nc->con_ids);
    free(nc->keys);
    free(nc->cls);
    free(nc->rep);
    free(nc->size);
    tly_arena_destroy(nc->a);
    free(nc);
}

uint32_t tly_nodeclasses_count(const tly_nodeclasses *nc) { return nc->ncls; }
uint32_t tly_nodeclasses_of(const tly_nodeclasses *nc, uint32_t node) { return nc->cls[node]; }
uint32_t tly_nodeclasses_size(const tly_nodeclasses *nc, uint32_t cls) { return nc->size[cls]; }

/* ---- constraints ------------------------------------------------------------------ */

uint32_t tly_nodeclasses_constraint(tly_nodeclasses *nc, const tly_pod *p)
{
    buf o = nc->enc;
    uint32_t id = TLY_NC_NONE;
    if (encode_pod(nc, p, &o)) {
        uintptr_t v = (uintptr_t)tly_strmap_get(&nc->con_ids, o.b, o.n);
        if (!v) {
            char *key = tly_arena_alloc(nc->a, o.n + 1);
            memcpy(key, o.b, o.n);
            if (nc->ncons == nc->capcons) {
                nc->capcons = nc->capcons * 2 + 8;
                nc->cons = tly_xrealloc(nc->cons, nc->capcons * sizeof *nc->cons);
            }
            ncon *c = &nc->cons[nc->ncons];
            memset(c, 0, sizeof *c);
            c->pod = p;
            c->fit = tly_xmalloc(nc->ncls + 1);
            memset(c->fit, -1, nc->ncls + 1);
            c->taint = tly_xcalloc(nc->ncls + 1, sizeof *c->taint);
            v = ++nc->ncons;
            tly_strmap_put(&nc->con_ids, key, o.n, (void *)v);
        }
        id = (uint32_t)v - 1;
    }
    nc->enc = o;
    return id;
}

tly_fit_result tly_nodeclasses_fit(tly_nodeclasses *nc, uint32_t c, uint32_t cls, const tly_taint **taint)
{
    ncon *k = &nc->cons[c];
    if (k->fit[cls] < 0) {
        const tly_taint *t = NULL;
        k->fit[cls] = (int8_t)tly_nodefit_static(k->pod, nc->nodes[nc->rep[cls]], &t);
        k->taint[cls] = t;
    }
    if (taint)
        *taint = k->taint[cls];
    return (tly_fit_result)k->fit[cls];
}

/* Constraint c's candidate nodes and passing classes, listed at the first question. */
static void list(tly_nodeclasses *nc, uint32_t c)
{
    ncon *k = &nc->cons[c];
    if (k->listed)
        return;
    k->listed = true;
    k->pass = tly_xmalloc((nc->ncls + 1) * sizeof *k->pass);
    for (uint32_t cls = 0; cls < nc->ncls; cls++)
        if (tly_nodeclasses_fit(nc, c, cls, NULL) == TLY_FIT_OK)
            k->pass[k->npass++] = cls;
    k->cand = tly_xmalloc((nc->nnodes + 1) * sizeof *k->cand);
    k->ok = tly_xcalloc(nc->nnodes + 1, 1);
    for (uint32_t i = 0; i < nc->nnodes; i++)
        if (k->fit[nc->cls[i]] == TLY_FIT_OK) {
            k->cand[k->ncand++] = i;
            k->ok[i] = 1;
        }
}

const uint8_t *tly_nodeclasses_node_ok(tly_nodeclasses *nc, uint32_t c)
{
    list(nc, c);
    return nc->cons[c].ok;
}

const uint32_t *tly_nodeclasses_candidates(tly_nodeclasses *nc, uint32_t c, uint32_t *n)
{
    ncon *k = &nc->cons[c];
    list(nc, c);
    *n = k->ncand;
    return k->cand;
}

const uint32_t *tly_nodeclasses_passing(tly_nodeclasses *nc, uint32_t c, uint32_t *n)
{
    ncon *k = &nc->cons[c];
    list(nc, c);
    *n = k->npass;
    return k->pass;
}
