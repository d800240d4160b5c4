/*
** readahead.h: a socket reader that takes what is there in one recv(2) and
** hands it out in pieces (`tally serve`'s TLS pull function, issue 16).
**
** GnuTLS reads a record's 5-byte header and then its body, two recv(2) for
** every request on a keep-alive connection. Reading ahead into a small buffer
** makes that one. The buffer never hides data from the event loop: a read
** fails with EAGAIN only when both the buffer and the socket are empty, and
** libmicrohttpd drops a TLS connection's "read ready" state only on that
** EAGAIN (0.9.75, recv_tls_adapter), so a connection with bytes here stays
** in its ready list and is read again without waiting for an epoll edge.
** A read of at least the buffer's size with the buffer empty goes straight
** to the socket (a large body costs no extra copy).
*/
#ifndef TALLY_READAHEAD_H
#define TALLY_READAHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define TLY_READAHEAD_SIZE 8192

typedef struct tly_readahead tly_readahead;

tly_readahead *tly_readahead_create(int fd);
void tly_readahead_destroy(tly_readahead *r);
/*
** Up to size bytes into data: from the buffer while it holds any, else from
** the socket. As recv(2): the count, 0 at the end of the stream, -1 with
** errno set (EAGAIN when nothing is there).
*/
ssize_t tly_readahead_read(tly_readahead *r, void *data, size_t size);
/* Bytes read from the socket and not yet handed out. */
size_t tly_readahead_pending(const tly_readahead *r);
/* The socket. */
int tly_readahead_fd(const tly_readahead *r);

#endif
