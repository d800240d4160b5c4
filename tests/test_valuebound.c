/*
** test_valuebound.c: the bound on a body's JSON values (valuebound.h),
** against the byte-at-a-time reference it replaced (server.c's values_bound
** of 46f7132, which skipped strings with memchr), on random bodies made of
** the bytes that matter: quotes, backslashes, separators, line breaks.
*/
#include "testutil.h"

#include "tally/valuebound.h"

/* The reference: 46f7132's values_bound, as it was. */
static size_t reference_bound(const char *s, size_t n)
{
    /*
    ** Byte classes: a value opener or separator (1), one only in YAML (2), a quote (3). Most
    ** of a review's bytes are inside strings, which are skipped with memchr to their closing
    ** quote: a quote after an odd run of backslashes is escaped, and the string goes on.
    */
    static const unsigned char cls[256] = {[','] = 1, ['['] = 1, ['{'] = 1,
                                           ['\n'] = 2, [':'] = 2, ['"'] = 3};
    size_t count = 1;
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    unsigned counted = i < n && s[i] != '{' && s[i] != '[' ? 2 : 1; /* highest class counted */
    while (i < n) {
        unsigned k = cls[(unsigned char)s[i]];
        if (k == 0 || (k != 3 && k > counted)) {
            i++;
            continue;
        }
        if (k != 3) {
            count++;
            i++;
            continue;
        }
        size_t j = i + 1;
        for (;;) {
            const char *q = memchr(s + j, '"', n - j);
            if (!q)
                return count; /* an unterminated string: nothing after it counts */
            size_t at = (size_t)(q - s), bs = 0;
            while (at - bs > i + 1 && s[at - bs - 1] == '\\')
                bs++;
            j = at + 1;
            if (bs % 2 == 0)
                break;
        }
        i = j;
    }
    return count;
}

static const char alphabet[] = "\"\"\"\\\\\\,,[{]}:\n a1\t\r";

/* A body of n bytes from the alphabet, sometimes after a '{' or a '[' (JSON) or not (YAML). */
static void random_body(unsigned *seed, char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = alphabet[rand_r(seed) % (sizeof alphabet - 1)];
    if (n && rand_r(seed) % 2) {
        size_t at = (size_t)(rand_r(seed) % 3);
        buf[at < n ? at : 0] = rand_r(seed) % 2 ? '{' : '[';
    }
}

static void test_random_bodies_match_the_reference(void **state)
{
    (void)state;
    unsigned seed = 7;
    char buf[700];
    for (int round = 0; round < 200000; round++) {
        size_t n = (size_t)(rand_r(&seed) % (round % 10 == 0 ? 700 : 200));
        random_body(&seed, buf, n);
        size_t want = reference_bound(buf, n), got = tly_values_bound(buf, n);
        if (want != got)
            fail_msg("round %d, %zu bytes: %zu, reference %zu", round, n, got, want);
    }
}

/* Sparse backslashes: most 64-byte blocks take the fast way, some the byte loop, strings across both. */
static void test_long_bodies_match_the_reference(void **state)
{
    (void)state;
    unsigned seed = 11;
    size_t n = 1 << 16;
    char *buf = malloc(n);
    assert_non_null(buf);
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < n; i++) {
            unsigned r = (unsigned)rand_r(&seed) % 1000;
            buf[i] = r < 40 ? '"' : r < 40 + (unsigned)round / 20 ? '\\' : r < 120 ? ',' : r < 140 ? ':' : r < 150 ? '\n'
                     : r < 160 ? '{' : 'x';
        }
        if (round % 2)
            buf[0] = '{';
        size_t len = n - (size_t)(rand_r(&seed) % 200);
        assert_int_equal(tly_values_bound(buf, len), reference_bound(buf, len));
    }
    free(buf);
}

static void test_known_bounds(void **state)
{
    (void)state;
    const char *review = "{\"a\":[1,2,{\"b\":\"x,y\\\",z\"}],\"c\":\"\\\\\",\"d\":null}";
    /* 1 + the separators outside strings: { [ , , { , , (the ',' inside strings do not count). */
    assert_int_equal(tly_values_bound(review, strlen(review)), 8);
    assert_int_equal(tly_values_bound("", 0), 1);
    assert_int_equal(tly_values_bound("a: 1\nb: [2, 3]\n", 16), 7);  /* YAML: line breaks and colons count */
    assert_int_equal(tly_values_bound("{\"never ends, [", 15), 2);   /* an unterminated string ends it */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_bodies_match_the_reference),
        cmocka_unit_test(test_long_bodies_match_the_reference),
        cmocka_unit_test(test_known_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
