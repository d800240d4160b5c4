/*
** podreq.c: a pod's effective request (podreq.h; contract section 2,
** "Effective requests").
**
** The computation runs in four steps, each a direct transcription of a
** source:
**
**  1. Per container (k8s-pod-requests.md selectors, KAI's resize branch in
**     kai-facts.md 4.2): the spec requests; for app containers and native
**     sidecars with a container status that carries resources or
**     allocatedResources, max(spec, actual, allocated) per resource, or
**     max(actual, allocated) alone when the resize is Infeasible.
**     Non-restartable init containers always keep their spec: they have run
**     to completion and cannot be resized.
**  2. Aggregation as component-helpers' agg() does it (KEP-753 sidecars):
**     sum(app) + sum(sidecars), against the init peak, which for each init
**     container is its request plus the sidecars declared before it (and
**     for each sidecar, the sidecars up to and including it). Then the
**     pod-level override (cpu, memory, hugepages-* replace the aggregate),
**     then spec.overhead is added, then `pods: 1`.
**     Unlike upstream, which takes a max of separately summed spec, actual
**     and allocated totals, the resize max is per container (step 1), as
**     the KAI resize design charges it.
**  3. KAI GPU-sharing validation, in the order KAI's admission runs it
**     (binder gpusharing plugin Validate, then ValidateGpuRequests): GPU
**     sharing disabled with a gpu-fraction/gpu-memory annotation; mps
**     without a shared request; fraction with whole GPUs; memory with
**     fraction or whole GPUs; num-devices without fraction or memory; then
**     the memory, fraction and num-devices values. The first failure is
**     the one reported, with KAI's text.
**  4. Classification of the GPU request: fraction, gpu-memory, whole
**     devices (nvidia.com/gpu or amd.com/gpu), MIG instances.
**
** An invalid pod is still computed in full: req is always the effective
** request, since a bound invalid pod still occupies its node. The gpu_*
** fields describe the GPU request only when it is well formed: a
** GPUSharingDisabled pod whose annotations are otherwise valid keeps its
** fraction or gpu-memory classification (it is a policy refusal, not a
** malformed request); any other invalid pod has gpu_kind NONE.
**
** A gpu-fraction is read as an exact decimal (KAI's float64 range check is
** decided on its digits, see "gpu-fraction" below); only its charge goes
** through a double, because KAI's is computed in float64 and tally must
** charge the same hundredths. ceil(100 x mem / node_mem) is computed in
** 128-bit integers.
*/
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tally/error.h"
#include "tally/podreq.h"
#include "tally/quantity.h"

__extension__ typedef unsigned __int128 u128;

#define NANOS_PER_UNIT 1000000000

static const char REASON_SHARING[] = "InvalidGPUSharingRequest";
static const char REASON_DISABLED[] = "GPUSharingDisabled";
static const char REASON_RESOURCES[] = "InvalidResources";

/* KAI's admission messages (binder gpu_request_validator.go), verbatim. */
static const char MSG_FRACTION[] =
    "gpu-fraction annotation value must be a positive number smaller than 1.0";
/* Followed by the annotation's value; KAI's text, stray space and all. */
static const char MSG_NOT_A_FLOAT[] =
    "gpu-fraction annotation value must be a float written with a decimal point or a "
    "scientific notation .given value: ";
static const char MSG_MEMORY[] = "gpu-memory annotation value must be a positive integer greater than 0";
static const char MSG_COUNT[] = "fraction count annotation value must be a positive integer greater than 0";
static const char MSG_FRACTION_AND_WHOLE[] =
    "cannot have both GPU fraction request and whole GPU resource request/limit";
static const char MSG_MEMORY_AND_GPU[] = "cannot request both GPU and GPU memory";
static const char MSG_COUNT_ALONE[] =
    "cannot request multiple fractional devices without specifying fraction portion or gpu-memory";
static const char MSG_MPS[] = "MPS is only supported with GPU fraction request";

/* ---- resize ------------------------------------------------------------- */

bool tly_pod_resize_infeasible(const tly_pod *p)
{
    /* Upstream IsPodResizeInfeasible: only the first PodResizePending
       condition counts, and its status is not looked at. */
    const tly_condition *c = tly_conditions_find(&p->conditions, "PodResizePending");
    return c && c->reason && strcmp(c->reason, "Infeasible") == 0;
}

