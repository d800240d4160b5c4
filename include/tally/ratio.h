/*
** ratio.h: exact utilisation ratios and LeastLoaded load keys.
**
** The kruntimes LeastLoaded score (reference sec. 3.3) ranks Runtime Pods by
** a key built from the utilisation u = used/capacity of each resource: first
** the largest u, then the sum of all u. Upstream holds every u as a big.Rat,
** so ties are exact: 1/10+2/10+3/10 equals 3/10+3/10, and the tie decides
** the rank group (ties share a score, then the Pod name decides). Doubles get
** that tie wrong (0.6000000000000001 vs 0.6), so tally compares the same
** values exactly, with integers only:
**
**  - tly_frac is one non-negative fraction num/den of unsigned 128-bit
**    integers; tly_frac_cmp() cross-multiplies with full 256-bit products,
**    so it is exact for every num and den, reduced or not.
**  - tly_loadkey accumulates the max and the sum of a Pod's ratios. The sum
**    stays a reduced 128-bit fraction while it fits; when an addition would
**    overflow it moves to an arbitrary-precision (bignum) numerator and
**    denominator, so tly_loadkey_cmp() is exact for any inputs.
*/
#ifndef TALLY_RATIO_H
#define TALLY_RATIO_H

#include <stddef.h>
#include <stdint.h>

#include "tally/quantity.h"

__extension__ typedef unsigned __int128 tly_u128;

/* A non-negative fraction num/den. Invariant: den > 0. Not always reduced. */
typedef struct {
    tly_u128 num, den;
} tly_frac;

/*
** used/cap in lowest terms, for quantities given in nano-units
** (tly_qty.nanos): used 500m of 1.5 gives 1/3. Contract: used >= 0 and
** cap > 0 (the scheduler skips resources with used <= 0 or cap <= 0). Outside
** the contract the result is 0/1, so the den > 0 invariant always holds.
*/
tly_frac tly_frac_make(tly_i128 used_nanos, tly_i128 cap_nanos);

/* tly_frac_cmp() for values that do not all fit in 64 bits (256-bit products). */
int tly_frac_cmp_wide(tly_frac a, tly_frac b);

/*
** -1, 0 or 1 as a < b, a == b, a > b, exactly for every num and den
** (den > 0); the fractions need not be reduced. Inline because the
** schedulers call it once per advertised resource per candidate, and the
** common case (everything within 64 bits) is two multiplications.
*/
static inline int tly_frac_cmp(tly_frac a, tly_frac b)
{
    if (a.den == b.den)
        return a.num < b.num ? -1 : a.num > b.num;
    if (((a.num | a.den | b.num | b.den) >> 64) == 0) {
        tly_u128 l = a.num * b.den, r = b.num * a.den;
        return l < r ? -1 : l > r;
    }
    return tly_frac_cmp_wide(a, b);
}

/*
** An unsigned arbitrary-precision integer: n little-endian 64-bit limbs in a
** malloc'd array, without leading zero limbs (zero is n == 0, limb NULL).
** Only tly_loadkey uses it; callers never touch it.
*/
typedef struct {
    uint64_t *limb;
    size_t n;
} tly_frac_big;

/*
** The LeastLoaded key of one candidate Pod: the max and the sum of its
** utilisation ratios.
**
** Ownership: the struct itself belongs to the caller (put it on the stack or
** in an array). Once the sum has overflowed 128 bits (is_big), the key owns
** two heap arrays (big_num, big_den); tly_loadkey_free() releases them and
** must be called once for every initialised key, whether it went big or not.
** Keys must not be copied by assignment while is_big (the copies would share
** the arrays); pass pointers. The fields are private: use the functions.
*/
typedef struct tly_loadkey {
    tly_frac max;          /* the largest ratio added; 0/1 at first */
    tly_frac sum;          /* the sum in lowest terms, while !is_big */
    int is_big;            /* 1: the sum is big_num / big_den (unreduced) */
    tly_frac_big big_num;  /* owned by the key; valid while is_big */
    tly_frac_big big_den;  /* owned by the key; valid while is_big, > 0 */
} tly_loadkey;

/* An empty key: max 0, sum 0. Allocates nothing. */
void tly_loadkey_init(tly_loadkey *k);

/*
** Adds one ratio u (u.den > 0, need not be reduced): max = max(max, u),
** sum += u. Returns TLY_OK; TLY_EINVAL if u.den == 0; or TLY_ENOMEM if the
** bignum sum could not grow. On an error the key is left exactly as it was
** (a caller that ignores the result is only at risk when memory runs out).
*/
int tly_loadkey_add(tly_loadkey *k, tly_frac u);

/* Releases what the key owns and leaves it as tly_loadkey_init() does. */
void tly_loadkey_free(tly_loadkey *k);

/*
** -1, 0 or 1 as a < b, a == b, a > b: by max, then by sum, exactly.
** Allocation-free unless the two cross products need more than 8192 bits
** together (sums with dozens of large coprime denominators); if that scratch
** allocation fails, the process aborts (a comparison has no error to return).
*/
int tly_loadkey_cmp(const tly_loadkey *a, const tly_loadkey *b);

/* -1, 0 or 1 by the sums alone (the max is ignored); exact, as above. */
int tly_loadkey_cmp_sum(const tly_loadkey *a, const tly_loadkey *b);

#endif
