/*
** kruntimes.c: the Run model shared by the Run scheduler, runtimed,
** validate and admit (kruntimes.h).
*/
#include "tally/kruntimes.h"

#include <string.h>

#include "tally/error.h"
#include "tally/labelsyntax.h"

static const char *const phase_names[] = {
    [TLY_RUN_PENDING] = "Pending",     [TLY_RUN_SCHEDULED] = "Scheduled",
    [TLY_RUN_RUNNING] = "Running",     [TLY_RUN_READY] = "Ready",
    [TLY_RUN_SUCCEEDED] = "Succeeded", [TLY_RUN_FAILED] = "Failed",
    [TLY_RUN_TIMEOUT] = "Timeout",     [TLY_RUN_CANCELLED] = "Cancelled",
};

tly_run_phase tly_run_phase_of(const tly_run *r)
{
    if (!r->phase || !*r->phase)
        return TLY_RUN_PENDING;
    for (int i = 0; i < (int)(sizeof phase_names / sizeof phase_names[0]); i++)
        if (strcmp(r->phase, phase_names[i]) == 0)
            return (tly_run_phase)i;
    return TLY_RUN_PENDING;
}

const char *tly_run_phase_name(tly_run_phase p)
{
    return (unsigned)p < sizeof phase_names / sizeof phase_names[0] ? phase_names[p] : "Pending";
}

bool tly_run_is_active(const tly_run *r)
{
    tly_run_phase p = tly_run_phase_of(r);
    return (p == TLY_RUN_SCHEDULED || p == TLY_RUN_RUNNING || p == TLY_RUN_READY) &&
           r->assigned_pod && *r->assigned_pod;
}

int tly_run_normalized_request(const tly_run *r, tly_arena *a, tly_rlist *out, const char **bad)
{
    out->v = NULL;
    out->n = 0;
    const char *first_bad = NULL;
    for (uint32_t i = 0; i < r->nrequests; i++) {
        const tly_run_request *q = &r->requests[i];
        if (!q->valid) {
            if (!first_bad || strcmp(q->name, first_bad) < 0)
                first_bad = q->name;
            continue;
        }
        if (tly_qty_sign(q->q) > 0)
            tly_rlist_set(out, a, q->id, q->q);
    }
    if (first_bad) {
        if (bad)
            *bad = first_bad;
        return TLY_EINVAL;
    }
    bool found;
    tly_qty runs = tly_rlist_get(out, TLY_R_RUNS, &found);
    if (!found || tly_qty_sign(runs) <= 0)
        tly_rlist_set(out, a, TLY_R_RUNS, tly_qty_from_int(1, TLY_QFMT_DECIMAL_SI));
    return TLY_OK;
}

/* Sets name = text in *out if text is a positive quantity; else warns. */
static void capacity_entry(const tly_pod *p, const char *name, const char *text,
                           const char *where, tly_names *names, tly_arena *a, tly_rlist *out,
                           tly_diags *d)
{
    tly_qty q;
    if (!*name) {
        if (d)
            tly_diags_add(d, TLY_SEV_WARNING, p->meta.src.file, p->meta.src.line,
                          p->meta.src.col, "Pod", tly_arena_printf(a, "%s/%s", p->meta.ns, p->meta.name),
                          where, "empty resource name; ignored");
        return;
    }
    if (tly_qty_parse_str(text, &q) != TLY_OK || tly_qty_sign(q) <= 0) {
        if (d)
            tly_diags_add(d, TLY_SEV_WARNING, p->meta.src.file, p->meta.src.line,
                          p->meta.src.col, "Pod", tly_arena_printf(a, "%s/%s", p->meta.ns, p->meta.name),
                          where,
                          "capacity \"%s\" for %s is not a positive quantity; ignored", text,
                          name);
        return;
    }
    tly_rlist_set(out, a, tly_names_intern(names, name, strlen(name)), q);
}

/*
** The per-resource form with a name that holds '/' (the seed's
** kruntimes.io/capacity.example.com/gpu) makes a key the API server rejects:
** an annotation key is a label key (lower-cased), at most one '/'. It is
** still read, for inputs written after the seed; the warning says how to
** write it so a real cluster takes it.
*/
static void warn_bad_key(const tly_pod *p, const tly_kv *kv, const char *name, const char *where,
                         tly_arena *a, tly_diags *d)
{
    const char *why = tly_annotation_key_problems(a, kv->key);
    if (!why || !d)
        return;
    tly_diags_add(d, TLY_SEV_WARNING, p->meta.src.file, p->meta.src.line, p->meta.src.col, "Pod",
                  tly_arena_printf(a, "%s/%s", p->meta.ns, p->meta.name), where,
                  "not a valid annotation key, so the API server rejects it (%s); tally reads it "
                  "for compatibility with the seed's form. Give this capacity in the annotation "
                  TLY_KRT_CAPACITIES_ANNOTATION " instead: {\"%s\": \"%s\"}",
                  why, name, kv->val);
}

