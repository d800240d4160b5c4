/*
** test_dra.c: specification tests for DRA allocation and accounting
** (src/dra.c, include/tally/dra.h).
**
** Expected values come from the rules, not from the code: issue 4's DRA
** bullet (claims by name or template, slices per node, device classes,
** allocated claims accounted from their results, unallocated ones allocated
** by exact count with the common CEL forms, anything else unsupported),
** Kubernetes' DRA semantics (ExactCount/All, devices held by another claim
** are not reused, attribute domain rule), kai-facts 3.6 (GPU class = name
** contains "gpu") and the AccountedResource seed (dra sources,
** match.dra.deviceAttributes, quantity.dra.selectedCapacity and
** opaqueConfigField, shared claims: one queue, charged once).
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tally/dra.h"
#include "tally/error.h"
#include "tally/podsched.h"
#include "tally/quantity.h"
#include "tally/queues.h"
#include "tally/store.h"
#include "testutil.h"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

static tly_store *S;
static tly_dra *D;
static tly_queues *QS;
static tly_dra_choice C, C2, C3;

static int setup(void **state)
{
    (void)state;
    tly_dra_choice_init(&C);
    tly_dra_choice_init(&C2);
    tly_dra_choice_init(&C3);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tly_dra_choice_free(&C);
    tly_dra_choice_free(&C2);
    tly_dra_choice_free(&C3);
    if (QS)
        tly_queues_destroy(QS);
    if (D)
        tly_dra_destroy(D);
    if (S)
        tly_store_destroy(S);
    QS = NULL;
    D = NULL;
    S = NULL;
    return 0;
}

static void load(const char *yaml)
{
    S = load_text("dra.yaml", yaml);
    /* The fixtures are valid: a decode error would hide what is tested. */
    if (tly_diags_count_sev(tly_store_diags(S), TLY_SEV_ERROR) > 0) {
        tly_diags_print(stderr, tly_store_diags(S), TLY_SEV_ERROR);
        fail_msg("fixture has decode errors");
    }
    D = tly_dra_create(S);
    QS = tly_queues_create(S);
    assert_non_null(D);
}

static const tly_pod *pod(const char *ns, const char *name)
{
    const tly_pod *p = tly_store_find(S, TLY_K_POD, ns, name);
    if (!p)
        fail_msg("pod %s/%s not found", ns, name);
    return p;
}

static tly_qty Q(const char *s)
{
    tly_qty q;
    if (tly_qty_parse_str(s, &q) != TLY_OK)
        fail_msg("bad quantity %s", s);
    return q;
}

static void assert_qty(tly_qty got, const char *want)
{
    if (tly_qty_cmp(got, Q(want)) != 0) {
        char buf[TLY_QTY_BUFSZ];
        tly_qty_format(got, buf, sizeof buf);
        fail_msg("quantity %s, want %s", buf, want);
    }
}

/* The chosen device names of a choice, "a,b,c". */
static const char *devnames(const tly_dra_choice *c)
{
    static char buf[512];
    buf[0] = '\0';
    for (uint32_t i = 0; i < c->ndevs; i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, c->devs[i].device);
    }
    return buf;
}

static uint32_t accres_index(const char *name)
{
    for (uint32_t a = 0; a < tly_queues_naccres(QS); a++)
        if (strcmp(tly_queues_accres(QS, a)->meta.name, name) == 0)
            return a;
    fail_msg("AccountedResource %s not found", name);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Fixtures                                                               */
/* ---------------------------------------------------------------------- */

/* DeviceClasses, v1 slices on node-1 (4 GPUs + NIC), a v1beta1 slice on node-2. */
#define CLUSTER \
    "apiVersion: resource.k8s.io/v1\n" \
    "kind: DeviceClass\n" \
    "metadata: {name: gpu.nvidia.com}\n" \
    "spec:\n" \
    "  selectors:\n" \
    "  - cel: {expression: 'device.driver == \"gpu.nvidia.com\"'}\n" \
    "---\n" \
    "apiVersion: resource.k8s.io/v1\n" \
    "kind: DeviceClass\n" \
    "metadata: {name: nic.example.com}\n" \
    "spec:\n" \
    "  selectors:\n" \
    "  - cel: {expression: 'device.driver == \"nic.example.com\"'}\n" \
    "---\n" \
    "apiVersion: resource.k8s.io/v1\n" \
    "kind: ResourceSlice\n" \
    "metadata: {name: node-1-gpu}\n" \
    "spec:\n" \
    "  driver: gpu.nvidia.com\n" \
    "  nodeName: node-1\n" \
    "  pool: {name: node-1, generation: 1, resourceSliceCount: 1}\n" \
    "  devices:\n" \
    "  - name: gpu-3\n" \
    "    attributes:\n" \
    "      productName: {string: GB200}\n" \
    "      index: {int: 3}\n" \
    "    capacity: {memory: {value: 80Gi}}\n" \
    "  - name: gpu-0\n" \
    "    attributes:\n" \
    "      productName: {string: GB200}\n" \
    "      index: {int: 0}\n" \
    "    capacity: {memory: {value: 80Gi}}\n" \
    "  - name: gpu-1\n" \
    "    attributes:\n" \
    "      productName: {string: GB200}\n" \
    "      index: {int: 1}\n" \
    "    capacity: {memory: {value: 80Gi}}\n" \
    "  - name: gpu-2\n" \
    "    attributes:\n" \
    "      productName: {string: H200}\n" \
    "      index: {int: 2}\n" \
    "    capacity: {memory: {value: 141Gi}}\n" \
    "---\n" \
    "apiVersion: resource.k8s.io/v1\n" \
    "kind: ResourceSlice\n" \
    "metadata: {name: node-1-nic}\n" \
    "spec:\n" \
    "  driver: nic.example.com\n" \
    "  nodeName: node-1\n" \
    "  pool: {name: node-1, generation: 1, resourceSliceCount: 1}\n" \
    "  devices:\n" \
    "  - name: nic-0\n" \
    "---\n" \
    "apiVersion: resource.k8s.io/v1beta1\n" \
    "kind: ResourceSlice\n" \
    "metadata: {name: node-2-gpu}\n" \
    "spec:\n" \
    "  driver: gpu.nvidia.com\n" \
    "  nodeName: node-2\n" \
    "  pool: {name: node-2, generation: 1, resourceSliceCount: 1}\n" \
    "  devices:\n" \
    "  - name: gpu-0\n" \
    "    basic:\n" \
    "      attributes:\n" \
    "        gpu.nvidia.com/productName: {string: H200}\n" \
    "      capacity: {memory: {value: 141Gi}}\n" \
    "  - name: gpu-1\n" \
    "    basic:\n" \
    "      attributes:\n" \
    "        gpu.nvidia.com/productName: {string: H200}\n" \
    "      capacity: {memory: {value: 141Gi}}\n" \
    "---\n"

/* A pending tally pod in namespace team using one claim by name or template. */
#define POD(name, queue, claimkey, claim)                                                        \
    "apiVersion: v1\nkind: Pod\n"                                                                \
    "metadata: {name: " name ", namespace: team, labels: {kai.scheduler/queue: " queue "}}\n"  \
    "spec:\n"                                                                                    \
    "  schedulerName: kai-scheduler\n"                                                           \
    "  containers: [{name: c, image: x}]\n"                                                      \
    "  resourceClaims:\n"                                                                        \
    "  - {name: dev, " claimkey ": " claim "}\n"                                                 \
    "---\n"

/* A v1 claim in namespace team with one `exactly` request. */
#define CLAIM(name, cls, extra)                                                                  \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"                                      \
    "metadata: {name: " name ", namespace: team}\n"                                              \
    "spec:\n"                                                                                    \
    "  devices:\n"                                                                               \
    "    requests:\n"                                                                            \
    "    - name: req\n"                                                                          \
    "      exactly:\n"                                                                           \
    "        deviceClassName: " cls "\n" extra "---\n"

/* A v1 ResourceClaimTemplate in namespace team with one request g; exactly is its body (a flow map). */
#define TEMPLATE(name, exactly)                                                                  \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\n"                              \
    "metadata: {name: " name ", namespace: team}\n"                                              \
    "spec:\n  spec:\n    devices:\n      requests:\n      - name: g\n"                          \
    "        exactly: " exactly "\n---\n"

/* ---------------------------------------------------------------------- */
/* CEL subset                                                             */
/* ---------------------------------------------------------------------- */

static tly_attr ATTRS[] = {
    {.name = "productName", .type = TLY_ATTR_STRING, .str = "H200"},
    {.name = "index", .type = TLY_ATTR_INT, .ival = 2},
    {.name = "mig", .type = TLY_ATTR_BOOL, .bval = false},
    {.name = "example.com/zone", .type = TLY_ATTR_STRING, .str = "a"},
    {.name = "driverVersion", .type = TLY_ATTR_VERSION, .str = "1.2.3"},
};
static tly_capacity CAPS[] = {{.name = "memory", .value = {0, 0}}};
static tly_device DEV = {.name = "gpu-0", .attrs = ATTRS, .nattrs = 5, .capacity = CAPS,
                         .ncapacity = 1};

static int ev(const char *expr)
{
    const char *why = NULL;
    int rc = tly_dra_cel_eval(D, expr, "gpu.nvidia.com", &DEV, &why);
    if (rc < 0)
        fail_msg("%s: %s", expr, why ? why : "(no reason)");
    return rc;
}

static void test_cel_forms(void **state)
{
    (void)state;
    load("");
    CAPS[0].value = Q("80Gi");
    /* device.driver */
    assert_int_equal(ev("device.driver == \"gpu.nvidia.com\""), 1);
    assert_int_equal(ev("device.driver == 'gpu.nvidia.com'"), 1);
    assert_int_equal(ev("device.driver != \"gpu.nvidia.com\""), 0);
    assert_int_equal(ev("\"gpu.nvidia.com\" == device.driver"), 1);
    /* string attributes: plain names are in the driver's domain */
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].productName == \"H200\""), 1);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"][\"productName\"] == \"H200\""), 1);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].productName != \"H200\""), 0);
    assert_int_equal(ev("device.attributes[\"other.com\"].productName == \"H200\""), 0);
    /* qualified names keep their own domain */
    assert_int_equal(ev("device.attributes[\"example.com\"].zone == \"a\""), 1);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].zone == \"a\""), 0);
    /* ints, every operator */
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].index == 2"), 1);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].index != 2"), 0);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].index < 3"), 1);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].index <= 1"), 0);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].index > -1"), 1);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].index >= 3"), 0);
    /* bools: compared and bare */
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].mig == false"), 1);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].mig == true"), 0);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].mig"), 0);
    assert_int_equal(ev("!device.attributes[\"gpu.nvidia.com\"].mig"), 1);
    /* capacity via compareTo, every operator against 0 */
    assert_int_equal(
        ev("device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0"), 1);
    assert_int_equal(
        ev("device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"80Gi\")) == 0"), 1);
    assert_int_equal(
        ev("device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"100Gi\")) >= 0"), 0);
    assert_int_equal(
        ev("device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"100Gi\")) < 0"), 1);
    assert_int_equal(
        ev("device.capacity[\"gpu.nvidia.com\"].memory.compareTo(quantity(\"80Gi\")) > 0"), 0);
    assert_int_equal(
        ev("device.capacity[\"gpu.nvidia.com\"].memory.isGreaterThan(quantity(\"79Gi\"))"), 1);
    assert_int_equal(
        ev("device.capacity[\"gpu.nvidia.com\"].memory.isLessThan(quantity(\"79Gi\"))"), 0);
    /* && || ! parentheses */
    assert_int_equal(ev("device.driver == \"gpu.nvidia.com\" && "
                        "device.attributes[\"gpu.nvidia.com\"].productName == \"H200\""),
                     1);
    assert_int_equal(ev("device.driver == \"x\" && device.attributes[\"gpu.nvidia.com\"].index == 2"),
                     0);
    assert_int_equal(ev("device.driver == \"x\" || device.attributes[\"gpu.nvidia.com\"].index == 2"),
                     1);
    assert_int_equal(ev("(device.driver == \"x\" || device.driver == \"gpu.nvidia.com\") && "
                        "!(device.attributes[\"gpu.nvidia.com\"].index > 5)"),
                     1);
    /* a missing attribute is an error, which means no match unless absorbed */
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].nope == \"x\""), 0);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].nope != \"x\""), 0);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].nope == \"x\" || true"), 1);
    assert_int_equal(ev("false && device.attributes[\"gpu.nvidia.com\"].nope == \"x\""), 0);
    /* guards with `in` */
    assert_int_equal(ev("\"productName\" in device.attributes[\"gpu.nvidia.com\"]"), 1);
    assert_int_equal(ev("\"nope\" in device.attributes[\"gpu.nvidia.com\"] && "
                        "device.attributes[\"gpu.nvidia.com\"].nope == 1"),
                     0);
    assert_int_equal(ev("\"memory\" in device.capacity[\"gpu.nvidia.com\"]"), 1);
    /* a string attribute compared with an int: different types are never equal */
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].productName == 1"), 0);
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].productName != 1"), 1);
    /* versions compare by text for equality */
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].driverVersion == "
                        "device.attributes[\"gpu.nvidia.com\"].driverVersion"),
                     1);
    /* and in semantic-version order, through Kubernetes' semver library */
    assert_int_equal(ev("device.attributes[\"gpu.nvidia.com\"].driverVersion.compareTo(semver(\"1.10.0\")) < 0"),
                     1);
    assert_int_equal(ev("device.attributes[\"d\"].v.compareTo(semver(\"1.0.0\")) >= 0"), 0);
    /* a device without attributes */
    assert_int_equal(tly_dra_cel_eval(D, "device.driver == \"a\"", "a", NULL, NULL), 1);
}

