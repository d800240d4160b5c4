/*
** ptree.c: the persistent B+-tree of the live state (ptree.h).
**
** Every change of a node goes through own(): a node born in the writer's
** epoch is the writer's to change; any older node may be in some fork, so
** it is copied and the original retired in this epoch. A put or delete
** walks down without copying and owns the nodes on its way back up, only
** once it knows something changed: setting a key to the value it has, or
** deleting a missing key, copies nothing.
**
** Keys. Each key lives in an allocation of its own (tly_pkey), which is
** never changed. A node copy copies the pointers, not the strings, so a
** string may be seen by a fork's node and by the writer's copy at once.
** What keeps that safe: in the writer's current tree every key allocation
** sits in exactly one slot (a leaf entry or a separator), and it is
** retired in the epoch in which the writer takes it out of that slot (the
** entry deleted, the separator replaced or dropped), like a node. A fork
** that can still see it was taken before that epoch, and retired memory
** outlives such forks (epoch.h). Moving a slot between nodes (a split, a
** loan, a merge) moves the pointer; a new separator for a leaf is a fresh
** copy of the key, never a second pointer to the leaf's.
**
** Nodes and keys come from the epochs' spare stacks (epoch.h), by size
** class, and go back there when freed, so steady copying calls no malloc.
**
** Compares: each slot caches its key's first 8 bytes as a big-endian
** number (0-padded), so two keys whose first 8 bytes differ compare by one
** integer compare, and equal prefixes continue from byte 8 of the strings.
*/
#include "ptree.h"

#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"

#define FAN TLY_PTREE_FAN
#define HALF (TLY_PTREE_FAN / 2)

_Static_assert(FAN % 2 == 0 && FAN >= 4, "a node splits into two halves of at least 2");
_Static_assert(sizeof(tly_ptree) <= TLY_EPOCH_SPARE_CLASSES * 16, "nodes have a spare class");

/* ---- memory ------------------------------------------------------------------- */

/* 1 + the spare class of a block of sz bytes; 0 when too big to keep. */
static size_t spare_class(size_t sz)
{
    size_t c = (sz + 15) / 16;
    return c <= TLY_EPOCH_SPARE_CLASSES ? c : 0;
}

/* sz bytes: a kept block of its class, else malloc (rounded to the class). */
static void *block_alloc(tly_epochs *e, size_t sz)
{
    size_t c = spare_class(sz);
    if (!c)
        return tly_xmalloc(sz);
    tly_spares *s = &e->spare[c - 1];
    return s->n ? s->v[--s->n] : tly_xmalloc(c * 16);
}

/* ctx is the stack of the block's class (retire_block() picks it), or NULL: freed. */
static void block_free(void *p, void *ctx)
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

/* Retires block p of sz bytes, to be kept in its class's stack once no fork sees it. */
static void retire_block(tly_epochs *e, void *p, size_t sz, uint64_t born)
{
    size_t c = spare_class(sz);
    tly_epochs_retire(e, p, born, block_free, c ? &e->spare[c - 1] : NULL);
}

static void retire_node(tly_epochs *e, tly_ptree *n) { retire_block(e, n, sizeof *n, n->born); }

static void retire_key(tly_epochs *e, tly_pkey *k)
{
    retire_block(e, k, sizeof *k + strlen(k->s) + 1, k->born);
}

static tly_pkey *key_new(tly_epochs *e, const char *s)
{
    size_t n = strlen(s) + 1;
    tly_pkey *k = block_alloc(e, sizeof *k + n);
    k->born = tly_epochs_cur(e);
    memcpy(k->s, s, n);
    return k;
}

static tly_ptree *node_new(tly_epochs *e, bool leaf)
{
    tly_ptree *n = block_alloc(e, sizeof *n);
    n->born = tly_epochs_cur(e);
    n->size = 0;
    n->n = 0;
    n->leaf = leaf;
    return n;
}

/* The node itself when the writer may change it, else a copy (the original retired). */
static tly_ptree *own(tly_epochs *e, tly_ptree *n)
{
    if (n->born >= tly_epochs_cur(e))
        return n;
    tly_ptree *c = block_alloc(e, sizeof *c);
    memcpy(c, n, sizeof *c);
    c->born = tly_epochs_cur(e);
    retire_node(e, n);
    return c;
}

