/*
** test_jsonparse.c: the native JSON reader (src/jsonparse.c) builds the tree
** the loader's libfyaml path builds.
**
** For every input below, and for every resize review and fuzz seed in the
** repository, and for 20,000 random documents and 20,000 byte-level
** mutations of them, tly_parse_value() and tly_parse_value_fy() must agree:
** both refuse, or both accept with equal trees (types, texts, keys, lines and
** columns). Known differences, each checked here: libfyaml counts a CRLF as
** two lines (lines are not compared for inputs with a CR) and refuses some
** tabs between tokens that JSON allows (such inputs must agree once those
** tabs are spaces).
**
** Also: the same random documents written compact and with whitespace
** everywhere give equal trees but for positions, and the loader's streaming
** path (tly_json_stream, a List's items one at a time) builds each item's
** tree exactly as libfyaml builds it inside the whole document.
*/
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "jsonread.h"
#include "tally/node.h"
#include "tally/nodewrite.h"

#include "jsondiff.h"

/* Inputs libfyaml accepted only with tabs between tokens made spaces. */
static unsigned g_tabs;

/* jsondiff_compare(), counting the tab workarounds. */
static int compare(const char *text, size_t len, char *why, size_t wlen)
{
    bool tabs;
    int r = jsondiff_compare(text, len, why, wlen, &tabs);
    g_tabs += tabs;
    return r;
}

static void expect_agree(const char *text, size_t len, const char *what)
{
    char why[512];
    int r = compare(text, len, why, sizeof why);
    if (r < 0)
        fail_msg("%s: %s (%s)", what, r == -1 ? "only libfyaml accepts it" : why,
                 len < 200 ? text : "long input");
}

static const char *const agree[] = {
    "{}", "[]", "0", "-0", "12", "-3", "1.5", "1e3", "-2.5E-7", "true", "false", "null", "\"\"",
    "\"a\"", "  {\"a\": 1}  ", "\n\n  {\"a\":\n [1, 2.0, \"x\", null, true, {}]}\n",
    "{\"k\": \"tab\\there\", \"q\": \"\\\"\\\\\\/\\b\\f\\n\\r\"}",
    "{\"u\": \"\\u00e9\\u4e2d\\ud83d\\ude00\"}", "{\"é\": \"ü\", \"x\": \"中文\"}",
    "[\"\\u0041\", \"a\\u00e9b\"]", "{\"a\": {\"b\": {\"c\": [[[]]]}}}",
    "{\"dup\": 1, \"dup\": 2}", "{\"a\": 1,}", "[1, 2,]", "[01]", "[+1]", "[.5]", "[1.]",
    "[1e]", "{\"a\" 1}", "{a: 1}", "['x']", "[\"unterminated]", "{\"a\": \"\\x\"}",
    "{\"a\": \"\\u12\"}", "\"a\" \"b\"", "{} {}", "", "   ", "[1 2]", "{\"a\": nul}",
    "{\"a\": truee}", "[\"\\u0000\"]", "{\"a\":\r\n1}", "[\r1]",
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}",
};

static void test_fixed_inputs_agree(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof agree / sizeof *agree; i++)
        expect_agree(agree[i], strlen(agree[i]), agree[i]);
}

/* Not JSON, though a YAML reader might take them: refused. */
static const char *const not_json[] = {
    "[\"a\tb\"]",           /* a raw tab inside a string */
    "{\"a\": 1} # comment",  /* a YAML comment */
    "{a: 1}", "[yes]", "- 1", "'x'", "[1, 2", "{\"a\": .inf}",
};

static void test_not_json_is_refused(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof not_json / sizeof *not_json; i++) {
        tly_arena *a = tly_arena_create(1024);
        if (tly_parse_value(not_json[i], strlen(not_json[i]), a))
            fail_msg("accepted: %s", not_json[i]);
        if (tly_parse_value_fy(not_json[i], strlen(not_json[i]), a))
            print_message("libfyaml's JSON mode accepts: %s\n", not_json[i]);
        tly_arena_destroy(a);
    }
}

