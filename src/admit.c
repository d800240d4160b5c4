/*
** admit.c: admission decisions (admit.h).
**
** The reviewed object is decoded into a small store of its own with the same
** decoders `tally validate` uses, so a field problem reads the same in both,
** and checked against the CustomResourceDefinition of its kind when the
** state holds one (schema, x-kubernetes-validations with oldSelf on UPDATE);
** the cross-object checks then look the references up in the (read-only)
** state. The object itself is never added to the state.
*/
#include "tally/admit.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tally/crd.h"
#include "tally/decode.h"
#include "tally/error.h"
#include "tally/json.h"
#include "tally/kaisnap.h"
#include "tally/kruntimes.h"
#include "tally/resize.h"

typedef struct {
    tly_admit_result *res;
    char *denial;   /* "; "-joined reasons */
} decision;

static void deny(decision *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void deny(decision *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = tly_xvasprintf(fmt, ap);
    va_end(ap);
    if (!d->denial) {
        d->denial = msg;
        return;
    }
    char *joined = tly_xasprintf("%s; %s", d->denial, msg);
    free(d->denial);
    free(msg);
    d->denial = joined;
}

static void warn(decision *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(decision *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = tly_xvasprintf(fmt, ap);
    va_end(ap);
    tly_admit_result *r = d->res;
    r->warnings = tly_xrealloc(r->warnings, (r->nwarnings + 1) * sizeof *r->warnings);
    r->warnings[r->nwarnings++] = msg;
}

static const char *str_at(const tly_node *n, const char *path)
{
    const tly_node *v = tly_node_path(n, path);
    return (v && v->type == TLY_N_STRING) ? v->str : NULL;
}

/* The object's own problems, as the validator reports them. */
static void object_problems(decision *d, tly_store *obj)
{
    tly_diags *g = tly_store_diags(obj);
    tly_diags_sort(g);
    for (size_t i = 0; i < tly_diags_count(g); i++) {
        const tly_diag *x = tly_diags_get(g, i);
        if (x->sev == TLY_SEV_ERROR)
            deny(d, "%s%s%s", x->field ? x->field : "", x->field ? ": " : "", x->msg);
        else if (x->sev == TLY_SEV_WARNING)
            warn(d, "%s%s%s", x->field ? x->field : "", x->field ? ": " : "", x->msg);
    }
}

static void check_queue(decision *d, const tly_store *state, const tly_queue *q)
{
    /* KAI's queue webhook: without it the scheduler would give the queue all-zero limits. */
    if (!q->has_resources)
        deny(d, "resources must be specified");
    if (q->parent && *q->parent && strcmp(q->parent, q->meta.name) != 0 &&
        !tly_store_find(state, TLY_K_QUEUE, NULL, q->parent))
        deny(d, "spec.parentQueue: parent queue \"%s\" does not exist", q->parent);
    if (q->parent && strcmp(q->parent, q->meta.name) == 0)
        deny(d, "spec.parentQueue: a queue cannot be its own parent");
    for (uint32_t i = 0; i < q->naccrefs; i++)
        if (q->accrefs[i].ref && *q->accrefs[i].ref &&
            !tly_store_find(state, TLY_K_ACCOUNTED_RESOURCE, NULL, q->accrefs[i].ref))
            deny(d, "spec.accountedResources[%u].resourceRef: AccountedResource \"%s\" does not exist",
                 i, q->accrefs[i].ref);
}

/*
** DELETE of Queue `name`, as KAI's queue webhook decides it: denied while
** queues of the state name it as their parent, listed in name order (the
** order the API server lists them in) as Go prints a string slice.
*/
static void check_queue_delete(decision *d, const tly_store *state, const char *name)
{
    char *kids = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&kids, &len);
    if (!f)
        tly_oom();
    int n = 0;
    for (uint32_t i = 0; i < tly_store_count(state, TLY_K_QUEUE); i++) {
        const tly_queue *q = tly_store_at(state, TLY_K_QUEUE, i);
        if (q->parent && !strcmp(q->parent, name) && strcmp(q->meta.name, name))
            fprintf(f, "%s%s", n++ ? " " : "", q->meta.name);
    }
    fclose(f);
    if (n)
        deny(d, "cannot delete queue %s: it has child queues [%s]", name, kids);
    free(kids);
}

/* Same request (names and values) in both Runs? */
static bool same_requests(const tly_run *a, const tly_run *b)
{
    if (a->has_resources != b->has_resources || a->nrequests != b->nrequests)
        return false;
    for (uint32_t i = 0; i < a->nrequests; i++) {
        bool found = false;
        for (uint32_t j = 0; j < b->nrequests; j++)
            if (strcmp(a->requests[i].name, b->requests[j].name) == 0) {
                found = strcmp(a->requests[i].text, b->requests[j].text) == 0 ||
                        (a->requests[i].valid && b->requests[j].valid &&
                         tly_qty_cmp(a->requests[i].q, b->requests[j].q) == 0);
                break;
            }
        if (!found)
            return false;
    }
    return true;
}

static bool same_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static void check_run(decision *d, const tly_store *state, const tly_run *run, const tly_run *old)
{
    if (old) {
        if (!same_requests(run, old))
            deny(d, "spec.resources: is immutable after Run creation");
        if (!same_str(run->runtime, old->runtime))
            deny(d, "spec.runtime: is immutable after Run creation");
        if (!same_str(run->mode, old->mode))
            deny(d, "spec.mode: is immutable after Run creation");
    }
    if (run->runtime && *run->runtime &&
        !tly_store_find(state, TLY_K_RUNTIME, run->meta.ns, run->runtime)) {
        uint32_t n;
        tly_store_runtime_pods(state, run->meta.ns, run->runtime, &n);
        if (n == 0)
            warn(d, "spec.runtime: no Runtime \"%s\" in namespace %s; the Run stays Pending until one exists",
                 run->runtime, run->meta.ns);
    }
}

/* ---- the scratch a decision works in ------------------------------------ */

struct tly_admit_scratch {
    tly_arena *arena;     /* the review's tree and the decoded pods; reset after each decision */
    tly_names *names;     /* the pods' resource names; back to the fixed ones after each */
    tly_diags *diags[2];  /* the new and the old pod's decoding problems; cleared after each */
};

tly_admit_scratch *tly_admit_scratch_create(void)
{
    tly_admit_scratch *sc = tly_xcalloc(1, sizeof *sc);
    /* 64 KiB: a review of a few KB, its tree, its pods and the rule's temporaries in the one block kept. */
    sc->arena = tly_arena_create(64 * 1024);
    sc->names = tly_names_create_private();
    sc->diags[0] = tly_diags_create();
    sc->diags[1] = tly_diags_create();
    return sc;
}

void tly_admit_scratch_destroy(tly_admit_scratch *sc)
{
    if (!sc)
        return;
    tly_arena_destroy(sc->arena);
    tly_names_destroy(sc->names);
    tly_diags_destroy(sc->diags[0]);
    tly_diags_destroy(sc->diags[1]);
    free(sc);
}

/* After a decision: nothing of it is kept but the memory (the first arena block, the tables). */
static void scratch_reset(tly_admit_scratch *sc)
{
    tly_arena_reset(sc->arena);
    tly_names_reset(sc->names);
    tly_diags_clear(sc->diags[0]);
    tly_diags_clear(sc->diags[1]);
}

/* ---- pods/resize: decode both pods with the validator's decoders, then resize.h ---- */

/*
** The first error the decoders found in a Pod's resources (a quantity too
** large or too fine to hold exactly, a malformed one), or NULL. The decoder
** leaves such a field out, so the pod would seem to ask for nothing.
*/
static const tly_diag *resources_error(const tly_diags *d)
{
    for (size_t i = 0; i < tly_diags_count(d); i++) {
        const tly_diag *g = tly_diags_get(d, i);
        if (g->sev == TLY_SEV_ERROR && g->field && strstr(g->field, "resources"))
            return g;
    }
    return NULL;
}

/* The two pods of a resize review as decoded, with the names and problems of their decoding. */
typedef struct {
    const tly_pod *neu, *old;
    const tly_diags *ndiags, *odiags;
    tly_names *names;
    tly_store *ns, *os;  /* the store path's one-object stores, else NULL */
} resize_pods;

/*
** A review object decoded straight into the scratch, as the loader would
** decode it into a store of its own (load.c handle_object): NULL unless it
** is a Pod. Its problems go to diags, and its src.file reads `which`.
*/
static const tly_pod *decode_pod(tly_admit_scratch *sc, tly_diags *diags, const char *which,
                                 const tly_node *object)
{
    tly_decode_env env = {.arena = sc->arena, .names = sc->names, .diags = diags, .file = which};
    int errors = 0;
    const tly_meta *m = tly_decode_object(&env, object, &errors);
    return m && m->kind == TLY_K_POD ? (const tly_pod *)m : NULL;
}

/*
** Decodes both pods. Straight into the scratch, without a store: a store
** per pod (its arena, indexes and name map, made and freed for every
** review) was a sixth of the webhook's time. An object the loader treats
** otherwise than by decoding it (a CustomResourceDefinition, a KAI
** snapshot) goes the store path, which is the loader's own, so the answer
** is the same either way; one names table serves both pods, since the
** resize rule compares their resources id by id.
*/
static void resize_pods_decode(tly_admit_scratch *sc, const tly_node *object, const tly_node *oldo,
                               resize_pods *p)
{
    memset(p, 0, sizeof *p);
    bool special = tly_crd_is_crd(object) || tly_kaisnap_is_snapshot(object) || tly_crd_is_crd(oldo) ||
                   tly_kaisnap_is_snapshot(oldo);
    if (!special) {
        p->names = sc->names;
        p->neu = decode_pod(sc, sc->diags[0], "request.object", object);
        p->old = decode_pod(sc, sc->diags[1], "request.oldObject", oldo);
        p->ndiags = sc->diags[0];
        p->odiags = sc->diags[1];
        return;
    }
    p->ns = tly_store_create_one(NULL);
    p->os = tly_store_create_one(tly_store_names(p->ns));
    tly_store_load_object(p->ns, "request.object", object);
    tly_store_load_object(p->os, "request.oldObject", oldo);
    tly_store_finish(p->ns);
    tly_store_finish(p->os);
    p->neu = tly_store_count(p->ns, TLY_K_POD) ? tly_store_at(p->ns, TLY_K_POD, 0) : NULL;
    p->old = tly_store_count(p->os, TLY_K_POD) ? tly_store_at(p->os, TLY_K_POD, 0) : NULL;
    p->ndiags = tly_store_diags(p->ns);
    p->odiags = tly_store_diags(p->os);
    p->names = tly_store_names(p->ns);
}

static void resize_pods_free(resize_pods *p)
{
    tly_store_destroy(p->os);
    tly_store_destroy(p->ns);
}

/* The resize rule on the decoded pods (temporaries in a), with the ledger around it when there is one. */
static void resize_rule(decision *d, tly_store *state, const resize_pods *p, const tly_resize_ledger *ledger,
                        tly_arena *a)
{
    const tly_pod *neu = p->neu, *old = p->old;
    tly_resize_verdict v;
    if (ledger) {
        size_t n = 0;
        /* From here on `state` is the one the ledger pairs with its increases (resize.h). */
        const tly_resize_extra *extra = ledger->begin(ledger->ctx, old, &state, &n);
        tly_resize_decide_in(state, p->names, neu, old, extra, n, a, &v);
        /*
        ** Reserve only for a pod the state holds: a review may name any pod,
        ** and holds for pods that do not exist would take the room of real
        ** ones until they time out (and grow the ledger without bound).
        */
        const tly_pod *sp = tly_store_find(state, TLY_K_POD, old->meta.ns, old->meta.name);
        v.in_state = sp && (!sp->meta.uid || !old->meta.uid || !strcmp(sp->meta.uid, old->meta.uid));
        /* No warning for it: the answer stays the one `tally admit` gives (contract section 7). */
        ledger->end(ledger->ctx, old, &v, d->res->dry_run);
    } else {
        tly_resize_decide_in(state, p->names, neu, old, NULL, 0, a, &v);
    }
    if (!v.allowed)
        deny(d, "%s", v.message);
    if (v.warning)
        warn(d, "%s", v.warning);
    tly_resize_verdict_free(&v);
}

static void decide_resize(decision *d, tly_store *state, const tly_node *req,
                          const tly_resize_ledger *ledger, tly_admit_scratch *sc)
{
    const tly_node *object = tly_node_get(req, "object"), *oldo = tly_node_get(req, "oldObject");
    if (!object || object->type != TLY_N_MAP || !oldo || oldo->type != TLY_N_MAP) {
        deny(d, "a pods/resize review needs request.object and request.oldObject");
        return;
    }
    resize_pods p;
    resize_pods_decode(sc, object, oldo, &p);
    const tly_diag *bad = resources_error(p.ndiags);
    const char *which = "request.object";
    if (!bad) {
        bad = resources_error(p.odiags);
        which = "request.oldObject";
    }
    if (bad) {
        /* A quantity dropped as unreadable would read as no increase: never admit on that. */
        deny(d, "resize rejected: %s %s: %s; tally cannot decide this resize exactly", which, bad->field,
             bad->msg);
    } else if (!p.neu || !p.old) {
        deny(d, "request.object and request.oldObject must be Pods tally can read");
    } else if (!tly_store_is_tally_pod(state, p.old)) {
        warn(d, "pod %s/%s is not scheduled by %s; tally does not check its resize", p.old->meta.ns,
             p.old->meta.name, tly_store_scheduler_name(state));
    } else {
        resize_rule(d, state, &p, ledger, sc->arena);
    }
    resize_pods_free(&p);
}

int tly_admit_review(const tly_store *state, const char *body, size_t len, tly_admit_result *res,
                     char *err, size_t errlen)
{
    return tly_admit_review_ledger(state, NULL, body, len, res, err, errlen);
}

int tly_admit_review_ledger(const tly_store *state, const tly_resize_ledger *ledger,
                            const char *body, size_t len, tly_admit_result *res, char *err,
                            size_t errlen)
{
    tly_admit_scratch *sc = tly_admit_scratch_create();
    int rc = tly_admit_review_scratch(state, ledger, sc, body, len, res, err, errlen);
    tly_admit_scratch_destroy(sc);
    return rc;
}

int tly_admit_review_scratch(const tly_store *state, const tly_resize_ledger *ledger, tly_admit_scratch *sc,
                             const char *body, size_t len, tly_admit_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    int rc = TLY_EINVAL;
    tly_node *review = tly_parse_api_value(body, len, sc->arena);
    const char *api = review ? str_at(review, "apiVersion") : NULL;
    const char *kind = review ? str_at(review, "kind") : NULL;
    const tly_node *req = review ? tly_node_get(review, "request") : NULL;
    const char *uid = req ? str_at(req, "uid") : NULL;
    if (!review || review->type != TLY_N_MAP) {
        snprintf(err, errlen, "stdin is not a JSON or YAML object");
        goto out;
    }
    if (!api || strcmp(api, "admission.k8s.io/v1") != 0 || !kind ||
        strcmp(kind, "AdmissionReview") != 0) {
        snprintf(err, errlen, "expected apiVersion admission.k8s.io/v1 and kind AdmissionReview");
        goto out;
    }
    if (!req || req->type != TLY_N_MAP || !uid) {
        snprintf(err, errlen, "the AdmissionReview has no request with a uid");
        goto out;
    }
    res->uid = tly_xstrdup(uid);
    const tly_node *dry = tly_node_get(req, "dryRun");
    res->dry_run = dry && dry->type == TLY_N_BOOL && dry->bval;
    rc = TLY_OK;

    decision d = {.res = res};
    const char *op = str_at(req, "operation");
    const char *rkind = str_at(req, "kind.kind");
    const char *sub = str_at(req, "subResource");
    res->kind = rkind ? tly_xstrdup(rkind) : NULL;
    res->operation = op ? tly_xstrdup(op) : NULL;
    const tly_node *object = tly_node_get(req, "object");
    bool create = op && !strcmp(op, "CREATE"), update = op && !strcmp(op, "UPDATE");
    if (rkind && !strcmp(rkind, "Pod") && update && sub && !strcmp(sub, "resize")) {
        decide_resize(&d, (tly_store *)state, req, ledger, sc);
        goto done;
    }
    if (rkind && !strcmp(rkind, "Queue") && op && !strcmp(op, "DELETE") && !(sub && *sub)) {
        const char *name = str_at(req, "name");
        if (!name || !*name)
            name = str_at(req, "oldObject.metadata.name");
        if (!name || !*name)
            deny(&d, "request.name: missing (the queue to delete)");
        else
            check_queue_delete(&d, state, name);
        goto done;
    }
    bool ours = rkind && (!strcmp(rkind, "Queue") || !strcmp(rkind, "AccountedResource") ||
                          !strcmp(rkind, "Run"));
    if (!ours || (!create && !update) || (sub && *sub)) {
        res->allowed = true;
        warn(&d, "tally does not decide %s %s%s%s; allowed", op ? op : "?", rkind ? rkind : "?",
             sub && *sub ? "/" : "", sub && *sub ? sub : "");
        goto done;
    }
    if (!object || object->type != TLY_N_MAP) {
        deny(&d, "request.object: missing");
        goto done;
    }
    const tly_node *oldo = update ? tly_node_get(req, "oldObject") : NULL;
    int k = !strcmp(rkind, "Queue") ? TLY_K_QUEUE
            : !strcmp(rkind, "Run") ? TLY_K_RUN : TLY_K_ACCOUNTED_RESOURCE;
    /* Each object is decoded into a store of its own, with the validator's decoders. */
    tly_store *obj = tly_store_create_one(NULL);
    tly_store_load_object(obj, "request.object", object);
    tly_store_finish(obj);
    tly_store *olds = NULL;
    const tly_meta *m = tly_store_count(obj, k) ? tly_store_at(obj, k, 0) : NULL, *old = NULL;
    if (oldo && oldo->type == TLY_N_MAP) {
        olds = tly_store_create_one(NULL);
        tly_store_load_object(olds, "request.oldObject", oldo);
        tly_store_finish(olds);
        old = tly_store_count(olds, k) ? tly_store_at(olds, k, 0) : NULL;
    }
    /*
    ** What the API server checks before any webhook: the object against the
    ** CRD of its kind, when the state holds one (docs/admit.md). In a live
    ** cluster the API server has done it already and this finds nothing new;
    ** against files, and for `tally admit` on a review written by hand, it is
    ** what makes the answer the cluster's.
    */
    size_t decoded = tly_diags_count(tly_store_diags(obj));
    tly_crdset_check_object(tly_store_crds(state), object, oldo && oldo->type == TLY_N_MAP ? oldo : NULL,
                            "request.object", tly_store_diags(obj));
    tly_diags_drop_restated(tly_store_diags(obj), decoded);
    object_problems(&d, obj);
    if (!m) {
        deny(&d, "request.object: is not a %s tally can read", rkind);
    } else if (k == TLY_K_QUEUE) {
        check_queue(&d, state, (const tly_queue *)m);
    } else if (k == TLY_K_RUN) {
        check_run(&d, state, (const tly_run *)m, (const tly_run *)old);
    }
    if (olds)
        tly_store_destroy(olds);
    tly_store_destroy(obj);
done:
    res->allowed = d.denial == NULL;
    res->message = d.denial;
out:
    scratch_reset(sc);
    return rc;
}

void tly_admit_result_free(tly_admit_result *res)
{
    free(res->patch);
    free(res->uid);
    free(res->message);
    free(res->kind);
    free(res->operation);
    for (size_t i = 0; i < res->nwarnings; i++)
        free(res->warnings[i]);
    free(res->warnings);
    memset(res, 0, sizeof *res);
}

/* Standard base64 with padding (RFC 4648), as the response's patch field wants it. */
static char *base64(const char *in, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = tly_xmalloc((n + 2) / 3 * 4 + 1), *o = out;
    const unsigned char *p = (const unsigned char *)in;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        *o++ = tab[v >> 18 & 63];
        *o++ = tab[v >> 12 & 63];
        *o++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

/* ---- the answer into a buffer (the webhook's) ------------------------------ */

/* A bounded writer: counts every byte, keeps those that fit. */
typedef struct {
    char *p;
    size_t cap, len;
} obuf;

static void ob_put(obuf *o, const char *s, size_t n)
{
    if (o->len < o->cap) {
        size_t room = o->cap - o->len;
        memcpy(o->p + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void ob_puts(obuf *o, const char *s) { ob_put(o, s, strlen(s)); }

/* A JSON string as json.c writes it (tly_json_write_escaped), or null for NULL. */
static void ob_string(obuf *o, const char *s)
{
    if (!s) {
        ob_puts(o, "null");
        return;
    }
    ob_put(o, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    for (;;) {
        const unsigned char *run = p;
        while (*p && *p >= 0x20 && *p != '"' && *p != '\\')
            p++;
        ob_put(o, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        char esc[8];
        switch (*p) {
        case '"': ob_puts(o, "\\\""); break;
        case '\\': ob_puts(o, "\\\\"); break;
        case '\n': ob_puts(o, "\\n"); break;
        case '\r': ob_puts(o, "\\r"); break;
        case '\t': ob_puts(o, "\\t"); break;
        case '\b': ob_puts(o, "\\b"); break;
        case '\f': ob_puts(o, "\\f"); break;
        default:
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            ob_puts(o, esc);
        }
        p++;
    }
    ob_put(o, "\"", 1);
}

size_t tly_admit_format_response(const tly_admit_result *res, char *buf, size_t cap)
{
    obuf o = {buf, cap, 0};
    ob_puts(&o, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
    ob_string(&o, res->uid);
    ob_puts(&o, res->allowed ? ",\"allowed\":true" : ",\"allowed\":false");
    if (!res->allowed) {
        ob_puts(&o, ",\"status\":{\"code\":403,\"reason\":\"Forbidden\",\"message\":");
        ob_string(&o, res->message);
        ob_put(&o, "}", 1);
    }
    if (res->patch) {
        ob_puts(&o, ",\"patchType\":\"JSONPatch\",\"patch\":");
        char *b64 = base64(res->patch, strlen(res->patch));
        ob_string(&o, b64);
        free(b64);
    }
    if (res->nwarnings) {
        ob_puts(&o, ",\"warnings\":[");
        for (size_t i = 0; i < res->nwarnings; i++) {
            if (i)
                ob_put(&o, ",", 1);
            ob_string(&o, res->warnings[i]);
        }
        ob_put(&o, "]", 1);
    }
    ob_puts(&o, "}}\n");
    if (o.len < cap)
        buf[o.len] = '\0';
    return o.len;
}

void tly_admit_write_response(FILE *out, const tly_admit_result *res, bool pretty)
{
    tly_json j;
    tly_json_init(&j, out, pretty);
    tly_json_begin_object(&j);
    tly_json_key(&j, "apiVersion");
    tly_json_string(&j, "admission.k8s.io/v1");
    tly_json_key(&j, "kind");
    tly_json_string(&j, "AdmissionReview");
    tly_json_key(&j, "response");
    tly_json_begin_object(&j);
    tly_json_key(&j, "uid");
    tly_json_string(&j, res->uid);
    tly_json_key(&j, "allowed");
    tly_json_bool(&j, res->allowed);
    if (!res->allowed) {
        tly_json_key(&j, "status");
        tly_json_begin_object(&j);
        tly_json_key(&j, "code");
        tly_json_int(&j, 403);
        tly_json_key(&j, "reason");
        tly_json_string(&j, "Forbidden");
        tly_json_key(&j, "message");
        tly_json_string(&j, res->message);
        tly_json_end_object(&j);
    }
    if (res->patch) {
        tly_json_key(&j, "patchType");
        tly_json_string(&j, "JSONPatch");
        tly_json_key(&j, "patch");
        char *b64 = base64(res->patch, strlen(res->patch));
        tly_json_string(&j, b64);
        free(b64);
    }
    if (res->nwarnings) {
        tly_json_key(&j, "warnings");
        tly_json_begin_array(&j);
        for (size_t i = 0; i < res->nwarnings; i++)
            tly_json_string(&j, res->warnings[i]);
        tly_json_end_array(&j);
    }
    tly_json_end_object(&j);
    tly_json_end_object(&j);
    if (!pretty)
        fputc('\n', out);
}