/*
** The status of the container called name. Upstream looks in
** containerStatuses first, then initContainerStatuses, for every container;
** names are unique across both lists in a valid pod, so the order only
** matters for malformed input, where it follows upstream.
*/
static const tly_container_status *find_status(const tly_pod *p, const char *name)
{
    const char *n = name ? name : "";
    for (uint32_t i = 0; i < p->nstatuses; i++)
        if (p->statuses[i].name && strcmp(p->statuses[i].name, n) == 0)
            return &p->statuses[i];
    for (uint32_t i = 0; i < p->ninit_statuses; i++)
        if (p->init_statuses[i].name && strcmp(p->init_statuses[i].name, n) == 0)
            return &p->init_statuses[i];
    return NULL;
}

/*
** ---- scratch ------------------------------------------------------------
**
** Steps 1 and 2 merge lists a dozen times per pod, and only the last list is
** kept. The intermediate ones come from a buffer on the caller's stack (the
** arena when a pod has more entries than it holds), and only the result is
** copied into the arena: one pod then costs the arena its request list
** alone, instead of every partial sum (most of the memory, and of the page
** faults, of building a 100,000-pod schedule).
*/
#define SCRATCH_ENTRIES 256

typedef struct {
    tly_rq buf[SCRATCH_ENTRIES];
    uint32_t used;
    tly_arena *a;  /* past the buffer */
} scratch;

/* Room for n entries, never NULL. */
static tly_rq *scratch_take(scratch *sc, uint32_t n)
{
    if (n <= SCRATCH_ENTRIES - sc->used) {
        tly_rq *v = sc->buf + sc->used;
        sc->used += n;
        return v;
    }
    return tly_arena_alloc(sc->a, ((size_t)n + 1) * sizeof(tly_rq));
}

static bool scratch_add(scratch *sc, const tly_rlist *x, const tly_rlist *y, tly_rlist *out)
{
    return tly_rlist_add_into(x, y, scratch_take(sc, x->n + y->n), out) == TLY_OK;
}

static void scratch_max(scratch *sc, const tly_rlist *x, const tly_rlist *y, tly_rlist *out)
{
    tly_rlist_max_into(x, y, scratch_take(sc, x->n + y->n), out);
}

/* A copy of l in the arena: what outlives the computation. */
static tly_rlist scratch_keep(const tly_rlist *l, tly_arena *a)
{
    tly_rlist out = {tly_arena_alloc(a, ((size_t)l->n + 1) * sizeof(tly_rq)), l->n};
    if (l->n)
        memcpy(out.v, l->v, l->n * sizeof(tly_rq));
    return out;
}

/*
** One container's request (step 1). resizable: an app container or a native
** sidecar. The result may share storage with the pod (spec requests); the
** caller only reads it.
*/
static tly_rlist container_request(const tly_pod *p, const tly_container *c, bool resizable,
                                   bool infeasible, scratch *sc)
{
    if (!resizable)
        return c->requests;
    const tly_container_status *st = find_status(p, c->name);
    if (!st || (!st->has_resources && !st->has_allocated))
        return c->requests;
    tly_rlist actual, out;
    /* Lists that are absent are empty, so max() simply skips them. */
    scratch_max(sc, &st->requests, &st->allocated, &actual);
    if (infeasible)
        return actual;  /* the kubelet cannot grant the spec: charge what runs */
    /* spec first: on a tie max() keeps the left operand's format. */
    scratch_max(sc, &c->requests, &actual, &out);
    return out;
}

/* ---- aggregation -------------------------------------------------------- */

/*
** A NULL name is an id of another store's table: resize admission decodes the
** reviewed pods in stores of their own and reads only cpu and memory, whose
** ids every table shares (resource.h); any other id is left unclassified.
*/
static bool is_pod_level_name(const char *name)
{
    return name && (strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
           strncmp(name, "hugepages-", 10) == 0);
}

/* Whether some entry of l is zero (zero), or below zero (!zero). */
static bool has_entry(const tly_rlist *l, bool zero)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (zero ? tly_qty_is_zero(l->v[i].q) : tly_qty_sign(l->v[i].q) < 0)
            return true;
    return false;
}

