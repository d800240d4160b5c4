/*
** server.h: the HTTPS admission webhook of `tally serve` (contract section 7),
** as a handle a test can run in-process.
**
** Lifetime: tly_server_create() (reads the certificate and key, no socket
** yet), tly_server_set_state() at least once, tly_server_start() (binds,
** starts the worker threads), then any number of tly_server_set_state(),
** tly_server_state_failed() and tly_server_tick() calls from one control
** thread, tly_server_stop() (graceful: stops accepting, lets requests in
** flight finish, up to a grace period), tly_server_destroy().
**
** The state is a reference-counted handle: a request takes a reference to
** the store that is current when its body is complete and decides against it
** to the end, so a swap never changes a decision half-way and the old store
** is freed by the last request that used it. With --reserve-upsizes a
** resize decision decides instead on the state its reservations were last
** reconciled against, handed over when it takes the ledger's lock (upsize.h
** tly_upsize_swap): a reload between the two would otherwise pair the old
** state with reservations the new one settled. Where a state comes from (files
** re-read on SIGHUP now, a watch of the API server later) is the caller's
** business: it builds a finished store and hands it over.
**
** Endpoints: POST /validate/pods-resize, /validate/queues,
** /validate/accountedresources, /validate/runs (an admission.k8s.io/v1
** AdmissionReview in, the response of admit.h out: the same answer as `tally
** admit` for the same review and state, except that --reserve-upsizes also
** counts the upsizes this server admitted and has not yet seen enacted);
** GET /healthz (the process serves), /readyz (a state is loaded and the
** server accepts), /metrics (metrics.h).
**
** With client_ca set, every handshake asks for (does not require) a client
** certificate, and the admission endpoints (/validate/..., /mutate/...) answer
** 403 unless the connection presented one that verifies against those CAs
** for client authentication; /healthz, /readyz and /metrics need none. The
** CA file is reloaded when it changes, as the certificate pair is.
*/
#ifndef TALLY_SERVER_H
#define TALLY_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tally/admit.h"
#include "tally/metrics.h"
#include "tally/store.h"

typedef enum { TLY_LOG_DEBUG = 0, TLY_LOG_INFO, TLY_LOG_WARN, TLY_LOG_ERROR } tly_log_level;

/* Parses "debug", "info", "warn"/"warning", "error"; -1 if none. */
int tly_log_level_parse(const char *s);

/* Defaults of the limits (docs/serve.md). */
#define TLY_SERVER_MAX_BODY (6u << 20)          /* two 1.5 MiB objects and the review around them */
#define TLY_SERVER_CONNECTION_LIMIT 1024u
#define TLY_SERVER_CONNECTION_TIMEOUT 120u      /* s of inactivity; above the API server's 90 s idle */
#define TLY_SERVER_PER_IP_LIMIT 256u            /* connections one peer (IP address) may hold */
#define TLY_SERVER_RESERVE 64u                  /* the last slots: only for peers holding under 4 */
#define TLY_SERVER_HANDSHAKE_TIMEOUT 10u        /* s from accept to the first request line */
#define TLY_SERVER_REQUEST_TIMEOUT 30u          /* s from a request line to its answer: a webhook's
                                                   timeoutSeconds is at most 30 */
#define TLY_SERVER_MEMORY_BUDGET (96u << 20)    /* bytes for bodies in flight and their parses */
#define TLY_SERVER_MAX_VALUES 600000u           /* JSON values in one review (80 bytes each parsed) */
#define TLY_SERVER_MAX_THREADS 16u
#define TLY_SERVER_CONNECTION_POOL (16u << 10) /* bytes of libmicrohttpd's per-connection pool */
#define TLY_SERVER_LOG_RING (256u << 10)       /* bytes of log lines the log thread holds at most */
#define TLY_SERVER_LOG_GATHER_MS 2u            /* a busy log's lines wait at most this long */
#define TLY_SERVER_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

