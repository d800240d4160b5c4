/*
** jsonparse.c: tally's own JSON reader (node.h, jsonread.h).
**
** Two users. The loader streams JSON files, pipes and API responses through
** tly_json_stream() (a `kubectl get -o json` List of 100,000 pods is one
** line when it comes from the API server or `jq -c`, and libfyaml keeps its
** whole token window for a line: 3 GB for 77 MB). AdmissionReviews and JSON
** annotations are read by tly_parse_value(), strictly: one value, and any
** problem makes it invalid. tly_parse_api_value() is the same for
** AdmissionReviews, LIST pages and watch events, except that
** metadata.managedFields (which no decoder reads; often half of a live
** object's bytes) is only skipped over: checked as JSON, never built.
**
** The tree is the one the loader's libfyaml path builds, node for node, so
** the decoders cannot tell the two apart:
**  - strings are TLY_N_STRING with escapes resolved to UTF-8; numbers,
**    true, false and null keep their text and get the type
**    tly_plain_scalar_type() gives a plain scalar;
**  - every node has the line and column of its first character (a string's
**    opening quote; columns count characters, not bytes; a CRLF is one line
**    break), and map members the position of their key;
**  - the loader's rules: nesting deeper than TLY_MAX_DEPTH or more than
**    TLY_MAX_OBJECT_NODES values in one object are an error and the rest of
**    the object reads as nulls; a value longer than TLY_MAX_SCALAR bytes is
**    an error and null; a duplicate key and a NUL character are errors.
** What is accepted is RFC 8259 JSON (valid UTF-8, checked by the caller;
** an optional byte order mark first, not counted as a column); an escaped
** lone surrogate is refused, as libfyaml refuses it. tests/test_jsonparse.c
** and fuzz/fuzz_json.c compare the trees with libfyaml's, and
** tests/test_load_json.c and fuzz/fuzz_load_json.c the loaded stores.
**
** Speed: the bytes of a string are scanned 16 at a time with SSE2 (eight
** at a time portably) for a quote, a backslash or a control character;
** runs of spaces (indentation) likewise. Columns are not counted byte by
** byte: a column is the distance from the line's start minus the UTF-8
** continuation bytes seen on the line, which only strings can hold, and is
** computed only where a node starts. Nodes and texts are cut from chunks
** of the arena with a bump pointer.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonread.h"

/* 2: SSE2 (the x86-64 baseline), 1: eight bytes in a uint64_t, 0: bytes. */
#ifndef TLY_JSON_SIMD
#if defined(__SSE2__)
#define TLY_JSON_SIMD 2
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TLY_JSON_SIMD 1
#else
#define TLY_JSON_SIMD 0
#endif
#endif
#if TLY_JSON_SIMD == 2
#include <emmintrin.h>
#endif

/* ---- memory -------------------------------------------------------------- */

/* Chunks of an arena handed out with a bump pointer (nodes and texts). */
typedef struct {
    tly_arena *a;
    unsigned char *p;
    size_t left;
    size_t chunk;  /* size of the next chunk taken from a */
} jbump;

static inline void *take(jbump *b, size_t size)
{
    size = (size + 7) & ~(size_t)7;
    if (b->left < size) {
        if (size > b->chunk / 4)
            return tly_arena_alloc(b->a, size);  /* a big text: its own piece */
        b->p = tly_arena_alloc(b->a, b->chunk);
        b->left = b->chunk;
        if (b->chunk < 64 * 1024)
            b->chunk *= 2;
    }
    void *r = b->p;
    b->p += size;
    b->left -= size;
    return r;
}

/* After the arena was reset. */
static void bump_reset(jbump *b)
{
    b->p = NULL;
    b->left = 0;
}

/* ---- the reader ---------------------------------------------------------- */

typedef struct {
    uint32_t line, col;  /* 1-based; line 0: no position */
} jpos;

typedef struct {
    const unsigned char *base, *p, *end;
    const unsigned char *lstart;  /* the first byte of the current line */
    size_t lcont;                 /* UTF-8 continuation bytes scanned on this line */
    uint32_t line;
    uint32_t nodes;               /* nodes of the current object */
    bool skipping;                /* over a limit: the rest of the object reads as nulls */
    bool strict;                  /* the first problem ends the read */
    bool failed;                  /* a syntax error (strict: any problem) */
    jbump *b;                     /* where the current object's nodes go */
    const tly_jsink *sink;        /* NULL: problems are not reported */
    bool in_raw;                  /* reading a snapshot's rawObjects map (stream_raw) */
    const char *raw_key;          /* while a snapshot's rawObjects.<key> list is streamed */
    bool lean;                    /* tly_parse_api_value: metadata.managedFields is skipped */
    bool meta_next;               /* lean: the map about to be built is a `metadata` value */
} jreader;

