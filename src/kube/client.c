/*
** client.c: HTTPS requests to the API server over libcurl (kube.h).
**
** One tly_kube serves every thread of the process. A request takes a curl
** easy handle from a small pool (so TLS sessions and connections are reused
** across requests, as a Go http.Transport reuses them), waits for the rate
** limiter, asks cred.c for the credential, and sends. A 401 is retried once
** with a refreshed credential (a rotated token file, an exec plugin whose
** token the server no longer takes); a second 401 goes back to the caller.
**
** The rate limiter is client-go's token bucket: --kube-api-qps tokens a
** second, at most --kube-api-burst saved up; a request that finds the
** bucket empty takes a token in advance and sleeps until it is due, so
** waiting requests are served in order. Every request counts, watches too.
**
** Streams (watch.c) use the same path with a write callback that hands the
** bytes on as they arrive, a progress callback that polls the caller's stop
** flag once a second, and an idle bound.
*/
#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube_int.h"
#include "tally/arena.h"
#include "tally/decode.h"
#include "tally/error.h"
#include "tally/version.h"

#define POOL_MAX 16
#define MAX_BODY ((size_t)2 << 30)

struct tly_kube {
    tly_kube_config *cfg;
    tly_kube_creds *creds;
    char *user_agent;
    long timeout_ms;
    /* rate limiter */
    pthread_mutex_t rl_mu;
    double qps, tokens;
    int burst;
    int64_t rl_last_ms;
    /* connection pool */
    pthread_mutex_t pool_mu;
    CURL *pool[POOL_MAX];
    int npool;
    uint64_t requests;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

int tly_kube_create(tly_kube_config *cfg, const tly_kube_options *o, tly_kube **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    if (cfg->tls_server_name) {
        snprintf(err, errlen,
                 "%s.tls-server-name: not supported by tally yet; connect to a server URL whose "
                 "host name is in the server certificate",
                 cfg->cluster_where);
        tly_kube_config_free(cfg);
        return TLY_EINVAL;
    }
    pthread_once(&curl_once, curl_init);
    tly_kube *k = tly_xcalloc(1, sizeof *k);
    k->cfg = cfg;
    k->creds = tly_kube_creds_create(cfg);
    k->user_agent = tly_xstrdup(o && o->user_agent ? o->user_agent : "tally/" TALLY_VERSION);
    k->timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : 60000;
    k->qps = o ? o->qps : TLY_KUBE_DEFAULT_QPS;
    k->burst = o && o->burst > 0 ? o->burst : TLY_KUBE_DEFAULT_BURST;
    k->tokens = k->burst;
    k->rl_last_ms = tly_mono_ms();
    pthread_mutex_init(&k->rl_mu, NULL);
    pthread_mutex_init(&k->pool_mu, NULL);
    *out = k;
    return TLY_OK;
}

void tly_kube_destroy(tly_kube *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->npool; i++)
        curl_easy_cleanup(k->pool[i]);
    pthread_mutex_destroy(&k->pool_mu);
    pthread_mutex_destroy(&k->rl_mu);
    tly_kube_creds_destroy(k->creds);
    tly_kube_config_free(k->cfg);
    free(k->user_agent);
    free(k);
}

const tly_kube_config *tly_kube_config_of(const tly_kube *k) { return k->cfg; }

uint64_t tly_kube_requests(const tly_kube *k)
{
    return __atomic_load_n(&k->requests, __ATOMIC_RELAXED);
}

void tly_kube_resp_free(tly_kube_resp *r)
{
    free(r->body);
    free(r->warning);
    memset(r, 0, sizeof *r);
    r->date = INT64_MIN;
    r->retry_after = -1;
}

/* ---- rate limit -------------------------------------------------------------- */

