/*
** jsonparse.c: a strict JSON reader for small values (node.h).
**
** AdmissionReviews arrive as one compact JSON document per request, and the
** webhook decides each one in well under a millisecond once the ledger is
** shared; going through libfyaml's YAML machinery for them cost about 0.9 M
** instructions per 2 KB review (the scanner, its token queue and a malloc
** per event), most of a decision. This reader builds the same tly_node tree
** (node.h) in one pass over the bytes, into the caller's arena, with no
** other allocation.
**
** The tree is the loader's, so the decoders cannot tell the two apart:
**  - strings are TLY_N_STRING with escapes resolved to UTF-8; numbers,
**    true, false and null keep their text and get their type from
**    tly_plain_scalar_type(), as the loader's plain scalars do;
**  - every node has the line and column of its first character (a string's
**    opening quote; columns count characters, not bytes), and map members
**    the position of their key;
**  - the loader's limits hold: nesting deeper than TLY_MAX_DEPTH, more than
**    TLY_MAX_OBJECT_NODES values or a value longer than TLY_MAX_SCALAR bytes
**    make the whole value invalid, and so do a duplicate key and a NUL
**    character in a string.
** What is accepted is RFC 8259 JSON exactly (one value, optional whitespace
** and one leading UTF-8 byte order mark around it, valid UTF-8); an escaped
** lone surrogate is refused, as the loader refuses it (the API server never
** sends one). A CRLF counts as one line break. tests/test_jsonparse.c
** compares the trees with the libfyaml path (tly_parse_value_fy).
*/
#include <string.h>

#include "strmap.h"
#include "tally/node.h"
#include "tally/store.h"

typedef struct {
    const unsigned char *p, *end;
    uint32_t line, col;    /* of *p */
    uint32_t nodes;
    tly_arena *a;
    bool bad;
} jreader;

/* Advances over n bytes that contain no line break. */
static void step(jreader *r, size_t n)
{
    for (size_t i = 0; i < n; i++, r->p++)
        if ((*r->p & 0xC0) != 0x80)
            r->col++;
}

static void skip_ws(jreader *r)
{
    while (r->p < r->end) {
        unsigned char c = *r->p;
        if (c == ' ' || c == '\t') {
            r->p++;
            r->col++;
        } else if (c == '\n' || c == '\r') {
            r->p += (c == '\r' && r->p + 1 < r->end && r->p[1] == '\n') ? 2 : 1;
            r->line++;
            r->col = 1;
        } else {
            break;
        }
    }
}

