/*
** test_ptree.c: the live state's persistent B-tree and epochs
** (src/live/ptree.h, src/live/epoch.h).
**
** Random puts and deletes are checked against a plain reference (and the
** tree's invariants: keys in order, fill bounds, counts, leaves at one
** depth); forks are taken at random moments, kept while the writer goes
** on, and checked to still hold exactly what they held when taken (under
** ASan a node or key freed too early is a use-after-free). Released forks
** let the writer reclaim; with none alive, nothing stays retired.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "live/epoch.h"
#include "live/ptree.h"

#define NKEYS 300

typedef struct {
    tly_ptree *root;
    uint64_t epoch;
    int present[NKEYS];   /* value + 1, or 0 */
} fork_copy;

static uint64_t rng_state = 12345;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

static void key_of(int i, char *buf) { snprintf(buf, 32, "ns-%02d\x1fpod-%04d", i % 17, i); }

/* Every key of ref in t with its value, and nothing else, in order. */
static void expect_equal(const tly_ptree *t, const int *ref)
{
    assert_true(tly_ptree_check(t));
    uint32_t n = 0;
    char key[32];
    for (int i = 0; i < NKEYS; i++) {
        key_of(i, key);
        void *v = tly_ptree_get(t, key);
        if (ref[i]) {
            assert_non_null(v);
            assert_int_equal((intptr_t)v, ref[i]);
            n++;
        } else {
            assert_null(v);
        }
    }
    assert_int_equal(tly_ptree_count(t), n);
    const char *prev = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const char *k;
        void *v;
        assert_true(tly_ptree_at(t, i, &k, &v));
        assert_ptr_equal(v, tly_ptree_get(t, k));
        if (prev)
            assert_true(strcmp(prev, k) < 0);
        prev = k;
    }
    assert_false(tly_ptree_at(t, n, NULL, NULL));
}

static void random_ops_with_forks(void **state)
{
    (void)state;
    tly_epochs e;
    tly_epochs_init(&e);
    tly_ptree *t = NULL;
    int ref[NKEYS] = {0};
    fork_copy forks[8];
    int nforks = 0;
    char key[32];
    for (int step = 0; step < 20000; step++) {
        int i = (int)(rnd() % NKEYS);
        key_of(i, key);
        void *old;
        if (rnd() % 3) {
            int v = step + 1;
            t = tly_ptree_put(&e, t, key, (void *)(intptr_t)v, &old);
            assert_int_equal((intptr_t)old, ref[i]);
            ref[i] = v;
        } else {
            t = tly_ptree_del(&e, t, key, &old);
            assert_int_equal((intptr_t)old, ref[i]);
            ref[i] = 0;
        }
        if (step % 97 == 0)
            expect_equal(t, ref);
        if (rnd() % 50 == 0 && nforks < 8) {
            fork_copy *f = &forks[nforks++];
            f->epoch = tly_epochs_fork(&e);
            f->root = t;
            memcpy(f->present, ref, sizeof ref);
        }
        if (nforks && rnd() % 40 == 0) {
            int k = (int)(rnd() % (uint32_t)nforks);
            expect_equal(forks[k].root, forks[k].present);
            tly_epochs_release(&e, forks[k].epoch);
            forks[k] = forks[--nforks];
        }
        if (step % 13 == 0)
            tly_epochs_reclaim(&e);
    }
    for (int k = 0; k < nforks; k++) {
        expect_equal(forks[k].root, forks[k].present);
        tly_epochs_release(&e, forks[k].epoch);
    }
    tly_epochs_reclaim(&e);
    assert_int_equal(tly_epochs_pending(&e), 0);
    expect_equal(t, ref);
    tly_ptree_free(&e, t);
    tly_epochs_reclaim(&e);
    tly_epochs_destroy(&e);
}

/* Keys of several shapes: shorter than the 8-byte prefix, equal to it, sharing it, and long. */
static void mixed_key(int i, char *buf)
{
    static const char *const fmt[] = {"%d", "k%06d", "ns-%02d\x1fp%d", "team-a\x1fworker-%05d-xyz"};
    snprintf(buf, 48, fmt[i % 4], i % 4 == 2 ? i % 7 : i, i);
}

