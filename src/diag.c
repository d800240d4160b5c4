/*
** diag.c: the diagnostics list (see diag.h).
**
** Diagnostics are few (one per problem), so each owns its strings through
** plain malloc; the list is a growable array. Sorting uses the insertion
** sequence as the last key, so two problems at the same spot keep the order
** in which the decoder found them and output is byte-for-byte stable.
*/
#include "tally/diag.h"

#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"

struct tly_diags {
    tly_diag *v;
    size_t n, cap;
    uint64_t seq;
};

tly_diags *tly_diags_create(void)
{
    return tly_xcalloc(1, sizeof(tly_diags));
}

static void diag_free(tly_diag *g)
{
    free(g->file);
    free(g->object);
    free(g->field);
    free(g->msg);
}

void tly_diags_clear(tly_diags *d)
{
    for (size_t i = 0; i < d->n; i++)
        diag_free(&d->v[i]);
    d->n = 0;
}

void tly_diags_destroy(tly_diags *d)
{
    if (!d)
        return;
    tly_diags_clear(d);
    free(d->v);
    free(d);
}

static char *dup_or_null(const char *s)
{
    return s ? tly_xstrdup(s) : NULL;
}

void tly_diags_vadd(tly_diags *d, tly_severity sev, const char *file, uint32_t line,
                    uint32_t col, const char *kind, const char *name, const char *field,
                    const char *fmt, va_list ap)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 16;
        d->v = tly_xrealloc(d->v, d->cap * sizeof *d->v);
    }
    tly_diag *g = &d->v[d->n++];
    memset(g, 0, sizeof *g);
    g->sev = (uint8_t)sev;
    g->line = line;
    g->col = col;
    g->seq = d->seq++;
    g->file = dup_or_null(file ? file : "-");
    if (kind || name) {
        size_t kl = kind ? strlen(kind) : 1, nl = name ? strlen(name) : 1;
        g->object = tly_xmalloc(kl + nl + 2);
        memcpy(g->object, kind ? kind : "-", kl);
        g->object[kl] = ' ';
        memcpy(g->object + kl + 1, name ? name : "-", nl);
        g->object[kl + nl + 1] = '\0';
    }
    g->field = (field && *field) ? tly_xstrdup(field) : NULL;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0)
        n = 0;
    g->msg = tly_xmalloc((size_t)n + 1);
    vsnprintf(g->msg, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    /* One diagnostic is one line: fold any newline a message carries. */
    for (char *p = g->msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

void tly_diags_add(tly_diags *d, tly_severity sev, const char *file, uint32_t line,
                   uint32_t col, const char *kind, const char *name, const char *field,
                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tly_diags_vadd(d, sev, file, line, col, kind, name, field, fmt, ap);
    va_end(ap);
}

size_t tly_diags_count(const tly_diags *d) { return d->n; }

size_t tly_diags_count_sev(const tly_diags *d, tly_severity sev)
{
    size_t c = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i].sev == sev)
            c++;
    return c;
}

const tly_diag *tly_diags_get(const tly_diags *d, size_t i)
{
    return i < d->n ? &d->v[i] : NULL;
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Whether an error at or after from has g's file, object and field. */
static bool restated(const tly_diags *d, size_t from, const tly_diag *g)
{
    for (size_t i = from; i < d->n; i++) {
        const tly_diag *s = &d->v[i];
        if (s->sev == TLY_SEV_ERROR && same_str(s->file, g->file) && same_str(s->object, g->object) &&
            same_str(s->field, g->field))
            return true;
    }
    return false;
}

void tly_diags_drop_restated(tly_diags *d, size_t from)
{
    if (from > d->n)
        from = d->n;
    size_t keep = 0;
    for (size_t i = 0; i < d->n; i++) {
        tly_diag *g = &d->v[i];
        /* Only a field-level error can be a restatement: an object-level one says something else. */
        if (i < from && g->sev == TLY_SEV_ERROR && g->field && restated(d, from, g)) {
            diag_free(g);
            continue;
        }
        d->v[keep++] = *g;
    }
    d->n = keep;
}

static int diag_cmp(const void *pa, const void *pb)
{
    const tly_diag *a = pa, *b = pb;
    int c = strcmp(a->file, b->file);
    if (c)
        return c;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void tly_diags_sort(tly_diags *d)
{
    if (d->n > 1)
        qsort(d->v, d->n, sizeof *d->v, diag_cmp);
}

static const char *sev_name(int sev)
{
    switch (sev) {
    case TLY_SEV_ERROR: return "error";
    case TLY_SEV_WARNING: return "warning";
    default: return "note";
    }
}

void tly_diag_print(FILE *out, const tly_diag *g)
{
    fprintf(out, "%s:%u:%u: %s: %s: %s: %s\n", g->file, g->line, g->col, sev_name(g->sev),
            g->object ? g->object : "-", g->field ? g->field : "-", g->msg);
}

void tly_diags_print(FILE *out, const tly_diags *d, tly_severity min)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i].sev >= min)
            tly_diag_print(out, &d->v[i]);
}
