/*
** textcache.c: a direct-mapped cache of texts copied into an arena
** (textcache.h).
**
** 8,192 slots of 16 bytes (128 KiB, within a core's L2): a text's slot is
** picked by tly_key_hash, which reads at most its first and last 8 bytes and
** its length, so a lookup costs the same for any text. Texts longer than
** TEXT_MAX are copied without the cache: long texts rarely repeat, and
** comparing them would cost more than copying.
*/
#include "tally/textcache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tally/node.h"

#define SLOTS 8192u
#define TEXT_MAX 255u

typedef struct {
    const char *s;
    uint32_t len;
    uint32_t hash;  /* 0: empty (tly_key_hash is never 0) */
} slot;

struct tly_textcache {
    tly_arena *a;
    slot slots[SLOTS];
};

tly_textcache *tly_textcache_create(tly_arena *a)
{
    tly_textcache *c = tly_xcalloc(1, sizeof *c);
    c->a = a;
    return c;
}

void tly_textcache_destroy(tly_textcache *c) { free(c); }

const char *tly_textcache_get(tly_textcache *c, const char *s, size_t len)
{
    if (len > TEXT_MAX)
        return tly_arena_strndup(c->a, s, len);
    uint32_t h = tly_key_hash(s, len);
    slot *sl = &c->slots[h & (SLOTS - 1)];
    if (sl->hash == h && sl->len == len && memcmp(sl->s, s, len) == 0)
        return sl->s;
    const char *copy = tly_arena_strndup(c->a, s, len);
    *sl = (slot){copy, (uint32_t)len, h};
    return copy;
}
