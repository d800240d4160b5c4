/*
** validate.c: cross-object rules (validate.h). Each rule points at the
** referring field: the problem is where the reference is written, not at
** the object that is missing.
*/
#include "tally/validate.h"

#include <stdio.h>
#include <string.h>

#include "tally/kruntimes.h"

static void ref_problem(tly_diags *d, bool full_state, const tly_meta *m, const tly_src *at,
                        const char *field, const char *fmt, const char *what)
{
    char name[512];
    if (m->ns)
        snprintf(name, sizeof name, "%s/%s", m->ns, m->name);
    else
        snprintf(name, sizeof name, "%s", m->name);
    const tly_src *src = (at && at->line) ? at : &m->src;
    tly_diags_add(d, full_state ? TLY_SEV_ERROR : TLY_SEV_WARNING, src->file, src->line, src->col,
                  tly_kind_name(m->kind), name, field, fmt, what);
}

static void check_queues(const tly_store *s, tly_diags *d, bool full)
{
    uint32_t n = tly_store_count(s, TLY_K_QUEUE);
    for (uint32_t i = 0; i < n; i++) {
        const tly_queue *q = tly_store_at(s, TLY_K_QUEUE, i);
        if (q->parent && *q->parent) {
            if (strcmp(q->parent, q->meta.name) == 0)
                tly_diags_add(d, TLY_SEV_ERROR, q->parent_src.file ? q->parent_src.file : q->meta.src.file,
                              q->parent_src.line, q->parent_src.col, "Queue", q->meta.name,
                              "spec.parentQueue", "a queue cannot be its own parent");
            else if (!tly_store_find(s, TLY_K_QUEUE, NULL, q->parent))
                ref_problem(d, full, &q->meta, &q->parent_src, "spec.parentQueue",
                            "parent queue \"%s\" is not in the input; the queue and its "
                            "subtree cannot take workloads until it exists",
                            q->parent);
        }
        for (uint32_t j = 0; j < q->naccrefs; j++) {
            const tly_queue_accref *r = &q->accrefs[j];
            if (!r->ref || !*r->ref)
                continue;
            if (tly_store_find(s, TLY_K_ACCOUNTED_RESOURCE, NULL, r->ref))
                continue;
            char field[96];
            snprintf(field, sizeof field, "spec.accountedResources[%u].resourceRef", j);
            ref_problem(d, full, &q->meta, &r->src, field,
                        "AccountedResource \"%s\" is not in the input; every workload in this "
                        "queue is blocked (AccountedResourceNotFound) until it exists",
                        r->ref);
        }
    }
    /* A cycle in parentQueue makes a subtree that never reaches a root. */
    for (uint32_t i = 0; i < n; i++) {
        const tly_queue *q = tly_store_at(s, TLY_K_QUEUE, i);
        const tly_queue *p = q;
        for (uint32_t steps = 0; p && p->parent && *p->parent; steps++) {
            p = tly_store_find(s, TLY_K_QUEUE, NULL, p->parent);
            if (p == q || steps > n) {
                tly_diags_add(d, TLY_SEV_ERROR, q->meta.src.file, q->parent_src.line,
                              q->parent_src.col, "Queue", q->meta.name, "spec.parentQueue",
                              "parentQueue forms a cycle through \"%s\"", q->parent);
                break;
            }
        }
    }
}

/* A ResourceClaim the input holds that was generated for claim `pc` of pod p. */
static bool generated_claim(const tly_store *s, const tly_pod *p, const char *pc)
{
    uint32_t n = tly_store_count(s, TLY_K_RESOURCE_CLAIM);
    for (uint32_t i = 0; i < n; i++) {
        const tly_resource_claim *c = tly_store_at(s, TLY_K_RESOURCE_CLAIM, i);
        const char *pcn = tly_kvs_get(&c->meta.annotations, "resource.kubernetes.io/pod-claim-name");
        if (!pcn || strcmp(pcn, pc) || strcmp(c->meta.ns, p->meta.ns))
            continue;
        for (uint32_t r = 0; r < c->nreserved_for; r++)
            if (c->reserved_for[r].name && !strcmp(c->reserved_for[r].name, p->meta.name))
                return true;
    }
    return false;
}

/* spec.resourceClaims[].resourceClaimTemplateName: the template must be in the input. */
static void check_claim_templates(const tly_store *s, tly_diags *d, bool full, const tly_pod *p)
{
    for (uint32_t j = 0; j < p->nclaims; j++) {
        const tly_pod_claim *pc = &p->claims[j];
        if (!pc->template_name || !*pc->template_name ||
            tly_store_find(s, TLY_K_RESOURCE_CLAIM_TEMPLATE, p->meta.ns, pc->template_name) ||
            (pc->name && generated_claim(s, p, pc->name)))
            continue;
        char field[96];
        snprintf(field, sizeof field, "spec.resourceClaims[%u].resourceClaimTemplateName", j);
        ref_problem(d, full, &p->meta, NULL, field,
                    "ResourceClaimTemplate \"%s\" is not in the input; the pod's claim cannot be "
                    "made, so the pod cannot be placed until the template exists",
                    pc->template_name);
    }
}