static void rate_wait(tly_kube *k)
{
    if (k->qps <= 0)
        return;
    pthread_mutex_lock(&k->rl_mu);
    int64_t now = tly_mono_ms();
    k->tokens += (double)(now - k->rl_last_ms) * k->qps / 1000.0;
    if (k->tokens > k->burst)
        k->tokens = k->burst;
    k->rl_last_ms = now;
    k->tokens -= 1.0;
    double wait_ms = k->tokens < 0 ? -k->tokens * 1000.0 / k->qps : 0;
    pthread_mutex_unlock(&k->rl_mu);
    if (wait_ms > 0) {
        struct timespec ts = {(time_t)(wait_ms / 1000), (long)((int64_t)wait_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
}

/* ---- the pool -------------------------------------------------------------- */

static CURL *take(tly_kube *k)
{
    pthread_mutex_lock(&k->pool_mu);
    CURL *h = k->npool ? k->pool[--k->npool] : NULL;
    pthread_mutex_unlock(&k->pool_mu);
    if (!h) {
        h = curl_easy_init();
        if (!h)
            tly_oom();
    } else {
        curl_easy_reset(h);
    }
    return h;
}

static void give_back(tly_kube *k, CURL *h, bool reusable)
{
    pthread_mutex_lock(&k->pool_mu);
    if (reusable && k->npool < POOL_MAX) {
        k->pool[k->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&k->pool_mu);
    if (h)
        curl_easy_cleanup(h);
}

/* ---- one transfer ---------------------------------------------------------- */

typedef struct {
    tly_kube_resp *r;
    /* buffered body */
    size_t cap;
    bool overflow;
    /* streaming */
    tly_kube_chunk_fn fn;
    void *ctx;
    int fn_rc;
    const atomic_int *stop;
    long idle_ms;
    int64_t last_byte_ms;
    bool idle_expired;
    CURL *h;
    bool decided;       /* whether the body goes to fn is known */
    bool stream_body;   /* hand the body to fn (status 200) */
} xfer;

static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
    xfer *x = ud;
    size_t len = size * n;
    if (len > 7 && !strncasecmp(buf, "Date:", 5)) {
        char tmp[64];
        size_t m = len - 5 < sizeof tmp - 1 ? len - 5 : sizeof tmp - 1;
        memcpy(tmp, buf + 5, m);
        tmp[m] = '\0';
        time_t t = curl_getdate(tmp, NULL);
        if (t != (time_t)-1)
            x->r->date = (int64_t)t;
    } else if (len > 12 && !strncasecmp(buf, "Retry-After:", 12)) {
        x->r->retry_after = atoi(buf + 12);
    } else if (len > 8 && !strncasecmp(buf, "Warning:", 8)) {
        size_t m = len - 8;
        while (m && (buf[8 + m - 1] == '\r' || buf[8 + m - 1] == '\n'))
            m--;
        const char *v = buf + 8;
        while (m && *v == ' ') {
            v++;
            m--;
        }
        char *w = x->r->warning ? tly_xasprintf("%s; %.*s", x->r->warning, (int)m, v)
                                : tly_xasprintf("%.*s", (int)m, v);
        free(x->r->warning);
        x->r->warning = w;
    } else if (len >= 5 && !strncmp(buf, "HTTP/", 5)) {
        /* A new response (after a 100 Continue): its headers replace the last ones. */
        free(x->r->warning);
        x->r->warning = NULL;
    }
    return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *ud)
{
    xfer *x = ud;
    size_t len = size * n;
    x->last_byte_ms = tly_mono_ms();
    if (x->fn && !x->decided) {
        /* The status is known once the body starts: only a 200 streams; an
           error's Status is kept to be explained. */
        long status = 0;
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
        x->stream_body = status == 200;
        x->decided = true;
    }
    if (x->fn && x->stream_body) {
        x->fn_rc = x->fn(x->ctx, buf, len);
        return x->fn_rc ? 0 : len;
    }
    tly_kube_resp *r = x->r;
    if (r->len + len + 1 > x->cap) {
        if (r->len + len + 1 > MAX_BODY) {
            x->overflow = true;
            return 0;
        }
        size_t cap = x->cap ? x->cap : 16384;
        while (cap < r->len + len + 1)
            cap *= 2;
        r->body = tly_xrealloc(r->body, cap);
        x->cap = cap;
    }
    memcpy(r->body + r->len, buf, len);
    r->len += len;
    r->body[r->len] = '\0';
    return len;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    xfer *x = ud;
    if (x->stop && atomic_load(x->stop))
        return 1;
    if (x->idle_ms > 0 && tly_mono_ms() - x->last_byte_ms > x->idle_ms) {
        x->idle_expired = true;
        return 1;
    }
    return 0;
}

static void set_tls(tly_kube *k, CURL *h, const tly_kube_cred *cred)
{
    const tly_kube_config *c = k->cfg;
    if (c->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (c->ca_pem) {
        struct curl_blob b = {c->ca_pem, c->ca_len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
    } else if (c->ca_file) {
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    }
    const char *cert = cred->cert_pem ? cred->cert_pem : c->cert_pem;
    const char *key = cred->cert_pem ? cred->key_pem : c->key_pem;
    size_t cl = cred->cert_pem ? cred->cert_len : c->cert_len;
    size_t kl = cred->cert_pem ? cred->key_len : c->key_len;
    if (cert) {
        struct curl_blob cb = {(void *)cert, cl, CURL_BLOB_COPY};
        struct curl_blob kb = {(void *)key, kl, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (c->cert_file) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert_file);
        curl_easy_setopt(h, CURLOPT_SSLKEY, c->key_file);
    }
    if (c->proxy_url)
        curl_easy_setopt(h, CURLOPT_PROXY, c->proxy_url);
}

/* What curl's failure means for a person. */
static void net_error(tly_kube *k, CURLcode cc, const char *ebuf, char *err, size_t errlen)
{
    const char *detail = *ebuf ? ebuf : curl_easy_strerror(cc);
    bool tls = cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CONNECT_ERROR ||
               cc == CURLE_SSL_CERTPROBLEM || cc == CURLE_SSL_CACERT_BADFILE;
    if (tls)
        snprintf(err, errlen,
                 "TLS with the API server at %s failed: %s (check certificate-authority(-data) "
                 "and the client certificate of %s)",
                 k->cfg->server, detail, k->cfg->origin);
    else
        snprintf(err, errlen,
                 "cannot reach the API server at %s: %s (check the server URL of %s, and that the "
                 "cluster is up)",
                 k->cfg->server, detail, k->cfg->origin);
}

typedef struct {
    const char *method, *path, *ctype, *body;
    size_t blen;
    bool stream;
    long idle_ms;
} req;

static int perform(tly_kube *k, const req *q, xfer *x, const tly_kube_cred *cred, char *err,
                   size_t errlen)
{
    CURL *h = take(k);
    char ebuf[CURL_ERROR_SIZE] = "";
    char *url = tly_xasprintf("%s%s", k->cfg->server, q->path);
    struct curl_slist *hdr = NULL;
    hdr = curl_slist_append(hdr, "Accept: application/json");
    char *auth = NULL;
    if (cred->bearer) {
        auth = tly_xasprintf("Authorization: Bearer %s", cred->bearer);
        hdr = curl_slist_append(hdr, auth);
    }
    char *ct = NULL;
    if (q->body) {
        ct = tly_xasprintf("Content-Type: %s", q->ctype ? q->ctype : "application/json");
        hdr = curl_slist_append(hdr, ct);
    }
    hdr = curl_slist_append(hdr, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_USERAGENT, k->user_agent);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    if (cred->basic) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERPWD, cred->basic);
    }
    if (!q->stream)
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, k->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
    if (q->body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->blen);
    } else if (!strcmp(q->method, "GET")) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    set_tls(k, h, cred);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    x->idle_ms = q->idle_ms;
    x->h = h;
    x->decided = false;
    x->last_byte_ms = tly_mono_ms();
    if (q->stream || x->stop) {
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
    }
    __atomic_add_fetch(&k->requests, 1, __ATOMIC_RELAXED);
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    x->r->status = status;
    curl_slist_free_all(hdr);
    free(url);
    free(auth);
    free(ct);
    int rc = TLY_OK;
    if (cc == CURLE_OK) {
        rc = TLY_OK;
    } else if (x->fn_rc || (x->stop && atomic_load(x->stop))) {
        rc = TLY_OK;   /* the caller ended it */
    } else if (x->idle_expired) {
        snprintf(err, errlen, "nothing arrived from %s for %ld ms", q->path, x->idle_ms);
        rc = TLY_ETIMEOUT;
    } else if (x->overflow) {
        snprintf(err, errlen, "the answer to %s is larger than %zu bytes", q->path, MAX_BODY);
        rc = TLY_ELIMIT;
    } else if (status && q->stream && cc != CURLE_OPERATION_TIMEDOUT) {
        snprintf(err, errlen, "the stream %s broke: %s", q->path, *ebuf ? ebuf : curl_easy_strerror(cc));
        rc = TLY_ENET;
    } else {
        net_error(k, cc, ebuf, err, errlen);
        rc = cc == CURLE_OPERATION_TIMEDOUT ? TLY_ETIMEOUT : TLY_ENET;
    }
    give_back(k, h, cc == CURLE_OK);
    return rc;
}

/* Sends q; one retry with a refreshed credential after a 401. */
static int send_req(tly_kube *k, const req *q, xfer *x, char *err, size_t errlen)
{
    for (int attempt = 0;; attempt++) {
        tly_kube_cred cred;
        int rc = tly_kube_creds_get(k->creds, attempt > 0, &cred, err, errlen);
        if (rc != TLY_OK)
            return rc;
        rate_wait(k);
        tly_kube_resp_free(x->r);
        x->cap = 0;
        x->fn_rc = 0;
        x->overflow = x->idle_expired = false;
        rc = perform(k, q, x, &cred, err, errlen);
        tly_kube_cred_clear(&cred);
        if (rc != TLY_OK || x->r->status != 401 || attempt > 0)
            return rc;
    }
}

int tly_kube_request(tly_kube *k, const char *method, const char *path, const char *ctype,
                     const char *body, size_t blen, tly_kube_resp *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    tly_kube_resp_free(r);
    xfer x = {.r = r};
    req q = {.method = method, .path = path, .ctype = ctype, .body = body, .blen = blen};
    return send_req(k, &q, &x, err, errlen);
}

int tly_kube_stream(tly_kube *k, const char *path, tly_kube_chunk_fn fn, void *ctx,
                    const atomic_int *stop, long idle_ms, tly_kube_resp *r, char *err,
                    size_t errlen)
{
    memset(r, 0, sizeof *r);
    tly_kube_resp_free(r);
    xfer x = {.r = r, .fn = fn, .ctx = ctx, .stop = stop};
    req q = {.method = "GET", .path = path, .stream = true, .idle_ms = idle_ms};
    return send_req(k, &q, &x, err, errlen);
}

/* ---- explaining answers ---------------------------------------------------- */

void tly_kube_explain_status(const tly_kube *k, const tly_kube_resp *r, const char *verb,
                             const char *what, char *err, size_t errlen)
{
    tly_arena *a = tly_arena_create(4096);
    const tly_node *root = r->body && r->len ? tly_parse_value(r->body, r->len, a) : NULL;
    const tly_node *m = root && root->type == TLY_N_MAP ? tly_node_get(root, "message") : NULL;
    const char *msg = m && m->type == TLY_N_STRING ? m->str : NULL;
    const tly_kube_config *c = k->cfg;
    if (r->status == 401)
        snprintf(err, errlen,
                 "the API server at %s refused the credentials of %s (401 Unauthorized): the token "
                 "or client certificate is wrong or has expired; renew it (log in again, or check "
                 "that the service account token is mounted)",
                 c->server, c->user_where ? c->user_where : c->origin);
    else if (r->status == 403)
        snprintf(err, errlen,
                 "the API server refused to %s %s (403 Forbidden): %s; grant verb \"%s\" on "
                 "resource \"%s\" to this user with a (Cluster)Role and binding (deploy/ has the "
                 "roles tally needs)",
                 verb, what, msg ? msg : "forbidden", verb, what);
    else
        snprintf(err, errlen, "%s %s: the API server answered %ld%s%s", verb, what, r->status,
                 msg ? ": " : "", msg ? msg : "");
    tly_arena_destroy(a);
}
