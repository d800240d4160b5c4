/*
** test_cel.c: tally's CEL module (src/cel.c). In the rule environment, on
** the rule shapes kruntimes' and KAI's CRDs use: presence, sizes, string
** methods, macros, the ternary, CEL's commutative && and ||, Kubernetes'
** quantity and semver libraries, transition rules with oldSelf; and on what
** it must refuse to decide (unknown functions, broken syntax). In the device
** environment (DRA selectors), on a device's typed attributes and
** capacities, and on what placement must refuse with the column of it.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tally/arena.h"
#include "tally/cel.h"
#include "tally/error.h"

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
    assert_int_equal(eval_on("url(self.spec.source.repoURL).getScheme() == 'https'"), TLY_CEL_UNSUPPORTED);
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

static tly_cel_result eval_with_old(const char *rule, const char *self_json, const char *old_json)
{
    tly_arena *a = tly_arena_create(4096);
    tly_node *self = tly_parse_value(self_json, strlen(self_json), a);
    tly_node *old = old_json ? tly_parse_value(old_json, strlen(old_json), a) : NULL;
    const char *why;
    tly_cel_prog *p = tly_cel_compile(a, rule, TLY_CEL_ENV_RULE, &why);
    if (!p)
        fail_msg("%s: %s", rule, why);
    char buf[256];
    tly_cel_result r = tly_cel_eval_self(p, self, old, buf, sizeof buf);
    tly_arena_destroy(a);
    return r;
}

static void test_quantities_and_versions_in_rules(void **state)
{
    (void)state;
    holds("quantity('1.5Gi').isGreaterThan(quantity('1536Mi')) == false && quantity('1.5Gi') == quantity('1536Mi')");
    holds("quantity('500m').compareTo(quantity('1')) == -1 && quantity('2').compareTo(quantity('2000m')) == 0");
    holds("quantity('1k').isInteger() && quantity('1k').asInteger() == 1000 && !quantity('500m').isInteger()");
    holds("quantity('1').add(quantity('500m')) == quantity('1500m') && quantity('1').sub(2).sign() == -1");
    holds("isQuantity('4Gi') && !isQuantity('4GB') && !isQuantity(self.spec.source.repoURL)");
    /* an invalid quantity is CEL's runtime error, which the API server refuses */
    assert_int_equal(eval_on("quantity(self.spec.source.repoURL).isGreaterThan(quantity('1'))"), TLY_CEL_ERROR);
    /* exact: 2^63 - 1 nano-units apart from what a double would round to */
    holds("quantity('9223372036854775807').compareTo(quantity('9223372036854775806')) == 1");
    holds("semver('1.2.3').isLessThan(semver('1.10.0')) && semver('1.2.3').major() == 1 && semver('1.2.3').patch() == 3");
    holds("semver('1.0.0-alpha') < semver('1.0.0') || semver('1.0.0-alpha').isLessThan(semver('1.0.0'))");
    holds("semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta')) && "
          "semver('1.0.0-alpha.beta').isLessThan(semver('1.0.0-beta')) && "
          "semver('1.0.0-beta.2').isLessThan(semver('1.0.0-beta.11')) && "
          "semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))");
    holds("semver('1.2.3+build.1') == semver('1.2.3+build.2') && semver('1.2.3') != semver('1.2.4')");
    holds("isSemver('1.2.3') && !isSemver('v1.2') && !isSemver('01.2.3') && !isSemver('1.2.3-01') && "
          "isSemver('v1.2', true) && semver('01.02', true) == semver('1.2.0')");
    assert_int_equal(eval_on("semver('1.2') == semver('1.2.0')"), TLY_CEL_ERROR);
}

static void test_transition_rules(void **state)
{
    (void)state;
    const char *rule = "self.runtime == oldSelf.runtime && has(self.source) == has(oldSelf.source)";
    assert_int_equal(eval_with_old(rule, "{\"runtime\":\"py\"}", "{\"runtime\":\"py\"}"), TLY_CEL_TRUE);
    assert_int_equal(eval_with_old(rule, "{\"runtime\":\"go\"}", "{\"runtime\":\"py\"}"), TLY_CEL_FALSE);
    assert_int_equal(eval_with_old(rule, "{\"runtime\":\"py\",\"source\":{}}", "{\"runtime\":\"py\"}"),
                     TLY_CEL_FALSE);
    /* without an old value (a create) a transition rule is not evaluated */
    assert_int_equal(eval_with_old(rule, "{\"runtime\":\"py\"}", NULL), TLY_CEL_UNSUPPORTED);
    assert_int_equal(eval_with_old("self.map(l, l.k) == oldSelf.map(l, l.k)", "[{\"k\":\"a\"}]",
                                   "[{\"k\":\"a\"}]"), TLY_CEL_TRUE);
    assert_int_equal(eval_with_old("!has(oldSelf.cancel) || !oldSelf.cancel || self.cancel", "{\"cancel\":false}",
                                   "{\"cancel\":true}"), TLY_CEL_FALSE);
}

