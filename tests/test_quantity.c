/*
** test_quantity.c: tests for src/quantity.c (Kubernetes quantities).
**
** Two kinds of test live here.
**
**  - Conformance: every row of the upstream vectors
**    (tests/vectors/quantity-*.tsv) is read exactly as stored (no
**    trimming: an input may be empty or hold spaces) and checked. A missing
**    file or a file without rows fails the test; a bad row is reported with
**    its line number and all rows are checked before the test fails.
**
**  - Specification: one test per rule of docs/quantity.md, written so that
**    the test reads as the rule (rounding, the binary cap, the range limit,
**    result formats, Value/MilliValue, the AsInt64 literal rule, ...).
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/error.h"
#include "tally/quantity.h"

#ifndef TALLY_VECTOR_DIR
#error "TALLY_VECTOR_DIR must name tests/vectors (CMake defines it)"
#endif

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

/* Parses s (NUL-terminated) and fails the test if that does not succeed. */
static tly_qty must_parse(const char *s)
{
    tly_qty q;
    int rc = tly_qty_parse_str(s, &q);

    if (rc != TLY_OK)
        fail_msg("parse \"%s\": %s", s, tly_strerror(rc));
    return q;
}

/* The canonical text of q in a static buffer (one call per expression). */
static const char *canon(tly_qty q)
{
    static char buf[TLY_QTY_BUFSZ];

    tly_qty_format(q, buf, sizeof buf);
    return buf;
}

/* Asserts that parsing `in` gives the canonical text `want`. */
static void assert_canon(const char *in, const char *want)
{
    tly_qty q = must_parse(in);
    const char *got = canon(q);

    if (strcmp(got, want) != 0)
        fail_msg("\"%s\": canonical \"%s\", want \"%s\"", in, got, want);
}

/* Asserts that parsing in[0..len) fails with exactly `code`. */
static void assert_parse_fails_n(const char *in, size_t len, int code)
{
    tly_qty q = {0, 0};
    int rc = tly_qty_parse(in, len, &q);

    if (rc != code)
        fail_msg("\"%.*s\": parse returned %d (%s), want %d (%s)", (int)len, in ? in : "", rc,
                 tly_strerror(rc), code, tly_strerror(code));
}

/* Asserts that parsing the NUL-terminated `in` fails with exactly `code`. */
static void assert_parse_fails(const char *in, int code)
{
    assert_parse_fails_n(in, strlen(in), code);
}

/* a op b as canonical text, or "ERROR". */
static const char *arith(const char *a, const char *b, char op)
{
    static char buf[TLY_QTY_BUFSZ];
    tly_qty r;
    int rc = op == '+' ? tly_qty_add(must_parse(a), must_parse(b), &r)
                       : tly_qty_sub(must_parse(a), must_parse(b), &r);

    if (rc != TLY_OK)
        return "ERROR";
    tly_qty_format(r, buf, sizeof buf);
    return buf;
}

/* ---------------------------------------------------------------------- */
/* Conformance vectors                                                    */
/* ---------------------------------------------------------------------- */

/* One row of a TSV file: NUL-terminated fields with their exact lengths. */
typedef struct {
    const char *file;
    size_t line;
    char *f[4];
    size_t len[4];
} row;

/* Checks one row; returns the number of failed assertions (0 or more). */
typedef int (*row_check)(const row *r);

static int report(const row *r, const char *what, const char *got, const char *want)
{
    print_error("%s:%zu: %s: got \"%s\", want \"%s\"\n", r->file, r->line, what, got, want);
    return 1;
}

/*
** Reads tests/vectors/<file>, skips the "# " header line, splits
** each further line (minus its "\n") at TABs into exactly ncols fields, and
** runs check on it. Fails if the file is missing, has no header, has a row
** with the wrong number of fields, has no rows, or any row fails.
*/
static void run_vectors(const char *file, size_t ncols, row_check check)
{
    char path[4096];
    char *line = NULL;
    size_t cap = 0, rows = 0, lineno = 0;
    int failures = 0;
    ssize_t n;
    FILE *fp;

    snprintf(path, sizeof path, "%s/%s", TALLY_VECTOR_DIR, file);
    fp = fopen(path, "rb");
    if (fp == NULL)
        fail_msg("cannot open vector file %s: %s", path, strerror(errno));

    while ((n = getline(&line, &cap, fp)) != -1) {
        row r;
        size_t len = (size_t)n, k = 0, start = 0, i;

        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (lineno == 1) {
            if (len < 2 || line[0] != '#' || line[1] != ' ') {
                free(line);
                fclose(fp);
                fail_msg("%s:1: the first line must be a \"# \" header", path);
            }
            continue;
        }
        memset(&r, 0, sizeof r);
        r.file = file;
        r.line = lineno;
        for (i = 0; i <= len; i++) {
            if (i < len && line[i] != '\t')
                continue;
            if (k < ncols) {
                r.f[k] = line + start;
                r.len[k] = i - start;
            }
            k++;
            line[i] = '\0';
            start = i + 1;
        }
        if (k != ncols) {
            free(line);
            fclose(fp);
            fail_msg("%s:%zu: %zu fields, want %zu", path, lineno, k, ncols);
        }
        failures += check(&r);
        rows++;
    }
    free(line);
    fclose(fp);
    print_message("%s: %zu rows checked, %d failed\n", file, rows, failures);
    if (rows == 0)
        fail_msg("%s has no rows", path);
    assert_int_equal(failures, 0);
}

