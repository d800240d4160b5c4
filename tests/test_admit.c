/*
** test_admit.c: the webhook's ways through admit.h (issue 16): the answer
** written into a buffer, and decisions in a scratch kept from one review to
** the next. Both must give exactly the answers of the stream writer and of a
** decision made afresh.
*/
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>

#include "tally/admit.h"
#include "tally/error.h"

/* ---- the answer into a buffer ------------------------------------------- */

static char *stream_answer(const tly_admit_result *res)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    tly_admit_write_response(f, res, false);
    fclose(f);
    return out;
}

/* A string of n random bytes 1..255 (every control character, quote and backslash among them). */
static char *random_text(unsigned *seed, size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++)
        s[i] = (char)(1 + rand_r(seed) % 255);
    s[n] = '\0';
    return s;
}

/* The buffer's answer against the stream's, whole and cut short at every length. */
static void check_answer(const tly_admit_result *res)
{
    char *want = stream_answer(res);
    size_t wl = strlen(want);
    char *buf = malloc(wl + 2);
    assert_non_null(buf);
    assert_int_equal(tly_admit_format_response(res, buf, wl + 2), wl);
    assert_string_equal(buf, want);
    for (size_t cap = 0; cap <= wl; cap++) {
        memset(buf, 0x5a, wl + 2);
        assert_int_equal(tly_admit_format_response(res, buf, cap), wl);
        assert_memory_equal(buf, want, cap);
        assert_int_equal((unsigned char)buf[cap], 0x5a);
    }
    free(buf);
    free(want);
}

static void test_buffer_answer_is_the_stream_answer(void **state)
{
    (void)state;
    unsigned seed = 16;
    for (int round = 0; round < 300; round++) {
        tly_admit_result res = {0};
        res.uid = random_text(&seed, (size_t)(rand_r(&seed) % 40));
        res.allowed = rand_r(&seed) % 2;
        if (!res.allowed || rand_r(&seed) % 4 == 0)
            res.message = random_text(&seed, (size_t)(rand_r(&seed) % 200));
        if (rand_r(&seed) % 5 == 0)
            res.patch = random_text(&seed, (size_t)(rand_r(&seed) % 60));
        res.nwarnings = (size_t)(rand_r(&seed) % 4);
        res.warnings = res.nwarnings ? calloc(res.nwarnings, sizeof *res.warnings) : NULL;
        for (size_t i = 0; i < res.nwarnings; i++)
            res.warnings[i] = random_text(&seed, (size_t)(rand_r(&seed) % 50));
        check_answer(&res);
        tly_admit_result_free(&res);
    }
}

static void test_buffer_answer_of_plain_results(void **state)
{
    (void)state;
    char uid[] = "u-1";
    tly_admit_result allowed = {.uid = uid, .allowed = true};
    check_answer(&allowed);
    char buf[256];
    tly_admit_format_response(&allowed, buf, sizeof buf);
    assert_string_equal(buf, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                             "\"response\":{\"uid\":\"u-1\",\"allowed\":true}}\n");
    /* A denial without a message (never made by a decision) writes null, as the stream does. */
    tly_admit_result denied = {.uid = uid, .allowed = false};
    check_answer(&denied);
}

/* ---- decisions in a kept scratch ---------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = (n + 4096 + 1) * 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t got = fread(buf + n, 1, 4096, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

typedef struct {
    tly_store *state;
    char *review;
    size_t len;
    char name[256];
} rcase;

/* Every case of tests/resize/ (state.yaml and review.json), in name order. */
static size_t load_cases(rcase **out)
{
    struct dirent **ents = NULL;
    int n = scandir(TALLY_SOURCE_DIR "/tests/resize", &ents, NULL, alphasort);
    assert_true(n > 0);
    rcase *cs = calloc((size_t)n, sizeof *cs);
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        char path[1024];
        if (ents[i]->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/tests/resize/%s/review.json", TALLY_SOURCE_DIR, ents[i]->d_name);
            size_t rl;
            char *review = read_file(path, &rl);
            snprintf(path, sizeof path, "%s/tests/resize/%s/state.yaml", TALLY_SOURCE_DIR, ents[i]->d_name);
            size_t sl;
            char *text = read_file(path, &sl);
            if (review && text) {
                cs[k].state = load_text("state.yaml", text);
                cs[k].review = review;
                cs[k].len = rl;
                snprintf(cs[k].name, sizeof cs[k].name, "%s", ents[i]->d_name);
                k++;
                review = NULL;
            }
            free(review);
            free(text);
        }
        free(ents[i]);
    }
    free(ents);
    *out = cs;
    return k;
}

