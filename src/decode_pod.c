/*
** decode_pod.c: v1 Pod into tly_pod.
**
** Reads everything the placement engine, the resize webhook and the
** accounting need from a pod (contract section 2): the containers and init
** containers with their resources (a restartPolicy: Always init container is
** a native sidecar), overhead, pod-level resources, the node constraints
** (nodeName, nodeSelector, required node affinity, tolerations) and markers
** for the constraints tally does not evaluate (required pod affinity,
** DoNotSchedule topology spread), scheduling gates, resource claims, and the
** status: phase, conditions, container statuses with their actuated and
** allocated resources, start time.
**
** Two things the API server does to every pod are done here as well, so
** that a hand-written manifest means what it would mean in a cluster:
**  - defaulting: schedulerName "default-scheduler", tolerations' operator
**    "Equal", and requests copied from limits where only the limit is set
**    (a GPU pod usually writes only `limits: {nvidia.com/gpu: 1}`);
**  - validation of the resource rules (names, signs, integers, request vs
**    limit), with the API server's wording where it has one.
** Problems are recorded and decoding goes on; a pod with errors is still
** returned with everything that could be read.
*/
#include <stdbool.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tally/decode.h"

static const char *const pod_phases[] = {"Pending", "Running", "Succeeded", "Failed", "Unknown",
                                         NULL};
static const char *const toleration_ops[] = {"Exists", "Equal", NULL};
static const char *const toleration_effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute",
                                                 "", NULL};
static const char *const unsatisfiable_actions[] = {"DoNotSchedule", "ScheduleAnyway", NULL};

/* ---- small helpers ------------------------------------------------------ */

/* List items must be maps; anything else is reported once and skipped. */
static bool item_is_map(tly_dctx *dx, const tly_node *item)
{
    if (item->type == TLY_N_MAP)
        return true;
    tly_dx_error(dx, item, NULL, "expected a map, got %s", tly_ntype_name(item->type));
    return false;
}

/* An array for every item of seq, or NULL for an empty list. */
static void *alloc_items(tly_dctx *dx, const tly_node *seq, size_t size)
{
    if (!seq || seq->nkids == 0)
        return NULL;
    return tly_arena_zalloc(dx->arena, (size_t)seq->nkids * size);
}

/* ---- resource names (k8s.io/kubernetes pkg/apis/core/helper) ------------ */

static bool is_hugepages(const char *name)
{
    return strncmp(name, "hugepages-", 10) == 0;
}

/* Native: no domain, or a domain under kubernetes.io. */
static bool is_native(const char *name)
{
    return strchr(name, '/') == NULL || strstr(name, "kubernetes.io/") != NULL;
}

/* Extended resources (nvidia.com/gpu, vpc.amazonaws.com/efa) are device counts. */
static bool is_extended(const char *name)
{
    return !is_native(name) && strncmp(name, "requests.", 9) != 0;
}

/*
** Whether a request may be below its limit. Devices and hugepages cannot be
** overcommitted, so for them the API server wants request == limit and a
** limit whenever there is a request.
*/
static bool overcommit_allowed(const char *name)
{
    return is_native(name) && !is_hugepages(name);
}

static bool is_standard_container_resource(const char *name)
{
    return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
           strcmp(name, "ephemeral-storage") == 0 || is_hugepages(name);
}

/* What pod-level spec.resources may name (component-helpers IsSupportedPodLevelResource). */
static bool is_pod_level_resource(const char *name)
{
    return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 || is_hugepages(name);
}

/* ---- resource lists ----------------------------------------------------- */

enum { RL_CONTAINER = 1, RL_POD_LEVEL = 2 };

/*
** What the rules below ask of a resource's name, by id for the fixed names
** (no string work for cpu, memory or a GPU, nearly every entry of every
** pod), by name for the rest.
*/
typedef struct {
    bool container_ok;  /* allowed in a container's resources */
    bool pod_level_ok;  /* allowed in pod-level spec.resources */
    bool extended;      /* a device count: whole numbers only */
    bool overcommit;    /* a request may be below its limit */
} rname_rules;