static int count_each(void *ctx, const char *key, void *val)
{
    (void)key;
    (void)val;
    (*(uint32_t *)ctx)++;
    return 0;
}

/*
** Ascending, descending and interleaved runs split, lend and merge nodes
** at every level; the invariants hold after every single change.
*/
static void invariants_hold_through_splits_and_merges(void **state)
{
    (void)state;
    enum { N = 2000 };
    tly_epochs e;
    tly_epochs_init(&e);
    tly_ptree *t = NULL;
    char key[48];
    void *old;
    for (int i = 0; i < N; i++) {
        mixed_key(i, key);
        t = tly_ptree_put(&e, t, key, (void *)(intptr_t)(i + 1), &old);
        assert_null(old);
        assert_true(tly_ptree_check(t));
    }
    assert_int_equal(tly_ptree_count(t), N);
    for (int i = 0; i < N; i++) {
        mixed_key(i, key);
        assert_int_equal((intptr_t)tly_ptree_get(t, key), i + 1);
    }
    /* Every other key from the top down, then the rest from the bottom up. */
    for (int i = N - 1; i >= 0; i -= 2) {
        mixed_key(i, key);
        t = tly_ptree_del(&e, t, key, &old);
        assert_int_equal((intptr_t)old, i + 1);
        assert_true(tly_ptree_check(t));
    }
    uint32_t seen = 0;
    tly_ptree_each(t, count_each, &seen);
    assert_int_equal(seen, N / 2);
    assert_int_equal(tly_ptree_count(t), N / 2);
    for (int i = 0; i < N; i += 2) {
        mixed_key(i, key);
        t = tly_ptree_del(&e, t, key, &old);
        assert_int_equal((intptr_t)old, i + 1);
        assert_true(tly_ptree_check(t));
    }
    assert_null(t);
    tly_epochs_destroy(&e);
}

/* A fork, then one change in a tree of 10,000 keys: one node copied per level, no more. */
static void a_change_copies_one_path(void **state)
{
    (void)state;
    tly_epochs e;
    tly_epochs_init(&e);
    tly_ptree *t = NULL;
    char key[32];
    void *old;
    for (int i = 0; i < 10000; i++) {
        key_of(i, key);
        t = tly_ptree_put(&e, t, key, (void *)(intptr_t)(i + 1), &old);
    }
    size_t depth = 1;
    for (const tly_ptree *x = t; !x->leaf; x = x->p[0])
        depth++;
    assert_true(depth <= 5);
    uint64_t f = tly_epochs_fork(&e);
    tly_ptree *snap = t;
    key_of(5000, key);
    /* The value it has: nothing changes, nothing is copied. */
    assert_ptr_equal(tly_ptree_put(&e, t, key, (void *)5001, &old), t);
    assert_int_equal((intptr_t)old, 5001);
    assert_int_equal(tly_epochs_pending(&e), 0);
    t = tly_ptree_put(&e, t, key, (void *)7, &old);
    assert_int_equal(tly_epochs_pending(&e), depth);
    assert_int_equal((intptr_t)tly_ptree_get(snap, key), 5001);
    /* The same path again: born in this epoch now, changed in place. */
    t = tly_ptree_put(&e, t, key, (void *)8, &old);
    assert_int_equal(tly_epochs_pending(&e), depth);
    tly_epochs_release(&e, f);
    tly_epochs_reclaim(&e);
    assert_true(tly_ptree_check(t));
    tly_ptree_free(&e, t);
    tly_epochs_destroy(&e);
}

/* Ranges [lo, hi) against a filter of the whole, at bounds on and between keys. */
typedef struct {
    const char *lo, *hi;
    uint32_t n, inside;
    const char *prev;
} range_ctx;

static int in_range(void *ctx, const char *key, void *val)
{
    (void)val;
    range_ctx *r = ctx;
    r->inside += strcmp(key, r->lo) >= 0 && (!r->hi || strcmp(key, r->hi) < 0);
    return 0;
}