static void expect_unsupported(const char *expr, const char *detail)
{
    const char *why = NULL;
    int rc = tly_dra_cel_eval(D, expr, "gpu.nvidia.com", &DEV, &why);
    if (rc != -1)
        fail_msg("%s: accepted (%d)", expr, rc);
    assert_non_null(why);
    char want[512];
    snprintf(want, sizeof want, "unsupported CEL selector '%s': ", expr);
    if (strncmp(why, want, strlen(want)) != 0)
        fail_msg("message does not quote the expression: %s", why);
    if (!strstr(why, detail))
        fail_msg("message %s lacks \"%s\"", why, detail);
}

static void test_cel_unsupported(void **state)
{
    (void)state;
    load("");
    expect_unsupported("device.attributes[\"d\"].model.matches(\"^A\")", "matches");
    expect_unsupported("cel.bind(x, 1, x == 1)", "'cel' is not supported");
    expect_unsupported("device.driver", "not a boolean");
    expect_unsupported("device.driver == 1", "cannot compare string with int");
    expect_unsupported("device.attributes[\"d\"].n > 1.5", "double literals");
    expect_unsupported("device.attributes[\"d\"].n > 1u", "unsigned literals");
    expect_unsupported("size(device.attributes) > 0", "'size' is not supported");
    expect_unsupported("device.capacity[\"d\"].memory > 1", "compareTo");
    expect_unsupported("device.capacity[\"d\"].memory.compareTo(quantity(\"x1\")) > 0",
                       "not a valid quantity");
    expect_unsupported("device.allowMultipleAllocations", "device.allowMultipleAllocations");
    expect_unsupported("device.driver == \"a\" &&", "unexpected end");
    expect_unsupported("(device.driver == \"a\"", "expected ')'");
    expect_unsupported("device.driver.startsWith(\"a\")", "startsWith");
    expect_unsupported("device.attributes[\"d\"].mig == true ? 1 : 2", "unexpected '?");
    expect_unsupported("device.attributes[\"d\"].exists(x, x == 1)", "exists");
    expect_unsupported("true < false", "booleans have no order");
    /* Found by fuzz/fuzz_cel.c: escaped quotes longer than the first quote
       suggests, and a backslash at the very end, once read out of bounds. */
    expect_unsupported("'t\\'\\'at\\'*\\'\\'\\'at\\'\\'attrWt\\'\\'t\\'\\'atWt\\'\\'t\\'\\'",
                       "unterminated string literal");
    expect_unsupported("device.driver == \"abc\\", "unterminated string literal");
}

/* A claim whose selector is unsupported makes the pod -1 with the expression quoted. */
static void test_unsupported_claim_and_class(void **state)
{
    (void)state;
    load(CLUSTER
         CLAIM("bad", "gpu.nvidia.com",
               "        selectors:\n"
               "        - cel: {expression: 'device.attributes[\"gpu.nvidia.com\"].productName.startsWith(\"G\")'}\n")
         POD("p-bad", "team-a", "resourceClaimName", "bad")
         "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\n"
         "metadata: {name: odd}\n"
         "spec:\n  selectors:\n  - cel: {expression: 'device.driver in [\"a\"]'}\n---\n"
         CLAIM("odd-claim", "odd", "")
         POD("p-odd", "team-a", "resourceClaimName", "odd-claim")
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
         "metadata: {name: fa, namespace: team}\n"
         "spec:\n  devices:\n    requests:\n    - name: r\n      firstAvailable:\n"
         "      - {name: a, deviceClassName: gpu.nvidia.com}\n"
         "      - name: b\n        deviceClassName: gpu.nvidia.com\n        selectors:\n"
         "        - cel: {expression: 'device.attributes[\"gpu.nvidia.com\"].productName.startsWith(\"G\")'}\n"
         "---\n"
         POD("p-fa", "team-a", "resourceClaimName", "fa")
         CLAIM("nocls", "no-such-class", "")
         POD("p-nocls", "team-a", "resourceClaimName", "nocls")
         POD("p-noclaim", "team-a", "resourceClaimName", "missing"));
    const char *why = NULL;
    assert_int_equal(tly_dra_try(D, pod("team", "p-bad"), "node-1", "team-a", &C, &why), -1);
    assert_non_null(why);
    assert_non_null(strstr(why, "ResourceClaim team/bad request req: unsupported CEL selector "
                                "'device.attributes[\"gpu.nvidia.com\"].productName.startsWith(\"G\")': "
                                "method startsWith() is not supported here (column 49)"));
    assert_int_equal(tly_dra_try(D, pod("team", "p-odd"), "node-1", "team-a", &C, &why), -1);
    assert_non_null(strstr(why, "DeviceClass odd: unsupported CEL selector 'device.driver in [\"a\"]'"));
    /* Any subrequest tally cannot evaluate makes the request unsupported (an earlier
       one might fail at run time, and the later one would then decide). */
    assert_int_equal(tly_dra_try(D, pod("team", "p-fa"), "node-1", "team-a", &C, &why), -1);
    assert_non_null(strstr(why, "ResourceClaim team/fa request r/b: unsupported CEL selector"));
    assert_int_equal(tly_dra_try(D, pod("team", "p-nocls"), "node-1", "team-a", &C, &why), 0);
    assert_string_equal(why, "DeviceClass no-such-class of ResourceClaim team/nocls does not exist");
    assert_int_equal(tly_dra_try(D, pod("team", "p-noclaim"), "node-1", "team-a", &C, &why), 0);
    assert_string_equal(why, "ResourceClaim team/missing does not exist");
}

/* ---------------------------------------------------------------------- */
/* Allocation                                                             */
/* ---------------------------------------------------------------------- */

static void test_v1_and_v1beta1(void **state)
{
    (void)state;
    load(CLUSTER
         CLAIM("two", "gpu.nvidia.com", "        count: 2\n")
         POD("p-two", "team-a", "resourceClaimName", "two")
         "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\n"
         "metadata: {name: h200, namespace: team}\n"
         "spec:\n  devices:\n    requests:\n    - name: gpu\n"
         "      deviceClassName: gpu.nvidia.com\n"
         "      selectors:\n"
         "      - cel: {expression: 'device.attributes[\"gpu.nvidia.com\"].productName == \"H200\"'}\n"
         "---\n"
         POD("p-h200", "team-a", "resourceClaimName", "h200"));
    const char *why = NULL;
    /* v1 claim, v1 slice: lowest (slice, device) names first */
    assert_int_equal(tly_dra_try(D, pod("team", "p-two"), "node-1", "team-a", &C, &why), 1);
    assert_null(why);
    assert_int_equal(C.nclaims, 1);
    assert_string_equal(C.claims[0].name, "two");
    assert_false(C.claims[0].preallocated);
    assert_string_equal(devnames(&C), "gpu-0,gpu-1");
    assert_string_equal(C.devs[0].driver, "gpu.nvidia.com");
    assert_string_equal(C.devs[0].pool, "node-1");
    assert_string_equal(C.devs[0].request, "req");
    assert_string_equal(C.devs[0].device_class, "gpu.nvidia.com");
    /* v1 claim on the v1beta1 slice */
    assert_int_equal(tly_dra_try(D, pod("team", "p-two"), "node-2", "team-a", &C, &why), 1);
    assert_string_equal(devnames(&C), "gpu-0,gpu-1");
    assert_string_equal(C.devs[0].pool, "node-2");
    /* v1beta1 claim with a selector: the qualified attribute on node-2, the plain one on node-1 */
    assert_int_equal(tly_dra_try(D, pod("team", "p-h200"), "node-2", "team-a", &C, &why), 1);
    assert_string_equal(devnames(&C), "gpu-0");
    assert_int_equal(tly_dra_try(D, pod("team", "p-h200"), "node-1", "team-a", &C, &why), 1);
    assert_string_equal(devnames(&C), "gpu-2");
    /* a node without slices */
    assert_int_equal(tly_dra_try(D, pod("team", "p-two"), "node-9", "team-a", &C, &why), 0);
    assert_non_null(strstr(why, "insufficient devices of class gpu.nvidia.com"));
}