/* ---- compares ------------------------------------------------------------------ */

static uint64_t prefix(const char *s)
{
    uint64_t p = 0;
    for (int i = 0; i < 8 && s[i]; i++)
        p |= (uint64_t)(unsigned char)s[i] << (56 - 8 * i);
    return p;
}

/* strcmp's sign for key k (prefix kp) against slot i of t. */
static int cmp_slot(uint64_t kp, const char *k, const tly_ptree *t, uint32_t i)
{
    if (kp != t->pre[i])
        return kp < t->pre[i] ? -1 : 1;
    /* Equal prefixes ending in a 0 byte: both keys end inside it, so they are equal. */
    if (!(kp & 0xff))
        return 0;
    return strcmp(k + 8, t->key[i]->s + 8);
}

/* The first slot in [from, n) whose key is >= k; *eq: that key is k. */
static uint32_t lower(const tly_ptree *t, uint32_t from, uint64_t kp, const char *k, bool *eq)
{
    uint32_t lo = from, hi = t->n;
    *eq = false;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        int c = cmp_slot(kp, k, t, mid);
        if (c > 0) {
            lo = mid + 1;
        } else {
            hi = mid;
            *eq = *eq || !c;
        }
    }
    return lo;
}

/* The child of interior node t whose keys would hold k. */
static uint32_t child_of(const tly_ptree *t, uint64_t kp, const char *k)
{
    bool eq;
    uint32_t j = lower(t, 1, kp, k, &eq);
    return eq ? j : j - 1;
}

/* ---- readers ------------------------------------------------------------------- */

void *tly_ptree_get(const tly_ptree *t, const char *key)
{
    if (!t)
        return NULL;
    uint64_t kp = prefix(key);
    while (!t->leaf)
        t = t->p[child_of(t, kp, key)];
    bool eq;
    uint32_t i = lower(t, 0, kp, key, &eq);
    return eq ? t->p[i] : NULL;
}

bool tly_ptree_at(const tly_ptree *t, uint32_t i, const char **key, void **val)
{
    if (i >= tly_ptree_count(t))
        return false;
    while (!t->leaf) {
        uint32_t j = 0;
        for (const tly_ptree *c; i >= (c = t->p[j])->size; j++)
            i -= c->size;
        t = t->p[j];
    }
    if (key)
        *key = t->key[i]->s;
    if (val)
        *val = t->p[i];
    return true;
}

int tly_ptree_each(const tly_ptree *t, int (*fn)(void *ctx, const char *key, void *val), void *ctx)
{
    if (!t)
        return 0;
    for (uint32_t i = 0; i < t->n; i++) {
        int rc = t->leaf ? fn(ctx, t->key[i]->s, t->p[i]) : tly_ptree_each(t->p[i], fn, ctx);
        if (rc)
            return rc;
    }
    return 0;
}

typedef struct {
    uint64_t lp, hp;
    const char *lo, *hi;
    int (*fn)(void *ctx, const char *key, void *val);
    void *ctx;
} span;

static int range(const span *s, const tly_ptree *t)
{
    bool eq;
    uint32_t i = t->leaf ? lower(t, 0, s->lp, s->lo, &eq) : child_of(t, s->lp, s->lo);
    for (; i < t->n; i++) {
        /* A key (or separator) at or past hi: it and everything after it are out. */
        if (s->hi && (t->leaf || i > 0) && cmp_slot(s->hp, s->hi, t, i) <= 0)
            return 0;
        int rc = t->leaf ? s->fn(s->ctx, t->key[i]->s, t->p[i]) : range(s, t->p[i]);
        if (rc)
            return rc;
    }
    return 0;
}

int tly_ptree_range(const tly_ptree *t, const char *lo, const char *hi,
                    int (*fn)(void *ctx, const char *key, void *val), void *ctx)
{
    if (!t)
        return 0;
    span s = {prefix(lo), hi ? prefix(hi) : 0, lo, hi, fn, ctx};
    return range(&s, t);
}

