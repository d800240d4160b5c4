/*
** decode_dra.c: Dynamic Resource Allocation objects of resource.k8s.io
** (v1, v1beta2 and v1beta1): ResourceClaim, ResourceClaimTemplate,
** ResourceSlice and DeviceClass.
**
** The API versions differ in shape, not in meaning, and tally keeps one
** struct for all of them:
**   - a device request in v1 and v1beta2 puts deviceClassName,
**     allocationMode, count and selectors under `exactly` (or lists
**     alternatives under `firstAvailable`); v1beta1 puts them on the request
**     itself. meta.api_version says which shape to expect.
**   - a ResourceSlice device in v1beta1 nests attributes and capacity under
**     `basic`; v1 and v1beta2 do not. Both are read whatever the version says,
**     since the nesting itself is unambiguous.
** A request that uses firstAvailable is marked first_available, carries no
** device class of its own (KAI counts only `exactly` requests) and keeps
** its subrequests in order of preference; the engine allocates them.
** Also read for the allocator: tolerations and adminAccess of requests,
** constraints of claims (distinctAttribute is kept as unsupported, so the
** engine reports it), device taints, consumesCounters and per-device node
** selection, slices' sharedCounters, pool generation and resourceSliceCount,
** and an allocation's nodeSelector. A device's nodeName/allNodes/nodeSelector
** is an error outside a perDeviceNodeSelection slice, as the API says.
**
** Opaque driver parameters are deep-copied (tly_node_copy) because the node
** tree of the object is freed after decoding and the engine reads
** AccountedResource opaqueConfigField paths from them later.
*/
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tally/decode.h"

/* A list item that must be a map; reports and returns false otherwise. */
static bool item_is_map(tly_dctx *dx, const tly_node *it, const char *what)
{
    if (it->type == TLY_N_MAP)
        return true;
    tly_dx_error(dx, it, NULL, "expected %s (a map), got %s", what, tly_ntype_name(it->type));
    return false;
}

/* A required string that must also be non-empty. */
static bool req_nonempty(tly_dctx *dx, const tly_node *map, const char *key, const char **out)
{
    const char *v;
    if (!tly_dx_req_str(dx, map, key, &v))
        return false;
    if (v[0] == '\0') {
        tly_dx_error(dx, tly_node_member(map, key), key, "must not be empty");
        return false;
    }
    *out = v;
    return true;
}

/* ---- selectors ----------------------------------------------------------- */

/* `key`: a list of {cel: {expression}}; the expressions, in order. */
static void decode_selectors(tly_dctx *dx, const tly_node *map, const char *key,
                             const char ***out, uint32_t *n)
{
    const tly_node *seq = tly_dx_seq(dx, map, key);
    if (!seq || seq->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, key);
    *out = tly_arena_zalloc(dx->arena, seq->nkids * sizeof **out);
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t imark = tly_dx_push_idx(dx, i);
        if (item_is_map(dx, it, "a selector")) {
            const tly_node *cel = tly_node_member(it, "cel");
            if (!cel) {
                tly_dx_error(dx, it, "cel", "required field is missing");
            } else if ((cel = tly_dx_map(dx, it, "cel")) != NULL) {
                size_t cmark = tly_dx_push(dx, "cel");
                if (req_nonempty(dx, cel, "expression", &(*out)[*n]))
                    (*n)++;
                tly_dx_pop(dx, cmark);
            }
        }
        tly_dx_pop(dx, imark);
    }
    tly_dx_pop(dx, mark);
}

/* ---- claim spec ---------------------------------------------------------- */

