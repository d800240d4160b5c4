/*
** ratio.c: exact utilisation ratios and LeastLoaded load keys.
**
** Why exact
** ---------
** LeastLoaded (kruntimes reference sec. 3.3) orders candidate Pods by the
** max, then the sum, of their utilisation ratios used/capacity, and Pods
** with equal keys share a rank group. Upstream computes with big.Rat, so a
** tie is a tie: 1/10+2/10+3/10 == 3/10+3/10. In doubles the left side is
** 0.6000000000000001 and the right 0.6, which would split one rank group in
** two and can change the chosen Pod. So nothing here uses floating point.
**
** Single ratios
** -------------
** A ratio is num/den with both in unsigned 128 bits (quantities are at most
** 2^127-1 nano-units, quantity.h). tly_frac_cmp() compares a.num*b.den with
** b.num*a.den as full 256-bit products built from four 64x64->128 partial
** products, so it never overflows and needs no reduction.
**
** Sums: fast path
** ---------------
** The sum of a key is kept as a reduced fraction of 128-bit integers:
** a/b + c/d = (a*(l/b) + c*(l/d)) / l with l = lcm(b, d), every multiply and
** add checked with __builtin_*_overflow, and the result reduced by its gcd.
** Typical keys (a few resources whose capacities share factors: powers of
** two and ten) stay on this path: no allocation, comparison by tly_frac_cmp.
**
** Sums: fallback
** --------------
** When an addition would overflow (for instance capacities with large
** coprime factors), the sum moves to a bignum numerator and denominator:
** unsigned integers of 64-bit limbs in malloc'd arrays, with just the
** operations needed here (multiply-accumulate and compare). In this mode a
** sum N/D plus p/q becomes (N*q + p*D)/(D*q), not reduced (reducing would
** need bignum division); the denominator grows by at most 128 bits per added
** ratio, and a key has one ratio per resource, so the numbers stay small.
** Two sums N1/D1 and N2/D2 compare as N1*D2 against N2*D1, with 128-bit sums
** widened to two limbs when only one side is a bignum. Every comparison is
** therefore exact for any inputs.
*/
#include "tally/ratio.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/error.h"

/* ---------------------------------------------------------------------- */
/* 128-bit helpers                                                        */
/* ---------------------------------------------------------------------- */

/*
** Binary (Stein's) gcd: shifts and subtractions instead of 128-bit
** divisions, which the compiler turns into slow library calls. Values that
** fit in 64 bits (every whole-unit capacity and usage in nano-units) take
** the 64-bit path.
*/
static uint64_t tly_frac_gcd64(uint64_t a, uint64_t b)
{
    if (a == 0)
        return b;
    if (b == 0)
        return a;
    int shift = __builtin_ctzll(a | b);
    a >>= __builtin_ctzll(a);
    do {
        b >>= __builtin_ctzll(b);
        if (a > b) {
            uint64_t t = a;
            a = b;
            b = t;
        }
        b -= a;
    } while (b != 0);
    return a << shift;
}

static int tly_frac_ctz128(tly_u128 x)
{
    uint64_t lo = (uint64_t)x;
    return lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll((uint64_t)(x >> 64));
}

static tly_u128 tly_frac_gcd(tly_u128 a, tly_u128 b)
{
    if ((a >> 64) == 0 && (b >> 64) == 0)
        return tly_frac_gcd64((uint64_t)a, (uint64_t)b);
    if (a == 0)
        return b;
    if (b == 0)
        return a;
    int shift = tly_frac_ctz128(a | b);
    a >>= tly_frac_ctz128(a);
    do {
        b >>= tly_frac_ctz128(b);
        if (a > b) {
            tly_u128 t = a;
            a = b;
            b = t;
        }
        b -= a;
    } while (b != 0);
    return a << shift;
}

/* The full 256-bit product a*b as hi*2^128 + lo. */
static void tly_frac_mul256(tly_u128 a, tly_u128 b, tly_u128 *hi, tly_u128 *lo)
{
    const tly_u128 m64 = (tly_u128)UINT64_MAX;
    tly_u128 a0 = a & m64, a1 = a >> 64;
    tly_u128 b0 = b & m64, b1 = b >> 64;
    tly_u128 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    /* Below 3 * 2^64: cannot overflow. */
    tly_u128 mid = (p00 >> 64) + (p01 & m64) + (p10 & m64);

    *lo = (mid << 64) | (p00 & m64);
    *hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
}

/* u in lowest terms (u.den > 0); zero becomes 0/1. */
static tly_frac tly_frac_reduce(tly_frac u)
{
    if (u.num == 0)
        return (tly_frac){0, 1};
    tly_u128 g = tly_frac_gcd(u.num, u.den);
    /* 64-bit division where it suffices: 128-bit division is a library call. */
    if (((u.num | u.den) >> 64) == 0)
        return (tly_frac){(uint64_t)u.num / (uint64_t)g, (uint64_t)u.den / (uint64_t)g};
    return (tly_frac){u.num / g, u.den / g};
}

