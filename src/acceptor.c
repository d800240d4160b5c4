/*
** acceptor.c: the accepting thread of `tally serve` (acceptor.h).
**
** The thread sleeps in poll() on the listening socket and on the read end of
** a pipe; a byte in the pipe is the stop signal, so stopping needs no
** signal and no shutdown() of a socket that is not ours. Each wake-up takes
** every connection waiting (until EAGAIN), so a burst costs one poll.
*/
#include "tally/acceptor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "tally/arena.h"

/* How long to wait before accepting again when descriptors or memory ran out. */
#define BACKOFF_MS 100

struct tly_acceptor {
    int fd;
    int wake[2]; /* a pipe: a byte in it stops the thread */
    tly_accept_fn on_accept;
    tly_accept_error_fn on_error;
    void *ctx;
    pthread_t thread;
};

/* Errors that mean the process or the system is short of something: wait, then go on. */
static bool short_of_resources(int e)
{
    return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

/*
** Errors that belong to one connection, not to the socket: it went away
** before it was taken (ECONNABORTED), or Linux handed over a network error
** pending on it (accept(2) says to treat those like EAGAIN and retry).
*/
static bool connection_error(int e)
{
    return e == EINTR || e == ECONNABORTED || e == EPROTO || e == EPERM || e == ENETDOWN ||
           e == ENOPROTOOPT || e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH || e == EOPNOTSUPP ||
           e == ENETUNREACH || e == ETIMEDOUT;
}

/* Waits up to ms (-1: for ever) for the stop byte; true when it came. */
static bool stop_requested(tly_acceptor *a, int ms)
{
    struct pollfd p = {.fd = a->wake[0], .events = POLLIN};
    int rc;
    do
        rc = poll(&p, 1, ms);
    while (rc < 0 && errno == EINTR);
    return rc > 0;
}

/*
** Takes every connection waiting. Returns 0 at EAGAIN, else the errno that
** ended it (a resource shortage, or the socket itself failing).
*/
static int drain(tly_acceptor *a)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int s = accept4(a->fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s >= 0) {
            a->on_accept(a->ctx, s, (struct sockaddr *)&ss, len);
            continue;
        }
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK)
            return 0;
        if (!connection_error(e))
            return e;
    }
}

static void *acceptor_main(void *arg)
{
    tly_acceptor *a = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = a->fd, .events = POLLIN}, {.fd = a->wake[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (!p[0].revents)
            continue;
        int e = drain(a);
        if (!e)
            continue;
        if (a->on_error)
            a->on_error(a->ctx, e);
        /* A shortage passes; a socket that no longer accepts (shut down, closed) waits for the stop. */
        if (stop_requested(a, short_of_resources(e) ? BACKOFF_MS : -1))
            break;
    }
    return NULL;
}

tly_acceptor *tly_acceptor_start(int fd, tly_accept_fn on_accept, tly_accept_error_fn on_error, void *ctx,
                                 int *err)
{
    tly_acceptor *a = tly_xcalloc(1, sizeof *a);
    a->fd = fd;
    a->on_accept = on_accept;
    a->on_error = on_error;
    a->ctx = ctx;
    if (pipe2(a->wake, O_CLOEXEC) != 0) {
        *err = errno;
        free(a);
        return NULL;
    }
    int rc = pthread_create(&a->thread, NULL, acceptor_main, a);
    if (rc != 0) {
        *err = rc;
        close(a->wake[0]);
        close(a->wake[1]);
        free(a);
        return NULL;
    }
    return a;
}

void tly_acceptor_stop(tly_acceptor *a)
{
    if (!a)
        return;
    char b = 1;
    while (write(a->wake[1], &b, 1) < 0 && errno == EINTR)
        ;
    pthread_join(a->thread, NULL);
    close(a->wake[0]);
    close(a->wake[1]);
    free(a);
}
