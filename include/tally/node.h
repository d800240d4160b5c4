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
struct tly_node {
    uint8_t type;       /* a tly_ntype */
    bool bval;          /* TLY_N_BOOL */
    uint32_t line, col; /* 1-based position of the value */
    uint32_t kline, kcol; /* position of the key, for map members */
    const char *key;    /* map members: the key, NUL-terminated */
    const char *str;    /* scalars: the text, NUL-terminated */
    uint32_t len;       /* scalars: strlen(str) */
    uint32_t nkids;     /* maps and sequences */
    tly_node *kids;     /* first child */
    tly_node *next;     /* next sibling */
};

/* Member key of a map, or NULL (maps only; linear scan, objects are small). */
const tly_node *tly_node_get(const tly_node *map, const char *key);
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
/* The same through libfyaml (src/load.c): the reference the tests compare with. */
tly_node *tly_parse_value_fy(const char *text, size_t len, tly_arena *a);
/* The offset of the first byte that is not valid UTF-8, or len. */
size_t tly_utf8_invalid_at(const char *p, size_t len);
/* Classifies a plain (unquoted) scalar's text under YAML 1.2's core schema. */
tly_ntype tly_plain_scalar_type(const char *s, size_t len, bool *bval);

#endif