/*
** One toleration of device taints (a request's or subrequest's). As for
** pods: an empty key, value or effect is NULL, an omitted operator Equal;
** the effects are the device taints' (None, NoSchedule, NoExecute).
*/
static bool decode_device_toleration(tly_dctx *dx, const tly_node *it, tly_toleration *t)
{
    static const char *const ops[] = {"Exists", "Equal", NULL};
    static const char *const effects[] = {"None", "NoSchedule", "NoExecute", NULL};
    if (!item_is_map(dx, it, "a toleration"))
        return false;
    bool ok = true;
    tly_dx_str(dx, it, "key", &t->key);
    tly_dx_str(dx, it, "value", &t->value);
    t->op = "Equal";
    if (tly_node_member(it, "operator") && !tly_dx_enum(dx, it, "operator", ops, &t->op))
        ok = false;
    if (tly_node_member(it, "effect") && !tly_dx_enum(dx, it, "effect", effects, &t->effect))
        ok = false;
    if (t->key && !*t->key)
        t->key = NULL;
    if (t->value && !*t->value)
        t->value = NULL;
    if (t->effect && !*t->effect)
        t->effect = NULL;
    if (ok && !t->key && strcmp(t->op, "Exists") != 0) {
        tly_dx_error(dx, it, "operator", "must be Exists when key is empty");
        ok = false;
    }
    return ok;
}

/* `tolerations` of a request or subrequest (map m). */
static void decode_tolerations(tly_dctx *dx, const tly_node *m, tly_device_request *r)
{
    const tly_node *seq = tly_dx_seq(dx, m, "tolerations");
    if (!seq || seq->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, "tolerations");
    r->tolerations = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *r->tolerations);
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t imark = tly_dx_push_idx(dx, i);
        if (decode_device_toleration(dx, it, &r->tolerations[r->ntolerations]))
            r->ntolerations++;
        else
            memset(&r->tolerations[r->ntolerations], 0, sizeof *r->tolerations);
        tly_dx_pop(dx, imark);
    }
    tly_dx_pop(dx, mark);
}

/*
** spec.devices.constraints: {requests, matchAttribute}. A constraint with
** distinctAttribute or with no field tally knows is kept with
** `unsupported` set, so that the engine reports it instead of ignoring it.
*/
static void decode_constraints(tly_dctx *dx, const tly_node *devices, tly_claim_spec *out)
{
    const tly_node *seq = tly_dx_seq(dx, devices, "constraints");
    if (!seq || seq->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, "constraints");
    out->constraints = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *out->constraints);
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t imark = tly_dx_push_idx(dx, i);
        if (item_is_map(dx, it, "a constraint")) {
            tly_device_constraint *c = &out->constraints[out->nconstraints++];
            tly_dx_strlist(dx, it, "requests", &c->requests, &c->nrequests);
            tly_dx_str(dx, it, "matchAttribute", &c->match_attribute);
            if (c->match_attribute && !strchr(c->match_attribute, '/')) {
                tly_dx_error(dx, tly_node_member(it, "matchAttribute"), "matchAttribute",
                             "must be a fully qualified name (domain/name)");
                c->match_attribute = NULL;
            }
            if (tly_node_member(it, "distinctAttribute"))
                c->unsupported = "distinctAttribute";
            else if (!c->match_attribute && !tly_node_member(it, "matchAttribute"))
                c->unsupported = "a constraint without matchAttribute";
        }
        tly_dx_pop(dx, imark);
    }
    tly_dx_pop(dx, mark);
}

/*
** The "exactly" part of a request (v1/v1beta2: the `exactly` map; v1beta1:
** the request itself): deviceClassName, allocationMode, count, selectors.
*/
static void decode_exact(tly_dctx *dx, const tly_node *m, tly_device_request *r)
{
    static const char *const modes[] = {"ExactCount", "All", NULL};
    req_nonempty(dx, m, "deviceClassName", &r->device_class);
    r->allocation_mode = "ExactCount";
    tly_dx_enum(dx, m, "allocationMode", modes, &r->allocation_mode);

    bool all = strcmp(r->allocation_mode, "All") == 0;
    int64_t count;
    r->count = all ? 0 : 1;
    if (tly_dx_int64(dx, m, "count", &count)) {
        if (all)
            tly_dx_error(dx, tly_node_member(m, "count"), "count",
                         "must not be set when allocationMode is All");
        else if (count <= 0)
            tly_dx_error(dx, tly_node_member(m, "count"), "count", "must be greater than zero (got %lld)",
                         (long long)count);
        else
            r->count = count;
    }
    decode_selectors(dx, m, "selectors", &r->selectors, &r->nselectors);
    tly_dx_bool(dx, m, "adminAccess", &r->admin_access);
    decode_tolerations(dx, m, r);
}

