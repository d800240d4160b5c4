/*
** acceptor.h: one thread that accepts the connections of a listening socket
** and hands each to a callback (`tally serve`, issue 16).
**
** Why: libmicrohttpd's thread pool puts one listening socket in every
** worker's event loop, and whichever worker wakes first takes the
** connection. When a client opens its connections in a burst (wrk's 64, an
** API server after a restart), one worker often took all of them while the
** other idled: on two cores tally then used one, and its throughput halved
** from run to run. With this thread the server decides which worker serves
** a connection (the one holding the fewest), and counts it against the
** connection limits before any worker has seen it.
**
** The socket must be non-blocking; it stays the caller's (the acceptor
** never closes or shuts it down). Accepted sockets are non-blocking and
** close-on-exec, and belong to the callback. When the process runs out of
** descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) the thread tells
** the error callback and waits a tenth of a second before it accepts again,
** so that a full table is not a busy loop; the waiting connections stay in
** the kernel's backlog meanwhile.
*/
#ifndef TALLY_ACCEPTOR_H
#define TALLY_ACCEPTOR_H

#include <sys/socket.h>

/* A new connection: socket fd from addr (len bytes). */
typedef void (*tly_accept_fn)(void *ctx, int fd, const struct sockaddr *addr, socklen_t len);
/* accept(2) failed with err, other than for a connection that went away before it was taken. */
typedef void (*tly_accept_error_fn)(void *ctx, int err);

typedef struct tly_acceptor tly_acceptor;

/* Starts the thread on listening socket fd; NULL with *err set to an errno when it cannot. */
tly_acceptor *tly_acceptor_start(int fd, tly_accept_fn on_accept, tly_accept_error_fn on_error, void *ctx,
                                 int *err);
/* Stops and joins the thread: no callback runs after it returns. NULL is a no-op. */
void tly_acceptor_stop(tly_acceptor *a);

#endif
