/*
** server.c: the HTTPS admission webhook (server.h) on libmicrohttpd + GnuTLS.
**
** Why this shape:
**  - libmicrohttpd runs the workers, one daemon and epoll loop each
**    (c-stack.md section 2 measured it the fastest HTTP/1.1 server of the
**    candidates). One accepting thread of ours (acceptor.h) takes every
**    connection and gives it to the worker holding the fewest: with a
**    shared listening socket a burst of connects often all went to one
**    worker. Keep-alive is HTTP/1.1's default and MHD's; the API server
**    reuses its connections.
**  - A TLS session reads through a read-ahead buffer (readahead.h) and
**    writes through joinsend.h, which sends an answer's header and body
**    records with one sendmsg; decisions run in a per-worker scratch
**    (admit.h), and log lines go to a log thread (logq.h).
**  - The certificate is not handed to MHD as a fixed PEM: a GnuTLS
**    certificate callback runs at every handshake and returns the current
**    pair. At most once a second it looks at the files (mtime, inode, size:
**    a Secret volume swaps a symlink, cert-manager rewrites in place) and
**    loads a changed pair, after checking that the key belongs to the
**    certificate; a half-written pair is refused and the old one stays.
**    Established connections keep their session; nothing is dropped. A
**    replaced pair is retired, not freed, because GnuTLS sessions made with
**    it still point into it; retired pairs are freed with the server (one per
**    rotation, a few KiB each).
**  - The callback has no closure argument; MHD stores the connection as the
**    GnuTLS session pointer, and the connection-start notification puts the
**    server in the connection's socket context, where the callback finds it.
**  - --client-ca: MHD's own trust option would fix the CA list at start, so
**    the CA file is a GnuTLS trust list of tally's, reloaded like the pair.
**    Each connection's session is told to ask for a client certificate when
**    it starts (MHD_CONNECTION_NOTIFY_STARTED, before the handshake); the
**    handshake never fails for want of one, so probes and scrapes work
**    without. An admission request checks the presented chain against the
**    trust list (purpose client authentication) when its headers are in;
**    a verified chain is remembered for the connection until the CA file
**    changes or the chain expires. A refused request's body is read and
**    dropped, and the answer is 403.
**  - The state is a reference-counted store (server.h). A mutex guards only
**    the pointer while a reference is taken; the decision itself runs with no
**    lock (a finished store is read-only), except the upsize ledger's own
**    lock in the reserve-upsizes mode, which makes decide-and-reserve one step;
**    a swap reconciles the reservations and pairs the new state with them
**    under that lock, and a resize decision decides on the paired state.
**  - Hostile input: the body is collected up to max_body; a Content-Length
**    above it is answered 413 before the body is read, a chunked body that
**    grows past it is read and dropped and then answered 413 (and the
**    connection is cut if it goes on past four times the limit). A body that
**    is not an AdmissionReview gets 400 with the reason.
**  - Hostile clients: conns.h bounds what one peer holds and how long a
**    handshake or a request may take (MHD's own timeout restarts at every
**    byte). Bodies in flight and their parses share one memory budget
**    (atomic, no lock): past it the answer is 503; a review's parse is
**    bounded by counting its JSON values before parsing it.
**  - Counting: the request-line callback makes MHD report the end of every
**    request it read a request line of, so on_completed counts each answer
**    by status (or the reason there was none); the answers MHD gives
**    without calling us are counted from its log message.
*/
#include "tally/server.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "tally/acceptor.h"
#include "tally/admit.h"
#include "tally/conns.h"
#include "tally/decode.h"
#include "tally/error.h"
#include "tally/joinsend.h"
#include "tally/logq.h"
#include "tally/readahead.h"
#include "tally/upsize.h"
#include "tally/valuebound.h"

#define MAX_CERTS 16

/* One certificate chain and its key. */
typedef struct creds {
    gnutls_pcert_st pcert[MAX_CERTS];
    unsigned npcert;
    gnutls_privkey_t key;
    time_t not_before, not_after;  /* the leaf certificate's validity */
    struct creds *retired_next;
} creds;

/* What identifies a version of a file. */
typedef struct {
    bool ok;
    struct timespec mtime;
    dev_t dev;
    ino_t ino;
    off_t size;
} file_id;

typedef struct {
    tly_store *store;
    atomic_int refs;
} state_ref;

/* Less than this left on the serving certificate: a warning every hour (7 days). */
#define EXPIRY_WARN_S (7 * 86400)

/* The --client-ca certificates; retired, not freed, on a reload (a verification may be using it). */
typedef struct client_ca {
    gnutls_x509_trust_list_t list;
    struct client_ca *retired_next;
} client_ca;

/* Why a request was refused for its client certificate: the label of tally_client_cert_rejections_total. */
enum { CERT_MISSING = 0, CERT_INVALID, CERT_REASONS };
static const char *const cert_reason_name[CERT_REASONS] = {"missing", "invalid"};

/* The socket context of a connection (one worker at a time handles a connection). */
typedef struct {
    tly_server *srv;     /* the certificate callback's way to the server */
    tly_conn *guard;     /* its entry in the connection guard (conns.h) */
    int worker;          /* the index of the daemon serving it, -1: unknown */
    tly_readahead *rx;   /* the TLS session's reads (readahead.h) */
    tly_joinsend *tx;    /* and its writes (joinsend.h) */
    unsigned ca_gen;     /* the client CA generation the chain verified against; 0: not verified */
    time_t expires;      /* the verified chain's earliest notAfter */
} conn_ctx;

struct tly_server {
    tly_server_config cfg;
    char *listen, *cert_path, *key_path;
    FILE *log;
    tly_logq *logq;                /* the log's writer thread (logq.h); NULL: one write(2) a line */
    tly_metrics *metrics;
    tly_upsize *upsize;            /* NULL unless --reserve-upsizes */

    pthread_mutex_t state_mu;
    state_ref *state;
    bool has_source;               /* live: states come from the source, one per decision */
    tly_server_source source;

    pthread_mutex_t tls_mu;
    creds *creds;
    creds *retired;
    file_id cert_id, key_id;
    int64_t tls_checked_ms;
    int64_t expiry_warned_ms;      /* the last tls-certificate-expiring warning (0: none for this pair) */

    char *client_ca_path;          /* NULL: no client certificates */
    client_ca *ca;                 /* under tls_mu, as are the three below */
    client_ca *ca_retired;
    unsigned ca_gen;               /* +1 at every load */
    file_id ca_id;
    int64_t ca_checked_ms;
    atomic_uint_fast64_t cert_rejected[CERT_REASONS];

    tly_conns *conns;              /* per-peer limits and deadlines (conns.h) */
    pthread_key_t scratch_key;     /* each worker's tly_admit_scratch (admit.h), freed as it exits */
    bool has_scratch_key;
    atomic_size_t mem_used;        /* bytes of bodies in flight and parses under way */

    /*
    ** One libmicrohttpd daemon per worker thread, none with a listening
    ** socket of its own: the acceptor (acceptor.h) takes every connection
    ** and hands it to the daemon holding the fewest (held[], counted at the
    ** hand-over and given back when the connection closes).
    */
    struct MHD_Daemon *daemons[TLY_SERVER_MAX_THREADS];
    atomic_uint held[TLY_SERVER_MAX_THREADS];
    unsigned ndaemons;
    tly_acceptor *acceptor;
    int64_t accept_error_ms;       /* the last accept-failed line (the acceptor's thread only) */
    int listen_fd;
    uint16_t port;
    atomic_bool accepting;
    atomic_int in_flight;
};

/* One request being received. */
typedef struct {
    tly_endpoint ep;
    char *body;
    size_t len, cap;
    size_t dropped;   /* bytes past the limit, read and dropped */
    bool too_large;
    bool counted;     /* in_flight was incremented */
    bool over_budget; /* a chunked body grew past the memory budget: read, dropped, 503 */
    size_t held;      /* bytes of the memory budget this request holds for its body */
    size_t parsed;    /* the bytes its parse was allowed (given back after the decision) */
    unsigned status;  /* the status tally queued, 0: none (yet) */
    int forbidden;    /* -1, else the CERT_* reason of a 403 (--client-ca) */
    char why[240];    /* the 403's reason */
} request;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- logging ------------------------------------------------------------ */

int tly_log_level_parse(const char *s)
{
    if (!strcmp(s, "debug"))
        return TLY_LOG_DEBUG;
    if (!strcmp(s, "info"))
        return TLY_LOG_INFO;
    if (!strcmp(s, "warn") || !strcmp(s, "warning"))
        return TLY_LOG_WARN;
    if (!strcmp(s, "error"))
        return TLY_LOG_ERROR;
    return -1;
}

static const char *const level_name[] = {"debug", "info", "warn", "error"};

/*
** A log line is built in a buffer on the caller's stack (most lines are well under 1 KiB) and
** moves to the heap only when it outgrows it: a webhook that logs every decision pays no
** malloc for it.
*/
typedef struct {
    char *s;
    size_t len, cap;
    bool heap; /* s was malloc'ed (it outgrew the stack buffer it started in) */
} strbuf;

static void sb_grow(strbuf *b, size_t need)
{
    size_t cap = b->cap * 2;
    while (cap < b->len + need + 1)
        cap *= 2;
    if (b->heap) {
        b->s = tly_xrealloc(b->s, cap);
    } else {
        char *h = tly_xrealloc(NULL, cap);
        memcpy(h, b->s, b->len);
        b->s = h;
        b->heap = true;
    }
    b->cap = cap;
}

