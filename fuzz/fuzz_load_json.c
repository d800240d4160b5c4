/*
** fuzz_load_json.c: libFuzzer target for the loader's native JSON path
** (tly_store_load_json: jsonparse.c's streaming reader, a List's items one
** at a time, and every kind's decoder), differential against the libfyaml
** path (tly_store_load_fy in JSON mode).
**
** Every input is loaded both ways into a finished store. When libfyaml
** reads it without a syntax error (after making the tabs between tokens
** spaces, as fuzz_json does: libfyaml refuses some that JSON allows), the
** native reader must too, and the two stores must hold the same objects
** (storediff.h: every kind's metadata, pods and nodes field by field) with
** the same diagnostics in the same order, positions included (lines only
** without a CR: libfyaml's JSON mode counts CRLFs unevenly). Inputs the
** native reader accepts and libfyaml refuses are allowed only where
** documented (docs/input.md): several top-level values and whitespace
** alone. Failures abort with the first difference. Also: crashes, sanitizer
** reports and leaks, as everywhere.
*/
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/jsondiff.h"
#include "../tests/storediff.h"
#include "jsonread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void no_object(void *ctx, const tly_node *tree, size_t end)
{
    (void)ctx, (void)tree, (void)end;
}

static void no_error(void *ctx, uint32_t line, uint32_t col, const char *fmt, va_list ap)
{
    (void)ctx, (void)line, (void)col, (void)fmt, (void)ap;
}

/* The native reader's count of top-level values (-1: a syntax error). */
static long values(const char *text, size_t len)
{
    tly_arena *doc = tly_arena_create(4096), *obj = tly_arena_create(4096);
    tly_jsink sink = {.object = no_object, .error = no_error};
    long n = tly_json_stream(text, len, doc, obj, &sink);
    tly_arena_destroy(doc);
    tly_arena_destroy(obj);
    return n;
}

static bool syntax_error(tly_store *s)
{
    const tly_diags *d = tly_store_diags(s);
    for (size_t i = 0; i < tly_diags_count(d); i++)
        if (strncmp(tly_diags_get(d, i)->msg, "syntax error", 12) == 0)
            return true;
    return false;
}

static tly_store *load(const char *text, size_t len, bool native)
{
    tly_store *s = tly_store_create();
    if (native)
        tly_store_load_json(s, "fuzz.json", text, len);
    else
        tly_store_load_fy(s, "fuzz.json", text, len, true);
    tly_store_finish(s);
    return s;
}

/* Compares the two loads of text (untabbed: the libfyaml one was of that). */
static void compare(const char *text, const char *untabbed, size_t len)
{
    tly_store *n = load(text, len, true), *f = load(untabbed, len, false);
    storediff sd = {.positions = memchr(text, '\r', len) == NULL};
    long nv = values(text, len);
    if (!syntax_error(f) && syntax_error(n)) {
        fprintf(stderr, "only libfyaml reads it\n");
        abort();
    }
    if (!syntax_error(f) && nv >= 0 &&
        (!storediff_same(&sd, n, f) ||
         !storediff_same_diags(&sd, tly_store_diags(n), tly_store_diags(f)))) {
        fprintf(stderr, "the loaders disagree: %s\n", sd.why);
        abort();
    }
    if (syntax_error(f) && nv == 1 && memchr(text, '\t', len) == NULL) {
        fprintf(stderr, "only the native reader reads one JSON value\n");
        abort();
    }
    tly_store_destroy(n);
    tly_store_destroy(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    /* A private, exactly sized copy: an overread is an ASan report. */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    char *untabbed = jsondiff_untab(text, size);
    compare(text, untabbed, size);
    free(untabbed);
    free(text);
    return 0;
}
