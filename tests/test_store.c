/*
** test_store.c: loading inputs into the state store, as contract section 2
** describes them: files, multi-document YAML, Lists, JSON, directories,
** duplicates, unknown kinds, and broken input that must not stop the rest.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tally/objects.h"

static const char *two_docs =
    "apiVersion: v1\n"
    "kind: Namespace\n"
    "metadata:\n"
    "  name: team-a\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Namespace\n"
    "metadata:\n"
    "  name: team-b\n";

static void test_multi_document_yaml_loads_every_document(void **state)
{
    (void)state;
    tly_store *s = load_text("ns.yaml", two_docs);
    assert_int_equal(tly_store_count(s, TLY_K_NAMESPACE), 2);
    assert_non_null(tly_store_find(s, TLY_K_NAMESPACE, NULL, "team-a"));
    assert_non_null(tly_store_find(s, TLY_K_NAMESPACE, NULL, "team-b"));
    assert_int_equal(tly_diags_count(tly_store_diags(s)), 0);
    tly_store_destroy(s);
}

static void test_list_items_are_objects(void **state)
{
    (void)state;
    tly_store *s = load_text("list.yaml",
                             "apiVersion: v1\n"
                             "kind: List\n"
                             "items:\n"
                             "- apiVersion: v1\n"
                             "  kind: Namespace\n"
                             "  metadata: {name: b}\n"
                             "- apiVersion: v1\n"
                             "  kind: Namespace\n"
                             "  metadata: {name: a}\n"
                             "metadata:\n"
                             "  resourceVersion: \"\"\n");
    assert_int_equal(tly_store_count(s, TLY_K_NAMESPACE), 2);
    /* Sorted by name once finished, whatever the input order. */
    tly_namespace *first = tly_store_at(s, TLY_K_NAMESPACE, 0);
    assert_string_equal(first->meta.name, "a");
    assert_int_equal(first->meta.src.line, 7);
    assert_int_equal(first->meta.src.col, 3);
    tly_store_destroy(s);
}

static void test_json_list_as_kubectl_prints_it(void **state)
{
    (void)state;
    /* kubectl puts "items" before "kind": the list is recognised anyway. */
    tly_store *s = load_text("pods.json",
                             "{\n"
                             "  \"apiVersion\": \"v1\",\n"
                             "  \"items\": [\n"
                             "    {\"apiVersion\": \"v1\", \"kind\": \"Namespace\",\n"
                             "     \"metadata\": {\"name\": \"x\", \"creationTimestamp\": "
                             "\"2026-11-20T10:00:00Z\"}}\n"
                             "  ],\n"
                             "  \"kind\": \"List\",\n"
                             "  \"metadata\": {\"resourceVersion\": \"\"}\n"
                             "}\n");
    assert_int_equal(tly_store_count(s, TLY_K_NAMESPACE), 1);
    tly_namespace *ns = tly_store_at(s, TLY_K_NAMESPACE, 0);
    assert_int_equal(ns->meta.created, 1795168800);
    assert_int_equal(tly_diags_count(tly_store_diags(s)), 0);
    tly_store_destroy(s);
}

static void test_unknown_kind_is_a_note_not_an_error(void **state)
{
    (void)state;
    tly_store *s = load_text("deploy.yaml",
                             "apiVersion: apps/v1\n"
                             "kind: Deployment\n"
                             "metadata: {name: web}\n");
    tly_diags *d = tly_store_diags(s);
    assert_int_equal(tly_diags_count(d), 1);
    assert_int_equal(tly_diags_get(d, 0)->sev, TLY_SEV_NOTE);
    assert_non_null(strstr(tly_diags_get(d, 0)->msg, "apps/v1 Deployment"));
    tly_store_destroy(s);
}

static void test_same_object_twice_later_wins_with_warning(void **state)
{
    (void)state;
    tly_store *s = load_text("dup.yaml",
                             "apiVersion: scheduling.k8s.io/v1\n"
                             "kind: PriorityClass\n"
                             "metadata: {name: train}\n"
                             "value: 50\n"
                             "---\n"
                             "apiVersion: scheduling.k8s.io/v1\n"
                             "kind: PriorityClass\n"
                             "metadata: {name: train}\n"
                             "value: 60\n");
    assert_int_equal(tly_store_count(s, TLY_K_PRIORITY_CLASS), 1);
    tly_priority_class *pc = tly_store_find(s, TLY_K_PRIORITY_CLASS, NULL, "train");
    assert_int_equal(pc->value, 60);
    const tly_diag *g = find_diag(s, "defined twice");
    assert_non_null(g);
    assert_int_equal(g->sev, TLY_SEV_WARNING);
    assert_int_equal(g->line, 6);
    tly_store_destroy(s);
}

