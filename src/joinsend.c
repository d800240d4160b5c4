/*
** joinsend.c: the socket writer of joinsend.h.
*/
#include "tally/joinsend.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tally/arena.h"

/* iovecs sent with a held piece in one call; a longer vector sends the held piece alone first. */
#define JOIN_IOV 16

struct tly_joinsend {
    int fd;
    bool hold;                  /* keep the next write back */
    size_t off, len;            /* buf[off..len) is held */
    unsigned char buf[TLY_JOINSEND_HOLD];
};

tly_joinsend *tly_joinsend_create(int fd)
{
    tly_joinsend *w = tly_xcalloc(1, sizeof *w);
    w->fd = fd;
    return w;
}

void tly_joinsend_destroy(tly_joinsend *w) { free(w); }

void tly_joinsend_hold_next(tly_joinsend *w) { w->hold = true; }

size_t tly_joinsend_held(const tly_joinsend *w) { return w->len - w->off; }

static ssize_t send_vec(int fd, struct iovec *iov, int n)
{
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    return sendmsg(fd, &m, MSG_NOSIGNAL);
}

/* Keeps iov back when asked to and it fits; true when it did. */
static bool keep(tly_joinsend *w, const struct iovec *iov, int iovcnt)
{
    bool asked = w->hold;
    w->hold = false;  /* asked for one write: this one */
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    if (!asked || w->len != w->off || total > sizeof w->buf || total == 0)
        return false;
    w->off = w->len = 0;
    for (int i = 0; i < iovcnt; i++) {
        memcpy(w->buf + w->len, iov[i].iov_base, iov[i].iov_len);
        w->len += iov[i].iov_len;
    }
    return true;
}

/* Sends the held bytes alone; 0 when they are all out, else -1 (errno; EAGAIN for a partial send). */
static int flush_held(tly_joinsend *w)
{
    struct iovec v = {w->buf + w->off, w->len - w->off};
    ssize_t k = send_vec(w->fd, &v, 1);
    if (k < 0)
        return -1;
    w->off += (size_t)k;
    if (w->off < w->len) {
        errno = EAGAIN;
        return -1;
    }
    w->off = w->len = 0;
    return 0;
}

ssize_t tly_joinsend_writev(tly_joinsend *w, const struct iovec *iov, int iovcnt)
{
    if (keep(w, iov, iovcnt)) {
        ssize_t total = 0;
        for (int i = 0; i < iovcnt; i++)
            total += (ssize_t)iov[i].iov_len;
        return total;
    }
    size_t held = w->len - w->off;
    if (held == 0)
        return send_vec(w->fd, (struct iovec *)iov, iovcnt);
    if (iovcnt >= JOIN_IOV) {
        if (flush_held(w) != 0)
            return -1;
        return send_vec(w->fd, (struct iovec *)iov, iovcnt);
    }
    struct iovec v[JOIN_IOV];
    v[0] = (struct iovec){w->buf + w->off, held};
    memcpy(v + 1, iov, (size_t)iovcnt * sizeof *iov);
    ssize_t k = send_vec(w->fd, v, iovcnt + 1);
    if (k < 0)
        return -1;
    if ((size_t)k <= held) {
        /* Only (some of) the held bytes went: none of this write's. The socket is full. */
        w->off += (size_t)k;
        if (w->off == w->len)
            w->off = w->len = 0;
        errno = EAGAIN;
        return -1;
    }
    w->off = w->len = 0;
    return k - (ssize_t)held;
}
