/*
** test_resource.c: interned resource names and resource lists, the
** building blocks of every ledger and check.
*/
#include "testutil.h"

#include "tally/resource.h"

static tly_qty q(const char *s)
{
    tly_qty v;
    assert_int_equal(tly_qty_parse_str(s, &v), 0);
    return v;
}

static void test_fixed_names_have_fixed_ids(void **state)
{
    (void)state;
    tly_names *n = tly_names_create();
    assert_int_equal(tly_names_find(n, "cpu", 3), TLY_R_CPU);
    assert_int_equal(tly_names_find(n, "memory", 6), TLY_R_MEMORY);
    assert_int_equal(tly_names_find(n, "nvidia.com/gpu", 14), TLY_R_NVIDIA_GPU);
    assert_int_equal(tly_names_find(n, "runs", 4), TLY_R_RUNS);
    assert_string_equal(tly_names_str(n, TLY_R_PODS), "pods");
    tly_names_destroy(n);
}

static void test_interning_is_idempotent_and_dense(void **state)
{
    (void)state;
    tly_names *n = tly_names_create();
    uint32_t base = tly_names_count(n);
    uint32_t efa = tly_names_intern(n, "vpc.amazonaws.com/efa", 21);
    assert_int_equal(efa, base);
    assert_int_equal(tly_names_intern(n, "vpc.amazonaws.com/efa", 21), efa);
    assert_int_equal(tly_names_find(n, "vpc.amazonaws.com/efax", 22), TLY_NAME_NONE);
    /* Many names: the table grows and every id stays stable. */
    char buf[32];
    /* 70,000 ids fill chunks 0 to 10 (64, 128, ... entries): every boundary is crossed. */
    for (int i = 0; i < 70000; i++) {
        int len = snprintf(buf, sizeof buf, "example.com/r%d", i);
        assert_int_equal(tly_names_intern(n, buf, (size_t)len), base + 1 + (uint32_t)i);
    }
    assert_int_equal(tly_names_find(n, "example.com/r500", 16), base + 501);
    for (int i = 0; i < 70000; i += 61) {
        int len = snprintf(buf, sizeof buf, "example.com/r%d", i);
        assert_string_equal(tly_names_str(n, base + 1 + (uint32_t)i), buf);
        assert_int_equal(tly_names_find(n, buf, (size_t)len), base + 1 + (uint32_t)i);
    }
    assert_string_equal(tly_names_str(n, efa), "vpc.amazonaws.com/efa");
    tly_names_destroy(n);
}

static void test_rlist_set_keeps_ids_sorted(void **state)
{
    (void)state;
    tly_arena *a = tly_arena_create(0);
    tly_rlist l = {0};
    tly_rlist_set(&l, a, TLY_R_NVIDIA_GPU, q("2"));
    tly_rlist_set(&l, a, TLY_R_CPU, q("500m"));
    tly_rlist_set(&l, a, TLY_R_MEMORY, q("1Gi"));
    tly_rlist_set(&l, a, TLY_R_CPU, q("1"));
    assert_int_equal(l.n, 3);
    assert_int_equal(l.v[0].id, TLY_R_CPU);
    assert_int_equal(l.v[2].id, TLY_R_NVIDIA_GPU);
    bool found;
    assert_int_equal(tly_qty_cmp(tly_rlist_get(&l, TLY_R_CPU, &found), q("1")), 0);
    assert_true(found);
    tly_rlist_get(&l, TLY_R_PODS, &found);
    assert_false(found);
    tly_arena_destroy(a);
}

