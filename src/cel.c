/*
** cel.c: tally's CEL (cel.h has the language and the two environments).
**
** An expression is parsed once into a small tree in the caller's arena;
** operators and function names are resolved to numbers then, and literal
** quantity() and semver() calls are folded into values, so that evaluating
** a program (per object for a rule, per device per candidate node for a
** selector) does no string dispatch and no parsing. In the device
** environment, device.driver, device.attributes["d"].name and
** device.capacity["d"].name are folded into single nodes read straight from
** the tly_device, and a checker gives every node a static type (an
** attribute's is unknown: "dyn") and refuses what placement does not
** evaluate, with the column of the construct, before anything runs.
**
** Values are either views of the loader's tree (maps, lists, scalars read
** from it), of a device (its attributes and capacities), or made here
** (strings from split, lists from map()) in an arena created only when a
** value is made. Two kinds of failure are kept apart, since they mean
** different things to a user: ERROR is CEL's own runtime error (a missing
** key, wrong operand types), which makes the API server refuse an object and
** a device not match; UNSUPPORTED is tally not knowing a construct, which
** must never be reported as a pass or as a refusal. && and || absorb errors
** as CEL's commutative logic does: false && error is false. Selectors
** evaluate quietly: an error there only means "no match", so no message is
** formatted for it (a device of another driver errs on every attribute).
**
** Exactness: ints are checked for overflow; quantities are tly_qty (nano
** units in 128 bits), compared and added exactly; versions are semantic
** versions (blang/semver's rules, which Kubernetes' semver library uses).
** Doubles exist only in rules, as CEL has them.
*/
#include "tally/cel.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- device names --------------------------------------------------------- */

bool tly_cel_device_name_is(const char *have, const char *driver, const char *domain, const char *id)
{
    const char *slash = strchr(have, '/');
    if (slash) {
        size_t dl = strlen(domain);
        return (size_t)(slash - have) == dl && memcmp(have, domain, dl) == 0 && strcmp(slash + 1, id) == 0;
    }
    return driver && strcmp(driver, domain) == 0 && strcmp(have, id) == 0;
}

const tly_attr *tly_cel_device_attr(const tly_device *dev, const char *driver, const char *domain, const char *id)
{
    for (uint32_t i = 0; dev && i < dev->nattrs; i++)
        if (dev->attrs[i].name && tly_cel_device_name_is(dev->attrs[i].name, driver, domain, id))
            return &dev->attrs[i];
    return NULL;
}

const tly_capacity *tly_cel_device_capacity(const tly_device *dev, const char *driver, const char *domain,
                                            const char *id)
{
    for (uint32_t i = 0; dev && i < dev->ncapacity; i++)
        if (dev->capacity[i].name && tly_cel_device_name_is(dev->capacity[i].name, driver, domain, id))
            return &dev->capacity[i];
    return NULL;
}

/* ---- values -------------------------------------------------------------- */

enum { V_NULL, V_BOOL, V_INT, V_DBL, V_STR, V_LIST, V_MAP, V_QTY, V_VER, V_DMAP, V_ERR, V_UNSUP };

typedef struct val val;
struct val {
    uint8_t t;
    bool b;                /* V_BOOL; V_DMAP: the capacity map (else the attributes) */
    uint32_t n;            /* V_LIST / V_MAP: elements */
    const char *s;         /* V_STR; V_VER: the prerelease; V_DMAP: the domain; V_ERR / V_UNSUP: the message */
    size_t len;            /* of s */
    const val *items;      /* V_LIST made here (else u.node) */
    union {
        int64_t i;
        double d;
        const tly_node *node;  /* V_LIST / V_MAP read from the tree */
        uint64_t ver[3];       /* V_VER: major, minor, patch */
        tly_qty q;             /* V_QTY */
    } u;
};

/*
** What names are bound to while one program runs. Set up per device per
** node for a selector, so only the scalars are initialized (env_init): the
** macro slots (1 KiB) are written before they are read.
*/
typedef struct {
    tly_arena *a;          /* values made while evaluating; created on first use */
    bool quiet;            /* errors need no message (selectors) */
    const tly_node *self, *old_self;
    const char *driver;
    const tly_device *dev;
    int nvars;
    const char *var[16];   /* macro variables, innermost last */
    val bound[16];
} env;

static void env_init(env *e, bool quiet)
{
    e->a = NULL;
    e->quiet = quiet;
    e->self = e->old_self = NULL;
    e->driver = NULL;
    e->dev = NULL;
    e->nvars = 0;
}

static tly_arena *earena(env *e)
{
    if (!e->a)
        e->a = tly_arena_create(4096);
    return e->a;
}

static void *ealloc(env *e, size_t n) { return tly_arena_alloc(earena(e), n); }

static val verr(env *e, uint8_t t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static val verr(env *e, uint8_t t, const char *fmt, ...)
{
    val v = {.t = t, .s = "error"};
    if (e->quiet && t == V_ERR)
        return v;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t n = strlen(buf);
    char *s = ealloc(e, n + 1);
    memcpy(s, buf, n + 1);
    v.s = s;
    return v;
}

static bool failed(const val *v) { return v->t == V_ERR || v->t == V_UNSUP; }

static val vbool(bool b) { return (val){.t = V_BOOL, .b = b}; }
static val vint(int64_t i) { return (val){.t = V_INT, .u.i = i}; }
static val vdbl(double d) { return (val){.t = V_DBL, .u.d = d}; }
static val vstr(const char *s, size_t len) { return (val){.t = V_STR, .s = s, .len = len}; }
static val vqty(tly_qty q) { return (val){.t = V_QTY, .u.q = q}; }

static val of_node(const tly_node *n)
{
    switch (n->type) {
    case TLY_N_BOOL: return vbool(n->bval);
    case TLY_N_INT: {
        errno = 0;
        long long i = strtoll(n->str, NULL, 10);
        if (errno == ERANGE)
            return vdbl(strtod(n->str, NULL));
        return vint(i);
    }
    case TLY_N_FLOAT: return vdbl(strtod(n->str, NULL));
    case TLY_N_STRING: return vstr(n->str, n->len);
    case TLY_N_MAP: return (val){.t = V_MAP, .u.node = n, .n = n->nkids};
    case TLY_N_SEQ: return (val){.t = V_LIST, .u.node = n, .n = n->nkids};
    default: return (val){.t = V_NULL};
    }
}

/* Element i of a list. */
static val list_at(const val *l, uint32_t i)
{
    if (l->items)
        return l->items[i];
    const tly_node *k = l->u.node->kids;
    while (i-- > 0 && k)
        k = k->next;
    return k ? of_node(k) : (val){.t = V_NULL};
}

/* The member key of a map (present and not null), or NULL. */
static const tly_node *map_get(const val *m, const char *key, size_t len)
{
    for (const tly_node *k = m->u.node->kids; k; k = k->next)
        if (strlen(k->key) == len && !memcmp(k->key, key, len))
            return k->type == TLY_N_NULL ? NULL : k;
    return NULL;
}

/* ---- semantic versions ----------------------------------------------------- */

static bool all_in(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr(set, s[i]))
            return false;
    return true;
}

#define DIGITS "0123456789"
#define ALNUM "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-"

/* A number of a version: digits, no leading zero, within 64 bits. */
static bool ver_number(const char *s, size_t n, uint64_t *out)
{
    if (!n || !all_in(s, n, DIGITS) || (n > 1 && s[0] == '0'))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Dot-separated identifiers of s[0..n) that are each non-empty alphanumerics (numeric: no leading zero). */
static bool ver_idents(const char *s, size_t n, bool numeric_rule)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        size_t len = i - start;
        const char *id = s + start;
        if (!len || !all_in(id, len, ALNUM))
            return false;
        uint64_t ignored;
        if (numeric_rule && all_in(id, len, DIGITS) && !ver_number(id, len, &ignored))
            return false;
        start = i + 1;
    }
    return true;
}

/*
** s[0..n) as a semantic version, by blang/semver's Parse (which Kubernetes'
** semver library and its DRA version attributes use): MAJOR.MINOR.PATCH,
** then -PRERELEASE and +BUILD; no leading zeros in numbers.
*/
static bool ver_parse(const char *s, size_t n, val *out)
{
    const char *end = s + n, *p = s;
    uint64_t num[3];
    for (int k = 0; k < 3; k++) {
        const char *q = p;
        while (q < end && *q >= '0' && *q <= '9')
            q++;
        if (!ver_number(p, (size_t)(q - p), &num[k]))
            return false;
        p = q;
        if (k < 2) {
            if (p >= end || *p != '.')
                return false;
            p++;
        }
    }
    const char *plus = memchr(p, '+', (size_t)(end - p)), *pre_end = plus ? plus : end;
    if (plus && !ver_idents(plus + 1, (size_t)(end - plus - 1), false))
        return false;
    const char *pre = NULL;
    size_t prelen = 0;
    if (p < pre_end) {
        if (*p != '-' || !ver_idents(p + 1, (size_t)(pre_end - p - 1), true))
            return false;
        pre = p + 1;
        prelen = (size_t)(pre_end - pre);
    }
    *out = (val){.t = V_VER, .s = pre, .len = prelen};
    memcpy(out->u.ver, num, sizeof num);
    return true;
}

