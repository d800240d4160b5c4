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

/*
** The 32 bits of a key's hash that a slot keeps. Its first slot is given by
** the top bits of the same 32, so growing the table places every entry from
** its slot alone: reading each key again to hash it went to memory once per
** entry, at random, every time a big map doubled.
*/
static inline uint32_t hash32(const char *key, size_t len) { return (uint32_t)(hash64(key, len) >> 32); }

static inline size_t first_slot(uint32_t h, size_t cap)
{
    /* cap is a power of two, 64 <= cap <= 2^32 */
    return (size_t)(((uint64_t)h * cap) >> 32);
}

void *tly_strmap_get(const tly_strmap *m, const char *key, size_t len)
{
    if (!m->cap)
        return NULL;
    uint32_t h = hash32(key, len);
    size_t i = first_slot(h, m->cap);
    while (m->slots[i].key) {
        if (slot_is(&m->slots[i], key, len, h))
            return m->slots[i].val;
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

/*
** Doubles the table, placing each entry by the hash its slot keeps. Big
** tables come from pages.c, zeroed and on huge pages: a store's name map of
** 100,000 pods is 6 MiB of slots written at random.
*/
static void strmap_grow(tly_strmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    if (ncap > ((size_t)1 << 32))
        tly_oom();  /* 2^31 keys: first_slot's 32 bits would not spread them */
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
        size_t i = first_slot(o->hash, ncap);
        while (slots[i].key)
            i = (i + 1) & (ncap - 1);
        slots[i] = *o;
    }
    tly_strmap_free(m);
    m->slots = slots;
    m->cap = ncap;
    m->paged = paged;
}

/* The slot of key, or the empty slot where it would go (the table has room). */
static tly_strmap_slot *find_slot(tly_strmap *m, const char *key, size_t len, uint32_t h)
{
    size_t i = first_slot(h, m->cap);
    while (m->slots[i].key && !slot_is(&m->slots[i], key, len, h))
        i = (i + 1) & (m->cap - 1);
    return &m->slots[i];
}

/* The slot for key after making room for one more entry. */
static tly_strmap_slot *slot_for_put(tly_strmap *m, const char *key, size_t len, uint32_t *h)
{
    if (len > UINT32_MAX)
        tly_oom();
    if ((m->n + 1) * 2 > m->cap) {
        size_t n = m->n;
        strmap_grow(m);
        m->n = n;
    }
    *h = hash32(key, len);
    return find_slot(m, key, len, *h);
}

void *tly_strmap_put(tly_strmap *m, const char *key, size_t len, void *val)
{
    uint32_t h;
    tly_strmap_slot *s = slot_for_put(m, key, len, &h);
    if (s->key) {
        void *old = s->val;
        s->val = val;
        return old;
    }
    *s = (tly_strmap_slot){.key = key, .val = val, .len = (uint32_t)len, .hash = h};
    m->n++;
    return NULL;
}

void *tly_strmap_add(tly_strmap *m, const char *key, size_t len, void *val)
{
    uint32_t h;
    tly_strmap_slot *s = slot_for_put(m, key, len, &h);
    if (s->key)
        return s->val;
    *s = (tly_strmap_slot){.key = key, .val = val, .len = (uint32_t)len, .hash = h};
    m->n++;
    return NULL;
}
