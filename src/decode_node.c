/*
** decode_node.c: v1 Node into tly_k8s_node.
**
** A node contributes capacity (status.allocatable), the taints a pod must
** tolerate, the cordon flag (spec.unschedulable) and its health: the first
** Ready condition decides whether the node takes new pods, and its
** lastHeartbeatTime feeds the simulation clock (contract section 2).
**
** Validation is the API server's for these fields: a taint needs a key and
** one of the three effects. Every other condition is kept as written, so
** `explain` can show it.
*/
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tally/decode.h"

static const char *const taint_effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute", NULL};

/* spec.taints[i]: {key, value, effect}. Returns false when the entry is unusable. */
static bool decode_taint(tly_dctx *dx, const tly_node *item, tly_taint *t)
{
    if (item->type != TLY_N_MAP) {
        tly_dx_error(dx, item, NULL, "expected a map, got %s", tly_ntype_name(item->type));
        return false;
    }
    bool ok = tly_dx_req_str(dx, item, "key", &t->key);
    if (ok && t->key[0] == '\0') {
        tly_dx_error(dx, tly_node_member(item, "key"), "key", "must not be empty");
        ok = false;
    }
    /* An empty value is the same as none; keep one spelling for the engine. */
    if (tly_dx_str(dx, item, "value", &t->value) && t->value[0] == '\0')
        t->value = NULL;
    if (!tly_node_member(item, "effect")) {
        tly_dx_error(dx, item, "effect",
                     "required field is missing: must be one of NoSchedule, PreferNoSchedule, "
                     "NoExecute");
        ok = false;
    } else if (!tly_dx_enum(dx, item, "effect", taint_effects, &t->effect)) {
        ok = false;
    }
    return ok;
}

static void decode_taints(tly_dctx *dx, const tly_node *spec, tly_k8s_node *out)
{
    const tly_node *seq = tly_dx_seq(dx, spec, "taints");
    if (!seq || seq->nkids == 0)
        return;
    out->taints = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *out->taints);
    size_t mark = tly_dx_push(dx, "taints");
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t m = tly_dx_push_idx(dx, i);
        /* A taint we could not read is dropped: the node is invalid anyway
           (an error is recorded), and a half-read taint would repel pods
           for a reason no one wrote. */
        tly_taint *t = &out->taints[out->ntaints];
        if (decode_taint(dx, it, t))
            out->ntaints++;
        else
            memset(t, 0, sizeof *t);  /* the slot is reused by the next taint */
        tly_dx_pop(dx, m);
    }
    tly_dx_pop(dx, mark);
}

void tly_decode_node(tly_dctx *dx, const tly_node *obj, tly_k8s_node *out)
{
    out->ready = -1;
    out->ready_heartbeat = TLY_NO_TIME;

    const tly_node *spec = tly_dx_map(dx, obj, "spec");
    size_t mark = tly_dx_push(dx, "spec");
    tly_dx_bool(dx, spec, "unschedulable", &out->unschedulable);
    decode_taints(dx, spec, out);
    tly_dx_pop(dx, mark);

    const tly_node *status = tly_dx_map(dx, obj, "status");
    mark = tly_dx_push(dx, "status");
    tly_dx_rlist(dx, status, "allocatable", &out->allocatable);
    tly_dx_conditions(dx, status, "conditions", &out->conditions);
    tly_dx_pop(dx, mark);

    /* Like the node lifecycle controller, only "True" means ready: "False"
       and "Unknown" (the kubelet stopped reporting) both keep pods away. */
    const tly_condition *ready = tly_conditions_find(&out->conditions, "Ready");
    if (ready) {
        out->ready = (ready->status && strcmp(ready->status, "True") == 0) ? 1 : 0;
        out->ready_heartbeat = ready->last_heartbeat;
    }
}