static void sb_putn(strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap)
        sb_grow(b, n);
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void sb_putc(strbuf *b, char c)
{
    sb_putn(b, &c, 1);
}

static void sb_puts(strbuf *b, const char *s)
{
    sb_putn(b, s, strlen(s));
}

/* A byte a logfmt value cannot hold bare: a space or control, a quote, '=', a backslash, DEL and up. */
static bool needs_quotes(unsigned char c) { return c <= ' ' || c == '"' || c == '=' || c == '\\' || c >= 0x7f; }

/*
** logfmt value: bare when it is a plain token, else quoted with \" \\ \n escaped. Runs of plain
** bytes go in with one copy: the decision line's nine values were a call a byte when quoted.
*/
static void sb_value(strbuf *b, const char *v)
{
    const unsigned char *p = (const unsigned char *)v;
    while (*p && !needs_quotes(*p))
        p++;
    if (!*p && p != (const unsigned char *)v) {
        sb_putn(b, v, (size_t)(p - (const unsigned char *)v));
        return;
    }
    sb_putc(b, '"');
    p = (const unsigned char *)v;
    for (;;) {
        const unsigned char *run = p;
        while (*p && *p >= ' ' && *p != '"' && *p != '\\' && *p != 0x7f)
            p++;
        sb_putn(b, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        if (*p == '"' || *p == '\\') {
            char esc[2] = {'\\', (char)*p};
            sb_putn(b, esc, 2);
        } else if (*p == '\n') {
            sb_puts(b, "\\n");
        } else {
            char hex[8];
            snprintf(hex, sizeof hex, "\\x%02x", *p);
            sb_puts(b, hex);
        }
        p++;
    }
    sb_putc(b, '"');
}

void tly_server_log(tly_server *srv, int level, const char *event, const char *const *kv,
                    size_t nkv)
{
    if (level < srv->cfg.log_level)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char when[32];
    tly_format_time_ms((int64_t)ts.tv_sec, (int)(ts.tv_nsec / 1000000), when);
    char stack[1024];
    strbuf b = {.s = stack, .cap = sizeof stack};
    sb_puts(&b, "ts=");
    sb_puts(&b, when);
    sb_puts(&b, " level=");
    sb_puts(&b, level_name[level < 0 ? 0 : level > 3 ? 3 : level]);
    sb_puts(&b, " event=");
    sb_value(&b, event);
    for (size_t i = 0; i + 1 < nkv * 2; i += 2) {
        if (!kv[i + 1])
            continue;
        sb_putc(&b, ' ');
        sb_puts(&b, kv[i]);
        sb_putc(&b, '=');
        sb_value(&b, kv[i + 1]);
    }
    sb_putc(&b, '\n');
    /*
    ** A log on a file descriptor (stderr, a file, a pipe) is written by the log thread
    ** (logq.h): the line is copied into its buffer and the review goes on; the thread writes
    ** whole lines in batches (PIPE_BUF at most a write), in the order they were put, within
    ** a few milliseconds. Without that thread, one write(2) a line. Every line of the server
    ** log comes through here, and stderr is unbuffered, so stdio holds nothing that should go
    ** first. A line that cannot be written is dropped: a full disk is not a reason to fail a
    ** review. A stream with no descriptor (a memory stream) gets one locked fputs.
    */
    int fd = fileno(srv->log);
    if (srv->logq) {
        tly_logq_put(srv->logq, b.s, b.len);
    } else if (fd >= 0) {
        (void)tly_logq_write_all(NULL, (void *)(intptr_t)fd, b.s, b.len);
    } else {
        fputs(b.s, srv->log);
        fflush(srv->log);
    }
    if (b.heap)
        free(b.s);
}

/* A log line with one message field, formatted. */
static void logf_msg(tly_server *srv, int level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void logf_msg(tly_server *srv, int level, const char *event, const char *fmt, ...)
{
    if (level < srv->cfg.log_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *msg = tly_xvasprintf(fmt, ap);
    va_end(ap);
    const char *kv[] = {"msg", msg};
    tly_server_log(srv, level, event, kv, 1);
    free(msg);
}

/*
** libmicrohttpd answers some requests itself (a malformed request line, 414,
** 431, 505, a bad Content-Length or chunk) and refuses connections past its
** own limit, calling no handler of ours: its log message is the only sign.
** Counted from the message's format (libmicrohttpd 0.9.75, untranslated),
** the status code being its first argument.
*/
static void count_httpd_message(tly_server *srv, const char *fmt, va_list ap)
{
    static const char answered[] = "Error processing request (HTTP response code is %u";
    if (!strncmp(fmt, answered, sizeof answered - 1)) {
        va_list aq;
        va_copy(aq, ap);
        tly_metrics_response(srv->metrics, va_arg(aq, unsigned));
        va_end(aq);
    } else if (!strncmp(fmt, "Server reached connection limit", 31)) {
        tly_conns_refused_by_httpd(srv->conns);
    }
}

/* MHD's own error messages, at warn. */
static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
    tly_server *srv = cls;
    count_httpd_message(srv, fmt, ap);
    if (TLY_LOG_WARN < srv->cfg.log_level)
        return;
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        return;
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = 0;
    const char *kv[] = {"msg", msg};
    tly_server_log(srv, TLY_LOG_WARN, "httpd", kv, 1);
    free(msg);
}

/* ---- TLS ---------------------------------------------------------------- */

static file_id identify(const char *path)
{
    file_id id = {0};
    struct stat st;
    if (stat(path, &st) == 0) {
        id.ok = true;
        id.mtime = st.st_mtim;
        id.dev = st.st_dev;
        id.ino = st.st_ino;
        id.size = st.st_size;
    }
    return id;
}

static bool same_file(file_id a, file_id b)
{
    return a.ok == b.ok && a.mtime.tv_sec == b.mtime.tv_sec && a.mtime.tv_nsec == b.mtime.tv_nsec &&
           a.dev == b.dev && a.ino == b.ino && a.size == b.size;
}

static void creds_free(creds *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < c->npcert; i++)
        gnutls_pcert_deinit(&c->pcert[i]);
    if (c->key)
        gnutls_privkey_deinit(c->key);
    free(c);
}

/*
** The leaf certificate's validity period into c, and false with err set
** when it is not valid now: an API server refuses an expired (or not yet
** valid) serving certificate on every call, and with failurePolicy Fail that
** stops the objects the webhooks guard. Better to refuse to start, or to keep
** the previous pair on a rotation, and say which date is wrong.
*/
static bool leaf_valid(creds *c, const char *cert, char *err, size_t errlen)
{
    gnutls_x509_crt_t x;
    if (gnutls_x509_crt_init(&x) < 0)
        tly_oom();
    int rc = gnutls_x509_crt_import(x, &c->pcert[0].cert, GNUTLS_X509_FMT_DER);
    c->not_before = rc < 0 ? (time_t)-1 : gnutls_x509_crt_get_activation_time(x);
    c->not_after = rc < 0 ? (time_t)-1 : gnutls_x509_crt_get_expiration_time(x);
    gnutls_x509_crt_deinit(x);
    time_t now = time(NULL);
    char when[32];
    if (rc < 0 || c->not_before == (time_t)-1 || c->not_after == (time_t)-1) {
        snprintf(err, errlen, "certificate %s: its validity period cannot be read%s%s", cert, rc < 0 ? ": " : "",
                 rc < 0 ? gnutls_strerror(rc) : "");
        return false;
    }
    if (now > c->not_after) {
        tly_format_time((int64_t)c->not_after, when);
        snprintf(err, errlen, "certificate %s expired at %s (notAfter): renew it (the API server refuses an "
                 "expired serving certificate)", cert, when);
        return false;
    }
    if (now < c->not_before) {
        tly_format_time((int64_t)c->not_before, when);
        snprintf(err, errlen, "certificate %s is not valid before %s (notBefore): check the issuer's and this "
                 "machine's clocks", cert, when);
        return false;
    }
    return true;
}

/* Loads and checks a pair; NULL with err set when it cannot be used. */
static creds *creds_load(const char *cert, const char *key, char *err, size_t errlen)
{
    gnutls_datum_t cd = {NULL, 0}, kd = {NULL, 0};
    creds *c = calloc(1, sizeof *c);
    gnutls_pubkey_t pub = NULL;
    int rc;
    if (!c)
        tly_oom();
    if ((rc = gnutls_load_file(cert, &cd)) < 0) {
        snprintf(err, errlen, "cannot read certificate %s: %s", cert, gnutls_strerror(rc));
        goto fail;
    }
    if ((rc = gnutls_load_file(key, &kd)) < 0) {
        snprintf(err, errlen, "cannot read key %s: %s", key, gnutls_strerror(rc));
        goto fail;
    }
    c->npcert = MAX_CERTS;
    rc = gnutls_pcert_list_import_x509_raw(c->pcert, &c->npcert, &cd, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0 || c->npcert == 0) {
        c->npcert = 0;
        snprintf(err, errlen, "certificate %s: %s", cert, rc < 0 ? gnutls_strerror(rc) : "no certificate");
        goto fail;
    }
    if ((rc = gnutls_privkey_init(&c->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(c->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        snprintf(err, errlen, "key %s: %s", key, gnutls_strerror(rc));
        goto fail;
    }
    if (!leaf_valid(c, cert, err, errlen))
        goto fail;
    /* The key must belong to the leaf certificate, or every handshake would fail. */
    unsigned char a[64], b[64];
    size_t alen = sizeof a, blen = sizeof b;
    if (gnutls_pubkey_init(&pub) < 0 || gnutls_pubkey_import_privkey(pub, c->key, 0, 0) < 0 ||
        gnutls_pubkey_get_key_id(pub, GNUTLS_KEYID_USE_SHA256, a, &alen) < 0 ||
        gnutls_pubkey_get_key_id(c->pcert[0].pubkey, GNUTLS_KEYID_USE_SHA256, b, &blen) < 0 ||
        alen != blen || memcmp(a, b, alen) != 0) {
        snprintf(err, errlen, "key %s does not match certificate %s", key, cert);
        goto fail;
    }
    gnutls_pubkey_deinit(pub);
    gnutls_free(cd.data);
    gnutls_free(kd.data);
    return c;
fail:
    if (pub)
        gnutls_pubkey_deinit(pub);
    gnutls_free(cd.data);
    gnutls_free(kd.data);
    creds_free(c);
    return NULL;
}

/* Reloads the pair if the files changed; at most once a second unless forced. */
static void tls_check(tly_server *srv, bool force)
{
    int64_t now = mono_ms();
    pthread_mutex_lock(&srv->tls_mu);
    if (!force && now - srv->tls_checked_ms < 1000) {
        pthread_mutex_unlock(&srv->tls_mu);
        return;
    }
    srv->tls_checked_ms = now;
    file_id ci = identify(srv->cert_path), ki = identify(srv->key_path);
    if (same_file(ci, srv->cert_id) && same_file(ki, srv->key_id)) {
        pthread_mutex_unlock(&srv->tls_mu);
        return;
    }
    char err[512];
    creds *c = creds_load(srv->cert_path, srv->key_path, err, sizeof err);
    /* Remember what was seen either way: a bad pair is not retried until the files change again. */
    srv->cert_id = ci;
    srv->key_id = ki;
    if (c) {
        srv->creds->retired_next = srv->retired;
        srv->retired = srv->creds;
        srv->creds = c;
        srv->expiry_warned_ms = 0;  /* a new pair near its end is warned about at once */
    }
    pthread_mutex_unlock(&srv->tls_mu);
    tly_metrics_tls_reload(srv->metrics, c != NULL);
    if (c)
        logf_msg(srv, TLY_LOG_INFO, "tls-reload", "certificate %s and key %s reloaded", srv->cert_path,
                 srv->key_path);
    else
        logf_msg(srv, TLY_LOG_ERROR, "tls-reload-failed", "%s; the previous pair stays", err);
}

static int cert_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                         const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                         gnutls_pcert_st **pcert, unsigned int *pcert_length,
                         gnutls_privkey_t *privkey)
{
    (void)req_ca_dn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    struct MHD_Connection *conn = gnutls_session_get_ptr(session);
    const union MHD_ConnectionInfo *ci =
        conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    const conn_ctx *cc = ci ? ci->socket_context : NULL;
    tly_server *srv = cc ? cc->srv : NULL;
    if (!srv)
        return -1;
    tls_check(srv, false);
    pthread_mutex_lock(&srv->tls_mu);
    *pcert = srv->creds->pcert;
    *pcert_length = srv->creds->npcert;
    *privkey = srv->creds->key;
    pthread_mutex_unlock(&srv->tls_mu);
    return 0;
}

/* The connection's socket context, or NULL. */
static conn_ctx *ctx_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The request line is in: the request's deadline starts (conns.h). Nothing to give MHD back. */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)uri;
    tly_server *srv = cls;
    conn_ctx *cc = ctx_of(conn);
    if (cc)
        tly_conns_request_started(srv->conns, cc->guard);
    return NULL;
}

/* GnuTLS's pull function over the connection's read-ahead (readahead.h): one recv(2) a record. */
static ssize_t tls_pull(gnutls_transport_ptr_t p, void *data, size_t size)
{
    return tly_readahead_read(p, data, size);
}

/* GnuTLS's wait for data (handshake and record timeouts): buffered bytes count as ready. */
static int tls_pull_timeout(gnutls_transport_ptr_t p, unsigned ms)
{
    const tly_readahead *r = p;
    if (tly_readahead_pending(r))
        return 1;
    struct pollfd pfd = {.fd = tly_readahead_fd(r), .events = POLLIN};
    int rc;
    do
        rc = poll(&pfd, 1, ms == GNUTLS_INDEFINITE_TIMEOUT ? -1 : (int)ms);
    while (rc < 0 && errno == EINTR);
    return rc;
}

/* GnuTLS's push functions over the connection's writer (joinsend.h): an answer's two records, one sendmsg. */
static ssize_t tls_vec_push(gnutls_transport_ptr_t p, const giovec_t *iov, int iovcnt)
{
    return tly_joinsend_writev(p, (const struct iovec *)iov, iovcnt);
}

static ssize_t tls_push(gnutls_transport_ptr_t p, const void *data, size_t size)
{
    struct iovec v = {(void *)data, size};
    return tly_joinsend_writev(p, &v, 1);
}

/*
** The session reads through cc->rx and writes through cc->tx (instead of
** GnuTLS's own recv and sendmsg on the descriptor, which libmicrohttpd set
** up). Set before the handshake, at the connection's start.
*/
static void tls_transport(conn_ctx *cc, gnutls_session_t session, int fd)
{
    cc->rx = tly_readahead_create(fd);
    cc->tx = tly_joinsend_create(fd);
    gnutls_transport_set_ptr2(session, cc->rx, cc->tx);
    gnutls_transport_set_pull_function(session, tls_pull);
    gnutls_transport_set_pull_timeout_function(session, tls_pull_timeout);
    gnutls_transport_set_push_function(session, tls_push);
    gnutls_transport_set_vec_push_function(session, tls_vec_push);
}

/* The index of the daemon serving conn, -1 when it is none of ours. */
static int worker_of(tly_server *srv, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *di = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
    for (unsigned i = 0; di && i < srv->ndaemons; i++)
        if (srv->daemons[i] == di->daemon)
            return (int)i;
    return -1;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    tly_server *srv = cls;
    if (toe != MHD_CONNECTION_NOTIFY_STARTED) {
        /* Before MHD closes the socket: the reaper must not shut down a reused descriptor. */
        conn_ctx *old = *socket_context;
        if (old) {
            tly_conns_close(srv->conns, old->guard);
            if (old->worker >= 0)
                atomic_fetch_sub(&srv->held[old->worker], 1);
            /* libmicrohttpd has freed the session already (gnutls_deinit comes first): no I/O follows. */
            tly_readahead_destroy(old->rx);
            tly_joinsend_destroy(old->tx);
        }
        free(old);
        *socket_context = NULL;
        return;
    }
    conn_ctx *cc = calloc(1, sizeof *cc);
    if (!cc)
        tly_oom();
    cc->srv = srv;
    cc->worker = worker_of(srv, conn);
    *socket_context = cc;
    const union MHD_ConnectionInfo *fi = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    int fd = fi ? fi->connect_fd : -1;
    /* The acceptor admitted and counted it; a connection it did not hand over is counted now. */
    cc->guard = tly_conns_adopt(srv->conns, fd);
    if (!cc->guard) {
        const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        cc->guard = tly_conns_open(srv->conns, ai ? ai->client_addr : NULL, fd);
    }
    /* The session exists and its handshake has not begun. */
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t session = ci ? ci->tls_session : NULL;
    if (session && fd >= 0)
        tls_transport(cc, session, fd);
    /* Ask for a client certificate, never require one. */
    if (session && srv->client_ca_path)
        gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUEST);
}

/* ---- accepting ------------------------------------------------------------ */

/* The daemon holding the fewest connections (the first of equals). */
static unsigned least_held(tly_server *srv)
{
    unsigned best = 0, least = atomic_load(&srv->held[0]);
    for (unsigned i = 1; i < srv->ndaemons; i++) {
        unsigned h = atomic_load(&srv->held[i]);
        if (h < least) {
            least = h;
            best = i;
        }
    }
    return best;
}

/*
** The acceptor's callback: the connection guard admits and counts the
** connection (or it is closed at once), and the daemon holding the fewest
** gets it. libmicrohttpd closes the socket itself when it cannot take it.
*/
static void on_accepted(void *ctx, int fd, const struct sockaddr *addr, socklen_t len)
{
    tly_server *srv = ctx;
    if (!tly_conns_accept(srv->conns, addr, len, fd)) {
        close(fd);
        return;
    }
    unsigned w = least_held(srv);
    atomic_fetch_add(&srv->held[w], 1);
    if (MHD_add_connection(srv->daemons[w], fd, addr, len) != MHD_YES) {
        atomic_fetch_sub(&srv->held[w], 1);
        tly_conns_abandon(srv->conns, fd);
    }
}

/* accept(2) failed for the socket (descriptors or memory ran out): said at most once a second. */
static void on_accept_error(void *ctx, int err)
{
    tly_server *srv = ctx;
    int64_t now = mono_ms();
    if (srv->accept_error_ms && now - srv->accept_error_ms < 1000)
        return;
    srv->accept_error_ms = now;
    logf_msg(srv, TLY_LOG_WARN, "accept-failed", "cannot accept connections: %s%s", strerror(err),
             err == EMFILE || err == ENFILE ? " (raise the open-file limit)" : "");
}

/* ---- client certificates (--client-ca) ---------------------------------- */

static void client_ca_free(client_ca *ca)
{
    if (!ca)
        return;
    gnutls_x509_trust_list_deinit(ca->list, 1);
    free(ca);
}

/* Every certificate of a PEM file as a trust list; NULL with err naming the file when there is none. */
static client_ca *client_ca_load(const char *path, char *err, size_t errlen)
{
    /* gnutls_load_file says only "Error while reading file": find the reason first. */
    int fd = open(path, O_RDONLY | O_CLOEXEC), e = 0;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        e = errno;
    else if (S_ISDIR(st.st_mode))
        e = EISDIR;
    if (fd >= 0)
        close(fd);
    if (e) {
        snprintf(err, errlen, "--client-ca %s: cannot read it: %s", path, strerror(e));
        return NULL;
    }
    gnutls_datum_t d = {NULL, 0};
    gnutls_x509_crt_t *crts = NULL;
    unsigned n = 0;
    int rc = gnutls_load_file(path, &d);
    if (rc >= 0)
        rc = gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM, 0);
    gnutls_free(d.data);
    if (rc < 0 || n == 0) {
        bool none = n == 0 && (rc >= 0 || rc == GNUTLS_E_NO_CERTIFICATE_FOUND || rc == GNUTLS_E_BASE64_DECODING_ERROR);
        snprintf(err, errlen, "--client-ca %s: %s", path,
                 none ? "no PEM certificate in it (want one or more -----BEGIN CERTIFICATE----- blocks)"
                      : gnutls_strerror(rc));
        for (unsigned i = 0; i < n; i++)
            gnutls_x509_crt_deinit(crts[i]);
        gnutls_free(crts);
        return NULL;
    }
    client_ca *ca = calloc(1, sizeof *ca);
    if (!ca)
        tly_oom();
    if (gnutls_x509_trust_list_init(&ca->list, 0) < 0)
        tly_oom();
    /* The list takes the certificates (duplicates it frees itself); the array is ours. */
    gnutls_x509_trust_list_add_cas(ca->list, crts, n, 0);
    gnutls_free(crts);
    return ca;
}

