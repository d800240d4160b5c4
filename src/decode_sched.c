/*
** decode_sched.c: the small scheduling kinds.
**
**  - scheduling.k8s.io/v1 PriorityClass: value and globalDefault, which
**    decide a workload's priority and so its preemptibility (kai-facts 1.5);
**  - scheduling.run.ai/v2alpha2 PodGroup: the queue, gang size, priority
**    class and explicit preemptibility of a workload (kai-facts 1.4, 1.5);
**  - kai.scheduler/v1 Config: the switches that change tally's behaviour
**    (resize admission, GPU sharing, scheduler name, queue label, gating);
**  - v1 Namespace: only its metadata, which the loader has already read.
**
** Config switches are tri-states (-1 unset): "unset" keeps the documented
** default, which for some switches depends on another field (GPU sharing,
** contract section 2), so the decoder must not pick a default itself.
*/
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tally/decode.h"

/* The API server's ceiling for classes not named system-* (HighestUserDefinablePriority). */
#define USER_PRIORITY_MAX 1000000000

/* KAI's CRD enum: "" is not in it, so the API server rejects an empty preemptibility. */
static const char *const preemptibilities[] = {"preemptible", "non-preemptible", NULL};

/* A boolean into a tri-state: untouched (-1) when absent or malformed. */
static void tri(tly_dctx *dx, const tly_node *map, const char *key, int8_t *out)
{
    bool b;
    if (tly_dx_bool(dx, map, key, &b))
        *out = b ? 1 : 0;
}

/* ---- PriorityClass ------------------------------------------------------ */

void tly_decode_priority_class(tly_dctx *dx, const tly_node *obj, tly_priority_class *out)
{
    /* value and globalDefault sit at the top level, beside metadata. */
    if (!tly_node_member(obj, "value"))
        tly_dx_error(dx, obj, "value", "required field is missing");
    else if (tly_dx_int32(dx, obj, "value", &out->value) && out->value > USER_PRIORITY_MAX &&
             !(out->meta.name && strncmp(out->meta.name, "system-", 7) == 0))
        tly_dx_error(dx, tly_node_member(obj, "value"), "value",
                     "must be at most %d: higher values are reserved for system-* classes",
                     USER_PRIORITY_MAX);
    tly_dx_bool(dx, obj, "globalDefault", &out->global_default);
}

/* ---- PodGroup ----------------------------------------------------------- */

/* A count that must be >= 0 (minMember, minSubGroup); -1 when absent or bad. */
static int32_t min_count(tly_dctx *dx, const tly_node *map, const char *key)
{
    int32_t v;
    if (!tly_dx_int32(dx, map, key, &v))
        return -1;
    if (v < 0) {
        tly_dx_error(dx, tly_node_member(map, key), key, "must be greater than or equal to 0");
        return -1;
    }
    return v;
}

/* topologyConstraint.{requiredTopologyLevel,preferredTopologyLevel} ("" is unset). */
static void topology(tly_dctx *dx, const tly_node *map, const char **required, const char **preferred)
{
    const tly_node *tc = tly_dx_map(dx, map, "topologyConstraint");
    size_t mark = tly_dx_push(dx, "topologyConstraint");
    if (tly_dx_str(dx, tc, "requiredTopologyLevel", required) && !**required)
        *required = NULL;
    if (preferred && tly_dx_str(dx, tc, "preferredTopologyLevel", preferred) && !**preferred)
        *preferred = NULL;
    tly_dx_pop(dx, mark);
}

/* The index of the subgroup called name among the first n, or -1. */
static int32_t subgroup_index(const tly_subgroup *v, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i].name && strcmp(v[i].name, name) == 0)
            return (int32_t)i;
    return -1;
}

/*
** Links each subgroup to its parent and refuses a tree that cannot be
** evaluated: a duplicate name, an unknown parent, a cycle. (KAI's webhook
** refuses these too, so a real cluster cannot hold them.)
*/
static void link_subgroups(tly_dctx *dx, const tly_node *seq, tly_podgroup *out)
{
    for (uint32_t i = 0; i < out->nsubgroups; i++) {
        tly_subgroup *g = &out->subgroups[i];
        size_t m = tly_dx_push_idx(dx, i);
        const tly_node *it = tly_node_at(seq, i);
        if (subgroup_index(out->subgroups, i, g->name) >= 0)
            tly_dx_error(dx, tly_node_member(it, "name"), "name", "duplicate subgroup name %s", g->name);
        g->parent_idx = g->parent ? subgroup_index(out->subgroups, out->nsubgroups, g->parent) : -1;
        if (g->parent && g->parent_idx < 0)
            tly_dx_error(dx, tly_node_member(it, "parent"), "parent", "names no subgroup of this PodGroup: %s",
                         g->parent);
        tly_dx_pop(dx, m);
    }
    for (uint32_t i = 0; i < out->nsubgroups; i++) {
        int32_t at = out->subgroups[i].parent_idx;
        for (uint32_t steps = 0; at >= 0; steps++, at = out->subgroups[at].parent_idx) {
            if (steps > out->nsubgroups) {
                size_t m = tly_dx_push_idx(dx, i);
                tly_dx_error(dx, tly_node_at(seq, i), "parent", "the parents of subgroup %s form a cycle",
                             out->subgroups[i].name);
                tly_dx_pop(dx, m);
                out->subgroups[i].parent_idx = -1;
                break;
            }
        }
    }
}

