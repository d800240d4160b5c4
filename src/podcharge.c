/*
** podcharge.c: the queue charge of a bound pod (podcharge.h).
*/
#include "tally/podcharge.h"

#include <string.h>

#include "tally/accounted.h"
#include "tally/nodefit.h"
#include "tally/podreq.h"

#define DEFAULT_PRIORITY 50
#define NON_PREEMPTIBLE_PRIORITY 100

bool tly_pod_terminal(const tly_pod *p)
{
    return p->phase && (!strcmp(p->phase, "Succeeded") || !strcmp(p->phase, "Failed"));
}

bool tly_pod_charges_queues(const tly_store *s, const tly_pod *p)
{
    return p->node_name && *p->node_name && !tly_pod_terminal(p) && tly_store_is_tally_pod(s, p);
}

bool tly_gpu_sharing_enabled(const tly_config *c)
{
    if (!c)
        return true;
    if (c->gpu_sharing_mode && *c->gpu_sharing_mode)
        return strcmp(c->gpu_sharing_mode, "Disabled") != 0;
    return c->gpu_sharing != 0;
}

static bool class_value(const tly_store *s, const char *name, int32_t *v)
{
    const tly_priority_class *pc =
        name && *name ? tly_store_find(s, TLY_K_PRIORITY_CLASS, NULL, name) : NULL;
    if (pc)
        *v = pc->value;
    return pc != NULL;
}

/*
** KAI's priority: the first of the PodGroup's spec.priorityClassName, the
** label priorityClassName of the PodGroup, that label on the pod, and the
** pod's spec.priorityClassName that names a class in the input; else the
** globalDefault class; else 50 (contract section 2).
*/
int32_t tly_pod_priority(const tly_store *s, const tly_pod *p, const tly_podgroup *pg)
{
    static const char label[] = "priorityClassName";
    int32_t v;
    if (pg && class_value(s, pg->priority_class_name, &v))
        return v;
    if (pg && class_value(s, tly_kvs_get(&pg->meta.labels, label), &v))
        return v;
    if (class_value(s, tly_kvs_get(&p->meta.labels, label), &v))
        return v;
    if (class_value(s, p->priority_class_name, &v))
        return v;
    for (uint32_t i = 0; i < tly_store_count(s, TLY_K_PRIORITY_CLASS); i++) {
        const tly_priority_class *pc = tly_store_at(s, TLY_K_PRIORITY_CLASS, i);
        if (pc->global_default)
            return pc->value;
    }
    return DEFAULT_PRIORITY;
}

/* The label kai.scheduler/preemptibility as a tly_preemptibility (UNSET for other values). */
static int label_preemptibility(const tly_kvs *labels)
{
    const char *v = tly_kvs_get(labels, "kai.scheduler/preemptibility");
    if (v && strcmp(v, "preemptible") == 0)
        return TLY_PREEMPT_PREEMPTIBLE;
    if (v && strcmp(v, "non-preemptible") == 0)
        return TLY_PREEMPT_NON_PREEMPTIBLE;
    return TLY_PREEMPT_UNSET;
}

/*
** PodGroup spec.preemptibility, else the label kai.scheduler/preemptibility
** of the PodGroup, else of the pod, else priority >= 100.
*/
bool tly_pod_non_preemptible(const tly_store *s, const tly_pod *p, const tly_podgroup *pg)
{
    return tly_pod_non_preemptible_at(p, pg, tly_pod_priority(s, p, pg));
}

/*
** tly_pod_non_preemptible with the pod's priority already known (the pod
** engine has it): the PriorityClass is not looked up a second time.
*/
bool tly_pod_non_preemptible_at(const tly_pod *p, const tly_podgroup *pg, int32_t priority)
{
    int e = pg ? pg->preemptibility : TLY_PREEMPT_UNSET;
    if (e == TLY_PREEMPT_UNSET && pg)
        e = label_preemptibility(&pg->meta.labels);
    if (e == TLY_PREEMPT_UNSET)
        e = label_preemptibility(&p->meta.labels);
    if (e != TLY_PREEMPT_UNSET)
        return e == TLY_PREEMPT_NON_PREEMPTIBLE;
    return priority >= NON_PREEMPTIBLE_PRIORITY;
}

static bool is_gpu_id(uint32_t id) { return id == TLY_R_NVIDIA_GPU || id == TLY_R_AMD_GPU; }

void tly_pod_charge_compute(tly_store *s, const tly_queues *qs, const tly_pod *p,
                            const tly_k8s_node *n, uint64_t max_gpu_mem_mib, tly_arena *a,
                            tly_pod_charge *out)
{
    memset(out, 0, sizeof *out);
    const tly_podgroup *pg;
    out->queue = tly_store_pod_queue(s, p, &pg);
    out->non_preemptible = tly_pod_non_preemptible(s, p, pg);
    tly_podreq r;
    tly_podreq_compute(p, tly_gpu_sharing_enabled(tly_store_config(s)), tly_store_names(s), a, &r);
    uint64_t mem = n ? tly_node_gpu_memory_mib(n) : max_gpu_mem_mib;
    uint64_t h = tly_podreq_gpu_hundredths(&r, mem);
    out->res[TLY_QR_CPU] = tly_rlist_get(&r.req, TLY_R_CPU, NULL);
    out->res[TLY_QR_MEMORY] = tly_rlist_get(&r.req, TLY_R_MEMORY, NULL);
    out->res[TLY_QR_GPU] = tly_hundredths_qty(h);
    out->all.v = tly_arena_alloc(a, (r.req.n + 2) * sizeof *out->all.v);
    for (uint32_t i = 0; i < r.req.n; i++) {
        uint32_t id = r.req.v[i].id;
        if (id != TLY_R_PODS && !is_gpu_id(id))
            out->all.v[out->all.n++] = r.req.v[i];
    }
    if (h > 0)
        tly_rlist_set(&out->all, a, r.gpu_resource, out->res[TLY_QR_GPU]);
    uint32_t nacc = qs ? tly_queues_naccres(qs) : 0;
    if (!nacc)
        return;
    tly_qty *dense = tly_arena_zalloc(a, nacc * sizeof *dense);
    if (n)
        tly_accounted_charges(qs, p, &r, n, mem, dense, &out->problem, a);
    else
        tly_accounted_charges_job(qs, p, &r, mem, NULL, 0, dense, a);
    out->acc = tly_arena_alloc(a, nacc * sizeof *out->acc);
    for (uint32_t k = 0; k < nacc; k++)
        if (!tly_qty_is_zero(dense[k]))
            out->acc[out->nacc++] = (tly_acc_charge){k, dense[k]};
}
