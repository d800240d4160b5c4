/*
** capture.c: one LIST of every kind tally reads, for the one-shot live
** commands and `tally snapshot` (contract section 9; kube.h).
**
** Discovery says which kinds are served; each is listed once, at its own
** resourceVersion (Kubernetes offers no consistent read across kinds: an
** object may move between two LISTs, and docs/live.md says so). Every item
** is kept as compact JSON without metadata.managedFields (the LIST's parser,
** tly_parse_api_value, never builds it), indexed by
** (apiVersion, kind, namespace, name), which is also the order in which
** they are written and loaded. The clock is the Date header of the first
** LIST answer. The CustomResourceDefinitions of tally's groups are listed
** last, like a kind (contract section 2: `validate` checks the objects of
** those kinds against them), and the others are left out.
**
** Two ways out:
**   - tly_kube_capture_load(): every item decoded into a store, named by its
**     API path with positions 1:1 (so `validate` says
**     /api/v1/namespaces/default/pods/x:1:1: ...), exactly as the same
**     objects read from a file would be;
**   - tly_kube_capture_write(): the `kind: List` of `tally snapshot`, with a
**     top-level `now`; `tally simulate` on it prints what `simulate
**     --kubeconfig` printed at that moment.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube_int.h"
#include "tally/arena.h"
#include "tally/capture.h"
#include "tally/error.h"
#include "tally/nodewrite.h"
#include "tally/objects.h"

typedef struct {
    const char *api, *kind, *ns, *name;  /* in the capture's arena */
    char *path;                          /* the object's API path (arena) */
    size_t off, len;                     /* its JSON in the text buffer */
} item;

struct tly_kube_capture {
    tly_arena *a;
    char *text;          /* every item's JSON, back to back */
    size_t tlen, tcap;
    item *items;
    size_t n, cap;
    int64_t now;
    char **absent;       /* "kruntimes.io/v1alpha1 Run", ... */
    size_t nabsent;
    char *server_version;
    char *crds_skipped;  /* why the CRDs were not read, or NULL */
};

static void append_text(tly_kube_capture *c, const char *p, size_t n)
{
    if (c->tlen + n > c->tcap) {
        size_t cap = c->tcap ? c->tcap : 1 << 20;
        while (cap < c->tlen + n)
            cap *= 2;
        c->text = tly_xrealloc(c->text, cap);
        c->tcap = cap;
    }
    memcpy(c->text + c->tlen, p, n);
    c->tlen += n;
}

typedef struct {
    tly_kube_capture *c;
    const tly_kube_kind *kk;
    size_t first;        /* this kind's first item, for a restart */
    size_t text_first;
    FILE *mem;
    char *membuf;
    size_t memlen;
} list_ctx;

static const char *str_at(const tly_node *n, const char *key)
{
    const tly_node *v = n ? tly_node_get(n, key) : NULL;
    return v && v->type == TLY_N_STRING ? v->str : NULL;
}

static int on_item(void *ud, const tly_node *it)
{
    list_ctx *x = ud;
    tly_kube_capture *c = x->c;
    if (!it) {
        /* The LIST restarted (410 on its continue token): drop this kind's items. */
        c->n = x->first;
        c->tlen = x->text_first;
        return TLY_OK;
    }
    rewind(x->mem);
    tly_node_write_json(x->mem, it);
    fflush(x->mem);
    long len = ftell(x->mem);
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 1024;
        c->items = tly_xrealloc(c->items, c->cap * sizeof *c->items);
    }
    const tly_node *md = tly_node_get(it, "metadata");
    const char *name = str_at(md, "name"), *ns = str_at(md, "namespace");
    item *e = &c->items[c->n++];
    e->api = tly_arena_strdup(c->a, str_at(it, "apiVersion"));
    e->kind = tly_arena_strdup(c->a, str_at(it, "kind"));
    e->ns = ns ? tly_arena_strdup(c->a, ns) : NULL;
    e->name = tly_arena_strdup(c->a, name ? name : "");
    char *p = tly_kube_object_path(x->kk, e->ns, e->name);
    e->path = tly_arena_strdup(c->a, p);
    free(p);
    e->off = c->tlen;
    e->len = (size_t)len;
    append_text(c, x->membuf, (size_t)len);
    return TLY_OK;
}