/*
** Kubernetes' normalizeAndParse (semver(s, true)): no "v" prefix, leading
** zeros removed, a missing minor or patch taken as 0. The text is made in
** arena a, which the value then points into.
*/
static bool ver_parse_normalized(tly_arena *a, const char *s, size_t n, val *out)
{
    if (n && s[0] == 'v')
        s++, n--;
    char *buf = tly_arena_alloc(a, n + 8), *w = buf;
    const char *end = s + n, *p = s;
    int parts = 0;
    while (parts < 3) {
        /* The first two parts end at '.', the third takes the rest (prerelease and build). */
        const char *q = parts < 2 ? memchr(p, '.', (size_t)(end - p)) : NULL;
        if (!q)
            q = end;
        size_t len = (size_t)(q - p);
        if (len > 1) {
            size_t z = 0;
            while (z < len && p[z] == '0')
                z++;
            if (z == len || !isdigit((unsigned char)p[z]))
                *w++ = '0';
            memcpy(w, p + z, len - z);
            w += len - z;
        } else {
            memcpy(w, p, len);
            w += len;
        }
        parts++;
        if (q == end)
            break;
        *w++ = '.';
        p = q + 1;
    }
    if (parts < 3) {
        if (memchr(buf, '+', (size_t)(w - buf)) || memchr(buf, '-', (size_t)(w - buf)))
            return false;  /* "short version cannot contain PreRelease/Build meta data" */
        for (; parts < 3; parts++)
            w += sprintf(w, ".0");
    }
    return ver_parse(buf, (size_t)(w - buf), out);
}

/* Prerelease identifiers: numeric ones by value and below alphanumeric ones, which compare as text. */
static int ver_cmp_pre(const char *a, size_t an, const char *b, size_t bn)
{
    if (!an || !bn)
        return (an == 0) - (bn == 0);  /* no prerelease is the greater */
    size_t i = 0, j = 0;
    while (i < an && j < bn) {
        size_t ie = i, je = j;
        while (ie < an && a[ie] != '.')
            ie++;
        while (je < bn && b[je] != '.')
            je++;
        uint64_t x = 0, y = 0;
        bool xn = ver_number(a + i, ie - i, &x), yn = ver_number(b + j, je - j, &y);
        int c;
        if (xn && yn)
            c = (x > y) - (x < y);
        else if (xn != yn)
            c = xn ? -1 : 1;
        else {
            size_t m = ie - i < je - j ? ie - i : je - j;
            c = memcmp(a + i, b + j, m);
            c = c ? (c > 0) - (c < 0) : (ie - i > je - j) - (ie - i < je - j);
        }
        if (c)
            return c;
        i = ie + 1;
        j = je + 1;
    }
    return (i < an) - (j < bn);
}

static int ver_cmp(const val *a, const val *b)
{
    for (int k = 0; k < 3; k++)
        if (a->u.ver[k] != b->u.ver[k])
            return a->u.ver[k] > b->u.ver[k] ? 1 : -1;
    return ver_cmp_pre(a->s, a->len, b->s, b->len);
}

/* ---- equality ---------------------------------------------------------------- */

static bool equal(const val *a, const val *b);

static bool equal_lists(const val *a, const val *b)
{
    if (a->n != b->n)
        return false;
    for (uint32_t i = 0; i < a->n; i++) {
        val x = list_at(a, i), y = list_at(b, i);
        if (!equal(&x, &y))
            return false;
    }
    return true;
}

/* CEL's heterogeneous equality: values of different types are not equal (numbers compare across). */
static bool equal(const val *a, const val *b)
{
    if ((a->t == V_INT || a->t == V_DBL) && (b->t == V_INT || b->t == V_DBL)) {
        if (a->t == V_INT && b->t == V_INT)
            return a->u.i == b->u.i;
        return (a->t == V_INT ? (double)a->u.i : a->u.d) == (b->t == V_INT ? (double)b->u.i : b->u.d);
    }
    if (a->t != b->t)
        return false;
    switch (a->t) {
    case V_NULL: return true;
    case V_BOOL: return a->b == b->b;
    case V_STR: return a->len == b->len && !memcmp(a->s, b->s, a->len);
    case V_LIST: return equal_lists(a, b);
    case V_QTY: return tly_qty_cmp(a->u.q, b->u.q) == 0;
    case V_VER: return ver_cmp(a, b) == 0;
    case V_MAP: {
        if (a->n != b->n)
            return false;
        for (const tly_node *k = a->u.node->kids; k; k = k->next) {
            const tly_node *o = map_get(b, k->key, strlen(k->key));
            val x = of_node(k), y = o ? of_node(o) : (val){.t = V_ERR};
            if (!o || !equal(&x, &y))
                return false;
        }
        return true;
    }
    default: return false;
    }
}

/* ---- syntax -------------------------------------------------------------- */

enum {
    X_LIT, X_IDENT, X_SELECT, X_INDEX, X_CALL, X_NOT, X_NEG, X_BIN, X_AND, X_OR, X_COND, X_LIST,
    X_DEVDRIVER,  /* device.driver */
    X_DEVMAP,     /* device.attributes["domain"] (lit.b: device.capacity) */
    X_DEVATTR,    /* device.attributes["domain"].name */
    X_DEVCAP,     /* device.capacity["domain"].name */
};

enum { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD };
static const char *const OPNAMES[] = {"==", "!=", "<", "<=", ">", ">=", "in", "+", "-", "*", "/", "%"};

/* Functions, resolved when parsed. */
enum {
    F_UNKNOWN,
    /* global */
    F_HAS, F_SIZE, F_INT, F_DOUBLE, F_STRING, F_QUANTITY, F_IS_QUANTITY, F_SEMVER, F_IS_SEMVER,
    /* methods */
    F_STARTS, F_ENDS, F_CONTAINS, F_MATCHES, F_SPLIT, F_LOWER, F_UPPER, F_TRIM,
    F_ALL, F_EXISTS, F_EXISTS_ONE, F_MAP, F_FILTER,
    F_COMPARE_TO, F_IS_GT, F_IS_LT, F_SIGN, F_IS_INTEGER, F_AS_INTEGER, F_ADD, F_SUB,
    F_MAJOR, F_MINOR, F_PATCH,
};

static const struct fn { const char *name; uint8_t id; bool method; } FNS[] = {
    {"has", F_HAS, false}, {"size", F_SIZE, false}, {"int", F_INT, false}, {"double", F_DOUBLE, false},
    {"string", F_STRING, false}, {"quantity", F_QUANTITY, false}, {"isQuantity", F_IS_QUANTITY, false},
    {"semver", F_SEMVER, false}, {"isSemver", F_IS_SEMVER, false},
    {"size", F_SIZE, true}, {"startsWith", F_STARTS, true}, {"endsWith", F_ENDS, true},
    {"contains", F_CONTAINS, true}, {"matches", F_MATCHES, true}, {"split", F_SPLIT, true},
    {"lowerAscii", F_LOWER, true}, {"upperAscii", F_UPPER, true}, {"trim", F_TRIM, true},
    {"all", F_ALL, true}, {"exists", F_EXISTS, true}, {"exists_one", F_EXISTS_ONE, true},
    {"map", F_MAP, true}, {"filter", F_FILTER, true},
    {"compareTo", F_COMPARE_TO, true}, {"isGreaterThan", F_IS_GT, true}, {"isLessThan", F_IS_LT, true},
    {"sign", F_SIGN, true}, {"isInteger", F_IS_INTEGER, true}, {"asInteger", F_AS_INTEGER, true},
    {"add", F_ADD, true}, {"sub", F_SUB, true},
    {"major", F_MAJOR, true}, {"minor", F_MINOR, true}, {"patch", F_PATCH, true},
};

static uint8_t fn_lookup(const char *name, bool method)
{
    for (size_t i = 0; i < sizeof FNS / sizeof FNS[0]; i++)
        if (FNS[i].method == method && !strcmp(FNS[i].name, name))
            return FNS[i].id;
    return F_UNKNOWN;
}

static bool is_macro(uint8_t f) { return f >= F_ALL && f <= F_FILTER; }

/* Literal flags: what CEL reads differently and the device environment refuses. */
enum { LIT_UNSIGNED = 1, LIT_HEX = 2 };
/* X_BIN flag: == or != of a device's driver or attribute (a) and a string literal (b). */
enum { BIN_DEVICE_STR = 4 };

typedef struct ex ex;
struct ex {
    uint8_t k;
    uint8_t op;           /* X_BIN: an OP_*; X_CALL: an F_* */
    uint8_t flags;        /* X_LIT: LIT_* */
    uint32_t pos;         /* where it starts in the source (calls and fields: the name; operators: the operator) */
    const char *name;     /* X_IDENT, X_SELECT field, X_CALL function, X_DEVATTR / X_DEVCAP name */
    const char *domain;   /* X_DEVMAP, X_DEVATTR, X_DEVCAP */
    ex *recv;             /* X_CALL method receiver (NULL: a global function) */
    ex *a, *b, *c;
    ex **args;
    uint32_t nargs;
    val lit;
};

