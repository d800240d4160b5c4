/*
** framer.c: cutting a stream of JSON values into whole values (kube.h).
**
** A watch body is a sequence of JSON objects, one per event; the API server
** happens to end each with a newline, but nothing promises that, and curl
** hands over the bytes in pieces that start and end anywhere. The framer
** follows just enough of JSON to know where a value ends: strings (with
** their escapes, so a brace inside a string is not a brace) and the depth
** of objects and arrays. Only the bytes of the value being read are kept,
** so memory follows the largest event, not the stream.
*/
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bits.h"
#include "kube_int.h"
#include "tally/arena.h"
#include "tally/error.h"

struct tly_jframer {
    char *buf;
    size_t len, cap, max;
    uint32_t depth;
    bool in_string, escape;
};

tly_jframer *tly_jframer_create(size_t max_value)
{
    tly_jframer *f = tly_xcalloc(1, sizeof *f);
    f->max = max_value ? max_value : (64u << 20);
    return f;
}

void tly_jframer_destroy(tly_jframer *f)
{
    if (!f)
        return;
    free(f->buf);
    free(f);
}

size_t tly_jframer_pending(const tly_jframer *f) { return f->len; }

static int keep(tly_jframer *f, const char *p, size_t n)
{
    if (f->len + n > f->max)
        return TLY_ELIMIT;
    if (f->len + n + 1 > f->cap) {
        size_t cap = f->cap ? f->cap : 4096;
        while (cap < f->len + n + 1)
            cap *= 2;
        f->buf = tly_xrealloc(f->buf, cap);
        f->cap = cap;
    }
    memcpy(f->buf + f->len, p, n);
    f->len += n;
    f->buf[f->len] = '\0';
    return TLY_OK;
}

/*
** Scans data from i, byte by byte, while inside a value; returns the offset
** just past the value's last byte, or e when the value goes on past e.
*/
static size_t scan_bytes(tly_jframer *f, const char *data, size_t i, size_t e)
{
    while (i < e) {
        char c = data[i];
        if (f->in_string) {
            if (f->escape) {
                f->escape = false;
            } else if (c == '\\') {
                f->escape = true;
            } else if (c == '"') {
                f->in_string = false;
            } else {
                /* Runs of plain string bytes are skipped at once. */
                const char *q = data + i + 1, *end = data + e;
                while (q < end && *q != '"' && *q != '\\')
                    q++;
                i = (size_t)(q - data);
                continue;
            }
        } else if (c == '"') {
            f->in_string = true;
        } else if (c == '{' || c == '[') {
            f->depth++;
        } else if (c == '}' || c == ']') {
            if (--f->depth == 0)
                return i + 1;
        }
        i++;
    }
    return e;
}

#if defined(__SSE2__)
/* Bit k: byte k of the 64 at p is c (c: a byte; movemask puts byte k at bit k). */
static inline uint64_t eq64(const __m128i v[4], __m128i c)
{
    uint64_t m = 0;
    for (int k = 0; k < 4; k++)
        m |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v[k], c)) << (16 * k);
    return m;
}

/*
** The bytes escaped by a backslash in a 64-byte block (simdjson's
** find_escaped): a run of backslashes escapes the byte after it when the
** run is odd; *carry is whether the first byte of the block is escaped, and
** becomes whether the first byte of the next one is.
*/
static inline uint64_t escaped_bytes(uint64_t bs, bool *carry)
{
    const uint64_t even = 0x5555555555555555ull;
    uint64_t prev = *carry;
    bs &= ~prev;  /* an escaped backslash starts no escape */
    uint64_t follows = bs << 1 | prev;
    uint64_t odd_starts = bs & ~even & ~follows;
    uint64_t seq;
    *carry = __builtin_add_overflow(odd_starts, bs, &seq);
    return (even ^ (seq << 1)) & follows;
}
#endif

/*
** Scans data from i while inside a value; returns the offset just past the
** value's last byte, or len when the value goes on. With SSE2, 64 bytes at
** a time: masks of the quotes, backslashes and brackets, the escaped bytes,
** then the bytes inside strings as a prefix XOR of the real quotes. A block
** in which the brackets outside strings cannot bring the depth to zero (it
** closes fewer than the depth) is passed in one step; otherwise its
** brackets are walked in order. Backslashes are taken as escapes wherever
** they are, which inside strings is what JSON says; outside strings a
** backslash is not JSON, and the value holding it is refused by the parser
** however it was cut. The last bytes of a piece (under 64) go byte by byte.
*/
static size_t scan(tly_jframer *f, const char *data, size_t i, size_t len)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}'), lower = _mm_set1_epi8(0x20);
    while (len - i >= 64) {
        __m128i v[4], w[4];
        for (int k = 0; k < 4; k++) {
            v[k] = _mm_loadu_si128((const __m128i *)(const void *)(data + i + 16 * k));
            w[k] = _mm_or_si128(v[k], lower);  /* '[' -> '{', ']' -> '}'; no other byte becomes one */
        }
        uint64_t bs = eq64(v, bslash);
        uint64_t esc = (bs || f->escape) ? escaped_bytes(bs, &f->escape) : 0;
        uint64_t inside = tly_prefix_xor(eq64(v, quote) & ~esc) ^ (f->in_string ? ~0ull : 0);
        f->in_string = inside >> 63;
        uint64_t opens = eq64(w, open) & ~inside, closes = eq64(w, close) & ~inside;
        uint32_t nc = tly_bit_count(closes);
        if (nc < f->depth) {
            f->depth += tly_bit_count(opens) - nc;
            i += 64;
            continue;
        }
        for (uint64_t m = opens | closes; m; m &= m - 1) {
            int k = __builtin_ctzll(m);
            if (opens >> k & 1) {
                f->depth++;
            } else if (--f->depth == 0) {
                /* Past the value's end nothing of this block was read into the state. */
                f->in_string = false;
                f->escape = false;
                return i + (size_t)k + 1;
            }
        }
        i += 64;
    }
#endif
    return scan_bytes(f, data, i, len);
}

int tly_jframer_feed(tly_jframer *f, const char *data, size_t len,
                     int (*fn)(void *ctx, const char *value, size_t len), void *ctx)
{
    size_t i = 0;
    while (i < len) {
        if (f->depth == 0) {
            char c = data[i];
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
                i++;
                continue;
            }
            if (c != '{' && c != '[')
                return TLY_EINVAL;
        }
        size_t start = i, end = scan(f, data, i, len);
        bool whole = f->depth == 0;
        if (whole && f->len == 0) {
            /* The value is inside this piece: no copy. */
            int rc = fn(ctx, data + start, end - start);
            if (rc)
                return rc;
        } else {
            int rc = keep(f, data + start, end - start);
            if (rc != TLY_OK)
                return rc;
            if (whole) {
                rc = fn(ctx, f->buf, f->len);
                f->len = 0;
                if (rc)
                    return rc;
            }
        }
        i = end;
    }
    return TLY_OK;
}
