/*
** decode_kruntimes.c: kruntimes.io/v1alpha1 Runtime and Run.
**
** Runtime: only spec.capacity.resources (the per-Pod logical capacity the
** Runtime controller projects to Pod annotations; the engine reads capacity
** from the Pods, contract section 2, so this is kept for explain/validate).
**
** Run: the scheduling-relevant part of kruntimes' RunSpec (reference
** kruntimes-facts.md section 1) and the status fields the engine resumes
** from. Validation mirrors the CRD schema and CEL rules: runtime is a label
** value, mode sets exactly one of task/function, affinity terms have a
** non-empty labelSelector and the one supported topologyKey.
**
** Affinity selectors: the CRD does not check operators, value counts or
** label syntax, so the API server stores a Run whose selector kruntimes'
** scheduler cannot compile; the scheduler then fails it at PreFilter. The
** decoder keeps the first such failure, in kruntimes' words, in
** affinity_error (labelsyntax.h has apimachinery's texts), and reports each
** bad selector as an error the object survives, like an invalid request.
**
** Run requests: the CRD accepts any quantity, but the scheduler's
** RunSpec.ResourceRequests() rejects a request unless Quantity.AsInt64()
** succeeds on it and it is not negative. AsInt64 depends on the literal form
** ("1k" and "1e3" pass, "2000m" and "1.0" fail although they are whole), so
** each entry keeps its literal text and a `valid` flag computed with
** tly_qty_literal_int64(), and an invalid one is reported with kruntimes'
** exact message (contract section 2). The entries stay in the order written;
** defaulting (runs: 1, zero dropped) is the engine's business.
*/
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tally/decode.h"
#include "tally/error.h"
#include "tally/kruntimes.h"
#include "tally/labelsyntax.h"

#define RUN_TOPOLOGY_KEY "kruntimes.io/runtime-pod"
#define RUN_MAX_AFFINITY_TERMS 32

static tly_src src_at(const tly_dctx *dx, const tly_node *n)
{
    tly_src s = {dx->file, n->line, n->col};
    return s;
}

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* ---- Runtime ------------------------------------------------------------ */

/*
** kruntimes' Runtime controller projects each capacity entry to the Pod
** template annotation kruntimes.io/capacity.<name>. A name that makes that
** key invalid (a '/' in it, as in example.com/gpu, or too long) cannot be
** projected: the API server would reject the Deployment. The warning says
** how Runtime Pods can still advertise it.
*/
static void warn_unprojectable(tly_dctx *dx, const tly_node *resources)
{
    if (!resources || resources->type != TLY_N_MAP)
        return;
    size_t mark = tly_dx_push(dx, "resources");
    for (const tly_node *k = resources->kids; k; k = k->next) {
        char *key = tly_arena_printf(dx->arena, TLY_KRT_CAPACITY_PREFIX "%s", k->key);
        const char *why = tly_annotation_key_problems(dx->arena, key);
        if (why)
            tly_dx_warn(dx, k, k->key,
                        "cannot be projected to a Pod annotation: the Runtime controller writes "
                        "%s, which is not a valid annotation key (%s), so the API server would "
                        "reject the Deployment. Give the Runtime Pods this capacity with the "
                        "annotation " TLY_KRT_CAPACITIES_ANNOTATION " (a JSON object such as "
                        "{\"%s\": \"1\"}) instead",
                        key, why, k->key);
    }
    tly_dx_pop(dx, mark);
}

void tly_decode_runtime(tly_dctx *dx, const tly_node *obj, tly_runtime *out)
{
    const tly_node *spec = tly_dx_map(dx, obj, "spec");
    size_t mark = tly_dx_push(dx, "spec");
    const tly_node *cap = tly_dx_map(dx, spec, "capacity");
    if (cap) {
        size_t cmark = tly_dx_push(dx, "capacity");
        if (tly_dx_rlist(dx, cap, "resources", &out->capacity))
            warn_unprojectable(dx, tly_node_member(cap, "resources"));
        tly_dx_pop(dx, cmark);
    }
    tly_dx_pop(dx, mark);
}

/* ---- Run ---------------------------------------------------------------- */

