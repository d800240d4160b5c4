/*
** decode_common.c: the typed field getters every kind's decoder uses
** (decode.h), and the field-path bookkeeping behind their diagnostics.
**
** The getters centralise the API server's type rules: a string field
** takes a string, a quantity takes a string or a number, a map takes a map.
** Every mismatch becomes one diagnostic at the offending value, naming the
** full field path, so the decoders themselves only say what they want.
*/
#include "tally/decode.h"
#include "tally/textcache.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/error.h"

/* ---- field paths --------------------------------------------------------- */

/*
** Appends n bytes of s to the path, truncating at TLY_PATH_MAX - 1. Plain
** copies, not snprintf: every field a decoder reads pushes a segment, and
** formatting was a tenth of decoding a pod.
*/
static void path_append(tly_dctx *dx, const char *s, size_t n)
{
    size_t room = TLY_PATH_MAX - 1 - dx->plen;
    if (n > room)
        n = room;
    memcpy(dx->path + dx->plen, s, n);
    dx->plen += n;
    dx->path[dx->plen] = '\0';
}

size_t tly_dx_push_key(tly_dctx *dx, tly_key key)
{
    size_t mark = dx->plen;
    if (dx->plen)
        path_append(dx, ".", 1);
    path_append(dx, key.s, key.len);
    return mark;
}

size_t tly_dx_push_idx(tly_dctx *dx, uint32_t i)
{
    size_t mark = dx->plen;
    char buf[16], *p = buf + sizeof buf;
    *--p = ']';
    do
        *--p = (char)('0' + i % 10);
    while (i /= 10);
    *--p = '[';
    path_append(dx, p, (size_t)(buf + sizeof buf - p));
    return mark;
}

void tly_dx_pop(tly_dctx *dx, size_t mark)
{
    dx->plen = mark;
    dx->path[mark] = '\0';
}

/* ---- diagnostics --------------------------------------------------------- */

static void dx_report(tly_dctx *dx, tly_severity sev, const tly_node *at, const char *key,
                      const char *fmt, va_list ap)
{
    size_t mark = dx->plen;
    if (key)
        tly_dx_push(dx, key);
    if (!at)
        at = dx->root;
    uint32_t line = at ? at->line : 0, col = at ? at->col : 0;
    tly_diags_vadd(dx->diags, sev, dx->file, line, col, dx->kind, dx->objname,
                   dx->plen ? dx->path : NULL, fmt, ap);
    tly_dx_pop(dx, mark);
    if (sev == TLY_SEV_ERROR)
        dx->errors++;
}

void tly_dx_error(tly_dctx *dx, const tly_node *at, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dx_report(dx, TLY_SEV_ERROR, at, key, fmt, ap);
    va_end(ap);
}

void tly_dx_invalid(tly_dctx *dx, const tly_node *at, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dx_report(dx, TLY_SEV_ERROR, at, key, fmt, ap);
    va_end(ap);
    dx->errors--;  /* reported, but the object stays usable */
}

void tly_dx_warn(tly_dctx *dx, const tly_node *at, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dx_report(dx, TLY_SEV_WARNING, at, key, fmt, ap);
    va_end(ap);
}

/* ---- getters ------------------------------------------------------------- */

static void wrong_type(tly_dctx *dx, const tly_node *n, const char *key, const char *want)
{
    tly_dx_error(dx, n, key, "expected %s, got %s", want, tly_ntype_name(n->type));
}

const char *tly_dx_text(tly_dctx *dx, const char *s, size_t len)
{
    return dx->texts ? tly_textcache_get(dx->texts, s, len) : tly_arena_strndup(dx->arena, s, len);
}

/*
** The getters below look a member up once and read it with these (the
** lookup is most of a field's cost).
*/
/* n's text, copied (shared: through the text cache, for values that repeat across objects). */
static bool str_of(tly_dctx *dx, const tly_node *n, const char *key, const char **out, bool shared)
{
    if (n->type != TLY_N_STRING) {
        wrong_type(dx, n, key, "a string");
        return false;
    }
    *out = shared ? tly_dx_text(dx, n->str, n->len) : tly_arena_strndup(dx->arena, n->str, n->len);
    return true;
}

bool tly_dx_shared_str_k(tly_dctx *dx, const tly_node *map, tly_key fk, const char **out)
{
    const tly_node *n = tly_node_member_key(map, fk);
    return n && str_of(dx, n, fk.s, out, true);
}

bool tly_dx_str_k(tly_dctx *dx, const tly_node *map, tly_key fk, const char **out)
{
    const char *key = fk.s;
    const tly_node *n = tly_node_member_key(map, fk);
    return n && str_of(dx, n, key, out, false);
}

