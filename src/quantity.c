/*
** quantity.c: Kubernetes resource quantities (resource.Quantity) in exact
** 128-bit integer arithmetic.
**
** Design
** ------
** Upstream keeps a quantity either as an int64 with a decimal scale or, when
** that does not fit, as an arbitrary-precision decimal (inf.Dec), and rounds
** every parsed value to 1n (10^-9) away from zero. Because the precision is
** fixed at 1n, every value upstream can hold is an integer count of
** nano-units, so tally stores exactly that count in a signed 128-bit integer
** (tly_qty.nanos) and never needs a second representation or floating point.
** The magnitude limit, (2^127-1) nano-units or about 1.7e29 units, is far
** beyond any amount a cluster holds; a value beyond it is rejected with
** TLY_ERANGE where upstream's big-number path would have accepted it.
**
** Parsing happens in three steps, mirroring upstream so that the same text is
** accepted and rejected:
**
**   1. tly_qty_lex() splits the text into sign, integer digits (leading zeros
**      stripped), fraction digits and suffix, exactly as upstream's
**      parseQuantityString() scans it.
**   2. tly_qty_suffix() interprets the suffix as a power of 10 (DecimalSI or
**      DecimalExponent) or of 2 (BinarySI).
**   3. tly_qty_magnitude() computes |value| * 10^9 rounded up, straight from
**      the digit string: the digits that land right of the nano point only
**      decide whether to add one, so arbitrarily long inputs never need more
**      than 128 bits.
**
** Then the BinarySI cap (2^63-1 units) is applied, as upstream does.
**
** Formatting works on the integer: strip factors of 10 (or of 1024 for
** BinarySI) into an exponent and pick the suffix, as upstream's
** CanonicalizeBytes() does.
**
** Every operation that can overflow uses the __builtin_*_overflow family, so
** there is no signed overflow anywhere, for any input (UBSan stays clean).
*/
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tally/error.h"
#include "tally/quantity.h"

/* The unsigned partner of tly_i128; magnitudes are computed in it. */
__extension__ typedef unsigned __int128 tly_qty_u128;

/* One unit in nano-units. */
#define TLY_QTY_NANO 1000000000

/*
** The BinarySI cap in nano-units: upstream caps a parsed BinarySI value at
** 2^63-1 units (its maxAllowed), whatever the input.
*/
#define TLY_QTY_BINARY_CAP ((tly_qty_u128)INT64_MAX * TLY_QTY_NANO)

/* The pieces of a quantity's text, as upstream's parseQuantityString gives them. */
typedef struct {
    bool neg;
    const char *num; /* integer digits, leading zeros stripped; "0" if none */
    size_t num_len;
    const char *den; /* digits after the '.', possibly none */
    size_t den_len;
    const char *suf; /* everything after the number */
    size_t suf_len;
} tly_qty_parts;

/* What a suffix means: value * base^exp, written in format fmt. */
typedef struct {
    int base; /* 10 or 2 */
    int32_t exp;
    tly_qfmt fmt;
} tly_qty_suffix_t;

static bool tly_qty_isdigit(char c)
{
    return c >= '0' && c <= '9';
}

/* Characters upstream accepts in the letter part of a suffix. */
static bool tly_qty_issufchar(char c)
{
    switch (c) {
    case 'e': case 'E': case 'i': case 'n': case 'u': case 'm':
    case 'k': case 'K': case 'M': case 'G': case 'T': case 'P':
        return true;
    default:
        return false;
    }
}