static void test_positions_and_escapes(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(1024);
    const char *t = "{\n  \"a\": \"x\\ny\",\n  \"b\": [1, -2.5]\n}";
    tly_node *n = tly_parse_value(t, strlen(t), a);
    assert_non_null(n);
    const tly_node *x = tly_node_get(n, "a");
    assert_string_equal(x->str, "x\ny");
    assert_int_equal(x->line, 2);
    assert_int_equal(x->col, 8);
    assert_int_equal(x->kline, 2);
    assert_int_equal(x->kcol, 3);
    const tly_node *b = tly_node_get(n, "b");
    assert_int_equal(b->type, TLY_N_SEQ);
    assert_int_equal(tly_node_at(b, 0)->type, TLY_N_INT);
    assert_int_equal(tly_node_at(b, 1)->type, TLY_N_FLOAT);
    assert_int_equal(tly_node_at(b, 1)->col, 12);
    /* A lone surrogate is refused, as the loader refuses it; a pair is one character. */
    assert_null(tly_parse_value("\"\\ud800x\"", 9, a));
    tly_node *s = tly_parse_value("\"\\ud83d\\ude00\"", 14, a);
    assert_non_null(s);
    assert_string_equal(s->str, "\xF0\x9F\x98\x80");
    tly_arena_destroy(a);
}

static void test_limits(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(1 << 16);
    char deep[300];
    int d = 0;
    for (; d < 65; d++)
        deep[d] = '[';
    for (int i = 0; i < 65; i++)
        deep[d++] = ']';
    assert_null(tly_parse_value(deep, (size_t)d, a));
    assert_non_null(tly_parse_value(deep + 1, (size_t)d - 2, a)); /* 64 levels */
    tly_arena_destroy(a);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 > cap) {
            cap = (cap + 4096) * 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Every file directly in dir (and dir/<case>/review.json when nested). */
static unsigned compare_dir(const char *dir, const char *nested)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    unsigned seen = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s%s%s", dir, e->d_name, nested ? "/" : "", nested ? nested : "");
        size_t len;
        char *text = read_all(path, &len);
        if (!text)
            continue;
        expect_agree(text, len, path);
        free(text);
        seen++;
    }
    closedir(d);
    return seen;
}

static void test_repository_inputs_agree(void **state)
{
    (void)state;
    unsigned n = compare_dir(TALLY_SOURCE_DIR "/tests/resize", "review.json");
    assert_true(n >= 60);
    n += compare_dir(TALLY_SOURCE_DIR "/fuzz/corpus/admit", NULL);
    n += compare_dir(TALLY_SOURCE_DIR "/fuzz/corpus/annotations", NULL);
    print_message("%u files compared\n", n);
}

/* ---- random documents ---------------------------------------------------- */

typedef tbuf buf_t;

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Whitespace drawn from *w, or none (compact) when w is NULL. */
static void ws(buf_t *b, uint64_t *w)
{
    static const char *const spaces[] = {"", "", "", " ", "\n", "  ", "\r\n", "\t", "\n    "};
    if (!w)
        return;
    const char *x = spaces[rnd(w) % 9];
    tbuf_put(b, x, strlen(x));
}

static void gen_string(buf_t *b, uint64_t *s)
{
    static const char *const parts[] = {"a", "Bc", "node-1", "é", "中", "\\n", "\\\"", "\\\\", "\\/",
                                        "\\u00e9", "\\ud83d\\ude00", "\\t", " ", "0.5", "cpu", "-"};
    tbuf_put(b, "\"", 1);
    for (uint64_t i = rnd(s) % 5; i > 0; i--) {
        const char *x = parts[rnd(s) % 16];
        tbuf_put(b, x, strlen(x));
    }
    tbuf_put(b, "\"", 1);
}