bool tly_dx_req_str_k(tly_dctx *dx, const tly_node *map, tly_key fk, const char **out)
{
    const char *key = fk.s;
    const tly_node *n = tly_node_member_key(map, fk);
    if (!n) {
        tly_dx_error(dx, map, key, "required field is missing");
        return false;
    }
    return str_of(dx, n, key, out, false);
}

bool tly_dx_bool_k(tly_dctx *dx, const tly_node *map, tly_key fk, bool *out)
{
    const char *key = fk.s;
    const tly_node *n = tly_node_member_key(map, fk);
    if (!n)
        return false;
    if (n->type != TLY_N_BOOL) {
        wrong_type(dx, n, key, "a boolean (true or false)");
        return false;
    }
    *out = n->bval;
    return true;
}

static bool int64_of(tly_dctx *dx, const tly_node *n, const char *key, int64_t *out)
{
    if (n->type != TLY_N_INT) {
        wrong_type(dx, n, key, "an integer");
        return false;
    }
    errno = 0;
    char *end;
    long long v = strtoll(n->str, &end, 10);
    if (errno || *end) {
        tly_dx_error(dx, n, key, "integer %s is out of range", n->str);
        return false;
    }
    *out = (int64_t)v;
    return true;
}

bool tly_dx_int64_k(tly_dctx *dx, const tly_node *map, tly_key fk, int64_t *out)
{
    const char *key = fk.s;
    const tly_node *n = tly_node_member_key(map, fk);
    return n && int64_of(dx, n, key, out);
}

bool tly_dx_int32_k(tly_dctx *dx, const tly_node *map, tly_key fk, int32_t *out)
{
    const char *key = fk.s;
    int64_t v;
    const tly_node *n = tly_node_member_key(map, fk);
    if (!n || !int64_of(dx, n, key, &v))
        return false;
    if (v < INT32_MIN || v > INT32_MAX) {
        tly_dx_error(dx, n, key, "integer %lld does not fit in 32 bits", (long long)v);
        return false;
    }
    *out = (int32_t)v;
    return true;
}

static const char *qty_problem(int rc)
{
    return rc == TLY_ERANGE ? "is too large" : "is not a valid quantity";
}

static bool qty_of(tly_dctx *dx, const tly_node *n, const char *key, tly_qty *out)
{
    if (n->type != TLY_N_STRING && n->type != TLY_N_INT && n->type != TLY_N_FLOAT) {
        wrong_type(dx, n, key, "a quantity (string or number)");
        return false;
    }
    int rc = tly_qty_parse(n->str, n->len, out);
    if (rc != TLY_OK) {
        tly_dx_error(dx, n, key, "\"%s\" %s (expected a Kubernetes quantity such as 500m, 4Gi, 2)",
                     n->str, qty_problem(rc));
        return false;
    }
    return true;
}

bool tly_dx_qty_k(tly_dctx *dx, const tly_node *map, tly_key fk, tly_qty *out)
{
    const char *key = fk.s;
    const tly_node *n = tly_node_member_key(map, fk);
    return n && qty_of(dx, n, key, out);
}

bool tly_dx_time_k(tly_dctx *dx, const tly_node *map, tly_key fk, int64_t *out)
{
    const char *key = fk.s;
    const tly_node *n = tly_node_member_key(map, fk);
    if (!n)
        return false;
    if (n->type != TLY_N_STRING || !tly_parse_time(n->str, out)) {
        tly_dx_error(dx, n, key, "expected an RFC 3339 time such as 2026-11-29T13:00:00Z");
        return false;
    }
    return true;
}

const tly_node *tly_dx_map_k(tly_dctx *dx, const tly_node *map, tly_key fk)
{
    const char *key = fk.s;
    const tly_node *n = tly_node_member_key(map, fk);
    if (!n)
        return NULL;
    if (n->type != TLY_N_MAP) {
        wrong_type(dx, n, key, "a map");
        return NULL;
    }
    return n;
}

const tly_node *tly_dx_seq_k(tly_dctx *dx, const tly_node *map, tly_key fk)
{
    const char *key = fk.s;
    const tly_node *n = tly_node_member_key(map, fk);
    if (!n)
        return NULL;
    if (n->type != TLY_N_SEQ) {
        wrong_type(dx, n, key, "a list");
        return NULL;
    }
    return n;
}

