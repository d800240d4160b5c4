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

static void test_string_helpers(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(0);
    assert_string_equal(tly_arena_strndup(a, "abcdef", 3), "abc");
    assert_string_equal(tly_arena_strdup(a, ""), "");
    assert_string_equal(tly_arena_printf(a, "%s/%d", "ns", 7), "ns/7");
    tly_arena_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocations_are_aligned_and_distinct),
        cmocka_unit_test(test_large_allocation_gets_its_own_block),
        cmocka_unit_test(test_reset_reuses_memory),
        cmocka_unit_test(test_string_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
