/*
** ptree.c: the persistent treap of the live state (ptree.h).
**
** Every change goes through own(): a node born in the writer's epoch is the
** writer's to change; any older node may be in some fork, so it is copied
** (key included) and the original retired in this epoch. A put or delete
** therefore copies at most the nodes on one root-to-leaf path (and, for a
** delete, the spines it merges), O(log n) of them.
**
** Nodes come from the epochs' spare lists (epoch.h) and go back there when
** freed, so the steady copying of paths calls no malloc.
**
** Heap order is on (priority, key): a higher priority is nearer the root,
** and equal priorities are broken by the smaller key, so the shape is a
** function of the key set alone.
*/
#include "ptree.h"

#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"

static uint32_t key_prio(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)k[i];
        h *= 1099511628211ull;
    }
    /* splitmix64's finaliser: FNV's low bits alone are poorly mixed. */
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return (uint32_t)(h >> 32);
}

/* A node's bytes: the header and its key. */
static size_t node_size(size_t klen) { return sizeof(tly_ptree) + klen + 1; }

/* 1 + the spare class of a node of sz bytes; 0 when too big to keep. */
static size_t spare_class(size_t sz)
{
    size_t c = (sz + 15) / 16;
    return c <= TLY_EPOCH_SPARE_CLASSES ? c : 0;
}

/* sz bytes for a node: a kept one of its class, else malloc (rounded to the class). */
static void *node_alloc(tly_epochs *e, size_t sz)
{
    size_t c = spare_class(sz);
    if (!c)
        return tly_xmalloc(sz);
    tly_spares *s = &e->spare[c - 1];
    return s->n ? s->v[--s->n] : tly_xmalloc(c * 16);
}