/*
** *acc += r; false on overflow (acc unchanged). Adding an empty list leaves
** every non-zero entry as it is (value and format), so it is skipped unless
** acc has a zero entry (the merge gives that one DecimalSI): most pods have
** no overhead.
*/
static bool add_into(tly_rlist *acc, const tly_rlist *r, scratch *sc)
{
    if (r->n == 0 && !has_entry(acc, true))
        return true;
    tly_rlist sum;
    if (!scratch_add(sc, acc, r, &sum))
        return false;
    *acc = sum;
    return true;
}

/* Steps 1 and 2; false when a sum overflows (the request is then partial). */
static bool effective_requests(const tly_pod *p, tly_names *names, tly_arena *a, tly_rlist *out)
{
    scratch sc;
    sc.used = 0;
    sc.a = a;
    bool infeasible = tly_pod_resize_infeasible(p);
    bool ok = true;
    tly_rlist result = {NULL, 0}, sidecars = {NULL, 0}, init_peak = {NULL, 0};

    for (uint32_t i = 0; i < p->ncontainers; i++) {
        tly_rlist r = container_request(p, &p->containers[i], true, infeasible, &sc);
        ok &= add_into(&result, &r, &sc);
    }
    for (uint32_t i = 0; i < p->ninit; i++) {
        const tly_container *c = &p->init_containers[i];
        tly_rlist r = container_request(p, c, c->restart_always, infeasible, &sc);
        tly_rlist use;
        if (c->restart_always) {
            /* A sidecar keeps running: it adds to the steady state and to
               every init container that starts after it. */
            ok &= add_into(&result, &r, &sc);
            ok &= add_into(&sidecars, &r, &sc);
            use = sidecars;
        } else {
            use = r;
            ok &= add_into(&use, &sidecars, &sc);
        }
        scratch_max(&sc, &init_peak, &use, &init_peak);
    }
    /* The max with no init container keeps every entry but a negative one (made 0): skipped without one. */
    if (init_peak.n || has_entry(&result, false))
        scratch_max(&sc, &result, &init_peak, &result);

    /* Pod-level resources replace the aggregate for the names the kubelet
       supports at pod level; other names there (ephemeral-storage) are
       ignored and the containers' values stand. result is the scratch's
       (never the pod's), so an existing entry is set in place; a new one
       costs the arena a copy (rare: few pods have pod-level resources). */
    if (p->has_pod_resources) {
        for (uint32_t i = 0; i < p->pod_requests.n; i++) {
            const tly_rq *e = &p->pod_requests.v[i];
            if (is_pod_level_name(tly_names_str(names, e->id)))
                tly_rlist_set(&result, a, e->id, e->q);
        }
    }

    ok &= add_into(&result, &p->overhead, &sc);

    tly_rq one = {TLY_R_PODS, tly_qty_from_int(1, TLY_QFMT_DECIMAL_SI)};
    tly_rlist pods = {&one, 1};
    ok &= add_into(&result, &pods, &sc);

    *out = scratch_keep(&result, a);
    return ok;
}

/* ---- GPU annotations ---------------------------------------------------- */

/*
** Go's strconv.ParseUint(s, 10, 64): decimal digits only, no sign, no
** spaces, no underscores, at most 2^64 - 1.
*/
static bool parse_uint64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    uint64_t v = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9')
            return false;
        unsigned d = (unsigned)(*c - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/*
** ---- gpu-fraction --------------------------------------------------------
**
** KAI's validator checks the text twice: strconv.ParseFloat(s, 64) must give
** f with neither f <= 0 nor f >= 1 (so NaN passes: every comparison with it is
** false), and then resource.ParseQuantity(s) must accept s. A failure of the
** first check gives MSG_FRACTION, of the second MSG_NOT_A_FLOAT with the text.
**
** The range check never turns the text into a double: it only needs to
** know where Go's float64 lands, and rounding to the nearest float64 can only
** move a value across those bounds in two places: a value just below 1 (from
** 1 - 2^-54 on, it becomes 1.0) and one at the foot of the denormals (up to
** 2^-1075, it becomes 0). Both are decided exactly on the digits. The exact
** value is kept (gpu_frac_*); the hundredths charged are KAI's float64
** arithmetic (fraction_charge).
*/

/* The pieces of a number in Go's float syntax (strconv.ParseFloat). */
typedef struct {
    bool neg;
    bool hex;          /* 0x mantissa, p exponent (a power of 2) */
    const char *mant;  /* the mantissa: digits, at most one '.', '_' separators */
    size_t mant_len;
    int64_t exp;       /* the exponent as written, saturating as Go's does */
} go_float;

/* A digit of the mantissa's base, or -1. */
static int go_digit(char c, bool hex)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (hex && (c | 0x20) >= 'a' && (c | 0x20) <= 'f')
        return (c | 0x20) - 'a' + 10;
    return -1;
}