static tly_node *new_node(jreader *r, int type)
{
    if (++r->nodes > TLY_MAX_OBJECT_NODES) {
        r->bad = true;
        return NULL;
    }
    tly_node *n = tly_arena_zalloc(r->a, sizeof *n);
    n->type = (uint8_t)type;
    n->line = r->line;
    n->col = r->col;
    return n;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p (p + 4 <= end), or -1. */
static long hex4(const unsigned char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static size_t put_utf8(char *out, unsigned long cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/*
** A string starting at the opening quote: its resolved text in the arena
** (NUL-terminated), its length in *len; NULL when malformed. Escapes never
** grow the text (\uXXXX is 6 bytes for at most 3, a pair 12 for 4), so the
** raw length bounds the output.
*/
static char *read_string(jreader *r, uint32_t *len)
{
    const unsigned char *s = ++r->p;
    r->col++;
    const unsigned char *q = s;
    bool plain = true;
    uint32_t cont = 0;  /* UTF-8 continuation bytes: not columns */
    while (q < r->end && *q != '"') {
        if (*q == '\\') {
            plain = false;
            q += q + 1 < r->end ? 2 : 1;
            continue;
        }
        if (*q < 0x20)
            return NULL;  /* control characters must be escaped */
        cont += (*q & 0xC0) == 0x80;
        q++;
    }
    if (q >= r->end)
        return NULL;
    size_t raw = (size_t)(q - s);
    char *out = tly_arena_alloc(r->a, raw + 1);
    size_t n = 0;
    if (plain) {
        memcpy(out, s, raw);
        n = raw;
    } else {
        for (const unsigned char *p = s; p < q;) {
            if (*p != '\\') {
                out[n++] = (char)*p++;
                continue;
            }
            unsigned char e = p[1];
            p += 2;
            switch (e) {
            case '"': out[n++] = '"'; break;
            case '\\': out[n++] = '\\'; break;
            case '/': out[n++] = '/'; break;
            case 'b': out[n++] = '\b'; break;
            case 'f': out[n++] = '\f'; break;
            case 'n': out[n++] = '\n'; break;
            case 'r': out[n++] = '\r'; break;
            case 't': out[n++] = '\t'; break;
            case 'u': {
                long cp = p + 4 <= q ? hex4(p) : -1;
                if (cp < 0)
                    return NULL;
                p += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF && p + 6 <= q && p[0] == '\\' && p[1] == 'u') {
                    long lo = hex4(p + 2);
                    if (lo >= 0xDC00 && lo <= 0xDFFF) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        p += 6;
                    }
                }
                if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0)
                    return NULL;  /* a lone surrogate; NUL: names and keys are C strings */
                n += put_utf8(out + n, (unsigned long)cp);
                break;
            }
            default: return NULL;
            }
        }
    }
    if (n > TLY_MAX_SCALAR)
        return NULL;
    out[n] = '\0';
    *len = (uint32_t)n;
    r->p = q + 1;  /* past the closing quote; no line breaks inside */
    r->col += (uint32_t)(raw - cont) + 1;
    return out;
}

