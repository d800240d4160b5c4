/*
** objects.c: small helpers over the typed objects (objects.h).
*/
#include "tally/objects.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    bool namespaced;
} kinds[TLY_K_COUNT] = {
    [TLY_K_NODE] = {"Node", false},
    [TLY_K_POD] = {"Pod", true},
    [TLY_K_NAMESPACE] = {"Namespace", false},
    [TLY_K_QUEUE] = {"Queue", false},
    [TLY_K_ACCOUNTED_RESOURCE] = {"AccountedResource", false},
    [TLY_K_PODGROUP] = {"PodGroup", true},
    [TLY_K_PRIORITY_CLASS] = {"PriorityClass", false},
    [TLY_K_RESOURCE_CLAIM] = {"ResourceClaim", true},
    [TLY_K_RESOURCE_CLAIM_TEMPLATE] = {"ResourceClaimTemplate", true},
    [TLY_K_RESOURCE_SLICE] = {"ResourceSlice", false},
    [TLY_K_DEVICE_CLASS] = {"DeviceClass", false},
    [TLY_K_RUNTIME] = {"Runtime", true},
    [TLY_K_RUN] = {"Run", true},
    [TLY_K_CONFIG] = {"Config", false},
};

const char *tly_kind_name(int kind)
{
    return (kind >= 0 && kind < TLY_K_COUNT) ? kinds[kind].name : "?";
}

bool tly_kind_namespaced(int kind)
{
    return kind >= 0 && kind < TLY_K_COUNT && kinds[kind].namespaced;
}

const char *tly_kvs_get(const tly_kvs *kvs, const char *key)
{
    for (uint32_t i = 0; i < kvs->n; i++)
        if (strcmp(kvs->v[i].key, key) == 0)
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