/*
** firstAvailable: a non-empty list of subrequests {name, deviceClassName,
** ...}, kept in r->subs in order of preference.
*/
static void check_first_available(tly_dctx *dx, const tly_node *req, tly_device_request *r)
{
    const tly_node *seq = tly_dx_seq(dx, req, "firstAvailable");
    if (!seq)
        return;
    if (seq->nkids == 0) {
        tly_dx_error(dx, seq, "firstAvailable", "must have at least one subrequest");
        return;
    }
    size_t mark = tly_dx_push(dx, "firstAvailable");
    tly_device_request *subs = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *subs);
    uint32_t i = 0, n = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t imark = tly_dx_push_idx(dx, i);
        if (item_is_map(dx, it, "a subrequest")) {
            tly_device_request *sub = &subs[n];
            memset(sub, 0, sizeof *sub);
            bool named = req_nonempty(dx, it, "name", &sub->name);
            decode_exact(dx, it, sub);
            if (named && sub->device_class)
                n++;
        }
        tly_dx_pop(dx, imark);
    }
    tly_dx_pop(dx, mark);
    r->subs = subs;
    r->nsubs = n;
}

/* One spec.devices.requests[i] (the current path). */
static void decode_request(tly_dctx *dx, const tly_node *it, bool v1beta1,
                           tly_device_request *r)
{
    req_nonempty(dx, it, "name", &r->name);
    r->count = 1;
    r->allocation_mode = "ExactCount";
    bool fa = tly_node_member(it, "firstAvailable") != NULL;

    if (v1beta1) {
        if (fa) {
            r->first_available = true;
            if (tly_node_member(it, "deviceClassName"))
                tly_dx_error(dx, tly_node_member(it, "deviceClassName"), "deviceClassName",
                             "must not be set together with firstAvailable");
            check_first_available(dx, it, r);
        } else {
            decode_exact(dx, it, r);
        }
        return;
    }

    const tly_node *exactly = tly_node_member(it, "exactly");
    if (!exactly == !fa) {
        tly_dx_error(dx, it, NULL, "must set exactly one of exactly or firstAvailable%s",
                     exactly ? " (found both)" : "");
        /* The likeliest cause: a v1beta1 request under a v1 apiVersion. */
        if (!exactly && tly_node_member(it, "deviceClassName"))
            tly_dx_error(dx, tly_node_member(it, "deviceClassName"), "deviceClassName",
                         "must be under exactly (only resource.k8s.io/v1beta1 puts it on the "
                         "request itself)");
    }
    if (exactly && (exactly = tly_dx_map(dx, it, "exactly")) != NULL) {
        size_t mark = tly_dx_push(dx, "exactly");
        decode_exact(dx, exactly, r);
        tly_dx_pop(dx, mark);
    }
    if (fa) {
        tly_device_request scratch = {0};
        check_first_available(dx, it, exactly ? &scratch : r);
        if (!exactly) {
            r->first_available = true;
            r->device_class = NULL;
            r->count = 0;
        }
    }
}

/* A config list (spec.devices.config or status.allocation.devices.config). */
static void decode_config(tly_dctx *dx, const tly_node *map, const char *key,
                          tly_opaque_config **out, uint32_t *n)
{
    const tly_node *seq = tly_dx_seq(dx, map, key);
    if (!seq || seq->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, key);
    *out = tly_arena_zalloc(dx->arena, seq->nkids * sizeof **out);
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t imark = tly_dx_push_idx(dx, i);
        if (item_is_map(dx, it, "a device configuration")) {
            tly_opaque_config *c = &(*out)[*n];
            tly_dx_strlist(dx, it, "requests", &c->requests, &c->nrequests);
            const tly_node *opaque = tly_dx_map(dx, it, "opaque");
            if (opaque) {
                size_t omark = tly_dx_push(dx, "opaque");
                req_nonempty(dx, opaque, "driver", &c->driver);
                const tly_node *params = tly_node_member(opaque, "parameters");
                if (params)
                    c->parameters = tly_node_copy(params, dx->arena);
                tly_dx_pop(dx, omark);
            }
            /* A config without opaque data configures nothing tally reads. */
            if (c->driver)
                (*n)++;
            else
                memset(c, 0, sizeof *c);
        }
        tly_dx_pop(dx, imark);
    }
    tly_dx_pop(dx, mark);
}

