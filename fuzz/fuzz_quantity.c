/*
** fuzz_quantity.c: libFuzzer target for the quantity module (quantity.h).
**
** The input is split at its first '\n' or ' ' into two texts a and b (b is
** empty when there is no separator). Each is given to tly_qty_parse(); for
** every text that parses the target checks, and abort()s on a violation:
**
**   - tly_qty_format() writes a NUL-terminated canonical text shorter than
**     TLY_QTY_BUFSZ whose length it returns;
**   - the canonical text parses again, to the same value (tly_qty_cmp == 0),
**     and formats to the same canonical text. The one exception is upstream's:
**     a BinarySI whole number that is not a multiple of 1024 prints with no
**     suffix ("1.953125Ki" is "2000"), and that text parses as DecimalSI,
**     whose canonical form may differ ("2000" is "2k"); so for such a value
**     the target checks that the second canonical text is a fixed point;
**   - tly_qty_add(a, tly_qty_neg(a)) succeeds and is zero, and
**     tly_qty_neg(tly_qty_neg(a)) == a;
**   - tly_qty_value() and tly_qty_milli() do not crash, and when both succeed
**     they agree in sign with the quantity;
**   - when both a and b parse: tly_qty_cmp(a, b) == -tly_qty_cmp(b, a), and
**     whenever tly_qty_sub(a, b) succeeds the sign of the difference equals
**     tly_qty_cmp(a, b) (likewise tly_qty_add(a, b) - b == a when both
**     succeed).
**
** tly_qty_literal_int64() is called on both texts whether or not they parse;
** it must not crash, and when it succeeds the text must also parse with
** tly_qty_parse() to the same whole value.
**
** Crashes, ASan reports and UBSan reports (signed overflow in the 128-bit
** arithmetic, say) are caught by the sanitizers themselves.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/error.h"
#include "tally/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reports which property failed, with the input text, then aborts. */
static void fail(const char *what, const char *s, size_t len)
{
    fprintf(stderr, "fuzz_quantity: %s for input \"%.*s\"\n", what, (int)len, s);
    abort();
}

/* Formats q into buf and checks the length contract. */
static size_t format_checked(tly_qty q, char *buf, const char *s, size_t len)
{
    memset(buf, 'X', TLY_QTY_BUFSZ);
    size_t n = tly_qty_format(q, buf, TLY_QTY_BUFSZ);
    if (n >= TLY_QTY_BUFSZ)
        fail("tly_qty_format length >= TLY_QTY_BUFSZ", s, len);
    if (buf[n] != '\0' || strlen(buf) != n)
        fail("tly_qty_format returned length differs from strlen", s, len);
    return n;
}