/*
** Go's rule for digit separators: each '_' stands between two digits, or
** right after the 0x prefix and before a digit. body is the text after the
** sign and the prefix (hex says whether there was a 0x).
*/
static bool go_underscores_ok(const char *body, bool hex)
{
    for (const char *c = body; *c; c++) {
        if (*c != '_')
            continue;
        /* At the start of the body only the 0x prefix stands before it. */
        bool after = c == body ? hex : go_digit(c[-1], hex) >= 0;
        if (!after || go_digit(c[1], hex) < 0)
            return false;
    }
    return true;
}

/* Go's "inf", "infinity" (either with a sign) and "nan", in any case. */
static bool go_special(const char *s, bool *nan)
{
    const char *c = s + (*s == '+' || *s == '-');
    *nan = c == s && strcasecmp(c, "nan") == 0;
    return *nan || strcasecmp(c, "inf") == 0 || strcasecmp(c, "infinity") == 0;
}

/*
** Splits s as strconv.ParseFloat's syntax reads it; false where ParseFloat
** reports a syntax error. The whole text must be the number.
*/
static bool go_float_read(const char *s, go_float *f)
{
    const char *c = s;
    memset(f, 0, sizeof *f);
    if (*c == '+' || *c == '-')
        f->neg = *c++ == '-';
    /* "0x" is a prefix only with something after it ("0x" alone is 0 and a stray x). */
    if (c[0] == '0' && (c[1] | 0x20) == 'x' && c[2] != '\0') {
        f->hex = true;
        c += 2;
    }
    f->mant = c;
    bool dot = false, digits = false;
    for (; *c == '_' || *c == '.' || go_digit(*c, f->hex) >= 0; c++) {
        if (*c == '.') {
            if (dot)
                break;
            dot = true;
        } else if (*c != '_') {
            digits = true;
        }
    }
    if (!digits)
        return false;
    f->mant_len = (size_t)(c - f->mant);
    if ((*c | 0x20) == (f->hex ? 'p' : 'e')) {
        c++;
        int64_t sign = 1;
        if (*c == '+' || *c == '-')
            sign = *c++ == '-' ? -1 : 1;
        if (*c < '0' || *c > '9')
            return false;
        int64_t e = 0;
        /* Go stops growing the exponent at 10000: far beyond any float. */
        for (; (*c >= '0' && *c <= '9') || *c == '_'; c++)
            if (*c != '_' && e < 10000)
                e = e * 10 + (*c - '0');
        f->exp = sign * e;
    } else if (f->hex) {
        return false;  /* a hexadecimal mantissa needs its p exponent */
    }
    if (*c != '\0')
        return false;
    return go_underscores_ok(f->mant, f->hex);
}

/* Walks the significant digits of a mantissa: leading zeros skipped, then every digit. */
typedef struct {
    const char *c, *end;
    bool hex, started;
} digit_walk;

static digit_walk digits_of(const go_float *f)
{
    return (digit_walk){f->mant, f->mant + f->mant_len, f->hex, false};
}

/* The next significant digit, 0 once past the end (the digits go on as zeros). */
static int next_digit(digit_walk *w)
{
    for (; w->c < w->end; w->c++) {
        int d = go_digit(*w->c, w->hex);
        if (d < 0 || (d == 0 && !w->started))
            continue;
        w->started = true;
        w->c++;
        return d;
    }
    return 0;
}

/* Whether any significant digit is left. */
static bool digits_left(digit_walk w)
{
    for (; w.c < w.end; w.c++)
        if (go_digit(*w.c, w.hex) > 0)
            return true;
    return false;
}

