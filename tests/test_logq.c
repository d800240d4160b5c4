/*
** test_logq.c: the log writer thread (logq.h): lines whole and in order from
** many threads, in batches of whole lines no longer than PIPE_BUF, flush and
** destroy writing everything, a quiet line written without a flush, a full
** buffer making put() wait, a failed write dropping only its own lines.
*/
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "tally/logq.h"

/* What the sink was given: every byte, and every call. */
typedef struct {
    pthread_mutex_t mu;
    tbuf out;
    size_t calls;
    bool over_pipe_buf;   /* a call of more than PIPE_BUF bytes holding more than one line */
    bool cut_line;        /* a call that did not end at a line's end */
    int fail_calls;       /* the next calls that fail (EIO) */
    int sleep_us;         /* each call takes this long */
} sinkbuf;

static ssize_t sink(void *ctx, const char *buf, size_t n)
{
    sinkbuf *s = ctx;
    if (s->sleep_us)
        usleep((useconds_t)s->sleep_us);
    pthread_mutex_lock(&s->mu);
    s->calls++;
    if (s->fail_calls > 0) {
        s->fail_calls--;
        pthread_mutex_unlock(&s->mu);
        errno = EIO;
        return -1;
    }
    const char *nl = memchr(buf, '\n', n);
    if (n > PIPE_BUF && nl && (size_t)(nl - buf) + 1 < n)
        s->over_pipe_buf = true;
    if (n == 0 || buf[n - 1] != '\n')
        s->cut_line = true;
    tbuf_put(&s->out, buf, n);
    pthread_mutex_unlock(&s->mu);
    return (ssize_t)n;
}

static void sink_init(sinkbuf *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
}

static size_t sink_len(sinkbuf *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->out.n;
    pthread_mutex_unlock(&s->mu);
    return n;
}

typedef struct {
    tly_logq *q;
    int id, lines;
} putter;

static void *put_lines(void *arg)
{
    putter *p = arg;
    char line[160], pad[90];
    memset(pad, '-', sizeof pad);
    for (int i = 0; i < p->lines; i++) {
        /* Lines of different lengths (0 to 89 bytes of padding), so that batches end anywhere. */
        int n = snprintf(line, sizeof line, "t=%d i=%d pad=%.*s\n", p->id, i, i % 90, pad);
        tly_logq_put(p->q, line, (size_t)n);
    }
    return NULL;
}

/* Every thread's lines present, whole, in the order that thread put them. */
static void check_lines(const char *text, int threads, int lines)
{
    int *next = calloc((size_t)threads, sizeof *next);
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        int t = -1, i = -1;
        char head[32];  /* sscanf on the whole text would measure it for every line */
        size_t hl = (size_t)(nl - p) < sizeof head - 1 ? (size_t)(nl - p) : sizeof head - 1;
        memcpy(head, p, hl);
        head[hl] = '\0';
        assert_int_equal(sscanf(head, "t=%d i=%d", &t, &i), 2);
        assert_true(t >= 0 && t < threads);
        assert_int_equal(i, next[t]);
        next[t]++;
        p = nl + 1;
    }
    for (int t = 0; t < threads; t++)
        assert_int_equal(next[t], lines);
    free(next);
}

