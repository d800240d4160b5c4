/*
** test_ratio.c: tests for src/ratio.c (exact utilisation ratios and the
** LeastLoaded load key, kruntimes reference sec. 3.3).
**
**  - Single ratios: construction from nano-unit quantities, exact comparison
**    including values near 2^127 and 2^128 where a 128-bit cross product
**    would overflow.
**  - Load keys: the 1/10+2/10+3/10 == 3/10+3/10 tie that doubles break, max
**    before sum, sums that overflow 128 bits and take the bignum path
**    (compared in different orders and against a slightly larger sum), and
**    a mixed bignum / 128-bit comparison.
**  - Randomized: 10,000 seeded cases of small fractions against a reference
**    over a common denominator, plus order-independence of large sums.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <stdbool.h>
#include <string.h>

#include "tally/error.h"
#include "tally/quantity.h"
#include "tally/ratio.h"

#define NANO ((tly_i128)1000000000)

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

static tly_frac frac(tly_u128 num, tly_u128 den)
{
    return (tly_frac){num, den};
}

static void assert_frac(tly_frac f, tly_u128 num, tly_u128 den)
{
    assert_true(f.num == num);
    assert_true(f.den == den);
}

static void must_add(tly_loadkey *k, tly_frac u)
{
    assert_int_equal(tly_loadkey_add(k, u), TLY_OK);
}

/* A key holding the n fractions v[0..n). */
static void key_of(tly_loadkey *k, const tly_frac *v, size_t n)
{
    tly_loadkey_init(k);
    for (size_t i = 0; i < n; i++)
        must_add(k, v[i]);
}

/* cmp(a, b) == want and cmp(b, a) == -want. */
static void assert_key_cmp(const tly_loadkey *a, const tly_loadkey *b, int want)
{
    assert_int_equal(tly_loadkey_cmp(a, b), want);
    assert_int_equal(tly_loadkey_cmp(b, a), -want);
}

static void assert_frac_cmp(tly_frac a, tly_frac b, int want)
{
    assert_int_equal(tly_frac_cmp(a, b), want);
    assert_int_equal(tly_frac_cmp(b, a), -want);
}

/* xorshift64*: a small seeded PRNG, so every run checks the same cases. */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * UINT64_C(2685821657736338717);
}

static uint64_t rng_below(uint64_t n)
{
    return rng_next() % n;
}

/* A random value of exactly `bits` bits (1..128). */
static tly_u128 rng_bits(unsigned bits)
{
    tly_u128 v = ((tly_u128)rng_next() << 64) | rng_next();
    if (bits < 128)
        v &= ((tly_u128)1 << bits) - 1;
    return v | ((tly_u128)1 << (bits - 1));
}

static uint64_t mulmod64(uint64_t a, uint64_t b, uint64_t m)
{
    return (uint64_t)((tly_u128)a * b % m);
}

static uint64_t powmod64(uint64_t a, uint64_t e, uint64_t m)
{
    uint64_t r = 1;
    a %= m;
    while (e > 0) {
        if (e & 1)
            r = mulmod64(r, a, m);
        a = mulmod64(a, a, m);
        e >>= 1;
    }
    return r;
}

/* Deterministic Miller-Rabin for 64-bit n. */
static bool is_prime64(uint64_t n)
{
    static const uint64_t bases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
    uint64_t d = n - 1;
    unsigned s = 0;

    if (n < 2)
        return false;
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        if (n % bases[i] == 0)
            return n == bases[i];
    }
    while ((d & 1) == 0) {
        d >>= 1;
        s++;
    }
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        uint64_t x = powmod64(bases[i], d, n);
        if (x == 1 || x == n - 1)
            continue;
        bool composite = true;
        for (unsigned r = 1; r < s; r++) {
            x = mulmod64(x, x, n);
            if (x == n - 1) {
                composite = false;
                break;
            }
        }
        if (composite)
            return false;
    }
    return true;
}

