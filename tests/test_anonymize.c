/*
** test_anonymize.c: `tally snapshot --anonymize` (anonymize.h,
** docs/anonymize.md, contract section 9).
**
** Four properties, each as a test that can fail:
**   - positions: what is kept and what is renamed, object by object, on
**     tests/anonymize/positions.json (one object of most kinds, with a
**     string at every position the rules speak of);
**   - one mapping: a string has one token wherever it stands;
**   - byte order: over random sets of strings (prefixes of each other,
**     kept neighbours with no room at a short length, empty strings, control
**     bytes), original order equals token order, kept strings included, and
**     no token is an original; with the order deliberately reversed (a test
**     switch) the check fails;
**   - results: for every scenario of tests/scenarios/ and examples/cluster,
**     the engines give on the anonymized objects what they give on the
**     originals, every name mapped through tly_anonymizer_token(); with the
**     reversed order they do not.
** The scenarios are YAML: libfyaml's document API turns them into value
** trees here (scalar types by tally's own plain-scalar rule), and each
** conversion is checked against tally's loader reading the same files.
*/
#include "testutil.h"

#include <dirent.h>
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "anonymize_int.h"
#include "tally/anonymize.h"
#include "tally/decode.h"
#include "tally/error.h"
#include "tally/json.h"
#include "tally/kruntimes.h"
#include "tally/node.h"
#include "tally/nodewrite.h"
#include "tally/podsched.h"
#include "tally/queues.h"
#include "tally/runsched.h"

/* ---- small helpers ------------------------------------------------------ */

