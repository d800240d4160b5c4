/*
** textcache.c: a direct-mapped cache of texts copied into an arena
** (textcache.h).
**
** 8,192 slots of 32 bytes (256 KiB): a slot keeps the words tly_key_hash
** reads of its text (the first and last 8 bytes), so a text's slot costs
** the same to find for any text, and for a text of 16 bytes or fewer (most
** label keys and values, namespaces, condition types) the words are the
** text, so a hit is decided without reading the copy. Texts longer than
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
    uint64_t a, b;  /* tly_key_words of the text: all of it when it is 16 bytes or fewer */
    const char *s;  /* NULL: empty */
    uint32_t len;
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
    uint64_t a, b;
    tly_key_words(s, len, &a, &b);
    uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ull) ^ (uint64_t)len) * 0xFF51AFD7ED558CCDull;
    slot *sl = &c->slots[h >> (64 - 13)];
    /* Up to 16 bytes the words are the text: a hit reads no copy. */
    if (sl->s && sl->len == len && sl->a == a && sl->b == b && (len <= 16 || memcmp(sl->s, s, len) == 0))
        return sl->s;
    const char *copy = tly_arena_strndup(c->a, s, len);
    *sl = (slot){a, b, copy, (uint32_t)len};
    return copy;
}
