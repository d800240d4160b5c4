/*
** labelsyntax.c: Kubernetes' label key, label value and label selector
** rules with apimachinery's messages (labelsyntax.h).
**
** The texts are built the way apimachinery builds them (its content
** package's RegexError, its field.Error "PATH: Invalid value: VALUE:
** DETAIL", its aggregate "[a, b]"), so that a status message tally predicts
** reads exactly as the one kruntimes writes. Go prints a bad string value
** with %q and a bad list of strings as JSON; both quotings are here too.
*/
#include "tally/labelsyntax.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/error.h"
#include "tally/json.h"

#define LABEL_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define LABEL_KEY_MSG                                                                      \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with " \
    "an alphanumeric character"
#define LABEL_VALUE_MSG                                                                    \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' " \
    "or '.', and must start and end with an alphanumeric character"
#define DNS_LABEL_FMT "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define DNS_SUBDOMAIN_MSG                                                                  \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' " \
    "or '.', and must start and end with an alphanumeric character"

/* apimachinery's RegexError with examples: note its double space before each "or". */
#define REGEX_ERR3(msg, re, a, b, c) \
    msg " (e.g. '" a "',  or '" b "',  or '" c "', regex used for validation is '" re "')"
#define KEY_REGEX_ERR REGEX_ERR3(LABEL_KEY_MSG, LABEL_FMT, "MyName", "my.name", "123-abc")

/* ---- a growable string ------------------------------------------------------- */

typedef struct {
    char *s;
    size_t len;
    FILE *f;
} sbuf;

static void sb_open(sbuf *b)
{
    b->s = NULL;
    b->len = 0;
    b->f = open_memstream(&b->s, &b->len);
    if (!b->f)
        tly_oom();
}

/* Closes the buffer; its text copied into a (NULL when empty). */
static const char *sb_close(sbuf *b, tly_arena *a)
{
    fclose(b->f);
    const char *out = b->len ? tly_arena_strndup(a, b->s, b->len) : NULL;
    free(b->s);
    return out;
}

/* Appends "; " between problems, as apimachinery joins them. */
static void sb_problem(sbuf *b, const char *text)
{
    if (ftell(b->f) > 0)
        fputs("; ", b->f);
    fputs(text, b->f);
}