static char *read_all(const char *path, size_t *len)
{
    *len = 0;  /* set on failure too: Release's -O2 cannot see assert_non_null end the caller */
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        cap = cap ? cap * 2 : 65536;
        buf = realloc(buf, cap + 1);
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (n == cap);
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int bytecmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

static const char *anon_of(const tly_anon_entry *e)
{
    return e->token ? e->token : e->s;
}

/* The table entry of s, or NULL (the sealed table is sorted). */
static const tly_anon_entry *table_find(const tly_anonymizer *an, const char *s, size_t len)
{
    tly_anon_entry *const *v;
    size_t lo = 0, hi = tly_anonymizer_test_table(an, &v);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = bytecmp(v[mid]->s, v[mid]->len, s, len);
        if (c == 0)
            return v[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A member of map n by key, or element i of a list. */
static tly_node *member(tly_node *n, const char *key, size_t len)
{
    for (tly_node *k = n ? n->kids : NULL; k; k = k->next)
        if (k->key && strlen(k->key) == len && !memcmp(k->key, key, len))
            return k;
    return NULL;
}

/*
** The node at path under n: member keys separated by '.', "[i]" for list
** elements, and "{...}" for a key taken as written (label keys have dots).
*/
static tly_node *at(tly_node *n, const char *path)
{
    const char *p = path;
    while (n && *p) {
        if (*p == '.') {
            p++;
        } else if (*p == '[') {
            unsigned long i = strtoul(p + 1, (char **)&p, 10);
            p++;
            tly_node *k = n->kids;
            while (k && i--)
                k = k->next;
            n = k;
        } else {
            bool braced = *p == '{';
            const char *start = p + braced;
            size_t len = braced ? strcspn(start, "}") : strcspn(start, ".[");
            n = member(n, start, len);
            p = start + len + braced;
        }
    }
    return n;
}

/* Parses a List's text: its items (in arena a). */
static tly_node *list_items(const char *text, size_t len, tly_arena *a)
{
    tly_node *root = tly_parse_value(text, len, a);
    assert_non_null(root);
    tly_node *items = member(root, "items", 5);
    assert_non_null(items);
    return items;
}

/* The item of that kind and name. */
static tly_node *item(tly_node *items, const char *kind, const char *name)
{
    for (tly_node *it = items->kids; it; it = it->next) {
        tly_node *k = at(it, "kind"), *nm = at(it, "metadata.name");
        if (k && nm && !strcmp(k->str, kind) && !strcmp(nm->str, name))
            return it;
    }
    fail_msg("no %s %s in the fixture", kind, name);
    return NULL;
}

static const char *str_at(tly_node *n, const char *path)
{
    tly_node *v = at(n, path);
    if (!v || v->type != TLY_N_STRING)
        fail_msg("no string at %s", path);
    return v->str;
}

/* ---- positions: tests/anonymize/positions.json -------------------------- */

typedef struct {
    tly_arena *a;
    tly_anonymizer *an;
    tly_node *orig, *anon;   /* the items before and after renaming */
} fixture;

static void fixture_load(fixture *fx, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/anonymize/%s", TALLY_SOURCE_DIR, file);
    size_t len;
    char *text = read_all(path, &len);
    assert_non_null(text);
    fx->a = tly_arena_create(1 << 16);
    fx->orig = list_items(text, len, fx->a);
    fx->anon = list_items(text, len, fx->a);
    free(text);
    fx->an = tly_anonymizer_create();
    for (tly_node *it = fx->anon->kids; it; it = it->next)
        tly_anonymizer_collect(fx->an, it, fx->a);
    tly_anonymizer_seal(fx->an);
    for (tly_node *it = fx->anon->kids; it; it = it->next)
        tly_anonymizer_rename(fx->an, it, fx->a);
}

static void fixture_free(fixture *fx)
{
    tly_anonymizer_destroy(fx->an);
    tly_arena_destroy(fx->a);
}

/* The same item in the renamed list. */
static tly_node *twin(const fixture *fx, const tly_node *orig_item)
{
    tly_node *b = fx->anon->kids;
    for (tly_node *o = fx->orig->kids; o && o != orig_item; o = o->next)
        b = b->next;
    return b;
}

static void expect_kept(const fixture *fx, tly_node *it, const char *path)
{
    const char *o = str_at(it, path), *r = str_at(twin(fx, it), path);
    if (strcmp(o, r) != 0)
        fail_msg("%s: \"%s\" should be kept, became \"%s\"", path, o, r);
}

static void expect_renamed(const fixture *fx, tly_node *it, const char *path)
{
    const char *o = str_at(it, path), *r = str_at(twin(fx, it), path);
    const char *tok = tly_anonymizer_token(fx->an, o);
    if (!tok || strcmp(tok, o) == 0 || strcmp(r, tok) != 0)
        fail_msg("%s: \"%s\" should be renamed (token %s), is \"%s\"", path, o, tok ? tok : "none", r);
}

/* Key `key` of the map at path: kept as it is, or renamed to its token. */
static void expect_key(const fixture *fx, tly_node *it, const char *path, const char *key, bool kept)
{
    tly_node *m = at(twin(fx, it), path);
    assert_non_null(member(at(it, path), key, strlen(key)));
    const char *tok = tly_anonymizer_token(fx->an, key);
    const char *want = kept ? key : tok;
    if ((kept && tok) || !want || !member(m, want, strlen(want)) ||
        (!kept && member(m, key, strlen(key))))
        fail_msg("%s: key \"%s\" should be %s", path, key, kept ? "kept" : "renamed");
}

/* What one position of the fixture must become. */
enum { KEPT, RENAMED, KEY_KEPT, KEY_RENAMED };
typedef struct {
    const char *kind, *name;
    int want;
    const char *path;
    const char *key;   /* KEY_*: the key of the map at path */
} expectation;

static void check_all(const expectation *e, size_t n)
{
    fixture fx;
    fixture_load(&fx, "positions.json");
    for (size_t i = 0; i < n; i++) {
        tly_node *it = item(fx.orig, e[i].kind, e[i].name);
        if (e[i].want == KEPT)
            expect_kept(&fx, it, e[i].path);
        else if (e[i].want == RENAMED)
            expect_renamed(&fx, it, e[i].path);
        else
            expect_key(&fx, it, e[i].path, e[i].key, e[i].want == KEY_KEPT);
    }
    fixture_free(&fx);
}

#define NODE "Node", "node-alpha.example.internal"
#define VR "Queue", "vision-research"
static const expectation node_queue[] = {
    {NODE, KEPT, "apiVersion", NULL},
    {NODE, KEPT, "kind", NULL},
    {NODE, RENAMED, "metadata.name", NULL},
    {NODE, RENAMED, "metadata.uid", NULL},
    {NODE, KEPT, "metadata.creationTimestamp", NULL},
    {NODE, KEY_KEPT, "metadata.labels", "kubernetes.io/hostname"},
    {NODE, RENAMED, "metadata.labels.{kubernetes.io/hostname}", NULL},
    {NODE, KEPT, "metadata.labels.{nvidia.com/gpu.memory}", NULL},
    {NODE, RENAMED, "metadata.labels.{nvidia.com/gpu.product}", NULL},
    {NODE, KEY_RENAMED, "metadata.labels", "team"},
    {NODE, KEY_RENAMED, "metadata.labels", "mycorp.example/cost-center"},
    {NODE, RENAMED, "spec.taints[0].key", NULL},
    {NODE, RENAMED, "spec.taints[0].value", NULL},
    {NODE, KEPT, "spec.taints[0].effect", NULL},
    {NODE, RENAMED, "spec.providerID", NULL},
    {NODE, KEY_KEPT, "status.allocatable", "nvidia.com/gpu"},
    {NODE, KEPT, "status.allocatable.memory", NULL},
    {NODE, RENAMED, "status.addresses[0].address", NULL},
    {NODE, KEPT, "status.conditions[0].type", NULL},
    {NODE, KEPT, "status.conditions[0].status", NULL},
    {NODE, KEPT, "status.conditions[0].reason", NULL},
    {NODE, RENAMED, "status.conditions[0].message", NULL},
    {"Namespace", "team-vision", RENAMED, "metadata.name", NULL},
    {"Queue", "research", KEY_KEPT, "metadata.labels", "kai.scheduler/queue-admission-gating"},
    {"Queue", "research", KEPT, "metadata.labels.{kai.scheduler/queue-admission-gating}", NULL},
    {VR, RENAMED, "metadata.name", NULL},
    {VR, RENAMED, "spec.parentQueue", NULL},
    {VR, RENAMED, "spec.displayName", NULL},
    {VR, RENAMED, "spec.accountedResources[0].resourceRef", NULL},
    {VR, KEPT, "spec.accountedResources[0].limit", NULL},
};

#define AR "AccountedResource", "gpu-h100"
#define GM "AccountedResource", "gpu-memory"
#define PG "PodGroup", "pg-train-7"
#define CFG "Config", "kai-config"
static const expectation accounting[] = {
    {AR, RENAMED, "metadata.name", NULL},
    {AR, KEPT, "spec.defaults.limit", NULL},
    {AR, KEPT, "spec.sources[0].resourceName", NULL},
    {AR, KEY_RENAMED, "spec.sources[0].match.nodeLabels", "team"},
    {AR, RENAMED, "spec.sources[0].match.nodeLabels.{nvidia.com/gpu.product}", NULL},
    {AR, KEPT, "spec.sources[1].podAnnotation.key", NULL},
    {AR, KEPT, "spec.sources[1].podAnnotation.unit", NULL},
    {GM, KEPT, "metadata.name", NULL},
    {GM, KEPT, "spec.sources[0].dra.deviceClassName", NULL},
    {GM, KEPT, "spec.sources[0].quantity.dra.selectedCapacity.capacityName", NULL},
    {GM, KEPT, "spec.sources[1].quantity.dra.opaqueConfigField.driver", NULL},
    {GM, KEPT, "spec.sources[1].quantity.dra.opaqueConfigField.path", NULL},
    {GM, KEPT, "spec.sources[1].quantity.dra.opaqueConfigField.unit", NULL},
    {"PriorityClass", "train-high", RENAMED, "metadata.name", NULL},
    {"PriorityClass", "train-high", RENAMED, "description", NULL},
    {"PriorityClass", "system-node-critical", KEPT, "metadata.name", NULL},
    {PG, RENAMED, "metadata.name", NULL},
    {PG, RENAMED, "spec.queue", NULL},
    {PG, RENAMED, "spec.priorityClassName", NULL},
    {PG, KEPT, "spec.preemptibility", NULL},
    {PG, RENAMED, "spec.topologyConstraint.topology", NULL},
    {PG, KEPT, "spec.topologyConstraint.requiredTopologyLevel", NULL},
    {PG, RENAMED, "spec.topologyConstraint.preferredTopologyLevel", NULL},
    {CFG, RENAMED, "metadata.name", NULL},
    {CFG, KEPT, "spec.global.schedulerName", NULL},
    {CFG, KEPT, "spec.global.queueLabelKey", NULL},
    {CFG, KEPT, "spec.global.gpuSharingMode", NULL},
};

#define POD "Pod", "train-7-worker-0"
#define TERM "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution." \
             "nodeSelectorTerms[0]"
static const expectation pod_rows[] = {
    {POD, RENAMED, "metadata.name", NULL},
    {POD, RENAMED, "metadata.namespace", NULL},
    {POD, RENAMED, "metadata.uid", NULL},
    {POD, KEY_KEPT, "metadata.labels", "kai.scheduler/queue"},
    {POD, KEY_KEPT, "metadata.labels", "app"},
    {POD, KEY_KEPT, "metadata.labels", "runai-gpu-group"},
    {POD, KEY_KEPT, "metadata.labels", "priorityClassName"},
    {POD, KEY_KEPT, "metadata.labels", "job-name"},
    {POD, KEY_KEPT, "metadata.labels", "example.com/queue-name"},
    {POD, RENAMED, "metadata.labels.{kai.scheduler/queue}", NULL},
    {POD, RENAMED, "metadata.labels.app", NULL},
    {POD, RENAMED, "metadata.labels.{runai-gpu-group}", NULL},
    {POD, KEPT, "metadata.annotations.{gpu-fraction}", NULL},
    {POD, KEPT, "metadata.annotations.{example.com/efa-count}", NULL},
    {POD, KEY_KEPT, "metadata.annotations", "kubectl.kubernetes.io/last-applied-configuration"},
    {POD, RENAMED, "metadata.annotations.{kubectl.kubernetes.io/last-applied-configuration}", NULL},
    {POD, KEY_RENAMED, "metadata.annotations", "secret-note"},
    {POD, KEPT, "metadata.ownerReferences[0].kind", NULL},
    {POD, RENAMED, "metadata.ownerReferences[0].name", NULL},
    {POD, KEPT, "spec.schedulerName", NULL},
    {POD, KEY_RENAMED, "spec.nodeSelector", "team"},
    {POD, KEPT, TERM ".matchExpressions[0].key", NULL},
    {POD, KEPT, TERM ".matchExpressions[0].operator", NULL},
    {POD, KEPT, TERM ".matchExpressions[2].values[0]", NULL},
    {POD, KEPT, TERM ".matchFields[0].key", NULL},
    {POD, KEPT, TERM ".matchFields[0].operator", NULL},
    {POD, RENAMED, TERM ".matchExpressions[0].values[0]", NULL},
    {POD, RENAMED, TERM ".matchExpressions[1].key", NULL},
    {POD, RENAMED, TERM ".matchExpressions[1].values[0]", NULL},
    {POD, RENAMED, TERM ".matchExpressions[2].key", NULL},
    {POD, RENAMED, TERM ".matchFields[0].values[0]", NULL},
    {POD, RENAMED, "spec.tolerations[0].key", NULL},
    {POD, KEPT, "spec.tolerations[0].operator", NULL},
    {POD, KEPT, "spec.tolerations[0].effect", NULL},
    {POD, RENAMED, "spec.containers[0].name", NULL},
    {POD, RENAMED, "spec.containers[0].image", NULL},
    {POD, RENAMED, "spec.containers[0].command[0]", NULL},
    {POD, RENAMED, "spec.containers[0].env[0].value", NULL},
    {POD, KEY_KEPT, "spec.containers[0].resources.requests", "example.com/gpu"},
    {POD, RENAMED, "spec.schedulingGates[0].name", NULL},
    {POD, RENAMED, "spec.resourceClaims[0].name", NULL},
    {POD, KEPT, "status.phase", NULL},
    {POD, KEPT, "status.qosClass", NULL},
    {POD, KEPT, "status.startTime", NULL},
    {"Pod", "reservation-node-alpha", KEPT, "metadata.namespace", NULL},
    {"Pod", "reservation-node-alpha", KEPT, "metadata.labels.app", NULL},
};

#define RUN "Run", "job-1"
#define RUNTERM "spec.affinity.runAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
#define SLICE "ResourceSlice", "node-alpha-gpus"
#define TMPL "ResourceClaimTemplate", "gpu-template"
static const expectation kruntimes_dra[] = {
    {"Pod", "python-rt-pod-0", KEPT, "metadata.annotations.{kruntimes.io/capacity.runs}", NULL},
    {"Pod", "python-rt-pod-0", KEPT, "metadata.annotations.{kruntimes.io/capacities}", NULL},
    {RUN, RENAMED, "spec.runtime", NULL},
    {RUN, KEY_KEPT, "spec.resources.requests", "example.com/gpu"},
    {RUN, RENAMED, "spec.mode.task.script", NULL},
    {RUN, KEY_RENAMED, RUNTERM ".labelSelector.matchLabels", "owner"},
    {RUN, KEPT, RUNTERM ".topologyKey", NULL},
    {RUN, KEPT, "status.phase", NULL},
    {RUN, RENAMED, "status.assignedPod", NULL},
    {RUN, RENAMED, "status.assignedPodUID", NULL},
    /* Not a label value: tally refuses the Run, and so it must stay (a token would be valid). */
    {"Run", "job-bad", KEPT, "spec.runtime", NULL},
    {"DeviceClass", "gpu.example.com", KEPT, "metadata.name", NULL},
    {"DeviceClass", "gpu.example.com", KEPT, "spec.selectors[0].cel.expression", NULL},
    {SLICE, RENAMED, "metadata.name", NULL},
    {SLICE, KEPT, "spec.driver", NULL},
    {SLICE, RENAMED, "spec.pool.name", NULL},
    {SLICE, RENAMED, "spec.devices[0].name", NULL},
    /* Hopper-H100 is a literal of the DeviceClass's CEL: kept here too. */
    {SLICE, KEPT, "spec.devices[0].attributes.model.string", NULL},
    {SLICE, RENAMED, "spec.devices[0].attributes.serial.string", NULL},
    {SLICE, KEPT, "spec.devices[0].attributes.driverVersion.version", NULL},
    {SLICE, KEY_KEPT, "spec.devices[0].capacity", "memory"},
    {TMPL, KEPT, "spec.spec.devices.config[0].opaque.parameters.kind", NULL},
    {TMPL, RENAMED, "spec.spec.devices.config[0].opaque.parameters.sharing.strategy", NULL},
    {TMPL, KEPT, "spec.spec.devices.config[0].opaque.parameters.sharing.pinnedMemory", NULL},
    {"ResourceClaim", "train-7-worker-0-gpus", KEPT, "status.reservedFor[0].resource", NULL},
    {"ResourceClaim", "train-7-worker-0-gpus", RENAMED, "status.reservedFor[0].uid", NULL},
};

static void test_node_and_queue_positions(void **state)
{
    (void)state;
    check_all(node_queue, sizeof node_queue / sizeof *node_queue);
}

static void test_accounting_positions(void **state)
{
    (void)state;
    check_all(accounting, sizeof accounting / sizeof *accounting);
}

static void test_pod_positions(void **state)
{
    (void)state;
    check_all(pod_rows, sizeof pod_rows / sizeof *pod_rows);
}

static void test_kruntimes_and_dra_positions(void **state)
{
    (void)state;
    check_all(kruntimes_dra, sizeof kruntimes_dra / sizeof *kruntimes_dra);
}

/* "gpus/big" is request/subrequest: each part is renamed on its own. */
static void test_request_references_split(void **state)
{
    (void)state;
    fixture fx;
    fixture_load(&fx, "positions.json");
    char want[256];
    snprintf(want, sizeof want, "%s/%s", tly_anonymizer_token(fx.an, "gpus"),
             tly_anonymizer_token(fx.an, "big"));
    tly_node *claim = twin(&fx, item(fx.orig, "ResourceClaim", "train-7-worker-0-gpus"));
    tly_node *tmpl = twin(&fx, item(fx.orig, "ResourceClaimTemplate", "gpu-template"));
    assert_string_equal(str_at(claim, "status.allocation.devices.results[0].request"), want);
    assert_string_equal(str_at(tmpl, "spec.spec.devices.config[0].requests[0]"), want);
    assert_null(tly_anonymizer_token(fx.an, "gpus/big"));
    fixture_free(&fx);
}

/* The same original has the same token wherever it stands. */
static void test_one_mapping_across_positions(void **state)
{
    (void)state;
    fixture fx;
    fixture_load(&fx, "positions.json");
    const struct {
        const char *kind, *name, *path;
    } groups[][6] = {
        {{"Node", "node-alpha.example.internal", "metadata.name"},
         {"Node", "node-alpha.example.internal", "metadata.labels.{kubernetes.io/hostname}"},
         {"Pod", "train-7-worker-0", "spec.nodeName"},
         {"ResourceSlice", "node-alpha-gpus", "spec.nodeName"},
         {"ResourceClaim", "train-7-worker-0-gpus", "status.allocation.devices.results[0].pool"}},
        {{"Run", "job-1", "spec.runtime"}, {"Runtime", "python-rt", "metadata.name"},
         {"Pod", "python-rt-pod-0", "metadata.labels.runtime"}},
        {{"PodGroup", "pg-train-7", "metadata.name"},
         {"Pod", "train-7-worker-0", "metadata.annotations.{pod-group-name}"}},
        {{"Run", "job-1", "status.assignedPodUID"}, {"Pod", "python-rt-pod-0", "metadata.uid"}},
        {{"Pod", "train-7-worker-0", "metadata.uid"},
         {"ResourceClaim", "train-7-worker-0-gpus", "status.reservedFor[0].uid"}},
        {{"PriorityClass", "train-high", "metadata.name"},
         {"Pod", "train-7-worker-0", "spec.priorityClassName"},
         {"Pod", "train-7-worker-0", "metadata.labels.priorityClassName"},
         {"PodGroup", "pg-train-7", "spec.priorityClassName"}},
        {{"Queue", "vision-research", "metadata.name"},
         {"Pod", "train-7-worker-0", "metadata.labels.{kai.scheduler/queue}"},
         {"Pod", "train-7-worker-0", "metadata.labels.{example.com/queue-name}"},
         {"PodGroup", "pg-train-7", "spec.queue"}},
        {{"Queue", "research", "metadata.name"}, {"Queue", "vision-research", "spec.parentQueue"}},
    };
    for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) {
        const char *first = NULL;
        for (size_t i = 0; i < 6 && groups[g][i].kind; i++) {
            tly_node *it = twin(&fx, item(fx.orig, groups[g][i].kind, groups[g][i].name));
            const char *v = str_at(it, groups[g][i].path);
            if (first && strcmp(first, v) != 0)
                fail_msg("%s %s: \"%s\" is not the token \"%s\" of the same original",
                         groups[g][i].kind, groups[g][i].path, v, first);
            first = v;
        }
    }
    /* The taint key and value, the toleration's and the node selector's. */
    tly_node *pod = twin(&fx, item(fx.orig, "Pod", "train-7-worker-0"));
    tly_node *node = twin(&fx, item(fx.orig, "Node", "node-alpha.example.internal"));
    assert_string_equal(str_at(pod, "spec.tolerations[0].key"), str_at(node, "spec.taints[0].key"));
    assert_string_equal(str_at(pod, "spec.tolerations[0].value"), str_at(node, "spec.taints[0].value"));
    assert_string_equal(at(pod, "spec.nodeSelector")->kids->key, tly_anonymizer_token(fx.an, "team"));
    assert_string_equal(at(pod, "spec.nodeSelector")->kids->str, str_at(node, "spec.taints[0].value"));
    fixture_free(&fx);
}

/* ---- byte order --------------------------------------------------------- */

/* xorshift64*: the same sequence on every machine. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

typedef struct {
    const char **s;
    bool *kept;
    size_t n;
} strset;

/* One object holding every string: kept ones as condition types, the others as list data. */
static char *set_object(const strset *set, size_t *len)
{
    char *buf;
    FILE *f = open_memstream(&buf, len);
    fputs("{\"apiVersion\":\"v1\",\"kind\":\"Thing\",\"data\":[", f);
    for (size_t i = 0, first = 1; i < set->n; i++)
        if (!set->kept[i]) {
            fputs(first ? "" : ",", f);
            tly_json_write_escaped(f, set->s[i]);
            first = 0;
        }
    fputs("],\"status\":{\"conditions\":[", f);
    for (size_t i = 0, first = 1; i < set->n; i++)
        if (set->kept[i]) {
            fputs(first ? "{\"type\":" : ",{\"type\":", f);
            tly_json_write_escaped(f, set->s[i]);
            fputc('}', f);
            first = 0;
        }
    fputs("]}}", f);
    fclose(f);
    return buf;
}

/*
** Anonymizes the set and counts order violations over the whole table:
** consecutive originals whose images are not strictly increasing, tokens
** that are originals, and data strings the renamed object does not carry as
** their token. Also checks each token's syntax against its original's.
*/
static size_t anonymize_set(const strset *set, bool reverse, tly_anon_stats *st)
{
    size_t len;
    char *text = set_object(set, &len);
    tly_arena *a = tly_arena_create(1 << 14);
    tly_node *obj = tly_parse_value(text, len, a);
    assert_non_null(obj);
    tly_anonymizer *an = tly_anonymizer_create();
    if (reverse)
        tly_anonymizer_test_reverse(an);
    tly_anonymizer_collect(an, obj, a);
    tly_anonymizer_seal(an);
    tly_anonymizer_rename(an, obj, a);
    tly_anonymizer_stats(an, st);
    tly_anon_entry *const *v;
    size_t n = tly_anonymizer_test_table(an, &v), bad = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        const char *x = anon_of(v[i]), *y = anon_of(v[i + 1]);
        if (bytecmp(x, strlen(x), y, strlen(y)) >= 0)
            bad++;
    }
    for (size_t i = 0; i < n; i++)
        if (v[i]->token && table_find(an, v[i]->token, strlen(v[i]->token)))
            bad++;
    tly_node *d = at(obj, "data")->kids;
    for (size_t i = 0; i < set->n; i++) {
        if (set->kept[i])
            continue;
        const tly_anon_entry *e = table_find(an, set->s[i], strlen(set->s[i]));
        if (!e || strcmp(d->str, anon_of(e)) != 0)
            bad++;
        d = d->next;
    }
    tly_anonymizer_destroy(an);
    tly_arena_destroy(a);
    free(text);
    return bad;
}

/* A random string over bytes that make hard neighbours: '-' < '.' < '0' < 'A' < '_' < 'a' < '~'. */
static char *random_string(uint64_t *rng, const strset *set, tly_arena *a)
{
    static const char alpha[] = "ab0z-._A~9 /\x01";
    uint64_t r = rng_next(rng);
    if (set->n && r % 3 == 0) {
        /* A prefix or an extension of one already there. */
        const char *base = set->s[rng_next(rng) % set->n];
        size_t bl = strlen(base);
        if (r % 2 && bl)
            return tly_arena_strndup(a, base, rng_next(rng) % bl);
        char ext[2] = {alpha[rng_next(rng) % (sizeof alpha - 1)], 0};
        return tly_arena_printf(a, "%s%s", base, ext);
    }
    size_t len = rng_next(rng) % 6;
    char buf[8];
    for (size_t i = 0; i < len; i++)
        buf[i] = alpha[rng_next(rng) % (sizeof alpha - 1)];
    return tly_arena_strndup(a, buf, len);
}

static void random_set(uint64_t *rng, strset *set, size_t n, tly_arena *a)
{
    set->s = tly_arena_alloc(a, n * sizeof *set->s);
    set->kept = tly_arena_alloc(a, n * sizeof *set->kept);
    set->n = 0;
    while (set->n < n) {
        set->s[set->n] = random_string(rng, set, a);
        set->kept[set->n] = rng_next(rng) % 3 == 0;
        set->n++;
    }
}

static void test_order_kept_on_random_sets(void **state)
{
    (void)state;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    size_t downgraded = 0;
    for (int round = 0; round < 400; round++) {
        tly_arena *a = tly_arena_create(4096);
        strset set;
        random_set(&rng, &set, 4 + rng_next(&rng) % 40, a);
        tly_anon_stats st;
        size_t bad = anonymize_set(&set, false, &st);
        if (bad)
            fail_msg("round %d: %zu order violations", round, bad);
        downgraded += st.downgraded;
        tly_arena_destroy(a);
    }
    print_message("random sets: %zu tokens of a looser syntax than their original\n", downgraded);
}

/* The check above fails when the order is not kept: the reversed tokens are caught. */
static void test_reversed_order_is_caught(void **state)
{
    (void)state;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    size_t caught = 0;
    for (int round = 0; round < 50; round++) {
        tly_arena *a = tly_arena_create(4096);
        strset set;
        random_set(&rng, &set, 4 + rng_next(&rng) % 40, a);
        tly_anon_stats st;
        caught += anonymize_set(&set, true, &st) > 0;
        tly_arena_destroy(a);
    }
    assert_true(caught > 40);
}

/* Every string of up to two bytes over {-, 0, a, b} is kept: renamed ones must go longer. */
static void test_dense_kept_neighbours(void **state)
{
    (void)state;
    static const char al[] = "-0ab";
    tly_arena *a = tly_arena_create(4096);
    strset set = {.s = tly_arena_alloc(a, 200 * sizeof(char *)),
                  .kept = tly_arena_alloc(a, 200 * sizeof(bool))};
    for (int i = 0; i < 4; i++) {
        set.s[set.n] = tly_arena_printf(a, "%c", al[i]);
        set.kept[set.n++] = true;
        for (int j = 0; j < 4; j++) {
            set.s[set.n] = tly_arena_printf(a, "%c%c", al[i], al[j]);
            set.kept[set.n++] = true;
            for (int k = 0; k < 4; k += 3) {
                set.s[set.n] = tly_arena_printf(a, "%c%c%cx", al[i], al[j], al[k]);
                set.kept[set.n++] = false;
            }
        }
    }
    tly_anon_stats st;
    assert_int_equal(anonymize_set(&set, false, &st), 0);
    assert_int_equal(st.stuck, 0);
    assert_true(st.renamed >= 32);
    tly_arena_destroy(a);
}

static void test_shortest_tokens_and_empty_strings(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(1 << 16);
    strset set = {.s = tly_arena_alloc(a, 2001 * sizeof(char *)),
                  .kept = tly_arena_zalloc(a, 2001 * sizeof(bool))};
    for (int i = 0; i < 2000; i++)
        set.s[set.n++] = tly_arena_printf(a, "team-%04d-worker", i);
    set.s[set.n++] = "";
    size_t len;
    char *text = set_object(&set, &len);
    tly_node *obj = tly_parse_value(text, len, a);
    tly_anonymizer *an = tly_anonymizer_create();
    tly_anonymizer_collect(an, obj, a);
    tly_anonymizer_seal(an);
    size_t longest = 0, bylen[5] = {0};
    for (size_t i = 0; i < 2000; i++) {
        const char *t = tly_anonymizer_token(an, set.s[i]);
        assert_non_null(t);
        if (strlen(t) > longest)
            longest = strlen(t);
        bylen[strlen(t) < 5 ? strlen(t) : 0]++;
    }
    /*
    ** They all sit in one gap, ("task", "true"): some two-byte tokens (tb..tr),
    ** about six hundred of three bytes, the rest of four.
    */
    assert_true(longest <= 4);
    assert_true(bylen[2] >= 15 && bylen[3] >= 500 && bylen[4] < 1500);
    assert_null(tly_anonymizer_token(an, ""));
    tly_anonymizer_rename(an, obj, a);
    assert_string_equal(at(obj, "data")->kids->str, tly_anonymizer_token(an, "team-0000-worker"));
    tly_node *last = at(obj, "data")->kids;
    while (last->next)
        last = last->next;
    assert_string_equal(last->str, "");
    tly_anonymizer_destroy(an);
    free(text);
    tly_arena_destroy(a);
}

/* No token fits between "x" and "x\1\1" except "x\1" itself: that string stays, and is counted. */
static void test_no_room_keeps_the_string(void **state)
{
    (void)state;
    const char *s[] = {"x", "x\x01\x01", "x\x01", "quiet"};
    bool kept[] = {true, true, false, false};
    strset set = {s, kept, 4};
    tly_anon_stats st;
    assert_int_equal(anonymize_set(&set, false, &st), 0);
    assert_int_equal(st.stuck, 1);
}

/* A token keeps its original's syntax and avoids what tally would read as something else. */
static void test_tokens_valid_where_originals_were(void **state)
{
    (void)state;
    const char *s[] = {"Lt", "NotIn", "MyApp", "my_label.value", "node-7.example.internal", "3f2a9c",
                       "/usr/bin/python", "-1", "x", "x-", "x+y"};
    bool kept[] = {true, true, false, false, false, false, false, true, true, true, false};
    strset set = {s, kept, 11};
    size_t len;
    char *text = set_object(&set, &len);
    tly_arena *a = tly_arena_create(4096);
    tly_node *obj = tly_parse_value(text, len, a);
    tly_anonymizer *an = tly_anonymizer_create();
    tly_anonymizer_collect(an, obj, a);
    tly_anonymizer_seal(an);
    /* Between the kept Lt and NotIn only upper-case strings fit: a label value, not a DNS label. */
    const char *t = tly_anonymizer_token(an, "MyApp");
    assert_true(t[0] >= 'L' && t[0] <= 'N');
    for (size_t i = 0; i < 11; i++) {
        const char *tk = tly_anonymizer_token(an, s[i]);
        if (!tk)
            continue;
        tly_qty q;
        assert_int_not_equal(tly_qty_parse_str(tk, &q), TLY_OK);
        assert_false(tly_anon_pattern_kept(tk, strlen(tk)));
        assert_null(strstr(tk, "gpu"));
    }
    /* A DNS label stays a DNS label. */
    t = tly_anonymizer_token(an, "node-7.example.internal");
    for (const char *c = t; *c; c++)
        assert_true((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-');
    /* x+y sorts between the kept x and x-: only printable punctuation fits there. */
    t = tly_anonymizer_token(an, "x+y");
    assert_true(strcmp(t, "x") > 0 && strcmp(t, "x-") < 0);
    tly_anon_stats st;
    tly_anonymizer_stats(an, &st);
    assert_int_equal(st.downgraded, 0);
    tly_anonymizer_destroy(an);
    tly_arena_destroy(a);
    free(text);
}

/* ---- the map file ------------------------------------------------------- */

static void test_map_file_is_sorted_and_complete(void **state)
{
    (void)state;
    fixture fx;
    fixture_load(&fx, "positions.json");
    char *buf;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    tly_anonymizer_write_map(fx.an, f);
    fclose(f);
    tly_node *map = tly_parse_value(buf, len, fx.a);
    assert_non_null(map);
    assert_int_equal(map->type, TLY_N_MAP);
    const char *prev = NULL;
    size_t n = 0;
    for (tly_node *k = map->kids; k; k = k->next, n++) {
        assert_string_equal(tly_anonymizer_token(fx.an, k->key), k->str);
        if (prev)
            assert_true(strcmp(prev, k->key) < 0);
        prev = k->key;
    }
    tly_anon_stats st;
    tly_anonymizer_stats(fx.an, &st);
    assert_int_equal(n, st.renamed);
    assert_null(member(map, "cpu", 3));
    assert_non_null(member(map, "train-7-worker-0", 16));
    free(buf);
    fixture_free(&fx);
}

/* ---- results: the scenarios --------------------------------------------- */

/* A libfyaml node as a value tree; plain scalars typed as tally's loader types them. */
static tly_node *from_fy(struct fy_node *fn, tly_arena *a)
{
    tly_node *n = tly_arena_zalloc(a, sizeof *n);
    n->line = n->col = 1;
    if (!fn)
        return n;
    if (fy_node_get_type(fn) == FYNT_SCALAR) {
        size_t len;
        const char *s = fy_node_get_scalar(fn, &len);
        n->str = tly_arena_strndup(a, s ? s : "", s ? len : 0);
        n->len = (uint32_t)(s ? len : 0);
        n->type = fy_node_get_style(fn) == FYNS_PLAIN ? tly_plain_scalar_type(n->str, n->len, &n->bval)
                                                      : TLY_N_STRING;
        return n;
    }
    bool seq = fy_node_get_type(fn) == FYNT_SEQUENCE;
    n->type = seq ? TLY_N_SEQ : TLY_N_MAP;
    tly_node **tail = &n->kids;
    void *it = NULL;
    for (;;) {
        struct fy_node *v;
        struct fy_node_pair *pair = NULL;
        if (seq) {
            v = fy_node_sequence_iterate(fn, &it);
        } else {
            pair = fy_node_mapping_iterate(fn, &it);
            v = pair ? fy_node_pair_value(pair) : NULL;
        }
        if (!v && !pair)
            break;
        tly_node *k = from_fy(v, a);
        if (pair) {
            size_t kl;
            const char *ks = fy_node_get_scalar(fy_node_pair_key(pair), &kl);
            k->key = tly_arena_strndup(a, ks ? ks : "", ks ? kl : 0);
        }
        *tail = k;
        tail = &k->next;
        n->nkids++;
    }
    return n;
}

typedef struct {
    tly_node **v;
    size_t n, cap;
} objlist;

static void objs_add(objlist *o, tly_node *n)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 64;
        o->v = realloc(o->v, o->cap * sizeof *o->v);
    }
    o->v[o->n++] = n;
}

/* Every object of one YAML or JSON file (List items one by one). */
static void read_objects(const char *path, objlist *out, tly_arena *a)
{
    size_t len;
    char *text = read_all(path, &len);
    assert_non_null(text);
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET};
    struct fy_parser *fyp = fy_parser_create(&cfg);
    fy_parser_set_string(fyp, text, len);
    struct fy_document *fyd;
    while ((fyd = fy_parse_load_document(fyp)) != NULL) {
        tly_node *root = from_fy(fy_document_root(fyd), a);
        tly_node *items = root->type == TLY_N_MAP ? member(root, "items", 5) : NULL;
        if (items && items->type == TLY_N_SEQ)
            for (tly_node *it = items->kids; it; it = it->next)
                objs_add(out, it);
        else if (root->type == TLY_N_MAP)
            objs_add(out, root);
        fy_parse_document_destroy(fyp, fyd);
    }
    fy_parser_destroy(fyp);
    free(text);
}