static void test_many_threads_whole_lines_in_order(void **state)
{
    (void)state;
    sinkbuf s;
    sink_init(&s);
    int err = 0;
    tly_logq *q = tly_logq_create(sink, &s, 64 * 1024, 2, &err);
    assert_non_null(q);
    enum { THREADS = 8, LINES = 20000 };
    pthread_t th[THREADS];
    putter p[THREADS];
    for (int t = 0; t < THREADS; t++) {
        p[t] = (putter){q, t, LINES};
        pthread_create(&th[t], NULL, put_lines, &p[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    tly_logq_destroy(q);
    assert_false(s.over_pipe_buf);
    assert_false(s.cut_line);
    check_lines(s.out.p, THREADS, LINES);
    /* Batches: far fewer writes than lines. */
    assert_true(s.calls < THREADS * LINES / 4);
    free(s.out.p);
}

static void test_flush_writes_what_was_put(void **state)
{
    (void)state;
    sinkbuf s;
    sink_init(&s);
    int err = 0;
    tly_logq *q = tly_logq_create(sink, &s, 64 * 1024, 50, &err);
    for (int i = 0; i < 1000; i++) {
        char line[64];
        int n = snprintf(line, sizeof line, "t=0 i=%d\n", i);
        tly_logq_put(q, line, (size_t)n);
        if (i % 100 == 99) {
            tly_logq_flush(q);
            /* Everything put so far, and nothing cut. */
            size_t want = 0;
            for (int k = 0; k <= i; k++)
                want += (size_t)snprintf(line, sizeof line, "t=0 i=%d\n", k);
            assert_int_equal(sink_len(&s), want);
        }
    }
    tly_logq_destroy(q);
    check_lines(s.out.p, 1, 1000);
    free(s.out.p);
}

/* A line on a quiet log reaches the sink without a flush, well within a second. */
static void test_quiet_line_goes_out_at_once(void **state)
{
    (void)state;
    sinkbuf s;
    sink_init(&s);
    int err = 0;
    tly_logq *q = tly_logq_create(sink, &s, 64 * 1024, 1000, &err);
    tly_logq_put(q, "t=0 i=0\n", 8);
    int waited = 0;
    while (sink_len(&s) < 8 && waited < 500) {
        usleep(1000);
        waited++;
    }
    /* The gathering wait (a whole second here) is not taken for a quiet log's line. */
    assert_int_equal(sink_len(&s), 8);
    assert_true(waited < 500);
    tly_logq_destroy(q);
    free(s.out.p);
}

/* A line longer than a buffer goes out whole, after the lines before it and before those after. */
static void test_long_line(void **state)
{
    (void)state;
    sinkbuf s;
    sink_init(&s);
    int err = 0;
    tly_logq *q = tly_logq_create(sink, &s, 8192, 2, &err);
    tly_logq_put(q, "t=0 i=0\n", 8);
    size_t n = 50000;
    char *big = malloc(n);
    memcpy(big, "t=0 i=1 ", 8);
    memset(big + 8, 'b', n - 9);
    big[n - 1] = '\n';
    tly_logq_put(q, big, n);
    tly_logq_put(q, "t=0 i=2\n", 8);
    tly_logq_destroy(q);
    check_lines(s.out.p, 1, 3);
    assert_int_equal(s.out.n, n + 16);
    free(big);
    free(s.out.p);
}

/* A slow sink and a small buffer: puts wait for room, nothing is lost or reordered. */
static void test_full_buffer_waits(void **state)
{
    (void)state;
    sinkbuf s;
    sink_init(&s);
    s.sleep_us = 2000;
    int err = 0;
    tly_logq *q = tly_logq_create(sink, &s, 8192, 2, &err);
    enum { THREADS = 3, LINES = 800 };
    pthread_t th[THREADS];
    putter p[THREADS];
    for (int t = 0; t < THREADS; t++) {
        p[t] = (putter){q, t, LINES};
        pthread_create(&th[t], NULL, put_lines, &p[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    tly_logq_destroy(q);
    check_lines(s.out.p, THREADS, LINES);
    free(s.out.p);
}

/* A failed write drops the lines it held; the next lines are written. */
static void test_failed_write_drops_only_its_lines(void **state)
{
    (void)state;
    sinkbuf s;
    sink_init(&s);
    s.fail_calls = 1;
    int err = 0;
    tly_logq *q = tly_logq_create(sink, &s, 64 * 1024, 0, &err);
    tly_logq_put(q, "t=0 i=0\n", 8);
    tly_logq_flush(q);
    assert_int_equal(sink_len(&s), 0);
    tly_logq_put(q, "t=0 i=1\n", 8);
    tly_logq_flush(q);
    assert_int_equal(sink_len(&s), 8);
    assert_memory_equal(s.out.p, "t=0 i=1\n", 8);
    tly_logq_destroy(q);
    tly_logq_destroy(NULL);
    free(s.out.p);
}

/* With no sink, write(2) on the descriptor given: a pipe gets the lines. */
static void test_descriptor_sink(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    int err = 0;
    tly_logq *q = tly_logq_create(NULL, (void *)(intptr_t)fds[1], 8192, 2, &err);
    tly_logq_put(q, "a=1\n", 4);
    tly_logq_put(q, "b=2\n", 4);
    tly_logq_destroy(q);
    close(fds[1]);
    char buf[16] = {0};
    assert_int_equal(read(fds[0], buf, sizeof buf), 8);
    assert_string_equal(buf, "a=1\nb=2\n");
    close(fds[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_threads_whole_lines_in_order),
        cmocka_unit_test(test_flush_writes_what_was_put),
        cmocka_unit_test(test_quiet_line_goes_out_at_once),
        cmocka_unit_test(test_long_line),
        cmocka_unit_test(test_full_buffer_waits),
        cmocka_unit_test(test_failed_write_drops_only_its_lines),
        cmocka_unit_test(test_descriptor_sink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