void tly_runtime_pod_capacity(const tly_pod *p, tly_names *names, tly_arena *a,
                              tly_rlist *out, tly_diags *d)
{
    out->v = NULL;
    out->n = 0;
    tly_rlist_set(out, a, TLY_R_RUNS, tly_qty_from_int(TLY_KRT_DEFAULT_RUNS, TLY_QFMT_DECIMAL_SI));
    const size_t plen = strlen(TLY_KRT_CAPACITY_PREFIX);
    const char *json = NULL;
    for (uint32_t i = 0; i < p->meta.annotations.n; i++) {
        const tly_kv *kv = &p->meta.annotations.v[i];
        if (strcmp(kv->key, TLY_KRT_CAPACITIES_ANNOTATION) == 0) {
            json = kv->val;
            continue;
        }
        if (strncmp(kv->key, TLY_KRT_CAPACITY_PREFIX, plen) != 0)
            continue;
        char *where = tly_arena_printf(a, "metadata.annotations.%s", kv->key);
        warn_bad_key(p, kv, kv->key + plen, where, a, d);
        capacity_entry(p, kv->key + plen, kv->val, where, names, a, out, d);
    }
    if (!json)
        return;
    /* The JSON form is read last so it wins over the per-resource form. */
    const char *where = "metadata.annotations." TLY_KRT_CAPACITIES_ANNOTATION;
    tly_node *obj = tly_parse_value(json, strlen(json), a);
    if (!obj || obj->type != TLY_N_MAP) {
        if (d)
            tly_diags_add(d, TLY_SEV_WARNING, p->meta.src.file, p->meta.src.line,
                          p->meta.src.col, "Pod", tly_arena_printf(a, "%s/%s", p->meta.ns, p->meta.name),
                          where,
                          "must be a JSON object of resource names to quantities, such as "
                          "{\"example.com/gpu\": \"1\"}; ignored");
        return;
    }
    for (const tly_node *k = obj->kids; k; k = k->next) {
        if (!tly_node_is_scalar(k)) {
            if (d)
                tly_diags_add(d, TLY_SEV_WARNING, p->meta.src.file, p->meta.src.line,
                              p->meta.src.col, "Pod",
                              tly_arena_printf(a, "%s/%s", p->meta.ns, p->meta.name), where,
                              "capacity for %s must be a quantity; ignored", k->key);
            continue;
        }
        capacity_entry(p, k->key, k->str, where, names, a, out, d);
    }
}

tly_rpod_state tly_runtime_pod_state(const tly_pod *p, int64_t now, bool have_clock)
{
    if (!p->phase || strcmp(p->phase, "Running") != 0)
        return TLY_RPOD_NOT_RUNNING;
    if (p->meta.deleted != TLY_NO_TIME)
        return TLY_RPOD_TERMINATING;
    const tly_condition *ready = tly_conditions_find(&p->conditions, "Ready");
    if (!ready || !ready->status || strcmp(ready->status, "True") != 0)
        return TLY_RPOD_NOT_READY;
    const tly_condition *hb = tly_conditions_find(&p->conditions, TLY_KRT_RUNTIMED_READY);
    if (!hb || !hb->status || strcmp(hb->status, "True") != 0)
        return TLY_RPOD_NO_RUNTIMED;
    if (have_clock) {
        if (hb->last_probe == TLY_NO_TIME)
            return TLY_RPOD_STALE_HEARTBEAT;
        /* now - lastProbeTime <= 15 s; written to avoid overflow at the extremes. */
        if (now > hb->last_probe && now - hb->last_probe > TLY_KRT_HEARTBEAT_STALE_SECONDS)
            return TLY_RPOD_STALE_HEARTBEAT;
    }
    return TLY_RPOD_AVAILABLE;
}

const char *tly_rpod_state_text(tly_rpod_state s)
{
    switch (s) {
    case TLY_RPOD_AVAILABLE: return "available";
    case TLY_RPOD_NOT_RUNNING: return "not Running";
    case TLY_RPOD_TERMINATING: return "terminating";
    case TLY_RPOD_NOT_READY: return "not Ready";
    case TLY_RPOD_NO_RUNTIMED: return "runtimed not ready";
    case TLY_RPOD_STALE_HEARTBEAT: return "stale runtimed heartbeat";
    }
    return "unavailable";
}