/* The answer (or the refusal) of one decision, as text. */
static char *decide_text(const tly_store *state, tly_admit_scratch *sc, const char *body, size_t len)
{
    tly_admit_result res;
    char err[256];
    int rc = sc ? tly_admit_review_scratch(state, NULL, sc, body, len, &res, err, sizeof err)
                : tly_admit_review(state, body, len, &res, err, sizeof err);
    if (rc != TLY_OK)
        return tly_xasprintf("refused: %s", err);
    char *out = stream_answer(&res);
    tly_admit_result_free(&res);
    return out;
}

/*
** One scratch through the whole corpus, forwards and backwards, against a
** decision made afresh for each: nothing of one review may reach the next
** (names interned, problems found, memory reused).
*/
static void test_kept_scratch_decides_as_afresh(void **state)
{
    (void)state;
    rcase *cs;
    size_t n = load_cases(&cs);
    assert_true(n >= 50);
    tly_admit_scratch *sc = tly_admit_scratch_create();
    for (int pass = 0; pass < 2; pass++) {
        for (size_t j = 0; j < n; j++) {
            size_t i = pass ? n - 1 - j : j;
            char *want = decide_text(cs[i].state, NULL, cs[i].review, cs[i].len);
            char *got = decide_text(cs[i].state, sc, cs[i].review, cs[i].len);
            if (strcmp(want, got))
                fail_msg("%s: kept scratch answered\n%s\nafresh\n%s", cs[i].name, got, want);
            free(want);
            free(got);
        }
    }
    tly_admit_scratch_destroy(sc);
    for (size_t i = 0; i < n; i++) {
        tly_store_destroy(cs[i].state);
        free(cs[i].review);
    }
    free(cs);
}

/*
** A review whose objects the loader does not decode as objects (a
** CustomResourceDefinition, a KAI snapshot) goes the loader's own path: the
** answers are those tally gave before the direct decode (46f7132).
*/
static const char special_state[] =
    "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: q}\n"
    "spec: {resources: {cpu: {quota: -1, limit: 4000}, memory: {quota: -1, limit: -1}, gpu: {quota: -1, limit: -1}}}\n";

static char *special_review(const char *object)
{
    return tly_xasprintf("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
                         "{\"uid\":\"s-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
                         "\"subResource\":\"resize\",\"operation\":\"UPDATE\",\"object\":%s,\"oldObject\":%s}}",
                         object, object);
}

static void test_special_objects_take_the_loader_path(void **state)
{
    (void)state;
    tly_store *st = load_text("state.yaml", special_state);
    tly_admit_scratch *sc = tly_admit_scratch_create();
    const char *crd = "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
                      "\"metadata\":{\"name\":\"things.example.com\"},\"spec\":{\"group\":\"example.com\","
                      "\"names\":{\"kind\":\"Thing\",\"plural\":\"things\"},\"scope\":\"Namespaced\","
                      "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true}]}}";
    const char *snap = "{\"rawObjects\":{\"pods\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
                       "{\"name\":\"p\",\"namespace\":\"n\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}]},"
                       "\"schedulerParams\":{}}";
    const char *objects[] = {crd, snap};
    const char *want[] = {
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"s-1\","
        "\"allowed\":false,\"status\":{\"code\":403,\"reason\":\"Forbidden\",\"message\":\"request.object and "
        "request.oldObject must be Pods tally can read\"}}}\n",
        /* The snapshot's one pod is decoded (the loader's way): a pod of another scheduler. */
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"s-1\","
        "\"allowed\":true,\"warnings\":[\"pod n/p is not scheduled by kai-scheduler; tally does not check "
        "its resize\"]}}\n",
    };
    for (int i = 0; i < 2; i++) {
        char *review = special_review(objects[i]);
        char *got = decide_text(st, sc, review, strlen(review));
        assert_string_equal(got, want[i]);
        free(got);
        free(review);
    }
    tly_admit_scratch_destroy(sc);
    tly_store_destroy(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffer_answer_is_the_stream_answer),
        cmocka_unit_test(test_buffer_answer_of_plain_results),
        cmocka_unit_test(test_kept_scratch_decides_as_afresh),
        cmocka_unit_test(test_special_objects_take_the_loader_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