static rname_rules rules_of(const tly_names *names, uint32_t id)
{
    switch (id) {
    case TLY_R_CPU:
    case TLY_R_MEMORY: return (rname_rules){true, true, false, true};
    case TLY_R_EPHEMERAL_STORAGE: return (rname_rules){true, false, false, true};
    case TLY_R_NVIDIA_GPU:
    case TLY_R_AMD_GPU: return (rname_rules){true, false, true, false};
    default: break;
    }
    const char *name = tly_names_str(names, id);
    return (rname_rules){strchr(name, '/') || is_standard_container_resource(name), is_pod_level_resource(name),
                         is_extended(name), overcommit_allowed(name)};
}

/* An error at owner.key.name (the value there, for its position). */
static void rl_error(tly_dctx *dx, const tly_node *owner, const char *key, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 5, 6), cold, noinline));

static void rl_error(tly_dctx *dx, const tly_node *owner, const char *key, const char *name, const char *fmt, ...)
{
    size_t mark = tly_dx_push(dx, key);
    char msg[4096];  /* a message names the resource twice at most: names are under 320 bytes */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tly_dx_error(dx, tly_node_get(tly_node_member(owner, key), name), name, "%s", msg);
    tly_dx_pop(dx, mark);
}

/*
** Checks each value of the list owner.key (already decoded into l): names
** allowed where it appears, no negative amounts, whole numbers of devices.
** Diagnostics point at the value, with the path ...<key>.<resource>; the
** value is looked up only for a diagnostic.
*/
static void check_rlist_values(tly_dctx *dx, const tly_node *owner, const char *key,
                               const tly_rlist *l, int where)
{
    for (uint32_t i = 0; i < l->n; i++) {
        rname_rules r = rules_of(dx->names, l->v[i].id);
        tly_qty q = l->v[i].q;
        bool negative = tly_qty_sign(q) < 0, fraction = !negative && r.extended && q.nanos % 1000000000 != 0;
        if (!(where == RL_CONTAINER && !r.container_ok) && !(where == RL_POD_LEVEL && !r.pod_level_ok) &&
            !negative && !fraction)
            continue;
        const char *name = tly_names_str(dx->names, l->v[i].id);
        if (where == RL_CONTAINER && !r.container_ok)
            rl_error(dx, owner, key, name,
                     "must be a standard resource for containers (cpu, memory, "
                     "ephemeral-storage, hugepages-<size>) or a domain-prefixed extended "
                     "resource such as nvidia.com/gpu");
        if (where == RL_POD_LEVEL && !r.pod_level_ok)
            rl_error(dx, owner, key, name,
                     "not supported in pod-level resources: must be cpu, memory or "
                     "hugepages-<size>");
        if (negative)
            rl_error(dx, owner, key, name, "must be greater than or equal to 0");
        else if (fraction)
            rl_error(dx, owner, key, name, "must be an integer");
    }
}

/*
** The API server's request-vs-limit rules for one resources map (container
** or pod level): a request may not exceed its limit; for resources that
** cannot be overcommitted it must equal the limit, and must have one.
*/
static void check_requests_vs_limits(tly_dctx *dx, const tly_node *res, const tly_rlist *req,
                                     const tly_rlist *lim)
{
    for (uint32_t i = 0; i < req->n; i++) {
        bool has_limit = false;
        tly_qty l = tly_rlist_get(lim, req->v[i].id, &has_limit);
        bool overcommit = rules_of(dx->names, req->v[i].id).overcommit;
        if (!has_limit) {
            const char *name = tly_names_str(dx->names, req->v[i].id);
            if (!overcommit)
                rl_error(dx, res, "requests", name,
                         "limit must be set for non-overcommittable resource %s (set only "
                         "limits.%s; the request defaults to it)",
                         name, name);
            continue;
        }
        int c = tly_qty_cmp(req->v[i].q, l);
        if (c == 0 || (c < 0 && overcommit))
            continue;
        const char *name = tly_names_str(dx->names, req->v[i].id);
        char buf[TLY_QTY_BUFSZ];
        tly_qty_format(l, buf, sizeof buf);
        rl_error(dx, res, "requests", name,
                 !overcommit ? "must be equal to %s limit of %s" : "must be less than or equal to %s limit of %s",
                 name, buf);
    }
}

