/*
** decode_queue.c: scheduling.run.ai Queue (v2 and v1alpha1) into tly_queue.
**
** Reads the fields contract section 2 names: spec.parentQueue, displayName,
** priority, the fixed spec.resources model of KAI (cpu, memory, gpu, each
** with quota, limit and overQuotaWeight) and the AccountedResource limits of
** spec.accountedResources, plus the earlier design's spec.admissionGating.
**
** KAI's spec.resources fields are float64 in the CRD, so a YAML number, a
** float or a numeric string are all accepted and kept exactly as quantities
** (tly_dx_qty); the engine interprets them in KAI's units.
**
** Validation applied here is what the API server and KAI's queue webhook
** would reject or flag on this object alone: a missing spec.resources (the
** webhook's `resources must be specified`, a warning by contract), an
** accountedResources entry without resourceRef or limit, a negative limit
** other than -1, and a resourceRef listed twice. Whether a resourceRef names
** an existing AccountedResource is a cross-object rule checked elsewhere;
** each entry keeps its position (src) so that check can point at it.
*/
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tally/decode.h"

static tly_src src_at(const tly_dctx *dx, const tly_node *n)
{
    tly_src s = {dx->file, n->line, n->col};
    return s;
}

/* -1 exactly, in nano-units. */
static bool qty_is_minus_one(tly_qty q)
{
    return q.nanos == -(tly_i128)1000000000;
}

/*
** A KAI queue amount: the CRD types quota, limit and overQuotaWeight as
** numbers (float64), so the API server rejects a string such as "64Gi" or
** "8". The number's text is kept exact by parsing it as a quantity.
*/
static bool queue_number(tly_dctx *dx, const tly_node *m, const char *key, tly_qty *out)
{
    const tly_node *n = tly_node_get(m, key);
    if (!n || n->type == TLY_N_NULL)
        return false;
    if (n->type != TLY_N_INT && n->type != TLY_N_FLOAT) {
        tly_dx_error(dx, n, key,
                     "expected a number, got %s (queue amounts are plain numbers: cpu in "
                     "millicores, memory in megabytes, gpu in devices; -1 is unlimited)",
                     tly_ntype_name(n->type));
        return false;
    }
    return tly_dx_qty(dx, m, key, out);
}

/* One of spec.resources.{cpu,memory,gpu}: quota, limit, overQuotaWeight. */
static void decode_queue_resource(tly_dctx *dx, const tly_node *resources, const char *key,
                                  tly_queue_resource *out)
{
    const tly_node *m = tly_dx_map(dx, resources, key);
    if (!m)
        return;
    size_t mark = tly_dx_push(dx, key);
    out->has_quota = queue_number(dx, m, "quota", &out->quota);
    out->has_limit = queue_number(dx, m, "limit", &out->limit);
    out->has_weight = queue_number(dx, m, "overQuotaWeight", &out->over_quota_weight);
    tly_dx_pop(dx, mark);
}

/*
** The index of an earlier entry of spec.accountedResources (before `upto`)
** whose resourceRef is `ref`, or -1. Read from the node tree rather than
** from the decoded entries so that the index is the one the user wrote even
** when an earlier entry was malformed.
*/
static int64_t earlier_ref(const tly_node *seq, uint32_t upto, const char *ref)
{
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it && i < upto; it = it->next, i++) {
        const tly_node *r = tly_node_member(it, "resourceRef");
        if (r && r->type == TLY_N_STRING && strcmp(r->str, ref) == 0)
            return i;
    }
    return -1;
}

