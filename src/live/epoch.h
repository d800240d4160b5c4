/*
** epoch.h: versions of the live state, and when old memory may be freed.
**
** The live state has one writer (the thread that applies watch events) and
** any number of readers, each holding a fork: the state as it was when the
** fork was taken. Nothing a fork can reach is ever changed; the writer
** copies what it must change (path copying, ptree.h) and retires the old.
**
** Epochs make that cheap:
**   - the writer works in epoch `cur`; memory it creates is born in `cur`;
**   - taking a fork returns F = cur and moves the writer on to cur + 1, so
**     everything that existed when the fork was taken is born before the
**     writer's epoch: that is the test for "a fork may see this" (born <
**     cur), and memory born in cur may be changed in place;
**   - memory the writer replaces is retired in epoch R = cur: the forks that
**     may see it are those with F < R; once every fork alive has F >= R
**     (or none is alive) it is freed.
** Taking a fork costs a mutex and two increments; releasing one, a mutex.
** Reclamation runs on the writer's thread (tly_epochs_reclaim), never on a
** reader's, so a reader never waits behind freeing.
*/
#ifndef TALLY_LIVE_EPOCH_H
#define TALLY_LIVE_EPOCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
** Size classes of kept tree blocks: 16, 32, ... 512 bytes (a B-tree node,
** ptree.h, is 400 bytes; its keys are small blocks of their own).
*/
#define TLY_EPOCH_SPARE_CLASSES 32
/* Nodes kept per class, at most (bounds what a burst of deletions leaves behind). */
#define TLY_EPOCH_SPARE_MAX 16384

/*
** A stack of kept nodes of one class: an array of pointers, not a list
** threaded through the nodes, so keeping a node does not touch its memory
** (a retired node is long out of the cache).
*/
typedef struct {
    void **v;
    uint32_t n, cap;
} tly_spares;

typedef struct {
    void *p;
    void (*free_fn)(void *p, void *ctx);
    void *ctx;
    uint64_t epoch;       /* retired in */
} tly_retired;

/*
** The retired items, a queue of fixed blocks rather than one array: while a
** long fork (a simulate of the live state) is alive nothing is freed, and
** the realloc of one growing array held the writer's lock for milliseconds
** each time it doubled (4.7 ms at 100,000 pods). A block is 32 KiB, under
** glibc's mmap threshold, so taking and freeing one costs no system call.
*/
#define TLY_EPOCH_RET_BLOCK 1024
typedef struct tly_retblock {
    struct tly_retblock *next;
    uint32_t first, n;    /* items [first, n) are still retired */
    tly_retired r[TLY_EPOCH_RET_BLOCK];
} tly_retblock;

typedef struct {
    pthread_mutex_t mu;   /* guards the fork counts (cur is the writer's alone) */
    uint64_t cur;         /* the writer's epoch */
    /* Forks alive: (epoch, count), epochs increasing (forks are taken in order). */
    uint64_t *fork_epoch;
    uint32_t *fork_count;
    uint32_t nforks, capforks, first;
    /* Retired memory, epochs increasing, oldest block first; one empty block kept. */
    tly_retblock *rhead, *rtail, *rspare;
    size_t pending;
    uint64_t freed;       /* items freed so far (tests, metrics) */
    /*
    ** Tree nodes and keys freed here, kept for the writer's next copies
    ** (ptree.c), by size in 16-byte classes: a put copies a path of nodes
    ** and their originals come back a few events later, so reusing them
    ** saves a malloc and a free per node. The writer's alone, like `ret`.
    */
    tly_spares spare[TLY_EPOCH_SPARE_CLASSES];
} tly_epochs;

void tly_epochs_init(tly_epochs *e);
/* Frees everything still retired (no fork may be alive). */
void tly_epochs_destroy(tly_epochs *e);

/*
** The writer's epoch: memory born in it may be changed in place. An atomic
** load: the writer stamps decoded objects before it takes its lock, while
** a fork may be moving cur on. A stale (smaller) epoch there only means
** the object is copied rather than changed in place, which is safe.
** tly_epochs_retire must run under the writer's lock (live.c), where cur
** cannot move.
*/
static inline uint64_t tly_epochs_cur(const tly_epochs *e)
{
    return __atomic_load_n(&e->cur, __ATOMIC_ACQUIRE);
}

/* Called with the writer's lock held (live.c): F for a new fork. */
uint64_t tly_epochs_fork(tly_epochs *e);
/* A fork of epoch F is done (any thread). */
void tly_epochs_release(tly_epochs *e, uint64_t f);

/*
** The writer retires p (born in `born`): freed at once when born in the
** current epoch (no fork can see it), else when no fork older than now is
** alive.
*/
void tly_epochs_retire(tly_epochs *e, void *p, uint64_t born, void (*free_fn)(void *, void *),
                       void *ctx);
/* Frees what no fork alive can see (the writer, between events). */
void tly_epochs_reclaim(tly_epochs *e);
/* Retired items not yet freed. */
size_t tly_epochs_pending(const tly_epochs *e);

#endif
