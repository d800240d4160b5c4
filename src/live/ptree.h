/*
** ptree.h: a persistent ordered map from strings to pointers, for the live
** state's versions (epoch.h).
**
** A B+-tree: every entry sits in a leaf, up to TLY_PTREE_FAN of them in key
** order; an interior node holds up to TLY_PTREE_FAN children and, before
** each child but the first, a separator (the child's keys are >= it, the
** previous child's below it). Every node but the root is at least half
** full and every leaf is at the same depth, so 100,000 keys are five
** levels deep, where a binary tree was about seventeen (a cache miss
** each). Each node keeps the count of entries under it, so the i-th key
** is found by one walk from the root and a fork can be read in key order.
**
** The writer changes a tree copy-on-write per node: nodes born in the
** current epoch are changed in place, older ones (which a fork may see)
** are copied and the originals retired. A change copies the nodes on one
** root-to-leaf path, plus a sibling when a node splits, lends or merges.
** A fork is the root pointer it was handed; it stays valid and unchanged
** until the fork is released.
**
** The shape depends on the order of changes, not on the key set alone (the
** treap this replaced was canonical). Nothing outside reads the shape:
** each, range and at go in key order, which is the same either way.
**
** Keys are copied, each into an allocation of its own (tly_pkey) that the
** nodes point to; values are the caller's: the tree never frees them (the
** caller retires a value it replaces). Next to each key pointer a node
** keeps the key's first 8 bytes as a big-endian number, so most compares
** inside a node read no key string.
*/
#ifndef TALLY_LIVE_PTREE_H
#define TALLY_LIVE_PTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "epoch.h"

/* Entries per leaf and children per interior node, at most; half of it at least. */
#define TLY_PTREE_FAN 16

/* A key: immutable once made; freed only by being retired (ptree.c). */
typedef struct {
    uint64_t born;
    char s[];         /* NUL-terminated */
} tly_pkey;

typedef struct tly_ptree tly_ptree;
struct tly_ptree {
    uint64_t born;
    uint32_t size;                 /* entries in this subtree */
    uint16_t n;                    /* entries (a leaf) or children */
    uint16_t leaf;
    uint64_t pre[TLY_PTREE_FAN];   /* key[i]'s first 8 bytes, big-endian, 0-padded */
    tly_pkey *key[TLY_PTREE_FAN];  /* a leaf's keys; an interior node's separators (key[0] NULL) */
    void *p[TLY_PTREE_FAN];        /* a leaf's values; an interior node's children */
};

/* The value for key, or NULL. */
void *tly_ptree_get(const tly_ptree *t, const char *key);
static inline uint32_t tly_ptree_count(const tly_ptree *t) { return t ? t->size : 0; }
/* The i-th entry in key order: false when i >= count. key and val may be NULL. */
bool tly_ptree_at(const tly_ptree *t, uint32_t i, const char **key, void **val);
/* Calls fn for every entry in key order; stops at a non-zero return. */
int tly_ptree_each(const tly_ptree *t, int (*fn)(void *ctx, const char *key, void *val), void *ctx);
/* Calls fn for every key in [lo, hi) (hi NULL: to the end), in order. */
int tly_ptree_range(const tly_ptree *t, const char *lo, const char *hi,
                    int (*fn)(void *ctx, const char *key, void *val), void *ctx);

/*
** Writer side (one thread, epochs e). Sets key to val; *old receives the
** value it replaces (NULL when the key is new). Returns the new root.
** Setting a key to the value it has already changes nothing.
*/
tly_ptree *tly_ptree_put(tly_epochs *e, tly_ptree *t, const char *key, void *val, void **old);
/* Removes key; *old receives its value (NULL when absent, and nothing changes). */
tly_ptree *tly_ptree_del(tly_epochs *e, tly_ptree *t, const char *key, void **old);
/* Retires every node and key (the values are the caller's). */
void tly_ptree_free(tly_epochs *e, tly_ptree *t);

/*
** Checks the B-tree's invariants (keys in order and within their
** separators, cached prefixes, fill bounds, counts, leaves at one depth):
** tests.
*/
bool tly_ptree_check(const tly_ptree *t);

#endif