struct tly_cel_prog {
    const ex *root;
    uint8_t env;
    bool transition;
};

/* Nesting deeper than any real rule: refused rather than recursed into. */
#define MAX_DEPTH 64

typedef struct {
    const char *src, *p;
    tly_arena *a;
    const char *err;      /* the first problem (in a) */
    size_t errpos;
    int depth;            /* nesting of expressions: bounded, so the stack is */
} parser;

static void *fail_at(parser *ps, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void *fail_at(parser *ps, size_t pos, const char *fmt, ...)
{
    if (!ps->err) {
        char buf[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        ps->err = tly_arena_strdup(ps->a, buf);
        ps->errpos = pos;
    }
    return NULL;
}

static size_t here(const parser *ps) { return (size_t)(ps->p - ps->src); }

static void ws(parser *ps)
{
    while (*ps->p && isspace((unsigned char)*ps->p))
        ps->p++;
}

static bool eat(parser *ps, const char *tok)
{
    ws(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n) != 0)
        return false;
    /* "in" must be a whole word. */
    if (isalpha((unsigned char)tok[0]) && (isalnum((unsigned char)ps->p[n]) || ps->p[n] == '_'))
        return false;
    ps->p += n;
    return true;
}

/* What was expected, before what is there instead (or at the end). */
static void *expected(parser *ps, const char *tok)
{
    ws(ps);
    if (*ps->p)
        return fail_at(ps, here(ps), "expected '%s' before '%.12s'", tok, ps->p);
    return fail_at(ps, here(ps), "expected '%s' at the end", tok);
}

static ex *mk(parser *ps, uint8_t k, size_t pos)
{
    ex *x = tly_arena_zalloc(ps->a, sizeof *x);
    x->k = k;
    x->pos = (uint32_t)pos;
    return x;
}

static ex *p_expr(parser *ps);
static ex *p_expr_body(parser *ps);

static ex *p_string(parser *ps)
{
    size_t start = here(ps);
    char q = *ps->p;
    if (ps->p[1] == q && ps->p[2] == q)
        return fail_at(ps, start, "triple-quoted strings are not supported");
    ps->p++;
    /* The rest of the expression bounds the literal (escaped quotes included). */
    char *buf = tly_arena_alloc(ps->a, strlen(ps->p) + 1), *w = buf;
    while (*ps->p && *ps->p != q) {
        char c = *ps->p++;
        if (c == '\\') {
            if (!*ps->p)
                return fail_at(ps, here(ps), "unterminated string literal");
            c = *ps->p++;
            switch (c) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'a': c = '\a'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'v': c = '\v'; break;
            case '\\': case '\'': case '"': case '`': case '?': break;
            default: return fail_at(ps, here(ps) - 1, "unsupported escape in a string literal");
            }
        }
        *w++ = c;
    }
    if (*ps->p != q)
        return fail_at(ps, here(ps), "unterminated string literal");
    ps->p++;
    *w = 0;
    ex *x = mk(ps, X_LIT, start);
    x->lit = vstr(buf, (size_t)(w - buf));
    return x;
}

/* A number literal; neg: a minus before it was read. */
static ex *p_number(parser *ps, bool neg)
{
    size_t start = here(ps);
    ex *x = mk(ps, X_LIT, start);
    const char *s = ps->p;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s + 2, &end, 16);
        if (end == s + 2)
            return fail_at(ps, start, "a hexadecimal literal without digits");
        if (errno == ERANGE || v > (unsigned long long)INT64_MAX + neg)
            return fail_at(ps, start, "integer literal out of range");
        x->flags |= LIT_HEX;
        x->lit = vint(neg ? (int64_t)(0 - v) : (int64_t)v);
        ps->p = end;
    } else {
        const char *p = s;
        uint64_t v = 0;
        bool over = false;
        while (*p >= '0' && *p <= '9') {
            unsigned d = (unsigned)(*p++ - '0');
            over |= v > (UINT64_C(9223372036854775808) - d) / 10;
            v = v * 10 + d;
        }
        if (*p == '.' || *p == 'e' || *p == 'E') {
            char *end;
            x->lit = vdbl(strtod(s, &end));
            if (neg)
                x->lit.u.d = -x->lit.u.d;
            ps->p = end;
            return x;
        }
        if (over || (!neg && v > (uint64_t)INT64_MAX))
            return fail_at(ps, start, "integer literal out of range");
        x->lit = vint(neg ? (v == UINT64_C(9223372036854775808) ? INT64_MIN : -(int64_t)v) : (int64_t)v);
        ps->p = p;
    }
    if (*ps->p == 'u' || *ps->p == 'U') {
        x->flags |= LIT_UNSIGNED;
        ps->p++;
    }
    return x;
}

/* Arguments after '(' up to ')'. */
static bool p_args(parser *ps, ex *call)
{
    ex *buf[8];
    uint32_t n = 0;
    if (!eat(ps, ")")) {
        do {
            if (n == 8)
                return fail_at(ps, here(ps), "too many arguments"), false;
            if (!(buf[n++] = p_expr(ps)))
                return false;
        } while (eat(ps, ","));
        if (!eat(ps, ")"))
            return expected(ps, ")"), false;
    }
    call->args = tly_arena_alloc(ps->a, (n + 1) * sizeof *call->args);
    memcpy(call->args, buf, n * sizeof *buf);
    call->nargs = n;
    return true;
}

static const char *p_ident(parser *ps)
{
    ws(ps);
    const char *s = ps->p;
    if (!isalpha((unsigned char)*s) && *s != '_')
        return NULL;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
        ps->p++;
    return tly_arena_strndup(ps->a, s, (size_t)(ps->p - s));
}

/*
** quantity("...") and semver("..."[, bool]) of literals become values now:
** the program then holds the parsed value, and a selector compares with it
** per device without parsing. A literal that does not parse stays a call
** (an error when run; the device environment refuses it with the text).
*/
static void fold_literal_call(parser *ps, ex *x)
{
    if ((x->op != F_QUANTITY && x->op != F_SEMVER) || x->nargs < 1 || x->args[0]->k != X_LIT ||
        x->args[0]->lit.t != V_STR)
        return;
    const val *s = &x->args[0]->lit;
    val v;
    if (x->op == F_QUANTITY) {
        if (x->nargs != 1 || tly_qty_parse(s->s, s->len, &v.u.q) != TLY_OK)
            return;
        v = vqty(v.u.q);
    } else {
        bool norm = false;
        if (x->nargs == 2) {
            if (x->args[1]->k != X_LIT || x->args[1]->lit.t != V_BOOL)
                return;
            norm = x->args[1]->lit.b;
        } else if (x->nargs != 1) {
            return;
        }
        if (!(norm ? ver_parse_normalized(ps->a, s->s, s->len, &v) : ver_parse(s->s, s->len, &v)))
            return;
    }
    x->k = X_LIT;
    x->lit = v;
}

static ex *p_primary(parser *ps)
{
    ws(ps);
    size_t start = here(ps);
    if (*ps->p == '\'' || *ps->p == '"')
        return p_string(ps);
    if (isdigit((unsigned char)*ps->p))
        return p_number(ps, false);
    if (eat(ps, "(")) {
        ex *x = p_expr(ps);
        if (!x)
            return NULL;
        return eat(ps, ")") ? x : expected(ps, ")");
    }
    if (eat(ps, "[")) {
        ex *x = mk(ps, X_LIST, start);
        ex *buf[64];
        uint32_t n = 0;
        if (!eat(ps, "]")) {
            do {
                if (n == 64)
                    return fail_at(ps, here(ps), "a list literal longer than tally reads");
                if (!(buf[n++] = p_expr(ps)))
                    return NULL;
            } while (eat(ps, ","));
            if (!eat(ps, "]"))
                return expected(ps, "]");
        }
        x->args = tly_arena_alloc(ps->a, (n + 1) * sizeof *x->args);
        memcpy(x->args, buf, n * sizeof *buf);
        x->nargs = n;
        return x;
    }
    const char *id = p_ident(ps);
    if (!id) {
        if (!*ps->p)
            return fail_at(ps, start, "unexpected end of expression");
        return fail_at(ps, start, "unexpected '%c'", *ps->p);
    }
    ex *x = mk(ps, X_LIT, start);
    if (!strcmp(id, "true") || !strcmp(id, "false")) {
        x->lit = vbool(id[0] == 't');
        return x;
    }
    if (!strcmp(id, "null")) {
        x->lit = (val){.t = V_NULL};
        x->name = id;
        return x;
    }
    if (eat(ps, "(")) {
        x->k = X_CALL;
        x->name = id;
        x->op = fn_lookup(id, false);
        if (!p_args(ps, x))
            return NULL;
        fold_literal_call(ps, x);
        return x;
    }
    x->k = X_IDENT;
    x->name = id;
    return x;
}

