/*
** bench_rate.c: an open-loop load generator that holds a fixed request rate
** (issues 13 and 16: "p99 at a fixed 1,000 reviews/s, a load generator that
** holds a rate; not a saturating one").
**
**   bench-rate [--conns N] [--cacert FILE] [--warmup S] URL BODY RATE SECONDS
**
** POSTs the file BODY (Content-Type: application/json) to URL, RATE times a
** second for SECONDS, over N keep-alive connections (default 8), one thread
** and one libcurl handle each. Request k (k = 0, 1, ...) is due at
** start + k / RATE and is sent by connection k mod N. Latency is measured from
** the moment a request was due, not from when it was sent: a connection held
** up by a slow answer sends its next request late, and that delay counts
** (wrk's closed loop leaves it out, which is what "coordinated omission"
** means). The service time (sent to answered) is reported beside it.
**
** The first --warmup seconds (default 1) are sent at the same rate but not
** counted: TLS handshakes and first-touch page faults are not what is measured.
**
** Prints one line: the rate asked and reached, requests, errors (transport
** failures and non-2xx answers), and latency quantiles in ms. Exit status 1
** when any request failed, 2 on bad arguments.
*/
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *url, *cacert;
    const char *body;
    size_t body_len;
    double rate;          /* requests per second, over all connections */
    uint64_t start_ns;    /* CLOCK_MONOTONIC time of request 0 */
    uint64_t warm;        /* requests 0 .. warm-1 are not counted */
    uint64_t total;       /* requests in all, warm-up included */
    unsigned conns;
} plan;

typedef struct {
    const plan *p;
    unsigned id;
    double *lat, *svc;    /* ms, one per counted request of this connection */
    size_t n;
    uint64_t errors;
} conn;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
    struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* The answer's body is read and dropped: only the status counts. */
static size_t drop(char *ptr, size_t size, size_t n, void *ctx)
{
    (void)ptr;
    (void)ctx;
    return size * n;
}

static CURL *conn_handle(const plan *p, struct curl_slist *hdrs)
{
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    curl_easy_setopt(c, CURLOPT_URL, p->url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, p->body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)p->body_len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drop);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    if (p->cacert)
        curl_easy_setopt(c, CURLOPT_CAINFO, p->cacert);
    return c;
}