bool tly_dx_kvs_k(tly_dctx *dx, const tly_node *map, tly_key fk, tly_kvs *out)
{
    const tly_node *m = tly_dx_map_k(dx, map, fk);
    if (!m)
        return false;
    out->v = tly_arena_alloc(dx->arena, (m->nkids + 1) * sizeof *out->v);
    out->n = 0;
    size_t mark = tly_dx_push_key(dx, fk);
    for (const tly_node *k = m->kids; k; k = k->next) {
        /* Labels and annotations are strings; a bare number or boolean is
           what kubectl itself rejects ("cannot unmarshal number into ...
           string"), so say so rather than guess. */
        if (k->type == TLY_N_NULL) {
            out->v[out->n].key = tly_dx_text(dx, k->key, strlen(k->key));
            out->v[out->n++].val = "";
            continue;
        }
        if (k->type != TLY_N_STRING) {
            tly_dx_error(dx, k, k->key, "expected a string, got %s (quote the value)",
                         tly_ntype_name(k->type));
            continue;
        }
        out->v[out->n].key = tly_dx_text(dx, k->key, strlen(k->key));
        out->v[out->n++].val = tly_dx_text(dx, k->str, k->len);
    }
    tly_dx_pop(dx, mark);
    return true;
}

bool tly_dx_strlist_k(tly_dctx *dx, const tly_node *map, tly_key fk,
                    const char ***out, uint32_t *n)
{
    const tly_node *s = tly_dx_seq_k(dx, map, fk);
    if (!s)
        return false;
    const char **v = tly_arena_alloc(dx->arena, (s->nkids + 1) * sizeof *v);
    uint32_t cnt = 0, i = 0;
    size_t mark = tly_dx_push_key(dx, fk);
    for (const tly_node *k = s->kids; k; k = k->next, i++) {
        if (k->type != TLY_N_STRING) {
            size_t m2 = tly_dx_push_idx(dx, i);
            tly_dx_error(dx, k, NULL, "expected a string, got %s", tly_ntype_name(k->type));
            tly_dx_pop(dx, m2);
            continue;
        }
        v[cnt++] = tly_arena_strndup(dx->arena, k->str, k->len);
    }
    tly_dx_pop(dx, mark);
    *out = v;
    *n = cnt;
    return true;
}

bool tly_dx_rlist_k(tly_dctx *dx, const tly_node *map, tly_key fk, tly_rlist *out)
{
    const tly_node *m = tly_dx_map_k(dx, map, fk);
    if (!m)
        return false;
    /* One array for the whole list, kept sorted by id as entries arrive
       (tly_rlist_set would copy the list for every entry it adds). */
    tly_rq *v = m->nkids ? tly_arena_alloc(dx->arena, m->nkids * sizeof *v) : NULL;
    uint32_t n = 0;
    size_t mark = tly_dx_push_key(dx, fk);
    bool unique = m->flags & TLY_NF_UNIQUE;
    for (const tly_node *k = m->kids; k; k = k->next) {
        /* Each entry as a lookup of its key reads it: the last of a repeated
           key, every time; in a map of unique keys that is the entry. */
        const tly_node *e = unique ? (k->type != TLY_N_NULL ? k : NULL) : tly_node_member(m, k->key);
        tly_qty q;
        if (!e || !qty_of(dx, e, k->key, &q))
            continue;
        uint32_t id = tly_names_intern(dx->names, k->key, strlen(k->key)), i = n;
        while (i > 0 && v[i - 1].id > id)
            i--;
        if (i > 0 && v[i - 1].id == id) {
            v[i - 1].q = q;  /* a repeated key (already reported): the last one wins */
            continue;
        }
        memmove(v + i + 1, v + i, (n - i) * sizeof *v);
        v[i].id = id;
        v[i].q = q;
        n++;
    }
    out->v = n ? v : NULL;
    out->n = n;
    tly_dx_pop(dx, mark);
    return true;
}