static ex *p_member(parser *ps)
{
    ex *x = p_primary(ps);
    while (x) {
        ws(ps);
        size_t at = here(ps);
        if (eat(ps, "[")) {
            ex *i = mk(ps, X_INDEX, at);
            i->a = x;
            i->b = p_expr(ps);
            if (!i->b)
                return NULL;
            if (!eat(ps, "]"))
                return expected(ps, "]");
            x = i;
        } else if (eat(ps, ".")) {
            ws(ps);
            size_t npos = here(ps);
            const char *f = p_ident(ps);
            if (!f)
                return fail_at(ps, npos, "expected a field or method name after '.'");
            ex *s = mk(ps, X_SELECT, npos);
            s->name = f;
            s->a = x;
            if (eat(ps, "(")) {
                s->k = X_CALL;
                s->recv = x;
                s->a = NULL;
                s->op = fn_lookup(f, true);
                if (!p_args(ps, s))
                    return NULL;
            }
            x = s;
        } else {
            break;
        }
    }
    return x;
}

static ex *p_unary(parser *ps)
{
    if (ps->depth > MAX_DEPTH)
        return fail_at(ps, here(ps), "nesting deeper than tally reads");
    ws(ps);
    size_t at = here(ps);
    if (ps->p[0] == '!' && ps->p[1] != '=') {
        ps->p++;
        ex *x = mk(ps, X_NOT, at);
        ps->depth++;
        x->a = p_unary(ps);
        ps->depth--;
        return x->a ? x : NULL;
    }
    if (*ps->p == '-') {
        ps->p++;
        ws(ps);
        if (isdigit((unsigned char)*ps->p))
            return p_number(ps, true);
        ex *x = mk(ps, X_NEG, at);
        ps->depth++;
        x->a = p_unary(ps);
        ps->depth--;
        return x->a ? x : NULL;
    }
    return p_member(ps);
}

/* A left-associative level: operand (op operand)*, ops tried in order. */
static ex *p_level(parser *ps, ex *(*operand)(parser *), const char *const *toks, const uint8_t *ops)
{
    ex *x = operand(ps);
    for (;;) {
        if (!x)
            return NULL;
        ws(ps);
        size_t at = here(ps);
        int op = -1;
        for (int i = 0; toks[i] && op < 0; i++)
            if (eat(ps, toks[i]))
                op = ops[i];
        if (op < 0)
            return x;
        ex *b = mk(ps, X_BIN, at);
        b->op = (uint8_t)op;
        b->a = x;
        b->b = operand(ps);
        if (!b->b)
            return NULL;
        x = b;
    }
}

static ex *p_mul(parser *ps)
{
    static const char *const toks[] = {"*", "/", "%", NULL};
    static const uint8_t ops[] = {OP_MUL, OP_DIV, OP_MOD};
    return p_level(ps, p_unary, toks, ops);
}

static ex *p_add(parser *ps)
{
    static const char *const toks[] = {"+", "-", NULL};
    static const uint8_t ops[] = {OP_ADD, OP_SUB};
    return p_level(ps, p_mul, toks, ops);
}

static ex *p_rel(parser *ps)
{
    static const char *const toks[] = {"==", "!=", "<=", ">=", "<", ">", "in", NULL};
    static const uint8_t ops[] = {OP_EQ, OP_NE, OP_LE, OP_GE, OP_LT, OP_GT, OP_IN};
    return p_level(ps, p_add, toks, ops);
}

/* operand (tok operand)*, as X_AND or X_OR nodes. */
static ex *p_logic(parser *ps, ex *(*operand)(parser *), const char *tok, uint8_t kind)
{
    ex *x = operand(ps);
    for (;;) {
        if (!x)
            return NULL;
        ws(ps);
        size_t at = here(ps);
        if (!eat(ps, tok))
            return x;
        ex *y = mk(ps, kind, at);
        y->a = x;
        y->b = operand(ps);
        x = y->b ? y : NULL;
    }
}

static ex *p_and(parser *ps) { return p_logic(ps, p_rel, "&&", X_AND); }
static ex *p_or(parser *ps) { return p_logic(ps, p_and, "||", X_OR); }

static ex *p_expr(parser *ps)
{
    if (++ps->depth > MAX_DEPTH)
        return fail_at(ps, here(ps), "nesting deeper than tally reads");
    ex *x = p_expr_body(ps);
    ps->depth--;
    return x;
}

static ex *p_expr_body(parser *ps)
{
    ex *x = p_or(ps);
    ws(ps);
    size_t at = here(ps);
    if (x && eat(ps, "?")) {
        ex *c = mk(ps, X_COND, at);
        c->a = x;
        c->b = p_expr(ps);
        if (!c->b)
            return NULL;
        if (!eat(ps, ":"))
            return expected(ps, ":");
        c->c = p_expr(ps);
        return c->c ? c : NULL;
    }
    return x;
}

/* ---- the device environment: folding and checking ------------------------- */

static bool is_ident(const ex *x, const char *name) { return x && x->k == X_IDENT && !strcmp(x->name, name); }

static bool is_str_lit(const ex *x) { return x && x->k == X_LIT && x->lit.t == V_STR; }

/* device.attributes or device.capacity, not yet indexed. */
static bool is_device_maps(const ex *x)
{
    return x && x->k == X_SELECT && is_ident(x->a, "device") &&
           (!strcmp(x->name, "attributes") || !strcmp(x->name, "capacity"));
}

/* Folds the device's paths into single nodes, children first. */
static void fuse(ex *x)
{
    if (!x)
        return;
    fuse(x->recv);
    fuse(x->a);
    fuse(x->b);
    fuse(x->c);
    for (uint32_t i = 0; i < x->nargs; i++)
        fuse(x->args[i]);
    if (x->k == X_SELECT && is_ident(x->a, "device") && !strcmp(x->name, "driver")) {
        x->k = X_DEVDRIVER;
    } else if (x->k == X_INDEX && is_device_maps(x->a) && is_str_lit(x->b)) {
        x->lit.b = x->a->name[0] == 'c';
        x->domain = x->b->lit.s;
        x->k = X_DEVMAP;
    } else if (x->a && x->a->k == X_DEVMAP && (x->k == X_SELECT || (x->k == X_INDEX && is_str_lit(x->b)))) {
        x->domain = x->a->domain;
        if (x->k == X_INDEX)
            x->name = x->b->lit.s;
        x->k = x->a->lit.b ? X_DEVCAP : X_DEVATTR;
    } else if (x->k == X_BIN && (x->op == OP_EQ || x->op == OP_NE)) {
        /* The commonest selector: its own path in eval_bin, the device side first. */
        if (is_str_lit(x->a) && x->b && (x->b->k == X_DEVATTR || x->b->k == X_DEVDRIVER)) {
            ex *t = x->a;
            x->a = x->b;
            x->b = t;
        }
        if (is_str_lit(x->b) && (x->a->k == X_DEVATTR || x->a->k == X_DEVDRIVER))
            x->flags |= BIN_DEVICE_STR;
    }
}

/* Static types in the device environment (T_DYN: an attribute, typed per device). */
enum { T_BOOL, T_INT, T_STR, T_QTY, T_DYN, T_MAP, T_VER, T_BAD };

static const char *tname(int t)
{
    static const char *const n[] = {"bool", "int", "string", "quantity", "attribute", "map", "version"};
    return n[t];
}

static bool boolish(int t) { return t == T_BOOL || t == T_DYN; }

static int dcheck(parser *ps, const ex *x);

/* The types of a binary node's operands, left first; false when either is refused. */
static bool dcheck_operands(parser *ps, const ex *x, int *l, int *r)
{
    *l = dcheck(ps, x->a);
    if (*l == T_BAD)
        return false;
    *r = dcheck(ps, x->b);
    return *r != T_BAD;
}