/*
** Splits s[0..len) into its parts, accepting exactly what upstream's scanner
** accepts. Quirks kept on purpose: "." and "1." and ".5" are numbers, a lone
** sign ("-", "+") is the number 0 (the scanner runs out of input while
** skipping leading zeros and reports "0"), a suffix with no digits before it
** ("Ki", "e3") is 0 too, and the suffix is only checked for shape here
** ([letters][sign][digits]); its meaning is tly_qty_suffix()'s job.
** The empty string is rejected, as ParseQuantity does before scanning.
*/
static int tly_qty_lex(const char *s, size_t len, tly_qty_parts *p)
{
    size_t pos = 0, start;

    memset(p, 0, sizeof *p);
    p->num = "0";
    p->num_len = 1;
    p->den = s;
    p->suf = s;
    if (len == 0)
        return TLY_EINVAL;

    if (s[0] == '-') {
        p->neg = true;
        pos++;
    } else if (s[0] == '+') {
        pos++;
    }
    while (pos < len && s[pos] == '0')
        pos++;
    if (pos >= len)
        return TLY_OK; /* only zeros (or nothing) after the sign */

    start = pos;
    while (pos < len && tly_qty_isdigit(s[pos]))
        pos++;
    if (pos > start) {
        p->num = s + start;
        p->num_len = pos - start;
    }
    if (pos < len && s[pos] == '.') {
        pos++;
        start = pos;
        while (pos < len && tly_qty_isdigit(s[pos]))
            pos++;
        p->den = s + start;
        p->den_len = pos - start;
    }

    start = pos;
    while (pos < len && tly_qty_issufchar(s[pos]))
        pos++;
    if (pos < len && (s[pos] == '+' || s[pos] == '-'))
        pos++;
    while (pos < len) {
        if (!tly_qty_isdigit(s[pos]))
            return TLY_EINVAL;
        pos++;
    }
    p->suf = s + start;
    p->suf_len = len - start;
    return TLY_OK;
}

/*
** Go's strconv.ParseInt(s, 10, 64): an optional sign, at least one digit,
** nothing else, and the value within int64.
*/
static bool tly_qty_parse_i64(const char *s, size_t len, int64_t *out)
{
    size_t pos = 0;
    bool neg = false;
    uint64_t v = 0, limit;

    if (pos < len && (s[pos] == '+' || s[pos] == '-')) {
        neg = s[pos] == '-';
        pos++;
    }
    if (pos >= len)
        return false;
    limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; pos < len; pos++) {
        if (!tly_qty_isdigit(s[pos]))
            return false;
        if (__builtin_mul_overflow(v, 10u, &v) ||
            __builtin_add_overflow(v, (uint64_t)(s[pos] - '0'), &v) || v > limit)
            return false;
    }
    if (!neg)
        *out = (int64_t)v;
    else if (v == (uint64_t)INT64_MAX + 1)
        *out = INT64_MIN;
    else
        *out = -(int64_t)v;
    return true;
}

/*
** Go's int32(x) for an int64 x: keeps the low 32 bits, two's complement.
** Spelled out because a C conversion of an out-of-range value to int32_t is
** implementation-defined.
*/
static int32_t tly_qty_wrap32(int64_t x)
{
    uint32_t u = (uint32_t)(uint64_t)x;

    if (u <= (uint32_t)INT32_MAX)
        return (int32_t)u;
    return (int32_t)(u - (uint32_t)INT32_MAX - 1u) + INT32_MIN;
}

/*
** Interprets a suffix as upstream's suffixer does. The exponent of the "e"
** form is read as an int64 and then truncated to int32, as upstream does
** (strconv.ParseInt(..., 64) followed by int32()): "1e4294967296" is 1.
*/
static bool tly_qty_suffix(const char *s, size_t len, tly_qty_suffix_t *out)
{
    static const char dec_letters[] = "num\0kMGTPE";
    static const int32_t dec_exps[] = {-9, -6, -3, 0, 3, 6, 9, 12, 15, 18};
    static const char bin_letters[] = "KMGTPE";
    int64_t e;

    if (len == 0) {
        *out = (tly_qty_suffix_t){10, 0, TLY_QFMT_DECIMAL_SI};
        return true;
    }
    if (len == 1 && s[0] != '\0') {
        const char *hit = memchr(dec_letters, s[0], sizeof dec_letters - 1);
        if (hit) {
            *out = (tly_qty_suffix_t){10, dec_exps[hit - dec_letters], TLY_QFMT_DECIMAL_SI};
            return true;
        }
    }
    if (len == 2 && s[1] == 'i' && s[0] != '\0') {
        const char *hit = memchr(bin_letters, s[0], sizeof bin_letters - 1);
        if (hit) {
            *out = (tly_qty_suffix_t){2, (int32_t)(10 * (hit - bin_letters + 1)),
                                      TLY_QFMT_BINARY_SI};
            return true;
        }
    }
    if (len > 1 && (s[0] == 'e' || s[0] == 'E') && tly_qty_parse_i64(s + 1, len - 1, &e)) {
        *out = (tly_qty_suffix_t){10, tly_qty_wrap32(e), TLY_QFMT_DECIMAL_EXP};
        return true;
    }
    return false;
}