/* spec.subGroups: name, parent, minMember, minSubGroup, topologyConstraint. */
static void subgroups(tly_dctx *dx, const tly_node *spec, tly_podgroup *out)
{
    const tly_node *seq = tly_dx_seq(dx, spec, "subGroups");
    if (!seq || seq->nkids == 0)
        return;
    out->subgroups = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *out->subgroups);
    size_t mark = tly_dx_push(dx, "subGroups");
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t m = tly_dx_push_idx(dx, i);
        tly_subgroup *g = &out->subgroups[i];
        if (tly_dx_req_str(dx, it, "name", &g->name) && !*g->name)
            tly_dx_error(dx, tly_node_member(it, "name"), "name", "must not be empty");
        if (tly_dx_str(dx, it, "parent", &g->parent) && !*g->parent)
            g->parent = NULL;
        g->min_member = min_count(dx, it, "minMember");
        g->min_subgroup = min_count(dx, it, "minSubGroup");
        topology(dx, it, &g->required_topology, NULL);
        tly_dx_pop(dx, m);
    }
    out->nsubgroups = i;
    link_subgroups(dx, seq, out);
    tly_dx_pop(dx, mark);
}

/*
** KAI's PodGroup webhook rules for minMember and minSubGroup (design
** min-subgroups, "Validation Rules"). No CRD states them, so they are
** checked here whatever CRDs the input holds. They say nothing of a
** negative count, already refused by min_count.
*/
#define EXCLUSIVE "minMember and minSubGroup are mutually exclusive: if minSubGroup is specified, " \
                  "minMember must be unset"

/* The number of direct children of subgroup parent (-1: of the PodGroup itself). */
static uint32_t children_of(const tly_podgroup *pg, int32_t parent)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < pg->nsubgroups; i++)
        n += pg->subgroups[i].parent_idx == parent;
    return n;
}

/* minSubGroup above the number of children: admitted with a webhook warning. */
static void min_subgroup_reachable(tly_dctx *dx, const tly_node *map, int32_t min, uint32_t children)
{
    if (min >= 0 && (uint32_t)min > children)
        tly_dx_warn(dx, tly_node_member(map, "minSubGroup"), "minSubGroup",
                    "%d exceeds the number of direct child SubGroups (%u), so it can never be "
                    "satisfied (KAI's webhook admits it with a warning)",
                    min, children);
}

static void subgroup_rules(tly_dctx *dx, const tly_node *it, const tly_podgroup *pg, uint32_t i)
{
    const tly_subgroup *g = &pg->subgroups[i];
    uint32_t children = children_of(pg, (int32_t)i);
    if (g->min_member >= 0 && g->min_subgroup >= 0)
        tly_dx_error(dx, tly_node_member(it, "minMember"), "minMember", EXCLUSIVE);
    else if (children && g->min_member >= 0)
        tly_dx_error(dx, tly_node_member(it, "minMember"), "minMember",
                     "a mid-level SubGroup (one with child SubGroups) cannot use minMember; it may "
                     "set minSubGroup or omit it to require all direct children");
    else if (!children && g->min_subgroup >= 0)
        tly_dx_error(dx, tly_node_member(it, "minSubGroup"), "minSubGroup",
                     "a leaf SubGroup (no child SubGroups) must use minMember, not minSubGroup");
    else
        min_subgroup_reachable(dx, it, g->min_subgroup, children);
}

static void podgroup_rules(tly_dctx *dx, const tly_node *spec, const tly_podgroup *pg)
{
    if (pg->min_member_set && pg->min_subgroup >= 0)
        tly_dx_error(dx, tly_node_member(spec, "minMember"), "minMember", EXCLUSIVE);
    else if (pg->min_subgroup >= 0 && pg->nsubgroups == 0)
        tly_dx_error(dx, tly_node_member(spec, "minSubGroup"), "minSubGroup",
                     "requires child SubGroups: the PodGroup defines no subGroups");
    else
        min_subgroup_reachable(dx, spec, pg->min_subgroup, children_of(pg, -1));
    const tly_node *seq = tly_node_get(spec, "subGroups");
    size_t mark = tly_dx_push(dx, "subGroups");
    for (uint32_t i = 0; i < pg->nsubgroups; i++) {
        size_t m = tly_dx_push_idx(dx, i);
        subgroup_rules(dx, tly_node_at(seq, i), pg, i);
        tly_dx_pop(dx, m);
    }
    tly_dx_pop(dx, mark);
}