/* The type of x, or T_BAD with the first thing placement does not evaluate in ps. */
static int dcheck(parser *ps, const ex *x)
{
#define BAD(pos, ...) (fail_at(ps, (pos), __VA_ARGS__), T_BAD)
    switch (x->k) {
    case X_LIT:
        switch (x->lit.t) {
        case V_BOOL: return T_BOOL;
        case V_INT:
            if (x->flags & LIT_HEX)
                return BAD(x->pos, "hexadecimal literals are not supported");
            if (x->flags & LIT_UNSIGNED)
                return BAD(x->pos, "unsigned literals are not supported");
            return T_INT;
        case V_DBL: return BAD(x->pos, "double literals are not supported");
        case V_STR: return T_STR;
        case V_QTY: return T_QTY;
        case V_VER: return T_VER;
        default: return BAD(x->pos, "'null' is not supported");
        }
    case X_LIST: return BAD(x->pos, "unexpected '['");
    case X_IDENT:
        if (!strcmp(x->name, "device"))
            return BAD(x->pos, "device needs a field: device.driver, device.attributes or device.capacity");
        return BAD(x->pos, "'%s' is not supported", x->name);
    case X_DEVDRIVER: return T_STR;
    case X_DEVMAP: return T_MAP;
    case X_DEVATTR: return T_DYN;
    case X_DEVCAP: return T_QTY;
    case X_SELECT:
        if (is_device_maps(x))
            return BAD(x->pos, "expected a quoted domain in device.%s[...]", x->name);
        if (is_ident(x->a, "device"))
            return BAD(x->pos, "device.%s is not supported (only driver, attributes, capacity)", x->name);
        if (dcheck(ps, x->a) == T_BAD)
            return T_BAD;
        return BAD(x->pos, "field %s is not supported here", x->name);
    case X_INDEX:
        if (is_device_maps(x->a))
            return BAD(x->b->pos, "expected a quoted domain in device.%s[...]", x->a->name);
        if (x->a->k == X_DEVMAP)
            return BAD(x->b->pos, "expected a quoted name");
        if (dcheck(ps, x->a) == T_BAD)
            return T_BAD;
        return BAD(x->pos, "indexing is only supported on device.attributes and device.capacity");
    case X_CALL: {
        if (!x->recv) {
            if (x->op == F_HAS) {
                if (x->nargs == 1 && (x->args[0]->k == X_DEVATTR || x->args[0]->k == X_DEVCAP))
                    return T_BOOL;
                return BAD(x->pos, "has() takes a device attribute or capacity: "
                                   "has(device.attributes[\"domain\"].name)");
            }
            if (x->op != F_QUANTITY && x->op != F_SEMVER)
                return BAD(x->pos, "'%s' is not supported", x->name);
            /* A literal that parsed was folded into a value: this one did not. */
            if (x->nargs >= 1 && is_str_lit(x->args[0]))
                return BAD(x->pos, "%s(\"%s\") is not a valid %s", x->name, x->args[0]->lit.s,
                           x->op == F_QUANTITY ? "quantity" : "semantic version");
            int at = x->nargs == 1 ? dcheck(ps, x->args[0]) : T_BAD;
            if (at == T_STR || at == T_DYN)  /* a string attribute, parsed per device */
                return x->op == F_QUANTITY ? T_QTY : T_VER;
            if (x->nargs != 1 || !ps->err)
                return BAD(x->pos, "%s() takes one string", x->name);
            return T_BAD;
        }
        int t = dcheck(ps, x->recv);
        if (t == T_BAD)
            return T_BAD;
        switch (x->op) {
        case F_COMPARE_TO:
        case F_IS_GT:
        case F_IS_LT: {
            if (x->nargs != 1 || (t != T_QTY && t != T_VER && t != T_DYN))
                break;
            int at = dcheck(ps, x->args[0]);
            if (at == T_BAD)
                return T_BAD;
            if (t == T_QTY && at != T_QTY)
                return BAD(x->args[0]->pos, "%s() takes a quantity", x->name);
            if (t == T_VER && at != T_VER && at != T_DYN)
                return BAD(x->args[0]->pos, "%s() takes a version", x->name);
            if (t == T_DYN && at != T_VER && at != T_DYN)
                break;
            return x->op == F_COMPARE_TO ? T_INT : T_BOOL;
        }
        case F_MAJOR:
        case F_MINOR:
        case F_PATCH:
            if (x->nargs == 0 && (t == T_VER || t == T_DYN))
                return T_INT;
            break;
        default: break;
        }
        return BAD(x->pos, "method %s() is not supported here", x->name);
    }
    case X_NOT: {
        int t = dcheck(ps, x->a);
        if (t == T_BAD)
            return T_BAD;
        return boolish(t) ? T_BOOL : BAD(x->pos, "'!' needs a boolean");
    }
    case X_NEG: return BAD(x->pos, "unary minus is only supported on integer literals");
    case X_AND:
    case X_OR: {
        int l, r;
        if (!dcheck_operands(ps, x, &l, &r))
            return T_BAD;
        if (!boolish(l) || !boolish(r))
            return BAD(x->pos, "'%s' needs booleans", x->k == X_AND ? "&&" : "||");
        return T_BOOL;
    }
    case X_COND: return BAD(x->pos, "unexpected '%.12s'", ps->src + x->pos);
    case X_BIN: {
        if (x->op >= OP_ADD)
            return BAD(x->pos, "unexpected '%.12s'", ps->src + x->pos);
        int l, r;
        if (!dcheck_operands(ps, x, &l, &r))
            return T_BAD;
        if (x->op == OP_IN) {
            if (x->a->k != X_LIT || l != T_STR || x->b->k != X_DEVMAP)
                return BAD(x->pos, "'in' is only supported as \"name\" in device.attributes[\"domain\"]");
            return T_BOOL;
        }
        if (l == T_MAP || r == T_MAP)
            return BAD(x->pos, "device.attributes[...] and device.capacity[...] need a name");
        if (l == T_QTY || r == T_QTY)
            return BAD(x->pos, "compare capacities with .compareTo(quantity(\"...\"))");
        bool order = x->op != OP_EQ && x->op != OP_NE;
        if (order && (l == T_VER || r == T_VER))
            return BAD(x->pos, "compare versions with .compareTo(semver(\"...\"))");
        if (l != T_DYN && r != T_DYN && l != r)
            return BAD(x->pos, "cannot compare %s with %s", tname(l), tname(r));
        if (order && (l == T_BOOL || r == T_BOOL))
            return BAD(x->pos, "booleans have no order");
        return T_BOOL;
    }
    default: return BAD(x->pos, "an expression tally does not read");
    }
#undef BAD
}

/* ---- the rule environment: what is not evaluated ---------------------------- */

/*
** The first construct of x that tally does not evaluate in a rule (a
** function, a method, a name), or NULL. Checked before evaluating, so that
** such a rule is never decided by an error that happens to come first.
*/
static const char *unsupported(const ex *x, const char **vars, int nvars)
{
    if (!x)
        return NULL;
    switch (x->k) {
    case X_IDENT:
        for (int i = 0; i < nvars; i++)
            if (!strcmp(vars[i], x->name))
                return NULL;
        return strcmp(x->name, "self") && strcmp(x->name, "oldSelf") ? x->name : NULL;
    case X_CALL: {
        if (x->op == F_UNKNOWN)
            return x->name;
        const char *u = unsupported(x->recv, vars, nvars);
        if (u)
            return u;
        const char *inner[17];
        int n = nvars < 16 ? nvars : 15;
        if (n)
            memcpy(inner, vars, (size_t)n * sizeof *vars);
        uint32_t first = 0;
        if (x->recv && is_macro(x->op) && x->nargs >= 2 && x->args[0]->k == X_IDENT) {
            inner[n++] = x->args[0]->name;  /* the macro's variable is bound in the rest */
            first = 1;
        }
        for (uint32_t i = first; i < x->nargs; i++)
            if ((u = unsupported(x->args[i], inner, n)))
                return u;
        return NULL;
    }
    default: {
        const char *u = unsupported(x->a, vars, nvars);
        if (!u)
            u = unsupported(x->b, vars, nvars);
        if (!u)
            u = unsupported(x->c, vars, nvars);
        for (uint32_t i = 0; !u && x->k == X_LIST && i < x->nargs; i++)
            u = unsupported(x->args[i], vars, nvars);
        return u;
    }
    }
}

/* Whether x names oldSelf (a macro variable of that name would too: no real rule has one). */
static bool names_old_self(const ex *x)
{
    if (!x)
        return false;
    if (x->k == X_IDENT)
        return !strcmp(x->name, "oldSelf");
    if (names_old_self(x->recv) || names_old_self(x->a) || names_old_self(x->b) || names_old_self(x->c))
        return true;
    for (uint32_t i = 0; i < x->nargs; i++)
        if (names_old_self(x->args[i]))
            return true;
    return false;
}

tly_cel_prog *tly_cel_compile(tly_arena *a, const char *expr, tly_cel_env envk, const char **why)
{
    parser ps = {.src = expr, .p = expr, .a = a};
    ex *x = p_expr(&ps);
    if (x) {
        ws(&ps);
        if (*ps.p)
            x = fail_at(&ps, here(&ps), "unexpected '%.12s'", ps.p);
    }
    const char *u = NULL;
    if (x && envk == TLY_CEL_ENV_DEVICE) {
        fuse(x);
        int t = dcheck(&ps, x);
        if (t != T_BAD && !boolish(t))
            fail_at(&ps, here(&ps), "the expression is a %s, not a boolean", tname(t));
        if (ps.err)
            x = NULL;
    } else if (x && (u = unsupported(x, NULL, 0))) {
        x = NULL;
    }
    if (!x) {
        if (why) {
            if (envk == TLY_CEL_ENV_DEVICE)
                *why = tly_arena_printf(a, "%s (column %zu)", ps.err ? ps.err : "unexpected text", ps.errpos + 1);
            else if (u)
                *why = tly_arena_printf(a, "uses %s, which tally does not evaluate", u);
            else
                *why = tly_arena_printf(a, "cannot parse it (%s at offset %zu)", ps.err ? ps.err : "unexpected text",
                                        ps.errpos);
        }
        return NULL;
    }
    tly_cel_prog *p = tly_arena_zalloc(a, sizeof *p);
    p->root = x;
    p->env = (uint8_t)envk;
    p->transition = envk == TLY_CEL_ENV_RULE && names_old_self(x);
    if (why)
        *why = NULL;
    return p;
}