static int counted(void *ctx, const char *key, void *val)
{
    (void)val;
    range_ctx *r = ctx;
    assert_true(strcmp(key, r->lo) >= 0 && (!r->hi || strcmp(key, r->hi) < 0));
    if (r->prev)
        assert_true(strcmp(r->prev, key) < 0);
    r->prev = key;
    r->n++;
    return 0;
}

static void ranges_match_a_filter(void **state)
{
    (void)state;
    tly_epochs e;
    tly_epochs_init(&e);
    tly_ptree *t = NULL;
    char key[48], lo[48], hi[48];
    void *old;
    for (int i = 0; i < 1500; i += 1 + (int)(rnd() % 3)) {
        mixed_key(i, key);
        t = tly_ptree_put(&e, t, key, (void *)1, &old);
    }
    for (int round = 0; round < 300; round++) {
        mixed_key((int)(rnd() % 1600), lo);
        mixed_key((int)(rnd() % 1600), hi);
        if (round % 3 == 0)
            strcat(lo, "\x1f");   /* between keys */
        range_ctx want = {lo, round % 5 ? hi : NULL, 0, 0, NULL}, got = want;
        tly_ptree_each(t, in_range, &want);
        tly_ptree_range(t, lo, got.hi, counted, &got);
        assert_int_equal(got.n, want.inside);
    }
    tly_ptree_free(&e, t);
    tly_epochs_destroy(&e);
}

/* A fork pins what it sees; changes after it copy instead of writing in place. */
static void fork_is_frozen(void **state)
{
    (void)state;
    tly_epochs e;
    tly_epochs_init(&e);
    tly_ptree *t = NULL;
    void *old;
    t = tly_ptree_put(&e, t, "a", (void *)1, &old);
    t = tly_ptree_put(&e, t, "b", (void *)2, &old);
    uint64_t f = tly_epochs_fork(&e);
    tly_ptree *snap = t;
    t = tly_ptree_put(&e, t, "a", (void *)3, &old);
    t = tly_ptree_del(&e, t, "b", &old);
    assert_int_equal((intptr_t)tly_ptree_get(snap, "a"), 1);
    assert_int_equal((intptr_t)tly_ptree_get(snap, "b"), 2);
    assert_int_equal((intptr_t)tly_ptree_get(t, "a"), 3);
    assert_null(tly_ptree_get(t, "b"));
    tly_epochs_reclaim(&e);
    assert_true(tly_epochs_pending(&e) > 0);  /* the fork still holds the old nodes */
    tly_epochs_release(&e, f);
    tly_epochs_reclaim(&e);
    assert_int_equal(tly_epochs_pending(&e), 0);
    /* A missing key is no change at all. */
    tly_ptree *same = tly_ptree_del(&e, t, "zz", &old);
    assert_ptr_equal(same, t);
    assert_null(old);
    tly_ptree_free(&e, t);
    tly_epochs_destroy(&e);
}