/* 10^k for 0 <= k <= 38 (10^38 < 2^128). */
static tly_qty_u128 tly_qty_pow10(int k)
{
    tly_qty_u128 v = 1;

    while (k-- > 0)
        v *= 10;
    return v;
}

/* The i-th digit of the concatenation num || den. */
static unsigned tly_qty_digit(const tly_qty_parts *p, size_t i)
{
    char c = i < p->num_len ? p->num[i] : p->den[i - p->num_len];
    return (unsigned)(c - '0');
}

/*
** Sets *out to ceil(D * mult * 10^e), where D is the integer whose digits are
** num || den. Returns false if that does not fit in 128 unsigned bits.
**
** For e < 0 the digits split into a whole part Q (left of the point) and a
** fraction F = 0.f1f2...ft; the result is Q*mult + ceil(F*mult). F*mult is
** computed from the last fraction digit backwards, X = (f_i*mult + X) / 10,
** keeping only the integer part at each step (which gives the exact integer
** part at the end) and noting whether any step dropped a remainder (which is
** exactly when F*mult is not an integer). X stays below mult <= 2^60, so
** 64 bits suffice, and a fraction with many leading zeros costs at most a
** few dozen steps, whatever the exponent.
*/
static bool tly_qty_magnitude(const tly_qty_parts *p, uint64_t mult, int64_t e,
                              tly_qty_u128 *out)
{
    size_t n = p->num_len + p->den_len, i, whole;
    tly_qty_u128 v = 0;
    uint64_t x = 0, t, zeros;
    bool inexact = false;

    for (i = 0; i < n && tly_qty_digit(p, i) == 0; i++)
        ;
    if (i == n) {
        *out = 0; /* zero stays zero for any exponent */
        return true;
    }

    if (e >= 0) {
        for (i = 0; i < n; i++)
            if (__builtin_mul_overflow(v, (tly_qty_u128)10, &v) ||
                __builtin_add_overflow(v, (tly_qty_u128)tly_qty_digit(p, i), &v))
                return false;
        if (__builtin_mul_overflow(v, (tly_qty_u128)mult, &v) || e > 38 ||
            __builtin_mul_overflow(v, tly_qty_pow10((int)e), &v))
            return false;
        *out = v;
        return true;
    }

    t = (uint64_t)(-(e + 1)) + 1u; /* -e without negating INT64_MIN */
    whole = (uint64_t)n > t ? n - (size_t)t : 0;
    for (i = 0; i < whole; i++)
        if (__builtin_mul_overflow(v, (tly_qty_u128)10, &v) ||
            __builtin_add_overflow(v, (tly_qty_u128)tly_qty_digit(p, i), &v))
            return false;
    if (__builtin_mul_overflow(v, (tly_qty_u128)mult, &v))
        return false;

    for (i = n; i > whole; i--) {
        uint64_t cur = (uint64_t)tly_qty_digit(p, i - 1) * mult + x;
        inexact |= cur % 10 != 0;
        x = cur / 10;
    }
    /* Zeros between the point and the first digit: each divides by 10. */
    zeros = t - (uint64_t)(n - whole);
    for (; zeros > 0 && x != 0; zeros--) {
        inexact |= x % 10 != 0;
        x /= 10;
    }
    if (__builtin_add_overflow(v, (tly_qty_u128)x + (inexact ? 1u : 0u), &v))
        return false;
    *out = v;
    return true;
}

/*
** Checked conversion of a length to int64: lengths anywhere near the limit
** cannot occur (no such allocation exists), but the arithmetic that follows
** must stay defined for any size_t.
*/
static bool tly_qty_len64(size_t len, int64_t *out)
{
    if (len > (size_t)(INT64_MAX / 4))
        return false;
    *out = (int64_t)len;
    return true;
}

