/*
** test_acceptor.c: the accepting thread (acceptor.h) and the connection
** guard's accept, adopt and abandon steps (conns.h) that it feeds.
*/
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tally/acceptor.h"
#include "tally/conns.h"

/* What the callbacks saw, under a lock (they run on the acceptor's thread). */
typedef struct {
    pthread_mutex_t mu;
    int fds[256];
    int n;
    int errors, last_error;
    bool after_stop;  /* a callback ran after tly_acceptor_stop() returned */
    bool stopped;
    bool ipv4_loopback;  /* every address was 127.0.0.1 */
} seen;

static void on_accept(void *ctx, int fd, const struct sockaddr *addr, socklen_t len)
{
    seen *s = ctx;
    pthread_mutex_lock(&s->mu);
    if (s->stopped)
        s->after_stop = true;
    const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
    if (len < (socklen_t)sizeof *in || in->sin_family != AF_INET || in->sin_addr.s_addr != htonl(INADDR_LOOPBACK))
        s->ipv4_loopback = false;
    if (s->n < 256)
        s->fds[s->n++] = fd;
    else
        close(fd);
    pthread_mutex_unlock(&s->mu);
}

static void on_error(void *ctx, int err)
{
    seen *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->errors++;
    s->last_error = err;
    pthread_mutex_unlock(&s->mu);
}

static void seen_init(seen *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->ipv4_loopback = true;
}

static void seen_free(seen *s)
{
    for (int i = 0; i < s->n; i++)
        close(s->fds[i]);
    pthread_mutex_destroy(&s->mu);
}

static int seen_count(seen *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->n;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to 5 s for the callbacks to have seen n connections. */
static bool wait_count(seen *s, int n)
{
    for (int i = 0; i < 500; i++) {
        if (seen_count(s) >= n)
            return true;
        sleep_ms(10);
    }
    return seen_count(s) >= n;
}

/* A non-blocking listening socket on 127.0.0.1 and a kernel-chosen port. */
static int listener(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 512), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static int dial(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void test_burst_is_handed_over_whole(void **state)
{
    (void)state;
    seen s;
    seen_init(&s);
    uint16_t port;
    int lfd = listener(&port);
    int err = 0;
    tly_acceptor *a = tly_acceptor_start(lfd, on_accept, on_error, &s, &err);
    assert_non_null(a);
    int clients[100];
    for (int i = 0; i < 100; i++)
        clients[i] = dial(port);
    assert_true(wait_count(&s, 100));
    assert_int_equal(seen_count(&s), 100);
    assert_int_equal(s.errors, 0);
    assert_true(s.ipv4_loopback);
    /* Accepted sockets are non-blocking and close-on-exec, and they are the clients' peers. */
    for (int i = 0; i < s.n; i++) {
        assert_true(fcntl(s.fds[i], F_GETFL) & O_NONBLOCK);
        assert_true(fcntl(s.fds[i], F_GETFD) & FD_CLOEXEC);
    }
    assert_int_equal(write(clients[7], "x", 1), 1);
    bool got = false;
    for (int t = 0; t < 100 && !got; t++) {
        for (int i = 0; i < s.n && !got; i++) {
            char c;
            got = read(s.fds[i], &c, 1) == 1 && c == 'x';
        }
        if (!got)
            sleep_ms(10);
    }
    assert_true(got);
    tly_acceptor_stop(a);
    for (int i = 0; i < 100; i++)
        close(clients[i]);
    close(lfd);
    seen_free(&s);
}

static void test_stop_ends_the_callbacks(void **state)
{
    (void)state;
    seen s;
    seen_init(&s);
    uint16_t port;
    int lfd = listener(&port);
    int err = 0;
    tly_acceptor *a = tly_acceptor_start(lfd, on_accept, on_error, &s, &err);
    assert_non_null(a);
    int c1 = dial(port);
    assert_true(wait_count(&s, 1));
    tly_acceptor_stop(a);
    pthread_mutex_lock(&s.mu);
    s.stopped = true;
    pthread_mutex_unlock(&s.mu);
    /* The kernel still completes this one into the backlog; nobody takes it. */
    int c2 = dial(port);
    sleep_ms(100);
    assert_int_equal(seen_count(&s), 1);
    assert_false(s.after_stop);
    /* The socket stays the caller's, open and listening. */
    assert_true(fcntl(lfd, F_GETFD) >= 0);
    tly_acceptor_stop(NULL);
    close(c1);
    close(c2);
    close(lfd);
    seen_free(&s);
}

/*
** Out of descriptors: the error is told (EMFILE), the thread waits and tries
** again, and once descriptors are free the waiting connection is taken.
*/
static void test_fd_shortage_backs_off_then_recovers(void **state)
{
    (void)state;
    /*
    ** Not under valgrind (scripts/ci-extra.sh sets TALLY_VALGRIND): it emulates
    ** RLIMIT_NOFILE, and a descriptor accept() returns above the emulated
    ** limit it closes itself before reporting EMFILE, so the waiting
    ** connection is gone when descriptors come back. The kernel leaves it in
    ** the backlog; make test runs this plain and under ASan.
    */
    if (getenv("TALLY_VALGRIND"))
        skip();
    seen s;
    seen_init(&s);
    uint16_t port;
    int lfd = listener(&port);
    int err = 0;
    tly_acceptor *a = tly_acceptor_start(lfd, on_accept, on_error, &s, &err);
    assert_non_null(a);
    /* The client's socket is made first; it connects once no descriptor is left. */
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(c >= 0);
    struct rlimit was, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
    int lowest = dup(0);  /* the lowest free descriptor: every one below it is taken */
    assert_true(lowest >= 0);
    close(lowest);
    low = was;
    low.rlim_cur = (rlim_t)lowest;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(c, (struct sockaddr *)&to, sizeof to), 0);
    int errors = 0;
    for (int i = 0; i < 500 && !errors; i++) {
        sleep_ms(10);
        pthread_mutex_lock(&s.mu);
        errors = s.errors;
        pthread_mutex_unlock(&s.mu);
    }
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
    assert_true(errors >= 1);
    assert_int_equal(s.last_error, EMFILE);
    /* Descriptors again: the waiting connection is taken after the back-off. */
    assert_true(wait_count(&s, 1));
    tly_acceptor_stop(a);
    close(c);
    close(lfd);
    seen_free(&s);
}

/* ---- the guard: accept, adopt, abandon ---------------------------------- */

static const tly_conns_limits limits = {.limit = 8, .per_ip = 3, .reserve = 2, .small = 2,
                                        .handshake_s = 1, .request_s = 5, .idle_s = 5};

static struct sockaddr_in peer(uint8_t last)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(40000)};
    a.sin_addr.s_addr = htonl(0x0a000000u | last);
    return a;
}

