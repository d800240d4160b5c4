/*
** logq.c: the log writer thread (logq.h).
**
** Two buffers of `ring` bytes: puts fill one while the writer writes the
** other, and the writer swaps them when it takes a batch, so a put never
** waits for a write unless the filling buffer is full. Batches are counted
** (taken, done) so that flush() knows when what it saw has been written.
**
** Gathering adapts to the load: when the last batch was taken more than
** BUSY_MS ago, the first line of the next is written at once (a quiet
** server's line reaches the file as soon as the writer runs); when lines
** come faster than that, the writer waits up to gather_ms for more before it
** takes a batch. A filling buffer past half, a flush or the stop cut the
** wait short.
*/
#include "tally/logq.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tally/arena.h"

/* Lines closer together than this are a busy log, whose batches are worth gathering. */
#define BUSY_MS 20

struct tly_logq {
    pthread_mutex_t mu;
    pthread_cond_t more;   /* the writer waits here: lines, a flush, the stop */
    pthread_cond_t room;   /* puts and flushes wait here: a batch written */
    char *fill, *spare;    /* fill takes puts; the writer writes from spare */
    size_t len, cap;       /* bytes in fill; each buffer's size */
    uint64_t taken, done;  /* batches taken by the writer / written */
    bool idle;             /* the writer waits for a first line */
    bool urgent;           /* write without gathering (a flush, a filling buffer) */
    bool stopping;
    int64_t last_take_ms;  /* when the last batch was taken (monotonic) */
    unsigned gather_ms;
    tly_logq_sink sink;
    void *ctx;
    pthread_t thread;
};

bool tly_logq_write_all(tly_logq_sink sink, void *ctx, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = sink ? sink(ctx, buf, n) : write((int)(intptr_t)ctx, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        buf += w;
        n -= (size_t)w;
    }
    return true;
}

/*
** A batch in writes of whole lines, at most PIPE_BUF bytes each (a longer
** line alone): atomic on a pipe. A write that fails drops its lines only.
*/
static void write_batch(tly_logq *q, const char *buf, size_t n)
{
    while (n > 0) {
        size_t k = n;
        if (k > PIPE_BUF) {
            const char *nl = memrchr(buf, '\n', PIPE_BUF);
            if (nl) {
                k = (size_t)(nl - buf) + 1;
            } else {
                nl = memchr(buf + PIPE_BUF, '\n', n - PIPE_BUF);
                k = nl ? (size_t)(nl - buf) + 1 : n;
            }
        }
        (void)tly_logq_write_all(q->sink, q->ctx, buf, k);
        buf += k;
        n -= k;
    }
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The monotonic time ms from now, for a timed wait on `more`. */
static struct timespec after_ms(unsigned ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

/* Waits for a batch worth taking; false when stopping with nothing left. Lock held. */
static bool await_batch(tly_logq *q)
{
    while (!q->len && !q->stopping) {
        q->idle = true;
        pthread_cond_wait(&q->more, &q->mu);
        q->idle = false;
    }
    if (!q->len)
        return false;
    if (q->gather_ms && now_ms() - q->last_take_ms < BUSY_MS) {
        struct timespec until = after_ms(q->gather_ms);
        while (!q->urgent && !q->stopping && pthread_cond_timedwait(&q->more, &q->mu, &until) == 0)
            ;
    }
    return true;
}

static void *writer_main(void *arg)
{
    tly_logq *q = arg;
    pthread_mutex_lock(&q->mu);
    while (await_batch(q)) {
        char *batch = q->fill;
        size_t n = q->len;
        q->last_take_ms = now_ms();
        q->fill = q->spare;
        q->spare = batch;
        q->len = 0;
        q->urgent = false;
        q->taken++;
        pthread_mutex_unlock(&q->mu);
        write_batch(q, batch, n);
        pthread_mutex_lock(&q->mu);
        q->done = q->taken;
        pthread_cond_broadcast(&q->room);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Frees q, its buffers and its locks (the thread is gone or never started). */
static void release(tly_logq *q)
{
    pthread_cond_destroy(&q->more);
    pthread_cond_destroy(&q->room);
    pthread_mutex_destroy(&q->mu);
    free(q->fill);
    free(q->spare);
    free(q);
}

tly_logq *tly_logq_create(tly_logq_sink sink, void *ctx, size_t ring, unsigned gather_ms, int *err)
{
    tly_logq *q = tly_xcalloc(1, sizeof *q);
    q->cap = ring < 2 * PIPE_BUF ? 2 * PIPE_BUF : ring;
    q->fill = tly_xmalloc(q->cap);
    q->spare = tly_xmalloc(q->cap);
    q->sink = sink;
    q->ctx = ctx;
    q->gather_ms = gather_ms;
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->more, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&q->room, NULL);
    int rc = pthread_create(&q->thread, NULL, writer_main, q);
    if (rc != 0) {
        *err = rc;
        release(q);
        return NULL;
    }
    return q;
}

/* Waits until the writer has written everything taken or put so far. Lock held. */
static void drain_locked(tly_logq *q)
{
    uint64_t target = q->taken + (q->len ? 1 : 0);
    while (q->done < target) {
        q->urgent = true;
        pthread_cond_signal(&q->more);
        pthread_cond_wait(&q->room, &q->mu);
    }
}

void tly_logq_put(tly_logq *q, const char *line, size_t n)
{
    pthread_mutex_lock(&q->mu);
    if (n > q->cap) {
        /* Longer than a buffer: after everything before it, written here, the lock keeping others out. */
        drain_locked(q);
        write_batch(q, line, n);
        pthread_mutex_unlock(&q->mu);
        return;
    }
    while (q->len + n > q->cap) {
        q->urgent = true;
        pthread_cond_signal(&q->more);
        pthread_cond_wait(&q->room, &q->mu);
    }
    memcpy(q->fill + q->len, line, n);
    q->len += n;
    if (q->len > q->cap / 2)
        q->urgent = true;
    if (q->idle || q->urgent)
        pthread_cond_signal(&q->more);
    pthread_mutex_unlock(&q->mu);
}

void tly_logq_flush(tly_logq *q)
{
    pthread_mutex_lock(&q->mu);
    drain_locked(q);
    pthread_mutex_unlock(&q->mu);
}

void tly_logq_destroy(tly_logq *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stopping = true;
    pthread_cond_signal(&q->more);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    release(q);
}