/*
** firstAvailable: the first subrequest that can be satisfied on the node
** wins, results are named "request/subrequest", and a subrequest that falls
** short gives back what it had picked before the next one is tried.
*/
static void test_first_available(void **state)
{
    (void)state;
    load(CLUSTER
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
         "metadata: {name: fa, namespace: team}\n"
         "spec:\n  devices:\n    requests:\n"
         "    - name: r\n      firstAvailable:\n"
         "      - {name: big, deviceClassName: gpu.nvidia.com, count: 3}\n"
         "      - {name: small, deviceClassName: gpu.nvidia.com, count: 1}\n"
         "    - name: s\n      exactly: {deviceClassName: gpu.nvidia.com}\n---\n"
         POD("p-fa", "team-a", "resourceClaimName", "fa"));
    const char *why = NULL;
    /* node-1 has 4 GPUs: big (3) and s (1) */
    assert_int_equal(tly_dra_try(D, pod("team", "p-fa"), "node-1", "team-a", &C, &why), 1);
    assert_string_equal(devnames(&C), "gpu-0,gpu-1,gpu-2,gpu-3");
    assert_string_equal(C.devs[0].request, "r/big");
    assert_string_equal(C.devs[0].device_class, "gpu.nvidia.com");
    assert_string_equal(C.devs[3].request, "s");
    /* node-2 has 2: big picks both and falls short, gives them back; small
       takes gpu-0 and s takes gpu-1 */
    assert_int_equal(tly_dra_try(D, pod("team", "p-fa"), "node-2", "team-a", &C, &why), 1);
    assert_string_equal(devnames(&C), "gpu-0,gpu-1");
    assert_string_equal(C.devs[0].request, "r/small");
    assert_string_equal(C.devs[1].request, "s");
    /* nowhere */
    assert_int_equal(tly_dra_try(D, pod("team", "p-fa"), "node-9", "team-a", &C, &why), 0);
    assert_non_null(strstr(why, "no subrequest of ResourceClaim team/fa request r can be satisfied "
                                "on node node-9 (the first: insufficient devices of class "
                                "gpu.nvidia.com"));
}

/*
** A ResourceSlice with spec.nodeSelector (devices reachable from several
** nodes, such as a fabric): offered on the nodes its terms select, after
** the node's own devices, by label or by metadata.name.
*/
static void test_node_selector_slice(void **state)
{
    (void)state;
    load(CLUSTER
         "apiVersion: v1\nkind: Node\nmetadata: {name: node-1, labels: {rack: r1}}\n---\n"
         "apiVersion: v1\nkind: Node\nmetadata: {name: node-2, labels: {rack: r2}}\n---\n"
         "apiVersion: v1\nkind: Node\nmetadata: {name: node-3, labels: {rack: r1}}\n---\n"
         "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: fabric}\n"
         "spec:\n  driver: nic.example.com\n  pool: {name: fabric, generation: 1, resourceSliceCount: 1}\n"
         "  nodeSelector:\n    nodeSelectorTerms:\n"
         "    - matchExpressions: [{key: rack, operator: In, values: [r1]}]\n"
         "    - matchFields: [{key: metadata.name, operator: In, values: [node-2]}]\n"
         "  devices:\n  - name: link-0\n  - name: link-1\n---\n"
         "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: r2-only}\n"
         "spec:\n  driver: nic.example.com\n  pool: {name: r2, generation: 1, resourceSliceCount: 1}\n"
         "  nodeSelector:\n    nodeSelectorTerms:\n"
         "    - matchExpressions: [{key: rack, operator: In, values: [r2]}]\n"
         "  devices:\n  - name: r2-link\n---\n"
         CLAIM("two-nics", "nic.example.com", "        count: 2\n")
         POD("p-nics", "team-a", "resourceClaimName", "two-nics"));
    const char *why = NULL;
    /* node-1: its own nic-0, then the fabric (rack r1) */
    assert_int_equal(tly_dra_try(D, pod("team", "p-nics"), "node-1", "team-a", &C, &why), 1);
    assert_string_equal(devnames(&C), "nic-0,link-0");
    /* node-3: no slice of its own, the fabric by label */
    assert_int_equal(tly_dra_try(D, pod("team", "p-nics"), "node-3", "team-a", &C, &why), 1);
    assert_string_equal(devnames(&C), "link-0,link-1");
    /* node-2: the fabric by name, and r2-only by label */
    assert_int_equal(tly_dra_try(D, pod("team", "p-nics"), "node-2", "team-a", &C, &why), 1);
    assert_string_equal(devnames(&C), "link-0,link-1");
    /* node-9 is not a Node: selector slices are not offered there */
    assert_int_equal(tly_dra_try(D, pod("team", "p-nics"), "node-9", "team-a", &C, &why), 0);
}

static void test_exact_count_and_all(void **state)
{
    (void)state;
    load(CLUSTER
         CLAIM("three", "gpu.nvidia.com", "        count: 3\n")
         POD("p-three", "team-a", "resourceClaimName", "three")
         CLAIM("all", "gpu.nvidia.com", "        allocationMode: All\n")
         POD("p-all", "team-a", "resourceClaimName", "all")
         CLAIM("one", "gpu.nvidia.com", "")
         POD("p-one", "team-a", "resourceClaimName", "one")
         CLAIM("nic", "nic.example.com", "")
         POD("p-nic", "team-a", "resourceClaimName", "nic"));
    const char *why = NULL;
    assert_int_equal(tly_dra_try(D, pod("team", "p-three"), "node-1", NULL, &C, &why), 1);
    assert_string_equal(devnames(&C), "gpu-0,gpu-1,gpu-2");
    assert_int_equal(tly_dra_try(D, pod("team", "p-three"), "node-2", NULL, &C, &why), 0);
    assert_string_equal(why, "insufficient devices of class gpu.nvidia.com (ResourceClaim team/three "
                             "request req needs 3, 2 free on node node-2)");
    /* All: every matching device; the class selector keeps the NIC out */
    assert_int_equal(tly_dra_try(D, pod("team", "p-all"), "node-1", NULL, &C, &why), 1);
    assert_string_equal(devnames(&C), "gpu-0,gpu-1,gpu-2,gpu-3");
    /* count defaults to 1 */
    assert_int_equal(tly_dra_try(D, pod("team", "p-one"), "node-1", NULL, &C2, &why), 1);
    assert_string_equal(devnames(&C2), "gpu-0");
    tly_dra_commit(D, &C2);
    /* All fails once one matching device is in use */
    assert_int_equal(tly_dra_try(D, pod("team", "p-all"), "node-1", NULL, &C, &why), 0);
    assert_non_null(strstr(why, "gpu.nvidia.com/node-1/gpu-0 is in use"));
    /* the NIC class */
    assert_int_equal(tly_dra_try(D, pod("team", "p-nic"), "node-1", NULL, &C, &why), 1);
    assert_string_equal(devnames(&C), "nic-0");
    assert_int_equal(tly_dra_try(D, pod("team", "p-nic"), "node-2", NULL, &C, &why), 0);
    tly_dra_undo(D, &C2);
    assert_int_equal(tly_dra_try(D, pod("team", "p-all"), "node-1", NULL, &C, &why), 1);
}

/* Devices allocated to another claim in the input are not reused. */
static void test_allocated_devices_not_reused(void **state)
{
    (void)state;
    load(CLUSTER
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
         "metadata: {name: taken, namespace: other}\n"
         "spec:\n  devices:\n    requests:\n    - name: g\n      exactly: {deviceClassName: gpu.nvidia.com, count: 2}\n"
         "status:\n  allocation:\n    devices:\n      results:\n"
         "      - {request: g, driver: gpu.nvidia.com, pool: node-1, device: gpu-0}\n"
         "      - {request: g, driver: gpu.nvidia.com, pool: node-1, device: gpu-1}\n"
         "---\n"
         CLAIM("two", "gpu.nvidia.com", "        count: 2\n")
         POD("p-two", "team-a", "resourceClaimName", "two")
         CLAIM("three", "gpu.nvidia.com", "        count: 3\n")
         POD("p-three", "team-a", "resourceClaimName", "three"));
    const char *why = NULL;
    assert_int_equal(tly_dra_try(D, pod("team", "p-two"), "node-1", NULL, &C, &why), 1);
    assert_string_equal(devnames(&C), "gpu-2,gpu-3");
    assert_int_equal(tly_dra_try(D, pod("team", "p-three"), "node-1", NULL, &C, &why), 0);
    assert_non_null(strstr(why, "insufficient devices of class gpu.nvidia.com"));
    /* committed in this run: the next pod does not get them either */
    assert_int_equal(tly_dra_try(D, pod("team", "p-two"), "node-1", NULL, &C, &why), 1);
    tly_dra_commit(D, &C);
    assert_int_equal(tly_dra_node_gpu_devices(D, "node-1"), 4);
    assert_int_equal(tly_dra_try(D, pod("team", "p-three"), "node-2", NULL, &C2, &why), 0);
    assert_int_equal(tly_dra_try(D, pod("team", "p-two"), "node-1", NULL, &C2, &why), 1);
    /* p-two's claim is now allocated (by the commit): its devices, not new ones */
    assert_true(C2.claims[0].preallocated);
    assert_string_equal(devnames(&C2), "gpu-2,gpu-3");
}

/* An allocated claim fits only where its devices are. */
static void test_allocated_claim_other_node(void **state)
{
    (void)state;
    load(CLUSTER
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
         "metadata: {name: done, namespace: team}\n"
         "spec:\n  devices:\n    requests:\n    - name: g\n      exactly: {deviceClassName: gpu.nvidia.com}\n"
         "status:\n  allocation:\n    devices:\n      results:\n"
         "      - {request: g, driver: gpu.nvidia.com, pool: node-2, device: gpu-1}\n"
         "---\n"
         POD("p-done", "team-a", "resourceClaimName", "done"));
    const char *why = NULL;
    assert_int_equal(tly_dra_try(D, pod("team", "p-done"), "node-1", NULL, &C, &why), 0);
    assert_string_equal(why, "ResourceClaim team/done is allocated on another node (node-2)");
    assert_int_equal(tly_dra_try(D, pod("team", "p-done"), "node-2", NULL, &C, &why), 1);
    assert_true(C.claims[0].preallocated);
    assert_string_equal(devnames(&C), "gpu-1");
    assert_string_equal(C.devs[0].device_class, "gpu.nvidia.com");
    assert_non_null(C.devs[0].dev);
    assert_int_equal(tly_dra_gpu_devices(&C), 1);
    assert_qty(tly_dra_gpu_memory(&C), "141Gi");
}