/* A random value: its shape drawn from *s, the whitespace in it from *w (NULL: none). */
static void gen_value(buf_t *b, uint64_t *s, uint64_t *w, int depth)
{
    uint64_t k = rnd(s) % (depth > 4 ? 6 : 8);
    static const char *const words[] = {"0", "-0", "17", "-3", "1.25", "6e2", "-1E-3", "true",
                                        "false", "null", "100000000000000000000"};
    if (k < 3) {
        gen_string(b, s);
    } else if (k < 6) {
        const char *word = words[rnd(s) % 11];
        tbuf_put(b, word, strlen(word));
    } else if (k == 6) {
        tbuf_put(b, "{", 1);
        uint64_t n = rnd(s) % 4;
        for (uint64_t i = 0; i < n; i++) {
            ws(b, w);
            char key[32];
            snprintf(key, sizeof key, "\"k%llu\"", (unsigned long long)i);
            tbuf_put(b, key, strlen(key));
            ws(b, w);
            tbuf_put(b, ":", 1);
            ws(b, w);
            gen_value(b, s, w, depth + 1);
            ws(b, w);
            if (i + 1 < n)
                tbuf_put(b, ",", 1);
        }
        tbuf_put(b, "}", 1);
    } else {
        tbuf_put(b, "[", 1);
        uint64_t n = rnd(s) % 4;
        for (uint64_t i = 0; i < n; i++) {
            ws(b, w);
            gen_value(b, s, w, depth + 1);
            ws(b, w);
            if (i + 1 < n)
                tbuf_put(b, ",", 1);
        }
        tbuf_put(b, "]", 1);
    }
}

static void test_random_documents_agree(void **state)
{
    (void)state;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    unsigned accepted = 0, mutated_agree = 0, strict = 0;
    for (int i = 0; i < 20000; i++) {
        buf_t b = {0};
        ws(&b, &s);
        gen_value(&b, &s, &s, 0);
        ws(&b, &s);
        char why[512];
        int r = compare(b.p, b.n, why, sizeof why);
        if (r != 1)
            fail_msg("document %d: %s: %s", i, r == 0 ? "both refuse" : r == -1 ? "only libfyaml accepts" : why,
                     b.p);
        accepted++;
        /* One byte changed, dropped or duplicated. */
        size_t at = b.n ? rnd(&s) % b.n : 0;
        static const char pool[] = "{}[]\":,\\ \n0e-.tfnu\t\x01\xc3";
        uint64_t how = rnd(&s) % 3;
        if (b.n && how == 0)
            b.p[at] = pool[rnd(&s) % (sizeof pool - 1)];
        else if (b.n && how == 1)
            memmove(b.p + at, b.p + at + 1, b.n-- - at);
        else if (b.n) {
            char c = b.p[at];  /* tbuf_put() may move the buffer */
            tbuf_put(&b, &c, 1);
        }
        r = compare(b.p, b.n, why, sizeof why);
        if (r == -2)
            fail_msg("mutation of document %d: %s: %s", i, why, b.p);
        strict += r == -1;
        mutated_agree += r >= 0;
        free(b.p);
    }
    print_message("%u random documents agree; %u mutations agree, %u refused only by the strict "
                  "reader; %u needed libfyaml's tab quirk worked around\n", accepted, mutated_agree,
                  strict, g_tabs);
}

/* Native trees of text, which must parse. */
static tly_node *must_parse(const char *text, size_t len, tly_arena *a)
{
    tly_node *n = tly_parse_value(text, len, a);
    if (!n)
        fail_msg("refused: %s", text);
    return n;
}

static void test_compact_and_spaced_agree(void **state)
{
    (void)state;
    for (uint64_t i = 1; i <= 5000; i++) {
        uint64_t s1 = i * 0x9E3779B97F4A7C15ull, s2 = s1, w = i;
        buf_t c = {0}, sp = {0};
        gen_value(&c, &s1, NULL, 0);
        gen_value(&sp, &s2, &w, 0);
        tly_arena *a = tly_arena_create(4096);
        char why[512];
        if (!jsondiff_same_at(must_parse(c.p, c.n, a), must_parse(sp.p, sp.n, a), JD_NO_POSITIONS,
                              why, sizeof why))
            fail_msg("%s\ncompact: %s\nspaced: %s", why, c.p, sp.p);
        tly_arena_destroy(a);
        free(c.p);
        free(sp.p);
    }
}

/* ---- the streaming path -------------------------------------------------- */

