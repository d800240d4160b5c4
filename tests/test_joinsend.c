/*
** test_joinsend.c: the socket writer under `tally serve`'s TLS sessions
** (joinsend.h): a held piece goes out with the next write, in order, also
** when the socket is full; only the write asked for is held, and only when
** it fits.
*/
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tally/joinsend.h"

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
}

static ssize_t put(tly_joinsend *w, const char *s)
{
    struct iovec v = {(void *)s, strlen(s)};
    return tly_joinsend_writev(w, &v, 1);
}

/* Everything the peer can read now, NUL-terminated. */
static size_t drain(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    buf[n] = '\0';
    return n;
}

static void test_held_piece_goes_with_the_next(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    tly_joinsend *w = tly_joinsend_create(sv[0]);
    char buf[256];
    assert_int_equal(put(w, "plain"), 5);
    assert_int_equal(drain(sv[1], buf, sizeof buf), 5);
    tly_joinsend_hold_next(w);
    /* The header: reported sent, kept back. */
    assert_int_equal(put(w, "HEADER|"), 7);
    assert_int_equal(tly_joinsend_held(w), 7);
    assert_int_equal(drain(sv[1], buf, sizeof buf), 0);
    /* The body: both leave, header first, and the count is the body's. */
    struct iovec v[2] = {{"BO", 2}, {"DY", 2}};
    assert_int_equal(tly_joinsend_writev(w, v, 2), 4);
    assert_int_equal(tly_joinsend_held(w), 0);
    drain(sv[1], buf, sizeof buf);
    assert_string_equal(buf, "HEADER|BODY");
    /* Only the one write was held. */
    assert_int_equal(put(w, "next"), 4);
    drain(sv[1], buf, sizeof buf);
    assert_string_equal(buf, "next");
    tly_joinsend_destroy(w);
    close(sv[0]);
    close(sv[1]);
}

static void test_too_large_is_not_held(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    tly_joinsend *w = tly_joinsend_create(sv[0]);
    char big[TLY_JOINSEND_HOLD + 10];
    memset(big, 'x', sizeof big);
    struct iovec v = {big, sizeof big};
    tly_joinsend_hold_next(w);
    assert_int_equal(tly_joinsend_writev(w, &v, 1), (ssize_t)sizeof big);
    assert_int_equal(tly_joinsend_held(w), 0);
    /* The hold was for that write: the next one is not held either. */
    assert_int_equal(put(w, "after"), 5);
    char buf[2 * TLY_JOINSEND_HOLD];
    assert_int_equal(drain(sv[1], buf, sizeof buf), sizeof big + 5);
    assert_memory_equal(buf + sizeof big, "after", 5);
    tly_joinsend_destroy(w);
    close(sv[0]);
    close(sv[1]);
}

/* A full socket: the write after a hold fails with EAGAIN, sends nothing of its own, and nothing is lost. */
static void test_full_socket_keeps_order(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    tly_joinsend *w = tly_joinsend_create(sv[0]);
    /* Fill the socket. */
    char fill[1024];
    memset(fill, 'f', sizeof fill);
    size_t filled = 0;
    for (;;) {
        struct iovec v = {fill, sizeof fill};
        ssize_t k = tly_joinsend_writev(w, &v, 1);
        if (k < 0) {
            assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
            break;
        }
        filled += (size_t)k;
    }
    tly_joinsend_hold_next(w);
    assert_int_equal(put(w, "HEADER|"), 7);
    errno = 0;
    assert_int_equal(put(w, "BODY"), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    assert_true(tly_joinsend_held(w) > 0);
    /* The peer reads; the write is tried again, as GnuTLS does, until it goes. */
    size_t cap = filled + 64;
    char *got = malloc(cap + 1);
    size_t n = 0;
    ssize_t k = -1;
    for (int i = 0; i < 1000 && k < 0; i++) {
        ssize_t r = read(sv[1], got + n, cap - n);
        if (r > 0)
            n += (size_t)r;
        k = put(w, "BODY");
    }
    assert_int_equal(k, 4);
    assert_int_equal(tly_joinsend_held(w), 0);
    for (int i = 0; i < 100 && n < filled + 11; i++) {
        ssize_t r = read(sv[1], got + n, cap - n);
        if (r > 0)
            n += (size_t)r;
    }
    assert_int_equal(n, filled + 11);
    for (size_t i = 0; i < filled; i++)
        assert_int_equal(got[i], 'f');
    assert_memory_equal(got + filled, "HEADER|BODY", 11);
    free(got);
    tly_joinsend_destroy(w);
    close(sv[0]);
    close(sv[1]);
}

/* A long vector after a hold: the held piece goes alone first, then the vector. */
static void test_long_vector(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    tly_joinsend *w = tly_joinsend_create(sv[0]);
    tly_joinsend_hold_next(w);
    assert_int_equal(put(w, "H|"), 2);
    struct iovec v[20];
    for (int i = 0; i < 20; i++)
        v[i] = (struct iovec){(void *)"ab", 2};
    assert_int_equal(tly_joinsend_writev(w, v, 20), 40);
    char buf[128];
    assert_int_equal(drain(sv[1], buf, sizeof buf), 42);
    assert_memory_equal(buf, "H|abab", 6);
    tly_joinsend_destroy(w);
    close(sv[0]);
    close(sv[1]);
}

/* A socket error comes through; a peer gone is EPIPE with no signal. */
static void test_errors_pass_through(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    tly_joinsend *w = tly_joinsend_create(sv[0]);
    close(sv[1]);
    errno = 0;
    assert_int_equal(put(w, "x"), -1);
    assert_int_equal(errno, EPIPE);
    tly_joinsend_hold_next(w);
    assert_int_equal(put(w, "held"), 4);
    errno = 0;
    assert_int_equal(put(w, "y"), -1);
    assert_int_equal(errno, EPIPE);
    tly_joinsend_destroy(w);
    close(sv[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_piece_goes_with_the_next),
        cmocka_unit_test(test_too_large_is_not_held),
        cmocka_unit_test(test_full_socket_keeps_order),
        cmocka_unit_test(test_long_vector),
        cmocka_unit_test(test_errors_pass_through),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
