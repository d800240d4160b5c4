/*
** anonymize_int.h: what the two halves of the anonymizer share (internal).
**
** src/anonymize.c decides which strings an object holds and whether each
** is kept (the schema of positions); src/anonymize_order.c chooses the
** tokens of the renamed ones so that byte order survives. The table of
** entries is the seam between them. The test hooks at the end are for
** tests/test_anonymize.c only.
*/
#ifndef TALLY_ANONYMIZE_INT_H
#define TALLY_ANONYMIZE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strmap.h"
#include "tally/anonymize.h"
#include "tally/arena.h"

/* The longest token (a DNS subdomain's length). */
#define TLY_ANON_TOKEN_MAX 253

/* One distinct string of the input (or a constant tally treats specially). */
typedef struct {
    const char *s;       /* the original, NUL-terminated, in the anonymizer's arena */
    uint32_t len;
    bool kept;           /* kept somewhere, by a pattern, or a constant */
    const char *token;   /* once sealed: the token of a renamed string, else NULL */
} tly_anon_entry;

typedef struct {
    size_t kept, renamed;
    size_t stuck;        /* renamed strings kept after all: no token fits between their neighbours */
    size_t downgraded;   /* tokens of a looser syntax than their original (a DNS label given a label value) */
} tly_anon_stats;

/* Whether s is kept wherever it stands: empty, a number, a quantity, a time, a YAML null or boolean. */
bool tly_anon_pattern_kept(const char *s, size_t len);

/*
** Sorts v (n entries) in byte order and gives every entry that is not kept
** its token, allocated in a. `known` holds every entry's string: no token
** is one of them. With `reverse` (a test switch) each gap's tokens are
** handed out backwards, which keeps the mapping consistent but breaks the
** order, so a test can show that the order matters.
*/
void tly_anon_choose(tly_anon_entry **v, size_t n, const tly_strmap *known, tly_arena *a,
                     bool reverse, tly_anon_stats *st);

/* The counts of the last seal (tally snapshot reports stuck strings; the tests read all). */
void tly_anonymizer_stats(const tly_anonymizer *an, tly_anon_stats *out);

/* Test hook: hand out each gap's tokens backwards (see tly_anon_choose). Before seal. */
void tly_anonymizer_test_reverse(tly_anonymizer *an);
/* Test hook: the sealed table in byte order (constants included); returns its size. */
size_t tly_anonymizer_test_table(const tly_anonymizer *an, tly_anon_entry *const **v);

#endif