/* A ResourceClaimSpec at `spec` (the current path names it). */
static void decode_claim_spec(tly_dctx *dx, const tly_node *spec, const tly_meta *meta,
                              tly_claim_spec *out)
{
    bool v1beta1 = meta->api_version && strcmp(meta->api_version, "resource.k8s.io/v1beta1") == 0;
    const tly_node *devices = tly_dx_map(dx, spec, "devices");
    if (!devices)
        return;
    size_t mark = tly_dx_push(dx, "devices");

    const tly_node *seq = tly_dx_seq(dx, devices, "requests");
    if (seq && seq->nkids > 0) {
        size_t rmark = tly_dx_push(dx, "requests");
        out->requests = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *out->requests);
        uint32_t i = 0;
        for (const tly_node *it = seq->kids; it; it = it->next, i++) {
            size_t imark = tly_dx_push_idx(dx, i);
            if (item_is_map(dx, it, "a device request"))
                decode_request(dx, it, v1beta1, &out->requests[out->nrequests++]);
            tly_dx_pop(dx, imark);
        }
        tly_dx_pop(dx, rmark);
    }
    decode_config(dx, devices, "config", &out->config, &out->nconfig);
    decode_constraints(dx, devices, out);
    tly_dx_pop(dx, mark);
}

/*
** A v1 NodeSelector at map[key] (a slice's, a device's or an allocation's):
** its terms, ORed. *has is set when the selector is present.
*/
static void decode_node_selector(tly_dctx *dx, const tly_node *map, const char *key,
                                 tly_selector **terms_out, uint32_t *n, bool *has)
{
    const tly_node *nsel = tly_dx_map(dx, map, key);
    if (!nsel)
        return;
    *has = true;
    size_t nmark = tly_dx_push(dx, key);
    const tly_node *terms = tly_dx_seq(dx, nsel, "nodeSelectorTerms");
    if (!terms || terms->nkids == 0)
        tly_dx_error(dx, terms ? terms : nsel, "nodeSelectorTerms",
                     "must have at least one node selector term");
    if (terms && terms->nkids > 0) {
        *terms_out = tly_arena_zalloc(dx->arena, terms->nkids * sizeof **terms_out);
        size_t tmark = tly_dx_push(dx, "nodeSelectorTerms");
        uint32_t i = 0;
        for (const tly_node *it = terms->kids; it; it = it->next, i++) {
            size_t imark = tly_dx_push_idx(dx, i);
            if (tly_dx_node_selector_term(dx, it, &(*terms_out)[*n]))
                (*n)++;
            tly_dx_pop(dx, imark);
        }
        tly_dx_pop(dx, tmark);
    }
    tly_dx_pop(dx, nmark);
}

/* ---- ResourceClaim ------------------------------------------------------- */

static void decode_results(tly_dctx *dx, const tly_node *devices, tly_resource_claim *out)
{
    const tly_node *seq = tly_dx_seq(dx, devices, "results");
    if (!seq || seq->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, "results");
    out->results = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *out->results);
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t imark = tly_dx_push_idx(dx, i);
        if (item_is_map(dx, it, "an allocation result")) {
            tly_device_result *r = &out->results[out->nresults];
            bool ok = req_nonempty(dx, it, "request", &r->request);
            ok = req_nonempty(dx, it, "driver", &r->driver) && ok;
            ok = req_nonempty(dx, it, "pool", &r->pool) && ok;
            ok = req_nonempty(dx, it, "device", &r->device) && ok;
            tly_dx_bool(dx, it, "adminAccess", &r->admin_access);
            if (ok)
                out->nresults++;
            else
                memset(r, 0, sizeof *r);
        }
        tly_dx_pop(dx, imark);
    }
    tly_dx_pop(dx, mark);
}