/* One connection: requests id, id + conns, id + 2 conns, ... each at its due time. */
static void *conn_run(void *arg)
{
    conn *k = arg;
    const plan *p = k->p;
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Expect:");   /* no 100-continue round trip */
    CURL *c = conn_handle(p, hdrs);
    for (uint64_t r = k->id; c && r < p->total; r += p->conns) {
        uint64_t due = p->start_ns + (uint64_t)((double)r * 1e9 / p->rate);
        sleep_until(due);
        uint64_t sent = now_ns();
        long code = 0;
        CURLcode rc = curl_easy_perform(c);
        uint64_t done = now_ns();
        if (rc == CURLE_OK)
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        if (r < p->warm)
            continue;
        if (rc != CURLE_OK || code < 200 || code > 299) {
            if (k->errors++ == 0)
                fprintf(stderr, "bench-rate: request %llu: %s (HTTP %ld)\n",
                        (unsigned long long)r, curl_easy_strerror(rc), code);
            continue;
        }
        k->lat[k->n] = (double)(done - due) / 1e6;
        k->svc[k->n] = (double)(done - sent) / 1e6;
        k->n++;
    }
    if (!c)
        k->errors = p->total;
    curl_easy_cleanup(c);
    curl_slist_free_all(hdrs);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted v[0..n) (nearest rank). */
static double quantile(const double *v, size_t n, double q)
{
    if (!n)
        return 0;
    size_t i = (size_t)(q * (double)n);
    return v[i < n ? i : n - 1];
}

/* The whole file at path (a regular file: its size is known up front), or NULL. */
static char *read_body(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    char *buf = size >= 0 ? malloc((size_t)size + 1) : NULL;
    if (buf && (fseek(f, 0, SEEK_SET) != 0 || fread(buf, 1, (size_t)size, f) != (size_t)size)) {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    *len = buf ? (size_t)size : 0;
    return buf;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench-rate [--conns N] [--cacert FILE] [--warmup S] URL BODY RATE SECONDS\n");
    return 2;
}

/* Gathers every connection's samples into one sorted array; returns the count. */
static size_t gather(conn *k, unsigned nk, double **out, int svc)
{
    size_t n = 0, at = 0;
    for (unsigned i = 0; i < nk; i++)
        n += k[i].n;
    double *v = malloc((n ? n : 1) * sizeof *v);
    for (unsigned i = 0; v && i < nk; i++) {
        memcpy(v + at, svc ? k[i].svc : k[i].lat, k[i].n * sizeof *v);
        at += k[i].n;
    }
    if (v)
        qsort(v, n, sizeof *v, cmp_double);
    *out = v;
    return v ? n : 0;
}

static void report(const plan *p, conn *k, double wall)
{
    double *lat, *svc;
    size_t n = gather(k, p->conns, &lat, 0);
    gather(k, p->conns, &svc, 1);
    uint64_t errors = 0;
    for (unsigned i = 0; i < p->conns; i++)
        errors += k[i].errors;
    printf("rate=%.0f reached=%.0f conns=%u requests=%zu errors=%llu "
           "p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f "
           "service_p50_ms=%.3f service_p99_ms=%.3f\n",
           p->rate, wall > 0 ? (double)n / wall : 0, p->conns, n, (unsigned long long)errors,
           quantile(lat, n, 0.50), quantile(lat, n, 0.90), quantile(lat, n, 0.99),
           quantile(lat, n, 0.999), n ? lat[n - 1] : 0,
           quantile(svc, n, 0.50), quantile(svc, n, 0.99));
    free(lat);
    free(svc);
}

int main(int argc, char **argv)
{
    plan p = { .conns = 8 };
    double warmup = 1;
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "--conns"))
            p.conns = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--cacert"))
            p.cacert = argv[i + 1];
        else if (!strcmp(argv[i], "--warmup"))
            warmup = atof(argv[i + 1]);
        else
            return usage();
    }
    if (argc - i != 4 || p.conns < 1 || p.conns > 1024 || warmup < 0)
        return usage();
    p.url = argv[i];
    p.rate = atof(argv[i + 2]);
    double secs = atof(argv[i + 3]);
    if (p.rate <= 0 || secs <= 0)
        return usage();
    char *body = read_body(argv[i + 1], &p.body_len);
    if (!body) {
        fprintf(stderr, "bench-rate: %s: cannot read the body\n", argv[i + 1]);
        return 2;
    }
    p.body = body;
    p.warm = (uint64_t)(warmup * p.rate);
    p.total = p.warm + (uint64_t)(secs * p.rate);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    conn *k = calloc(p.conns, sizeof *k);
    pthread_t *t = calloc(p.conns, sizeof *t);
    size_t per = (size_t)(p.total / p.conns + 1);
    p.start_ns = now_ns() + 50000000ull;   /* every thread started before request 0 */
    for (unsigned c = 0; c < p.conns; c++) {
        k[c] = (conn){ .p = &p, .id = c, .lat = malloc(per * sizeof(double)),
                       .svc = malloc(per * sizeof(double)) };
        pthread_create(&t[c], NULL, conn_run, &k[c]);
    }
    for (unsigned c = 0; c < p.conns; c++)
        pthread_join(t[c], NULL);
    double wall = (double)(now_ns() - p.start_ns) / 1e9 - warmup;
    report(&p, k, wall);

    uint64_t errors = 0;
    for (unsigned c = 0; c < p.conns; c++) {
        errors += k[c].errors;
        free(k[c].lat);
        free(k[c].svc);
    }
    free(k);
    free(t);
    free(body);
    curl_global_cleanup();
    return errors ? 1 : 0;
}