/* The n largest primes below 2^61, descending. */
static void primes_below_2_61(uint64_t *out, size_t n)
{
    uint64_t c = (UINT64_C(1) << 61) - 1;
    for (size_t i = 0; i < n; c -= 2) {
        if (is_prime64(c))
            out[i++] = c;
    }
}

/* ---------------------------------------------------------------------- */
/* Single ratios                                                          */
/* ---------------------------------------------------------------------- */

static void test_frac_make_from_quantities(void **state)
{
    (void)state;
    /* used 1 of capacity 4 */
    assert_frac(tly_frac_make(1 * NANO, 4 * NANO), 1, 4);
    /* used 500m of 1.5: 500,000,000n / 1,500,000,000n */
    assert_frac(tly_frac_make(500000000, 1500000000), 1, 3);
    /* 1n of 3: the finest step a quantity has */
    assert_frac(tly_frac_make(1, 3 * NANO), 1, 3000000000);
    /* used 1Gi of 3Gi memory (bytes, in nano-units) */
    assert_frac(tly_frac_make((tly_i128)1073741824 * NANO, (tly_i128)3221225472 * NANO), 1, 3);
    /* full and overcommitted */
    assert_frac(tly_frac_make(7 * NANO, 7 * NANO), 1, 1);
    assert_frac(tly_frac_make(6 * NANO, 4 * NANO), 3, 2);
    /* zero, and outside the contract: 0/1 */
    assert_frac(tly_frac_make(0, 4 * NANO), 0, 1);
    assert_frac(tly_frac_make(-NANO, 4 * NANO), 0, 1);
    assert_frac(tly_frac_make(NANO, 0), 0, 1);
    assert_frac(tly_frac_make(NANO, -NANO), 0, 1);
    /* the largest quantities */
    assert_frac(tly_frac_make(TLY_QTY_MAX_NANOS, TLY_QTY_MAX_NANOS), 1, 1);
    assert_frac(tly_frac_make(1, TLY_QTY_MAX_NANOS), 1, (tly_u128)TLY_QTY_MAX_NANOS);
}

static void test_frac_cmp_basic(void **state)
{
    (void)state;
    assert_frac_cmp(frac(1, 4), frac(1, 3), -1);
    assert_frac_cmp(frac(1, 3), frac(1, 3), 0);
    assert_frac_cmp(frac(2, 6), frac(1, 3), 0);        /* unreduced */
    assert_frac_cmp(frac(0, 1), frac(0, 7), 0);        /* zeros */
    assert_frac_cmp(frac(0, 1), frac(1, 1000000), -1);
    assert_frac_cmp(frac(3, 2), frac(1, 1), 1);        /* overcommit */
    assert_frac_cmp(frac(1, 10), frac(1, 10), 0);
    /* 1/3 vs 333333333/1000000000: close but not equal */
    assert_frac_cmp(frac(1, 3), frac(333333333, 1000000000), 1);
}

static void test_frac_cmp_huge(void **state)
{
    (void)state;
    const tly_u128 p127 = (tly_u128)1 << 127;
    const tly_u128 max128 = ~(tly_u128)0;

    /* x/(x-1) decreases in x: each cross product is about 2^254. */
    assert_frac_cmp(frac(p127 - 1, p127 - 2), frac(p127 - 2, p127 - 3), -1);
    assert_frac_cmp(frac(p127 - 2, p127 - 1), frac(p127 - 3, p127 - 2), 1);
    assert_frac_cmp(frac(max128, max128 - 1), frac(max128 - 1, max128 - 2), -1);
    assert_frac_cmp(frac(max128 - 1, max128), frac(max128 - 2, max128 - 1), 1);
    /* equal values written differently */
    assert_frac_cmp(frac(max128, max128), frac(1, 1), 0);
    assert_frac_cmp(frac(p127, p127 + p127 / 2), frac(2, 3), 0);
    assert_frac_cmp(frac(max128 / 3, max128), frac(1, 3), 0); /* 2^128-1 = 3*m */
    /* the extremes */
    assert_frac_cmp(frac(1, max128), frac(0, 1), 1);
    assert_frac_cmp(frac(max128, 1), frac(max128 - 1, 1), 1);
    assert_frac_cmp(frac(1, max128), frac(1, max128 - 1), -1);
    /* differ only in the low half of the 256-bit products */
    assert_frac_cmp(frac(p127 + 1, p127), frac(p127 + 2, p127 + 1), 1);
}

