/*
** discovery.c: which of tally's kinds the API server serves, and where
** (kube.h).
**
** The kinds are those of contract section 2, each with the versions tally
** reads, in order of preference: DRA at resource.k8s.io/v1, else v1beta2,
** else v1beta1 (what Kubernetes 1.32 to 1.34 serve); KAI's Queue at v2
** (else v1alpha1, as the seed writes it), PodGroup at v2alpha2,
** AccountedResource at v1alpha1, Config at v1; kruntimes at v1alpha1. The
** table is objects.c's, shared with the loader, so a live read and a file
** read accept the same versions. /apis lists the groups and their
** versions; for each group tally needs, /apis/GROUP/VERSION gives the
** resource name (the plural in paths) and whether it is namespaced. A kind
** whose group, version or resource is not there is absent: not an error
** (KAI's or kruntimes' CRDs may not be installed), reported once by the
** caller and checked again later by the reflectors.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_int.h"
#include "tally/arena.h"
#include "tally/error.h"
#include "tally/objects.h"

/*
** The kinds in the order they are listed; their groups and versions are the
** loader's (tly_kind_group, tly_kind_versions), so that live mode reads
** exactly the versions a file may hold.
*/
static const int specs[] = {
    TLY_K_NAMESPACE, TLY_K_NODE, TLY_K_POD, TLY_K_PRIORITY_CLASS, TLY_K_CONFIG,
    TLY_K_QUEUE, TLY_K_ACCOUNTED_RESOURCE, TLY_K_PODGROUP, TLY_K_DEVICE_CLASS,
    TLY_K_RESOURCE_SLICE, TLY_K_RESOURCE_CLAIM, TLY_K_RESOURCE_CLAIM_TEMPLATE, TLY_K_RUNTIME,
    TLY_K_RUN,
};
#define NSPECS (sizeof specs / sizeof specs[0])

struct tly_kube_discovery {
    tly_kube_kind kinds[NSPECS];
    tly_kube_kind crds;
    char *server_version;
    tly_arena *a;
};

/* GETs path and parses the JSON answer into a; NULL with err set unless 404 (*missing). */
static const tly_node *get_json(tly_kube *k, const char *path, tly_arena *a, bool *missing,
                                int *rc, char *err, size_t errlen)
{
    tly_kube_resp r;
    *missing = false;
    *rc = tly_kube_request(k, "GET", path, NULL, NULL, 0, &r, err, errlen);
    const tly_node *root = NULL;
    if (*rc == TLY_OK && (r.status == 404 || r.status == 503)) {
        /* 503: an aggregated group whose backend is down; treat as not served now. */
        *missing = true;
    } else if (*rc == TLY_OK && r.status != 200) {
        tly_kube_explain_status(k, &r, "get", path, err, errlen);
        *rc = r.status == 401 || r.status == 403 ? TLY_EAUTH : TLY_EHTTP;
    } else if (*rc == TLY_OK) {
        root = tly_parse_value(r.body, r.len, a);
        if (!root || root->type != TLY_N_MAP) {
            snprintf(err, errlen, "GET %s: the API server's answer is not a JSON object", path);
            *rc = TLY_EINVAL;
            root = NULL;
        }
    }
    tly_kube_resp_free(&r);
    return root;
}

static const char *str_of(const tly_node *map, const char *key)
{
    const tly_node *n = tly_node_get(map, key);
    return n && n->type == TLY_N_STRING ? n->str : NULL;
}

/* Whether /apis lists group g with version v. */
static bool group_serves(const tly_node *apis, const char *g, const char *v)
{
    const tly_node *groups = apis ? tly_node_get(apis, "groups") : NULL;
    for (const tly_node *e = groups && groups->type == TLY_N_SEQ ? groups->kids : NULL; e;
         e = e->next) {
        const char *name = str_of(e, "name");
        if (!name || strcmp(name, g))
            continue;
        const tly_node *vs = tly_node_get(e, "versions");
        for (const tly_node *x = vs && vs->type == TLY_N_SEQ ? vs->kids : NULL; x; x = x->next) {
            const char *ver = str_of(x, "version");
            if (ver && !strcmp(ver, v))
                return true;
        }
    }
    return false;
}

/* Fills kk from an APIResourceList when it lists the kind (not a subresource). */
static bool find_resource(const tly_node *list, const char *kind, tly_kube_kind *kk, tly_arena *a)
{
    const tly_node *res = list ? tly_node_get(list, "resources") : NULL;
    for (const tly_node *e = res && res->type == TLY_N_SEQ ? res->kids : NULL; e; e = e->next) {
        const char *name = str_of(e, "name"), *k = str_of(e, "kind");
        if (!name || !k || strchr(name, '/') || strcmp(k, kind))
            continue;
        const tly_node *ns = tly_node_get(e, "namespaced");
        kk->resource = tly_arena_strdup(a, name);
        kk->namespaced = ns && ns->type == TLY_N_BOOL && ns->bval;
        return true;
    }
    return false;
}

/* One resource list per group version, fetched once. */
typedef struct {
    const char *gv;
    const tly_node *list;
    bool missing;
} gv_cache;

