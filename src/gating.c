/*
** gating.c: the gate on pods and the /mutate/pods decision (gating.h).
**
** The mutation is a JSON patch of one operation: `add` of
** /spec/schedulingGates with the gate when the pod has none, else `add` at
** /spec/schedulingGates/- so the gates already there stay where they are.
** A pod that already has the gate is left alone (a retried CREATE).
*/
#include "tally/gating.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"
#include "tally/error.h"
#include "tally/queues.h"

bool tly_pod_has_gate(const tly_pod *p, const char *name)
{
    for (uint32_t i = 0; i < p->ngates; i++)
        if (p->gates[i] && !strcmp(p->gates[i], name))
            return true;
    return false;
}

bool tly_pod_has_foreign_gate(const tly_pod *p)
{
    for (uint32_t i = 0; i < p->ngates; i++)
        if (!p->gates[i] || strcmp(p->gates[i], TLY_GATE))
            return true;
    return false;
}

bool tly_gate_on_create(const tly_store *s, const tly_pod *p)
{
    if (!tly_store_is_tally_pod(s, p) || (p->node_name && *p->node_name))
        return false;
    tly_gating_mode mode = tly_gating_mode_of(s);
    if (mode == TLY_GATING_OFF)
        return false;
    const char *pgname = tly_kvs_get(&p->meta.annotations, "pod-group-name");
    const char *label = tly_kvs_get(&p->meta.labels, tly_store_queue_label_key(s));
    const tly_podgroup *pg;
    const char *queue = tly_store_pod_queue(s, p, &pg);
    /* Not known yet: nothing names the queue, or the PodGroup that will is not there. */
    if ((pgname && *pgname && !pg) || ((!pgname || !*pgname) && (!label || !*label)))
        return true;
    const tly_queue *q = tly_store_find(s, TLY_K_QUEUE, NULL, queue);
    return !q || tly_queue_gated(mode, q);
}

static char *patch_for(const tly_pod *p)
{
    return p->ngates ? tly_xasprintf("[{\"op\":\"add\",\"path\":\"/spec/schedulingGates/-\","
                                     "\"value\":{\"name\":\"%s\"}}]",
                                     TLY_GATE)
                     : tly_xasprintf("[{\"op\":\"add\",\"path\":\"/spec/schedulingGates\","
                                     "\"value\":[{\"name\":\"%s\"}]}]",
                                     TLY_GATE);
}

static const char *str_at(const tly_node *n, const char *path)
{
    const tly_node *v = n ? tly_node_path(n, path) : NULL;
    return v && v->type == TLY_N_STRING ? v->str : NULL;
}

int tly_mutate_review(const tly_store *state, const char *body, size_t len, tly_admit_result *res,
                      char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    tly_arena *a = tly_arena_create(16 * 1024);
    tly_node *review = tly_parse_api_value(body, len, a);
    const tly_node *req = review ? tly_node_get(review, "request") : NULL;
    const char *uid = str_at(req, "uid");
    int rc = TLY_EINVAL;
    if (!review || !str_at(review, "kind") || strcmp(str_at(review, "kind"), "AdmissionReview") ||
        !str_at(review, "apiVersion") || strcmp(str_at(review, "apiVersion"), "admission.k8s.io/v1")) {
        snprintf(err, errlen, "expected apiVersion admission.k8s.io/v1 and kind AdmissionReview");
        goto out;
    }
    if (!uid) {
        snprintf(err, errlen, "the AdmissionReview has no request with a uid");
        goto out;
    }
    rc = TLY_OK;
    res->uid = tly_xstrdup(uid);
    res->allowed = true;  /* the webhook only ever adds a gate */
    const char *op = str_at(req, "operation"), *kind = str_at(req, "kind.kind");
    res->kind = kind ? tly_xstrdup(kind) : NULL;
    res->operation = op ? tly_xstrdup(op) : NULL;
    const tly_node *dry = tly_node_get(req, "dryRun");
    res->dry_run = dry && dry->type == TLY_N_BOOL && dry->bval;
    tly_node *object = (tly_node *)tly_node_get(req, "object");
    if (!kind || strcmp(kind, "Pod") || !op || strcmp(op, "CREATE") || !object || object->type != TLY_N_MAP)
        goto out;
    /* A pod at CREATE may carry no namespace of its own: the request's is the one it gets. */
    const char *ns = str_at(req, "namespace");
    tly_store *one = tly_store_create_one(NULL);
    tly_store_load_object(one, "request.object", object);
    tly_store_finish(one);
    tly_pod *p = tly_store_count(one, TLY_K_POD) ? tly_store_at(one, TLY_K_POD, 0) : NULL;
    if (p && ns && *ns && (!p->meta.ns || strcmp(p->meta.ns, ns)))
        p->meta.ns = tly_arena_strdup(tly_store_arena(one), ns);
    if (p && !tly_pod_has_gate(p, TLY_GATE) && tly_gate_on_create(state, p))
        res->patch = patch_for(p);
    tly_store_destroy(one);
out:
    tly_arena_destroy(a);
    return rc;
}
