/*
** arena.h: region allocation for per-object, per-snapshot and per-request
** memory.
**
** An arena hands out memory from large blocks and frees it all at once with
** tly_arena_reset() or tly_arena_destroy(). Decoded objects, their strings
** and their resource lists live in the state store's arena; the YAML node
** tree of the object being decoded lives in a scratch arena that is reset
** after every object, so decoding a 100k-pod dump never holds more than one
** object's tree.
**
** Allocation failure is fatal (tally prints a message and exits): every
** caller would otherwise need an error path for a condition that, on the
** machines tally runs on, means the process is already lost.
*/
#ifndef TALLY_ARENA_H
#define TALLY_ARENA_H

#include <stdarg.h>
#include <stddef.h>

typedef struct tly_arena tly_arena;

tly_arena *tly_arena_create(size_t block_size);
void tly_arena_destroy(tly_arena *a);

/* Frees everything allocated so far but keeps the first block for reuse. */
void tly_arena_reset(tly_arena *a);

/* size bytes aligned for any type; never NULL. */
void *tly_arena_alloc(tly_arena *a, size_t size);
/* Same, zero-filled. */
void *tly_arena_zalloc(tly_arena *a, size_t size);
/*
** size bytes with no alignment, for text: taken from the other end of the
** block than aligned allocations, so a string costs its length and no
** padding. Never NULL. The string functions below use it.
*/
char *tly_arena_bytes(tly_arena *a, size_t size);
/* A NUL-terminated copy of s[0..len). */
char *tly_arena_strndup(tly_arena *a, const char *s, size_t len);
char *tly_arena_strdup(tly_arena *a, const char *s);
/*
** x, the character sep, then y, in the arena ("ns/name", "ns\x1fname"):
** what tly_arena_printf("%s/%s") gives, without printf (per object keys and
** names are made for every object read).
*/
char *tly_arena_join(tly_arena *a, const char *x, char sep, const char *y);
/* printf into the arena. */
char *tly_arena_printf(tly_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
** A pool of arenas that each live as long as one object, as the live
** state's decoded objects do: tly_arena_pool_put() resets an arena and keeps
** it (up to max_kept) instead of freeing it, and tly_arena_pool_get() hands a
** kept one out again. Without it every watch event cost two mallocs and two
** frees, and the block (larger than glibc's fast bins) made malloc merge its
** fast bins on every event. Safe to use from several threads.
*/
typedef struct tly_arena_pool tly_arena_pool;

tly_arena_pool *tly_arena_pool_create(size_t block_size, size_t max_kept);
/* Frees the pool and the arenas it keeps (not those handed out). */
void tly_arena_pool_destroy(tly_arena_pool *p);
/* An empty arena of the pool's block size; never NULL. */
tly_arena *tly_arena_pool_get(tly_arena_pool *p);
/* Takes a back; an arena of another block size, or one past max_kept, is destroyed. */
void tly_arena_pool_put(tly_arena_pool *p, tly_arena *a);

/* Bytes handed out and bytes reserved from the system (for benchmarks). */
size_t tly_arena_used(const tly_arena *a);
size_t tly_arena_reserved(const tly_arena *a);

/* Out-of-memory handler shared by every module: prints and exits(3). */
void tly_oom(void) __attribute__((noreturn));
/* malloc/calloc/realloc that never return NULL. */
void *tly_xmalloc(size_t n);
void *tly_xcalloc(size_t n, size_t size);
void *tly_xrealloc(void *p, size_t n);
char *tly_xstrdup(const char *s);
/* A new heap string formatted as printf would (free it); never NULL. */
char *tly_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *tly_xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
