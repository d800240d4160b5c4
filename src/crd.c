/*
** crd.c: objects checked against the CustomResourceDefinitions of the input
** (crd.h has the rules).
**
** The set owns one arena: the CRDs' schemas are deep copies of the loader's
** trees, which live only while one object is decoded. The objects kept for
** validate are packed (nodepack.h: a sixth of a copy's bytes) and rebuilt
** one at a time when they are checked.
** Checking walks an object and its schema together, with the field path in a
** buffer (as the decoders' paths read: spec.sources[0].match), and reports
** through the store's diagnostics, so `validate` prints and sorts these
** problems with every other. Messages follow the API server's wording where
** users know it (Required value, Unsupported value, unknown field "...").
*/
#include "tally/crd.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"
#include "tally/cel.h"
#include "tally/decode.h"
#include "tally/error.h"
#include "tally/nodepack.h"

typedef struct {
    const char *name;
    bool served;
    const tly_node *schema;  /* openAPIV3Schema, or NULL */
} crd_version;

typedef struct {
    const char *group, *kind;
    crd_version *v;
    uint32_t nv;
} crd;

typedef struct {
    tly_packed root;
    const char *file;
} kept;

/* Rules reported as not evaluated, so that each is reported once. */
typedef struct {
    const tly_node **v;
    uint32_t n, cap;
} warnlist;

struct tly_crdset {
    tly_arena *a;
    crd *crds;
    uint32_t ncrds, capcrds;
    tly_nodepack *pack;        /* the kept objects' trees */
    kept *objs;
    uint32_t nobjs, capobjs;
    warnlist warned;           /* over every kept object (validate) */
};

tly_crdset *tly_crdset_create(void)
{
    tly_crdset *c = tly_xcalloc(1, sizeof *c);
    c->a = tly_arena_create(64 * 1024);
    return c;
}

void tly_crdset_destroy(tly_crdset *c)
{
    if (!c)
        return;
    tly_arena_destroy(c->a);
    tly_nodepack_destroy(c->pack);
    free(c->crds);
    free(c->objs);
    free(c->warned.v);
    free(c);
}

/* ---- trees --------------------------------------------------------------- */

static const char *get_str(const tly_node *map, const char *key)
{
    const tly_node *n = tly_node_member(map, key);
    return n && n->type == TLY_N_STRING ? n->str : NULL;
}

static bool get_bool(const tly_node *map, const char *key)
{
    const tly_node *n = tly_node_member(map, key);
    return n && n->type == TLY_N_BOOL && n->bval;
}

/* The group of an apiVersion ("" for the core group) into buf; the version after it. */
static const char *split_version(const char *api_version, char *group, size_t len)
{
    const char *slash = strchr(api_version, '/');
    size_t g = slash ? (size_t)(slash - api_version) : 0;
    if (len == 0)
        return slash ? slash + 1 : api_version;
    if (g > len - 1)
        g = len - 1;
    memcpy(group, api_version, g);
    group[g] = 0;
    return slash ? slash + 1 : api_version;
}

bool tly_crd_is_crd(const tly_node *root)
{
    /* Asked of every object the loader reads: the kind first, which rules out nearly all. */
    const char *k = get_str(root, "kind");
    if (!k || strcmp(k, "CustomResourceDefinition"))
        return false;
    const char *av = get_str(root, "apiVersion");
    return av && !strcmp(av, "apiextensions.k8s.io/v1");
}

/* ---- reading CRDs -------------------------------------------------------- */

