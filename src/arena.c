/*
** arena.c: region allocation (see arena.h for why tally uses arenas).
**
** The arena is a singly linked list of blocks, newest first. An allocation
** that does not fit the current block starts a new one of the default size,
** or of exactly its own size when it is larger than that (so one huge
** string does not waste a block). Reset keeps the oldest block, which is
** the common case for the per-object scratch arena: after the first few
** objects it never calls malloc again.
**
** A block is filled from both ends: aligned allocations (structs, arrays)
** from the front, text (tly_arena_bytes: strings, keys, joined names) from
** the back, with no alignment. A decoded pod holds about 25 strings; rounded
** to 16 bytes each they cost 190 bytes a pod more than their text (12% of
** the store, measured on `tally-gen pods`), which the back end saves.
**
** Big arenas (a store's: blocks of 1 MiB or more) double their block size
** with each new block, up to TLY_ARENA_MAX_BLOCK, and take blocks of 2 MiB
** or more from pages.c, on huge pages: a 100,000-pod store then costs a
** few dozen page faults instead of tens of thousands (pages.h says why
** that matters). Small arenas keep their size and stay on malloc.
*/
#include "tally/arena.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pages.h"

#define ARENA_ALIGN 16

/* Arenas whose blocks start at this size grow them (see above). */
#define ARENA_GROWS ((size_t)1 << 20)
#define TLY_ARENA_MAX_BLOCK ((size_t)32 << 20)

struct block {
    struct block *next;
    size_t size;   /* usable bytes in data[] */
    size_t used;   /* data[0..used): aligned allocations */
    size_t tail;   /* data[tail..size): text; free space is data[used..tail) */
    size_t paged;  /* bytes mapped by tly_pages_alloc, or 0: malloc'd */
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

struct tly_arena {
    struct block *head;
    size_t block_size;  /* as created (the pool compares it) */
    size_t next_size;   /* of the next block */
    size_t used;        /* bytes handed out, for reporting */
    size_t reserved;    /* bytes of blocks */
};

void tly_oom(void)
{
    fputs("tally: out of memory\n", stderr);
    exit(3);
}

void *tly_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        tly_oom();
    return p;
}

void *tly_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        tly_oom();
    return p;
}

void *tly_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        tly_oom();
    return q;
}

char *tly_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = tly_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

/* A block of at least size usable bytes; b->size says how many it has. */
static struct block *block_new(size_t size)
{
    if (size > SIZE_MAX - sizeof(struct block) - TLY_PAGES_UNIT)
        tly_oom();
    size_t total = sizeof(struct block) + size;
    struct block *b;
    if (total >= TLY_PAGES_UNIT) {
        total = tly_pages_round(total);
        b = tly_pages_alloc(total);
        b->paged = total;
        size = total - sizeof(struct block);
    } else {
        b = tly_xmalloc(total);
        b->paged = 0;
    }
    b->next = NULL;
    b->size = size;
    b->used = 0;
    b->tail = size;
    return b;
}

static void block_free(struct block *b)
{
    if (b->paged)
        tly_pages_free(b, b->paged);
    else
        free(b);
}

tly_arena *tly_arena_create(size_t block_size)
{
    tly_arena *a = tly_xcalloc(1, sizeof *a);
    a->block_size = block_size ? block_size : 64 * 1024;
    a->next_size = a->block_size;
    return a;
}

void tly_arena_destroy(tly_arena *a)
{
    if (!a)
        return;
    struct block *b = a->head;
    while (b) {
        struct block *next = b->next;
        block_free(b);
        b = next;
    }
    free(a);
}

void tly_arena_reset(tly_arena *a)
{
    struct block *b = a->head, *keep = NULL;
    /* Keep the oldest block (the last in the list); free the rest. */
    while (b) {
        struct block *next = b->next;
        if (next == NULL)
            keep = b;
        else
            block_free(b);
        b = next;
    }
    a->head = keep;
    a->next_size = a->block_size;
    a->used = 0;
    a->reserved = 0;
    if (keep) {
        keep->used = 0;
        keep->tail = keep->size;
        keep->next = NULL;
        a->reserved = keep->size;
    }
}