static int cmp_path(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* A file, or every *.yaml, *.yml and *.json of a directory in byte order (as the loader reads). */
static void read_input(const char *path, objlist *out, tly_arena *a)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    if (!S_ISDIR(st.st_mode)) {
        read_objects(path, out, a);
        return;
    }
    DIR *d = opendir(path);
    char *names[256];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 256;) {
        const char *dot = strrchr(e->d_name, '.');
        if (dot && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml") || !strcmp(dot, ".json")))
            names[n++] = tly_arena_printf(a, "%s/%s", path, e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_path);
    for (size_t i = 0; i < n; i++)
        read_objects(names[i], out, a);
}

/* The objects as one kind: List, the shape of a snapshot. */
static char *write_list(const objlist *o, size_t *len)
{
    char *buf;
    FILE *f = open_memstream(&buf, len);
    fputs("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[", f);
    for (size_t i = 0; i < o->n; i++) {
        fputs(i ? ",\n" : "\n", f);
        tly_node_write_json(f, o->v[i]);
    }
    fputs("\n]}\n", f);
    fclose(f);
    return buf;
}

/* What `tally simulate -o json` prints, as fields: names, messages and the rest. */
enum { F_RAW, F_NAME, F_TEXT };
typedef struct {
    int kind;
    const char *label, *text;
} field;
typedef struct {
    field *v;
    size_t n, cap;
    tly_arena *a;
} fields;

static void add(fields *f, int kind, const char *label, const char *text)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 256;
        f->v = realloc(f->v, f->cap * sizeof *f->v);
    }
    f->v[f->n++] = (field){kind, label, text};
}

