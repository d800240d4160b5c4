/*
** test_gang.c: when a PodGroup with subgroups may run (gang.c), on the
** shapes of KAI's min-subgroups and hierarchical-podgroup designs.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tally/gang.h"

/* A subgroup: name, parent index (-1: the PodGroup), minMember, minSubGroup (-1 unset). */
static tly_subgroup sg(const char *name, int32_t parent, int32_t min_member, int32_t min_subgroup)
{
    return (tly_subgroup){name, NULL, parent, min_member, min_subgroup, NULL};
}

static tly_podgroup pg_of(tly_subgroup *v, uint32_t n, int32_t min_member, int32_t min_subgroup)
{
    tly_podgroup pg;
    memset(&pg, 0, sizeof pg);
    pg.meta.name = "pg";
    pg.min_member = min_member;
    pg.min_subgroup = min_subgroup;
    pg.subgroups = v;
    pg.nsubgroups = n;
    return pg;
}

/* Four prefill replicas of 8 pods, 3 of 4 required (the design's first example). */
static void test_min_subgroup_allows_one_replica_short(void **state)
{
    (void)state;
    tly_subgroup v[4] = {sg("p0", -1, 8, -1), sg("p1", -1, 8, -1), sg("p2", -1, 8, -1), sg("p3", -1, 8, -1)};
    tly_podgroup pg = pg_of(v, 4, 1, 3);
    uint32_t count[4] = {8, 8, 8, 6};
    uint8_t keep[4];
    assert_true(tly_gang_satisfied(&pg, count, 30, keep, NULL));
    assert_true(keep[0] && keep[1] && keep[2]);
    assert_false(keep[3]);  /* below its own minimum: none of its pods runs */
    count[2] = 7;
    int32_t short_of = 99;
    assert_false(tly_gang_satisfied(&pg, count, 29, keep, &short_of));
    assert_int_equal(short_of, 2);  /* the first replica below its minimum */
    assert_false(keep[0]);
}

/* Without minSubGroup every subgroup is required, and minMember counts all pods. */
static void test_without_min_subgroup_every_subgroup_is_required(void **state)
{
    (void)state;
    tly_subgroup v[2] = {sg("a", -1, 2, -1), sg("b", -1, 1, -1)};
    tly_podgroup pg = pg_of(v, 2, 3, -1);
    uint32_t count[2] = {2, 0};
    int32_t short_of = -7;
    assert_false(tly_gang_satisfied(&pg, count, 2, NULL, &short_of));
    assert_int_equal(short_of, 1);
    count[1] = 1;
    assert_true(tly_gang_satisfied(&pg, count, 3, NULL, NULL));
    pg.min_member = 5;  /* more pods than the subgroups need in all */
    assert_false(tly_gang_satisfied(&pg, count, 3, NULL, &short_of));
    assert_int_equal(short_of, -1);
}

/* Two levels: decode and prefill each need their leaders and workers. */
static void test_two_levels_name_the_leaf_that_falls_short(void **state)
{
    (void)state;
    tly_subgroup v[6] = {sg("decode", -1, -1, 2), sg("decode-leaders", 0, 1, -1), sg("decode-workers", 0, 4, -1),
                         sg("prefill", -1, -1, -1), sg("prefill-leaders", 3, 1, -1), sg("prefill-workers", 3, 4, -1)};
    tly_podgroup pg = pg_of(v, 6, 1, 2);
    uint32_t count[6] = {0, 1, 4, 0, 1, 3};
    int32_t short_of = -1;
    uint8_t keep[6];
    assert_false(tly_gang_satisfied(&pg, count, 9, keep, &short_of));
    assert_int_equal(short_of, 5);
    count[5] = 4;
    assert_true(tly_gang_satisfied(&pg, count, 10, keep, NULL));
    for (int i = 0; i < 6; i++)
        assert_true(keep[i]);
}

/* A leaf of minMember 0 is optional: satisfied with no pods; its pods run when there is room. */
static void test_min_member_zero_is_optional(void **state)
{
    (void)state;
    tly_subgroup v[2] = {sg("core", -1, 2, -1), sg("extra", -1, 0, -1)};
    tly_podgroup pg = pg_of(v, 2, 1, -1);
    uint32_t count[2] = {2, 0};
    uint8_t keep[2];
    assert_true(tly_gang_satisfied(&pg, count, 2, keep, NULL));
    assert_true(keep[1]);
}

/* A mid-level subgroup that falls short takes its satisfied children with it. */
static void test_children_of_a_short_parent_do_not_run(void **state)
{
    (void)state;
    tly_subgroup v[4] = {sg("r0", -1, -1, -1), sg("r0-lead", 0, 1, -1), sg("r0-work", 0, 3, -1), sg("r1", -1, 2, -1)};
    tly_podgroup pg = pg_of(v, 4, 1, 1);
    uint32_t count[4] = {0, 1, 2, 2};
    uint8_t keep[4];
    assert_true(tly_gang_satisfied(&pg, count, 5, keep, NULL));
    assert_false(keep[1]);  /* r0-lead is satisfied, but r0 is not */
    assert_false(keep[2]);
    assert_true(keep[3]);
}

static void test_need_counts_what_is_running(void **state)
{
    (void)state;
    tly_subgroup v[2] = {sg("a", -1, 4, -1), sg("b", -1, -1, -1)};
    tly_podgroup pg = pg_of(v, 2, 1, -1);
    assert_int_equal(tly_gang_subgroup_need(&pg, 0, 1), 3);
    assert_int_equal(tly_gang_subgroup_need(&pg, 0, 6), 0);
    assert_int_equal(tly_gang_subgroup_need(&pg, 1, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_subgroup_allows_one_replica_short),
        cmocka_unit_test(test_without_min_subgroup_every_subgroup_is_required),
        cmocka_unit_test(test_two_levels_name_the_leaf_that_falls_short),
        cmocka_unit_test(test_min_member_zero_is_optional),
        cmocka_unit_test(test_children_of_a_short_parent_do_not_run),
        cmocka_unit_test(test_need_counts_what_is_running),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