/* ---- slots --------------------------------------------------------------------- */

/* Moves m slots of src from si to dst at di (the ranges may overlap). */
static void slots_move(tly_ptree *dst, uint32_t di, const tly_ptree *src, uint32_t si, uint32_t m)
{
    memmove(&dst->pre[di], &src->pre[si], m * sizeof dst->pre[0]);
    memmove(&dst->key[di], &src->key[si], m * sizeof dst->key[0]);
    memmove(&dst->p[di], &src->p[si], m * sizeof dst->p[0]);
}

static void slot_set(tly_ptree *t, uint32_t i, uint64_t pre, tly_pkey *key, void *p)
{
    t->pre[i] = pre;
    t->key[i] = key;
    t->p[i] = p;
}

/* An interior node's first slot has no separator. */
static void clear_sep0(tly_ptree *t)
{
    t->pre[0] = 0;
    t->key[0] = NULL;
}

static void slot_remove(tly_ptree *t, uint32_t i)
{
    slots_move(t, i, t, i + 1, t->n - i - 1);
    t->n--;
}

/* Entries under slots [0, n): a leaf's n, an interior node's children's. */
static uint32_t entries(const tly_ptree *t)
{
    if (t->leaf)
        return t->n;
    uint32_t s = 0;
    for (uint32_t i = 0; i < t->n; i++)
        s += ((const tly_ptree *)t->p[i])->size;
    return s;
}

/* Entries under slot i. */
static uint32_t slot_entries(const tly_ptree *t, uint32_t i)
{
    return t->leaf ? 1 : ((const tly_ptree *)t->p[i])->size;
}

/* ---- put ----------------------------------------------------------------------- */

typedef struct {
    tly_epochs *e;
    const char *k;
    uint64_t kp;
    void *val, *old;
    bool changed;         /* something under the node returned was changed */
    int32_t delta;        /* entries added (1, a put of a new key) or removed (-1) */
    tly_ptree *right;     /* a split's new right half (NULL: none), for the parent */
    tly_pkey *sep;        /* and its separator */
    uint64_t sep_pre;
} op;

/* Moves the upper half of full node t (the writer's) to a new node: o->right, o->sep. */
static tly_ptree *split(op *o, tly_ptree *t)
{
    tly_ptree *r = node_new(o->e, t->leaf);
    slots_move(r, 0, t, HALF, FAN - HALF);
    r->n = FAN - HALF;
    t->n = HALF;
    o->sep_pre = r->pre[0];
    if (t->leaf) {
        o->sep = key_new(o->e, r->key[0]->s);
    } else {
        /* The right half's first separator moves up. */
        o->sep = r->key[0];
        clear_sep0(r);
    }
    o->right = r;
    return r;
}

/*
** Puts a slot at i of t (the writer's), splitting t first when it is full.
** A slot put in a leaf is a new entry; one put in an interior node is the
** right half of a child's split, whose entries t already counts.
*/
static void insert(op *o, tly_ptree *t, uint32_t i, uint64_t pre, tly_pkey *key, void *p)
{
    tly_ptree *at = t, *r = NULL;
    if (t->n == FAN) {
        r = split(o, t);
        if (i > HALF) {
            at = r;
            i -= HALF;
        }
    }
    slots_move(at, i + 1, at, i, at->n - i);
    slot_set(at, i, pre, key, p);
    at->n++;
    if (r) {
        t->size = entries(t);
        r->size = entries(r);
    } else if (t->leaf) {
        t->size++;
    }
}

static tly_ptree *put_leaf(op *o, tly_ptree *t)
{
    bool eq;
    uint32_t i = lower(t, 0, o->kp, o->k, &eq);
    if (eq) {
        o->old = t->p[i];
        if (o->old == o->val)
            return t;
        t = own(o->e, t);
        t->p[i] = o->val;
    } else {
        t = own(o->e, t);
        insert(o, t, i, o->kp, key_new(o->e, o->k), o->val);
        o->delta = 1;
    }
    o->changed = true;
    return t;
}