static void addf(fields *f, int kind, const char *text, const char *fmt, uint32_t i, const char *what)
{
    add(f, kind, tly_arena_printf(f->a, fmt, i, what), text ? tly_arena_strdup(f->a, text) : NULL);
}

/* A resource map as simulate writes it (rvec or rlist). */
static const char *res_text(tly_arena *a, const tly_rvec *v, const tly_rlist *l, const tly_names *names)
{
    char *buf;
    size_t len;
    FILE *m = open_memstream(&buf, &len);
    tly_json j;
    tly_json_init(&j, m, false);
    if (v)
        tly_json_rvec(&j, v, names);
    else
        tly_json_rlist(&j, l, names);
    fclose(m);
    const char *s = tly_arena_strdup(a, buf);
    free(buf);
    return s;
}

static const char *qty_text(tly_arena *a, tly_qty q)
{
    char buf[TLY_QTY_BUFSZ];
    tly_qty_format(q, buf, sizeof buf);
    return tly_arena_strdup(a, buf);
}

static void pod_fields(fields *f, tly_podsched *ps)
{
    tly_queues *qs = tly_podsched_queues(ps);
    for (uint32_t i = 0; i < tly_podsched_npods(ps); i++) {
        const tly_ps_result *r = tly_podsched_pod(ps, i);
        addf(f, F_NAME, r->pod->meta.ns, "pods[%u].%s", i, "namespace");
        addf(f, F_NAME, r->pod->meta.name, "pods[%u].%s", i, "name");
        addf(f, F_NAME, r->queue, "pods[%u].%s", i, "queue");
        addf(f, F_RAW, r->state, "pods[%u].%s", i, "state");
        addf(f, F_NAME, r->node, "pods[%u].%s", i, "node");
        addf(f, F_RAW, r->reason, "pods[%u].%s", i, "reason");
        addf(f, F_TEXT, r->message, "pods[%u].%s", i, "message");
        for (uint32_t e = 0; e < r->ncharges; e++) {
            addf(f, F_NAME, tly_queues_accres(qs, r->charges[e].ar)->meta.name, "pods[%u].%s", i,
                 "accounted key");
            addf(f, F_RAW, qty_text(f->a, r->charges[e].q), "pods[%u].%s", i, "accounted");
        }
    }
}

