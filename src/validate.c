/*
** validate.c: cross-object rules (validate.h). Each rule points at the
** referring field: the problem is where the reference is written, not at
** the object that is missing.
*/
#include "tally/validate.h"

#include <stdio.h>
#include <string.h>

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

static void check_pods(const tly_store *s, tly_diags *d, bool full)
{
    uint32_t n = tly_store_count(s, TLY_K_POD);
    for (uint32_t i = 0; i < n; i++) {
        const tly_pod *p = tly_store_at(s, TLY_K_POD, i);
        if (p->priority_class_name && *p->priority_class_name &&
            !tly_store_find(s, TLY_K_PRIORITY_CLASS, NULL, p->priority_class_name))
            ref_problem(d, full, &p->meta, NULL, "spec.priorityClassName",
                        "PriorityClass \"%s\" is not in the input", p->priority_class_name);
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
    check_classes(s, d);
}
