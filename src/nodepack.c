/*
** nodepack.c: value trees kept as bytes (nodepack.h).
**
** A tree is written in preorder, a node at a time:
**
**   header    type (3 bits), bval, has key, has text, has flags, odd count
**   flags     one byte, when the node has any
**   key       the key's number in the pack's key table (a varint)
**   line/col  differences from the previous node's, zigzag varints: in a
**             file nodes follow each other, so one byte each, mostly
**   kline/kcol  differences from the node's own line and column
**   text      its length (a varint) and its bytes, NUL-free or not
**   kids      how many children follow (maps and lists, or any node that
**             has children), then nkids when it differs from that count
**
** Keys repeat across objects (every PodGroup has metadata, name, spec), so
** each distinct key is stored once and a node names it by number. Texts are
** stored in place: most values (names, uids) are not shared. A tree is built
** in a scratch buffer and then copied whole into the pack's arena, so a
** packed tree is one run of bytes, found by its first byte.
*/
#include "tally/nodepack.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"

enum {
    H_TYPE = 7u,      /* bits 0-2 */
    H_BVAL = 1u << 3,
    H_KEY = 1u << 4,
    H_STR = 1u << 5,
    H_FLAGS = 1u << 6,
    H_ODD = 1u << 7,  /* nkids differs from the children linked */
};

struct tly_nodepack {
    tly_arena *a;        /* packed trees and key texts */
    tly_strmap keyids;   /* key -> its number + 1 */
    const char **keys;   /* by number */
    uint32_t *klens;
    uint32_t nkeys, capkeys;
    unsigned char *buf;  /* the tree being packed */
    size_t len, cap;
    size_t bytes;        /* of packed trees and keys */
};

tly_nodepack *tly_nodepack_create(void)
{
    tly_nodepack *p = tly_xcalloc(1, sizeof *p);
    p->a = tly_arena_create(1 << 20);
    tly_strmap_init(&p->keyids);
    return p;
}

void tly_nodepack_destroy(tly_nodepack *p)
{
    if (!p)
        return;
    tly_strmap_free(&p->keyids);
    tly_arena_destroy(p->a);
    free(p->keys);
    free(p->klens);
    free(p->buf);
    free(p);
}

size_t tly_nodepack_bytes(const tly_nodepack *p) { return p->bytes; }

/* ---- writing ------------------------------------------------------------- */

static void put_byte(tly_nodepack *p, unsigned char c)
{
    if (p->len == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 1024;
        p->buf = tly_xrealloc(p->buf, p->cap);
    }
    p->buf[p->len++] = c;
}

static void put_uint(tly_nodepack *p, uint64_t v)
{
    while (v >= 0x80) {
        put_byte(p, (unsigned char)(v | 0x80));
        v >>= 7;
    }
    put_byte(p, (unsigned char)v);
}

/* A signed difference, zigzag coded so that small ones of either sign take one byte. */
static void put_diff(tly_nodepack *p, uint32_t now, uint32_t before)
{
    int64_t d = (int64_t)now - (int64_t)before;
    put_uint(p, d >= 0 ? (uint64_t)d << 1 : ((uint64_t)(-(d + 1)) << 1) | 1);
}

static void put_bytes(tly_nodepack *p, const char *s, size_t n)
{
    put_uint(p, n);
    if (p->len + n > p->cap) {
        while (p->len + n > p->cap)
            p->cap = p->cap ? 2 * p->cap : 1024;
        p->buf = tly_xrealloc(p->buf, p->cap);
    }
    memcpy(p->buf + p->len, s, n);
    p->len += n;
}

/* The key's number, added to the table when new. */
static uint32_t key_id(tly_nodepack *p, const char *key)
{
    size_t len = strlen(key);
    void *v = tly_strmap_get(&p->keyids, key, len);
    if (v)
        return (uint32_t)((uintptr_t)v - 1);
    if (p->nkeys == p->capkeys) {
        p->capkeys = p->capkeys ? 2 * p->capkeys : 64;
        p->keys = tly_xrealloc(p->keys, p->capkeys * sizeof *p->keys);
        p->klens = tly_xrealloc(p->klens, p->capkeys * sizeof *p->klens);
    }
    const char *copy = tly_arena_strndup(p->a, key, len);
    p->keys[p->nkeys] = copy;
    p->klens[p->nkeys] = (uint32_t)len;
    tly_strmap_put(&p->keyids, copy, len, (void *)(uintptr_t)(p->nkeys + 1));
    p->bytes += len + 1;
    return p->nkeys++;
}