/*
** Objects read out of order come out sorted by (namespace, name) in byte
** order, names past their first 16 bytes included, every one still found by
** name; a duplicate read after others replaces the first in its sorted
** place; pods on a node come by (namespace, name) too.
*/
static void test_sorted_by_namespace_and_name_and_found(void **state)
{
    (void)state;
    static const char *const pods[][3] = {
        /* namespace, name, node */
        {"b", "same-first-sixteen-bytes-z", "n2"}, {"a-b", "x", "n1"}, {"a", "x", "n2"},
        {"b", "same-first-sixteen-bytes-a", "n1"}, {"b", "same-first-sixteen", "n2"},
        {"a", "y\u00e9", "n1"}, {"a", "y", "n2"}, {"b", "same-first-sixteen-bytes", "n1"},
        {"a", "x", "n3"},  /* a duplicate: replaces the third */
    };
    tbuf b = {0};
    tbuf_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
    for (size_t i = 0; i < sizeof pods / sizeof *pods; i++) {
        char one[256];
        snprintf(one, sizeof one,
                 "%s{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"%s\","
                 "\"name\":\"%s\"},\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\"}]}}",
                 i ? "," : "", pods[i][0], pods[i][1], pods[i][2]);
        tbuf_puts(&b, one);
    }
    tbuf_puts(&b, "]}");
    tly_store *s = tly_store_create();
    tly_store_load_json(s, "pods.json", b.p, b.n);
    tly_store_finish(s);
    free(b.p);
    static const char *const want[][2] = {
        {"a", "x"}, {"a", "y"}, {"a", "y\xc3\xa9"}, {"a-b", "x"}, {"b", "same-first-sixteen"},
        {"b", "same-first-sixteen-bytes"}, {"b", "same-first-sixteen-bytes-a"}, {"b", "same-first-sixteen-bytes-z"},
    };
    uint32_t n = tly_store_count(s, TLY_K_POD);
    assert_int_equal(n, sizeof want / sizeof *want);
    for (uint32_t i = 0; i < n; i++) {
        const tly_pod *p = tly_store_at(s, TLY_K_POD, i);
        assert_string_equal(p->meta.ns, want[i][0]);
        assert_string_equal(p->meta.name, want[i][1]);
        assert_ptr_equal(tly_store_find(s, TLY_K_POD, want[i][0], want[i][1]), p);
    }
    const tly_pod *dup = tly_store_find(s, TLY_K_POD, "a", "x");
    assert_string_equal(dup->node_name, "n3");
    uint32_t k;
    tly_pod *const *on = tly_store_pods_on_node(s, "n1", &k);
    assert_int_equal(k, 4);
    static const char *const n1[] = {"y\xc3\xa9", "x", "same-first-sixteen-bytes", "same-first-sixteen-bytes-a"};
    for (uint32_t i = 0; i < k; i++)
        assert_string_equal(on[i]->meta.name, n1[i]);
    on = tly_store_pods_on_node(s, "n2", &k);
    assert_int_equal(k, 3);
    assert_string_equal(on[0]->meta.name, "y");
    assert_string_equal(on[2]->meta.name, "same-first-sixteen-bytes-z");
    tly_store_destroy(s);
}

