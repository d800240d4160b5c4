/*
** resource.h: interned resource names and resource lists.
**
** Every resource name tally meets ("cpu", "nvidia.com/gpu", "runs",
** "vpc.amazonaws.com/efa") is interned once into a small integer id, so the
** ledgers and checks compare integers and index dense arrays instead of
** hashing strings. The first ids are fixed (TLY_R_*), so hot code can name
** cpu or memory without a lookup.
**
** Two shapes of list:
**  - tly_rlist, sparse: (id, quantity) pairs sorted by id. What an object
**    carries (a container's requests, a node's allocatable). Built in an arena.
**  - tly_rvec, dense: one quantity per id up to a length. What a ledger
**    carries (a node's usage, a queue's allocated), where every placement
**    adds and compares many resources.
** Both use exact tly_qty arithmetic (quantity.h); no floating point.
*/
#ifndef TALLY_RESOURCE_H
#define TALLY_RESOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/arena.h"
#include "tally/quantity.h"

/* Fixed ids, interned by tly_names_create() in this order. */
enum {
    TLY_R_CPU = 0,
    TLY_R_MEMORY,
    TLY_R_PODS,
    TLY_R_EPHEMERAL_STORAGE,
    TLY_R_NVIDIA_GPU,
    TLY_R_AMD_GPU,
    TLY_R_RUNS,
    TLY_R_FIXED_COUNT
};

#define TLY_NAME_NONE UINT32_MAX

typedef struct tly_names tly_names;

tly_names *tly_names_create(void);
/*
** A table one thread uses alone (a webhook worker's scratch): interning
** takes no lock, which was 16 lock and unlock pairs a review.
*/
tly_names *tly_names_create_private(void);
void tly_names_destroy(tly_names *n);
/*
** Forgets every name but the fixed ones, as if just created (the same ids
** come back in the same order): a webhook worker reuses one table for the
** pods of every review it decides. Not while another thread uses it.
*/
void tly_names_reset(tly_names *n);
/* The id of s[0..len), interning it if new. */
uint32_t tly_names_intern(tly_names *n, const char *s, size_t len);
/* The id of s[0..len), or TLY_NAME_NONE. */
uint32_t tly_names_find(const tly_names *n, const char *s, size_t len);
/* The name of an id (NUL-terminated, owned by the table). */
const char *tly_names_str(const tly_names *n, uint32_t id);
uint32_t tly_names_count(const tly_names *n);

typedef struct {
    uint32_t id;
    tly_qty q;
} tly_rq;

typedef struct {
    tly_rq *v;  /* sorted by id, no duplicate ids */
    uint32_t n;
} tly_rlist;

/* The quantity for id, or zero when absent. found (may be NULL) says which. */
tly_qty tly_rlist_get(const tly_rlist *l, uint32_t id, bool *found);
/*
** Sets id to q in l, keeping it sorted; the storage comes from arena a.
** Replaces an existing entry.
*/
void tly_rlist_set(tly_rlist *l, tly_arena *a, uint32_t id, tly_qty q);
/* out = a + b, a - b, max(a, b) per id (ids of either list). TLY_ERANGE on overflow. */
int tly_rlist_add(const tly_rlist *a, const tly_rlist *b, tly_arena *ar, tly_rlist *out);
int tly_rlist_sub(const tly_rlist *a, const tly_rlist *b, tly_arena *ar, tly_rlist *out);
void tly_rlist_max(const tly_rlist *a, const tly_rlist *b, tly_arena *ar, tly_rlist *out);
/*
** The same into v, which has room for a->n + b->n entries and overlaps
** neither operand: for lists built through several merges in scratch space,
** where only the final list is kept.
*/
int tly_rlist_add_into(const tly_rlist *a, const tly_rlist *b, tly_rq *v, tly_rlist *out);
void tly_rlist_max_into(const tly_rlist *a, const tly_rlist *b, tly_rq *v, tly_rlist *out);
/* Drops zero entries in place. */
void tly_rlist_compact(tly_rlist *l);
/* true when every id of a equals b's (absent counts as zero). */
bool tly_rlist_equal(const tly_rlist *a, const tly_rlist *b);

typedef struct {
    tly_qty *v;     /* v[id] */
    uint32_t n;     /* ids [0, n) present; ids >= n are zero */
    uint32_t cap;
} tly_rvec;

void tly_rvec_init(tly_rvec *v);
void tly_rvec_free(tly_rvec *v);
void tly_rvec_clear(tly_rvec *v);
tly_qty tly_rvec_get(const tly_rvec *v, uint32_t id);
void tly_rvec_set(tly_rvec *v, uint32_t id, tly_qty q);
/* v += l, v -= l. TLY_ERANGE on overflow (v unchanged). */
int tly_rvec_add_list(tly_rvec *v, const tly_rlist *l);
int tly_rvec_sub_list(tly_rvec *v, const tly_rlist *l);
/*
** Does request fit: for every id with a positive request,
** usage[id] + request[id] <= capacity[id]? On failure, *bad (may be NULL)
** is the first id that does not fit. A resource absent from capacity has
** capacity zero.
*/
bool tly_rvec_fits(const tly_rvec *usage, const tly_rlist *request,
                   const tly_rlist *capacity, uint32_t *bad);

#endif