bool tly_cel_is_transition(const tly_cel_prog *p) { return p->transition; }

/* ---- evaluation ---------------------------------------------------------- */

static val eval(env *e, const ex *x);

static val select_field(env *e, const val *obj, const char *f)
{
    if (failed(obj))
        return *obj;
    if (obj->t != V_MAP)
        return verr(e, V_ERR, "no such key: %s (not an object)", f);
    const tly_node *m = map_get(obj, f, strlen(f));
    return m ? of_node(m) : verr(e, V_ERR, "no such key: %s", f);
}

/* A device's attribute as CEL sees it: typed by the attribute's own type. */
static val device_attr(env *e, const ex *x)
{
    const tly_attr *at = tly_cel_device_attr(e->dev, e->driver, x->domain, x->name);
    if (!at)
        return verr(e, V_ERR, "no such key: %s", x->name);
    const char *s = at->str ? at->str : "";
    switch (at->type) {
    case TLY_ATTR_STRING: return vstr(s, strlen(s));
    case TLY_ATTR_INT: return vint(at->ival);
    case TLY_ATTR_BOOL: return vbool(at->bval);
    default: {
        val v;
        if (!ver_parse(s, strlen(s), &v))
            return verr(e, V_ERR, "attribute %s: \"%s\" is not a semantic version", x->name, s);
        return v;
    }
    }
}

static val device_cap(env *e, const ex *x)
{
    const tly_capacity *c = tly_cel_device_capacity(e->dev, e->driver, x->domain, x->name);
    return c ? vqty(c->value) : verr(e, V_ERR, "no such key: %s", x->name);
}

static val eval_has(env *e, const ex *x)
{
    const ex *f = x->nargs == 1 ? x->args[0] : NULL;
    if (f && f->k == X_DEVATTR)
        return vbool(tly_cel_device_attr(e->dev, e->driver, f->domain, f->name) != NULL);
    if (f && f->k == X_DEVCAP)
        return vbool(tly_cel_device_capacity(e->dev, e->driver, f->domain, f->name) != NULL);
    if (!f || f->k != X_SELECT)
        return verr(e, V_UNSUP, "has() of something other than a field");
    val obj = eval(e, f->a);
    if (failed(&obj))
        return obj;
    if (obj.t != V_MAP)
        return verr(e, V_ERR, "has() on a %s", obj.t == V_LIST ? "list" : "scalar");
    return vbool(map_get(&obj, f->name, strlen(f->name)) != NULL);
}

static val size_of(env *e, const val *v)
{
    if (failed(v))
        return *v;
    if (v->t == V_STR) {
        int64_t n = 0;
        for (size_t i = 0; i < v->len; i++)
            n += ((unsigned char)v->s[i] & 0xC0) != 0x80;
        return vint(n);
    }
    if (v->t == V_LIST || v->t == V_MAP)
        return vint(v->n);
    return verr(e, V_ERR, "size() of a value that has none");
}

/* Binds var to each element (lists) or key (maps) of range in turn. */
static val macro(env *e, uint8_t fn, const char *name, const val *range, const ex *var, const ex *pred,
                 const ex *map_fn)
{
    if (failed(range))
        return *range;
    if ((range->t != V_LIST && range->t != V_MAP) || var->k != X_IDENT || e->nvars == 16)
        return verr(e, V_ERR, "%s() over a value that is neither a list nor a map", name);
    bool any_err = false, all = fn == F_ALL, exists = fn == F_EXISTS;
    bool one = fn == F_EXISTS_ONE, map = fn == F_MAP, filter = fn == F_FILTER;
    uint32_t hits = 0, nout = 0;
    val *out = (map || filter) ? ealloc(e, (range->n + 1) * sizeof *out) : NULL;
    val err = {0};
    const tly_node *key = range->t == V_MAP ? range->u.node->kids : NULL;
    int slot = e->nvars++;
    e->var[slot] = var->name;
    for (uint32_t i = 0; i < range->n; i++) {
        e->bound[slot] = range->t == V_MAP ? vstr(key->key, strlen(key->key)) : list_at(range, i);
        if (key)
            key = key->next;
        val p = pred ? eval(e, pred) : vbool(true);
        if (failed(&p) || p.t != V_BOOL) {
            if (p.t == V_UNSUP) {
                e->nvars--;
                return p;
            }
            any_err = true;
            err = failed(&p) ? p : verr(e, V_ERR, "%s() condition is not a bool", name);
            continue;
        }
        hits += p.b;
        if ((all && !p.b) || (exists && p.b)) {
            e->nvars--;
            return vbool(exists);
        }
        if ((filter && p.b) || (map && p.b)) {
            val v = map ? eval(e, map_fn) : e->bound[slot];
            if (failed(&v)) {
                e->nvars--;
                return v;
            }
            out[nout++] = v;
        }
    }
    e->nvars--;
    if (any_err)
        return err;
    if (all || exists)
        return vbool(all);
    if (one)
        return vbool(hits == 1);
    return (val){.t = V_LIST, .items = out, .n = nout};
}

/* Argument i of call x, which must be of type t. */
static val arg_of(env *e, const ex *x, uint32_t i, uint8_t t, const char *tn)
{
    if (i >= x->nargs)
        return verr(e, V_ERR, "%s() needs an argument", x->name);
    val v = eval(e, x->args[i]);
    if (!failed(&v) && v.t != t)
        return verr(e, V_ERR, "%s() needs a %s", x->name, tn);
    return v;
}

static val str_split(env *e, const val *s, const val *sep)
{
    val *items = ealloc(e, (s->len + 2) * sizeof *items);
    uint32_t n = 0;
    size_t start = 0;
    for (size_t i = 0; sep->len && i + sep->len <= s->len;) {
        if (!memcmp(s->s + i, sep->s, sep->len)) {
            items[n++] = vstr(s->s + start, i - start);
            i += sep->len;
            start = i;
        } else {
            i++;
        }
    }
    items[n++] = vstr(s->s + start, s->len - start);
    return (val){.t = V_LIST, .items = items, .n = n};
}

static char *cstr(env *e, const char *s, size_t n)
{
    char *o = ealloc(e, n + 1);
    memcpy(o, s, n);
    o[n] = 0;
    return o;
}

static val str_matches(env *e, const val *s, const val *pat)
{
    char *px = cstr(e, pat->s, pat->len), *sx = cstr(e, s->s, s->len);
    regex_t re;
    if (strstr(px, "(?") || regcomp(&re, px, REG_EXTENDED | REG_NOSUB) != 0)
        return verr(e, V_UNSUP, "matches() with a pattern tally cannot compile");
    bool m = regexec(&re, sx, 0, NULL, 0) == 0;
    regfree(&re);
    return vbool(m);
}

static val case_of(env *e, const val *s, bool upper)
{
    char *o = cstr(e, s->s, s->len);
    for (size_t i = 0; i < s->len; i++)
        o[i] = (char)(upper ? toupper((unsigned char)o[i]) : tolower((unsigned char)o[i]));
    return vstr(o, s->len);
}

static val string_method(env *e, const ex *x, const val *s)
{
    if (x->op == F_LOWER || x->op == F_UPPER)
        return case_of(e, s, x->op == F_UPPER);
    if (x->op == F_TRIM) {
        size_t a = 0, b = s->len;
        while (a < b && isspace((unsigned char)s->s[a]))
            a++;
        while (b > a && isspace((unsigned char)s->s[b - 1]))
            b--;
        return vstr(s->s + a, b - a);
    }
    if (x->op < F_STARTS || x->op > F_SPLIT)
        return verr(e, V_ERR, "no such overload: %s() on a string", x->name);
    val arg = arg_of(e, x, 0, V_STR, "string");
    if (failed(&arg))
        return arg;
    switch (x->op) {
    case F_STARTS: return vbool(arg.len <= s->len && !memcmp(s->s, arg.s, arg.len));
    case F_ENDS: return vbool(arg.len <= s->len && !memcmp(s->s + s->len - arg.len, arg.s, arg.len));
    case F_CONTAINS: return vbool(arg.len == 0 || memmem(s->s, s->len, arg.s, arg.len) != NULL);
    case F_SPLIT: return x->nargs == 1 ? str_split(e, s, &arg) : verr(e, V_UNSUP, "split() with a limit");
    default: return str_matches(e, s, &arg);
    }
}

/* quantity(s), isQuantity(s), semver(s[, normalize]), isSemver(s[, normalize]) at run time. */
static val parse_call(env *e, const ex *x)
{
    val s = arg_of(e, x, 0, V_STR, "string");
    if (failed(&s))
        return s;
    bool is = x->op == F_IS_QUANTITY || x->op == F_IS_SEMVER;
    val v;
    bool ok;
    if (x->op == F_QUANTITY || x->op == F_IS_QUANTITY) {
        if (x->nargs != 1)
            return verr(e, V_ERR, "no such overload: %s() with %u arguments", x->name, x->nargs);
        ok = tly_qty_parse(s.s, s.len, &v.u.q) == TLY_OK;
        if (ok)
            v = vqty(v.u.q);
    } else {
        bool norm = false;
        if (x->nargs == 2) {
            val b = arg_of(e, x, 1, V_BOOL, "bool");
            if (failed(&b))
                return b;
            norm = b.b;
        } else if (x->nargs != 1) {
            return verr(e, V_ERR, "no such overload: %s() with %u arguments", x->name, x->nargs);
        }
        ok = norm ? ver_parse_normalized(earena(e), s.s, s.len, &v) : ver_parse(s.s, s.len, &v);
    }
    if (is)
        return vbool(ok);
    if (!ok)
        return verr(e, V_ERR, "%s(): \"%.*s\" is not a valid %s", x->name, (int)s.len, s.s,
                    x->op == F_QUANTITY ? "quantity" : "semantic version");
    return v;
}