/*
** Thousands of objects in a shuffled order, names sharing long prefixes and
** differing anywhere, over namespaces of different lengths: they come out in
** (namespace, name) strcmp order, and each is found by name.
*/
static void test_shuffled_objects_sort_like_strcmp(void **state)
{
    (void)state;
    tbuf b = {0};
    tbuf_puts(&b, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
    uint64_t x = 88172645463325252ull;  /* xorshift64: the same order every run */
    int n = 0;
    for (int i = 0; i < 3000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char ns[32], name[96], one[320];
        snprintf(ns, sizeof ns, "%.*s", (int)(1 + x % 5), "zz-a-b" + (x >> 8) % 3);
        /* a long shared prefix, then a letter, then digits: ties in the first 8 and 16 bytes */
        snprintf(name, sizeof name, "%s%c%llu", (x >> 20) % 2 ? "node-exporter-" : "p", (char)('a' + (x >> 24) % 26),
                 (unsigned long long)((x >> 32) % 1000));
        snprintf(one, sizeof one,
                 "%s{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\"},"
                 "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
                 n++ ? "," : "", ns, name);
        tbuf_puts(&b, one);
    }
    tbuf_puts(&b, "]}");
    tly_store *s = tly_store_create();
    tly_store_load_json(s, "pods.json", b.p, b.n);
    tly_store_finish(s);
    free(b.p);
    uint32_t count = tly_store_count(s, TLY_K_POD);
    assert_true(count > 1000);
    for (uint32_t i = 0; i < count; i++) {
        const tly_pod *p = tly_store_at(s, TLY_K_POD, i);
        assert_ptr_equal(tly_store_find(s, TLY_K_POD, p->meta.ns, p->meta.name), p);
        if (i == 0)
            continue;
        const tly_pod *q = tly_store_at(s, TLY_K_POD, i - 1);
        int c = strcmp(q->meta.ns, p->meta.ns);
        if (c > 0 || (c == 0 && strcmp(q->meta.name, p->meta.name) >= 0))
            fail_msg("%s/%s before %s/%s", q->meta.ns, q->meta.name, p->meta.ns, p->meta.name);
    }
    tly_store_destroy(s);
}

static void test_syntax_error_reports_position_and_next_document_loads(void **state)
{
    (void)state;
    tly_store *s = load_text("broken.yaml",
                             "apiVersion: v1\n"
                             "kind: Namespace\n"
                             "metadata: {name: good-1}\n"
                             "---\n"
                             "apiVersion: v1\n"
                             "kind: Namespace\n"
                             "metadata: {name: [unclosed\n"
                             "---\n"
                             "apiVersion: v1\n"
                             "kind: Namespace\n"
                             "metadata: {name: good-2}\n");
    assert_non_null(tly_store_find(s, TLY_K_NAMESPACE, NULL, "good-1"));
    assert_non_null(tly_store_find(s, TLY_K_NAMESPACE, NULL, "good-2"));
    tly_diags *d = tly_store_diags(s);
    assert_int_equal(tly_diags_count_sev(d, TLY_SEV_ERROR), 1);
    const tly_diag *g = find_diag(s, "syntax error");
    assert_non_null(g);
    /* The parser notices the unclosed "[" at the next document marker,
       which it reads as inside the sequence: line 8, column 1. */
    assert_int_equal(g->line, 8);
    assert_int_equal(g->col, 1);
    tly_store_destroy(s);
}

static void test_missing_name_skips_object_with_error(void **state)
{
    (void)state;
    tly_store *s = load_text("noname.yaml",
                             "apiVersion: v1\n"
                             "kind: Namespace\n"
                             "metadata:\n"
                             "  labels: {a: b}\n");
    assert_int_equal(tly_store_count(s, TLY_K_NAMESPACE), 0);
    const tly_diag *g = find_diag(s, "required field is missing");
    assert_non_null(g);
    assert_string_equal(g->field, "metadata.name");
    tly_store_destroy(s);
}

static void test_duplicate_key_and_alias_are_errors(void **state)
{
    (void)state;
    tly_store *s = load_text("keys.yaml",
                             "apiVersion: v1\n"
                             "kind: Namespace\n"
                             "metadata:\n"
                             "  name: a\n"
                             "  labels: &l {x: y}\n"
                             "  annotations: *l\n"
                             "  name: b\n");
    assert_non_null(find_diag(s, "duplicate key \"name\""));
    assert_non_null(find_diag(s, "aliases are not supported"));
    /* The later key wins, as with kubectl. */
    assert_non_null(tly_store_find(s, TLY_K_NAMESPACE, NULL, "b"));
    tly_store_destroy(s);
}

static void test_deep_nesting_is_bounded(void **state)
{
    (void)state;
    size_t depth = 200;
    char *text = malloc(depth * 2 + 128);
    char *p = text + sprintf(text, "apiVersion: v1\nkind: Namespace\nmetadata: {name: deep}\nx: ");
    for (size_t i = 0; i < depth; i++)
        *p++ = '[';
    for (size_t i = 0; i < depth; i++)
        *p++ = ']';
    strcpy(p, "\n");
    tly_store *s = load_text("deep.yaml", text);
    tly_diags *d = tly_store_diags(s);
    assert_true(tly_diags_count_sev(d, TLY_SEV_ERROR) >= 1);
    tly_store_destroy(s);
    free(text);
}

static void test_directory_walk_in_byte_order(void **state)
{
    (void)state;
    char dir[] = "/tmp/tally-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/b.yaml", dir);
    FILE *f = fopen(path, "w");
    fputs("apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {from: b}}\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/sub", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/sub/a.yml", dir);
    f = fopen(path, "w");
    fputs("apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {from: sub}}\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/ignored.txt", dir);
    f = fopen(path, "w");
    fputs("not yaml: [\n", f);
    fclose(f);

    tly_store *s = tly_store_create();
    assert_int_equal(tly_store_load_path(s, dir), 0);
    tly_store_finish(s);
    /* "b.yaml" < "sub/a.yml" in byte order, so sub's definition wins. */
    tly_namespace *ns = tly_store_find(s, TLY_K_NAMESPACE, NULL, "x");
    assert_string_equal(tly_kvs_get(&ns->meta.labels, "from"), "sub");
    tly_store_destroy(s);

    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(system(path), 0);
}

static void test_unreadable_path_is_an_error(void **state)
{
    (void)state;
    tly_store *s = tly_store_create();
    assert_int_equal(tly_store_load_path(s, "/nonexistent/tally.yaml"), 1);
    tly_store_finish(s);
    assert_non_null(find_diag(s, "does not exist"));
    tly_store_destroy(s);
}

static void test_namespaced_object_defaults_to_default_namespace(void **state)
{
    (void)state;
    tly_store *s = load_text("pg.yaml",
                             "apiVersion: scheduling.run.ai/v2alpha2\n"
                             "kind: PodGroup\n"
                             "metadata: {name: pg}\n"
                             "spec: {queue: q}\n");
    assert_non_null(tly_store_find(s, TLY_K_PODGROUP, "default", "pg"));
    tly_store_destroy(s);
}

/* fuzz/regressions/load-directive-bad-utf8-hang.yaml: libfyaml 0.7.12 loops
   forever on it; the loader must refuse it before the parser sees it. */
static void test_invalid_utf8_is_refused_not_hung(void **state)
{
    (void)state;
    tly_store *s = load_text("hang.yaml", "%\xba\n");
    const tly_diag *g = find_diag(s, "not valid UTF-8");
    assert_non_null(g);
    assert_int_equal(g->line, 1);
    assert_int_equal(g->col, 2);
    tly_store_destroy(s);
    /* Overlong and surrogate forms are invalid too; good multi-byte text is not. */
    s = load_text("overlong.yaml", "a: \xc0\xaf\n");
    assert_non_null(find_diag(s, "not valid UTF-8"));
    tly_store_destroy(s);
    s = load_text("surrogate.yaml", "a: \xed\xa0\x80\n");
    assert_non_null(find_diag(s, "not valid UTF-8"));
    tly_store_destroy(s);
    s = load_text("ok.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: "
                             "{team: \"\xc3\xa9quipe-\xf0\x9f\x9a\x80\"}}\n");
    assert_null(find_diag(s, "UTF-8"));
    assert_non_null(tly_store_find(s, TLY_K_NAMESPACE, NULL, "x"));
    tly_store_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multi_document_yaml_loads_every_document),
        cmocka_unit_test(test_list_items_are_objects),
        cmocka_unit_test(test_json_list_as_kubectl_prints_it),
        cmocka_unit_test(test_unknown_kind_is_a_note_not_an_error),
        cmocka_unit_test(test_same_object_twice_later_wins_with_warning),
        cmocka_unit_test(test_sorted_by_namespace_and_name_and_found),
        cmocka_unit_test(test_shuffled_objects_sort_like_strcmp),
        cmocka_unit_test(test_syntax_error_reports_position_and_next_document_loads),
        cmocka_unit_test(test_missing_name_skips_object_with_error),
        cmocka_unit_test(test_duplicate_key_and_alias_are_errors),
        cmocka_unit_test(test_deep_nesting_is_bounded),
        cmocka_unit_test(test_directory_walk_in_byte_order),
        cmocka_unit_test(test_unreadable_path_is_an_error),
        cmocka_unit_test(test_namespaced_object_defaults_to_default_namespace),
        cmocka_unit_test(test_invalid_utf8_is_refused_not_hung),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
