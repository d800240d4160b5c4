/*
** anonymize.c: which strings of an object are kept and which are renamed
** (anonymize.h; the tokens are chosen in anonymize_order.c).
**
** One walk serves both passes, so the two can never disagree about what a
** position holds. The walk follows a schema of positions, compiled from the
** rule table below into a trie per kind plus generic rules that apply at
** any depth (conditions, selectors, tolerations, resource maps). Where no
** rule speaks, a string value is renamed and a map key is kept, since it is
** a field name. A string value is one of:
**   kept       enums, resource and device-class names, CEL expressions, ...;
**   renamed    names, uids, messages, anything unknown;
**   a label key (kept when tally reads it or its domain is Kubernetes',
**              NVIDIA's, AMD's, KAI's or kruntimes', else renamed);
**   a composite "request/subrequest" (each part on its own);
**   a label value tally checks (kept when it is not one: a token is always
**              valid, and would turn a Run tally refuses into one it places).
** Map keys are field names (kept, never compared with values), label keys
** (labels, annotations, node selectors, matchLabels, AccountedResource
** nodeLabels) or names with accounting meaning (resource maps, device
** attributes and capacities: kept).
**
** Pass 1 notes every string in one table with whether it was seen in a kept
** position. A string kept anywhere is kept everywhere: the mapping is one,
** global, so equal strings stay equal across positions. Constants tally
** treats specially (default-queue, kai-scheduler, the enums) are in the
** table from the start, so tokens avoid them and keep their order against
** them even when the input does not hold them.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anonymize_int.h"
#include "strmap.h"
#include "tally/crd.h"
#include "tally/error.h"
#include "tally/json.h"
#include "tally/labelsyntax.h"

/* What a string value is (a position's role). */
enum { R_RENAME = 0, R_KEEP, R_LABELKEY, R_SPLIT, R_CEL, R_PRIOCLASS, R_LABELVALUE };
/* What the keys of a map are. */
/* K_SELECTOR: matchLabels, label keys whose values are compiled as label values. */
enum { K_FIELD = 0, K_LABEL, K_NAME, K_SELECTOR };

typedef struct sch sch;
struct sch {
    uint8_t vrole, krole;
    sch *wild;          /* the schema of every member's value (K_NAME maps) */
    tly_strmap kids;    /* member key -> sch */
    sch *next;          /* every node, for destroy */
};

struct tly_anonymizer {
    tly_arena *a;
    tly_strmap known;             /* string -> entry index + 1 */
    tly_anon_entry *e;
    size_t n, cap;
    tly_anon_entry **sorted;      /* once sealed, in byte order */
    sch *generic;                 /* rules that apply at any depth */
    sch *nodes;
    tly_strmap kinds;             /* kind -> schema of its objects */
    tly_strmap label_keys;        /* label and annotation keys tally reads */
    tly_strmap domains;           /* key prefixes owned by Kubernetes and the projects tally follows */
    tly_strmap value_keys;        /* keys whose values are numbers, enums or JSON of quantities */
    bool sealed, reverse;
    tly_anon_stats stats;
};

typedef struct {
    const char *kind;   /* NULL: at any depth, starting at any member named like the first segment */
    const char *path;   /* member keys joined by '.', list levels left out; '*' any member */
    uint8_t vrole, krole;
} rule;