#define SA(a) ((const struct sockaddr *)&(a))

/* Counted at accept: a burst from one peer stops at per_ip before any worker adopted one. */
static void test_accept_counts_before_adoption(void **state)
{
    (void)state;
    tly_conns *c = tly_conns_create(&limits);
    struct sockaddr_in p = peer(1);
    assert_true(tly_conns_accept(c, SA(p), sizeof p, 100));
    assert_true(tly_conns_accept(c, SA(p), sizeof p, 101));
    assert_true(tly_conns_accept(c, SA(p), sizeof p, 102));
    assert_false(tly_conns_accept(c, SA(p), sizeof p, 103));
    assert_int_equal(tly_conns_open_count(c), 3);
    /* Adoption moves the entry, it does not count it again. */
    tly_conn *k = tly_conns_adopt(c, 101);
    assert_non_null(k);
    assert_null(tly_conns_adopt(c, 101));
    assert_int_equal(tly_conns_open_count(c), 3);
    assert_false(tly_conns_accept(c, SA(p), sizeof p, 104));
    /* A close gives the peer its slot back. */
    tly_conns_close(c, k);
    assert_int_equal(tly_conns_open_count(c), 2);
    assert_true(tly_conns_accept(c, SA(p), sizeof p, 105));
    /* A failed hand-over gives it back too. */
    tly_conns_abandon(c, 105);
    assert_int_equal(tly_conns_open_count(c), 2);
    tly_conns_abandon(c, 105);  /* nothing left: no-op */
    assert_int_equal(tly_conns_open_count(c), 2);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tly_conns_metrics(c, f);
    fclose(f);
    assert_non_null(strstr(text, "tally_connections_refused_total{reason=\"per_ip\"} 2\n"));
    assert_non_null(strstr(text, "tally_connections_open 2\n"));
    free(text);
    tly_conns_close(c, tly_conns_adopt(c, 100));
    tly_conns_close(c, tly_conns_adopt(c, 102));
    assert_int_equal(tly_conns_open_count(c), 0);
    tly_conns_destroy(c);
}

