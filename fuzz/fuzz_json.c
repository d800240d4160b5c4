/*
** fuzz_json.c: libFuzzer target for the native JSON reader (jsonparse.c),
** differential: every input goes through tly_parse_value() and through the
** libfyaml path (tly_parse_value_fy), and the two trees must be equal
** (types, texts, keys, columns; lines unless the input has a CR) whenever
** both accept. When only the native reader accepts, the input must agree
** with libfyaml once its tabs between tokens are spaces (libfyaml refuses
** some tabs that JSON allows). Failures abort with both trees' first
** difference. Also: crashes, sanitizer reports and leaks, as everywhere.
** And tly_parse_api_value() must accept whatever tly_parse_value() accepts,
** with the tree tly_parse_value() gives minus metadata.managedFields.
*/
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "../tests/jsondiff.h"
#include "tally/arena.h"
#include "tally/node.h"
#include "tally/nodewrite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Unlinks managedFields from the maps under a `metadata` key, as tly_parse_api_value skips it. */
static void unmanage(tly_node *n, bool meta)
{
    if (n->type != TLY_N_MAP && n->type != TLY_N_SEQ)
        return;
    for (tly_node **pp = &n->kids; *pp;) {
        tly_node *k = *pp;
        bool map = n->type == TLY_N_MAP;
        if (meta && map && !strcmp(k->key, "managedFields")) {
            *pp = k->next;
            n->nkids--;
            continue;
        }
        unmanage(k, map && k->type == TLY_N_MAP && !strcmp(k->key, "metadata"));
        pp = &k->next;
    }
}

/* tree as compact JSON (malloc'd). */
static char *written(const tly_node *tree)
{
    char *out = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&out, &len);
    tly_node_write_json(m, tree);
    fclose(m);
    return out;
}

static void check_api_value(const char *text, size_t size)
{
    tly_arena *a = tly_arena_create(4096);
    tly_node *full = tly_parse_value(text, size, a);
    if (full) {
        tly_node *lean = tly_parse_api_value(text, size, a);
        if (!lean) {
            fprintf(stderr, "tly_parse_api_value refuses what tly_parse_value accepts\n");
            abort();
        }
        unmanage(full, false);
        char *x = written(full), *y = written(lean);
        if (strcmp(x, y)) {
            fprintf(stderr, "tly_parse_api_value: %s\nwant: %s\n", y, x);
            abort();
        }
        free(x);
        free(y);
    }
    tly_arena_destroy(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    char why[512];
    bool tabs;
    /* -1 (only libfyaml accepts) is a YAML form the strict reader refuses: fine. */
    if (jsondiff_compare((const char *)data, size, why, sizeof why, &tabs) == -2) {
        fprintf(stderr, "the readers disagree: %s\n", why);
        abort();
    }
    check_api_value((const char *)data, size);
    return 0;
}