/* compareTo, isGreaterThan, isLessThan of quantities or of versions. */
static val compare_method(env *e, const ex *x, const val *r)
{
    if (x->nargs != 1)
        return verr(e, V_ERR, "no such overload: %s() with %u arguments", x->name, x->nargs);
    val o = eval(e, x->args[0]);
    if (failed(&o))
        return o;
    int c;
    if (r->t == V_QTY && o.t == V_QTY)
        c = tly_qty_cmp(r->u.q, o.u.q);
    else if (r->t == V_VER && o.t == V_VER)
        c = ver_cmp(r, &o);
    else
        return verr(e, V_ERR, "no such overload: %s() between these types", x->name);
    if (x->op == F_COMPARE_TO)
        return vint(c);
    return vbool(x->op == F_IS_GT ? c > 0 : c < 0);
}

static val quantity_method(env *e, const ex *x, const val *q)
{
    tly_i128 unit = 1000000000;
    switch (x->op) {
    case F_SIGN: return vint(tly_qty_sign(q->u.q));
    case F_IS_INTEGER:
    case F_AS_INTEGER: {
        /* Kubernetes' AsInt64: a whole number that fits in 64 bits. */
        tly_i128 n = q->u.q.nanos;
        bool ok = n % unit == 0 && n / unit >= INT64_MIN && n / unit <= INT64_MAX;
        if (x->op == F_IS_INTEGER)
            return vbool(ok);
        return ok ? vint((int64_t)(n / unit)) : verr(e, V_ERR, "asInteger(): the quantity is not an integer of 64 bits");
    }
    case F_ADD:
    case F_SUB: {
        val o = x->nargs == 1 ? eval(e, x->args[0]) : verr(e, V_ERR, "%s() needs an argument", x->name);
        if (failed(&o))
            return o;
        tly_qty b, out;
        if (o.t == V_QTY)
            b = o.u.q;
        else if (o.t == V_INT)
            b = tly_qty_from_int(o.u.i, (tly_qfmt)q->u.q.fmt);
        else
            return verr(e, V_ERR, "no such overload: %s() of a quantity and this type", x->name);
        int rc = x->op == F_ADD ? tly_qty_add(q->u.q, b, &out) : tly_qty_sub(q->u.q, b, &out);
        return rc == TLY_OK ? vqty(out) : verr(e, V_ERR, "%s(): the quantity overflows", x->name);
    }
    default: return verr(e, V_ERR, "no such overload: %s() on a quantity", x->name);
    }
}

static val eval_call(env *e, const ex *x)
{
    if (!x->recv) {
        switch (x->op) {
        case F_HAS: return eval_has(e, x);
        case F_QUANTITY:
        case F_IS_QUANTITY:
        case F_SEMVER:
        case F_IS_SEMVER: return parse_call(e, x);
        default: break;
        }
        if (x->nargs != 1)
            return verr(e, V_UNSUP, "the function %s() with %u arguments", x->name, x->nargs);
        val v = eval(e, x->args[0]);
        if (failed(&v))
            return v;
        switch (x->op) {
        case F_SIZE: return size_of(e, &v);
        case F_INT:
            if (v.t == V_INT)
                return v;
            if (v.t == V_DBL)
                return vint((int64_t)v.u.d);
            break;
        case F_DOUBLE:
            if (v.t == V_INT || v.t == V_DBL)
                return vdbl(v.t == V_INT ? (double)v.u.i : v.u.d);
            break;
        case F_STRING:
            if (v.t == V_STR)
                return v;
            if (v.t == V_INT) {
                char b[24];
                int n = snprintf(b, sizeof b, "%lld", (long long)v.u.i);
                return vstr(cstr(e, b, (size_t)n), (size_t)n);
            }
            break;
        default: break;
        }
        return verr(e, V_UNSUP, "the function %s()", x->name);
    }
    if (is_macro(x->op)) {
        val range = eval(e, x->recv);
        if (x->nargs == 2)
            return macro(e, x->op, x->name, &range, x->args[0], x->op == F_MAP ? NULL : x->args[1],
                         x->op == F_MAP ? x->args[1] : NULL);
        if (x->nargs == 3 && x->op == F_MAP)
            return macro(e, x->op, x->name, &range, x->args[0], x->args[1], x->args[2]);
        return verr(e, V_UNSUP, "%s() with %u arguments", x->name, x->nargs);
    }
    val recv = eval(e, x->recv);
    if (failed(&recv))
        return recv;
    switch (x->op) {
    case F_SIZE: return size_of(e, &recv);
    case F_COMPARE_TO:
    case F_IS_GT:
    case F_IS_LT: return compare_method(e, x, &recv);
    case F_MAJOR:
    case F_MINOR:
    case F_PATCH: {
        if (recv.t != V_VER)
            return verr(e, V_ERR, "no such overload: %s() of a value that is not a version", x->name);
        uint64_t n = recv.u.ver[x->op - F_MAJOR];
        return n <= INT64_MAX ? vint((int64_t)n) : verr(e, V_ERR, "%s(): out of the range of int", x->name);
    }
    default: break;
    }
    if (recv.t == V_STR)
        return string_method(e, x, &recv);
    if (recv.t == V_QTY)
        return quantity_method(e, x, &recv);
    return verr(e, V_ERR, "no such overload: %s() on this type", x->name);
}

static val compare(env *e, uint8_t op, const val *a, const val *b)
{
    int c;
    if ((a->t == V_INT || a->t == V_DBL) && (b->t == V_INT || b->t == V_DBL)) {
        if (a->t == V_INT && b->t == V_INT) {
            c = (a->u.i > b->u.i) - (a->u.i < b->u.i);
        } else {
            double x = a->t == V_INT ? (double)a->u.i : a->u.d, y = b->t == V_INT ? (double)b->u.i : b->u.d;
            c = (x > y) - (x < y);
        }
    } else if (a->t == V_STR && b->t == V_STR) {
        size_t n = a->len < b->len ? a->len : b->len;
        c = memcmp(a->s, b->s, n);
        c = c ? (c > 0) - (c < 0) : (a->len > b->len) - (a->len < b->len);
    } else if (a->t == V_BOOL && b->t == V_BOOL) {
        c = (int)a->b - (int)b->b;  /* CEL orders false before true */
    } else {
        return verr(e, V_ERR, "no such overload: %s between these types", OPNAMES[op]);
    }
    switch (op) {
    case OP_LT: return vbool(c < 0);
    case OP_LE: return vbool(c <= 0);
    case OP_GT: return vbool(c > 0);
    default: return vbool(c >= 0);
    }
}

static val arith(env *e, uint8_t op, const val *a, const val *b)
{
    if (a->t == V_INT && b->t == V_INT) {
        int64_t r;
        bool over = false;
        switch (op) {
        case OP_ADD: over = __builtin_add_overflow(a->u.i, b->u.i, &r); break;
        case OP_SUB: over = __builtin_sub_overflow(a->u.i, b->u.i, &r); break;
        case OP_MUL: over = __builtin_mul_overflow(a->u.i, b->u.i, &r); break;
        default:
            if (b->u.i == 0 || (a->u.i == INT64_MIN && b->u.i == -1))
                return verr(e, V_ERR, "division by zero or overflow");
            r = op == OP_DIV ? a->u.i / b->u.i : a->u.i % b->u.i;
        }
        return over ? verr(e, V_ERR, "integer overflow") : vint(r);
    }
    if (a->t == V_DBL && b->t == V_DBL && op != OP_MOD) {
        double x = a->u.d, y = b->u.d;
        return vdbl(op == OP_ADD ? x + y : op == OP_SUB ? x - y : op == OP_MUL ? x * y : x / y);
    }
    if (op == OP_ADD && a->t == V_STR && b->t == V_STR) {
        char *s = ealloc(e, a->len + b->len + 1);
        memcpy(s, a->s, a->len);
        memcpy(s + a->len, b->s, b->len);
        s[a->len + b->len] = 0;
        return vstr(s, a->len + b->len);
    }
    if (op == OP_ADD && a->t == V_LIST && b->t == V_LIST) {
        val *items = ealloc(e, (a->n + b->n + 1) * sizeof *items);
        for (uint32_t i = 0; i < a->n; i++)
            items[i] = list_at(a, i);
        for (uint32_t i = 0; i < b->n; i++)
            items[a->n + i] = list_at(b, i);
        return (val){.t = V_LIST, .items = items, .n = a->n + b->n};
    }
    return verr(e, V_ERR, "no such overload: %s between these types", OPNAMES[op]);
}