/*
** The forms resource lists are written in, digits and at most one suffix
** letter or binary pair ("2", "500m", "4Gi", "64G"): read straight into
** nano-units. Returns false for anything else, or for a value near a
** limit, which tly_qty_parse then reads the long way; where both apply
** they give the same answer (test_quantity checks it against "+" forms,
** which only the long way reads). A pod has four to eight quantities, and
** the long way cost 360 instructions each.
*/
static bool tly_qty_parse_plain(const char *s, size_t len, tly_qty *out)
{
    uint64_t v = 0;
    size_t i = 0;

    while (i < len && i < 18 && tly_qty_isdigit(s[i]))
        v = v * 10 + (uint64_t)(s[i++] - '0');
    if (i == 0 || (i < len && tly_qty_isdigit(s[i])))
        return false;
    tly_qty_u128 mult;
    tly_qfmt fmt = TLY_QFMT_DECIMAL_SI;
    size_t rest = len - i;
    if (rest == 0) {
        mult = TLY_QTY_NANO;
    } else if (rest == 1) {
        switch (s[i]) {
        case 'm': mult = 1000000u; break;
        case 'k': mult = (tly_qty_u128)TLY_QTY_NANO * 1000u; break;
        case 'M': mult = (tly_qty_u128)TLY_QTY_NANO * 1000000u; break;
        case 'G': mult = (tly_qty_u128)TLY_QTY_NANO * 1000000000u; break;
        default: return false;
        }
    } else if (rest == 2 && s[i + 1] == 'i' && (s[i] == 'K' || s[i] == 'M' || s[i] == 'G')) {
        mult = (tly_qty_u128)TLY_QTY_NANO << (s[i] == 'K' ? 10 : s[i] == 'M' ? 20 : 30);
        fmt = TLY_QFMT_BINARY_SI;
    } else {
        return false;
    }
    /* v < 10^18 and mult < 2^60 * 10^9: no overflow; a binary value of 1 or more stays BinarySI. */
    tly_qty_u128 mag = (tly_qty_u128)v * mult;
    if (fmt == TLY_QFMT_BINARY_SI && mag > TLY_QTY_BINARY_CAP)
        return false;
    out->nanos = (tly_i128)mag;
    out->fmt = (uint8_t)fmt;
    return true;
}

int tly_qty_parse(const char *s, size_t len, tly_qty *out)
{
    if (s != NULL && tly_qty_parse_plain(s, len, out))
        return TLY_OK;
    tly_qty_parts p;
    tly_qty_suffix_t sf;
    tly_qty_u128 mag;
    uint64_t mult = 1;
    int64_t e, den_len;
    tly_qfmt fmt;
    bool fits;
    int rc;

    if (s == NULL)
        return TLY_EINVAL;
    rc = tly_qty_lex(s, len, &p);
    if (rc != TLY_OK)
        return rc;
    if (!tly_qty_suffix(p.suf, p.suf_len, &sf))
        return TLY_EINVAL;
    if (!tly_qty_len64(p.den_len, &den_len))
        return TLY_ERANGE;

    /* nanos = D * base^exp * 10^(9 - len(den)), D being num || den. */
    fmt = sf.fmt;
    e = 9 - den_len;
    if (sf.base == 10)
        e += sf.exp; /* |exp| < 2^31 and |e| < 2^61: no overflow */
    else
        mult = (uint64_t)1 << sf.exp;
    fits = tly_qty_magnitude(&p, mult, e, &mag);

    if (fmt == TLY_QFMT_BINARY_SI) {
        if (!fits || mag > TLY_QTY_BINARY_CAP)
            mag = TLY_QTY_BINARY_CAP;
        /* Upstream: a BinarySI value strictly between 0 and 1 becomes DecimalSI. */
        if (mag > 0 && mag < TLY_QTY_NANO)
            fmt = TLY_QFMT_DECIMAL_SI;
    } else if (!fits || mag > (tly_qty_u128)TLY_QTY_MAX_NANOS) {
        return TLY_ERANGE;
    }

    out->nanos = p.neg ? -(tly_i128)mag : (tly_i128)mag;
    out->fmt = (uint8_t)fmt;
    return TLY_OK;
}

