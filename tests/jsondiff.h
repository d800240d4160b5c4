/*
** jsondiff.h: comparing the native JSON reader (tly_parse_value) with the
** libfyaml path (tly_parse_value_fy), for tests/test_jsonparse.c and
** fuzz/fuzz_json.c. Header-only: each is one program.
**
** Known differences, allowed here and nowhere else: libfyaml (0.7.12, JSON
** mode) counts a CRLF as two line breaks (lines are compared only for
** inputs without a CR), and it refuses some tabs between tokens that JSON
** allows (such an input must agree once those tabs are spaces).
*/
#ifndef TALLY_JSONDIFF_H
#define TALLY_JSONDIFF_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/node.h"

/* What jsondiff_same() compares of the positions. */
enum { JD_NO_POSITIONS, JD_COLUMNS, JD_POSITIONS };

/* true when the trees are equal (positions as pos says); else why says where. */
static inline bool jsondiff_same_at(const tly_node *a, const tly_node *b, int pos, char *why,
                                    size_t len)
{
    bool lines = pos == JD_POSITIONS, cols = pos != JD_NO_POSITIONS;
    if (a->type != b->type || a->bval != b->bval || (lines && a->line != b->line) ||
        (cols && a->col != b->col) || a->nkids != b->nkids || a->len != b->len ||
        (!a->str) != (!b->str) || (a->str && memcmp(a->str, b->str, a->len) != 0) ||
        (!a->key) != (!b->key) ||
        (a->key && (strcmp(a->key, b->key) != 0 || (lines && a->kline != b->kline) ||
                    (cols && a->kcol != b->kcol)))) {
        snprintf(why, len,
                 "node at %u:%u (key %s): type %d/%d str \"%s\"/\"%s\" pos %u:%u/%u:%u key pos "
                 "%u:%u/%u:%u",
                 a->line, a->col, a->key ? a->key : "-", a->type, b->type, a->str ? a->str : "-",
                 b->str ? b->str : "-", a->line, a->col, b->line, b->col, a->kline, a->kcol,
                 b->kline, b->kcol);
        return false;
    }
    const tly_node *x = a->kids, *y = b->kids;
    for (; x && y; x = x->next, y = y->next)
        if (!jsondiff_same_at(x, y, pos, why, len))
            return false;
    return x == NULL && y == NULL;
}

/* true when the trees are equal (lines too unless cr); else why says where. */
static inline bool jsondiff_same(const tly_node *a, const tly_node *b, bool cr, char *why,
                                 size_t len)
{
    return jsondiff_same_at(a, b, cr ? JD_COLUMNS : JD_POSITIONS, why, len);
}

/* A copy of text (free it) with the tabs between tokens made spaces (libfyaml refuses some). */
static inline char *jsondiff_untab(const char *text, size_t len)
{
    char *t = malloc(len + 1);
    if (!t)
        abort();
    memcpy(t, text, len);
    bool in = false;
    for (size_t i = 0; i < len; i++) {
        if (in && t[i] == '\\')
            i++;
        else if (t[i] == '"')
            in = !in;
        else if (!in && t[i] == '\t')
            t[i] = ' ';
    }
    return t;
}

/*
** 1 both accept and agree, 0 both refuse, -1 only libfyaml accepts, -2 they
** disagree (why says how). *tabs is set when the tab workaround was needed.
*/
static inline int jsondiff_compare(const char *text, size_t len, char *why, size_t wlen,
                                   bool *tabs)
{
    tly_arena *a = tly_arena_create(4096);
    bool cr = memchr(text, '\r', len) != NULL;
    tly_node *n = tly_parse_value(text, len, a);
    tly_node *f = tly_parse_value_fy(text, len, a);
    int r;
    why[0] = '\0';
    *tabs = false;
    if (!n && !f) {
        r = 0;
    } else if (!n) {
        r = -1;
    } else if (!f) {
        char *t = jsondiff_untab(text, len);
        f = tly_parse_value_fy(t, len, a);
        free(t);
        r = f && jsondiff_same(n, f, cr, why, wlen) ? 1 : -2;
        if (!f)
            snprintf(why, wlen, "only the native reader accepts it");
        *tabs = r == 1;
    } else {
        r = jsondiff_same(n, f, cr, why, wlen) ? 1 : -2;
    }
    tly_arena_destroy(a);
    return r;
}

#endif