/* ctx is the stack of the node's class (retire() picks it), or NULL: freed. */
static void node_free(void *p, void *ctx)
{
    tly_spares *s = ctx;
    if (!s || s->n >= TLY_EPOCH_SPARE_MAX) {
        free(p);
        return;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = tly_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = p;
}

/* Retires node n, to be kept in its class's stack once no fork sees it. */
static void retire(tly_epochs *e, tly_ptree *n)
{
    size_t c = spare_class(node_size(n->klen));
    tly_epochs_retire(e, n, n->born, node_free, c ? &e->spare[c - 1] : NULL);
}

static tly_ptree *node_new(tly_epochs *e, const char *key, size_t klen, void *val)
{
    tly_ptree *n = node_alloc(e, node_size(klen));
    n->l = n->r = NULL;
    n->val = val;
    n->born = tly_epochs_cur(e);
    n->prio = key_prio(key, klen);
    n->size = 1;
    n->klen = (uint32_t)klen;
    memcpy(n->key, key, klen + 1);
    return n;
}

/* The node itself when the writer may change it, else a copy (the original retired). */
static tly_ptree *own(tly_epochs *e, tly_ptree *n)
{
    if (n->born >= tly_epochs_cur(e))
        return n;
    size_t sz = node_size(n->klen);
    tly_ptree *c = node_alloc(e, sz);
    memcpy(c, n, sz);
    c->born = tly_epochs_cur(e);
    retire(e, n);
    return c;
}

static void resize(tly_ptree *n)
{
    n->size = 1 + tly_ptree_count(n->l) + tly_ptree_count(n->r);
}

/* Whether a (priority pa, key ka) sits above b in the heap. */
static bool above(uint32_t pa, const char *ka, const tly_ptree *b)
{
    return pa > b->prio || (pa == b->prio && strcmp(ka, b->key) < 0);
}

void *tly_ptree_get(const tly_ptree *t, const char *key)
{
    while (t) {
        int c = strcmp(key, t->key);
        if (!c)
            return t->val;
        t = c < 0 ? t->l : t->r;
    }
    return NULL;
}

const tly_ptree *tly_ptree_at(const tly_ptree *t, uint32_t i)
{
    while (t) {
        uint32_t ls = tly_ptree_count(t->l);
        if (i < ls) {
            t = t->l;
        } else if (i == ls) {
            return t;
        } else {
            i -= ls + 1;
            t = t->r;
        }
    }
    return NULL;
}

int tly_ptree_each(const tly_ptree *t, int (*fn)(void *ctx, const char *key, void *val), void *ctx)
{
    if (!t)
        return 0;
    int rc = tly_ptree_each(t->l, fn, ctx);
    if (!rc)
        rc = fn(ctx, t->key, t->val);
    if (!rc)
        rc = tly_ptree_each(t->r, fn, ctx);
    return rc;
}

int tly_ptree_range(const tly_ptree *t, const char *lo, const char *hi,
                    int (*fn)(void *ctx, const char *key, void *val), void *ctx)
{
    if (!t)
        return 0;
    bool ge_lo = strcmp(t->key, lo) >= 0, lt_hi = !hi || strcmp(t->key, hi) < 0;
    int rc = 0;
    if (ge_lo)
        rc = tly_ptree_range(t->l, lo, hi, fn, ctx);
    if (!rc && ge_lo && lt_hi)
        rc = fn(ctx, t->key, t->val);
    if (!rc && lt_hi)
        rc = tly_ptree_range(t->r, lo, hi, fn, ctx);
    return rc;
}

/* Splits t (which does not hold key) into the keys below and above key. */
static void split(tly_epochs *e, tly_ptree *t, const char *key, tly_ptree **lo, tly_ptree **hi)
{
    if (!t) {
        *lo = *hi = NULL;
        return;
    }
    t = own(e, t);
    if (strcmp(key, t->key) < 0) {
        split(e, t->l, key, lo, &t->l);
        *hi = t;
    } else {
        split(e, t->r, key, &t->r, hi);
        *lo = t;
    }
    resize(t);
}

static tly_ptree *put(tly_epochs *e, tly_ptree *t, const char *key, size_t klen, uint32_t prio,
                      void *val, void **old)
{
    if (!t)
        return node_new(e, key, klen, val);
    int c = strcmp(key, t->key);
    if (c == 0) {
        t = own(e, t);
        *old = t->val;
        t->val = val;
        return t;
    }
    if (above(prio, key, t)) {
        /* The heap order says the key is not below t: it becomes this subtree's root. */
        tly_ptree *n = node_new(e, key, klen, val);
        split(e, t, key, &n->l, &n->r);
        resize(n);
        return n;
    }
    t = own(e, t);
    if (c < 0)
        t->l = put(e, t->l, key, klen, prio, val, old);
    else
        t->r = put(e, t->r, key, klen, prio, val, old);
    resize(t);
    return t;
}

tly_ptree *tly_ptree_put(tly_epochs *e, tly_ptree *t, const char *key, void *val, void **old)
{
    size_t klen = strlen(key);
    *old = NULL;
    return put(e, t, key, klen, key_prio(key, klen), val, old);
}

/* Joins a and b, every key of a below every key of b. */
static tly_ptree *merge(tly_epochs *e, tly_ptree *a, tly_ptree *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    if (above(a->prio, a->key, b)) {
        a = own(e, a);
        a->r = merge(e, a->r, b);
        resize(a);
        return a;
    }
    b = own(e, b);
    b->l = merge(e, a, b->l);
    resize(b);
    return b;
}

static tly_ptree *del(tly_epochs *e, tly_ptree *t, const char *key, void **old)
{
    int c = strcmp(key, t->key);
    if (c == 0) {
        *old = t->val;
        tly_ptree *m = merge(e, t->l, t->r);
        retire(e, t);
        return m;
    }
    t = own(e, t);
    if (c < 0)
        t->l = del(e, t->l, key, old);
    else
        t->r = del(e, t->r, key, old);
    resize(t);
    return t;
}

tly_ptree *tly_ptree_del(tly_epochs *e, tly_ptree *t, const char *key, void **old)
{
    *old = NULL;
    /* Look first: a missing key must not copy the path to where it would be. */
    if (!tly_ptree_get(t, key))
        return t;
    return del(e, t, key, old);
}

void tly_ptree_free(tly_epochs *e, tly_ptree *t)
{
    if (!t)
        return;
    tly_ptree_free(e, t->l);
    tly_ptree_free(e, t->r);
    retire(e, t);
}

static bool check(const tly_ptree *t, const char *lo, const char *hi)
{
    if (!t)
        return true;
    if ((lo && strcmp(t->key, lo) <= 0) || (hi && strcmp(t->key, hi) >= 0))
        return false;
    if (t->prio != key_prio(t->key, t->klen) || t->size != 1 + tly_ptree_count(t->l) + tly_ptree_count(t->r))
        return false;
    if ((t->l && above(t->l->prio, t->l->key, t)) || (t->r && above(t->r->prio, t->r->key, t)))
        return false;
    return check(t->l, lo, t->key) && check(t->r, t->key, hi);
}

bool tly_ptree_check(const tly_ptree *t) { return check(t, NULL, NULL); }