/* A number, true, false or null: the text as the loader keeps a plain scalar. */
static tly_node *read_word(jreader *r)
{
    const unsigned char *s = r->p, *p = s;
    if (*p == 't' || *p == 'f' || *p == 'n') {
        const char *w = *p == 't' ? "true" : *p == 'f' ? "false" : "null";
        size_t wl = strlen(w);
        if ((size_t)(r->end - p) < wl || memcmp(p, w, wl) != 0)
            return NULL;
        p += wl;
    } else {
        /* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
        if (p < r->end && *p == '-')
            p++;
        if (p < r->end && *p == '0')
            p++;
        else if (p < r->end && *p >= '1' && *p <= '9')
            while (p < r->end && *p >= '0' && *p <= '9')
                p++;
        else
            return NULL;
        if (p < r->end && *p == '.') {
            p++;
            if (p >= r->end || *p < '0' || *p > '9')
                return NULL;
            while (p < r->end && *p >= '0' && *p <= '9')
                p++;
        }
        if (p < r->end && (*p == 'e' || *p == 'E')) {
            p++;
            if (p < r->end && (*p == '+' || *p == '-'))
                p++;
            if (p >= r->end || *p < '0' || *p > '9')
                return NULL;
            while (p < r->end && *p >= '0' && *p <= '9')
                p++;
        }
    }
    size_t len = (size_t)(p - s);
    if (len > TLY_MAX_SCALAR)
        return NULL;
    tly_node *n = new_node(r, TLY_N_STRING);
    if (!n)
        return NULL;
    n->str = tly_arena_strndup(r->a, (const char *)s, len);
    n->len = (uint32_t)len;
    n->type = (uint8_t)tly_plain_scalar_type(n->str, len, &n->bval);
    step(r, len);
    return n;
}

static tly_node *read_value(jreader *r, int depth);

/* After a member or element: 1 a comma (another follows), 0 the closing bracket, -1 neither. */
static int after_member(jreader *r, char close)
{
    skip_ws(r);
    if (r->p < r->end && *r->p == ',') {
        step(r, 1);
        skip_ws(r);
        return 1;
    }
    if (r->p < r->end && *r->p == (unsigned char)close) {
        step(r, 1);
        return 0;
    }
    return -1;
}

/*
** Whether key is already a member of map n. A linear scan while the map is
** small; from 16 members on, a hash set (*seen), so that a hostile review
** with 100,000 keys in one map costs linear time, not quadratic.
*/
static bool repeated_key(const tly_node *n, const char *key, tly_strmap *seen, bool *hashed)
{
    size_t len = strlen(key);
    if (!*hashed && n->nkids >= 16) {
        tly_strmap_init(seen);
        for (tly_node *k = n->kids; k; k = k->next)
            tly_strmap_put(seen, k->key, strlen(k->key), (void *)1);
        *hashed = true;
    }
    if (*hashed) {
        if (tly_strmap_get(seen, key, len))
            return true;
        tly_strmap_put(seen, key, len, (void *)1);
        return false;
    }
    for (tly_node *k = n->kids; k; k = k->next)
        if (strcmp(k->key, key) == 0)
            return true;
    return false;
}

static tly_node *read_map(jreader *r, int depth)
{
    tly_node *n = new_node(r, TLY_N_MAP);
    if (!n)
        return NULL;
    step(r, 1);
    skip_ws(r);
    if (r->p < r->end && *r->p == '}') {
        step(r, 1);
        return n;
    }
    tly_node **tail = &n->kids;
    tly_strmap seen;
    bool hashed = false;
    tly_node *out = NULL;
    for (;;) {
        if (r->p >= r->end || *r->p != '"')
            break;
        uint32_t kline = r->line, kcol = r->col, klen;
        char *key = read_string(r, &klen);
        if (!key)
            break;
        skip_ws(r);
        if (r->p >= r->end || *r->p != ':')
            break;
        step(r, 1);
        skip_ws(r);
        tly_node *v = read_value(r, depth + 1);
        if (!v || repeated_key(n, key, &seen, &hashed))
            break;  /* a duplicate key: the loader refuses it too */
        v->key = key;
        v->kline = kline;
        v->kcol = kcol;
        *tail = v;
        tail = &v->next;
        n->nkids++;
        int more = after_member(r, '}');
        if (more <= 0) {
            out = more == 0 ? n : NULL;
            break;
        }
    }
    if (hashed)
        tly_strmap_free(&seen);
    return out;
}

static tly_node *read_seq(jreader *r, int depth)
{
    tly_node *n = new_node(r, TLY_N_SEQ);
    if (!n)
        return NULL;
    step(r, 1);
    skip_ws(r);
    if (r->p < r->end && *r->p == ']') {
        step(r, 1);
        return n;
    }
    tly_node **tail = &n->kids;
    for (;;) {
        tly_node *v = read_value(r, depth + 1);
        if (!v)
            return NULL;
        *tail = v;
        tail = &v->next;
        n->nkids++;
        int more = after_member(r, ']');
        if (more <= 0)
            return more == 0 ? n : NULL;
    }
}

static tly_node *read_value(jreader *r, int depth)
{
    if (r->p >= r->end || depth > TLY_MAX_DEPTH)
        return NULL;
    switch (*r->p) {
    case '{': return read_map(r, depth);
    case '[': return read_seq(r, depth);
    case '"': {
        tly_node *n = new_node(r, TLY_N_STRING);
        if (!n)
            return NULL;
        n->str = read_string(r, &n->len);
        return n->str ? n : NULL;
    }
    default: return read_word(r);
    }
}

tly_node *tly_parse_value(const char *text, size_t len, tly_arena *a)
{
    if (tly_utf8_invalid_at(text, len) < len)
        return NULL;
    jreader r = {(const unsigned char *)text, (const unsigned char *)text + len, 1, 1, 0, a, false};
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        r.p += 3;  /* a byte order mark (not counted as a column) */
    skip_ws(&r);
    tly_node *root = read_value(&r, 1);
    if (!root || r.bad)
        return NULL;
    skip_ws(&r);
    return r.p == r.end ? root : NULL;
}