typedef struct {
    tly_arena *keep;       /* copies of the trees handed over */
    tly_node *got[64];
    unsigned n, errors;
} collected;

static void collect_object(void *ctx, const tly_node *tree, size_t end)
{
    collected *c = ctx;
    (void)end;
    assert_true(c->n < 64);
    c->got[c->n++] = tly_node_copy(tree, c->keep);
}

static void collect_error(void *ctx, uint32_t line, uint32_t col, const char *fmt, va_list ap)
{
    (void)line, (void)col, (void)fmt, (void)ap;
    ((collected *)ctx)->errors++;
}

/* Streams text; every item must equal libfyaml's tree of the same item in the whole document. */
static void expect_stream_agrees(const char *text, size_t len, unsigned items)
{
    collected c = {.keep = tly_arena_create(4096)};
    tly_arena *doc = tly_arena_create(4096), *obj = tly_arena_create(4096);
    tly_jsink sink = {.ctx = &c, .object = collect_object, .error = collect_error};
    assert_int_equal(tly_json_stream(text, len, doc, obj, &sink), 1);
    assert_int_equal(c.errors, 0);
    const tly_node *whole = tly_parse_value_fy(text, len, c.keep);
    if (!whole)
        fail_msg("libfyaml refuses: %s", text);
    const tly_node *list = tly_node_get(whole, "items");
    assert_int_equal(c.n, items);
    bool cr = memchr(text, '\r', len) != NULL;
    char why[512];
    for (unsigned i = 0; i < items; i++)
        if (!jsondiff_same(c.got[i], tly_node_at(list, i), cr, why, sizeof why))
            fail_msg("item %u: %s\n%s", i, why, text);
    tly_arena_destroy(c.keep);
    tly_arena_destroy(doc);
    tly_arena_destroy(obj);
}

static void test_streamed_items_agree(void **state)
{
    (void)state;
    uint64_t s = 42;
    for (int i = 0; i < 3000; i++) {
        buf_t b = {0};
        uint64_t w = rnd(&s), *wp = i % 3 ? &w : NULL;
        tbuf_put(&b, "{\"apiVersion\": \"v1\",", strlen("{\"apiVersion\": \"v1\","));
        ws(&b, wp);
        tbuf_put(&b, "\"items\":", strlen("\"items\":"));
        ws(&b, wp);
        tbuf_put(&b, "[", 1);
        unsigned n = (unsigned)(rnd(&s) % 6);
        for (unsigned k = 0; k < n; k++) {
            ws(&b, wp);
            gen_value(&b, &s, wp, 1);
            ws(&b, wp);
            if (k + 1 < n)
                tbuf_put(&b, ",", 1);
        }
        tbuf_put(&b, "], \"kind\": \"List\", \"metadata\":", strlen("], \"kind\": \"List\", \"metadata\":"));
        gen_value(&b, &s, wp, 1);
        tbuf_put(&b, "}", 1);
        ws(&b, wp);
        expect_stream_agrees(b.p, b.n, n);
        free(b.p);
    }
}

/*
** tly_utf8_invalid_at finds the first bad byte wherever it is: in or after
** a run of ASCII read 64 or 8 bytes at a time, and after valid two-, three-
** and four-byte characters; a text that is all valid gives its length.
*/
static void test_utf8_check_finds_the_first_bad_byte(void **state)
{
    (void)state;
    static const char *const bad[] = {"\xff", "\xc0\xaf", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                      "\xc3"};
    static const char *const good[] = {"a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    char buf[400];
    for (size_t at = 0; at < 260; at++)
        for (size_t g = 0; g < sizeof good / sizeof *good; g++)
            for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
                /* at bytes of ASCII, one good character, then a bad sequence and ASCII after it */
                memset(buf, 'x', at);
                size_t n = at, gl = strlen(good[g]), bl = strlen(bad[b]);
                memcpy(buf + n, good[g], gl);
                n += gl;
                size_t want = n;
                memcpy(buf + n, bad[b], bl);
                n += bl;
                if (b + 1 < sizeof bad / sizeof *bad) {
                    memset(buf + n, 'y', 70);
                    n += 70;
                }
                assert_int_equal(tly_utf8_invalid_at(buf, n), want);
                assert_int_equal(tly_utf8_invalid_at(buf, want), want);
            }
}