/* Parses field i of r, or returns false (and reports) if it does not parse. */
static bool row_parse(const row *r, int i, tly_qty *q, int *failures)
{
    int rc = tly_qty_parse(r->f[i], r->len[i], q);

    if (rc != TLY_OK) {
        *failures += report(r, "parse operand", tly_strerror(rc), r->f[i]);
        return false;
    }
    return true;
}

/* quantity-parse.tsv: input -> canonical text, or ERROR. */
static int check_parse_row(const row *r)
{
    char buf[TLY_QTY_BUFSZ], again[TLY_QTY_BUFSZ];
    tly_qty q, q2;
    int rc = tly_qty_parse(r->f[0], r->len[0], &q);

    if (strcmp(r->f[1], "ERROR") == 0)
        return rc == TLY_OK ? report(r, r->f[0], canon(q), "ERROR") : 0;
    if (rc != TLY_OK)
        return report(r, r->f[0], "ERROR", r->f[1]);
    tly_qty_format(q, buf, sizeof buf);
    if (strcmp(buf, r->f[1]) != 0)
        return report(r, r->f[0], buf, r->f[1]);
    /* The canonical text parses back to the same value and the same text. */
    if (tly_qty_parse_str(buf, &q2) != TLY_OK || q2.nanos != q.nanos)
        return report(r, "reparse of canonical", "a different value", buf);
    tly_qty_format(q2, again, sizeof again);
    if (strcmp(again, buf) != 0)
        return report(r, "reparse of canonical", again, buf);
    return 0;
}

/* quantity-cmp.tsv: a, b -> Cmp(a, b); Cmp(b, a) must be its negation. */
static int check_cmp_row(const row *r)
{
    tly_qty a, b;
    int failures = 0, want = atoi(r->f[2]);
    char got[8];

    if (!row_parse(r, 0, &a, &failures) || !row_parse(r, 1, &b, &failures))
        return failures;
    snprintf(got, sizeof got, "%d", tly_qty_cmp(a, b));
    if (strcmp(got, r->f[2]) != 0)
        failures += report(r, "cmp", got, r->f[2]);
    if (tly_qty_cmp(b, a) != -want)
        failures += report(r, "cmp reversed", "not the negation", r->f[2]);
    return failures;
}

/* quantity-add.tsv and quantity-sub.tsv: a, b -> canonical a op b. */
static int check_arith_row(const row *r, char op)
{
    char buf[TLY_QTY_BUFSZ];
    tly_qty a, b, c;
    int failures = 0, rc;

    if (!row_parse(r, 0, &a, &failures) || !row_parse(r, 1, &b, &failures))
        return failures;
    rc = op == '+' ? tly_qty_add(a, b, &c) : tly_qty_sub(a, b, &c);
    if (rc != TLY_OK)
        snprintf(buf, sizeof buf, "ERROR");
    else
        tly_qty_format(c, buf, sizeof buf);
    if (strcmp(buf, r->f[2]) != 0)
        failures += report(r, op == '+' ? "add" : "sub", buf, r->f[2]);
    return failures;
}

static int check_add_row(const row *r)
{
    return check_arith_row(r, '+');
}

static int check_sub_row(const row *r)
{
    return check_arith_row(r, '-');
}