static void queue_fields(fields *f, tly_podsched *ps, const tly_names *names)
{
    tly_queues *qs = tly_podsched_queues(ps);
    for (uint32_t i = 0; i < tly_queues_count(qs); i++) {
        const tly_queue *q = tly_queues_queue(qs, i);
        addf(f, F_NAME, q->meta.name, "queues[%u].%s", i, "name");
        addf(f, F_NAME, q->parent && *q->parent ? q->parent : NULL, "queues[%u].%s", i, "parent");
        addf(f, F_RAW, res_text(f->a, tly_queues_allocated(qs, i), NULL, names), "queues[%u].%s", i,
             "allocated");
        addf(f, F_RAW, res_text(f->a, tly_queues_allocated_np(qs, i), NULL, names), "queues[%u].%s",
             i, "allocatedNonPreemptible");
        for (uint32_t a = 0; a < tly_queues_naccres(qs); a++) {
            addf(f, F_NAME, tly_queues_accres(qs, a)->meta.name, "queues[%u].%s", i, "accounted key");
            addf(f, F_RAW, qty_text(f->a, tly_queues_accounted_used(qs, i, a)), "queues[%u].%s", i,
                 "used");
            addf(f, F_RAW, qty_text(f->a, tly_queues_accounted_limit(qs, i, a)), "queues[%u].%s", i,
                 "limit");
        }
        addf(f, F_NAME, tly_queues_missing_ref(qs, i), "queues[%u].%s", i, "missing resourceRef");
    }
}