static void reader_init(jreader *r, const char *buf, size_t len)
{
    *r = (jreader){0};
    r->base = r->p = (const unsigned char *)buf;
    r->end = r->base + len;
    r->line = 1;
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        r->p += 3;
    r->lstart = r->p;  /* a byte order mark is no column */
}

/* The position of p, which is on the current line past every string scanned. */
static inline jpos pos_at(const jreader *r, const unsigned char *p)
{
    size_t col = (size_t)(p - r->lstart) - r->lcont + 1;
    return (jpos){r->line, col > UINT32_MAX ? UINT32_MAX : (uint32_t)col};
}

/* Problems are rare: kept out of line, so the reading paths stay short. */
static bool problem(jreader *r, bool fatal, jpos at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), cold, noinline));

/* Reports a problem; returns whether reading goes on. */
static bool problem(jreader *r, bool fatal, jpos at, const char *fmt, ...)
{
    if (fatal || r->strict)
        r->failed = true;
    if (r->sink) {
        va_list ap;
        va_start(ap, fmt);
        r->sink->error(r->sink->ctx, at.line, at.col, fmt, ap);
        va_end(ap);
    }
    return !r->failed;
}

static bool syntax(jreader *r, jpos at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), cold, noinline));

/* Reports a syntax error (which ends the input); returns false. */
static bool syntax(jreader *r, jpos at, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    problem(r, true, at, "syntax error: %s", msg);
    return false;
}

/* What is at p, for messages: 'x', a UTF-8 character, a byte, or the end. */
static const char *describe(const jreader *r, const unsigned char *p, char buf[16])
{
    if (p >= r->end)
        return "the end of the input";
    unsigned char c = *p;
    if (c > 0x20 && c < 0x7f) {
        snprintf(buf, 16, "'%c'", c);
    } else if (c >= 0xC2 && c <= 0xF4) {
        int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;  /* the caller checked the UTF-8 */
        snprintf(buf, 16, "'%.*s'", n, (const char *)p);
    } else {
        snprintf(buf, 16, "byte 0x%02x", c);
    }
    return buf;
}

/* ---- whitespace ---------------------------------------------------------- */

/* The first byte at or after p that is not a space. */
static const unsigned char *spaces(const unsigned char *p, const unsigned char *end)
{
#if TLY_JSON_SIMD == 2
    const __m128i sp = _mm_set1_epi8(' ');
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, sp)) ^ 0xFFFFu;
        if (m)
            return p + __builtin_ctz(m);
        p += 16;
    }
#elif TLY_JSON_SIMD == 1
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= 0x2020202020202020ull;  /* spaces become zero bytes */
        if (w)
            return p + (__builtin_ctzll(w) >> 3);
        p += 8;
    }
#endif
    while (p < end && *p == ' ')
        p++;
    return p;
}

static void skip_ws_slow(jreader *r)
{
    const unsigned char *p = r->p, *end = r->end;
    while (p < end && *p <= ' ') {
        unsigned char c = *p;
        if (c == ' ') {
            p = spaces(p + 1, end);
        } else if (c == '\n' || c == '\r') {
            p += (c == '\r' && p + 1 < end && p[1] == '\n') ? 2 : 1;
            r->line++;
            r->lstart = p;
            r->lcont = 0;
        } else if (c == '\t') {
            p++;
        } else {
            break;  /* another control character: the caller's syntax error */
        }
    }
    r->p = p;
}

static inline void skip_ws(jreader *r)
{
    if (r->p < r->end && *r->p > ' ')
        return;  /* compact JSON: nothing to skip */
    skip_ws_slow(r);
}

/* ---- strings ------------------------------------------------------------- */

/*
** The first byte at or after q that ends a run of plain string bytes (a
** quote, a backslash or a control character), or the end; counts the run's
** UTF-8 continuation bytes into r->lcont.
*/
static inline const unsigned char *plain_run(jreader *r, const unsigned char *q)
{
    const unsigned char *end = r->end;
#if TLY_JSON_SIMD == 2
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i c1f = _mm_set1_epi8(0x1F), cont = _mm_set1_epi8(-64);
    while (end - q >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                    _mm_cmpeq_epi8(_mm_max_epu8(v, c1f), c1f));
        unsigned m = (unsigned)_mm_movemask_epi8(stop);
        if (_mm_movemask_epi8(v)) {
            /* 0x80..0xBF are below -64 as signed bytes: continuation bytes */
            unsigned c = (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(v, cont));
            if (m)
                c &= (m & -m) - 1;
            r->lcont += (size_t)__builtin_popcount(c);
        }
        if (m)
            return q + __builtin_ctz(m);
        q += 16;
    }
