/*
** node.h: a small YAML/JSON value tree for one Kubernetes object.
**
** The loader (load.c) reads files with libfyaml's event API (YAML) or
** tally's own JSON reader (jsonparse.c) and builds a
** tly_node tree for one object at a time in a scratch arena; the kind's
** decoder turns that tree into a typed struct (objects.h) and the arena is
** reset. Large dumps are therefore never held as a whole document tree (a
** libfyaml document of a 50 MB list costs 27x its size, see c-stack.md).
**
** A node remembers its line and column, so every diagnostic can point at
** the exact spot. Scalars keep their original text: quantities must be
** parsed from the text ("0.1", not the double 0.1). A scalar's JSON type
** follows YAML 1.2's core schema for plain scalars (null, true/false,
** numbers) and is always a string when quoted.
*/
#ifndef TALLY_NODE_H
#define TALLY_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tally/arena.h"

typedef enum {
    TLY_N_NULL = 0,
    TLY_N_BOOL,
    TLY_N_INT,    /* plain scalar that is an integer: 12, -3, 0x1f is not (a string) */
    TLY_N_FLOAT,  /* plain scalar that is a non-integer number: 1.5, 1e3 */
    TLY_N_STRING,
    TLY_N_MAP,
    TLY_N_SEQ
} tly_ntype;

typedef struct tly_node tly_node;
/*
** A map whose reader checked that no key repeats (TLY_N_MAP): a lookup stops
** at the first match. A map without it (built by hand, or with a repeated
** key, where the last occurrence wins) is read to its end.
*/
#define TLY_NF_UNIQUE 1u

struct tly_node {
    uint8_t type;       /* a tly_ntype */
    bool bval;          /* TLY_N_BOOL */
    uint8_t flags;      /* TLY_NF_* */
    uint8_t klen;       /* strlen(key), or 255 for 255 and longer (tly_node_set_key) */
    uint32_t line, col; /* 1-based position of the value */
    uint32_t kline, kcol; /* position of the key, for map members */
    uint32_t khash;     /* tly_key_hash of key (tly_node_set_key); 0: not computed */
    const char *key;    /* map members: the key, NUL-terminated */
    const char *str;    /* scalars: the text, NUL-terminated */
    uint32_t len;       /* scalars: strlen(str) */
    uint32_t nkids;     /* maps and sequences */
    tly_node *kids;     /* first child */
    tly_node *next;     /* next sibling */
};

/*
** The words tly_key_hash reads of key[0..len): the first and the last 8
** bytes (4 and 4 below 8; the first, middle and last byte below 4). For a
** key of 16 bytes or fewer they hold every byte, so two such keys of the
** same length are equal exactly when their words are.
*/
static inline void tly_key_words(const char *key, size_t len, uint64_t *wa, uint64_t *wb)
{
    uint64_t a = 0, b = 0;
    if (len >= 8) {
        memcpy(&a, key, 8);
        memcpy(&b, key + len - 8, 8);
    } else if (len >= 4) {
        uint32_t x, y;
        memcpy(&x, key, 4);
        memcpy(&y, key + len - 4, 4);
        a = x;
        b = y;
    } else if (len > 0) {
        a = (uint64_t)(unsigned char)key[0] | (uint64_t)(unsigned char)key[len / 2] << 8 |
            (uint64_t)(unsigned char)key[len - 1] << 16;
    }
    *wa = a;
    *wb = b;
}

/*
** A 32-bit hash of key[0..len), never 0. It reads at most the first and
** the last 8 bytes and the length, so it costs the same for any key: a
** lookup compares one word per member and the key itself only when the
** words match (a different key with the same hash costs one strcmp).
*/
static inline uint32_t tly_key_hash(const char *key, size_t len)
{
    uint64_t a, b;
    tly_key_words(key, len, &a, &b);
    uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15ull) ^ (uint64_t)len) * 0xFF51AFD7ED558CCDull;
    uint32_t r = (uint32_t)(h >> 32) ^ (uint32_t)h;
    return r ? r : 1;
}

/* Gives map member n its key (key[0..len) is NUL-terminated, len its strlen) and the key's hash. */
static inline void tly_node_set_key(tly_node *n, const char *key, size_t len)
{
    n->key = key;
    n->klen = (uint8_t)(len < 255 ? len : 255);
    n->khash = tly_key_hash(key, len);
}

