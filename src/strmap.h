/*
** strmap.h: a string-keyed hash map (internal). Keys are borrowed: the
** caller keeps them alive (they live in the store's arena).
*/
#ifndef TALLY_STRMAP_H
#define TALLY_STRMAP_H

#include <stddef.h>
#include <stdint.h>

/* One slot: a lookup reads one cache line, and the hash spares a memcmp of every other key. */
typedef struct {
    const char *key;  /* NULL: empty */
    void *val;
    uint32_t len;
    uint32_t hash;    /* 32 bits of the key's hash: compared, and where it goes (strmap.c) */
} tly_strmap_slot;

typedef struct {
    tly_strmap_slot *slots;
    size_t n, cap;  /* cap is a power of two or 0 */
    size_t paged;   /* bytes of slots from tly_pages_alloc, or 0: calloc'd */
} tly_strmap;

/* FNV-1a over s[0..len), continuing from h (start with TLY_FNV_SEED): a stable hash for
** names that must not change between versions (event names); the map uses its own. */
#define TLY_FNV_SEED 14695981039346656037ull
uint64_t tly_fnv1a(uint64_t h, const char *s, size_t len);

void tly_strmap_init(tly_strmap *m);
void tly_strmap_free(tly_strmap *m);
/* The value for key[0..len), or NULL. */
void *tly_strmap_get(const tly_strmap *m, const char *key, size_t len);
/* Sets key to val; returns the previous value or NULL. A key over 4 GiB is tly_oom(). */
void *tly_strmap_put(tly_strmap *m, const char *key, size_t len, void *val);
/* Adds key with val unless it is there: returns the value it has (unchanged), or NULL when added. */
void *tly_strmap_add(tly_strmap *m, const char *key, size_t len, void *val);

#endif