#elif TLY_JSON_SIMD == 1
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    while (end - q >= 8) {
        uint64_t w;
        memcpy(&w, q, 8);
        /* Zero-byte tests: the lowest flagged byte of each is exact. */
        uint64_t qt = w ^ (ones * '"'), bs = w ^ (ones * '\\');
        uint64_t m = (((qt - ones) & ~qt) | ((bs - ones) & ~bs) | ((w - ones * 0x20) & ~w)) & high;
        uint64_t c = w & ~(w << 1) & high;  /* bit 7 set, bit 6 clear */
        if (m)
            c &= (m & -m) - 1;
        r->lcont += (size_t)__builtin_popcountll(c);
        if (m)
            return q + (__builtin_ctzll(m) >> 3);
        q += 8;
    }
#endif
    for (; q < end; q++) {
        unsigned char c = *q;
        if (c == '"' || c == '\\' || c < 0x20)
            return q;
        r->lcont += (c & 0xC0) == 0x80;
    }
    return q;
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

/* Four hex digits at p, or -1 (p[0..3] must be readable). */
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

/*
** Checks the escape at q (a backslash inside a string); returns the byte
** after it, or NULL after a syntax error. *nul: it is \u0000.
*/
static const unsigned char *escape(jreader *r, const unsigned char *q, bool *nul)
{
    if (r->end - q < 2)
        return q + 1;  /* the caller finds the string unterminated */
    switch (q[1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        return q + 2;
    case 'u':
        break;
    default:
        if (q[1] > 0x20 && q[1] < 0x7f)
            syntax(r, pos_at(r, q), "invalid escape '\\%c' in a string", q[1]);
        else
            syntax(r, pos_at(r, q), "a backslash in a string must start an escape");
        return NULL;
    }
    long cp = r->end - q >= 6 ? hex4(q + 2) : -1;
    if (cp < 0) {
        syntax(r, pos_at(r, q), "\\u must be followed by four hex digits");
        return NULL;
    }
    if (cp >= 0xD800 && cp <= 0xDBFF && r->end - q >= 12 && q[6] == '\\' && q[7] == 'u') {
        long lo = hex4(q + 8);
        if (lo >= 0xDC00 && lo <= 0xDFFF)
            return q + 12;  /* a surrogate pair: one character */
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) {
        syntax(r, pos_at(r, q), "\\u%04lX is half of a surrogate pair, alone", cp);
        return NULL;
    }
    *nul |= cp == 0;
    return q + 6;
}

/*
** The rest of scan_string from q, the first byte of the string that is not
** plain: a string with escapes, or a syntax error.
*/
static __attribute__((noinline)) const unsigned char *scan_string_rest(jreader *r,
                                                                      const unsigned char *q,
                                                                      bool *esc, bool *nul)
{
    for (;;) {
        if (q >= r->end) {
            syntax(r, pos_at(r, r->p), "the string is not closed (no '\"' before the end of the input)");
            return NULL;
        }
        if (*q == '"')
            return q;
        if (*q != '\\') {
            syntax(r, pos_at(r, q), "control character U+%04X in a string (write it as an escape)",
                   *q);
            return NULL;
        }
        *esc = true;
        if (!(q = escape(r, q, nul)))
            return NULL;
        q = plain_run(r, q);
    }
}

/*
** Checks the string whose opening quote is at r->p; returns its closing
** quote, or NULL after a syntax error. *esc: it has escapes; *nul: one of
** them is \u0000. A string with no escape (nearly all of them) is one run
** of plain bytes and its quote, here; anything else goes on out of line.
*/
static inline const unsigned char *scan_string(jreader *r, bool *esc, bool *nul)
{
    const unsigned char *q = plain_run(r, r->p + 1);
    if (q < r->end && *q == '"')
        return q;
    return scan_string_rest(r, q, esc, nul);
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

/* Resolves the escapes of a checked string body s[0..e) into out; returns its length. */
static size_t unescape(char *out, const unsigned char *s, const unsigned char *e)
{
    size_t n = 0;
    while (s < e) {
        const unsigned char *bs = memchr(s, '\\', (size_t)(e - s));
        size_t run = (size_t)((bs ? bs : e) - s);
        memcpy(out + n, s, run);
        n += run;
        if (!bs)
            break;
        unsigned char c = bs[1];
        s = bs + 2;
        switch (c) {
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned long cp = (unsigned long)hex4(s);
            s += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned long)hex4(s + 2) - 0xDC00);
                s += 6;
            }
            n += put_utf8(out + n, cp);
            break;
        }
        default: out[n++] = (char)c; break;  /* " \ / */
        }
    }
    return n;
}

