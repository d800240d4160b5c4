/*
** conns.c: the connection guard of `tally serve` (conns.h).
**
** One mutex over two small structures: the peers (an array of address and
** count, scanned linearly: it holds at most one entry per open connection,
** a thousand at most, and a scan of that is a few microseconds next to a
** TLS handshake) and the open connections (a doubly linked list, so that a
** close is O(1); the reaper walks it four times a second).
**
** The shutdown() of a connection past its deadline happens under the mutex,
** and tly_conns_close() (called by libmicrohttpd's closed notification,
** before it closes the socket) takes the same mutex, so a shutdown never
** reaches a descriptor that was closed and reused.
*/
#include "tally/conns.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/arena.h"

enum { PH_HANDSHAKE = 0, PH_REQUEST, PH_IDLE, PHASES };
static const char *const phase_name[PHASES] = {"handshake", "request", "idle"};
enum { RF_PER_IP = 0, RF_RESERVE, RF_LIMIT, RF_HTTPD, REASONS };
static const char *const reason_name[REASONS] = {"per_ip", "reserve", "limit", "httpd_limit"};

/* A peer's address: 4 bytes for IPv4 (and IPv4-mapped IPv6), 16 for IPv6, 0 for anything else. */
typedef struct {
    uint8_t len;
    uint8_t b[16];
} peer_key;

typedef struct {
    peer_key key;
    unsigned held;
} peer;

struct tly_conn {
    tly_conn *prev, *next;
    int fd;
    peer_key key;
    int phase;
    int64_t deadline_ms;
    bool cut;
};

struct tly_conns {
    tly_conns_limits lim;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    peer *peers;
    size_t npeers, peers_cap;
    tly_conn *head;
    unsigned open;
    bool running, stopping;
    pthread_t reaper;
    atomic_uint_fast64_t refused[REASONS];
    atomic_uint_fast64_t cut[PHASES];
    atomic_uint_fast64_t no_request;   /* closed before a request line, not by the reaper */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static peer_key key_of(const struct sockaddr *a, socklen_t len)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    peer_key k = {0};
    if (a && a->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        k.len = 4;
        memcpy(k.b, &((const struct sockaddr_in *)a)->sin_addr, 4);
    } else if (a && a->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const uint8_t *b = ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr;
        /* One peer whichever way the dual-stack socket shows it. */
        k.len = memcmp(b, mapped, 12) ? 16 : 4;
        memcpy(k.b, k.len == 4 ? b + 12 : b, k.len);
    }
    return k;
}

/* The peer's entry, or NULL; caller holds the lock. */
static peer *find_peer(tly_conns *c, const peer_key *k)
{
    for (size_t i = 0; i < c->npeers; i++)
        if (c->peers[i].key.len == k->len && !memcmp(c->peers[i].key.b, k->b, k->len))
            return &c->peers[i];
    return NULL;
}

tly_conns *tly_conns_create(const tly_conns_limits *l)
{
    tly_conns *c = calloc(1, sizeof *c);
    if (!c)
        tly_oom();
    c->lim = *l;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->wake, NULL);
    for (int r = 0; r < REASONS; r++)
        atomic_init(&c->refused[r], 0);
    for (int p = 0; p < PHASES; p++)
        atomic_init(&c->cut[p], 0);
    atomic_init(&c->no_request, 0);
    return c;
}

/* Shuts down the sockets past their deadline; caller holds the lock. */
static void reap_locked(tly_conns *c)
{
    int64_t now = now_ms();
    for (tly_conn *k = c->head; k; k = k->next) {
        if (k->cut || now < k->deadline_ms)
            continue;
        k->cut = true;
        atomic_fetch_add_explicit(&c->cut[k->phase], 1, memory_order_relaxed);
        shutdown(k->fd, SHUT_RDWR);
    }
}

static void *reaper_main(void *arg)
{
    tly_conns *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        reap_locked(c);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250 * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->wake, &c->mu, &until);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int tly_conns_start(tly_conns *c)
{
    int rc = pthread_create(&c->reaper, NULL, reaper_main, c);
    c->running = rc == 0;
    return rc;
}

void tly_conns_destroy(tly_conns *c)
{
    if (!c)
        return;
    if (c->running) {
        pthread_mutex_lock(&c->mu);
        c->stopping = true;
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->reaper, NULL);
    }
    while (c->head) {
        tly_conn *k = c->head;
        c->head = k->next;
        free(k);
    }
    free(c->peers);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Which limit a new connection of a peer holding `held` would pass; -1: none, it may come in. */
static int refusal(const tly_conns *c, unsigned held)
{
    const tly_conns_limits *l = &c->lim;
    if (held >= l->per_ip)
        return RF_PER_IP;
    if (c->open >= l->limit)
        return RF_LIMIT;
    if (c->open + l->reserve >= l->limit && held >= l->small)
        return RF_RESERVE;
    return -1;
}

