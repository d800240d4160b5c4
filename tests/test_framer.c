/*
** test_framer.c: cutting a watch stream into JSON values (src/kube/framer.c).
**
** The framer scans 64 bytes at a time (masks of quotes, backslashes and
** brackets, the bytes inside strings as a prefix XOR) and the last bytes of
** each piece one at a time. Both must cut exactly where a plain byte-by-byte
** reading of JSON cuts, with the state carried across pieces of any size
** and across the 64-byte blocks: a backslash as the last byte of a block, a
** run of backslashes over a boundary, a string that opens in one piece and
** closes in another. Random streams of random values (strings with escapes,
** backslash runs, brackets and UTF-8 inside them, whitespace between tokens)
** are fed whole, a byte at a time and in random pieces, and every value the
** framer hands over is compared with the reference cut of the same stream.
*/
#include "testutil.h"

#include <stdio.h>

#include "tally/error.h"
#include "tally/kube.h"

static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}


static void ws(tbuf *b)
{
    static const char *const w[] = {"", "", "", " ", "\n", "  ", "\r\n", "\t"};
    tbuf_puts(b, w[rnd(8)]);
}

/* A string whose body mixes plain bytes, escapes, backslash runs, brackets and UTF-8. */
static void gen_string(tbuf *b)
{
    static const char *const parts[] = {
        "a", "plain", "{", "}", "[", "]", "\\\"", "\\\\", "\\\\\\\"", "\\\\\\\\", "\\n", "\\u00e9",
        "\\ud83d\\ude00", "\xc3\xa9", "\xe2\x82\xac", ":", ",", " ", "k:{\\\"name\\\":\\\"main\\\"}",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"};
    tbuf_puts(b, "\"");
    int n = (int)rnd(12);
    for (int i = 0; i < n; i++)
        tbuf_puts(b, parts[rnd(sizeof parts / sizeof *parts)]);
    tbuf_puts(b, "\"");
}

static void gen_value(tbuf *b, int depth)
{
    uint32_t c = depth > 6 ? 3 + rnd(4) : rnd(8);
    switch (c) {
    case 0:
    case 1: {
        tbuf_puts(b, "{");
        ws(b);
        int n = (int)rnd(6);
        for (int i = 0; i < n; i++) {
            if (i) {
                tbuf_puts(b, ",");
                ws(b);
            }
            gen_string(b);
            ws(b);
            tbuf_puts(b, ":");
            ws(b);
            gen_value(b, depth + 1);
            ws(b);
        }
        tbuf_puts(b, "}");
        break;
    }
    case 2: {
        tbuf_puts(b, "[");
        ws(b);
        int n = (int)rnd(5);
        for (int i = 0; i < n; i++) {
            if (i) {
                tbuf_puts(b, ",");
                ws(b);
            }
            gen_value(b, depth + 1);
            ws(b);
        }
        tbuf_puts(b, "]");
        break;
    }
    case 3:
    case 4: gen_string(b); break;
    case 5: tbuf_puts(b, "12345"); break;
    case 6: tbuf_puts(b, "true"); break;
    default: tbuf_puts(b, "null"); break;
    }
}

/* A stream of top-level values: maps and lists, as a watch body holds. */
static void gen_stream(tbuf *b, int values)
{
    for (int i = 0; i < values; i++) {
        ws(b);
        if (rnd(2)) {
            tbuf_puts(b, "{\"type\":\"MODIFIED\",\"object\":");
            gen_value(b, 1);
            tbuf_puts(b, "}");
        } else {
            tbuf_puts(b, "[");
            gen_value(b, 1);
            tbuf_puts(b, "]");
        }
        if (rnd(2))
            tbuf_puts(b, "\n");
    }
}

/* The reference: where each top-level value of s[0..n) ends, read one byte at a time. */
static size_t reference_cuts(const char *s, size_t n, size_t *starts, size_t *ends, size_t max)
{
    size_t k = 0, depth = 0, start = 0;
    int in_str = 0, esc = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (depth == 0 && (c == ' ' || c == '\n' || c == '\r' || c == '\t'))
            continue;
        if (in_str) {
            if (esc)
                esc = 0;
            else if (c == '\\')
                esc = 1;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (depth++ == 0)
                start = i;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            assert_true(k < max);
            starts[k] = start;
            ends[k++] = i + 1;
        }
    }
    return k;
}

typedef struct {
    const char *stream;
    const size_t *starts, *ends;
    size_t n, seen;
} check;

