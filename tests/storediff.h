/*
** storediff.h: comparing two loaded stores object by object, and their
** diagnostics, for tests/test_load_json.c and fuzz/fuzz_load_json.c (the
** native JSON reader against the libfyaml path, and a compact file against
** the same file indented). Header-only: each user is one program.
**
** Every kind is compared by its tly_meta (name, namespace, uid, labels,
** annotations, times, error count, and where it was read when positions
** are compared); pods and nodes, the kinds of a `kubectl get` dump, field by
** field. Diagnostics are compared in the order they were recorded.
*/
#ifndef TALLY_STOREDIFF_H
#define TALLY_STOREDIFF_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tally/diag.h"
#include "tally/objects.h"
#include "tally/store.h"

/* Fails the comparison with a message naming what differs. */
#define SD_CHECK(cond, what)                  \
    do {                                      \
        if (!(cond)) {                        \
            snprintf(sd->why, sizeof sd->why, "%s: %s", sd->object, (what)); \
            return false;                     \
        }                                     \
    } while (0)

typedef struct {
    bool positions;    /* compare lines and columns too */
    const char *object;
    char why[512];
} storediff;

static inline bool sd_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static inline bool sd_kvs(const tly_kvs *a, const tly_kvs *b)
{
    if (a->n != b->n)
        return false;
    for (uint32_t i = 0; i < a->n; i++)
        if (!sd_str(a->v[i].key, b->v[i].key) || !sd_str(a->v[i].val, b->v[i].val))
            return false;
    return true;
}

static inline bool sd_rlist(const tly_rlist *a, const tly_rlist *b)
{
    if (a->n != b->n)
        return false;
    for (uint32_t i = 0; i < a->n; i++)
        if (a->v[i].id != b->v[i].id || tly_qty_cmp(a->v[i].q, b->v[i].q) != 0 ||
            a->v[i].q.fmt != b->v[i].q.fmt)
            return false;
    return true;
}

static inline bool sd_conditions(const tly_conditions *a, const tly_conditions *b)
{
    if (a->n != b->n)
        return false;
    for (uint32_t i = 0; i < a->n; i++) {
        const tly_condition *x = &a->v[i], *y = &b->v[i];
        if (!sd_str(x->type, y->type) || !sd_str(x->status, y->status) ||
            !sd_str(x->reason, y->reason) || !sd_str(x->message, y->message) ||
            x->last_probe != y->last_probe || x->last_transition != y->last_transition ||
            x->last_heartbeat != y->last_heartbeat)
            return false;
    }
    return true;
}

static inline bool sd_strs(const char *const *a, const char *const *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!sd_str(a[i], b[i]))
            return false;
    return true;
}

static inline bool sd_selreqs(const tly_selreq *a, const tly_selreq *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!sd_str(a[i].key, b[i].key) || !sd_str(a[i].op, b[i].op) ||
            a[i].nvalues != b[i].nvalues || !sd_strs(a[i].values, b[i].values, a[i].nvalues))
            return false;
    return true;
}

static inline bool sd_selector(const tly_selector *a, const tly_selector *b)
{
    return a->nreqs == b->nreqs && sd_selreqs(a->reqs, b->reqs, a->nreqs) &&
           sd_kvs(&a->match_labels, &b->match_labels) && a->nfields == b->nfields &&
           sd_selreqs(a->fields, b->fields, a->nfields) && a->has_fields == b->has_fields;
}

static inline bool sd_containers(const tly_container *a, const tly_container *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!sd_str(a[i].name, b[i].name) || !sd_rlist(&a[i].requests, &b[i].requests) ||
            !sd_rlist(&a[i].limits, &b[i].limits) || a[i].restart_always != b[i].restart_always)
            return false;
    return true;
}

static inline bool sd_statuses(const tly_container_status *a, const tly_container_status *b,
                               uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!sd_str(a[i].name, b[i].name) || a[i].has_resources != b[i].has_resources ||
            !sd_rlist(&a[i].requests, &b[i].requests) || !sd_rlist(&a[i].limits, &b[i].limits) ||
            a[i].has_allocated != b[i].has_allocated ||
            !sd_rlist(&a[i].allocated, &b[i].allocated))
            return false;
    return true;
}

static inline bool sd_tolerations(const tly_toleration *a, const tly_toleration *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!sd_str(a[i].key, b[i].key) || !sd_str(a[i].op, b[i].op) ||
            !sd_str(a[i].value, b[i].value) || !sd_str(a[i].effect, b[i].effect))
            return false;
    return true;
}

static inline bool sd_claims(const tly_pod_claim *a, const tly_pod_claim *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!sd_str(a[i].name, b[i].name) || !sd_str(a[i].claim_name, b[i].claim_name) ||
            !sd_str(a[i].template_name, b[i].template_name))
            return false;
    return true;
}