/*
** Where the point stands: the value is 0.D x base^point, D being the
** significant digits (Go's decimal "dp"); *nonzero says whether D is not
** empty. Leading zeros before the point do not count, after it they do.
*/
static int64_t point_of(const go_float *f, bool *nonzero)
{
    int64_t point = 0, nd = 0;
    bool dot = false;
    for (size_t i = 0; i < f->mant_len; i++) {
        char ch = f->mant[i];
        int d = go_digit(ch, f->hex);
        if (ch == '.') {
            dot = true;
            point = nd;
        } else if (d == 0 && nd == 0) {
            point--;
        } else if (d > 0 || nd > 0) {
            nd++;
        }
    }
    *nonzero = nd > 0;
    return dot ? point : nd;
}

/* The decimal digits of 5^n into buf (cap >= 1 + n * 0.7), most significant first. */
static void pow5_digits(unsigned n, char *buf, size_t cap)
{
    /* Little-endian digits while multiplying, reversed at the end. */
    size_t len = 1;
    buf[0] = 1;
    for (unsigned k = 0; k < n; k++) {
        unsigned carry = 0;
        for (size_t i = 0; i < len; i++) {
            unsigned v = (unsigned)buf[i] * 5 + carry;
            buf[i] = (char)(v % 10);
            carry = v / 10;
        }
        if (carry && len + 1 < cap)
            buf[len++] = (char)carry;
    }
    for (size_t i = 0; i < len / 2; i++) {
        char t = buf[i];
        buf[i] = buf[len - 1 - i];
        buf[len - 1 - i] = t;
    }
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)(buf[i] + '0');
    buf[len] = '\0';
}

/* T of 1 - 2^-54 = 0.T: the 54 digits of 10^54 - 5^54. */
static const char ONE_MINUS_2_54_DIGITS[] = "999999999999999944488848768742172978818416595458984375";

/* Compares 0.D (the walk's digits) with 0.t (a digit string): <0, 0, >0. */
static int cmp_fraction_digits(digit_walk w, const char *t)
{
    for (; *t; t++) {
        int d = next_digit(&w);
        if (d != *t - '0')
            return d - (*t - '0');
    }
    return digits_left(w) ? 1 : 0;
}

/*
** A positive decimal 0.D x 10^point strictly between 0 and 1 once rounded to
** the nearest float64 (ties to even): below 1 - 2^-54 and above 2^-1075.
** 1 - 2^-54 = 0.T with T the 54 digits of 10^54 - 5^54; 2^-1075 = 0.U x
** 10^-323 with U the 752 digits of 5^1075.
*/
static bool decimal_in_unit(const go_float *f, int64_t point)
{
    if (point >= 1)
        return false;
    if (point <= -324)
        return false;  /* below 10^-324 < 2^-1075: 0 */
    if (point == 0) {
        /*
        ** 10^54 - 5^54 (5^54 has 38 digits), written out: every fraction
        ** annotation of the form 0.x compares against it, and working it
        ** out per pod was 16,000 instructions (test_podreq checks the digits
        ** against the tie at 0.T, rows 29-30 of tests/vectors/gpu-fraction.tsv).
        */
        return cmp_fraction_digits(digits_of(f), ONE_MINUS_2_54_DIGITS) < 0;
    }
    if (point == -323) {
        char u[800];
        pow5_digits(1075, u, sizeof u);
        return cmp_fraction_digits(digits_of(f), u) > 0;
    }
    return true;
}

/* The number of bits in a hexadecimal digit 1..15. */
static int bit_length(int d)
{
    return d >= 8 ? 4 : d >= 4 ? 3 : d >= 2 ? 2 : 1;
}