/*
** A block with need bytes free: the current one, or a new one. A request
** larger than a regular block gets a block of its own, put behind the
** current block so that the current block's free space stays usable.
*/
static struct block *room(tly_arena *a, size_t need)
{
    struct block *b = a->head;
    if (b && b->tail - b->used >= need)
        return b;
    /* A growing arena's blocks are whole pieces of pages, header included. */
    size_t regular = a->next_size;
    if (regular >= ARENA_GROWS)
        regular -= sizeof(struct block);
    struct block *nb = block_new(need > regular ? need : regular);
    a->reserved += nb->size;
    if (need <= regular && a->block_size >= ARENA_GROWS && a->next_size < TLY_ARENA_MAX_BLOCK)
        a->next_size *= 2;
    if (b && need > regular) {
        nb->next = b->next;
        b->next = nb;
        return nb;
    }
    nb->next = b;
    a->head = nb;
    return nb;
}

void *tly_arena_alloc(tly_arena *a, size_t size)
{
    size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (need < size)
        tly_oom();
    struct block *b = room(a, need);
    void *p = b->data + b->used;
    b->used += need;
    a->used += size;
    return p;
}

char *tly_arena_bytes(tly_arena *a, size_t size)
{
    struct block *b = room(a, size);
    b->tail -= size;
    a->used += size;
    return (char *)b->data + b->tail;
}

void *tly_arena_zalloc(tly_arena *a, size_t size)
{
    void *p = tly_arena_alloc(a, size);
    memset(p, 0, size);
    return p;
}

char *tly_arena_strndup(tly_arena *a, const char *s, size_t len)
{
    if (len == SIZE_MAX)
        tly_oom();
    char *p = tly_arena_bytes(a, len + 1);
    if (len)
        memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *tly_arena_strdup(tly_arena *a, const char *s)
{
    return tly_arena_strndup(a, s, strlen(s));
}

char *tly_arena_join(tly_arena *a, const char *x, char sep, const char *y)
{
    size_t lx = strlen(x), ly = strlen(y);
    char *p = tly_arena_bytes(a, lx + ly + 2);
    memcpy(p, x, lx);
    p[lx] = sep;
    memcpy(p + lx + 1, y, ly + 1);
    return p;
}

char *tly_arena_printf(tly_arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    char *p = tly_arena_bytes(a, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

/*
** The pool is a stack of reset arenas under a mutex: the writer returns
** arenas while reflector threads take them, and the lock is held for a
** pointer push or pop only. A kept arena keeps its first block, so getting
** one is a pop and its first allocations call no malloc.
*/
struct tly_arena_pool {
    pthread_mutex_t mu;
    size_t block_size;
    size_t max_kept;
    size_t n;
    tly_arena **kept;
};

tly_arena_pool *tly_arena_pool_create(size_t block_size, size_t max_kept)
{
    tly_arena_pool *p = tly_xcalloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    p->block_size = block_size ? block_size : 64 * 1024;
    p->max_kept = max_kept;
    p->kept = tly_xcalloc(max_kept ? max_kept : 1, sizeof *p->kept);
    return p;
}

void tly_arena_pool_destroy(tly_arena_pool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        tly_arena_destroy(p->kept[i]);
    free(p->kept);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

tly_arena *tly_arena_pool_get(tly_arena_pool *p)
{
    tly_arena *a = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->n)
        a = p->kept[--p->n];
    pthread_mutex_unlock(&p->mu);
    return a ? a : tly_arena_create(p->block_size);
}

void tly_arena_pool_put(tly_arena_pool *p, tly_arena *a)
{
    if (!a)
        return;
    if (a->block_size != p->block_size) {
        tly_arena_destroy(a);
        return;
    }
    tly_arena_reset(a);
    /* Reset keeps the oldest block, which is a one-off's when the first
       allocation was larger than a block: such an arena is not kept. */
    pthread_mutex_lock(&p->mu);
    bool keep = p->n < p->max_kept && a->reserved <= p->block_size;
    if (keep)
        p->kept[p->n++] = a;
    pthread_mutex_unlock(&p->mu);
    if (!keep)
        tly_arena_destroy(a);
}

size_t tly_arena_used(const tly_arena *a) { return a->used; }
size_t tly_arena_reserved(const tly_arena *a) { return a->reserved; }

char *tly_xvasprintf(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        tly_oom();
    return s;
}

char *tly_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = tly_xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}