static void test_rlist_add_sub_max_merge_by_id(void **state)
{
    (void)state;
    tly_arena *ar = tly_arena_create(0);
    tly_rlist a = {0}, b = {0}, r;
    tly_rlist_set(&a, ar, TLY_R_CPU, q("1500m"));
    tly_rlist_set(&a, ar, TLY_R_MEMORY, q("1Gi"));
    tly_rlist_set(&b, ar, TLY_R_CPU, q("500m"));
    tly_rlist_set(&b, ar, TLY_R_NVIDIA_GPU, q("1"));

    assert_int_equal(tly_rlist_add(&a, &b, ar, &r), 0);
    assert_int_equal(r.n, 3);
    assert_int_equal(tly_qty_cmp(tly_rlist_get(&r, TLY_R_CPU, NULL), q("2")), 0);

    assert_int_equal(tly_rlist_sub(&a, &b, ar, &r), 0);
    assert_int_equal(tly_qty_cmp(tly_rlist_get(&r, TLY_R_CPU, NULL), q("1")), 0);
    assert_int_equal(tly_qty_cmp(tly_rlist_get(&r, TLY_R_NVIDIA_GPU, NULL), q("-1")), 0);

    tly_rlist_max(&a, &b, ar, &r);
    assert_int_equal(tly_qty_cmp(tly_rlist_get(&r, TLY_R_CPU, NULL), q("1500m")), 0);
    assert_int_equal(tly_qty_cmp(tly_rlist_get(&r, TLY_R_NVIDIA_GPU, NULL), q("1")), 0);
    assert_false(tly_rlist_equal(&a, &b));
    assert_true(tly_rlist_equal(&a, &a));
    tly_arena_destroy(ar);
}

static void test_rvec_fits_uses_usage_plus_request_le_capacity(void **state)
{
    (void)state;
    tly_arena *ar = tly_arena_create(0);
    tly_rlist cap = {0}, req = {0};
    tly_rlist_set(&cap, ar, TLY_R_RUNS, q("4"));
    tly_rlist_set(&cap, ar, 40, q("1"));
    tly_rlist_set(&req, ar, TLY_R_RUNS, q("1"));
    tly_rlist_set(&req, ar, 40, q("1"));

    tly_rvec use;
    tly_rvec_init(&use);
    uint32_t bad = 0;
    assert_true(tly_rvec_fits(&use, &req, &cap, &bad));
    assert_int_equal(tly_rvec_add_list(&use, &req), 0);
    /* Equality fits: 1 + 0 <= 1 held; now 1 + 1 > 1 does not. */
    assert_false(tly_rvec_fits(&use, &req, &cap, &bad));
    assert_int_equal(bad, 40);
    assert_int_equal(tly_rvec_sub_list(&use, &req), 0);
    assert_true(tly_rvec_fits(&use, &req, &cap, NULL));

    /* A resource the capacity does not name has capacity zero. */
    tly_rlist other = {0};
    tly_rlist_set(&other, ar, 41, q("1"));
    assert_false(tly_rvec_fits(&use, &other, &cap, &bad));
    assert_int_equal(bad, 41);
    /* Zero requests are ignored. */
    tly_rlist zero = {0};
    tly_rlist_set(&zero, ar, 41, q("0"));
    assert_true(tly_rvec_fits(&use, &zero, &cap, NULL));
    tly_rvec_free(&use);
    tly_arena_destroy(ar);
}

static void test_rvec_overflow_leaves_vector_unchanged(void **state)
{
    (void)state;
    tly_arena *ar = tly_arena_create(0);
    tly_rvec v;
    tly_rvec_init(&v);
    tly_qty big = {TLY_QTY_MAX_NANOS, TLY_QFMT_DECIMAL_SI};
    tly_rvec_set(&v, TLY_R_CPU, big);
    tly_rlist l = {0};
    tly_rlist_set(&l, ar, TLY_R_MEMORY, q("1"));
    tly_rlist_set(&l, ar, TLY_R_CPU, q("1n"));
    assert_int_equal(tly_rvec_add_list(&v, &l), -3 /* TLY_ERANGE */);
    assert_true(tly_qty_is_zero(tly_rvec_get(&v, TLY_R_MEMORY)));
    tly_rvec_free(&v);
    tly_arena_destroy(ar);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_names_have_fixed_ids),
        cmocka_unit_test(test_interning_is_idempotent_and_dense),
        cmocka_unit_test(test_rlist_set_keeps_ids_sorted),
        cmocka_unit_test(test_rlist_add_sub_max_merge_by_id),
        cmocka_unit_test(test_rvec_fits_uses_usage_plus_request_le_capacity),
        cmocka_unit_test(test_rvec_overflow_leaves_vector_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