void tly_crdset_add(tly_crdset *c, const tly_node *root, const char *file, tly_diags *d)
{
    const tly_node *spec = tly_node_member(root, "spec"), *names = tly_node_member(spec, "names");
    const tly_node *vs = tly_node_member(spec, "versions");
    const char *group = get_str(spec, "group"), *kind = get_str(names, "kind");
    const char *name = get_str(tly_node_member(root, "metadata"), "name");
    if (!group || !kind || !vs || vs->type != TLY_N_SEQ) {
        tly_diags_add(d, TLY_SEV_WARNING, file, root->line, root->col, "CustomResourceDefinition",
                      name ? name : "-", "spec",
                      "needs spec.group, spec.names.kind and spec.versions to check objects against it");
        return;
    }
    if (c->ncrds == c->capcrds) {
        c->capcrds = c->capcrds ? 2 * c->capcrds : 8;
        c->crds = tly_xrealloc(c->crds, c->capcrds * sizeof *c->crds);
    }
    crd *x = &c->crds[c->ncrds++];
    x->group = tly_arena_strdup(c->a, group);
    x->kind = tly_arena_strdup(c->a, kind);
    x->v = tly_arena_zalloc(c->a, (vs->nkids + 1) * sizeof *x->v);
    x->nv = 0;
    for (const tly_node *it = vs->kids; it; it = it->next) {
        const char *vn = get_str(it, "name");
        if (!vn)
            continue;
        const tly_node *schema = tly_node_member(tly_node_member(it, "schema"), "openAPIV3Schema");
        x->v[x->nv++] = (crd_version){tly_arena_strdup(c->a, vn), get_bool(it, "served"),
                                      schema ? tly_node_copy(schema, c->a) : NULL};
    }
}

/* Groups of Kubernetes itself: never defined by a CRD of the input. */
static bool builtin_group(const char *g)
{
    size_t n = strlen(g);
    return !*g || !strchr(g, '.') || (n >= 7 && !strcmp(g + n - 7, ".k8s.io"));
}

void tly_crdset_keep(tly_crdset *c, const tly_node *root, const char *file)
{
    const char *av = get_str(root, "apiVersion");
    char group[256];
    if (!av || !get_str(root, "kind"))
        return;
    split_version(av, group, sizeof group);
    if (builtin_group(group))
        return;
    if (c->nobjs == c->capobjs) {
        c->capobjs = c->capobjs ? 2 * c->capobjs : 64;
        c->objs = tly_xrealloc(c->objs, c->capobjs * sizeof *c->objs);
    }
    if (!c->pack)
        c->pack = tly_nodepack_create();
    /* Objects come a file at a time: one copy of each file's name. */
    const char *f = c->nobjs && !strcmp(c->objs[c->nobjs - 1].file, file) ? c->objs[c->nobjs - 1].file
                                                                           : tly_arena_strdup(c->a, file);
    c->objs[c->nobjs++] = (kept){tly_nodepack_add(c->pack, root), f};
}

/* ---- checking ------------------------------------------------------------ */

typedef struct {
    tly_diags *d;
    warnlist *warned;    /* the rules already reported as not evaluated */
    tly_arena *a;        /* for messages and compiled rules */
    const char *file, *kind, *name;
    char path[1024];
    size_t plen;
    unsigned quiet;      /* > 0 inside anyOf: count, do not report */
    unsigned ratchet;    /* > 0 inside a value an UPDATE left unchanged: validation ratcheting */
    unsigned failures;   /* problems found (reported or not) */
} vctx;

static size_t push_key(vctx *v, const char *key)
{
    size_t mark = v->plen;
    int n = snprintf(v->path + v->plen, sizeof v->path - v->plen, "%s%s", v->plen ? "." : "", key);
    if (n > 0 && v->plen + (size_t)n < sizeof v->path)
        v->plen += (size_t)n;
    return mark;
}

static size_t push_idx(vctx *v, uint32_t i)
{
    size_t mark = v->plen;
    int n = snprintf(v->path + v->plen, sizeof v->path - v->plen, "[%u]", i);
    if (n > 0 && v->plen + (size_t)n < sizeof v->path)
        v->plen += (size_t)n;
    return mark;
}

static void pop(vctx *v, size_t mark)
{
    v->plen = mark;
    v->path[mark] = 0;
}

/*
** A problem at `at`. The API server ratchets validation (CRDValidationRatcheting,
** on since Kubernetes 1.30): on an UPDATE, a value equal to the old one is not
** refused for a schema rule or a rule without oldSelf, so that a CRD made
** stricter does not block updates of other fields; strict problems (unknown
** fields, transition rules) are never ratcheted.
*/
/* A diagnostic of severity sev at `at` (a map member: at its key), on the current path. */
static void vreport(vctx *v, const tly_node *at, tly_severity sev, const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));
static void vreport(vctx *v, const tly_node *at, tly_severity sev, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    uint32_t line = at->key ? at->kline : at->line, col = at->key ? at->kcol : at->col;
    tly_diags_add(v->d, sev, v->file, line, col, v->kind, v->name, v->plen ? v->path : "-", "%s", msg);
}

