/*
** test_cel.c: the CEL evaluator of CRD rules (src/cel.c), on the rule shapes
** kruntimes' and KAI's CRDs use: presence, sizes, string methods, macros,
** the ternary, and CEL's commutative && and ||; and on what it must refuse
** to decide (unknown functions, transition rules, broken syntax).
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tally/arena.h"
#include "tally/cel.h"

static const char *OBJ =
    "{\"spec\":{\"mode\":{\"task\":{\"entrypoint\":\"bin/run.sh\",\"args\":[\"a\",\"b\"]}},"
    "\"source\":{\"repoURL\":\"https://example.com/r.git\",\"inlinePath\":\"src/main.py\"},"
    "\"labelSelector\":{\"matchLabels\":{\"app\":\"x\"}},\"size\":3,\"ratio\":0.5,"
    "\"levels\":[{\"nodeLabel\":\"zone\"},{\"nodeLabel\":\"rack\"}],\"empty\":{}}}";

static tly_cel_result eval_on(const char *rule)
{
    tly_arena *a = tly_arena_create(4096);
    tly_node *self = tly_parse_value(OBJ, strlen(OBJ), a);
    assert_non_null(self);
    char why[256];
    tly_cel_result r = tly_cel_eval_rule(rule, self, why, sizeof why);
    tly_arena_destroy(a);
    return r;
}

static void holds(const char *rule) { assert_int_equal(eval_on(rule), TLY_CEL_TRUE); }
static void fails(const char *rule) { assert_int_equal(eval_on(rule), TLY_CEL_FALSE); }

static void test_presence_and_size(void **state)
{
    (void)state;
    holds("has(self.spec.source) && !has(self.spec.source.inline)");
    holds("has(self.spec.task) != has(self.spec.mode)");
    holds("has(self.spec.labelSelector) && ((has(self.spec.labelSelector.matchLabels) && "
          "size(self.spec.labelSelector.matchLabels) > 0) || (has(self.spec.labelSelector.matchExpressions)"
          " && size(self.spec.labelSelector.matchExpressions) > 0))");
    fails("size(self.spec.empty) > 0");
    holds("self.spec.mode.task.args.size() == 2 && size('héllo') == 5");
}

static void test_strings(void **state)
{
    (void)state;
    holds("!self.spec.mode.task.entrypoint.startsWith('/')");
    holds("!self.spec.mode.task.entrypoint.split('/').exists(s, s == '..')");
    fails("self.spec.source.inlinePath.split('/').all(seg, seg != 'main.py')");
    holds("self.spec.source.repoURL.endsWith('.git') && self.spec.source.repoURL.contains('example')");
    holds("self.spec.source.repoURL.matches('^https://')");
    holds("'a' + 'b' == 'ab' && 'B'.lowerAscii() == 'b'");
    holds("\"two\" < 'zero'");
}

static void test_numbers_lists_and_ternary(void **state)
{
    (void)state;
    holds("(has(self.spec.size) ? 1 : 0) + (has(self.spec.nothing) ? 1 : 0) == 1");
    holds("self.spec.size * 2 - 1 == 5 && self.spec.size % 2 == 1 && self.spec.ratio < 1.0");
    holds("self.spec.levels.map(l, l.nodeLabel) == ['zone', 'rack']");
    holds("self.spec.levels.filter(l, l.nodeLabel == 'rack').size() == 1");
    holds("self.spec.levels.exists_one(l, l.nodeLabel.startsWith('r'))");
    holds("'app' in self.spec.labelSelector.matchLabels && 'rack' in ['zone', 'rack']");
    holds("self.spec.labelSelector.matchLabels.all(k, k == 'app')");
}

static void test_errors_and_commutative_logic(void **state)
{
    (void)state;
    assert_int_equal(eval_on("self.spec.nothing == 1"), TLY_CEL_ERROR);   /* no such key */
    assert_int_equal(eval_on("self.spec.size + 'x' == 1"), TLY_CEL_ERROR); /* no such overload */
    holds("self.spec.nothing == 1 || true");
    fails("false && self.spec.nothing == 1");
    assert_int_equal(eval_on("self.spec.size"), TLY_CEL_ERROR);           /* not a bool */
    assert_int_equal(eval_on("9223372036854775807 + 1 > 0"), TLY_CEL_ERROR);
}

static void test_what_is_not_evaluated(void **state)
{
    (void)state;
    assert_int_equal(eval_on("quantity(self.spec.source.repoURL).isGreaterThan(quantity('1'))"),
                     TLY_CEL_UNSUPPORTED);
    assert_int_equal(eval_on("self == oldSelf"), TLY_CEL_UNSUPPORTED);
    assert_int_equal(eval_on("self.spec.size >"), TLY_CEL_UNSUPPORTED);
    assert_int_equal(eval_on("self.spec.mode.task.args.sortBy(x, x) == []"), TLY_CEL_UNSUPPORTED);
    /* an unknown function on the side that decides is not a pass */
    assert_int_equal(eval_on("true && isURL(self.spec.source.repoURL)"), TLY_CEL_UNSUPPORTED);
    /* fuzz_crdcel: a string ending in a backslash read past the rule's end */
    assert_int_equal(eval_on("'abc\\"), TLY_CEL_UNSUPPORTED);
    char deep[300];
    memset(deep, '(', 200);
    strcpy(deep + 200, "true");
    assert_int_equal(eval_on(deep), TLY_CEL_UNSUPPORTED);  /* nesting is bounded, not recursed into */
    /* a name that only contains oldSelf is not a transition rule */
    holds("has(self.spec.size) || self.spec.oldSelfish");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presence_and_size),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_numbers_lists_and_ternary),
        cmocka_unit_test(test_errors_and_commutative_logic),
        cmocka_unit_test(test_what_is_not_evaluated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
