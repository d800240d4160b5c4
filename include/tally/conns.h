/*
** conns.h: what each peer of `tally serve` may hold, and how long (issue 17
** item 1; docs/serve.md "Limits and threads").
**
** libmicrohttpd bounds the connections in total and closes a connection
** after a stretch of silence, but the silence restarts at every byte, so a
** client that sends a header byte at a time, or a ClientHello that never
** ends, holds its slot for as long as it likes; enough of them and nobody
** else gets in (/healthz included). This module is the server's guard:
**
**  - admission at accept: a peer (an IP address; IPv4-mapped IPv6 counts as
**    the IPv4 address) holds at most per_ip connections, the server at most
**    limit, and the last `reserve` slots go only to peers holding fewer
**    than `small`, so that a probe or a second API server gets in while a
**    few peers hold everything else;
**  - deadlines: the handshake and the first request line within
**    handshake_s of the accept, a request from its request line to its
**    answer within request_s, the next request line within idle_s of the
**    previous answer. A reaper thread shuts down the socket of a connection
**    past its deadline (four times a second); libmicrohttpd sees the end of
**    the stream and closes it as any other.
**
** Thread-safe. The server's accepting thread (acceptor.h) calls
** tly_conns_accept() for every new connection, before it hands the socket to
** a worker: admission and counting are one step, so a burst of connects
** cannot pass a limit while the workers catch up. The worker adopts the
** entry when libmicrohttpd starts the connection (tly_conns_adopt(), from
** the connection notification) and calls tly_conns_close() when it ends;
** the request hooks come from the worker that owns the connection.
*/
#ifndef TALLY_CONNS_H
#define TALLY_CONNS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>

typedef struct {
    unsigned limit;        /* connections at once */
    unsigned per_ip;       /* connections of one peer */
    unsigned reserve;      /* the last slots, for peers holding fewer than `small` */
    unsigned small;
    unsigned handshake_s;  /* accept to the first request line */
    unsigned request_s;    /* request line to answer */
    unsigned idle_s;       /* an answer to the next request line */
} tly_conns_limits;

typedef struct tly_conns tly_conns;
typedef struct tly_conn tly_conn;

tly_conns *tly_conns_create(const tly_conns_limits *l);
/* Stops the reaper; every connection must have been closed. */
void tly_conns_destroy(tly_conns *c);
/* Starts the reaper thread; 0, or an errno. */
int tly_conns_start(tly_conns *c);

/*
** Whether a new connection from addr (on socket fd) may be taken; a refusal
** is counted by reason. A taken one is counted for its peer at once, and its
** handshake deadline runs from now; it waits for tly_conns_adopt(). If no
** worker adopts it within the handshake time, it is uncounted (never shut
** down: until adopted, its socket is libmicrohttpd's).
*/
bool tly_conns_accept(tly_conns *c, const struct sockaddr *addr, socklen_t len, int fd);
/* The hand-over of fd failed (libmicrohttpd closed the socket): uncounted. */
void tly_conns_abandon(tly_conns *c, int fd);
/* A worker starts serving socket fd: the entry tly_conns_accept() counted, or NULL when there is none. */
tly_conn *tly_conns_adopt(tly_conns *c, int fd);
/* A connection that did not come through tly_conns_accept(): counted for its peer, handshake deadline set. */
tly_conn *tly_conns_open(tly_conns *c, const struct sockaddr *addr, int fd);
/* Before its socket is closed: no shutdown() reaches fd after this returns. */
void tly_conns_close(tly_conns *c, tly_conn *k);
/* The request line of a request is in / its answer is done. */
void tly_conns_request_started(tly_conns *c, tly_conn *k);
void tly_conns_request_done(tly_conns *c, tly_conn *k);

/* Whether the reaper shut this connection down. */
bool tly_conns_was_cut(tly_conns *c, tly_conn *k);
/* Connections open now. */
unsigned tly_conns_open_count(tly_conns *c);
/*
** tally_connections_open, tally_connections_refused_total{reason} (per_ip,
** reserve, limit, httpd_limit), tally_connections_cut_total{phase}
** (handshake, request, idle) and
** tally_connections_closed_without_request_total in the text format.
*/
void tly_conns_metrics(tly_conns *c, FILE *out);
/* A refusal libmicrohttpd made itself (its own connection limit), for the same counter. */
void tly_conns_refused_by_httpd(tly_conns *c);

#endif
