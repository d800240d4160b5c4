/*
** decode_accres.c: scheduling.run.ai/v1alpha1 AccountedResource into
** tly_accres, following the type shape of the seed
** (kai-accounted-resource-api.txt) and the rules of contract section 2.
**
** An AccountedResource says how one logical resource is charged: a list of
** sources, each of exactly one kind (resourceName, dra, podAnnotation), with
** an optional match (node labels, DRA device attributes) and an optional
** quantity rule (DRA selected capacity or opaque config field, or the
** annotation's unit). The proposal leaves the one-of and compatibility
** rules to the admission webhook; tally's `validate` plays that webhook, so
** they are all checked here:
**   - each source sets exactly one of resourceName, dra, podAnnotation;
**   - match.dra and quantity.dra only with a dra source, quantity.podAnnotation
**     only with a podAnnotation source, and a resourceName source takes no
**     quantity at all;
**   - podAnnotation.unit and quantity.podAnnotation.unit, when both are set,
**     must agree;
**   - a unit is a non-empty word of letters (a Kubernetes suffix such as Mi,
**     or a plain word such as percent);
**   - resourceName is a valid Kubernetes resource name.
** The decoded struct only carries what applies to the source's kind: a field
** that breaks a compatibility rule is reported and left out, so the engine
** never has to re-check these rules.
*/
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tally/decode.h"

static tly_src src_at(const tly_dctx *dx, const tly_node *n)
{
    tly_src s = {dx->file, n->line, n->col};
    return s;
}

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The name part of a qualified name: 1..63 of [-A-Za-z0-9_.], alphanumeric at both ends. */
static bool valid_name_part(const char *s, size_t len)
{
    if (len == 0 || len > 63 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* A DNS-1123 subdomain: dot-separated lower-case labels, at most 253 bytes. */
static bool valid_dns_subdomain(const char *s, size_t len)
{
    if (len == 0 || len > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.') {
            char c = s[i];
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
                return false;
            continue;
        }
        /* a label s[start..i) */
        if (i == start || s[start] == '-' || s[i - 1] == '-')
            return false;
        start = i + 1;
    }
    return true;
}

/* Kubernetes' IsQualifiedName: [DNS subdomain "/"] name. */
static bool valid_qualified_name(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash)
        return valid_name_part(s, strlen(s));
    if (strchr(slash + 1, '/'))
        return false;
    return valid_dns_subdomain(s, (size_t)(slash - s)) &&
           valid_name_part(slash + 1, strlen(slash + 1));
}

/* "resourceName, dra" for the names whose have[] is set, or "none". */
static void found_list(char *buf, size_t cap, const char *const *names, const bool *have,
                       int n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (!have[i])
            continue;
        int w = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= cap - used)
            break;
        used += (size_t)w;
    }
    if (used == 0)
        snprintf(buf, cap, "none");
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

/*
** An optional unit. Kubernetes suffixes (n u m k M G T P E Ki Mi Gi Ti Pi
** Ei) are all letters, and any other word charges the number as it is, so
** the one structural rule is: a non-empty word of ASCII letters.
*/
static void decode_unit(tly_dctx *dx, const tly_node *map, const char *key, const char **out)
{
    const char *u;
    if (!tly_dx_str(dx, map, key, &u))
        return;
    bool ok = u[0] != '\0';
    for (const char *p = u; *p && ok; p++)
        ok = is_letter(*p);
    if (!ok) {
        tly_dx_error(dx, tly_node_member(map, key), key,
                     "invalid unit \"%s\": expected a Kubernetes suffix (n, u, m, k, M, G, T, "
                     "P, E, Ki, Mi, Gi, Ti, Pi, Ei) or a word of letters such as percent",
                     u);
        return;
    }
    *out = u;
}


/* match.dra.deviceAttributes: name -> value. */
static void decode_device_attrs(tly_dctx *dx, const tly_node *mdra, tly_accsrc *s, bool keep)
{
    const tly_node *attrs = tly_dx_map(dx, mdra, "deviceAttributes");
    if (!attrs || attrs->nkids == 0)
        return;
    size_t mark = tly_dx_push(dx, "deviceAttributes");
    tly_attr *v = tly_arena_zalloc(dx->arena, attrs->nkids * sizeof *v);
    uint32_t n = 0;
    for (const tly_node *a = attrs->kids; a; a = a->next) {
        size_t amark = tly_dx_push(dx, a->key);
        if (tly_dx_attr_value(dx, a, tly_arena_strdup(dx->arena, a->key), &v[n]))
            n++;
        else
            memset(&v[n], 0, sizeof v[n]);
        tly_dx_pop(dx, amark);
    }
    if (keep) {
        s->match_attrs = v;
        s->nmatch_attrs = n;
    }
    tly_dx_pop(dx, mark);
}

