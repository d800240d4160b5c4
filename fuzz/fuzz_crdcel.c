/*
** fuzz_crdcel.c: libFuzzer target for the CEL of CRD rules (cel.h): the
** input is a rule, evaluated with self bound to a small fixed object (maps,
** lists, strings, numbers), once without an old value and once with oldSelf
** bound to the same object (a transition rule on an update). Any result is
** fine; crashes, sanitizer reports, leaks and hangs are not.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"
#include "tally/cel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *obj =
    "{\"spec\":{\"mode\":{\"task\":{\"entrypoint\":\"bin/run.sh\",\"args\":[\"a\",\"b\"]}},\"size\":3,"
    "\"ratio\":0.5,\"source\":{\"repoURL\":\"https://x/r.git\"},\"levels\":[{\"nodeLabel\":\"zone\"}],"
    "\"labels\":{\"team\":\"a\"},\"flag\":true,\"none\":null}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tly_arena *a;
    static tly_node *self;
    if (!a) {
        a = tly_arena_create(4096);
        self = tly_parse_value(obj, strlen(obj), a);
    }
    if (size > 4096)
        return 0;  /* CRD rules are short; longer inputs only slow the search */
    char *rule = malloc(size + 1);
    if (!rule)
        return 0;
    memcpy(rule, data, size);
    rule[size] = '\0';
    char why[256];
    (void)tly_cel_eval_rule(rule, self, why, sizeof why);
    tly_arena *pa = tly_arena_create(4096);
    tly_cel_prog *p = tly_cel_compile(pa, rule, TLY_CEL_ENV_RULE, NULL);
    if (p)
        (void)tly_cel_eval_self(p, self, self, why, sizeof why);
    tly_arena_destroy(pa);
    free(rule);
    return 0;
}