/*
** A NUL-terminated copy of the text s[0..e) in the arena, escapes resolved
** when esc (they never make it longer: \uXXXX is 6 bytes for at most 3).
*/
static inline char *copy_text(jreader *r, const unsigned char *s, const unsigned char *e,
                              bool esc, size_t *len)
{
    size_t n = (size_t)(e - s);
    /* Room for whole 16-byte blocks: a short text is copied in one or two. */
    char *out = take(r->b, (n + 16) & ~(size_t)15);
    if (esc) {
        n = unescape(out, s, e);
    } else if (n < 16 && (size_t)(r->end - s) >= 16) {
        memcpy(out, s, 16);
    } else if (n <= 32 && (size_t)(r->end - s) >= 32) {
        memcpy(out, s, 16);
        memcpy(out + 16, s + 16, 16);
    } else {
        memcpy(out, s, n);
    }
    out[n] = '\0';
    *len = n;
    return out;
}

/* ---- numbers, true, false, null ------------------------------------------ */

/* Bytes a word may hold: what a number or a literal is made of, and its typos. */
static bool word_byte(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
           c == '+' || c == '-';
}

static const unsigned char *digits(const unsigned char *p, const unsigned char *e)
{
    while (p < e && *p >= '0' && *p <= '9')
        p++;
    return p;
}

/* TLY_N_INT or TLY_N_FLOAT for a JSON number's text, -1 for anything else. */
static int number_type(const unsigned char *p, const unsigned char *e)
{
    int type = TLY_N_INT;
    if (p < e && *p == '-')
        p++;
    if (p < e && *p == '0')
        p++;
    else if (p < e && *p >= '1' && *p <= '9')
        p = digits(p, e);
    else
        return -1;
    if (p < e && *p == '.') {
        const unsigned char *f = p + 1;
        if ((p = digits(f, e)) == f)
            return -1;
        type = TLY_N_FLOAT;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        const unsigned char *x = p;
        if ((p = digits(x, e)) == x)
            return -1;
        type = TLY_N_FLOAT;
    }
    return p == e ? type : -1;
}

/* Checks the word at r->p; returns its end and type, or NULL after a syntax error. */
static const unsigned char *scan_word(jreader *r, int *type, bool *bval)
{
    const unsigned char *s = r->p, *e = s;
    while (e < r->end && word_byte(*e))
        e++;
    size_t len = (size_t)(e - s);
    *bval = false;
    if (len == 4 && memcmp(s, "true", 4) == 0) {
        *type = TLY_N_BOOL;
        *bval = true;
    } else if (len == 5 && memcmp(s, "false", 5) == 0) {
        *type = TLY_N_BOOL;
    } else if (len == 4 && memcmp(s, "null", 4) == 0) {
        *type = TLY_N_NULL;
    } else if ((*type = number_type(s, e)) < 0) {
        char d[16];
        if (len == 0)
            syntax(r, pos_at(r, s), "expected a value, got %s", describe(r, s, d));
        else
            syntax(r, pos_at(r, s), "'%.*s%s' is not a JSON value", (int)(len > 40 ? 40 : len),
                   (const char *)s, len > 40 ? "..." : "");
        return NULL;
    }
    return e;
}

/* ---- punctuation --------------------------------------------------------- */

/* At a key: a string; after a comma (comma.line set), not the closing brace. */
static inline bool key_start(jreader *r, jpos comma)
{
    if (r->p < r->end && *r->p == '"')
        return true;
    if (comma.line && r->p < r->end && *r->p == '}')
        return syntax(r, comma, "JSON disallows trailing comma before closing brace");
    char d[16];
    return syntax(r, pos_at(r, r->p), "expected a string key, got %s", describe(r, r->p, d));
}

/* At an element after a comma: not the closing bracket. */
static inline bool element_start(jreader *r, jpos comma)
{
    if (comma.line && r->p < r->end && *r->p == ']')
        return syntax(r, comma, "JSON disallows trailing comma before closing bracket");
    return true;
}

/* The ':' after a key, and the whitespace around it. */
static inline bool colon(jreader *r)
{
    skip_ws(r);
    if (r->p < r->end && *r->p == ':') {
        r->p++;
        skip_ws(r);
        return true;
    }
    char d[16];
    return syntax(r, pos_at(r, r->p), "expected ':' after the key, got %s", describe(r, r->p, d));
}

