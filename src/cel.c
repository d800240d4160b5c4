/*
** cel.c: CEL for CustomResourceDefinition rules (cel.h has the language).
**
** A rule is parsed into a small tree in a per-rule arena, then evaluated
** with `self` bound to the object's value. Values are either views of the
** loader's tree (maps, lists, scalars read from it) or made here (strings
** from split, lists from map()). Two kinds of failure are kept apart, since
** they mean different things to a user: ERROR is CEL's own runtime error
** (a missing key, wrong operand types), which makes the API server refuse
** the object; UNSUPPORTED is tally not knowing a construct, which must never
** be reported as a pass or as a refusal. && and || absorb errors as CEL's
** commutative logic does: false && error is false.
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

#include "tally/arena.h"

/* ---- values -------------------------------------------------------------- */

enum { V_NULL, V_BOOL, V_INT, V_DBL, V_STR, V_LIST, V_MAP, V_ERR, V_UNSUP };

typedef struct val val;
struct val {
    uint8_t t;
    bool b;
    int64_t i;
    double d;
    const char *s;         /* V_STR (len bytes), or the message of V_ERR / V_UNSUP */
    size_t len;
    const tly_node *node;  /* V_LIST / V_MAP read from the tree */
    val *items;            /* V_LIST made here */
    uint32_t n;
};

typedef struct {
    tly_arena *a;
    const tly_node *self;
    const char *var[16];
    val bound[16];
    int nvars;
} env;