/* quantity.dra: exactly one of selectedCapacity, opaqueConfigField. */
static void decode_quantity_dra(tly_dctx *dx, const tly_node *qdra, tly_accsrc *s, bool keep)
{
    static const char *const kinds[] = {"selectedCapacity", "opaqueConfigField"};
    bool have[2] = {tly_node_member(qdra, kinds[0]) != NULL, tly_node_member(qdra, kinds[1]) != NULL};
    if (have[0] + have[1] != 1) {
        char found[64];
        found_list(found, sizeof found, kinds, have, 2);
        tly_dx_error(dx, qdra, NULL,
                     "must set exactly one of selectedCapacity, opaqueConfigField (found %s)",
                     found);
    }

    const char *cap_name = NULL;
    const tly_node *sc = tly_dx_map(dx, qdra, "selectedCapacity");
    if (sc) {
        size_t mark = tly_dx_push(dx, "selectedCapacity");
        req_nonempty(dx, sc, "capacityName", &cap_name);
        tly_dx_pop(dx, mark);
    }

    const char *driver = NULL, *path = NULL, *unit = NULL;
    bool opaque_ok = false;
    const tly_node *oc = tly_dx_map(dx, qdra, "opaqueConfigField");
    if (oc) {
        size_t mark = tly_dx_push(dx, "opaqueConfigField");
        bool d = req_nonempty(dx, oc, "driver", &driver);
        bool p = req_nonempty(dx, oc, "path", &path);
        decode_unit(dx, oc, "unit", &unit);
        opaque_ok = d && p;
        tly_dx_pop(dx, mark);
    }

    if (!keep || have[0] + have[1] != 1)
        return;
    if (have[0] && cap_name) {
        s->qkind = TLY_QSRC_DRA_CAPACITY;
        s->capacity_name = cap_name;
    } else if (have[1] && opaque_ok) {
        s->qkind = TLY_QSRC_DRA_OPAQUE;
        s->opaque_driver = driver;
        s->opaque_path = path;
        s->opaque_unit = unit;
    }
}

/* The kind a source declares: the one of its three keys that is set, if exactly one is. */
static int declared_kind(tly_dctx *dx, const tly_node *it)
{
    static const char *const kinds[] = {"resourceName", "dra", "podAnnotation"};
    bool have[3];
    int nhave = 0;
    for (int i = 0; i < 3; i++) {
        have[i] = tly_node_member(it, kinds[i]) != NULL;
        nhave += have[i];
    }
    if (nhave == 1)
        return have[0] ? TLY_SRC_RESOURCE_NAME : have[1] ? TLY_SRC_DRA : TLY_SRC_POD_ANNOTATION;
    char found[64];
    found_list(found, sizeof found, kinds, have, 3);
    tly_dx_error(dx, it, NULL,
                 "must set exactly one of resourceName, dra, podAnnotation (found %s)", found);
    return TLY_SRC_NONE;
}

static const char *kind_key(int kind)
{
    switch (kind) {
    case TLY_SRC_RESOURCE_NAME: return "resourceName";
    case TLY_SRC_DRA: return "dra";
    case TLY_SRC_POD_ANNOTATION: return "podAnnotation";
    default: return "none";
    }
}

