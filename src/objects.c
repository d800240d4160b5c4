/*
** objects.c: small helpers over the typed objects (objects.h).
*/
#include "tally/objects.h"

#include <stdlib.h>
#include <string.h>

/*
** Each kind's name, scope, API group and the versions tally reads (contract
** section 2), in order of preference: the versions KAI's, kruntimes' and
** Kubernetes' servers serve, plus Queue v1alpha1 as the seed's
** AccountedResource examples write it. The loader refuses any other version
** of these groups, and live discovery lists the first one the server serves.
*/
static const struct {
    const char *name;
    bool namespaced;
    const char *group;
    const char *versions[4];
} kinds[TLY_K_COUNT] = {
    [TLY_K_NODE] = {"Node", false, "", {"v1"}},
    [TLY_K_POD] = {"Pod", true, "", {"v1"}},
    [TLY_K_NAMESPACE] = {"Namespace", false, "", {"v1"}},
    [TLY_K_QUEUE] = {"Queue", false, "scheduling.run.ai", {"v2", "v1alpha1"}},
    [TLY_K_ACCOUNTED_RESOURCE] = {"AccountedResource", false, "scheduling.run.ai", {"v1alpha1"}},
    [TLY_K_PODGROUP] = {"PodGroup", true, "scheduling.run.ai", {"v2alpha2"}},
    [TLY_K_PRIORITY_CLASS] = {"PriorityClass", false, "scheduling.k8s.io", {"v1"}},
    [TLY_K_RESOURCE_CLAIM] = {"ResourceClaim", true, "resource.k8s.io", {"v1", "v1beta2", "v1beta1"}},
    [TLY_K_RESOURCE_CLAIM_TEMPLATE] = {"ResourceClaimTemplate", true, "resource.k8s.io",
                                       {"v1", "v1beta2", "v1beta1"}},
    [TLY_K_RESOURCE_SLICE] = {"ResourceSlice", false, "resource.k8s.io", {"v1", "v1beta2", "v1beta1"}},
    [TLY_K_DEVICE_CLASS] = {"DeviceClass", false, "resource.k8s.io", {"v1", "v1beta2", "v1beta1"}},
    [TLY_K_RUNTIME] = {"Runtime", true, "kruntimes.io", {"v1alpha1"}},
    [TLY_K_RUN] = {"Run", true, "kruntimes.io", {"v1alpha1"}},
    [TLY_K_CONFIG] = {"Config", false, "kai.scheduler", {"v1"}},
};

const char *tly_kind_name(int kind)
{
    return (kind >= 0 && kind < TLY_K_COUNT) ? kinds[kind].name : "?";
}

bool tly_kind_namespaced(int kind)
{
    return kind >= 0 && kind < TLY_K_COUNT && kinds[kind].namespaced;
}

const char *tly_kind_group(int kind)
{
    return (kind >= 0 && kind < TLY_K_COUNT) ? kinds[kind].group : "";
}

const char *const *tly_kind_versions(int kind)
{
    static const char *const none[] = {NULL};
    return (kind >= 0 && kind < TLY_K_COUNT) ? kinds[kind].versions : none;
}

bool tly_kind_reads_version(int kind, const char *version)
{
    for (const char *const *v = tly_kind_versions(kind); *v; v++)
        if (strcmp(*v, version) == 0)
            return true;
    return false;
}

const char *tly_kvs_get(const tly_kvs *kvs, const char *key)
{
    /* The first byte is compared here first: most keys differ there, and the
       pod engine looks labels up millions of times (a call to strcmp each was
       a tenth of the engine's setup). */
    for (uint32_t i = 0; i < kvs->n; i++)
        if (kvs->v[i].key[0] == key[0] && strcmp(kvs->v[i].key, key) == 0)
            return kvs->v[i].val;
    return NULL;
}

const tly_condition *tly_conditions_find(const tly_conditions *c, const char *type)
{
    for (uint32_t i = 0; i < c->n; i++)
        if (c->v[i].type && strcmp(c->v[i].type, type) == 0)
            return &c->v[i];
    return NULL;
}

static bool value_in(const char *v, const tly_selreq *r)
{
    for (uint32_t i = 0; i < r->nvalues; i++)
        if (strcmp(v, r->values[i]) == 0)
            return true;
    return false;
}

bool tly_selector_matches(const tly_selector *s, const tly_kvs *labels)
{
    for (uint32_t i = 0; i < s->match_labels.n; i++) {
        const char *v = tly_kvs_get(labels, s->match_labels.v[i].key);
        if (!v || strcmp(v, s->match_labels.v[i].val) != 0)
            return false;
    }
    for (uint32_t i = 0; i < s->nreqs; i++) {
        const tly_selreq *r = &s->reqs[i];
        const char *v = tly_kvs_get(labels, r->key);
        if (!strcmp(r->op, "In")) {
            if (!v || !value_in(v, r))
                return false;
        } else if (!strcmp(r->op, "NotIn")) {
            if (v && value_in(v, r))
                return false;
        } else if (!strcmp(r->op, "Exists")) {
            if (!v)
                return false;
        } else if (!strcmp(r->op, "DoesNotExist")) {
            if (v)
                return false;
        } else {
            /* Gt and Lt (node selectors only): both sides integers. */
            if (!v || r->nvalues != 1)
                return false;
            char *e1, *e2;
            long long a = strtoll(v, &e1, 10), b = strtoll(r->values[0], &e2, 10);
            if (*e1 || *e2 || !*v || !*r->values[0])
                return false;
            if (!strcmp(r->op, "Gt") ? !(a > b) : !(a < b))
                return false;
        }
    }
    return true;
}