void tly_decode_podgroup(tly_dctx *dx, const tly_node *obj, tly_podgroup *out)
{
    /* KAI's pod grouper treats an absent minMember as a gang of one. */
    out->min_member = 1;

    const tly_node *spec = tly_dx_map(dx, obj, "spec");
    size_t mark = tly_dx_push(dx, "spec");
    tly_dx_str(dx, spec, "queue", &out->queue);
    if (out->queue && !*out->queue)
        out->queue = NULL;  /* "" names no queue: the pod falls back to its label */

    int32_t mm;
    if (tly_dx_int32(dx, spec, "minMember", &mm)) {
        if (mm < 0)
            tly_dx_error(dx, tly_node_member(spec, "minMember"), "minMember",
                         "must be greater than or equal to 0");
        else {
            out->min_member = mm;
            out->min_member_set = true;
        }
    }
    out->min_subgroup = min_count(dx, spec, "minSubGroup");
    topology(dx, spec, &out->required_topology, &out->preferred_topology);
    subgroups(dx, spec, out);
    podgroup_rules(dx, spec, out);

    tly_dx_str(dx, spec, "priorityClassName", &out->priority_class_name);
    if (out->priority_class_name && !*out->priority_class_name)
        out->priority_class_name = NULL;

    const char *p = NULL;
    if (tly_dx_enum(dx, spec, "preemptibility", preemptibilities, &p)) {
        if (strcmp(p, "preemptible") == 0)
            out->preemptibility = TLY_PREEMPT_PREEMPTIBLE;
        else if (strcmp(p, "non-preemptible") == 0)
            out->preemptibility = TLY_PREEMPT_NON_PREEMPTIBLE;
    }
    tly_dx_pop(dx, mark);
}

/* ---- Config ------------------------------------------------------------- */

/*
** A name-like setting: an empty string would make tally match nothing (no
** pod has scheduler "" or a queue label ""), so it is treated as unset and
** the person is told.
*/
static void config_name(tly_dctx *dx, const tly_node *map, const char *key, const char **out,
                        const char *dflt)
{
    if (tly_dx_str(dx, map, key, out) && !**out) {
        tly_dx_warn(dx, tly_node_member(map, key), key, "is empty; the default %s is used", dflt);
        *out = NULL;
    }
}

void tly_decode_config(tly_dctx *dx, const tly_node *obj, tly_config *out)
{
    out->validate_quota = -1;
    out->block_upsize = -1;
    out->gpu_sharing = -1;
    out->gating_enabled = -1;

    const tly_node *spec = tly_dx_map(dx, obj, "spec");
    size_t m0 = tly_dx_push(dx, "spec");

    const tly_node *adm = tly_dx_map(dx, spec, "admission");
    size_t m1 = tly_dx_push(dx, "admission");
    const tly_node *resize = tly_dx_map(dx, adm, "inPlacePodResize");
    size_t m2 = tly_dx_push(dx, "inPlacePodResize");
    tri(dx, resize, "validateQuota", &out->validate_quota);
    tri(dx, resize, "blockUpsizeOnBoundedQueues", &out->block_upsize);
    tly_dx_pop(dx, m2);
    tri(dx, adm, "gpuSharing", &out->gpu_sharing);
    tly_dx_pop(dx, m1);

    const tly_node *global = tly_dx_map(dx, spec, "global");
    m1 = tly_dx_push(dx, "global");
    /* Any mode is kept: only "Disabled" changes what tally does, and KAI
       has grown new modes over time (contract section 2). */
    tly_dx_str(dx, global, "gpuSharingMode", &out->gpu_sharing_mode);
    if (out->gpu_sharing_mode && !*out->gpu_sharing_mode)
        out->gpu_sharing_mode = NULL;
    config_name(dx, global, "schedulerName", &out->scheduler_name, "kai-scheduler");
    config_name(dx, global, "queueLabelKey", &out->queue_label_key, "kai.scheduler/queue");
    const tly_node *gating = tly_dx_map(dx, global, "queueAdmissionGating");
    m2 = tly_dx_push(dx, "queueAdmissionGating");
    tri(dx, gating, "enabled", &out->gating_enabled);
    tly_dx_pop(dx, m2);
    tly_dx_pop(dx, m1);

    tly_dx_pop(dx, m0);
}

/* ---- Namespace ---------------------------------------------------------- */

void tly_decode_namespace(tly_dctx *dx, const tly_node *obj, tly_namespace *out)
{
    /* Only the name matters, and the loader has read the metadata. */
    (void)dx;
    (void)obj;
    (void)out;
}
