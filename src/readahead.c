/*
** readahead.c: the socket reader of readahead.h.
**
** The buffer is allocated at the first read that uses it, so a connection
** that never sends anything (or only large records) costs no buffer.
*/
#include "tally/readahead.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tally/arena.h"

struct tly_readahead {
    int fd;
    size_t off, len;     /* buf[off..len) is read and not yet handed out */
    unsigned char *buf;  /* TLY_READAHEAD_SIZE bytes, or NULL before first use */
};

tly_readahead *tly_readahead_create(int fd)
{
    tly_readahead *r = tly_xcalloc(1, sizeof *r);
    r->fd = fd;
    return r;
}

void tly_readahead_destroy(tly_readahead *r)
{
    if (!r)
        return;
    free(r->buf);
    free(r);
}

ssize_t tly_readahead_read(tly_readahead *r, void *data, size_t size)
{
    if (size == 0)
        return 0;  /* as recv(2) */
    if (r->off == r->len) {
        if (size >= TLY_READAHEAD_SIZE)
            return recv(r->fd, data, size, 0);
        if (!r->buf)
            r->buf = tly_xmalloc(TLY_READAHEAD_SIZE);
        ssize_t n = recv(r->fd, r->buf, TLY_READAHEAD_SIZE, 0);
        if (n <= 0)
            return n;
        r->off = 0;
        r->len = (size_t)n;
    }
    size_t k = r->len - r->off;
    if (k > size)
        k = size;
    memcpy(data, r->buf + r->off, k);
    r->off += k;
    return (ssize_t)k;
}

size_t tly_readahead_pending(const tly_readahead *r) { return r->len - r->off; }

int tly_readahead_fd(const tly_readahead *r) { return r->fd; }