/* Reloads the CA file if it changed; at most once a second. */
static void client_ca_check(tly_server *srv)
{
    if (!srv->client_ca_path)
        return;
    int64_t now = mono_ms();
    pthread_mutex_lock(&srv->tls_mu);
    if (now - srv->ca_checked_ms < 1000) {
        pthread_mutex_unlock(&srv->tls_mu);
        return;
    }
    srv->ca_checked_ms = now;
    file_id id = identify(srv->client_ca_path);
    if (same_file(id, srv->ca_id)) {
        pthread_mutex_unlock(&srv->tls_mu);
        return;
    }
    srv->ca_id = id;  /* a bad file is not retried until it changes again */
    char err[512];
    client_ca *ca = client_ca_load(srv->client_ca_path, err, sizeof err);
    if (ca) {
        srv->ca->retired_next = srv->ca_retired;
        srv->ca_retired = srv->ca;
        srv->ca = ca;
        srv->ca_gen++;
    }
    pthread_mutex_unlock(&srv->tls_mu);
    tly_metrics_tls_reload(srv->metrics, ca != NULL);
    if (ca)
        logf_msg(srv, TLY_LOG_INFO, "tls-reload", "client CA %s reloaded", srv->client_ca_path);
    else
        logf_msg(srv, TLY_LOG_ERROR, "tls-reload-failed", "%s; the previous client CA stays", err);
}