/*
** A positive hexadecimal 0.H x 16^point x 2^exp strictly between 0 and 1
** once rounded to float64. With its top bit at 2^top: top >= 0 is at least
** 1; top == -1 rounds to 1 when its first 54 bits are all ones (it is then
** at least 1 - 2^-54); top == -1075 rounds to 0 when it is exactly 2^-1075;
** lower rounds to 0.
*/
static bool hex_in_unit(const go_float *f, int64_t point)
{
    digit_walk w = digits_of(f);
    int first = next_digit(&w);
    int bl = bit_length(first);
    int64_t top = 4 * point + bl - 5 + f->exp;
    if (top >= 0 || top <= -1076)
        return false;
    if (top == -1075)
        return (first & ((1 << (bl - 1)) - 1)) != 0 || digits_left(w);
    if (top != -1)
        return true;
    int ones = 0;
    for (int d = first, bits = bl; ones < 54; d = next_digit(&w), bits = 4) {
        for (int b = bits - 1; b >= 0 && ones < 54; b--) {
            if (!(d >> b & 1))
                return true;
            ones++;
        }
    }
    return false;
}

/* KAI's first check: ParseFloat succeeds and neither f <= 0 nor f >= 1. */
static bool go_fraction_in_range(const char *s)
{
    bool nan;
    if (go_special(s, &nan))
        return nan;  /* +-Inf fail a bound; NaN fails none */
    go_float f;
    if (!go_float_read(s, &f))
        return false;
    bool nonzero;
    int64_t point = point_of(&f, &nonzero);
    if (f.neg || !nonzero)
        return false;  /* negative, or zero (-0 included) */
    return f.hex ? hex_in_unit(&f, point) : decimal_in_unit(&f, point + f.exp);
}

/*
** KAI's GPUs() charge for f: math.Round(f * 100) in float64, half away from
** zero. It is not the exact decimal rounded: 0.285 is the double
** 0.28499999999999998, times 100 is 28.499999999999996, so 28, not 29
** (0.145 -> 14, 0.575 -> 57). Only a plain decimal reaches here (the
** quantity check refuses hex floats and '_'), and for one glibc's strtod,
** like Go's ParseFloat, gives the nearest double (tally never sets a locale,
** so the point is '.'); the product and round() are the same IEEE double
** operations as Go's.
*/
static uint32_t kai_hundredths(const char *s)
{
    return (uint32_t)round(strtod(s, NULL) * 100.0);  /* 0 < f < 1: 0..100 */
}

/*
** The charge of a fraction both checks accept (a plain decimal, 0 < f < 1):
** f exactly as num / 10^scale, and the hundredths KAI charges for it.
*/
static void fraction_charge(const char *s, tly_podreq *out)
{
    go_float f;
    bool nonzero;
    go_float_read(s, &f);
    int64_t point = point_of(&f, &nonzero) + f.exp;  /* -323 <= point <= 0 */
    digit_walk w = digits_of(&f);
    uint64_t num = 0;
    int64_t scale = -point;
    for (int i = 0; i < 19 && digits_left(w); i++, scale++)
        num = num * 10 + (uint64_t)next_digit(&w);
    if (digits_left(w))
        num++;  /* more than 19 significant digits: never below the text */
    for (; num % 10 == 0 && scale > 0; scale--)
        num /= 10;
    out->gpu_frac_num = num;
    out->gpu_frac_scale = (uint32_t)scale;
    out->gpu_portion = kai_hundredths(s);
}

/* Both of KAI's checks; NULL when s is a valid fraction, else KAI's message. */
static const char *fraction_error(const char *s, tly_arena *a)
{
    tly_qty q;
    if (!go_fraction_in_range(s))
        return MSG_FRACTION;
    if (tly_qty_parse_str(s, &q) != TLY_OK)
        return tly_arena_printf(a, "%s%s", MSG_NOT_A_FLOAT, s);
    return NULL;
}

/* Whether any container or init container names resource id in its spec requests or limits. */
static bool spec_names(const tly_pod *p, uint32_t id)
{
    bool found = false;
    for (uint32_t i = 0; i < p->ncontainers && !found; i++) {
        tly_rlist_get(&p->containers[i].requests, id, &found);
        if (!found)
            tly_rlist_get(&p->containers[i].limits, id, &found);
    }
    for (uint32_t i = 0; i < p->ninit && !found; i++) {
        tly_rlist_get(&p->init_containers[i].requests, id, &found);
        if (!found)
            tly_rlist_get(&p->init_containers[i].limits, id, &found);
    }
    return found;
}

static void set_invalid(tly_podreq *out, const char *reason, const char *message)
{
    if (out->invalid)
        return;  /* the first failure is the one reported */
    out->invalid = true;
    out->reason = reason;
    out->message = message;
}