/*
** Applies step to the child of interior node t whose keys would hold o's
** key (*i). When that changed something, t is made the writer's, points
** to the child step returned and counts its entries again.
*/
static tly_ptree *descend(op *o, tly_ptree *t, tly_ptree *(*step)(op *, tly_ptree *), uint32_t *i)
{
    *i = child_of(t, o->kp, o->k);
    tly_ptree *c = step(o, t->p[*i]);
    if (!o->changed)
        return t;
    t = own(o->e, t);
    t->p[*i] = c;
    t->size += (uint32_t)o->delta;   /* -1 wraps to a decrement */
    return t;
}

static tly_ptree *put(op *o, tly_ptree *t)
{
    if (t->leaf)
        return put_leaf(o, t);
    uint32_t i;
    t = descend(o, t, put, &i);
    if (o->right) {
        tly_ptree *r = o->right;
        o->right = NULL;
        insert(o, t, i + 1, o->sep_pre, o->sep, r);
    }
    return t;
}

tly_ptree *tly_ptree_put(tly_epochs *e, tly_ptree *t, const char *key, void *val, void **old)
{
    op o = {.e = e, .k = key, .kp = prefix(key), .val = val};
    t = put(&o, t ? t : node_new(e, true));
    *old = o.old;
    if (!o.right)
        return t;
    /* The root split: a new root over the two halves. */
    tly_ptree *root = node_new(e, false);
    root->n = 2;
    slot_set(root, 0, 0, NULL, t);
    slot_set(root, 1, o.sep_pre, o.sep, o.right);
    root->size = t->size + o.right->size;
    return root;
}

/* ---- delete -------------------------------------------------------------------- */

/* Child i of t lends its last slot to child i + 1 (both the writer's). */
static void lend_right(tly_epochs *e, tly_ptree *t, uint32_t i)
{
    tly_ptree *s = t->p[i], *c = t->p[i + 1];
    uint32_t last = s->n - 1, moved = slot_entries(s, last);
    slots_move(c, 1, c, 0, c->n);
    slot_set(c, 0, s->pre[last], s->key[last], s->p[last]);
    if (c->leaf) {
        retire_key(e, t->key[i + 1]);
        t->key[i + 1] = key_new(e, c->key[0]->s);
        t->pre[i + 1] = c->pre[0];
    } else {
        /* The separator comes down before c's old first child; s's last one goes up. */
        c->pre[1] = t->pre[i + 1];
        c->key[1] = t->key[i + 1];
        t->pre[i + 1] = c->pre[0];
        t->key[i + 1] = c->key[0];
        clear_sep0(c);
    }
    c->n++;
    s->n--;
    c->size += moved;
    s->size -= moved;
}

/* Child i + 1 of t lends its first slot to child i (both the writer's). */
static void lend_left(tly_epochs *e, tly_ptree *t, uint32_t i)
{
    tly_ptree *c = t->p[i], *s = t->p[i + 1];
    uint32_t moved = slot_entries(s, 0);
    slot_set(c, c->n, s->pre[0], s->key[0], s->p[0]);
    if (c->leaf) {
        slot_remove(s, 0);
        retire_key(e, t->key[i + 1]);
        t->key[i + 1] = key_new(e, s->key[0]->s);
        t->pre[i + 1] = s->pre[0];
    } else {
        /* The separator comes down before the moved child; s's next one goes up. */
        c->pre[c->n] = t->pre[i + 1];
        c->key[c->n] = t->key[i + 1];
        t->pre[i + 1] = s->pre[1];
        t->key[i + 1] = s->key[1];
        slot_remove(s, 0);
        clear_sep0(s);
    }
    c->n++;
    c->size += moved;
    s->size -= moved;
}

/* Children j and j + 1 of t become one: j (made the writer's) takes j + 1's slots. */
static void merge(tly_epochs *e, tly_ptree *t, uint32_t j)
{
    tly_ptree *l = own(e, t->p[j]), *r = t->p[j + 1];
    uint32_t at = l->n;
    slots_move(l, at, r, 0, r->n);
    if (l->leaf) {
        retire_key(e, t->key[j + 1]);
    } else {
        l->pre[at] = t->pre[j + 1];
        l->key[at] = t->key[j + 1];
    }
    l->n += r->n;
    l->size += r->size;
    retire_node(e, r);
    t->p[j] = l;
    slot_remove(t, j + 1);
}