int tly_qty_parse_str(const char *s, tly_qty *out)
{
    if (s == NULL)
        return TLY_EINVAL;
    return tly_qty_parse(s, strlen(s), out);
}

/* Writes the decimal digits of v (no sign) at p; returns the count. */
static size_t tly_qty_put_u128(char *p, tly_qty_u128 v)
{
    char rev[40];
    size_t n = 0, i;

    do {
        rev[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v != 0);
    for (i = 0; i < n; i++)
        p[i] = rev[n - 1 - i];
    return n;
}

/* Writes the decimal digits of a small int, with a '-' if negative. */
static size_t tly_qty_put_int(char *p, int v)
{
    size_t n = 0;

    if (v < 0) {
        p[n++] = '-';
        return n + tly_qty_put_u128(p + n, (tly_qty_u128)(-(int64_t)v));
    }
    return tly_qty_put_u128(p, (tly_qty_u128)v);
}

/*
** The DecimalSI and DecimalExponent forms of a non-zero magnitude a (in
** nano-units): a = m * 10^(e+9) with every trailing zero of m moved into e,
** then e lowered to a multiple of 3 (m times 10 or 100). Upstream has no
** DecimalSI suffix above E (10^18) and would print the bare mantissa there
** (1000E as "1"); tally keeps the E and widens the mantissa (1000E), so the
** text always parses back to the same value.
*/
static size_t tly_qty_put_decimal(char *p, tly_qty_u128 a, tly_qfmt fmt)
{
    static const char *const si[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
    size_t n;
    int e = -9, r;

    while (a % 10 == 0) {
        a /= 10;
        e++;
    }
    r = ((e % 3) + 3) % 3;
    a *= tly_qty_pow10(r); /* a * 10^(e+9) is the input, so this cannot overflow */
    e -= r;

    if (fmt == TLY_QFMT_DECIMAL_EXP) {
        n = tly_qty_put_u128(p, a);
        if (e != 0) {
            p[n++] = 'e';
            n += tly_qty_put_int(p + n, e);
        }
        return n;
    }
    if (e > 18) {
        a *= tly_qty_pow10(e - 18); /* at most the value in units: fits */
        e = 18;
    }
    n = tly_qty_put_u128(p, a);
    memcpy(p + n, si[(e + 9) / 3], strlen(si[(e + 9) / 3]));
    return n + strlen(si[(e + 9) / 3]);
}

/*
** The canonical text of q into tmp (TLY_QTY_BUFSZ bytes), without NUL.
** Longest case: "-" + 39 digits + "e-9", far below the buffer size.
*/
static size_t tly_qty_render(tly_qty q, char *tmp)
{
    static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    tly_qty_u128 a, v;
    size_t n = 0;
    tly_qfmt fmt;
    int k = 0;

    if (q.nanos == 0) {
        tmp[0] = '0';
        return 1;
    }
    /* The magnitude; (unsigned)-(x+1)+1 avoids negating the most negative value. */
    a = q.nanos < 0 ? (tly_qty_u128)(-(q.nanos + 1)) + 1u : (tly_qty_u128)q.nanos;
    if (q.nanos < 0)
        tmp[n++] = '-';

    switch (q.fmt) {
    case TLY_QFMT_DECIMAL_SI:
    case TLY_QFMT_DECIMAL_EXP:
        fmt = (tly_qfmt)q.fmt;
        break;
    case TLY_QFMT_BINARY_SI:
        /* Small or fractional binary values print as DecimalSI, as upstream. */
        if (a < (tly_qty_u128)1024 * TLY_QTY_NANO || a % TLY_QTY_NANO != 0)
            fmt = TLY_QFMT_DECIMAL_SI;
        else
            fmt = TLY_QFMT_BINARY_SI;
        break;
    default:
        fmt = TLY_QFMT_DECIMAL_EXP; /* upstream's choice for an unknown format */
        break;
    }
    if (fmt != TLY_QFMT_BINARY_SI)
        return n + tly_qty_put_decimal(tmp + n, a, fmt);

    /* Ei is the largest binary suffix, so at most six factors of 1024 move. */
    v = a / TLY_QTY_NANO;
    while (k < 6 && v % 1024 == 0) {
        v /= 1024;
        k++;
    }
    n += tly_qty_put_u128(tmp + n, v);
    memcpy(tmp + n, bin[k], strlen(bin[k]));
    return n + strlen(bin[k]);
}

size_t tly_qty_format(tly_qty q, char *buf, size_t cap)
{
    char tmp[TLY_QTY_BUFSZ];
    size_t n = tly_qty_render(q, tmp), c;

    if (buf != NULL && cap > 0) {
        c = n < cap ? n : cap - 1;
        memcpy(buf, tmp, c);
        buf[c] = '\0';
    }
    return n;
}

/* tly_qty_cmp, tly_qty_add and tly_qty_sub are inline in quantity.h (every resource check runs them). */

tly_qty tly_qty_neg(tly_qty q)
{
    /*
    ** Every tly_qty made by this module is in the symmetric range. A struct
    ** filled by hand with the most negative int128 saturates rather than
    ** overflowing.
    */
    q.nanos = tly_qty_in_range(q.nanos) ? -q.nanos : TLY_QTY_MAX_NANOS;
    return q;
}

/* ceil(|n| / div) with n's sign, i.e. n / div rounded away from zero. */
static int tly_qty_scaled(tly_i128 n, int64_t div, int64_t *out)
{
    tly_i128 q = n / div, r = n % div;

    if (r > 0)
        q++;
    else if (r < 0)
        q--;
    if (q > INT64_MAX || q < INT64_MIN)
        return TLY_ERANGE;
    *out = (int64_t)q;
    return TLY_OK;
}

int tly_qty_value(tly_qty q, int64_t *out)
{
    return tly_qty_scaled(q.nanos, TLY_QTY_NANO, out);
}

int tly_qty_milli(tly_qty q, int64_t *out)
{
    return tly_qty_scaled(q.nanos, TLY_QTY_NANO / 1000, out);
}

/*
** Upstream's ParseQuantity keeps a literal in its int64 form (the "fast
** path") only when it is short enough to be exact, and AsInt64() then works
** only for a non-negative decimal scale. This replays those two decisions on
** the lexed text, without computing the value any other way.
*/
int tly_qty_literal_int64(const char *s, size_t len, int64_t *out)
{
    tly_qty_parts p;
    tly_qty_suffix_t sf;
    int64_t value = 0, mantissa = 1, result, scale;
    size_t i;

    if (s == NULL || len == 0)
        return TLY_EINVAL;
    if (len == 1 && s[0] == '0') {
        *out = 0; /* upstream short-cuts the literal "0" before scanning */
        return TLY_OK;
    }
    if (tly_qty_lex(s, len, &p) != TLY_OK || !tly_qty_suffix(p.suf, p.suf_len, &sf))
        return TLY_EINVAL;

    if (sf.fmt == TLY_QFMT_BINARY_SI) {
        /*
        ** Upstream: precision = 15 - len(num) - int32(float32(exponent)*3/10) - 1.
        ** For the exponents that reach here (10, 20, ..., 60) the float32
        ** expression is exact (3, 6, ..., 18), so integer exp*3/10 is the same.
        ** A fraction or a negative precision leaves the fast path.
        */
        int32_t max_len = 14 - sf.exp * 3 / 10; /* precision >= 0 <=> len <= this */

        if (p.den_len != 0 || max_len < 0 || p.num_len > (size_t)max_len)
            return TLY_EINVAL;
        mantissa = (int64_t)1 << sf.exp;
        scale = 0;
    } else {
        /* precision = 18 - (len(num) + len(den)) must be >= 0. */
        if (p.num_len > 18 || p.den_len > 18 - p.num_len)
            return TLY_EINVAL;
        /* scale = exponent - len(den) in int32 arithmetic, wrapping as Go does. */
        scale = tly_qty_wrap32((int64_t)sf.exp - (int64_t)p.den_len);
    }
    if (scale < 0)
        return TLY_EINVAL; /* scale < -9: slow path; -9..-1: AsInt64 refuses */

    for (i = 0; i < p.num_len + p.den_len; i++)
        value = value * 10 + (int64_t)tly_qty_digit(&p, i); /* <= 18 digits: fits */
    if (__builtin_mul_overflow(value, mantissa, &result))
        return TLY_EINVAL;
    if (p.neg)
        result = -result;
    for (; scale > 0 && result != 0; scale--)
        if (__builtin_mul_overflow(result, (int64_t)10, &result))
            return TLY_EINVAL;
    *out = result;
    return TLY_OK;
}

tly_qty tly_qty_from_int(int64_t v, tly_qfmt fmt)
{
    tly_qty q;

    q.nanos = (tly_i128)v * TLY_QTY_NANO; /* |v| < 2^63: at most ~2^93 */
    q.fmt = (uint8_t)fmt;
    return q;
}

tly_qty tly_qty_from_milli(int64_t m, tly_qfmt fmt)
{
    tly_qty q;

    q.nanos = (tly_i128)m * (TLY_QTY_NANO / 1000);
    q.fmt = (uint8_t)fmt;
    return q;
}

/* ---- for people ---------------------------------------------------------- */

/*
** value / 10^9 / scale (scale 1 or a power of 1024) rounded half up to
** `decimals` decimals, with thousands separators and no trailing zeros.
*/
static void human_number(tly_i128 nanos, tly_i128 scale, int decimals, char *buf, size_t cap)
{
    bool neg = nanos < 0;
    tly_qty_u128 v = neg ? (tly_qty_u128)0 - (tly_qty_u128)nanos : (tly_qty_u128)nanos;
    tly_qty_u128 den = (tly_qty_u128)1000000000 * (tly_qty_u128)scale, mul = 1;
    for (int i = 0; i < decimals; i++)
        mul *= 10;
    /* Divide first where v * mul could overflow: the lost digits are far below what is shown. */
    tly_qty_u128 units = v > (((tly_qty_u128)0 - 1) / mul) ? (v / den) * mul + ((v % den) / (den / mul))
                                                   : (v * mul + den / 2) / den;
    tly_qty_u128 whole = units / mul, frac = units % mul;
    char digits[64];
    int n = 0;
    do {
        digits[n++] = (char)('0' + (int)(whole % 10));
        whole /= 10;
    } while (whole && n < 40);
    size_t w = 0;
    if (neg && (units != 0) && w + 1 < cap)
        buf[w++] = '-';
    for (int i = n - 1; i >= 0 && w + 2 < cap; i--) {
        buf[w++] = digits[i];
        if (i > 0 && i % 3 == 0)
            buf[w++] = ',';
    }
    if (frac) {
        char f[8];
        for (int i = decimals - 1; i >= 0; i--) {
            f[i] = (char)('0' + (int)(frac % 10));
            frac /= 10;
        }
        int last = decimals - 1;
        while (last >= 0 && f[last] == '0')
            last--;
        if (w + 1 < cap)
            buf[w++] = '.';
        for (int i = 0; i <= last && w + 1 < cap; i++)
            buf[w++] = f[i];
    }
    buf[w] = 0;
}

const char *tly_qty_human(tly_qty q, tly_human_unit unit, char *buf)
{
    static const char *const bin[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    size_t cap = TLY_QTY_BUFSZ;
    if (unit == TLY_HUMAN_BYTES) {
        tly_qty_u128 v = q.nanos < 0 ? (tly_qty_u128)0 - (tly_qty_u128)q.nanos : (tly_qty_u128)q.nanos;
        int k = 0;
        tly_i128 scale = 1;
        while (k < 6 && v / 1000000000 >= (tly_qty_u128)scale * 1024) {
            scale *= 1024;
            k++;
        }
        human_number(q.nanos, scale, k ? 1 : 0, buf, cap - 5);
        size_t n = strlen(buf);
        snprintf(buf + n, cap - n, " %s", bin[k]);
        return buf;
    }
    human_number(q.nanos, 1, 2, buf, cap - 7);
    if (unit == TLY_HUMAN_CORES) {
        size_t n = strlen(buf);
        snprintf(buf + n, cap - n, "%s", strcmp(buf, "1") ? " cores" : " core");
    }
    return buf;
}
