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
    bool handed;   /* counted by the acceptor, not yet adopted by a worker (on c->handed) */
};

struct tly_conns {
    tly_conns_limits lim;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    peer *peers;
    size_t npeers, peers_cap;
    tly_conn *head;
    tly_conn *handed;  /* accepted and counted, waiting for a worker to adopt them (a few at most) */
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

/* Puts k at the head of list *head. */
static void link_conn(tly_conn **head, tly_conn *k)
{
    k->prev = NULL;
    k->next = *head;
    if (*head)
        (*head)->prev = k;
    *head = k;
}

/* Takes k out of list *head. */
static void unlink_conn(tly_conn **head, tly_conn *k)
{
    if (k->prev)
        k->prev->next = k->next;
    else
        *head = k->next;
    if (k->next)
        k->next->prev = k->prev;
    k->prev = k->next = NULL;
}

/* One more connection of the peer with key k, and of the server; caller holds the lock. */
static void hold(tly_conns *c, const peer_key *k)
{
    peer *p = find_peer(c, k);
    if (!p) {
        if (c->npeers == c->peers_cap) {
            c->peers_cap = c->peers_cap ? c->peers_cap * 2 : 16;
            c->peers = tly_xrealloc(c->peers, c->peers_cap * sizeof *c->peers);
        }
        p = &c->peers[c->npeers++];
        p->key = *k;
        p->held = 0;
    }
    p->held++;
    c->open++;
}

/* One fewer; caller holds the lock. */
static void release(tly_conns *c, const peer_key *k)
{
    peer *p = find_peer(c, k);
    if (p && --p->held == 0)
        *p = c->peers[--c->npeers];
    c->open--;
}

/* A handed-over connection no worker adopted is uncounted and forgotten; caller holds the lock. */
static void drop_handed(tly_conns *c, tly_conn *k)
{
    unlink_conn(&c->handed, k);
    release(c, &k->key);
    free(k);
}

/*
** Shuts down the sockets past their deadline; caller holds the lock. A
** handed-over connection that no worker adopted within its handshake time
** is dropped from the counts, never shut down: its socket is libmicrohttpd's
** (it may have closed it after failing to set the connection up, and the
** descriptor may be another's by now).
*/
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
    for (tly_conn *k = c->handed, *next; k; k = next) {
        next = k->next;
        if (now >= k->deadline_ms)
            drop_handed(c, k);
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

static void free_list(tly_conn *k)
{
    while (k) {
        tly_conn *next = k->next;
        free(k);
        k = next;
    }
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
    free_list(c->head);
    free_list(c->handed);
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

/* A new entry for a connection of peer key on socket fd, in its handshake phase. */
static tly_conn *conn_new(tly_conns *c, const peer_key *key, int fd)
{
    tly_conn *k = calloc(1, sizeof *k);
    if (!k)
        tly_oom();
    k->fd = fd;
    k->key = *key;
    k->phase = PH_HANDSHAKE;
    k->deadline_ms = now_ms() + (int64_t)c->lim.handshake_s * 1000;
    return k;
}

/* The handed-over connection on socket fd, or NULL; caller holds the lock. */
static tly_conn *find_handed(tly_conns *c, int fd)
{
    for (tly_conn *k = c->handed; k; k = k->next)
        if (k->fd == fd)
            return k;
    return NULL;
}

bool tly_conns_accept(tly_conns *c, const struct sockaddr *addr, socklen_t len, int fd)
{
    peer_key key = key_of(addr, len);
    tly_conn *k = conn_new(c, &key, fd);
    pthread_mutex_lock(&c->mu);
    /*
    ** The kernel gave fd out again, so a handed-over entry still holding it
    ** is stale: libmicrohttpd closed that socket without starting it.
    */
    tly_conn *stale = find_handed(c, fd);
    if (stale)
        drop_handed(c, stale);
    const peer *p = find_peer(c, &key);
    int why = refusal(c, p ? p->held : 0);
    if (why < 0) {
        k->handed = true;
        link_conn(&c->handed, k);
        hold(c, &key);
    }
    pthread_mutex_unlock(&c->mu);
    if (why < 0)
        return true;
    atomic_fetch_add_explicit(&c->refused[why], 1, memory_order_relaxed);
    free(k);
    return false;
}

void tly_conns_abandon(tly_conns *c, int fd)
{
    pthread_mutex_lock(&c->mu);
    tly_conn *k = find_handed(c, fd);
    if (k)
        drop_handed(c, k);
    pthread_mutex_unlock(&c->mu);
}

tly_conn *tly_conns_adopt(tly_conns *c, int fd)
{
    pthread_mutex_lock(&c->mu);
    tly_conn *k = find_handed(c, fd);
    if (k) {
        unlink_conn(&c->handed, k);
        k->handed = false;
        link_conn(&c->head, k);
    }
    pthread_mutex_unlock(&c->mu);
    return k;
}

tly_conn *tly_conns_open(tly_conns *c, const struct sockaddr *addr, int fd)
{
    peer_key key = key_of(addr, addr ? (socklen_t)sizeof(struct sockaddr_storage) : 0);
    tly_conn *k = conn_new(c, &key, fd);
    pthread_mutex_lock(&c->mu);
    hold(c, &key);
    link_conn(&c->head, k);
    pthread_mutex_unlock(&c->mu);
    return k;
}

void tly_conns_close(tly_conns *c, tly_conn *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&c->mu);
    unlink_conn(k->handed ? &c->handed : &c->head, k);
    release(c, &k->key);
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
