/*
** anonymize_order.c: choosing the anonymizer's tokens (anonymize_int.h).
**
** Every distinct string of the input is an entry, kept or renamed. Sorted in
** byte order, the kept entries cut the line into gaps, and the renamed
** strings of a gap must get tokens inside that same gap, in the same order:
** that is what keeps every comparison, kept strings included (contract
** section 9). A gap (lo, hi) holds only strings that start with the common
** prefix of lo and hi, so its shortest strings have that prefix's length
** plus one; the tokens are those shortest strings, length by length, until
** there are as many as renamed strings, then handed out in order.
**
** Tokens come from the narrowest alphabet that has room, so that they stay
** valid where their originals were:
**   A  DNS labels: [a-z0-9], '-' inside, at most 63 bytes (object names);
**   B  label values: [A-Za-z0-9], '-', '_' and '.' inside, at most 63 bytes;
**   C  printable ASCII without space, quotes, backslash or '/', at most 253.
** A gap without room in any of them (two kept strings as close as "x" and
** "x-" with renamed strings between) keeps its strings as they are, and the
** count is reported. A token is never an original string, never text tally
** reads as a number, quantity or time, never starts with a prefix tally
** treats specially (system-, hugepages-, requests.) and never contains
** "gpu" (a DRA class or driver whose name has it counts as a GPU), except
** where the gap forces it: a gap's strings all share the common prefix of
** its ends, originals included.
*/
#include <stdlib.h>
#include <string.h>

#include "anonymize_int.h"
#include "tally/decode.h"
#include "tally/dra.h"
#include "tally/error.h"
#include "tally/node.h"
#include "tally/quantity.h"

typedef struct {
    /* nx_end[c]: the smallest byte > c allowed at the ends, 0 if none (also for mid). */
    unsigned char nx_end[256], nx_mid[256];
    bool ok_end[256], ok_mid[256];
    size_t maxlen;
} alphabet;

typedef struct {
    const tly_strmap *known;
    tly_arena *a;
    alphabet tier[3];
} chooser;

/* ---- byte order ---------------------------------------------------------- */

static int bytecmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

static int cmp_entry(const void *pa, const void *pb)
{
    const tly_anon_entry *a = *(tly_anon_entry *const *)pa, *b = *(tly_anon_entry *const *)pb;
    return bytecmp(a->s, a->len, b->s, b->len);
}

static int cmp_cstr(const void *pa, const void *pb)
{
    const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
    return bytecmp(a, strlen(a), b, strlen(b));
}

/* ---- alphabets ----------------------------------------------------------- */