/*
** After a member or element: 1 a comma (its position in *comma, and the
** whitespace after it skipped), 0 the closing bracket, -1 a syntax error.
*/
static inline int next_member(jreader *r, unsigned char close, jpos *comma)
{
    skip_ws(r);
    if (r->p < r->end && *r->p == ',') {
        *comma = pos_at(r, r->p);
        r->p++;
        skip_ws(r);
        return 1;
    }
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return 0;
    }
    char d[16];
    syntax(r, pos_at(r, r->p),
           close == '}' ? "expected ',' or '}' after a member, got %s"
                        : "expected ',' or ']' after an element, got %s",
           describe(r, r->p, d));
    return -1;
}

/*
** Steps over an opening bracket and the whitespace after it; true when the
** closing bracket follows at once (then it is stepped over too).
*/
static inline bool empty_after_open(jreader *r, unsigned char close)
{
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return true;
    }
    return false;
}

/* ---- skipping (over a limit, and the syntax check) ----------------------- */

/* The closing brackets of the open containers, however deep. */
typedef struct {
    unsigned char small[256], *v;
    size_t n, cap;
} jstack;

static void push(jstack *st, unsigned char close)
{
    if (st->n == st->cap) {
        unsigned char *v = tly_xmalloc(st->cap * 2);
        memcpy(v, st->v, st->n);
        if (st->v != st->small)
            free(st->v);
        st->v = v;
        st->cap *= 2;
    }
    st->v[st->n++] = close;
}

static bool skip_string(jreader *r)
{
    bool esc = false, nul = false;
    const unsigned char *q = scan_string(r, &esc, &nul);
    if (q)
        r->p = q + 1;
    return q != NULL;
}

/* A key, its colon and the whitespace after it. */
static bool skip_key(jreader *r, jpos comma)
{
    return key_start(r, comma) && skip_string(r) && colon(r);
}

/*
** At a value: skips a scalar or an empty container (0), or opens a
** container (1, at its first value); -1 after a syntax error.
*/
static int skip_open(jreader *r, jstack *st)
{
    unsigned char c = r->p < r->end ? *r->p : 0;
    if (c == '"')
        return skip_string(r) ? 0 : -1;
    if (c != '{' && c != '[') {
        int type;
        bool b;
        const unsigned char *e = scan_word(r, &type, &b);
        if (e)
            r->p = e;
        return e ? 0 : -1;
    }
    unsigned char close = c == '{' ? '}' : ']';
    if (empty_after_open(r, close))
        return 0;
    push(st, close);
    return c == '[' || skip_key(r, (jpos){0, 0}) ? 1 : -1;
}

/* After a value: closes what ends there; true at the next value or the end of the outermost one. */
static bool skip_close(jreader *r, jstack *st, bool *done)
{
    for (;;) {
        if (st->n == 0) {
            *done = true;
            return true;
        }
        unsigned char close = st->v[st->n - 1];
        jpos comma;
        int more = next_member(r, close, &comma);
        if (more < 0)
            return false;
        if (more > 0)
            return close == '}' ? skip_key(r, comma) : element_start(r, comma);
        st->n--;
    }
}

/* Skips the value at r->p, checking its syntax, however deep; false after a syntax error. */
static bool skip_value(jreader *r)
{
    jstack st;
    st.v = st.small;
    st.n = 0;
    st.cap = sizeof st.small;
    bool ok = true, done = false;
    while (ok && !done) {
        int opened = skip_open(r, &st);
        ok = opened >= 0 && (opened > 0 || skip_close(r, &st, &done));
    }
    if (st.v != st.small)
        free(st.v);
    return ok;
}

/* ---- building trees ------------------------------------------------------ */

static inline tly_node *new_node(jreader *r, int type, jpos at)
{
    tly_node *n = take(r->b, sizeof *n);
    *n = (tly_node){.type = (uint8_t)type, .line = at.line, .col = at.col};
    r->nodes++;
    return n;
}

/* The loader's rules for a scalar's text: too long is an error and null, so is a NUL. */
static inline bool check_scalar(jreader *r, tly_node *n, size_t len, bool nul)
{
    jpos at = {n->line, n->col};
    if (len > TLY_MAX_SCALAR) {
        n->type = TLY_N_NULL;
        n->str = "";
        n->len = 0;
        return problem(r, false, at, "value is longer than %u bytes", TLY_MAX_SCALAR);
    }
    n->len = (uint32_t)len;
    if (!nul)
        return true;
    n->len = (uint32_t)strlen(n->str);  /* names and keys are C strings */
    return problem(r, false, at, "value contains a NUL character");
}