tly_frac tly_frac_make(tly_i128 used_nanos, tly_i128 cap_nanos)
{
    if (used_nanos <= 0 || cap_nanos <= 0)
        return (tly_frac){0, 1};
    return tly_frac_reduce((tly_frac){(tly_u128)used_nanos, (tly_u128)cap_nanos});
}

int tly_frac_cmp_wide(tly_frac a, tly_frac b)
{
    tly_u128 lh, ll, rh, rl;
    tly_frac_mul256(a.num, b.den, &lh, &ll);
    tly_frac_mul256(b.num, a.den, &rh, &rl);
    if (lh != rh)
        return lh < rh ? -1 : 1;
    return ll < rl ? -1 : ll > rl;
}

/*
** s + u for reduced s and u, in lowest terms, if it fits in 128 bits.
** Returns false (and leaves *out alone) on overflow.
*/
static bool tly_frac_add_fast(tly_frac s, tly_frac u, tly_frac *out)
{
    tly_u128 g = tly_frac_gcd(s.den, u.den);
    tly_u128 sm, um;
    if (((s.den | u.den) >> 64) == 0) {
        sm = (uint64_t)u.den / (uint64_t)g; /* l / s.den */
        um = (uint64_t)s.den / (uint64_t)g; /* l / u.den */
    } else {
        sm = u.den / g;
        um = s.den / g;
    }
    tly_u128 l, n1, n2, n;

    if (__builtin_mul_overflow(s.den, sm, &l) ||
        __builtin_mul_overflow(s.num, sm, &n1) ||
        __builtin_mul_overflow(u.num, um, &n2) ||
        __builtin_add_overflow(n1, n2, &n))
        return false;
    *out = tly_frac_reduce((tly_frac){n, l});
    return true;
}

/* ---------------------------------------------------------------------- */
/* Bignum: little-endian arrays of 64-bit limbs                           */
/* ---------------------------------------------------------------------- */

/* The length of a[0..n) without its leading zero limbs. */
static size_t tly_frac_big_trim(const uint64_t *a, size_t n)
{
    while (n > 0 && a[n - 1] == 0)
        n--;
    return n;
}

/* v as limbs in out[0..2); returns the trimmed length (0, 1 or 2). */
static size_t tly_frac_big_from(tly_u128 v, uint64_t out[2])
{
    out[0] = (uint64_t)v;
    out[1] = (uint64_t)(v >> 64);
    return tly_frac_big_trim(out, 2);
}

/*
** out[0..on) += a*b. The caller guarantees the result fits in on limbs
** (on >= an + bn is enough when out starts at zero).
*/
static void tly_frac_big_muladd(uint64_t *out, size_t on, const uint64_t *a, size_t an,
                                const uint64_t *b, size_t bn)
{
    for (size_t i = 0; i < an; i++) {
        tly_u128 carry = 0;
        size_t k;
        if (a[i] == 0)
            continue;
        for (size_t j = 0; j < bn; j++) {
            /* (2^64-1)^2 + 2*(2^64-1) = 2^128-1: no overflow. */
            tly_u128 t = (tly_u128)a[i] * b[j] + out[i + j] + carry;
            out[i + j] = (uint64_t)t;
            carry = t >> 64;
        }
        for (k = i + bn; carry != 0 && k < on; k++) {
            tly_u128 t = (tly_u128)out[k] + carry;
            out[k] = (uint64_t)t;
            carry = t >> 64;
        }
    }
}

/* -1, 0, 1 comparing trimmed a[0..an) and b[0..bn). */
static int tly_frac_big_cmp(const uint64_t *a, size_t an, const uint64_t *b, size_t bn)
{
    if (an != bn)
        return an < bn ? -1 : 1;
    for (size_t i = an; i-- > 0;) {
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    }
    return 0;
}

/* A zeroed array of n limbs (n may be 0: returns a valid 1-limb array). */
static uint64_t *tly_frac_big_alloc(size_t n)
{
    return calloc(n > 0 ? n : 1, sizeof(uint64_t));
}

/* ---------------------------------------------------------------------- */
/* Load keys                                                              */
/* ---------------------------------------------------------------------- */

void tly_loadkey_init(tly_loadkey *k)
{
    k->max = (tly_frac){0, 1};
    k->sum = (tly_frac){0, 1};
    k->is_big = 0;
    k->big_num = (tly_frac_big){NULL, 0};
    k->big_den = (tly_frac_big){NULL, 0};
}

void tly_loadkey_free(tly_loadkey *k)
{
    free(k->big_num.limb);
    free(k->big_den.limb);
    tly_loadkey_init(k);
}