static void test_frac_cmp_random_u64(void **state)
{
    (void)state;
    rng_state = UINT64_C(0x5eed0001);
    for (int i = 0; i < 10000; i++) {
        uint64_t an = rng_next(), bn = rng_next();
        uint64_t ad = rng_next() | 1, bd = rng_next() | 1;
        tly_u128 l = (tly_u128)an * bd, r = (tly_u128)bn * ad;
        int want = l < r ? -1 : l > r;
        assert_frac_cmp(frac(an, ad), frac(bn, bd), want);
        /* scaling both parts by up to 2^64 keeps the value */
        uint64_t k = rng_next() | 1;
        assert_frac_cmp(frac((tly_u128)an * k, (tly_u128)ad * k), frac(an, ad), 0);
    }
}

/* ---------------------------------------------------------------------- */
/* Load keys                                                              */
/* ---------------------------------------------------------------------- */

static void test_float_tie_is_exact(void **state)
{
    (void)state;
    const tly_frac a[] = {frac(1, 10), frac(2, 10), frac(3, 10)};
    const tly_frac b[] = {frac(3, 10), frac(3, 10)};
    tly_loadkey ka, kb;

#if FLT_EVAL_METHOD == 0
    /* The reason for all this: doubles see two different sums. */
    volatile double d1 = 0.1, d2 = 0.2, d3 = 0.3;
    assert_true(d1 + d2 + d3 != d3 + d3);
#endif
    key_of(&ka, a, 3);
    key_of(&kb, b, 2);
    assert_false(ka.is_big);
    assert_frac(ka.sum, 3, 5);
    assert_frac(ka.max, 3, 10);
    assert_key_cmp(&ka, &kb, 0);

    /* The same tie built from quantities: 100m, 200m, 300m of 1. */
    tly_loadkey kq;
    tly_loadkey_init(&kq);
    must_add(&kq, tly_frac_make(300000000, NANO));
    must_add(&kq, tly_frac_make(300000000, NANO));
    assert_key_cmp(&ka, &kq, 0);

    tly_loadkey_free(&ka);
    tly_loadkey_free(&kb);
    tly_loadkey_free(&kq);
}

static void test_max_dominates_sum(void **state)
{
    (void)state;
    tly_loadkey a, b, c, e;

    /* a: one resource at 1/2. b: three at 2/5 (sum 6/5). b is less loaded. */
    tly_loadkey_init(&a);
    must_add(&a, frac(1, 2));
    tly_loadkey_init(&b);
    must_add(&b, frac(2, 5));
    must_add(&b, frac(2, 5));
    must_add(&b, frac(2, 5));
    assert_key_cmp(&b, &a, -1);

    /* same max: the smaller sum wins */
    tly_loadkey_init(&c);
    must_add(&c, frac(1, 2));
    must_add(&c, frac(1, 100));
    assert_key_cmp(&a, &c, -1);

    /* the empty key (no used resources) is least loaded */
    tly_loadkey_init(&e);
    assert_key_cmp(&e, &a, -1);
    assert_key_cmp(&e, &e, 0);
    /* adding zero changes nothing */
    must_add(&e, frac(0, 5));
    assert_frac(e.max, 0, 1);
    assert_frac(e.sum, 0, 1);

    /* max is kept in lowest terms whatever the input form */
    must_add(&e, frac(4, 8));
    assert_frac(e.max, 1, 2);
    assert_key_cmp(&e, &a, 0);

    tly_loadkey_free(&a);
    tly_loadkey_free(&b);
    tly_loadkey_free(&c);
    tly_loadkey_free(&e);
}