static const tly_node *resources_of(tly_kube *k, gv_cache *cache, size_t *ncache, const char *g,
                                    const char *v, tly_arena *a, int *rc, char *err, size_t errlen)
{
    char *gv = *g ? tly_arena_printf(a, "/apis/%s/%s", g, v) : tly_arena_printf(a, "/api/%s", v);
    for (size_t i = 0; i < *ncache; i++)
        if (!strcmp(cache[i].gv, gv))
            return cache[i].list;
    bool missing;
    const tly_node *l = get_json(k, gv, a, &missing, rc, err, errlen);
    cache[*ncache].gv = gv;
    cache[*ncache].list = l;
    cache[*ncache].missing = missing;
    (*ncache)++;
    return l;
}

int tly_kube_discover(tly_kube *k, tly_kube_discovery **out, char *err, size_t errlen)
{
    *out = NULL;
    tly_kube_discovery *d = tly_xcalloc(1, sizeof *d);
    d->a = tly_arena_create(64 * 1024);
    bool missing;
    int rc;
    const tly_node *ver = get_json(k, "/version", d->a, &missing, &rc, err, errlen);
    if (rc == TLY_OK && ver && str_of(ver, "gitVersion"))
        d->server_version = tly_arena_strdup(d->a, str_of(ver, "gitVersion"));
    const tly_node *apis = rc == TLY_OK ? get_json(k, "/apis", d->a, &missing, &rc, err, errlen) : NULL;
    gv_cache cache[NSPECS * 4 + 1];
    size_t ncache = 0;
    for (size_t i = 0; rc == TLY_OK && i < NSPECS; i++) {
        tly_kube_kind *kk = &d->kinds[i];
        kk->kind = specs[i];
        kk->group = tly_kind_group(kk->kind);
        for (const char *const *vp = tly_kind_versions(kk->kind); *vp && !kk->served; vp++) {
            const char *v = *vp;
            if (*kk->group && !group_serves(apis, kk->group, v))
                continue;
            const tly_node *l = resources_of(k, cache, &ncache, kk->group, v, d->a, &rc, err, errlen);
            if (rc != TLY_OK)
                break;
            if (find_resource(l, tly_kind_name(kk->kind), kk, d->a)) {
                kk->version = v;
                kk->served = true;
            }
        }
    }
    tly_kube_kind *cr = &d->crds;
    *cr = (tly_kube_kind){.kind = -1, .name = "CustomResourceDefinition", .group = "apiextensions.k8s.io"};
    if (rc == TLY_OK && group_serves(apis, cr->group, "v1")) {
        const tly_node *l = resources_of(k, cache, &ncache, cr->group, "v1", d->a, &rc, err, errlen);
        if (rc == TLY_OK && find_resource(l, cr->name, cr, d->a)) {
            cr->version = "v1";
            cr->served = true;
        }
    }
    if (rc != TLY_OK) {
        tly_kube_discovery_free(d);
        return rc;
    }
    *out = d;
    return TLY_OK;
}

const tly_kube_kind *tly_kube_discovery_crds(const tly_kube_discovery *d) { return &d->crds; }

bool tly_kube_tally_group(const tly_kube_discovery *d, const char *group)
{
    for (size_t i = 0; group && *group && i < NSPECS; i++)
        if (!strcmp(d->kinds[i].group, group))
            return true;
    return false;
}

void tly_kube_discovery_free(tly_kube_discovery *d)
{
    if (!d)
        return;
    tly_arena_destroy(d->a);
    free(d);
}

uint32_t tly_kube_discovery_count(const tly_kube_discovery *d) { (void)d; return NSPECS; }

const tly_kube_kind *tly_kube_discovery_at(const tly_kube_discovery *d, uint32_t i)
{
    return i < NSPECS ? &d->kinds[i] : NULL;
}

const char *tly_kube_discovery_server_version(const tly_kube_discovery *d)
{
    return d->server_version;
}

char *tly_kube_kind_path(const tly_kube_kind *kk)
{
    if (!*kk->group)
        return tly_xasprintf("/api/%s/%s", kk->version, kk->resource);
    return tly_xasprintf("/apis/%s/%s/%s", kk->group, kk->version, kk->resource);
}

char *tly_kube_object_path(const tly_kube_kind *kk, const char *ns, const char *name)
{
    const char *root = *kk->group ? "/apis/" : "/api";
    const char *g = *kk->group ? kk->group : "";
    if (kk->namespaced && ns)
        return tly_xasprintf("%s%s/%s/namespaces/%s/%s/%s", root, g, kk->version, ns, kk->resource,
                             name);
    return tly_xasprintf("%s%s/%s/%s/%s", root, g, kk->version, kk->resource, name);
}

char *tly_kube_kind_resource_name(const tly_kube_kind *kk)
{
    const char *res = kk->resource ? kk->resource : kk->name ? kk->name : tly_kind_name(kk->kind);
    return *kk->group ? tly_xasprintf("%s.%s", res, kk->group) : tly_xstrdup(res);
}