static void run_fields(fields *f, tly_runsched *rs, const tly_names *names)
{
    for (uint32_t i = 0; i < tly_runsched_nruns(rs); i++) {
        const tly_rs_run_result *r = tly_runsched_run_at(rs, i);
        addf(f, F_NAME, r->run->meta.ns, "runs[%u].%s", i, "namespace");
        addf(f, F_NAME, r->run->meta.name, "runs[%u].%s", i, "name");
        addf(f, F_NAME, r->run->runtime, "runs[%u].%s", i, "runtime");
        addf(f, F_RAW, tly_run_phase_name(r->phase), "runs[%u].%s", i, "phase");
        addf(f, F_NAME, r->assigned, "runs[%u].%s", i, "pod");
        addf(f, F_RAW, r->reason, "runs[%u].%s", i, "reason");
        addf(f, F_TEXT, r->message, "runs[%u].%s", i, "message");
    }
    for (uint32_t i = 0; i < tly_runsched_npods(rs); i++) {
        const tly_rs_pod_result *p = tly_runsched_pod_at(rs, i);
        addf(f, F_NAME, p->pod->meta.ns, "runtimePods[%u].%s", i, "namespace");
        addf(f, F_NAME, p->pod->meta.name, "runtimePods[%u].%s", i, "name");
        addf(f, F_NAME, p->runtime, "runtimePods[%u].%s", i, "runtime");
        addf(f, F_RAW, res_text(f->a, NULL, p->capacity, names), "runtimePods[%u].%s", i, "capacity");
        addf(f, F_RAW, res_text(f->a, p->used, NULL, names), "runtimePods[%u].%s", i, "used");
        addf(f, F_RAW, res_text(f->a, &p->admitted, NULL, names), "runtimePods[%u].%s", i, "admitted");
    }
}