/* API server defaulting (SetDefaults_Pod): a limit without a request sets the request. */
static void default_requests_from_limits(tly_dctx *dx, tly_rlist *req, const tly_rlist *lim)
{
    for (uint32_t i = 0; i < lim->n; i++) {
        bool found = false;
        tly_rlist_get(req, lim->v[i].id, &found);
        if (!found)
            tly_rlist_set(req, dx->arena, lim->v[i].id, lim->v[i].q);
    }
}

/*
** owner.resources of a container: requests and limits, validated, then
** defaulted (validation first: the API server validates what was written).
*/
static void decode_container_resources(tly_dctx *dx, const tly_node *owner, tly_rlist *req,
                                       tly_rlist *lim)
{
    const tly_node *res = tly_dx_map(dx, owner, "resources");
    if (!res)
        return;
    size_t mark = tly_dx_push(dx, "resources");
    tly_dx_rlist(dx, res, "requests", req);
    tly_dx_rlist(dx, res, "limits", lim);
    check_rlist_values(dx, res, "requests", req, RL_CONTAINER);
    check_rlist_values(dx, res, "limits", lim, RL_CONTAINER);
    check_requests_vs_limits(dx, res, req, lim);
    default_requests_from_limits(dx, req, lim);
    tly_dx_pop(dx, mark);
}

/* ---- containers --------------------------------------------------------- */

static bool decode_container(tly_dctx *dx, const tly_node *item, bool init, tly_container *c)
{
    if (!item_is_map(dx, item))
        return false;
    tly_dx_req_str(dx, item, "name", &c->name);
    decode_container_resources(dx, item, &c->requests, &c->limits);
    if (init) {
        /* "Always" makes an init container a sidecar that keeps running
           next to the app containers (KEP-753), which changes the pod's
           effective request; no other value is allowed on an init container. */
        const char *rp = NULL;
        if (tly_dx_str(dx, item, "restartPolicy", &rp)) {
            if (strcmp(rp, "Always") == 0)
                c->restart_always = true;
            else
                tly_dx_error(dx, tly_node_member(item, "restartPolicy"), "restartPolicy",
                             "\"%s\" is not allowed: an init container's restartPolicy must be "
                             "Always (a sidecar) or unset",
                             rp);
        }
    }
    /* A container without a name is still kept: its resources count. */
    if (!c->name)
        c->name = "";
    return true;
}

static void decode_containers(tly_dctx *dx, const tly_node *spec, const char *key, bool init,
                              tly_container **arr, uint32_t *n)
{
    const tly_node *seq = tly_dx_seq(dx, spec, key);
    if (!seq)
        return;
    *arr = alloc_items(dx, seq, sizeof **arr);
    size_t mark = tly_dx_push(dx, key);
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t m = tly_dx_push_idx(dx, i);
        if (decode_container(dx, it, init, &(*arr)[*n]))
            (*n)++;
        tly_dx_pop(dx, m);
    }
    tly_dx_pop(dx, mark);
}

/* Whether an entry of seq before `upto` (or any, when upto is NULL) is named name. */
static bool name_used(const tly_node *seq, const tly_node *upto, const char *name)
{
    if (!seq || seq->type != TLY_N_SEQ)
        return false;
    for (const tly_node *p = seq->kids; p && p != upto; p = p->next) {
        const tly_node *pn = tly_node_member(p, "name");
        if (pn && pn->type == TLY_N_STRING && strcmp(pn->str, name) == 0)
            return true;
    }
    return false;
}