/*
** The connection's client certificate against --client-ca: -1 when it
** verifies, else the CERT_* reason with why set.
*/
static int client_cert_check(tly_server *srv, struct MHD_Connection *conn, char *why, size_t whylen)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    conn_ctx *cc = ci ? ci->socket_context : NULL;
    client_ca_check(srv);
    pthread_mutex_lock(&srv->tls_mu);
    client_ca *ca = srv->ca;
    unsigned gen = srv->ca_gen;
    pthread_mutex_unlock(&srv->tls_mu);
    time_t now = time(NULL);
    if (cc && cc->ca_gen == gen && now < cc->expires)
        return -1;
    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t session = ci ? ci->tls_session : NULL;
    unsigned n = 0;
    const gnutls_datum_t *raw = session && gnutls_certificate_type_get(session) == GNUTLS_CRT_X509
                                    ? gnutls_certificate_get_peers(session, &n) : NULL;
    if (!raw || n == 0) {
        snprintf(why, whylen, "a client certificate is required (--client-ca) and none was presented");
        return CERT_MISSING;
    }
    gnutls_x509_crt_t chain[MAX_CERTS];
    unsigned nc = 0;
    int rc = 0;
    for (; nc < n && nc < MAX_CERTS; nc++) {
        if ((rc = gnutls_x509_crt_init(&chain[nc])) < 0)
            break;
        if ((rc = gnutls_x509_crt_import(chain[nc], &raw[nc], GNUTLS_X509_FMT_DER)) < 0) {
            gnutls_x509_crt_deinit(chain[nc]);
            break;
        }
    }
    unsigned status = 0;
    gnutls_typed_vdata_st purpose = {GNUTLS_DT_KEY_PURPOSE_OID, (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, 0};
    if (rc >= 0)
        rc = gnutls_x509_trust_list_verify_crt2(ca->list, chain, nc, &purpose, 1, 0, &status, NULL);
    gnutls_datum_t dn = {NULL, 0}, text = {NULL, 0};
    if (nc)
        gnutls_x509_crt_get_dn3(chain[0], &dn, 0);
    int verdict = -1;
    if (rc < 0 || status != 0) {
        if (rc >= 0)
            gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0);
        size_t tl = text.data ? strlen((char *)text.data) : 0;
        while (tl && text.data[tl - 1] == ' ')
            text.data[--tl] = 0;
        snprintf(why, whylen, "client certificate %s rejected: %s", dn.data ? (char *)dn.data : "(unreadable)",
                 rc < 0 ? gnutls_strerror(rc) : text.data ? (char *)text.data : "not trusted");
        verdict = CERT_INVALID;
    } else if (cc) {
        time_t expires = (time_t)-1;
        for (unsigned i = 0; i < nc; i++) {
            time_t t = gnutls_x509_crt_get_expiration_time(chain[i]);
            if (t != (time_t)-1 && (expires == (time_t)-1 || t < expires))
                expires = t;
        }
        cc->ca_gen = gen;
        cc->expires = expires;
    }
    gnutls_free(dn.data);
    gnutls_free(text.data);
    for (unsigned i = 0; i < nc; i++)
        gnutls_x509_crt_deinit(chain[i]);
    return verdict;
}

/* ---- state -------------------------------------------------------------- */

static state_ref *state_acquire(tly_server *srv)
{
    if (srv->has_source) {
        /* A fork of the live state, used by this request alone. */
        state_ref *r = malloc(sizeof *r);
        if (!r)
            tly_oom();
        r->store = srv->source.acquire(srv->source.ctx);
        atomic_init(&r->refs, 1);
        return r;
    }
    pthread_mutex_lock(&srv->state_mu);
    state_ref *r = srv->state;
    if (r)
        atomic_fetch_add(&r->refs, 1);
    pthread_mutex_unlock(&srv->state_mu);
    return r;
}

static void state_release(state_ref *r)
{
    if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
        tly_store_destroy(r->store);
        free(r);
    }
}

void tly_server_set_state(tly_server *srv, tly_store *state)
{
    state_ref *r = malloc(sizeof *r);
    if (!r)
        tly_oom();
    r->store = state;
    atomic_init(&r->refs, 1);
    pthread_mutex_lock(&srv->state_mu);
    state_ref *old = srv->state;
    srv->state = r;
    pthread_mutex_unlock(&srv->state_mu);
    /*
    ** A decision that took the old state before the swap decides on the new
    ** one once its ledger step begins (upsize.h tly_upsize_swap): otherwise it
    ** would pair the old state with reservations the new one settled, and see
    ** their room as free. Until the swap below, decisions pair the old state
    ** with the old reservations, so the old store is released only after it.
    */
    tly_upsize_released rel = {0};
    if (srv->upsize)
        tly_upsize_swap(srv->upsize, state, &rel);
    bool reload = old != NULL;
    state_release(old);
    tly_metrics_state(srv->metrics, state);
    if (reload)
        tly_metrics_state_reload(srv->metrics, true);
    char counts[160];
    snprintf(counts, sizeof counts, "%u", tly_store_count(state, TLY_K_POD));
    char queues[32], nodes[32];
    snprintf(queues, sizeof queues, "%u", tly_store_count(state, TLY_K_QUEUE));
    snprintf(nodes, sizeof nodes, "%u", tly_store_count(state, TLY_K_NODE));
    const char *kv[] = {"pods", counts, "queues", queues, "nodes", nodes};
    tly_server_log(srv, TLY_LOG_INFO, reload ? "state-reloaded" : "state-loaded", kv, 3);
    if (srv->upsize) {
        tly_metrics_reservations(srv->metrics, tly_upsize_count(srv->upsize));
        char f[5][24];
        snprintf(f[0], sizeof f[0], "%zu", rel.enacted);
        snprintf(f[1], sizeof f[1], "%zu", rel.reverted);
        snprintf(f[2], sizeof f[2], "%zu", rel.infeasible);
        snprintf(f[3], sizeof f[3], "%zu", rel.gone);
        snprintf(f[4], sizeof f[4], "%zu", rel.expired);
        const char *rk[] = {"enacted", f[0], "reverted", f[1], "infeasible", f[2],
                            "gone",    f[3], "expired",  f[4]};
        tly_server_log(srv, TLY_LOG_INFO, "reservations-reconciled", rk, 5);
    }
}

