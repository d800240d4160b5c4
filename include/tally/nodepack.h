/*
** nodepack.h: value trees kept compactly, to be rebuilt later.
**
** `tally validate` checks objects against the CustomResourceDefinitions of
** its input, and a CRD may come after its objects, so every object of a
** custom kind is kept until the whole input is read. As tly_node trees
** (64 bytes a node, every key and text copied) that cost 800 bytes for a
** 160-byte PodGroup: 60 MB for the 74,000 PodGroups of a 100,000-pod dump,
** 0.4 times the file. A pack keeps each tree as a string of bytes (each
** node's type, key, text, position and child count, positions as
** differences) with every distinct key stored once, about a sixth of that,
** and gives back a tree equal to the one put in, node for node, positions
** included.
**
** The pack owns its memory; a rebuilt tree lives in the arena the caller
** gives (a scratch arena reset after each object, typically).
*/
#ifndef TALLY_NODEPACK_H
#define TALLY_NODEPACK_H

#include <stddef.h>

#include "tally/arena.h"
#include "tally/node.h"

typedef struct tly_nodepack tly_nodepack;

/* A packed tree: what tly_nodepack_add returns, valid as long as the pack. */
typedef const unsigned char *tly_packed;

tly_nodepack *tly_nodepack_create(void);
void tly_nodepack_destroy(tly_nodepack *p);

/* Packs the tree under n (n included). */
tly_packed tly_nodepack_add(tly_nodepack *p, const tly_node *n);

/*
** The tree t as it was added, built in arena a: the same types, keys, texts
** (byte for byte, lengths included), positions, flags and child order. Key
** hashes are computed afresh (tly_node_set_key).
*/
tly_node *tly_nodepack_get(const tly_nodepack *p, tly_packed t, tly_arena *a);

/* Bytes the pack holds (its trees and its keys), for tests and benchmarks. */
size_t tly_nodepack_bytes(const tly_nodepack *p);

#endif
