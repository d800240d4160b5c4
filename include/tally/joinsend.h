/*
** joinsend.h: a socket writer that can keep one piece back and send it with
** the next (`tally serve`'s TLS push function, issue 16).
**
** libmicrohttpd 0.9.75 sends an answer's header and body with two
** gnutls_record_send calls on TLS, so every answer was two TLS records and two
** sendmsg(2). When the webhook has queued an answer that has a body, it asks
** for the next piece to be held: the header record is copied here (the push
** reports it sent), and the body record's push sends both with one sendmsg.
** MHD sends the body in the same call as the header once the header is out
** (MHD_send_hdr_and_body_ with a buffer body), so the held piece never waits
** for anything but that next push. Any push sends what is held first, so the
** bytes always leave in order; a hold that is never followed by a push can
** only be the last thing on a connection that is closing.
**
** When the socket takes only part of what is held, the rest stays held and
** the push fails with EAGAIN: nothing of its own data went out, and the
** caller tries it again once the socket is writable (the socket buffer is
** full, so that moment comes). A held piece is at most TLY_JOINSEND_HOLD
** bytes; a larger one is not held.
*/
#ifndef TALLY_JOINSEND_H
#define TALLY_JOINSEND_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#define TLY_JOINSEND_HOLD 1024

typedef struct tly_joinsend tly_joinsend;

tly_joinsend *tly_joinsend_create(int fd);
void tly_joinsend_destroy(tly_joinsend *w);
/* The next write is kept back (when it fits and nothing is held) and goes out with the one after. */
void tly_joinsend_hold_next(tly_joinsend *w);
/*
** As writev(2) on the socket (MSG_NOSIGNAL), after what is held: the count
** of iov's bytes sent (all of them when they were held), or -1 with errno.
*/
ssize_t tly_joinsend_writev(tly_joinsend *w, const struct iovec *iov, int iovcnt);
/* Bytes held and not yet sent. */
size_t tly_joinsend_held(const tly_joinsend *w);

#endif