static int on_value(void *ctx, const char *value, size_t len)
{
    check *c = ctx;
    assert_true(c->seen < c->n);
    size_t want = c->ends[c->seen] - c->starts[c->seen];
    if (len != want || memcmp(value, c->stream + c->starts[c->seen], len) != 0)
        fail_msg("value %zu: got %zu bytes %.*s, want %zu bytes %.*s", c->seen, len,
                 (int)(len > 300 ? 300 : len), value, want, (int)(want > 300 ? 300 : want),
                 c->stream + c->starts[c->seen]);
    c->seen++;
    return 0;
}

/* Feeds s in pieces (piece 0: random sizes up to 300) and checks every value against the reference. */
static void feed_and_check(const char *s, size_t n, size_t piece)
{
    size_t max = n + 1, *starts = malloc(max * sizeof *starts), *ends = malloc(max * sizeof *ends);
    assert_non_null(starts);
    assert_non_null(ends);
    check c = {.stream = s, .starts = starts, .ends = ends};
    c.n = reference_cuts(s, n, starts, ends, max);
    tly_jframer *f = tly_jframer_create(0);
    for (size_t i = 0; i < n;) {
        size_t m = piece ? piece : 1 + rnd(300);
        if (m > n - i)
            m = n - i;
        assert_int_equal(tly_jframer_feed(f, s + i, m, on_value, &c), TLY_OK);
        i += m;
    }
    assert_int_equal(c.seen, c.n);
    assert_int_equal(tly_jframer_pending(f), 0);
    tly_jframer_destroy(f);
    free(starts);
    free(ends);
}

static void random_streams(void **state)
{
    (void)state;
    for (int round = 0; round < 300; round++) {
        tbuf b = {0};
        gen_stream(&b, 1 + (int)rnd(20));
        feed_and_check(b.p, b.n, b.n);  /* whole */
        feed_and_check(b.p, b.n, 0);    /* random pieces */
        if (round % 10 == 0)
            feed_and_check(b.p, b.n, 1);  /* a byte at a time */
        feed_and_check(b.p, b.n, 64);
        feed_and_check(b.p, b.n, 63);
        free(b.p);
    }
}

/*
** Backslash runs and quotes at every offset of the 64-byte blocks: a
** prefix of p bytes moves the tricky part over the block boundaries.
*/
static void block_boundaries(void **state)
{
    (void)state;
    /* String bodies (valid JSON): escaped quotes and backslash runs of every parity before the close. */
    static const char *const tricky[] = {
        "\\\"", "\\\\", "\\\\\\\"", "\\\\\\\\", "\\\\\\\\\\\"", "}\\\"{",
        "\\u005c", "\\\\\\\\\\\\", "]\\\\}",
    };
    for (size_t t = 0; t < sizeof tricky / sizeof *tricky; t++) {
        for (size_t p = 0; p < 200; p++) {
            tbuf b = {0};
            tbuf_puts(&b, "{\"k\":\"");
            for (size_t i = 0; i < p; i++)
                tbuf_puts(&b, "x");
            tbuf_puts(&b, tricky[t]);
            tbuf_puts(&b, "\",\"z\":[{\"y\":\"]}\"}]}\n{\"a\":1}");
            feed_and_check(b.p, b.n, b.n);
            feed_and_check(b.p, b.n, 0);
            feed_and_check(b.p, b.n, 17);
            free(b.p);
        }
    }
}

static int count_value(void *ctx, const char *value, size_t len)
{
    (void)value;
    (void)len;
    (*(int *)ctx)++;
    return 0;
}

static void errors(void **state)
{
    (void)state;
    int n = 0;
    tly_jframer *f = tly_jframer_create(0);
    assert_int_equal(tly_jframer_feed(f, " {\"a\":1} x", 10, count_value, &n), TLY_EINVAL);
    assert_int_equal(n, 1);
    tly_jframer_destroy(f);
    /* A value longer than the limit, in blocks and in pieces. */
    char big[400];
    memset(big, 'x', sizeof big);
    memcpy(big, "{\"a\":\"", 6);
    f = tly_jframer_create(100);
    n = 0;
    int rc = TLY_OK;
    for (size_t i = 0; i < sizeof big && rc == TLY_OK; i += 50)
        rc = tly_jframer_feed(f, big + i, 50, count_value, &n);
    assert_int_equal(rc, TLY_ELIMIT);
    assert_int_equal(n, 0);
    tly_jframer_destroy(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_streams),
        cmocka_unit_test(block_boundaries),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
