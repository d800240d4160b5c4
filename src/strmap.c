/*
** strmap.c: open addressing with linear probing, a word-at-a-time hash, load
** factor at most one half. Entries are never deleted: the store's maps
** only grow while loading and are then read.
*/
#include "strmap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pages.h"
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
    if (m->paged)
        tly_pages_free(m->slots, m->paged);
    else
        free(m->slots);
    memset(m, 0, sizeof *m);
}

static inline bool slot_is(const tly_strmap_slot *s, const char *key, size_t len, uint32_t h)
{
    return s->hash == h && s->len == len && memcmp(s->key, key, len) == 0;
}

void *tly_strmap_get(const tly_strmap *m, const char *key, size_t len)
{
    if (!m->cap)
        return NULL;
    uint64_t h = hash64(key, len);
    size_t i = h & (m->cap - 1);
    while (m->slots[i].key) {
        if (slot_is(&m->slots[i], key, len, (uint32_t)(h >> 32)))
            return m->slots[i].val;
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

/*
** Doubles the table. A slot keeps only the high half of its key's hash (to
** compare), so each key's hash is computed again to place it. Big tables
** come from pages.c, zeroed and on huge pages: a store's name map of
** 100,000 pods is 6 MiB of slots written at random.
*/
static void strmap_grow(tly_strmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    size_t bytes = ncap * sizeof(tly_strmap_slot), paged = 0;
    tly_strmap_slot *slots;
    if (bytes >= TLY_PAGES_UNIT) {
        paged = tly_pages_round(bytes);
        slots = tly_pages_alloc(paged);
    } else {
        slots = tly_xcalloc(ncap, sizeof *slots);
    }
    for (size_t j = 0; j < m->cap; j++) {
        const tly_strmap_slot *o = &m->slots[j];
        if (!o->key)
            continue;
        size_t i = hash64(o->key, o->len) & (ncap - 1);
        while (slots[i].key)
            i = (i + 1) & (ncap - 1);
        slots[i] = *o;
    }
    tly_strmap_free(m);
    m->slots = slots;
    m->cap = ncap;
    m->paged = paged;
}

void *tly_strmap_put(tly_strmap *m, const char *key, size_t len, void *val)
{
    if (len > UINT32_MAX)
        tly_oom();
    if ((m->n + 1) * 2 > m->cap) {
        size_t n = m->n;
        strmap_grow(m);
        m->n = n;
    }
    uint64_t h = hash64(key, len);
    uint32_t hi = (uint32_t)(h >> 32);
    size_t i = h & (m->cap - 1);
    while (m->slots[i].key) {
        tly_strmap_slot *s = &m->slots[i];
        if (slot_is(s, key, len, hi)) {
            void *old = s->val;
            s->val = val;
            return old;
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->slots[i] = (tly_strmap_slot){.key = key, .val = val, .len = (uint32_t)len, .hash = hi};
    m->n++;
    return NULL;
}
