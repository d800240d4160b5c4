/*
** metrics.c: Prometheus text exposition (metrics.h).
**
** Latencies are kept as integer nanoseconds (an atomic sum and per-bucket
** counts, not cumulative: each observation touches one bucket, the render
** accumulates), so the hot path is two relaxed atomic adds and a short scan
** over the bucket bounds.
*/
#include "tally/metrics.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tally/error.h"
#include "tally/objects.h"

void tly_metrics_label(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\n') {
            fputs("\\n", out);
            continue;
        }
        if (*s == '\\' || *s == '"')
            fputc('\\', out);
        fputc(*s, out);
    }
}

/* Bucket upper bounds in seconds (and nanoseconds): 50 us to 5 s; +Inf is implicit. */
static const char *const bucket_label[] = {"5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
                                           "0.005", "0.01",   "0.025",   "0.05",   "0.1",   "0.25",
                                           "0.5",   "1",      "2.5",     "5"};
static const uint64_t bucket_ns[] = {50000,    100000,    250000,    500000,     1000000,
                                     2500000,  5000000,   10000000,  25000000,   50000000,
                                     100000000, 250000000, 500000000, 1000000000, 2500000000u,
                                     5000000000u};
#define NBUCKETS (sizeof bucket_ns / sizeof bucket_ns[0])

struct tly_metrics {
    atomic_uint_fast64_t requests[TLY_EP_COUNT][TLY_OUT_COUNT];
    atomic_uint_fast64_t bucket[TLY_EP_ADMISSION][NBUCKETS + 1];  /* last: over the top bound */
    atomic_uint_fast64_t sum_ns[TLY_EP_ADMISSION];
    atomic_uint_fast64_t objects[TLY_K_COUNT];
    atomic_uint_fast64_t reloads, reload_failures, tls_reloads, tls_failures, reservations;
    atomic_uint_fast64_t responses[600];  /* by status code; [0]: a code out of range */
    atomic_uint_fast64_t aborted[TLY_ABORT_COUNT];
};

static const char *const abort_name[TLY_ABORT_COUNT] = {"client_gone", "timeout", "body_over_limit",
                                                         "deadline", "error"};

static const char *const ep_name[TLY_EP_COUNT] = {"pods-resize", "queues",      "accountedresources",
                                                  "runs",        "runs-status", "mutate-pods",
                                                  "healthz",     "readyz",      "metrics",
                                                  "other"};
static const char *const ep_path[TLY_EP_COUNT] = {
    "/validate/pods-resize", "/validate/queues", "/validate/accountedresources", "/validate/runs",
    "/validate/runs-status", "/mutate/pods", "/healthz", "/readyz", "/metrics", NULL};
static const char *const out_name[TLY_OUT_COUNT] = {
    "allowed", "denied", "invalid", "too_large", "error", "ok", "unavailable", "not_found",
    "method_not_allowed"};

const char *tly_endpoint_name(tly_endpoint e) { return ep_name[e]; }
const char *tly_endpoint_path(tly_endpoint e) { return ep_path[e]; }
const char *tly_outcome_name(tly_outcome o) { return out_name[o]; }

tly_endpoint tly_endpoint_of_path(const char *path)
{
    for (int e = 0; e < TLY_EP_OTHER; e++)
        if (!strcmp(path, ep_path[e]))
            return (tly_endpoint)e;
    return TLY_EP_OTHER;
}

tly_metrics *tly_metrics_create(void)
{
    tly_metrics *m = malloc(sizeof *m);
    if (!m)
        tly_oom();
    /* atomic_init on every member: calloc'd bits are not formally initialised atomics. */
    for (int e = 0; e < TLY_EP_COUNT; e++)
        for (int o = 0; o < TLY_OUT_COUNT; o++)
            atomic_init(&m->requests[e][o], 0);
    for (int e = 0; e < TLY_EP_ADMISSION; e++) {
        for (size_t b = 0; b <= NBUCKETS; b++)
            atomic_init(&m->bucket[e][b], 0);
        atomic_init(&m->sum_ns[e], 0);
    }
    for (int k = 0; k < TLY_K_COUNT; k++)
        atomic_init(&m->objects[k], 0);
    atomic_init(&m->reloads, 0);
    atomic_init(&m->reload_failures, 0);
    atomic_init(&m->tls_reloads, 0);
    atomic_init(&m->tls_failures, 0);
    atomic_init(&m->reservations, 0);
    for (size_t c = 0; c < sizeof m->responses / sizeof m->responses[0]; c++)
        atomic_init(&m->responses[c], 0);
    for (int a = 0; a < TLY_ABORT_COUNT; a++)
        atomic_init(&m->aborted[a], 0);
    return m;
}

