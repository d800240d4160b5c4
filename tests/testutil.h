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

#include <string.h>

#include "tally/diag.h"
#include "tally/store.h"

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