/* ---- the device environment ---- */

static tly_attr ATTRS[] = {
    {.name = "productName", .type = TLY_ATTR_STRING, .str = "H200"},
    {.name = "index", .type = TLY_ATTR_INT, .ival = 2},
    {.name = "mig", .type = TLY_ATTR_BOOL, .bval = true},
    {.name = "driverVersion", .type = TLY_ATTR_VERSION, .str = "550.54.15"},
    {.name = "cuda", .type = TLY_ATTR_VERSION, .str = "12.4"},
    {.name = "example.com/zone", .type = TLY_ATTR_STRING, .str = "a"},
};
static tly_capacity CAPS[1];
static tly_device DEV = {.name = "gpu-0", .attrs = ATTRS, .nattrs = 6, .capacity = CAPS, .ncapacity = 1};

/* 1 match, 0 no match, -1 refused (why in buf). */
static int dev_eval(const char *expr, char *buf, size_t len)
{
    tly_arena *a = tly_arena_create(4096);
    CAPS[0].name = "memory";
    assert_int_equal(tly_qty_parse_str("141Gi", &CAPS[0].value), TLY_OK);
    const char *why;
    tly_cel_prog *p = tly_cel_compile(a, expr, TLY_CEL_ENV_DEVICE, &why);
    int rc = -1;
    if (p)
        rc = tly_cel_eval_device(p, "gpu.nvidia.com", &DEV) == TLY_CEL_TRUE;
    else
        snprintf(buf, len, "%s", why);
    tly_arena_destroy(a);
    return rc;
}

static void matches(const char *expr, int want)
{
    char why[256] = "";
    int rc = dev_eval(expr, why, sizeof why);
    if (rc != want)
        fail_msg("%s: %d, want %d (%s)", expr, rc, want, why);
}

static void refused(const char *expr, const char *detail)
{
    char why[256] = "";
    if (dev_eval(expr, why, sizeof why) != -1)
        fail_msg("%s: evaluated", expr);
    if (!strstr(why, detail))
        fail_msg("%s: \"%s\" lacks \"%s\"", expr, why, detail);
}

static void test_device_selectors(void **state)
{
    (void)state;
    matches("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName == 'H200'", 1);
    matches("device.attributes['gpu.nvidia.com']['index'] >= 2 && device.attributes['gpu.nvidia.com'].mig", 1);
    matches("device.attributes['example.com'].zone == 'a' && device.attributes['gpu.nvidia.com'].zone == 'a'", 0);
    matches("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('140Gi')) > 0", 1);
    matches("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('141Gi'))", 0);
    /* versions are semantic: 550.54.15 > 550.9.0 though "54" < "9" as text */
    matches("device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.9.0'))", 1);
    matches("device.attributes['gpu.nvidia.com'].driverVersion.major() == 550", 1);
    matches("device.attributes['gpu.nvidia.com'].driverVersion == semver('550.54.15+b1')", 1);
    /* "12.4" is not a semantic version: an error, so no match, whatever the comparison */
    matches("device.attributes['gpu.nvidia.com'].cuda.compareTo(semver('12.0.0')) >= 0", 0);
    matches("device.attributes['gpu.nvidia.com'].cuda.compareTo(semver('12.0.0')) < 0", 0);
    matches("has(device.attributes['gpu.nvidia.com'].index) && !has(device.capacity['gpu.nvidia.com'].cores)", 1);
    matches("'memory' in device.capacity['gpu.nvidia.com'] && !('nope' in device.attributes['x.com'])", 1);
    /* a missing attribute is an error: absorbed by || true, no match otherwise */
    matches("device.attributes['gpu.nvidia.com'].nope == 1 || true", 1);
    matches("device.attributes['gpu.nvidia.com'].nope != 1", 0);
    /* a string attribute parsed per device */
    matches("quantity(device.attributes['gpu.nvidia.com'].productName).compareTo(quantity('1')) > 0", 0);
    /* what placement does not evaluate is refused, with the column */
    refused("device.attributes['gpu.nvidia.com'].productName.startsWith('H')",
            "method startsWith() is not supported here (column 49)");
    refused("device.driver == 1", "cannot compare string with int");
    refused("device.attributes['d'].n > 1.5", "double literals are not supported");
    refused("device.attributes['d'].v < semver('1.0.0')", "compare versions with .compareTo");
    refused("semver('1.0') == device.attributes['d'].v", "semver(\"1.0\") is not a valid semantic version (column 1)");
    refused("has(device.driver)", "has() takes a device attribute or capacity");
    refused("self.x == 1", "'self' is not supported");
    refused("device.attributes['d'].v.major()", "the expression is a int, not a boolean");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presence_and_size),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_numbers_lists_and_ternary),
        cmocka_unit_test(test_errors_and_commutative_logic),
        cmocka_unit_test(test_what_is_not_evaluated),
        cmocka_unit_test(test_quantities_and_versions_in_rules),
        cmocka_unit_test(test_transition_rules),
        cmocka_unit_test(test_device_selectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
