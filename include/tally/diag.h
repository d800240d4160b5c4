/*
** diag.h: diagnostics, the messages that tell a person what is wrong with
** an input and where.
**
** Every problem tally finds in its input (a YAML syntax error, a field of the
** wrong type, an unparsable quantity, a queue that references a missing
** AccountedResource) becomes one tly_diag: a severity, a location
** (file:line:col), the object (kind and ns/name), the field path
** (spec.accountedResources[1].resourceRef) and a message. `tally validate`
** prints them sorted; the other commands print errors and notes on stderr and
** carry on with the rest of the input.
**
** Printed form (contract section 4):
**     PATH:LINE:COL: error: KIND NAME: FIELD: MESSAGE
** with "-" for a missing KIND NAME or FIELD.
*/
#ifndef TALLY_DIAG_H
#define TALLY_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    TLY_SEV_NOTE = 0,    /* informational: unknown kind skipped, duplicate replaced */
    TLY_SEV_WARNING = 1,
    TLY_SEV_ERROR = 2
} tly_severity;

typedef struct {
    uint8_t sev;         /* a tly_severity */
    uint32_t line, col;  /* 1-based; 0 when unknown */
    uint64_t seq;        /* insertion order, the last sort key */
    char *file;          /* all strings owned by the list */
    char *object;        /* "KIND NAME" or NULL */
    char *field;         /* field path or NULL */
    char *msg;
} tly_diag;

typedef struct tly_diags tly_diags;

tly_diags *tly_diags_create(void);
void tly_diags_destroy(tly_diags *d);
/* Forgets every diagnostic (the list is reused). */
void tly_diags_clear(tly_diags *d);

/*
** Records one diagnostic. kind/name/field may be NULL. name is printed as
** given (callers pass "ns/name" for namespaced kinds).
*/
void tly_diags_add(tly_diags *d, tly_severity sev, const char *file, uint32_t line,
                   uint32_t col, const char *kind, const char *name, const char *field,
                   const char *fmt, ...) __attribute__((format(printf, 9, 10)));
void tly_diags_vadd(tly_diags *d, tly_severity sev, const char *file, uint32_t line,
                    uint32_t col, const char *kind, const char *name, const char *field,
                    const char *fmt, va_list ap);

size_t tly_diags_count(const tly_diags *d);
size_t tly_diags_count_sev(const tly_diags *d, tly_severity sev);
const tly_diag *tly_diags_get(const tly_diags *d, size_t i);

/*
** Drops the errors that restate a schema's: every error recorded before
** index `from` whose file, object and field are those of an error recorded
** from `from` on (the CRD check's, which runs after the decoders). A
** decoder's hand-written rule is kept only where no CRD says it, so each
** problem is reported once, in the API server's words (docs/validate.md).
** Call before sorting.
*/
void tly_diags_drop_restated(tly_diags *d, size_t from);

/* Sorts by file (bytes), line, column, then insertion order. */
void tly_diags_sort(tly_diags *d);

/* Prints one diagnostic in the contract's form, with a newline. */
void tly_diag_print(FILE *out, const tly_diag *g);
/* Prints every diagnostic of severity >= min. */
void tly_diags_print(FILE *out, const tly_diags *d, tly_severity min);

#endif
