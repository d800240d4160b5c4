/*
** strmap.h: a string-keyed hash map (internal). Keys are borrowed: the
** caller keeps them alive (they live in the store's arena).
*/
#ifndef TALLY_STRMAP_H
#define TALLY_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char **keys;
    size_t *klens;
    void **vals;
    size_t n, cap;  /* cap is a power of two or 0 */
} tly_strmap;

/* FNV-1a over s[0..len), continuing from h (start with TLY_FNV_SEED): a stable hash for
** names that must not change between versions (event names); the map uses its own. */
#define TLY_FNV_SEED 14695981039346656037ull
uint64_t tly_fnv1a(uint64_t h, const char *s, size_t len);

void tly_strmap_init(tly_strmap *m);
void tly_strmap_free(tly_strmap *m);
/* The value for key[0..len), or NULL. */
void *tly_strmap_get(const tly_strmap *m, const char *key, size_t len);
/* Sets key to val; returns the previous value or NULL. */
void *tly_strmap_put(tly_strmap *m, const char *key, size_t len, void *val);

#endif