/* spec.runtime: a label value of 1..63 characters (it is matched as runtime=<value>). */
static void decode_run_runtime(tly_dctx *dx, const tly_node *spec, tly_run *out)
{
    const char *rt;
    if (!tly_dx_req_str(dx, spec, "runtime", &rt))
        return;
    const tly_node *at = tly_node_member(spec, "runtime");
    size_t len = strlen(rt);
    if (len < 1 || len > 63) {
        tly_dx_error(dx, at, "runtime", "must be 1 to 63 characters long (got %zu)", len);
        return;
    }
    bool ok = is_alnum(rt[0]) && is_alnum(rt[len - 1]);
    for (size_t i = 0; ok && i < len; i++)
        ok = is_alnum(rt[i]) || rt[i] == '-' || rt[i] == '_' || rt[i] == '.';
    if (!ok) {
        tly_dx_error(dx, at, "runtime",
                     "invalid runtime \"%s\": must be letters, digits, '-', '_' or '.', "
                     "starting and ending with a letter or digit",
                     rt);
        return;
    }
    out->runtime = rt;
}

/* spec.resources.requests: every entry kept, with its literal and validity. */
static void decode_run_requests(tly_dctx *dx, const tly_node *resources, tly_run *out)
{
    const tly_node *req = tly_dx_map(dx, resources, "requests");
    if (!req || req->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, "requests");
    out->requests = tly_arena_zalloc(dx->arena, req->nkids * sizeof *out->requests);
    for (const tly_node *kid = req->kids; kid; kid = kid->next) {
        tly_run_request *r = &out->requests[out->nrequests++];
        r->name = tly_arena_strdup(dx->arena, kid->key);
        r->id = tly_names_intern(dx->names, kid->key, strlen(kid->key));
        r->src = src_at(dx, kid);
        if (kid->type == TLY_N_NULL) {
            /* Quantity's UnmarshalJSON takes null as zero: valid, and dropped later. */
            r->text = "0";
            r->valid = true;
            continue;
        }
        int64_t v = 0;
        bool parsed = false;
        if (tly_node_is_scalar(kid)) {
            r->text = tly_arena_strndup(dx->arena, kid->str, kid->len);
            parsed = tly_qty_parse(kid->str, kid->len, &r->q) == TLY_OK;
            r->valid = parsed && tly_qty_literal_int64(kid->str, kid->len, &v) == TLY_OK && v >= 0;
        }
        /* A quantity that is not a non-negative integer (2000m, 1.0, -1) is a
           readable Run that the scheduler fails (InvalidResources): the CRD
           admits it. Text that is no quantity at all is unreadable input. */
        if (!r->valid && parsed)
            tly_dx_invalid(dx, kid, kid->key,
                           "resource request \"%s\" must be a non-negative integer", kid->key);
        else if (!r->valid)
            tly_dx_error(dx, kid, kid->key, "resource request \"%s\" must be a non-negative integer",
                         kid->key);
    }
    tly_dx_pop(dx, mark);
}

/* spec.mode: exactly one of task, function. */
static void decode_run_mode(tly_dctx *dx, const tly_node *spec, tly_run *out)
{
    if (!tly_node_member(spec, "mode")) {
        tly_dx_error(dx, spec, "mode", "required field is missing");
        return;
    }
    const tly_node *mode = tly_dx_map(dx, spec, "mode");
    if (!mode)
        return;
    bool task = tly_node_member(mode, "task") != NULL;
    bool function = tly_node_member(mode, "function") != NULL;
    if (task == function) {
        tly_dx_error(dx, mode, "mode", "exactly one of task or function must be set");
        return;
    }
    /* Check the chosen one is a map; its content does not matter to scheduling. */
    size_t mark = tly_dx_push(dx, "mode");
    if (tly_dx_map(dx, mode, task ? "task" : "function"))
        out->mode = task ? "task" : "function";
    tly_dx_pop(dx, mark);
}

/*
** kruntimes' PreFilter step for one term (kruntimes-facts 3.1 step 7): the
** topology key must be the supported one, the selector present, and the
** selector must compile. Returns the first failure's text, or NULL. The API
** server stores a selector that does not compile (the CRD checks neither
** operators nor label syntax), so its error is reported here as one the
** object survives (tly_dx_invalid), and *selector_bad tells the caller not
** to decode the selector again.
*/
static const char *term_error(tly_dctx *dx, const tly_node *t, bool *selector_bad)
{
    const tly_node *sel = tly_node_member(t, "labelSelector");
    const tly_node *at;
    const char *field;
    const char *serr = tly_label_selector_error(dx->arena, sel, &at, &field);
    *selector_bad = serr != NULL;
    if (serr)
        tly_dx_invalid(dx, at, tly_arena_printf(dx->arena, "labelSelector.%s", field),
                       "%s: kruntimes' scheduler cannot compile this selector, so the Run "
                       "ends Failed (pod selection failed)",
                       serr);
    const tly_node *tk = tly_node_member(t, "topologyKey");
    const char *key = tk && tk->type == TLY_N_STRING ? tk->str : "";
    if (strcmp(key, RUN_TOPOLOGY_KEY) != 0)
        return tly_arena_printf(dx->arena, "unsupported run affinity topology key \"%s\"", key);
    if (!sel)
        return "run affinity term has no label selector";
    if (serr)
        return tly_arena_printf(dx->arena, "parse run affinity selector: %s", serr);
    return NULL;
}