/*
** Reclaimed nodes are reused: after a fork's release, the next copies take
** the nodes the fork pinned instead of new memory, and only nodes no fork
** can see are handed out (a fork taken before stays intact under ASan).
*/
static void reclaimed_nodes_are_reused(void **state)
{
    (void)state;
    tly_epochs e;
    tly_epochs_init(&e);
    tly_ptree *t = NULL;
    void *old;
    char key[32];
    for (int i = 0; i < 64; i++) {
        key_of(i, key);
        t = tly_ptree_put(&e, t, key, (void *)(intptr_t)(i + 1), &old);
    }
    size_t kept = 0;
    for (int c = 0; c < TLY_EPOCH_SPARE_CLASSES; c++)
        kept += e.spare[c].n;
    assert_int_equal(kept, 0);
    uint64_t f = tly_epochs_fork(&e);
    tly_ptree *snap = t;
    key_of(10, key);
    t = tly_ptree_put(&e, t, key, (void *)100, &old);   /* copies the path to key 10 */
    size_t copied = tly_epochs_pending(&e);
    assert_true(copied > 0);
    tly_epochs_release(&e, f);
    tly_epochs_reclaim(&e);
    for (int c = 0; c < TLY_EPOCH_SPARE_CLASSES; c++)
        kept += e.spare[c].n;
    assert_int_equal(kept, copied);   /* every pinned node is kept, none freed */
    /* The next fork and change take kept nodes: the stacks shrink, nothing new is kept. */
    uint64_t g = tly_epochs_fork(&e);
    tly_ptree *snap2 = t;
    key_of(40, key);
    t = tly_ptree_put(&e, t, key, (void *)400, &old);
    size_t after = 0;
    for (int c = 0; c < TLY_EPOCH_SPARE_CLASSES; c++)
        after += e.spare[c].n;
    assert_true(after < kept);
    assert_int_equal((intptr_t)tly_ptree_get(snap2, key), 41);
    assert_int_equal((intptr_t)tly_ptree_get(t, key), 400);
    key_of(10, key);
    assert_int_equal((intptr_t)tly_ptree_get(snap2, key), 100);
    (void)snap;
    assert_true(tly_ptree_check(t) && tly_ptree_check(snap2));
    tly_epochs_release(&e, g);
    tly_epochs_reclaim(&e);
    tly_ptree_free(&e, t);
    tly_epochs_destroy(&e);
}

/* Counts what the epochs free, and checks that they free in retiring order. */
typedef struct {
    int freed;
    int next;   /* the sequence number the next freed item must carry */
} free_log;

static void log_free(void *p, void *ctx)
{
    free_log *lg = ctx;
    assert_int_equal(*(int *)p, lg->next);
    lg->next++;
    lg->freed++;
    free(p);
}

static void retire_seq(tly_epochs *e, free_log *lg, int seq)
{
    int *p = malloc(sizeof *p);
    *p = seq;
    tly_epochs_retire(e, p, 0, log_free, lg);
}

/*
** The retired queue across many of its blocks: while a fork is alive
** nothing it may see is freed, however much piles up; releasing the older
** of two forks frees exactly what only it could see; everything is freed
** oldest first.
*/
static void retired_queue_spans_blocks(void **state)
{
    (void)state;
    tly_epochs e;
    tly_epochs_init(&e);
    free_log lg = {0, 0};
    uint64_t f1 = tly_epochs_fork(&e);
    int seq = 0;
    for (; seq < 5 * TLY_EPOCH_RET_BLOCK + 17; seq++)
        retire_seq(&e, &lg, seq);
    tly_epochs_reclaim(&e);
    assert_int_equal(lg.freed, 0);
    uint64_t f2 = tly_epochs_fork(&e);
    int before_f2 = seq;
    for (; seq < before_f2 + 3 * TLY_EPOCH_RET_BLOCK; seq++)
        retire_seq(&e, &lg, seq);
    assert_int_equal(tly_epochs_pending(&e), (size_t)seq);
    tly_epochs_release(&e, f1);
    tly_epochs_reclaim(&e);
    assert_int_equal(lg.freed, before_f2);   /* retired before f2: only f1 could see them */
    assert_int_equal(tly_epochs_pending(&e), (size_t)(seq - before_f2));
    tly_epochs_release(&e, f2);
    tly_epochs_reclaim(&e);
    assert_int_equal(lg.freed, seq);
    assert_int_equal(tly_epochs_pending(&e), 0);
    /* The queue works again after it emptied. */
    uint64_t f3 = tly_epochs_fork(&e);
    retire_seq(&e, &lg, seq++);
    tly_epochs_release(&e, f3);
    tly_epochs_reclaim(&e);
    assert_int_equal(lg.freed, seq);
    tly_epochs_destroy(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reclaimed_nodes_are_reused),
        cmocka_unit_test(random_ops_with_forks),
        cmocka_unit_test(invariants_hold_through_splits_and_merges),
        cmocka_unit_test(a_change_copies_one_path),
        cmocka_unit_test(ranges_match_a_filter),
        cmocka_unit_test(fork_is_frozen),
        cmocka_unit_test(retired_queue_spans_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