static inline tly_node *build_string(jreader *r, jpos at)
{
    bool esc = false, nul = false;
    const unsigned char *q = scan_string(r, &esc, &nul);
    if (!q)
        return NULL;
    tly_node *n = new_node(r, TLY_N_STRING, at);
    size_t len;
    n->str = copy_text(r, r->p + 1, q, esc, &len);
    r->p = q + 1;
    return check_scalar(r, n, len, nul) ? n : NULL;
}

static inline tly_node *build_word(jreader *r, jpos at)
{
    int type;
    bool bval;
    const unsigned char *e = scan_word(r, &type, &bval);
    if (!e)
        return NULL;
    tly_node *n = new_node(r, type, at);
    n->bval = bval;
    size_t len;
    n->str = copy_text(r, r->p, e, false, &len);
    r->p = e;
    return check_scalar(r, n, len, false) ? n : NULL;
}

/* Over a limit: reported once per object; the value is skipped and reads as null. */
static __attribute__((noinline)) tly_node *over_limit(jreader *r, int depth, jpos at)
{
    if (!r->skipping) {
        bool go = depth > TLY_MAX_DEPTH
                      ? problem(r, false, at, "nesting is deeper than %d levels", TLY_MAX_DEPTH)
                      : problem(r, false, at, "object has more than %u values", TLY_MAX_OBJECT_NODES);
        r->skipping = true;
        if (!go)
            return NULL;
    }
    if (!skip_value(r))
        return NULL;
    tly_node *n = take(r->b, sizeof *n);
    *n = (tly_node){.type = TLY_N_NULL, .line = at.line, .col = at.col};
    return n;
}

/*
** The key at r->p (key_start checked the quote) and the ':' after it, and
** its length as a C string; NULL after a syntax error.
*/
static const char *read_key(jreader *r, jpos at, size_t *len)
{
    bool esc = false, nul = false;
    const unsigned char *q = scan_string(r, &esc, &nul);
    if (!q)
        return NULL;
    const char *key = copy_text(r, r->p + 1, q, esc, len);
    r->p = q + 1;
    if (nul) {
        *len = strlen(key);
        if (!problem(r, false, at, "key contains a NUL character"))
            return NULL;
    }
    return colon(r) ? key : NULL;
}

/*
** Gives member v of map its key; a duplicate is an error (the later value
** wins). *unique turns false on a duplicate, or when keys go unchecked
** (over a limit).
*/
static bool attach(jreader *r, tly_keyset *ks, tly_node *v, const char *key, size_t klen,
                   jpos kat, bool *unique)
{
    tly_node_set_key(v, key, klen);
    v->kline = kat.line;
    v->kcol = kat.col;
    if (r->skipping) {
        *unique = false;
        return true;
    }
    const tly_node *first = tly_keyset_add(ks, key, klen, v);
    if (!first)
        return true;
    *unique = false;
    return problem(r, false, kat, "duplicate key \"%s\" (first at line %u)", key, first->kline);
}

static inline tly_node *build(jreader *r, int depth);

static tly_node *stream_items(jreader *r, jbump *ob);

static tly_node *stream_raw(jreader *r, jbump *ob, int depth);

/*
** lean, in a `metadata` map: is key[0..klen) managedFields? Its value is
** then skipped (syntax still checked) and never becomes nodes.
*/
static inline bool unread_member(bool meta, const char *key, size_t klen)
{
    return meta && klen == 13 && memcmp(key, "managedFields", 13) == 0;
}

/*
** The members of map n after its '{' and the whitespace after it, built at
** depth + 1. With ob (a top-level map), an `items` list is streamed through
** ob instead (*items: its key's position). meta: n is the value of a
** `metadata` key in a lean read (its managedFields is skipped).
*/
static bool map_members(jreader *r, tly_node *n, int depth, jbump *ob, jpos *items, bool meta)
{
    tly_keyset ks;
    tly_keyset_init(&ks);
    tly_node **tail = &n->kids;
    jpos comma = {0, 0};
    int more = -1;
    bool unique = true;
    for (;;) {
        if (!key_start(r, comma))
            break;
        jpos kat = pos_at(r, r->p);
        size_t klen;
        const char *key = read_key(r, kat, &klen);
        if (!key)
            break;
        tly_node *v;
        if (unread_member(meta, key, klen)) {
            if (!skip_value(r) || (more = next_member(r, '}', &comma)) <= 0)
                break;
            continue;
        }
        if (r->in_raw && r->p < r->end && *r->p == '[') {
            /* Only rawObjects' own lists: the objects in them are read as usual. */
            r->in_raw = false;
            r->raw_key = key;
            v = stream_items(r, ob);
            r->raw_key = NULL;
            r->in_raw = true;
        } else if (ob && r->p < r->end && *r->p == '[' && strcmp(key, "items") == 0) {
            v = stream_items(r, ob);
            if (!items->line)
                *items = kat;
        } else if (ob && !r->in_raw && r->sink && r->sink->raw_object && r->p < r->end && *r->p == '{' &&
                   strcmp(key, "rawObjects") == 0) {
            v = stream_raw(r, ob, depth + 1);
            if (!items->line)
                *items = kat;
        } else {
            bool raw = r->in_raw;  /* a value inside rawObjects that is no list: read as usual */
            r->in_raw = false;
            if (klen == 8 && r->lean && memcmp(key, "metadata", 8) == 0)
                r->meta_next = true;  /* build_map takes it and clears it */
            v = build(r, depth + 1);
            r->meta_next = false;     /* "metadata": "text" left it set */
            r->in_raw = raw;
        }
        if (!v || !attach(r, &ks, v, key, klen, kat, &unique))
            break;
        *tail = v;
        tail = &v->next;
        n->nkids++;
        if ((more = next_member(r, '}', &comma)) <= 0)
            break;
    }
    tly_keyset_free(&ks);
    if (unique)
        n->flags |= TLY_NF_UNIQUE;
    return more == 0;
}

