/*
** textcache.h: one copy of texts that repeat across decoded objects.
**
** A store of 100,000 pods holds the same label keys, label values,
** condition types, reasons and messages, namespaces and node names over
** and over: in `tally-gen cluster 1` half a million label keys alone, 9 MB
** of copies of a few dozen strings. The decoders ask this cache for the
** fields that repeat; it hands out a copy it made before when it has one,
** else makes one in the arena. It is a cache, not a set: a slot remembers
** the last text that hashed to it, so a text may be copied more than once
** (never wrong, only less saving), and a lookup costs about what the copy
** it saves would.
**
** The copies live in the arena given at creation (the store's), so they
** last as long as the objects that point to them; decoded strings are never
** written after decoding, so sharing them is safe. Not thread-safe: one
** loader at a time.
*/
#ifndef TALLY_TEXTCACHE_H
#define TALLY_TEXTCACHE_H

#include <stddef.h>

#include "tally/arena.h"

typedef struct tly_textcache tly_textcache;

tly_textcache *tly_textcache_create(tly_arena *a);
void tly_textcache_destroy(tly_textcache *c);

/* A NUL-terminated copy of s[0..len) in the arena, shared with an equal text copied before where the cache still holds it. */
const char *tly_textcache_get(tly_textcache *c, const char *s, size_t len);

#endif