/* ---- MIG ---------------------------------------------------------------- */

/*
** ^nvidia.com/mig-(\d+)g\.(\d+)gb$: *g receives the first number (the
** GPU slices, i.e. the GPUs each instance is charged as). Numbers too large
** for 32 bits do not match: no MIG profile comes close.
*/
static bool mig_profile(const char *name, uint32_t *g)
{
    static const char prefix[] = "nvidia.com/mig-";
    if (!name || strncmp(name, prefix, sizeof prefix - 1) != 0)  /* NULL: see is_pod_level_name */
        return false;
    const char *c = name + sizeof prefix - 1;
    uint64_t v = 0;
    int nd = 0;
    for (; *c >= '0' && *c <= '9'; c++, nd++) {
        v = v * 10 + (uint64_t)(*c - '0');
        if (v > UINT32_MAX)
            return false;
    }
    if (!nd || strncmp(c, "g.", 2) != 0)
        return false;
    c += 2;
    nd = 0;
    for (; *c >= '0' && *c <= '9'; c++)
        nd++;
    if (!nd || strcmp(c, "gb") != 0)
        return false;
    *g = (uint32_t)v;
    return true;
}

/* ---- the request -------------------------------------------------------- */

/*
** A device count from a request: a whole, non-negative number that fits
** in 32 bits. The decoder reports non-integer extended resources too; here
** it decides whether the pod can be accounted at all.
*/
static bool device_count(tly_qty q, uint32_t *out)
{
    if (q.nanos < 0 || q.nanos % NANOS_PER_UNIT != 0 || q.nanos / NANOS_PER_UNIT > UINT32_MAX)
        return false;
    *out = (uint32_t)(q.nanos / NANOS_PER_UNIT);
    return true;
}

static const char *bad_count_message(tly_names *names, uint32_t id, tly_qty q, tly_arena *a)
{
    char buf[TLY_QTY_BUFSZ];
    tly_qty_format(q, buf, sizeof buf);
    const char *name = tly_names_str(names, id);
    return tly_arena_printf(a, "%s request %s must be a whole number of devices", name ? name : "?", buf);
}