/*
** One spec.sources[i] (the current path). Every part present is decoded, so
** all its problems are reported; s->kind is set only when the source is
** usable (one kind, its required fields read).
*/
static void decode_source(tly_dctx *dx, const tly_node *it, tly_accsrc *s)
{
    s->src = src_at(dx, it);
    s->resource_id = TLY_NAME_NONE;
    int kind = declared_kind(dx, it);
    bool usable = false;

    const char *rn;
    if (tly_dx_str(dx, it, "resourceName", &rn)) {
        if (!valid_qualified_name(rn)) {
            tly_dx_error(dx, tly_node_member(it, "resourceName"), "resourceName",
                         "invalid resource name \"%s\": expected an optional DNS subdomain "
                         "prefix and '/', then 1-63 letters, digits, '-', '_' or '.', "
                         "starting and ending with a letter or digit",
                         rn);
        } else {
            s->resource_name = rn;
            s->resource_id = tly_names_intern(dx->names, rn, strlen(rn));
            usable = kind == TLY_SRC_RESOURCE_NAME;
        }
    }

    const tly_node *dra = tly_dx_map(dx, it, "dra");
    if (dra) {
        size_t mark = tly_dx_push(dx, "dra");
        if (req_nonempty(dx, dra, "deviceClassName", &s->device_class))
            usable = usable || kind == TLY_SRC_DRA;
        tly_dx_pop(dx, mark);
    }

    const tly_node *pa = tly_dx_map(dx, it, "podAnnotation");
    if (pa) {
        size_t mark = tly_dx_push(dx, "podAnnotation");
        if (req_nonempty(dx, pa, "key", &s->annotation_key))
            usable = usable || kind == TLY_SRC_POD_ANNOTATION;
        decode_unit(dx, pa, "unit", &s->annotation_unit);
        tly_dx_pop(dx, mark);
    }

    /*
    ** Compatibility is only judged against a well-defined kind: with zero or
    ** several kinds the one-of error above already says what to fix.
    */
    bool known = kind != TLY_SRC_NONE;

    const tly_node *match = tly_dx_map(dx, it, "match");
    if (match) {
        size_t mark = tly_dx_push(dx, "match");
        tly_dx_kvs(dx, match, "nodeLabels", &s->match_node_labels);
        const tly_node *mdra = tly_dx_map(dx, match, "dra");
        if (mdra) {
            size_t dmark = tly_dx_push(dx, "dra");
            bool ok = kind == TLY_SRC_DRA;
            if (known && !ok)
                tly_dx_error(dx, mdra, NULL,
                             "match.dra is only allowed with a dra source (this source uses %s)",
                             kind_key(kind));
            decode_device_attrs(dx, mdra, s, ok);
            tly_dx_pop(dx, dmark);
        }
        tly_dx_pop(dx, mark);
    }

    const tly_node *qty = tly_dx_map(dx, it, "quantity");
    if (qty) {
        size_t mark = tly_dx_push(dx, "quantity");
        if (kind == TLY_SRC_RESOURCE_NAME)
            tly_dx_error(dx, qty, NULL,
                         "a resourceName source takes no quantity: it charges the request of "
                         "that resource");

        const tly_node *qdra = tly_dx_map(dx, qty, "dra");
        if (qdra) {
            size_t dmark = tly_dx_push(dx, "dra");
            bool ok = kind == TLY_SRC_DRA;
            if (known && !ok && kind != TLY_SRC_RESOURCE_NAME)
                tly_dx_error(dx, qdra, NULL,
                             "quantity.dra is only allowed with a dra source (this source uses %s)",
                             kind_key(kind));
            decode_quantity_dra(dx, qdra, s, ok);
            tly_dx_pop(dx, dmark);
        }

        const tly_node *qpa = tly_dx_map(dx, qty, "podAnnotation");
        if (qpa) {
            size_t pmark = tly_dx_push(dx, "podAnnotation");
            bool ok = kind == TLY_SRC_POD_ANNOTATION;
            if (known && !ok && kind != TLY_SRC_RESOURCE_NAME)
                tly_dx_error(dx, qpa, NULL,
                             "quantity.podAnnotation is only allowed with a podAnnotation source "
                             "(this source uses %s)",
                             kind_key(kind));
            const char *unit = NULL;
            decode_unit(dx, qpa, "unit", &unit);
            if (ok && unit && s->annotation_unit && strcmp(unit, s->annotation_unit) != 0)
                tly_dx_error(dx, tly_node_member(qpa, "unit"), "unit",
                             "unit \"%s\" conflicts with podAnnotation.unit \"%s\": set one of "
                             "them, or the same unit in both",
                             unit, s->annotation_unit);
            else if (ok && unit)
                s->qty_annotation_unit = unit;
            if (ok)
                s->qkind = TLY_QSRC_POD_ANNOTATION;
            tly_dx_pop(dx, pmark);
        }
        tly_dx_pop(dx, mark);
    }

    s->kind = usable ? (uint8_t)kind : TLY_SRC_NONE;
}

void tly_decode_accres(tly_dctx *dx, const tly_node *obj, tly_accres *out)
{
    out->default_limit = tly_qty_from_int(-1, TLY_QFMT_DECIMAL_SI);

    const tly_node *spec = tly_dx_map(dx, obj, "spec");
    size_t mark = tly_dx_push(dx, "spec");

    const tly_node *defaults = tly_dx_map(dx, spec, "defaults");
    if (defaults) {
        size_t dmark = tly_dx_push(dx, "defaults");
        tly_qty lim;
        if (tly_dx_qty(dx, defaults, "limit", &lim)) {
            if (tly_qty_sign(lim) < 0 && lim.nanos != -(tly_i128)1000000000) {
                tly_dx_error(dx, tly_node_member(defaults, "limit"), "limit",
                             "must be -1 (unlimited) or a non-negative quantity");
            } else {
                out->has_default_limit = true;
                out->default_limit = lim;
            }
        }
        tly_dx_pop(dx, dmark);
    }

    const tly_node *sources = tly_node_member(spec, "sources");
    const tly_node *seq = tly_dx_seq(dx, spec, "sources");
    if (!sources) {
        tly_dx_error(dx, spec, "sources", "sources is required");
    } else if (seq && seq->nkids == 0) {
        tly_dx_error(dx, seq, "sources", "must have at least one source");
    } else if (seq) {
        size_t smark = tly_dx_push(dx, "sources");
        out->sources = tly_arena_zalloc(dx->arena, seq->nkids * sizeof *out->sources);
        uint32_t i = 0;
        for (const tly_node *it = seq->kids; it; it = it->next, i++) {
            size_t imark = tly_dx_push_idx(dx, i);
            /* Every entry keeps its slot (kind NONE when unusable), so indexes match the input. */
            tly_accsrc *s = &out->sources[out->nsources++];
            if (it->type != TLY_N_MAP) {
                s->src = src_at(dx, it);
                s->resource_id = TLY_NAME_NONE;
                tly_dx_error(dx, it, NULL,
                             "must be a map with one of resourceName, dra, podAnnotation, not %s",
                             tly_ntype_name(it->type));
            } else {
                decode_source(dx, it, s);
            }
            tly_dx_pop(dx, imark);
        }
        tly_dx_pop(dx, smark);
    }

    tly_dx_pop(dx, mark);
}