/* Keeps the first PreFilter failure as the Run's status message, as kruntimes writes it. */
static void note_term_error(tly_dctx *dx, const char **first, const char *err)
{
    if (err && !*first)
        *first = tly_arena_printf(dx->arena, "pod selection failed: pre-filter run affinity: %s", err);
}

/*
** A RunAffinityTerm at `t` (the current path): labelSelector + topologyKey.
** *first receives the term's PreFilter failure if it is the Run's first.
*/
static bool decode_affinity_term(tly_dctx *dx, const tly_node *t, tly_run_affinity_term *out,
                                 const char **first)
{
    if (t->type != TLY_N_MAP) {
        tly_dx_error(dx, t, NULL, "must be a map with labelSelector and topologyKey, not %s",
                     tly_ntype_name(t->type));
        return false;
    }
    bool selector_bad;
    note_term_error(dx, first, term_error(dx, t, &selector_bad));
    bool ok = !selector_bad;
    const tly_node *sel = tly_node_member(t, "labelSelector");
    if (!sel) {
        tly_dx_error(dx, t, "labelSelector", "required field is missing");
        ok = false;
    } else if (!selector_bad) {
        size_t mark = tly_dx_push(dx, "labelSelector");
        const tly_node *ml = tly_node_member(sel, "matchLabels");
        const tly_node *me = tly_node_member(sel, "matchExpressions");
        if (!tly_dx_label_selector(dx, sel, &out->selector)) {
            ok = false;
        } else if ((!ml || ml->nkids == 0) && (!me || me->nkids == 0)) {
            /* An empty selector would match every Run: the CRD forbids it. */
            tly_dx_error(dx, sel, NULL, "must not be empty: set matchLabels or matchExpressions");
            ok = false;
        }
        tly_dx_pop(dx, mark);
    }
    if (tly_dx_req_str(dx, t, "topologyKey", &out->topology_key)) {
        if (strcmp(out->topology_key, RUN_TOPOLOGY_KEY) != 0) {
            tly_dx_error(dx, tly_node_member(t, "topologyKey"), "topologyKey",
                         "unsupported value \"%s\": must be \"" RUN_TOPOLOGY_KEY "\"",
                         out->topology_key);
            ok = false;
        }
    } else {
        ok = false;
    }
    return ok;
}

/* A list of at most 32 terms under `key`; NULL when absent or malformed. */
static const tly_node *term_list(tly_dctx *dx, const tly_node *map, const char *key)
{
    const tly_node *seq = tly_dx_seq(dx, map, key);
    if (seq && seq->nkids > RUN_MAX_AFFINITY_TERMS)
        tly_dx_error(dx, seq, key, "must have at most %d terms (got %u)", RUN_MAX_AFFINITY_TERMS,
                     (unsigned)seq->nkids);
    return (seq && seq->nkids > 0) ? seq : NULL;
}

