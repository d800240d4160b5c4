/*
** list.c: a paginated LIST of one kind (kube.h).
**
** Pages of `limit` items are asked for with the previous page's continue
** token, so neither side ever holds a whole large list: each page is parsed
** into an arena, its items are handed to the caller one by one, and the
** arena is reset. All pages belong to the resourceVersion of the first
** (the server keeps the snapshot for the continue token).
**
** What can go wrong, and what is done:
**   - 410 Gone on a continue token (the snapshot was compacted away while
**     paging): the caller is told (an item of NULL) to forget what it got,
**     and the list starts again from the first page (at most 5 times);
**   - 429 and 5xx: retried after Retry-After or a backoff doubling from
**     200 ms, at most 8 times;
**   - 401, 403, 404 and other errors: returned with a message that says
**     what to fix.
** Core LIST answers leave apiVersion and kind out of their items; they are
** filled in from the list so the decoders see whole objects.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube_int.h"
#include "tally/arena.h"
#include "tally/error.h"
#include "tally/objects.h"

#define DEFAULT_PAGE 500
#define MAX_RESTARTS 5
#define MAX_RETRIES 8

static const char *str_of(const tly_node *map, const char *key)
{
    const tly_node *n = map ? tly_node_get(map, key) : NULL;
    return n && n->type == TLY_N_STRING ? n->str : NULL;
}

/* Puts key: value at the front of map when the map lacks it. */
static void fill_member(tly_node *map, const char *key, const char *value, tly_arena *a)
{
    if (tly_node_get(map, key))
        return;
    tly_node *n = tly_arena_zalloc(a, sizeof *n);
    n->type = TLY_N_STRING;
    tly_node_set_key(n, key, strlen(key));
    n->str = value;
    n->len = (uint32_t)strlen(value);
    n->line = n->kline = map->line;
    n->col = n->kcol = map->col;
    n->next = map->kids;
    map->kids = n;
    map->nkids++;
}

/* A percent-encoded copy of a continue token for the query string. */
static char *query_escape(const char *s)
{
    size_t n = strlen(s);
    char *out = tly_xmalloc(n * 3 + 1), *p = out;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~')
            *p++ = (char)c;
        else
            p += sprintf(p, "%%%02X", c);
    }
    *p = '\0';
    return out;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* GET with retries of 429 and 5xx. */
static int get_page(tly_kube *k, const char *path, tly_kube_resp *r, char *err, size_t errlen)
{
    int64_t backoff = 200;
    for (int attempt = 0;; attempt++) {
        int rc = tly_kube_request(k, "GET", path, NULL, NULL, 0, r, err, errlen);
        bool retry = rc == TLY_OK && (r->status == 429 || r->status >= 500);
        if (!retry || attempt >= MAX_RETRIES)
            return rc;
        int64_t wait = r->retry_after > 0 ? (int64_t)r->retry_after * 1000 : backoff;
        if (wait > 10000)
            wait = 10000;
        tly_kube_resp_free(r);
        sleep_ms(wait);
        backoff *= 2;
    }
}

int tly_kube_list(tly_kube *k, const tly_kube_kind *kk, uint32_t page, tly_kube_item_fn fn,
                  void *ctx, char **rv, int64_t *date, char *err, size_t errlen)
{
    *rv = NULL;
    if (date)
        *date = INT64_MIN;
    char *base = tly_kube_kind_path(kk);
    char *what = tly_kube_kind_resource_name(kk);
    char *api = *kk->group ? tly_xasprintf("%s/%s", kk->group, kk->version) : tly_xstrdup(kk->version);
    const char *kind = kk->name ? kk->name : tly_kind_name(kk->kind);
    tly_arena *a = tly_arena_create(1 << 20);
    char *cont = NULL;
    int restarts = 0, rc = TLY_OK;
    for (;;) {
        char *esc = cont ? query_escape(cont) : NULL;
        char *path = esc ? tly_xasprintf("%s?limit=%u&continue=%s", base, page ? page : DEFAULT_PAGE, esc)
                         : tly_xasprintf("%s?limit=%u", base, page ? page : DEFAULT_PAGE);
        free(esc);
        tly_kube_resp r;
        rc = get_page(k, path, &r, err, errlen);
        free(path);
        if (rc == TLY_OK && r.status == 410 && cont && restarts < MAX_RESTARTS) {
            /* The snapshot behind the continue token is gone: start over. */
            restarts++;
            rc = fn(ctx, NULL);
            if (rc != TLY_OK)
                break;
            free(cont);
            cont = NULL;
            free(*rv);
            *rv = NULL;
            tly_kube_resp_free(&r);
            continue;
        }
        if (rc == TLY_OK && r.status != 200) {
            tly_kube_explain_status(k, &r, "list", what, err, errlen);
            rc = r.status == 401 || r.status == 403 ? TLY_EAUTH
                 : r.status == 410                  ? TLY_EGONE
                 : r.status == 404                  ? TLY_ENOENT
                                                    : TLY_EHTTP;
        }
        if (date && *date == INT64_MIN && rc == TLY_OK)
            *date = r.date;
        tly_arena_reset(a);
        tly_node *root = rc == TLY_OK ? tly_parse_api_value(r.body, r.len, a) : NULL;
        if (rc == TLY_OK && (!root || root->type != TLY_N_MAP)) {
            snprintf(err, errlen, "list %s: the API server's answer is not a JSON object", what);
            rc = TLY_EINVAL;
        }
        tly_kube_resp_free(&r);
        if (rc != TLY_OK)
            break;
        const tly_node *md = tly_node_get(root, "metadata");
        const char *v = str_of(md, "resourceVersion"), *next = str_of(md, "continue");
        if (!*rv && v)
            *rv = tly_xstrdup(v);
        const tly_node *items = tly_node_get(root, "items");
        for (tly_node *it = items && items->type == TLY_N_SEQ ? items->kids : NULL; it && rc == TLY_OK;
             it = it->next) {
            if (it->type != TLY_N_MAP)
                continue;
            fill_member(it, "kind", kind, a);
            fill_member(it, "apiVersion", api, a);
            rc = fn(ctx, it);
        }
        free(cont);
        cont = next && *next ? tly_xstrdup(next) : NULL;
        if (rc != TLY_OK || !cont)
            break;
    }
    free(cont);
    tly_arena_destroy(a);
    free(base);
    free(what);
    free(api);
    if (rc != TLY_OK) {
        free(*rv);
        *rv = NULL;
    }
    return rc;
}

typedef struct {
    const tly_kube_discovery *d;
    tly_kube_item_fn fn;
    void *ctx;
} crd_filter;

static int tally_crd_only(void *ctx, const tly_node *it)
{
    crd_filter *f = ctx;
    const tly_node *spec = it ? tly_node_get(it, "spec") : NULL;
    const tly_node *g = spec ? tly_node_get(spec, "group") : NULL;
    if (it && !(g && g->type == TLY_N_STRING && tly_kube_tally_group(f->d, g->str)))
        return TLY_OK;
    return f->fn(f->ctx, it);
}

int tly_kube_list_crds(tly_kube *k, const tly_kube_discovery *d, uint32_t page, tly_kube_item_fn fn,
                       void *ctx, char **rv, int64_t *date, char *err, size_t errlen)
{
    crd_filter f = {d, fn, ctx};
    return tly_kube_list(k, tly_kube_discovery_crds(d), page, tally_crd_only, &f, rv, date, err, errlen);
}