static __attribute__((noinline)) tly_node *build_map(jreader *r, int depth, jpos at)
{
    tly_node *n = new_node(r, TLY_N_MAP, at);
    bool meta = r->meta_next;
    r->meta_next = false;
    return empty_after_open(r, '}') || map_members(r, n, depth, NULL, NULL, meta) ? n : NULL;
}

static __attribute__((noinline)) tly_node *build_seq(jreader *r, int depth, jpos at)
{
    tly_node *n = new_node(r, TLY_N_SEQ, at);
    r->meta_next = false;  /* "metadata": [{...}] holds no metadata map */
    if (empty_after_open(r, ']'))
        return n;
    tly_node **tail = &n->kids;
    jpos comma = {0, 0};
    for (;;) {
        tly_node *v = element_start(r, comma) ? build(r, depth + 1) : NULL;
        if (!v)
            return NULL;
        *tail = v;
        tail = &v->next;
        n->nkids++;
        int more = next_member(r, ']', &comma);
        if (more <= 0)
            return more == 0 ? n : NULL;
    }
}

/*
** The value at r->p (whitespace skipped); NULL after a syntax error (strict:
** any problem). Inline, so that a scalar (most values) is read in its map's
** or list's loop; only containers are calls.
*/
static inline tly_node *build(jreader *r, int depth)
{
    jpos at = pos_at(r, r->p);
    if (r->skipping || depth > TLY_MAX_DEPTH || r->nodes >= TLY_MAX_OBJECT_NODES)
        return over_limit(r, depth, at);
    switch (r->p < r->end ? *r->p : 0) {
    case '{': return build_map(r, depth, at);
    case '[': return build_seq(r, depth, at);
    case '"': return build_string(r, at);
    default: return build_word(r, at);
    }
}

/* ---- streaming ----------------------------------------------------------- */

static void hand_over(jreader *r, const tly_node *tree)
{
    if (r->raw_key)
        r->sink->raw_object(r->sink->ctx, r->raw_key, tree, (size_t)(r->p - r->base));
    else
        r->sink->object(r->sink->ctx, tree, (size_t)(r->p - r->base));
}

/*
** The `items` list at r->p: every item is built in ob (reset first) and
** handed over. Returns a childless list node standing for it in the top
** level map (for the duplicate-key check), or NULL after a syntax error.
*/
static tly_node *stream_items(jreader *r, jbump *ob)
{
    jpos at = pos_at(r, r->p);
    jbump *db = r->b;
    uint32_t nodes = r->nodes;
    bool skipping = r->skipping;
    int more = empty_after_open(r, ']') ? 0 : 1;
    jpos comma = {0, 0};
    while (more > 0) {
        tly_arena_reset(ob->a);
        bump_reset(ob);
        r->b = ob;
        r->nodes = 0;
        r->skipping = false;
        tly_node *item = element_start(r, comma) ? build(r, 2) : NULL;
        if (!item) {
            more = -1;
            break;
        }
        hand_over(r, item);
        more = next_member(r, ']', &comma);
    }
    tly_arena_reset(ob->a);
    bump_reset(ob);
    r->b = db;
    r->nodes = nodes;
    r->skipping = skipping;
    if (more < 0)
        return NULL;
    tly_node *n = take(db, sizeof *n);
    *n = (tly_node){.type = TLY_N_SEQ, .line = at.line, .col = at.col};
    return n;
}