static const rule rules[] = {
    {NULL, "apiVersion", R_KEEP, 0},
    {NULL, "kind", R_KEEP, 0},
    {NULL, "labels", 0, K_LABEL},
    {NULL, "annotations", 0, K_LABEL},
    {NULL, "matchLabels", 0, K_SELECTOR},
    {NULL, "nodeLabels", 0, K_LABEL},
    {NULL, "matchExpressions.key", R_LABELKEY, 0},
    {NULL, "matchExpressions.operator", R_KEEP, 0},
    {NULL, "matchExpressions.values", R_LABELVALUE, 0},
    {NULL, "matchFields.key", R_KEEP, 0},
    {NULL, "matchFields.operator", R_KEEP, 0},
    {NULL, "topologyKey", R_LABELKEY, 0},
    {NULL, "tolerations.key", R_LABELKEY, 0},
    {NULL, "tolerations.operator", R_KEEP, 0},
    {NULL, "tolerations.effect", R_KEEP, 0},
    {NULL, "taints.key", R_LABELKEY, 0},
    {NULL, "taints.effect", R_KEEP, 0},
    {NULL, "conditions.type", R_KEEP, 0},
    {NULL, "conditions.status", R_KEEP, 0},
    {NULL, "conditions.reason", R_KEEP, 0},
    {NULL, "resources.requests", 0, K_NAME},
    {NULL, "resources.limits", 0, K_NAME},
    {NULL, "allocatedResources", 0, K_NAME},
    {NULL, "resourceName", R_KEEP, 0},
    {NULL, "deviceClassName", R_KEEP, 0},
    {NULL, "driver", R_KEEP, 0},
    {NULL, "allocationMode", R_KEEP, 0},
    {NULL, "selectors.cel.expression", R_CEL, 0},
    {NULL, "schedulerName", R_KEEP, 0},
    {NULL, "phase", R_KEEP, 0},
    {NULL, "qosClass", R_KEEP, 0},
    {NULL, "restartPolicy", R_KEEP, 0},
    {NULL, "whenUnsatisfiable", R_KEEP, 0},
    {NULL, "preemptibility", R_KEEP, 0},
    {"Pod", "spec.nodeSelector", 0, K_LABEL},
    {"Pod", "spec.overhead", 0, K_NAME},
    {"Node", "status.allocatable", 0, K_NAME},
    {"Node", "status.capacity", 0, K_NAME},
    {"Runtime", "spec.capacity.resources", 0, K_NAME},
    {"ResourceSlice", "spec.devices.attributes", 0, K_NAME},
    {"ResourceSlice", "spec.devices.attributes.*.version", R_KEEP, 0},
    {"ResourceSlice", "spec.devices.basic.attributes", 0, K_NAME},
    {"ResourceSlice", "spec.devices.basic.attributes.*.version", R_KEEP, 0},
    {"ResourceSlice", "spec.devices.capacity", 0, K_NAME},
    {"ResourceSlice", "spec.devices.basic.capacity", 0, K_NAME},
    {"ResourceClaim", "spec.devices.config.requests", R_SPLIT, 0},
    {"ResourceClaim", "status.allocation.devices.results.request", R_SPLIT, 0},
    {"ResourceClaim", "status.allocation.devices.config.requests", R_SPLIT, 0},
    {"ResourceClaim", "status.reservedFor.resource", R_KEEP, 0},
    {"ResourceClaim", "status.reservedFor.apiGroup", R_KEEP, 0},
    {"ResourceClaimTemplate", "spec.spec.devices.config.requests", R_SPLIT, 0},
    /* A constraint names an attribute as "<domain>/<name>" (the driver and an attribute, both
       kept) and the requests it binds (renamed as the requests are). */
    {"ResourceClaim", "spec.devices.constraints.matchAttribute", R_KEEP, 0},
    {"ResourceClaim", "spec.devices.constraints.distinctAttribute", R_KEEP, 0},
    {"ResourceClaim", "spec.devices.constraints.requests", R_SPLIT, 0},
    {"ResourceClaimTemplate", "spec.spec.devices.constraints.matchAttribute", R_KEEP, 0},
    {"ResourceClaimTemplate", "spec.spec.devices.constraints.distinctAttribute", R_KEEP, 0},
    {"ResourceClaimTemplate", "spec.spec.devices.constraints.requests", R_SPLIT, 0},
    {"DeviceClass", "metadata.name", R_KEEP, 0},
    {"PriorityClass", "metadata.name", R_PRIOCLASS, 0},
    {"AccountedResource", "spec.sources.podAnnotation.key", R_KEEP, 0},
    {"AccountedResource", "spec.sources.podAnnotation.unit", R_KEEP, 0},
    {"AccountedResource", "spec.sources.quantity.podAnnotation.unit", R_KEEP, 0},
    {"AccountedResource", "spec.sources.match.dra.deviceAttributes", 0, K_NAME},
    {"AccountedResource", "spec.sources.match.dra.deviceAttributes.*.version", R_KEEP, 0},
    {"AccountedResource", "spec.sources.quantity.dra.selectedCapacity.capacityName", R_KEEP, 0},
    {"AccountedResource", "spec.sources.quantity.dra.opaqueConfigField.path", R_KEEP, 0},
    {"AccountedResource", "spec.sources.quantity.dra.opaqueConfigField.unit", R_KEEP, 0},
    {"Run", "spec.runtime", R_LABELVALUE, 0},
    {"Config", "spec.global.queueLabelKey", R_KEEP, 0},
    {"Config", "spec.global.gpuSharingMode", R_KEEP, 0},
    {"PodGroup", "spec.topologyConstraint.requiredTopologyLevel", R_LABELKEY, 0},
    {"PodGroup", "spec.topologyConstraint.preferredTopologyLevel", R_LABELKEY, 0},
};