/* Template claims are private: each pod gets its own devices. */
static void test_template_claims_per_pod(void **state)
{
    (void)state;
    load(CLUSTER
         TEMPLATE("two-gpus", "{deviceClassName: gpu.nvidia.com, count: 2}")
         POD("a", "team-a", "resourceClaimTemplateName", "two-gpus")
         POD("b", "team-b", "resourceClaimTemplateName", "two-gpus")
         POD("c", "team-a", "resourceClaimTemplateName", "two-gpus")
         POD("d", "team-a", "resourceClaimTemplateName", "missing"));
    const char *why = NULL;
    assert_int_equal(tly_dra_try(D, pod("team", "a"), "node-1", "team-a", &C, &why), 1);
    assert_true(C.claims[0].from_template);
    assert_null(C.claims[0].claim);
    assert_non_null(C.claims[0].tmpl);
    assert_string_equal(C.claims[0].name, "a-dev");
    assert_string_equal(devnames(&C), "gpu-0,gpu-1");
    tly_dra_commit(D, &C);
    /* another queue may use the same template: no sharing */
    char *msg = NULL;
    assert_true(tly_dra_claim_queue_check(D, pod("team", "b"), "team-b", &msg));
    assert_int_equal(tly_dra_try(D, pod("team", "b"), "node-1", "team-b", &C2, &why), 1);
    assert_true(C2.claims[0].charge);
    assert_string_equal(devnames(&C2), "gpu-2,gpu-3");
    tly_dra_commit(D, &C2);
    assert_int_equal(tly_dra_try(D, pod("team", "c"), "node-1", "team-a", &C3, &why), 0);
    assert_int_equal(tly_dra_try(D, pod("team", "c"), "node-2", "team-a", &C3, &why), 1);
    /* gang rollback in reverse order frees the devices */
    tly_dra_undo(D, &C2);
    tly_dra_undo(D, &C);
    assert_int_equal(tly_dra_try(D, pod("team", "c"), "node-1", "team-a", &C3, &why), 1);
    assert_string_equal(devnames(&C3), "gpu-0,gpu-1");
    assert_int_equal(tly_dra_try(D, pod("team", "d"), "node-1", "team-a", &C3, &why), 0);
    assert_string_equal(why, "ResourceClaimTemplate team/missing does not exist");
}

/* A bound pod's template claim is the claim Kubernetes generated for it. */
static void test_generated_template_claim(void **state)
{
    (void)state;
    load(CLUSTER
         TEMPLATE("one-gpu", "{deviceClassName: gpu.nvidia.com}")
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
         "metadata:\n  name: run-dev-x7k2\n  namespace: team\n"
         "  annotations: {resource.kubernetes.io/pod-claim-name: dev}\n"
         "spec:\n  devices:\n    requests:\n    - name: g\n      exactly: {deviceClassName: gpu.nvidia.com}\n"
         "status:\n  allocation:\n    devices:\n      results:\n"
         "      - {request: g, driver: gpu.nvidia.com, pool: node-1, device: gpu-0}\n"
         "  reservedFor:\n  - {resource: pods, name: run, uid: u1}\n"
         "---\n"
         POD("run", "team-a", "resourceClaimTemplateName", "one-gpu")
         POD("new", "team-a", "resourceClaimTemplateName", "one-gpu"));
    const char *why = NULL;
    assert_int_equal(tly_dra_try(D, pod("team", "run"), "node-1", "team-a", &C, &why), 1);
    assert_true(C.claims[0].preallocated);
    assert_true(C.claims[0].from_template);
    assert_string_equal(C.claims[0].name, "run-dev-x7k2");
    assert_string_equal(devnames(&C), "gpu-0");
    tly_dra_commit(D, &C);
    assert_int_equal(tly_dra_try(D, pod("team", "new"), "node-1", "team-a", &C2, &why), 1);
    assert_string_equal(devnames(&C2), "gpu-1");
}

/*
** The selector lists of classes and templates remember their answer per
** device (dra.c, dra_sels.memo). Two templates over the same class, tried
** by several pods on both nodes (devices on either side of a memo byte):
** each list keeps its own answers, and a device's answer holds for the next
** pod and the next node.
*/
static void test_template_selectors_remembered(void **state)
{
    (void)state;
    load(CLUSTER
         TEMPLATE("h200", "{deviceClassName: gpu.nvidia.com, selectors: [{cel: {expression: "
                          "'device.attributes[\"gpu.nvidia.com\"].productName == \"H200\"'}}]}")
         TEMPLATE("gb200", "{deviceClassName: gpu.nvidia.com, count: 3, selectors: [{cel: {expression: "
                           "'device.attributes[\"gpu.nvidia.com\"].productName == \"GB200\"'}}]}")
         POD("a", "team-a", "resourceClaimTemplateName", "h200")
         POD("b", "team-a", "resourceClaimTemplateName", "h200")
         POD("c", "team-a", "resourceClaimTemplateName", "h200")
         POD("d", "team-a", "resourceClaimTemplateName", "gb200")
         POD("e", "team-a", "resourceClaimTemplateName", "gb200"));
    const char *why = NULL;
    assert_int_equal(tly_dra_try(D, pod("team", "a"), "node-1", "team-a", &C, &why), 1);
    assert_string_equal(devnames(&C), "gpu-2");
    tly_dra_commit(D, &C);
    assert_int_equal(tly_dra_try(D, pod("team", "b"), "node-1", "team-a", &C2, &why), 0);
    assert_int_equal(tly_dra_try(D, pod("team", "b"), "node-2", "team-a", &C2, &why), 1);
    assert_string_equal(devnames(&C2), "gpu-0");
    tly_dra_commit(D, &C2);
    assert_int_equal(tly_dra_try(D, pod("team", "c"), "node-2", "team-a", &C3, &why), 1);
    assert_string_equal(devnames(&C3), "gpu-1");
    /* The other template on the devices the first one refused, and on node-2's H200s. */
    assert_int_equal(tly_dra_try(D, pod("team", "d"), "node-2", "team-a", &C3, &why), 0);
    assert_int_equal(tly_dra_try(D, pod("team", "d"), "node-1", "team-a", &C3, &why), 1);
    assert_string_equal(devnames(&C3), "gpu-0,gpu-1,gpu-3");
    tly_dra_commit(D, &C3);
    assert_int_equal(tly_dra_try(D, pod("team", "e"), "node-1", "team-a", &C3, &why), 0);
}

static void test_gpu_class_counting(void **state)
{
    (void)state;
    load(CLUSTER
         "apiVersion: v1\nkind: Pod\n"
         "metadata: {name: mixed, namespace: team}\n"
         "spec:\n  schedulerName: kai-scheduler\n  containers: [{name: c, image: x}]\n"
         "  resourceClaims:\n  - {name: g, resourceClaimName: two}\n  - {name: n, resourceClaimName: nic}\n"
         "---\n"
         CLAIM("two", "gpu.nvidia.com", "        count: 2\n")
         CLAIM("nic", "nic.example.com", ""));
    assert_true(tly_dra_is_gpu_name("gpu.nvidia.com"));
    assert_true(tly_dra_is_gpu_name("nvidia.com/GPU"));
    assert_true(tly_dra_is_gpu_name("gpu"));
    assert_false(tly_dra_is_gpu_name("compute-domain.nvidia.com"));
    assert_false(tly_dra_is_gpu_name("gp"));
    assert_false(tly_dra_is_gpu_name(NULL));
    const char *why = NULL;
    assert_int_equal(tly_dra_try(D, pod("team", "mixed"), "node-1", NULL, &C, &why), 1);
    assert_int_equal(C.nclaims, 2);
    assert_int_equal(C.ndevs, 3);
    assert_int_equal(tly_dra_gpu_devices(&C), 2);
    assert_qty(tly_dra_gpu_memory(&C), "160Gi");
    assert_int_equal(tly_dra_node_gpu_devices(D, "node-2"), 2);
    assert_int_equal(tly_dra_node_gpu_devices(D, "node-9"), 0);
}

/* ---------------------------------------------------------------------- */
/* AccountedResource charges                                              */
/* ---------------------------------------------------------------------- */

#define ACCRES \
    "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n" \
    "metadata: {name: gpu-gb200}\n" \
    "spec:\n  defaults: {limit: \"-1\"}\n  sources:\n" \
    "  - dra: {deviceClassName: gpu.nvidia.com}\n" \
    "    match:\n      dra:\n        deviceAttributes:\n          productName: {string: GB200}\n" \
    "---\n" \
    "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n" \
    "metadata: {name: gpu-index-1}\n" \
    "spec:\n  sources:\n" \
    "  - dra: {deviceClassName: gpu.nvidia.com}\n" \
    "    match:\n      dra:\n        deviceAttributes:\n          gpu.nvidia.com/index: {int: 1}\n" \
    "---\n" \
    "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n" \
    "metadata: {name: dra-gpus}\n" \
    "spec:\n  sources:\n" \
    "  - dra: {deviceClassName: gpu.nvidia.com}\n" \
    "---\n" \
    "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n" \
    "metadata: {name: dra-memory}\n" \
    "spec:\n  sources:\n" \
    "  - dra: {deviceClassName: gpu.nvidia.com}\n" \
    "    quantity:\n      dra:\n        selectedCapacity: {capacityName: memory}\n" \
    "---\n" \
    "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n" \
    "metadata: {name: mps-memory}\n" \
    "spec:\n  sources:\n" \
    "  - dra: {deviceClassName: gpu.nvidia.com}\n" \
    "    quantity:\n      dra:\n        opaqueConfigField:\n" \
    "          driver: gpu.nvidia.com\n" \
    "          path: sharing.mpsConfig.defaultPinnedDeviceMemoryLimit\n" \
    "          unit: Mi\n" \
    "---\n" \
    "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n" \
    "metadata: {name: gpu-memory}\n" \
    "spec:\n  sources:\n" \
    "  - dra: {deviceClassName: gpu.nvidia.com}\n" \
    "    quantity:\n      dra:\n        selectedCapacity: {capacityName: memory}\n" \
    "---\n" \
    "apiVersion: scheduling.run.ai/v1alpha1\nkind: AccountedResource\n" \
    "metadata: {name: nics}\n" \
    "spec:\n  sources:\n" \
    "  - dra: {deviceClassName: nic.example.com}\n" \
    "---\n" \
    "apiVersion: scheduling.run.ai/v2\nkind: Queue\n" \
    "metadata: {name: team-a}\nspec: {resources: {}}\n" \
    "---\n" \
    "apiVersion: scheduling.run.ai/v2\nkind: Queue\n" \
    "metadata: {name: team-b}\nspec: {resources: {}}\n" \
    "---\n"