void tly_server_set_source(tly_server *srv, const tly_server_source *src)
{
    srv->source = *src;
    srv->has_source = true;
}

/* Whether decisions can be made now; why when not. */
static bool source_ready(tly_server *srv, char *why, size_t whylen)
{
    if (!srv->has_source)
        return true;
    return srv->source.ready(srv->source.ctx, why, whylen);
}

void tly_server_state_failed(tly_server *srv, const char *why)
{
    tly_metrics_state_reload(srv->metrics, false);
    logf_msg(srv, TLY_LOG_ERROR, "state-reload-failed", "%s; the previous state stays", why);
}

/* ---- requests ----------------------------------------------------------- */

/* Queues r (its body already set) with a Content-Type, and lets it go: MHD holds it now. */
static enum MHD_Result queue_typed(struct MHD_Connection *conn, unsigned status, const char *type,
                                   struct MHD_Response *r)
{
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    return queue_typed(conn, status, type, r);
}

/* reply() for a body the caller keeps (on its stack): MHD copies it. */
static enum MHD_Result reply_copy(struct MHD_Connection *conn, unsigned status, const char *type,
                                  const char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    return r ? queue_typed(conn, status, type, r) : MHD_NO;
}

/*
** The AdmissionReview answer as JSON, in small when it fits there (almost every answer: a uid,
** a verdict, a message), else on the heap (the caller frees it). Written without a stream:
** fmemopen's FILE and its stdio buffer were two allocations per review.
*/
static char *answer_json(const tly_admit_result *res, char *small, size_t cap, size_t *len)
{
    *len = tly_admit_format_response(res, small, cap);
    if (*len < cap)
        return small;
    char *out = tly_xmalloc(*len + 1);
    tly_admit_format_response(res, out, *len + 1);
    return out;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = tly_xvasprintf(fmt, ap);
    va_end(ap);
    return reply(conn, status, "text/plain; charset=utf-8", s, strlen(s));
}

static void log_rejected(tly_server *srv, const request *rq, unsigned status, const char *why)
{
    char st[16];
    snprintf(st, sizeof st, "%u", status);
    const char *kv[] = {"endpoint", tly_endpoint_name(rq->ep), "status", st, "msg", why};
    tly_server_log(srv, TLY_LOG_WARN, "request-rejected", kv, 3);
}

static void scratch_free(void *sc) { tly_admit_scratch_destroy(sc); }

/*
** The calling worker's decision scratch, made at its first review: a review
** then allocates almost nothing (admit.h). Per thread, so no lock.
*/
static tly_admit_scratch *worker_scratch(tly_server *srv)
{
    tly_admit_scratch *sc = pthread_getspecific(srv->scratch_key);
    if (!sc) {
        sc = tly_admit_scratch_create();
        if (pthread_setspecific(srv->scratch_key, sc) != 0)
            tly_oom();
    }
    return sc;
}

/*
** An answer with a body is queued (a POST's, so MHD sends the body): its
** header record is held and goes out with the body record, one sendmsg
** (joinsend.h says why the hold cannot outlive the answer). Only once the
** answer is queued: nothing is sent before MHD sends its header.
*/
static void join_answer(struct MHD_Connection *conn, enum MHD_Result queued, size_t body_len)
{
    conn_ctx *cc = ctx_of(conn);
    if (queued == MHD_YES && body_len > 0 && cc && cc->tx)
        tly_joinsend_hold_next(cc->tx);
}

/* The review is complete: decide it and answer. */
static enum MHD_Result decide(tly_server *srv, struct MHD_Connection *conn, request *rq)
{
    uint64_t t0 = mono_ns();
    char notready[256];
    if (!source_ready(srv, notready, sizeof notready)) {
        /* Never a decision on a partial state: 503 lets the API server apply failurePolicy. */
        tly_metrics_request(srv->metrics, rq->ep, TLY_OUT_UNAVAILABLE, mono_ns() - t0);
        log_rejected(srv, rq, 503, notready);
        return reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "the live state is not ready: %s\n",
                          notready);
    }
    state_ref *st = state_acquire(srv);
    if (!st) {
        tly_metrics_request(srv->metrics, rq->ep, TLY_OUT_ERROR, mono_ns() - t0);
        log_rejected(srv, rq, 503, "no state loaded");
        return reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "no state loaded yet\n");
    }
    tly_admit_result res;
    char err[256];
    const tly_resize_ledger *ledger = srv->upsize ? tly_upsize_ledger(srv->upsize) : NULL;
    int rc;
    bool live_only = rq->ep == TLY_EP_MUTATE_PODS || rq->ep == TLY_EP_RUNS_STATUS;
    if (live_only) {
        rc = srv->has_source && srv->source.decide
                 ? srv->source.decide(srv->source.ctx, rq->ep, st->store, rq->body ? rq->body : "",
                                      rq->len, &res, err, sizeof err)
                 : TLY_ENOENT;
        if (rc == TLY_ENOENT) {
            state_release(st);
            tly_metrics_request(srv->metrics, rq->ep, TLY_OUT_NOT_FOUND, TLY_NO_LATENCY);
            return reply_text(conn, MHD_HTTP_NOT_FOUND, "%s is not enabled (it needs --controllers %s)\n",
                              tly_endpoint_path(rq->ep), rq->ep == TLY_EP_MUTATE_PODS ? "gating" : "runs");
        }
    } else {
        /* A live source may decide resizes itself (reservations shared by every replica). */
        rc = rq->ep == TLY_EP_PODS_RESIZE && srv->has_source && srv->source.decide
                 ? srv->source.decide(srv->source.ctx, rq->ep, st->store, rq->body ? rq->body : "",
                                      rq->len, &res, err, sizeof err)
                 : TLY_ENOENT;
        if (rc == TLY_ENOENT)
            rc = tly_admit_review_scratch(st->store, ledger, worker_scratch(srv), rq->body ? rq->body : "",
                                          rq->len, &res, err, sizeof err);
    }
    state_release(st);
    if (rc != 0) {
        /* admit.h speaks of stdin; here it is the request body. */
        const char *why = !strncmp(err, "stdin ", 6) ? err + 6 : err;
        const char *subject = why != err ? "the request body " : "";
        char msg[320];
        snprintf(msg, sizeof msg, "%s%s", subject, why);
        tly_metrics_request(srv->metrics, rq->ep, TLY_OUT_INVALID, mono_ns() - t0);
        log_rejected(srv, rq, 400, msg);
        return reply_text(conn, MHD_HTTP_BAD_REQUEST, "bad AdmissionReview: %s\n", msg);
    }
    char small[2048];
    size_t outlen = 0;
    char *out = answer_json(&res, small, sizeof small, &outlen);
    uint64_t dt = mono_ns() - t0;
    tly_metrics_request(srv->metrics, rq->ep, res.allowed ? TLY_OUT_ALLOWED : TLY_OUT_DENIED, dt);
    if (srv->upsize && res.kind && !strcmp(res.kind, "Pod"))
        tly_metrics_reservations(srv->metrics, tly_upsize_count(srv->upsize));
    if (TLY_LOG_INFO >= srv->cfg.log_level) {
        char lat[32], nw[16];
        snprintf(lat, sizeof lat, "%llu", (unsigned long long)(dt / 1000));
        snprintf(nw, sizeof nw, "%zu", res.nwarnings);
        const char *kv[] = {"endpoint", tly_endpoint_name(rq->ep),
                            "uid",      res.uid,
                            "kind",     res.kind ? res.kind : "-",
                            "op",       res.operation ? res.operation : "-",
                            "verdict",  res.allowed ? "allowed" : "denied",
                            "dry_run",  res.dry_run ? "true" : "false",
                            "latency_us", lat,
                            "warnings", nw,
                            "msg",      res.message};
        tly_server_log(srv, TLY_LOG_INFO, "decision", kv, 9);
    }
    tly_admit_result_free(&res);
    enum MHD_Result ret = out == small ? reply_copy(conn, MHD_HTTP_OK, "application/json", out, outlen)
                                       : reply(conn, MHD_HTTP_OK, "application/json", out, outlen);
    join_answer(conn, ret, outlen);
    return ret;
}

