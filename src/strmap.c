/*
** strmap.c: open addressing with linear probing, FNV-1a hashes, load
** factor at most one half. Entries are never deleted: the store's maps
** only grow while loading and are then read.
*/
#include "strmap.h"

#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"

uint64_t tly_fnv1a(uint64_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t hash64(const char *s, size_t len) { return tly_fnv1a(TLY_FNV_SEED, s, len); }

void tly_strmap_init(tly_strmap *m) { memset(m, 0, sizeof *m); }

void tly_strmap_free(tly_strmap *m)
{
    free(m->keys);
    free(m->klens);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

void *tly_strmap_get(const tly_strmap *m, const char *key, size_t len)
{
    if (!m->cap)
        return NULL;
    size_t i = hash64(key, len) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->klens[i] == len && memcmp(m->keys[i], key, len) == 0)
            return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

static void strmap_grow(tly_strmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    const char **keys = tly_xcalloc(ncap, sizeof *keys);
    size_t *klens = tly_xcalloc(ncap, sizeof *klens);
    void **vals = tly_xcalloc(ncap, sizeof *vals);
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->keys[j])
            continue;
        size_t i = hash64(m->keys[j], m->klens[j]) & (ncap - 1);
        while (keys[i])
            i = (i + 1) & (ncap - 1);
        keys[i] = m->keys[j];
        klens[i] = m->klens[j];
        vals[i] = m->vals[j];
    }
    free(m->keys);
    free(m->klens);
    free(m->vals);
    m->keys = keys;
    m->klens = klens;
    m->vals = vals;
    m->cap = ncap;
}

void *tly_strmap_put(tly_strmap *m, const char *key, size_t len, void *val)
{
    if ((m->n + 1) * 2 > m->cap)
        strmap_grow(m);
    size_t i = hash64(key, len) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->klens[i] == len && memcmp(m->keys[i], key, len) == 0) {
            void *old = m->vals[i];
            m->vals[i] = val;
            return old;
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = key;
    m->klens[i] = len;
    m->vals[i] = val;
    m->n++;
    return NULL;
}