/*
** Container names must be unique across app and init containers: the
** kubelet and the container statuses identify containers by name. Each
** repeat is reported at the later occurrence (init containers come first).
*/
static void check_unique_names(tly_dctx *dx, const tly_node *spec)
{
    const tly_node *init = tly_node_member(spec, "initContainers");
    const tly_node *app = tly_node_member(spec, "containers");
    const char *keys[2] = {"initContainers", "containers"};
    const tly_node *seqs[2] = {init, app};
    for (int s = 0; s < 2; s++) {
        if (!seqs[s] || seqs[s]->type != TLY_N_SEQ)
            continue;
        uint32_t i = 0;
        for (const tly_node *it = seqs[s]->kids; it; it = it->next, i++) {
            const tly_node *nm = tly_node_member(it, "name");
            if (!nm || nm->type != TLY_N_STRING)
                continue;
            if (!name_used(seqs[s], it, nm->str) && !(s == 1 && name_used(init, NULL, nm->str)))
                continue;
            size_t mark = tly_dx_push(dx, keys[s]);
            tly_dx_push_idx(dx, i);
            tly_dx_error(dx, nm, "name",
                         "duplicate container name \"%s\": names must be unique across "
                         "containers and initContainers",
                         nm->str);
            tly_dx_pop(dx, mark);
        }
    }
}

/* ---- scheduling constraints --------------------------------------------- */

static void decode_node_affinity(tly_dctx *dx, const tly_node *aff, tly_pod *out)
{
    const tly_node *na = tly_dx_map(dx, aff, "nodeAffinity");
    if (!na)
        return;
    size_t mark = tly_dx_push(dx, "nodeAffinity");
    const tly_node *req = tly_dx_map(dx, na, "requiredDuringSchedulingIgnoredDuringExecution");
    if (req) {
        size_t m1 = tly_dx_push(dx, "requiredDuringSchedulingIgnoredDuringExecution");
        const tly_node *terms = tly_dx_seq(dx, req, "nodeSelectorTerms");
        if (!tly_node_member(req, "nodeSelectorTerms") || (terms && terms->nkids == 0))
            tly_dx_error(dx, terms ? terms : req, "nodeSelectorTerms",
                         "must have at least one node selector term");
        if (terms && terms->nkids > 0) {
            out->node_affinity_required = alloc_items(dx, terms, sizeof(tly_selector));
            size_t m2 = tly_dx_push(dx, "nodeSelectorTerms");
            uint32_t i = 0;
            for (const tly_node *it = terms->kids; it; it = it->next, i++) {
                size_t m3 = tly_dx_push_idx(dx, i);
                tly_selector *sel = &out->node_affinity_required[out->nnode_affinity_required];
                if (tly_dx_node_selector_term(dx, it, sel))
                    out->nnode_affinity_required++;
                tly_dx_pop(dx, m3);
            }
            tly_dx_pop(dx, m2);
        }
        tly_dx_pop(dx, m1);
    }
    tly_dx_pop(dx, mark);
}

/* Whether aff.key has required terms (podAffinity / podAntiAffinity). */
static bool has_required_pod_terms(tly_dctx *dx, const tly_node *aff, const char *key)
{
    const tly_node *pa = tly_dx_map(dx, aff, key);
    if (!pa)
        return false;
    size_t mark = tly_dx_push(dx, key);
    const tly_node *req = tly_dx_seq(dx, pa, "requiredDuringSchedulingIgnoredDuringExecution");
    tly_dx_pop(dx, mark);
    return req && req->nkids > 0;
}

static void decode_affinity(tly_dctx *dx, const tly_node *spec, tly_pod *out)
{
    const tly_node *aff = tly_dx_map(dx, spec, "affinity");
    if (!aff)
        return;
    size_t mark = tly_dx_push(dx, "affinity");
    decode_node_affinity(dx, aff, out);
    bool pa = has_required_pod_terms(dx, aff, "podAffinity");
    bool anti = has_required_pod_terms(dx, aff, "podAntiAffinity");
    out->has_pod_affinity = pa || anti;
    tly_dx_pop(dx, mark);
}