static void decode_reserved_for(tly_dctx *dx, const tly_node *status, tly_resource_claim *out)
{
    const tly_node *seq = tly_dx_seq(dx, status, "reservedFor");
    if (!seq || seq->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, "reservedFor");
    out->reserved_for = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *out->reserved_for);
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t imark = tly_dx_push_idx(dx, i);
        if (item_is_map(dx, it, "a consumer reference")) {
            tly_consumer_ref *c = &out->reserved_for[out->nreserved_for];
            bool ok = req_nonempty(dx, it, "resource", &c->resource);
            ok = req_nonempty(dx, it, "name", &c->name) && ok;
            ok = req_nonempty(dx, it, "uid", &c->uid) && ok;
            if (ok)
                out->nreserved_for++;
            else
                memset(c, 0, sizeof *c);
        }
        tly_dx_pop(dx, imark);
    }
    tly_dx_pop(dx, mark);
}

void tly_decode_resource_claim(tly_dctx *dx, const tly_node *obj, tly_resource_claim *out)
{
    const tly_node *spec = tly_dx_map(dx, obj, "spec");
    if (spec) {
        size_t mark = tly_dx_push(dx, "spec");
        decode_claim_spec(dx, spec, &out->meta, &out->spec);
        tly_dx_pop(dx, mark);
    }

    const tly_node *status = tly_dx_map(dx, obj, "status");
    if (!status)
        return;
    size_t mark = tly_dx_push(dx, "status");
    const tly_node *alloc = tly_dx_map(dx, status, "allocation");
    if (alloc) {
        out->allocated = true;
        size_t amark = tly_dx_push(dx, "allocation");
        decode_node_selector(dx, alloc, "nodeSelector", &out->alloc_node_terms,
                             &out->nalloc_node_terms, &out->has_alloc_node_selector);
        const tly_node *devices = tly_dx_map(dx, alloc, "devices");
        if (devices) {
            size_t dmark = tly_dx_push(dx, "devices");
            decode_results(dx, devices, out);
            decode_config(dx, devices, "config", &out->alloc_config, &out->nalloc_config);
            tly_dx_pop(dx, dmark);
        }
        tly_dx_pop(dx, amark);
    }
    decode_reserved_for(dx, status, out);
    tly_dx_pop(dx, mark);
}

/* ---- ResourceClaimTemplate ----------------------------------------------- */

void tly_decode_claim_template(tly_dctx *dx, const tly_node *obj, tly_claim_template *out)
{
    const tly_node *spec = tly_dx_map(dx, obj, "spec");
    if (!spec)
        return;
    size_t mark = tly_dx_push(dx, "spec");
    const tly_node *inner = tly_node_member(spec, "spec");
    if (!inner) {
        tly_dx_error(dx, spec, "spec", "required field is missing");
    } else if ((inner = tly_dx_map(dx, spec, "spec")) != NULL) {
        size_t imark = tly_dx_push(dx, "spec");
        decode_claim_spec(dx, inner, &out->meta, &out->spec);
        tly_dx_pop(dx, imark);
    }
    tly_dx_pop(dx, mark);
}

/* ---- ResourceSlice -------------------------------------------------------- */


static void decode_device_attrs(tly_dctx *dx, const tly_node *body, tly_device *d)
{
    const tly_node *m = tly_dx_map(dx, body, "attributes");
    if (!m || m->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, "attributes");
    d->attrs = tly_arena_zalloc(dx->arena, m->nkids * sizeof *d->attrs);
    for (const tly_node *a = m->kids; a; a = a->next) {
        size_t amark = tly_dx_push(dx, a->key);
        const char *name = tly_arena_strdup(dx->arena, a->key);
        if (tly_dx_attr_value(dx, a, name, &d->attrs[d->nattrs]))
            d->nattrs++;
        else
            memset(&d->attrs[d->nattrs], 0, sizeof *d->attrs);
        tly_dx_pop(dx, amark);
    }
    tly_dx_pop(dx, mark);
}