/* What a scenario's args file sets (--now, --queue-admission-gating); the rest is not used. */
typedef struct {
    const char *now;
    int gating;   /* a tly_gating_mode, 0 when not given */
} sim_opts;

/* Loads text (or a path) into a store and runs the engines as tly_cmd_run_engines does. */
static void simulate(fields *f, const char *path, const char *text, size_t len, const sim_opts *o)
{
    const char *now = o->now;
    tly_store *s = tly_store_create();
    if (o->gating)
        tly_store_set_gating_mode(s, o->gating);
    if (text)
        tly_store_load_string(s, "snapshot.json", text, len);
    else
        tly_store_load_path(s, path);
    tly_store_finish(s);
    int64_t t = TLY_NO_TIME;
    if (now)
        assert_true(tly_parse_time(now, &t));
    else
        t = tly_store_clock(s) != TLY_NO_TIME ? tly_store_clock(s) : tly_store_newest_time(s);
    tly_runsched *rs = tly_runsched_create(s, t, t != TLY_NO_TIME, tly_store_diags(s));
    tly_runsched_run(rs);
    tly_podsched *ps = tly_podsched_create(s);
    tly_podsched_run(ps);
    pod_fields(f, ps);
    queue_fields(f, ps, tly_store_names(s));
    run_fields(f, rs, tly_store_names(s));
    tly_podsched_destroy(ps);
    tly_runsched_destroy(rs);
    tly_store_destroy(s);
}

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/*
** Whether the anonymized run's message m is the original run's message s
** with quoted strings renamed: some reading of s, each original string it
** holds (between non-alphanumeric boundaries) either left as it is or
** replaced by its own token, gives m exactly. A reading, not a substitution,
** because a message's fixed words ("quota", "stale") may also be strings of
** the input, and names the engine derives by joining ("<pod>-<claim>" for a
** claim from a template) are renamed part by part. A wrong name, number or
** state in m leaves no reading.
*/
static bool text_matches(const tly_anonymizer *an, const char *s, const char *m)
{
    size_t n = strlen(s), k = strlen(m), w = k + 1;
    bool *r = calloc((n + 1) * w, 1);
    r[0] = true;
    for (size_t i = 0; i <= n; i++)
        for (size_t j = 0; j <= k; j++) {
            if (!r[i * w + j])
                continue;
            if (i < n && j < k && s[i] == m[j])
                r[(i + 1) * w + j + 1] = true;
            if (i > 0 && alnum(s[i - 1]))
                continue;
            for (size_t e = i + 1; e <= n; e++) {
                if (e < n && alnum(s[e]))
                    continue;
                const tly_anon_entry *x = table_find(an, s + i, e - i);
                size_t tl = x && x->token ? strlen(x->token) : 0;
                if (tl && j + tl <= k && !memcmp(m + j, x->token, tl))
                    r[e * w + j + tl] = true;
            }
        }
    bool ok = r[n * w + k];
    free(r);
    return ok;
}