/* GET /healthz, /readyz, /metrics. */
static enum MHD_Result serve_get(tly_server *srv, struct MHD_Connection *conn, request *rq)
{
    if (rq->ep == TLY_EP_HEALTHZ) {
        tly_metrics_request(srv->metrics, rq->ep, TLY_OUT_OK, 0);
        return reply_text(conn, MHD_HTTP_OK, "ok\n");
    }
    if (rq->ep == TLY_EP_READYZ) {
        char why[256] = "";
        bool ready = atomic_load(&srv->accepting) && source_ready(srv, why, sizeof why);
        if (ready && !srv->has_source) {
            state_ref *st = state_acquire(srv);
            ready = st != NULL;
            state_release(st);
        }
        tly_metrics_request(srv->metrics, rq->ep, ready ? TLY_OUT_OK : TLY_OUT_UNAVAILABLE, 0);
        return ready ? reply_text(conn, MHD_HTTP_OK, "ok\n")
                     : reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready%s%s\n", *why ? ": " : "",
                                  why);
    }
    tly_metrics_request(srv->metrics, rq->ep, TLY_OUT_OK, 0);
    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    if (!f)
        tly_oom();
    tly_metrics_render(srv->metrics, f);
    tly_conns_metrics(srv->conns, f);
    fprintf(f, "# HELP tally_request_memory_bytes Bytes of the memory budget held by request bodies and "
               "parses now.\n# TYPE tally_request_memory_bytes gauge\ntally_request_memory_bytes %zu\n"
               "# HELP tally_request_memory_budget_bytes The memory budget for request bodies and parses.\n"
               "# TYPE tally_request_memory_budget_bytes gauge\ntally_request_memory_budget_bytes %zu\n",
            atomic_load(&srv->mem_used), srv->cfg.memory_budget);
    pthread_mutex_lock(&srv->tls_mu);
    long long left = (long long)((int64_t)srv->creds->not_after - (int64_t)time(NULL));
    pthread_mutex_unlock(&srv->tls_mu);
    fprintf(f, "# HELP tally_tls_certificate_expiry_seconds Seconds until the serving certificate's notAfter "
               "(negative once it has expired).\n# TYPE tally_tls_certificate_expiry_seconds gauge\n"
               "tally_tls_certificate_expiry_seconds %lld\n", left);
    if (srv->client_ca_path) {
        fputs("# HELP tally_client_cert_rejections_total Admission requests refused with 403 for their "
              "client certificate (--client-ca), by reason.\n"
              "# TYPE tally_client_cert_rejections_total counter\n", f);
        for (int r = 0; r < CERT_REASONS; r++)
            fprintf(f, "tally_client_cert_rejections_total{reason=\"%s\"} %llu\n", cert_reason_name[r],
                    (unsigned long long)atomic_load_explicit(&srv->cert_rejected[r], memory_order_relaxed));
    }
    if (srv->has_source && srv->source.metrics)
        srv->source.metrics(srv->source.ctx, f);
    fclose(f);
    return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", out, outlen);
}

/* ---- the memory budget (docs/serve.md "Limits and threads") ------------------ */

/*
** Takes n bytes of the budget for bodies in flight and their parses; false
** when that would go past it. A compare-and-swap loop, so no lock: the
** request path of every worker takes from it.
*/
static bool budget_take(tly_server *srv, size_t n)
{
    size_t used = atomic_load(&srv->mem_used);
    do {
        if (n > srv->cfg.memory_budget || used > srv->cfg.memory_budget - n)
            return false;
    } while (!atomic_compare_exchange_weak(&srv->mem_used, &used, used + n));
    return true;
}

static void budget_give(tly_server *srv, size_t n) { atomic_fetch_sub(&srv->mem_used, n); }

/* What one parsed JSON value costs (a tly_node and its short text in the arena), measured. */
#define PARSED_VALUE_BYTES 80u

/* ---- requests: MHD's callbacks ------------------------------------------ */

/* The status of the answer queued on conn, 0 if none: kept for tally_http_responses_total. */
static unsigned queued_status(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *si = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
    return si ? si->http_status : 0;
}

static enum MHD_Result too_large(tly_server *srv, struct MHD_Connection *conn, request *rq, const char *why)
{
    tly_metrics_request(srv->metrics, rq->ep, TLY_OUT_TOO_LARGE, TLY_NO_LATENCY);
    log_rejected(srv, rq, 413, why);
    return reply_text(conn, MHD_HTTP_CONTENT_TOO_LARGE, "request body over the limit of %zu bytes\n",
                                   srv->cfg.max_body);
}

static enum MHD_Result over_budget(tly_server *srv, struct MHD_Connection *conn, request *rq, size_t want)
{
    char why[160];
    snprintf(why, sizeof why, "%zu bytes more would pass the memory budget of %zu bytes (%zu in use)", want,
             srv->cfg.memory_budget, atomic_load(&srv->mem_used));
    tly_metrics_request(srv->metrics, rq->ep, TLY_OUT_ERROR, TLY_NO_LATENCY);
    log_rejected(srv, rq, 503, why);
    return reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "busy with large requests: %s; retry\n",
                                   why);
}

/*
** The headers are in: the client certificate and the Content-Length are
** checked, and the body's buffer is taken from the memory budget at once.
*/
static enum MHD_Result request_begin(tly_server *srv, struct MHD_Connection *conn, request *rq, bool admission,
                                     bool post)
{
    if (admission && srv->client_ca_path)
        rq->forbidden = client_cert_check(srv, conn, rq->why, sizeof rq->why);
    if (!admission || !post || rq->forbidden >= 0)
        return MHD_YES;
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl)
        return MHD_YES;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(cl, &end, 10);
    if (errno || end == cl || n > srv->cfg.max_body) {
        rq->too_large = true;
        return too_large(srv, conn, rq, "Content-Length over the limit");
    }
    if (!n)
        return MHD_YES;
    if (!budget_take(srv, (size_t)n + 1))
        return over_budget(srv, conn, rq, (size_t)n + 1);
    rq->held = (size_t)n + 1;
    rq->cap = rq->held;
    rq->body = malloc(rq->cap);
    return rq->body ? MHD_YES : MHD_NO;
}

/* A piece of the body: kept, or read and dropped past the limit or the budget. */
static enum MHD_Result request_body(tly_server *srv, request *rq, bool wanted, const char *upload, size_t n)
{
    /* A refused client's body (403) is not kept either: it would only take the budget. */
    wanted = wanted && rq->forbidden < 0;
    if (wanted && !rq->too_large && !rq->over_budget && rq->len + n > srv->cfg.max_body)
        rq->too_large = true;
    if (wanted && !rq->too_large && !rq->over_budget && rq->len + n + 1 > rq->cap) {
        size_t cap = rq->cap ? rq->cap : 4096;
        while (cap < rq->len + n + 1)
            cap *= 2;
        if (cap > srv->cfg.max_body + 1)
            cap = srv->cfg.max_body + 1;
        if (!budget_take(srv, cap - rq->held)) {
            rq->over_budget = true;
        } else {
            char *nb = realloc(rq->body, cap);
            if (!nb)
                return MHD_NO;
            rq->body = nb;
            rq->held = rq->cap = cap;
        }
    }
    if (!wanted || rq->too_large || rq->over_budget) {
        rq->dropped += n;
        /* A body that goes on and on is not read to its end: cut the connection. */
        return rq->dropped > 4 * (size_t)srv->cfg.max_body ? MHD_NO : MHD_YES;
    }
    memcpy(rq->body + rq->len, upload, n);
    rq->len += n;
    rq->body[rq->len] = 0;
    return MHD_YES;
}

/*
** The review is in: bounded in what its parse may take (its values, and the
** memory budget for them while it is decided), then decided.
*/
static enum MHD_Result decide_bounded(tly_server *srv, struct MHD_Connection *conn, request *rq)
{
    size_t values = tly_values_bound(rq->body ? rq->body : "", rq->len);
    if (values > srv->cfg.max_values) {
        char why[160];
        snprintf(why, sizeof why, "over %zu JSON values (the limit is %zu)", values - 1, srv->cfg.max_values);
        tly_metrics_request(srv->metrics, rq->ep, TLY_OUT_TOO_LARGE, TLY_NO_LATENCY);
        log_rejected(srv, rq, 413, why);
        return reply_text(conn, MHD_HTTP_CONTENT_TOO_LARGE, "request body has %s\n", why);
    }
    size_t parse = values * PARSED_VALUE_BYTES;
    if (!budget_take(srv, parse))
        return over_budget(srv, conn, rq, parse);
    enum MHD_Result ret = decide(srv, conn, rq);
    budget_give(srv, parse);
    rq->parsed = parse;
    return ret;
}

/* The request is complete: route it. */
static enum MHD_Result request_end(tly_server *srv, struct MHD_Connection *conn, request *rq, const char *url,
                                   const char *method, bool admission, bool post)
{
    if (rq->ep == TLY_EP_OTHER) {
        tly_metrics_request(srv->metrics, rq->ep, TLY_OUT_NOT_FOUND, TLY_NO_LATENCY);
        return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found: %s\n", url);
    }
    bool get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
    if (admission ? !post : !get) {
        tly_metrics_request(srv->metrics, rq->ep, TLY_OUT_BAD_METHOD, TLY_NO_LATENCY);
        log_rejected(srv, rq, 405, method);
        return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "%s takes %s only\n", url,
                                       admission ? "POST" : "GET");
    }
    if (!admission)
        return serve_get(srv, conn, rq);
    if (rq->forbidden >= 0) {
        /* Not counted as a request outcome: tally_client_cert_rejections_total counts it. */
        atomic_fetch_add_explicit(&srv->cert_rejected[rq->forbidden], 1, memory_order_relaxed);
        log_rejected(srv, rq, 403, rq->why);
        return reply_text(conn, MHD_HTTP_FORBIDDEN, "forbidden: %s\n", rq->why);
    }
    if (rq->too_large)
        return too_large(srv, conn, rq, "body over the limit");
    if (rq->over_budget)
        return over_budget(srv, conn, rq, srv->cfg.max_body);
    return decide_bounded(srv, conn, rq);
}