/* The total limit and the reserve are checked at accept as well. */
static void test_accept_keeps_the_reserve(void **state)
{
    (void)state;
    tly_conns *c = tly_conns_create(&limits);
    int fd = 10;
    for (uint8_t ip = 1; ip <= 2; ip++) {
        struct sockaddr_in p = peer(ip);
        for (int i = 0; i < 3; i++)
            assert_true(tly_conns_accept(c, SA(p), sizeof p, fd++));
    }
    /* 6 open, limit 8, reserve 2: a peer holding 2 or more is refused, a new one gets in. */
    struct sockaddr_in big = peer(1), fresh = peer(9);
    assert_false(tly_conns_accept(c, SA(big), sizeof big, fd++));
    assert_true(tly_conns_accept(c, SA(fresh), sizeof fresh, fd++));
    assert_true(tly_conns_accept(c, SA(fresh), sizeof fresh, fd++));
    assert_false(tly_conns_accept(c, SA(fresh), sizeof fresh, fd++));
    assert_int_equal(tly_conns_open_count(c), 8);
    tly_conns_destroy(c);
}

/* A descriptor the kernel hands out again makes an unadopted entry holding it stale. */
static void test_reused_descriptor_replaces_a_stale_entry(void **state)
{
    (void)state;
    tly_conns *c = tly_conns_create(&limits);
    struct sockaddr_in p = peer(1), q = peer(2);
    assert_true(tly_conns_accept(c, SA(p), sizeof p, 50));
    assert_true(tly_conns_accept(c, SA(q), sizeof q, 50));
    assert_int_equal(tly_conns_open_count(c), 1);
    /* The peer of the stale entry holds nothing any more. */
    for (int i = 0; i < 3; i++)
        assert_true(tly_conns_accept(c, SA(p), sizeof p, 60 + i));
    tly_conn *k = tly_conns_adopt(c, 50);
    assert_non_null(k);
    tly_conns_close(c, k);
    for (int i = 0; i < 3; i++)
        tly_conns_close(c, tly_conns_adopt(c, 60 + i));
    assert_int_equal(tly_conns_open_count(c), 0);
    tly_conns_destroy(c);
}

/*
** An entry no worker adopts within the handshake time is uncounted by the
** reaper, and its socket is left alone (it is not the guard's to shut down).
*/
static void test_unadopted_entry_expires_without_shutdown(void **state)
{
    (void)state;
    tly_conns *c = tly_conns_create(&limits);
    assert_int_equal(tly_conns_start(c), 0);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct sockaddr_in p = peer(1);
    assert_true(tly_conns_accept(c, SA(p), sizeof p, sv[0]));
    assert_int_equal(tly_conns_open_count(c), 1);
    bool gone = false;
    for (int i = 0; i < 300 && !gone; i++) {
        sleep_ms(10);
        gone = tly_conns_open_count(c) == 0;
    }
    assert_true(gone);
    assert_int_equal(write(sv[0], "y", 1), 1);
    char ch = 0;
    assert_int_equal(read(sv[1], &ch, 1), 1);
    assert_int_equal(ch, 'y');
    /* Too late to adopt: the worker counts it itself (tly_conns_open). */
    assert_null(tly_conns_adopt(c, sv[0]));
    close(sv[0]);
    close(sv[1]);
    tly_conns_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_is_handed_over_whole),
        cmocka_unit_test(test_stop_ends_the_callbacks),
        cmocka_unit_test(test_fd_shortage_backs_off_then_recovers),
        cmocka_unit_test(test_accept_counts_before_adoption),
        cmocka_unit_test(test_accept_keeps_the_reserve),
        cmocka_unit_test(test_reused_descriptor_replaces_a_stale_entry),
        cmocka_unit_test(test_unadopted_entry_expires_without_shutdown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