/* Label and annotation keys tally reads by name, and the Kubernetes ones every pod carries. */
static const char *const read_keys[] = {
    "app", "runtime", "pod-group-name", "runai-gpu-group", "gpu-fraction", "gpu-memory",
    "gpu-fraction-num-devices", "mps", "priorityClassName", "job-name", "controller-uid",
    "pod-template-hash", "controller-revision-hash", "pod-template-generation", NULL};
/* Key prefixes (and their subdomains) whose keys are public vocabulary. */
static const char *const kept_domains[] = {"kubernetes.io", "k8s.io", "nvidia.com", "amd.com",
                                           "kai.scheduler", "run.ai", "kruntimes.io", NULL};
/* Keys whose values are read as numbers, enums or JSON of quantities: kept whole. */
static const char *const numeric_keys[] = {
    "gpu-fraction", "gpu-memory", "gpu-fraction-num-devices", "mps",
    "kai.scheduler/queue-admission-gating", "kai.scheduler/preemptibility",
    "nvidia.com/gpu.memory", "kruntimes.io/capacities", NULL};
#define CAPACITY_KEY_PREFIX "kruntimes.io/capacity."
/* Values tally compares with or fills in: kept, and tokens keep their order against them. */
static const char *const constants[] = {
    "", "default", "default-queue", "kai-scheduler", "default-scheduler",
    "kai-resource-reservation", "runai-reservation", "gpu-memory", "kai.scheduler/queue",
    "kai.scheduler/queue-admission", "kruntimes.io/runtime-pod", "kruntimes.io/RuntimedReady",
    "kube-system", "kube-public", "kube-node-lease", "metadata.name", "pods", "runs", "cpu",
    "memory", "ephemeral-storage", "nvidia.com/gpu", "amd.com/gpu", "true", "false", "Pending",
    "Running", "Succeeded", "Failed", "Unknown", "Scheduled", "Ready", "Timeout", "Cancelled",
    "True", "False", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Equal", "NoSchedule",
    "PreferNoSchedule", "NoExecute", "DoNotSchedule", "ScheduleAnyway", "Always", "OnFailure",
    "Never", "preemptible", "non-preemptible", "ExactCount", "All", "task", "function",
    "Disabled", "Infeasible", "Deferred", "InProgress", "PodScheduled", "PodResizePending",
    "PodResizeInProgress", "Assigned", "Guaranteed", "Burstable", "BestEffort", NULL};

/* ---- the table of strings ------------------------------------------------ */

static tly_anon_entry *find(const tly_anonymizer *an, const char *s, size_t len)
{
    uintptr_t i = (uintptr_t)tly_strmap_get(&an->known, s, len);
    return i ? &an->e[i - 1] : NULL;
}

static void note(tly_anonymizer *an, const char *s, size_t len, bool kept)
{
    tly_anon_entry *e = find(an, s, len);
    if (!e) {
        if (an->n == an->cap) {
            an->cap = an->cap ? an->cap * 2 : 1024;
            an->e = tly_xrealloc(an->e, an->cap * sizeof *an->e);
        }
        e = &an->e[an->n++];
        e->s = tly_arena_strndup(an->a, s, len);
        e->len = (uint32_t)len;
        e->kept = false;
        e->token = NULL;
        tly_strmap_put(&an->known, e->s, len, (void *)(uintptr_t)an->n);
    }
    if (kept)
        e->kept = true;
}

static void set_add(tly_anonymizer *an, tly_strmap *set, const char *const *v)
{
    for (; *v; v++) {
        tly_strmap_put(set, *v, strlen(*v), (void *)1);
        note(an, *v, strlen(*v), true);
    }
}

/* ---- the schema ---------------------------------------------------------- */

static sch *sch_new(tly_anonymizer *an)
{
    sch *s = tly_arena_zalloc(an->a, sizeof *s);
    tly_strmap_init(&s->kids);
    s->next = an->nodes;
    an->nodes = s;
    return s;
}