/*
** A constraint whose whenUnsatisfiable is DoNotSchedule (the API default
** when omitted) is a hard filter tally does not evaluate; ScheduleAnyway
** only scores, so it can be ignored.
*/
static void decode_topology_spread(tly_dctx *dx, const tly_node *spec, tly_pod *out)
{
    const tly_node *seq = tly_dx_seq(dx, spec, "topologySpreadConstraints");
    if (!seq)
        return;
    size_t mark = tly_dx_push(dx, "topologySpreadConstraints");
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t m = tly_dx_push_idx(dx, i);
        if (item_is_map(dx, it)) {
            const char *when = NULL;
            if (!tly_node_member(it, "whenUnsatisfiable"))
                out->has_topology_spread = true;
            else if (tly_dx_enum(dx, it, "whenUnsatisfiable", unsatisfiable_actions, &when) &&
                     strcmp(when, "DoNotSchedule") == 0)
                out->has_topology_spread = true;
        }
        tly_dx_pop(dx, m);
    }
    tly_dx_pop(dx, mark);
}

/*
** tolerations[i]. Empty key, value and effect are stored as NULL (they mean
** "any key", "no value", "every effect"); an omitted operator is "Equal",
** the API default.
*/
static bool decode_toleration(tly_dctx *dx, const tly_node *item, tly_toleration *t)
{
    if (!item_is_map(dx, item))
        return false;
    bool ok = true;
    tly_dx_shared_str(dx, item, "key", &t->key);
    tly_dx_shared_str(dx, item, "value", &t->value);
    if (!tly_node_member(item, "operator"))
        t->op = "Equal";
    else if (!tly_dx_enum(dx, item, "operator", toleration_ops, &t->op))
        ok = false;
    if (tly_node_member(item, "effect") &&
        !tly_dx_enum(dx, item, "effect", toleration_effects, &t->effect))
        ok = false;
    if (t->key && !*t->key)
        t->key = NULL;
    if (t->value && !*t->value)
        t->value = NULL;
    if (t->effect && !*t->effect)
        t->effect = NULL;
    if (!ok)
        return false;
    if (!t->key && strcmp(t->op, "Exists") != 0) {
        const tly_node *op = tly_node_member(item, "operator");
        tly_dx_error(dx, op ? op : item, "operator",
                     "must be Exists when key is empty (a toleration that matches every taint)");
        return false;
    }
    if (t->value && strcmp(t->op, "Exists") == 0) {
        tly_dx_error(dx, tly_node_member(item, "value"), "value", "must be empty when operator is Exists");
        return false;
    }
    return true;
}

static void decode_tolerations(tly_dctx *dx, const tly_node *spec, tly_pod *out)
{
    const tly_node *seq = tly_dx_seq(dx, spec, "tolerations");
    if (!seq)
        return;
    out->tolerations = alloc_items(dx, seq, sizeof *out->tolerations);
    size_t mark = tly_dx_push(dx, "tolerations");
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t m = tly_dx_push_idx(dx, i);
        tly_toleration *t = &out->tolerations[out->ntolerations];
        if (decode_toleration(dx, it, t))
            out->ntolerations++;
        else
            memset(t, 0, sizeof *t);
        tly_dx_pop(dx, m);
    }
    tly_dx_pop(dx, mark);
}

static void decode_gates(tly_dctx *dx, const tly_node *spec, tly_pod *out)
{
    const tly_node *seq = tly_dx_seq(dx, spec, "schedulingGates");
    if (!seq)
        return;
    out->gates = alloc_items(dx, seq, sizeof *out->gates);
    size_t mark = tly_dx_push(dx, "schedulingGates");
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t m = tly_dx_push_idx(dx, i);
        const char *name = NULL;
        if (item_is_map(dx, it) && tly_dx_req_str(dx, it, "name", &name))
            out->gates[out->ngates++] = name;
        tly_dx_pop(dx, m);
    }
    tly_dx_pop(dx, mark);
}