/* A claim of 2 GPUs with MPS config `limit` (YAML text) for the driver. */
#define MPS_CLAIM(name, limit)                                                                   \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"                                      \
    "metadata: {name: " name ", namespace: team}\n"                                              \
    "spec:\n  devices:\n    requests:\n    - name: gpus\n"                                       \
    "      exactly: {deviceClassName: gpu.nvidia.com, count: 2}\n"                               \
    "    config:\n"                                                                              \
    "    - requests: [gpus]\n"                                                                   \
    "      opaque:\n"                                                                            \
    "        driver: gpu.nvidia.com\n"                                                           \
    "        parameters:\n"                                                                      \
    "          apiVersion: resource.nvidia.com/v1beta1\n"                                        \
    "          kind: GpuConfig\n"                                                                \
    "          sharing:\n"                                                                       \
    "            strategy: MPS\n"                                                                \
    "            mpsConfig: {defaultPinnedDeviceMemoryLimit: " limit "}\n"                       \
    "---\n"

static void charges_of(const char *podname, const char *node, tly_qty *out, const char **problem)
{
    const char *why = NULL;
    int rc = tly_dra_try(D, pod("team", podname), node, "team-a", &C, &why);
    if (rc != 1)
        fail_msg("%s on %s: %d %s", podname, node, rc, why ? why : "");
    for (uint32_t a = 0; a < tly_queues_naccres(QS); a++)
        out[a] = (tly_qty){0, TLY_QFMT_DECIMAL_SI};
    tly_dra_charges(D, QS, pod("team", podname), &C, out, problem);
}

static void test_charges_device_attributes(void **state)
{
    (void)state;
    load(CLUSTER ACCRES
         CLAIM("two", "gpu.nvidia.com", "        count: 2\n")
         POD("p-two", "team-a", "resourceClaimName", "two")
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
         "metadata: {name: h200, namespace: team}\n"
         "spec:\n  devices:\n    requests:\n    - name: g\n      exactly:\n"
         "        deviceClassName: gpu.nvidia.com\n"
         "        selectors:\n"
         "        - cel: {expression: 'device.attributes[\"gpu.nvidia.com\"].productName == \"H200\"'}\n"
         "---\n"
         POD("p-h200", "team-a", "resourceClaimName", "h200")
         CLAIM("nic", "nic.example.com", "")
         POD("p-nic", "team-a", "resourceClaimName", "nic"));
    assert_int_equal(tly_queues_naccres(QS), 7);
    tly_qty out[7];
    charges_of("p-two", "node-1", out, NULL);  /* gpu-0, gpu-1: both GB200, index 0 and 1 */
    assert_qty(out[accres_index("gpu-gb200")], "2");
    assert_qty(out[accres_index("gpu-index-1")], "1");
    assert_qty(out[accres_index("dra-gpus")], "2");
    assert_qty(out[accres_index("nics")], "0");
    /* gpu-memory is reserved: not charged here, but by tly_dra_gpu_memory() */
    assert_qty(out[accres_index("gpu-memory")], "0");
    assert_qty(tly_dra_gpu_memory(&C), "160Gi");
    charges_of("p-h200", "node-1", out, NULL);  /* gpu-2, H200 */
    assert_qty(out[accres_index("gpu-gb200")], "0");
    assert_qty(out[accres_index("dra-gpus")], "1");
    /* a qualified attribute on the device matches the plain name in the AccountedResource */
    charges_of("p-two", "node-2", out, NULL);
    assert_qty(out[accres_index("gpu-gb200")], "0");
    assert_qty(out[accres_index("dra-gpus")], "2");
    charges_of("p-nic", "node-1", out, NULL);
    assert_qty(out[accres_index("nics")], "1");
    assert_qty(out[accres_index("dra-gpus")], "0");
    /* charges add to what the caller put there */
    charges_of("p-two", "node-1", out, NULL);
    out[accres_index("dra-gpus")] = Q("5");
    tly_dra_charges(D, QS, pod("team", "p-two"), &C, out, NULL);
    assert_qty(out[accres_index("dra-gpus")], "7");
}

static void test_charges_selected_capacity(void **state)
{
    (void)state;
    load(CLUSTER ACCRES
         CLAIM("two", "gpu.nvidia.com", "        count: 2\n")
         POD("p-two", "team-a", "resourceClaimName", "two"));
    tly_qty out[7];
    charges_of("p-two", "node-1", out, NULL);  /* 2 x 80Gi */
    assert_qty(out[accres_index("dra-memory")], "160Gi");
    charges_of("p-two", "node-2", out, NULL);  /* 2 x 141Gi */
    assert_qty(out[accres_index("dra-memory")], "282Gi");
}

static void test_charges_opaque_config(void **state)
{
    (void)state;
    load(CLUSTER ACCRES
         MPS_CLAIM("mps", "10240")
         POD("p-mps", "team-a", "resourceClaimName", "mps")
         MPS_CLAIM("mps-suffix", "\"4Gi\"")
         POD("p-suffix", "team-a", "resourceClaimName", "mps-suffix")
         MPS_CLAIM("mps-bad", "lots")
         POD("p-bad", "team-a", "resourceClaimName", "mps-bad")
         CLAIM("plain", "gpu.nvidia.com", "")
         POD("p-plain", "team-a", "resourceClaimName", "plain"));
    tly_qty out[7];
    const char *problem = NULL;
    /* 10240 Mi per device, 2 devices */
    charges_of("p-mps", "node-1", out, &problem);
    assert_null(problem);
    assert_qty(out[accres_index("mps-memory")], "20Gi");
    /* a value with its own suffix is taken as written */
    charges_of("p-suffix", "node-1", out, &problem);
    assert_qty(out[accres_index("mps-memory")], "8Gi");
    /* not a number: nothing charged, and the problem is said */
    charges_of("p-bad", "node-1", out, &problem);
    assert_qty(out[accres_index("mps-memory")], "0");
    assert_non_null(problem);
    assert_non_null(strstr(problem, "\"lots\", not a non-negative number"));
    assert_non_null(strstr(problem, "mps-memory"));
    /* no config: nothing, silently */
    charges_of("p-plain", "node-1", out, &problem);
    assert_null(problem);
    assert_qty(out[accres_index("mps-memory")], "0");
}

/* ---------------------------------------------------------------------- */
/* Shared claims                                                          */
/* ---------------------------------------------------------------------- */

static void test_shared_claim_across_queues(void **state)
{
    (void)state;
    load(CLUSTER ACCRES
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
         "metadata: {name: shared, namespace: team}\n"
         "spec:\n  devices:\n    requests:\n    - name: g\n      exactly: {deviceClassName: gpu.nvidia.com}\n"
         "status:\n  allocation:\n    devices:\n      results:\n"
         "      - {request: g, driver: gpu.nvidia.com, pool: node-1, device: gpu-0}\n"
         "  reservedFor:\n  - {resource: pods, name: running, uid: u1}\n"
         "---\n"
         POD("running", "team-a", "resourceClaimName", "shared")
         POD("b1", "team-b", "resourceClaimName", "shared")
         POD("a2", "team-a", "resourceClaimName", "shared")
         CLAIM("fresh", "gpu.nvidia.com", "")
         POD("fa", "team-a", "resourceClaimName", "fresh")
         POD("fb", "team-b", "resourceClaimName", "fresh"));
    char *msg = NULL;
    /* reservedFor from the input */
    assert_false(tly_dra_claim_queue_check(D, pod("team", "b1"), "team-b", &msg));
    assert_string_equal(msg, "ResourceClaim team/shared is shared with queue team-a; pods of queue "
                             "team-b cannot use it");
    assert_true(tly_dra_claim_queue_check(D, pod("team", "a2"), "team-a", &msg));
    assert_null(msg);
    /* a pod placed in this run */
    assert_true(tly_dra_claim_queue_check(D, pod("team", "fb"), "team-b", &msg));
    const char *why = NULL;
    assert_int_equal(tly_dra_try(D, pod("team", "fa"), "node-1", "team-a", &C, &why), 1);
    tly_dra_commit(D, &C);
    assert_false(tly_dra_claim_queue_check(D, pod("team", "fb"), "team-b", &msg));
    assert_string_equal(msg, "ResourceClaim team/fresh is shared with queue team-a; pods of queue "
                             "team-b cannot use it");
    tly_dra_undo(D, &C);
    assert_true(tly_dra_claim_queue_check(D, pod("team", "fb"), "team-b", &msg));
    /* explicit notes */
    tly_dra_claim_note_user(D, "team", "fresh", "team-b");
    assert_false(tly_dra_claim_queue_check(D, pod("team", "fa"), "team-a", &msg));
    assert_string_equal(msg, "ResourceClaim team/fresh is shared with queue team-b; pods of queue "
                             "team-a cannot use it");
    tly_dra_claim_note_user(D, "team", "no-such-claim", "team-b");  /* ignored */
}

static void test_shared_claim_queue_label(void **state)
{
    (void)state;
    load(CLUSTER
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
         "metadata: {name: labelled, namespace: team, labels: {kai.scheduler/queue: team-a}}\n"
         "spec:\n  devices:\n    requests:\n    - name: g\n      exactly: {deviceClassName: gpu.nvidia.com}\n"
         "---\n"
         POD("b", "team-b", "resourceClaimName", "labelled")
         POD("a", "team-a", "resourceClaimName", "labelled"));
    char *msg = NULL;
    assert_false(tly_dra_claim_queue_check(D, pod("team", "b"), "team-b", &msg));
    assert_non_null(strstr(msg, "shared with queue team-a"));
    assert_true(tly_dra_claim_queue_check(D, pod("team", "a"), "team-a", &msg));
}

