/*
** strmap.c: open addressing with linear probing, a word-at-a-time hash, load
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

/* The map's own hash: eight bytes a step, each folded in with a multiply and a
** shift, then a final avalanche (MurmurHash3's finalizer constants). The pod
** engine's keys are encoded constraints and shapes of 100-300 bytes, looked up
** once per pending pod; FNV-1a's byte a step made the hash most of the cost
** of a lookup. Nothing depends on the slot order (no caller walks the slots
** in an order that reaches an answer), so the hash may change freely. */
static uint64_t hash64(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xff51afd7ed558ccdull);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 29;
    }
    uint64_t t = 0;
    if (i < len)
        memcpy(&t, s + i, len - i);
    h = (h ^ t) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

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
