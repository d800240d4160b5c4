/*
** metrics.h: the counters of `tally serve`, exposed at GET /metrics in the
** Prometheus text format (version 0.0.4), written by hand.
**
** A client library would bring a registry, labels as strings hashed at run
** time and locks; the webhook's metrics are a fixed matrix known at compile
** time (endpoint x outcome, a latency histogram per admission endpoint, a
** gauge per object kind), so they are plain C11 atomics updated with relaxed
** ordering on the request path and read by one render function. A scrape
** may see a request counted but its latency not yet: Prometheus tolerates
** that, and it costs nothing on the hot path.
**
** Series:
**   tally_admission_requests_total{endpoint,outcome}       counter
**   tally_admission_duration_seconds{endpoint}             histogram, fixed buckets
**   tally_state_objects{kind}                              gauge
**   tally_state_reloads_total, tally_state_reload_failures_total   counters
**   tally_upsize_reservations                              gauge
**   tally_tls_reloads_total, tally_tls_reload_failures_total       counters
**   tally_http_responses_total{code}                       counter: every answer sent,
**                                                          tally's and libmicrohttpd's own
**   tally_http_requests_aborted_total{reason}              counter: requests that ended
**                                                          without an answer
*/
#ifndef TALLY_METRICS_H
#define TALLY_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tally/store.h"

typedef enum {
    TLY_EP_PODS_RESIZE = 0,     /* POST /validate/pods-resize */
    TLY_EP_QUEUES,              /* POST /validate/queues */
    TLY_EP_ACCOUNTED_RESOURCES, /* POST /validate/accountedresources */
    TLY_EP_RUNS,                /* POST /validate/runs */
    TLY_EP_RUNS_STATUS,         /* POST /validate/runs-status (live mode: claim admission) */
    TLY_EP_MUTATE_PODS,         /* POST /mutate/pods (live mode: the gating controller's gate) */
    TLY_EP_HEALTHZ,
    TLY_EP_READYZ,
    TLY_EP_METRICS,
    TLY_EP_OTHER,               /* any other path */
    TLY_EP_COUNT
} tly_endpoint;

/* The first TLY_EP_ADMISSION endpoints decide AdmissionReviews. */
#define TLY_EP_ADMISSION 6

typedef enum {
    TLY_OUT_ALLOWED = 0,  /* 200, allowed */
    TLY_OUT_DENIED,       /* 200, denied */
    TLY_OUT_INVALID,      /* 400: not an AdmissionReview */
    TLY_OUT_TOO_LARGE,    /* 413 */
    TLY_OUT_ERROR,        /* 5xx */
    TLY_OUT_OK,           /* 200 on health and metrics */
    TLY_OUT_UNAVAILABLE,  /* 503 on /readyz */
    TLY_OUT_NOT_FOUND,    /* 404 */
    TLY_OUT_BAD_METHOD,   /* 405 */
    TLY_OUT_COUNT
} tly_outcome;

typedef struct tly_metrics tly_metrics;

tly_metrics *tly_metrics_create(void);
void tly_metrics_destroy(tly_metrics *m);

/* The endpoint's label value ("pods-resize", ...) and path ("/validate/pods-resize"). */
const char *tly_endpoint_name(tly_endpoint e);
const char *tly_endpoint_path(tly_endpoint e);
/* The endpoint of a request path. */
tly_endpoint tly_endpoint_of_path(const char *path);
const char *tly_outcome_name(tly_outcome o);

/*
** One request; latency counts for the admission endpoints only, and only for
** a decision: TLY_NO_LATENCY for an answer given without one (403, 404, 405,
** 413), which would otherwise show in the histogram as a decision of 0 s.
*/
#define TLY_NO_LATENCY UINT64_MAX
void tly_metrics_request(tly_metrics *m, tly_endpoint e, tly_outcome o, uint64_t nanos);
/* The object counts of the state now served. */
void tly_metrics_state(tly_metrics *m, const tly_store *s);
void tly_metrics_state_reload(tly_metrics *m, bool ok);
void tly_metrics_tls_reload(tly_metrics *m, bool ok);
void tly_metrics_reservations(tly_metrics *m, uint64_t n);
/* An answer with HTTP status code (100-599) was sent, by tally or by libmicrohttpd itself. */
void tly_metrics_response(tly_metrics *m, unsigned code);
/* Why a request ended with no answer sent. */
typedef enum {
    TLY_ABORT_CLIENT = 0,     /* the client went away, or a read failed */
    TLY_ABORT_TIMEOUT,        /* libmicrohttpd's idle timeout */
    TLY_ABORT_BODY_LIMIT,     /* cut: the body went on past four times the limit */
    TLY_ABORT_DEADLINE,       /* cut: past the request's deadline (conns.h) */
    TLY_ABORT_ERROR,          /* any other error, or the server stopping */
    TLY_ABORT_COUNT
} tly_abort;
void tly_metrics_aborted(tly_metrics *m, tly_abort why);
/* Answers sent with a status code, for tests. */
uint64_t tly_metrics_responses(const tly_metrics *m, unsigned code);
/* Writes s as a label value of the text format: \\, \" and \n escaped. */
void tly_metrics_label(FILE *out, const char *s);

/* A counter's value, for tests. */
uint64_t tly_metrics_requests(const tly_metrics *m, tly_endpoint e, tly_outcome o);

/* Writes the exposition. */
void tly_metrics_render(const tly_metrics *m, FILE *out);

#endif