/*
** body[key]: name -> {value: quantity} (capacity, counters); a bare quantity
** (v1alpha3's capacity form) is also read.
*/
static void decode_qty_map(tly_dctx *dx, const tly_node *body, const char *key,
                           tly_capacity **out, uint32_t *n)
{
    const tly_node *m = tly_dx_map(dx, body, key);
    if (!m || m->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, key);
    *out = tly_arena_zalloc(dx->arena, m->nkids * sizeof **out);
    for (const tly_node *c = m->kids; c; c = c->next) {
        tly_capacity *cap = &(*out)[*n];
        bool ok;
        if (c->type == TLY_N_MAP) {
            size_t cmark = tly_dx_push(dx, c->key);
            if (!tly_node_member(c, "value")) {
                tly_dx_error(dx, c, "value", "required field is missing");
                ok = false;
            } else {
                ok = tly_dx_qty(dx, c, "value", &cap->value);
            }
            tly_dx_pop(dx, cmark);
        } else {
            ok = tly_dx_qty(dx, m, c->key, &cap->value);
        }
        if (ok) {
            cap->name = tly_arena_strdup(dx->arena, c->key);
            cap->id = tly_names_intern(dx->names, c->key, strlen(c->key));
            (*n)++;
        }
    }
    tly_dx_pop(dx, mark);
}

/*
** A list of counter sets at body[key]: sharedCounters ({name, counters}) or
** consumesCounters ({counterSet, counters}).
*/
static void decode_counter_sets(tly_dctx *dx, const tly_node *body, const char *key,
                                tly_counter_set **out, uint32_t *n)
{
    const tly_node *seq = tly_dx_seq(dx, body, key);
    if (!seq || seq->nkids == 0)
        return;
    bool shared = strcmp(key, "sharedCounters") == 0;
    size_t mark = tly_dx_push(dx, key);
    *out = tly_arena_zalloc(dx->arena, seq->nkids * sizeof **out);
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t imark = tly_dx_push_idx(dx, i);
        tly_counter_set *cs = &(*out)[*n];
        if (item_is_map(dx, it, "a counter set") &&
            req_nonempty(dx, it, shared ? "name" : "counterSet", &cs->name)) {
            decode_qty_map(dx, it, "counters", &cs->counters, &cs->ncounters);
            (*n)++;
        }
        tly_dx_pop(dx, imark);
    }
    tly_dx_pop(dx, mark);
}

/* spec.devices[i].taints: {key, value, effect}. */
static void decode_device_taints(tly_dctx *dx, const tly_node *body, tly_device *d)
{
    static const char *const effects[] = {"None", "NoSchedule", "NoExecute", NULL};
    const tly_node *seq = tly_dx_seq(dx, body, "taints");
    if (!seq || seq->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, "taints");
    d->taints = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *d->taints);
    uint32_t i = 0;
    for (const tly_node *it = seq->kids; it; it = it->next, i++) {
        size_t imark = tly_dx_push_idx(dx, i);
        tly_taint *t = &d->taints[d->ntaints];
        if (item_is_map(dx, it, "a device taint") && req_nonempty(dx, it, "key", &t->key) &&
            tly_dx_req_str(dx, it, "effect", &t->effect) &&
            tly_dx_enum(dx, it, "effect", effects, &t->effect)) {
            tly_dx_str(dx, it, "value", &t->value);
            if (t->value && !*t->value)
                t->value = NULL;
            d->ntaints++;
        } else {
            memset(t, 0, sizeof *t);
        }
        tly_dx_pop(dx, imark);
    }
    tly_dx_pop(dx, mark);
}

/*
** A device's content (v1beta1: under `basic`): attributes, capacity,
** taints, consumesCounters and, in a perDeviceNodeSelection slice, its own
** nodeName, allNodes or nodeSelector (exactly one).
*/
static void decode_device_body(tly_dctx *dx, const tly_node *body, const tly_resource_slice *sl,
                               tly_device *d)
{
    decode_device_attrs(dx, body, d);
    decode_qty_map(dx, body, "capacity", &d->capacity, &d->ncapacity);
    decode_device_taints(dx, body, d);
    decode_counter_sets(dx, body, "consumesCounters", &d->consumes, &d->nconsumes);
    tly_dx_str(dx, body, "nodeName", &d->node_name);
    if (d->node_name && !*d->node_name)
        d->node_name = NULL;
    tly_dx_bool(dx, body, "allNodes", &d->all_nodes);
    decode_node_selector(dx, body, "nodeSelector", &d->node_terms, &d->nnode_terms,
                         &d->has_node_selector);
    int set = (d->node_name != NULL) + d->all_nodes + d->has_node_selector;
    if (sl->per_device_node_selection && set != 1)
        tly_dx_error(dx, body, "nodeName",
                     "a device of a perDeviceNodeSelection slice must set exactly one of "
                     "nodeName, allNodes or nodeSelector");
    else if (!sl->per_device_node_selection && set != 0)
        tly_dx_error(dx, body, "nodeName",
                     "only devices of a perDeviceNodeSelection slice may set nodeName, allNodes "
                     "or nodeSelector");
}