/* runAffinity or runAntiAffinity: required and preferred terms. */
static void decode_affinity(tly_dctx *dx, const tly_node *affinity, const char *key,
                            tly_run_affinity_term **req, uint32_t *nreq,
                            tly_run_affinity_term **pref, uint32_t *npref, const char **first)
{
    const tly_node *a = tly_dx_map(dx, affinity, key);
    if (!a)
        return;
    size_t mark = tly_dx_push(dx, key);

    static const char *const req_key = "requiredDuringSchedulingIgnoredDuringExecution";
    const tly_node *seq = term_list(dx, a, req_key);
    if (seq) {
        size_t lmark = tly_dx_push(dx, req_key);
        *req = tly_arena_zalloc(dx->arena, seq->nkids * sizeof **req);
        uint32_t i = 0;
        for (const tly_node *t = seq->kids; t; t = t->next, i++) {
            size_t imark = tly_dx_push_idx(dx, i);
            /* Bad terms are dropped: a required term that cannot be read is not evaluated. */
            if (decode_affinity_term(dx, t, &(*req)[*nreq], first))
                (*nreq)++;
            else
                memset(&(*req)[*nreq], 0, sizeof **req);
            tly_dx_pop(dx, imark);
        }
        tly_dx_pop(dx, lmark);
    }

    static const char *const pref_key = "preferredDuringSchedulingIgnoredDuringExecution";
    seq = term_list(dx, a, pref_key);
    if (seq) {
        size_t lmark = tly_dx_push(dx, pref_key);
        *pref = tly_arena_zalloc(dx->arena, seq->nkids * sizeof **pref);
        uint32_t i = 0;
        for (const tly_node *t = seq->kids; t; t = t->next, i++) {
            size_t imark = tly_dx_push_idx(dx, i);
            tly_run_affinity_term *term = &(*pref)[*npref];
            bool ok = true;
            if (t->type != TLY_N_MAP) {
                tly_dx_error(dx, t, NULL, "must be a map with weight and runAffinityTerm, not %s",
                             tly_ntype_name(t->type));
                ok = false;
            } else {
                int32_t w = 0;
                if (!tly_node_member(t, "weight")) {
                    tly_dx_error(dx, t, "weight", "required field is missing");
                    ok = false;
                } else if (!tly_dx_int32(dx, t, "weight", &w)) {
                    ok = false;
                } else if (w < 1 || w > 100) {
                    tly_dx_error(dx, tly_node_member(t, "weight"), "weight",
                                 "must be between 1 and 100 (got %d)", (int)w);
                    ok = false;
                }
                const tly_node *rt = tly_node_member(t, "runAffinityTerm");
                if (!rt) {
                    tly_dx_error(dx, t, "runAffinityTerm", "required field is missing");
                    /* Go's zero term: no topology key. */
                    note_term_error(dx, first, "unsupported run affinity topology key \"\"");
                    ok = false;
                } else {
                    size_t tmark = tly_dx_push(dx, "runAffinityTerm");
                    ok = decode_affinity_term(dx, rt, term, first) && ok;
                    tly_dx_pop(dx, tmark);
                }
                term->weight = w;
            }
            if (ok)
                (*npref)++;
            else
                memset(term, 0, sizeof *term);
            tly_dx_pop(dx, imark);
        }
        tly_dx_pop(dx, lmark);
    }
    tly_dx_pop(dx, mark);
}

static void decode_run_status(tly_dctx *dx, const tly_node *obj, tly_run *out)
{
    static const char *const phases[] = {"",        "Pending",   "Scheduled", "Running",
                                         "Ready",   "Succeeded", "Failed",    "Timeout",
                                         "Cancelled", NULL};
    const tly_node *status = tly_dx_map(dx, obj, "status");
    if (!status)
        return;
    size_t mark = tly_dx_push(dx, "status");
    tly_dx_enum(dx, status, "phase", phases, &out->phase);
    tly_dx_str(dx, status, "assignedPod", &out->assigned_pod);
    tly_dx_str(dx, status, "message", &out->message);
    tly_dx_conditions(dx, status, "conditions", &out->conditions);
    tly_dx_pop(dx, mark);
}

void tly_decode_run(tly_dctx *dx, const tly_node *obj, tly_run *out)
{
    const tly_node *spec = NULL;
    if (!tly_node_member(obj, "spec"))
        tly_dx_error(dx, NULL, "spec", "required field is missing");
    else
        spec = tly_dx_map(dx, obj, "spec");

    if (spec) {
        size_t mark = tly_dx_push(dx, "spec");
        decode_run_runtime(dx, spec, out);

        const tly_node *resources = tly_dx_map(dx, spec, "resources");
        if (resources) {
            out->has_resources = true;
            size_t rmark = tly_dx_push(dx, "resources");
            decode_run_requests(dx, resources, out);
            tly_dx_pop(dx, rmark);
        }

        decode_run_mode(dx, spec, out);
        tly_dx_bool(dx, spec, "cancelRequested", &out->cancel_requested);

        const tly_node *affinity = tly_dx_map(dx, spec, "affinity");
        if (affinity) {
            size_t amark = tly_dx_push(dx, "affinity");
            /* kruntimes compiles runAffinity's terms, then runAntiAffinity's,
               each list required first: the first failure is the message. */
            decode_affinity(dx, affinity, "runAffinity", &out->affinity_required,
                            &out->naffinity_required, &out->affinity_preferred,
                            &out->naffinity_preferred, &out->affinity_error);
            decode_affinity(dx, affinity, "runAntiAffinity", &out->anti_required,
                            &out->nanti_required, &out->anti_preferred, &out->nanti_preferred,
                            &out->affinity_error);
            tly_dx_pop(dx, amark);
        }
        tly_dx_pop(dx, mark);
    }

    decode_run_status(dx, obj, out);
}