/* How many fields of b differ from a mapped through an (NULL: the same); the first is described. */
static size_t diff_fields(const fields *a, const fields *b, const tly_anonymizer *an, char *first,
                          size_t cap)
{
    size_t bad = a->n != b->n;
    if (bad)
        snprintf(first, cap, "%zu fields, %zu anonymized", a->n, b->n);
    for (size_t i = 0; i < a->n && i < b->n; i++) {
        const field *x = &a->v[i], *y = &b->v[i];
        const char *want = x->text;
        if (an && want && x->kind == F_NAME && tly_anonymizer_token(an, want))
            want = tly_anonymizer_token(an, want);
        bool same = strcmp(x->label, y->label) == 0;
        if (an && want && y->text && x->kind == F_TEXT)
            same = same && text_matches(an, want, y->text);
        else
            same = same && (want && y->text ? strcmp(want, y->text) == 0 : want == y->text);
        if (!same && !bad++)
            snprintf(first, cap, "%s: want \"%s\", got %s: \"%s\"", x->label, want ? want : "(null)",
                     y->label, y->text ? y->text : "(null)");
    }
    return bad;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/*
** Each pod's and Run's outcome ("namespace|name|state|node|reason"; for a Run
** its phase and Pod), names mapped through an when it is given, sorted: the
** same set on both sides means only the order of the lists differs.
*/
static char **outcomes(const fields *f, const tly_anonymizer *an, size_t *n)
{
    char **v = tly_arena_alloc(f->a, (f->n + 1) * sizeof *v);
    *n = 0;
    for (size_t i = 0; i < f->n;) {
        const char *dot = strchr(f->v[i].label, '.');
        size_t plen = (size_t)(dot - f->v[i].label), j = i;
        bool record = !strncmp(f->v[i].label, "pods[", 5) || !strncmp(f->v[i].label, "runs[", 5);
        char *line = tly_arena_strdup(f->a, "");
        for (; j < f->n && !strncmp(f->v[j].label, f->v[i].label, plen + 1); j++) {
            const field *x = &f->v[j];
            if (x->kind == F_TEXT || strstr(x->label, "accounted"))
                continue;
            const char *t = x->text ? x->text : "-";
            if (an && x->kind == F_NAME && tly_anonymizer_token(an, t))
                t = tly_anonymizer_token(an, t);
            line = tly_arena_printf(f->a, "%s|%s", line, t);
        }
        if (record)
            v[(*n)++] = line;
        i = j;
    }
    qsort(v, *n, sizeof *v, cmp_str);
    return v;
}

static bool outcomes_differ(const fields *a, const fields *b, const tly_anonymizer *an)
{
    size_t na, nb;
    char **x = outcomes(a, an, &na), **y = outcomes(b, NULL, &nb);
    if (na != nb)
        return true;
    for (size_t i = 0; i < na; i++)
        if (strcmp(x[i], y[i]) != 0)
            return true;
    return false;
}

/* The value after `flag` in text (" " or "=" between), in arena a, or NULL. */
static const char *flag_value(const char *text, const char *flag, tly_arena *a)
{
    const char *p = strstr(text, flag);
    if (!p)
        return NULL;
    p += strlen(flag);
    p += strspn(p, " =");
    return tly_arena_strndup(a, p, strcspn(p, " \n"));
}

static sim_opts scenario_opts(const char *dir, tly_arena *a)
{
    sim_opts o = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/args", dir);
    size_t len;
    char *text = read_all(path, &len);
    if (!text)
        return o;
    o.now = flag_value(text, "--now", a);
    const char *g = flag_value(text, "--queue-admission-gating", a);
    if (g)
        o.gating = tly_gating_mode_parse(g);
    free(text);
    return o;
}

/*
** One input: the engines on tally's own reading of the files, on the same
** objects as a snapshot (checks the conversion), and on the anonymized
** snapshot. Returns the number of differing fields of the last; *changed
** says whether a pod's or Run's outcome differs, not only the lists' order.
*/
static size_t check_input(const char *path, const sim_opts *opts, bool reverse, char *first,
                          size_t cap, bool *changed)
{
    tly_arena *a = tly_arena_create(1 << 16);
    objlist objs = {0};
    read_input(path, &objs, a);
    size_t olen, alen;
    char *orig = write_list(&objs, &olen);
    tly_anonymizer *an = tly_anonymizer_create();
    if (reverse)
        tly_anonymizer_test_reverse(an);
    for (size_t i = 0; i < objs.n; i++)
        tly_anonymizer_collect(an, objs.v[i], a);
    tly_anonymizer_seal(an);
    for (size_t i = 0; i < objs.n; i++)
        tly_anonymizer_rename(an, objs.v[i], a);
    char *anon = write_list(&objs, &alen);
    fields f0 = {.a = a}, f1 = {.a = a}, f2 = {.a = a};
    simulate(&f0, path, NULL, 0, opts);
    simulate(&f1, NULL, orig, olen, opts);
    simulate(&f2, NULL, anon, alen, opts);
    char why[1024] = "";
    if (diff_fields(&f0, &f1, NULL, why, sizeof why))
        fail_msg("%s: the snapshot of the YAML does not simulate as the YAML: %s", path, why);
    tly_anon_stats st;
    tly_anonymizer_stats(an, &st);
    if (!reverse && (st.stuck || st.downgraded))
        fail_msg("%s: %zu strings kept for want of room, %zu tokens of a looser syntax", path,
                 st.stuck, st.downgraded);
    size_t bad = diff_fields(&f1, &f2, an, first, cap);
    *changed = outcomes_differ(&f1, &f2, an);
    free(f0.v);
    free(f1.v);
    free(f2.v);
    free(orig);
    free(anon);
    free(objs.v);
    tly_anonymizer_destroy(an);
    tly_arena_destroy(a);
    return bad;
}

/*
** Runs check_input on every scenario and examples/cluster; returns how many
** inputs differed, and through *nchanged in how many an outcome changed.
*/
static size_t check_every_input(bool reverse, size_t *ninputs, size_t *nchanged)
{
    char dirpath[512];
    snprintf(dirpath, sizeof dirpath, "%s/tests/scenarios", TALLY_SOURCE_DIR);
    DIR *d = opendir(dirpath);
    assert_non_null(d);
    tly_arena *a = tly_arena_create(1 << 14);
    char *names[256];
    size_t n = 0, differed = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 255;)
        if (e->d_name[0] != '.')
            names[n++] = tly_arena_printf(a, "%s/%s", dirpath, e->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, cmp_path);
    names[n++] = tly_arena_printf(a, "%s/examples/cluster", TALLY_SOURCE_DIR);
    *ninputs = *nchanged = 0;
    for (size_t i = 0; i < n; i++) {
        bool example = i == n - 1;
        char *input = example ? names[i] : tly_arena_printf(a, "%s/input.yaml", names[i]);
        struct stat st;
        if (stat(input, &st) != 0)
            continue;
        char first[1024] = "";
        bool changed;
        sim_opts opts = example ? (sim_opts){0} : scenario_opts(names[i], a);
        size_t bad = check_input(input, &opts, reverse, first, sizeof first, &changed);
        (*ninputs)++;
        *nchanged += changed;
        if (bad) {
            differed++;
            print_message("%s %s: %zu fields differ%s; first %s\n", reverse ? "reversed" : "FAIL",
                          strrchr(names[i], '/') + 1, bad, changed ? ", outcomes too" : "", first);
        }
    }
    tly_arena_destroy(a);
    return differed;
}

static void test_every_scenario_simulates_the_same(void **state)
{
    (void)state;
    size_t ninputs, nchanged;
    size_t differed = check_every_input(false, &ninputs, &nchanged);
    assert_true(ninputs >= 40);
    assert_int_equal(differed, 0);
    assert_int_equal(nchanged, 0);
}

/*
** The same check, with each gap's tokens reversed: the results are no longer
** the same, and not only in the order of the lists: tie-breaks by name now
** go the other way, so pods land on other nodes and Runs on other Pods.
*/
static void test_reversed_tokens_change_results(void **state)
{
    (void)state;
    size_t ninputs, nchanged;
    size_t differed = check_every_input(true, &ninputs, &nchanged);
    print_message("reversed token order: %zu of %zu inputs give other results, %zu other outcomes\n",
                  differed, ninputs, nchanged);
    assert_true(differed * 2 > ninputs);
    assert_true(nchanged >= 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_and_queue_positions),
        cmocka_unit_test(test_accounting_positions),
        cmocka_unit_test(test_pod_positions),
        cmocka_unit_test(test_kruntimes_and_dra_positions),
        cmocka_unit_test(test_request_references_split),
        cmocka_unit_test(test_one_mapping_across_positions),
        cmocka_unit_test(test_order_kept_on_random_sets),
        cmocka_unit_test(test_reversed_order_is_caught),
        cmocka_unit_test(test_dense_kept_neighbours),
        cmocka_unit_test(test_shortest_tokens_and_empty_strings),
        cmocka_unit_test(test_no_room_keeps_the_string),
        cmocka_unit_test(test_tokens_valid_where_originals_were),
        cmocka_unit_test(test_map_file_is_sorted_and_complete),
        cmocka_unit_test(test_every_scenario_simulates_the_same),
        cmocka_unit_test(test_reversed_tokens_change_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