void tly_podreq_compute(const tly_pod *p, bool gpu_sharing, tly_names *names, tly_arena *a,
                        tly_podreq *out)
{
    memset(out, 0, sizeof *out);
    out->gpu_resource = TLY_R_NVIDIA_GPU;

    if (!effective_requests(p, names, a, &out->req))
        set_invalid(out, REASON_RESOURCES, "the pod's resource requests overflow");

    /* Whole GPUs: what the effective request charges (> 0). */
    tly_qty nv = tly_rlist_get(&out->req, TLY_R_NVIDIA_GPU, NULL);
    tly_qty amd = tly_rlist_get(&out->req, TLY_R_AMD_GPU, NULL);
    if (tly_qty_sign(amd) > 0)
        out->gpu_resource = TLY_R_AMD_GPU;
    uint32_t whole = 0, n;
    /* The API server rejects a fractional device count before any
       admission webhook runs, so this is checked first. */
    if (tly_qty_sign(nv) > 0) {
        if (device_count(nv, &n))
            whole += n;
        else
            set_invalid(out, REASON_RESOURCES, bad_count_message(names, TLY_R_NVIDIA_GPU, nv, a));
    }
    if (tly_qty_sign(amd) > 0) {
        /* A pod naming both vendors is charged for both, under amd.com/gpu. */
        if (!device_count(amd, &n))
            set_invalid(out, REASON_RESOURCES, bad_count_message(names, TLY_R_AMD_GPU, amd, a));
        else if (whole > UINT32_MAX - n)
            set_invalid(out, REASON_RESOURCES, "GPU requests exceed 4294967295 devices");
        else
            whole += n;
    }

    /* MIG instances: G GPUs per instance of a <G>g.<M>gb profile. */
    uint64_t mig = 0;
    for (uint32_t i = 0; i < out->req.n; i++) {
        uint32_t g;
        const tly_rq *e = &out->req.v[i];
        if (!mig_profile(tly_names_str(names, e->id), &g) || tly_qty_sign(e->q) <= 0)
            continue;
        if (!device_count(e->q, &n)) {
            set_invalid(out, REASON_RESOURCES, bad_count_message(names, e->id, e->q, a));
            continue;
        }
        mig += (uint64_t)g * n;
        if (mig > UINT32_MAX) {
            set_invalid(out, REASON_RESOURCES, "MIG requests exceed 4294967295 GPUs");
            mig = 0;
            break;
        }
    }

    /* KAI's annotations. */
    const tly_kvs *ann = &p->meta.annotations;
    const char *frac_s = tly_kvs_get(ann, "gpu-fraction");
    const char *mem_s = tly_kvs_get(ann, "gpu-memory");
    const char *count_s = tly_kvs_get(ann, "gpu-fraction-num-devices");
    const char *mps_s = tly_kvs_get(ann, "mps");
    /* KAI looks for the resource key in any container's limits; with
       defaulting a request implies the limit, and an explicit 0 counts. */
    bool whole_named = spec_names(p, TLY_R_NVIDIA_GPU) || spec_names(p, TLY_R_AMD_GPU) || whole > 0;
    bool shared = frac_s || mem_s;

    const char *err = NULL;
    uint64_t mem = 0, count = 1;
    if (!shared && mps_s && strcmp(mps_s, "true") == 0)
        err = MSG_MPS;
    else if (frac_s && whole_named)
        err = MSG_FRACTION_AND_WHOLE;
    else if (mem_s && (frac_s || whole_named))
        err = MSG_MEMORY_AND_GPU;
    else if (count_s && !shared)
        err = MSG_COUNT_ALONE;
    else if (mem_s && (!parse_uint64(mem_s, &mem) || mem == 0))
        err = MSG_MEMORY;
    else if (frac_s)
        err = fraction_error(frac_s, a);
    if (!err && count_s && (!parse_uint64(count_s, &count) || count == 0 || count > UINT32_MAX))
        err = MSG_COUNT;  /* more than 2^32 - 1 devices can never be placed */

    /* Sharing disabled is checked before the request itself (KAI's plugin
       does so), but a well-formed shared request is still classified. */
    if (shared && !gpu_sharing)
        set_invalid(out, REASON_DISABLED,
                    tly_arena_printf(a,
                                     "attempting to create a pod %s/%s with gpu sharing "
                                     "request, while GPU sharing is disabled",
                                     p->meta.ns ? p->meta.ns : "",
                                     p->meta.name ? p->meta.name : ""));
    if (err)
        set_invalid(out, REASON_SHARING, err);
    bool classify = !out->invalid || (out->reason == REASON_DISABLED && !err);
    if (!classify)
        return;

    if (frac_s) {
        out->gpu_kind = TLY_GPU_FRACTION;
        fraction_charge(frac_s, out);
        out->gpu_devices = (uint32_t)count;
    } else if (mem_s) {
        out->gpu_kind = TLY_GPU_MEMORY;
        out->gpu_memory_mib = mem;
        out->gpu_devices = (uint32_t)count;
    } else if (whole > 0) {
        out->gpu_kind = TLY_GPU_WHOLE;
        out->gpu_devices = whole;
    } else if (mig > 0) {
        out->gpu_kind = TLY_GPU_MIG;
        out->mig_gpus = (uint32_t)mig;
    }
}

uint64_t tly_podreq_gpu_hundredths(const tly_podreq *r, uint64_t node_gpu_mem_mib)
{
    u128 h = 0;
    switch (r->gpu_kind) {
    case TLY_GPU_WHOLE:
        h = (u128)100 * r->gpu_devices;
        break;
    case TLY_GPU_FRACTION:
        h = (u128)r->gpu_portion * r->gpu_devices;
        break;
    case TLY_GPU_MEMORY:
        if (node_gpu_mem_mib == 0)
            return 0;
        /* ceil(100 x mem / node_mem), in 128 bits so 100 x mem cannot wrap. */
        h = ((u128)100 * r->gpu_memory_mib + node_gpu_mem_mib - 1) / node_gpu_mem_mib;
        h *= r->gpu_devices;
        break;
    case TLY_GPU_MIG:
        h = (u128)100 * r->mig_gpus;
        break;
    default:
        return 0;
    }
    return h > UINT64_MAX ? UINT64_MAX : (uint64_t)h;
}