static sch *sch_kid(tly_anonymizer *an, sch *s, const char *key, size_t len)
{
    if (len == 1 && key[0] == '*') {
        if (!s->wild)
            s->wild = sch_new(an);
        return s->wild;
    }
    sch *k = tly_strmap_get(&s->kids, key, len);
    if (!k) {
        k = sch_new(an);
        tly_strmap_put(&s->kids, tly_arena_strndup(an->a, key, len), len, k);
    }
    return k;
}

static sch *kind_root(tly_anonymizer *an, const char *kind)
{
    sch *s = tly_strmap_get(&an->kinds, kind, strlen(kind));
    if (!s) {
        s = sch_new(an);
        tly_strmap_put(&an->kinds, kind, strlen(kind), s);
    }
    return s;
}

static void compile_rules(tly_anonymizer *an)
{
    an->generic = sch_new(an);
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const rule *r = &rules[i];
        sch *s = r->kind ? kind_root(an, r->kind) : an->generic;
        for (const char *p = r->path; *p;) {
            const char *dot = strchr(p, '.');
            size_t len = dot ? (size_t)(dot - p) : strlen(p);
            s = sch_kid(an, s, p, len);
            p += len + (dot != NULL);
        }
        s->vrole = r->vrole;
        s->krole = r->krole;
    }
}

/* The schema of member `key` under s: the kind's own rule, else a generic one. */
static const sch *child(const tly_anonymizer *an, const sch *s, const char *key)
{
    size_t len = strlen(key);
    const sch *c = s ? tly_strmap_get(&s->kids, key, len) : NULL;
    return c ? c : tly_strmap_get(&an->generic->kids, key, len);
}

/* ---- label keys ---------------------------------------------------------- */

/* Whether a label or annotation key is kept: tally reads it, or its domain is public vocabulary. */
static bool label_key_kept(const tly_anonymizer *an, const char *k, size_t len)
{
    if (tly_strmap_get(&an->label_keys, k, len))
        return true;
    const char *slash = memchr(k, '/', len);
    if (!slash)
        return false;
    /* The domain and each parent of it: node.kubernetes.io, kubernetes.io. */
    for (const char *d = k; d && d < slash; d = memchr(d, '.', (size_t)(slash - d))) {
        if (*d == '.')
            d++;
        if (tly_strmap_get(&an->domains, d, (size_t)(slash - d)))
            return true;
    }
    return false;
}

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Kubernetes' label value syntax, as decode_kruntimes.c checks a Run's spec.runtime. */
static bool valid_label_value(const char *s, size_t len)
{
    bool ok = len >= 1 && len <= 63 && alnum(s[0]) && alnum(s[len - 1]);
    for (size_t i = 1; ok && i + 1 < len; i++)
        ok = alnum(s[i]) || s[i] == '-' || s[i] == '_' || s[i] == '.';
    return ok;
}

static bool label_value_kept(const tly_anonymizer *an, const char *key)
{
    size_t len = strlen(key);
    return tly_strmap_get(&an->value_keys, key, len) ||
           strncmp(key, CAPACITY_KEY_PREFIX, sizeof CAPACITY_KEY_PREFIX - 1) == 0;
}

/* ---- the walk ------------------------------------------------------------ */

typedef struct {
    tly_anonymizer *an;
    tly_arena *a;       /* the tree's arena: composite strings of pass 2 */
    bool rename;
} walk;

static char cel_unescape(char c)
{
    return c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
}

/*
** A CEL expression is kept as written, so every string literal in it is
** kept too, wherever else that string occurs: a selector comparing
** productName with "NVIDIA H200" must still find the devices that say so.
*/
static void note_cel(tly_anonymizer *an, const char *s, size_t len)
{
    note(an, s, len, true);
    char *lit = tly_xmalloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        char q = s[i];
        if (q != '"' && q != '\'')
            continue;
        size_t o = 0, j = i + 1;
        for (; j < len && s[j] != q; j++)
            lit[o++] = s[j] == '\\' && j + 1 < len ? cel_unescape(s[++j]) : s[j];
        note(an, lit, o, true);
        i = j;
    }
    free(lit);
}