/*
** MHD calls this once when the headers are in, once per piece of body, and
** once more when the request is complete. Answers are queued only in that
** last call: a response queued while MHD still expects a body makes it close
** the connection, which is wanted for a 413 or 503 on Content-Length and
** nothing else.
*/
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    tly_server *srv = cls;
    request *rq = *con_cls;
    bool post = !strcmp(method, MHD_HTTP_METHOD_POST);
    bool admission = (int)tly_endpoint_of_path(url) < TLY_EP_ADMISSION;
    if (!rq) {
        rq = calloc(1, sizeof *rq);
        if (!rq)
            return MHD_NO;
        *con_cls = rq;
        rq->ep = tly_endpoint_of_path(url);
        rq->counted = true;
        rq->forbidden = -1;
        atomic_fetch_add(&srv->in_flight, 1);
        enum MHD_Result ret = request_begin(srv, conn, rq, admission, post);
        rq->status = queued_status(conn);
        return ret;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        return request_body(srv, rq, admission && post, upload, n);
    }
    enum MHD_Result ret = request_end(srv, conn, rq, url, method, admission, post);
    rq->status = queued_status(conn);
    return ret;
}

/* Why a request ended with no answer, from MHD's termination code. */
static tly_abort abort_reason(const request *rq, const conn_ctx *cc, enum MHD_RequestTerminationCode toe,
                              tly_server *srv)
{
    if (rq && rq->dropped > 4 * (size_t)srv->cfg.max_body)
        return TLY_ABORT_BODY_LIMIT;
    if (cc && tly_conns_was_cut(srv->conns, cc->guard))
        return TLY_ABORT_DEADLINE;
    if (toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED)
        return TLY_ABORT_TIMEOUT;
    if (toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT || toe == MHD_REQUEST_TERMINATED_READ_ERROR)
        return TLY_ABORT_CLIENT;
    return TLY_ABORT_ERROR;
}

/* Big requests leave free heap pages behind in every worker's malloc arena: hand them back. */
#define TRIM_AFTER_BYTES (4u << 20)

/*
** Every request whose request line was read ends here (the request-line
** callback makes MHD tell us), answered or not: its answer is counted by
** status (MHD's own answers are counted from its log, count_httpd_message),
** an unanswered one by reason, and the connection's next deadline starts.
*/
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    tly_server *srv = cls;
    request *rq = *con_cls;
    conn_ctx *cc = ctx_of(conn);
    if (rq && rq->status)
        tly_metrics_response(srv->metrics, rq->status);
    else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK &&
             !MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS))
        tly_metrics_aborted(srv->metrics, abort_reason(rq, cc, toe, srv));
    if (cc)
        tly_conns_request_done(srv->conns, cc->guard);
    if (!rq)
        return;
    if (rq->counted)
        atomic_fetch_sub(&srv->in_flight, 1);
    budget_give(srv, rq->held);
    free(rq->body);
    if (rq->held + rq->parsed >= TRIM_AFTER_BYTES)
        malloc_trim(0);
    free(rq);
    *con_cls = NULL;
}


/* ---- lifetime ----------------------------------------------------------- */

tly_server *tly_server_create(const tly_server_config *cfg, char *err, size_t errlen)
{
    if (!cfg->tls_cert || !cfg->tls_key) {
        snprintf(err, errlen, "--tls-cert and --tls-key are required");
        return NULL;
    }
    tly_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        tly_oom();
    srv->cfg = *cfg;
    srv->listen = tly_xstrdup(cfg->listen ? cfg->listen : ":8443");
    srv->cert_path = tly_xstrdup(cfg->tls_cert);
    srv->key_path = tly_xstrdup(cfg->tls_key);
    srv->cfg.listen = srv->listen;
    srv->cfg.tls_cert = srv->cert_path;
    srv->cfg.tls_key = srv->key_path;
    srv->log = cfg->log ? cfg->log : stderr;
    /* No thread, no queue: the lines are then written one write(2) each, as before issue 16. */
    int lerr = 0;
    if (fileno(srv->log) >= 0)
        srv->logq = tly_logq_create(NULL, (void *)(intptr_t)fileno(srv->log), TLY_SERVER_LOG_RING,
                                    TLY_SERVER_LOG_GATHER_MS, &lerr);
    if (!srv->cfg.max_body)
        srv->cfg.max_body = TLY_SERVER_MAX_BODY;
    if (!srv->cfg.connection_limit)
        srv->cfg.connection_limit = TLY_SERVER_CONNECTION_LIMIT;
    if (!srv->cfg.connection_timeout)
        srv->cfg.connection_timeout = TLY_SERVER_CONNECTION_TIMEOUT;
    if (!srv->cfg.per_ip_limit)
        srv->cfg.per_ip_limit = TLY_SERVER_PER_IP_LIMIT;
    if (!srv->cfg.handshake_timeout)
        srv->cfg.handshake_timeout = TLY_SERVER_HANDSHAKE_TIMEOUT;
    if (!srv->cfg.request_timeout)
        srv->cfg.request_timeout = TLY_SERVER_REQUEST_TIMEOUT;
    if (!srv->cfg.memory_budget)
        srv->cfg.memory_budget = TLY_SERVER_MEMORY_BUDGET;
    if (!srv->cfg.max_values)
        srv->cfg.max_values = TLY_SERVER_MAX_VALUES;
    if (!srv->cfg.threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        srv->cfg.threads = n < 1 ? 1 : n > 8 ? 8 : (unsigned)n;
    }
    if (srv->cfg.threads > TLY_SERVER_MAX_THREADS)
        srv->cfg.threads = TLY_SERVER_MAX_THREADS;
    srv->listen_fd = -1;
    pthread_mutex_init(&srv->state_mu, NULL);
    pthread_mutex_init(&srv->tls_mu, NULL);
    atomic_init(&srv->accepting, false);
    atomic_init(&srv->in_flight, 0);
    for (int r = 0; r < CERT_REASONS; r++)
        atomic_init(&srv->cert_rejected[r], 0);
    srv->metrics = tly_metrics_create();
    atomic_init(&srv->mem_used, 0);
    if (pthread_key_create(&srv->scratch_key, scratch_free) != 0)
        tly_oom();
    srv->has_scratch_key = true;
    unsigned reserve = srv->cfg.connection_limit / 16;
    tly_conns_limits cl = {.limit = srv->cfg.connection_limit, .per_ip = srv->cfg.per_ip_limit,
                           .reserve = reserve < TLY_SERVER_RESERVE ? reserve : TLY_SERVER_RESERVE, .small = 4,
                           .handshake_s = srv->cfg.handshake_timeout, .request_s = srv->cfg.request_timeout,
                           .idle_s = srv->cfg.connection_timeout};
    srv->conns = tly_conns_create(&cl);
    if (cfg->reserve_upsizes_ms > 0)
        srv->upsize = tly_upsize_create(cfg->reserve_upsizes_ms, NULL, NULL);
    srv->cert_id = identify(srv->cert_path);
    srv->key_id = identify(srv->key_path);
    srv->tls_checked_ms = mono_ms();
    srv->creds = creds_load(srv->cert_path, srv->key_path, err, errlen);
    if (!srv->creds) {
        tly_server_destroy(srv);
        return NULL;
    }
    if (cfg->client_ca) {
        srv->client_ca_path = tly_xstrdup(cfg->client_ca);
        srv->cfg.client_ca = srv->client_ca_path;
        srv->ca_id = identify(srv->client_ca_path);
        srv->ca_checked_ms = mono_ms();
        srv->ca_gen = 1;
        srv->ca = client_ca_load(srv->client_ca_path, err, errlen);
        if (!srv->ca) {
            tly_server_destroy(srv);
            return NULL;
        }
    }
    return srv;
}

/* Splits HOST:PORT ([v6]:PORT, :PORT) and binds a listening socket. */
static int bind_listen(tly_server *srv, char *err, size_t errlen)
{
    const char *spec = srv->listen;
    const char *colon = strrchr(spec, ':');
    if (!colon || !colon[1]) {
        snprintf(err, errlen, "--listen %s: expected HOST:PORT", spec);
        return -1;
    }
    char host[256];
    size_t hl = (size_t)(colon - spec);
    if (hl >= sizeof host) {
        snprintf(err, errlen, "--listen %s: host too long", spec);
        return -1;
    }
    memcpy(host, spec, hl);
    host[hl] = 0;
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = 0;
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535) {
        snprintf(err, errlen, "--listen %s: bad port", spec);
        return -1;
    }
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    hints.ai_family = *host ? AF_UNSPEC : AF_INET6;
    int rc = getaddrinfo(*host ? host : NULL, colon + 1, &hints, &ai);
    if (rc != 0 && !*host) {
        hints.ai_family = AF_INET;  /* no IPv6 on this host */
        rc = getaddrinfo(NULL, colon + 1, &hints, &ai);
    }
    if (rc != 0) {
        snprintf(err, errlen, "--listen %s: %s", spec, gai_strerror(rc));
        return -1;
    }
    int fd = -1, saved = 0;
    for (struct addrinfo *p = ai; p; p = p->ai_next) {
        fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int one = 1, zero = 0;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (p->ai_family == AF_INET6 && !*host)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  /* also IPv4 */
        /* A deep backlog: in a burst of connects, a probe's SYN waits instead of being dropped (1 s retry). */
        if (bind(fd, p->ai_addr, p->ai_addrlen) == 0 && listen(fd, 4096) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        snprintf(err, errlen, "--listen %s: %s", spec, strerror(saved));
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    srv->listen_fd = fd;
    return 0;
}

/*
** Raises the soft descriptor limit towards the hard one when it is below what
** the connection limit needs (a soft limit of 1024 is common): otherwise
** accept() fails with EMFILE before the guard's limit is reached, and a
** client hangs in the backlog instead of being refused. Logged either way.
*/
static void raise_fd_limit(tly_server *srv)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)srv->cfg.connection_limit + 128;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    bool raised = setrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= want;
    logf_msg(srv, raised ? TLY_LOG_INFO : TLY_LOG_WARN, "fd-limit",
             "open-file limit %llu %s %llu (the connection limit %u needs about %llu)%s", (unsigned long long)was,
             raised ? "raised to" : "could only be raised to", (unsigned long long)rl.rlim_cur,
             srv->cfg.connection_limit, (unsigned long long)want,
             raised ? "" : ": raise the hard limit (ulimit -Hn, the container runtime's nofile)");
}