/* spec.accountedResources[i]: {resourceRef, limit}. */
static void decode_accrefs(tly_dctx *dx, const tly_node *spec, tly_queue *out)
{
    const tly_node *seq = tly_dx_seq(dx, spec, "accountedResources");
    if (!seq || seq->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, "accountedResources");
    out->accrefs = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *out->accrefs);

    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t imark = tly_dx_push_idx(dx, i);
        if (it->type != TLY_N_MAP) {
            tly_dx_error(dx, it, NULL, "must be a map with resourceRef and limit, not %s",
                         tly_ntype_name(it->type));
            tly_dx_pop(dx, imark);
            continue;
        }

        tly_queue_accref e = {0};
        e.src = src_at(dx, it);
        bool have_ref = tly_dx_req_str(dx, it, "resourceRef", &e.ref);
        if (have_ref && e.ref[0] == '\0') {
            tly_dx_error(dx, tly_node_member(it, "resourceRef"), "resourceRef",
                         "must not be empty: name an AccountedResource");
            have_ref = false;
        }

        if (!tly_node_member(it, "limit")) {
            tly_dx_error(dx, it, "limit", "required field is missing");
        } else if (tly_dx_qty(dx, it, "limit", &e.limit)) {
            if (tly_qty_sign(e.limit) < 0 && !qty_is_minus_one(e.limit))
                tly_dx_error(dx, tly_node_member(it, "limit"), "limit",
                             "must be -1 (unlimited) or a non-negative quantity");
            else
                e.has_limit = true;
        }

        if (have_ref) {
            int64_t j = earlier_ref(seq, i, e.ref);
            if (j >= 0) {
                /*
                ** KAI's webhook rejects the queue; the first entry is kept
                ** so the engine still sees one limit per resourceRef.
                */
                tly_dx_error(dx, tly_node_member(it, "resourceRef"), "resourceRef",
                             "duplicate resourceRef \"%s\" (also at spec.accountedResources[%u])",
                             e.ref, (unsigned)j);
            } else {
                out->accrefs[out->naccrefs++] = e;
            }
        }
        tly_dx_pop(dx, imark);
    }
    tly_dx_pop(dx, mark);
}

void tly_decode_queue(tly_dctx *dx, const tly_node *obj, tly_queue *out)
{
    out->admission_gating = -1;
    out->priority = 100; /* KAI's DefaultQueuePriority when unset */

    const tly_node *spec_node = tly_node_get(obj, "spec");
    const tly_node *spec = tly_dx_map(dx, obj, "spec");
    size_t mark = tly_dx_push(dx, "spec");

    const tly_node *parent = tly_node_member(spec, "parentQueue");
    if (tly_dx_str(dx, spec, "parentQueue", &out->parent)) {
        /* "" is KAI's way of saying "top level". */
        if (out->parent[0] == '\0')
            out->parent = NULL;
        else
            out->parent_src = src_at(dx, parent);
    }
    tly_dx_str(dx, spec, "displayName", &out->display_name);
    int32_t prio;
    if (tly_dx_int32(dx, spec, "priority", &prio)) {
        out->has_priority = true;
        out->priority = prio;
    }

    const tly_node *res = tly_dx_map(dx, spec, "resources");
    if (res) {
        out->has_resources = true;
        size_t rmark = tly_dx_push(dx, "resources");
        decode_queue_resource(dx, res, "cpu", &out->cpu);
        decode_queue_resource(dx, res, "memory", &out->memory);
        decode_queue_resource(dx, res, "gpu", &out->gpu);
        tly_dx_pop(dx, rmark);
    } else if (!tly_node_member(spec, "resources") &&
               (!spec_node || spec_node->type == TLY_N_NULL || spec)) {
        /*
        ** Absent (not malformed: that already has an error). KAI's webhook
        ** rejects such a queue and its scheduler would treat every limit as
        ** 0; the contract makes it a warning and sets no bounds.
        */
        tly_node at = {0};
        const tly_node *where = obj;
        if (spec_node) {
            /* Point at the `spec:` key: the map's own position is its first member. */
            at.line = spec_node->kline ? spec_node->kline : spec_node->line;
            at.col = spec_node->kline ? spec_node->kcol : spec_node->col;
            where = &at;
        }
        tly_dx_warn(dx, where, "resources", "resources must be specified");
    }

    decode_accrefs(dx, spec, out);

    bool gating;
    if (tly_dx_bool(dx, spec, "admissionGating", &gating))
        out->admission_gating = gating ? 1 : 0;

    tly_dx_pop(dx, mark);
}
