/*
** resv.c: reservations every replica sees, kept in one ConfigMap (resv.h).
**
** The ConfigMap holds one data entry per kind of hold ("upsizes",
** "claims"), each a JSON array with one object per line, sorted, so that
** `kubectl get configmap tally-reservations -o yaml` reads well and equal
** tables are equal text. The replica keeps the last copy it read or wrote
** (its resourceVersion and entries) and decides on it: a write made from a
** stale copy is refused with 409, which is how staleness is found out; a
** refused write costs one more GET.
**
** A write replaces the whole ConfigMap (PUT with metadata.resourceVersion);
** the first one creates it (POST; 409 AlreadyExists means another replica
** created it first: read it and go on).
*/
#include "tally/resv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"
#include "tally/error.h"
#include "tally/json.h"
#include "tally/node.h"
#include "tally/upsize.h"

#define ATTEMPTS 8
#define NKEYS 2
static const char *const keys[NKEYS] = {"claims", "upsizes"};

enum { W_OK, W_CONFLICT, W_ERROR, W_RESULTS };
static const char *const wnames[W_RESULTS] = {"ok", "conflict", "error"};

struct tly_resv {
    tly_resv_options o;
    char *ns, *name;
    pthread_mutex_t mu;          /* one transaction at a time */
    /* The last copy read or written. */
    bool valid;                  /* false: read before deciding */
    bool exists;                 /* the ConfigMap exists (PUT, else POST) */
    char *rv;
    char *text[NKEYS];
    size_t count[NKEYS];         /* entries in text[] */
    atomic_uint_fast64_t writes[W_RESULTS];
    atomic_uint_fast64_t reads;
};

static int key_index(const char *key)
{
    for (int i = 0; i < NKEYS; i++)
        if (!strcmp(keys[i], key))
            return i;
    return -1;
}

tly_resv *tly_resv_create(const tly_resv_options *o)
{
    tly_resv *r = tly_xcalloc(1, sizeof *r);
    r->o = *o;
    r->ns = tly_xstrdup(o->ns ? o->ns : "default");
    r->name = tly_xstrdup(o->name ? o->name : "tally-reservations");
    pthread_mutex_init(&r->mu, NULL);
    for (int i = 0; i < W_RESULTS; i++)
        atomic_init(&r->writes[i], 0);
    atomic_init(&r->reads, 0);
    return r;
}

static void forget(tly_resv *r)
{
    r->valid = false;
    free(r->rv);
    r->rv = NULL;
    for (int i = 0; i < NKEYS; i++) {
        free(r->text[i]);
        r->text[i] = NULL;
        r->count[i] = 0;
    }
}

void tly_resv_destroy(tly_resv *r)
{
    if (!r)
        return;
    forget(r);
    pthread_mutex_destroy(&r->mu);
    free(r->ns);
    free(r->name);
    free(r);
}

static void logmsg(tly_resv *r, int level, const char *event, const char *msg)
{
    if (r->o.log)
        r->o.log(r->o.log_ctx, level, event, msg);
}

/* Holds in one entry's text: one per line, each line an object. */
static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (const char *p = text; p && (p = strstr(p, "\n{")); p += 2)
        n++;
    return n;
}

static int cmp_line(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

char *tly_resv_entry_text(uint64_t seen, char **lines, size_t n)
{
    if (!n)
        return tly_xstrdup("");
    qsort(lines, n, sizeof *lines, cmp_line);
    size_t len = 64;
    for (size_t i = 0; i < n; i++)
        len += strlen(lines[i]) + 2;
    char *out = tly_xmalloc(len), *p = out;
    p += sprintf(p, "{\"seen\":\"%llu\",\"holds\":[", (unsigned long long)seen);
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "\n%s%s", lines[i], i + 1 < n ? "," : "");
    strcpy(p, "\n]}");
    return out;
}

const tly_node *tly_resv_entry_parse(const char *text, tly_arena *a, uint64_t *seen)
{
    *seen = 0;
    if (!text || !*text)
        return NULL;
    const tly_node *o = tly_parse_value(text, strlen(text), a);
    const tly_node *s = o && o->type == TLY_N_MAP ? tly_node_get(o, "seen") : NULL;
    const tly_node *h = o && o->type == TLY_N_MAP ? tly_node_get(o, "holds") : NULL;
    if (s && s->type == TLY_N_STRING)
        *seen = tly_rv_number(s->str);
    return h && h->type == TLY_N_SEQ ? h : NULL;
}