static void vproblem(vctx *v, const tly_node *at, bool strict, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
static void vproblem(vctx *v, const tly_node *at, bool strict, const char *fmt, va_list ap)
{
    if (v->ratchet && !strict)
        return;
    v->failures++;
    if (!v->quiet)
        vreport(v, at, TLY_SEV_ERROR, fmt, ap);
}

static void problem(vctx *v, const tly_node *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void problem(vctx *v, const tly_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vproblem(v, at, false, fmt, ap);
    va_end(ap);
}

static void strict_problem(vctx *v, const tly_node *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void strict_problem(vctx *v, const tly_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vproblem(v, at, true, fmt, ap);
    va_end(ap);
}

static void check(vctx *v, const tly_node *val, const tly_node *old, const tly_node *s, bool root);

/* Whether rule r was reported as not evaluated before; records it if not. */
static bool warned(warnlist *w, const tly_node *r)
{
    for (uint32_t i = 0; i < w->n; i++)
        if (w->v[i] == r)
            return true;
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 8;
        w->v = tly_xrealloc(w->v, w->cap * sizeof *w->v);
    }
    w->v[w->n++] = r;
    return false;
}

/* A warning at val (none while counting anyOf branches or in a ratcheted value). */
static void warning(vctx *v, const tly_node *val, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void warning(vctx *v, const tly_node *val, const char *fmt, ...)
{
    if (v->quiet || v->ratchet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vreport(v, val, TLY_SEV_WARNING, fmt, ap);
    va_end(ap);
}

static const char *value_type(const tly_node *n)
{
    switch (n->type) {
    case TLY_N_BOOL: return "boolean";
    case TLY_N_INT: return "integer";
    case TLY_N_FLOAT: return "number";
    case TLY_N_STRING: return "string";
    case TLY_N_MAP: return "object";
    case TLY_N_SEQ: return "array";
    default: return "null";
    }
}

/* Whether val has schema type t (integer is a number too). */
static bool type_ok(const tly_node *val, const char *t)
{
    const char *vt = value_type(val);
    return !strcmp(vt, t) || (!strcmp(t, "number") && !strcmp(vt, "integer"));
}

/* A short quoted form of a scalar for messages. */
static const char *shown(const tly_node *val, char *buf, size_t len)
{
    if (val->type == TLY_N_STRING)
        snprintf(buf, len, "\"%.200s\"", val->str);
    else if (val->type == TLY_N_BOOL)
        snprintf(buf, len, "%s", val->bval ? "true" : "false");
    else if (val->str)
        snprintf(buf, len, "%.200s", val->str);
    else
        snprintf(buf, len, "%s", value_type(val));
    return buf;
}

/* Two values equal as JSON values (numbers by value). */
static bool same_value(const tly_node *a, const tly_node *b)
{
    bool an = a->type == TLY_N_INT || a->type == TLY_N_FLOAT, bn = b->type == TLY_N_INT || b->type == TLY_N_FLOAT;
    if (an && bn)
        return strtod(a->str, NULL) == strtod(b->str, NULL);
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case TLY_N_BOOL: return a->bval == b->bval;
    case TLY_N_STRING: return !strcmp(a->str, b->str);
    case TLY_N_NULL: return true;
    case TLY_N_MAP:
        if (a->nkids != b->nkids)
            return false;
        for (const tly_node *k = a->kids; k; k = k->next) {
            const tly_node *o = tly_node_get(b, k->key);
            if (!o || !same_value(k, o))
                return false;
        }
        return true;
    case TLY_N_SEQ: {
        if (a->nkids != b->nkids)
            return false;
        const tly_node *y = b->kids;
        for (const tly_node *x = a->kids; x; x = x->next, y = y->next)
            if (!same_value(x, y))
                return false;
        return true;
    }
    default: return false;
    }
}

/* The pattern as POSIX extended syntax: \d \w \s become classes. NULL when it cannot be. */
static char *posix_pattern(const char *p)
{
    size_t n = strlen(p);
    char *out = tly_xmalloc(n * 12 + 1), *w = out;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\' && i + 1 < n) {
            const char *cls = NULL;
            switch (p[i + 1]) {
            case 'd': cls = "[0-9]"; break;
            case 'D': cls = "[^0-9]"; break;
            case 'w': cls = "[A-Za-z0-9_]"; break;
            case 's': cls = "[[:space:]]"; break;
            default: break;
            }
            if (cls) {
                w += sprintf(w, "%s", cls);
                i++;
                continue;
            }
            *w++ = p[i++];
            *w++ = p[i];
            continue;
        }
        if (p[i] == '(' && i + 1 < n && p[i + 1] == '?') {
            free(out);
            return NULL;  /* (?:...) and lookarounds are not POSIX */
        }
        *w++ = p[i];
    }
    *w = 0;
    return out;
}

static void check_pattern(vctx *v, const tly_node *val, const char *pat)
{
    char *px = posix_pattern(pat);
    regex_t re;
    if (!px || regcomp(&re, px, REG_EXTENDED | REG_NOSUB) != 0) {
        warning(v, val, "pattern '%s' not evaluated: tally cannot compile it", pat);
        free(px);
        return;
    }
    if (regexec(&re, val->str, 0, NULL, 0) != 0)
        problem(v, val, "Invalid value: \"%.200s\": should match '%s'", val->str, pat);
    regfree(&re);
    free(px);
}

/* Characters (code points) of a UTF-8 string. */
static size_t chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static bool num_of(const tly_node *n, double *out)
{
    if (!n || (n->type != TLY_N_INT && n->type != TLY_N_FLOAT))
        return false;
    *out = strtod(n->str, NULL);
    return true;
}

static void check_string(vctx *v, const tly_node *val, const tly_node *s)
{
    const char *pat = get_str(s, "pattern"), *fmt = get_str(s, "format");
    double lim;
    if (pat)
        check_pattern(v, val, pat);
    if (num_of(tly_node_member(s, "minLength"), &lim) && (double)chars(val->str) < lim)
        problem(v, val, "Invalid value: \"%.200s\": should be at least %.0f chars long", val->str, lim);
    if (num_of(tly_node_member(s, "maxLength"), &lim) && (double)chars(val->str) > lim)
        problem(v, val, "Too long: may not be more than %.0f bytes", lim);
    int64_t t;
    if (fmt && !strcmp(fmt, "date-time") && !tly_parse_time(val->str, &t))
        problem(v, val, "Invalid value: \"%.200s\": must be an RFC 3339 date-time", val->str);
}

static void check_number(vctx *v, const tly_node *val, const tly_node *s)
{
    double x = strtod(val->str, NULL), lim;
    const char *fmt = get_str(s, "format");
    if (num_of(tly_node_member(s, "minimum"), &lim) &&
        (get_bool(s, "exclusiveMinimum") ? x <= lim : x < lim))
        problem(v, val, "Invalid value: %s: should be greater than %s%g", val->str,
                get_bool(s, "exclusiveMinimum") ? "" : "or equal to ", lim);
    if (num_of(tly_node_member(s, "maximum"), &lim) &&
        (get_bool(s, "exclusiveMaximum") ? x >= lim : x > lim))
        problem(v, val, "Invalid value: %s: should be less than %s%g", val->str,
                get_bool(s, "exclusiveMaximum") ? "" : "or equal to ", lim);
    if (fmt && val->type == TLY_N_INT) {
        errno = 0;
        long long i = strtoll(val->str, NULL, 10);
        bool big = errno == ERANGE;
        if ((!strcmp(fmt, "int32") && (big || i < INT32_MIN || i > INT32_MAX)) ||
            (!strcmp(fmt, "int64") && big))
            problem(v, val, "Invalid value: %s: does not fit in %s", val->str, fmt);
    }
}

static void check_enum(vctx *v, const tly_node *val, const tly_node *en)
{
    for (const tly_node *e = en->kids; e; e = e->next)
        if (same_value(val, e))
            return;
    char list[512] = "", one[220], b[220];
    size_t len = 0;
    for (const tly_node *e = en->kids; e && len < sizeof list - 1; e = e->next)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", shown(e, one, sizeof one));
    problem(v, val, "Unsupported value: %s: supported values: %s", shown(val, b, sizeof b), list);
}

/* An object's members against properties, additionalProperties and the unknown-field rule. */
static void check_members(vctx *v, const tly_node *val, const tly_node *old, const tly_node *s, bool root)
{
    const tly_node *props = tly_node_member(s, "properties");
    const tly_node *addl = tly_node_member(s, "additionalProperties");
    bool preserve = get_bool(s, "x-kubernetes-preserve-unknown-fields");
    for (const tly_node *m = val->kids; m; m = m->next) {
        if (root && (!strcmp(m->key, "apiVersion") || !strcmp(m->key, "kind") || !strcmp(m->key, "metadata")))
            continue;
        const tly_node *ps = props ? tly_node_member(props, m->key) : NULL;
        /* Object members correlate with the old object's by key (transition rules, ratcheting). */
        const tly_node *om = old && old->type == TLY_N_MAP ? tly_node_member(old, m->key) : NULL;
        size_t mark = push_key(v, m->key);
        if (ps)
            check(v, m, om, ps, false);
        else if (addl && addl->type == TLY_N_MAP)
            check(v, m, om, addl, false);
        else if (!preserve && !(addl && addl->type == TLY_N_BOOL && addl->bval))
            strict_problem(v, m, "unknown field \"%s\"", v->path);
        pop(v, mark);
    }
    const tly_node *req = tly_node_member(s, "required");
    for (const tly_node *r = req && req->type == TLY_N_SEQ ? req->kids : NULL; r; r = r->next) {
        if (r->type != TLY_N_STRING || tly_node_member(val, r->str))
            continue;
        size_t mark = push_key(v, r->str);
        problem(v, val, "Required value");
        pop(v, mark);
    }
    double lim;
    if (num_of(tly_node_member(s, "minProperties"), &lim) && val->nkids < lim)
        problem(v, val, "Invalid value: should have at least %.0f properties", lim);
    if (num_of(tly_node_member(s, "maxProperties"), &lim) && val->nkids > lim)
        problem(v, val, "Too many: %u: must have at most %.0f items", val->nkids, lim);
}

/* Whether items a and b have equal values at every list-map key. */
static bool same_keys(const tly_node *a, const tly_node *b, const tly_node *keys)
{
    for (const tly_node *k = keys->kids; k; k = k->next) {
        if (k->type != TLY_N_STRING)
            continue;
        const tly_node *x = tly_node_member(a, k->str), *y = tly_node_member(b, k->str);
        if (!x != !y || (x && !same_value(x, y)))
            return false;
    }
    return true;
}

/*
** The item of the old list that item `it` correlates with: only in a list of
** x-kubernetes-list-type map, by its keys, as the API server correlates them
** (items of sets and atomic lists have no old value).
*/
static const tly_node *old_item(const tly_node *it, const tly_node *old, const char *lt, const tly_node *keys)
{
    if (!old || old->type != TLY_N_SEQ || !lt || strcmp(lt, "map") || !keys || keys->type != TLY_N_SEQ)
        return NULL;
    for (const tly_node *o = old->kids; o; o = o->next)
        if (same_keys(o, it, keys))
            return o;
    return NULL;
}

static void check_items(vctx *v, const tly_node *val, const tly_node *old, const tly_node *s)
{
    const tly_node *items = tly_node_member(s, "items");
    const char *lt = get_str(s, "x-kubernetes-list-type");
    const tly_node *keys = tly_node_member(s, "x-kubernetes-list-map-keys");
    uint32_t i = 0;
    for (const tly_node *it = val->kids; it; it = it->next, i++) {
        size_t mark = push_idx(v, i);
        if (items)
            check(v, it, old_item(it, old, lt, keys), items, false);
        for (const tly_node *prev = val->kids; lt && prev != it; prev = prev->next) {
            bool dup = !strcmp(lt, "set") ? same_value(prev, it)
                     : !strcmp(lt, "map") && keys && keys->type == TLY_N_SEQ && same_keys(prev, it, keys);
            if (dup) {
                char b[220];
                problem(v, it, "Duplicate value: %s", it->type == TLY_N_MAP ? "an item with the same keys" : shown(it, b, sizeof b));
                break;
            }
        }
        pop(v, mark);
    }
    double lim;
    if (num_of(tly_node_member(s, "minItems"), &lim) && val->nkids < lim)
        problem(v, val, "Invalid value: should have at least %.0f items", lim);
    if (num_of(tly_node_member(s, "maxItems"), &lim) && val->nkids > lim)
        problem(v, val, "Too many: %u: must have at most %.0f items", val->nkids, lim);
}

/* anyOf: at least one branch holds (each tried quietly). */
static void check_any_of(vctx *v, const tly_node *val, const tly_node *old, const tly_node *any)
{
    for (const tly_node *b = any->kids; b; b = b->next) {
        unsigned before = v->failures;
        v->quiet++;
        check(v, val, old, b, false);
        v->quiet--;
        bool held = v->failures == before;
        v->failures = before;
        if (held)
            return;
    }
    char b[220];
    problem(v, val, "Invalid value: %s: must match at least one schema of anyOf", shown(val, b, sizeof b));
}

/*
** The schema node's x-kubernetes-validations rules with self = val. A rule
** that does not hold is an error with its message; one that fails to evaluate
** (a missing key) an error too, as the API server refuses the object then. A
** rule tally cannot evaluate is a warning, once per rule. A transition rule
** (oldSelf) is evaluated only where the value has an old one (an UPDATE, at a
** correlated place), as the API server does; elsewhere it says nothing.
** optionalOldSelf rules see oldSelf as a CEL optional, which tally does not
** evaluate: a warning.
*/
static void check_rules(vctx *v, const tly_node *val, const tly_node *old, const tly_node *s)
{
    const tly_node *rules = tly_node_member(s, "x-kubernetes-validations");
    for (const tly_node *r = rules && rules->type == TLY_N_SEQ ? rules->kids : NULL; r; r = r->next) {
        const char *rule = get_str(r, "rule"), *msg = get_str(r, "message");
        if (!rule)
            continue;
        const char *cwhy;
        char why[300];
        tly_cel_prog *p = tly_cel_compile(v->a, rule, TLY_CEL_ENV_RULE, &cwhy);
        tly_cel_result res;
        bool transition = p && tly_cel_is_transition(p);
        if (get_bool(r, "optionalOldSelf")) {
            res = TLY_CEL_UNSUPPORTED;
            snprintf(why, sizeof why, "uses optionalOldSelf, which tally does not evaluate");
        } else if (!p) {
            res = TLY_CEL_UNSUPPORTED;
            snprintf(why, sizeof why, "%s", cwhy);
        } else if (transition && !old) {
            continue;
        } else {
            res = tly_cel_eval_self(p, val, old, why, sizeof why);
        }
        const char *failed = msg ? msg : tly_arena_printf(v->a, "failed rule: %s", rule);
        if (res == TLY_CEL_FALSE && transition)
            strict_problem(v, val, "Invalid value: \"%s\": %s", value_type(val), failed);
        else if (res == TLY_CEL_FALSE)
            problem(v, val, "Invalid value: \"%s\": %s", value_type(val), failed);
        else if (res == TLY_CEL_ERROR && transition)
            strict_problem(v, val, "Invalid value: \"%s\": rule %s failed to evaluate: %s", value_type(val), rule, why);
        else if (res == TLY_CEL_ERROR)
            problem(v, val, "Invalid value: \"%s\": rule %s failed to evaluate: %s", value_type(val), rule, why);
        else if (res == TLY_CEL_UNSUPPORTED && !v->quiet && !v->ratchet && !warned(v->warned, r))
            warning(v, val, "x-kubernetes-validations rule '%.200s' not evaluated: it %s", rule, why);
    }
}

static void check(vctx *v, const tly_node *val, const tly_node *old, const tly_node *s, bool root)
{
    if (val->type == TLY_N_NULL)
        return;  /* pruned by the API server where not nullable; nothing to check where it is */
    /* Unchanged since the old object: only strict problems count below (vproblem). */
    bool unchanged = old && same_value(val, old);
    v->ratchet += unchanged;
    const char *t = get_str(s, "type");
    if (get_bool(s, "x-kubernetes-int-or-string")) {
        if (val->type != TLY_N_INT && val->type != TLY_N_STRING) {
            problem(v, val, "Invalid value: must be an integer or a string, not %s", value_type(val));
            goto out;
        }
    } else if (t && !type_ok(val, t)) {
        char b[220];
        problem(v, val, "Invalid value: %s: must be of type %s, not %s", shown(val, b, sizeof b), t, value_type(val));
        goto out;
    }
    const tly_node *en = tly_node_member(s, "enum"), *any = tly_node_member(s, "anyOf");
    if (en && en->type == TLY_N_SEQ)
        check_enum(v, val, en);
    if (any && any->type == TLY_N_SEQ)
        check_any_of(v, val, old, any);
    check_rules(v, val, old, s);
    switch (val->type) {
    case TLY_N_MAP: check_members(v, val, old, s, root); break;
    case TLY_N_SEQ: check_items(v, val, old, s); break;
    case TLY_N_STRING: check_string(v, val, s); break;
    case TLY_N_INT:
    case TLY_N_FLOAT: check_number(v, val, s); break;
    default: break;
    }
out:
    v->ratchet -= unchanged;
}

static const crd *find_crd(const tly_crdset *c, const char *group, const char *kind)
{
    for (uint32_t i = c->ncrds; i-- > 0;)  /* the later definition wins, as a later apply would */
        if (!strcmp(c->crds[i].group, group) && !strcmp(c->crds[i].kind, kind))
            return &c->crds[i];
    return NULL;
}

/*
** Object root (from file; old: the object before an UPDATE, or NULL) against
** the CRD of its kind, if c has one. Reads c only; messages and compiled
** rules go to arena a, rules warned about to w. Whether c had the CRD.
*/
static bool check_root(const tly_crdset *c, const tly_node *root, const tly_node *old, const char *file,
                       tly_arena *a, warnlist *w, tly_diags *d)
{
    const char *av = get_str(root, "apiVersion"), *kind = get_str(root, "kind");
    if (!av || !kind)
        return false;
    char group[256];
    const char *version = split_version(av, group, sizeof group);
    const crd *x = find_crd(c, group, kind);
    if (!x)
        return false;
    const tly_node *md = tly_node_member(root, "metadata");
    const char *ns = get_str(md, "namespace"), *name = get_str(md, "name");
    char full[512];
    snprintf(full, sizeof full, "%s%s%s", ns ? ns : "", ns ? "/" : "", name ? name : "-");
    vctx v = {.d = d, .warned = w, .a = a, .file = file, .kind = kind, .name = full};
    const crd_version *ver = NULL;
    for (uint32_t i = 0; i < x->nv; i++)
        if (!strcmp(x->v[i].name, version))
            ver = &x->v[i];
    const tly_node *avn = tly_node_member(root, "apiVersion");
    if (!ver || !ver->served) {
        push_key(&v, "apiVersion");
        problem(&v, avn, "the CustomResourceDefinition of %s in the input %s version %s", kind,
                ver ? "does not serve" : "has no", version);
        return true;
    }
    if (ver->schema)
        check(&v, root, old && old->type == TLY_N_MAP ? old : NULL, ver->schema, true);
    return true;
}

void tly_crdset_check(tly_crdset *c, tly_diags *d)
{
    if (!c->ncrds)
        return;
    /* Each object is rebuilt in a scratch arena, checked and dropped. */
    tly_arena *obj = tly_arena_create(64 * 1024);
    for (uint32_t i = 0; i < c->nobjs; i++) {
        check_root(c, tly_nodepack_get(c->pack, c->objs[i].root, obj), NULL, c->objs[i].file, c->a,
                   &c->warned, d);
        tly_arena_reset(obj);
    }
    tly_arena_destroy(obj);
}

bool tly_crdset_check_object(const tly_crdset *c, const tly_node *root, const tly_node *old, const char *file,
                             tly_diags *d)
{
    if (!c)
        return false;
    tly_arena *a = tly_arena_create(16 * 1024);
    warnlist w = {0};
    bool found = check_root(c, root, old, file, a, &w, d);
    free(w.v);
    tly_arena_destroy(a);
    return found;
}
