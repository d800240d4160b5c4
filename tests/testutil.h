/*
** testutil.h: what the cmocka test programs share.
*/
#ifndef TALLY_TESTUTIL_H
#define TALLY_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "tally/diag.h"
#include "tally/store.h"

/* A growing NUL-terminated text, for tests that write their own inputs. */
typedef struct {
    char *p;
    size_t n, cap;
} tbuf;

static inline void tbuf_put(tbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static inline void tbuf_puts(tbuf *b, const char *s) { tbuf_put(b, s, strlen(s)); }

/* Loads YAML text named `name` into a new, finished store. */
static inline tly_store *load_text(const char *name, const char *text)
{
    tly_store *s = tly_store_create();
    tly_store_load_string(s, name, text, strlen(text));
    tly_store_finish(s);
    return s;
}

/* The first diagnostic whose message contains `needle`, or NULL. */
static inline const tly_diag *find_diag(tly_store *s, const char *needle)
{
    tly_diags *d = tly_store_diags(s);
    for (size_t i = 0; i < tly_diags_count(d); i++) {
        const tly_diag *g = tly_diags_get(d, i);
        if (strstr(g->msg, needle))
            return g;
    }
    return NULL;
}

#endif