static void test_shared_claim_charged_once(void **state)
{
    (void)state;
    load(CLUSTER ACCRES
         CLAIM("pair", "gpu.nvidia.com", "        count: 2\n")
         POD("a1", "team-a", "resourceClaimName", "pair")
         POD("a2", "team-a", "resourceClaimName", "pair")
         POD("a3", "team-a", "resourceClaimName", "pair"));
    const char *why = NULL;
    tly_qty out[7];
    uint32_t dg = accres_index("dra-gpus");
    assert_false(tly_dra_claim_charged(D, "team", "pair", "team-a"));
    assert_int_equal(tly_dra_try(D, pod("team", "a1"), "node-1", "team-a", &C, &why), 1);
    assert_true(C.claims[0].charge);
    assert_int_equal(tly_dra_gpu_devices(&C), 2);
    tly_dra_commit(D, &C);
    assert_true(tly_dra_claim_charged(D, "team", "pair", "team-a"));
    assert_false(tly_dra_claim_charged(D, "team", "pair", "team-b"));
    /* the second pod of the queue shares the allocation and charges nothing */
    assert_int_equal(tly_dra_try(D, pod("team", "a2"), "node-1", "team-a", &C2, &why), 1);
    assert_true(C2.claims[0].preallocated);
    assert_false(C2.claims[0].charge);
    assert_string_equal(devnames(&C2), "gpu-0,gpu-1");
    assert_int_equal(tly_dra_gpu_devices(&C2), 0);
    assert_qty(tly_dra_gpu_memory(&C2), "0");
    for (uint32_t a = 0; a < 7; a++)
        out[a] = (tly_qty){0, TLY_QFMT_DECIMAL_SI};
    tly_dra_charges(D, QS, pod("team", "a2"), &C2, out, NULL);
    assert_qty(out[dg], "0");
    /* ... and must go where the claim is */
    assert_int_equal(tly_dra_try(D, pod("team", "a3"), "node-2", "team-a", &C3, &why), 0);
    assert_string_equal(why, "ResourceClaim team/pair is allocated on another node (node-1)");
    tly_dra_commit(D, &C2);
    /* rollback in reverse order: nothing charged, nothing allocated */
    tly_dra_undo(D, &C2);
    assert_true(tly_dra_claim_charged(D, "team", "pair", "team-a"));
    tly_dra_undo(D, &C);
    assert_false(tly_dra_claim_charged(D, "team", "pair", "team-a"));
    assert_int_equal(tly_dra_try(D, pod("team", "a3"), "node-2", "team-a", &C3, &why), 1);
    assert_false(C3.claims[0].preallocated);
    assert_true(C3.claims[0].charge);
    /* the explicit marks */
    tly_dra_claim_mark_charged(D, "team", "pair", "team-b");
    assert_true(tly_dra_claim_charged(D, "team", "pair", "team-b"));
    assert_int_equal(tly_dra_try(D, pod("team", "a3"), "node-2", "team-b", &C3, &why), 1);
    assert_false(C3.claims[0].charge);
    /* a copied choice undoes like the original */
    tly_dra_choice_copy(&C2, &C3);
    assert_string_equal(devnames(&C2), devnames(&C3));
}

/* Pods without claims always fit; the choice is empty. */
static void test_no_claims(void **state)
{
    (void)state;
    load(CLUSTER
         "apiVersion: v1\nkind: Pod\nmetadata: {name: plain, namespace: team}\n"
         "spec: {schedulerName: kai-scheduler, containers: [{name: c, image: x}]}\n");
    const char *why = "x";
    assert_int_equal(tly_dra_try(D, pod("team", "plain"), "node-1", "q", &C, &why), 1);
    assert_null(why);
    assert_int_equal(C.nclaims, 0);
    assert_int_equal(tly_dra_gpu_devices(&C), 0);
    char *msg = NULL;
    assert_true(tly_dra_claim_queue_check(D, pod("team", "plain"), "q", &msg));
    tly_dra_commit(D, &C);
    tly_dra_undo(D, &C);
}

/* ---------------------------------------------------------------------- */
/* Issue 18: the Kubernetes allocator's semantics                         */
/* ---------------------------------------------------------------------- */

/* The GPU class alone (no CLUSTER): every device of driver gpu.nvidia.com. */
#define GPU_CLASS \
    "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.nvidia.com}\n" \
    "spec:\n  selectors:\n  - cel: {expression: 'device.driver == \"gpu.nvidia.com\"'}\n---\n"

/* A v1 slice `name` of pool `pool` on node-1: `extra` is spec fields, `devs` the device list. */
#define SLICE(name, pool, gen, count, extra, devs) \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: " name "}\n" \
    "spec:\n  driver: gpu.nvidia.com\n" \
    "  pool: {name: " pool ", generation: " #gen ", resourceSliceCount: " #count "}\n" \
    extra "  devices:\n" devs "---\n"

/* A claim whose spec.devices is `body` (indented four spaces). */
#define CLAIM_BODY(name, body) \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n" \
    "metadata: {name: " name ", namespace: team}\n" \
    "spec:\n  devices:\n" body "---\n"

static const char *try_on(const char *podname, const char *node, int want)
{
    const char *why = NULL;
    int rc = tly_dra_try(D, pod("team", podname), node, "team-a", &C, &why);
    if (rc != want)
        fail_msg("%s on %s: %d, want %d (%s)", podname, node, rc, want, why ? why : "-");
    return why;
}

/* Item 1: matchAttribute across requests, with a retry (backtracking). */
static void test_constraint_match_attribute(void **state)
{
    (void)state;
    load(GPU_CLASS
         SLICE("s1", "node-1", 1, 1, "  nodeName: node-1\n",
               "  - {name: gpu-0, attributes: {numa: {int: 0}}}\n"
               "  - {name: gpu-1, attributes: {numa: {int: 1}}}\n"
               "  - {name: gpu-2, attributes: {numa: {int: 1}}}\n"
               "  - {name: gpu-3}\n")
         CLAIM_BODY("pair", "    requests:\n"
                    "    - {name: a, exactly: {deviceClassName: gpu.nvidia.com}}\n"
                    "    - {name: b, exactly: {deviceClassName: gpu.nvidia.com}}\n"
                    "    constraints:\n    - {requests: [a, b], matchAttribute: gpu.nvidia.com/numa}\n")
         CLAIM_BODY("three", "    requests:\n"
                    "    - {name: a, exactly: {deviceClassName: gpu.nvidia.com, count: 3}}\n"
                    "    constraints:\n    - {matchAttribute: gpu.nvidia.com/numa}\n")
         CLAIM_BODY("fa", "    requests:\n"
                    "    - name: a\n      firstAvailable:\n"
                    "      - {name: two, deviceClassName: gpu.nvidia.com, count: 2}\n"
                    "    - {name: b, exactly: {deviceClassName: gpu.nvidia.com}}\n"
                    "    constraints:\n    - {requests: [a/two], matchAttribute: gpu.nvidia.com/numa}\n")
         CLAIM_BODY("distinct", "    requests:\n"
                    "    - {name: a, exactly: {deviceClassName: gpu.nvidia.com}}\n"
                    "    constraints:\n    - {distinctAttribute: gpu.nvidia.com/numa}\n")
         POD("p-pair", "team-a", "resourceClaimName", "pair")
         POD("p-three", "team-a", "resourceClaimName", "three")
         POD("p-fa", "team-a", "resourceClaimName", "fa")
         POD("p-distinct", "team-a", "resourceClaimName", "distinct"));
    /* gpu-0 first, no numa-0 partner: retried with gpu-1 and gpu-2 */
    try_on("p-pair", "node-1", 1);
    assert_string_equal(devnames(&C), "gpu-1,gpu-2");
    /* three equal numa values do not exist (gpu-3 lacks the attribute) */
    const char *why = try_on("p-three", "node-1", 0);
    assert_non_null(strstr(why, "constraint matchAttribute gpu.nvidia.com/numa"));
    /* the constraint names the subrequest: two on numa 1, b is free to take gpu-0 */
    try_on("p-fa", "node-1", 1);
    assert_string_equal(devnames(&C), "gpu-1,gpu-2,gpu-0");
    /* a constraint tally does not evaluate is never ignored */
    why = try_on("p-distinct", "node-1", -1);
    assert_non_null(strstr(why, "distinctAttribute"));
}

/* Item 2: tainted devices are allocated only when the request tolerates the taint. */
static void test_device_taints(void **state)
{
    (void)state;
    load(GPU_CLASS
         SLICE("s1", "node-1", 1, 1, "  nodeName: node-1\n",
               "  - {name: gpu-0, taints: [{key: broken, value: ecc, effect: NoSchedule}]}\n"
               "  - {name: gpu-1, taints: [{key: info, effect: None}]}\n"
               "  - {name: gpu-2, taints: [{key: drain, effect: NoExecute}]}\n")
         CLAIM("one", "gpu.nvidia.com", "")
         CLAIM("two", "gpu.nvidia.com", "        count: 2\n")
         CLAIM("two-tol", "gpu.nvidia.com",
               "        count: 2\n        tolerations: [{key: broken, operator: Equal, value: ecc}]\n")
         POD("p-one", "team-a", "resourceClaimName", "one")
         POD("p-two", "team-a", "resourceClaimName", "two")
         POD("p-tol", "team-a", "resourceClaimName", "two-tol"));
    try_on("p-one", "node-1", 1);
    assert_string_equal(devnames(&C), "gpu-1");
    /* The message counts the matching devices a taint kept out (not "0 free" alone). */
    const char *why = try_on("p-two", "node-1", 0);
    assert_non_null(strstr(why, "needs 2, 1 free on node node-1; matching but not offered: 2 with a "
                                "taint the request does not tolerate)"));
    try_on("p-tol", "node-1", 1);
    assert_string_equal(devnames(&C), "gpu-0,gpu-1");
}

/* Item 3: partitionable devices share counters; exhausted counters refuse. */
static void test_partitionable_counters(void **state)
{
    (void)state;
    load(GPU_CLASS
         SLICE("s1", "node-1", 1, 1,
               "  nodeName: node-1\n"
               "  sharedCounters:\n  - name: gpu-0-set\n    counters: {memory: {value: 80Gi}}\n",
               "  - {name: gpu-0, consumesCounters: [{counterSet: gpu-0-set, counters: {memory: {value: 80Gi}}}]}\n"
               "  - {name: gpu-0-a, consumesCounters: [{counterSet: gpu-0-set, counters: {memory: {value: 40Gi}}}]}\n"
               "  - {name: gpu-0-b, consumesCounters: [{counterSet: gpu-0-set, counters: {memory: {value: 40Gi}}}]}\n")
         CLAIM("two", "gpu.nvidia.com", "        count: 2\n")
         CLAIM("three", "gpu.nvidia.com", "        count: 3\n")
         CLAIM("one", "gpu.nvidia.com", "")
         POD("p-two", "team-a", "resourceClaimName", "two")
         POD("p-three", "team-a", "resourceClaimName", "three")
         POD("p-one", "team-a", "resourceClaimName", "one"));
    /* the whole GPU and a half overlap: the two halves */
    try_on("p-two", "node-1", 1);
    assert_string_equal(devnames(&C), "gpu-0-a,gpu-0-b");
    const char *why = try_on("p-three", "node-1", 0);
    /* The counter that ran out is named, with what is left of it. */
    assert_non_null(strstr(why, "shared counters of partitionable devices exhausted: counter memory "
                                "of counter set gpu-0-set in pool gpu.nvidia.com/node-1, 80Gi not "
                                "held by allocated devices, cannot also cover device "));
    /* once the whole GPU is taken, no half is left */
    try_on("p-one", "node-1", 1);
    assert_string_equal(devnames(&C), "gpu-0");
    tly_dra_choice_copy(&C2, &C);
    tly_dra_commit(D, &C2);
    try_on("p-two", "node-1", 0);
    tly_dra_undo(D, &C2);
    try_on("p-two", "node-1", 1);
}