static val verr(env *e, uint8_t t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static val verr(env *e, uint8_t t, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    val v = {.t = t};
    v.s = tly_arena_strdup(e->a, buf);
    return v;
}

static bool failed(const val *v) { return v->t == V_ERR || v->t == V_UNSUP; }

static val vbool(bool b) { return (val){.t = V_BOOL, .b = b}; }
static val vint(int64_t i) { return (val){.t = V_INT, .i = i}; }
static val vstr(const char *s, size_t len) { return (val){.t = V_STR, .s = s, .len = len}; }

static val of_node(const tly_node *n)
{
    switch (n->type) {
    case TLY_N_BOOL: return vbool(n->bval);
    case TLY_N_INT: {
        errno = 0;
        long long i = strtoll(n->str, NULL, 10);
        if (errno == ERANGE)
            return (val){.t = V_DBL, .d = strtod(n->str, NULL)};
        return vint(i);
    }
    case TLY_N_FLOAT: return (val){.t = V_DBL, .d = strtod(n->str, NULL)};
    case TLY_N_STRING: return vstr(n->str, n->len);
    case TLY_N_MAP: return (val){.t = V_MAP, .node = n, .n = n->nkids};
    case TLY_N_SEQ: return (val){.t = V_LIST, .node = n, .n = n->nkids};
    default: return (val){.t = V_NULL};
    }
}

/* Element i of a list. */
static val list_at(const val *l, uint32_t i)
{
    if (l->items)
        return l->items[i];
    const tly_node *k = l->node->kids;
    while (i-- > 0 && k)
        k = k->next;
    return k ? of_node(k) : (val){.t = V_NULL};
}

/* The member key of a map (present and not null), or NULL. */
static const tly_node *map_get(const val *m, const char *key, size_t len)
{
    for (const tly_node *k = m->node->kids; k; k = k->next)
        if (strlen(k->key) == len && !memcmp(k->key, key, len))
            return k->type == TLY_N_NULL ? NULL : k;
    return NULL;
}

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

static bool equal(const val *a, const val *b)
{
    if ((a->t == V_INT || a->t == V_DBL) && (b->t == V_INT || b->t == V_DBL))
        return (a->t == V_INT ? (double)a->i : a->d) == (b->t == V_INT ? (double)b->i : b->d) &&
               (a->t != V_INT || b->t != V_INT || a->i == b->i);
    if (a->t != b->t)
        return false;
    switch (a->t) {
    case V_NULL: return true;
    case V_BOOL: return a->b == b->b;
    case V_STR: return a->len == b->len && !memcmp(a->s, b->s, a->len);
    case V_LIST: return equal_lists(a, b);
    case V_MAP: {
        if (a->n != b->n)
            return false;
        for (const tly_node *k = a->node->kids; k; k = k->next) {
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

enum { X_LIT, X_IDENT, X_SELECT, X_INDEX, X_CALL, X_NOT, X_NEG, X_BIN, X_AND, X_OR, X_COND, X_LIST };

typedef struct ex ex;
struct ex {
    uint8_t k;
    char op[3];
    const char *name;     /* X_IDENT, X_SELECT field, X_CALL function */
    ex *recv;             /* X_CALL method receiver (NULL: a global function) */
    ex *a, *b, *c;
    ex **args;
    uint32_t nargs;
    val lit;
};

/* Nesting deeper than any real rule: refused rather than recursed into. */
#define MAX_DEPTH 64

typedef struct {
    const char *p;
    tly_arena *a;
    const char *err;      /* the first syntax problem */
    int depth;            /* nesting of expressions: bounded, so the stack is */
} parser;

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
    /* "in" must be a whole word; "=" must not be the start of "=="-like tokens we did not ask for. */
    if (isalpha((unsigned char)tok[0]) && (isalnum((unsigned char)ps->p[n]) || ps->p[n] == '_'))
        return false;
    ps->p += n;
    return true;
}

static ex *mk(parser *ps, uint8_t k)
{
    ex *x = tly_arena_zalloc(ps->a, sizeof *x);
    x->k = k;
    return x;
}

static ex *syntax(parser *ps, const char *what)
{
    if (!ps->err)
        ps->err = what;
    return NULL;
}

static ex *p_expr(parser *ps);
static ex *p_expr_body(parser *ps);

static ex *p_string(parser *ps)
{
    char q = *ps->p++;
    char *buf = tly_arena_alloc(ps->a, strlen(ps->p) + 1), *w = buf;
    while (*ps->p && *ps->p != q) {
        char c = *ps->p++;
        if (c == '\\') {
            if (!*ps->p)
                return syntax(ps, "an unterminated string");
            c = *ps->p++;
            switch (c) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case '\\': case '\'': case '"': break;
            default: return syntax(ps, "an escape sequence tally does not read");
            }
        }
        *w++ = c;
    }
    if (*ps->p != q)
        return syntax(ps, "an unterminated string");
    ps->p++;
    *w = 0;
    ex *x = mk(ps, X_LIT);
    x->lit = vstr(buf, (size_t)(w - buf));
    return x;
}

static ex *p_number(parser *ps)
{
    char *end;
    errno = 0;
    long long i = strtoll(ps->p, &end, 10);
    ex *x = mk(ps, X_LIT);
    if (*end == '.' || *end == 'e' || *end == 'E') {
        x->lit = (val){.t = V_DBL, .d = strtod(ps->p, &end)};
    } else {
        if (errno == ERANGE)
            return syntax(ps, "an integer literal out of range");
        x->lit = vint(i);
        if (*end == 'u')
            end++;
    }
    ps->p = end;
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
                return syntax(ps, "too many arguments"), false;
            if (!(buf[n++] = p_expr(ps)))
                return false;
        } while (eat(ps, ","));
        if (!eat(ps, ")"))
            return syntax(ps, "a missing ')'"), false;
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

static ex *p_primary(parser *ps)
{
    ws(ps);
    if (*ps->p == '\'' || *ps->p == '"')
        return p_string(ps);
    if (isdigit((unsigned char)*ps->p))
        return p_number(ps);
    if (eat(ps, "(")) {
        ex *x = p_expr(ps);
        return x && eat(ps, ")") ? x : syntax(ps, "a missing ')'");
    }
    if (eat(ps, "[")) {
        ex *x = mk(ps, X_LIST);
        ex *buf[64];
        uint32_t n = 0;
        if (!eat(ps, "]")) {
            do {
                if (n == 64 || !(buf[n++] = p_expr(ps)))
                    return syntax(ps, "a list literal tally does not read");
            } while (eat(ps, ","));
            if (!eat(ps, "]"))
                return syntax(ps, "a missing ']'");
        }
        x->args = tly_arena_alloc(ps->a, (n + 1) * sizeof *x->args);
        memcpy(x->args, buf, n * sizeof *buf);
        x->nargs = n;
        return x;
    }
    const char *id = p_ident(ps);
    if (!id)
        return syntax(ps, "an unexpected character");
    ex *x = mk(ps, X_LIT);
    if (!strcmp(id, "true") || !strcmp(id, "false")) {
        x->lit = vbool(id[0] == 't');
        return x;
    }
    if (!strcmp(id, "null")) {
        x->lit = (val){.t = V_NULL};
        return x;
    }
    if (eat(ps, "(")) {
        x->k = X_CALL;
        x->name = id;
        return p_args(ps, x) ? x : NULL;
    }
    x->k = X_IDENT;
    x->name = id;
    return x;
}

static ex *p_member(parser *ps)
{
    ex *x = p_primary(ps);
    while (x) {
        if (eat(ps, "[")) {
            ex *i = mk(ps, X_INDEX);
            i->a = x;
            i->b = p_expr(ps);
            if (!i->b || !eat(ps, "]"))
                return syntax(ps, "a missing ']'");
            x = i;
        } else if (eat(ps, ".")) {
            const char *f = p_ident(ps);
            if (!f)
                return syntax(ps, "a missing field name");
            ex *s = mk(ps, X_SELECT);
            s->name = f;
            s->a = x;
            if (eat(ps, "(")) {
                s->k = X_CALL;
                s->recv = x;
                s->a = NULL;
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
        return syntax(ps, "nesting deeper than tally reads");
    if (eat(ps, "!")) {
        ex *x = mk(ps, X_NOT);
        ps->depth++;
        x->a = p_unary(ps);
        ps->depth--;
        return x->a ? x : NULL;
    }
    ws(ps);
    if (*ps->p == '-' && !isdigit((unsigned char)ps->p[1])) {
        ps->p++;
        ex *x = mk(ps, X_NEG);
        ps->depth++;
        x->a = p_unary(ps);
        ps->depth--;
        return x->a ? x : NULL;
    }
    if (*ps->p == '-') {
        ps->p++;
        ex *x = p_number(ps);
        if (x && x->lit.t == V_INT)
            x->lit.i = -x->lit.i;
        else if (x)
            x->lit.d = -x->lit.d;
        return x;
    }
    return p_member(ps);
}

/* A left-associative level: operand (op operand)*, ops tried in order. */
static ex *p_level(parser *ps, ex *(*operand)(parser *), const char *const *ops)
{
    ex *x = operand(ps);
    for (;;) {
        if (!x)
            return NULL;
        const char *op = NULL;
        for (int i = 0; ops[i] && !op; i++)
            if (eat(ps, ops[i]))
                op = ops[i];
        if (!op)
            return x;
        ex *b = mk(ps, X_BIN);
        snprintf(b->op, sizeof b->op, "%s", op);
        b->a = x;
        b->b = operand(ps);
        if (!b->b)
            return NULL;
        x = b;
    }
}

static ex *p_mul(parser *ps)
{
    static const char *const ops[] = {"*", "/", "%", NULL};
    return p_level(ps, p_unary, ops);
}

static ex *p_add(parser *ps)
{
    static const char *const ops[] = {"+", "-", NULL};
    return p_level(ps, p_mul, ops);
}

static ex *p_rel(parser *ps)
{
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">", "in", NULL};
    return p_level(ps, p_add, ops);
}

/* operand (tok operand)*, as X_AND or X_OR nodes. */
static ex *p_logic(parser *ps, ex *(*operand)(parser *), const char *tok, uint8_t kind)
{
    ex *x = operand(ps);
    while (x && eat(ps, tok)) {
        ex *y = mk(ps, kind);
        y->a = x;
        y->b = operand(ps);
        x = y->b ? y : NULL;
    }
    return x;
}

static ex *p_and(parser *ps) { return p_logic(ps, p_rel, "&&", X_AND); }
static ex *p_or(parser *ps) { return p_logic(ps, p_and, "||", X_OR); }

static ex *p_expr(parser *ps)
{
    if (++ps->depth > MAX_DEPTH)
        return syntax(ps, "nesting deeper than tally reads");
    ex *x = p_expr_body(ps);
    ps->depth--;
    return x;
}

static ex *p_expr_body(parser *ps)
{
    ex *x = p_or(ps);
    if (x && eat(ps, "?")) {
        ex *c = mk(ps, X_COND);
        c->a = x;
        c->b = p_expr(ps);
        if (!c->b || !eat(ps, ":"))
            return syntax(ps, "a ?: without its ':'");
        c->c = p_expr(ps);
        return c->c ? c : NULL;
    }
    return x;
}

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

static val eval_has(env *e, const ex *x)
{
    if (x->nargs != 1 || x->args[0]->k != X_SELECT)
        return verr(e, V_UNSUP, "has() of something other than a field");
    val obj = eval(e, x->args[0]->a);
    if (failed(&obj))
        return obj;
    if (obj.t != V_MAP)
        return verr(e, V_ERR, "has() on a %s", obj.t == V_LIST ? "list" : "scalar");
    const char *f = x->args[0]->name;
    return vbool(map_get(&obj, f, strlen(f)) != NULL);
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
static val macro(env *e, const char *name, const val *range, const ex *var, const ex *pred, const ex *fn)
{
    if (failed(range))
        return *range;
    if ((range->t != V_LIST && range->t != V_MAP) || var->k != X_IDENT || e->nvars == 16)
        return verr(e, V_ERR, "%s() over a value that is neither a list nor a map", name);
    bool any_err = false, all = !strcmp(name, "all"), exists = !strcmp(name, "exists");
    bool one = !strcmp(name, "exists_one"), map = !strcmp(name, "map"), filter = !strcmp(name, "filter");
    uint32_t hits = 0, nout = 0;
    val *out = (map || filter) ? tly_arena_alloc(e->a, (range->n + 1) * sizeof *out) : NULL;
    val err = {0};
    const tly_node *key = range->t == V_MAP ? range->node->kids : NULL;
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
            val v = map ? eval(e, fn) : e->bound[slot];
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

static val string_arg(env *e, const ex *x, uint32_t i)
{
    if (i >= x->nargs)
        return verr(e, V_ERR, "%s() needs an argument", x->name);
    val v = eval(e, x->args[i]);
    if (!failed(&v) && v.t != V_STR)
        return verr(e, V_ERR, "%s() needs a string", x->name);
    return v;
}

static val str_split(env *e, const val *s, const val *sep)
{
    val *items = tly_arena_alloc(e->a, (s->len + 2) * sizeof *items);
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

static val str_matches(env *e, const val *s, const val *pat)
{
    char *px = tly_arena_strndup(e->a, pat->s, pat->len), *sx = tly_arena_strndup(e->a, s->s, s->len);
    regex_t re;
    if (strstr(px, "(?") || regcomp(&re, px, REG_EXTENDED | REG_NOSUB) != 0)
        return verr(e, V_UNSUP, "matches() with a pattern tally cannot compile");
    bool m = regexec(&re, sx, 0, NULL, 0) == 0;
    regfree(&re);
    return vbool(m);
}

static val case_of(env *e, const val *s, bool upper)
{
    char *o = tly_arena_strndup(e->a, s->s, s->len);
    for (size_t i = 0; i < s->len; i++)
        o[i] = (char)(upper ? toupper((unsigned char)o[i]) : tolower((unsigned char)o[i]));
    return vstr(o, s->len);
}

static val string_method(env *e, const ex *x, const val *s)
{
    const char *f = x->name;
    if (!strcmp(f, "lowerAscii") || !strcmp(f, "upperAscii"))
        return case_of(e, s, f[0] == 'u');
    if (!strcmp(f, "trim")) {
        size_t a = 0, b = s->len;
        while (a < b && isspace((unsigned char)s->s[a]))
            a++;
        while (b > a && isspace((unsigned char)s->s[b - 1]))
            b--;
        return vstr(s->s + a, b - a);
    }
    val arg = string_arg(e, x, 0);
    if (failed(&arg))
        return arg;
    if (!strcmp(f, "startsWith"))
        return vbool(arg.len <= s->len && !memcmp(s->s, arg.s, arg.len));
    if (!strcmp(f, "endsWith"))
        return vbool(arg.len <= s->len && !memcmp(s->s + s->len - arg.len, arg.s, arg.len));
    if (!strcmp(f, "contains"))
        return vbool(arg.len == 0 || memmem(s->s, s->len, arg.s, arg.len) != NULL);
    if (!strcmp(f, "split"))
        return x->nargs == 1 ? str_split(e, s, &arg) : verr(e, V_UNSUP, "split() with a limit");
    if (!strcmp(f, "matches"))
        return str_matches(e, s, &arg);
    return verr(e, V_UNSUP, "the string method %s()", f);
}

static val eval_call(env *e, const ex *x)
{
    const char *f = x->name;
    if (!x->recv) {
        if (!strcmp(f, "has"))
            return eval_has(e, x);
        if (x->nargs != 1)
            return verr(e, V_UNSUP, "the function %s() with %u arguments", f, x->nargs);
        val v = eval(e, x->args[0]);
        if (failed(&v))
            return v;
        if (!strcmp(f, "size"))
            return size_of(e, &v);
        if (!strcmp(f, "int") && v.t == V_INT)
            return v;
        if (!strcmp(f, "int") && v.t == V_DBL)
            return vint((int64_t)v.d);
        if (!strcmp(f, "double") && (v.t == V_INT || v.t == V_DBL))
            return (val){.t = V_DBL, .d = v.t == V_INT ? (double)v.i : v.d};
        if (!strcmp(f, "string") && v.t == V_STR)
            return v;
        if (!strcmp(f, "string") && v.t == V_INT) {
            char *b = tly_arena_printf(e->a, "%lld", (long long)v.i);
            return vstr(b, strlen(b));
        }
        return verr(e, V_UNSUP, "the function %s()", f);
    }
    if (!strcmp(f, "all") || !strcmp(f, "exists") || !strcmp(f, "exists_one") || !strcmp(f, "filter") ||
        !strcmp(f, "map")) {
        val range = eval(e, x->recv);
        if (x->nargs == 2)
            return macro(e, f, &range, x->args[0], !strcmp(f, "map") ? NULL : x->args[1],
                         !strcmp(f, "map") ? x->args[1] : NULL);
        if (x->nargs == 3 && !strcmp(f, "map"))
            return macro(e, f, &range, x->args[0], x->args[1], x->args[2]);
        return verr(e, V_UNSUP, "%s() with %u arguments", f, x->nargs);
    }
    val recv = eval(e, x->recv);
    if (failed(&recv))
        return recv;
    if (!strcmp(f, "size"))
        return size_of(e, &recv);
    if (recv.t == V_STR)
        return string_method(e, x, &recv);
    return verr(e, V_UNSUP, "the method %s()", f);
}

static val compare(env *e, const char *op, const val *a, const val *b)
{
    int c;
    if ((a->t == V_INT || a->t == V_DBL) && (b->t == V_INT || b->t == V_DBL)) {
        if (a->t == V_INT && b->t == V_INT)
            c = (a->i > b->i) - (a->i < b->i);
        else {
            double x = a->t == V_INT ? (double)a->i : a->d, y = b->t == V_INT ? (double)b->i : b->d;
            c = (x > y) - (x < y);
        }
    } else if (a->t == V_STR && b->t == V_STR) {
        size_t n = a->len < b->len ? a->len : b->len;
        c = memcmp(a->s, b->s, n);
        if (!c)
            c = (a->len > b->len) - (a->len < b->len);
    } else {
        return verr(e, V_ERR, "no such overload: %s between these types", op);
    }
    if (!strcmp(op, "<"))
        return vbool(c < 0);
    if (!strcmp(op, "<="))
        return vbool(c <= 0);
    if (!strcmp(op, ">"))
        return vbool(c > 0);
    return vbool(c >= 0);
}

static val arith(env *e, const char *op, const val *a, const val *b)
{
    if (a->t == V_INT && b->t == V_INT) {
        int64_t r;
        bool over = false;
        switch (op[0]) {
        case '+': over = __builtin_add_overflow(a->i, b->i, &r); break;
        case '-': over = __builtin_sub_overflow(a->i, b->i, &r); break;
        case '*': over = __builtin_mul_overflow(a->i, b->i, &r); break;
        default:
            if (b->i == 0 || (a->i == INT64_MIN && b->i == -1))
                return verr(e, V_ERR, "division by zero or overflow");
            r = op[0] == '/' ? a->i / b->i : a->i % b->i;
        }
        return over ? verr(e, V_ERR, "integer overflow") : vint(r);
    }
    if (a->t == V_DBL && b->t == V_DBL && op[0] != '%') {
        double r = op[0] == '+' ? a->d + b->d : op[0] == '-' ? a->d - b->d : op[0] == '*' ? a->d * b->d : a->d / b->d;
        return (val){.t = V_DBL, .d = r};
    }
    if (op[0] == '+' && a->t == V_STR && b->t == V_STR) {
        char *s = tly_arena_alloc(e->a, a->len + b->len + 1);
        memcpy(s, a->s, a->len);
        memcpy(s + a->len, b->s, b->len);
        s[a->len + b->len] = 0;
        return vstr(s, a->len + b->len);
    }
    if (op[0] == '+' && a->t == V_LIST && b->t == V_LIST) {
        val *items = tly_arena_alloc(e->a, (a->n + b->n + 1) * sizeof *items);
        for (uint32_t i = 0; i < a->n; i++)
            items[i] = list_at(a, i);
        for (uint32_t i = 0; i < b->n; i++)
            items[a->n + i] = list_at(b, i);
        return (val){.t = V_LIST, .items = items, .n = a->n + b->n};
    }
    return verr(e, V_ERR, "no such overload: %s between these types", op);
}

static val eval_bin(env *e, const ex *x)
{
    val a = eval(e, x->a), b = eval(e, x->b);
    if (a.t == V_UNSUP)
        return a;
    if (b.t == V_UNSUP)
        return b;
    if (failed(&a))
        return a;
    if (failed(&b))
        return b;
    const char *op = x->op;
    if (!strcmp(op, "=="))
        return vbool(equal(&a, &b));
    if (!strcmp(op, "!="))
        return vbool(!equal(&a, &b));
    if (!strcmp(op, "in")) {
        if (b.t == V_LIST) {
            for (uint32_t i = 0; i < b.n; i++) {
                val y = list_at(&b, i);
                if (equal(&a, &y))
                    return vbool(true);
            }
            return vbool(false);
        }
        if (b.t == V_MAP && a.t == V_STR)
            return vbool(map_get(&b, a.s, a.len) != NULL);
        return verr(e, V_ERR, "no such overload: in");
    }
    if (op[0] == '<' || op[0] == '>')
        return compare(e, op, &a, &b);
    return arith(e, op, &a, &b);
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
        return i.i >= 0 && i.i < (int64_t)a.n ? list_at(&a, (uint32_t)i.i) : verr(e, V_ERR, "index out of range");
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
    case X_IDENT:
        for (int i = e->nvars; i-- > 0;)
            if (!strcmp(e->var[i], x->name))
                return e->bound[i];
        if (!strcmp(x->name, "self"))
            return of_node(e->self);
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
        if (a.t == V_INT && a.i != INT64_MIN)
            return vint(-a.i);
        if (a.t == V_DBL)
            return (val){.t = V_DBL, .d = -a.d};
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
        val *items = tly_arena_alloc(e->a, (x->nargs + 1) * sizeof *items);
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

/* ---- what tally evaluates ------------------------------------------------- */

static bool listed(const char *name, const char *const *names)
{
    for (; *names; names++)
        if (!strcmp(name, *names))
            return true;
    return false;
}

static bool is_macro(const char *f)
{
    static const char *const m[] = {"all", "exists", "exists_one", "map", "filter", NULL};
    return listed(f, m);
}

/*
** The first construct of x that tally does not evaluate (a function, a
** method, a name), or NULL. Checked before evaluating, so that such a rule is
** never decided by an error that happens to come first.
*/
static const char *unsupported(const ex *x, const char **vars, int nvars)
{
    static const char *const globals[] = {"has", "size", "int", "double", "string", NULL};
    static const char *const methods[] = {"size", "startsWith", "endsWith", "contains", "matches", "split",
                                          "lowerAscii", "upperAscii", "trim", NULL};
    if (!x)
        return NULL;
    switch (x->k) {
    case X_IDENT:
        for (int i = 0; i < nvars; i++)
            if (!strcmp(vars[i], x->name))
                return NULL;
        return strcmp(x->name, "self") ? x->name : NULL;
    case X_CALL: {
        if (!x->recv && !listed(x->name, globals))
            return x->name;
        if (x->recv && !listed(x->name, methods) && !is_macro(x->name))
            return x->name;
        const char *u = unsupported(x->recv, vars, nvars);
        if (u)
            return u;
        const char *inner[17];
        int n = nvars < 16 ? nvars : 15;
        if (n)
            memcpy(inner, vars, (size_t)n * sizeof *vars);
        uint32_t first = 0;
        if (x->recv && is_macro(x->name) && x->nargs >= 2 && x->args[0]->k == X_IDENT) {
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

/* Whether the rule names oldSelf as a word (a transition rule). */
static bool uses_old_self(const char *rule)
{
    for (const char *p = strstr(rule, "oldSelf"); p; p = strstr(p + 1, "oldSelf"))
        if ((p == rule || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.')) &&
            !(isalnum((unsigned char)p[7]) || p[7] == '_'))
            return true;
    return false;
}

tly_cel_result tly_cel_eval_rule(const char *rule, const tly_node *self, char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = 0;
    if (uses_old_self(rule)) {
        if (why)
            snprintf(why, whylen, "a transition rule (oldSelf): checked on updates only");
        return TLY_CEL_UNSUPPORTED;
    }
    tly_arena *a = tly_arena_create(4096);
    parser ps = {.p = rule, .a = a};
    ex *x = p_expr(&ps);
    ws(&ps);
    tly_cel_result r;
    if (!x || *ps.p) {
        if (why)
            snprintf(why, whylen, "cannot parse it (%s at offset %zu)", ps.err ? ps.err : "unexpected text",
                     (size_t)(ps.p - rule));
        r = TLY_CEL_UNSUPPORTED;
    } else if ((ps.err = unsupported(x, NULL, 0))) {
        if (why)
            snprintf(why, whylen, "uses %s, which tally does not evaluate", ps.err);
        r = TLY_CEL_UNSUPPORTED;
    } else {
        env e = {.a = a, .self = self};
        val v = eval(&e, x);
        if (v.t == V_BOOL) {
            r = v.b ? TLY_CEL_TRUE : TLY_CEL_FALSE;
        } else if (v.t == V_UNSUP) {
            r = TLY_CEL_UNSUPPORTED;
            if (why)
                snprintf(why, whylen, "uses %s, which tally does not evaluate", v.s);
        } else {
            r = TLY_CEL_ERROR;
            if (why)
                snprintf(why, whylen, "%s", v.t == V_ERR ? v.s : "the rule does not give a bool");
        }
    }
    tly_arena_destroy(a);
    return r;
}