bool tly_conns_admit(tly_conns *c, const struct sockaddr *addr, socklen_t len)
{
    peer_key k = key_of(addr, len);
    pthread_mutex_lock(&c->mu);
    const peer *p = find_peer(c, &k);
    int why = refusal(c, p ? p->held : 0);
    pthread_mutex_unlock(&c->mu);
    if (why >= 0)
        atomic_fetch_add_explicit(&c->refused[why], 1, memory_order_relaxed);
    return why < 0;
}

tly_conn *tly_conns_open(tly_conns *c, const struct sockaddr *addr, int fd)
{
    tly_conn *k = calloc(1, sizeof *k);
    if (!k)
        tly_oom();
    k->fd = fd;
    k->key = key_of(addr, addr ? (socklen_t)sizeof(struct sockaddr_storage) : 0);
    k->phase = PH_HANDSHAKE;
    k->deadline_ms = now_ms() + (int64_t)c->lim.handshake_s * 1000;
    pthread_mutex_lock(&c->mu);
    peer *p = find_peer(c, &k->key);
    if (!p) {
        if (c->npeers == c->peers_cap) {
            c->peers_cap = c->peers_cap ? c->peers_cap * 2 : 16;
            c->peers = tly_xrealloc(c->peers, c->peers_cap * sizeof *c->peers);
        }
        p = &c->peers[c->npeers++];
        p->key = k->key;
        p->held = 0;
    }
    p->held++;
    k->next = c->head;
    if (c->head)
        c->head->prev = k;
    c->head = k;
    c->open++;
    pthread_mutex_unlock(&c->mu);
    return k;
}

void tly_conns_close(tly_conns *c, tly_conn *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&c->mu);
    peer *p = find_peer(c, &k->key);
    if (p && --p->held == 0)
        *p = c->peers[--c->npeers];
    if (k->prev)
        k->prev->next = k->next;
    else
        c->head = k->next;
    if (k->next)
        k->next->prev = k->prev;
    c->open--;
    /* A failed handshake, a request line libmicrohttpd could not read, a client that sent nothing. */
    if (k->phase == PH_HANDSHAKE && !k->cut)
        atomic_fetch_add_explicit(&c->no_request, 1, memory_order_relaxed);
    pthread_mutex_unlock(&c->mu);
    free(k);
}

/* A new phase and its deadline. */
static void set_phase(tly_conns *c, tly_conn *k, int phase, unsigned seconds)
{
    if (!k)
        return;
    int64_t deadline = now_ms() + (int64_t)seconds * 1000;
    pthread_mutex_lock(&c->mu);
    k->phase = phase;
    k->deadline_ms = deadline;
    pthread_mutex_unlock(&c->mu);
}

void tly_conns_request_started(tly_conns *c, tly_conn *k) { set_phase(c, k, PH_REQUEST, c->lim.request_s); }

void tly_conns_request_done(tly_conns *c, tly_conn *k) { set_phase(c, k, PH_IDLE, c->lim.idle_s); }

bool tly_conns_was_cut(tly_conns *c, tly_conn *k)
{
    if (!k)
        return false;
    pthread_mutex_lock(&c->mu);
    bool cut = k->cut;
    pthread_mutex_unlock(&c->mu);
    return cut;
}

unsigned tly_conns_open_count(tly_conns *c)
{
    pthread_mutex_lock(&c->mu);
    unsigned n = c->open;
    pthread_mutex_unlock(&c->mu);
    return n;
}

void tly_conns_refused_by_httpd(tly_conns *c)
{
    atomic_fetch_add_explicit(&c->refused[RF_HTTPD], 1, memory_order_relaxed);
}

void tly_conns_metrics(tly_conns *c, FILE *out)
{
    fprintf(out, "# HELP tally_connections_open Connections open now.\n"
                 "# TYPE tally_connections_open gauge\ntally_connections_open %u\n",
            tly_conns_open_count(c));
    fputs("# HELP tally_connections_refused_total Connections closed at accept, by the limit they met.\n"
          "# TYPE tally_connections_refused_total counter\n", out);
    for (int r = 0; r < REASONS; r++)
        fprintf(out, "tally_connections_refused_total{reason=\"%s\"} %llu\n", reason_name[r],
                (unsigned long long)atomic_load_explicit(&c->refused[r], memory_order_relaxed));
    fputs("# HELP tally_connections_cut_total Connections shut down past their deadline, by phase.\n"
          "# TYPE tally_connections_cut_total counter\n", out);
    for (int p = 0; p < PHASES; p++)
        fprintf(out, "tally_connections_cut_total{phase=\"%s\"} %llu\n", phase_name[p],
                (unsigned long long)atomic_load_explicit(&c->cut[p], memory_order_relaxed));
    fprintf(out, "# HELP tally_connections_closed_without_request_total Connections that ended before a "
                 "request line was read (a failed TLS handshake, a request line libmicrohttpd refused, with "
                 "or without an answer, nothing sent), other than those cut past their deadline.\n"
                 "# TYPE tally_connections_closed_without_request_total counter\n"
                 "tally_connections_closed_without_request_total %llu\n",
            (unsigned long long)atomic_load_explicit(&c->no_request, memory_order_relaxed));
}