/* Child i of t (the writer's, as is t) has fewer than HALF slots: a sibling lends or joins. */
static void rebalance(tly_epochs *e, tly_ptree *t, uint32_t i)
{
    uint32_t j = i > 0 ? i - 1 : i;
    const tly_ptree *l = t->p[j], *r = t->p[j + 1];
    if (l->n + r->n < FAN) {
        merge(e, t, j);
        return;
    }
    /* The sibling has more than HALF: it lends one slot (and is the writer's first). */
    uint32_t s = j == i ? j + 1 : j;
    t->p[s] = own(e, t->p[s]);
    if (j == i)
        lend_left(e, t, j);
    else
        lend_right(e, t, j);
}

static tly_ptree *del(op *o, tly_ptree *t)
{
    bool eq;
    if (t->leaf) {
        uint32_t i = lower(t, 0, o->kp, o->k, &eq);
        if (!eq)
            return t;
        t = own(o->e, t);
        o->old = t->p[i];
        retire_key(o->e, t->key[i]);
        slot_remove(t, i);
        t->size--;
        o->changed = true;
        o->delta = -1;
        return t;
    }
    uint32_t i;
    t = descend(o, t, del, &i);
    if (o->changed && ((const tly_ptree *)t->p[i])->n < HALF)
        rebalance(o->e, t, i);
    return t;
}

tly_ptree *tly_ptree_del(tly_epochs *e, tly_ptree *t, const char *key, void **old)
{
    *old = NULL;
    if (!t)
        return NULL;
    op o = {.e = e, .k = key, .kp = prefix(key)};
    t = del(&o, t);
    *old = o.old;
    if (!o.changed || (t->leaf ? t->n > 0 : t->n > 1))
        return t;
    /* An empty leaf root leaves no tree; an interior root with one child gives way to it. */
    tly_ptree *next = t->leaf ? NULL : t->p[0];
    retire_node(e, t);
    return next;
}

void tly_ptree_free(tly_epochs *e, tly_ptree *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->n; i++) {
        if (t->key[i])
            retire_key(e, t->key[i]);
        if (!t->leaf)
            tly_ptree_free(e, t->p[i]);
    }
    retire_node(e, t);
}

/* ---- check --------------------------------------------------------------------- */

/* Slot i's key: present (but for an interior node's first), prefix right, in (prev, hi) and >= lo. */
static bool key_ok(const tly_ptree *t, uint32_t i, const char *lo, const char *hi)
{
    const tly_pkey *k = t->key[i];
    if (!t->leaf && i == 0)
        return !k && !t->pre[0];
    if (!k || t->pre[i] != prefix(k->s))
        return false;
    if ((lo && strcmp(k->s, lo) < 0) || (hi && strcmp(k->s, hi) >= 0))
        return false;
    uint32_t first = t->leaf ? 0 : 1;
    return i == first || strcmp(t->key[i - 1]->s, k->s) < 0;
}

/* The depth of t's leaves (0: t is one), or -1 when an invariant fails. Keys in [lo, hi). */
static int check(const tly_ptree *t, const char *lo, const char *hi, bool root)
{
    uint32_t min = !root ? HALF : t->leaf ? 1 : 2;
    if (t->n < min || t->n > FAN || t->size != entries(t))
        return -1;
    int depth = -1;
    for (uint32_t i = 0; i < t->n; i++) {
        if (!key_ok(t, i, lo, hi))
            return -1;
        if (t->leaf)
            continue;
        const char *clo = i ? t->key[i]->s : lo, *chi = i + 1 < t->n ? t->key[i + 1]->s : hi;
        int d = check(t->p[i], clo, chi, false);
        if (d < 0 || (depth >= 0 && d != depth))
            return -1;
        depth = d;
    }
    return t->leaf ? 0 : depth + 1;
}

bool tly_ptree_check(const tly_ptree *t) { return !t || check(t, NULL, NULL, true) >= 0; }