/*
** A KAI snapshot's rawObjects map at r->p: each member that is a list is
** streamed as a List's items are, its objects handed over with the member's
** key (the kind they are); other members are read as usual. Returns the map
** (its lists childless), or NULL after a syntax error.
*/
static tly_node *stream_raw(jreader *r, jbump *ob, int depth)
{
    tly_node *n = new_node(r, TLY_N_MAP, pos_at(r, r->p));
    if (empty_after_open(r, '}'))
        return n;
    r->in_raw = true;
    jpos unused = {0, 0};
    bool ok = map_members(r, n, depth, ob, &unused, false);
    r->in_raw = false;
    return ok ? n : NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* A top-level map: one object, or a List whose items are handed over one by one. */
static bool stream_map(jreader *r, jbump *ob)
{
    tly_node *top = new_node(r, TLY_N_MAP, pos_at(r, r->p));
    jpos items = {0, 0};
    if (!empty_after_open(r, '}') && !map_members(r, top, 1, ob, &items, false))
        return false;
    if (!items.line) {
        hand_over(r, top);
        return true;
    }
    const tly_node *kind = tly_node_get(top, "kind");
    if (kind && kind->type == TLY_N_STRING && !ends_with(kind->str, "List"))
        problem(r, false, items, "a %s with an `items` list: only List kinds hold items", kind->str);
    else if (r->sink->list)
        r->sink->list(r->sink->ctx, top);
    return true;
}

long tly_json_stream(const char *buf, size_t len, tly_arena *doc, tly_arena *obj,
                     const tly_jsink *sink)
{
    jbump db = {.a = doc, .chunk = 16 * 1024}, ob = {.a = obj, .chunk = 16 * 1024};
    jreader r;
    reader_init(&r, buf, len);
    r.sink = sink;
    long values = 0;
    for (;; values++) {
        skip_ws(&r);
        if (r.p >= r.end)
            return values;
        tly_arena_reset(doc);
        bump_reset(&db);
        r.b = &db;
        r.nodes = 0;
        r.skipping = false;
        bool ok;
        if (*r.p == '{') {
            ok = stream_map(&r, &ob);
        } else {
            tly_node *n = build(&r, 1);
            if ((ok = n != NULL))
                hand_over(&r, n);
        }
        if (!ok)
            return -1;
    }
}

bool tly_json_valid(const char *buf, size_t len)
{
    jreader r;
    reader_init(&r, buf, len);
    r.strict = true;
    for (long values = 0;; values++) {
        skip_ws(&r);
        if (r.p >= r.end)
            return values > 0;
        if (!skip_value(&r))
            return false;
    }
}

static tly_node *parse_one(const char *text, size_t len, tly_arena *a, bool lean)
{
    if (tly_utf8_invalid_at(text, len) < len)
        return NULL;
    /* Small values (annotations) take small chunks of the caller's arena. */
    jbump b = {.a = a, .chunk = len < 8 * 1024 ? 2 * len + 256 : 16 * 1024};
    jreader r;
    reader_init(&r, text, len);
    r.strict = true;
    r.lean = lean;
    r.b = &b;
    skip_ws(&r);
    tly_node *root = build(&r, 1);
    if (!root || r.failed)
        return NULL;
    skip_ws(&r);
    return r.p == r.end ? root : NULL;
}

tly_node *tly_parse_value(const char *text, size_t len, tly_arena *a)
{
    return parse_one(text, len, a, false);
}

tly_node *tly_parse_api_value(const char *text, size_t len, tly_arena *a)
{
    return parse_one(text, len, a, true);
}

/* ---- duplicate keys ------------------------------------------------------ */

const tly_node *tly_keyset_add_slow(tly_keyset *ks, const char *key, size_t len,
                                    const tly_node *member)
{
    if (!ks->hashed) {
        uint32_t h = member->khash;
        for (unsigned i = 0; i < ks->n; i++)
            if (ks->hash[i] == h && strcmp(ks->member[i]->key, key) == 0)
                return ks->member[i];
        if (ks->n < 16) {
            ks->bits |= 1ull << (h & 63);
            ks->member[ks->n] = member;
            ks->hash[ks->n++] = h;
            return NULL;
        }
        tly_strmap_init(&ks->set);
        for (unsigned i = 0; i < ks->n; i++)
            tly_strmap_put(&ks->set, ks->member[i]->key, strlen(ks->member[i]->key),
                           (void *)ks->member[i]);
        ks->hashed = true;
    }
    const tly_node *first = tly_strmap_get(&ks->set, key, len);
    if (!first)
        tly_strmap_put(&ks->set, key, len, (void *)member);
    return first;
}

void tly_keyset_free(tly_keyset *ks)
{
    if (ks->hashed)
        tly_strmap_free(&ks->set);
    ks->hashed = false;
}