static void check_pods(const tly_store *s, tly_diags *d, bool full)
{
    uint32_t n = tly_store_count(s, TLY_K_POD);
    for (uint32_t i = 0; i < n; i++) {
        const tly_pod *p = tly_store_at(s, TLY_K_POD, i);
        if (p->priority_class_name && *p->priority_class_name &&
            !tly_store_find(s, TLY_K_PRIORITY_CLASS, NULL, p->priority_class_name))
            ref_problem(d, full, &p->meta, NULL, "spec.priorityClassName",
                        "PriorityClass \"%s\" is not in the input", p->priority_class_name);
        check_claim_templates(s, d, full, p);
        if (!tly_store_is_tally_pod(s, p))
            continue;
        const char *pg = tly_kvs_get(&p->meta.annotations, "pod-group-name");
        if (pg && *pg && !tly_store_find(s, TLY_K_PODGROUP, p->meta.ns, pg))
            ref_problem(d, full, &p->meta, NULL, "metadata.annotations.pod-group-name",
                        "PodGroup \"%s\" is not in the input; the pod's queue comes from its "
                        "label instead",
                        pg);
    }
    n = tly_store_count(s, TLY_K_PODGROUP);
    for (uint32_t i = 0; i < n; i++) {
        const tly_podgroup *g = tly_store_at(s, TLY_K_PODGROUP, i);
        if (g->queue && *g->queue && tly_store_count(s, TLY_K_QUEUE) &&
            !tly_store_find(s, TLY_K_QUEUE, NULL, g->queue))
            ref_problem(d, full, &g->meta, NULL, "spec.queue",
                        "Queue \"%s\" is not in the input", g->queue);
        if (g->priority_class_name && *g->priority_class_name &&
            !tly_store_find(s, TLY_K_PRIORITY_CLASS, NULL, g->priority_class_name))
            ref_problem(d, full, &g->meta, NULL, "spec.priorityClassName",
                        "PriorityClass \"%s\" is not in the input", g->priority_class_name);
    }
}

static void check_runs(const tly_store *s, tly_diags *d, bool full)
{
    uint32_t n = tly_store_count(s, TLY_K_RUN);
    for (uint32_t i = 0; i < n; i++) {
        const tly_run *r = tly_store_at(s, TLY_K_RUN, i);
        if (r->runtime && *r->runtime &&
            !tly_store_find(s, TLY_K_RUNTIME, r->meta.ns, r->runtime)) {
            uint32_t npods;
            tly_store_runtime_pods(s, r->meta.ns, r->runtime, &npods);
            if (npods == 0)
                ref_problem(d, full, &r->meta, NULL, "spec.runtime",
                            "no Runtime \"%s\" and no Runtime Pods for it in the Run's namespace",
                            r->runtime);
        }
    }
}

/*
** Runtime Pods (a `runtime` label): their capacity annotations as the Run
** scheduler reads them, so that values it ignores and keys the API server
** rejects are warned about here too (read into scratch tables: the store
** is not changed).
*/
static void check_runtime_pods(const tly_store *s, tly_diags *d)
{
    tly_names *names = tly_names_create();
    tly_arena *a = tly_arena_create(4096);
    uint32_t n = tly_store_count(s, TLY_K_POD);
    for (uint32_t i = 0; i < n; i++) {
        const tly_pod *p = tly_store_at(s, TLY_K_POD, i);
        const char *rt = tly_kvs_get(&p->meta.labels, "runtime");
        if (!rt || !*rt)
            continue;
        tly_rlist cap;
        tly_runtime_pod_capacity(p, names, a, &cap, d);
    }
    tly_arena_destroy(a);
    tly_names_destroy(names);
}

static void check_classes(const tly_store *s, tly_diags *d)
{
    /* Kubernetes allows one globalDefault PriorityClass. */
    uint32_t n = tly_store_count(s, TLY_K_PRIORITY_CLASS);
    const tly_priority_class *first = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const tly_priority_class *c = tly_store_at(s, TLY_K_PRIORITY_CLASS, i);
        if (!c->global_default)
            continue;
        if (first)
            tly_diags_add(d, TLY_SEV_ERROR, c->meta.src.file, c->meta.src.line, c->meta.src.col,
                          "PriorityClass", c->meta.name, "globalDefault",
                          "only one PriorityClass may be the global default (\"%s\" already is)",
                          first->meta.name);
        else
            first = c;
    }
}

void tly_validate_store(const tly_store *s, tly_diags *d, bool full_state)
{
    check_queues(s, d, full_state);
    check_pods(s, d, full_state);
    check_runs(s, d, full_state);
    check_runtime_pods(s, d);
    check_classes(s, d);
}
