/*
** test_arena.c: region allocation: alignment, big allocations, reset.
*/
#include "testutil.h"

#include "tally/arena.h"

static void test_allocations_are_aligned_and_distinct(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(128);
    char *prev = NULL;
    for (int i = 1; i < 200; i++) {
        char *p = tly_arena_alloc(a, (size_t)i);
        assert_int_equal((uintptr_t)p % 16, 0);
        memset(p, 0xab, (size_t)i);
        assert_ptr_not_equal(p, prev);
        prev = p;
    }
    tly_arena_destroy(a);
}

static void test_large_allocation_gets_its_own_block(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(256);
    char *small = tly_arena_alloc(a, 16);
    char *big = tly_arena_zalloc(a, 10000);
    for (int i = 0; i < 10000; i++)
        assert_int_equal(big[i], 0);
    /* The small block still has room after the big one. */
    char *small2 = tly_arena_alloc(a, 16);
    assert_ptr_equal(small2, small + 16);
    assert_true(tly_arena_used(a) >= 10032);
    tly_arena_destroy(a);
}

static void test_reset_reuses_memory(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(1024);
    char *first = tly_arena_alloc(a, 100);
    for (int i = 0; i < 100; i++)
        tly_arena_alloc(a, 500);
    tly_arena_reset(a);
    assert_int_equal(tly_arena_used(a), 0);
    assert_int_equal(tly_arena_reserved(a), 1024);
    /* The oldest block is kept, so the next allocation lands where the first did. */
    assert_ptr_equal(tly_arena_alloc(a, 100), first);
    tly_arena_destroy(a);
}

/*
** Text comes from the other end of the block, unpadded: strings of 1 to 15
** bytes and aligned structs interleave without either overlapping, the
** structs stay 16-aligned, and a block holds exactly as much as both ask.
*/
static void test_text_is_packed_from_the_other_end(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(4096);
    char *s1 = tly_arena_strdup(a, "abc"), *s2 = tly_arena_strdup(a, "defgh");
    /* Unpadded: the second string lies just below the first (4 and 6 bytes). */
    assert_ptr_equal(s2 + 6, s1);
    char *p = tly_arena_alloc(a, 24);
    assert_int_equal((uintptr_t)p % 16, 0);
    char *s3 = tly_arena_strndup(a, "xyz123", 1);
    assert_ptr_equal(s3 + 2, s2);
    memset(p, 0x5a, 24);
    assert_string_equal(s1, "abc");
    assert_string_equal(s2, "defgh");
    assert_string_equal(s3, "x");
    assert_int_equal(tly_arena_used(a), 4 + 6 + 24 + 2);
    /* Fill the block from both ends: every byte is used before a new block is taken. */
    size_t reserved = tly_arena_reserved(a);
    size_t left = 4096 - 12 - 32;  /* the texts so far, the struct rounded to 16 */
    while (left >= 16 + 7) {
        tly_arena_alloc(a, 16);
        tly_arena_bytes(a, 7);
        left -= 23;
    }
    assert_int_equal(tly_arena_reserved(a), reserved);
    tly_arena_bytes(a, left);
    assert_int_equal(tly_arena_reserved(a), reserved);
    tly_arena_bytes(a, 1);
    assert_true(tly_arena_reserved(a) > reserved);
    tly_arena_destroy(a);
}

static void test_string_helpers(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(0);
    assert_string_equal(tly_arena_strndup(a, "abcdef", 3), "abc");
    assert_string_equal(tly_arena_strdup(a, ""), "");
    assert_string_equal(tly_arena_printf(a, "%s/%d", "ns", 7), "ns/7");
    tly_arena_destroy(a);
}

/* A pooled arena comes back reset, holding its first block; past max_kept arenas are freed. */
static void test_pool_reuses_arenas(void **state)
{
    (void)state;
    tly_arena_pool *p = tly_arena_pool_create(1024, 2);
    tly_arena *a = tly_arena_pool_get(p), *b = tly_arena_pool_get(p), *c = tly_arena_pool_get(p);
    void *first = tly_arena_alloc(a, 100);
    tly_arena_alloc(a, 1000);   /* a second block, freed by the reset */
    tly_arena_alloc(b, 10);
    tly_arena_pool_put(p, a);
    tly_arena_pool_put(p, b);
    tly_arena_pool_put(p, c);   /* a third: over max_kept, destroyed (ASan: no leak) */
    tly_arena *again = tly_arena_pool_get(p);
    assert_ptr_equal(again, b);  /* a stack: the last kept first */
    tly_arena *a2 = tly_arena_pool_get(p);
    assert_ptr_equal(a2, a);
    assert_int_equal(tly_arena_used(a2), 0);
    assert_int_equal(tly_arena_reserved(a2), 1024);
    assert_ptr_equal(tly_arena_alloc(a2, 100), first);
    tly_arena *fresh = tly_arena_pool_get(p);   /* the pool is empty now: a new arena */
    assert_int_equal(tly_arena_reserved(fresh), 0);
    tly_arena_pool_put(p, fresh);
    tly_arena_pool_put(p, again);
    tly_arena_pool_put(p, a2);  /* over max_kept again */
    tly_arena_pool_destroy(p);
}

/*
** An arena whose reset would keep a one-off block (its first allocation was
** larger than a block, or a one-off went behind its only block) is not kept.
*/
static void test_pool_drops_oversized_and_foreign(void **state)
{
    (void)state;
    tly_arena_pool *p = tly_arena_pool_create(1024, 4);
    tly_arena *big = tly_arena_pool_get(p);
    tly_arena_alloc(big, 5000);
    tly_arena_pool_put(p, big);
    tly_arena *behind = tly_arena_pool_get(p);
    tly_arena_alloc(behind, 10);
    tly_arena_alloc(behind, 3000);
    tly_arena_pool_put(p, behind);
    tly_arena *foreign = tly_arena_create(4096);
    tly_arena_pool_put(p, foreign);
    /* None was kept: the pool hands out a new arena, which has no block yet. */
    tly_arena *x = tly_arena_pool_get(p);
    assert_int_equal(tly_arena_reserved(x), 0);
    tly_arena_alloc(x, 10);
    assert_int_equal(tly_arena_reserved(x), 1024);
    tly_arena_pool_put(p, x);
    tly_arena_pool_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocations_are_aligned_and_distinct),
        cmocka_unit_test(test_large_allocation_gets_its_own_block),
        cmocka_unit_test(test_reset_reuses_memory),
        cmocka_unit_test(test_text_is_packed_from_the_other_end),
        cmocka_unit_test(test_string_helpers),
        cmocka_unit_test(test_pool_reuses_arenas),
        cmocka_unit_test(test_pool_drops_oversized_and_foreign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