/* ---- character rules ------------------------------------------------------------ */

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* LABEL_FMT: alphanumeric at both ends, '-', '_' and '.' inside. */
static bool label_name_ok(const char *s, size_t n)
{
    if (n == 0 || !alnum(s[0]) || !alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

static bool dns_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* The DNS-1123 subdomain pattern: dot-separated lowercase labels, each alphanumeric at both ends. */
static bool dns_subdomain_ok(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        size_t len = i - start;
        if (len == 0 || !dns_char(s[start]) || !dns_char(s[i - 1]))
            return false;
        for (size_t k = start; k < i; k++)
            if (!dns_char(s[k]) && s[k] != '-')
                return false;
        start = i + 1;
    }
    return true;
}

/* ---- keys and values ---------------------------------------------------------------- */

static void key_problems(sbuf *b, const char *key)
{
    const char *slash = strchr(key, '/');
    const char *name = key;
    if (slash && strchr(slash + 1, '/')) {
        sb_problem(b, "a valid label key " KEY_REGEX_ERR
                      " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
        return;
    }
    if (slash) {
        size_t plen = (size_t)(slash - key);
        if (plen == 0) {
            sb_problem(b, "prefix part must be non-empty");
        } else {
            if (plen > 253)
                sb_problem(b, "prefix part must be no more than 253 bytes");
            if (!dns_subdomain_ok(key, plen))
                sb_problem(b, "prefix part " DNS_SUBDOMAIN_MSG " (e.g. 'example.com', regex used for "
                              "validation is '" DNS_LABEL_FMT "(\\." DNS_LABEL_FMT ")*')");
        }
        name = slash + 1;
    }
    size_t n = strlen(name);
    if (n == 0)
        sb_problem(b, "name part must be non-empty");
    else if (n > 63)
        sb_problem(b, "name part must be no more than 63 bytes");
    if (!label_name_ok(name, n))
        sb_problem(b, "name part " KEY_REGEX_ERR);
}

bool tly_label_key_ok(const char *key)
{
    const char *slash = strchr(key, '/');
    const char *name = slash ? slash + 1 : key;
    if (slash && (strchr(name, '/') || slash == key || slash - key > 253 ||
                  !dns_subdomain_ok(key, (size_t)(slash - key))))
        return false;
    size_t n = strlen(name);
    return n <= 63 && label_name_ok(name, n);
}

const char *tly_label_key_problems(tly_arena *a, const char *key)
{
    sbuf b;
    sb_open(&b);
    key_problems(&b, key);
    return sb_close(&b, a);
}

const char *tly_annotation_key_problems(tly_arena *a, const char *key)
{
    char *lower = tly_arena_strdup(a, key);
    for (char *c = lower; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    return tly_label_key_problems(a, lower);
}

const char *tly_label_value_problems(tly_arena *a, const char *value)
{
    size_t n = strlen(value);
    sbuf b;
    sb_open(&b);
    if (n > 63)
        sb_problem(&b, "must be no more than 63 bytes");
    if (n > 0 && !label_name_ok(value, n))
        sb_problem(&b, REGEX_ERR3(LABEL_VALUE_MSG, "(" LABEL_FMT ")?", "MyValue", "my_value", "12345"));
    return sb_close(&b, a);
}

/* ---- Go's quotings ------------------------------------------------------------------- */

/* Go's %q (strconv.Quote) for the text it is given here: bytes >= 0x80 are kept. */
static void go_quote(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\a': fputs("\\a", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\v': fputs("\\v", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\x%02x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

/*
** encoding/json's string: JSON's escapes (tly_json_write_escaped), plus the
** HTML characters, which Go escapes by default. They never occur escaped
** otherwise, so they are replaced in the escaped text.
*/
static void json_quote(FILE *f, const char *s)
{
    sbuf b;
    sb_open(&b);
    tly_json_write_escaped(b.f, s);
    fflush(b.f);
    for (size_t i = 0; i < b.len; i++) {
        char c = b.s[i];
        if (c == '<' || c == '>' || c == '&')
            fprintf(f, "\\u%04x", (unsigned)c);
        else
            fputc(c, f);
    }
    fclose(b.f);
    free(b.s);
}

/* ---- selectors ------------------------------------------------------------------------- */

/* The problems of one requirement, as field.Error texts, each once (Go's aggregate drops repeats). */
typedef struct {
    char *msg[8];
    int n;
    const char *field;       /* the first problem's member: "key", "operator", "values" */
} problems;

static void add_problem(problems *p, sbuf *b, tly_arena *a, const char *field)
{
    const char *m = sb_close(b, a);
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->msg[i], m))
            return;  /* Go's aggregate prints a repeated message once */
    if (p->n == 0)
        p->field = field;
    if (p->n < 8)
        p->msg[p->n++] = (char *)m;
}

/* field.Invalid(path, value-as-%q, detail). */
static void invalid_str(problems *p, tly_arena *a, const char *path, const char *value,
                        const char *detail, const char *field)
{
    sbuf b;
    sb_open(&b);
    fprintf(b.f, "%s: Invalid value: ", path);
    go_quote(b.f, value);
    fprintf(b.f, ": %s", detail);
    add_problem(p, &b, a, field);
}

/* field.Invalid(path, values-as-JSON, detail); an empty list prints as null (Go's nil slice). */
static void invalid_list(problems *p, tly_arena *a, const char *const *vals, uint32_t n,
                         const char *detail)
{
    sbuf b;
    sb_open(&b);
    fputs("values: Invalid value: ", b.f);
    if (n == 0)
        fputs("null", b.f);
    for (uint32_t i = 0; i < n; i++) {
        fputs(i ? "," : "[", b.f);
        json_quote(b.f, vals[i]);
    }
    if (n)
        fputc(']', b.f);
    fprintf(b.f, ": %s", detail);
    add_problem(p, &b, a, "values");
}

typedef enum { OP_IN, OP_EXISTS, OP_EQUALS } op_kind;

/* labels.NewRequirement's checks: the key, the operator's value count, each value. */
static void requirement(problems *p, tly_arena *a, const char *key, op_kind op,
                        const char *const *vals, uint32_t n)
{
    const char *kp = tly_label_key_problems(a, key);
    if (kp)
        invalid_str(p, a, "key", key, kp, "key");
    if (op == OP_IN && n == 0)
        invalid_list(p, a, vals, n, "for 'in', 'notin' operators, values set can't be empty");
    else if (op == OP_EXISTS && n != 0)
        invalid_list(p, a, vals, n, "values set must be empty for exists and does not exist");
    for (uint32_t i = 0; i < n; i++) {
        const char *vp = tly_label_value_problems(a, vals[i]);
        if (!vp)
            continue;
        char *path = tly_arena_printf(a, "values[%u][%s]", i, key);
        invalid_str(p, a, path, vals[i], vp, "values");
    }
}

/* The aggregate's text: one problem alone, several as "[a, b]". */
static const char *aggregate(tly_arena *a, const problems *p)
{
    if (p->n == 1)
        return p->msg[0];
    sbuf b;
    sb_open(&b);
    fputc('[', b.f);
    for (int i = 0; i < p->n; i++)
        fprintf(b.f, "%s%s", i ? ", " : "", p->msg[i]);
    fputc(']', b.f);
    return sb_close(&b, a);
}

static int cmp_keys(const void *x, const void *y)
{
    return strcmp((*(const tly_node *const *)x)->key, (*(const tly_node *const *)y)->key);
}

/* matchLabels, in key order: each pair is an Equals requirement. */
static const char *match_labels_error(tly_arena *a, const tly_node *ml, const tly_node **at,
                                      const char **field)
{
    if (!ml || ml->type != TLY_N_MAP || ml->nkids == 0)
        return NULL;
    const tly_node **kv = tly_arena_alloc(a, ml->nkids * sizeof *kv);
    uint32_t n = 0;
    for (const tly_node *k = ml->kids; k; k = k->next)
        if (k->type == TLY_N_STRING)
            kv[n++] = k;
    qsort(kv, n, sizeof *kv, cmp_keys);
    for (uint32_t i = 0; i < n; i++) {
        problems p = {{0}, 0, NULL};
        const char *val = kv[i]->str;
        requirement(&p, a, kv[i]->key, OP_EQUALS, &val, 1);
        if (p.n) {
            *at = kv[i];
            *field = tly_arena_printf(a, "matchLabels.%s", kv[i]->key);
            return aggregate(a, &p);
        }
    }
    return NULL;
}

/* The values of an expression, when every one is a string (else NULL and *ok false). */
static const char **expr_values(tly_arena *a, const tly_node *vals, uint32_t *n, bool *ok)
{
    *n = 0;
    *ok = true;
    if (!vals || vals->type == TLY_N_NULL)
        return NULL;
    if (vals->type != TLY_N_SEQ) {
        *ok = false;
        return NULL;
    }
    const char **v = tly_arena_alloc(a, (vals->nkids + 1) * sizeof *v);
    for (const tly_node *k = vals->kids; k; k = k->next) {
        if (k->type != TLY_N_STRING) {
            *ok = false;
            return NULL;
        }
        v[(*n)++] = k->str;
    }
    return v;
}

/* One matchExpressions item; NULL when it compiles or is left to the type checks. */
static const char *expression_error(tly_arena *a, const tly_node *e, problems *p)
{
    const tly_node *key = tly_node_get(e, "key"), *op = tly_node_get(e, "operator");
    uint32_t n;
    bool ok;
    const char **vals = expr_values(a, tly_node_get(e, "values"), &n, &ok);
    if (!ok || !key || key->type != TLY_N_STRING || !op || op->type != TLY_N_STRING)
        return NULL;
    op_kind kind;
    if (!strcmp(op->str, "In") || !strcmp(op->str, "NotIn")) {
        kind = OP_IN;
    } else if (!strcmp(op->str, "Exists") || !strcmp(op->str, "DoesNotExist")) {
        kind = OP_EXISTS;
    } else {
        sbuf b;
        sb_open(&b);
        go_quote(b.f, op->str);
        fputs(" is not a valid label selector operator", b.f);
        p->field = "operator";
        return sb_close(&b, a);
    }
    requirement(p, a, key->str, kind, vals, n);
    return p->n ? aggregate(a, p) : NULL;
}

const char *tly_label_selector_error(tly_arena *a, const tly_node *sel, const tly_node **at,
                                     const char **field)
{
    const tly_node *dummy_at;
    const char *dummy_field;
    if (!at)
        at = &dummy_at;
    if (!field)
        field = &dummy_field;
    *at = NULL;
    *field = NULL;
    if (!sel || sel->type != TLY_N_MAP)
        return NULL;
    const char *err = match_labels_error(a, tly_node_get(sel, "matchLabels"), at, field);
    if (err)
        return err;
    const tly_node *me = tly_node_get(sel, "matchExpressions");
    if (!me || me->type != TLY_N_SEQ)
        return NULL;
    uint32_t i = 0;
    for (const tly_node *e = me->kids; e; e = e->next, i++) {
        if (e->type != TLY_N_MAP)
            continue;
        problems p = {{0}, 0, NULL};
        err = expression_error(a, e, &p);
        if (err) {
            const tly_node *member = tly_node_get(e, p.field);
            *at = member ? member : e;
            *field = tly_arena_printf(a, "matchExpressions[%u].%s", i, p.field);
            return err;
        }
    }
    return NULL;
}