/* Stops every daemon started (each closes its connections). */
static void stop_daemons(tly_server *srv)
{
    for (unsigned i = 0; i < srv->ndaemons; i++)
        MHD_stop_daemon(srv->daemons[i]);
    srv->ndaemons = 0;
}

/*
** One daemon per worker thread, each with its own epoll loop and no
** listening socket (the acceptor hands connections over). TURBO: MHD reads
** and writes on a non-blocking socket before asking the event loop whether
** it is ready, which saves a round of syscalls per request on keep-alive
** connections (issue 16; docs/performance.md). 0, or -1 when one would not
** start (its reason is in the log); then none runs.
*/
static int start_daemons(tly_server *srv)
{
    unsigned flags = MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO |
                     MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG;
    /* tally's guard (conns.h) refuses first; MHD's own limit, 2x it shared evenly, is a backstop. */
    unsigned backstop = 2 * srv->cfg.connection_limit / srv->cfg.threads;
    struct MHD_OptionItem opts[] = {
        /* The logger first, so that MHD routes even its option errors through it. */
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_logger, srv},
        {MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)cert_callback},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLY_SERVER_TLS_PRIORITIES},
        {MHD_OPTION_CONNECTION_LIMIT, backstop ? backstop : 1, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, srv->cfg.connection_timeout, NULL},
        /*
        ** Each connection's pool (request line, headers, the answer's header): 16 KiB, not
        ** MHD's 32. MHD clears the whole pool after every request, and 32 KiB of memset a
        ** review pushed the decision's data out of a 48 KiB L1 (issue 16). Headers up to about
        ** 15 KiB still fit; past that MHD answers 431, as it did past about 31 KiB.
        */
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, TLY_SERVER_CONNECTION_POOL, NULL},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_request_line, srv},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, srv},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, srv},
        {MHD_OPTION_END, 0, NULL},
    };
    for (unsigned i = 0; i < srv->cfg.threads; i++) {
        atomic_init(&srv->held[i], 0);
        srv->daemons[i] = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_ARRAY, opts,
                                           MHD_OPTION_END);
        if (!srv->daemons[i]) {
            stop_daemons(srv);
            return -1;
        }
        srv->ndaemons = i + 1;
    }
    return 0;
}

int tly_server_start(tly_server *srv, char *err, size_t errlen)
{
    if (bind_listen(srv, err, errlen) != 0)
        return -1;
    /*
    ** A fixed mmap threshold: glibc raises it to the largest block freed so
    ** far, after which every 6 MiB body would come from the heap and stay
    ** there. Fixed, a body's buffer is unmapped when it is freed.
    */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    raise_fd_limit(srv);
    int trc = tly_conns_start(srv->conns);
    if (trc != 0) {
        snprintf(err, errlen, "cannot start the connection reaper thread: %s", strerror(trc));
        close(srv->listen_fd);
        srv->listen_fd = -1;
        return -1;
    }
    if (start_daemons(srv) != 0) {
        snprintf(err, errlen, "cannot start the HTTPS server on %s (libmicrohttpd refused; see the "
                              "log above)", srv->listen);
        close(srv->listen_fd);
        srv->listen_fd = -1;
        return -1;
    }
    int aerr = 0;
    srv->acceptor = tly_acceptor_start(srv->listen_fd, on_accepted, on_accept_error, srv, &aerr);
    if (!srv->acceptor) {
        snprintf(err, errlen, "cannot start the accepting thread: %s", strerror(aerr));
        stop_daemons(srv);
        close(srv->listen_fd);
        srv->listen_fd = -1;
        return -1;
    }
    atomic_store(&srv->accepting, true);
    char port[16], threads[16];
    snprintf(port, sizeof port, "%u", srv->port);
    snprintf(threads, sizeof threads, "%u", srv->cfg.threads);
    const char *kv[] = {"listen", srv->listen, "port", port, "threads", threads,
                        "reserve_upsizes", srv->upsize ? "on" : "off",
                        "client_ca", srv->client_ca_path ? srv->client_ca_path : "off"};
    tly_server_log(srv, TLY_LOG_INFO, "listening", kv, 5);
    return 0;
}

uint16_t tly_server_port(const tly_server *srv) { return srv->port; }

tly_metrics *tly_server_metrics(tly_server *srv) { return srv->metrics; }

/*
** Warns (at most once an hour, and at once for a new pair) while the serving
** certificate has less than EXPIRY_WARN_S left or has expired: an expired one
** makes the API server refuse every call to the webhooks.
*/
static void expiry_warn(tly_server *srv)
{
    int64_t now = mono_ms();
    pthread_mutex_lock(&srv->tls_mu);
    time_t na = srv->creds->not_after;
    bool due = (int64_t)na - (int64_t)time(NULL) < EXPIRY_WARN_S &&
               (!srv->expiry_warned_ms || now - srv->expiry_warned_ms >= 3600 * 1000);
    if (due)
        srv->expiry_warned_ms = now;
    pthread_mutex_unlock(&srv->tls_mu);
    if (!due)
        return;
    char when[32];
    tly_format_time((int64_t)na, when);
    long long left = (long long)((int64_t)na - (int64_t)time(NULL));
    if (left < 0)
        logf_msg(srv, TLY_LOG_ERROR, "tls-certificate-expiring", "certificate %s expired at %s: the API server "
                 "refuses it; replace the pair (it is reloaded when the files change)", srv->cert_path, when);
    else
        logf_msg(srv, TLY_LOG_WARN, "tls-certificate-expiring", "certificate %s expires at %s, in %lld s: renew "
                 "it before then", srv->cert_path, when, left);
}

void tly_server_tick(tly_server *srv)
{
    tls_check(srv, false);
    expiry_warn(srv);
    client_ca_check(srv);
    if (srv->upsize && srv->has_source) {
        /* Live: the watch shows enacted, reverted and Infeasible resizes as they happen. */
        char why[256];
        if (source_ready(srv, why, sizeof why)) {
            tly_store *fork = srv->source.acquire(srv->source.ctx);
            tly_upsize_released rel;
            tly_upsize_reconcile(srv->upsize, fork, &rel);
            tly_store_destroy(fork);
        }
    }
    if (srv->upsize) {
        size_t n = tly_upsize_expire(srv->upsize);
        tly_metrics_reservations(srv->metrics, tly_upsize_count(srv->upsize));
        if (n)
            logf_msg(srv, TLY_LOG_INFO, "reservations-expired", "%zu upsize reservation(s) timed out", n);
    }
}

void tly_server_stop(tly_server *srv, unsigned grace_ms)
{
    if (!srv->acceptor)
        return;
    atomic_store(&srv->accepting, false);
    /* Stop accepting; requests already received are answered until the grace period ends. */
    tly_acceptor_stop(srv->acceptor);
    srv->acceptor = NULL;
    /*
    ** No connection is taken any more, but while the socket listens the
    ** kernel still completes handshakes into its backlog, and those clients
    ** would hang until the grace period ends. shutdown() takes it out of
    ** LISTEN at once, so a new client is refused and tries another replica.
    */
    shutdown(srv->listen_fd, SHUT_RDWR);
    int64_t until = mono_ms() + grace_ms;
    while (atomic_load(&srv->in_flight) > 0 && mono_ms() < until) {
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    stop_daemons(srv);
    close(srv->listen_fd);
    srv->listen_fd = -1;
    logf_msg(srv, TLY_LOG_INFO, "stopped", "server stopped");
}

void tly_server_destroy(tly_server *srv)
{
    if (!srv)
        return;
    tly_server_stop(srv, 0);
    state_release(srv->state);
    creds_free(srv->creds);
    while (srv->retired) {
        creds *c = srv->retired;
        srv->retired = c->retired_next;
        creds_free(c);
    }
    client_ca_free(srv->ca);
    while (srv->ca_retired) {
        client_ca *ca = srv->ca_retired;
        srv->ca_retired = ca->retired_next;
        client_ca_free(ca);
    }
    free(srv->client_ca_path);
    tly_conns_destroy(srv->conns);
    /* The workers have exited (their scratch went with them); the key goes now. */
    if (srv->has_scratch_key)
        pthread_key_delete(srv->scratch_key);
    tly_upsize_destroy(srv->upsize);
    tly_metrics_destroy(srv->metrics);
    pthread_mutex_destroy(&srv->state_mu);
    pthread_mutex_destroy(&srv->tls_mu);
    free(srv->listen);
    free(srv->cert_path);
    free(srv->key_path);
    /* Last: every line logged above is written first. */
    tly_logq_destroy(srv->logq);
    free(srv);
}

void tly_server_flush_log(tly_server *srv)
{
    if (srv->logq)
        tly_logq_flush(srv->logq);
}