/* Item 4: perDeviceNodeSelection slices offer each device where it says. */
static void test_per_device_node_selection(void **state)
{
    (void)state;
    load(GPU_CLASS
         "apiVersion: v1\nkind: Node\nmetadata: {name: node-1, labels: {rack: r1}}\n---\n"
         "apiVersion: v1\nkind: Node\nmetadata: {name: node-2, labels: {rack: r2}}\n---\n"
         SLICE("s1", "fabric", 1, 1, "  perDeviceNodeSelection: true\n",
               "  - {name: a-local, nodeName: node-1}\n"
               "  - {name: b-everywhere, allNodes: true}\n"
               "  - name: c-rack2\n    nodeSelector:\n      nodeSelectorTerms:\n"
               "      - matchExpressions: [{key: rack, operator: In, values: [r2]}]\n")
         CLAIM("two", "gpu.nvidia.com", "        count: 2\n")
         CLAIM("three", "gpu.nvidia.com", "        count: 3\n")
         POD("p-two", "team-a", "resourceClaimName", "two")
         POD("p-three", "team-a", "resourceClaimName", "three"));
    try_on("p-two", "node-1", 1);
    assert_string_equal(devnames(&C), "a-local,b-everywhere");
    try_on("p-two", "node-2", 1);
    assert_string_equal(devnames(&C), "b-everywhere,c-rack2");
    /* Two devices reach each node: a device's own nodeSelector keeps c-rack2 off node-1. */
    try_on("p-three", "node-1", 0);
    try_on("p-three", "node-2", 0);
}

/* Item 5: adminAccess requests get devices allocated to others and leave them held. */
static void test_admin_access(void **state)
{
    (void)state;
    load(GPU_CLASS
         SLICE("s1", "node-1", 1, 1, "  nodeName: node-1\n", "  - {name: gpu-0}\n")
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
         "metadata: {name: held, namespace: team}\n"
         "spec:\n  devices:\n    requests:\n    - {name: g, exactly: {deviceClassName: gpu.nvidia.com}}\n"
         "status:\n  allocation:\n    devices:\n      results:\n"
         "      - {request: g, driver: gpu.nvidia.com, pool: node-1, device: gpu-0}\n---\n"
         CLAIM("monitor", "gpu.nvidia.com", "        adminAccess: true\n")
         CLAIM("plain", "gpu.nvidia.com", "")
         POD("p-monitor", "team-a", "resourceClaimName", "monitor")
         POD("p-plain", "team-a", "resourceClaimName", "plain"));
    try_on("p-plain", "node-1", 0);
    try_on("p-monitor", "node-1", 1);
    assert_string_equal(devnames(&C), "gpu-0");
    assert_true(C.devs[0].admin_access);
    tly_dra_commit(D, &C);
    try_on("p-monitor", "node-1", 1);  /* allocated now: its own device */
}

/* Item 6: the answer does not depend on device names (backtracking across claims). */
static void test_backtracking_name_independent(void **state)
{
    (void)state;
    static const char *const names[][2] = {{"gpu-0", "gpu-1"}, {"gpu-1", "gpu-0"}};
    for (int k = 0; k < 2; k++) {
        char yaml[4096];
        snprintf(yaml, sizeof yaml,
                 GPU_CLASS
                 SLICE("s1", "node-1", 1, 1, "  nodeName: node-1\n",
                       "  - {name: %s, attributes: {idx: {int: 0}}}\n"
                       "  - {name: %s, attributes: {idx: {int: 1}}}\n")
                 CLAIM("any", "gpu.nvidia.com", "")
                 CLAIM("zero", "gpu.nvidia.com",
                       "        selectors: [{cel: {expression: 'device.attributes[\"gpu.nvidia.com\"].idx == 0'}}]\n")
                 "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team}\n"
                 "spec:\n  schedulerName: kai-scheduler\n  containers: [{name: c, image: x}]\n"
                 "  resourceClaims:\n  - {name: a, resourceClaimName: any}\n"
                 "  - {name: z, resourceClaimName: zero}\n",
                 names[k][0], names[k][1]);
        load(yaml);
        try_on("p", "node-1", 1);
        /* "zero" holds the idx-0 device, "any" the other, whichever is named first */
        assert_string_equal(C.devs[0].device, names[k][1]);
        assert_string_equal(C.devs[1].device, names[k][0]);
        teardown(NULL);
        setup(NULL);
    }
}

/* Item 7: a claim holds at most 32 devices (AllocationResultsMaxSize). */
static void test_claim_device_limit(void **state)
{
    (void)state;
    static char yaml[16384];
    int n = snprintf(yaml, sizeof yaml, "%s",
                     GPU_CLASS "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\n"
                     "metadata: {name: s1}\nspec:\n  driver: gpu.nvidia.com\n  nodeName: node-1\n"
                     "  pool: {name: p, generation: 1, resourceSliceCount: 1}\n  devices:\n");
    for (int i = 0; i < 40; i++)
        n += snprintf(yaml + n, sizeof yaml - (size_t)n, "  - {name: gpu-%02d}\n", i);
    snprintf(yaml + n, sizeof yaml - (size_t)n, "%s",
             "---\n" CLAIM("all", "gpu.nvidia.com", "        allocationMode: All\n")
             CLAIM("c33", "gpu.nvidia.com", "        count: 33\n")
             CLAIM("c32", "gpu.nvidia.com", "        count: 32\n")
             POD("p-all", "team-a", "resourceClaimName", "all")
             POD("p-33", "team-a", "resourceClaimName", "c33")
             POD("p-32", "team-a", "resourceClaimName", "c32"));
    load(yaml);
    const char *why = try_on("p-all", "node-1", 0);
    assert_non_null(strstr(why, "more than the 32 a claim may hold"));
    try_on("p-33", "node-1", 0);
    try_on("p-32", "node-1", 1);
    assert_int_equal(C.ndevs, 32);
}

/*
** Item 8: invalid pools are not allocated from, incomplete ones only by
** ExactCount requests (as Kubernetes' allocator does); old generations are
** ignored.
*/
static void test_pool_validity(void **state)
{
    (void)state;
    load(GPU_CLASS
         /* incomplete: 1 of 2 slices */
         SLICE("inc-a", "inc", 1, 2, "  nodeName: node-1\n", "  - {name: i-0}\n")
         /* invalid: the slices disagree on the count */
         SLICE("dis-a", "dis", 1, 2, "  nodeName: node-1\n", "  - {name: d-0}\n")
         SLICE("dis-b", "dis", 1, 3, "  nodeName: node-1\n", "  - {name: d-1}\n")
         /* invalid: a device listed twice */
         SLICE("dup-a", "dup", 1, 2, "  nodeName: node-1\n", "  - {name: x-0}\n")
         SLICE("dup-b", "dup", 1, 2, "  nodeName: node-1\n", "  - {name: x-0}\n")
         /* generation 2 replaces generation 1 */
         SLICE("gen-a", "gen", 1, 1, "  nodeName: node-1\n", "  - {name: old-0}\n")
         SLICE("gen-b", "gen", 2, 1, "  nodeName: node-1\n", "  - {name: new-0}\n")
         CLAIM("one", "gpu.nvidia.com", "")
         CLAIM("two", "gpu.nvidia.com", "        count: 2\n")
         CLAIM("all", "gpu.nvidia.com", "        allocationMode: All\n")
         POD("p-one", "team-a", "resourceClaimName", "one")
         POD("p-two", "team-a", "resourceClaimName", "two")
         POD("p-all", "team-a", "resourceClaimName", "all"));
    try_on("p-one", "node-1", 1);
    assert_string_equal(devnames(&C), "new-0");
    try_on("p-two", "node-1", 1);
    assert_string_equal(devnames(&C), "new-0,i-0");
    const char *why = try_on("p-all", "node-1", 0);
    assert_non_null(strstr(why, "asks for all devices, but resource pool"));
}

/* Item 9: an allocation's nodeSelector, and a claim being deleted. */
static void test_allocated_node_selector_and_deletion(void **state)
{
    (void)state;
    load(CLUSTER
         "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n---\n"
         "apiVersion: v1\nkind: Node\nmetadata: {name: node-2}\n---\n"
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
         "metadata: {name: net, namespace: team}\n"
         "spec:\n  devices:\n    requests:\n    - {name: n, exactly: {deviceClassName: nic.example.com}}\n"
         "status:\n  allocation:\n"
         "    nodeSelector:\n      nodeSelectorTerms:\n"
         "      - matchFields: [{key: metadata.name, operator: In, values: [node-2]}]\n"
         "    devices:\n      results:\n"
         "      - {request: n, driver: fabric.example.com, pool: fabric, device: link-0}\n---\n"
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
         "metadata: {name: going, namespace: team, deletionTimestamp: \"2026-01-01T00:00:00Z\"}\n"
         "spec:\n  devices:\n    requests:\n    - {name: g, exactly: {deviceClassName: gpu.nvidia.com}}\n---\n"
         POD("p-net", "team-a", "resourceClaimName", "net")
         POD("p-going", "team-a", "resourceClaimName", "going"));
    const char *why = try_on("p-net", "node-1", 0);
    assert_non_null(strstr(why, "nodeSelector does not select node node-1"));
    try_on("p-net", "node-2", 1);
    why = try_on("p-going", "node-1", 0);
    assert_string_equal(why, "ResourceClaim team/going is being deleted");
}

/* Item 10: a claim that did not decode makes its pod Invalid. */
static void test_invalid_claim(void **state)
{
    (void)state;
    S = load_text("dra.yaml", GPU_CLASS
                  CLAIM("bad", "gpu.nvidia.com", "        allocationMode: Some\n")
                  CLAIM("good", "gpu.nvidia.com", "")
                  POD("p-bad", "team-a", "resourceClaimName", "bad")
                  POD("p-good", "team-a", "resourceClaimName", "good"));
    D = tly_dra_create(S);
    QS = tly_queues_create(S);
    const char *msg = tly_dra_pod_invalid(D, pod("team", "p-bad"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "ResourceClaim team/bad is invalid"));
    assert_null(tly_dra_pod_invalid(D, pod("team", "p-good")));
}