/*
** Member key of a map whose tly_key_hash is h, or NULL (maps only). A
** linear scan, objects are small; members whose khash is set are compared
** by it first, and the key itself only when the hashes match.
*/
const tly_node *tly_node_get_hashed(const tly_node *map, const char *key, uint32_t h);

/*
** A key with its length and hash. Made by the inline tly_key_of() at the
** call site, so for a literal (nearly every field a decoder reads) both are
** constants, however many functions the key is handed through after.
*/
typedef struct {
    const char *s;
    uint32_t len, hash;
} tly_key;

static inline tly_key tly_key_of(const char *s)
{
    size_t n = strlen(s);
    return (tly_key){s, (uint32_t)n, tly_key_hash(s, n)};
}

/*
** Member k of a map, or NULL (maps only). A map a reader built
** (TLY_NF_UNIQUE: every member's key set by tly_node_set_key, no key twice)
** is searched here, inline: a member matches when its hash and length do
** and then its bytes, which for a literal key the compiler compares as a
** word or two. A decoder's lookups take about three steps each, so the
** call and the strcmp were most of their cost. Other maps take the general
** path (the last of a repeated key, members without a hash).
*/
static inline const tly_node *tly_node_get_key(const tly_node *map, tly_key k)
{
    if (!map || map->type != TLY_N_MAP)
        return NULL;
    if (!(map->flags & TLY_NF_UNIQUE) || k.len >= 255)
        return tly_node_get_hashed(map, k.s, k.hash);
    for (const tly_node *m = map->kids; m; m = m->next)
        if (m->khash == k.hash && m->klen == k.len && memcmp(m->key, k.s, k.len) == 0)
            return m;
    return NULL;
}

/*
** Member key of a map, or NULL (maps only). Inline so that for a literal
** key, which is nearly every call, the compiler folds strlen and the hash
** to a constant: the decoders read about 90 fields a pod this way.
*/
static inline const tly_node *tly_node_get(const tly_node *map, const char *key)
{
    return tly_node_get_key(map, tly_key_of(key));
}
/*
** Member key of a map when it is present and not null, else NULL: the
** decoders' reading of a field (absent and null both mean "unset").
*/
static inline const tly_node *tly_node_member(const tly_node *map, const char *key)
{
    const tly_node *n = tly_node_get(map, key);
    return n && n->type != TLY_N_NULL ? n : NULL;
}

/* The same for a tly_key. */
static inline const tly_node *tly_node_member_key(const tly_node *map, tly_key k)
{
    const tly_node *n = tly_node_get_key(map, k);
    return n && n->type != TLY_N_NULL ? n : NULL;
}

/* Element i of a sequence, or NULL. */
const tly_node *tly_node_at(const tly_node *seq, uint32_t i);
/* Walks a dotted path of map keys ("spec.resources.cpu"); NULL if absent. */
const tly_node *tly_node_path(const tly_node *n, const char *dotted);
/* "string", "number", "map", "list", ... for messages. */
const char *tly_ntype_name(int type);
/* true for TLY_N_INT, TLY_N_FLOAT and TLY_N_STRING (text to read). */
bool tly_node_is_scalar(const tly_node *n);
/* A deep copy of n into arena a (for opaque data kept past decoding). */
tly_node *tly_node_copy(const tly_node *n, tly_arena *a);
/*
** Parses one small JSON value (an AdmissionReview, an annotation's content)
** into a tree in arena a; NULL if it is not exactly one well-formed JSON
** value (RFC 8259) within the loader's limits (src/jsonparse.c).
*/
tly_node *tly_parse_value(const char *text, size_t len, tly_arena *a);
/*
** The same for what the API server sends (AdmissionReviews, watch events):
** the managedFields member of every map under a `metadata` key is checked
** as JSON and then left out of the tree (tally never reads it, and in a
** real cluster it is often half of an object's bytes). Keys inside it are
** not checked for duplicates.
*/
tly_node *tly_parse_api_value(const char *text, size_t len, tly_arena *a);
/* tly_parse_value through libfyaml (src/load.c): the reference the tests compare with. */
tly_node *tly_parse_value_fy(const char *text, size_t len, tly_arena *a);
/* The offset of the first byte that is not valid UTF-8, or len. */
size_t tly_utf8_invalid_at(const char *p, size_t len);
/* Classifies a plain (unquoted) scalar's text under YAML 1.2's core schema. */
tly_ntype tly_plain_scalar_type(const char *s, size_t len, bool *bval);

#endif