static bool is_lower_alnum(int c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static bool is_alnum(int c) { return is_lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

static void alphabet_finish(alphabet *al, size_t maxlen)
{
    al->maxlen = maxlen;
    unsigned char ne = 0, nm = 0;
    for (int c = 255; c >= 0; c--) {
        al->nx_end[c] = ne;
        al->nx_mid[c] = nm;
        if (al->ok_end[c])
            ne = (unsigned char)c;
        if (al->ok_mid[c])
            nm = (unsigned char)c;
    }
}

static void alphabets_init(alphabet t[3])
{
    memset(t, 0, 3 * sizeof *t);
    for (int c = 1; c < 256; c++) {
        t[0].ok_end[c] = is_lower_alnum(c);
        t[0].ok_mid[c] = is_lower_alnum(c) || c == '-';
        t[1].ok_end[c] = is_alnum(c);
        t[1].ok_mid[c] = is_alnum(c) || c == '-' || c == '_' || c == '.';
        t[2].ok_end[c] = t[2].ok_mid[c] = c > ' ' && c < 0x7f && c != '"' && c != '\\' && c != '/';
    }
    alphabet_finish(&t[0], 63);
    alphabet_finish(&t[1], 63);
    alphabet_finish(&t[2], TLY_ANON_TOKEN_MAX);
}

/* The first tier (0 = DNS label, 1 = label value, 2 = printable) s belongs to; 3 for none. */
static int tier_of(const alphabet t[3], const char *s, size_t len)
{
    for (int k = 0; k < 3; k++) {
        bool ok = len > 0 && len <= t[k].maxlen && t[k].ok_end[(unsigned char)s[0]] &&
                  t[k].ok_end[(unsigned char)s[len - 1]];
        for (size_t i = 1; ok && i + 1 < len; i++)
            ok = t[k].ok_mid[(unsigned char)s[i]];
        if (ok)
            return k;
    }
    return 3;
}

/*
** The smallest string of exactly len bytes in the alphabet that sorts after
** x, into out (len + 1 bytes); false if there is none. It shares the
** longest possible prefix with x, raises the byte after it as little as
** possible (or appends one when the prefix is all of x) and fills the rest
** with the smallest bytes allowed.
*/
static bool smallest_above(const alphabet *al, const char *x, size_t xl, size_t len, char *out)
{
    size_t valid = 0;  /* x[0..valid) may stand at the front of a longer string */
    if (xl && al->ok_end[(unsigned char)x[0]])
        for (valid = 1; valid < xl && al->ok_mid[(unsigned char)x[valid]]; valid++)
            ;
    size_t p = xl < len - 1 ? xl : len - 1;
    if (p > valid)
        p = valid;
    for (;; p--) {
        const unsigned char *nx = (p == 0 || p == len - 1) ? al->nx_end : al->nx_mid;
        unsigned char c = p == xl ? nx[0] : nx[(unsigned char)x[p]];
        if (c) {
            memmove(out, x, p);
            out[p] = (char)c;
            for (size_t i = p + 1; i < len; i++)
                out[i] = (char)(i == len - 1 ? al->nx_end[0] : al->nx_mid[0]);
            out[len] = '\0';
            return true;
        }
        if (p == 0)
            return false;
    }
}

/* ---- what a token may be ------------------------------------------------- */

bool tly_anon_pattern_kept(const char *s, size_t len)
{
    if (tly_plain_scalar_type(s, len, NULL) != TLY_N_STRING)
        return true;  /* "", null, true/false, integers, floats */
    tly_qty q;
    if (tly_qty_parse(s, len, &q) != TLY_EINVAL)
        return true;  /* a quantity, even one too large to hold */
    int64_t t;
    return len >= 20 && memchr(s, '\0', len) == NULL && tly_parse_time(s, &t);
}

/* Whether t starts with p where the gap does not force it (every string of the gap shares m bytes). */
static bool new_prefix(const char *t, const char *p, size_t m)
{
    size_t pl = strlen(p);
    return m < pl && strncmp(t, p, pl) == 0;
}

/*
** Whether t may be a token of the gap whose strings all share their first m
** bytes: what the gap forces on every string, originals included, is no
** reason to refuse it (between the kept gpu-fraction and gpu-memory every
** string says "gpu").
*/
static bool acceptable(const chooser *ch, const char *t, size_t len, size_t m)
{
    return !tly_strmap_get(ch->known, t, len) && !tly_anon_pattern_kept(t, len) &&
           !tly_dra_is_gpu_name(t + (m > 2 ? m - 2 : 0)) && !new_prefix(t, "system-", m) &&
           !new_prefix(t, "hugepages-", m) && !new_prefix(t, "requests.", m);
}

/* ---- gaps ---------------------------------------------------------------- */

static size_t common_prefix(const tly_anon_entry *a, const tly_anon_entry *b)
{
    size_t n = 0;
    while (n < a->len && n < b->len && a->s[n] == b->s[n])
        n++;
    return n;
}

/*
** Up to k acceptable tokens of one alphabet strictly between lo and hi (hi
** NULL: no upper bound), shortest first, returned sorted. Returns how many.
** Refusals are rare, but the candidates looked at are bounded all the same,
** so that no input can make the search run long.
*/
static size_t pick(const chooser *ch, const alphabet *al, const tly_anon_entry *lo,
                   const tly_anon_entry *hi, size_t k, const char **out)
{
    size_t got = 0, m = hi ? common_prefix(lo, hi) : 0, budget = 4096 + 64 * k;
    char buf[2][TLY_ANON_TOKEN_MAX + 1];
    for (size_t len = m + 1; len <= al->maxlen && got < k && budget; len++) {
        const char *x = lo->s;
        size_t xl = lo->len;
        for (int b = 0; got < k && budget && smallest_above(al, x, xl, len, buf[b]); b ^= 1) {
            if (hi && bytecmp(buf[b], len, hi->s, hi->len) >= 0)
                break;
            budget--;
            if (acceptable(ch, buf[b], len, m))
                out[got++] = tly_arena_strndup(ch->a, buf[b], len);
            x = buf[b];
            xl = len;
        }
    }
    qsort(out, got, sizeof *out, cmp_cstr);
    return got;
}

/* The renamed entries v[0..k) lie between the kept lo and hi (or the end). */
static void fill_gap(const chooser *ch, tly_anon_entry **v, size_t k, const tly_anon_entry *lo,
                     const tly_anon_entry *hi, bool reverse, tly_anon_stats *st)
{
    const char **tok = tly_xmalloc(k * sizeof *tok);
    for (int t = 0; t < 3; t++) {
        if (pick(ch, &ch->tier[t], lo, hi, k, tok) < k)
            continue;
        for (size_t i = 0; i < k; i++) {
            const char *tk = tok[reverse ? k - 1 - i : i];
            v[i]->token = tk;
            if (tier_of(ch->tier, tk, strlen(tk)) > tier_of(ch->tier, v[i]->s, v[i]->len))
                st->downgraded++;
        }
        st->renamed += k;
        free(tok);
        return;
    }
    for (size_t i = 0; i < k; i++)
        v[i]->kept = true;
    st->stuck += k;
    st->kept += k;
    free(tok);
}

void tly_anon_choose(tly_anon_entry **v, size_t n, const tly_strmap *known, tly_arena *a,
                     bool reverse, tly_anon_stats *st)
{
    memset(st, 0, sizeof *st);
    chooser ch = {.known = known, .a = a};
    alphabets_init(ch.tier);
    qsort(v, n, sizeof *v, cmp_entry);
    /* The anonymizer always holds "" as kept; this stands in for it otherwise. */
    static const tly_anon_entry bottom = {"", 0, true, NULL};
    size_t i = 0;
    while (i < n) {
        if (v[i]->kept) {
            st->kept++;
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && !v[j]->kept)
            j++;
        fill_gap(&ch, v + i, j - i, i ? v[i - 1] : &bottom, j < n ? v[j] : NULL, reverse, st);
        i = j;
    }
}