tly_store *tly_resv_fork(tly_resv *r, int kind, uint64_t min_seen, char *err, size_t errlen)
{
    uint64_t v = tly_live_version(r->o.live);
    for (int waited = 0;; waited += 50) {
        tly_store *f = tly_live_fork(r->o.live);
        uint64_t seen = tly_store_seen_rv(f, kind);
        if (seen >= min_seen)
            return f;
        tly_store_destroy(f);
        if (waited >= 5000) {
            snprintf(err, errlen, "this replica's watch is behind the reservations (it has seen resourceVersion "
                     "%llu, another replica %llu)", (unsigned long long)seen, (unsigned long long)min_seen);
            return NULL;
        }
        v = tly_live_wait(r->o.live, v, 50);
    }
}

/* Takes the copy the server sent (a ConfigMap), or, for 404, an empty table. */
static int adopt(tly_resv *r, const tly_kube_resp *resp, char *err, size_t errlen)
{
    forget(r);
    if (resp->status == 404) {
        r->exists = false;
        r->valid = true;
        return TLY_OK;
    }
    tly_arena *a = tly_arena_create(resp->len + 1024);
    const tly_node *cm = tly_parse_value(resp->body, resp->len, a);
    const tly_node *rv = cm ? tly_node_path(cm, "metadata.resourceVersion") : NULL;
    if (!rv || rv->type != TLY_N_STRING) {
        snprintf(err, errlen, "ConfigMap %s/%s: the answer is not a ConfigMap with a resourceVersion", r->ns,
                 r->name);
        tly_arena_destroy(a);
        return TLY_EHTTP;
    }
    r->rv = tly_xstrdup(rv->str);
    const tly_node *data = tly_node_get(cm, "data");
    for (int i = 0; i < NKEYS; i++) {
        const tly_node *v = data && data->type == TLY_N_MAP ? tly_node_get(data, keys[i]) : NULL;
        r->text[i] = tly_xstrdup(v && v->type == TLY_N_STRING ? v->str : "");
        r->count[i] = count_lines(r->text[i]);
    }
    r->exists = true;
    r->valid = true;
    tly_arena_destroy(a);
    return TLY_OK;
}

static char *path_of(tly_resv *r, bool object)
{
    return object ? tly_xasprintf("/api/v1/namespaces/%s/configmaps/%s", r->ns, r->name)
                  : tly_xasprintf("/api/v1/namespaces/%s/configmaps", r->ns);
}

static int read_table(tly_resv *r, char *err, size_t errlen)
{
    char *path = path_of(r, true);
    tly_kube_resp resp;
    int rc = tly_kube_request(r->o.kube, "GET", path, NULL, NULL, 0, &resp, err, errlen);
    free(path);
    atomic_fetch_add(&r->reads, 1);
    if (rc == TLY_OK && resp.status != 200 && resp.status != 404) {
        char what[300];
        snprintf(what, sizeof what, "configmaps (%s/%s)", r->ns, r->name);
        tly_kube_explain_status(r->o.kube, &resp, "get", what, err, errlen);
        rc = TLY_EHTTP;
    }
    if (rc == TLY_OK)
        rc = adopt(r, &resp, err, errlen);
    tly_kube_resp_free(&resp);
    return rc;
}

/* The ConfigMap with entry k's value replaced by text. */
static char *table_body(tly_resv *r, int k, const char *text)
{
    tly_jbuf b;
    tly_jbuf_open(&b);
    tly_json *j = &b.j;
    tly_json_begin_object(j);
    tly_json_kv(j, "apiVersion", "v1");
    tly_json_kv(j, "kind", "ConfigMap");
    tly_json_key(j, "metadata");
    tly_json_begin_object(j);
    tly_json_kv(j, "name", r->name);
    tly_json_kv(j, "namespace", r->ns);
    if (r->exists)
        tly_json_kv(j, "resourceVersion", r->rv);
    tly_json_key(j, "labels");
    tly_json_begin_object(j);
    tly_json_kv(j, "app.kubernetes.io/managed-by", "tally");
    tly_json_end_object(j);
    tly_json_end_object(j);
    tly_json_key(j, "data");
    tly_json_begin_object(j);
    for (int i = 0; i < NKEYS; i++) {
        const char *v = i == k ? text : r->text[i];
        if (v && *v)
            tly_json_kv(j, keys[i], v);
    }
    tly_json_end_object(j);
    tly_json_end_object(j);
    return tly_jbuf_close(&b);
}