/*
** A pod whose claims fit no node is searched once per node: the engine's
** full scan, which counts the reasons for the message, reads the DRA
** failures its bin-pack scan found instead of searching again
** (docs/performance.md, DRA finding 2). The messages are what a search of
** each node gives (kube-scheduler's form, reasons sorted as whole "<count>
** <reason>" strings), and each DRA reason names its node, so a reason kept
** for the wrong node, for the wrong pod or from a stale text shows.
** Nodes, fullest first in the bin-pack order (free cpu): n-c (2 cpu, no
** slice), n-b (16 cpu, 1 GPU), n-e (32 cpu, no slice), n-a (64 cpu, 3 GPUs);
** n-d is tainted. p0 takes 2 GPUs on n-a (1 left). p1 (4 cpu, 3 GPUs) and
** p2 (4 cpu, 2 GPUs) then fit nowhere: n-c lacks cpu, n-d has the taint,
** n-a, n-b and n-e lack devices.
*/
static void test_unschedulable_searched_once(void **state)
{
    (void)state;
    load(GPU_CLASS
         "apiVersion: v1\nkind: Node\nmetadata: {name: n-a}\n"
         "status: {allocatable: {cpu: \"64\", memory: 64Gi, pods: \"110\"}, conditions: [{type: Ready, status: \"True\"}]}\n---\n"
         "apiVersion: v1\nkind: Node\nmetadata: {name: n-b}\n"
         "status: {allocatable: {cpu: \"16\", memory: 64Gi, pods: \"110\"}, conditions: [{type: Ready, status: \"True\"}]}\n---\n"
         "apiVersion: v1\nkind: Node\nmetadata: {name: n-c}\n"
         "status: {allocatable: {cpu: \"2\", memory: 64Gi, pods: \"110\"}, conditions: [{type: Ready, status: \"True\"}]}\n---\n"
         "apiVersion: v1\nkind: Node\nmetadata: {name: n-d}\n"
         "spec: {taints: [{key: k, value: v, effect: NoSchedule}]}\n"
         "status: {allocatable: {cpu: \"64\", memory: 64Gi, pods: \"110\"}, conditions: [{type: Ready, status: \"True\"}]}\n---\n"
         "apiVersion: v1\nkind: Node\nmetadata: {name: n-e}\n"
         "status: {allocatable: {cpu: \"32\", memory: 64Gi, pods: \"110\"}, conditions: [{type: Ready, status: \"True\"}]}\n---\n"
         "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: n-a-gpus}\n"
         "spec: {driver: gpu.nvidia.com, nodeName: n-a, pool: {name: n-a, generation: 1, resourceSliceCount: 1},\n"
         "  devices: [{name: gpu-0}, {name: gpu-1}, {name: gpu-2}]}\n---\n"
         "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: n-b-gpus}\n"
         "spec: {driver: gpu.nvidia.com, nodeName: n-b, pool: {name: n-b, generation: 1, resourceSliceCount: 1},\n"
         "  devices: [{name: gpu-0}]}\n---\n"
         "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: team-a}\n"
         "spec: {resources: {cpu: {quota: -1, limit: -1}, memory: {quota: -1, limit: -1}, gpu: {quota: -1, limit: -1}}}\n---\n"
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: two, namespace: ns}\n"
         "spec: {spec: {devices: {requests: [{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, count: 2}}]}}}\n---\n"
         "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: three, namespace: ns}\n"
         "spec: {spec: {devices: {requests: [{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, count: 3}}]}}}\n---\n"
         "apiVersion: v1\nkind: Pod\nmetadata: {name: p0, namespace: ns, labels: {kai.scheduler/queue: team-a}, creationTimestamp: \"2026-12-02T10:00:00Z\"}\n"
         "spec: {schedulerName: kai-scheduler, resourceClaims: [{name: gpus, resourceClaimTemplateName: two}],\n"
         "  containers: [{name: c, resources: {requests: {cpu: \"1\"}, claims: [{name: gpus}]}}]}\n---\n"
         "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: ns, labels: {kai.scheduler/queue: team-a}, creationTimestamp: \"2026-12-02T10:01:00Z\"}\n"
         "spec: {schedulerName: kai-scheduler, resourceClaims: [{name: gpus, resourceClaimTemplateName: three}],\n"
         "  containers: [{name: c, resources: {requests: {cpu: \"4\"}, claims: [{name: gpus}]}}]}\n---\n"
         "apiVersion: v1\nkind: Pod\nmetadata: {name: p2, namespace: ns, labels: {kai.scheduler/queue: team-a}, creationTimestamp: \"2026-12-02T10:02:00Z\"}\n"
         "spec: {schedulerName: kai-scheduler, resourceClaims: [{name: gpus, resourceClaimTemplateName: two}],\n"
         "  containers: [{name: c, resources: {requests: {cpu: \"4\"}, claims: [{name: gpus}]}}]}\n");
    tly_podsched *ps = tly_podsched_create(S);
    tly_podsched_run(ps);
    const tly_ps_result *r0 = tly_podsched_pod(ps, (uint32_t)tly_podsched_find(ps, "ns", "p0"));
    const tly_ps_result *r1 = tly_podsched_pod(ps, (uint32_t)tly_podsched_find(ps, "ns", "p1"));
    const tly_ps_result *r2 = tly_podsched_pod(ps, (uint32_t)tly_podsched_find(ps, "ns", "p2"));
    assert_string_equal(r0->state, "Bound");
    assert_string_equal(r0->node, "n-a");
    assert_string_equal(r1->state, "Unschedulable");
    assert_string_equal(r1->message,
        "0/5 nodes are available: 1 Insufficient cpu, "
        "1 insufficient devices of class gpu.nvidia.com (ResourceClaim ns/p1-gpus request gpus needs 3, 0 free on node n-e), "
        "1 insufficient devices of class gpu.nvidia.com (ResourceClaim ns/p1-gpus request gpus needs 3, 1 free on node n-a), "
        "1 insufficient devices of class gpu.nvidia.com (ResourceClaim ns/p1-gpus request gpus needs 3, 1 free on node n-b), "
        "1 node(s) had untolerated taint {k: v}.");
    assert_string_equal(r2->state, "Unschedulable");
    assert_string_equal(r2->message,
        "0/5 nodes are available: 1 Insufficient cpu, "
        "1 insufficient devices of class gpu.nvidia.com (ResourceClaim ns/p2-gpus request gpus needs 2, 0 free on node n-e), "
        "1 insufficient devices of class gpu.nvidia.com (ResourceClaim ns/p2-gpus request gpus needs 2, 1 free on node n-a), "
        "1 insufficient devices of class gpu.nvidia.com (ResourceClaim ns/p2-gpus request gpus needs 2, 1 free on node n-b), "
        "1 node(s) had untolerated taint {k: v}.");
    /*
    ** The searches: p0 on n-c, n-b, n-e (no fit), n-a (fits), then n-a again
    ** to take the devices: 5; p1 and p2 once on each of n-e, n-a and n-b: 3
    ** each (6 each when the full scan searched again). 11 in all.
    */
    uint64_t max, total, tries;
    tly_podsched_dra_stats(ps, &max, &total, &tries);
    assert_int_equal(tries, 11);
    tly_podsched_destroy(ps);
}

/*
** A pod refused by many nodes for many reasons: each DRA reason names its
** node (18 different texts), and the nodes after them refused for cpu
** give one text three times, counted once ("3 Insufficient cpu"). Past 16
** texts the counting matches texts by hash (podsched.c count_reasons);
** a match that failed there would list "1 Insufficient cpu" three times.
*/
static void test_many_reasons_counted_once(void **state)
{
    (void)state;
    char *y = tly_xstrdup(GPU_CLASS);
    for (int i = 0; i < 21; i++) {
        bool gpu = i < 18;
        char *more = tly_xasprintf(
            "%sapiVersion: v1\nkind: Node\nmetadata: {name: %s-%02d}\n"
            "status: {allocatable: {cpu: \"%s\", memory: 64Gi, pods: \"110\"}, conditions: [{type: Ready, status: \"True\"}]}\n---\n",
            y, gpu ? "g" : "z", i, gpu ? "64" : "2");
        free(y);
        y = more;
        if (gpu) {
            more = tly_xasprintf(
                "%sapiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: g-%02d-gpus}\n"
                "spec: {driver: gpu.nvidia.com, nodeName: g-%02d, pool: {name: g-%02d, generation: 1, resourceSliceCount: 1},\n"
                "  devices: [{name: gpu-0}]}\n---\n", y, i, i, i);
            free(y);
            y = more;
        }
    }
    char *all = tly_xasprintf(
        "%sapiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: team-a}\n"
        "spec: {resources: {cpu: {quota: -1, limit: -1}, memory: {quota: -1, limit: -1}, gpu: {quota: -1, limit: -1}}}\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: two, namespace: ns}\n"
        "spec: {spec: {devices: {requests: [{name: gpus, exactly: {deviceClassName: gpu.nvidia.com, count: 2}}]}}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, labels: {kai.scheduler/queue: team-a}}\n"
        "spec: {schedulerName: kai-scheduler, resourceClaims: [{name: gpus, resourceClaimTemplateName: two}],\n"
        "  containers: [{name: c, resources: {requests: {cpu: \"4\"}, claims: [{name: gpus}]}}]}\n", y);
    free(y);
    load(all);
    free(all);
    tly_podsched *ps = tly_podsched_create(S);
    tly_podsched_run(ps);
    const tly_ps_result *r = tly_podsched_pod(ps, (uint32_t)tly_podsched_find(ps, "ns", "p"));
    assert_string_equal(r->state, "Unschedulable");
    assert_non_null(strstr(r->message, "0/21 nodes are available: "));
    assert_non_null(strstr(r->message, "3 Insufficient cpu"));
    assert_null(strstr(r->message, "1 Insufficient cpu"));
    assert_non_null(strstr(r->message, "1 free on node g-17)"));
    tly_podsched_destroy(ps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cel_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cel_unsupported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_claim_and_class, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_and_v1beta1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_available, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_selector_slice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exact_count_and_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allocated_devices_not_reused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allocated_claim_other_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_template_claims_per_pod, setup, teardown),
        cmocka_unit_test_setup_teardown(test_generated_template_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_template_selectors_remembered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_class_counting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_charges_device_attributes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_charges_selected_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_charges_opaque_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_claim_across_queues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_claim_queue_label, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_claim_charged_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_claims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_constraint_match_attribute, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_taints, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partitionable_counters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_device_node_selection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_access, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backtracking_name_independent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_device_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_validity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allocated_node_selector_and_deletion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unschedulable_searched_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_reasons_counted_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