/* quantity-value.tsv: input -> Value(), MilliValue() (or ERROR). */
static int check_value_row(const row *r)
{
    char buf[32];
    tly_qty q;
    int64_t v;
    int failures = 0;

    if (!row_parse(r, 0, &q, &failures))
        return failures;
    if (tly_qty_value(q, &v) == TLY_OK)
        snprintf(buf, sizeof buf, "%" PRId64, v);
    else
        snprintf(buf, sizeof buf, "ERROR");
    if (strcmp(buf, r->f[1]) != 0)
        failures += report(r, "value", buf, r->f[1]);
    if (tly_qty_milli(q, &v) == TLY_OK)
        snprintf(buf, sizeof buf, "%" PRId64, v);
    else
        snprintf(buf, sizeof buf, "ERROR");
    if (strcmp(buf, r->f[2]) != 0)
        failures += report(r, "milli", buf, r->f[2]);
    return failures;
}

static void test_vectors_parse(void **state)
{
    (void)state;
    run_vectors("quantity-parse.tsv", 2, check_parse_row);
}

static void test_vectors_cmp(void **state)
{
    (void)state;
    run_vectors("quantity-cmp.tsv", 3, check_cmp_row);
}

static void test_vectors_add(void **state)
{
    (void)state;
    run_vectors("quantity-add.tsv", 3, check_add_row);
}

static void test_vectors_sub(void **state)
{
    (void)state;
    run_vectors("quantity-sub.tsv", 3, check_sub_row);
}

static void test_vectors_value(void **state)
{
    (void)state;
    run_vectors("quantity-value.tsv", 3, check_value_row);
}

/* ---------------------------------------------------------------------- */
/* Specification                                                          */
/* ---------------------------------------------------------------------- */

/* Precision is 1n: anything finer rounds away from zero, never to zero. */
/*
** The plain forms ("500m", "4Gi": digits and one suffix) are read by a
** short path; "+" in front sends the same value the long way. Both must
** agree on every digit count up to the 18 the short path takes, on the 19
** and 20 it leaves, every suffix, leading zeros, and binary values past
** the cap.
*/
static void test_plain_forms_read_as_the_long_way(void **state)
{
    (void)state;
    static const char *const sufs[] = {"", "m", "k", "M", "G", "Ki", "Mi", "Gi", "n", "u", "T", "Ti", "e3", "E"};
    static const char *const digits[] = {"0", "1", "7", "10", "999", "0500", "123456789",
                                         "999999999999999999", "1000000000000000000",
                                         "12345678901234567890", "9223372036854775807", "8589934592"};
    for (size_t d = 0; d < sizeof digits / sizeof *digits; d++)
        for (size_t k = 0; k < sizeof sufs / sizeof *sufs; k++) {
            char plain[64], plus[72];
            snprintf(plain, sizeof plain, "%s%s", digits[d], sufs[k]);
            snprintf(plus, sizeof plus, "+%s", plain);
            tly_qty a = {0}, b = {0};
            int ra = tly_qty_parse_str(plain, &a), rb = tly_qty_parse_str(plus, &b);
            assert_int_equal(ra, rb);
            if (ra != TLY_OK)
                continue;
            if (a.nanos != b.nanos || a.fmt != b.fmt)
                fail_msg("%s and %s differ", plain, plus);
        }
}

static void test_rounds_away_from_zero_at_1n(void **state)
{
    (void)state;
    assert_canon("3.001n", "4n");
    assert_canon("-3.001n", "-4n");
    assert_canon("0.1m", "100u");
    assert_canon("0.9n", "1n");
    assert_canon("-0.9n", "-1n");
    assert_canon("1e-18", "1e-9");
    assert_canon("0.000000000000000000000000000000000000000000001", "1n");
    assert_canon("-0.000000000000000000000000000000000000000000001", "-1n");
    /* Exact values are not rounded. */
    assert_canon("3n", "3n");
    assert_canon("1.000000001", "1000000001n");
    /* A fraction of a binary unit rounds the same way. */
    assert_canon("0.000000000001Ki", "2n");
    assert_canon("-0.000000000001Ki", "-2n");
    /* Zero stays zero, whatever its digits or exponent. */
    assert_canon("0.000000000000000000000", "0");
    assert_canon("-0e-99", "0");
}

/* A BinarySI value beyond 2^63-1 units is capped there (sign kept). */
static void test_binary_cap_at_2_63_minus_1(void **state)
{
    tly_qty q;
    int64_t v;

    (void)state;
    assert_canon("9Ei", "9223372036854775807");
    assert_canon("-9Ei", "-9223372036854775807");
    assert_canon("8Ei", "9223372036854775807"); /* 2^63 is one too many */
    assert_canon("7Ei", "7Ei");
    assert_canon("9223372036854775807Ki", "9223372036854775807");
    /* Even far beyond 128 bits the cap applies: no error, no wrap. */
    assert_canon("100000000000000000000000000000000000000000000000000Ki",
                 "9223372036854775807");
    q = must_parse("9Ei");
    assert_int_equal(q.fmt, TLY_QFMT_BINARY_SI);
    assert_int_equal(tly_qty_value(q, &v), TLY_OK);
    assert_true(v == INT64_MAX);
    /* Decimal values are not capped. */
    assert_canon("12E", "12E");
    assert_canon("9223372036854775808", "9223372036854775808");
}