static val eval_in(env *e, const val *a, const val *b)
{
    if (b->t == V_LIST) {
        for (uint32_t i = 0; i < b->n; i++) {
            val y = list_at(b, i);
            if (equal(a, &y))
                return vbool(true);
        }
        return vbool(false);
    }
    if (b->t == V_MAP && a->t == V_STR)
        return vbool(map_get(b, a->s, a->len) != NULL);
    if (b->t == V_DMAP && a->t == V_STR) {
        /* The literal's text is NUL-terminated where it was parsed. */
        return vbool(b->b ? tly_cel_device_capacity(e->dev, e->driver, b->s, a->s) != NULL
                          : tly_cel_device_attr(e->dev, e->driver, b->s, a->s) != NULL);
    }
    return verr(e, V_ERR, "no such overload: in");
}

/*
** device.driver or a device attribute == or != a string literal, as eval
** gives it (a missing attribute is an error; an attribute of another type
** is not equal), without making values: literals hold no NUL, and the
** device's strings end at theirs.
*/
static val eval_device_str(env *e, const ex *x)
{
    const char *have;
    if (x->a->k == X_DEVDRIVER) {
        if (!e->driver)
            return verr(e, V_ERR, "no driver");
        have = e->driver;
    } else {
        const tly_attr *at = tly_cel_device_attr(e->dev, e->driver, x->a->domain, x->a->name);
        if (!at)
            return verr(e, V_ERR, "no such key: %s", x->a->name);
        if (at->type != TLY_ATTR_STRING) {
            val v = device_attr(e, x->a);  /* a version that does not parse is an error */
            return failed(&v) ? v : vbool(x->op == OP_NE);
        }
        have = at->str ? at->str : "";
    }
    return vbool((strcmp(have, x->b->lit.s) == 0) == (x->op == OP_EQ));
}

static val eval_bin(env *e, const ex *x)
{
    if (x->flags & BIN_DEVICE_STR)
        return eval_device_str(e, x);
    val a = eval(e, x->a), b = eval(e, x->b);
    if (a.t == V_UNSUP)
        return a;
    if (b.t == V_UNSUP)
        return b;
    if (failed(&a))
        return a;
    if (failed(&b))
        return b;
    switch (x->op) {
    case OP_EQ: return vbool(equal(&a, &b));
    case OP_NE: return vbool(!equal(&a, &b));
    case OP_IN: return eval_in(e, &a, &b);
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE: return compare(e, x->op, &a, &b);
    default: return arith(e, x->op, &a, &b);
    }
}

/* && and ||: a definite answer on either side wins over an error on the other. */
static val eval_logic(env *e, const ex *x, bool is_and)
{
    val a = eval(e, x->a);
    if (a.t == V_BOOL && a.b != is_and)
        return a;
    val b = eval(e, x->b);
    if (b.t == V_BOOL && b.b != is_and)
        return b;
    if (a.t == V_UNSUP)
        return a;
    if (b.t == V_UNSUP)
        return b;
    if (a.t != V_BOOL)
        return failed(&a) ? a : verr(e, V_ERR, "%s of a value that is not a bool", is_and ? "&&" : "||");
    if (b.t != V_BOOL)
        return failed(&b) ? b : verr(e, V_ERR, "%s of a value that is not a bool", is_and ? "&&" : "||");
    return vbool(is_and);
}

static val eval_index(env *e, const ex *x)
{
    val a = eval(e, x->a), i = eval(e, x->b);
    if (failed(&a))
        return a;
    if (failed(&i))
        return i;
    if (a.t == V_LIST && i.t == V_INT)
        return i.u.i >= 0 && i.u.i < (int64_t)a.n ? list_at(&a, (uint32_t)i.u.i)
                                                   : verr(e, V_ERR, "index out of range");
    if (a.t == V_MAP && i.t == V_STR) {
        const tly_node *m = map_get(&a, i.s, i.len);
        return m ? of_node(m) : verr(e, V_ERR, "no such key: %.*s", (int)i.len, i.s);
    }
    return verr(e, V_ERR, "no such overload: index");
}

static val eval(env *e, const ex *x)
{
    switch (x->k) {
    case X_LIT: return x->lit;
    case X_DEVDRIVER: return e->driver ? vstr(e->driver, strlen(e->driver)) : verr(e, V_ERR, "no driver");
    case X_DEVATTR: return device_attr(e, x);
    case X_DEVCAP: return device_cap(e, x);
    case X_DEVMAP: return (val){.t = V_DMAP, .b = x->lit.b, .s = x->domain};
    case X_IDENT:
        for (int i = e->nvars; i-- > 0;)
            if (!strcmp(e->var[i], x->name))
                return e->bound[i];
        if (e->self && !strcmp(x->name, "self"))
            return of_node(e->self);
        if (e->old_self && !strcmp(x->name, "oldSelf"))
            return of_node(e->old_self);
        return verr(e, V_UNSUP, "the name %s", x->name);
    case X_SELECT: {
        val o = eval(e, x->a);
        return select_field(e, &o, x->name);
    }
    case X_INDEX: return eval_index(e, x);
    case X_CALL: return eval_call(e, x);
    case X_NOT: {
        val a = eval(e, x->a);
        return failed(&a) ? a : a.t == V_BOOL ? vbool(!a.b) : verr(e, V_ERR, "! of a value that is not a bool");
    }
    case X_NEG: {
        val a = eval(e, x->a);
        if (a.t == V_INT && a.u.i != INT64_MIN)
            return vint(-a.u.i);
        if (a.t == V_DBL)
            return vdbl(-a.u.d);
        return failed(&a) ? a : verr(e, V_ERR, "- of a value that is not a number");
    }
    case X_BIN: return eval_bin(e, x);
    case X_AND: return eval_logic(e, x, true);
    case X_OR: return eval_logic(e, x, false);
    case X_COND: {
        val c = eval(e, x->a);
        if (failed(&c))
            return c;
        if (c.t != V_BOOL)
            return verr(e, V_ERR, "?: on a value that is not a bool");
        return eval(e, c.b ? x->b : x->c);
    }
    case X_LIST: {
        val *items = ealloc(e, (x->nargs + 1) * sizeof *items);
        for (uint32_t i = 0; i < x->nargs; i++) {
            items[i] = eval(e, x->args[i]);
            if (failed(&items[i]))
                return items[i];
        }
        return (val){.t = V_LIST, .items = items, .n = x->nargs};
    }
    default: return verr(e, V_UNSUP, "an expression");
    }
}

/* ---- entry points ------------------------------------------------------------ */

static tly_cel_result result_of(const val *v, char *why, size_t whylen)
{
    if (v->t == V_BOOL)
        return v->b ? TLY_CEL_TRUE : TLY_CEL_FALSE;
    if (v->t == V_UNSUP) {
        if (why)
            snprintf(why, whylen, "uses %s, which tally does not evaluate", v->s);
        return TLY_CEL_UNSUPPORTED;
    }
    if (why)
        snprintf(why, whylen, "%s", v->t == V_ERR ? v->s : "the rule does not give a bool");
    return TLY_CEL_ERROR;
}

tly_cel_result tly_cel_eval_self(const tly_cel_prog *p, const tly_node *self, const tly_node *old_self,
                                 char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = 0;
    if (p->transition && !old_self) {
        if (why)
            snprintf(why, whylen, "a transition rule (oldSelf): checked on updates only");
        return TLY_CEL_UNSUPPORTED;
    }
    env e;
    env_init(&e, false);
    e.self = self;
    e.old_self = old_self;
    val v = eval(&e, p->root);
    tly_cel_result r = result_of(&v, why, whylen);
    if (e.a)
        tly_arena_destroy(e.a);
    return r;
}

tly_cel_result tly_cel_eval_device(const tly_cel_prog *p, const char *driver, const tly_device *dev)
{
    env e;
    env_init(&e, true);
    e.driver = driver;
    e.dev = dev;
    val v = eval(&e, p->root);
    /* The checker let only what evaluates through; an UNSUPPORTED here would be tally's bug: no match. */
    tly_cel_result r = v.t == V_BOOL ? (v.b ? TLY_CEL_TRUE : TLY_CEL_FALSE)
                                     : v.t == V_UNSUP ? TLY_CEL_UNSUPPORTED : TLY_CEL_ERROR;
    if (e.a)
        tly_arena_destroy(e.a);
    return r;
}

tly_cel_result tly_cel_eval_rule(const char *rule, const tly_node *self, char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = 0;
    tly_arena *a = tly_arena_create(4096);
    const char *err;
    tly_cel_prog *p = tly_cel_compile(a, rule, TLY_CEL_ENV_RULE, &err);
    tly_cel_result r;
    if (!p) {
        if (why)
            snprintf(why, whylen, "%s", err);
        r = TLY_CEL_UNSUPPORTED;
    } else {
        r = tly_cel_eval_self(p, self, NULL, why, whylen);
    }
    tly_arena_destroy(a);
    return r;
}
