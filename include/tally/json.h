/*
** json.h: a small streaming JSON writer for tally's outputs (simulate -o
** json, admission responses). It tracks nesting so commas and indentation
** come out right, escapes strings as RFC 8259 requires, and writes
** quantities in their canonical Kubernetes form. Output is deterministic:
** the caller decides the order of keys.
*/
#ifndef TALLY_JSON_H
#define TALLY_JSON_H

#include <stdbool.h>
#include <stdio.h>

#include "tally/quantity.h"
#include "tally/resource.h"

#define TLY_JSON_MAX_DEPTH 32

typedef struct {
    FILE *out;
    int depth;
    bool pretty;
    bool first[TLY_JSON_MAX_DEPTH];  /* no member written yet at this depth */
    bool after_key;                  /* a key was just written: the value follows */
} tly_json;

void tly_json_init(tly_json *j, FILE *out, bool pretty);
void tly_json_begin_object(tly_json *j);
void tly_json_end_object(tly_json *j);
void tly_json_begin_array(tly_json *j);
void tly_json_end_array(tly_json *j);
/* An object member's key; the next call writes its value. */
void tly_json_key(tly_json *j, const char *key);
void tly_json_string(tly_json *j, const char *s);   /* NULL writes null */
void tly_json_null(tly_json *j);
void tly_json_bool(tly_json *j, bool v);
void tly_json_int(tly_json *j, long long v);
void tly_json_qty(tly_json *j, tly_qty q);          /* canonical string */
/* A resource map {"name": "qty", ...} in id order, zero amounts left out. */
void tly_json_rvec(tly_json *j, const tly_rvec *v, const tly_names *names);
void tly_json_rlist(tly_json *j, const tly_rlist *l, const tly_names *names);
/* A member with a string value (NULL writes null): tly_json_key then tly_json_string. */
void tly_json_kv(tly_json *j, const char *key, const char *s);

/* A compact JSON text built in memory: open, write through .j, close to take the malloc'd text. */
typedef struct {
    tly_json j;
    FILE *f;
    char *buf;
    size_t len;
} tly_jbuf;
void tly_jbuf_open(tly_jbuf *b);
char *tly_jbuf_close(tly_jbuf *b);

/* Writes s escaped, with quotes, to out (also used by other writers). */
void tly_json_write_escaped(FILE *out, const char *s);

#endif