static _Noreturn void unseen(const char *s)
{
    fprintf(stderr, "tally: internal error: the anonymizer has no token for \"%.40s\" (an object "
                    "renamed that was not collected); nothing is written\n", s);
    abort();
}

/* The token of s, or s itself when it is kept. */
static const char *mapped(const tly_anonymizer *an, const char *s, size_t len)
{
    const tly_anon_entry *e = find(an, s, len);
    if (!e)
        unseen(s);
    return e->token ? e->token : s;
}

/* "request/subrequest": each part has its own token. */
static void split_parts(walk *w, const char **str, uint32_t *len)
{
    const char *s = *str;
    size_t n = *len, start = 0, parts = 1, o = 0;
    for (size_t i = 0; i < n; i++)
        parts += s[i] == '/';
    char *out = w->rename ? tly_arena_alloc(w->a, n + parts * TLY_ANON_TOKEN_MAX + 1) : NULL;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '/')
            continue;
        if (!w->rename) {
            note(w->an, s + start, i - start, false);
        } else {
            const char *t = mapped(w->an, s + start, i - start);
            size_t tl = t == s + start ? i - start : strlen(t);
            memcpy(out + o, t, tl);
            o += tl;
            if (i < n)
                out[o++] = '/';
        }
        start = i + 1;
    }
    if (w->rename) {
        out[o] = '\0';
        *str = out;
        *len = (uint32_t)o;
    }
}

static void on_string(walk *w, const char **str, uint32_t *len, int role)
{
    tly_anonymizer *an = w->an;
    if (role == R_SPLIT) {
        split_parts(w, str, len);
        return;
    }
    if (w->rename) {
        const char *t = mapped(an, *str, *len);
        if (t != *str) {
            *str = t;
            *len = (uint32_t)strlen(t);
        }
        return;
    }
    if (role == R_CEL)
        note_cel(an, *str, *len);
    else if (role == R_LABELKEY)
        /* An invalid key is kept: a token is always valid, and would make a Run
           affinity that kruntimes fails to compile (labelsyntax.h) compile. */
        note(an, *str, *len, label_key_kept(an, *str, *len) || !tly_label_key_ok(*str));
    else if (role == R_PRIOCLASS)
        note(an, *str, *len, strncmp(*str, "system-", 7) == 0);
    else if (role == R_LABELVALUE)
        note(an, *str, *len, !valid_label_value(*str, *len));
    else
        note(an, *str, *len, role == R_KEEP);
}

static void on_key(walk *w, tly_node *k, int role)
{
    uint32_t len = (uint32_t)strlen(k->key);
    on_string(w, &k->key, &len, role);
}

static void visit(walk *w, tly_node *n, const sch *s);

/*
** One member of a labels-like map: the value first, judged by the original
** key. In a selector (matchLabels) a value that is not label syntax is kept,
** as the selector's validity is part of the outcome.
*/
static void visit_label(walk *w, tly_node *k, bool selector)
{
    if (k->type == TLY_N_STRING)
        on_string(w, &k->str, &k->len,
                  label_value_kept(w->an, k->key) ? R_KEEP : selector ? R_LABELVALUE : R_RENAME);
    else
        visit(w, k, NULL);
    on_key(w, k, R_LABELKEY);
}

static void visit_map(walk *w, tly_node *m, const sch *s)
{
    int krole = s ? s->krole : K_FIELD;
    for (tly_node *k = m->kids; k; k = k->next) {
        if (krole == K_LABEL || krole == K_SELECTOR) {
            visit_label(w, k, krole == K_SELECTOR);
        } else if (krole == K_NAME) {
            visit(w, k, s->wild);
            on_key(w, k, R_KEEP);
        } else {
            visit(w, k, child(w->an, s, k->key));
        }
    }
}

static void visit(walk *w, tly_node *n, const sch *s)
{
    switch (n->type) {
    case TLY_N_STRING:
        on_string(w, &n->str, &n->len, s ? s->vrole : R_RENAME);
        break;
    case TLY_N_MAP:
        visit_map(w, n, s);
        break;
    case TLY_N_SEQ:
        /* List levels are transparent: a rule for spec.containers.name means every container. */
        for (tly_node *k = n->kids; k; k = k->next)
            visit(w, k, s);
        break;
    default:
        break;
    }
}