/* Whether s is an optional '-' and digits only (no suffix, point or exponent). */
static int bare_integer(const char *s)
{
    if (*s == '-')
        s++;
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

/* The single-quantity properties of one text that parsed to q. */
static void check_one(const char *s, size_t len, tly_qty q)
{
    char canon[TLY_QTY_BUFSZ], again[TLY_QTY_BUFSZ];
    size_t n = format_checked(q, canon, s, len);

    tly_qty r;
    int rc = tly_qty_parse(canon, n, &r);
    if (rc != TLY_OK)
        fail("canonical text does not parse", s, len);
    if (tly_qty_cmp(q, r) != 0)
        fail("canonical text parses to a different value", s, len);
    size_t m = format_checked(r, again, s, len);
    if (m != n || memcmp(canon, again, n) != 0) {
        if (!(q.fmt == TLY_QFMT_BINARY_SI && bare_integer(canon))) {
            fprintf(stderr, "fuzz_quantity: canonical \"%s\" reformats as \"%s\"\n", canon,
                    again);
            fail("canonical form is not a fixed point", s, len);
        }
        /* The bare BinarySI case: one more round must be stable. */
        char third[TLY_QTY_BUFSZ];
        tly_qty r2;
        if (tly_qty_parse(again, m, &r2) != TLY_OK || tly_qty_cmp(r2, q) != 0)
            fail("second canonical text does not parse to the same value", s, len);
        size_t k = format_checked(r2, third, s, len);
        if (k != m || memcmp(again, third, m) != 0) {
            fprintf(stderr, "fuzz_quantity: canonical \"%s\" reformats as \"%s\"\n", again,
                    third);
            fail("second canonical form is not a fixed point", s, len);
        }
    }

    tly_qty neg = tly_qty_neg(q), zero;
    if (tly_qty_add(q, neg, &zero) != TLY_OK)
        fail("a + neg(a) overflows", s, len);
    if (!tly_qty_is_zero(zero))
        fail("a + neg(a) is not zero", s, len);
    if (tly_qty_cmp(tly_qty_neg(neg), q) != 0)
        fail("neg(neg(a)) != a", s, len);
    if (tly_qty_sign(neg) != -tly_qty_sign(q))
        fail("sign(neg(a)) != -sign(a)", s, len);

    int64_t v = 0, mv = 0;
    int rv = tly_qty_value(q, &v);
    int rm = tly_qty_milli(q, &mv);
    if (rv == TLY_OK && ((v > 0) - (v < 0)) != tly_qty_sign(q))
        fail("tly_qty_value has the wrong sign", s, len);
    if (rm == TLY_OK && ((mv > 0) - (mv < 0)) != tly_qty_sign(q))
        fail("tly_qty_milli has the wrong sign", s, len);
}

/* The two-quantity properties. */
static void check_pair(const char *s, size_t len, tly_qty a, tly_qty b)
{
    int c = tly_qty_cmp(a, b);
    if (c < -1 || c > 1)
        fail("tly_qty_cmp out of {-1, 0, 1}", s, len);
    if (tly_qty_cmp(b, a) != -c)
        fail("tly_qty_cmp is not antisymmetric", s, len);

    tly_qty d;
    if (tly_qty_sub(a, b, &d) == TLY_OK && tly_qty_sign(d) != c)
        fail("sign of a - b disagrees with tly_qty_cmp(a, b)", s, len);

    tly_qty sum, back;
    if (tly_qty_add(a, b, &sum) == TLY_OK && tly_qty_sub(sum, b, &back) == TLY_OK &&
        tly_qty_cmp(back, a) != 0)
        fail("(a + b) - b != a", s, len);
}

/* tly_qty_literal_int64 must not crash; a success must agree with the parse. */
static void check_literal(const char *s, size_t len)
{
    int64_t v = 0;
    if (tly_qty_literal_int64(s, len, &v) != TLY_OK)
        return;
    tly_qty q;
    if (tly_qty_parse(s, len, &q) != TLY_OK)
        fail("tly_qty_literal_int64 accepts text tly_qty_parse rejects", s, len);
    if (q.nanos != (tly_i128)v * 1000000000)
        fail("tly_qty_literal_int64 disagrees with tly_qty_parse", s, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy, so an overread past either half is an ASan report. */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);

    size_t alen = 0;
    while (alen < size && buf[alen] != '\n' && buf[alen] != ' ')
        alen++;
    const char *as = buf;
    const char *bs = alen < size ? buf + alen + 1 : buf + size;
    size_t blen = alen < size ? size - alen - 1 : 0;

    tly_qty a, b;
    int ra = tly_qty_parse(as, alen, &a);
    int rb = tly_qty_parse(bs, blen, &b);
    if (ra != TLY_OK && ra != TLY_EINVAL && ra != TLY_ERANGE)
        fail("tly_qty_parse returned an unexpected code", as, alen);
    if (rb != TLY_OK && rb != TLY_EINVAL && rb != TLY_ERANGE)
        fail("tly_qty_parse returned an unexpected code", bs, blen);

    if (ra == TLY_OK)
        check_one(as, alen, a);
    if (rb == TLY_OK)
        check_one(bs, blen, b);
    if (ra == TLY_OK && rb == TLY_OK)
        check_pair(buf, size, a, b);
    check_literal(as, alen);
    check_literal(bs, blen);

    free(buf);
    return 0;
}