void tly_metrics_destroy(tly_metrics *m) { free(m); }

void tly_metrics_request(tly_metrics *m, tly_endpoint e, tly_outcome o, uint64_t nanos)
{
    atomic_fetch_add_explicit(&m->requests[e][o], 1, memory_order_relaxed);
    if ((int)e >= TLY_EP_ADMISSION || nanos == TLY_NO_LATENCY)
        return;
    size_t b = 0;
    while (b < NBUCKETS && nanos > bucket_ns[b])
        b++;
    atomic_fetch_add_explicit(&m->bucket[e][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->sum_ns[e], nanos, memory_order_relaxed);
}

void tly_metrics_response(tly_metrics *m, unsigned code)
{
    atomic_fetch_add_explicit(&m->responses[code >= 100 && code < 600 ? code : 0], 1, memory_order_relaxed);
}

void tly_metrics_aborted(tly_metrics *m, tly_abort why)
{
    atomic_fetch_add_explicit(&m->aborted[why], 1, memory_order_relaxed);
}

void tly_metrics_state(tly_metrics *m, const tly_store *s)
{
    for (int k = 0; k < TLY_K_COUNT; k++)
        atomic_store_explicit(&m->objects[k], s ? tly_store_count(s, k) : 0, memory_order_relaxed);
}

void tly_metrics_state_reload(tly_metrics *m, bool ok)
{
    atomic_fetch_add_explicit(ok ? &m->reloads : &m->reload_failures, 1, memory_order_relaxed);
}

void tly_metrics_tls_reload(tly_metrics *m, bool ok)
{
    atomic_fetch_add_explicit(ok ? &m->tls_reloads : &m->tls_failures, 1, memory_order_relaxed);
}

void tly_metrics_reservations(tly_metrics *m, uint64_t n)
{
    atomic_store_explicit(&m->reservations, n, memory_order_relaxed);
}

static uint64_t get(const atomic_uint_fast64_t *a)
{
    return atomic_load_explicit((atomic_uint_fast64_t *)a, memory_order_relaxed);
}

uint64_t tly_metrics_requests(const tly_metrics *m, tly_endpoint e, tly_outcome o)
{
    return get(&m->requests[e][o]);
}

uint64_t tly_metrics_responses(const tly_metrics *m, unsigned code)
{
    return get(&m->responses[code >= 100 && code < 600 ? code : 0]);
}

/* The codes answered so far, and why requests went unanswered. */
static void render_http(const tly_metrics *m, FILE *out)
{
    fputs("# HELP tally_http_responses_total Answers sent, by HTTP status code, including those "
          "libmicrohttpd sends itself (a malformed request line, 414, 431, 505, a bad Content-Length).\n"
          "# TYPE tally_http_responses_total counter\n", out);
    for (unsigned c = 100; c < 600; c++) {
        uint64_t v = get(&m->responses[c]);
        if (v || c == 200)
            fprintf(out, "tally_http_responses_total{code=\"%u\"} %llu\n", c, (unsigned long long)v);
    }
    fputs("# HELP tally_http_requests_aborted_total Requests that ended with no answer sent, by reason.\n"
          "# TYPE tally_http_requests_aborted_total counter\n", out);
    for (int a = 0; a < TLY_ABORT_COUNT; a++)
        fprintf(out, "tally_http_requests_aborted_total{reason=\"%s\"} %llu\n", abort_name[a],
                (unsigned long long)get(&m->aborted[a]));
}

/* Which outcomes an endpoint can have; those are always shown, others only when non-zero. */
static bool expected(int e, int o)
{
    if (e < TLY_EP_ADMISSION)
        return o <= TLY_OUT_ERROR;
    if (e == TLY_EP_OTHER)
        return o == TLY_OUT_NOT_FOUND;
    return o == TLY_OUT_OK || (e == TLY_EP_READYZ && o == TLY_OUT_UNAVAILABLE);
}

void tly_metrics_render(const tly_metrics *m, FILE *out)
{
    fputs("# HELP tally_admission_requests_total Requests served, by endpoint and outcome.\n"
          "# TYPE tally_admission_requests_total counter\n", out);
    for (int e = 0; e < TLY_EP_COUNT; e++)
        for (int o = 0; o < TLY_OUT_COUNT; o++) {
            uint64_t v = get(&m->requests[e][o]);
            if (v || expected(e, o))
                fprintf(out, "tally_admission_requests_total{endpoint=\"%s\",outcome=\"%s\"} %llu\n",
                        ep_name[e], out_name[o], (unsigned long long)v);
        }
    fputs("# HELP tally_admission_duration_seconds Time from the last byte of a review to its "
          "answer, by admission endpoint; decisions only (200, 400 for a body that is not a review, "
          "503 with no state), not the requests refused before one.\n"
          "# TYPE tally_admission_duration_seconds histogram\n", out);
    for (int e = 0; e < TLY_EP_ADMISSION; e++) {
        uint64_t cum = 0;
        for (size_t b = 0; b < NBUCKETS; b++) {
            cum += get(&m->bucket[e][b]);
            fprintf(out, "tally_admission_duration_seconds_bucket{endpoint=\"%s\",le=\"%s\"} %llu\n",
                    ep_name[e], bucket_label[b], (unsigned long long)cum);
        }
        cum += get(&m->bucket[e][NBUCKETS]);
        uint64_t ns = get(&m->sum_ns[e]);
        fprintf(out, "tally_admission_duration_seconds_bucket{endpoint=\"%s\",le=\"+Inf\"} %llu\n",
                ep_name[e], (unsigned long long)cum);
        fprintf(out, "tally_admission_duration_seconds_sum{endpoint=\"%s\"} %llu.%09llu\n",
                ep_name[e], (unsigned long long)(ns / 1000000000u),
                (unsigned long long)(ns % 1000000000u));
        fprintf(out, "tally_admission_duration_seconds_count{endpoint=\"%s\"} %llu\n", ep_name[e],
                (unsigned long long)cum);
    }
    fputs("# HELP tally_state_objects Objects in the state decisions are made against, by kind.\n"
          "# TYPE tally_state_objects gauge\n", out);
    for (int k = 0; k < TLY_K_COUNT; k++)
        fprintf(out, "tally_state_objects{kind=\"%s\"} %llu\n", tly_kind_name(k),
                (unsigned long long)get(&m->objects[k]));
    fprintf(out,
            "# HELP tally_state_reloads_total State reloads that replaced the state.\n"
            "# TYPE tally_state_reloads_total counter\n"
            "tally_state_reloads_total %llu\n"
            "# HELP tally_state_reload_failures_total State reloads refused (the old state stays).\n"
            "# TYPE tally_state_reload_failures_total counter\n"
            "tally_state_reload_failures_total %llu\n"
            "# HELP tally_tls_reloads_total Certificate and key reloads after the files changed.\n"
            "# TYPE tally_tls_reloads_total counter\n"
            "tally_tls_reloads_total %llu\n"
            "# HELP tally_tls_reload_failures_total Changed certificate or key files that could not "
            "be used (the old pair stays).\n"
            "# TYPE tally_tls_reload_failures_total counter\n"
            "tally_tls_reload_failures_total %llu\n"
            "# HELP tally_upsize_reservations Admitted upsizes not yet seen enacted "
            "(--reserve-upsizes).\n"
            "# TYPE tally_upsize_reservations gauge\n"
            "tally_upsize_reservations %llu\n",
            (unsigned long long)get(&m->reloads), (unsigned long long)get(&m->reload_failures),
            (unsigned long long)get(&m->tls_reloads), (unsigned long long)get(&m->tls_failures),
            (unsigned long long)get(&m->reservations));
    render_http(m, out);
}