/* t parsed by f, written back as compact JSON into a static buffer ("REFUSED" if refused). */
static const char *reparse(tly_node *(*f)(const char *, size_t, tly_arena *), const char *t)
{
    static char out[4096];
    tly_arena *a = tly_arena_create(4096);
    tly_node *n = f(t, strlen(t), a);
    FILE *m = fmemopen(out, sizeof out, "w");
    assert_non_null(m);
    if (n)
        tly_node_write_json(m, n);
    else
        fputs("REFUSED", m);
    fclose(m);
    tly_arena_destroy(a);
    return out;
}

/*
** tly_parse_api_value (reviews, watch events): metadata.managedFields, at any
** depth, is skipped but still checked as JSON; a managedFields anywhere else
** is kept, and the rest of the tree is tly_parse_value's.
*/
static void test_api_value_skips_managed_fields(void **state)
{
    (void)state;
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"{\"object\":{\"metadata\":{\"name\":\"p\",\"managedFields\":[{\"manager\":\"kubelet\","
         "\"fieldsV1\":{\"f:status\":{\"f:phase\":{}}}}],\"uid\":\"u\"},\"spec\":{}}}",
         "{\"object\":{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},\"spec\":{}}}"},
        {"{\"metadata\":{\"managedFields\":[]}}", "{\"metadata\":{}}"},
        {"{\"metadata\":{\"managedFields\":1,\"name\":\"x\"},\"spec\":{\"template\":{\"metadata\":"
         "{\"managedFields\":{\"a\":[1,{\"b\":null}]}}}}}",
         "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"template\":{\"metadata\":{}}}}"},
        /* not under metadata, or metadata that is no map: kept */
        {"{\"spec\":{\"managedFields\":1}}", "{\"spec\":{\"managedFields\":1}}"},
        {"{\"metadata\":[{\"managedFields\":1}]}", "{\"metadata\":[{\"managedFields\":1}]}"},
        {"{\"metadata\":\"s\",\"x\":{\"managedFields\":2}}", "{\"metadata\":\"s\",\"x\":{\"managedFields\":2}}"},
        {"{\"metadata\":{\"labels\":{\"managedFields\":\"v\"}}}", "{\"metadata\":{\"labels\":{\"managedFields\":\"v\"}}}"},
        /* skipped, not unread: bad JSON inside is still a refusal */
        {"{\"metadata\":{\"managedFields\":[1,]}}", "REFUSED"},
        {"{\"metadata\":{\"managedFields\":\"\\x\"}}", "REFUSED"},
        {"{\"metadata\":{\"managedFields\":[}", "REFUSED"},
        {"{\"metadata\":{\"managedFields\":1 \"name\":\"x\"}}", "REFUSED"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[4096];
        snprintf(got, sizeof got, "%s", reparse(tly_parse_api_value, cases[i].in));
        if (strcmp(got, cases[i].want))
            fail_msg("case %zu: %s gives %s, want %s", i, cases[i].in, got, cases[i].want);
    }
    /* tly_parse_value keeps every member, as libfyaml does */
    assert_string_equal(reparse(tly_parse_value, cases[0].in),
                        "{\"object\":{\"metadata\":{\"name\":\"p\",\"managedFields\":[{\"manager\":\"kubelet\","
                        "\"fieldsV1\":{\"f:status\":{\"f:phase\":{}}}}],\"uid\":\"u\"},\"spec\":{}}}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_inputs_agree),
        cmocka_unit_test(test_not_json_is_refused),
        cmocka_unit_test(test_positions_and_escapes),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_repository_inputs_agree),
        cmocka_unit_test(test_random_documents_agree),
        cmocka_unit_test(test_compact_and_spaced_agree),
        cmocka_unit_test(test_streamed_items_agree),
        cmocka_unit_test(test_utf8_check_finds_the_first_bad_byte),
        cmocka_unit_test(test_api_value_skips_managed_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