static void test_add_contract_and_free(void **state)
{
    (void)state;
    tly_loadkey k, z;
    const tly_u128 p127 = (tly_u128)1 << 127;

    tly_loadkey_init(&k);
    must_add(&k, frac(1, 3));
    assert_int_equal(tly_loadkey_add(&k, frac(1, 0)), TLY_EINVAL);
    assert_frac(k.sum, 1, 3); /* unchanged */

    /* free resets a big key to empty; the key can be reused */
    must_add(&k, frac(1, p127 - 1));
    must_add(&k, frac(1, p127 - 3));
    assert_true(k.is_big);
    tly_loadkey_free(&k);
    tly_loadkey_init(&z);
    assert_false(k.is_big);
    assert_key_cmp(&k, &z, 0);
    must_add(&k, frac(1, 2));
    assert_frac(k.sum, 1, 2);
    tly_loadkey_free(&k);
    tly_loadkey_free(&k); /* twice is harmless */
    tly_loadkey_free(&z);
}

static void test_huge_values_sum(void **state)
{
    (void)state;
    const tly_u128 p127 = (tly_u128)1 << 127;
    tly_loadkey a, b, c;

    /* (2^127-1)/(2^127-2) twice: the numerator overflows 128 bits. */
    tly_loadkey_init(&a);
    must_add(&a, frac(p127 - 1, p127 - 2));
    must_add(&a, frac(p127 - 1, p127 - 2));
    /* the same value as one unreduced ratio of twice the size, plus 0 */
    tly_loadkey_init(&b);
    must_add(&b, frac(p127 - 1, p127 - 2));
    must_add(&b, frac(p127 - 1, p127 - 2));
    must_add(&b, frac(0, 1));
    assert_key_cmp(&a, &b, 0);

    /* max equal, sum larger by (1/(2^127-2) - 1/(2^127-1)) ~ 2^-254 */
    tly_loadkey_init(&c);
    must_add(&c, frac(p127 - 1, p127 - 2));
    must_add(&c, frac(p127 - 1, p127 - 2));
    must_add(&c, frac(1, p127 - 2));
    must_add(&c, frac(0, 1));
    tly_loadkey_free(&b);
    tly_loadkey_init(&b);
    must_add(&b, frac(p127 - 1, p127 - 2));
    must_add(&b, frac(p127 - 1, p127 - 2));
    must_add(&b, frac(1, p127 - 1));
    assert_key_cmp(&b, &c, -1);

    tly_loadkey_free(&a);
    tly_loadkey_free(&b);
    tly_loadkey_free(&c);
}

#define NPRIMES 40

