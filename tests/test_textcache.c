/*
** test_textcache.c: shared copies of repeated texts (textcache.h), and the
** store that uses them: equal texts decoded twice share one copy, every
** copy reads as its source, and nothing depends on a hit.
*/
#include "testutil.h"

#include "tally/textcache.h"

static void test_repeated_text_is_one_copy(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(0);
    tly_textcache *c = tly_textcache_create(a);
    char buf[] = "kai.scheduler/queue";
    const char *x = tly_textcache_get(c, buf, strlen(buf));
    assert_ptr_not_equal(x, buf);
    assert_string_equal(x, "kai.scheduler/queue");
    assert_ptr_equal(tly_textcache_get(c, "kai.scheduler/queue", 19), x);
    /* A prefix, or the same length with another byte, is another text. */
    const char *y = tly_textcache_get(c, "kai.scheduler/queue", 18);
    assert_string_equal(y, "kai.scheduler/queu");
    const char *z = tly_textcache_get(c, "kai.scheduler/queuf", 19);
    assert_string_equal(z, "kai.scheduler/queuf");
    assert_ptr_not_equal(z, x);
    /* A NUL inside the length is kept: the copy has every byte and a NUL after. */
    const char *nul = tly_textcache_get(c, "ab\0cd", 5);
    assert_memory_equal(nul, "ab\0cd", 6);
    assert_ptr_equal(tly_textcache_get(c, "ab\0cd", 5), nul);
    assert_ptr_not_equal(tly_textcache_get(c, "ab\0ce", 5), nul);
    /* Long texts are copied every time, correctly. */
    char big[600];
    memset(big, 'q', sizeof big);
    const char *b1 = tly_textcache_get(c, big, sizeof big), *b2 = tly_textcache_get(c, big, sizeof big);
    assert_memory_equal(b1, big, sizeof big);
    assert_int_equal(b1[sizeof big], '\0');
    assert_memory_equal(b2, big, sizeof big);
    tly_textcache_destroy(c);
    tly_arena_destroy(a);
}

/*
** Up to 16 bytes a hit is decided by the words tly_key_hash reads: texts of
** every length from 1 to 17 that differ in any one byte are told apart, and
** an equal text is the same copy.
*/
static void test_short_texts_differ_in_any_byte(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(0);
    tly_textcache *c = tly_textcache_create(a);
    const char *base = "abcdefghijklmnopq";
    for (size_t len = 1; len <= 17; len++) {
        const char *orig = tly_textcache_get(c, base, len);
        for (size_t at = 0; at < len; at++) {
            char t[32];
            memcpy(t, base, len);
            t[at] = 'Z';
            const char *x = tly_textcache_get(c, t, len);
            assert_memory_equal(x, t, len);
            assert_int_equal(x[len], '\0');
            const char *again = tly_textcache_get(c, base, len);
            assert_memory_equal(again, base, len);
            assert_int_equal(again[len], '\0');
        }
        assert_ptr_equal(tly_textcache_get(c, base, len), tly_textcache_get(c, base, len));
        (void)orig;
    }
    tly_textcache_destroy(c);
    tly_arena_destroy(a);
}

/* 20,000 distinct texts through 8,192 slots: each copy is its text, however slots are reused. */
static void test_evictions_never_mix_texts(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(0);
    tly_textcache *c = tly_textcache_create(a);
    const char *got[20000];
    char t[32];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 20000; i++) {
            int n = snprintf(t, sizeof t, "node-%05d", i);
            const char *x = tly_textcache_get(c, t, (size_t)n);
            assert_string_equal(x, t);
            if (round == 0)
                got[i] = x;
            else
                assert_string_equal(got[i], t);
        }
    tly_textcache_destroy(c);
    tly_arena_destroy(a);
}

/* A store shares the labels, namespaces and condition texts of its objects. */
static void test_store_shares_repeated_texts(void **state)
{
    (void)state;
    tly_store *s = load_text("pods.yaml",
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: team, labels: {app: web}}\n"
                             "spec: {nodeName: n1, containers: [{name: c}]}\n"
                             "status: {conditions: [{type: PodScheduled, status: \"True\"}]}\n"
                             "---\n"
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: team, labels: {app: web}}\n"
                             "spec: {nodeName: n1, containers: [{name: c}]}\n"
                             "status: {conditions: [{type: PodScheduled, status: \"True\"}]}\n");
    const tly_pod *a = tly_store_find(s, TLY_K_POD, "team", "a"), *b = tly_store_find(s, TLY_K_POD, "team", "b");
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_equal(a->meta.ns, b->meta.ns);
    assert_ptr_equal(a->meta.labels.v[0].key, b->meta.labels.v[0].key);
    assert_ptr_equal(a->meta.labels.v[0].val, b->meta.labels.v[0].val);
    assert_ptr_equal(a->node_name, b->node_name);
    assert_ptr_equal(a->conditions.v[0].type, b->conditions.v[0].type);
    assert_string_equal(a->conditions.v[0].status, "True");
    assert_ptr_not_equal(a->meta.name, b->meta.name);
    tly_store_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeated_text_is_one_copy),
        cmocka_unit_test(test_short_texts_differ_in_any_byte),
        cmocka_unit_test(test_evictions_never_mix_texts),
        cmocka_unit_test(test_store_shares_repeated_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