bool tly_dx_conditions_k(tly_dctx *dx, const tly_node *map, tly_key fk,
                       tly_conditions *out)
{
    const tly_node *s = tly_dx_seq_k(dx, map, fk);
    if (!s)
        return false;
    out->v = tly_arena_zalloc(dx->arena, (s->nkids + 1) * sizeof *out->v);
    out->n = 0;
    size_t mark = tly_dx_push_key(dx, fk);
    uint32_t i = 0;
    for (const tly_node *k = s->kids; k; k = k->next, i++) {
        size_t m2 = tly_dx_push_idx(dx, i);
        if (k->type != TLY_N_MAP) {
            tly_dx_error(dx, k, NULL, "expected a map, got %s", tly_ntype_name(k->type));
            tly_dx_pop(dx, m2);
            continue;
        }
        tly_condition *c = &out->v[out->n];
        c->last_probe = c->last_transition = c->last_heartbeat = TLY_NO_TIME;
        const tly_node *type = tly_node_member(k, "type");
        if (!type)
            tly_dx_error(dx, k, "type", "required field is missing");
        if (!type || !str_of(dx, type, "type", &c->type, true)) {
            tly_dx_pop(dx, m2);
            continue;
        }
        tly_dx_shared_str(dx, k, "status", &c->status);
        tly_dx_shared_str(dx, k, "reason", &c->reason);
        tly_dx_shared_str(dx, k, "message", &c->message);
        tly_dx_time(dx, k, "lastProbeTime", &c->last_probe);
        tly_dx_time(dx, k, "lastTransitionTime", &c->last_transition);
        tly_dx_time(dx, k, "lastHeartbeatTime", &c->last_heartbeat);
        out->n++;
        tly_dx_pop(dx, m2);
    }
    tly_dx_pop(dx, mark);
    return true;
}

static const char *const selector_ops[] = {"In", "NotIn", "Exists", "DoesNotExist", NULL};
static const char *const node_selector_ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt",
                                                "Lt", NULL};

static void decode_requirements(tly_dctx *dx, const tly_node *node, const char *key,
                                const char *const *ops, tly_selreq **reqs, uint32_t *nreqs)
{
    const tly_node *s = tly_dx_seq(dx, node, key);
    if (!s)
        return;
    *reqs = tly_arena_zalloc(dx->arena, (s->nkids + 1) * sizeof **reqs);
    size_t mark = tly_dx_push(dx, key);
    uint32_t i = 0;
    for (const tly_node *k = s->kids; k; k = k->next, i++) {
        size_t m2 = tly_dx_push_idx(dx, i);
        if (k->type != TLY_N_MAP) {
            tly_dx_error(dx, k, NULL, "expected a map, got %s", tly_ntype_name(k->type));
            tly_dx_pop(dx, m2);
            continue;
        }
        tly_selreq *r = &(*reqs)[*nreqs];
        bool ok = tly_dx_req_str(dx, k, "key", &r->key);
        ok = tly_dx_enum(dx, k, "operator", ops, &r->op) && ok;
        if (!tly_node_get(k, "operator"))
            tly_dx_error(dx, k, "operator", "required field is missing");
        tly_dx_strlist(dx, k, "values", &r->values, &r->nvalues);
        if (ok && r->op) {
            bool needs_values = !strcmp(r->op, "In") || !strcmp(r->op, "NotIn") ||
                                !strcmp(r->op, "Gt") || !strcmp(r->op, "Lt");
            if (needs_values && r->nvalues == 0)
                tly_dx_error(dx, k, "values", "must be non-empty when operator is %s", r->op);
            else if (!needs_values && r->nvalues > 0)
                tly_dx_error(dx, k, "values", "must be empty when operator is %s", r->op);
            else
                (*nreqs)++;
        }
        tly_dx_pop(dx, m2);
    }
    tly_dx_pop(dx, mark);
}

bool tly_dx_label_selector(tly_dctx *dx, const tly_node *node, tly_selector *out)
{
    memset(out, 0, sizeof *out);
    if (!node || node->type == TLY_N_NULL)
        return false;
    if (node->type != TLY_N_MAP) {
        tly_dx_error(dx, node, NULL, "expected a map, got %s", tly_ntype_name(node->type));
        return false;
    }
    tly_dx_kvs(dx, node, "matchLabels", &out->match_labels);
    decode_requirements(dx, node, "matchExpressions", selector_ops, &out->reqs, &out->nreqs);
    return true;
}

bool tly_dx_node_selector_term(tly_dctx *dx, const tly_node *node, tly_selector *out)
{
    memset(out, 0, sizeof *out);
    if (!node || node->type == TLY_N_NULL)
        return false;
    if (node->type != TLY_N_MAP) {
        tly_dx_error(dx, node, NULL, "expected a map, got %s", tly_ntype_name(node->type));
        return false;
    }
    decode_requirements(dx, node, "matchExpressions", node_selector_ops, &out->reqs, &out->nreqs);
    /* matchFields: Kubernetes supports metadata.name only, with In or NotIn. */
    static const char *const field_ops[] = {"In", "NotIn", NULL};
    decode_requirements(dx, node, "matchFields", field_ops, &out->fields, &out->nfields);
    const tly_node *f = tly_node_get(node, "matchFields");
    out->has_fields = f && f->type == TLY_N_SEQ && f->nkids > 0;
    for (uint32_t i = 0; i < out->nfields; i++)
        if (strcmp(out->fields[i].key, "metadata.name") != 0) {
            size_t mark = tly_dx_push(dx, "matchFields");
            tly_dx_push_idx(dx, i);
            tly_dx_error(dx, node, "key", "\"%s\" is not a supported field (only metadata.name)",
                         out->fields[i].key);
            tly_dx_pop(dx, mark);
        }
    return true;
}