static inline bool sd_pod_spec(storediff *sd, const tly_pod *a, const tly_pod *b)
{
    SD_CHECK(a->ncontainers == b->ncontainers &&
                 sd_containers(a->containers, b->containers, a->ncontainers),
             "containers");
    SD_CHECK(a->ninit == b->ninit && sd_containers(a->init_containers, b->init_containers, a->ninit),
             "initContainers");
    SD_CHECK(sd_rlist(&a->overhead, &b->overhead), "overhead");
    SD_CHECK(a->has_pod_resources == b->has_pod_resources &&
                 sd_rlist(&a->pod_requests, &b->pod_requests) &&
                 sd_rlist(&a->pod_limits, &b->pod_limits),
             "pod resources");
    SD_CHECK(sd_str(a->node_name, b->node_name) && sd_kvs(&a->node_selector, &b->node_selector),
             "nodeName or nodeSelector");
    SD_CHECK(a->nnode_affinity_required == b->nnode_affinity_required, "node affinity terms");
    for (uint32_t i = 0; i < a->nnode_affinity_required; i++)
        SD_CHECK(sd_selector(&a->node_affinity_required[i], &b->node_affinity_required[i]),
                 "node affinity term");
    SD_CHECK(a->has_pod_affinity == b->has_pod_affinity &&
                 a->has_topology_spread == b->has_topology_spread,
             "pod affinity or topology spread");
    SD_CHECK(a->ntolerations == b->ntolerations &&
                 sd_tolerations(a->tolerations, b->tolerations, a->ntolerations),
             "tolerations");
    SD_CHECK(sd_str(a->scheduler_name, b->scheduler_name) && a->has_priority == b->has_priority &&
                 a->priority == b->priority && sd_str(a->priority_class_name, b->priority_class_name),
             "scheduling fields");
    SD_CHECK(a->ngates == b->ngates && sd_strs(a->gates, b->gates, a->ngates), "schedulingGates");
    SD_CHECK(a->nclaims == b->nclaims && sd_claims(a->claims, b->claims, a->nclaims),
             "resourceClaims");
    return true;
}

static inline bool sd_pod(storediff *sd, const tly_pod *a, const tly_pod *b)
{
    if (!sd_pod_spec(sd, a, b))
        return false;
    SD_CHECK(sd_str(a->phase, b->phase) && sd_conditions(&a->conditions, &b->conditions) &&
                 a->start_time == b->start_time,
             "status");
    SD_CHECK(a->nstatuses == b->nstatuses && sd_statuses(a->statuses, b->statuses, a->nstatuses) &&
                 a->ninit_statuses == b->ninit_statuses &&
                 sd_statuses(a->init_statuses, b->init_statuses, a->ninit_statuses),
             "containerStatuses");
    return true;
}

static inline bool sd_node(storediff *sd, const tly_k8s_node *a, const tly_k8s_node *b)
{
    SD_CHECK(sd_rlist(&a->allocatable, &b->allocatable), "allocatable");
    SD_CHECK(a->ntaints == b->ntaints, "taints");
    for (uint32_t i = 0; i < a->ntaints; i++)
        SD_CHECK(sd_str(a->taints[i].key, b->taints[i].key) &&
                     sd_str(a->taints[i].value, b->taints[i].value) &&
                     sd_str(a->taints[i].effect, b->taints[i].effect),
                 "taint");
    SD_CHECK(a->unschedulable == b->unschedulable && a->ready == b->ready &&
                 a->ready_heartbeat == b->ready_heartbeat &&
                 sd_conditions(&a->conditions, &b->conditions),
             "status");
    return true;
}

static inline bool sd_meta(storediff *sd, const tly_meta *a, const tly_meta *b)
{
    SD_CHECK(a->kind == b->kind && sd_str(a->api_version, b->api_version) &&
                 sd_str(a->name, b->name) && sd_str(a->ns, b->ns) && sd_str(a->uid, b->uid),
             "kind, name or uid");
    SD_CHECK(sd_kvs(&a->labels, &b->labels) && sd_kvs(&a->annotations, &b->annotations),
             "labels or annotations");
    SD_CHECK(a->created == b->created && a->deleted == b->deleted, "timestamps");
    SD_CHECK(a->errors == b->errors, "error count");
    if (sd->positions && (a->src.line != b->src.line || a->src.col != b->src.col)) {
        snprintf(sd->why, sizeof sd->why, "%s: read at %u:%u and at %u:%u", sd->object,
                 a->src.line, a->src.col, b->src.line, b->src.col);
        return false;
    }
    return true;
}

/* true when both finished stores hold the same objects; else sd->why says where. */
static inline bool storediff_same(storediff *sd, const tly_store *a, const tly_store *b)
{
    for (int k = 0; k < TLY_K_COUNT; k++) {
        sd->object = tly_kind_name(k);
        SD_CHECK(tly_store_count(a, k) == tly_store_count(b, k), "count");
        for (uint32_t i = 0; i < tly_store_count(a, k); i++) {
            const tly_meta *x = tly_store_at(a, k, i), *y = tly_store_at(b, k, i);
            sd->object = x->name;
            if (!sd_meta(sd, x, y) ||
                (k == TLY_K_POD && !sd_pod(sd, (const tly_pod *)x, (const tly_pod *)y)) ||
                (k == TLY_K_NODE &&
                 !sd_node(sd, (const tly_k8s_node *)x, (const tly_k8s_node *)y)))
                return false;
        }
    }
    return true;
}

/* true when both lists hold the same diagnostics in the same order. */
static inline bool storediff_same_diags(storediff *sd, const tly_diags *a, const tly_diags *b)
{
    sd->object = "diagnostics";
    SD_CHECK(tly_diags_count(a) == tly_diags_count(b), "count");
    for (size_t i = 0; i < tly_diags_count(a); i++) {
        const tly_diag *x = tly_diags_get(a, i), *y = tly_diags_get(b, i);
        sd->object = x->msg;
        SD_CHECK(x->sev == y->sev && sd_str(x->object, y->object) && sd_str(x->field, y->field) &&
                     sd_str(x->msg, y->msg),
                 y->msg);
        SD_CHECK(!sd->positions || (x->line == y->line && x->col == y->col), "position");
    }
    return true;
}

#endif
