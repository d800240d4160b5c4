/*
** bits.h: bit tricks over 64-byte blocks that two scanners share: the
** review's value bound (valuebound.c) and the watch stream's framer
** (kube/framer.c) both find quotes, brackets and separators 64 bytes at a
** time, one bit a byte.
*/
#ifndef TALLY_BITS_H
#define TALLY_BITS_H

#include <stdint.h>

/* Bit i: the XOR of bits 0..i of x (with x the quotes, the bytes after an odd number of them). */
static inline uint64_t tly_prefix_xor(uint64_t x)
{
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

/* The bits set in x, without the popcnt instruction (not in the x86-64 baseline: a libgcc call). */
static inline unsigned tly_bit_count(uint64_t x)
{
    x -= (x >> 1) & 0x5555555555555555u;
    x = (x & 0x3333333333333333u) + ((x >> 2) & 0x3333333333333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fu;
    return (unsigned)((x * 0x0101010101010101u) >> 56);
}

#endif
