/*
** test_ptree.c: the live state's persistent treap and epochs
** (src/live/ptree.h, src/live/epoch.h).
**
** Random puts and deletes are checked against a plain sorted reference
** after every step; forks are taken at random moments, kept while the
** writer goes on, and checked to still hold exactly what they held when
** taken (under ASan a node freed too early is a use-after-free). Released
** forks let the writer reclaim; with none alive, nothing stays retired.
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
        const tly_ptree *x = tly_ptree_at(t, i);
        assert_non_null(x);
        if (prev)
            assert_true(strcmp(prev, x->key) < 0);
        prev = x->key;
    }
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

/* The same key set gives the same shape, whatever the order of events. */
static void shape_follows_key_set(void **state)
{
    (void)state;
    tly_epochs e;
    tly_epochs_init(&e);
    tly_ptree *a = NULL, *b = NULL;
    char key[32];
    void *old;
    for (int i = 0; i < 100; i++) {
        key_of(i, key);
        a = tly_ptree_put(&e, a, key, (void *)1, &old);
        key_of(99 - i, key);
        b = tly_ptree_put(&e, b, key, (void *)1, &old);
    }
    for (int i = 0; i < 100; i += 3) {
        key_of(i, key);
        a = tly_ptree_del(&e, a, key, &old);
    }
    for (int i = 99; i >= 0; i--) {
        if (i % 3 == 0) {
            key_of(i, key);
            b = tly_ptree_del(&e, b, key, &old);
        }
    }
    assert_int_equal(tly_ptree_count(a), tly_ptree_count(b));
    /* Same root key and same left-subtree sizes all the way down the left spine. */
    const tly_ptree *x = a, *y = b;
    while (x && y) {
        assert_string_equal(x->key, y->key);
        assert_int_equal(x->size, y->size);
        x = x->l;
        y = y->l;
    }
    assert_null(x);
    assert_null(y);
    tly_ptree_free(&e, a);
    tly_ptree_free(&e, b);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reclaimed_nodes_are_reused),
        cmocka_unit_test(random_ops_with_forks),
        cmocka_unit_test(shape_follows_key_set),
        cmocka_unit_test(fork_is_frozen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