static int cmp_opt(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

static int cmp_item(const void *pa, const void *pb)
{
    const item *a = pa, *b = pb;
    int c = strcmp(a->api, b->api);
    if (!c)
        c = strcmp(a->kind, b->kind);
    if (!c)
        c = cmp_opt(a->ns, b->ns);
    if (!c)
        c = strcmp(a->name, b->name);
    return c;
}

int tly_kube_capture_run(tly_kube *k, tly_kube_capture **out, char *err, size_t errlen)
{
    *out = NULL;
    tly_kube_discovery *d;
    int rc = tly_kube_discover(k, &d, err, errlen);
    if (rc != TLY_OK)
        return rc;
    tly_kube_capture *c = tly_xcalloc(1, sizeof *c);
    c->a = tly_arena_create(1 << 20);
    c->now = INT64_MIN;
    if (tly_kube_discovery_server_version(d))
        c->server_version = tly_xstrdup(tly_kube_discovery_server_version(d));
    list_ctx x = {.c = c};
    x.mem = open_memstream(&x.membuf, &x.memlen);
    if (!x.mem)
        tly_oom();
    /* Every kind of tally's, then the CustomResourceDefinitions (d's last entry). */
    uint32_t nk = tly_kube_discovery_count(d);
    for (uint32_t i = 0; rc == TLY_OK && i <= nk; i++) {
        const tly_kube_kind *kk = i < nk ? tly_kube_discovery_at(d, i) : tly_kube_discovery_crds(d);
        if (!kk->served) {
            c->absent = tly_xrealloc(c->absent, (c->nabsent + 1) * sizeof *c->absent);
            c->absent[c->nabsent++] =
                tly_xasprintf("%s%s%s", *kk->group ? kk->group : "", *kk->group ? " " : "",
                              kk->name ? kk->name : tly_kind_name(kk->kind));
            continue;
        }
        x.kk = kk;
        x.first = c->n;
        x.text_first = c->tlen;
        char *rv = NULL;
        int64_t date = INT64_MIN;
        bool crds = i == nk;
        rc = crds ? tly_kube_list_crds(k, d, 0, on_item, &x, &rv, &date, err, errlen)
                  : tly_kube_list(k, kk, 0, on_item, &x, &rv, &date, err, errlen);
        if (rc == TLY_EAUTH && crds) {
            /* The CRDs only feed validate's checks: go on without them, and say why. */
            c->n = x.first;
            c->tlen = x.text_first;
            c->crds_skipped = tly_xstrdup(err);
            rc = TLY_OK;
        }
        if (c->now == INT64_MIN && date != INT64_MIN)
            c->now = date;
        free(rv);
    }
    fclose(x.mem);
    free(x.membuf);
    tly_kube_discovery_free(d);
    if (rc != TLY_OK) {
        tly_kube_capture_free(c);
        return rc;
    }
    qsort(c->items, c->n, sizeof *c->items, cmp_item);
    *out = c;
    return TLY_OK;
}

void tly_kube_capture_free(tly_kube_capture *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nabsent; i++)
        free(c->absent[i]);
    free(c->absent);
    free(c->items);
    free(c->text);
    free(c->server_version);
    free(c->crds_skipped);
    tly_arena_destroy(c->a);
    free(c);
}

int64_t tly_kube_capture_now(const tly_kube_capture *c) { return c->now; }
size_t tly_kube_capture_count(const tly_kube_capture *c) { return c->n; }
size_t tly_kube_capture_nabsent(const tly_kube_capture *c) { return c->nabsent; }
const char *tly_kube_capture_absent(const tly_kube_capture *c, size_t i) { return c->absent[i]; }
const char *tly_kube_capture_crds_skipped(const tly_kube_capture *c) { return c->crds_skipped; }

/* Every position in the tree becomes 1:1 (live objects have no lines). */
static void flatten_positions(tly_node *n)
{
    n->line = n->col = 1;
    if (n->key)
        n->kline = n->kcol = 1;
    for (tly_node *k = n->kids; k; k = k->next)
        flatten_positions(k);
}

int tly_kube_capture_load(const tly_kube_capture *c, tly_store *s)
{
    int errors = 0;
    tly_arena *a = tly_arena_create(64 * 1024);
    for (size_t i = 0; i < c->n; i++) {
        const item *e = &c->items[i];
        tly_arena_reset(a);
        tly_node *root = tly_parse_value(c->text + e->off, e->len, a);
        if (!root) {
            errors++;
            tly_diags_add(tly_store_diags(s), TLY_SEV_ERROR, e->path, 1, 1, NULL, NULL, NULL,
                          "the API server's object is not JSON tally can read");
            continue;
        }
        flatten_positions(root);
        errors += tly_store_load_object(s, e->path, root);
    }
    tly_arena_destroy(a);
    return errors;
}

void tly_kube_capture_visit(const tly_kube_capture *c, tly_capture_visit_fn fn, void *ctx)
{
    tly_arena *a = tly_arena_create(64 * 1024);
    for (size_t i = 0; i < c->n; i++) {
        const item *e = &c->items[i];
        tly_arena_reset(a);
        tly_node *root = tly_parse_value(c->text + e->off, e->len, a);
        if (root)
            fn(ctx, root, a);
    }
    tly_arena_destroy(a);
}

void tly_kube_format_time(int64_t t, char buf[32])
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t == INT64_MIN || !gmtime_r(&tt, &tm) || !strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
        strcpy(buf, "");
}

void tly_kube_capture_write(const tly_kube_capture *c, FILE *out, tly_capture_rename_fn rename,
                            void *rctx)
{
    char now[32];
    tly_kube_format_time(c->now, now);
    fputs("{\"apiVersion\":\"v1\",\"kind\":\"List\",", out);
    if (*now)
        fprintf(out, "\"now\":\"%s\",", now);
    fputs("\"metadata\":{},\"items\":[", out);
    tly_arena *a = rename ? tly_arena_create(64 * 1024) : NULL;
    for (size_t i = 0; i < c->n; i++) {
        const item *e = &c->items[i];
        fputs(i ? ",\n" : "\n", out);
        if (!rename) {
            fwrite(c->text + e->off, 1, e->len, out);
            continue;
        }
        tly_arena_reset(a);
        tly_node *root = tly_parse_value(c->text + e->off, e->len, a);
        if (root) {
            rename(rctx, root, a);
            tly_node_write_json(out, root);
        }
    }
    fputs(c->n ? "\n]}\n" : "]}\n", out);
    if (a)
        tly_arena_destroy(a);
}