/* resourceClaims[i]: a name and exactly one source. */
static bool decode_claim(tly_dctx *dx, const tly_node *item, tly_pod_claim *c)
{
    if (!item_is_map(dx, item))
        return false;
    bool ok = tly_dx_req_str(dx, item, "name", &c->name);
    bool has_claim = tly_dx_str(dx, item, "resourceClaimName", &c->claim_name);
    bool has_tmpl = tly_dx_str(dx, item, "resourceClaimTemplateName", &c->template_name);
    if (has_claim && has_tmpl) {
        tly_dx_error(dx, tly_node_member(item, "resourceClaimTemplateName"), "resourceClaimTemplateName",
                     "must not be set together with resourceClaimName: exactly one of them is "
                     "required");
        ok = false;
    } else if (!has_claim && !has_tmpl && !tly_node_member(item, "resourceClaimName") &&
               !tly_node_member(item, "resourceClaimTemplateName")) {
        tly_dx_error(dx, item, NULL,
                     "must set exactly one of resourceClaimName or resourceClaimTemplateName");
        ok = false;
    }
    return ok && (has_claim || has_tmpl);
}

static void decode_claims(tly_dctx *dx, const tly_node *spec, tly_pod *out)
{
    const tly_node *seq = tly_dx_seq(dx, spec, "resourceClaims");
    if (!seq)
        return;
    out->claims = alloc_items(dx, seq, sizeof *out->claims);
    size_t mark = tly_dx_push(dx, "resourceClaims");
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t m = tly_dx_push_idx(dx, i);
        tly_pod_claim *c = &out->claims[out->nclaims];
        if (decode_claim(dx, it, c))
            out->nclaims++;
        else
            memset(c, 0, sizeof *c);
        tly_dx_pop(dx, m);
    }
    tly_dx_pop(dx, mark);
}

/* ---- pod-level resources ------------------------------------------------ */

/* Whether any container or init container requests resource id. */
static bool containers_request(const tly_pod *p, uint32_t id)
{
    bool found = false;
    for (uint32_t i = 0; i < p->ncontainers && !found; i++)
        tly_rlist_get(&p->containers[i].requests, id, &found);
    for (uint32_t i = 0; i < p->ninit && !found; i++)
        tly_rlist_get(&p->init_containers[i].requests, id, &found);
    return found;
}

/*
** spec.resources (pod-level, KEP-2837). Called after the containers, since
** its defaulting depends on them: a pod-level limit without a pod-level
** request sets the request when no container requests that resource (and
** always for hugepages). Where containers do request it, the API server
** defaults the pod-level request to their aggregate, which is exactly what
** the effective-request computation uses when the pod-level request is
** absent, so it is left absent here.
*/
static void decode_pod_resources(tly_dctx *dx, const tly_node *spec, tly_pod *out)
{
    const tly_node *res = tly_dx_map(dx, spec, "resources");
    if (!res)
        return;
    out->has_pod_resources = true;
    size_t mark = tly_dx_push(dx, "resources");
    tly_dx_rlist(dx, res, "requests", &out->pod_requests);
    tly_dx_rlist(dx, res, "limits", &out->pod_limits);
    check_rlist_values(dx, res, "requests", &out->pod_requests, RL_POD_LEVEL);
    check_rlist_values(dx, res, "limits", &out->pod_limits, RL_POD_LEVEL);
    check_requests_vs_limits(dx, res, &out->pod_requests, &out->pod_limits);
    for (uint32_t i = 0; i < out->pod_limits.n; i++) {
        const tly_rq *l = &out->pod_limits.v[i];
        const char *name = tly_names_str(dx->names, l->id);
        bool found = false;
        tly_rlist_get(&out->pod_requests, l->id, &found);
        if (found || !is_pod_level_resource(name))
            continue;
        if (is_hugepages(name) || !containers_request(out, l->id))
            tly_rlist_set(&out->pod_requests, dx->arena, l->id, l->q);
    }
    tly_dx_pop(dx, mark);
}

/* ---- status ------------------------------------------------------------- */

