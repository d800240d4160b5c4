/*
** test_diag.c: diagnostics print in the contract's one-line form and sort
** by path, line, column, then the order they were found.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

static char *print_all(tly_diags *d)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tly_diags_print(f, d, TLY_SEV_WARNING);
    fclose(f);
    return buf;
}

static void test_line_has_contract_form(void **state)
{
    (void)state;
    tly_diags *d = tly_diags_create();
    tly_diags_add(d, TLY_SEV_ERROR, "q.yaml", 9, 5, "Queue", "team-a",
                  "spec.accountedResources[1].resourceRef", "duplicate resourceRef \"%s\"", "gpu");
    char *out = print_all(d);
    assert_string_equal(out, "q.yaml:9:5: error: Queue team-a: "
                             "spec.accountedResources[1].resourceRef: duplicate resourceRef "
                             "\"gpu\"\n");
    free(out);
    tly_diags_destroy(d);
}

static void test_missing_parts_print_as_dash(void **state)
{
    (void)state;
    tly_diags *d = tly_diags_create();
    tly_diags_add(d, TLY_SEV_ERROR, "bad.yaml", 3, 1, NULL, NULL, NULL, "syntax error: %s",
                  "oops\nsecond line");
    char *out = print_all(d);
    assert_string_equal(out, "bad.yaml:3:1: error: -: -: syntax error: oops second line\n");
    free(out);
    tly_diags_destroy(d);
}

static void test_sort_by_path_line_column_then_insertion(void **state)
{
    (void)state;
    tly_diags *d = tly_diags_create();
    tly_diags_add(d, TLY_SEV_ERROR, "b.yaml", 1, 1, NULL, NULL, NULL, "b");
    tly_diags_add(d, TLY_SEV_WARNING, "a.yaml", 10, 2, NULL, NULL, NULL, "a10");
    tly_diags_add(d, TLY_SEV_ERROR, "a.yaml", 2, 7, NULL, NULL, NULL, "a2-first");
    tly_diags_add(d, TLY_SEV_ERROR, "a.yaml", 2, 7, NULL, NULL, NULL, "a2-second");
    tly_diags_add(d, TLY_SEV_NOTE, "a.yaml", 1, 1, NULL, NULL, NULL, "note not printed");
    tly_diags_sort(d);
    char *out = print_all(d);
    assert_string_equal(out, "a.yaml:2:7: error: -: -: a2-first\n"
                             "a.yaml:2:7: error: -: -: a2-second\n"
                             "a.yaml:10:2: warning: -: -: a10\n"
                             "b.yaml:1:1: error: -: -: b\n");
    assert_int_equal(tly_diags_count_sev(d, TLY_SEV_ERROR), 3);
    free(out);
    tly_diags_destroy(d);
}

/* A decoder's error is dropped only where the CRD check (from index 2 on) says the same field. */
static void test_drop_restated_keeps_what_no_schema_says(void **state)
{
    (void)state;
    tly_diags *d = tly_diags_create();
    tly_diags_add(d, TLY_SEV_ERROR, "r.yaml", 6, 9, "Run", "ns/r", "spec.mode", "hand");
    tly_diags_add(d, TLY_SEV_ERROR, "r.yaml", 5, 12, "Run", "ns/r", "spec.runtime", "hand kept");
    tly_diags_add(d, TLY_SEV_ERROR, "r.yaml", 6, 3, "Run", "ns/r", "spec.mode", "crd");
    tly_diags_add(d, TLY_SEV_ERROR, "r.yaml", 9, 3, "Run", "ns/other", "spec.runtime", "crd other");
    tly_diags_drop_restated(d, 2);
    tly_diags_sort(d);
    char *out = print_all(d);
    assert_string_equal(out, "r.yaml:5:12: error: Run ns/r: spec.runtime: hand kept\n"
                             "r.yaml:6:3: error: Run ns/r: spec.mode: crd\n"
                             "r.yaml:9:3: error: Run ns/other: spec.runtime: crd other\n");
    free(out);
    tly_diags_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_has_contract_form),
        cmocka_unit_test(test_missing_parts_print_as_dash),
        cmocka_unit_test(test_sort_by_path_line_column_then_insertion),
        cmocka_unit_test(test_drop_restated_keeps_what_no_schema_says),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