/* Stores text as entry k if the copy is current: W_OK, W_CONFLICT (read again) or W_ERROR. */
static int write_table(tly_resv *r, int k, const char *text, char *err, size_t errlen)
{
    char *body = table_body(r, k, text);
    char *path = path_of(r, r->exists);
    tly_kube_resp resp;
    int rc = tly_kube_request(r->o.kube, r->exists ? "PUT" : "POST", path, "application/json", body,
                              strlen(body), &resp, err, errlen);
    free(path);
    free(body);
    int out = W_ERROR;
    if (rc == TLY_OK) {
        if (resp.status == 200 || resp.status == 201) {
            out = adopt(r, &resp, err, errlen) == TLY_OK ? W_OK : W_ERROR;
        } else if (resp.status == 409) {
            out = W_CONFLICT;  /* a newer copy (PUT), or created by another replica (POST) */
        } else {
            char what[300];
            snprintf(what, sizeof what, "configmaps (%s/%s)", r->ns, r->name);
            tly_kube_explain_status(r->o.kube, &resp, r->exists ? "update" : "create", what, err, errlen);
        }
    }
    tly_kube_resp_free(&resp);
    if (out != W_OK)
        forget(r);
    atomic_fetch_add(&r->writes[out], 1);
    return out;
}

int tly_resv_run(tly_resv *r, const char *key, tly_resv_step step, void *ctx, char *err, size_t errlen)
{
    int k = key_index(key);
    if (k < 0) {
        snprintf(err, errlen, "no reservation table \"%s\"", key);
        return TLY_EINVAL;
    }
    pthread_mutex_lock(&r->mu);
    int rc = TLY_ELIMIT;
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
        bool fresh = false;
        if (!r->valid) {
            if ((rc = read_table(r, err, errlen)) != TLY_OK)
                break;
            fresh = true;
        }
        char *out = NULL;
        int s = step(ctx, r->text[k] ? r->text[k] : "", fresh, &out);
        if (s == TLY_RESV_FRESH && !fresh) {
            forget(r);
            continue;
        }
        if (s != TLY_RESV_WRITE) {
            rc = TLY_OK;
            break;
        }
        int w = write_table(r, k, out ? out : "", err, errlen);
        free(out);
        if (w == W_OK) {
            rc = TLY_OK;
            break;
        }
        if (w == W_ERROR) {
            rc = TLY_EHTTP;
            break;
        }
        rc = TLY_ELIMIT;
    }
    if (rc == TLY_ELIMIT)
        snprintf(err, errlen, "ConfigMap %s/%s changed under %d writes in a row (other replicas reserving)",
                 r->ns, r->name, ATTEMPTS);
    pthread_mutex_unlock(&r->mu);
    if (rc != TLY_OK)
        logmsg(r, 2, "reservation-failed", err);
    return rc;
}

int64_t tly_resv_upsize_timeout(const tly_resv *r) { return r->o.upsize_timeout_ms; }

size_t tly_resv_count(tly_resv *r, const char *key)
{
    int k = key_index(key);
    pthread_mutex_lock(&r->mu);
    size_t n = k >= 0 ? r->count[k] : 0;
    pthread_mutex_unlock(&r->mu);
    return n;
}

void tly_resv_metrics(tly_resv *r, FILE *out)
{
    fprintf(out, "# HELP tally_reservation_writes_total Writes of the shared reservations ConfigMap, by result "
                 "(conflict: another replica wrote first; the decision was made again).\n"
                 "# TYPE tally_reservation_writes_total counter\n");
    for (int i = 0; i < W_RESULTS; i++)
        fprintf(out, "tally_reservation_writes_total{result=\"%s\"} %llu\n", wnames[i],
                (unsigned long long)atomic_load(&r->writes[i]));
    fprintf(out, "# HELP tally_reservation_reads_total Reads of the shared reservations ConfigMap.\n"
                 "# TYPE tally_reservation_reads_total counter\n"
                 "tally_reservation_reads_total %llu\n",
            (unsigned long long)atomic_load(&r->reads));
    fprintf(out, "# HELP tally_claim_reservations Admitted claims the watched state does not show yet.\n"
                 "# TYPE tally_claim_reservations gauge\n"
                 "tally_claim_reservations %zu\n",
            tly_resv_count(r, "claims"));
}
