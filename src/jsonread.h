/*
** jsonread.h: the native JSON reader's streaming interface (internal; the
** public entry points are tly_parse_value() in node.h and
** tly_store_load_json() in store.h).
**
** src/jsonparse.c reads JSON text into the loader's tly_node trees (node.h)
** without libfyaml. The loader (load.c) streams files and API responses
** through tly_json_stream(): every top-level value is one object, except
** that a top-level map's `items` list (a List as kubectl prints it) is
** handed over one item at a time, each built in an arena that is reset
** before the next, so memory holds one object's tree, never the whole list.
**
** The loader's libfyaml path shares the duplicate-key set (tly_keyset), and
** tests and fuzz targets reach that path directly (tly_store_load_fy) to
** compare the two.
*/
#ifndef TALLY_JSONREAD_H
#define TALLY_JSONREAD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "strmap.h"
#include "tally/node.h"
#include "tally/store.h"

typedef struct {
    void *ctx;
    /*
    ** One object: a top-level value, or one item of a top-level map's
    ** `items` list. end is the input offset just past it (the pages before
    ** it may be given back). The tree lives until the next call.
    */
    void (*object)(void *ctx, const tly_node *tree, size_t end);
    /*
    ** The members of a top-level List other than its items (may be NULL):
    ** called once its items are read, so a snapshot's `now` can be taken.
    */
    void (*list)(void *ctx, const tly_node *top);
    /*
    ** One object of a KAI snapshot's rawObjects.<key> list (may be NULL: the
    ** snapshot is then one top-level value). With it, a top-level map's
    ** rawObjects lists are streamed like a List's items, and the map itself
    ** goes to list() once they are read.
    */
    void (*raw_object)(void *ctx, const char *key, const tly_node *tree, size_t end);
    /* A problem at line:col; syntax errors start with "syntax error: ". */
    void (*error)(void *ctx, uint32_t line, uint32_t col, const char *fmt, va_list ap)
        __attribute__((format(printf, 4, 0)));
} tly_jsink;

/*
** Reads buf[0..len) as a sequence of JSON values (RFC 8259 each; an
** optional byte order mark first; whitespace between and around them) and
** hands every object to sink. Top-level values are built in doc, items in
** obj; both are reset as the reader goes. Problems are reported with their
** line and column (a CRLF is one line break; columns count characters);
** the loader's limits, duplicate keys and NUL characters are errors that
** leave the rest readable, a syntax error ends the input (what was handed
** over before it stays). Returns the number of top-level values, or -1
** after a syntax error.
*/
long tly_json_stream(const char *buf, size_t len, tly_arena *doc, tly_arena *obj,
                     const tly_jsink *sink);

/* Whether buf[0..len) is one or more JSON values with nothing else (a syntax check). */
bool tly_json_valid(const char *buf, size_t len);

/*
** Duplicate keys in one map: the first 16 keys are compared one by one
** (their khash first, so a key is read only when the hashes match), then a
** hash set takes over, so a map with 100,000 keys costs linear time. Keys
** compare as C strings. tly_keyset_init() first, tly_keyset_free() after.
*/
typedef struct {
    const tly_node *member[16];  /* the members checked so far, while few */
    uint32_t hash[16];           /* their khash (tly_key_hash) */
    uint64_t bits;               /* bit khash % 64 of each of them */
    unsigned n;
    bool hashed;
    tly_strmap set;
} tly_keyset;

static inline void tly_keyset_init(tly_keyset *ks)
{
    ks->n = 0;
    ks->bits = 0;
    ks->hashed = false;
}

/* tly_keyset_add when the fast test cannot tell. */
const tly_node *tly_keyset_add_slow(tly_keyset *ks, const char *key, size_t len,
                                    const tly_node *member);

/*
** The earlier member whose key is key[0..len), or NULL, in which case
** member (whose key and khash are already set: tly_node_set_key) is
** recorded under it. A key whose hash bit no earlier member has is new:
** most keys are recorded without comparing any.
*/
static inline const tly_node *tly_keyset_add(tly_keyset *ks, const char *key, size_t len,
                                             const tly_node *member)
{
    uint64_t bit = 1ull << (member->khash & 63);
    if (ks->n < 16 && !(ks->bits & bit)) {
        ks->bits |= bit;
        ks->member[ks->n] = member;
        ks->hash[ks->n++] = member->khash;
        return NULL;
    }
    return tly_keyset_add_slow(ks, key, len, member);
}
void tly_keyset_free(tly_keyset *ks);

/*
** Loads text through libfyaml whatever its name (JSON mode when json): the
** reference path that tests and fuzz targets compare the native reader with.
*/
int tly_store_load_fy(tly_store *s, const char *name, const char *text, size_t len, bool json);
/* The same for a file, mapped and given back as the loader does (for benchmarks). */
int tly_store_load_file_fy(tly_store *s, const char *path, bool json);

#endif