/* Where the previous node was: positions are written as differences from it. */
typedef struct {
    uint32_t line, col;
} prevpos;

static bool is_container(int type) { return type == TLY_N_MAP || type == TLY_N_SEQ; }

static void put_node(tly_nodepack *p, const tly_node *n, prevpos *prev)
{
    uint32_t count = 0;
    for (const tly_node *k = n->kids; k; k = k->next)
        count++;
    /* Odd: a scalar with children, or nkids not the number linked (never from the readers). */
    bool odd = is_container(n->type) ? n->nkids != count : count > 0 || n->nkids;
    unsigned h = (n->type & H_TYPE) | (n->bval ? H_BVAL : 0) | (n->key ? H_KEY : 0) | (n->str ? H_STR : 0) |
                 (n->flags ? H_FLAGS : 0) | (odd ? H_ODD : 0);
    put_byte(p, (unsigned char)h);
    if (n->flags)
        put_byte(p, n->flags);
    if (n->key)
        put_uint(p, key_id(p, n->key));
    put_diff(p, n->line, prev->line);
    put_diff(p, n->col, prev->col);
    *prev = (prevpos){n->line, n->col};
    if (n->key) {
        put_diff(p, n->kline, n->line);
        put_diff(p, n->kcol, n->col);
    }
    if (n->str)
        put_bytes(p, n->str, n->len);
    if (!is_container(n->type) && !odd)
        return;
    put_uint(p, count);
    if (odd)
        put_uint(p, n->nkids);
    for (const tly_node *k = n->kids; k; k = k->next)
        put_node(p, k, prev);
}

tly_packed tly_nodepack_add(tly_nodepack *p, const tly_node *n)
{
    p->len = 0;
    prevpos prev = {0, 0};
    put_node(p, n, &prev);
    unsigned char *t = (unsigned char *)tly_arena_bytes(p->a, p->len);
    memcpy(t, p->buf, p->len);
    p->bytes += p->len;
    return t;
}

/* ---- reading ------------------------------------------------------------- */

static uint64_t get_uint(const unsigned char **q)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        unsigned char c = *(*q)++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
}

static uint32_t get_diff(const unsigned char **q, uint32_t before)
{
    uint64_t z = get_uint(q);
    int64_t d = (z & 1) ? -(int64_t)(z >> 1) - 1 : (int64_t)(z >> 1);
    return (uint32_t)((int64_t)before + d);
}

/* The node at *q and its children; *q moves past them. */
static tly_node *get_node(const tly_nodepack *p, const unsigned char **q, prevpos *prev, tly_arena *a)
{
    unsigned h = *(*q)++;
    tly_node *n = tly_arena_zalloc(a, sizeof *n);
    n->type = (uint8_t)(h & H_TYPE);
    n->bval = (h & H_BVAL) != 0;
    if (h & H_FLAGS)
        n->flags = *(*q)++;
    uint32_t kid = (h & H_KEY) ? (uint32_t)get_uint(q) : 0;
    n->line = get_diff(q, prev->line);
    n->col = get_diff(q, prev->col);
    *prev = (prevpos){n->line, n->col};
    if (h & H_KEY) {
        tly_node_set_key(n, p->keys[kid], p->klens[kid]);
        n->kline = get_diff(q, n->line);
        n->kcol = get_diff(q, n->col);
    }
    if (h & H_STR) {
        size_t len = (size_t)get_uint(q);
        n->str = tly_arena_strndup(a, (const char *)*q, len);
        n->len = (uint32_t)len;
        *q += len;
    }
    if (!is_container(n->type) && !(h & H_ODD))
        return n;
    uint32_t count = (uint32_t)get_uint(q);
    n->nkids = (h & H_ODD) ? (uint32_t)get_uint(q) : count;
    tly_node **tail = &n->kids;
    for (uint32_t i = 0; i < count; i++) {
        *tail = get_node(p, q, prev, a);
        tail = &(*tail)->next;
    }
    return n;
}

tly_node *tly_nodepack_get(const tly_nodepack *p, tly_packed t, tly_arena *a)
{
    const unsigned char *q = t;
    prevpos prev = {0, 0};
    return get_node(p, &q, &prev, a);
}