void tly_decode_resource_slice(tly_dctx *dx, const tly_node *obj, tly_resource_slice *out)
{
    const tly_node *spec = tly_dx_map(dx, obj, "spec");
    size_t mark = tly_dx_push(dx, "spec");
    req_nonempty(dx, spec, "driver", &out->driver);

    const tly_node *pool = tly_node_member(spec, "pool");
    if (!pool) {
        tly_dx_error(dx, spec, "pool", "required field is missing");
    } else if ((pool = tly_dx_map(dx, spec, "pool")) != NULL) {
        size_t pmark = tly_dx_push(dx, "pool");
        req_nonempty(dx, pool, "name", &out->pool);
        tly_dx_int64(dx, pool, "generation", &out->generation);
        tly_dx_int64(dx, pool, "resourceSliceCount", &out->slice_count);
        if (!tly_node_member(pool, "resourceSliceCount"))
            tly_dx_error(dx, pool, "resourceSliceCount", "required field is missing");
        else if (out->slice_count <= 0)
            tly_dx_error(dx, tly_node_member(pool, "resourceSliceCount"), "resourceSliceCount",
                         "must be greater than zero");
        tly_dx_pop(dx, pmark);
    }
    tly_dx_str(dx, spec, "nodeName", &out->node_name);
    if (out->node_name && out->node_name[0] == '\0')
        out->node_name = NULL;
    tly_dx_bool(dx, spec, "allNodes", &out->all_nodes);
    /* A NodeSelector: devices reachable from the nodes its terms select. */
    decode_node_selector(dx, spec, "nodeSelector", &out->node_terms, &out->nnode_terms,
                         &out->has_node_selector);
    tly_dx_bool(dx, spec, "perDeviceNodeSelection", &out->per_device_node_selection);
    decode_counter_sets(dx, spec, "sharedCounters", &out->counter_sets, &out->ncounter_sets);

    const tly_node *seq = tly_dx_seq(dx, spec, "devices");
    if (seq && seq->nkids > 0) {
        size_t dmark = tly_dx_push(dx, "devices");
        out->devices = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *out->devices);
        uint32_t i = 0;
        for (const tly_node *it = seq->kids; it; it = it->next, i++) {
            size_t imark = tly_dx_push_idx(dx, i);
            if (item_is_map(dx, it, "a device")) {
                tly_device *d = &out->devices[out->ndevices];
                if (req_nonempty(dx, it, "name", &d->name)) {
                    /* v1beta1 nests the device's content under `basic`. */
                    if (tly_node_member(it, "basic")) {
                        const tly_node *basic = tly_dx_map(dx, it, "basic");
                        size_t bmark = tly_dx_push(dx, "basic");
                        decode_device_body(dx, basic, out, d);
                        tly_dx_pop(dx, bmark);
                    } else {
                        decode_device_body(dx, it, out, d);
                    }
                    out->ndevices++;
                }
            }
            tly_dx_pop(dx, imark);
        }
        tly_dx_pop(dx, dmark);
    }
    tly_dx_pop(dx, mark);
}

/* ---- DeviceClass ---------------------------------------------------------- */

void tly_decode_device_class(tly_dctx *dx, const tly_node *obj, tly_device_class *out)
{
    const tly_node *spec = tly_dx_map(dx, obj, "spec");
    if (!spec)
        return;
    size_t mark = tly_dx_push(dx, "spec");
    decode_selectors(dx, spec, "selectors", &out->selectors, &out->nselectors);
    tly_dx_pop(dx, mark);
}