static void walk_object(tly_anonymizer *an, tly_node *obj, tly_arena *a, bool rename)
{
    if (!obj)
        return;
    walk w = {.an = an, .a = a, .rename = rename};
    const tly_node *kind = obj->type == TLY_N_MAP ? tly_node_get(obj, "kind") : NULL;
    /*
    ** A CustomResourceDefinition is a published schema, not the user's data:
    ** it is written as it is, and its strings (field names, enums, CEL) are
    ** not noted either, so they neither keep a user's string nor move a token.
    */
    if (tly_crd_is_crd(obj))
        return;
    const sch *root = NULL;
    if (kind && kind->type == TLY_N_STRING)
        root = tly_strmap_get(&an->kinds, kind->str, kind->len);
    visit(&w, obj, root);
}

/* ---- the interface ------------------------------------------------------- */

tly_anonymizer *tly_anonymizer_create(void)
{
    tly_anonymizer *an = tly_xcalloc(1, sizeof *an);
    an->a = tly_arena_create(1 << 16);
    tly_strmap_init(&an->known);
    tly_strmap_init(&an->kinds);
    tly_strmap_init(&an->label_keys);
    tly_strmap_init(&an->domains);
    tly_strmap_init(&an->value_keys);
    compile_rules(an);
    set_add(an, &an->label_keys, read_keys);
    set_add(an, &an->domains, kept_domains);
    set_add(an, &an->value_keys, numeric_keys);
    for (const char *const *c = constants; *c; c++)
        note(an, *c, strlen(*c), true);
    return an;
}

void tly_anonymizer_destroy(tly_anonymizer *an)
{
    if (!an)
        return;
    for (sch *s = an->nodes; s; s = s->next)
        tly_strmap_free(&s->kids);
    tly_strmap_free(&an->known);
    tly_strmap_free(&an->kinds);
    tly_strmap_free(&an->label_keys);
    tly_strmap_free(&an->domains);
    tly_strmap_free(&an->value_keys);
    free(an->e);
    free(an->sorted);
    tly_arena_destroy(an->a);
    free(an);
}

void tly_anonymizer_collect(void *ctx, tly_node *obj, tly_arena *a)
{
    tly_anonymizer *an = ctx;
    if (an->sealed) {
        fprintf(stderr, "tally: internal error: the anonymizer collected after it was sealed\n");
        abort();
    }
    walk_object(an, obj, a, false);
}

void tly_anonymizer_seal(tly_anonymizer *an)
{
    if (an->sealed)
        return;
    an->sorted = tly_xmalloc((an->n + 1) * sizeof *an->sorted);
    for (size_t i = 0; i < an->n; i++) {
        tly_anon_entry *e = &an->e[i];
        if (!e->kept && tly_anon_pattern_kept(e->s, e->len))
            e->kept = true;
        an->sorted[i] = e;
    }
    tly_anon_choose(an->sorted, an->n, &an->known, an->a, an->reverse, &an->stats);
    an->sealed = true;
}

void tly_anonymizer_rename(void *ctx, tly_node *obj, tly_arena *a)
{
    tly_anonymizer *an = ctx;
    if (!an->sealed)
        tly_anonymizer_seal(an);
    walk_object(an, obj, a, true);
}

const char *tly_anonymizer_token(const tly_anonymizer *an, const char *original)
{
    const tly_anon_entry *e = an->sealed ? find(an, original, strlen(original)) : NULL;
    return e ? e->token : NULL;
}

void tly_anonymizer_write_map(const tly_anonymizer *an, FILE *out)
{
    fputc('{', out);
    bool first = true;
    for (size_t i = 0; an->sealed && i < an->n; i++) {
        const tly_anon_entry *e = an->sorted[i];
        if (!e->token)
            continue;
        fputs(first ? "\n  " : ",\n  ", out);
        tly_json_write_escaped(out, e->s);
        fputs(": ", out);
        tly_json_write_escaped(out, e->token);
        first = false;
    }
    fputs(first ? "}\n" : "\n}\n", out);
}

void tly_anonymizer_test_reverse(tly_anonymizer *an) { an->reverse = true; }

void tly_anonymizer_stats(const tly_anonymizer *an, tly_anon_stats *out) { *out = an->stats; }

size_t tly_anonymizer_test_table(const tly_anonymizer *an, tly_anon_entry *const **v)
{
    *v = an->sorted;
    return an->sealed ? an->n : 0;
}
