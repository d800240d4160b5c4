/*
** json.c: the streaming JSON writer (json.h).
*/
#include "tally/json.h"

#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"
#include "tally/error.h"

void tly_json_init(tly_json *j, FILE *out, bool pretty)
{
    memset(j, 0, sizeof *j);
    j->out = out;
    j->pretty = pretty;
    j->first[0] = true;
}

static void indent(tly_json *j)
{
    if (!j->pretty)
        return;
    fputc('\n', j->out);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->out);
}

/* Writes what goes before a value: a comma and newline in arrays. */
static void before_value(tly_json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth > 0) {
        if (!j->first[j->depth])
            fputc(',', j->out);
        indent(j);
    }
    j->first[j->depth] = false;
}

static void open(tly_json *j, char c)
{
    before_value(j);
    fputc(c, j->out);
    if (j->depth < TLY_JSON_MAX_DEPTH - 1)
        j->depth++;
    j->first[j->depth] = true;
}

static void close(tly_json *j, char c)
{
    bool empty = j->first[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (!empty)
        indent(j);
    fputc(c, j->out);
    if (j->depth == 0 && j->pretty)
        fputc('\n', j->out);
}

void tly_json_begin_object(tly_json *j) { open(j, '{'); }
void tly_json_end_object(tly_json *j) { close(j, '}'); }
void tly_json_begin_array(tly_json *j) { open(j, '['); }
void tly_json_end_array(tly_json *j) { close(j, ']'); }

/* True for the bytes a JSON string must escape: '"', '\\' and the controls. */
static bool needs_escape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

/*
** Runs of bytes that need no escape go out with one fwrite each: a putc per
** byte took the stream's lock per byte, 3% of the webhook's time.
*/
void tly_json_write_escaped(FILE *out, const char *s)
{
    fputc('"', out);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const unsigned char *run = p;
        while (*p && !needs_escape(*p))
            p++;
        if (p > run)
            fwrite(run, 1, (size_t)(p - run), out);
        if (!*p)
            break;
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        case '\b': fputs("\\b", out); break;
        case '\f': fputs("\\f", out); break;
        default: fprintf(out, "\\u%04x", *p);
        }
        p++;
    }
    fputc('"', out);
}

void tly_json_key(tly_json *j, const char *key)
{
    before_value(j);
    tly_json_write_escaped(j->out, key);
    fputs(j->pretty ? ": " : ":", j->out);
    j->after_key = true;
}

void tly_json_string(tly_json *j, const char *s)
{
    before_value(j);
    if (s)
        tly_json_write_escaped(j->out, s);
    else
        fputs("null", j->out);
}

void tly_json_kv(tly_json *j, const char *key, const char *s)
{
    tly_json_key(j, key);
    tly_json_string(j, s);
}

void tly_jbuf_open(tly_jbuf *b)
{
    b->buf = NULL;
    b->len = 0;
    b->f = open_memstream(&b->buf, &b->len);
    if (!b->f)
        tly_oom();
    tly_json_init(&b->j, b->f, false);
}

char *tly_jbuf_close(tly_jbuf *b)
{
    fclose(b->f);
    b->f = NULL;
    return b->buf;
}

void tly_json_null(tly_json *j)
{
    before_value(j);
    fputs("null", j->out);
}

void tly_json_bool(tly_json *j, bool v)
{
    before_value(j);
    fputs(v ? "true" : "false", j->out);
}

void tly_json_int(tly_json *j, long long v)
{
    before_value(j);
    fprintf(j->out, "%lld", v);
}

void tly_json_qty(tly_json *j, tly_qty q)
{
    char buf[TLY_QTY_BUFSZ];
    tly_qty_format(q, buf, sizeof buf);
    tly_json_string(j, buf);
}

/*
** Resource maps are written in name order, so two runs over the same objects
** print the same bytes whatever order the names were first met in.
*/
static int cmp_by_name(const void *a, const void *b, void *names)
{
    return strcmp(tly_names_str(names, *(const uint32_t *)a),
                  tly_names_str(names, *(const uint32_t *)b));
}

static void write_map(tly_json *j, const uint32_t *ids, const tly_qty *qs, uint32_t n,
                      const tly_names *names)
{
    uint32_t *order = tly_xmalloc((n + 1) * sizeof *order);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!tly_qty_is_zero(qs[i]))
            order[m++] = i;
    /* Sort positions by the name of their id (qsort needs the table). */
    uint32_t *keyed = tly_xmalloc((m + 1) * sizeof *keyed);
    for (uint32_t i = 0; i < m; i++)
        keyed[i] = ids[order[i]];
    qsort_r(keyed, m, sizeof *keyed, cmp_by_name, (void *)names);
    tly_json_begin_object(j);
    for (uint32_t i = 0; i < m; i++) {
        uint32_t k = 0;
        while (ids[order[k]] != keyed[i])
            k++;
        tly_json_key(j, tly_names_str(names, keyed[i]));
        tly_json_qty(j, qs[order[k]]);
    }
    tly_json_end_object(j);
    free(keyed);
    free(order);
}

void tly_json_rvec(tly_json *j, const tly_rvec *v, const tly_names *names)
{
    uint32_t *ids = tly_xmalloc((v->n + 1) * sizeof *ids);
    for (uint32_t i = 0; i < v->n; i++)
        ids[i] = i;
    write_map(j, ids, v->v, v->n, names);
    free(ids);
}

void tly_json_rlist(tly_json *j, const tly_rlist *l, const tly_names *names)
{
    uint32_t *ids = tly_xmalloc((l->n + 1) * sizeof *ids);
    tly_qty *qs = tly_xmalloc((l->n + 1) * sizeof *qs);
    for (uint32_t i = 0; i < l->n; i++) {
        ids[i] = l->v[i].id;
        qs[i] = l->v[i].q;
    }
    write_map(j, ids, qs, l->n, names);
    free(ids);
    free(qs);
}
