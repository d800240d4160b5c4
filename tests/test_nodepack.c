/*
** test_nodepack.c: trees packed and rebuilt (nodepack.h) are the trees put
** in, node for node: types, keys, texts, positions, flags, child counts.
*/
#include "testutil.h"

#include "tally/nodepack.h"

/* Node for node equality, positions and key hashes included. */
static void assert_same_tree(const tly_node *x, const tly_node *y)
{
    assert_int_equal(x->type, y->type);
    assert_int_equal(x->bval, y->bval);
    assert_int_equal(x->flags, y->flags);
    assert_int_equal(x->line, y->line);
    assert_int_equal(x->col, y->col);
    assert_int_equal(x->nkids, y->nkids);
    assert_int_equal(!x->key, !y->key);
    if (x->key) {
        assert_string_equal(x->key, y->key);
        assert_int_equal(x->kline, y->kline);
        assert_int_equal(x->kcol, y->kcol);
        assert_int_equal(y->khash, tly_key_hash(y->key, strlen(y->key)));
    }
    assert_int_equal(!x->str, !y->str);
    if (x->str) {
        assert_int_equal(x->len, y->len);
        assert_memory_equal(x->str, y->str, x->len);
        assert_int_equal(y->str[y->len], '\0');
    }
    const tly_node *a = x->kids, *b = y->kids;
    for (; a && b; a = a->next, b = b->next)
        assert_same_tree(a, b);
    assert_null(a);
    assert_null(b);
}

static void round_trip(tly_nodepack *p, const tly_node *t)
{
    tly_packed k = tly_nodepack_add(p, t);
    tly_arena *a = tly_arena_create(0);
    assert_same_tree(t, tly_nodepack_get(p, k, a));
    tly_arena_destroy(a);
}

static const char podgroup[] =
    "{\"apiVersion\":\"scheduling.run.ai/v2alpha2\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":"
    "\"pg-job-1\",\"namespace\":\"inference\"},\"spec\":{\"queue\":\"inference\",\"minMember\":1,"
    "\"subGroups\":[{\"name\":\"a\",\"minMember\":2},{\"name\":\"b\"}],\"on\":true,\"off\":false,"
    "\"none\":null,\"ratio\":0.5,\"empty\":{},\"list\":[]}}";

/* The JSON reader's trees (one line, then indented: positions on many lines). */
static void test_json_trees_round_trip(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(0);
    tly_nodepack *p = tly_nodepack_create();
    tly_node *t = tly_parse_value(podgroup, strlen(podgroup), a);
    assert_non_null(t);
    round_trip(p, t);
    const char *indented = "{\n  \"a\": {\n    \"b\": [\n      1,\n      \"x\\u00e9y\"\n    ]\n  },\n"
                           "  \"c\": \"\\n\\\"quoted\\\"\"\n}";
    t = tly_parse_value(indented, strlen(indented), a);
    assert_non_null(t);
    round_trip(p, t);
    tly_nodepack_destroy(p);
    tly_arena_destroy(a);
}

/*
** libfyaml's trees (its JSON mode; YAML files' trees go through the same
** pack in tests/cli/crd.sh, whose report gives every position).
*/
static void test_libfyaml_trees_round_trip(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(0);
    tly_nodepack *p = tly_nodepack_create();
    const char *text = "{\"kind\": \"Queue\",\n \"metadata\": {\"name\": \"q\",\n   \"labels\": {\"a\": \"1\"}},\n"
                       " \"spec\": {\"resources\": {\"gpu\": {\"quota\": 4, \"limit\": -1.5}},\n"
                       "   \"list\": [\"x\", {\"y\": null}, true]}}";
    tly_node *t = tly_parse_value_fy(text, strlen(text), a);
    assert_non_null(t);
    round_trip(p, t);
    tly_nodepack_destroy(p);
    tly_arena_destroy(a);
}

/*
** Trees no reader makes: positions that go back and jump far, a text with
** a NUL inside its length and one longer than a one-byte length, a key on
** another line than its value, nkids not the number linked, a scalar with
** a child, flags other than UNIQUE.
*/
static void test_odd_trees_round_trip(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(0);
    tly_nodepack *p = tly_nodepack_create();
    char longtext[300];
    memset(longtext, 'q', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = '\0';
    tly_node v1 = {.type = TLY_N_STRING, .line = 4000000000u, .col = 3, .kline = 1, .kcol = 4000000000u,
                   .str = "ab\0cd", .len = 5};
    tly_node_set_key(&v1, "k1", 2);
    tly_node v2 = {.type = TLY_N_INT, .line = 2, .col = 1, .kline = 2, .kcol = 0, .str = "12", .len = 2};
    tly_node_set_key(&v2, "k2", 2);
    tly_node v3 = {.type = TLY_N_STRING, .line = 0, .col = 0, .str = longtext, .len = sizeof longtext - 1};
    tly_node_set_key(&v3, "a key that is longer than sixteen bytes", 39);
    tly_node child = {.type = TLY_N_NULL, .line = 9, .col = 9};
    tly_node scalar = {.type = TLY_N_BOOL, .bval = true, .flags = 0x80, .line = 7, .col = 7, .kids = &child,
                       .nkids = 1};
    tly_node_set_key(&scalar, "s", 1);
    v1.next = &v2;
    v2.next = &v3;
    v3.next = &scalar;
    tly_node map = {.type = TLY_N_MAP, .flags = TLY_NF_UNIQUE, .line = 5, .col = 5, .kids = &v1, .nkids = 7};
    round_trip(p, &map);
    map.nkids = 4;
    round_trip(p, &map);
    tly_node empty = {.type = TLY_N_SEQ};
    round_trip(p, &empty);
    tly_nodepack_destroy(p);
    tly_arena_destroy(a);
}

static size_t count_nodes(const tly_node *n)
{
    size_t c = 1;
    for (const tly_node *k = n->kids; k; k = k->next)
        c += count_nodes(k);
    return c;
}

/*
** Each key is stored once: a packed copy of the PodGroup takes less than
** its one-line JSON and under a quarter of its tree's nodes alone, and the
** first copy still reads back after 999 more.
*/
static void test_keys_are_stored_once(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(0);
    tly_nodepack *p = tly_nodepack_create();
    tly_node *t = tly_parse_value(podgroup, strlen(podgroup), a);
    tly_packed first = tly_nodepack_add(p, t);
    size_t one = tly_nodepack_bytes(p);
    for (int i = 1; i < 1000; i++)
        tly_nodepack_add(p, t);
    size_t each = (tly_nodepack_bytes(p) - one) / 999;
    assert_true(each < one);
    assert_true(each < strlen(podgroup));
    assert_true(4 * each < count_nodes(t) * sizeof(tly_node));
    tly_arena *b = tly_arena_create(0);
    assert_same_tree(t, tly_nodepack_get(p, first, b));
    tly_arena_destroy(b);
    tly_nodepack_destroy(p);
    tly_arena_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_trees_round_trip),
        cmocka_unit_test(test_libfyaml_trees_round_trip),
        cmocka_unit_test(test_odd_trees_round_trip),
        cmocka_unit_test(test_keys_are_stored_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