static bool decode_container_status(tly_dctx *dx, const tly_node *item, tly_container_status *st)
{
    if (!item_is_map(dx, item))
        return false;
    tly_dx_req_str(dx, item, "name", &st->name);
    if (!st->name)
        st->name = "";
    const tly_node *res = tly_dx_map(dx, item, "resources");
    if (res) {
        size_t mark = tly_dx_push(dx, "resources");
        /* Only requests decide has_resources: that is the nil check the
           effective-request rules make (k8s-pod-requests.md, "actuated"). */
        st->has_resources = tly_dx_rlist(dx, res, "requests", &st->requests);
        tly_dx_rlist(dx, res, "limits", &st->limits);
        tly_dx_pop(dx, mark);
    }
    st->has_allocated = tly_dx_rlist(dx, item, "allocatedResources", &st->allocated);
    return true;
}

static void decode_statuses(tly_dctx *dx, const tly_node *status, const char *key,
                            tly_container_status **arr, uint32_t *n)
{
    const tly_node *seq = tly_dx_seq(dx, status, key);
    if (!seq)
        return;
    *arr = alloc_items(dx, seq, sizeof **arr);
    size_t mark = tly_dx_push(dx, key);
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t m = tly_dx_push_idx(dx, i);
        if (decode_container_status(dx, it, &(*arr)[*n]))
            (*n)++;
        tly_dx_pop(dx, m);
    }
    tly_dx_pop(dx, mark);
}

static void decode_status(tly_dctx *dx, const tly_node *obj, tly_pod *out)
{
    const tly_node *status = tly_dx_map(dx, obj, "status");
    if (!status)
        return;
    size_t mark = tly_dx_push(dx, "status");
    tly_dx_enum(dx, status, "phase", pod_phases, &out->phase);
    tly_dx_conditions(dx, status, "conditions", &out->conditions);
    decode_statuses(dx, status, "containerStatuses", &out->statuses, &out->nstatuses);
    decode_statuses(dx, status, "initContainerStatuses", &out->init_statuses,
                    &out->ninit_statuses);
    tly_dx_time(dx, status, "startTime", &out->start_time);
    tly_dx_pop(dx, mark);
}

/* ---- the pod ------------------------------------------------------------ */

static void decode_spec(tly_dctx *dx, const tly_node *obj, tly_pod *out)
{
    const tly_node *spec = tly_dx_map(dx, obj, "spec");
    size_t mark = tly_dx_push(dx, "spec");

    decode_containers(dx, spec, "initContainers", true, &out->init_containers, &out->ninit);
    decode_containers(dx, spec, "containers", false, &out->containers, &out->ncontainers);
    const tly_node *cs = tly_node_member(spec, "containers");
    if (!cs || (cs->type == TLY_N_SEQ && cs->nkids == 0))
        tly_dx_error(dx, cs ? cs : spec, "containers", "must have at least one container");
    check_unique_names(dx, spec);

    if (tly_dx_rlist(dx, spec, "overhead", &out->overhead))
        check_rlist_values(dx, spec, "overhead", &out->overhead, 0);
    decode_pod_resources(dx, spec, out);

    tly_dx_shared_str(dx, spec, "nodeName", &out->node_name);
    if (out->node_name && !*out->node_name)
        out->node_name = NULL;  /* "" is how some tools write "not bound" */
    tly_dx_kvs(dx, spec, "nodeSelector", &out->node_selector);
    decode_affinity(dx, spec, out);
    decode_topology_spread(dx, spec, out);
    decode_tolerations(dx, spec, out);

    /* The API server defaults an empty schedulerName too. */
    if (!tly_dx_shared_str(dx, spec, "schedulerName", &out->scheduler_name) || !*out->scheduler_name)
        out->scheduler_name = "default-scheduler";
    out->has_priority = tly_dx_int32(dx, spec, "priority", &out->priority);
    tly_dx_shared_str(dx, spec, "priorityClassName", &out->priority_class_name);
    if (out->priority_class_name && !*out->priority_class_name)
        out->priority_class_name = NULL;
    decode_gates(dx, spec, out);
    decode_claims(dx, spec, out);

    tly_dx_pop(dx, mark);
}

void tly_decode_pod(tly_dctx *dx, const tly_node *obj, tly_pod *out)
{
    out->start_time = TLY_NO_TIME;
    decode_spec(dx, obj, out);
    decode_status(dx, obj, out);
}