/* A BinarySI value strictly between -1 and 1 (not 0) becomes DecimalSI. */
static void test_binary_below_one_becomes_decimal(void **state)
{
    (void)state;
    assert_int_equal(must_parse("0.0001Ki").fmt, TLY_QFMT_DECIMAL_SI);
    assert_canon("0.0001Ki", "102400u");
    assert_int_equal(must_parse("-0.0001Ki").fmt, TLY_QFMT_DECIMAL_SI);
    assert_int_equal(must_parse("0.5Ki").fmt, TLY_QFMT_BINARY_SI); /* 512 >= 1 */
    assert_int_equal(must_parse("0Ki").fmt, TLY_QFMT_BINARY_SI);   /* zero keeps it */
}

/* The grammar: sign, digits, optional '.' and digits, then the suffix. */
static void test_grammar_accepts(void **state)
{
    (void)state;
    assert_canon("1", "1");
    assert_canon("+1", "1");
    assert_canon("007", "7");
    assert_canon("1.", "1");
    assert_canon(".5", "500m");
    assert_canon(".", "0");  /* no digits at all is 0, as upstream */
    assert_canon("-.", "0");
    assert_canon("-", "0");  /* a lone sign is 0, as upstream's scanner */
    assert_canon("+", "0");
    assert_canon("1.G", "1G");
    assert_canon("1E", "1E");        /* the suffix E (10^18) */
    assert_canon("1E3", "1e3");      /* an exponent */
    assert_canon("1e+3", "1e3");
    assert_canon("1e-3", "1e-3");
    assert_canon("1e003", "1e3");
    assert_canon("1e0", "1");
    assert_canon("1Ki", "1Ki");
    /* A suffix with no number before it is 0, as upstream's scanner. */
    assert_canon("Ki", "0");
    assert_canon("e3", "0");
    assert_canon("-m", "0");
}

