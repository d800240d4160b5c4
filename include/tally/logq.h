/*
** logq.h: log lines handed to a writer thread, which writes them in batches
** (`tally serve` while it serves, issue 16).
**
** Why: the webhook logs a line per decision, and a write(2) per line cost
** about 3 microseconds of a 25-microsecond review on the benchmark's file
** (the two workers appending to one file take turns at its inode lock), and
** held the answer back until it was done. Now a worker copies its line into
** a ring under a mutex and goes on; the writer takes everything there after
** gathering for at most `gather_ms` and writes it: under load a hundred
** lines go out with one call.
**
** What stays: lines keep the order in which they were put, and go out whole
** (a batch is cut at line ends into writes of at most PIPE_BUF bytes, so
** lines never interleave with another writer's on a pipe; a longer line goes
** alone). A write that fails drops what it held, as a failed write(2) of a
** line did. A full ring makes put() wait for the writer (the back-pressure a
** blocking write gave). What changes: a line reaches the file up to
** gather_ms after it was made, and lines not yet written when the process is
** killed are lost; tly_logq_flush() and tly_logq_destroy() write everything
** put before them.
*/
#ifndef TALLY_LOGQ_H
#define TALLY_LOGQ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Where batches go: as write(2) (the count written, or -1). */
typedef ssize_t (*tly_logq_sink)(void *ctx, const char *buf, size_t n);

typedef struct tly_logq tly_logq;

/* A queue of `ring` bytes writing to sink (NULL: write(2) on fd ctx); NULL with *err set when no thread. */
tly_logq *tly_logq_create(tly_logq_sink sink, void *ctx, size_t ring, unsigned gather_ms, int *err);
/* Queues one whole line (its newline included). */
void tly_logq_put(tly_logq *q, const char *line, size_t n);
/* Returns once every line put before the call has been written (or dropped on an error). */
void tly_logq_flush(tly_logq *q);
/* Flushes, stops the thread, frees. NULL is a no-op. */
void tly_logq_destroy(tly_logq *q);
/*
** All of buf[0..n) to sink (NULL: write(2) on fd ctx), retrying on EINTR and
** short writes, with no thread: the writer's own loop, and the server's when
** it logs without one. false on an error.
*/
bool tly_logq_write_all(tly_logq_sink sink, void *ctx, const char *buf, size_t n);

#endif
