/*
** test_readahead.c: the socket reader under `tally serve`'s TLS sessions
** (readahead.h): one recv(2) serves a record's header and body, buffered
** bytes are handed out before EAGAIN or the end of the stream, large reads
** go straight to the socket.
*/
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tally/readahead.h"

/* A connected pair of non-blocking stream sockets: sv[0] read through the reader, sv[1] the peer. */
static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
}

static void test_pieces_come_from_one_read(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    tly_readahead *r = tly_readahead_create(sv[0]);
    char msg[100];
    for (int i = 0; i < 100; i++)
        msg[i] = (char)i;
    assert_int_equal(write(sv[1], msg, sizeof msg), 100);
    char got[100];
    /* A record header, as GnuTLS asks for it: the rest is read with it. */
    assert_int_equal(tly_readahead_read(r, got, 5), 5);
    assert_int_equal(tly_readahead_pending(r), 95);
    /* The peer goes away: what was read is still handed out, then the end of the stream. */
    close(sv[1]);
    assert_int_equal(tly_readahead_read(r, got + 5, 95), 95);
    assert_memory_equal(got, msg, 100);
    assert_int_equal(tly_readahead_read(r, got, 10), 0);
    tly_readahead_destroy(r);
    close(sv[0]);
}

static void test_again_only_when_both_are_empty(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    tly_readahead *r = tly_readahead_create(sv[0]);
    char buf[64];
    errno = 0;
    assert_int_equal(tly_readahead_read(r, buf, 5), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    assert_int_equal(write(sv[1], "abcdefgh", 8), 8);
    assert_int_equal(tly_readahead_read(r, buf, 3), 3);
    assert_int_equal(tly_readahead_read(r, buf + 3, 3), 3);
    /* A read larger than what is buffered gets what is buffered, not EAGAIN. */
    assert_int_equal(tly_readahead_read(r, buf + 6, 40), 2);
    assert_memory_equal(buf, "abcdefgh", 8);
    errno = 0;
    assert_int_equal(tly_readahead_read(r, buf, 5), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    assert_int_equal(tly_readahead_read(r, buf, 0), 0);
    assert_int_equal(tly_readahead_fd(r), sv[0]);
    tly_readahead_destroy(r);
    close(sv[0]);
    close(sv[1]);
}

/* A read of the buffer's size or more, with nothing buffered, takes the socket's bytes directly. */
static void test_large_reads_bypass_the_buffer(void **state)
{
    (void)state;
    int sv[2];
    pair(sv);
    int size = 1 << 20;
    assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &size, sizeof size), 0);
    tly_readahead *r = tly_readahead_create(sv[0]);
    size_t n = 3 * TLY_READAHEAD_SIZE;
    unsigned char *msg = malloc(n), *got = malloc(n);
    for (size_t i = 0; i < n; i++)
        msg[i] = (unsigned char)(i * 7);
    assert_int_equal(write(sv[1], msg, n), (ssize_t)n);
    ssize_t k = tly_readahead_read(r, got, n);
    assert_true(k > TLY_READAHEAD_SIZE);
    assert_int_equal(tly_readahead_pending(r), 0);
    size_t have = (size_t)k;
    while (have < n) {
        /* Then small reads: buffered again, and the bytes stay in order. */
        k = tly_readahead_read(r, got + have, 5);
        assert_true(k > 0);
        have += (size_t)k;
    }
    assert_memory_equal(got, msg, n);
    free(msg);
    free(got);
    tly_readahead_destroy(r);
    close(sv[0]);
    close(sv[1]);
}

/* An error of the socket comes through as recv(2) gives it. */
static void test_errors_pass_through(void **state)
{
    (void)state;
    int fd = open("/dev/null", O_RDONLY);
    assert_true(fd >= 0);
    tly_readahead *r = tly_readahead_create(fd);
    char buf[8];
    errno = 0;
    assert_int_equal(tly_readahead_read(r, buf, 5), -1);
    assert_int_equal(errno, ENOTSOCK);
    tly_readahead_destroy(r);
    tly_readahead_destroy(NULL);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces_come_from_one_read),
        cmocka_unit_test(test_again_only_when_both_are_empty),
        cmocka_unit_test(test_large_reads_bypass_the_buffer),
        cmocka_unit_test(test_errors_pass_through),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
