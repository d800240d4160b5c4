/*
** test_keyindex.c: the live state's writer-only group -> members multimap
** (src/live/keyindex.h).
**
** Random adds and removes over few groups and many members (so the tables
** grow, collide and shift entries back on removal) are checked against a
** plain membership matrix after every step: every group's members, sorted,
** and the counts. Groups emptied must disappear. Many one-member groups
** check the groups table while a growth is being moved step by step.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "live/keyindex.h"

#define NGROUPS 23
#define NMEMBERS 400

static uint64_t rng_state = 777;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

static void group_of(int g, char *buf) { snprintf(buf, 32, "node-%03d", g); }
static void member_of(int m, char *buf) { snprintf(buf, 32, "ns-%02d\x1fpod-%04d", m % 13, m); }

/* The index holds exactly ref: members of each group sorted, groups counted. */
static void expect_equal(const tly_keyindex *ix, bool ref[NGROUPS][NMEMBERS])
{
    uint32_t groups = 0;
    uint64_t total = 0;
    char g[32], m[32];
    for (int i = 0; i < NGROUPS; i++) {
        group_of(i, g);
        const char **v;
        uint32_t n = tly_keyindex_members(ix, g, &v);
        uint32_t want = 0;
        for (int j = 0; j < NMEMBERS; j++) {
            member_of(j, m);
            assert_int_equal(tly_keyindex_has(ix, g, m), ref[i][j]);
            want += ref[i][j];
        }
        assert_int_equal(n, want);
        for (uint32_t k = 1; k < n; k++)
            assert_true(strcmp(v[k - 1], v[k]) < 0);
        for (uint32_t k = 0; k < n; k++) {
            int j = atoi(strstr(v[k], "pod-") + 4);
            assert_true(ref[i][j]);
        }
        free(v);
        groups += want > 0;
        total += want;
    }
    assert_int_equal(tly_keyindex_groups(ix), groups);
    assert_int_equal(tly_keyindex_size(ix), total);
}

static void test_random_changes(void **state)
{
    (void)state;
    static bool ref[NGROUPS][NMEMBERS];
    memset(ref, 0, sizeof ref);
    tly_keyindex *ix = tly_keyindex_new();
    char g[32], m[32];
    for (int step = 0; step < 20000; step++) {
        int i = (int)(rnd() % NGROUPS), j = (int)(rnd() % NMEMBERS);
        /* Phases: mostly adds, then mostly removes, so groups fill up and empty out. */
        bool add = (step / 5000) % 2 == 0 ? rnd() % 4 != 0 : rnd() % 4 == 0;
        group_of(i, g);
        member_of(j, m);
        if (add)
            tly_keyindex_add(ix, g, m);
        else
            tly_keyindex_del(ix, g, m);
        ref[i][j] = add;
        if (step % 997 == 0)
            expect_equal(ix, ref);
    }
    expect_equal(ix, ref);
    tly_keyindex_free(ix);
}

/*
** Many groups of one member, as PodGroups are: the groups table grows many
** times, and each growth moves its old array a few runs per add. Lookups,
** adds and removes in the middle of a move must all see one table: checked
** after every step for the group touched and a few others, and in full
** every 256 steps.
*/
#define BIGGROUPS 6000
static void test_growth_in_steps(void **state)
{
    (void)state;
    static bool ref[BIGGROUPS];
    memset(ref, 0, sizeof ref);
    tly_keyindex *ix = tly_keyindex_new();
    char g[32];
    uint32_t want = 0;
    for (int step = 0; step < 60000; step++) {
        int i = (int)(rnd() % BIGGROUPS);
        /* Grow in bursts of adds, with removes between (they shift runs ahead of the move). */
        bool add = (step / 7000) % 3 != 2 ? rnd() % 5 != 0 : rnd() % 5 == 0;
        snprintf(g, sizeof g, "pg-%05d", i);
        if (add)
            tly_keyindex_add(ix, g, "m");
        else
            tly_keyindex_del(ix, g, "m");
        want += add && !ref[i];
        want -= !add && ref[i];
        ref[i] = add;
        assert_int_equal(tly_keyindex_has(ix, g, "m"), add);
        for (int k = 0; k < 8; k++) {
            int o = (int)(rnd() % BIGGROUPS);
            snprintf(g, sizeof g, "pg-%05d", o);
            assert_int_equal(tly_keyindex_has(ix, g, "m"), ref[o]);
        }
        assert_int_equal(tly_keyindex_groups(ix), want);
        if (step % 256 == 0) {
            for (int o = 0; o < BIGGROUPS; o++) {
                snprintf(g, sizeof g, "pg-%05d", o);
                const char **v;
                assert_int_equal(tly_keyindex_members(ix, g, &v), ref[o]);
                free(v);
            }
        }
    }
    tly_keyindex_free(ix);
}

static void test_empty_group_goes(void **state)
{
    (void)state;
    tly_keyindex *ix = tly_keyindex_new();
    const char **v;
    assert_int_equal(tly_keyindex_members(ix, "node-a", &v), 0);
    assert_null(v);
    tly_keyindex_del(ix, "node-a", "ns\x1fp");   /* absent: nothing */
    tly_keyindex_add(ix, "node-a", "ns\x1fp");
    tly_keyindex_add(ix, "node-a", "ns\x1fp");   /* twice: once */
    assert_int_equal(tly_keyindex_size(ix), 1);
    tly_keyindex_del(ix, "node-b", "ns\x1fp");   /* another group: nothing */
    assert_int_equal(tly_keyindex_size(ix), 1);
    tly_keyindex_del(ix, "node-a", "ns\x1fp");
    assert_int_equal(tly_keyindex_groups(ix), 0);
    assert_int_equal(tly_keyindex_members(ix, "node-a", &v), 0);
    tly_keyindex_free(ix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_changes),
        cmocka_unit_test(test_growth_in_steps),
        cmocka_unit_test(test_empty_group_goes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