typedef struct {
    const char *listen;          /* HOST:PORT, HOST may be empty (all addresses) or [v6]; port 0 picks one */
    const char *tls_cert;        /* PEM certificate chain file, leaf first */
    const char *tls_key;         /* PEM private key file */
    const char *client_ca;       /* PEM CA certificates (--client-ca): the admission endpoints
                                    require a client certificate that verifies against them;
                                    NULL: no client certificate is asked for */
    int64_t reserve_upsizes_ms;  /* > 0: the reserve-upsizes mode with this timeout; 0: off */
    int log_level;               /* a tly_log_level */
    FILE *log;                   /* NULL: stderr */
    size_t max_body;             /* 0: TLY_SERVER_MAX_BODY */
    unsigned threads;            /* worker threads; 0: one per CPU, at most 8; never above
                                    TLY_SERVER_MAX_THREADS */
    unsigned connection_limit;   /* 0: TLY_SERVER_CONNECTION_LIMIT */
    unsigned connection_timeout; /* s; 0: TLY_SERVER_CONNECTION_TIMEOUT */
    unsigned per_ip_limit;       /* 0: TLY_SERVER_PER_IP_LIMIT */
    unsigned handshake_timeout;  /* s; 0: TLY_SERVER_HANDSHAKE_TIMEOUT */
    unsigned request_timeout;    /* s; 0: TLY_SERVER_REQUEST_TIMEOUT */
    size_t memory_budget;        /* 0: TLY_SERVER_MEMORY_BUDGET */
    size_t max_values;           /* 0: TLY_SERVER_MAX_VALUES */
} tly_server_config;

typedef struct tly_server tly_server;

/* NULL with err set when the certificate, key or client CA file cannot be used. */
tly_server *tly_server_create(const tly_server_config *cfg, char *err, size_t errlen);
void tly_server_destroy(tly_server *srv);

/* Takes ownership of a finished store and serves it from the next request on. */
void tly_server_set_state(tly_server *srv, tly_store *state);
/*
** A live source instead of a fixed state (`tally serve --kubeconfig`): every
** decision takes a fresh fork of the live state (acquire; the server
** destroys it after the decision), and until ready() says so every
** admission endpoint answers HTTP 503 (not an AdmissionReview) so that the
** API server applies the webhook's failurePolicy, and /readyz is 503.
** metrics() appends its series to /metrics. Set before tly_server_start().
*/
typedef struct {
    void *ctx;
    tly_store *(*acquire)(void *ctx);
    bool (*ready)(void *ctx, char *why, size_t whylen);
    void (*metrics)(void *ctx, FILE *out);
    /*
    ** The live mode's own endpoints (/mutate/pods, /validate/runs-status):
    ** decides the review into *res (TLY_OK), TLY_EINVAL for a body that is not
    ** a review (err says why), or TLY_ENOENT when the endpoint is not enabled
    ** (a 404). May be NULL: those endpoints are then 404.
    */
    int (*decide)(void *ctx, int endpoint, const tly_store *state, const char *body, size_t len,
                  tly_admit_result *res, char *err, size_t errlen);
} tly_server_source;
void tly_server_set_source(tly_server *srv, const tly_server_source *src);

/* A reload that was refused: counted and logged; the served state stays. */
void tly_server_state_failed(tly_server *srv, const char *why);

/* Binds and starts serving; 0, or -1 with err set. */
int tly_server_start(tly_server *srv, char *err, size_t errlen);
/* The bound port (after start). */
uint16_t tly_server_port(const tly_server *srv);
/* Housekeeping, about once a second: certificate files, expired reservations. */
void tly_server_tick(tly_server *srv);
/* Stops accepting, waits up to grace_ms for requests in flight, then closes everything. */
void tly_server_stop(tly_server *srv, unsigned grace_ms);

tly_metrics *tly_server_metrics(tly_server *srv);

/*
** One structured log line (logfmt: ts=... level=... event=... key=value...)
** when level is at or above the configured one. kv holds nkv key, value pairs.
*/
void tly_server_log(tly_server *srv, int level, const char *event, const char *const *kv,
                    size_t nkv);
/*
** Returns once every line logged so far has been written (the log thread
** writes them a few milliseconds later): before anything else writes to the
** same stderr, so that it comes after them.
*/
void tly_server_flush_log(tly_server *srv);

#endif
