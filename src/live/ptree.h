/*
** ptree.h: a persistent ordered map from strings to pointers, for the live
** state's versions (epoch.h).
**
** A treap whose priorities are a hash of the key, so the same set of keys
** always has the same shape, whatever order the events came in. Each node
** keeps its subtree size, so the i-th key is found in O(log n) and a fork
** can be read in key order without sorting. The writer changes a tree by
** path copying: nodes born in the current epoch are changed in place, older
** ones (which a fork may see) are copied and the originals retired. A fork
** is the root pointer it was handed; it stays valid and unchanged until the
** fork is released.
**
** Keys are copied into the nodes. Values are the caller's: the tree never
** frees them (the caller retires a value it replaces).
*/
#ifndef TALLY_LIVE_PTREE_H
#define TALLY_LIVE_PTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "epoch.h"

typedef struct tly_ptree tly_ptree;
struct tly_ptree {
    tly_ptree *l, *r;
    void *val;
    uint64_t born;
    uint32_t prio;
    uint32_t size;
    uint32_t klen;
    char key[];       /* NUL-terminated */
};

/* The value for key, or NULL. */
void *tly_ptree_get(const tly_ptree *t, const char *key);
static inline uint32_t tly_ptree_count(const tly_ptree *t) { return t ? t->size : 0; }
/* The i-th node in key order (i < count). */
const tly_ptree *tly_ptree_at(const tly_ptree *t, uint32_t i);
/* Calls fn for every node in key order; stops at a non-zero return. */
int tly_ptree_each(const tly_ptree *t, int (*fn)(void *ctx, const char *key, void *val), void *ctx);
/* Calls fn for every key in [lo, hi) (hi NULL: to the end), in order. */
int tly_ptree_range(const tly_ptree *t, const char *lo, const char *hi,
                    int (*fn)(void *ctx, const char *key, void *val), void *ctx);

/*
** Writer side (one thread, epochs e). Sets key to val; *old receives the
** value it replaces (NULL when the key is new). Returns the new root.
*/
tly_ptree *tly_ptree_put(tly_epochs *e, tly_ptree *t, const char *key, void *val, void **old);
/* Removes key; *old receives its value (NULL when absent). */
tly_ptree *tly_ptree_del(tly_epochs *e, tly_ptree *t, const char *key, void **old);
/* Retires every node (the values are the caller's). */
void tly_ptree_free(tly_epochs *e, tly_ptree *t);

/* Checks the treap's invariants (order, heap, sizes): tests. */
bool tly_ptree_check(const tly_ptree *t);

#endif