bool tly_dx_enum_k(tly_dctx *dx, const tly_node *map, tly_key fk,
                 const char *const *allowed, const char **out)
{
    const char *key = fk.s;
    /* Compared in place: a match is the caller's constant, so nothing is copied. */
    const tly_node *vn = tly_node_member_key(map, fk);
    if (!vn)
        return false;
    if (vn->type != TLY_N_STRING) {
        wrong_type(dx, vn, key, "a string");
        return false;
    }
    const char *v = vn->str;
    for (const char *const *a = allowed; *a; a++)
        if (!strcmp(v, *a)) {
            *out = *a;
            return true;
        }
    char list[256];
    size_t len = 0;
    list[0] = '\0';
    for (const char *const *a = allowed; *a; a++) {
        int n = snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                         **a ? *a : "\"\"");
        if (n < 0 || (size_t)n >= sizeof list - len)
            break;
        len += (size_t)n;
    }
    tly_dx_error(dx, tly_node_get_key(map, fk), key, "\"%s\" is not allowed: must be one of %s", v,
                 list);
    return false;
}

bool tly_dx_attr_value(tly_dctx *dx, const tly_node *v, const char *name, tly_attr *out)
{
    static const char *const types[] = {"string", "int", "bool", "version"};
    if (v->type != TLY_N_MAP) {
        tly_dx_error(dx, v, NULL, "must be a map with one of string, int, bool, version, not %s",
                     tly_ntype_name(v->type));
        return false;
    }
    int which = -1, nhave = 0;
    char found[64] = "";
    size_t flen = 0;
    for (int i = 0; i < 4; i++) {
        if (!tly_node_member(v, types[i]))
            continue;
        which = i;
        nhave++;
        int n = snprintf(found + flen, sizeof found - flen, "%s%s", flen ? ", " : "", types[i]);
        if (n > 0 && (size_t)n < sizeof found - flen)
            flen += (size_t)n;
    }
    if (nhave != 1) {
        tly_dx_error(dx, v, NULL, "must set exactly one of string, int, bool, version (found %s)",
                     nhave ? found : "none");
        return false;
    }
    out->name = name;
    switch (which) {
    case 0:
        out->type = TLY_ATTR_STRING;
        return tly_dx_str(dx, v, "string", &out->str);
    case 1:
        out->type = TLY_ATTR_INT;
        return tly_dx_int64(dx, v, "int", &out->ival);
    case 2:
        out->type = TLY_ATTR_BOOL;
        return tly_dx_bool(dx, v, "bool", &out->bval);
    default:
        out->type = TLY_ATTR_VERSION;
        return tly_dx_str(dx, v, "version", &out->str);
    }
}

/* ---- time ---------------------------------------------------------------- */

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's method). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The inverse of days_from_civil: days since 1970-01-01 to a proleptic Gregorian date. */
static void civil_from_days(int64_t days, int64_t *y, int *m, int *d)
{
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

void tly_format_time_ms(int64_t t, int ms, char buf[32])
{
    int64_t days = t / 86400, rem = t % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999) {
        snprintf(buf, 32, "%lld", (long long)t); /* as tly_format_time: the seconds */
        return;
    }
    /* The digits by hand: snprintf's format parsing was most of a log line's cost. */
    int f[7] = {(int)y, m, d, (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60), ms};
    static const int width[7] = {4, 2, 2, 2, 2, 2, 3};
    static const char after[7] = {'-', '-', 'T', ':', ':', '.', 'Z'};
    char *o = buf;
    for (int k = 0; k < 7; k++) {
        for (int w = width[k] - 1; w >= 0; w--) {
            o[w] = (char)('0' + f[k] % 10);
            f[k] /= 10;
        }
        o += width[k];
        *o++ = after[k];
    }
    *o = 0;
}

void tly_format_time(int64_t t, char buf[32])
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, 32, "%lld", (long long)t);  /* beyond what struct tm holds: the seconds */
}

bool tly_parse_time(const char *s, int64_t *out)
{
    int y, mo, d, h, mi, se;
    size_t len = strlen(s);
    if (len < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
        !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
        !digits(s + 17, 2, &se))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
        return false;
    const char *p = s + 19;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return false;
        off = (int64_t)(oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return false;
    }
    if (*p)
        return false;
    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    return true;
}