static void test_bignum_sum_of_prime_reciprocals(void **state)
{
    (void)state;
    uint64_t p[NPRIMES];
    size_t order[NPRIMES];
    tly_loadkey fwd, rev, shuf, larger, smaller;

    primes_below_2_61(p, NPRIMES);
    for (size_t i = 0; i < NPRIMES; i++)
        order[i] = i;
    rng_state = UINT64_C(0x5eed0002);
    for (size_t i = NPRIMES - 1; i > 0; i--) {
        size_t j = (size_t)rng_below(i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }

    tly_loadkey_init(&fwd);
    tly_loadkey_init(&rev);
    tly_loadkey_init(&shuf);
    tly_loadkey_init(&larger);
    tly_loadkey_init(&smaller);
    for (size_t i = 0; i < NPRIMES; i++) {
        must_add(&fwd, frac(1, p[i]));
        must_add(&rev, frac(1, p[NPRIMES - 1 - i]));
        must_add(&shuf, frac(1, p[order[i]]));
        /* term 5 (not the max, which is 1/p[last]) nudged up or down */
        if (i == 5) {
            must_add(&larger, frac(1, p[i] - 1));
            must_add(&smaller, frac(1, (tly_u128)p[i] + 1));
        } else {
            must_add(&larger, frac(1, p[i]));
            must_add(&smaller, frac(1, p[i]));
        }
    }
    /* 40 coprime 61-bit denominators: about 2440 bits, so bignum sums */
    assert_true(fwd.is_big && rev.is_big && shuf.is_big && larger.is_big);
    assert_true(fwd.big_den.n >= 38);
    assert_frac(fwd.max, 1, p[NPRIMES - 1]);
    assert_frac_cmp(larger.max, fwd.max, 0);

    assert_key_cmp(&fwd, &rev, 0);
    assert_key_cmp(&fwd, &shuf, 0);
    assert_key_cmp(&rev, &shuf, 0);
    assert_key_cmp(&fwd, &larger, -1); /* differs by ~2^-122 */
    assert_key_cmp(&shuf, &larger, -1);
    assert_key_cmp(&smaller, &fwd, -1);
    assert_key_cmp(&smaller, &larger, -1);

    /* a bignum key against a 128-bit key: 1/p_0 alone has a smaller sum */
    tly_loadkey one;
    tly_loadkey_init(&one);
    must_add(&one, frac(1, p[NPRIMES - 1]));
    assert_false(one.is_big);
    assert_key_cmp(&one, &fwd, -1);

    tly_loadkey_free(&fwd);
    tly_loadkey_free(&rev);
    tly_loadkey_free(&shuf);
    tly_loadkey_free(&larger);
    tly_loadkey_free(&smaller);
    tly_loadkey_free(&one);
}

static void test_bignum_equals_fast(void **state)
{
    (void)state;
    uint64_t p[3];
    tly_loadkey big, fast, fast_more;

    primes_below_2_61(p, 3);
    /* 2 + (1/p + (p-1)/p) for three primes: exactly 5, reached via bignums */
    tly_loadkey_init(&big);
    must_add(&big, frac(2, 1));
    for (int i = 0; i < 3; i++)
        must_add(&big, frac(1, p[i]));
    assert_true(big.is_big);
    for (int i = 0; i < 3; i++)
        must_add(&big, frac(p[i] - 1, p[i]));
    assert_true(big.is_big);

    /* 2 + 2 + 1 = 5 with the same max 2, all on the 128-bit path */
    tly_loadkey_init(&fast);
    must_add(&fast, frac(2, 1));
    must_add(&fast, frac(2, 1));
    must_add(&fast, frac(1, 1));
    assert_false(fast.is_big);
    assert_key_cmp(&big, &fast, 0);

    tly_loadkey_init(&fast_more);
    must_add(&fast_more, frac(2, 1));
    must_add(&fast_more, frac(3, 1));
    must_add(&fast_more, frac(1, (tly_u128)1 << 100));
    assert_frac_cmp(fast_more.max, frac(3, 1), 0);
    /* max 3 > 2 */
    assert_key_cmp(&big, &fast_more, -1);
    tly_loadkey_free(&fast_more);
    tly_loadkey_init(&fast_more);
    must_add(&fast_more, frac(2, 1));
    must_add(&fast_more, frac(2, 1));
    must_add(&fast_more, frac(1, 1));
    must_add(&fast_more, frac(1, (tly_u128)1 << 100));
    assert_key_cmp(&big, &fast_more, -1);

    tly_loadkey_free(&big);
    tly_loadkey_free(&fast);
    tly_loadkey_free(&fast_more);
}

/* ---------------------------------------------------------------------- */
/* Randomized                                                             */
/* ---------------------------------------------------------------------- */

#define SMALL_DEN 12
#define LCM_1_TO_12 27720 /* every denominator divides it */

typedef struct {
    tly_frac v[6];
    size_t n;
} side;

static void random_side(side *s)
{
    s->n = 1 + (size_t)rng_below(6);
    for (size_t i = 0; i < s->n; i++) {
        /* unreduced input sometimes: k*num / k*den */
        uint64_t k = rng_below(4) == 0 ? 1 + rng_below(5) : 1;
        uint64_t num = rng_below(13), den = 1 + rng_below(SMALL_DEN);
        s->v[i] = frac((tly_u128)num * k, (tly_u128)den * k);
    }
}

/*
** The reference: every ratio is num/(d*k) with d <= 12 and k <= 5, so it is
** an exact integer multiple of 1/SCALE; max and sum are those integers.
*/
#define SCALE ((tly_u128)LCM_1_TO_12 * 60)

static void reference_key(const side *s, tly_u128 *max, tly_u128 *sum)
{
    *max = 0;
    *sum = 0;
    for (size_t i = 0; i < s->n; i++) {
        tly_u128 x = s->v[i].num * (SCALE / s->v[i].den);
        *max = x > *max ? x : *max;
        *sum += x;
    }
}

static void test_random_small_vs_reference(void **state)
{
    (void)state;
    int seen[3] = {0, 0, 0};

    rng_state = UINT64_C(0x5eed0003);
    for (int t = 0; t < 10000; t++) {
        side a, b;
        tly_loadkey ka, kb;
        tly_u128 amax, asum, bmax, bsum;

        random_side(&a);
        if (rng_below(4) == 0) {
            /* a permutation of a: always a tie */
            b = a;
            for (size_t i = b.n - 1; i > 0; i--) {
                size_t j = (size_t)rng_below(i + 1);
                tly_frac f = b.v[i];
                b.v[i] = b.v[j];
                b.v[j] = f;
            }
        } else {
            random_side(&b);
        }
        reference_key(&a, &amax, &asum);
        reference_key(&b, &bmax, &bsum);
        int want = amax != bmax ? (amax < bmax ? -1 : 1) : (asum < bsum ? -1 : asum > bsum);

        key_of(&ka, a.v, a.n);
        key_of(&kb, b.v, b.n);
        assert_false(ka.is_big);
        assert_int_equal(tly_loadkey_cmp(&ka, &kb), want);
        assert_int_equal(tly_loadkey_cmp(&kb, &ka), -want);
        assert_int_equal(tly_loadkey_cmp(&ka, &ka), 0);
        seen[want + 1]++;
        tly_loadkey_free(&ka);
        tly_loadkey_free(&kb);
    }
    /* every outcome occurs often, ties included */
    assert_true(seen[0] > 1000);
    assert_true(seen[1] > 2000); /* the permutations alone give ~2500 */
    assert_true(seen[2] > 1000);
}

static void test_random_large_order_independent(void **state)
{
    (void)state;
    int big = 0;

    rng_state = UINT64_C(0x5eed0004);
    for (int t = 0; t < 1000; t++) {
        tly_frac v[8];
        size_t n = 1 + (size_t)rng_below(8);
        size_t at = (size_t)rng_below(n + 1);
        tly_loadkey fwd, rev, more;

        for (size_t i = 0; i < n; i++)
            v[i] = frac(rng_bits(1 + (unsigned)rng_below(128)),
                        rng_bits(1 + (unsigned)rng_below(128)));
        tly_loadkey_init(&fwd);
        tly_loadkey_init(&rev);
        tly_loadkey_init(&more);
        for (size_t i = 0; i < n; i++) {
            must_add(&fwd, v[i]);
            must_add(&rev, v[n - 1 - i]);
            if (i == at)
                must_add(&more, frac(1, ~(tly_u128)0));
            must_add(&more, v[i]);
        }
        if (at == n)
            must_add(&more, frac(1, ~(tly_u128)0));
        big += fwd.is_big;
        assert_key_cmp(&fwd, &rev, 0);
        assert_key_cmp(&fwd, &more, -1);
        assert_key_cmp(&rev, &more, -1);
        tly_loadkey_free(&fwd);
        tly_loadkey_free(&rev);
        tly_loadkey_free(&more);
    }
    assert_true(big > 500); /* most of these sums needed the bignum path */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frac_make_from_quantities),
        cmocka_unit_test(test_frac_cmp_basic),
        cmocka_unit_test(test_frac_cmp_huge),
        cmocka_unit_test(test_frac_cmp_random_u64),
        cmocka_unit_test(test_float_tie_is_exact),
        cmocka_unit_test(test_max_dominates_sum),
        cmocka_unit_test(test_add_contract_and_free),
        cmocka_unit_test(test_huge_values_sum),
        cmocka_unit_test(test_bignum_sum_of_prime_reciprocals),
        cmocka_unit_test(test_bignum_equals_fast),
        cmocka_unit_test(test_random_small_vs_reference),
        cmocka_unit_test(test_random_large_order_independent),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
