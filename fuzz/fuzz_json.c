/*
** fuzz_json.c: libFuzzer target for the native JSON reader (jsonparse.c),
** differential: every input goes through tly_parse_value() and through the
** libfyaml path (tly_parse_value_fy), and the two trees must be equal
** (types, texts, keys, columns; lines unless the input has a CR) whenever
** both accept. When only the native reader accepts, the input must agree
** with libfyaml once its tabs between tokens are spaces (libfyaml refuses
** some tabs that JSON allows). Failures abort with both trees' first
** difference. Also: crashes, sanitizer reports and leaks, as everywhere.
*/
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/node.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool g_cr;

static bool same(const tly_node *a, const tly_node *b)
{
    if (a->type != b->type || a->bval != b->bval || (!g_cr && a->line != b->line) ||
        a->col != b->col || a->nkids != b->nkids || a->len != b->len || (!a->str) != (!b->str) ||
        (a->str && memcmp(a->str, b->str, a->len) != 0) || (!a->key) != (!b->key) ||
        (a->key && (strcmp(a->key, b->key) != 0 || (!g_cr && a->kline != b->kline) ||
                    a->kcol != b->kcol))) {
        fprintf(stderr, "differ at %u:%u (key %s): type %d/%d text \"%s\"/\"%s\" col %u/%u\n",
                a->line, a->col, a->key ? a->key : "-", a->type, b->type, a->str ? a->str : "-",
                b->str ? b->str : "-", a->col, b->col);
        return false;
    }
    const tly_node *x = a->kids, *y = b->kids;
    for (; x && y; x = x->next, y = y->next)
        if (!same(x, y))
            return false;
    return !x && !y;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    const char *text = (const char *)data;
    tly_arena *a = tly_arena_create(4096);
    g_cr = memchr(text, '\r', size) != NULL;
    tly_node *n = tly_parse_value(text, size, a);
    tly_node *f = tly_parse_value_fy(text, size, a);
    if (n && !f) {
        char *t = malloc(size + 1);
        if (!t)
            abort();
        memcpy(t, text, size);
        bool in = false;
        for (size_t i = 0; i < size; i++) {
            if (in && t[i] == '\\')
                i++;
            else if (t[i] == '"')
                in = !in;
            else if (!in && t[i] == '\t')
                t[i] = ' ';
        }
        f = tly_parse_value_fy(t, size, a);
        free(t);
        if (!f) {
            fprintf(stderr, "only the native reader accepts this input\n");
            abort();
        }
    }
    if (n && f && !same(n, f))
        abort();
    /* Inputs only libfyaml accepts are YAML-isms the strict reader refuses: fine. */
    tly_arena_destroy(a);
    return 0;
}