static void test_grammar_rejects(void **state)
{
    static const char *const bad[] = {
        "", " 1", "1 ", " ", "\t1", "1\n", "1.1.M", "0.1mi", "0.1am", "aoeu", ".5i", "1i",
        "-3.01i", "-3.01e-", "1+1.0M", "1e", "1e+", "1e-", "i", "1K", "1ki",
        "1KI", "1E3i", "1Ki5", "1ee3", "1e3.5", "1e0x10", "1_000", "--1", "+-1",
        "1,5", "0x10", "inf", "NaN", "1k1",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_parse_fails(bad[i], TLY_EINVAL);
    /* The length is what counts: an embedded NUL is just a bad character. */
    assert_parse_fails_n("1\0k", 3, TLY_EINVAL);
    assert_parse_fails_n(NULL, 0, TLY_EINVAL);
}

/*
** The magnitude limit is (2^127-1) nano-units. Beyond it parsing fails with
** TLY_ERANGE (upstream's big-number path would keep the value).
*/
static void test_range_limit(void **state)
{
    tly_qty q;

    (void)state;
    q = must_parse("170141183460469231731687303715.884105727");
    assert_true(q.nanos == TLY_QTY_MAX_NANOS);
    q = must_parse("-170141183460469231731687303715.884105727");
    assert_true(q.nanos == -TLY_QTY_MAX_NANOS);
    assert_parse_fails("170141183460469231731687303715.884105728", TLY_ERANGE);
    assert_parse_fails("-170141183460469231731687303715.884105728", TLY_ERANGE);
    /* Rounding up past the limit is out of range too. */
    assert_parse_fails("170141183460469231731687303715.8841057271", TLY_ERANGE);
    assert_parse_fails("1e30", TLY_ERANGE);
    assert_parse_fails("-1e30", TLY_ERANGE);
    assert_parse_fails("1000000000000000P", TLY_ERANGE); /* 1e30 */
    assert_canon("100000000000000P", "100000000000E"); /* 1e29 */
    assert_canon("1e20", "100e18");
    assert_canon("123456789012345678901234567890", "123456789012345678901234567890");
}

/*
** The exponent of the "e" form is read as a 64-bit integer and truncated to
** 32 bits, as upstream does. Huge exponents never cost time or memory.
*/
static void test_huge_exponents(void **state)
{
    static char digits[100003];

    (void)state;
    /* 99999999999 truncates to 1215752191: 10^1215752191 is out of range. */
    assert_parse_fails("1e99999999999", TLY_ERANGE);
    /* Beyond int64 the exponent itself is malformed. */
    assert_parse_fails("1e9999999999999999999", TLY_EINVAL);
    /* 2^32 truncates to 0: upstream reads this as 1. */
    assert_canon("1e4294967296", "1");
    assert_canon("0e99999999999", "0");
    assert_canon("1e-2147483648", "1e-9");
    assert_canon("5e-99999999999", "1e-9"); /* truncates to 10^-1215752191 */
    assert_canon("1e-9223372036854775808", "1"); /* truncates to 0 */

    /* 100000 digits: far too big, or far too small, both handled quickly. */
    memset(digits, '9', 100000);
    digits[100000] = '\0';
    assert_parse_fails(digits, TLY_ERANGE);
    memcpy(digits + 100000, "Ki", 3);
    assert_canon(digits, "9223372036854775807");
    digits[0] = '.';
    memset(digits + 1, '0', 99998);
    digits[99999] = '1';
    digits[100000] = '\0';
    assert_canon(digits, "1n");
}

/*
** Canonical text: factors of 10 move into a suffix whose exponent is a
** multiple of 3; BinarySI moves factors of 1024 (at most up to Ei).
*/
static void test_canonical_format(void **state)
{
    char buf[TLY_QTY_BUFSZ];
    tly_qty q;
    size_t n;

    (void)state;
    assert_canon("1e3", "1e3");
    assert_canon("1e4", "10e3");
    assert_canon("1e14", "100e12");
    assert_canon("1.2e3", "1200");
    assert_canon("+0.5e0", "500e-3");
    assert_canon("1e21", "1e21");
    assert_canon("1500m", "1500m");
    assert_canon("1.5", "1500m");
    assert_canon("1000k", "1M");
    assert_canon("1.5Gi", "1536Mi");
    assert_canon("1025Ki", "1025Ki");
    assert_canon("1023", "1023");
    assert_canon("1.5Ki", "1536");  /* binary, but not a multiple of 1024 */
    assert_canon("1.1Ki", "1126400m"); /* binary, but not a whole number */
    /* DecimalSI has no suffix above E: the mantissa grows instead. */
    assert_canon("1000E", "1000E");
    assert_canon("1234567E", "1234567E");
    /* Mantissas wider than 64 bits print in full. */
    assert_canon("10000000000000000000100m", "10000000000000000000100m");

    /* Beyond Ei the mantissa grows (upstream has no larger suffix). */
    q.nanos = ((tly_i128)1 << 70) * 1000000000;
    q.fmt = TLY_QFMT_BINARY_SI;
    assert_string_equal(canon(q), "1024Ei");
    q.nanos = -q.nanos;
    assert_string_equal(canon(q), "-1024Ei");

    /* The longest texts fit TLY_QTY_BUFSZ with room to spare. */
    q.nanos = -TLY_QTY_MAX_NANOS;
    q.fmt = TLY_QFMT_DECIMAL_EXP;
    assert_string_equal(canon(q), "-170141183460469231731687303715884105727e-9");
    q.fmt = TLY_QFMT_DECIMAL_SI;
    assert_string_equal(canon(q), "-170141183460469231731687303715884105727n");
    q.fmt = TLY_QFMT_BINARY_SI;
    assert_string_equal(canon(q), "-170141183460469231731687303715884105727n");

    /* Like snprintf: the full length is returned, the text is cut to fit. */
    n = tly_qty_format(must_parse("123456k"), buf, 4);
    assert_int_equal(n, 7);
    assert_string_equal(buf, "123");
    assert_int_equal(tly_qty_format(must_parse("5"), NULL, 0), 1);
}

/* Cmp compares values; formats play no part. */
static void test_cmp_ignores_format(void **state)
{
    (void)state;
    assert_int_equal(tly_qty_cmp(must_parse("1Ki"), must_parse("1024")), 0);
    assert_int_equal(tly_qty_cmp(must_parse("1e3"), must_parse("1k")), 0);
    assert_int_equal(tly_qty_cmp(must_parse("1n"), must_parse("0")), 1);
    assert_int_equal(tly_qty_cmp(must_parse("-1n"), must_parse("0")), -1);
    assert_true(tly_qty_is_zero(must_parse("-0Ki")));
    assert_int_equal(tly_qty_sign(must_parse("-3m")), -1);
}

/*
** The result of add and sub: a zero operand takes no part (the other's
** format), equal formats are kept, mixed formats give DecimalSI.
*/
static void test_arith_result_formats(void **state)
{
    tly_qty z;

    (void)state;
    assert_string_equal(arith("1Ki", "1Ki", '+'), "2Ki");
    assert_string_equal(arith("1.5Gi", "512Mi", '+'), "2Gi");
    assert_string_equal(arith("0.5Ki", "0.5Ki", '+'), "1Ki");
    assert_string_equal(arith("1Mi", "1Ki", '-'), "1023Ki");
    assert_string_equal(arith("4Ei", "4Ei", '+'), "8Ei"); /* no cap after parsing */
    assert_string_equal(arith("1e3", "1e3", '+'), "2e3");
    assert_string_equal(arith("1Ki", "1k", '+'), "2024");
    assert_string_equal(arith("1Ki", "1", '-'), "1023");
    assert_string_equal(arith("1e3", "1k", '+'), "2k");
    assert_string_equal(arith("1e3", "1Ki", '+'), "2024");
    assert_string_equal(arith("100m", "1Ki", '+'), "1024100m");
    assert_string_equal(arith("1Ki", "1n", '+'), "1024000000001n");
    assert_string_equal(arith("0", "1e3", '+'), "1e3");
    assert_string_equal(arith("1e3", "0", '+'), "1e3");
    assert_string_equal(arith("0", "1Gi", '-'), "-1Gi");
    assert_string_equal(arith("1Gi", "0Ki", '-'), "1Gi");
    assert_string_equal(arith("1Ki", "1Ki", '-'), "0");
    assert_string_equal(arith("0.0001Ki", "1Ki", '+'), "1024102400u");

    /* A zero result keeps no memory of its operands once added to. */
    assert_int_equal(tly_qty_sub(must_parse("1Ki"), must_parse("1Ki"), &z), TLY_OK);
    assert_int_equal(tly_qty_add(z, must_parse("1e3"), &z), TLY_OK);
    assert_string_equal(canon(z), "1e3");
}

/* Add and sub stay exact up to the 128-bit edge, then fail cleanly. */
static void test_arith_overflow_at_int128_edge(void **state)
{
    tly_qty max = {TLY_QTY_MAX_NANOS, TLY_QFMT_DECIMAL_SI};
    tly_qty min = {-TLY_QTY_MAX_NANOS, TLY_QFMT_DECIMAL_SI};
    tly_qty one = {1, TLY_QFMT_DECIMAL_SI};
    tly_qty out = {42, TLY_QFMT_BINARY_SI}, r;

    (void)state;
    assert_int_equal(tly_qty_add(max, one, &out), TLY_ERANGE);
    assert_int_equal(tly_qty_add(max, max, &out), TLY_ERANGE);
    assert_int_equal(tly_qty_sub(max, tly_qty_neg(one), &out), TLY_ERANGE);
    /* The range is symmetric: -max - 1n is out of range, not INT128_MIN. */
    assert_int_equal(tly_qty_sub(min, one, &out), TLY_ERANGE);
    assert_int_equal(tly_qty_add(min, min, &out), TLY_ERANGE);
    /* On failure *out is left alone. */
    assert_true(out.nanos == 42);
    assert_int_equal(out.fmt, TLY_QFMT_BINARY_SI);

    assert_int_equal(tly_qty_add(max, min, &r), TLY_OK);
    assert_true(r.nanos == 0);
    assert_int_equal(tly_qty_sub(max, one, &r), TLY_OK);
    assert_int_equal(tly_qty_add(r, one, &r), TLY_OK);
    assert_true(r.nanos == TLY_QTY_MAX_NANOS);
    assert_true(tly_qty_neg(max).nanos == -TLY_QTY_MAX_NANOS);
    assert_true(tly_qty_neg(min).nanos == TLY_QTY_MAX_NANOS);
    assert_int_equal(tly_qty_neg(must_parse("1Ki")).fmt, TLY_QFMT_BINARY_SI);
    assert_string_equal(canon(tly_qty_neg(must_parse("1Ki"))), "-1Ki");
}

/* Value() and MilliValue(): rounded away from zero; ERANGE beyond int64. */
static void test_value_and_milli(void **state)
{
    int64_t v;

    (void)state;
    assert_int_equal(tly_qty_value(must_parse("1n"), &v), TLY_OK);
    assert_true(v == 1);
    assert_int_equal(tly_qty_milli(must_parse("1n"), &v), TLY_OK);
    assert_true(v == 1);
    assert_int_equal(tly_qty_value(must_parse("-1n"), &v), TLY_OK);
    assert_true(v == -1);
    assert_int_equal(tly_qty_value(must_parse("-5300m"), &v), TLY_OK);
    assert_true(v == -6);
    assert_int_equal(tly_qty_milli(must_parse("-5300m"), &v), TLY_OK);
    assert_true(v == -5300);
    assert_int_equal(tly_qty_value(must_parse("5000m"), &v), TLY_OK);
    assert_true(v == 5);

    assert_int_equal(tly_qty_value(must_parse("9223372036854775807"), &v), TLY_OK);
    assert_true(v == INT64_MAX);
    assert_int_equal(tly_qty_value(must_parse("9223372036854775806.1"), &v), TLY_OK);
    assert_true(v == INT64_MAX);
    assert_int_equal(tly_qty_value(must_parse("-9223372036854775808"), &v), TLY_OK);
    assert_true(v == INT64_MIN);
    assert_int_equal(tly_qty_value(must_parse("9223372036854775808"), &v), TLY_ERANGE);
    assert_int_equal(tly_qty_value(must_parse("9223372036854775807.1"), &v), TLY_ERANGE);
    assert_int_equal(tly_qty_value(must_parse("-9223372036854775808.1"), &v), TLY_ERANGE);
    assert_int_equal(tly_qty_value(must_parse("1e20"), &v), TLY_ERANGE);

    assert_int_equal(tly_qty_milli(must_parse("9223372036854775.807"), &v), TLY_OK);
    assert_true(v == INT64_MAX);
    assert_int_equal(tly_qty_milli(must_parse("9223372036854775.8071"), &v), TLY_ERANGE);
    assert_int_equal(tly_qty_milli(must_parse("-9223372036854775.808"), &v), TLY_OK);
    assert_true(v == INT64_MIN);
    assert_int_equal(tly_qty_milli(must_parse("9Ei"), &v), TLY_ERANGE);
    assert_int_equal(tly_qty_milli(must_parse("10E"), &v), TLY_ERANGE);
}

/* Asserts tly_qty_literal_int64(s) == TLY_OK with value want. */
static void assert_literal(const char *s, int64_t want)
{
    int64_t v = 12345;
    int rc = tly_qty_literal_int64(s, strlen(s), &v);

    if (rc != TLY_OK || v != want)
        fail_msg("literal \"%s\": rc %d value %" PRId64 ", want OK %" PRId64, s, rc, v, want);
}

static void assert_not_literal(const char *s)
{
    int64_t v = 12345;
    int rc = tly_qty_literal_int64(s, strlen(s), &v);

    if (rc != TLY_EINVAL)
        fail_msg("literal \"%s\": rc %d value %" PRId64 ", want EINVAL", s, rc, v);
    if (v != 12345)
        fail_msg("literal \"%s\": *out changed on failure", s);
}

/*
** AsInt64 on a literal: only what upstream keeps in its int64 form with a
** non-negative scale, so "whole" values with a fraction or a milli suffix fail.
*/
static void test_literal_int64_rule(void **state)
{
    (void)state;
    assert_literal("0", 0);
    assert_literal("1", 1);
    assert_literal("1k", 1000);
    assert_literal("1e3", 1000);
    assert_literal("1Ki", 1024);
    assert_literal("+1", 1);
    assert_literal("00", 0);
    assert_literal("0k", 0);
    assert_literal("0.5k", 500);       /* scale 3-1 = 2 */
    assert_literal("1.5k", 1500);
    assert_literal("1E", 1000000000000000000);
    assert_literal("9e18", 9000000000000000000);
    assert_literal("999999999999999999", 999999999999999999); /* 18 digits */
    assert_literal("1Ti", 1099511627776);
    assert_literal("10Ti", 10995116277760); /* precision 15-2-12-1 = 0 */
    assert_literal("1e4294967296", 1);     /* exponent truncated to 0 */
    /* Negative literals are returned as they are; the caller rejects them. */
    assert_literal("-1", -1);
    assert_literal("-1k", -1000);
    assert_literal("-0", 0);

    assert_not_literal("2000m");  /* scale -3 */
    assert_not_literal("1.0");    /* scale -1 */
    assert_not_literal("0.0");
    assert_not_literal("1.5");
    assert_not_literal("0.5Ki");  /* a binary fraction leaves the fast path */
    assert_not_literal("1n");
    assert_not_literal("1e-1");
    assert_not_literal("100Ti");  /* precision 15-3-12-1 < 0 */
    assert_not_literal("1Pi");    /* precision 15-1-15-1 < 0 */
    assert_not_literal("1Ei");
    assert_not_literal("9999999999999999999"); /* 19 digits: precision < 0 */
    assert_not_literal("9223372036854775807");
    assert_not_literal("10e18");  /* 10^19 does not fit */
    assert_not_literal("");
    assert_not_literal(" 1");
    assert_not_literal("abc");
    assert_not_literal("1K");
}

static void test_constructors(void **state)
{
    (void)state;
    assert_string_equal(canon(tly_qty_from_int(1024, TLY_QFMT_BINARY_SI)), "1Ki");
    assert_string_equal(canon(tly_qty_from_int(1000, TLY_QFMT_DECIMAL_SI)), "1k");
    assert_string_equal(canon(tly_qty_from_int(1000000, TLY_QFMT_DECIMAL_EXP)), "1e6");
    assert_string_equal(canon(tly_qty_from_int(INT64_MIN, TLY_QFMT_DECIMAL_SI)),
                        "-9223372036854775808");
    assert_string_equal(canon(tly_qty_from_milli(1, TLY_QFMT_DECIMAL_SI)), "1m");
    assert_string_equal(canon(tly_qty_from_milli(1024, TLY_QFMT_BINARY_SI)), "1024m");
    assert_string_equal(canon(tly_qty_from_milli(1048576, TLY_QFMT_BINARY_SI)), "1048576m");
    assert_string_equal(canon(tly_qty_from_milli(1000000, TLY_QFMT_DECIMAL_EXP)), "1e3");
}

static void test_strerror(void **state)
{
    (void)state;
    assert_string_equal(tly_strerror(TLY_OK), "success");
    assert_string_equal(tly_strerror(TLY_ERANGE), "out of range");
    assert_string_equal(tly_strerror(TLY_EINVAL), "invalid input");
    assert_string_equal(tly_strerror(12345), "unknown error");
}

/* Amounts for people (reports, tables): the shapes issue 15 item 19 found unreadable. */
static const char *human(const char *text, tly_human_unit u, char *buf)
{
    tly_qty q;
    assert_int_equal(tly_qty_parse_str(text, &q), 0);
    return tly_qty_human(q, u, buf);
}

static void test_human_units(void **state)
{
    (void)state;
    char b[TLY_QTY_BUFSZ];
    assert_string_equal(human("23525300m", TLY_HUMAN_CORES, b), "23,525.3 cores");
    assert_string_equal(human("1", TLY_HUMAN_CORES, b), "1 core");
    assert_string_equal(human("900m", TLY_HUMAN_CORES, b), "0.9 cores");
    assert_string_equal(human("5m", TLY_HUMAN_CORES, b), "0.01 cores");  /* half up */
    assert_string_equal(human("176269984Mi", TLY_HUMAN_BYTES, b), "168.1 TiB");
    assert_string_equal(human("64Gi", TLY_HUMAN_BYTES, b), "64 GiB");
    assert_string_equal(human("1500", TLY_HUMAN_BYTES, b), "1.5 KiB");
    assert_string_equal(human("0", TLY_HUMAN_BYTES, b), "0 B");
    assert_string_equal(human("1987510m", TLY_HUMAN_DEVICES, b), "1,987.51");
    assert_string_equal(human("4600m", TLY_HUMAN_DEVICES, b), "4.6");
    assert_string_equal(human("-2500m", TLY_HUMAN_NUMBER, b), "-2.5");
    assert_string_equal(human("1234567", TLY_HUMAN_NUMBER, b), "1,234,567");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_human_units),
        cmocka_unit_test(test_vectors_parse),
        cmocka_unit_test(test_vectors_cmp),
        cmocka_unit_test(test_vectors_add),
        cmocka_unit_test(test_vectors_sub),
        cmocka_unit_test(test_vectors_value),
        cmocka_unit_test(test_plain_forms_read_as_the_long_way),
        cmocka_unit_test(test_rounds_away_from_zero_at_1n),
        cmocka_unit_test(test_binary_cap_at_2_63_minus_1),
        cmocka_unit_test(test_binary_below_one_becomes_decimal),
        cmocka_unit_test(test_grammar_accepts),
        cmocka_unit_test(test_grammar_rejects),
        cmocka_unit_test(test_range_limit),
        cmocka_unit_test(test_huge_exponents),
        cmocka_unit_test(test_canonical_format),
        cmocka_unit_test(test_cmp_ignores_format),
        cmocka_unit_test(test_arith_result_formats),
        cmocka_unit_test(test_arith_overflow_at_int128_edge),
        cmocka_unit_test(test_value_and_milli),
        cmocka_unit_test(test_literal_int64_rule),
        cmocka_unit_test(test_constructors),
        cmocka_unit_test(test_strerror),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
