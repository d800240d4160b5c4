/*
** quantity.h: exact Kubernetes resource quantities (resource.Quantity).
**
** A tly_qty holds a signed count of nano-units (10^-9) in a 128-bit integer,
** plus the format the value was written in. Kubernetes keeps 1n precision
** (finer input rounds away from zero), so every quantity a cluster can hold
** is an integer number of nano-units; 128 bits hold magnitudes up to
** (2^127-1) nano-units, about 1.7e29 units: a cluster-wide sum of memory in
** bytes (1e20 for 100 EB) or of CPU in nano-cores stays far inside it, so
** accounting arithmetic is exact and never needs floating point.
** Inputs whose magnitude does not fit are rejected with TLY_ERANGE rather than
** silently changed (upstream's arbitrary-precision path would accept them).
**
** Formats follow upstream: DecimalSI (k, M, G, ... and m, u, n), BinarySI
** (Ki, Mi, ...), DecimalExponent (1e3). The canonical form printed by
** tly_qty_format() is upstream's String() of the same value.
*/
#ifndef TALLY_QUANTITY_H
#define TALLY_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/error.h"

__extension__ typedef __int128 tly_i128;

typedef enum {
    TLY_QFMT_DECIMAL_SI = 0,
    TLY_QFMT_BINARY_SI = 1,
    TLY_QFMT_DECIMAL_EXP = 2
} tly_qfmt;

typedef struct {
    tly_i128 nanos; /* the value times 10^9, exactly */
    uint8_t fmt;    /* a tly_qfmt */
} tly_qty;

/* Room for any canonical quantity string plus its NUL. */
#define TLY_QTY_BUFSZ 64

/* The largest magnitude a tly_qty can hold, in nano-units. */
#define TLY_QTY_MAX_NANOS ((tly_i128)(((unsigned __int128)1 << 127) - 1))

/*
** Parses s[0..len) as a Kubernetes quantity. Returns TLY_OK, TLY_EINVAL for
** text upstream rejects, or TLY_ERANGE for a well-formed value beyond
** TLY_QTY_MAX_NANOS. No leading or trailing space is allowed (as upstream).
*/
int tly_qty_parse(const char *s, size_t len, tly_qty *out);

/* Same, for a NUL-terminated string. */
int tly_qty_parse_str(const char *s, tly_qty *out);

/*
** Writes the canonical form of q into buf (at least TLY_QTY_BUFSZ bytes) and
** returns its length.
*/
size_t tly_qty_format(tly_qty q, char *buf, size_t cap);

/*
** q for people (reports and tables), never for arithmetic: a number with
** thousands separators, rounded half up on the exact value, trailing zeros
** dropped. TLY_HUMAN_CORES: "23,525.3 cores" (2 decimals); TLY_HUMAN_BYTES:
** binary units, "168.1 TiB" (1 decimal); TLY_HUMAN_DEVICES: GPUs, "1,987.51"
** (2 decimals); TLY_HUMAN_NUMBER: "4", "0.25" (2 decimals). Writes at most
** TLY_QTY_BUFSZ bytes into buf and returns buf.
*/
typedef enum { TLY_HUMAN_NUMBER, TLY_HUMAN_CORES, TLY_HUMAN_BYTES, TLY_HUMAN_DEVICES } tly_human_unit;
const char *tly_qty_human(tly_qty q, tly_human_unit unit, char *buf);

/* -1, 0 or 1 as a < b, a == b, a > b (formats are ignored). */
static inline int tly_qty_cmp(tly_qty a, tly_qty b)
{
    return a.nanos < b.nanos ? -1 : a.nanos > b.nanos;
}

/*
** The format of a + b or a - b: a zero operand takes no part (the result has
** the other's format, b's when both are zero, as upstream's Add and Sub), equal
** formats are kept, mixed ones give DecimalSI.
*/
static inline uint8_t tly_qty_result_fmt(tly_qty a, tly_qty b)
{
    if (a.nanos == 0)
        return b.fmt;
    if (b.nanos == 0 || a.fmt == b.fmt)
        return a.fmt;
    return TLY_QFMT_DECIMAL_SI;
}

/* The range is symmetric: -TLY_QTY_MAX_NANOS .. TLY_QTY_MAX_NANOS. */
static inline bool tly_qty_in_range(tly_i128 v)
{
    return v >= -TLY_QTY_MAX_NANOS;
}

/*
** a + b and a - b. The result's format: if one operand is zero, the other's;
** if both have the same format, that format; else DecimalSI (contract sec. 3).
** Returns TLY_ERANGE (and leaves *out unchanged) on overflow. Inline: the
** engines' resource checks and ledgers run them millions of times.
*/
static inline int tly_qty_add(tly_qty a, tly_qty b, tly_qty *out)
{
    tly_i128 r;

    if (__builtin_add_overflow(a.nanos, b.nanos, &r) || !tly_qty_in_range(r))
        return TLY_ERANGE;
    out->fmt = tly_qty_result_fmt(a, b);
    out->nanos = r;
    return TLY_OK;
}

static inline int tly_qty_sub(tly_qty a, tly_qty b, tly_qty *out)
{
    tly_i128 r;

    if (__builtin_sub_overflow(a.nanos, b.nanos, &r) || !tly_qty_in_range(r))
        return TLY_ERANGE;
    out->fmt = tly_qty_result_fmt(a, b);
    out->nanos = r;
    return TLY_OK;
}

/* -q (same format). Never overflows: the range is symmetric. */
tly_qty tly_qty_neg(tly_qty q);

/*
** Value() and MilliValue(): the value in units or milli-units rounded away
** from zero. TLY_ERANGE if that does not fit in int64.
*/
int tly_qty_value(tly_qty q, int64_t *out);
int tly_qty_milli(tly_qty q, int64_t *out);

/*
** Kubernetes' Quantity.AsInt64() applied to a literal: succeeds (TLY_OK,
** *out set) exactly when upstream's parse takes the int64 fast path with a
** scale >= 0 and the value fits, so "1", "1k", "1e3", "1Ki" succeed while
** "2000m", "1.0", "0.5Ki" fail with TLY_EINVAL even though some are whole.
** Used for kruntimes Run requests, which upstream validates this way.
*/
int tly_qty_literal_int64(const char *s, size_t len, int64_t *out);

/* Helpers for building quantities in code. */
tly_qty tly_qty_from_int(int64_t v, tly_qfmt fmt);
tly_qty tly_qty_from_milli(int64_t m, tly_qfmt fmt);
static inline bool tly_qty_is_zero(tly_qty q) { return q.nanos == 0; }
static inline int tly_qty_sign(tly_qty q) { return q.nanos < 0 ? -1 : q.nanos > 0; }

#endif