/*
** N/D := (N*q + p*D) / (D*q), for the bignum N/D given as limb arrays.
** On success the new arrays replace k's (the old ones are freed); on
** allocation failure nothing changes.
*/
static int tly_loadkey_add_big(tly_loadkey *k, const uint64_t *nl, size_t nn,
                               const uint64_t *dl, size_t dn, tly_frac u)
{
    uint64_t p[2], q[2];
    size_t pn = tly_frac_big_from(u.num, p);
    size_t qn = tly_frac_big_from(u.den, q);
    size_t on = (nn + qn > pn + dn ? nn + qn : pn + dn) + 1;
    size_t en = dn + qn;
    uint64_t *num = tly_frac_big_alloc(on);
    uint64_t *den = tly_frac_big_alloc(en);

    if (num == NULL || den == NULL) {
        free(num);
        free(den);
        return TLY_ENOMEM;
    }
    tly_frac_big_muladd(num, on, nl, nn, q, qn);
    tly_frac_big_muladd(num, on, p, pn, dl, dn);
    tly_frac_big_muladd(den, en, dl, dn, q, qn);

    free(k->big_num.limb);
    free(k->big_den.limb);
    k->big_num = (tly_frac_big){num, tly_frac_big_trim(num, on)};
    k->big_den = (tly_frac_big){den, tly_frac_big_trim(den, en)};
    k->is_big = 1;
    return TLY_OK;
}

int tly_loadkey_add(tly_loadkey *k, tly_frac u)
{
    if (u.den == 0)
        return TLY_EINVAL;
    u = tly_frac_reduce(u);
    if (u.num == 0)
        return TLY_OK; /* max starts at 0 and the sum does not change */

    if (!k->is_big) {
        tly_frac s;
        if (tly_frac_add_fast(k->sum, u, &s)) {
            k->sum = s;
        } else {
            /* First overflow: start from the current 128-bit sum. */
            uint64_t nl[2], dl[2];
            size_t nn = tly_frac_big_from(k->sum.num, nl);
            size_t dn = tly_frac_big_from(k->sum.den, dl);
            int rc = tly_loadkey_add_big(k, nl, nn, dl, dn, u);
            if (rc != TLY_OK)
                return rc;
        }
    } else {
        int rc = tly_loadkey_add_big(k, k->big_num.limb, k->big_num.n, k->big_den.limb,
                                     k->big_den.n, u);
        if (rc != TLY_OK)
            return rc;
    }
    if (tly_frac_cmp(u, k->max) > 0)
        k->max = u;
    return TLY_OK;
}

/* A view of a key's sum as limb arrays; tmp holds the limbs of a fast sum. */
typedef struct {
    const uint64_t *num, *den;
    size_t nn, dn;
    uint64_t tmp[4];
} tly_loadkey_view;

static void tly_loadkey_view_of(const tly_loadkey *k, tly_loadkey_view *v)
{
    if (k->is_big) {
        v->num = k->big_num.limb;
        v->nn = k->big_num.n;
        v->den = k->big_den.limb;
        v->dn = k->big_den.n;
    } else {
        v->nn = tly_frac_big_from(k->sum.num, v->tmp);
        v->dn = tly_frac_big_from(k->sum.den, v->tmp + 2);
        v->num = v->tmp;
        v->den = v->tmp + 2;
    }
}

/* Scratch limbs on the stack for the two cross products. */
#define TLY_LOADKEY_STACK_LIMBS 64

int tly_loadkey_cmp_sum(const tly_loadkey *a, const tly_loadkey *b)
{
    tly_loadkey_view va, vb;
    uint64_t stack[2 * TLY_LOADKEY_STACK_LIMBS];
    uint64_t *x, *y, *heap = NULL;
    size_t xn, yn;
    int r;

    if (!a->is_big && !b->is_big)
        return tly_frac_cmp(a->sum, b->sum);

    tly_loadkey_view_of(a, &va);
    tly_loadkey_view_of(b, &vb);
    xn = va.nn + vb.dn; /* a.num * b.den */
    yn = vb.nn + va.dn; /* b.num * a.den */
    if (xn + yn <= 2 * TLY_LOADKEY_STACK_LIMBS) {
        memset(stack, 0, (xn + yn) * sizeof(uint64_t));
        x = stack;
    } else {
        heap = calloc(xn + yn, sizeof(uint64_t));
        if (heap == NULL) {
            fprintf(stderr, "tally: out of memory comparing load keys\n");
            abort();
        }
        x = heap;
    }
    y = x + xn;
    tly_frac_big_muladd(x, xn, va.num, va.nn, vb.den, vb.dn);
    tly_frac_big_muladd(y, yn, vb.num, vb.nn, va.den, va.dn);
    r = tly_frac_big_cmp(x, tly_frac_big_trim(x, xn), y, tly_frac_big_trim(y, yn));
    free(heap);
    return r;
}

int tly_loadkey_cmp(const tly_loadkey *a, const tly_loadkey *b)
{
    int r = tly_frac_cmp(a->max, b->max);
    if (r != 0)
        return r;
    return tly_loadkey_cmp_sum(a, b);
}
